"""The worker heap policy: memory reserved before a timed batch is reused without page faults."""

import subprocess
import sys

SCRIPT = """
import resource, sys, torch
from kernelproof.workers.allocator import reserve_heap, retain_freed_memory
assert retain_freed_memory()
if sys.argv[1] == "reserved":
    reserve_heap(64 << 20)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
outputs = [torch.empty(4 << 20, dtype=torch.uint8).fill_(1) for _ in range(8)]  # 32 MiB kept
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def faults(mode: str) -> int:
    done = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return int(done.stdout.strip().splitlines()[-1])


def test_a_reserved_heap_serves_a_batch_of_outputs_without_page_faults():
    cold, reserved = faults("cold"), faults("reserved")
    assert cold >= 4000, cold  # 32 MiB of fresh pages: ~8192 faults of 4 KiB
    assert reserved < cold / 10, (reserved, cold)
