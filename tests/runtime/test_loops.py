"""While loops on the executor: frames and iterations, loop invariants, parallel iterations,
nested loops, conditionals inside loops, loops split across devices, dead tensors, errors.

Loops are built by hand the way TF's while_loop builds them (``while_loop`` below); every result
is checked against the same computation in plain Python."""

from __future__ import annotations

import math
import time
from collections import Counter

import numpy as np
import pytest

from specflow.errors import GraphError, Location, RuntimeFailure
from specflow.graph import dtypes
from specflow.graph.builder import GraphBuilder
from specflow.ops import registry
from specflow.ops.inference import unchanged_shape
from specflow.ops.registry import kernel, register_op
from specflow.runtime.session import Session, SessionConfig

I64, F64 = dtypes.int64, dtypes.float64
TIMEOUT = 20.0  # every step here finishes in well under a second; a hung loop fails instead
LOG: list[tuple[str, int]] = []  # what TestLog saw, in the order its kernels ran


@pytest.fixture(scope="module", autouse=True)
def fail_at_op():
    """TestFailAt: forwards x, and fails when x equals attr ``at`` (an error in iteration ``at``)."""
    register_op("TestFailAt", inputs=["x: T"], outputs=["y: T"], attrs=["T: type", "at: int"],
                stateful=True, shape=unchanged_shape, doc="Fails when x == at.")  # fmt: skip

    @kernel("TestFailAt")
    def _fail_at(ctx, x):
        if int(ctx.host(x)) == ctx.attrs["at"]:
            raise ctx.fail(f"reached {ctx.attrs['at']}")
        return x

    register_op("TestSlowIdentity", inputs=["x: T"], outputs=["y: T"], attrs=["T: type"], stateful=True,
                shape=unchanged_shape, doc="Sleeps 50 ms (releasing the GIL), then forwards x.")  # fmt: skip
    kernel("TestSlowIdentity")(lambda ctx, x: (time.sleep(0.05), x)[1])
    register_op("TestLog", inputs=["x: T"], outputs=["y: T"], attrs=["T: type", "tag: string"], stateful=True,
                shape=unchanged_shape, doc="Appends (tag, x) to LOG, then forwards x.")  # fmt: skip

    @kernel("TestLog")
    def _log(ctx, x):
        LOG.append((ctx.attrs["tag"], int(ctx.host(x))))
        return x

    yield
    for name in ("TestFailAt", "TestSlowIdentity", "TestLog"):
        registry._OPS.pop(name, None)
        registry._KERNELS.pop(name, None)


class Loop:
    """The frame being built: ``invariant(x)`` brings an outside value in (a constant Enter)."""

    def __init__(self, b: GraphBuilder, frame: str, parallel_iterations: int):
        self.b, self.frame, self.parallel_iterations = b, frame, parallel_iterations
        self._invariants: dict[str, str] = {}

    def invariant(self, tensor: str) -> str:
        if tensor not in self._invariants:
            attrs = {
                "frame_name": self.frame,
                "is_constant": True,
                "parallel_iterations": self.parallel_iterations,
            }
            name = f"{self.frame}/invariant_{len(self._invariants)}"
            self._invariants[tensor] = self.b.add_op(
                "Enter", [tensor], attrs, name=name, exact_name=True
            ).name
        return self._invariants[tensor]

    def const(self, value, dtype=I64) -> str:
        return self.invariant(self.b.const(value, dtype))


