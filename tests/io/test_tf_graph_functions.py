"""Inlining TensorFlow function libraries (specflow/io/tf_functions.py) on hand-built FunctionDefs:
nested and direct calls, list outputs (``split:output:1``), control returns and control inputs,
polymorphic attrs, and unsupported ops that matter only where a run needs them. Each inlined
graph runs in a Session and is checked against numpy."""

from __future__ import annotations

import numpy as np
import pytest
from tensorboard.compat.proto import attr_value_pb2, function_pb2, graph_pb2, node_def_pb2, types_pb2

from specflow.errors import GraphError, OpError
from specflow.graph import dtypes
from specflow.graph.shapes import Shape
from specflow.io.tf_functions import CALL_ATTR, FUNCTION_ATTR, check_supported
from specflow.io.tf_graph import attr_to_proto, from_tf_graph_def
from specflow.runtime.session import Session

F32, F64, RES = types_pb2.DT_FLOAT, types_pb2.DT_DOUBLE, types_pb2.DT_RESOURCE


def node(name: str, op: str, inputs=(), **attrs) -> node_def_pb2.NodeDef:
    proto = node_def_pb2.NodeDef(name=name, op=op, input=list(inputs))
    for key, value in attrs.items():
        proto.attr[key].CopyFrom(value if isinstance(value, attr_value_pb2.AttrValue) else attr_to_proto(value))
    return proto


def call(name: str, fn: str, inputs, tin, tout, op="StatefulPartitionedCall") -> node_def_pb2.NodeDef:
    proto = node(name, op, inputs)
    proto.attr["f"].func.name = fn
    proto.attr["Tin"].list.type.extend(tin)
    proto.attr["Tout"].list.type.extend(tout)
    proto.attr["config_proto"].s = b""
    proto.attr["_read_only_resource_inputs"].list.i.extend([])
    return proto


def function(name, inputs, outputs, nodes, ret, control_ret=None, attrs=()) -> function_pb2.FunctionDef:
    f = function_pb2.FunctionDef()
    f.signature.name = name
    for arg, t in inputs:
        a = f.signature.input_arg.add(name=arg)
        a.type_attr = t if isinstance(t, str) else ""
        a.type = 0 if isinstance(t, str) else t
    for arg, t in outputs:
        a = f.signature.output_arg.add(name=arg)
        a.type_attr = t if isinstance(t, str) else ""
        a.type = 0 if isinstance(t, str) else t
    for attr in attrs:
        f.signature.attr.add(name=attr, type="type")
    f.node_def.extend(nodes)
    f.ret.update(ret)
    for key, value in (control_ret or {}).items():
        f.signature.control_output.append(key)
        f.control_ret[key] = value
    return f


def scalar(name: str, value, dtype=np.float32) -> node_def_pb2.NodeDef:
    arr = np.asarray(value, dtype)
    return node(name, "Const", value=arr, dtype=dtypes.as_dtype(arr.dtype))


def placeholder(name: str, dtype=dtypes.float32) -> node_def_pb2.NodeDef:
    return node(name, "Placeholder", dtype=dtype)


# halves(x, k) -> (lo, hi): split x * k in two along axis 0 (an output list read as split:output:1)
HALVES = function(
    "halves", [("x", F32), ("k", F32)], [("lo", F32), ("hi", F32)],
    [scalar("axis", 0, np.int32),
     node("scaled", "Mul", ["x", "k"], T=dtypes.float32),
     node("split", "Split", ["axis:output:0", "scaled:z:0"], num_split=2, T=dtypes.float32)],
    {"lo": "split:output:0", "hi": "split:output:1"},
)

# outer(x, k) -> y = (lo + hi) - (hi - lo) from a nested PartitionedCall and a direct call.
OUTER = function(
    "outer", [("x", F32), ("k", F32)], [("y", F32)],
    [call("c", "halves", ["x", "k"], [F32, F32], [F32, F32], op="PartitionedCall"),
     node("d", "halves", ["x", "k"]),
     node("sum", "AddV2", ["c:output:0", "c:output:1"], T=dtypes.float32),
     node("diff", "Sub", ["d:hi:0", "d:lo:0"], T=dtypes.float32),
     node("y", "Sub", ["sum:z:0", "diff:z:0"], T=dtypes.float32)],
    {"y": "y:z:0"},
)


def outer_graph() -> graph_pb2.GraphDef:
    g = graph_pb2.GraphDef()
    g.node.extend([placeholder("x"), scalar("k", 3.0), call("run", "outer", ["x", "k"], [F32, F32], [F32])])
    g.library.function.extend([HALVES, OUTER])
    return g


