"""Compiled loops (runtime/loop_plan.py, loop_codegen.py, compiled_loop.py): which loops become
one ``_CompiledLoop`` node, and that they compute exactly what the same loop on frames does
(tests/runtime/test_loops.py runs its whole suite both ways; the control-flow gradient tests
compare gradients)."""

from __future__ import annotations

import numpy as np
import pytest

from specflow.errors import RuntimeFailure
from specflow.graph import dtypes
from specflow.graph.builder import GraphBuilder
from specflow.graph.control_flow import cond, while_loop
from specflow.ops import registry
from specflow.ops.inference import unchanged_shape
from specflow.ops.registry import register_op
from specflow.ops.runtime_ops import async_kernel
from specflow.runtime.session import Session, SessionConfig

F64, I32 = dtypes.float64, dtypes.int32
TIMEOUT = 20.0


def add(b, op, *inputs, **attrs) -> str:
    return b.add_op(op, list(inputs), attrs).name


def placeholder(b, name, shape, dtype=F64) -> str:
    return b.add_op("Placeholder", attrs={"dtype": dtype, "shape": shape}, name=name).name


def run_both(b, fetches, feeds, steps: int = 1) -> tuple[list, list, list[str]]:
    """``fetches`` after ``steps`` runs, compiled and on frames; and the compiled plan's ops."""
    out = []
    for compiled in (True, False):
        with Session(
            b.graph_def, SessionConfig(devices="cpu:1", unroll_limit=0, compile_loops=compiled)
        ) as s:
            got = [s.run(fetches, feeds=feeds, timeout_s=TIMEOUT) for _ in range(steps)]
            if compiled:
                ops = [n.op for e in s.plan_for(fetches, list(feeds)).executors for n in e._nodes]
        out.append(got)
    return out[0], out[1], ops


def fixed_point(b) -> tuple[str, list[str]]:
    """``h, prev = tanh(x), 0; while max|h - prev| > 1e-10: h, prev = tanh(h U + x), h``: the
    trip count depends on the data. ``prev`` is read only by the predicate (its Exit is
    pruned, so it has no Switch)."""
    x = placeholder(b, "x", [4, 3])
    u = b.const(np.array([[0.3, -0.2, 0.1], [0.1, 0.2, -0.3], [-0.2, 0.1, 0.2]]))
    tol, axes, one = b.const(np.array(1e-10)), b.const(np.array([0, 1], np.int32)), b.const(np.int32(1))
    r = while_loop(
        b,
        lambda b, k, h, prev: add(b, "Greater", add(b, "Max", add(b, "Abs", add(b, "Sub", h, prev)), axes), tol),
        lambda b, k, h, prev: [add(b, "AddV2", k, one), add(b, "Tanh", add(b, "AddV2", add(b, "MatMul", h, u), x)), h],
        [b.const(np.int32(0)), add(b, "Tanh", x), add(b, "ZerosLike", x)],
        name="fixed",
    )  # fmt: skip
    return x, [r.outputs[0], r.outputs[1]]


def test_a_data_dependent_loop_runs_compiled_and_equals_frames():
    b = GraphBuilder()
    x, fetches = fixed_point(b)
    xv = np.random.default_rng(0).uniform(-1, 1, (4, 3))
    compiled, frames, ops = run_both(b, fetches, {x: xv})
    assert "_CompiledLoop" in ops and not {"Enter", "Merge", "Switch", "Exit"} & set(ops)
    (k, h), (k_f, h_f) = compiled[0], frames[0]
    assert int(k) == int(k_f) > 5
    np.testing.assert_allclose(h, h_f, rtol=1e-12, atol=0)
    # The fixed point it found: h = tanh(h U + x).
    u = np.array([[0.3, -0.2, 0.1], [0.1, 0.2, -0.3], [-0.2, 0.1, 0.2]])
    np.testing.assert_allclose(h, np.tanh(h @ u + xv), atol=1e-9)


def test_a_fed_trip_count_of_zero_returns_the_initial_values():
    b = GraphBuilder()
    n, x = placeholder(b, "n", [], I32), placeholder(b, "x", [2])
    r = while_loop(b, lambda b, i, p: add(b, "Less", i, n),
                   lambda b, i, p: [add(b, "AddV2", i, b.const(np.int32(1))), add(b, "Mul", p, x)],
                   [b.const(np.int32(0)), add(b, "OnesLike", x)])  # fmt: skip
    with Session(b.graph_def, SessionConfig(devices="cpu:1")) as s:
        for trips in (0, 1, 5, 0):
            got = s.run(r.outputs[1], feeds={n: np.int32(trips), x: [2.0, -3.0]}, timeout_s=TIMEOUT)
            np.testing.assert_array_equal(got, np.array([2.0, -3.0]) ** trips)
        ops = [nd.op for e in s.plan_for(r.outputs[1], [n, x]).executors for nd in e._nodes]
    assert "_CompiledLoop" in ops


