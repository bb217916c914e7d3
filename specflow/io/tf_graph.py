"""Our GraphDef <-> TensorFlow's GraphDef protobuf.

The messages are TensorFlow's own (``tensorboard.compat.proto`` vendors them), so a converted
graph is a real TF GraphDef: TensorBoard draws it, and SavedModel export writes it. Op, input and
attr names already follow TF, so the conversion is a field-by-field copy:

- inputs keep TF's spelling (``"n"``, ``"n:k"``, ``"^n"``); devices are kept as written;
- attrs map onto ``AttrValue``'s oneof: int -> ``i``, float -> ``f`` (TF stores float32),
  bool -> ``b``, str/bytes -> ``s``, DType -> ``type`` (TF's enum), Shape -> ``shape`` (-1 for an
  unknown dim, ``unknown_rank``), numpy array -> ``tensor``, FuncRef -> ``func``, lists -> ``list``;
- internal attrs (``_``-prefixed, except the colocation attr ``_class``) and our spec Locations
  are not part of a TF graph and are dropped, on export and on import alike.

Importing also takes TF2 graphs: every call into the graph's function library is inlined
(``tf_functions.py``), and attrs newer TensorFlow versions add without changing what an op
computes (``VarHandleOp``'s ``debug_name``) are dropped where our OpDef lacks them. Ops specflow
lacks are kept; ``tf_functions.check_supported`` rejects those a run needs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from tensorboard.compat.proto import (
    attr_value_pb2,
    graph_pb2,
    node_def_pb2,
    tensor_pb2,
    tensor_shape_pb2,
    types_pb2,
)

from specflow.errors import GraphError, SpecflowError
from specflow.graph.dtypes import DType, as_dtype, dtype_names
from specflow.graph.graph_def import FuncRef, GraphDef, NodeDef
from specflow.graph.names import check_graph_proto_names
from specflow.graph.shapes import Shape
from specflow.io.tf_functions import CALL_ATTR, FUNCTION_ATTR, inline_functions
from specflow.io.tf_switch_n import expand_switch_n
from specflow.ops.registry import get_op, has_op

# AttrValue.ListValue's repeated fields, one per element kind.
_LIST_KINDS = ("s", "i", "f", "b", "type", "shape", "tensor", "func")
_MESSAGE_KINDS = frozenset({"shape", "tensor", "func"})

# TensorProto's typed value field per dtype, used when a tensor has no tensor_content (TF writes
# small tensors this way). TF keeps 8/16-bit integers in int_val and float16 bits in half_val.
_VALUE_FIELD = {
    "float32": "float_val", "float64": "double_val", "float16": "half_val", "bfloat16": "half_val",
    "int8": "int_val", "int16": "int_val", "int32": "int_val", "uint8": "int_val", "uint16": "int_val",
    "int64": "int64_val", "uint32": "uint32_val", "uint64": "uint64_val",
    "bool": "bool_val", "complex64": "scomplex_val", "complex128": "dcomplex_val",
    "string": "string_val",
}  # fmt: skip


# Attrs newer TensorFlow versions set that change nothing specflow computes, dropped on import
# when our OpDef lacks them: attr -> the value it may have (None: any value).
INFORMATIONAL_ATTRS: dict[str, dict[str, Any]] = {
    "VarHandleOp": {"debug_name": None, "allowed_devices": []},
    # Our kernel always checks that the value fits (validate_shape=true's meaning); with false a
    # value of another shape is refused at run time, with the node named, never silently taken.
    "AssignVariableOp": {"validate_shape": None},
    # Hints TF's gradient code sets on the products it emits (for oneDNN); the math is the same.
    "MatMul": {"grad_a": None, "grad_b": None},
    "BatchMatMul": {"grad_x": None, "grad_y": None},
    "BatchMatMulV2": {"grad_x": None, "grad_y": None},
}


def is_tf_attr(key: str) -> bool:
    """Whether an attr belongs in a TF GraphDef (internal ``_`` attrs do not, ``_class`` does)."""
    return not key.startswith("_") or key == "_class"


def _message(e: Exception) -> str:
    return e.message if isinstance(e, SpecflowError) else str(e)


# --- GraphDef ------------------------------------------------------------------------------


def to_tf_graph_def(graph_def: GraphDef) -> graph_pb2.GraphDef:
    """Our GraphDef as TensorFlow's ``GraphDef`` message (GraphError naming the node on a bad attr)."""
    if graph_def.library:
        names = ", ".join(sorted(graph_def.library))
        raise GraphError(f"graph library functions ({names}) have no TensorFlow form; "
                         "specflow inlines functions when lowering a spec")
    proto = graph_pb2.GraphDef()
    for node in graph_def.nodes:
        proto.node.append(node_to_proto(node))
    versions = graph_def.versions
    proto.versions.producer = int(versions.get("producer", 0))
    proto.versions.min_consumer = int(versions.get("min_consumer", 0))
    proto.versions.bad_consumers.extend(int(v) for v in versions.get("bad_consumers", []))
    return proto


