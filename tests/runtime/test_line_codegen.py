"""The generated straight line (runtime/line_codegen.py) and cost sampling on the line: once the
first TIME_FIRST steps have measured the kernels, untimed steps run the generated function, and
they keep every semantic of the generic loop (values, output checks, errors naming the node,
dead values, aborts, nodes run, freeing); traced and sampled steps take the timed loop."""

from __future__ import annotations

import numpy as np
import pytest

from specflow.errors import Location, RuntimeFailure
from specflow.graph import dtypes
from specflow.graph.builder import GraphBuilder
from specflow.ops import registry
from specflow.ops.inference import unchanged_shape
from specflow.ops.registry import kernel, register_op
from specflow.runtime import executor_types, line_codegen, straight_line
from specflow.runtime.devices import local_devices
from specflow.runtime.executor import CallFrame, Executor
from specflow.runtime.rendezvous import DEAD, Rendezvous
from specflow.runtime.session import Session, SessionConfig
from specflow.runtime.step_stats import StepStats

F32 = dtypes.float32
WARM = straight_line.TIME_FIRST  # steps that always take the timed loop
STEP_IDS: list[int] = []  # what TestLineProbe's context said, call by call
SAMPLED = straight_line.TIME_FIRST * straight_line.TIME_EVERY  # a sampled step after the warm-up


@pytest.fixture(scope="module", autouse=True)
def probe_op():
    """TestLineProbe: y = x + 1, except when x[0] asks for something else: -1 fails, -2 returns a
    dead value, -3 returns float64 (a wrong dtype), -4 a numpy scalar (converted to an array),
    -5 aborts the step's rendezvous (as another device failing meanwhile would). Every call
    records the step id its context shows in STEP_IDS."""
    register_op("TestLineProbe", inputs=["x: T"], outputs=["y: T"], attrs=["T: type"], shape=unchanged_shape,
                stateful=True, doc="Test op: behaviour chosen by x[0].")  # fmt: skip

    @kernel("TestLineProbe")
    def _probe(ctx, x):
        STEP_IDS.append(ctx.step_id)
        code = float(x.flat[0])
        if code == -1:
            raise ctx.fail("probe failed on request")
        if code == -2:
            return DEAD
        if code == -3:
            return x.astype(np.float64)
        if code == -4:
            return x.dtype.type(x.sum())
        if code == -5:
            ctx.extras["rendezvous"].abort(RuntimeFailure("another device failed"))
        return x + 1

    yield
    registry._OPS.pop("TestLineProbe", None)
    registry._KERNELS.pop("TestLineProbe", None)


@pytest.fixture(scope="module")
def dev():
    (d,) = local_devices("cpu:1", threads=2)
    yield d
    d.shutdown()


@pytest.fixture(autouse=True)
def tiny_kernels_stay_inline(monkeypatch):
    """As in test_executor_fast: one preempted run must not send a node to the dataflow loop."""
    monkeypatch.setattr(executor_types, "INLINE_COST_NS", 3_000_000)


def _graph():
    """x -> probe -> Unpack (two outputs, one unused) -> Neg, Square -> AddN -> ret0; also an
    unconsumed Square of x, and ret1 = probe's output (values live across nodes)."""
    b = GraphBuilder()
    x = b.add_op("_Arg", [], {"T": F32, "index": 0}, name="x").name
    with b.location(Location("model.yaml", 7, 3)):
        p = b.add_op("TestLineProbe", [x], name="probe").name
    b.add_op("Unpack", [p], {"num": 3, "axis": 0}, name="rows")
    parts = [b.add_op("Neg", ["rows:0"], name="neg").name, b.add_op("Square", ["rows:1"], name="sq").name]
    b.add_op("Square", [x], name="unused")
    b.add_op("_Retval", [b.add_op("AddN", parts, name="sum").name], {"index": 0}, name="ret0")
    b.add_op("_Retval", [p], {"index": 1}, name="ret1")
    return b.graph_def


def _want(x: np.ndarray):
    p = x + 1
    return -p[0] + p[1] * p[1], p


