"""Loops split across two devices (issue 6): values that exist only in a frame's iteration 0
(a loop var's Enter) sent across devices, the deadlock watch that fails a stuck step instead of
letting it hang, the RNN model's loss and training step on cpu:2 against cpu:1, and a loop's
gradient (the backward loop with its stacks) split across devices.

Every step runs under a deadline (``timeout_s``, or a watchdog thread where the step must run on
the caller's thread), so a regression fails instead of hanging the suite."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest

from specflow.errors import RuntimeFailure
from specflow.graph import dtypes
from specflow.graph.builder import GraphBuilder
from specflow.graph.control_flow import while_loop
from specflow.ops import registry
from specflow.ops.inference import unchanged_shape
from specflow.ops.registry import kernel, register_op
from specflow.runtime import frame_info
from specflow.runtime.frame_info import ControlFlowInfo
from specflow.runtime.session import Session, SessionConfig
from specflow.train.gradients import gradients

F64, I32 = dtypes.float64, dtypes.int32
ONE_DEVICE = SessionConfig(devices="cpu:1", soft_placement=True, unroll_limit=0)  # the same pinned graph, all on cpu:0
TIMEOUT = 20.0  # each step here takes milliseconds
CPU0, CPU1 = "/job:localhost/replica:0/task:0/device:CPU:0", "/job:localhost/replica:0/task:0/device:CPU:1"
RNG = np.random.default_rng(6)
T, BATCH, IN, HID = 6, 3, 2, 4


def add(b, op, *inputs, **attrs) -> str:
    return b.add_op(op, list(inputs), attrs).name


def placeholder(b, name, shape, dtype=F64) -> str:
    return b.add_op("Placeholder", attrs={"dtype": dtype, "shape": shape}, name=name).name


def rnn_graph():
    """``h_t = tanh(x_t W + h_{t-1} U)`` over T steps by control_flow.while_loop (x_t read with
    GatherV2 at the loop counter), ``loss = sum(h_T ** 2)``."""
    b = GraphBuilder()
    seq, w, u = (
        placeholder(b, "seq", [T, BATCH, IN]),
        placeholder(b, "w", [IN, HID]),
        placeholder(b, "u", [HID, HID]),
    )
    zero = b.const(np.int32(0), name="zero")

    def body(b, t, h):
        x_t = add(b, "GatherV2", seq, t, zero)
        h = add(b, "Tanh", add(b, "AddV2", add(b, "MatMul", x_t, w), add(b, "MatMul", h, u)))
        return [add(b, "AddV2", t, b.const(np.int32(1))), h]

    h0 = b.const(np.zeros((BATCH, HID)), F64, name="h0")
    r = while_loop(b, lambda b, t, h: add(b, "Less", t, b.const(np.int32(T))), body, [zero, h0],
                   name="rnn", var_names=["t", "h"])  # fmt: skip
    loss = add(b, "Sum", add(b, "Square", r.outputs[1]), b.const(np.arange(2, dtype=np.int32)))
    return b, r, loss, {"seq": seq, "w": w, "u": u}


def rnn_reference(seq, w, u) -> np.ndarray:
    h = np.zeros((BATCH, HID))
    for t in range(T):
        h = np.tanh(seq[t] @ w + h @ u)
    return h


FEEDS = {"seq": RNG.uniform(-1, 1, (T, BATCH, IN)), "w": RNG.uniform(-1, 1, (IN, HID)),
         "u": RNG.uniform(-0.5, 0.5, (HID, HID))}  # fmt: skip


def split(b: GraphBuilder, on_cpu1) -> None:
    """Pin every node: those ``on_cpu1(node)`` picks to cpu:1, the rest to cpu:0."""
    for n in b.graph_def.nodes:
        n.device = "/cpu:1" if on_cpu1(n) else "/cpu:0"


def loop_vars_entered_on_cpu1(b) -> None:
    """The issue's placement: a loop var's (non-constant) Enter on another device than its Merge,
    so the var's initial value crosses devices inside the frame; the MatMuls on cpu:1 too, so
    values cross every iteration both ways."""
    split(b, lambda n: (n.op == "Enter" and not n.attrs.get("is_constant")) or n.op == "MatMul")


def with_watchdog(fn, seconds: float = TIMEOUT):
    """Run ``fn()`` on a thread; fail the test if it does not return within ``seconds`` (for steps
    that must run without ``timeout_s``: the Session's caller-runs path)."""
    box: list = []

    def go():
        try:
            box.append((True, fn()))
        except BaseException as e:  # reported on the test's thread
            box.append((False, e))

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(seconds)
    if not box:
        pytest.fail(f"step did not finish within {seconds}s (hung)")
    ok, value = box[0]
    if not ok:
        raise value
    return value


# --- the root cause, minimal -------------------------------------------------------------------


def test_first_only_marks_what_exists_only_in_iteration_0():
    """A non-constant Enter's value reaches iteration 0 only; the Merge it feeds also has the
    back edge, so it (and the body) runs every iteration; a constant Enter reaches every one."""
    b, r, _, _ = rnn_graph()
    info = ControlFlowInfo(b.graph_def)
    assert all(info.first_only(e) for e in r.enters)
    assert not any(info.first_only(n) for n in [*r.merges, *r.identities, r.loop_cond, *r.next_iterations])
    assert r.captures and not any(info.first_only(c) for c in r.captures.values())
    assert not any(info.first_only(x) for x in r.exits)  # the root frame has one iteration
    # Computed from a first-only value alone: first-only too.
    b.add_op("Identity", [r.enters[0]], name="from_enter")
    assert ControlFlowInfo(b.graph_def).first_only("from_enter")


def test_rnn_loop_with_its_enters_on_another_device():
    """The issue's hang, minimal: the loop vars' Enters on cpu:1, their Merges on cpu:0. The
    _Recv of an Enter's value waits on cpu:0's control-loop Enter (iteration 0 only); the
    per-iteration _Recvs on its Merge. Result equal to numpy and to the one-device run."""
    b, r, loss, ph = rnn_graph()
    loop_vars_entered_on_cpu1(b)
    feeds = {ph[k]: v for k, v in FEEDS.items()}
    fetches = [r.outputs[1], loss]
    with Session(b.graph_def, ONE_DEVICE) as s:
        one = s.run(fetches, feeds=feeds, timeout_s=TIMEOUT)
    with Session(b.graph_def, SessionConfig(devices="cpu:2", unroll_limit=0)) as s:
        two = s.run(fetches, feeds=feeds, timeout_s=TIMEOUT)
        again = with_watchdog(lambda: s.run(fetches, feeds=feeds))  # the caller-runs path
        cpu0 = {n.name: n for n in s.plan_for(fetches, feeds=list(feeds)).partitions[CPU0].nodes}
    want = rnn_reference(**FEEDS)
    np.testing.assert_allclose(two[0], want, rtol=1e-12)
    np.testing.assert_allclose(two[1], np.sum(want**2), rtol=1e-12)
    for got in (two, again):
        np.testing.assert_array_equal(got[0], one[0])
    recv_t = cpu0["rnn/t/Enter/_recv_0_on_CPU_0"]
    assert recv_t.op == "_Recv" and recv_t.inputs == ["^rnn/_cloop_on_CPU_0/Enter"]
    per_iteration = [n for n in cpu0.values() if n.op == "_Recv" and "MatMul" in n.name]
    assert per_iteration and all(n.inputs == ["^rnn/_cloop_on_CPU_0/Merge"] for n in per_iteration)


def test_a_deadlocked_step_fails_naming_the_stuck_receives(monkeypatch):
    """The deadlock watch: with the old partitioning (every _Recv in a frame gated per
    iteration) cpu:0 waits in iterations 1.. for an Enter's value cpu:1 sent once. Both devices
    go idle; the step fails at once, naming the _Recv, the frame and the iterations."""
    monkeypatch.setattr(frame_info.ControlFlowInfo, "first_only", lambda self, name: False)
    b, r, _, ph = rnn_graph()
    loop_vars_entered_on_cpu1(b)
    feeds = {ph[k]: v for k, v in FEEDS.items()}
    with Session(b.graph_def, SessionConfig(devices="cpu:2", unroll_limit=0)) as s:
        for run in (lambda: s.run(r.outputs[1], feeds=feeds, timeout_s=TIMEOUT),
                    lambda: with_watchdog(lambda: s.run(r.outputs[1], feeds=feeds))):  # fmt: skip
            t0 = time.monotonic()
            with pytest.raises(RuntimeFailure, match="step deadlocked: every device is idle") as e:
                run()
            assert time.monotonic() - t0 < TIMEOUT / 2  # detected, not timed out
            msg = str(e.value)
            assert f"'rnn/h/Enter/_recv_0_on_CPU_0' on {CPU0} in loop frame 'rnn' iterations 1-{T}" in msg
            assert f"(waits for rnn/h/Enter:0 from {CPU1})" in msg
            assert e.value.node == "rnn/h/Enter/_recv_0_on_CPU_0"


def test_nested_loops_with_their_enters_on_another_device():
    """``total = sum over i < 4 of (sum over j < i of i * j)``: both frames' loop vars entered on
    cpu:1, the rest on cpu:0; the inner frame's first-only values are received per inner frame
    instance (one per outer iteration), keyed by the inner frame's id."""
    b = GraphBuilder()
    zero = b.const(np.int32(0), name="zero")

    def outer_body(b, i, total):
        def inner_body(b, j, acc):
            return [add(b, "AddV2", j, b.const(np.int32(1))), add(b, "AddV2", acc, add(b, "Mul", i, j))]

        inner = while_loop(b, lambda b, j, acc: add(b, "Less", j, i), inner_body, [b.const(np.int32(0)), total],
                           name="inner", var_names=["j", "acc"])  # fmt: skip
        return [add(b, "AddV2", i, b.const(np.int32(1))), inner.outputs[1]]

    r = while_loop(b, lambda b, i, t: add(b, "Less", i, b.const(np.int32(4))), outer_body, [zero, zero],
                   name="outer", var_names=["i", "total"])  # fmt: skip
    split(b, lambda n: n.op == "Enter" and not n.attrs.get("is_constant"))
    want = sum(i * j for i in range(4) for j in range(i))
    with Session(b.graph_def, SessionConfig(devices="cpu:2", unroll_limit=0)) as s:
        assert int(s.run(r.outputs[1], timeout_s=TIMEOUT)) == want == 11
        parts = s.plan_for(r.outputs[1]).partitions
    recvs = [n for n in parts[CPU0].nodes if n.op == "_Recv" and "/Enter/_recv" in n.name]
    assert {n.name.split("/Enter/")[0] for n in recvs} >= {"outer/i", "outer/body/inner/j"}
    assert all(n.inputs[0].endswith("_cloop_on_CPU_0/Enter") for n in recvs)


@pytest.fixture(scope="module")
def slow_op():
    """TestSleep: sleeps ``ms`` milliseconds (releasing the GIL), then forwards x."""
    register_op("TestSleep", inputs=["x: T"], outputs=["y: T"], attrs=["T: type", "ms: int"], stateful=True,
                shape=unchanged_shape, doc="Sleeps ms milliseconds, then forwards x.")  # fmt: skip
    kernel("TestSleep")(lambda ctx, x: (time.sleep(ctx.attrs["ms"] / 1e3), x)[1])
    yield
    registry._OPS.pop("TestSleep", None)
    registry._KERNELS.pop("TestSleep", None)


def test_a_receive_waiting_on_a_busy_device_is_no_deadlock(slow_op):
    """cpu:0 has nothing to do but wait for cpu:1, which sleeps 100 ms inside the loop body
    every iteration before it sends: idle on one side only is not a deadlock."""
    b = GraphBuilder()
    zero = b.const(np.int32(0), name="zero")

    def body(b, t):
        return [
            b.add_op("TestSleep", [add(b, "AddV2", t, b.const(np.int32(1)))], {"ms": 100}, name="slow").name
        ]

    r = while_loop(
        b, lambda b, t: add(b, "Less", t, b.const(np.int32(3))), body, [zero], name="w", var_names=["t"]
    )
    split(b, lambda n: n.name.startswith("w/body/slow") or n.op == "Enter")
    with Session(b.graph_def, SessionConfig(devices="cpu:2", unroll_limit=0)) as s:
        assert int(with_watchdog(lambda: s.run(r.outputs[0]))) == 3
        assert int(s.run(r.outputs[0], timeout_s=TIMEOUT)) == 3


# --- the loop's gradient split across devices ---------------------------------------------------


def test_loop_gradient_split_across_two_devices():
    """The backward loop (stacks of the forward values, popped in reverse) with its loop vars
    entered on cpu:1 and the MatMuls of both loops there: gradients equal the one-device run's
    and central finite differences."""
    b, _, loss, ph = rnn_graph()
    xs = [ph["seq"], ph["w"], ph["u"]]
    grads = gradients(b, [loss], xs)
    loop_vars_entered_on_cpu1(b)
    feeds = {ph[k]: v for k, v in FEEDS.items()}
    with Session(b.graph_def, ONE_DEVICE) as s:
        one = s.run(grads, feeds=feeds, timeout_s=TIMEOUT)
    with Session(b.graph_def, SessionConfig(devices="cpu:2", unroll_limit=0)) as s:
        two = s.run(grads, feeds=feeds, timeout_s=TIMEOUT)
        parts = s.plan_for(grads, feeds=list(feeds)).partitions
        assert with_watchdog(lambda: s.run(grads, feeds=feeds))[1] == pytest.approx(two[1], abs=0)
    cpu1_ops = {n.op for n in parts[CPU1].nodes}
    assert {"Enter", "MatMul", "_Recv", "_Send"} <= cpu1_ops
    assert any(
        "_grad/_cloop_on_CPU_" in n.name for p in parts.values() for n in p.nodes
    )  # backward loop split
    for g1, g2 in zip(one, two, strict=True):
        np.testing.assert_array_equal(g2, g1)
    eps = 1e-6
    w = FEEDS["w"]
    fd = np.zeros_like(w)
    for j in range(w.size):
        d = np.zeros(w.size)
        d[j] = eps
        hi, lo = (
            np.sum(rnn_reference(FEEDS["seq"], w + s * d.reshape(w.shape), FEEDS["u"]) ** 2) for s in (1, -1)
        )
        fd.flat[j] = (hi - lo) / (2 * eps)
    np.testing.assert_allclose(two[1], fd, rtol=1e-6, atol=1e-9)


# --- the real model --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def rnn_model():
    from specflow.schema.loader import load_spec
    from specflow.train.evaluate import load_split
    from specflow.train.graph import build_training_graph

    spec = load_spec(Path(__file__).resolve().parents[2] / "models" / "rnn_sequence_sum.yaml")
    arrays, _ = load_split(spec, spec.train)
    tg = build_training_graph(spec, spec.train, None)
    n = spec.train.data.batch_size
    return tg, {inp: arrays[f][:n] for inp, f in spec.train.data.feeds.items()}


@pytest.mark.parametrize("optimize", [False, True])
def test_rnn_model_loss_and_training_steps_on_two_devices_equal_one_device(rnn_model, optimize):
    """models/rnn_sequence_sum.yaml (the issue's hang): its loss, then three training steps,
    on cpu:2 equal cpu:1's, with the loop split across the two devices."""
    tg, feeds = rnn_model

    def losses(devices):
        with Session(tg.graph_def, SessionConfig(devices=devices, graph_seed=0, optimize=optimize, unroll_limit=0)) as s:
            s.run([], targets=[tg.init_op], timeout_s=TIMEOUT)
            out = [s.run(tg.loss, feeds, timeout_s=TIMEOUT)]
            out += [with_watchdog(lambda: s.run(tg.loss, feeds, targets=[tg.train_op])) for _ in range(3)]
            parts = s.plan_for(tg.loss, feeds=list(feeds), targets=[tg.train_op]).partitions
            return [float(x) for x in out], parts

    one, _ = losses("cpu:1")
    two, parts = losses("cpu:2")
    assert len(parts) == 2 and any("_cloop_on_" in n.name for p in parts.values() for n in p.nodes)
    assert two == pytest.approx(one, rel=1e-6)
    assert one[0] == one[1] and one[3] < one[1]  # the first step reports the loss before its update
