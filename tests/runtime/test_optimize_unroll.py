"""Loop unrolling in the optimize stage (runtime/optimize_unroll.py): a counted loop becomes
straight-line copies of its body with the same values, a loop with a gradient together with its
backward loop (stack pushes and pops become edges); loops with unknown trip counts, over the
limit, or with random draws are left alone."""

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


def test_unknown_trip_counts_and_the_limit_keep_the_loop():
    assert _optimized(_loop(counter_fed=True), ["y"], ["x", "n"]).unrolled == []
    assert _optimized(_loop(3), ["y"], ["x"], unroll_limit=0).unrolled == []
    assert OptimizeOptions().unroll_limit == 2000
    assert _optimized(_loop(300), ["y"], ["x"]).unrolled == []  # 300 trips x 9 body nodes > 2,000
    assert _optimized(_loop(4), ["y"], ["x"], unroll_limit=30).unrolled == []  # 4 x 9 > 30
    assert _optimized(_loop(3), ["y"], ["x"], unroll_limit=30).unrolled == ["while x3"]


def _grad_loop(trips=3, counter_fed=False):
    """_loop's graph plus d(sum of y)/dx: a forward loop pushing onto stacks, a backward loop."""
    b = _loop(trips, counter_fed)
    loss = b.add_op("Sum", ["y", b.const(np.array([0, 1], np.int32))], name="loss").name
    (dx,) = gradients(b, [loss], ["x"])
    return b, loss, dx


def _runs(b, fetches, feeds, configs):
    out = []
    for config in configs:
        with Session(b.graph_def, config) as sess:
            out.append(sess.run(fetches, feeds))
    return out


def test_a_loop_with_a_gradient_unrolls_with_its_backward_loop():
    b, loss, dx = _grad_loop(3)
    r = _optimized(b, [loss, dx], ["x"])
    assert r.unrolled == ["while x3", "while_grad x3"]
    ops = {n.op for n in r.graph_def.nodes}
    assert not {"Enter", "Exit", "StackV2", "StackPushV2", "StackPopV2"} & ops
    x = np.random.default_rng(1).standard_normal((2, 3))
    unrolled, looped = _runs(b, [loss, dx], {"x": x}, [SessionConfig(), SessionConfig(unroll_limit=0)])
    np.testing.assert_allclose(unrolled[0], looped[0], rtol=1e-14)
    np.testing.assert_allclose(unrolled[1], looped[1], rtol=1e-14)
    # Against finite differences of the loss.
    eps, fd = 1e-6, np.zeros_like(x)
    with Session(b.graph_def, SessionConfig()) as sess:
        for idx in np.ndindex(x.shape):
            up, down = x.copy(), x.copy()
            up[idx] += eps
            down[idx] -= eps
            fd[idx] = (sess.run(loss, {"x": up}) - sess.run(loss, {"x": down})) / (2 * eps)
    np.testing.assert_allclose(unrolled[1], fd, rtol=1e-6, atol=1e-8)


def test_gradient_loops_the_limit_counts_both_loops_and_fed_counts_keep():
    b, loss, dx = _grad_loop(4)
    forward_only = _optimized(_loop(4), ["y"], ["x"], unroll_limit=40)
    assert forward_only.unrolled == ["while x4"]  # 4 x 9 forward nodes fit in 40
    assert _optimized(b, [loss, dx], ["x"], unroll_limit=40).unrolled == []  # with the backward copies: not
    b, loss, dx = _grad_loop(counter_fed=True)
    assert _optimized(b, [loss, dx], ["x", "n"]).unrolled == []
    x = np.random.default_rng(2).standard_normal((2, 3))
    feeds = {"x": x, "n": np.int32(5)}
    optimized, plain = _runs(b, [loss, dx], feeds, [SessionConfig(), SessionConfig(optimize=False)])
    np.testing.assert_allclose(optimized[1], plain[1], rtol=1e-14)


def test_a_random_op_in_a_gradient_loop_keeps_the_loop():
    """A draw per iteration stays the executor's: the loop (and its backward loop) are kept."""
    b = GraphBuilder()
    b.add_op("Placeholder", attrs={"dtype": F64, "shape": [2]}, name="x")

    def body(b, i, h):
        noise = b.add_op("RandomUniform", [b.const(np.array([2], np.int32))], {"dtype": F64, "seed": 1, "seed2": 2}).name
        return [b.add_op("AddV2", [i, b.const(np.int32(1))]).name, b.add_op("Mul", [h, noise]).name]

    out = while_loop(b, lambda b, i, h: b.add_op("Less", [i, b.const(np.int32(3))]).name, body, [b.const(np.int32(0)), "x"])
    loss = b.add_op("Sum", [out.outputs[1], b.const(np.int32(0))], name="loss").name
    (dx,) = gradients(b, [loss], ["x"])
    assert _optimized(b, [loss, dx], ["x"]).unrolled == []