def while_loop(b: GraphBuilder, cond, body, loop_vars: list[str], name: str = "while",
               parallel_iterations: int = 10) -> list[str]:  # fmt: skip
    """TF's while_loop: Enter -> Merge -> Switch on LoopCond -> Identity -> ``body`` ->
    NextIteration (the back edge into the Merge), and Exit on the Switch's false side.
    ``cond(loop, vars)`` returns a bool tensor, ``body(loop, vars)`` the new vars; values from
    outside the loop come in through ``loop.invariant``. Returns the Exit tensors."""
    frame = b.scoped(name)
    loop = Loop(b, frame, parallel_iterations)
    with b.name_scope(name):
        attrs = {"frame_name": frame, "parallel_iterations": parallel_iterations}
        enters = [b.add_op("Enter", [v], attrs, name=f"Enter_{i}").name for i, v in enumerate(loop_vars)]
        merges = [b.add_op("Merge", [e, e], name=f"Merge_{i}") for i, e in enumerate(enters)]
        pred = b.add_op("LoopCond", [cond(loop, [m.name for m in merges])], name="LoopCond").name
        switches = [b.add_op("Switch", [m.name, pred], name=f"Switch_{i}").name for i, m in enumerate(merges)]
        ids = [b.add_op("Identity", [f"{s}:1"], name=f"Identity_{i}").name for i, s in enumerate(switches)]
        outs = body(loop, ids)
        assert len(outs) == len(loop_vars)
        for i, (m, o) in enumerate(zip(merges, outs, strict=True)):
            b.add_back_edge(m, 1, b.add_op("NextIteration", [o], name=f"NextIteration_{i}").name)
        return [b.add_op("Exit", [s], name=f"Exit_{i}").name for i, s in enumerate(switches)]


@pytest.fixture(autouse=True, params=[False, True], ids=["frames", "compiled"])
def compiled(request):
    """Every test twice: loops on frames, and top-level simple loops compiled (loop_plan.py)."""
    global COMPILED
    COMPILED = request.param
    yield request.param
    COMPILED = False


COMPILED = False


def config(devices: str) -> SessionConfig:
    return SessionConfig(devices=devices, unroll_limit=0, compile_loops=COMPILED)


def run(b: GraphBuilder, fetches, feeds=None, devices: str = "cpu:1"):
    with Session(b.graph_def, config(devices)) as s:
        return s.run(fetches, feeds=feeds, timeout_s=TIMEOUT)


# --- the loops ---------------------------------------------------------------------------------


def factorial(b: GraphBuilder, n: int = 10, parallel_iterations: int = 10, mul_device: str = "") -> list[str]:
    """``i, acc = 1, 1; while i <= n: acc *= i; i += 1`` in int64."""

    def body(loop, v):
        with b.device(mul_device):
            acc = b.add_op("Mul", [v[1], v[0]], name="mul").name
        return [b.add_op("AddV2", [v[0], loop.const(1)], name="next_i").name, acc]

    one = b.const(1, I64, name="one")
    cond = lambda loop, v: b.add_op("LessEqual", [v[0], loop.const(n)], name="le").name  # noqa: E731
    return while_loop(b, cond, body, [one, one], "fact", parallel_iterations)


def fibonacci(b: GraphBuilder, n: int = 30, parallel_iterations: int = 10) -> list[str]:
    """``k, a, c = 0, 0, 1; while k < n: k, a, c = k + 1, c, a + c``: a = fib(n)."""

    def body(loop, v):
        k, a, c = v
        return [b.add_op("AddV2", [k, loop.const(1)]).name, c, b.add_op("AddV2", [a, c]).name]

    zero, one = b.const(0, I64, name="zero"), b.const(1, I64, name="one")
    cond = lambda loop, v: b.add_op("Less", [v[0], loop.const(n)]).name  # noqa: E731
    return while_loop(b, cond, body, [zero, zero, one], "fib", parallel_iterations)


def fib(n: int) -> int:
    a, c = 0, 1
    for _ in range(n):
        a, c = c, a + c
    return a


@pytest.mark.parametrize("parallel_iterations", [1, 10])
def test_factorial_and_fibonacci(parallel_iterations):
    b = GraphBuilder()
    fact = factorial(b, 10, parallel_iterations)
    fibs = fibonacci(b, 30, parallel_iterations)
    i, acc, k, a, c = run(b, [*fact, *fibs])
    assert acc.dtype == np.int64 and int(acc) == math.factorial(10) == 3628800
    assert int(i) == 11 and int(k) == 30
    assert int(a) == fib(30) == 832040 and int(c) == fib(31)