def _step(ex: Executor, x: np.ndarray, rv: Rendezvous | None = None, stats=None, step_id: int = 0):
    frame = CallFrame([x], 2)
    h = ex.run_async(frame=frame, rendezvous=rv, stats=stats, caller_runs=True, step_id=step_id)
    return h, frame


def _warm(ex: Executor, x: np.ndarray) -> None:
    for _ in range(WARM + 1):
        h, _ = _step(ex, x)
        assert h.error is None
    _untimed_next(ex)


def _untimed_next(ex: Executor) -> None:
    """Past the warm-up, and the next step is no sample: the generated function runs (also
    when this busy machine made the last step slow, which would time the next one)."""
    ex._line_steps = SAMPLED  # the next step is SAMPLED + 1: past the warm-up, no sample
    ex._time_next = False


def _generated_runs(ex: Executor) -> bool:
    return ex._line_make is not None and all(line.run is not None for line in ex._lines_free)


def test_generated_line_computes_what_the_generic_loop_does(dev):
    ex = Executor(_graph(), dev)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    _warm(ex, x)
    costs = ex.costs()
    rng = np.random.default_rng(0)
    for _ in range(5):
        v = rng.standard_normal((3, 4)).astype(np.float32) + 3
        h, frame = _step(ex, v)
        assert h.error is None and h.nodes_run == len(ex)
        want0, want1 = _want(v)
        np.testing.assert_array_equal(frame.retvals[0], want0)
        np.testing.assert_array_equal(frame.retvals[1], want1)
        _untimed_next(ex)
    assert _generated_runs(ex)
    assert ex.costs() == costs  # untimed steps leave the measured costs alone
    assert ex.straight_line


def test_the_generated_source_is_the_documented_one(dev):
    b = GraphBuilder()
    x = b.add_op("_Arg", [], {"T": F32, "index": 0}, name="x").name
    b.add_op("_Retval", [b.add_op("Neg", [x], name="neg").name], {"index": 0}, name="ret0")
    src = line_codegen.line_source(Executor(b.graph_def, dev)._nodes)
    doc = line_codegen.__doc__.split("writes::\n\n", 1)[1].split("\n\nEvery output", 1)[0]
    assert src.strip() == "\n".join(line[4:] for line in doc.splitlines()).strip()


@pytest.mark.parametrize(
    ("code", "message"),
    [
        (-1, "TestLineProbe on {dev}: probe failed on request"),
        (
            -3,
            "TestLineProbe on {dev}: kernel output 0 is a numpy.ndarray of float64, but the op declares float32",
        ),
    ],
)
def test_errors_on_the_generated_line_name_the_node_and_abort_the_step(dev, code, message):
    ex = Executor(_graph(), dev)
    _warm(ex, np.ones((3, 4), np.float32))
    rv = Rendezvous()
    h, frame = _step(ex, np.full((3, 4), code, np.float32), rv)
    assert isinstance(h.error, RuntimeFailure) and rv.error is h.error
    assert h.error.node == "probe" and h.error.location == Location("model.yaml", 7, 3)
    assert message.format(dev=dev.name) in str(h.error)
    assert h.nodes_run == ex.node_names.index("probe") + 1
    assert not frame.has_retval(0) and not frame.has_retval(1)
    h, frame = _step(ex, np.ones((3, 4), np.float32))  # the next step is fine again
    assert h.error is None and frame.retvals[1].tolist() == np.full((3, 4), 2).tolist()
    assert _generated_runs(ex)


def test_output_checks_convert_what_the_generic_loop_converts(dev):
    ex = Executor(_graph(), dev)
    _warm(ex, np.ones((3, 4), np.float32))
    # A numpy scalar from probe: converted to an array, as the generic loop does; Unpack then
    # fails on a scalar, naming its own node.
    h, _ = _step(ex, np.full((3, 4), -4, np.float32))
    assert h.error.node == "rows" and h.nodes_run == ex.node_names.index("rows") + 1


