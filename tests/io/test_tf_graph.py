"""Our GraphDef <-> TensorFlow's GraphDef protobuf.

Tensors are checked against TensorBoard's copy of TF's own ``make_ndarray`` /
``make_tensor_proto`` (tensorboard.util.tensor_util), graphs by round trips over every model.
"""

from pathlib import Path

import numpy as np
import pytest
from tensorboard.compat.proto import attr_value_pb2, graph_pb2, tensor_pb2, types_pb2
from tensorboard.util import tensor_util

import specflow
from specflow.errors import GraphError, Location
from specflow.graph import dtypes
from specflow.graph.graph_def import FuncRef, GraphDef, NodeDef
from specflow.graph.shapes import Shape
from specflow.io.tf_graph import (
    from_tf_graph_def,
    is_tf_attr,
    tensor_from_proto,
    tensor_to_proto,
    to_tf_graph_def,
)

MODELS = sorted((Path(__file__).parents[2] / "models").glob("*.yaml"))


def assert_attr_equal(a, b, where=""):
    if isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape, where
        assert np.array_equal(a, b), where
    elif isinstance(a, (list, tuple)):
        assert isinstance(b, list) and len(a) == len(b), where
        for x, y in zip(a, b):
            assert_attr_equal(x, y, where)
    elif isinstance(a, float):
        assert isinstance(b, float) and np.float32(a) == np.float32(b), where  # TF attrs are float32
    else:
        assert type(a) is type(b) and a == b, where


def assert_same_graph(g: GraphDef, back: GraphDef):
    assert [n.name for n in back] == [n.name for n in g]
    for n, m in zip(g, back):
        assert (m.op, m.inputs, m.device) == (n.op, n.inputs, n.device), n.name
        expected = {k: v for k, v in n.attrs.items() if is_tf_attr(k)}
        assert sorted(m.attrs) == sorted(expected), n.name
        for k, v in expected.items():
            assert_attr_equal(v, m.attrs[k], f"{n.name}.{k}")
    assert back.versions == g.versions


@pytest.mark.parametrize("path", MODELS, ids=[p.stem for p in MODELS])
def test_every_model_round_trips_node_by_node(path):
    g = specflow.load_spec(path).graph_def
    proto = to_tf_graph_def(g)
    wire = proto.SerializeToString()
    assert len(graph_pb2.GraphDef.FromString(wire).node) == len(g)
    assert_same_graph(g, from_tf_graph_def(wire))


def test_model_has_tf_shaped_fields():
    g = specflow.load_spec(MODELS[0]).graph_def
    proto = {n.name: n for n in to_tf_graph_def(g).node}
    for n in g:
        p = proto[n.name]
        assert list(p.input) == n.inputs and p.device == n.device
        for key, value in n.attrs.items():
            if isinstance(value, dtypes.DType):
                assert p.attr[key].type == value.tf_enum
                assert types_pb2.DataType.Name(p.attr[key].type) != ""


ALL_KINDS = {
    "i": 7, "neg": -3, "f": 0.1, "b": True, "s": "SAME", "raw": b"\xff\x00",
    "T": dtypes.float32, "Tres": dtypes.resource,
    "shape": Shape([None, 3]), "scalar_shape": Shape(()), "any_shape": Shape(None),
    "value": np.arange(6, dtype=np.float32).reshape(2, 3),
    "zero_d": np.array(2.5, dtype=np.float64), "empty": np.zeros((0, 4), dtype=np.int64),
    "strs": np.array([b"a", b"bc", b""], dtype=object), "c": np.array([1 + 2j, -3j], dtype=np.complex128),
    "h": np.array([1.5, -0.25], dtype=np.float16), "u": np.array([2**64 - 1], dtype=np.uint64),
    "flags": np.array([[True], [False]]), "fn": FuncRef("body"),
    "ints": [1, 2, 3], "floats": [0.5, 2.0], "bools": [True, False], "strings": ["a", "b"],
    "types": [dtypes.int32, dtypes.string], "shapes": [Shape([1]), Shape(None)],
    "tensors": [np.array([1], np.int32), np.array(b"x", dtype=object)], "fns": [FuncRef("f"), FuncRef("g")],
    "none": [], "_class": ["loc:@x"],
}  # fmt: skip


