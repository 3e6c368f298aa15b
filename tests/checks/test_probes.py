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
