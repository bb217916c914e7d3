"""TF2 functional control flow lowered at load time (specflow/io/tf_control_flow.py) on hand-built
graphs: If/StatelessIf and While/StatelessWhile become the five primitives, run against numpy,
give finite-difference-checked gradients, and carry TensorLists through a loop."""

from __future__ import annotations

import numpy as np
import pytest
from tensorboard.compat.proto import graph_pb2, types_pb2

from specflow.errors import GraphError
from specflow.graph import dtypes
from specflow.graph.builder import GraphBuilder
from specflow.graph.control_flow import find_while_loops
from specflow.io.tf_graph import from_tf_graph_def
from specflow.runtime.session import Session, SessionConfig
from specflow.train.gradients import gradients
from tests.io.test_tf_graph_functions import function, node, placeholder, scalar

F64, B, I32, VAR = types_pb2.DT_DOUBLE, types_pb2.DT_BOOL, types_pb2.DT_INT32, types_pb2.DT_VARIANT

# then(a, c) = a * c + 2 (a Const inside a branch must run only in it); else(a, c) = sin(a)
THEN = function("then_fn", [("a", F64), ("c", F64)], [("out", F64)],
                [scalar("two", 2.0, np.float64),
                 node("mul", "Mul", ["a", "c"], T=dtypes.float64),
                 node("add", "AddV2", ["mul:z:0", "two:output:0"], T=dtypes.float64)],
                {"out": "add:z:0"})
ELSE = function("else_fn", [("a", F64), ("c", F64)], [("out", F64)],
                [node("sin", "Sin", ["a"], T=dtypes.float64)], {"out": "sin:y:0"})

# while i < n: (i, x) = (i + 1, x * 1.5 + 0.25); counter, limit and state are loop vars
COND = function("cond_fn", [("i", I32), ("n", I32), ("x", F64)], [("go", B)],
                [node("less", "Less", ["i", "n"], T=dtypes.int32)], {"go": "less:z:0"})
BODY = function("body_fn", [("i", I32), ("n", I32), ("x", F64)], [("i2", I32), ("n2", I32), ("x2", F64)],
                [scalar("one", 1, np.int32), scalar("rate", 1.5, np.float64), scalar("shift", 0.25, np.float64),
                 node("inc", "AddV2", ["i", "one:output:0"], T=dtypes.int32),
                 node("scaled", "Mul", ["x", "rate:output:0"], T=dtypes.float64),
                 node("next", "AddV2", ["scaled:z:0", "shift:output:0"], T=dtypes.float64)],
                {"i2": "inc:z:0", "n2": "n", "x2": "next:z:0"})


def if_node(name, op, inputs, tin, tout, then="then_fn", else_="else_fn"):
    n = node(name, op, inputs)
    n.attr["Tcond"].type = B
    n.attr["Tin"].list.type.extend(tin)
    n.attr["Tout"].list.type.extend(tout)
    n.attr["then_branch"].func.name = then
    n.attr["else_branch"].func.name = else_
    return n


def while_node(name, op, inputs, types, cond="cond_fn", body="body_fn"):
    n = node(name, op, inputs)
    n.attr["T"].list.type.extend(types)
    n.attr["cond"].func.name = cond
    n.attr["body"].func.name = body
    n.attr["parallel_iterations"].i = 10
    return n


def graph(nodes, functions) -> graph_pb2.GraphDef:
    g = graph_pb2.GraphDef()
    g.node.extend(nodes)
    g.library.function.extend(functions)
    return g


def cond_graph(op="StatelessIf"):
    return from_tf_graph_def(graph([
        placeholder("flag", dtypes.bool_), placeholder("x", dtypes.float64), placeholder("y", dtypes.float64),
        if_node("cond", op, ["flag", "x", "y"], [F64, F64], [F64]),
        node("out", "Identity", ["cond"], T=dtypes.float64),
    ], [THEN, ELSE]))


def loop_graph(op="While"):
    return from_tf_graph_def(graph([
        scalar("start", 0, np.int32), placeholder("n", dtypes.int32), placeholder("x", dtypes.float64),
        while_node("loop", op, ["start", "n", "x"], [I32, I32, F64]),
        node("out", "Identity", ["loop:2"], T=dtypes.float64),
    ], [COND, BODY]))


X = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
Y = np.array([[2.0, 0.5, -1.0], [1.0, 3.0, 0.5]])