def test_a_dead_value_hands_the_rest_of_the_step_to_the_generic_loop(dev):
    ex = Executor(_graph(), dev)
    _warm(ex, np.ones((3, 4), np.float32))
    h, frame = _step(ex, np.full((3, 4), -2, np.float32))
    assert h.error is None and h.nodes_run == len(ex)
    assert not frame.has_retval(0) and not frame.has_retval(1)  # both read the dead value
    names = ex.node_names
    assert {names.index(n) for n in ("rows", "neg", "sq", "sum", "ret0", "ret1")} <= h.dead
    assert names.index("unused") not in h.dead
    h, frame = _step(ex, np.ones((3, 4), np.float32))
    assert h.error is None and not h.dead and frame.has_retval(0)


def test_an_abort_stops_the_generated_line_before_the_next_node(dev):
    ex = Executor(_graph(), dev)
    _warm(ex, np.ones((3, 4), np.float32))
    rv = Rendezvous()
    h, frame = _step(ex, np.full((3, 4), -5, np.float32), rv)
    assert str(h.error) == "another device failed" and h.error is rv.error
    assert h.nodes_run == ex.node_names.index("probe") + 1  # nothing ran after the abort
    rv = Rendezvous()
    rv.abort(RuntimeFailure("aborted before the step"))
    h, _ = _step(ex, np.ones((3, 4), np.float32), rv)
    assert str(h.error) == "aborted before the step" and h.nodes_run == 0
    assert _generated_runs(ex)


def test_traced_and_sampled_steps_time_every_kernel(dev):
    ex = Executor(_graph(), dev)
    x = np.ones((3, 4), np.float32)
    _warm(ex, x)
    stats = StepStats()
    h, _ = _step(ex, x, stats=stats)  # traced: the timed loop, every node recorded
    assert h.error is None and {s.node for s in stats.nodes} == set(ex.node_names)
    for item in ex._nodes:
        item.cost = 7  # marks: a timed step overwrites them
    ex._line_steps = 0
    for _ in range(straight_line.TIME_FIRST):
        _step(ex, x)
    assert all(n.cost != 7 for n in ex._nodes)
    for item in ex._nodes:
        item.cost = 7
    ex._line_steps = SAMPLED
    for _ in range(straight_line.TIME_EVERY - 1):  # up to the next sample: untimed
        ex._time_next = False
        _step(ex, x)
    assert all(n.cost == 7 for n in ex._nodes)
    ex._time_next = False
    _step(ex, x)  # the sampled step
    assert all(n.cost != 7 for n in ex._nodes)


def test_with_one_thread_only_the_first_and_traced_steps_are_timed():
    (one,) = local_devices("cpu:1", threads=1)
    try:
        ex = Executor(_graph(), one)
        x = np.ones((3, 4), np.float32)
        for _ in range(straight_line.TIME_FIRST):
            _step(ex, x)
        for item in ex._nodes:
            item.cost = 7  # marks: a timed step overwrites them
        for _ in range(2 * straight_line.TIME_EVERY):  # sampled steps and slow ones time nothing
            ex._time_next = True
            h, _ = _step(ex, x)
            assert h.error is None
        assert all(n.cost == 7 for n in ex._nodes) and _generated_runs(ex)
        stats = StepStats()
        _step(ex, x, stats=stats)  # a traced step still times every kernel
        assert {s.node for s in stats.nodes} == set(ex.node_names) and all(n.cost != 7 for n in ex._nodes)
    finally:
        one.shutdown()


def test_a_slow_untimed_step_times_the_next_one(dev, monkeypatch):
    monkeypatch.setattr(executor_types, "INLINE_COST_NS", 100_000)
    b = GraphBuilder()
    x = b.add_op("_Arg", [], {"T": F32, "index": 0}, name="x").name
    b.add_op("_Retval", [b.add_op("TestLineProbe", [x], name="probe").name], {"index": 0}, name="ret0")
    ex = Executor(b.graph_def, dev)
    small, big = np.ones(4, np.float32), np.ones(4_000_000, np.float32)
    _warm(ex, small)
    for _ in range(4):
        _untimed_next(ex)
        ex.run(frame=CallFrame([small], 1))
    _untimed_next(ex)
    ex.run(frame=CallFrame([big], 1))  # milliseconds where microseconds were usual
    before = ex.costs()["probe"]
    assert ex._time_next and before < 50e-6  # untimed: not measured
    ex._line_steps = SAMPLED
    ex.run(frame=CallFrame([big], 1))  # timed: the capped average moves toward the big input
    assert not ex._time_next and ex.costs()["probe"] > before + 10e-6