def from_tf_graph_def(proto: graph_pb2.GraphDef | bytes) -> GraphDef:
    """A TensorFlow ``GraphDef`` (message or serialized bytes) as our GraphDef."""
    if isinstance(proto, (bytes, bytearray, memoryview)):
        parsed = graph_pb2.GraphDef()
        try:
            parsed.ParseFromString(bytes(proto))
        except Exception as e:  # protobuf's DecodeError; its base class varies by backend
            raise GraphError(f"not a TensorFlow GraphDef: {e}") from None
        proto = parsed
    check_graph_proto_names(proto)  # before any name is used (the library: inline_functions)
    proto = expand_switch_n(proto)  # a frozen graph's lowered Case
    versions = {"producer": proto.versions.producer, "min_consumer": proto.versions.min_consumer}
    if proto.versions.bad_consumers:
        versions["bad_consumers"] = list(proto.versions.bad_consumers)
    if not proto.library.function:
        return GraphDef([_drop_informational(node_from_proto(n)) for n in proto.node], versions)
    nodes = []
    for item in inline_functions(proto):  # library.gradient only matters for training: ignored
        node = _imported_node(item.proto, item.function)
        if item.function:
            node.attrs[FUNCTION_ATTR], node.attrs[CALL_ATTR] = item.function, item.call
        nodes.append(node)
    return GraphDef(nodes, versions)


def _imported_node(proto: node_def_pb2.NodeDef, function: str | None) -> NodeDef:
    """A node of an imported TF2 graph: TF's informational attrs dropped; an op specflow lacks
    keeps only the attrs we can read (check_supported reports it if a run needs it)."""
    if not has_op(proto.op):
        attrs = {}
        for key in proto.attr:
            if is_tf_attr(key):
                try:
                    attrs[key] = attr_from_proto(proto.attr[key])
                except GraphError:
                    continue
        return NodeDef(proto.name, proto.op, list(proto.input), proto.device, attrs)
    try:
        return _drop_informational(node_from_proto(proto))
    except GraphError as e:
        raise GraphError(e.message + _in_function(function), node=e.node) from None


def _drop_informational(node: NodeDef) -> NodeDef:
    """``node`` without the INFORMATIONAL_ATTRS our OpDef lacks."""
    dropped = INFORMATIONAL_ATTRS.get(node.op, {})
    if dropped and has_op(node.op):
        ours = get_op(node.op).attrs
        for key, allowed in dropped.items():
            if key in node.attrs and key not in ours and (allowed is None or node.attrs[key] == allowed):
                del node.attrs[key]
    return node


def _in_function(function: str | None) -> str:
    return f" (in function '{function}')" if function else ""


def node_to_proto(node: NodeDef) -> node_def_pb2.NodeDef:
    proto = node_def_pb2.NodeDef(name=node.name, op=node.op, input=node.inputs, device=node.device)
    for key, value in node.attrs.items():
        if not is_tf_attr(key):
            continue
        try:
            proto.attr[key].CopyFrom(attr_to_proto(value))
        except (GraphError, TypeError, ValueError, OverflowError) as e:
            raise GraphError(f"attr '{key}': {_message(e)}", node=node.name, location=node.location) from None
    return proto


GRADIENT_OP_TYPE = "_gradient_op_type"  # a custom gradient's key (export/saved_gradients.py); read, never written


def node_from_proto(proto: node_def_pb2.NodeDef) -> NodeDef:
    attrs: dict[str, Any] = {}
    for key in sorted(proto.attr):
        if not is_tf_attr(key) and key != GRADIENT_OP_TYPE:
            continue
        try:
            attrs[key] = attr_from_proto(proto.attr[key])
        except GraphError as e:
            raise GraphError(f"attr '{key}': {e.message}", node=proto.name) from None
    return NodeDef(proto.name, proto.op, list(proto.input), proto.device, attrs)