def test_a_random_op_in_the_body_keeps_its_stream():
    """Each node keeps its own kernel state, so a seeded RandomUniform draws what it draws on
    frames (with one iteration at a time there: parallel ones may take the draws in another
    order). It reads only a loop invariant, so it runs in the last iteration too, as on frames:
    5 draws a step, the first 4 summed."""
    b = GraphBuilder()
    shape = b.const(np.array([3], np.int32))
    r = while_loop(b, lambda b, i, acc: add(b, "Less", i, b.const(np.int32(4))),
                   lambda b, i, acc: [add(b, "AddV2", i, b.const(np.int32(1))),
                                      add(b, "AddV2", acc, add(b, "RandomUniform", shape, dtype=F64, seed=7, seed2=3))],
                   [b.const(np.int32(0)), b.const(np.zeros(3))], parallel_iterations=1)  # fmt: skip
    compiled, frames, ops = run_both(b, r.outputs[1], {}, steps=3)
    assert "_CompiledLoop" in ops
    np.testing.assert_array_equal(np.array(compiled), np.array(frames))
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([7, 3])))
    for got in compiled:
        draws = [rng.random(3) for _ in range(5)]
        np.testing.assert_array_equal(got, draws[0] + draws[1] + draws[2] + draws[3])


def test_a_loop_entered_with_dead_values_is_dead_and_the_merge_takes_the_live_side():
    b = GraphBuilder()
    p = placeholder(b, "p", [], dtypes.bool_)
    start = add(b, "Switch", b.const(3.0), p)
    r = while_loop(b, lambda b, v: add(b, "Less", v, b.const(100.0)), lambda b, v: [add(b, "Mul", v, v)],
                   [f"{start}:1"])  # fmt: skip
    out = add(b, "Merge", r.outputs[0], add(b, "Identity", start))
    with Session(b.graph_def, SessionConfig(devices="cpu:1")) as s:
        assert float(s.run(out, feeds={p: True}, timeout_s=TIMEOUT)) == 6561.0
        assert float(s.run(out, feeds={p: False}, timeout_s=TIMEOUT)) == 3.0
        assert "_CompiledLoop" in [n.op for e in s.plan_for(out, [p]).executors for n in e._nodes]


def test_a_cond_inside_the_body_keeps_the_loop_on_frames():
    """Its Switch/Merge route dead values, which the compiled loop does not: frames run it."""
    b = GraphBuilder()
    n = placeholder(b, "n", [], I32)
    one = b.const(np.int32(1))

    def body(b, i, acc):
        even = add(b, "Equal", add(b, "FloorMod", i, b.const(np.int32(2))), b.const(np.int32(0)))
        picked = cond(b, even, lambda b, i: add(b, "Identity", i), lambda b, i: add(b, "ZerosLike", i), [i])
        return [add(b, "AddV2", i, one), add(b, "AddV2", acc, picked.outputs[0])]

    r = while_loop(b, lambda b, i, acc: add(b, "Less", i, n), body, [b.const(np.int32(0)), b.const(np.int32(0))])
    with Session(b.graph_def, SessionConfig(devices="cpu:1")) as s:
        assert int(s.run(r.outputs[1], feeds={n: np.int32(6)}, timeout_s=TIMEOUT)) == 0 + 2 + 4
        ops = [nd.op for e in s.plan_for(r.outputs[1], [n]).executors for nd in e._nodes]
    assert "_CompiledLoop" not in ops and "Enter" in ops


def test_a_nested_loop_compiles_whole():
    """The inner loop becomes a node of the outer loop's body, run once per outer iteration
    (its trip count the outer counter); the outer loop then compiles too."""
    b = GraphBuilder()
    n, x = placeholder(b, "n", [], I32), placeholder(b, "x", [2])
    one = b.const(np.int32(1))

    def outer(b, i, acc):
        inner = while_loop(b, lambda b, j, a: add(b, "Less", j, i),
                           lambda b, j, a: [add(b, "AddV2", j, one), add(b, "AddV2", a, add(b, "Mul", x, a))],
                           [b.const(np.int32(0)), acc], name="inner")  # fmt: skip
        return [add(b, "AddV2", i, one), add(b, "AddV2", inner.outputs[1], x)]

    r = while_loop(b, lambda b, i, acc: add(b, "Less", i, n), outer, [b.const(np.int32(0)), add(b, "ZerosLike", x)],
                   name="outer")  # fmt: skip
    compiled, frames, ops = run_both(b, r.outputs[1], {n: np.int32(5), x: np.array([0.3, -0.2])})
    assert ops.count("_CompiledLoop") == 1 and "Enter" not in ops  # the outer one, the inner one inside it
    np.testing.assert_allclose(compiled[0], frames[0], rtol=1e-12, atol=0)
    acc = np.zeros(2)
    for i in range(5):
        for _ in range(i):
            acc = acc + np.array([0.3, -0.2]) * acc
        acc = acc + np.array([0.3, -0.2])
    np.testing.assert_allclose(compiled[0], acc, rtol=1e-12)


