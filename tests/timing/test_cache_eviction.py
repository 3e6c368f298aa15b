"""Flushing one call's data from the CPU caches: the compiled helper and what it evicts."""

from pathlib import Path

import pytest
import torch

from kernelproof.timing import c_helper, cache_eviction
from kernelproof.timing.cache_eviction import load_line_evictor, reachable_tensors
from kernelproof.timing.call_timer import FLUSH_FACTOR, CallTimer


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KERNELPROOF_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_the_helper_is_built_once_and_evicts_each_storage_once(cache: Path) -> None:
    evictor = load_line_evictor()
    assert evictor is not None, "this machine has a C compiler and an x86-64 or ARM CPU"
    assert evictor.path.parent == cache and evictor.path.exists()
    built = evictor.path.stat().st_mtime_ns
    assert load_line_evictor().path.stat().st_mtime_ns == built  # cached, not rebuilt
    x = torch.randn(1000, 256)
    evicted = evictor.evict([x, x[10:20], x.t(), 3.0, "not a tensor", torch.empty(0)])
    assert evicted == x.untyped_storage().nbytes()
    assert torch.isfinite(x).all()  # flushed lines are written back, not lost


def test_each_storage_is_handed_to_the_flush_instruction_once_and_whole() -> None:
    class Spy:
        def __init__(self) -> None:
            self.calls: list[tuple[int, int]] = []

        def kp_evict(self, start, length) -> None:
            self.calls.append((start.value, length.value))

    spy = Spy()
    evictor = cache_eviction.LineEvictor(library=spy, path=Path("spy"))
    x, w = torch.randn(64, 64), torch.randn(8)
    evictor.evict([x[3:], x.t(), w, x])
    storages = {(t.untyped_storage().data_ptr(), t.untyped_storage().nbytes()) for t in (x, w)}
    assert sorted(spy.calls) == sorted(storages)


def test_without_a_compiler_the_timer_falls_back_to_the_buffer_flush(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CC", str(cache / "no-such-compiler"))
    assert load_line_evictor() is None
    monkeypatch.setattr("kernelproof.timing.call_timer._line_evictor", None)
    timer = CallTimer.for_device("cpu", cache_flush="data")
    assert timer.evictor is None and timer.flush_bytes > 0
    assert timer.flush_method.startswith("full:")


def test_the_data_flush_is_chosen_by_default_and_full_on_request() -> None:
    data = CallTimer.for_device("cpu")
    assert data.evictor is not None and data.flush_method.startswith("data:")
    full = CallTimer.for_device("cpu", cache_flush="full")
    assert full.evictor is None and full.flush_bytes % FLUSH_FACTOR == 0
    assert full.flush_method.startswith("full:")
    assert CallTimer.for_device("cpu", hot=True).flush_method.startswith("none")
    seconds, output = data.time_call(torch.softmax, [torch.randn(8, 8), -1])
    assert seconds > 0 and output.shape == (8, 8)


def test_reachable_tensors_include_weights_kept_outside_parameters() -> None:
    class Packed(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = torch.nn.Linear(4, 4)
            self.register_buffer("scale", torch.ones(4))
            self.packed = self.linear.weight.detach().t().contiguous()
            self.tiles = [torch.zeros(2), torch.zeros(3)]
            self.table = {"lut": torch.arange(5)}

    model = Packed()
    found = {id(t) for t in reachable_tensors(model)}
    for tensor in (
        model.linear.weight,
        model.linear.bias,
        model.scale,
        model.packed,
        *model.tiles,
        model.table["lut"],
    ):
        assert id(tensor) in found


def test_an_unsupported_machine_gets_no_helper(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(c_helper.platform, "machine", lambda: "riscv64")
    assert load_line_evictor() is None


def test_inputs_written_past_the_caches_skip_the_flush_and_nothing_else_does() -> None:
    """A pooled input the compiled gather streamed is already cold: the timer leaves it out
    of the flush, and still evicts every other input and the resident tensors."""

    class Spy:
        def __init__(self) -> None:
            self.starts: list[int] = []

        def kp_evict(self, start, length) -> None:
            self.starts.append(start.value)

    spy = Spy()
    timer = CallTimer(
        device="cpu", evictor=cache_eviction.LineEvictor(library=spy, path=Path("spy"))
    )
    streamed, built, weight = torch.randn(64), torch.randn(64), torch.randn(8)
    timer.time_call(lambda a, b: a + b, [streamed, built], [weight], cold=[streamed])
    assert sorted(spy.starts) == sorted(t.untyped_storage().data_ptr() for t in (built, weight))
