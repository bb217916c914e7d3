"""cond and while_loop (specflow/graph/control_flow.py): the structure they build (checked by
verify() and against find_while_loops), their errors, and their values through the Session. The
loop-running tests need the executor's frames; until the shared tree has them they skip."""

from __future__ import annotations

import numpy as np
import pytest

from specflow.errors import GraphError, OpError, ShapeError, SpecflowError
from specflow.graph import dtypes
from specflow.graph.builder import GraphBuilder
from specflow.graph.control_flow import cond, find_while_loops, while_loop
from specflow.graph.graph_def import parse_input
from specflow.graph.shapes import Shape
from specflow.graph.verify import verify
from specflow.ops.eval import evaluate_op
from specflow.runtime.session import Session

I32, F64 = dtypes.int32, dtypes.float64


def placeholder(b, name, dtype=I32, shape=()):
    return b.add_op("Placeholder", attrs={"dtype": dtype, "shape": list(shape) if shape is not None else None},
                    name=name).name


def op(b, op_name, *inputs, **attrs):
    return b.add_op(op_name, list(inputs), attrs or None).name


def factorial(b, n, max_iterations=None):
    """``i, acc = 1, 1; while i <= n: i, acc = i + 1, acc * i``."""
    return while_loop(
        b,
        lambda b, i, acc: op(b, "LessEqual", i, n),
        lambda b, i, acc: [op(b, "AddV2", i, b.const(1)), op(b, "Mul", acc, i)],
        [b.const(1, name="i0"), b.const(1, name="acc0")],
        name="fact",
        var_names=["i", "acc"],
        max_iterations=max_iterations,
    )


def _session_runs_loops() -> bool:
    b = GraphBuilder()
    out = factorial(b, b.const(3, name="n")).outputs[1]
    try:
        with Session(b.graph_def) as s:
            return int(s.run(out, timeout_s=10)) == 6
    except SpecflowError:
        return False


needs_loops = pytest.mark.skipif(not _session_runs_loops(), reason="the executor does not run loops yet")


# --- structure -------------------------------------------------------------------------------------


def test_while_structure_frames_captures_and_pivots():
    b = GraphBuilder()
    n = placeholder(b, "n")
    res = factorial(b, n, max_iterations=50)
    g = b.graph_def
    verify(g)
    assert res.frame_name == "fact" and res.outputs == ["fact/i", "fact/acc"] and res.counter == 2
    for e in res.enters:
        assert g.node(e).attrs["frame_name"] == "fact" and not g.node(e).attrs["is_constant"]
    # n is read by the condition: captured once, by a constant Enter of the same frame.
    assert res.captures == {"n:0": "fact/capture/n"}
    cap = g.node("fact/capture/n")
    assert cap.op == "Enter" and cap.inputs == ["n"] and cap.attrs["is_constant"] and cap.attrs["frame_name"] == "fact"
    assert g.node("fact/cond/LessEqual").inputs == ["fact/i/Merge", "fact/capture/n"]
    # Merge <- (Enter, NextIteration); Switch on the LoopCond; Exit on :0, the body on :1.
    assert g.node("fact/acc/Merge").inputs == ["fact/acc/Enter", "fact/acc/NextIteration"]
    assert g.node("fact/acc/Switch").inputs == ["fact/acc/Merge", "fact/LoopCond"]
    assert g.node("fact/acc").op == "Exit" and g.node("fact/acc").inputs == ["fact/acc/Switch"]
    assert g.node("fact/body/Mul").inputs == ["fact/acc/Identity", "fact/i/Identity"]
    # A Const in the body runs in the loop's frame: a control input on the body's pivot.
    assert g.node("fact/body/Const").inputs == ["^fact/i/Identity"]
    assert g.node("fact/max_iterations/limit").inputs == ["^fact/i/Merge"]
    # The max-iterations Assert gates the condition.
    assert g.node("fact/max_iterations/checked").inputs == ["fact/cond/LessEqual", "^fact/max_iterations/Assert"]
    assert g.node("fact/LoopCond").inputs == ["fact/max_iterations/checked"]
    assert b.spec("fact/acc").dtype == I32 and b.spec("fact/acc").shape == Shape([])


def test_find_while_loops_recovers_the_structure_from_the_graph_def():
    b = GraphBuilder()
    res = factorial(b, placeholder(b, "n"), max_iterations=5)
    found = find_while_loops(b.graph_def)
    assert list(found) == ["fact"]
    got = found["fact"]
    for attr in ("enters", "merges", "switches", "identities", "next_iterations", "exits", "loop_cond",
                 "captures", "loop_vars", "frame_name", "parallel_iterations"):
        assert getattr(got, attr) == getattr(res, attr), attr