@pytest.mark.parametrize("parallel_iterations", [1, 10])
def test_parallel_iterations_bounds_how_far_a_loop_runs_ahead(parallel_iterations):
    """Loop var ``i`` counts (its chain is short); ``acc`` goes through a longer chain that logs
    ``i``. With parallel_iterations=10 the ``i`` chain runs iterations ahead of the logging;
    with 1, iteration k+1 starts only when iteration k is done, so each iteration's log entry
    comes before the next iteration's ``i`` is logged."""
    b = GraphBuilder()

    def body(loop, v):
        i, acc = v
        seen = b.add_op("TestLog", [i], {"tag": "i"}).name
        slow = b.add_op("Identity", [b.add_op("Identity", [b.add_op("Identity", [acc]).name]).name]).name
        logged = b.add_op("TestLog", [b.add_op("AddV2", [slow, seen]).name], {"tag": "acc"}).name
        return [b.add_op("AddV2", [i, loop.const(1)]).name, logged]

    cond = lambda loop, v: b.add_op("Less", [v[0], loop.const(6)]).name  # noqa: E731
    _, acc = while_loop(b, cond, body, [b.const(0, I64), b.const(0, I64)], "w", parallel_iterations)
    LOG.clear()
    assert int(run(b, acc)) == sum(range(6))
    order = [tag for tag, _ in LOG]
    if parallel_iterations == 1 or COMPILED:  # a compiled loop runs its iterations in turn
        assert order == ["i", "acc"] * 6
    else:
        assert order != ["i", "acc"] * 6 and sorted(order) == ["acc"] * 6 + ["i"] * 6


def test_a_loop_that_never_runs_its_body_returns_the_initial_values():
    b = GraphBuilder()
    i, acc = factorial(b, 0)
    assert [int(x) for x in run(b, [i, acc])] == [1, 1]


def test_nested_loop():
    """``total = sum over i < 5 of (sum over j < i of 10 * i + j)``: the inner frame is entered
    once per outer iteration, and reads the outer loop's i as its own invariant."""
    b = GraphBuilder()

    def outer_body(outer, v):
        i, total = v

        def inner_body(inner, w):
            j, acc = w
            term = b.add_op(
                "AddV2", [b.add_op("Mul", [inner.invariant(i), inner.invariant(outer.const(10))]).name, j]
            )
            return [b.add_op("AddV2", [j, inner.invariant(outer.const(1))]).name,
                    b.add_op("AddV2", [acc, term.name]).name]  # fmt: skip

        inner_cond = lambda inner, w: b.add_op("Less", [w[0], inner.invariant(i)]).name  # noqa: E731
        _, part = while_loop(b, inner_cond, inner_body, [outer.const(0), outer.const(0)], "inner")
        return [b.add_op("AddV2", [i, outer.const(1)]).name, b.add_op("AddV2", [total, part]).name]

    zero = b.const(0, I64, name="zero")
    outer_cond = lambda outer, v: b.add_op("Less", [v[0], outer.const(5)]).name  # noqa: E731
    _, total = while_loop(b, outer_cond, outer_body, [zero, zero], "outer")
    assert int(run(b, total)) == sum(10 * i + j for i in range(5) for j in range(i)) == 310


def even_sum(b: GraphBuilder, n: int = 20, add_device: str = "") -> list[str]:
    """``i, acc = 0, 0; while i < n: acc += i if i % 2 == 0 else 0; i += 1``: a Switch/Merge
    conditional in the body, its true branch on ``add_device``."""

    def body(loop, v):
        i, acc = v
        even = b.add_op(
            "Equal", [b.add_op("FloorMod", [i, loop.const(2)]).name, loop.const(0)], name="even"
        ).name
        acc_sw = b.add_op("Switch", [acc, even], name="acc_switch").name
        i_sw = b.add_op("Switch", [i, even], name="i_switch").name
        with b.device(add_device):
            added = b.add_op("AddV2", [f"{acc_sw}:1", f"{i_sw}:1"], name="add_even").name
        kept = b.add_op("Identity", [acc_sw], name="keep_odd").name
        merged = b.add_op("Merge", [kept, added], name="acc_merge").name
        return [b.add_op("AddV2", [i, loop.const(1)]).name, merged]

    zero = b.const(0, I64, name="zero")
    cond = lambda loop, v: b.add_op("Less", [v[0], loop.const(n)]).name  # noqa: E731
    return while_loop(b, cond, body, [zero, zero], "evens")


def test_conditional_inside_a_loop():
    b = GraphBuilder()
    _, acc = even_sum(b, 20)
    assert int(run(b, acc)) == sum(range(0, 20, 2)) == 90


