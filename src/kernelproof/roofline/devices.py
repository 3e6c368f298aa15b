"""The table of known accelerators: datasheet peaks, and a lookup that refuses ambiguity.

Every figure is a vendor's public number for *dense* math (the "with sparsity" figures halved).
A roofline ceiling must be an upper bound that no honest kernel beats, so where a vendor gives two
figures for one part (an early and a revised memory bandwidth) the table keeps the higher one and
says so next to it.

Names are matched on tokens, not substrings: ``"NVIDIA H100 80GB HBM3"`` is the SXM part,
``"NVIDIA H100 PCIe"`` the PCIe part, and a name that could be either (``"NVIDIA H100"``) or that is
a different product (``"NVIDIA H100 NVL"``, ``"NVIDIA GH200"``) is not in the table.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kernelproof.errors import UsageError

if TYPE_CHECKING:
    import torch

__all__ = [
    "DEVICES",
    "DTYPES",
    "DeviceSpec",
    "PeakFlops",
    "canonical_dtype",
    "find_device",
]

#: The compute formats the tables and calibrations are keyed by. ``tf32`` is not a tensor dtype
#: but the tensor-core mode float32 matmuls may run in, with its own (much higher) peak.
DTYPES: tuple[str, ...] = ("float64", "float32", "tf32", "float16", "bfloat16")

#: Spellings accepted for each compute format: torch names, their ``torch.`` forms and the usual
#: short names, so that a task file, a CLI flag or a ``torch.dtype`` all resolve the same way.
_DTYPE_ALIASES: dict[str, str] = {
    "float64": "float64",
    "double": "float64",
    "fp64": "float64",
    "f64": "float64",
    "float32": "float32",
    "float": "float32",
    "fp32": "float32",
    "f32": "float32",
    "tf32": "tf32",
    "tensorfloat32": "tf32",
    "float16": "float16",
    "half": "float16",
    "fp16": "float16",
    "f16": "float16",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
}

_MiB = 1 << 20
_TB = 1e12
_TFLOP = 1e12


def canonical_dtype(dtype: str | torch.dtype) -> str:
    """The compute-format key (one of :data:`DTYPES`) for a dtype name or a ``torch.dtype``.

    Raises :class:`~kernelproof.errors.UsageError` for formats without a ceiling (integers,
    bool, float8), naming the accepted spellings.
    """
    text = str(dtype).strip().lower()
    text = text.removeprefix("torch.")
    try:
        return _DTYPE_ALIASES[text]
    except KeyError:
        raise UsageError(
            f"no roofline ceiling for dtype {dtype!r}; pass the floating-point format the kernel "
            f"computes in, one of {', '.join(sorted(_DTYPE_ALIASES))}"
        ) from None


@dataclass(frozen=True)
class PeakFlops:
    """Peak dense FLOP/s of one device per compute format; ``None`` where the vendor gives none."""

    float64: float | None
    """The fastest FP64 path: the tensor-core (matrix) rate where the part has one, since that is
    what a double-precision GEMM reaches."""

    float32: float | None
    """Plain FP32 (CUDA cores / vector units): what a float32 matmul gets with TF32 disabled."""

    tf32: float | None
    """TF32 tensor-core rate, dense."""

    float16: float | None
    """FP16 tensor-core rate with FP32 accumulation (PyTorch's default), dense."""

    bfloat16: float | None
    """BF16 tensor-core rate with FP32 accumulation, dense."""

    def get(self, dtype: str) -> float | None:
        """The peak for a compute format (any spelling :func:`canonical_dtype` accepts)."""
        value: float | None = getattr(self, canonical_dtype(dtype))
        return value


@dataclass(frozen=True)
class DeviceSpec:
    """One accelerator model: its datasheet ceilings and how to recognise its name."""

    key: str
    """Short stable identifier, e.g. ``"h100-sxm"``."""

    name: str
    """Human-readable product name."""

    peak_flops: PeakFlops
    bytes_per_s: float
    """Peak DRAM (HBM/GDDR) bandwidth in bytes per second."""

    l2_bytes: int
    """Total L2 cache in bytes (MiB taken as the vendor's "MB")."""

    source: str
    """The vendor document the figures come from."""

    requires: tuple[tuple[str, ...], ...]
    """Name tokens that must appear: one token of each inner tuple (alternatives)."""

    forbids: tuple[str, ...] = ()
    """Name tokens that rule this entry out (another variant of the same chip)."""

    memory_gb: tuple[int, ...] = ()
    """Memory sizes this part ships with; a ``<n>GB`` token in the name must be one of them."""

    extra_cache_bytes: int | None = None
    """A cache level beyond L2 (AMD Infinity Cache), when the part has one."""

    @property
    def last_level_cache_bytes(self) -> int:
        """The largest on-chip cache a cold-memory measurement must overflow."""
        return max(self.l2_bytes, self.extra_cache_bytes or 0)

    def matches(self, name: str) -> bool:
        """Whether a device name (as ``torch.cuda.get_device_name`` gives it) is this part."""
        tokens = set(_tokens(name))
        if not all(any(alt in tokens for alt in group) for group in self.requires):
            return False
        if any(token in tokens for token in self.forbids):
            return False
        for token in tokens:
            size = _MEMORY_TOKEN.fullmatch(token)
            if size is not None and int(size.group(1)) not in self.memory_gb:
                return False
        return True


#: A memory-size token such as ``80gb``: it tells the 40 GB and 80 GB parts of one chip apart.
_MEMORY_TOKEN = re.compile(r"(\d+)gb")


def _tokens(name: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", name.lower())


_H100_DATASHEET = "NVIDIA H100 Tensor Core GPU Datasheet"
_A100_DATASHEET = "NVIDIA A100 Tensor Core GPU Datasheet"
_A100_WHITEPAPER = "L2 from the NVIDIA A100 Tensor Core GPU Architecture whitepaper"
_H100_WHITEPAPER = "L2 from the NVIDIA H100 Tensor Core GPU Architecture whitepaper"
_A100_PEAKS = PeakFlops(
    float64=19.5 * _TFLOP,
    float32=19.5 * _TFLOP,
    tf32=156 * _TFLOP,
    float16=312 * _TFLOP,
    bfloat16=312 * _TFLOP,
)

#: The known devices. Dense figures are the datasheets' "with sparsity" numbers halved.
DEVICES: tuple[DeviceSpec, ...] = (
    DeviceSpec(
        key="h100-sxm",
        name="NVIDIA H100 SXM5 80GB",
        peak_flops=PeakFlops(
            float64=67 * _TFLOP,
            float32=67 * _TFLOP,
            tf32=494.5 * _TFLOP,
            float16=989.5 * _TFLOP,
            bfloat16=989.5 * _TFLOP,
        ),
        bytes_per_s=3.35 * _TB,
        l2_bytes=50 * _MiB,
        source=f"{_H100_DATASHEET} (H100 SXM); {_H100_WHITEPAPER}",
        # torch reports the SXM5 part as "NVIDIA H100 80GB HBM3".
        requires=(("h100",), ("sxm", "sxm5", "hbm3")),
        forbids=("pcie", "nvl"),
        memory_gb=(80,),
    ),
    DeviceSpec(
        key="h100-pcie",
        name="NVIDIA H100 PCIe 80GB",
        peak_flops=PeakFlops(
            float64=51 * _TFLOP,
            float32=51 * _TFLOP,
            tf32=378 * _TFLOP,
            float16=756.5 * _TFLOP,
            bfloat16=756.5 * _TFLOP,
        ),
        bytes_per_s=2.0 * _TB,
        l2_bytes=50 * _MiB,
        source=f"{_H100_DATASHEET} (H100 PCIe); {_H100_WHITEPAPER}",
        requires=(("h100",), ("pcie",)),
        forbids=("sxm", "sxm5", "hbm3", "nvl"),
        memory_gb=(80,),
    ),
    DeviceSpec(
        key="h200-sxm",
        name="NVIDIA H200 SXM 141GB",
        peak_flops=PeakFlops(
            float64=67 * _TFLOP,
            float32=67 * _TFLOP,
            tf32=494.5 * _TFLOP,
            float16=989.5 * _TFLOP,
            bfloat16=989.5 * _TFLOP,
        ),
        bytes_per_s=4.8 * _TB,
        l2_bytes=50 * _MiB,
        source="NVIDIA H200 Tensor Core GPU Datasheet (H200 SXM)",
        # The SXM part reports itself as plain "NVIDIA H200"; the PCIe card is "H200 NVL".
        requires=(("h200",),),
        forbids=("nvl", "pcie"),
        memory_gb=(141,),
    ),
    DeviceSpec(
        key="b200",
        name="NVIDIA B200 (HGX, 1000 W)",
        peak_flops=PeakFlops(
            float64=37 * _TFLOP,
            float32=75 * _TFLOP,
            tf32=1100 * _TFLOP,
            float16=2250 * _TFLOP,
            bfloat16=2250 * _TFLOP,
        ),
        # The HGX B200 datasheet first gave 8 TB/s per GPU and later 7.7 TB/s for the 180 GB
        # part; a ceiling must not be beaten, so the higher figure stays.
        bytes_per_s=8.0 * _TB,
        l2_bytes=126 * _MiB,
        source=(
            "NVIDIA HGX B200 / DGX B200 Datasheet (per-GPU figures); L2 is not in the datasheet: "
            "126 MB as measured by Chips and Cheese, "
            "'Nvidia's B200: Keeping the CUDA Juggernaut Rolling'"
        ),
        requires=(("b200",),),
        memory_gb=(180, 192),
    ),
    DeviceSpec(
        key="a100-sxm-80gb",
        name="NVIDIA A100 SXM4 80GB",
        peak_flops=_A100_PEAKS,
        bytes_per_s=2.039 * _TB,
        l2_bytes=40 * _MiB,
        source=f"{_A100_DATASHEET} (A100 80GB SXM); {_A100_WHITEPAPER}",
        # The 40 GB and 80 GB SXM parts differ in bandwidth, so the name must state the size.
        requires=(("a100",), ("sxm", "sxm4"), ("80gb",)),
        forbids=("pcie",),
        memory_gb=(80,),
    ),
    DeviceSpec(
        key="a100-sxm-40gb",
        name="NVIDIA A100 SXM4 40GB",
        peak_flops=_A100_PEAKS,
        bytes_per_s=1.555 * _TB,
        l2_bytes=40 * _MiB,
        source=f"{_A100_DATASHEET} (A100 40GB SXM); {_A100_WHITEPAPER}",
        requires=(("a100",), ("sxm", "sxm4"), ("40gb",)),
        forbids=("pcie",),
        memory_gb=(40,),
    ),
    DeviceSpec(
        key="a100-pcie-80gb",
        name="NVIDIA A100 PCIe 80GB",
        peak_flops=_A100_PEAKS,
        bytes_per_s=1.935 * _TB,
        l2_bytes=40 * _MiB,
        source=f"{_A100_DATASHEET} (A100 80GB PCIe); {_A100_WHITEPAPER}",
        # The two PCIe parts differ in bandwidth, so the name must state the memory size.
        requires=(("a100",), ("pcie",), ("80gb",)),
        forbids=("sxm", "sxm4"),
        memory_gb=(80,),
    ),
    DeviceSpec(
        key="a100-pcie-40gb",
        name="NVIDIA A100 PCIe 40GB",
        peak_flops=_A100_PEAKS,
        bytes_per_s=1.555 * _TB,
        l2_bytes=40 * _MiB,
        source=f"{_A100_DATASHEET} (A100 40GB PCIe); {_A100_WHITEPAPER}",
        requires=(("a100",), ("pcie",), ("40gb",)),
        forbids=("sxm", "sxm4"),
        memory_gb=(40,),
    ),
    DeviceSpec(
        key="l40s",
        name="NVIDIA L40S",
        peak_flops=PeakFlops(
            # The datasheet gives no FP64 figure; ceilings fall back to calibration for it.
            float64=None,
            float32=91.6 * _TFLOP,
            tf32=183 * _TFLOP,
            float16=362.05 * _TFLOP,
            bfloat16=362.05 * _TFLOP,
        ),
        bytes_per_s=0.864 * _TB,
        l2_bytes=96 * _MiB,
        source=(
            "NVIDIA L40S GPU Datasheet; L2 from the NVIDIA Ada Lovelace GPU Architecture whitepaper"
        ),
        requires=(("l40s",),),
        memory_gb=(48,),
    ),
    DeviceSpec(
        key="rtx-4090",
        name="NVIDIA GeForce RTX 4090",
        peak_flops=PeakFlops(
            # GeForce parts run FP16/BF16 with FP32 accumulation (PyTorch's default) at half the
            # FP16-accumulate rate of 330.3 TFLOP/s; the table keeps the FP32-accumulate rate.
            float64=1.29 * _TFLOP,
            float32=82.6 * _TFLOP,
            tf32=82.6 * _TFLOP,
            float16=165.2 * _TFLOP,
            bfloat16=165.2 * _TFLOP,
        ),
        bytes_per_s=1.008 * _TB,
        l2_bytes=72 * _MiB,
        source="NVIDIA Ada Lovelace GPU Architecture whitepaper (GeForce RTX 4090, appendix table)",
        requires=(("4090", "rtx4090"),),
        # "RTX 4090 D" is a cut-down part; the laptop "4090" is a different chip.
        forbids=("d", "laptop", "mobile"),
        memory_gb=(24,),
    ),
    DeviceSpec(
        key="mi300x",
        name="AMD Instinct MI300X",
        peak_flops=PeakFlops(
            float64=163.4 * _TFLOP,
            float32=163.4 * _TFLOP,
            tf32=653.7 * _TFLOP,
            float16=1307.4 * _TFLOP,
            bfloat16=1307.4 * _TFLOP,
        ),
        bytes_per_s=5.3 * _TB,
        l2_bytes=32 * _MiB,  # 4 MB per XCD, 8 XCDs
        extra_cache_bytes=256 * _MiB,  # AMD Infinity Cache
        source=(
            "AMD Instinct MI300X Accelerator data sheet; "
            "caches from the AMD CDNA 3 Architecture white paper"
        ),
        requires=(("mi300x",),),
        memory_gb=(192,),
    ),
)


def find_device(name: str, *, devices: Iterable[DeviceSpec] = DEVICES) -> DeviceSpec | None:
    """The table entry for a device name, or ``None`` when no entry or more than one matches.

    Matching is case-insensitive and on whole tokens, so ``"NVIDIA H100 80GB HBM3"`` is the SXM
    part, ``"NVIDIA H100 PCIe"`` the PCIe part, and ``"NVIDIA H100 NVL"`` or plain
    ``"NVIDIA H100"`` are neither. Refusing to guess keeps a wrong datasheet out of the report:
    the caller falls back to a measured calibration instead. ``devices`` replaces the built-in
    table (to extend it with a site's own parts).
    """
    found = [spec for spec in devices if spec.matches(name)]
    return found[0] if len(found) == 1 else None
