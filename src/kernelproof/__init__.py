"""kernelproof: verify and benchmark AI-written kernels against a trusted PyTorch reference."""

__version__ = "0.1.0"
