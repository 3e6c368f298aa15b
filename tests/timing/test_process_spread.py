"""The between-pair spread: its estimate, its dependence on call time, and the intervals it
widens."""

from __future__ import annotations

import json
import math

import pytest

from kernelproof.controller.verify import widen_intervals
from kernelproof.pins import pin
from kernelproof.schema.timing import ShapeTiming, Timing, TimingStats
from kernelproof.timing.process_spread import (
    FALLBACK_SPREAD,
    ProbeSpread,
    ProcessSpread,
    between_pairs,
    load_spread,
    save_spread,
    widen,
)


def _record(**probes: tuple[float, float]) -> ProcessSpread:
    spreads = {name: ProbeSpread(call_s=t, spread=s) for name, (t, s) in probes.items()}
    return ProcessSpread(
        fingerprint="test",
        threads=1,
        pairs=5,
        probes=spreads,
        spread=max(p.spread for p in spreads.values()),
    )


def test_the_spread_between_pairs_is_what_their_own_intervals_do_not_explain():
    logs = [0.0, 0.1, -0.1, 0.05]
    observed = sum(x * x for x in logs) / len(logs)
    assert between_pairs(logs, [0.0] * 4) == pytest.approx(math.sqrt(observed))
    assert between_pairs(logs, [0.05] * 4) == pytest.approx(math.sqrt(observed - 0.05**2))
    # Pairs that scatter no more than their own intervals say have no extra spread.
    assert between_pairs([0.01, -0.01], [0.5, 0.5]) == 0.0


def test_a_bias_every_pair_shares_counts_as_spread():
    # The tiny probe of a loaded run: every pair's candidate 5-8% slower on identical code.
    shared = [-0.079, -0.066, -0.076, -0.047, -0.049]
    assert between_pairs(shared, [0.0] * 5) > 0.06


def test_a_short_call_gets_the_spread_measured_at_short_calls():
    record = _record(tiny=(3e-6, 0.08), small=(20e-6, 0.03), large=(5e-3, 0.02))
    assert record.at(2e-6) == pytest.approx(0.08)
    assert record.at(1e-2) == pytest.approx(0.02)
    middle = record.at(math.sqrt(3e-6 * 20e-6))  # halfway on the log scale
    assert middle == pytest.approx(0.055)


def test_a_shorter_call_never_gets_less_spread_than_a_longer_one():
    # The tiny probe's estimate came out low by chance: it is raised to the small one's.
    record = _record(tiny=(3e-6, 0.01), small=(20e-6, 0.03), large=(5e-3, 0.02))
    assert record.at(3e-6) == pytest.approx(0.03)
    assert record.at(1e-6) >= record.at(1e-4) >= record.at(1e-2)


def test_each_shape_is_widened_by_the_spread_at_its_own_call_time():
    record = _record(tiny=(3e-6, 0.08), large=(5e-3, 0.02))

    def shape(name: str, call_s: float) -> ShapeTiming:
        stats = TimingStats(median_s=call_s, iqr_s=0.0, outliers=0, samples=[call_s] * 5)
        return ShapeTiming(
            variant=name,
            knobs={},
            reference=stats,
            candidate=stats,
            speedup=1.0,
            speedup_ci=(0.99, 1.01),
        )

    shapes = [shape("default", 5e-3), shape("shape:n=1", 3e-6)]
    timing = Timing(
        reference=shapes[0].reference,
        candidate=shapes[0].candidate,
        speedup=1.0,
        speedup_ci=(0.99, 1.01),
        per_shape=shapes,
    )
    widen_intervals(timing, record, "measured")
    assert timing.per_shape[0].process_spread == pytest.approx(0.02)
    assert timing.per_shape[1].process_spread == pytest.approx(0.08)
    assert timing.per_shape[1].speedup_ci[1] > timing.per_shape[0].speedup_ci[1] > 1.01
    assert timing.speedup_ci == timing.per_shape[0].speedup_ci
    assert timing.process_spread == pytest.approx(0.02)
    widen_intervals(timing, None, "fallback")
    assert timing.process_spread == FALLBACK_SPREAD