def test_a_nested_loops_trace_and_errors_name_the_inner_nodes():
    """A traced step records the inner loop's nodes too; an error inside the inner loop names
    its node (here GatherV2 reading past the end when the inner trip count is fed too high)."""
    b = GraphBuilder()
    n, m = placeholder(b, "n", [], I32), placeholder(b, "m", [], I32)
    table, one = b.const(np.arange(4.0)), b.const(np.int32(1))

    def outer(b, i, acc):
        inner = while_loop(b, lambda b, j, a: add(b, "Less", j, m),
                           lambda b, j, a: [add(b, "AddV2", j, one),
                                            add(b, "AddV2", a, b.add_op("GatherV2", [table, j, b.const(np.int32(0))],
                                                                        name="pick").name)],
                           [b.const(np.int32(0)), acc], name="inner")  # fmt: skip
        return [add(b, "AddV2", i, one), inner.outputs[1]]

    r = while_loop(b, lambda b, i, acc: add(b, "Less", i, n), outer, [b.const(np.int32(0)), b.const(np.array(0.0))],
                   name="outer")  # fmt: skip
    with Session(b.graph_def, SessionConfig(devices="cpu:1")) as s:
        meta: dict = {}
        got = s.run(r.outputs[1], feeds={n: np.int32(3), m: np.int32(4)}, options={"trace": True},
                    run_metadata=meta, timeout_s=TIMEOUT)  # fmt: skip
        assert float(got) == 3 * (0 + 1 + 2 + 3)
        runs = [st.node for st in meta["step_stats"].nodes]
        pick = next(name for name in runs if name.endswith("pick"))
        assert runs.count(pick) == 12 and "_CompiledLoop" in [st.op for st in meta["step_stats"].nodes]
        with pytest.raises(RuntimeFailure, match=r"GatherV2 on .*index = 4 is not in \[0, 4\)") as e:
            s.run(r.outputs[1], feeds={n: np.int32(2), m: np.int32(5)}, timeout_s=TIMEOUT)
        assert e.value.node == pick


@pytest.fixture
def async_forward():
    """TestAsyncForward: an asynchronous kernel that forwards its input (calls done at once)."""
    register_op("TestAsyncForward", inputs=["x: T"], outputs=["y: T"], attrs=["T: type"], stateful=True,
                shape=unchanged_shape, doc="Forwards x through an async kernel.")  # fmt: skip
    async_kernel("TestAsyncForward")(lambda ctx, done, x: done((x,)))
    yield
    registry._OPS.pop("TestAsyncForward", None)
    registry._KERNELS.pop("TestAsyncForward", None)


def test_an_async_kernel_in_the_body_sends_the_loop_back_to_frames(async_forward):
    b = GraphBuilder()
    n = placeholder(b, "n", [], I32)
    r = while_loop(b, lambda b, i: add(b, "Less", i, n),
                   lambda b, i: [add(b, "TestAsyncForward", add(b, "AddV2", i, b.const(np.int32(1))))],
                   [b.const(np.int32(0))])  # fmt: skip
    with Session(b.graph_def, SessionConfig(devices="cpu:1")) as s:
        assert int(s.run(r.outputs[0], feeds={n: np.int32(7)}, timeout_s=TIMEOUT)) == 7
        ops = [nd.op for e in s.plan_for(r.outputs[0], [n]).executors for nd in e._nodes]
    assert "_CompiledLoop" not in ops and "Enter" in ops


def test_steps_on_many_threads_each_get_their_own_loop():
    """Overlapping steps each take their own set of the loop's kernel contexts."""
    import threading

    b = GraphBuilder()
    n = placeholder(b, "n", [], I32)
    r = while_loop(b, lambda b, i, acc: add(b, "Less", i, n),
                   lambda b, i, acc: [add(b, "AddV2", i, b.const(np.int32(1))), add(b, "AddV2", acc, i)],
                   [b.const(np.int32(0)), b.const(np.int32(0))])  # fmt: skip
    errors: list = []
    with Session(b.graph_def, SessionConfig(devices="cpu:1", inter_op_threads=4)) as s:

        def worker(k: int) -> None:
            try:
                for trips in range(k, k + 30):
                    got = int(s.run(r.outputs[1], feeds={n: np.int32(trips)}, timeout_s=TIMEOUT))
                    assert got == trips * (trips - 1) // 2, (trips, got)
            except BaseException as e:  # noqa: BLE001 (reported below)
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors, errors[0]
