"""The cap on what a candidate writes, measured from outside: its folders and its log."""

from __future__ import annotations

from kernelproof.workers.write_cap import WriteMeter


def _filled(path, size: int) -> None:  # type: ignore[no-untyped-def]
    with open(path, "wb") as handle:
        handle.write(b"\1" * size)


def test_files_across_folders_and_the_log_add_up_to_the_cap(tmp_path):
    scratch, builds = tmp_path / "scratch", tmp_path / "builds" / "deep"
    scratch.mkdir()
    builds.mkdir(parents=True)
    log = tmp_path / "candidate.log"
    meter = WriteMeter([str(scratch), str(log), str(tmp_path / "builds")], cap_bytes=3 << 20)
    _filled(scratch / "a.bin", 1 << 20)
    _filled(builds / "b.bin", 1 << 20)
    assert meter.over_cap() is None
    _filled(log, 2 << 20)
    over = meter.measure()
    assert over is not None and "over the sandbox's cap of" in over