# --- attrs ---------------------------------------------------------------------------------


def attr_to_proto(value: Any) -> attr_value_pb2.AttrValue:
    """One attr value (or a homogeneous list of them) as an ``AttrValue``."""
    proto = attr_value_pb2.AttrValue()
    if isinstance(value, (list, tuple)):
        items = [_attr_item(v) for v in value]
        kinds = {kind for kind, _ in items}
        if kinds == {"i", "f"}:  # [1, 2.5] is a float list
            items, kinds = [("f", float(v)) for _, v in items], {"f"}
        if len(kinds) > 1:
            raise TypeError(f"a TensorFlow list attr holds one kind of value, got {sorted(kinds)}")
        proto.list.SetInParent()  # an empty list is still a list
        for kind, v in items:
            field = getattr(proto.list, kind)
            if kind in _MESSAGE_KINDS:
                field.add().CopyFrom(v)
            else:
                field.append(v)
        return proto
    kind, v = _attr_item(value)
    if kind in _MESSAGE_KINDS:
        getattr(proto, kind).CopyFrom(v)
    else:
        setattr(proto, kind, v)
    return proto


def _attr_item(v: Any) -> tuple[str, Any]:
    """(AttrValue field, proto-ready value) for one non-list attr value."""
    if isinstance(v, (bool, np.bool_)):
        return "b", bool(v)
    if isinstance(v, (int, np.integer)):
        return "i", int(v)
    if isinstance(v, (float, np.floating)):
        return "f", float(v)
    if isinstance(v, str):
        return "s", v.encode()
    if isinstance(v, bytes):
        return "s", v
    if isinstance(v, DType):
        return "type", v.tf_enum
    if isinstance(v, Shape):
        return "shape", shape_to_proto(v)
    if isinstance(v, np.ndarray):
        return "tensor", tensor_to_proto(v)
    if isinstance(v, FuncRef):
        return "func", attr_value_pb2.NameAttrList(name=v.name)
    raise TypeError(f"cannot convert {type(v).__name__} value {v!r} to a TensorFlow attr")


def attr_from_proto(proto: attr_value_pb2.AttrValue) -> Any:
    kind = proto.WhichOneof("value")
    if kind == "list":
        present = [k for k in _LIST_KINDS if len(getattr(proto.list, k))]
        if len(present) > 1:
            raise GraphError(f"a list attr mixing {', '.join(present)} values is not supported")
        return [_item_from_proto(present[0], x) for x in getattr(proto.list, present[0])] if present else []
    if kind in _LIST_KINDS:
        return _item_from_proto(kind, getattr(proto, kind))
    if kind is None:
        raise GraphError("the attr holds no value of a kind this converter knows")
    raise GraphError(f"attr kind '{kind}' is not supported (supported: {', '.join(_LIST_KINDS)}, list)")


def _item_from_proto(kind: str, x: Any) -> Any:
    if kind == "s":
        try:
            return x.decode()
        except UnicodeDecodeError:
            return x  # binary payloads stay bytes
    if kind == "i":
        return int(x)
    if kind == "f":
        # TF stores float32: print it shortest so 0.1 comes back as 0.1, not 0.10000000149.
        return float(str(np.float32(x)))
    if kind == "b":
        return bool(x)
    if kind == "type":
        return dtype_from_enum(x)
    if kind == "shape":
        return shape_from_proto(x)
    if kind == "tensor":
        return tensor_from_proto(x)
    if x.attr:  # kind == "func"
        raise GraphError(f"function reference '{x.name}' binds attrs ({', '.join(sorted(x.attr))}), "
                         "which specflow's FuncRef cannot hold")
    return FuncRef(x.name)


def dtype_from_enum(enum: int) -> DType:
    """TF's DataType enum as our DType; GraphError for the TF types specflow lacks (bfloat16, ...)."""
    try:
        return as_dtype(int(enum))
    except TypeError:
        name = types_pb2.DataType.Name(enum) if enum in types_pb2.DataType.values() else str(enum)
        raise GraphError(f"TensorFlow dtype {name} has no specflow equivalent; "
                         f"supported: {', '.join(dtype_names())}") from None


# --- shapes and tensors --------------------------------------------------------------------


