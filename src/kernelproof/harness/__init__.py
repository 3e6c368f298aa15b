"""The program that runs inside a worker process, beside the untrusted candidate.

Everything in this package executes in the candidate's process, where the candidate's code can
read and patch it: the request loop (``worker``), the timed calls (``timed_calls``), the timing
input pool (``input_pool``, ``block_gather``), tensor helpers (``tensors``), the allocator and
thread settings (``allocator``, ``threads``) and the forkserver's warm-up (``warmup``). Nothing it
reports is trusted on its own word: the controller checks it from outside (see docs/security.md).
The controller's side never imports this package; a worker is started by its module name
(:data:`kernelproof.protocol.spec.HARNESS_MODULE`).
"""