@pytest.mark.parametrize("op", ["If", "StatelessIf"])
def test_if_is_lowered_to_switch_and_merge_and_takes_one_branch(op):
    g = cond_graph(op)
    ops = {n.op for n in g.nodes}
    assert not ops & {"If", "StatelessIf"} and {"Switch", "Merge"} <= ops
    with Session(g) as s:
        for flag, want in ((True, X * Y + 2.0), (False, np.sin(X))):
            np.testing.assert_allclose(s.run("out", {"flag": flag, "x": X, "y": Y}), want, rtol=1e-12)
            # ^cond: the call has finished (its branch_executed Merge is alive either way)
            s.run([], {"flag": flag, "x": X, "y": Y}, targets=["cond"])


def _check_gradient(g, loss_of, feeds, wrt, eps=1e-6):
    """d sum(out * w) / d wrt from the gradient graph vs central differences, optimized (the
    default: folding must keep the untaken branch's zeros dead) and not."""
    b = GraphBuilder(g)
    weights = b.const(np.linspace(0.5, 1.5, np.size(loss_of)).reshape(np.shape(loss_of)), name="weights")
    loss = b.add_op("Sum", [b.add_op("Mul", ["out", weights]).name, b.const(np.array([0, 1], np.int32))]).name
    (grad,) = gradients(b, [loss], [wrt])
    results = []
    for optimize in (True, False):
        with Session(b.graph_def, SessionConfig(optimize=optimize)) as s:
            got = s.run(grad, feeds)
            x = feeds[wrt]
            want = np.zeros_like(x)
            for idx in np.ndindex(x.shape):
                hi, lo = x.copy(), x.copy()
                hi[idx] += eps
                lo[idx] -= eps
                want[idx] = (s.run(loss, {**feeds, wrt: hi}) - s.run(loss, {**feeds, wrt: lo})) / (2 * eps)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8, err_msg=f"optimize={optimize}")
        results.append(got)
    np.testing.assert_array_equal(results[0], results[1])
    return results[0]


def test_gradients_flow_through_a_lowered_if_in_either_branch():
    g = cond_graph()
    weights = np.linspace(0.5, 1.5, X.size).reshape(X.shape)
    dy = _check_gradient(g, X, {"flag": True, "x": X, "y": Y}, "y")
    np.testing.assert_allclose(dy, X * weights)  # d/dy of x*y+2: x (the issue's case: not zero)
    dx = _check_gradient(g, X, {"flag": False, "x": X, "y": Y}, "x")
    np.testing.assert_allclose(dx, np.cos(X) * weights)
    dy_else = _check_gradient(g, X, {"flag": False, "x": X, "y": Y}, "y")
    np.testing.assert_array_equal(dy_else, 0)  # y is unused by the branch taken


def _numpy_loop(n, x):
    for _ in range(n):
        x = x * 1.5 + 0.25
    return x


@pytest.mark.parametrize("op", ["While", "StatelessWhile"])
def test_while_is_lowered_to_a_loop_frame(op):
    g = loop_graph(op)
    loops = find_while_loops(g)
    assert list(loops) == ["loop"] and len(loops["loop"].enters) == 3  # the frame is the While's name
    assert not {n.op for n in g.nodes} & {"While", "StatelessWhile"}
    with Session(g) as s:
        for n in (0, 1, 4):
            np.testing.assert_allclose(s.run("out", {"n": np.int32(n), "x": X}), _numpy_loop(n, X), rtol=1e-12)


def test_gradients_flow_through_a_lowered_while():
    g = loop_graph()
    got = _check_gradient(g, X, {"n": np.int32(3), "x": X}, "x")
    np.testing.assert_allclose(got, 1.5**3 * np.linspace(0.5, 1.5, X.size).reshape(X.shape))


