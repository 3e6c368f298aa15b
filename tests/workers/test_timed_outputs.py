"""Every output of every timed call must be a plain, materialised tensor when its clock stops
(issue 25 class 2): the check the harness runs on each timed call."""

from __future__ import annotations

import torch

from kernelproof.harness.timed_calls import unmaterialised_output


class Deferred(torch.Tensor):
    """A subclass whose methods could compute its values on first use."""

    touched = 0

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        Deferred.touched += 1
        return super().__torch_function__(func, types, args, kwargs or {})


def test_a_plain_tensor_passes():
    assert unmaterialised_output([torch.ones(3), torch.zeros(0)], "cpu", 0) is None


def test_non_tensor_outputs_are_left_to_the_comparison():
    assert unmaterialised_output([torch.ones(3), 5, None], "cpu", 0) is None


def test_a_subclass_is_reported_without_running_its_methods():
    out = torch.ones(4).as_subclass(Deferred)
    Deferred.touched = 0
    found = unmaterialised_output([torch.ones(2), out], "cpu", 7)
    assert found is not None and found["check"] == "output-type"
    assert found["evidence"] == {"output": 1, "call": 7, "type": f"{__name__}.Deferred"}
    assert Deferred.touched == 0, "the check must not call into the subclass"


def test_a_meta_tensor_holds_no_values():
    found = unmaterialised_output([torch.empty(4, device="meta")], "cpu", 2)
    assert found is not None and found["evidence"]["device"] == "meta"
    assert "holds no values" in found["message"]
