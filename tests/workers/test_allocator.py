"""The worker heap policy: memory reserved before a timed batch is reused without page faults."""

import subprocess
import sys

SCRIPT = """
import resource, sys, torch
from kernelproof.harness.allocator import reserve_heap, retain_freed_memory
assert retain_freed_memory()
if sys.argv[1] == "reserved":
    reserve_heap(64 << 20)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
outputs = [torch.empty(4 << 20, dtype=torch.uint8).fill_(1) for _ in range(8)]  # 32 MiB kept
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def faults(mode: str) -> int:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return int(done.stdout.strip().splitlines()[-1])


def test_a_reserved_heap_serves_a_batch_of_outputs_without_page_faults():
    cold, reserved = faults("cold"), faults("reserved")
    assert cold >= 4000, cold  # 32 MiB of fresh pages: ~8192 faults of 4 KiB
    assert reserved < cold / 10, (reserved, cold)


def test_a_growing_reservation_grows_geometrically_so_drifting_batches_rarely_touch_pages():
    script = (
        "from kernelproof.harness.allocator import reserve_heap\n"
        "print(reserve_heap(8 << 20), reserve_heap(9 << 20), reserve_heap(11 << 20),"
        " reserve_heap(12 << 20), reserve_heap(4 << 20))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    sizes = [int(x) for x in done.stdout.split()]
    assert sizes[0] == 8 << 20
    assert sizes[1] == sizes[2] == sizes[3] == 12 << 20  # one growth, by half, covers 9-12
    assert sizes[4] == sizes[3]  # never shrinks