def test_nested_loop_captures_through_both_frames():
    """sum over i < n of (sum over j < i of j): the inner loop reads ``n``'s frame via its outer capture."""
    b = GraphBuilder()
    n = placeholder(b, "n")
    scale = b.const(2, name="scale")

    def outer_body(b, i, total):
        inner = while_loop(
            b,
            lambda b, j, s: op(b, "Less", j, i),
            lambda b, j, s: [op(b, "AddV2", j, b.const(1)), op(b, "AddV2", s, op(b, "Mul", j, scale))],
            [b.const(0, name="j0"), b.const(0, name="s0")],
            name="inner",
        )
        return [op(b, "AddV2", i, b.const(1)), op(b, "AddV2", total, inner.outputs[1])]

    res = while_loop(b, lambda b, i, t: op(b, "Less", i, n), outer_body, [b.const(0, name="i0"), b.const(0, name="t0")],
                     name="outer")
    g = b.graph_def
    verify(g)
    loops = find_while_loops(g)
    assert set(loops) == {"outer", "outer/body/inner"}
    # scale (root frame) -> outer's constant Enter -> inner's constant Enter.
    inner_cap = loops["outer/body/inner"].captures["outer/capture/scale:0"]
    assert g.node(inner_cap).inputs == ["outer/capture/scale"]
    assert g.node("outer/capture/scale").inputs == ["scale"]
    # The inner loop's initial-value Consts live in the outer frame: pivot control inputs.
    assert g.node("outer/body/j0").inputs == ["^outer/v0/Identity"]
    assert res.outputs == ["outer/v0", "outer/v1"]


def test_cond_structure_switches_inputs_and_captures_once():
    b = GraphBuilder()
    x = placeholder(b, "x", F64, [3])
    p = placeholder(b, "p", dtypes.bool_)
    w = b.const(np.array([1.0, 2.0, 3.0]), name="w")
    res = cond(b, p, lambda b, x: op(b, "Mul", x, w), lambda b, x: [op(b, "Sub", x, w)], inputs=[x], name="c")
    g = b.graph_def
    verify(g)
    assert res.switches == {"x:0": "c/Switch", "w:0": "c/Switch_1"}  # one Switch per tensor, both branches
    assert g.node("c/then/Mul").inputs == ["c/Switch:1", "c/Switch_1:1"]
    assert g.node("c/else/Sub").inputs == ["c/Switch", "c/Switch_1"]
    assert g.node("c/Merge").inputs == ["c/else/Sub", "c/then/Mul"]  # TF's order: false, true
    assert res.pivots == ("c/switch_t", "c/switch_f")


def test_cond_inside_a_loop_captures_through_the_frame():
    b = GraphBuilder()
    n, k = placeholder(b, "n"), b.const(3, name="k")

    def body(b, i, acc):
        odd = op(b, "Equal", op(b, "FloorMod", i, b.const(2)), b.const(1))
        picked = cond(b, odd, lambda b: op(b, "Mul", i, k), lambda b: [i], name="pick")
        return [op(b, "AddV2", i, b.const(1)), op(b, "AddV2", acc, picked.outputs[0])]

    while_loop(b, lambda b, i, acc: op(b, "Less", i, n), body, [b.const(0, name="i0"), b.const(0, name="a0")], name="w")
    g = b.graph_def
    verify(g)
    # k comes into the frame by a constant Enter, then into the branch by a Switch.
    assert g.node("w/body/pick/Switch_1").inputs[0] == "w/capture/k"
    assert g.node("w/body/pick/then/Mul").inputs == ["w/body/pick/Switch:1", "w/body/pick/Switch_1:1"]


def test_a_var_whose_shape_changes_gets_the_relaxed_shape():
    b = GraphBuilder()
    x0 = b.const(np.zeros(1, np.float32), name="x0")
    res = while_loop(b, lambda b, v: op(b, "Less", op(b, "Size", v), b.const(8)),
                     lambda b, v: op(b, "ConcatV2", v, v, b.const(0)), [x0], name="grow")
    g = b.graph_def
    verify(g)
    relax = g.node("grow/v0/shape_invariant")
    assert relax.op == "PlaceholderWithDefault" and relax.inputs == ["x0"] and g.node("grow/v0/Enter").inputs == [relax.name]
    assert b.spec(res.outputs[0]).shape == Shape([None])
    # A var that keeps its shape keeps it exactly; an explicit invariant is honoured.
    b = GraphBuilder()
    res = while_loop(b, lambda b, v: op(b, "Less", op(b, "Sum", v, b.const(0)), b.const(9.0)),
                     lambda b, v: op(b, "AddV2", v, v), [b.const(np.ones(2, np.float32))], name="keep",
                     shape_invariants=[[None]])
    assert b.spec(res.outputs[0]).shape == Shape([None])