def test_loop_invariant_reaches_iterations_started_before_it_arrived():
    """The invariant ``scale`` comes late (a 50 ms op) while i's chain already runs ahead: the
    iterations that exist when it arrives get it, and so do the ones started later."""
    b = GraphBuilder()
    x = b.add_op("Placeholder", attrs={"dtype": F64, "shape": []}, name="x").name
    scale = b.add_op("TestSlowIdentity", [x], name="scale").name

    def body(loop, v):
        i, acc = v
        term = b.add_op("Mul", [b.add_op("Cast", [i], {"DstT": F64}).name, loop.invariant(scale)]).name
        return [b.add_op("AddV2", [i, loop.const(1)]).name, b.add_op("AddV2", [acc, term]).name]

    cond = lambda loop, v: b.add_op("Less", [v[0], loop.const(15)]).name  # noqa: E731
    i, acc = while_loop(b, cond, body, [b.const(0, I64), b.const(0.0, F64)], "scaled", parallel_iterations=20)
    got_i, got = run(b, [i, acc], feeds={"x": 0.5})
    assert int(got_i) == 15 and float(got) == 0.5 * sum(range(15))


def test_the_same_loop_graph_runs_again_and_with_other_feeds():
    b = GraphBuilder()
    n = b.add_op("Placeholder", attrs={"dtype": I64, "shape": []}, name="n").name

    def body(loop, v):
        return [b.add_op("AddV2", [v[0], loop.const(1)]).name, b.add_op("Mul", [v[1], v[0]]).name]

    cond = lambda loop, v: b.add_op("LessEqual", [v[0], loop.invariant(n)]).name  # noqa: E731
    _, acc = while_loop(b, cond, body, [b.const(1, I64), b.const(1, I64)], "fact")
    with Session(b.graph_def, config("cpu:1")) as s:
        for k in (5, 10, 5, 0, 20):
            assert int(s.run(acc, feeds={n: k}, timeout_s=TIMEOUT)) == math.factorial(k)
        assert len(s._plans) == 1  # one plan, one executor, reused


def test_a_traced_step_records_every_iteration_of_every_node():
    b = GraphBuilder()
    i, acc = factorial(b, 6)
    with Session(b.graph_def, config("cpu:1")) as s:
        meta: dict = {}
        s.run([i, acc], options={"trace": True}, run_metadata=meta, timeout_s=TIMEOUT)
    runs = Counter(n.node for n in meta["step_stats"].nodes)
    if COMPILED:  # every node run, not the frame bookkeeping nor the body's dead last pass
        assert runs["fact/mul"] == 6 and runs["fact/LoopCond"] == runs["fact/le"] == 7
        assert runs["fact/_loop"] == 1 and runs["fact/Merge_0"] == runs["fact/Exit_0"] == 0
        return
    assert runs["fact/mul"] == 7  # 6 live iterations and the last one, where it is dead
    assert runs["fact/Merge_0"] == runs["fact/LoopCond"] == runs["fact/Switch_0"] == 7
    assert runs["fact/Enter_0"] == 1 and runs["fact/Exit_0"] == 7  # one Enter; an Exit per iteration


# --- across devices ----------------------------------------------------------------------------


def test_loop_split_across_two_devices():
    """The loop's skeleton on cpu:0 and its multiply on cpu:1: cpu:1 follows the iterations
    through its control loop, and every transfer is keyed by frame and iteration."""
    b = GraphBuilder()
    with b.device("/cpu:0"):
        i, acc = factorial(b, 10, mul_device="/cpu:1")
    with Session(b.graph_def, config("cpu:2")) as s:
        assert [int(x) for x in s.run([i, acc], timeout_s=TIMEOUT)] == [11, math.factorial(10)]
        parts = s.plan_for([i, acc]).partitions
        on_cpu1 = [n.name for n in parts["/job:localhost/replica:0/task:0/device:CPU:1"].nodes]
        assert "fact/mul" in on_cpu1 and "fact/_cloop_on_CPU_1/Merge" in on_cpu1
        assert int(s.run(acc, timeout_s=TIMEOUT)) == math.factorial(10)  # and again