def test_nested_and_direct_calls_with_list_outputs():
    graph = from_tf_graph_def(outer_graph())
    names = {n.name: n for n in graph}
    # Body nodes live under the call's name, nested calls under theirs; the call is an IdentityN.
    assert names["run"].op == "IdentityN" and names["run"].inputs == ["run/y:0"]
    assert names["run/c/split"].inputs == ["run/c/axis:0", "run/c/scaled:0"]
    assert names["run/c/scaled"].inputs == ["x", "k"]  # arguments are the caller's tensors
    assert names["run/sum"].inputs == ["run/c:0", "run/c:1"]
    assert names["run/diff"].inputs == ["run/d:1", "run/d:0"]  # d:hi:0 is d's second output
    assert names["run/c/split"].attrs[FUNCTION_ATTR] == "halves" and names["run/c/split"].attrs[CALL_ATTR] == "run/c"
    assert not any(n.op in ("PartitionedCall", "StatefulPartitionedCall", "halves", "outer") for n in graph)

    x = np.arange(8, dtype=np.float32)
    lo, hi = np.split(x * 3, 2)
    got = Session(graph).run("run:0", {"x:0": x})
    np.testing.assert_allclose(got, (lo + hi) - (hi - lo))


def test_control_returns_and_the_call_control_inputs_order_side_effects():
    set_var = function(
        "set_var", [("h", RES), ("v", F32)], [],
        [node("assign", "AssignVariableOp", ["h", "v"], dtype=dtypes.float32)],
        {}, control_ret={"assign": "assign"},
    )
    bump = function(  # reads the variable; must wait for the caller's control input
        "bump", [("h", RES)], [("out", F32)],
        [node("read", "ReadVariableOp", ["h"], dtype=dtypes.float32),
         scalar("one", 1.0),
         node("plus", "AddV2", ["read:value:0", "one:output:0"], T=dtypes.float32)],
        {"out": "plus:z:0"},
    )
    g = graph_pb2.GraphDef()
    g.node.extend([
        node("var", "VarHandleOp", dtype=dtypes.float32, shape=Shape(()), shared_name="var",
             debug_name="var", allowed_devices=[]),
        placeholder("v"),
        call("set", "set_var", ["var", "v"], [RES, F32], []),
        call("bumped", "bump", ["var", "^set"], [RES], [F32]),
    ])
    g.library.function.extend([set_var, bump])
    graph = from_tf_graph_def(g)
    names = {n.name: n for n in graph}
    assert names["set"].op == "NoOp" and names["set"].inputs == ["^set/assign"]
    assert names["bumped/input_control_node"].inputs == ["^set"]
    assert "^bumped/input_control_node" in names["bumped/read"].inputs
    assert "^bumped/input_control_node" in names["bumped/one"].inputs
    assert "debug_name" not in names["var"].attrs  # TF's informational VarHandleOp attrs are dropped
    # Fetching the call's result runs the assignment first, through the control input.
    assert Session(graph).run("bumped:0", {"v:0": np.float32(41)}) == 42


def test_polymorphic_function_attrs_take_the_call_values():
    double = function(
        "double", [("x", "T")], [("y", "T")],
        [node("y", "AddV2", ["x", "x"], T=attr_value_pb2.AttrValue(placeholder="T"))],
        {"y": "y:z:0"}, attrs=["T"],
    )
    g = graph_pb2.GraphDef()
    g.node.extend([placeholder("x", dtypes.float64), node("twice", "double", ["x"], T=dtypes.float64)])
    g.library.function.append(double)
    graph = from_tf_graph_def(g)
    assert graph.node("twice/y").attrs["T"] == dtypes.float64
    assert graph.node("twice").attrs["T"] == [dtypes.float64]
    np.testing.assert_array_equal(Session(graph).run("twice:0", {"x:0": np.array([1.5, -2.0])}), [3.0, -4.0])


def test_a_function_returning_its_argument_and_a_constant():
    passthrough = function("pass", [("x", F32)], [("same", F32), ("c", F32)], [scalar("c", 7.0)],
                           {"same": "x", "c": "c:output:0"})
    g = graph_pb2.GraphDef()
    g.node.extend([placeholder("x"), call("p", "pass", ["x"], [F32], [F32, F32], op="PartitionedCall")])
    g.library.function.append(passthrough)
    graph = from_tf_graph_def(g)
    assert graph.node("p").inputs == ["x", "p/c:0"]
    same, c = Session(graph).run(["p:0", "p:1"], {"x:0": np.float32(2.5)})
    assert (same, c) == (2.5, 7.0)