def test_the_rnn_models_training_steps_are_the_same_unrolled():
    """models/rnn_sequence_sum.yaml: five Adam steps, losses and weights equal with the loops kept."""
    from pathlib import Path

    from specflow.schema.loader import load_spec
    from specflow.train.graph import build_training_graph

    spec = load_spec(Path(__file__).parents[2] / "models" / "rnn_sequence_sum.yaml")
    tg = build_training_graph(spec, spec.train, None)
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (16, 8, 1)).astype(np.float32)
    feeds = {"x": x, "y": x.sum(axis=1)}
    results = []
    for limit in (2000, 0):
        with Session(tg.graph_def, SessionConfig(devices="cpu:1", graph_seed=0, unroll_limit=limit)) as sess:
            sess.run([], targets=[tg.init_op])
            losses = [sess.run(tg.loss, feeds, targets=[tg.train_op]) for _ in range(5)]
            results.append((losses, sess.run("U/Read/ReadVariableOp")))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-6)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-6, atol=1e-7)


def test_a_gradient_loop_split_across_devices_unrolls_to_the_same_gradients():
    """test_loops_split's RNN (the loop vars entered on cpu:1, MatMuls there): unrolled on cpu:2,
    the copies keep their devices and the gradients equal the loops' bit for bit."""
    from tests.runtime.test_loops_split import CPU1, FEEDS, loop_vars_entered_on_cpu1, rnn_graph

    b, _, loss, ph = rnn_graph()
    grads = gradients(b, [loss], [ph["seq"], ph["w"], ph["u"]])
    loop_vars_entered_on_cpu1(b)
    feeds = {ph[k]: v for k, v in FEEDS.items()}
    runs = []
    for limit in (2000, 0):
        with Session(b.graph_def, SessionConfig(devices="cpu:2", unroll_limit=limit)) as s:
            runs.append(s.run(grads, feeds=feeds, timeout_s=20.0))
            ops = {n.op for n in s.plan_for(grads, feeds=list(feeds)).partitions[CPU1].nodes}
            assert ("Enter" in ops) == (limit == 0) and "MatMul" in ops
    for unrolled, looped in zip(*runs, strict=True):
        np.testing.assert_array_equal(unrolled, looped)


def test_two_backward_loops_of_one_forward_loop_unroll_together():
    """Two gradients() calls give the forward loop two sets of stacks, one per backward loop."""
    b, loss, dx = _grad_loop(3)
    (dx2,) = gradients(b, [b.add_op("Mul", [loss, loss]).name], ["x"])
    r = _optimized(b, [dx, dx2], ["x"])
    assert sorted(r.unrolled) == ["while x3", "while_grad x3", "while_grad_1 x3"]
    x = np.random.default_rng(3).standard_normal((2, 3))
    unrolled, looped = _runs(b, [dx, dx2], {"x": x}, [SessionConfig(), SessionConfig(unroll_limit=0)])
    for u, v in zip(unrolled, looped, strict=True):
        np.testing.assert_allclose(u, v, rtol=1e-14)
    np.testing.assert_allclose(unrolled[1], 2 * looped[0] * _runs(b, loss, {"x": x}, [SessionConfig()])[0], rtol=1e-12)


def test_a_loop_reading_another_loops_exit_unrolls_after_it():
    """Two loops in a row (the second starts from the first's result), with the gradient of both:
    four frames unrolled, whatever order their Enters come in."""
    b = _loop(2)

    def body(b, i, h):
        return [b.add_op("AddV2", [i, b.const(np.int32(1))]).name, b.add_op("Cos", [h]).name]

    out = while_loop(b, lambda b, i, h: b.add_op("Less", [i, b.const(np.int32(3))]).name, body,
                     [b.const(np.int32(0)), "y"], name="second")  # fmt: skip
    loss = b.add_op("Sum", [out.outputs[1], b.const(np.array([0, 1], np.int32))], name="loss").name
    (dx,) = gradients(b, [loss], ["x"])
    r = _optimized(b, [loss, dx], ["x"])
    assert len(r.unrolled) == 4 and not {"Enter", "StackV2"} & {n.op for n in r.graph_def.nodes}
    x = np.random.default_rng(4).standard_normal((2, 3))
    unrolled, looped = _runs(b, [loss, dx], {"x": x}, [SessionConfig(), SessionConfig(unroll_limit=0)])
    np.testing.assert_allclose(unrolled[0], looped[0], rtol=1e-14)
    np.testing.assert_allclose(unrolled[1], looped[1], rtol=1e-14)