# --- errors ------------------------------------------------------------------------------------------


def test_branch_outputs_must_match():
    b = GraphBuilder()
    x, p = placeholder(b, "x", F64, [3]), placeholder(b, "p", dtypes.bool_)
    with pytest.raises(ShapeError, match=r"cond 'c': the branches must give the same outputs: 'then' gives 2 "
                       r"\(float64, float64\), 'else' gives 1 \(float64\)") as e:
        cond(b, p, lambda b, x: [x, x], lambda b, x: x, inputs=[x], name="c")
    assert e.value.node == "c"
    with pytest.raises(ShapeError, match=r"'then' gives 1 \(float64\), 'else' gives 1 \(int32\)"):
        cond(b, p, lambda b, x: x, lambda b, x: b.const(1), inputs=[x], name="c")


def test_predicate_and_condition_must_be_bool_scalars():
    b = GraphBuilder()
    x = placeholder(b, "x", F64, [3])
    with pytest.raises(ShapeError, match=r"cond 'c': the predicate must be a bool scalar, got float64 \[3\]"):
        cond(b, x, lambda b: x, lambda b: x, name="c")
    with pytest.raises(ShapeError, match=r"loop 'w': the condition must be a bool scalar, got int32 \[\]") as e:
        while_loop(b, lambda b, i: op(b, "Sub", b.const(5), i), lambda b, i: i, [b.const(0)], name="w")
    assert e.value.node == "w"


def test_body_must_keep_dtypes_and_count():
    b = GraphBuilder()
    with pytest.raises(ShapeError, match="loop 'w': loop var 'v0' enters the loop as int32 but the body makes it float32"):
        while_loop(b, lambda b, i: op(b, "Less", i, b.const(3)), lambda b, i: op(b, "Cast", i, DstT=dtypes.float32),
                   [b.const(0)], name="w")
    with pytest.raises(GraphError, match=r"loop 'w': the body returns 2 value\(s\) for 1 loop variable\(s\)"):
        while_loop(b, lambda b, i: op(b, "Less", i, b.const(3)), lambda b, i: [i, i], [b.const(0)], name="w")


def test_assert_and_loop_cond_kernels_fail_with_their_messages():
    with pytest.raises(OpError, match=r"assertion failed: \[loop 'w' exceeded maximum_iterations=3\] \[1 2 3 \.\.\.\]"):
        evaluate_op("Assert", [np.array(False), np.array("loop 'w' exceeded maximum_iterations=3", dtype=object),
                               np.arange(1, 6, dtype=np.int32)])
    assert evaluate_op("Assert", [np.array(True), np.zeros(2)]) == []
    with pytest.raises(OpError, match=r"the loop condition must be a bool scalar, got shape \[2\]"):
        evaluate_op("LoopCond", [np.array([True, False])])


# --- values (the Session) ------------------------------------------------------------------------------


@pytest.mark.parametrize("pred", [True, False])
def test_cond_runs_the_taken_branch_only(pred):
    b = GraphBuilder()
    x, p = placeholder(b, "x", F64, [3]), placeholder(b, "p", dtypes.bool_)
    w = b.const(np.array([1.0, 2.0, 3.0]), name="w")
    res = cond(b, p, lambda b, x: op(b, "Mul", x, w), lambda b, x: [b.const(np.full(3, 7.0))], inputs=[x], name="c")
    xv = np.array([1.0, -2.0, 4.0])
    with Session(b.graph_def) as s:
        got, idx = s.run([res.outputs[0], f"{res.merges[0]}:1"], {x: xv, p: np.array(pred)})
    np.testing.assert_array_equal(got, xv * [1.0, 2.0, 3.0] if pred else np.full(3, 7.0))
    assert int(idx) == int(pred)


@needs_loops
@pytest.mark.parametrize("n,want", [(0, 1), (1, 1), (5, 120), (10, 3628800)])
def test_factorial(n, want):
    b = GraphBuilder()
    nn = placeholder(b, "n")
    res = factorial(b, nn, max_iterations=20)
    with Session(b.graph_def) as s:
        i, acc = s.run(res.outputs, {nn: np.array(n, np.int32)}, timeout_s=30)
    assert int(acc) == want and int(i) == max(n, 0) + 1