def kinds_graph() -> GraphDef:
    nodes = [
        NodeDef("x", "Placeholder", attrs={"dtype": dtypes.float32, "shape": Shape([None, 2])}),
        NodeDef("k", "Kinds", ["x", "x:1", "^x"], "/job:w/task:1/device:CPU:0", dict(ALL_KINDS),
                location=Location("m.yaml", 3, 5)),
    ]
    return GraphDef(nodes, {"producer": 27, "min_consumer": 12})


def test_every_attr_kind_round_trips():
    g = kinds_graph()
    back = from_tf_graph_def(to_tf_graph_def(g).SerializeToString())
    assert_same_graph(g, back)
    k = back.node("k")
    assert k.inputs == ["x", "x:1", "^x"] and k.device == "/job:w/task:1/device:CPU:0"
    assert k.attrs["f"] == 0.1  # float32 storage prints back as the decimal written
    assert k.attrs["raw"] == b"\xff\x00" and k.attrs["s"] == "SAME"
    assert k.attrs["any_shape"].rank is None and k.attrs["shape"].as_list() == [None, 3]
    assert k.location is None


def test_attr_values_use_tf_encodings():
    attr = to_tf_graph_def(kinds_graph()).node[1].attr
    assert attr["T"].type == types_pb2.DT_FLOAT and attr["Tres"].type == types_pb2.DT_RESOURCE
    assert [d.size for d in attr["shape"].shape.dim] == [-1, 3]
    assert attr["any_shape"].shape.unknown_rank and not attr["scalar_shape"].shape.dim
    assert attr["fn"].func.name == "body" and [f.name for f in attr["fns"].list.func] == ["f", "g"]
    assert attr["none"].WhichOneof("value") == "list" and attr["s"].s == b"SAME"
    assert list(attr["types"].list.type) == [types_pb2.DT_INT32, types_pb2.DT_STRING]
    assert attr["value"].tensor.tensor_content and list(attr["strs"].tensor.string_val) == [b"a", b"bc", b""]
    assert list(attr["_class"].list.s) == [b"loc:@x"]


def test_internal_attrs_are_dropped_both_ways():
    node = NodeDef("a", "_Arg", attrs={"T": dtypes.float32, "index": 0, "_output_shapes": [Shape([2])]})
    proto = to_tf_graph_def(GraphDef([node]))
    assert sorted(proto.node[0].attr) == ["T", "index"]
    proto.node[0].attr["_user_specified_name"].s = b"a"
    assert sorted(from_tf_graph_def(proto).node("a").attrs) == ["T", "index"]


def test_tf_hints_on_gradient_products_are_dropped_whatever_their_value():
    """TF's gradient code marks the products it emits (grad_a/grad_b, grad_x/grad_y = true); the
    math is the same, so a training graph with them loads."""
    a = NodeDef("a", "Placeholder", attrs={"dtype": dtypes.float32, "shape": Shape([2, 2])})
    mm = NodeDef("mm", "MatMul", ["a", "a"], attrs={"T": dtypes.float32, "transpose_a": False, "transpose_b": False})
    proto = to_tf_graph_def(GraphDef([a, mm]))
    proto.node[1].attr["grad_a"].b = True
    proto.node[1].attr["grad_b"].b = False
    got = from_tf_graph_def(proto)
    assert sorted(got.node("mm").attrs) == ["T", "transpose_a", "transpose_b"]
    x = np.array([[1, 2], [3, 4]], np.float32)
    with specflow.Session(got) as s:
        np.testing.assert_array_equal(s.run("mm:0", {"a:0": x}), x @ x)


TENSORS = [
    np.float32(3.5), np.array(7, dtype=np.int64), np.arange(12, dtype=np.int8).reshape(3, 4),
    np.array([0, 65535], dtype=np.uint16), np.array([1, 2], dtype=np.uint32), np.array([-1.5], dtype=np.float16),
    np.array([1 + 1j], dtype=np.complex64), np.array([True, False, True]), np.zeros((0, 3), dtype=np.float32),
    np.linspace(-1, 1, 5), np.array([b"ab", b"c"], dtype=object), np.array([[b"x"]], dtype=object),
]  # fmt: skip


