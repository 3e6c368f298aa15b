"""The envelope's signatures and its inside/outside rule."""

from __future__ import annotations

import torch

from kernelproof.schema.envelope import (
    CallSignature,
    DimensionBinding,
    Envelope,
    KnobRange,
    TensorSignature,
    ValueSignature,
)


def test_signature_reads_shape_dtype_strides_and_device() -> None:
    x = torch.zeros(4, 6)
    signature = CallSignature.of([x.t(), 3, 1.5, None, "mean", [1, 2]])
    tensor, *values = signature.args
    assert tensor == TensorSignature(
        shape=(6, 4), dtype="float32", strides=(1, 6), contiguous=False, device="cpu"
    )
    assert [v.value for v in values[:4]] == [3, 1.5, None, "mean"]
    assert values[0].type == "int" and values[3].type == "str"
    assert values[4].opaque and not signature.routable


def test_signature_is_hashable_and_round_trips_json() -> None:
    a = CallSignature.of([torch.zeros(2, 3), True])
    b = CallSignature.of([torch.ones(2, 3), True])
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert CallSignature.model_validate_json(a.model_dump_json()) == a
    assert CallSignature.of([torch.zeros(2, 3), 1]) != a  # True and 1 are different values


def _softmax_envelope(covered: bool = True) -> Envelope:
    template = CallSignature.of([torch.zeros(64, 128)])
    return Envelope(
        signatures=[template, CallSignature.of([torch.zeros(128, 64).t()])],
        knobs=[{"batch": 64, "dim": 128}, {"batch": 64, "dim": 128}],
        templates=[template],
        default_knobs={"batch": 64, "dim": 128},
        ranges=[
            KnobRange(
                knob="batch",
                values=[32, 61, 64, 65, 128],
                low=32,
                high=128,
                covered=covered,
                reason="test",
                bindings=[DimensionBinding(arg=0, dim=0, scale=1)],
            ),
            KnobRange(
                knob="dim",
                values=[128],
                low=128,
                high=128,
                covered=False,
                reason="test",
                bindings=[DimensionBinding(arg=0, dim=1, scale=1)],
            ),
        ],
    )


def test_exact_signatures_are_inside_layouts_included() -> None:
    envelope = _softmax_envelope()
    assert envelope.contains(CallSignature.of([torch.zeros(64, 128)]))
    assert envelope.contains(CallSignature.of([torch.zeros(128, 64).t()]))
    # Another strided layout was never verified.
    assert not envelope.contains(CallSignature.of([torch.zeros(64, 256)[:, ::2]]))


def test_a_covered_knob_range_admits_sizes_between_verified_values() -> None:
    envelope = _softmax_envelope()
    assert envelope.knobs_for(CallSignature.of([torch.zeros(100, 128)])) == {
        "batch": 100,
        "dim": 128,
    }
    assert not envelope.contains(CallSignature.of([torch.zeros(129, 128)]))  # past the range
    assert not envelope.contains(CallSignature.of([torch.zeros(100, 127)]))  # dim: exact only
    assert not envelope.contains(CallSignature.of([torch.zeros(100, 128, dtype=torch.float64)]))
    assert not envelope.contains(CallSignature.of([torch.zeros(100, 128), 1]))


def test_an_uncovered_range_admits_exact_values_only() -> None:
    envelope = _softmax_envelope(covered=False)
    assert not envelope.contains(CallSignature.of([torch.zeros(100, 128)]))
    assert envelope.contains(CallSignature.of([torch.zeros(64, 128)]))


def test_value_arguments_must_match_exactly() -> None:
    template = CallSignature.of([torch.zeros(8), 2])
    envelope = Envelope(
        signatures=[template], knobs=[{"n": 8}], templates=[template], default_knobs={"n": 8}
    )
    assert envelope.contains(CallSignature.of([torch.ones(8), 2]))
    assert not envelope.contains(CallSignature.of([torch.ones(8), 3]))
    assert isinstance(template.args[1], ValueSignature)