def test_nested_loop_and_conditional_split_across_devices():
    """The conditional's true branch on cpu:1 inside a loop that is itself inside a loop: cpu:1
    gets a control loop for each frame, the inner one entered from the outer one."""
    b = GraphBuilder()

    def outer_body(outer, v):
        k, total = v
        _, part = even_sum_in(outer, add_device="/cpu:1")
        return [b.add_op("AddV2", [k, outer.const(1)]).name, b.add_op("AddV2", [total, part]).name]

    def even_sum_in(outer, add_device):
        # even_sum with its constants entered from the outer frame
        def body(loop, v):
            i, acc = v
            even = b.add_op("Equal", [b.add_op("FloorMod", [i, loop.invariant(outer.const(2))]).name,
                                      loop.invariant(outer.const(0))]).name  # fmt: skip
            acc_sw, i_sw = b.add_op("Switch", [acc, even]).name, b.add_op("Switch", [i, even]).name
            with b.device(add_device):
                added = b.add_op("AddV2", [f"{acc_sw}:1", f"{i_sw}:1"]).name
            merged = b.add_op("Merge", [b.add_op("Identity", [acc_sw]).name, added]).name
            return [b.add_op("AddV2", [i, loop.invariant(outer.const(1))]).name, merged]

        cond = lambda loop, v: b.add_op("Less", [v[0], loop.invariant(outer.const(8))]).name  # noqa: E731
        return while_loop(b, cond, body, [outer.const(0), outer.const(0)], "evens")

    with b.device("/cpu:0"):
        cond = lambda outer, v: b.add_op("Less", [v[0], outer.const(3)]).name  # noqa: E731
        _, total = while_loop(b, cond, outer_body, [b.const(0, I64), b.const(0, I64)], "outer")
    assert int(run(b, total, devices="cpu:2")) == 3 * (0 + 2 + 4 + 6)


# --- dead tensors ------------------------------------------------------------------------------


@pytest.mark.parametrize("on_frames", [False, True])
def test_dead_tensors_propagate_and_merge_takes_the_live_input(on_frames):
    """Switch(x, false): its true side dies, and so does a chain of ops on it; a Merge of that
    chain and a live value forwards the live one; a Merge of dead values stays dead, and
    fetching it is an error naming the fetch. ``on_frames``: the same in a partition that also
    holds a loop, so it runs on frames."""
    b = GraphBuilder()
    x = b.add_op("Placeholder", attrs={"dtype": F64, "shape": [2]}, name="x").name
    p = b.add_op("Placeholder", attrs={"dtype": dtypes.bool_, "shape": []}, name="p").name
    sw = b.add_op("Switch", [x, p], name="sw").name
    chain = f"{sw}:1"
    for k in range(3):
        chain = b.add_op("Neg", [chain], name=f"dead_{k}").name
    live = b.add_op("Merge", [chain, b.add_op("Square", [sw], name="sq").name], name="live").name
    dead = b.add_op("Merge", [chain, b.add_op("Exp", [chain], name="dead_exp").name], name="dead").name
    loop = factorial(b, 5) if on_frames else []
    with Session(b.graph_def, config("cpu:1")) as s:
        got = s.run([live, f"{live}:1", *loop], feeds={x: [1.0, -3.0], p: False}, timeout_s=TIMEOUT)
        np.testing.assert_array_equal(got[0], [1.0, 9.0])
        assert int(got[1]) == 1  # the Merge's second input was the live one
        got = s.run([live, f"{live}:1", *loop], feeds={x: [1.0, -3.0], p: True}, timeout_s=TIMEOUT)
        np.testing.assert_array_equal(got[0], [-1.0, 3.0])  # -(-(-x))
        assert int(got[1]) == 0
        if on_frames:
            assert [int(v) for v in got[2:]] == [6, 120]
        with pytest.raises(RuntimeFailure, match="fetch 'dead:0' produced no value") as e:
            s.run([dead, *loop], feeds={x: [1.0, 2.0], p: False}, timeout_s=TIMEOUT)
        assert e.value.node == "dead"