@needs_loops
def test_fibonacci_with_a_captured_constant():
    b = GraphBuilder()
    n = placeholder(b, "n")
    res = while_loop(b, lambda b, k, a, c: op(b, "Less", k, n),
                     lambda b, k, a, c: [op(b, "AddV2", k, b.const(1)), c, op(b, "AddV2", a, c)],
                     [b.const(0, name="k0"), b.const(0, dtypes.int64, name="a0"), b.const(1, dtypes.int64, name="b0")], name="fib")
    with Session(b.graph_def) as s:
        for k, want in [(0, 0), (1, 1), (10, 55), (50, 12586269025)]:
            assert int(s.run(res.outputs[1], {n: np.array(k, np.int32)}, timeout_s=30)) == want


@needs_loops
def test_nested_loop_and_cond_inside_a_loop_values():
    b = GraphBuilder()
    n = placeholder(b, "n")

    def outer_body(b, i, total):
        inner = while_loop(b, lambda b, j, s: op(b, "Less", j, i),
                           lambda b, j, s: [op(b, "AddV2", j, b.const(1)), op(b, "AddV2", s, j)],
                           [b.const(0), b.const(0)], name="inner")
        odd = op(b, "Equal", op(b, "FloorMod", i, b.const(2)), b.const(1))
        picked = cond(b, odd, lambda b: op(b, "Neg", inner.outputs[1]), lambda b: inner.outputs[1], name="sign")
        return [op(b, "AddV2", i, b.const(1)), op(b, "AddV2", total, picked.outputs[0])]

    res = while_loop(b, lambda b, i, t: op(b, "Less", i, n), outer_body, [b.const(0), b.const(0)], name="outer")
    with Session(b.graph_def) as s:
        got = int(s.run(res.outputs[1], {n: np.array(7, np.int32)}, timeout_s=30))
    assert got == sum((-1 if i % 2 else 1) * sum(range(i)) for i in range(7))


@needs_loops
def test_exceeding_max_iterations_is_an_error_naming_the_loop():
    b = GraphBuilder()
    nn = placeholder(b, "n")
    res = factorial(b, nn, max_iterations=4)
    with Session(b.graph_def) as s:
        assert int(s.run(res.outputs[1], {nn: np.array(4, np.int32)}, timeout_s=30)) == 24  # exactly 4 iterations
        with pytest.raises(SpecflowError, match=r"assertion failed: \[loop 'fact' exceeded maximum_iterations=4\]") as e:
            s.run(res.outputs[1], {nn: np.array(5, np.int32)}, timeout_s=30)
    assert e.value.node == "fact/max_iterations/Assert"


@needs_loops
def test_a_condition_that_is_not_a_scalar_fails_at_run_time():
    b = GraphBuilder()
    limit = placeholder(b, "limit", I32, None)  # unknown rank: only the kernel can check
    res = while_loop(b, lambda b, i: op(b, "Less", i, limit), lambda b, i: op(b, "AddV2", i, b.const(1)),
                     [b.const(0)], name="w")
    with Session(b.graph_def) as s:
        assert int(s.run(res.outputs[0], {limit: np.array(3, np.int32)}, timeout_s=30)) == 3
        with pytest.raises(SpecflowError, match=r"the loop condition must be a bool scalar, got shape \[2\]") as e:
            s.run(res.outputs[0], {limit: np.array([3, 4], np.int32)}, timeout_s=30)
    assert e.value.node == "w/LoopCond"


def test_a_variable_created_inside_a_body_is_lifted_out():
    b = GraphBuilder()
    res = while_loop(b, lambda b, i: op(b, "Less", i, b.const(3)),
                     lambda b, i: [i, b.add_op("VarHandleOp", [], {"dtype": I32, "shape": []}, name="v").name][0],
                     [b.const(0)], name="w")
    names = [n.name for n in b.graph_def.nodes]
    assert names.index("w/body/v") < names.index(res.enters[0])  # before the loop, in no frame
    assert not any(parse_input(i).node == "w/body/v" for i in b.graph_def.node(res.enters[0]).inputs)


def test_a_variable_initialized_from_the_loop_is_refused():
    b = GraphBuilder()

    def body(b, i):
        h = b.add_op("VarHandleOp", [], {"dtype": I32, "shape": []}, name="v").name
        b.add_to_collection("init_ops", b.add_op("AssignVariableOp", [h, i], {"dtype": I32}, name="v/Assign").name)
        return i

    with pytest.raises(GraphError, match="loop 'w': variable 'w/body/v' is initialized from values computed inside"):
        while_loop(b, lambda b, i: op(b, "Less", i, b.const(3)), body, [b.const(0)], name="w")
