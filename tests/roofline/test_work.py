"""FLOP and compulsory-byte counts of small computations whose counts are known by hand."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from kernelproof.roofline import count_work

F32 = 4  # bytes per float32 element


def test_matmul_is_two_m_n_k() -> None:
    m, k, n = 48, 32, 24
    a, b = torch.randn(m, k), torch.randn(k, n)
    work = count_work(torch.matmul, (a, b))
    assert work.flops == 2 * m * n * k
    assert work.breakdown == {"aten.mm": 2 * m * n * k}  # not double-counted as pointwise
    assert work.bytes_read == (m * k + k * n) * F32
    assert work.bytes_written == m * n * F32
    assert work.bytes == work.bytes_read + work.bytes_written
    assert work.uncounted_ops == ()


def test_batched_matmul() -> None:
    a, b = torch.randn(3, 8, 16), torch.randn(3, 16, 4)
    assert count_work(lambda x, y: x @ y, (a, b)).flops == 2 * 3 * 8 * 4 * 16


def test_elementwise_is_one_flop_per_output_element_per_op() -> None:
    x, y, z = (torch.randn(10, 30) for _ in range(3))
    work = count_work(lambda x, y, z: x * y + z, (x, y, z))
    assert work.breakdown == {"aten.mul": 300, "aten.add": 300}
    assert work.bytes == 4 * 300 * F32  # three read, one written; the product stays on chip


def test_broadcast_pointwise_counts_output_elements() -> None:
    x, bias = torch.randn(16, 8), torch.randn(8)
    work = count_work(torch.add, (x, bias))
    assert work.flops == 16 * 8
    assert work.bytes_read == (16 * 8 + 8) * F32


def test_softmax_counts_five_flops_per_element() -> None:
    x = torch.randn(8, 100)
    work = count_work(lambda t: torch.softmax(t, dim=-1), (x,))
    assert work.breakdown == {"aten._softmax": 5 * 800}
    assert work.bytes == 2 * 800 * F32


def test_reduction_counts_input_elements() -> None:
    x = torch.randn(12, 50)
    work = count_work(lambda t: t.sum(dim=1), (x,))
    assert work.flops == 600
    assert work.bytes_written == 12 * F32


def test_linear_relu_module_counts_weights_once() -> None:
    batch, d_in, d_out = 4, 64, 32
    module = nn.Sequential(nn.Linear(d_in, d_out), nn.ReLU())
    x = torch.randn(batch, d_in)
    work = count_work(module, (x,))
    assert work.flops == 2 * batch * d_in * d_out + batch * d_out
    assert work.breakdown["aten.relu"] == batch * d_out
    weights = d_in * d_out + d_out
    assert work.bytes_read == (batch * d_in + weights) * F32
    assert work.bytes_written == batch * d_out * F32


class _TiedTwice(nn.Module):
    """Applies one weight twice: compulsory traffic reads it once."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(width, width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(F.linear(x, self.weight), self.weight)


def test_a_weight_used_twice_is_read_once() -> None:
    width, batch = 16, 2
    work = count_work(_TiedTwice(width), torch.randn(batch, width))
    assert work.flops == 2 * (2 * batch * width * width)
    assert work.bytes_read == (batch * width + width * width) * F32


def test_the_same_tensor_passed_twice_is_read_once() -> None:
    x = torch.randn(10, 10)
    assert count_work(torch.add, (x, x)).bytes_read == 100 * F32
    part = torch.randn(1000)[:10]  # a view smaller than its storage
    assert count_work(torch.add, (part, part)).bytes_read == 10 * F32


def test_overlapping_views_read_their_storage_at_most_once() -> None:
    x = torch.randn(10)
    assert count_work(lambda a, b: a.sum() + b.sum(), (x, x[:5])).bytes_read == 10 * F32


def test_two_halves_of_one_buffer_are_both_read() -> None:
    buffer = torch.randn(2, 50)
    assert count_work(torch.add, (buffer[0], buffer[1])).bytes_read == 100 * F32