def test_function_names_of_python_lambdas_load():
    # tf.function(lambda x: ...) is saved as __inference_<lambda>_41 (TensorFlow allows the '<')
    fn = "__inference_<lambda>_41"
    double = function(fn, [("x", F32)], [("y", F32)], [node("y", "AddV2", ["x", "x"], T=dtypes.float32)],
                      {"y": "y:z:0"})
    g = graph_pb2.GraphDef()
    g.node.extend([placeholder("x"), call("p", fn, ["x"], [F32], [F32]), node("direct", fn, ["x"])])
    g.library.function.append(double)
    got = Session(from_tf_graph_def(g)).run(["p:0", "direct:0"], {"x:0": np.float32(2.5)})
    assert got == [5.0, 5.0]


def test_unsupported_ops_matter_only_where_a_run_needs_them():
    with_unknown = function(
        "with_unknown", [("x", F32)], [("y", F32), ("e", F32)],
        [node("y", "Neg", ["x"], T=dtypes.float32), node("e", "ImaginaryOpXyz", ["x"], T=dtypes.float32)],
        {"y": "y:y:0", "e": "e:y:0"},
    )
    g = graph_pb2.GraphDef()
    g.node.extend([placeholder("x"), call("f", "with_unknown", ["x"], [F32], [F32, F32]),
                   node("neg", "Identity", ["f:0"], T=dtypes.float32),
                   node("dg", "Identity", ["f:1"], T=dtypes.float32)])
    g.library.function.append(with_unknown)
    graph = from_tf_graph_def(g)  # converting is fine: ImaginaryOpXyz (an op specflow lacks, made up so it stays unknown) is kept as it is
    # The body's Neg alone needs no ImaginaryOpXyz; the call node (an IdentityN of both results) does.
    check_supported(graph, ["f/y:0"], ["x:0"])
    with pytest.raises(OpError) as info:
        check_supported(graph, ["dg"], ["x:0"])
    message = str(info.value)
    assert "op 'ImaginaryOpXyz'" in message and "node 'e' in function 'with_unknown'" in message and "'f/e'" in message
    assert "does not support" in message
    check_supported(graph, ["dg"], ["f:1"])  # a fed tensor cuts its producer off
    assert Session(graph).run("f/y:0", {"x:0": np.float32(2)}) == -2


def test_top_level_unsupported_op_is_named_without_function():
    g = graph_pb2.GraphDef()
    g.node.extend([placeholder("x"), node("bad", "ImaginaryOpXyz", ["x"], T=dtypes.float32)])
    g.library.function.append(function("unused", [], [], [], {}))
    with pytest.raises(OpError, match=r"op 'ImaginaryOpXyz' \(node 'bad'\)"):
        check_supported(from_tf_graph_def(g), ["bad:0"])


@pytest.mark.parametrize("case, match", [
    ("missing", "calls function 'nowhere', which the graph's library does not define"),
    ("recursive", r"function 'loop' calls itself \(loop -> loop\)"),
    ("bad_output", "Mul has no output 'product'"),
    ("arity", "passes 1 inputs to function 'halves', which takes 2"),
    ("unbound", "refers to attr 'T', which the call does not bind"),
    ("dangling", "'y' reads 'ghost:z:0', which is neither an argument nor an output"),
])
def test_malformed_libraries_are_clear_errors(case, match):
    g = graph_pb2.GraphDef()
    g.node.append(placeholder("x"))
    lib = [HALVES]
    if case == "missing":
        g.node.append(call("c", "nowhere", ["x"], [F32], [F32]))
    elif case == "recursive":
        lib.append(function("loop", [("x", F32)], [("y", F32)],
                            [call("again", "loop", ["x"], [F32], [F32])], {"y": "again:output:0"}))
        g.node.append(call("c", "loop", ["x"], [F32], [F32]))
    elif case == "bad_output":
        lib.append(function("f", [("x", F32)], [("y", F32)], [node("m", "Mul", ["x", "x"], T=dtypes.float32)],
                            {"y": "m:product:0"}))
        g.node.append(call("c", "f", ["x"], [F32], [F32]))
    elif case == "arity":
        g.node.append(call("c", "halves", ["x"], [F32], [F32, F32]))
    elif case == "unbound":
        lib.append(function("g", [("x", F32)], [("y", F32)],
                            [node("y", "Neg", ["x"], T=attr_value_pb2.AttrValue(placeholder="T"))], {"y": "y:y:0"}))
        g.node.append(call("c", "g", ["x"], [F32], [F32]))
    elif case == "dangling":
        lib.append(function("h", [("x", F32)], [("y", F32)],
                            [node("y", "Neg", ["ghost:z:0"], T=dtypes.float32)], {"y": "y:y:0"}))
        g.node.append(call("c", "h", ["x"], [F32], [F32]))
    g.library.function.extend(lib)
    with pytest.raises(GraphError, match=match):
        from_tf_graph_def(g)
