"""Routing one call: inside the report's envelope (the candidate) or not (the reference).

A production call pays for routing on every call, so the decision is cached per *routing key*:
a plain tuple of what a :class:`~kernelproof.schema.envelope.CallSignature` holds (per tensor:
shape, dtype, strides, device; per plain value: its type and value), read without building any
model. Only a key seen for the first time builds the signature and asks the envelope.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import torch

from kernelproof.schema.envelope import PLAIN_VALUE_TYPES, CallSignature, Envelope

#: Distinct routing keys whose decision is cached. A host that calls at ever new shapes (a
#: growing sequence length) would otherwise grow the cache without bound; past this, new keys
#: are decided on every call (correct, only slower).
ROUTING_CACHE_LIMIT = 4096


def routing_key(args: Sequence[Any]) -> tuple[Hashable, ...] | None:
    """A hashable key that determines the call's signature, or None when some argument is
    neither a tensor nor a plain value (such a call is never inside an envelope)."""
    key: list[Hashable] = []
    for arg in args:
        if isinstance(arg, torch.Tensor):
            # Strides and shape determine contiguity; the device object keeps its index, which
            # only splits the cache, never the decision.
            key.append((arg.shape, arg.dtype, arg.stride(), arg.device))
        elif isinstance(arg, PLAIN_VALUE_TYPES):
            key.append((type(arg), arg))  # the type keeps True apart from 1
        else:
            return None
    return tuple(key)


class RoutingTable:
    """Cached routing decisions against one envelope: a call's knob values when it is inside,
    else None."""

    def __init__(self, envelope: Envelope) -> None:
        self.envelope = envelope
        self._decisions: dict[tuple[Hashable, ...], dict[str, int] | None] = {}

    def knobs_for(self, args: Sequence[Any]) -> dict[str, int] | None:
        """The call's knob values when it is inside the envelope, else None."""
        return self.decide(routing_key(args), args)

    def decide(
        self, key: tuple[Hashable, ...] | None, args: Sequence[Any]
    ) -> dict[str, int] | None:
        """:meth:`knobs_for` with the call's routing key already computed."""
        if key is None:
            return None
        try:
            return self._decisions[key]
        except KeyError:
            pass
        decision = self.envelope.knobs_for(CallSignature.of(args))
        if len(self._decisions) < ROUTING_CACHE_LIMIT:
            self._decisions[key] = decision
        return decision

    @property
    def cached(self) -> int:
        """How many distinct keys have a cached decision."""
        return len(self._decisions)
