"""Gradients through nested while loops (specflow/train/loop_gradients.py): the inner loop's
backward loop runs inside the outer backward loop, on stacks made per outer iteration. Checked
against analytic values and central finite differences (float64), on one device and split
across two."""

from __future__ import annotations

import numpy as np
import pytest

from specflow.graph.builder import GraphBuilder
from specflow.graph.control_flow import cond, while_loop
from specflow.graph.verify import verify
from specflow.runtime.session import Session, SessionConfig
from specflow.train.gradients import gradients
from tests.train.test_control_flow_gradients import (
    I32,
    add,
    check,
    counted_loop,
    finite_differences,
    placeholder,
    sum_all,
)

TIMEOUT = 20.0  # every step here takes milliseconds; a hang fails instead
RNG = np.random.default_rng(66)


def gather(b, params, i) -> str:
    return add(b, "GatherV2", params, i, b.const(np.int32(0)))


def powers_sum(trips=None):
    """``acc = sum_{i<3} x ** (i + 1)``: the inner loop multiplies by x ``i + 1`` times (or
    ``trips[i]`` times, fed), so each outer iteration's inner loop runs a different count."""
    b = GraphBuilder()
    x = placeholder(b, "x", [3])
    counts = placeholder(b, "trips", [3], I32) if trips else None

    def outer(b, i, acc):
        n = gather(b, counts, i) if counts else add(b, "AddV2", i, b.const(np.int32(1)))
        inner = counted_loop(b, n, lambda b, p: [add(b, "Mul", p, x)], [add(b, "OnesLike", x)], name="inner")
        return [add(b, "AddV2", i, b.const(np.int32(1))), add(b, "AddV2", acc, inner.outputs[1])]

    r = while_loop(b, lambda b, i, acc: add(b, "Less", i, b.const(np.int32(3))), outer,
                   [b.const(np.int32(0)), add(b, "ZerosLike", x)], name="outer")  # fmt: skip
    return b, x, sum_all(b, r.outputs[1], name="loss")


X = np.array([1.5, -0.5, 0.8])


def test_inner_power_loop_inside_an_accumulating_outer_loop():
    """d/dx sum_{i<3} x^(i+1) = 1 + 2x + 3x^2."""
    b, x, loss = powers_sum()
    (dx,) = check(b, loss, {x: X}, [x])
    np.testing.assert_allclose(dx, 1 + 2 * X + 3 * X**2, rtol=1e-12)


def test_inner_trip_counts_fed_per_outer_iteration():
    """Inner trip counts 4, 0, 2 (one inner loop never runs): d/dx = 4x^3 + 0 + 2x; then other
    counts in the next step, whose stacks are fresh."""
    b, x, loss = powers_sum(trips=True)
    (dx,) = gradients(b, [loss], [x])
    verify(b.graph_def)
    with Session(b.graph_def) as s:
        for trips, want in (([4, 0, 2], 4 * X**3 + 2 * X), ([1, 5, 3], 1 + 5 * X**4 + 3 * X**2)):
            feeds = {x: X, "trips": np.array(trips, np.int32)}
            got = s.run(dx, feeds=feeds, timeout_s=TIMEOUT)
            np.testing.assert_allclose(got, want, rtol=1e-12)
            np.testing.assert_allclose(got, finite_differences(s, loss, feeds, x), rtol=1e-6)


def invariant_weight_graph():
    """Outer: ``c = sin(h)``, ``h = h + inner(h)`` three times; inner: ``g = tanh(w * g + c)``
    twice. ``w`` is read in the inner body only (an invariant of both loops), ``c`` is an outer
    value captured by the inner loop, ``u`` scales h in the outer body."""
    b = GraphBuilder()
    w, u, h0 = placeholder(b, "w", [3]), placeholder(b, "u", [3]), placeholder(b, "h0", [3])

    def outer(b, h):
        c = add(b, "Sin", h)
        inner = counted_loop(b, 2, lambda b, g: [add(b, "Tanh", add(b, "AddV2", add(b, "Mul", w, g), c))], [h],
                             name="inner")  # fmt: skip
        return [add(b, "AddV2", add(b, "Mul", u, h), inner.outputs[1])]

    r = counted_loop(b, 3, outer, [h0], name="outer")
    loss = sum_all(b, add(b, "Square", r.outputs[1]), name="loss")
    return b, (w, u, h0), loss


def invariant_reference(w, u, h):
    for _ in range(3):
        c, g = np.sin(h), h
        for _ in range(2):
            g = np.tanh(w * g + c)
        h = u * h + g
    return np.sum(h**2)


FEEDS = {"w": RNG.uniform(-1, 1, 3), "u": RNG.uniform(0.5, 1, 3), "h0": RNG.uniform(-1, 1, 3)}


def test_loop_invariant_weight_in_the_inner_body_sums_over_both_loops():
    b, names, loss = invariant_weight_graph()
    feeds = {n: FEEDS[n] for n in names}
    got = check(b, loss, feeds, list(names), rtol=1e-6)
    # The reference loss in numpy: its central differences agree with the graph's gradient.
    eps = 1e-6
    for k, n in enumerate(names):
        fd = np.zeros(3)
        for j in range(3):
            d = np.eye(3)[j] * eps
            hi = invariant_reference(*(FEEDS[m] + d if m == n else FEEDS[m] for m in names))
            lo = invariant_reference(*(FEEDS[m] - d if m == n else FEEDS[m] for m in names))
            fd[j] = (hi - lo) / (2 * eps)
        np.testing.assert_allclose(got[k], fd, rtol=1e-6, atol=1e-9, err_msg=n)


