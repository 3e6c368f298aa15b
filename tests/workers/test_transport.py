import json
import multiprocessing

import pytest
import torch

from kernelproof.protocol import transport


@pytest.fixture
def pipe():
    a, b = multiprocessing.Pipe()
    yield a, b
    a.close()
    b.close()


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool, torch.float16, torch.float64]
)
def test_round_trip_keeps_values_dtype_and_shape(pipe, dtype):
    a, b = pipe
    small = (torch.randn(3, 5) * 10).to(dtype)
    large = torch.arange(transport.MEMORY_FILE_THRESHOLD_BYTES).to(dtype).reshape(-1, 8)
    strided = torch.randn(6, 4).t()
    empty = torch.empty(0, 3)
    transport.send(a, {"op": "x"}, [small, large, strided, empty])
    message = transport.receive(b)
    assert message.header == {"op": "x"}
    for sent, got in zip([small, large, strided, empty], message.tensors):
        assert got.dtype == sent.dtype and got.shape == sent.shape
        assert torch.equal(got, sent)


def test_received_tensors_do_not_alias_the_senders(pipe):
    a, b = pipe
    big = torch.zeros(transport.MEMORY_FILE_THRESHOLD_BYTES // 4 + 1)
    transport.send(a, {}, [big])
    got = transport.receive(b).tensors[0]
    big.fill_(1)
    assert float(got.sum()) == 0.0


def test_malformed_messages_raise_protocol_error_not_unpickle(pipe):
    a, b = pipe
    a.send_bytes(b"\x80\x04\x95not json")  # a pickle header must never be unpickled
    with pytest.raises(transport.ProtocolError, match="not JSON"):
        transport.receive(b)
    a.send_bytes(
        json.dumps({"_tensors": [{"dtype": "float32", "shape": [4], "nbytes": 3}]}).encode()
    )
    with pytest.raises(transport.ProtocolError, match="cannot have 3 bytes"):
        transport.receive(b)
    a.send_bytes(
        json.dumps({"_tensors": [{"dtype": "os.system", "shape": [1], "nbytes": 1}]}).encode()
    )
    with pytest.raises(transport.ProtocolError, match="unknown dtype"):
        transport.receive(b)