def test_widening_adds_in_quadrature_on_the_log_scale():
    low, high = widen(1.0, math.exp(-0.03), math.exp(0.04), 0.02 / 1.959963984540054)
    assert math.log(high) == pytest.approx(math.hypot(0.04, 0.02))
    assert -math.log(low) == pytest.approx(math.hypot(0.03, 0.02))


def test_a_record_of_the_older_format_is_measured_again(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELPROOF_CACHE_DIR", str(tmp_path))  # the pins' table too
    record = _record(tiny=(3e-6, 0.05))
    save_spread(record)
    assert load_spread("test", 1) == record
    path = tmp_path / "process-spread-test-t1.json"
    older = record.model_dump(mode="json")
    del older["probes"]
    path.write_text(json.dumps(older))
    pin(path)
    assert load_spread("test", 1) is None


def test_a_noisy_spread_is_kept_half_an_hour_and_a_quiet_one_for_good(tmp_path, monkeypatch):
    """Each verification measuring its own noisy spread cost it ~35 s (every measurement on
    the 2-core machine was noisy, quiet or not); kept for good, a noisy one would widen every
    later interval. Every process on the machine reuses it until it is half an hour old."""
    from kernelproof.config import resolve_settings
    from kernelproof.controller import spread_measurement

    monkeypatch.setenv("KERNELPROOF_CACHE_DIR", str(tmp_path))
    readings = iter([0.27, 0.25, 0.03])
    measured: list[float] = []

    def measure(settings, fingerprint, threads):
        spread = next(readings)
        measured.append(spread)
        return ProcessSpread(
            fingerprint=fingerprint,
            threads=threads,
            pairs=5,
            spread=spread,
            probes={"large": ProbeSpread(call_s=2e-3, spread=spread)},
        )

    monkeypatch.setattr(spread_measurement, "measure_spread", measure)
    settings = resolve_settings()
    start = 1_000_000.0
    record, source = spread_measurement.spread_for(settings, 1, now=start)
    assert record is not None and record.spread == 0.27 and "noisy" in source
    assert len(list(tmp_path.glob("process-spread-*.json"))) == 1
    # Read back from the file, as another process would: reused, not measured again.
    for later in (start + 1, start + 1799):
        again, source = spread_measurement.spread_for(settings, 1, now=later)
        assert again is not None and again.spread == 0.27 and "30 min" in source
    assert measured == [0.27]
    # Half an hour old: measured again (noisy again, kept again from then).
    assert spread_measurement.spread_for(settings, 1, now=start + 1801)[0].spread == 0.25
    assert spread_measurement.spread_for(settings, 1, now=start + 1900)[0].spread == 0.25
    # A clock set back does not keep a noisy record alive; the quiet reading is kept for good.
    record, source = spread_measurement.spread_for(settings, 1, now=start)
    assert record is not None and record.spread == 0.03 and source == "measured"
    assert spread_measurement.spread_for(settings, 1, now=start + 10**6)[1] == "measured"
    assert measured == [0.27, 0.25, 0.03]


def test_pairs_too_noisy_to_see_a_bias_are_noisy_too():
    from kernelproof.controller.spread_measurement import noisy

    quiet = ProcessSpread(
        fingerprint="t",
        threads=1,
        pairs=5,
        spread=0.02,
        probes={"large": ProbeSpread(call_s=2e-3, spread=0.02, within=0.01)},
    )
    hidden = ProcessSpread(
        fingerprint="t",
        threads=1,
        pairs=5,
        spread=0.01,
        probes={"large": ProbeSpread(call_s=2e-3, spread=0.01, within=0.2)},
    )
    assert not noisy(quiet) and noisy(hidden)