@pytest.mark.parametrize("arr", TENSORS, ids=lambda a: f"{np.asarray(a).dtype}{np.shape(a)}")
def test_tensor_protos_agree_with_tf(arr):
    arr = np.asarray(arr)
    ours = tensor_util.make_ndarray(tensor_to_proto(arr))  # TF's reader on our proto
    theirs = tensor_from_proto(tensor_util.make_tensor_proto(arr))  # our reader on TF's proto
    for out in (ours, theirs):
        assert out.shape == arr.shape and np.array_equal(out.astype(arr.dtype), arr)
    assert theirs.dtype == (object if arr.dtype.kind in "OS" else arr.dtype)


def test_short_typed_fields_repeat_the_last_value_as_tf_does():
    p = tensor_pb2.TensorProto(dtype=types_pb2.DT_FLOAT, float_val=[1, 2])
    p.tensor_shape.dim.add(size=4)
    assert tensor_from_proto(p).tolist() == [1, 2, 2, 2]
    del p.float_val[:]
    assert tensor_from_proto(p).tolist() == [0, 0, 0, 0]
    p.float_val.extend([1, 2, 3, 4, 5])
    with pytest.raises(GraphError, match="5 values"):
        tensor_from_proto(p)
    s = tensor_pb2.TensorProto(dtype=types_pb2.DT_STRING)
    s.tensor_shape.dim.add(size=2)
    assert tensor_from_proto(s).tolist() == [b"", b""]


def tf_graph_with_attr(key: str, value: attr_value_pb2.AttrValue) -> graph_pb2.GraphDef:
    proto = graph_pb2.GraphDef()
    node = proto.node.add(name="n1", op="Foo")
    node.attr[key].CopyFrom(value)
    return proto


@pytest.mark.parametrize(
    "value, message",
    [
        (attr_value_pb2.AttrValue(placeholder="T"), "attr kind 'placeholder' is not supported"),
        (attr_value_pb2.AttrValue(type=types_pb2.DT_QINT8), "DT_QINT8 has no specflow equivalent"),
        (attr_value_pb2.AttrValue(list=attr_value_pb2.AttrValue.ListValue(i=[1], s=[b"a"])), "mixing"),
        (attr_value_pb2.AttrValue(), "holds no value"),
    ],
)
def test_unknown_tf_attr_kinds_name_node_and_attr(value, message):
    with pytest.raises(GraphError, match=message) as info:
        from_tf_graph_def(tf_graph_with_attr("weird", value))
    assert info.value.node == "n1" and "attr 'weird'" in str(info.value)


def test_func_with_bound_attrs_is_rejected():
    value = attr_value_pb2.AttrValue()
    value.func.name = "f"
    value.func.attr["T"].type = types_pb2.DT_FLOAT
    with pytest.raises(GraphError, match="binds attrs"):
        from_tf_graph_def(tf_graph_with_attr("f", value))


def test_calls_of_missing_functions_and_garbage_are_clear_errors():
    proto = graph_pb2.GraphDef()  # functions are inlined (tests/io/test_tf_graph_functions.py)
    proto.library.function.add().signature.name = "other_fn"
    call = proto.node.add(name="c", op="PartitionedCall")
    call.attr["f"].func.name = "my_fn"
    with pytest.raises(GraphError, match="calls function 'my_fn', which the graph's library does not define"):
        from_tf_graph_def(proto)
    with pytest.raises(GraphError, match="not a TensorFlow GraphDef"):
        from_tf_graph_def(b"\xff\xff\xff")
    with pytest.raises(GraphError, match="library"):
        to_tf_graph_def(GraphDef([], library={"f": {}}))


def test_unconvertible_attr_names_node_attr_and_location():
    node = NodeDef("bad", "Foo", attrs={"cfg": {"a": 1}}, location=Location("m.yaml", 4, 3))
    with pytest.raises(GraphError, match="attr 'cfg'") as info:
        to_tf_graph_def(GraphDef([node]))
    assert info.value.node == "bad" and str(info.value).startswith("m.yaml:4:3")
    with pytest.raises(GraphError, match="one kind"):
        to_tf_graph_def(GraphDef([NodeDef("mixed", "Foo", attrs={"l": [1, "a"]})]))