def shape_to_proto(shape: Shape) -> tensor_shape_pb2.TensorShapeProto:
    if shape.dims is None:
        return tensor_shape_pb2.TensorShapeProto(unknown_rank=True)
    dims = [tensor_shape_pb2.TensorShapeProto.Dim(size=-1 if d is None else d) for d in shape.dims]
    return tensor_shape_pb2.TensorShapeProto(dim=dims)


def shape_from_proto(proto: tensor_shape_pb2.TensorShapeProto) -> Shape:
    return Shape(None) if proto.unknown_rank else Shape(d.size for d in proto.dim)  # -1 -> None


def tensor_to_proto(value: Any) -> tensor_pb2.TensorProto:
    """An array as a ``TensorProto``: little-endian ``tensor_content`` for numbers and bools,
    ``string_val`` for strings (str is UTF-8 encoded)."""
    arr = np.asarray(value)
    try:
        dt = as_dtype(arr.dtype)
    except TypeError as e:
        raise GraphError(f"cannot store a tensor of numpy dtype {arr.dtype}: {e}") from None
    proto = tensor_pb2.TensorProto(dtype=dt.tf_enum, tensor_shape=shape_to_proto(Shape(arr.shape)))
    if dt.name == "string":
        proto.string_val.extend(_as_bytes(x) for x in arr.ravel().tolist())
    else:
        proto.tensor_content = np.ascontiguousarray(arr, dtype=dt.numpy.newbyteorder("<")).tobytes()
    return proto


def _as_bytes(x: Any) -> bytes:
    if isinstance(x, bytes):
        return x
    if isinstance(x, str):
        return x.encode()
    raise GraphError(f"a string tensor holds {type(x).__name__} value {x!r}")


def tensor_from_proto(proto: tensor_pb2.TensorProto) -> np.ndarray:
    """A ``TensorProto`` as a numpy array (strings as an object array of bytes).

    Reads ``tensor_content`` or the typed ``*_val`` field; like TF, a typed field shorter than the
    shape repeats its last value, and an empty one means zeros.
    """
    dt = dtype_from_enum(proto.dtype)
    if dt.np_type is None or dt.name not in _VALUE_FIELD:  # resource, variant
        raise GraphError(f"a {dt.name} tensor cannot be stored in a graph")
    shape = shape_from_proto(proto.tensor_shape)
    if not shape.is_fully_defined:
        raise GraphError(f"tensor shape {shape} is not fully defined")
    n = shape.num_elements()
    if proto.tensor_content and dt.name != "string":
        wire = dt.numpy.newbyteorder("<")
        if len(proto.tensor_content) != n * wire.itemsize:
            raise GraphError(f"tensor_content holds {len(proto.tensor_content)} bytes; a {dt.name} "
                             f"tensor of shape {shape} needs {n * wire.itemsize}")
        # astype copies into a writable, native-order array.
        return np.frombuffer(proto.tensor_content, wire).astype(dt.numpy).reshape(shape.dims)
    values = list(getattr(proto, _VALUE_FIELD[dt.name]))
    try:
        flat = _typed_values(dt, values)
    except (ValueError, OverflowError) as e:
        raise GraphError(f"bad {dt.name} tensor values: {e}") from None
    if len(flat) > n:
        raise GraphError(f"tensor holds {len(flat)} values; its shape {shape} has {n} elements")
    if len(flat) == 0:
        flat = np.full(n, b"", dtype=object) if dt.name == "string" else np.zeros(n, dt.numpy)
    elif len(flat) < n:
        flat = np.concatenate([flat, np.repeat(flat[-1:], n - len(flat))])
    return flat.reshape(shape.dims)


def _typed_values(dt: DType, values: list) -> np.ndarray:
    if dt.name in ("float16", "bfloat16"):  # half_val holds the raw 16-bit patterns
        return np.array(values, dtype=np.uint16).view(dt.numpy)
    if dt.is_complex:  # (real, imag) pairs
        if len(values) % 2:
            raise ValueError("complex values come in (real, imag) pairs")
        parts = np.array(values, dtype=np.float32 if dt.name == "complex64" else np.float64)
        return (parts[0::2] + 1j * parts[1::2]).astype(dt.numpy)
    if dt.name == "string":
        out = np.empty(len(values), dtype=object)
        out[:] = values  # element-wise, so equal-length bytes do not become a 2-D array
        return out
    return np.array(values, dtype=dt.numpy)
