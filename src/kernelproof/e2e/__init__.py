"""End to end: a kernel verified inside the host model that will run it, and over many steps.

The controller side (:mod:`kernelproof.e2e.run`) never imports candidate code. It drives:

- :mod:`~kernelproof.e2e.tracer`: a trusted subprocess that builds the host, records the
  replaced modules' constructor arguments, state, call signatures and share of host time;
- :mod:`~kernelproof.e2e.generated`: the sources generated from that record (the replaced
  module as a KernelBench task; the host with the substitution as a KernelBench candidate);
- :func:`kernelproof.controller.verify.verify_loaded` on those sources (isolated, at uncovered
  signatures, replayed calls, and the host itself);
- :mod:`~kernelproof.e2e.soak` (many steps of the host's loop) and
  :mod:`~kernelproof.e2e.amdahl` (what the isolated speedup predicts).

:mod:`~kernelproof.e2e.host_runtime` is imported by the generated sources inside workers.
"""