def test_three_nested_loops():
    """``x ** (2 * 3 * 2)`` by three nested loops multiplying by x: d/dx = 12 x^11."""
    b = GraphBuilder()
    x = placeholder(b, "x", [3])

    def level(depth, b, p):
        if depth == 0:
            return [add(b, "Mul", p, x)]
        r = counted_loop(b, 2 if depth == 1 else 3, lambda b, q: level(depth - 1, b, q), [p], name=f"l{depth}")
        return [r.outputs[1]]

    r = counted_loop(b, 2, lambda b, p: level(2, b, p), [add(b, "OnesLike", x)], name="l3")
    loss = sum_all(b, r.outputs[1], name="loss")
    xv = np.array([1.1, -0.9, 0.7])
    (dx,) = check(b, loss, {x: xv}, [x], rtol=1e-6)
    np.testing.assert_allclose(dx, 12 * xv**11, rtol=1e-12)


def test_nested_loop_gradient_split_across_two_devices_equals_one_device():
    """The inner body's Tanh (and with it its gradient) pinned to cpu:1, the rest on cpu:0:
    values cross devices in both inner loops every iteration; the gradients equal the one-device
    run's exactly."""
    b, names, loss = invariant_weight_graph()
    grads = gradients(b, [loss], list(names))
    verify(b.graph_def)
    for n in b.graph_def.nodes:
        n.device = "/cpu:1" if n.op == "Tanh" or n.name.startswith("gradients/outer/body/inner/body/Tanh") else ""
    feeds = {n: FEEDS[n] for n in names}
    with Session(b.graph_def, SessionConfig(devices="cpu:2", soft_placement=True)) as s:
        two = s.run(grads, feeds=feeds, timeout_s=TIMEOUT)
        parts = s.plan_for(grads, feeds=list(feeds)).partitions
    assert len(parts) == 2 and any(n.op == "Tanh" for p in parts.values() for n in p.nodes if "CPU:1" in n.device)
    # The inner backward loop (inside the outer one) is split too: it has a control loop per device.
    assert any("inner_grad/_cloop_on_CPU_1" in n.name for p in parts.values() for n in p.nodes)
    for n in b.graph_def.nodes:
        n.device = ""
    with Session(b.graph_def, SessionConfig(devices="cpu:1")) as s:
        one = s.run(grads, feeds=feeds, timeout_s=TIMEOUT)
    for g1, g2 in zip(one, two, strict=True):
        np.testing.assert_array_equal(g2, g1)
    assert np.all(np.abs(two[0]) > 0)  # w got gradient from inside the inner loop


@pytest.mark.parametrize("parallel_iterations", [1, 10])
def test_parallel_iterations_do_not_reorder_the_stacks(parallel_iterations):
    """A GatherV2 at the outer counter inside the inner body (order-sensitive) with one or ten
    iterations under way at once."""
    b = GraphBuilder()
    seq, h0 = placeholder(b, "seq", [4, 3]), placeholder(b, "h0", [3])
    zero = b.const(np.int32(0))

    def outer(b, i, h):
        row = gather(b, seq, i)
        inner = counted_loop(b, add(b, "AddV2", i, b.const(np.int32(1))),
                             lambda b, g: [add(b, "Sin", add(b, "Mul", g, row))], [h], name="inner",
                             parallel_iterations=parallel_iterations)  # fmt: skip
        return [add(b, "AddV2", i, b.const(np.int32(1))), inner.outputs[1]]

    r = while_loop(b, lambda b, i, h: add(b, "Less", i, b.const(np.int32(4))), outer, [zero, h0],
                   name="outer", parallel_iterations=parallel_iterations)  # fmt: skip
    loss = sum_all(b, add(b, "Square", r.outputs[1]), name="loss")
    check(b, loss, {seq: RNG.uniform(0.5, 1.5, (4, 3)), h0: RNG.uniform(0.5, 1.5, 3)}, [seq, h0], rtol=1e-6)


@pytest.mark.parametrize("where", ["cond_in_inner_body", "inner_loop_in_a_branch"])
def test_conditionals_and_nested_loops(where):
    """Even outer iterations take ``h * w`` and odd ones ``tanh(h) - x``: decided inside the inner
    body, or by a cond in the outer body whose taken branch is the whole inner loop (so the inner
    loop, its count and its stacks exist only in even outer iterations)."""
    b = GraphBuilder()
    x, w = placeholder(b, "x", [3]), placeholder(b, "w", [3])

    def outer(b, i, h):
        even = add(b, "Equal", add(b, "FloorMod", i, b.const(np.int32(2))), b.const(np.int32(0)))
        odd_fn = lambda b, g: add(b, "Sub", add(b, "Tanh", g), x)  # noqa: E731
        if where == "cond_in_inner_body":
            body = lambda b, g: [cond(b, even, lambda b, g: add(b, "Mul", g, w), odd_fn, [g]).outputs[0]]  # noqa: E731
            h = counted_loop(b, 2, body, [h], name="inner").outputs[1]
        else:
            then = lambda b, g: counted_loop(b, 2, lambda b, g: [add(b, "Mul", g, w)], [g], name="inner").outputs[1]  # noqa: E731
            h = cond(b, even, then, odd_fn, [h]).outputs[0]
        return [add(b, "AddV2", i, b.const(np.int32(1))), h]

    r = while_loop(b, lambda b, i, h: add(b, "Less", i, b.const(np.int32(3))), outer, [b.const(np.int32(0)), x],
                   name="outer")  # fmt: skip
    loss = sum_all(b, add(b, "Square", r.outputs[1]), name="loss")
    dx, dw = check(b, loss, {x: np.array([0.3, -0.2, 0.5]), w: np.array([1.1, -0.9, 0.8])}, [x, w])
    assert np.all(dx != 0) and np.all(dw != 0)  # both branches carried gradient
