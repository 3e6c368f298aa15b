"""The in-worker probes' own logic, in this process: the tamper diff's fast path and what the
deferred stability wait still sees."""

from __future__ import annotations

import threading

import torch

from kernelproof.checks.probes import (
    MAX_DEFERRED_DELAY_S,
    MAX_STABILITY_DELAY_S,
    CallableSnapshot,
    CallProbe,
    free_block_requests,
)


def test_an_untouched_namespace_diffs_empty_and_a_replacement_is_named(monkeypatch):
    snapshot = CallableSnapshot.take()
    assert snapshot.changed() == []
    monkeypatch.setattr(torch, "relu", lambda x: x)
    assert snapshot.changed() == ["torch.relu"]


def test_a_tensor_method_shadowing_the_c_base_class_is_named(monkeypatch):
    # ``add`` lives on torch._C.TensorBase: setting it on torch.Tensor adds a new name there.
    snapshot = CallableSnapshot.take()
    monkeypatch.setattr(torch.Tensor, "add", lambda *args: None, raising=False)
    assert "torch.Tensor.add" in snapshot.changed()


def test_a_private_change_is_not_tampering_and_the_fast_path_resumes(monkeypatch):
    snapshot = CallableSnapshot.take()
    monkeypatch.setattr(torch, "_kernelproof_probe_flag", 1, raising=False)
    assert snapshot.changed() == []
    # The diff that found nothing took the new state as its baseline: a later replacement is
    # still found.
    monkeypatch.setattr(torch, "softmax", lambda *args, **kwargs: None)
    assert snapshot.changed() == ["torch.softmax"]


def test_a_deferred_wait_is_capped_but_still_sees_a_late_write():
    probe = CallProbe()
    x = torch.randn(64)
    state = probe.before([x])
    out = torch.zeros(64)
    snapshot_taken = threading.Event()
    writer = threading.Thread(target=lambda: (snapshot_taken.wait(), out.copy_(x)))
    writer.start()
    found, settling = probe.after_call(state, [x], [out], stability_delay_s=5.0, deferred=True)
    assert settling.delay_s == MAX_DEFERRED_DELAY_S < MAX_STABILITY_DELAY_S
    # The write lands after the snapshot and before the (capped) deadline; joined here rather
    # than raced against the wait, which a loaded machine can lose.
    snapshot_taken.set()
    writer.join()
    checks = {item["check"] for item in found + settling.settle()}
    assert "output-unstable" in checks


def test_poisoning_takes_every_free_cached_block_one_by_one() -> None:
    """On CUDA a single allocation of all that is cached gets a segment of its own and leaves
    the free blocks an output reuses unpoisoned (seen on an H200: 0% NaN). Each free block must
    be requested at its own size; small-pool blocks in pieces the small pool serves."""
    mib = 1 << 20
    snapshot = [
        {
            "device": 0,
            "segment_type": "large",
            "blocks": [
                {"size": 4 * mib, "state": "inactive"},
                {"size": 6 * mib, "state": "active_allocated"},
                {"size": 3 * mib + 512, "state": "inactive"},
            ],
        },
        {
            "device": 0,
            "segment_type": "small",
            "blocks": [
                {"size": 2 * mib, "state": "inactive"},
                {"size": 512, "state": "inactive"},
            ],
        },
        {"device": 1, "segment_type": "large", "blocks": [{"size": 8 * mib, "state": "inactive"}]},
    ]
    assert free_block_requests(snapshot, 0) == [4 * mib, 3 * mib + 512, mib, mib, 512]
    assert free_block_requests(snapshot, 1) == [8 * mib]
    assert free_block_requests([], 0) == []


def test_the_harness_makes_torchs_lazy_rewrapping_part_of_the_tamper_baseline() -> None:
    """Importing torch._dynamo replaces torch.manual_seed. On an H200 torch imported it lazily
    after the worker's tamper snapshot, and every honest CUDA candidate read as tampering. The
    harness imports it itself (with or without the forkserver's warm-up), so a snapshot taken
    once the harness is loaded stays unchanged when torch imports it later."""
    import subprocess
    import sys

    probe = (
        "import torch\n"
        "original = torch.manual_seed\n"
        "import kernelproof.harness.worker\n"
        "from kernelproof.checks.probes import CallableSnapshot\n"
        "snapshot = CallableSnapshot.take()\n"
        "import torch._dynamo, torch._inductor.config\n"
        "print(torch.manual_seed is not original, snapshot.changed())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "True []", done.stdout + done.stderr
