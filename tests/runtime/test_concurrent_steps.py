"""Concurrent steps on one session (whitepaper section 7): several threads calling ``run`` at once
all get their own step's results, and each variable update is atomic per op (TF's semantics: no
isolation between steps, so only per-op atomicity is promised).

Every test starts its threads together at a barrier and runs with a tiny GIL switch interval, so
threads interleave inside the executor's bookkeeping rather than one after another; the
assertions are exact (each thread checks its own results; counters end at exact totals)."""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

import specflow as sf
from specflow.graph.builder import GraphBuilder
from specflow.graph.control_flow import while_loop
from specflow.runtime.session import Session, SessionConfig
from specflow.runtime.step_stats import StepStats
from tests.runtime.test_loops_split import FEEDS, loop_vars_entered_on_cpu1, rnn_graph, rnn_reference

THREADS = 8


@pytest.fixture(autouse=True)
def interleave():
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


def in_threads(fn, n: int = 100, threads: int = THREADS) -> None:
    """``fn(thread, i)`` for i in range(n) on each of ``threads`` threads started together; the
    first exception of any thread is raised here."""
    errors: list[BaseException] = []
    barrier = threading.Barrier(threads)

    def go(t: int) -> None:
        try:
            barrier.wait(timeout=30)
            for i in range(n):
                fn(t, i)
        except BaseException as e:  # reported on the test's thread
            errors.append(e)

    pool = [threading.Thread(target=go, args=(t,), daemon=True) for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join(60)
    assert not any(th.is_alive() for th in pool), "a step hung"
    if errors:
        raise errors[0]


def counter_graph(increment_on: str) -> GraphBuilder:
    """A float32[3] variable v on CPU:0: ``inc`` adds ones computed on ``increment_on``; ``sgd``
    is a gradient-descent step of -1 (also +1); ``read`` reads it."""
    b = GraphBuilder()
    v = b.add_op("VarHandleOp", attrs={"dtype": "float32", "shape": [3], "shared_name": "v"}, name="v",
                 device="/cpu:0").name  # fmt: skip
    b.add_op("AssignVariableOp", [v, b.const(np.zeros(3, np.float32))], {"dtype": "float32"}, name="init")
    ones = b.add_op("Neg", [b.const(-np.ones(3, np.float32))], name="ones", device=increment_on).name
    b.add_op("AssignAddVariableOp", [v, ones], {"dtype": "float32"}, name="inc")
    b.add_op("ResourceApplyGradientDescent", [v, b.const(np.float32(1)), b.const(-np.ones(3, np.float32))],
             {"T": "float32"}, name="sgd")  # fmt: skip
    b.add_op("ReadVariableOp", [v], {"dtype": "float32"}, name="read")
    return b


@pytest.mark.parametrize(("devices", "increment_on"), [("cpu:1", "/cpu:0"), ("cpu:2", "/cpu:1")])
def test_8_threads_x_100_increments_end_at_exactly_800(devices, increment_on):
    """AssignAdd and an optimizer's apply op, alternating, from 8 threads: no update is lost."""
    with Session(counter_graph(increment_on).graph_def, SessionConfig(devices=devices)) as s:
        s.run([], targets=["init"])
        in_threads(lambda t, i: s.run([], targets=["inc" if (t + i) % 2 else "sgd"]))
        np.testing.assert_array_equal(s.run("read"), [800, 800, 800])


W1 = np.random.default_rng(3).normal(size=(8, 16)).astype(np.float32)
W2 = np.random.default_rng(4).normal(size=(16, 4)).astype(np.float32)


def mlp(split: bool) -> GraphBuilder:
    """relu(x W1) W2 and its row sums; the Relu on CPU:1 when ``split`` (two crossings)."""
    b = GraphBuilder()
    x = b.add_op("Placeholder", attrs={"dtype": "float32", "shape": [None, 8]}, name="x").name
    h = b.add_op("MatMul", [x, b.const(W1)], name="h", device="/cpu:0").name
    r = b.add_op("Relu", [h], name="r", device="/cpu:1" if split else "/cpu:0").name
    y = b.add_op("MatMul", [r, b.const(W2)], name="y", device="/cpu:0").name
    b.add_op("Sum", [y, b.const(np.int32(1))], name="s")
    return b


@pytest.mark.parametrize("devices", ["cpu:1", "cpu:2"])
def test_stateless_steps_on_many_threads_each_get_their_own_results(devices):
    """Each thread feeds its own values, batch sizes vary per thread (plans per fed shape, made
    concurrently); on one device the partition runs on the straight line, then its generated
    function (after straight_line.TIME_FIRST steps); on two, the rendezvous carries each step's
    values."""
    cfg = SessionConfig(devices=devices)
    with Session(mlp(split=devices == "cpu:2").graph_def, cfg) as s:

        def step(t: int, i: int) -> None:
            x = np.full((t % 3 + 1, 8), (t * 100 + i) / 400, np.float32)
            y, total = s.run(["y", "s"], {"x": x})
            want = np.maximum(x @ W1, 0) @ W2
            np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(total, want.sum(1), rtol=1e-4, atol=1e-4)

        in_threads(step)


def test_loops_split_across_devices_on_many_threads():
    """Frames and control loops per step, with and without a timeout and tracing."""
    b, r, _, ph = rnn_graph()
    loop_vars_entered_on_cpu1(b)
    with Session(b.graph_def, SessionConfig(devices="cpu:2", unroll_limit=0)) as s:

        def step(t: int, i: int) -> None:
            scale = 1 + (t * 10 + i) / 100
            feeds = {k: v / scale for k, v in FEEDS.items()}
            kw: dict = {"timeout_s": 30} if i % 2 else {}
            if i % 5 == 0:
                kw.update(options={"trace": True}, run_metadata=StepStats())
            got = s.run(r.outputs[1], {ph[k]: v for k, v in feeds.items()}, **kw)
            np.testing.assert_allclose(got, rnn_reference(**feeds), rtol=1e-12)

        in_threads(step, n=10)


def test_a_loop_on_one_device_on_many_threads():
    b = GraphBuilder()
    n = b.add_op("Placeholder", attrs={"dtype": "int32", "shape": []}, name="n").name
    r = while_loop(b, lambda b, i, acc: b.add_op("Less", [i, n]).name,
                   lambda b, i, acc: [b.add_op("AddV2", [i, b.const(np.int32(1))]).name, b.add_op("AddV2", [acc, i]).name],
                   [b.const(np.int32(0)), b.const(np.int32(0))], name="loop")  # fmt: skip
    with Session(b.graph_def, SessionConfig(unroll_limit=0)) as s:

        def step(t: int, i: int) -> None:
            k = (t * 7 + i) % 15
            assert s.run(r.outputs[1], {n: np.int32(k)}) == k * (k - 1) // 2

        in_threads(step, n=20)


def test_a_random_ops_generator_is_made_once_under_concurrent_first_steps():
    """The first steps of 8 threads at once draw from one generator: the 8 draws are those of 8
    sequential steps (in some order), none repeated."""

    def graph() -> GraphBuilder:
        b = GraphBuilder()
        b.add_op("RandomUniform", [b.const(np.array([2], np.int32))], {"dtype": "float32", "seed": 7}, name="u")
        return b

    with Session(graph().graph_def) as s:
        want = sorted(tuple(s.run("u")) for _ in range(THREADS))
    for _ in range(3):
        got: list = []
        with Session(graph().graph_def) as s:
            in_threads(lambda t, i, s=s, got=got: got.append(tuple(s.run("u"))), n=1)
        assert sorted(got) == want


def test_sf_function_called_from_many_threads_traces_once():
    """The first calls of 8 threads with one signature trace it once (no RetracingWarning, one
    variable), then all run concurrently."""

    class Scale(sf.Module):
        def __init__(self):
            super().__init__()
            self.w = None
            self.traces = 0

        @sf.function
        def __call__(self, x):
            self.traces += 1
            if self.w is None:
                self.w = sf.Variable(np.float32(2.0))
            return x * self.w

    m = Scale()

    def step(t: int, i: int) -> None:
        x = np.full((3,), t + i, np.float32)
        np.testing.assert_array_equal(m(x).numpy(), 2 * x)

    in_threads(step, n=20)
    assert m.traces == 1