def tensor_list_loop_graph():
    """What a Keras RNN does: read row i of a TensorListFromTensor, write f(row) to a reserved
    list at i, stack the list after the loop."""
    cond = function("lcond", [("i", I32), ("src", VAR), ("dst", VAR)], [("go", B)],
                    [scalar("n", 3, np.int32), node("less", "Less", ["i", "n:output:0"], T=dtypes.int32)],
                    {"go": "less:z:0"})
    body = function("lbody", [("i", I32), ("src", VAR), ("dst", VAR)], [("i2", I32), ("src2", VAR), ("dst2", VAR)],
                    [scalar("one", 1, np.int32), scalar("shape", [-1], np.int32),
                     node("row", "TensorListGetItem", ["src", "i", "shape:output:0"], element_dtype=dtypes.float64),
                     node("sq", "Square", ["row:item:0"], T=dtypes.float64),
                     node("set", "TensorListSetItem", ["dst", "i", "sq:y:0"], element_dtype=dtypes.float64),
                     node("inc", "AddV2", ["i", "one:output:0"], T=dtypes.int32)],
                    {"i2": "inc:z:0", "src2": "src", "dst2": "set:output_handle:0"})
    return from_tf_graph_def(graph([
        placeholder("x", dtypes.float64), scalar("start", 0, np.int32), scalar("n", 3, np.int32),
        scalar("shape", [2], np.int32),
        node("src", "TensorListFromTensor", ["x", "shape"], element_dtype=dtypes.float64, shape_type=dtypes.int32),
        node("dst", "TensorListReserve", ["shape", "n"], element_dtype=dtypes.float64, shape_type=dtypes.int32),
        while_node("loop", "While", ["start", "src", "dst"], [I32, VAR, VAR], "lcond", "lbody"),
        node("out", "TensorListStack", ["loop:2", "shape"], element_dtype=dtypes.float64, num_elements=3),
    ], [cond, body]))


def test_a_loop_collects_rows_in_a_tensor_list():
    x = np.arange(6.0).reshape(3, 2)
    with Session(tensor_list_loop_graph()) as s:
        np.testing.assert_array_equal(s.run("out", {"x": x}), x**2)


def test_gradients_flow_through_tensor_lists_a_loop_carries():
    """The backward loop carries the lists' gradients (lists of element gradients, summed by AddN,
    ZerosLike of a list where none reached it)."""
    x = np.arange(6.0).reshape(3, 2) - 2.5
    got = _check_gradient(tensor_list_loop_graph(), x, {"x": x}, "x")
    np.testing.assert_allclose(got, 2 * x * np.linspace(0.5, 1.5, 6).reshape(3, 2))


def test_bad_control_flow_is_one_clear_error():
    bad_cond = function("int_cond", [("i", I32), ("n", I32), ("x", F64)], [("go", I32)],
                        [node("sub", "Sub", ["n", "i"], T=dtypes.int32)], {"go": "sub:z:0"})
    g = graph([scalar("start", 0, np.int32), placeholder("n", dtypes.int32), placeholder("x", dtypes.float64),
               while_node("loop", "While", ["start", "n", "x"], [I32, I32, F64], "int_cond")], [bad_cond, BODY])
    with pytest.raises(GraphError, match=r"While 'loop': its condition 'int_cond' must return one bool"):
        from_tf_graph_def(g)
    g = graph([placeholder("flag", dtypes.bool_), placeholder("x", dtypes.float64),
               if_node("cond", "If", ["flag", "x", "x"], [F64, F64], [F64], then="missing")], [ELSE])
    with pytest.raises(GraphError, match=r"If 'cond' calls function 'missing' \(then_branch\)"):
        from_tf_graph_def(g)


# Case/StatelessCase (tf.switch_case): branch i where branch_index == i, the last one otherwise.
SQUARE = function("square_fn", [("a", F64), ("c", F64)], [("out", F64)],
                  [node("sq", "Square", ["a"], T=dtypes.float64)], {"out": "sq:y:0"})


def case_graph(op="StatelessCase"):
    n = node("case", op, ["index", "x", "y"])
    n.attr["Tin"].list.type.extend([F64, F64])
    n.attr["Tout"].list.type.extend([F64])
    for fn in ("then_fn", "else_fn", "square_fn"):
        n.attr["branches"].list.func.add().name = fn
    return from_tf_graph_def(graph([
        placeholder("index", dtypes.int32), placeholder("x", dtypes.float64), placeholder("y", dtypes.float64),
        n, node("out", "Identity", ["case"], T=dtypes.float64),
    ], [THEN, ELSE, SQUARE]))


@pytest.mark.parametrize("op", ["Case", "StatelessCase"])
def test_case_is_lowered_and_out_of_range_runs_the_last_branch(op):
    g = case_graph(op)
    assert not {n.op for n in g.nodes} & {"Case", "StatelessCase"}
    with Session(g) as s:
        for index, want in ((0, X * Y + 2.0), (1, np.sin(X)), (2, X * X), (7, X * X), (-1, X * X)):
            np.testing.assert_allclose(s.run("out", {"index": np.int32(index), "x": X, "y": Y}), want, rtol=1e-12)
            s.run([], {"index": np.int32(index), "x": X, "y": Y}, targets=["case"])


