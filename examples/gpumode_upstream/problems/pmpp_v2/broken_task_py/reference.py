import torch
from task import input_t, output_t
from utils import make_match_reference


def ref_kernel(data: input_t) -> output_t:
    """The element-wise sum of the two vectors."""
    a, b = data
    return a + b


def generate_input(size: int, seed: int) -> input_t:
    """Two vectors of ``size`` values drawn from N(0, 1), from their own generator."""
    gen = torch.Generator()
    gen.manual_seed(seed)
    a = torch.randn(size, dtype=torch.float32, generator=gen).contiguous()
    b = torch.randn(size, dtype=torch.float32, generator=gen).contiguous()
    return (a, b)


check_implementation = make_match_reference(ref_kernel)