def test_session_steps_with_variables_match_numpy():
    """Resource handles (VarHandleOp) through the generated line's checks; state persists."""
    b = GraphBuilder()
    x = b.add_op("Placeholder", [], {"dtype": F32, "shape": [2]}, name="x").name
    v = b.add_op("VarHandleOp", [], {"dtype": F32, "shape": [2], "shared_name": "acc"}, name="acc").name
    b.add_op(
        "AssignVariableOp", [v, b.const(np.zeros(2, np.float32), name="zeros")], {"dtype": F32}, name="init"
    )
    b.add_op("AssignAddVariableOp", [v, x], {"dtype": F32}, name="add")
    b.add_op("ReadVariableOp", [v, "^add"], {"dtype": F32}, name="read")
    with Session(b.graph_def, SessionConfig(devices="cpu:1")) as sess:
        sess.run([], targets=["init"])
        total = np.zeros(2, np.float32)
        for i in range(3 * straight_line.TIME_EVERY):
            step = np.array([i, -i], np.float32)
            total += step
            np.testing.assert_array_equal(sess.run("read", {"x": step}), total)
        (ex,) = next(p for p in sess._plans.values() if "add" in p.single.node_names).executors
        assert _generated_runs(ex)


def test_consts_are_computed_once_and_noops_skipped(dev, monkeypatch):
    """A Const's kernel runs once when the line is generated (its value is reused, as kernels
    never mutate inputs); a NoOp is only counted. Values and nodes run are unchanged."""
    calls = {"Const": 0, "NoOp": 0}
    for op in calls:
        for k in registry.kernels_for(op):  # one per device type

            def counting(ctx, _fn=k.fn, _op=op):
                calls[_op] += 1
                return _fn(ctx)

            monkeypatch.setattr(k, "fn", counting)
    b = GraphBuilder()
    x = b.add_op("_Arg", [], {"T": F32, "index": 0}, name="x").name
    c = b.add_op("Const", [], {"dtype": F32, "value": np.full((2,), 3, np.float32)}, name="c").name
    done = b.add_op("NoOp", [], name="done").name
    b.add_op("_Retval", [b.add_op("Mul", [x, c], name="y", control_inputs=[done]).name], {"index": 0}, name="ret0")
    ex = Executor(b.graph_def, dev)
    x = np.array([1, 2], np.float32)
    _warm(ex, x)
    before = dict(calls)
    for i in range(5):
        h, frame = _step(ex, x + i)
        assert h.error is None and h.nodes_run == len(ex)
        np.testing.assert_array_equal(frame.retvals[0], (x + i) * 3)
        _untimed_next(ex)
    assert _generated_runs(ex)
    assert calls["NoOp"] == before["NoOp"]
    assert calls["Const"] - before["Const"] <= 1  # once, when the line was generated
    assert "computed once" in line_codegen.line_source(ex._nodes)


def test_kernels_see_their_steps_id_on_every_path(dev):
    # The step id lives in the step's shared extras (no store per node per step): the timed
    # loop, the generated function and a traced step each show a kernel its own step's id.
    ex = Executor(_graph(), dev)
    x = np.ones((3, 4), np.float32)
    STEP_IDS.clear()
    for i in range(WARM + 1):
        assert _step(ex, x, step_id=100 + i)[0].error is None
    _untimed_next(ex)
    assert _step(ex, x, step_id=7)[0].error is None
    assert _generated_runs(ex)
    assert _step(ex, x, stats=StepStats(), step_id=8)[0].error is None
    assert STEP_IDS == [100 + i for i in range(WARM + 1)] + [7, 8]
