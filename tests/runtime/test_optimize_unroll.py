"""Loop unrolling in the optimize stage (runtime/optimize_unroll.py): a counted loop becomes
straight-line copies of its body with the same values; loops with unknown trip counts, over the
limit, or holding a gradient's stacks are left alone."""

from __future__ import annotations

import numpy as np

from specflow.graph import dtypes
from specflow.graph.builder import GraphBuilder
from specflow.graph.control_flow import while_loop
from specflow.runtime.optimize import OptimizeOptions, optimize
from specflow.runtime.prune import PruneOptions, prune
from specflow.runtime.session import Session, SessionConfig
from specflow.train.gradients import gradients

F64 = dtypes.float64


def _loop(trips=3, counter_fed=False) -> GraphBuilder:
    """h <- sin(h * 0.5), ``trips`` times; the counter's limit a Const (or a fed Placeholder)."""
    b = GraphBuilder()
    b.add_op("Placeholder", attrs={"dtype": F64, "shape": [2, 3]}, name="x")
    if counter_fed:
        b.add_op("Placeholder", attrs={"dtype": dtypes.int32, "shape": []}, name="n")
    limit = "n" if counter_fed else None

    def body(b, i, h):
        h2 = b.add_op("Mul", [h, b.const(0.5, F64)]).name
        return [b.add_op("AddV2", [i, b.const(np.int32(1))]).name, b.add_op("Sin", [h2]).name]

    out = while_loop(
        b, lambda b, i, h: b.add_op("Less", [i, limit or b.const(np.int32(trips))]).name, body,
        [b.const(np.int32(0)), "x"],
    )  # fmt: skip
    b.add_op("Identity", [out.outputs[1]], name="y")
    return b


def _optimized(b, fetches, feeds, **opts):
    pruned = prune(b.graph_def, PruneOptions(feeds=list(feeds), fetches=list(fetches)))
    return optimize(pruned.graph_def, OptimizeOptions(**opts))


def test_a_counted_loop_becomes_straight_line_code():
    r = _optimized(_loop(3), ["y"], ["x"])
    assert r.unrolled == ["while x3"]
    ops = [n.op for n in r.graph_def.nodes]
    assert not {"Enter", "Merge", "Switch", "Exit", "NextIteration", "LoopCond"} & set(ops)
    assert ops.count("Sin") == 3 and ops.count("Mul") == 3
    x = np.random.default_rng(0).standard_normal((2, 3))
    want = x
    for _ in range(3):
        want = np.sin(want * 0.5)
    for optimize_flag in (True, False):
        with Session(_loop(3).graph_def, SessionConfig(optimize=optimize_flag)) as sess:
            np.testing.assert_allclose(sess.run("y", {"x": x}), want, rtol=1e-15)


def test_zero_trips_return_the_entering_value():
    r = _optimized(_loop(0), ["y"], ["x"])
    assert r.unrolled == ["while x0"]
    x = np.ones((2, 3))
    with Session(_loop(0).graph_def, SessionConfig()) as sess:
        np.testing.assert_array_equal(sess.run("y", {"x": x}), x)


def test_unknown_trip_counts_the_limit_and_gradient_loops_are_left_alone():
    assert _optimized(_loop(counter_fed=True), ["y"], ["x", "n"]).unrolled == []
    assert _optimized(_loop(3), ["y"], ["x"], unroll_limit=0).unrolled == []
    assert OptimizeOptions().unroll_limit == 2000
    assert _optimized(_loop(300), ["y"], ["x"]).unrolled == []  # 300 trips x 9 body nodes > 2,000
    assert _optimized(_loop(4), ["y"], ["x"], unroll_limit=30).unrolled == []  # 4 x 9 > 30
    assert _optimized(_loop(3), ["y"], ["x"], unroll_limit=30).unrolled == ["while x3"]
    b = _loop(3)
    loss = b.add_op("Sum", ["y", b.const(np.array([0, 1], np.int32))], name="loss").name
    (dx,) = gradients(b, [loss], ["x"])
    r = _optimized(b, [loss, dx], ["x"])
    assert r.unrolled == []  # the forward loop pushes onto the gradient's stacks
    x = np.random.default_rng(1).standard_normal((2, 3))
    runs = []
    for optimize_flag in (True, False):
        with Session(b.graph_def, SessionConfig(optimize=optimize_flag)) as sess:
            runs.append(sess.run([loss, dx], {"x": x}))
    np.testing.assert_allclose(runs[0][1], runs[1][1], rtol=1e-14)
