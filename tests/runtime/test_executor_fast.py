"""Adaptive inline scheduling and the straight-line path: measured costs decide inline vs pool,
and a straight-line step keeps every semantic of the dataflow loop (results, errors, tracing,
freeing, dead tensors, timeouts, aborts, concurrent steps)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from specflow.errors import Location, RuntimeFailure, ShapeError
from specflow.graph import dtypes
from specflow.graph.builder import GraphBuilder
from specflow.ops import registry
from specflow.ops.inference import unchanged_shape
from specflow.ops.registry import kernel, register_op
from specflow.runtime import executor_types, straight_line
from specflow.runtime.devices import local_devices
from specflow.runtime.executor import CallFrame, Executor
from specflow.runtime.rendezvous import DEAD, Rendezvous
from specflow.runtime.session import Session, SessionConfig
from specflow.runtime.step_stats import StepStats

pytestmark = pytest.mark.usefixtures("test_ops", "dead_op")

F32 = dtypes.float32


@pytest.fixture(scope="module")
def dead_op():
    """TestDeadOut: returns DEAD, as an untaken branch would (the straight line must propagate it)."""
    register_op("TestDeadOut", inputs=["x: T"], outputs=["y: T"], attrs=["T: type"], shape=unchanged_shape,
                doc="Always a dead tensor.")  # fmt: skip
    kernel("TestDeadOut")(lambda ctx, x: DEAD)
    yield
    registry._OPS.pop("TestDeadOut", None)
    registry._KERNELS.pop("TestDeadOut", None)


@pytest.fixture(scope="module")
def dev():
    (d,) = local_devices("cpu:1", threads=4)
    yield d
    d.shutdown()


@pytest.fixture(autouse=True)
def preemption_proof_threshold(monkeypatch):
    """Tests here tell "tiny kernel" (µs) from "big MatMul" (~14 ms) by measured time. With the
    production threshold (100 µs) one preempted run of a tiny kernel on a loaded CI machine
    could count as expensive; 3 ms keeps both sides far from the line. Tests that need every
    kernel expensive still set it to 0 themselves."""
    monkeypatch.setattr(executor_types, "INLINE_COST_NS", 3_000_000)


@pytest.fixture
def dataflow_only(monkeypatch):
    """Every measured kernel counts as expensive: steps after the first take the dataflow loop."""
    monkeypatch.setattr(executor_types, "INLINE_COST_NS", 0)


def retval(b: GraphBuilder, tensor: str, index: int = 0) -> None:
    b.add_op("_Retval", [tensor], {"index": index}, name=f"ret{index}")


def _diamonds(n: int = 10):
    """x -> n layers of (Neg | Square | Identity -> AddN) -> RealDiv by 3: fan-out and joins."""
    b = GraphBuilder()
    x = b.add_op("_Arg", [], {"T": F32, "index": 0}, name="x").name
    three = b.const(np.float32(3), name="three")
    prev = x
    for i in range(n):
        parts = [b.add_op(op, [prev], name=f"{op}{i}").name for op in ("Neg", "Square", "Identity")]
        prev = b.add_op("RealDiv", [b.add_op("AddN", parts, name=f"sum{i}").name, three], name=f"div{i}").name
    retval(b, prev)
    return b.graph_def


def _reference(x: np.ndarray, n: int = 10) -> np.ndarray:
    for _ in range(n):
        x = (-x + x * x + x) / np.float32(3)
    return x


def _step(ex: Executor, x: np.ndarray, **kw):
    frame = CallFrame([x], 1)
    h = ex.run(frame=frame, **kw)
    return h, frame.retvals[0]


def test_cheap_partition_runs_straight_and_matches_the_dataflow_loop(dev, monkeypatch):
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    fast = Executor(_diamonds(), dev)
    results = [_step(fast, x) for _ in range(3)]
    assert fast.straight_line  # every kernel measured far below INLINE_COST_NS
    assert set(fast.costs()) == set(fast.node_names)
    monkeypatch.setattr(executor_types, "INLINE_COST_NS", 0)
    slow = Executor(_diamonds(), dev)
    results += [_step(slow, x) for _ in range(3)]
    assert not slow.straight_line
    for h, value in results:
        np.testing.assert_allclose(value, _reference(x), rtol=1e-5)
        assert h.error is None and h.nodes_run == len(fast)
    # Values are dropped after their last consumer: a layer holds its input, three partial
    # results and the constant at most; nothing is held after the step.
    assert all(0 < h.peak_live <= 6 for h, _ in results)
    assert all(h.live == 0 and all(v is None for v in h.slots) for h, _ in results)


def test_an_expensive_kernel_leaves_the_straight_line_and_cheap_ones_stay_inline(dev):
    b = GraphBuilder()
    a = b.add_op("_Arg", [], {"T": F32, "index": 0}, name="a").name
    retval(b, b.add_op("Neg", [b.add_op("MatMul", [a, a], name="mm").name], name="neg").name)
    ex = Executor(b.graph_def, dev)
    small, big = np.eye(2, dtype=np.float32), np.eye(1000, dtype=np.float32)
    _step(ex, small)
    assert ex.straight_line
    for _ in range(8):  # a few steps: one slow run alone does not reclassify a node (capped)
        _, out = _step(ex, big)
        if not ex.straight_line:
            break
    assert not ex.straight_line
    np.testing.assert_array_equal(out, -big)
    costs = ex.costs()
    assert costs["mm"] * 1e9 >= executor_types.INLINE_COST_NS > costs["neg"] * 1e9
    nodes = {n.name: n for n in ex._nodes}
    assert not nodes["mm"].inexpensive and nodes["neg"].inexpensive
    for _ in range(30):  # small again: the average decays and the step goes back to the line
        _step(ex, small)
    assert ex.straight_line


@pytest.mark.parametrize("path", ["straight", "dataflow"])
def test_errors_name_node_op_device_and_location(dev, path, request):
    if path == "dataflow":
        request.getfixturevalue("dataflow_only")
    b = GraphBuilder()
    x = b.add_op("_Arg", [], {"T": F32, "index": 0}, name="x").name
    with b.location(Location("model.yaml", 4, 2)):
        bad = b.add_op("TestWrongDtype", [x], name="bad").name
    retval(b, b.add_op("Neg", [bad], name="after").name)
    ex = Executor(b.graph_def, dev)
    for _ in range(2):  # the second step takes the path under test
        with pytest.raises(RuntimeFailure) as e:
            _step(ex, np.ones(2, np.float32))
        err = e.value
        assert err.node == "bad" and err.location == Location("model.yaml", 4, 2)
        assert f"TestWrongDtype on {dev.name}: kernel output 0 is a numpy.ndarray of float64" in str(err)
    assert ex.straight_line is (path == "straight")


def test_straight_line_kernel_exception_stops_the_step_and_aborts_the_rendezvous(dev):
    b = GraphBuilder()
    ph = b.add_op("Placeholder", [], {"dtype": F32}, name="ph").name
    retval(b, b.add_op("Neg", [ph], name="neg").name)
    ex = Executor(b.graph_def, dev)
    assert ex.straight_line
    rv = Rendezvous()
    h = ex.run_async(rendezvous=rv, frame=CallFrame([], 1), caller_runs=True)
    assert h.done and isinstance(h.error, RuntimeFailure) and h.error.node == "ph"
    assert rv.error is h.error  # blocked receives elsewhere would fail at once
    assert h.nodes_run == 1  # neg and the _Retval never ran


def test_straight_line_traces_every_node(dev):
    ex = Executor(_diamonds(3), dev)
    _step(ex, np.ones(4, np.float32))
    assert ex.straight_line
    stats = StepStats()
    _step(ex, np.ones(4, np.float32), stats=stats)
    assert {s.node for s in stats.nodes} == set(ex.node_names)
    by = stats.by_node()
    assert by["sum0"].output_bytes == 16 and by["ret0"].output_bytes == 0
    assert all(s.end_ns >= s.start_ns and s.device == dev.name for s in stats.nodes)
    events = stats.to_chrome_trace()["traceEvents"]
    assert len([e for e in events if e["ph"] != "C"]) == len(ex) + 2  # + the device's live-bytes counter
    assert {e["name"] for e in events if e["ph"] == "C"} == {"live bytes"}


def test_dead_values_propagate_on_the_straight_line(dev):
    b = GraphBuilder()
    x = b.add_op("_Arg", [], {"T": F32, "index": 0}, name="x").name
    dead = b.add_op("TestDeadOut", [x], name="dead").name
    neg = b.add_op("Neg", [dead], name="neg").name
    retval(b, neg, 0)
    after = b.add_op("Identity", [x, f"^{neg}"], name="after").name  # control edge from a dead node
    retval(b, after, 1)
    retval(b, b.add_op("Identity", [x], name="alive").name, 2)
    ex = Executor(b.graph_def, dev)
    for _ in range(2):
        frame = CallFrame([np.ones(2, np.float32)], 3)
        h = ex.run(frame=frame)
        assert h.error is None
        assert not frame.has_retval(0) and not frame.has_retval(1)
        np.testing.assert_array_equal(frame.retvals[2], [1, 1])
        names = ex.node_names
        assert {names.index(n) for n in ("neg", "after", "ret0", "ret1")} <= h.dead
    assert ex.straight_line


def test_straight_line_with_a_timeout_runs_on_the_pool_and_stops_at_the_deadline(dev):
    b = GraphBuilder()
    prev = b.const(np.float32(1), name="c")
    for i in range(4):
        prev = b.add_op("TestSleep", [prev], {"seconds": 0.15}, name=f"s{i}").name
    retval(b, prev)
    ex = Executor(b.graph_def, dev)
    assert ex.straight_line  # not measured yet: the first step takes the line
    t0 = time.perf_counter()
    with pytest.raises(RuntimeFailure, match=r"step timed out after 0.1s"):
        ex.run(frame=CallFrame([], 1), timeout=0.1)
    assert time.perf_counter() - t0 < 0.3  # the caller did not wait for the kernels


def test_an_aborted_rendezvous_stops_a_straight_line_step(dev):
    b = GraphBuilder()
    prev = b.const(np.float32(1), name="c")
    for i in range(6):
        prev = b.add_op("TestSleep", [prev], {"seconds": 0.05}, name=f"s{i}").name
    retval(b, prev)
    ex = Executor(b.graph_def, dev)
    rv = Rendezvous()
    h = ex.run_async(rendezvous=rv, frame=CallFrame([], 1))  # on the pool: this thread aborts
    time.sleep(0.02)
    rv.abort(RuntimeFailure("another device failed"))
    assert h.wait(2)
    assert str(h.error) == "another device failed" and h.nodes_run < len(ex)


def test_concurrent_runs_of_one_signature_and_another_stay_correct():
    b = GraphBuilder()
    x = b.add_op("Placeholder", [], {"dtype": F32, "shape": [None, 4]}, name="x").name
    y = b.add_op("Square", [b.add_op("Neg", [x], name="neg").name], name="y").name
    b.add_op("Sum", [y, b.const(np.int32(1), name="axis")], name="total")
    errors: list[BaseException] = []
    with Session(b.graph_def, SessionConfig(devices="cpu:1")) as sess:

        def worker(seed: int, fetch: str):
            try:
                rng = np.random.default_rng(seed)
                for _ in range(150):
                    v = rng.standard_normal((seed % 5 + 1, 4)).astype(np.float32)
                    want = v * v if fetch == "y" else (v * v).sum(axis=1)
                    np.testing.assert_allclose(sess.run(fetch, {"x": v}), want, rtol=1e-5)
            except BaseException as e:  # reported below: a thread's assert would be lost
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(i, f)) for i, f in enumerate(["y", "y", "total"])]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert not errors, errors[0]
        assert all(ex.straight_line for plan in sess._plans.values() for ex in plan.executors)


def test_cached_calls_still_convert_and_check_feeds():
    b = GraphBuilder()
    x = b.add_op("Placeholder", [], {"dtype": F32, "shape": [None, 2]}, name="x").name
    b.add_op("Neg", [x], name="y")
    with Session(b.graph_def, SessionConfig(devices="cpu:1")) as sess:
        ok = np.ones((3, 2), np.float32)
        for _ in range(2):
            np.testing.assert_array_equal(sess.run("y", {"x": ok}), -ok)
            assert sess.run("y", {"x": [[1, 2]]}).dtype == np.float32  # converted (ints to float)
            with pytest.raises(ShapeError, match=r"cannot feed shape \[2, 3\] to 'x:0'"):
                sess.run("y", {"x": np.ones((2, 3), np.float32)})
            with pytest.raises(ShapeError, match=r"cannot feed shape \[2\] to 'x:0'"):  # the rank
                sess.run("y", {"x": np.ones(2, np.float32)})
            with pytest.raises(ShapeError, match="without losing information"):
                sess.run("y", {"x": np.ones((1, 2), np.float64) + 1j})
        assert len(sess._calls) == 1


def test_expensive_nodes_run_in_parallel_when_that_is_faster(dev):
    """Two 30 ms branches (sleeping, so they overlap): the dataflow loop takes ~30 ms a step,
    the straight line ~60 ms. Both are tried once; then the parallel one runs."""
    b = GraphBuilder()
    c = b.const(np.float32(1), name="c")
    left = b.add_op("TestSleep", [c], {"seconds": 0.03}, name="left").name
    right = b.add_op("TestSleep", [c], {"seconds": 0.03}, name="right").name
    retval(b, b.add_op("AddV2", [left, right], name="sum").name)
    ex = Executor(b.graph_def, dev)
    walls = []
    for _ in range(8):
        t0 = time.perf_counter()
        frame = CallFrame([], 1)
        ex.run(frame=frame)
        walls.append(time.perf_counter() - t0)
        assert frame.retvals[0] == 2.0
    assert not ex.straight_line
    line, flow = ex._mode_ns
    assert flow < line  # both measured: the line is ~60 ms, the dataflow loop ~30 ms
    # The last steps ran the branches in parallel (~30 ms, not ~60): the median, so one step
    # slowed by a busy machine does not decide it.
    assert sorted(walls[4:])[2] < 0.05, walls


def test_one_inter_op_thread_always_takes_the_straight_line():
    (one,) = local_devices("cpu:1", threads=1)
    try:
        ex = Executor(_diamonds(1), one)
        ex._note_mode(0, 9_000_000)  # even where the line measured slower
        ex._note_mode(1, 1_000_000)
        assert all(ex._pick_line() for _ in range(2 * straight_line.PROBE_EVERY))
        frame = CallFrame([np.float32(1)], 1)
        ex.run(frame=frame)
        assert frame.retvals[0] == np.float32((-1 + 1 + 1) / 3)  # one diamond: (-x + x*x + x) / 3
    finally:
        one.shutdown()


def test_the_faster_way_runs_and_the_slower_is_probed_now_and_then(dev):
    ex = Executor(_diamonds(1), dev)
    assert ex._pick_line() is False  # nothing measured: the dataflow loop first
    ex._note_mode(1, 2_000_000)
    assert ex._pick_line() is True  # then the line once
    ex._note_mode(0, 1_000_000)
    picks = [ex._pick_line() for _ in range(2 * straight_line.PROBE_EVERY)]
    assert picks.count(False) == 2  # the line is faster: the loop only as a probe
    ex._note_mode(0, 9_000_000)  # the line got slower (average now 5 ms): the loop wins
    picks = [ex._pick_line() for _ in range(2 * straight_line.PROBE_EVERY)]
    assert picks.count(True) == 2
