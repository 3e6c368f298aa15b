"""The device table and its name lookup."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from kernelproof.errors import UsageError
from kernelproof.roofline import DEVICES, DTYPES, canonical_dtype, find_device


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),
        ("NVIDIA H100 SXM5 80GB", "h100-sxm"),
        ("NVIDIA H100 PCIe", "h100-pcie"),
        ("nvidia h100 pcie", "h100-pcie"),
        ("NVIDIA H200", "h200-sxm"),
        ("NVIDIA B200", "b200"),
        ("NVIDIA A100-SXM4-80GB", "a100-sxm-80gb"),
        ("NVIDIA A100-SXM4-40GB", "a100-sxm-40gb"),
        ("NVIDIA A100 80GB PCIe", "a100-pcie-80gb"),
        ("NVIDIA A100-PCIE-40GB", "a100-pcie-40gb"),
        ("NVIDIA L40S", "l40s"),
        ("NVIDIA GeForce RTX 4090", "rtx-4090"),
        ("AMD Instinct MI300X", "mi300x"),
        ("  amd instinct mi300x  ", "mi300x"),
    ],
)
def test_known_names_resolve(name: str, key: str) -> None:
    spec = find_device(name)
    assert spec is not None, name
    assert spec.key == key


@pytest.mark.parametrize(
    "name",
    [
        "NVIDIA H100",  # SXM or PCIe: ambiguous
        "NVIDIA H100 NVL",  # a third product
        "NVIDIA H100 SXM PCIe",  # contradicts itself
        "NVIDIA H100 SXM5 64GB",  # a variant with other memory
        "NVIDIA H200 NVL",
        "NVIDIA GH200 480GB",
        "NVIDIA A100",
        "NVIDIA A100 PCIe",  # 40 GB or 80 GB: the bandwidths differ
        "NVIDIA A100-SXM4",
        "NVIDIA L40",
        "NVIDIA GeForce RTX 4090 D",
        "NVIDIA GeForce RTX 4090 Laptop GPU",
        "NVIDIA GeForce RTX 4080",
        "AMD Instinct MI300A",
        "AMD Instinct MI325X",
        "Intel(R) Xeon(R) Platinum 8480+",
        "",
    ],
)
def test_ambiguous_or_unknown_names_are_refused(name: str) -> None:
    assert find_device(name) is None


def test_a_name_matching_two_entries_is_refused() -> None:
    sxm = find_device("NVIDIA H100 80GB HBM3")
    assert sxm is not None
    loose = replace(sxm, key="h100-any", requires=(("h100",),), forbids=())
    assert find_device("NVIDIA H100 80GB HBM3", devices=[sxm]) is sxm
    assert find_device("NVIDIA H100 80GB HBM3", devices=[sxm, loose]) is None
    assert find_device("NVIDIA H100 PCIe", devices=[sxm, loose]) is loose


@pytest.mark.parametrize("spec", DEVICES, ids=lambda spec: spec.key)
def test_each_entry_is_found_by_its_own_name_and_no_other(spec) -> None:
    assert find_device(spec.name) is spec


@pytest.mark.parametrize("spec", DEVICES, ids=lambda spec: spec.key)
def test_entries_are_plausible_dense_figures(spec) -> None:
    peaks = spec.peak_flops
    assert spec.source
    assert 0.5e12 <= spec.bytes_per_s <= 10e12
    assert 16 << 20 <= spec.l2_bytes <= 256 << 20
    assert peaks.bfloat16 is not None and peaks.tf32 is not None and peaks.float32 is not None
    # Tensor-core formats are never slower than plain float32, and bf16 runs at twice TF32.
    assert peaks.bfloat16 >= peaks.tf32 >= peaks.float32
    assert peaks.float16 == peaks.bfloat16
    assert peaks.bfloat16 == pytest.approx(2 * peaks.tf32, rel=0.03)


def test_h100_sxm_figures_are_dense_not_sparse() -> None:
    spec = find_device("NVIDIA H100 80GB HBM3")
    assert spec is not None
    assert spec.peak_flops.get("bf16") == pytest.approx(989.5e12)  # 1979 "with sparsity" halved
    assert spec.peak_flops.get("float32") == pytest.approx(67e12)
    assert spec.bytes_per_s == pytest.approx(3.35e12)


def test_mi300x_last_level_cache_is_the_infinity_cache() -> None:
    spec = find_device("AMD Instinct MI300X")
    assert spec is not None
    assert spec.last_level_cache_bytes == 256 << 20 > spec.l2_bytes


@pytest.mark.parametrize(
    ("spelling", "key"),
    [
        ("float32", "float32"),
        ("fp32", "float32"),
        (torch.float32, "float32"),
        ("torch.bfloat16", "bfloat16"),
        ("BF16", "bfloat16"),
        ("half", "float16"),
        (torch.float64, "float64"),
        ("tf32", "tf32"),
    ],
)
def test_canonical_dtype(spelling: str | torch.dtype, key: str) -> None:
    assert canonical_dtype(spelling) == key
    assert key in DTYPES


@pytest.mark.parametrize("spelling", ["int8", torch.int64, "float8_e4m3fn", "bool"])
def test_canonical_dtype_refuses_formats_without_a_ceiling(spelling: str | torch.dtype) -> None:
    with pytest.raises(UsageError, match="no roofline ceiling"):
        canonical_dtype(spelling)
