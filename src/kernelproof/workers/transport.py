"""The private channel between the controller and a worker.

Every message is a JSON header followed by raw tensor buffers. Nothing is unpickled: a
candidate worker is untrusted, and unpickling its bytes would hand it code execution in the
controller. Large tensors travel through POSIX shared memory; the receiver copies them out and
unlinks the segment, so nothing the sender keeps can alias what the receiver holds.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from multiprocessing import resource_tracker, shared_memory
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

#: Tensors above this size go through shared memory instead of the pipe. A new segment costs
#: about 1.5 ms (create, size, map, fault in, resource-tracker messages) before its memcpy, so
#: the pipe wins below ~16 MiB (measured here: 1 MiB in 1.2 ms by pipe, 2.7 ms by segment; the
#: verification of a timed output fetches one such tensor every round).
SHARED_MEMORY_THRESHOLD_BYTES = 16 << 20

#: A header larger than this is refused: a hostile worker must not make the controller parse
#: gigabytes of JSON.
MAX_HEADER_BYTES = 16 << 20

#: A single tensor larger than this is refused for the same reason (64 GiB).
MAX_TENSOR_BYTES = 64 << 30


class ProtocolError(Exception):
    """The peer sent something that is not a well-formed message."""


@dataclass
class Message:
    """A decoded message: its JSON header and the tensors that came with it."""

    header: dict[str, Any]
    tensors: list["torch.Tensor"]


def send(conn: Connection, header: dict[str, Any], tensors: list["torch.Tensor"] = ()) -> None:
    """Send a header and tensors. Tensors are serialised from contiguous CPU copies."""
    descriptors: list[dict[str, Any]] = []
    buffers: list[bytes | None] = []
    for tensor in tensors:
        raw = _tensor_bytes(tensor)
        descriptor: dict[str, Any] = {
            "dtype": str(tensor.dtype).removeprefix("torch."),
            "shape": list(tensor.shape),
            "nbytes": len(raw),
        }
        if len(raw) >= SHARED_MEMORY_THRESHOLD_BYTES:
            descriptor["shm"] = _to_shared_memory(raw)
            buffers.append(None)
        else:
            buffers.append(raw)
        descriptors.append(descriptor)
    conn.send_bytes(json.dumps({**header, "_tensors": descriptors}).encode())
    for raw in buffers:
        if raw is not None:
            conn.send_bytes(raw)


def receive(conn: Connection) -> Message:
    """Receive one message. Raises EOFError when the peer is gone, ProtocolError when malformed."""
    import torch

    raw_header = conn.recv_bytes(MAX_HEADER_BYTES)
    try:
        header = json.loads(raw_header)
    except ValueError as exc:
        raise ProtocolError(f"header is not JSON: {exc}") from None
    if not isinstance(header, dict):
        raise ProtocolError("header is not a JSON object")
    descriptors = header.pop("_tensors", [])
    if not isinstance(descriptors, list):
        raise ProtocolError("tensor list is not a list")
    tensors = []
    for descriptor in descriptors:
        dtype, shape, nbytes = _validate_descriptor(descriptor)
        flat = torch.empty(nbytes, dtype=torch.uint8)
        if "shm" in descriptor:
            _copy_from_shared_memory(str(descriptor["shm"]), flat)
        elif nbytes:
            received = conn.recv_bytes_into(flat.numpy())
            if received != nbytes:
                raise ProtocolError(f"tensor buffer has {received} bytes, header said {nbytes}")
        else:
            conn.recv_bytes(MAX_TENSOR_BYTES)
        tensors.append(flat.view(dtype).reshape(shape))
    return Message(header=header, tensors=tensors)


def _tensor_bytes(tensor: "torch.Tensor") -> bytes:
    import torch

    cpu = tensor.detach().to("cpu").contiguous()
    if cpu.numel() == 0:
        return b""
    return cpu.reshape(-1).view(torch.uint8).numpy().tobytes()


def _validate_descriptor(descriptor: Any) -> tuple["torch.dtype", list[int], int]:
    import torch

    if not isinstance(descriptor, dict):
        raise ProtocolError("tensor descriptor is not an object")
    dtype = getattr(torch, str(descriptor.get("dtype")), None)
    if not isinstance(dtype, torch.dtype):
        raise ProtocolError(f"unknown dtype {descriptor.get('dtype')!r}")
    shape = descriptor.get("shape")
    if not isinstance(shape, list) or not all(isinstance(n, int) and n >= 0 for n in shape):
        raise ProtocolError(f"bad shape {shape!r}")
    nbytes = descriptor.get("nbytes")
    numel = 1
    for n in shape:
        numel *= n
    element_size = torch.empty((), dtype=dtype).element_size()
    if not isinstance(nbytes, int) or nbytes != numel * element_size or nbytes > MAX_TENSOR_BYTES:
        raise ProtocolError(f"tensor of shape {shape} and {dtype} cannot have {nbytes!r} bytes")
    return dtype, shape, nbytes


def _to_shared_memory(raw: bytes) -> str:
    segment = shared_memory.SharedMemory(create=True, size=len(raw))
    segment.buf[: len(raw)] = raw
    name = segment.name
    segment.close()
    # The receiver owns the segment from here: it unlinks it after copying. Without this the
    # sender's resource tracker would unlink it (or warn) when the sender exits.
    resource_tracker.unregister(segment._name, "shared_memory")  # type: ignore[attr-defined]
    return name


def _copy_from_shared_memory(name: str, destination: "torch.Tensor") -> None:
    import numpy

    nbytes = destination.numel()
    if not name.replace("_", "").replace("-", "").isalnum() or len(name) > 64:
        raise ProtocolError(f"bad shared-memory name {name!r}")
    try:
        segment = shared_memory.SharedMemory(name=name)
    except FileNotFoundError:
        raise ProtocolError(f"shared-memory segment {name!r} does not exist") from None
    try:
        if segment.size < nbytes:
            raise ProtocolError(f"segment {name!r} holds {segment.size} bytes, expected {nbytes}")
        source = numpy.frombuffer(segment.buf, dtype=numpy.uint8, count=nbytes)
        destination.numpy()[:] = source
        del source  # the segment cannot close while a view of it exists
    finally:
        segment.close()
        segment.unlink()