def test_a_gradient_loop_with_no_stacks_unrolls_with_its_backward_loop():
    """h <- h + x: the backward loop needs no forward value (no stack), only the forward loop's
    iteration count, known once the forward loop is planned."""
    b = GraphBuilder()
    b.add_op("Placeholder", attrs={"dtype": F64, "shape": [2]}, name="x")

    def body(b, i, h):
        return [b.add_op("AddV2", [i, b.const(np.int32(1))]).name, b.add_op("AddV2", [h, "x"]).name]

    out = while_loop(b, lambda b, i, h: b.add_op("Less", [i, b.const(np.int32(4))]).name, body,
                     [b.const(np.int32(0)), b.const(np.zeros(2))])  # fmt: skip
    loss = b.add_op("Sum", [b.add_op("Square", [out.outputs[1]]).name, b.const(np.int32(0))], name="loss").name
    (dx,) = gradients(b, [loss], ["x"])
    r = _optimized(b, [loss, dx], ["x"])
    assert sorted(r.unrolled) == ["while x4", "while_grad x4"]
    assert not {"StackV2", "Enter"} & {n.op for n in r.graph_def.nodes}
    x = np.array([0.5, -2.0])
    unrolled, looped = _runs(b, [loss, dx], {"x": x}, [SessionConfig(), SessionConfig(unroll_limit=0)])
    np.testing.assert_allclose(unrolled[1], looped[1], rtol=1e-14)
    np.testing.assert_allclose(unrolled[1], 2 * 16 * x, rtol=1e-14)  # loss = sum((4x)^2)


def test_a_gradient_loop_on_a_cond_branch_unrolls_and_stays_dead_with_it():
    """The loop and its backward loop inside the taken or untaken branch of a cond: the copies
    are dead with the branch, and both branches give the loops' values and gradients."""
    from specflow.graph.control_flow import cond

    b = GraphBuilder()
    b.add_op("Placeholder", attrs={"dtype": F64, "shape": [2, 3]}, name="x")
    b.add_op("Placeholder", attrs={"dtype": dtypes.bool_, "shape": []}, name="p")

    def body(b, i, h):
        h2 = b.add_op("Mul", [h, b.const(0.5, F64)]).name
        return [b.add_op("AddV2", [i, b.const(np.int32(1))]).name, b.add_op("Sin", [h2]).name]

    def then(b, x):
        cond_fn = lambda b, i, h: b.add_op("Less", [i, b.const(np.int32(3))]).name  # noqa: E731
        return while_loop(b, cond_fn, body, [b.const(np.int32(0)), x]).outputs[1]

    out = cond(b, "p", then, lambda b, x: b.add_op("Cos", [x]).name, ["x"])
    loss = b.add_op("Sum", [out.outputs[0], b.const(np.array([0, 1], np.int32))], name="loss").name
    (dx,) = gradients(b, [loss], ["x"])
    assert _optimized(b, [loss, dx], ["x", "p"]).unrolled == ["cond/then/while x3", "cond/then/while_grad x3"]
    x = np.random.default_rng(5).standard_normal((2, 3))
    for p in (True, False):
        feeds = {"x": x, "p": np.bool_(p)}
        unrolled, looped = _runs(b, [loss, dx], feeds, [SessionConfig(), SessionConfig(unroll_limit=0)])
        np.testing.assert_array_equal(unrolled[1], looped[1])
        np.testing.assert_array_equal(unrolled[0], looped[0])


def test_a_node_with_more_than_eight_unknown_outputs_in_the_body_is_unknown_not_an_error():
    """TF2's functional loops inline their body's results as one IdentityN (tf.scan's has ten);
    outputs past the eighth of a node the trip count could not evaluate are unknown too."""
    b = GraphBuilder()
    b.add_op("Placeholder", attrs={"dtype": F64, "shape": [3]}, name="x")

    def body(b, i, h):
        ids = b.add_op("IdentityN", [h] * 10, {"T": [F64] * 10}, name="ids").name
        return [b.add_op("AddV2", [i, b.const(np.int32(1))]).name, b.add_op("Sin", [f"{ids}:9"]).name]

    out = while_loop(b, lambda b, i, h: b.add_op("Less", [i, b.const(np.int32(4))]).name, body,
                     [b.const(np.int32(0)), "x"])  # fmt: skip
    b.add_op("Identity", [out.outputs[1]], name="y")
    x = np.arange(3.0)
    with Session(b.graph_def) as sess:
        np.testing.assert_allclose(sess.run("y", {"x": x}), np.sin(np.sin(np.sin(np.sin(x)))), rtol=1e-15)