def test_params_argument_counts_closed_over_weights() -> None:
    weight = torch.randn(8, 8)
    x = torch.randn(2, 8)
    work = count_work(lambda t: t @ weight, (x,), params=[weight])
    assert work.bytes_read == (16 + 64) * F32


def test_module_buffers_are_read() -> None:
    norm = nn.BatchNorm1d(6).eval()
    x = torch.randn(5, 6)
    work = count_work(norm, (x,))
    # input, weight, bias, running mean and var are read; the batch counter is a buffer too.
    assert work.bytes_read == (30 + 4 * 6) * F32 + 8
    assert work.flops >= 2 * 30


def test_views_and_copies_cost_no_flops() -> None:
    x = torch.randn(6, 7)
    work = count_work(lambda t: t.t().contiguous().clone().reshape(-1), (x,))
    assert work.flops == 0
    assert work.uncounted_ops == ()


def test_an_output_that_is_a_view_of_the_input_writes_nothing() -> None:
    x = torch.randn(6, 7)
    work = count_work(lambda t: t.t(), (x,))
    assert work.bytes_written == 0
    assert work.bytes == 42 * F32


def test_in_place_update_is_read_and_written() -> None:
    x = torch.randn(20)
    work = count_work(lambda t: t.relu_(), (x,))
    assert work.flops == 20
    assert work.bytes_read == 20 * F32
    assert work.bytes_written == 20 * F32


def test_expanded_input_counts_its_distinct_memory() -> None:
    row = torch.randn(10, 32)[3:4]  # one row of a larger buffer
    wide = row.expand(100, 32)
    work = count_work(lambda t: t * 2, (wide,))
    assert work.bytes_read == 32 * F32
    assert work.bytes_written == 100 * 32 * F32


def test_tuple_outputs_are_all_written() -> None:
    x = torch.randn(4, 9)
    work = count_work(lambda t: (t + 1, t * 2), (x,))
    assert work.bytes_written == 2 * 36 * F32
    assert work.flops == 72


@pytest.mark.parametrize("causal", [False, True])
def test_attention_counts_both_matmuls_and_only_unmasked_pairs(causal: bool) -> None:
    batch, heads, length, embed = 2, 3, 64, 16
    q = torch.randn(batch, heads, length, embed)
    work = count_work(lambda t: F.scaled_dot_product_attention(t, t, t, is_causal=causal), (q,))
    full = 2 * batch * heads * length * length * (embed + embed)
    expected = full * (length + 1) / (2 * length) if causal else full
    assert work.flops == pytest.approx(expected, rel=1e-9)


def test_ops_without_a_formula_are_reported() -> None:
    x = torch.randn(16)
    work = count_work(torch.fft.rfft, (x,))
    assert work.uncounted_ops  # e.g. aten._fft_r2c
    assert all(name.startswith("aten.") for name in work.uncounted_ops)


def test_a_gathered_table_is_not_compulsory_but_its_ids_and_output_are() -> None:
    table = torch.randn(10_000, 16)
    ids = torch.tensor([3, 7, 9])
    work = count_work(lambda t, i: torch.nn.functional.embedding(i, t), (table, ids))
    assert work.compulsory_read == ids.numel() * 8
    assert work.bytes == ids.numel() * 8 + 3 * 16 * F32
    assert work.reference_bytes == table.numel() * F32 + ids.numel() * 8 + 3 * 16 * F32


def test_a_diagonal_matmul_binds_its_inputs_and_output_not_its_flops() -> None:
    a, b = torch.randn(64), torch.randn(64, 64)
    work = count_work(lambda x, y: torch.diag(x) @ y, (a, b))
    assert work.bytes == (64 + 2 * 64 * 64) * F32  # a and B read, the output written
    assert work.flops >= 2 * 64**3  # the reference's matmul, information only


def test_a_view_consumed_by_a_dense_op_reads_only_its_bytes() -> None:
    x = torch.randn(100, 100)
    work = count_work(lambda t: t[:, :10].sum(), (x,))
    assert work.compulsory_read == 100 * 10 * F32