def test_a_loop_on_the_untaken_branch_stays_dead_and_ends():
    """A loop entered from the dead side of a Switch runs no iteration body: its Merges fire
    dead on the dead Enters, its exits stay dead, and the Merge after it takes the live side."""
    b = GraphBuilder()
    p = b.add_op("Placeholder", attrs={"dtype": dtypes.bool_, "shape": []}, name="p").name
    start = b.add_op("Switch", [b.const(3, I64, name="three"), p], name="start").name

    def body(loop, v):
        return [b.add_op("AddV2", [v[0], loop.const(1)]).name, b.add_op("Mul", [v[1], v[0]]).name]

    cond = lambda loop, v: b.add_op("LessEqual", [v[0], loop.const(5)]).name  # noqa: E731
    _, prod = while_loop(b, cond, body, [f"{start}:1", f"{start}:1"], "maybe")
    out = b.add_op("Merge", [prod, b.add_op("Identity", [start], name="skip").name], name="out").name
    with Session(b.graph_def, config("cpu:2")) as s:
        assert int(s.run(out, feeds={p: True}, timeout_s=TIMEOUT)) == 3 * 3 * 4 * 5
        assert int(s.run(out, feeds={p: False}, timeout_s=TIMEOUT)) == 3
        with pytest.raises(RuntimeFailure, match="fetch 'maybe/Exit_1:0' produced no value"):
            s.run(prod, feeds={p: False}, timeout_s=TIMEOUT)


# --- errors ------------------------------------------------------------------------------------


def test_an_error_in_iteration_k_names_the_node_and_its_location():
    b = GraphBuilder()

    def body(loop, v):
        with b.location(Location("model.yaml", 12, 5)):
            checked = b.add_op("TestFailAt", [v[0]], {"at": 4}, name="check").name
        return [b.add_op("AddV2", [checked, loop.const(1)]).name, v[1]]

    cond = lambda loop, v: b.add_op("Less", [v[0], loop.const(10)]).name  # noqa: E731
    i, _ = while_loop(b, cond, body, [b.const(0, I64), b.const(0, I64)], "w")
    with pytest.raises(RuntimeFailure, match="TestFailAt on .*CPU:0: reached 4") as e:
        run(b, i)
    assert e.value.node == "w/check" and str(e.value.location) == "model.yaml:12:5"


def test_a_loop_that_never_ends_stops_at_the_timeout():
    b = GraphBuilder()
    cond = lambda loop, v: b.add_op("GreaterEqual", [v[0], loop.const(0)]).name  # noqa: E731
    body = lambda loop, v: [b.add_op("AddV2", [v[0], loop.const(1)]).name]  # noqa: E731
    (i,) = while_loop(b, cond, body, [b.const(0, I64)], "forever")
    with Session(b.graph_def, config("cpu:1")) as s:
        t0 = time.monotonic()
        with pytest.raises(RuntimeFailure, match="step timed out after 0.3s"):
            s.run(i, timeout_s=0.3)
        assert time.monotonic() - t0 < 5


def test_a_body_reading_an_outside_value_without_enter_is_a_graph_error():
    b = GraphBuilder()
    outside = b.const(1, I64, name="outside")
    body = lambda loop, v: [b.add_op("AddV2", [v[0], outside], name="bad").name]  # noqa: E731
    cond = lambda loop, v: b.add_op("Less", [v[0], loop.const(3)]).name  # noqa: E731
    (i,) = while_loop(b, cond, body, [b.const(0, I64)], "w")
    with pytest.raises(GraphError, match="inputs from different loop frames: 'w/Identity_0' is in frame 'w', "
                       "'outside' in the root frame") as e:  # fmt: skip
        run(b, i)
    assert e.value.node == "w/bad"


# --- overhead ----------------------------------------------------------------------------------


def test_ten_thousand_iterations(capsys):
    """A counting loop of 10,000 iterations (6 nodes run per iteration): the result is exact;
    the per-iteration overhead is printed (reported, not asserted: the machine is shared)."""
    b = GraphBuilder()
    cond = lambda loop, v: b.add_op("Less", [v[0], loop.const(10_000)]).name  # noqa: E731
    body = lambda loop, v: [b.add_op("AddV2", [v[0], loop.const(1)]).name]  # noqa: E731
    (i,) = while_loop(b, cond, body, [b.const(0, I64)], "count")
    with Session(b.graph_def, config("cpu:1")) as s:
        assert int(s.run(i, timeout_s=60)) == 10_000
        t0 = time.perf_counter()
        assert int(s.run(i, timeout_s=60)) == 10_000
        seconds = time.perf_counter() - t0
    with capsys.disabled():
        print(f"\n10,000 loop iterations: {seconds * 1e3:.0f} ms, {seconds / 10_000 * 1e6:.1f} µs/iteration")
