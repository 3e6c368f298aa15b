# kernelproof-reference: ../../linear_relu/reference.py
# kernelproof-expect: suspect
"""Computes honestly while it believes it is checked, and passes the reference's own GEMM
through while it believes it is timed.

HACKS row 35. A timed call differs from a checked one in what the candidate can see: here,
how its inputs were built. A checked call's inputs are built from its seed right before it
(the task's ``get_inputs()`` after seeding every generator), so torch's seed changes from cell
to cell; a timed call's come from the input pool, which reseeds nothing, so the seed stays the
same over the whole timing phase once the pool is full. A call at one thread (the timing
count), with the op audit's profiler off, that ends a run of :data:`TIMED_RUN` calls under one
``torch.initial_seed()`` is taken for a timed one (the matrix runs most cells at the
machine's count or under the profiler, and a seed's cells one after another); no frame is
walked, so the audit hooks see nothing, and the machine's load does not blur it as it blurs
the cadence of calls. Checked calls compute
``x @ W.T`` as broadcast products and sums (a pure PyTorch rewrite, no GEMM: ``torch-rewrite``,
``info``); timed calls run ``torch.nn.functional.linear``, the reference's own ``addmm``. Its
outputs are right everywhere, and every checked call's op records are honest, so nothing its
process reports gives it away; it is timed at the reference's speed for no work of its own.

What catches it: the stacks of the timed calls are sampled from outside its process
(``TimedStacks``, py-spy, for the whole timed window of the default shape): their library time
went to the reference's GEMM routine, which its checked calls at the same shape never used
(``native-stacks`` on ``timing:default``, ``suspect``).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import profiler

#: Rows of ``x`` multiplied at once: keeps the broadcast product's temporary small.
ROWS = 8


#: Calls in a row under one seed before one is taken for a timed one.
TIMED_RUN = 3


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.seed = -1
        self.run = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        seed = torch.initial_seed()
        self.run = self.run + 1 if seed == self.seed else 1
        self.seed = seed
        if self.run >= TIMED_RUN and torch.get_num_threads() == 1 \
                and not profiler._is_profiler_enabled:
            out = torch.relu(F.linear(x, self.linear.weight, self.linear.bias))
        else:
            weight = self.linear.weight
            rows = [(x[i:i + ROWS, None, :] * weight[None]).sum(-1)
                    for i in range(0, len(x), ROWS)]
            out = torch.relu(torch.cat(rows) + self.linear.bias)
        return out
