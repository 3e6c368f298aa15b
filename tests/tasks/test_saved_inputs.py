"""Saved call arguments: written by the guard, read back by ``verify --inputs``."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kernelproof.errors import UsageError
from kernelproof.tasks.saved_inputs import given_slots, load_arguments, rebuild, save_arguments


def test_arguments_round_trip_with_their_layout(tmp_path: Path) -> None:
    strided = torch.arange(12.0).reshape(3, 4).t()
    path = tmp_path / "inputs.pt"
    save_arguments(path, [strided, 3, None, object()])
    tensor, count, nothing, unknown = load_arguments(path)
    assert torch.equal(tensor, strided) and tensor.stride() == strided.stride()
    assert (count, nothing) == (3, None) and unknown.startswith("<object object")
    slots, tensors = given_slots([tensor, count])
    # On the wire tensors travel contiguous; the worker lays them out again.
    rebuilt, value = rebuild(slots, [t.contiguous() for t in tensors], "cpu")
    assert torch.equal(rebuilt, strided) and rebuilt.stride() == strided.stride() and value == 3


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "no such file"),
        (b"not a torch file", "is not a saved inputs file"),
        ({"args": []}, "no 'kernelproof.inputs/1' format tag"),
    ],
)
def test_a_wrong_file_is_a_one_line_error_with_the_fix(
    tmp_path: Path, content: object, message: str
) -> None:
    path = tmp_path / "inputs.pt"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        torch.save(content, path)
    with pytest.raises(UsageError, match=message) as caught:
        load_arguments(path)
    assert "\n" not in str(caught.value) and "inputs.pt of an incident" in str(caught.value)