@pytest.mark.parametrize("index", [0, 1, 5])
def test_case_gradient_flows_through_the_branch_taken(index):
    g = case_graph()
    _check_gradient(g, X, {"index": np.int32(index), "x": X.copy(), "y": Y.copy()}, "x")


def test_a_top_level_node_named_like_a_lowered_one_keeps_its_value():
    # TF's freezing names the constant a frozen variable captured by an If becomes "cond/input_1",
    # the name the If's lowering gives its Switch of input 1: both must survive, each with its value
    c = np.array([[3.0, -2.0, 0.5], [1.0, 4.0, -1.0]])
    g = from_tf_graph_def(graph([
        placeholder("flag", dtypes.bool_), placeholder("x", dtypes.float64), scalar("cond/input_1", c, np.float64),
        if_node("cond", "If", ["flag", "x", "cond/input_1"], [F64, F64], [F64]),
        node("out", "Identity", ["cond"], T=dtypes.float64),
    ], [THEN, ELSE]))
    with Session(g) as s:
        want = X * c + 2.0
        np.testing.assert_allclose(s.run("out", {"flag": True, "x": X}), want, rtol=1e-12)
        np.testing.assert_allclose(s.run("out", {"flag": False, "x": X}), np.sin(X), rtol=1e-12)


@pytest.mark.parametrize("index, scale", [(0, 1.0), (1, 2.0), (2, 3.0), (-1, 3.0), (7, 3.0)])
def test_switch_n_of_a_frozen_lowered_case_routes_to_one_output(index, scale):
    # convert_variables_to_constants_v2 lowers Case to _SwitchN (out of range: the last output)
    g = from_tf_graph_def(graph([
        placeholder("x", dtypes.float64), placeholder("i", dtypes.int32),
        node("sw", "_SwitchN", ["x", "i"], T=dtypes.float64, num_outs=3),
        node("b0", "Identity", ["sw"], T=dtypes.float64),
        scalar("two", 2.0, np.float64), scalar("three", 3.0, np.float64),
        node("b1", "Mul", ["sw:1", "two"], T=dtypes.float64),
        node("b2", "Mul", ["sw:2", "three"], T=dtypes.float64),
        node("out", "Merge", ["b0", "b1", "b2"], T=dtypes.float64, N=3),
        node("done", "Identity", ["out"], T=dtypes.float64),
    ], []))
    assert "_SwitchN" not in {n.op for n in g.nodes}
    with Session(g) as s:
        got, which = s.run(["done", "out:1"], {"x": X, "i": np.int32(index)})
    np.testing.assert_allclose(got, X * scale, rtol=1e-12)
    assert which == (index if 0 <= index < 3 else 2)


def test_a_loop_var_under_shape_invariants_is_not_inferred_as_its_initial_shape():
    # while i < 1: x = concat(x, x): x starts [3], ends [6]; TF's output_shapes says [?]
    cond = function("grow_cond", [("i", I32), ("x", F64)], [("go", B)],
                    [scalar("one", 1, np.int32), node("less", "Less", ["i", "one:output:0"], T=dtypes.int32)],
                    {"go": "less:z:0"})
    body = function("grow_body", [("i", I32), ("x", F64)], [("i2", I32), ("x2", F64)],
                    [scalar("one", 1, np.int32), scalar("axis", 0, np.int32),
                     node("inc", "AddV2", ["i", "one:output:0"], T=dtypes.int32),
                     node("cat", "ConcatV2", ["x", "x", "axis:output:0"], T=dtypes.float64, N=2, Tidx=dtypes.int32)],
                    {"i2": "inc:z:0", "x2": "cat:output:0"})
    x = placeholder("x", dtypes.float64)
    x.attr["shape"].shape.dim.add(size=3)
    loop = while_node("loop", "StatelessWhile", ["start", "x"], [I32, F64], cond="grow_cond", body="grow_body")
    loop.attr["output_shapes"].list.shape.add()
    loop.attr["output_shapes"].list.shape.add().dim.add(size=-1)
    g = from_tf_graph_def(graph([
        scalar("start", 0, np.int32), x, loop, scalar("floor", np.zeros(6), np.float64),
        node("out", "Maximum", ["loop:1", "floor"], T=dtypes.float64),
    ], [cond, body]))
    with Session(g) as s:
        v = np.array([1.0, -2.0, 3.0])
        np.testing.assert_array_equal(s.run("out", {"x": v}), np.maximum(np.concatenate([v, v]), 0.0))
