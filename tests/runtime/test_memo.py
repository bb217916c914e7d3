"""runtime/memo.py: arithmetic on variable values runs again only when a variable changed; the
values always equal a fresh computation."""

from __future__ import annotations

import numpy as np

from specflow.graph.builder import GraphBuilder
from specflow.runtime import memo
from specflow.runtime.session import Session, SessionConfig

F32 = "float32"


def _scaled_graph() -> GraphBuilder:
    """y = x * (v * 2 + 1): the scale from a variable (memoized), x fed (not)."""
    b = GraphBuilder()
    b.add_op("Placeholder", [], {"dtype": F32, "shape": [3]}, name="x")
    b.add_op("Placeholder", [], {"dtype": F32, "shape": [3]}, name="new")
    b.add_op("VarHandleOp", [], {"dtype": F32, "shape": [3]}, name="v")
    b.add_op("ReadVariableOp", ["v"], {"dtype": F32}, name="read")
    two = b.const(np.float32(2), name="two")
    one = b.const(np.float32(1), name="one")
    b.add_op("Mul", ["read", two], name="doubled")
    b.add_op("AddV2", ["doubled", one], name="scale")
    b.add_op("Mul", ["x", "scale"], name="y")
    b.add_op("AssignVariableOp", ["v", "new"], {"dtype": F32}, name="assign")
    b.add_op("AssignAddVariableOp", ["v", "new"], {"dtype": F32}, name="bump")
    return b


def test_a_read_only_partition_memoizes_the_arithmetic_on_its_variables():
    b = _scaled_graph()
    with Session(b.graph_def, SessionConfig(devices="cpu:1", inter_op_threads=1)) as sess:
        ones = np.ones(3, np.float32)
        sess.run([], {"new": np.arange(3, dtype=np.float32)}, targets=["assign"])
        ys = [sess.run("y", {"x": ones}) for _ in range(40)]  # past the generated line's start
        np.testing.assert_array_equal(ys[-1], [1, 3, 5])
        plan = [ex for ex in _executors(sess) if "y" in ex.node_names]
        assert plan and all(_wrapped(ex) == {"doubled", "scale"} for ex in plan)
        # A variable updated in place by another step (its value held by the memo: copied) and
        # replaced by an assignment: either way the next step computes again.
        for target, new, want in (("bump", 1, [3, 5, 7]), ("assign", 5, [11, 11, 11]), ("bump", -1, [9, 9, 9])):
            sess.run([], {"new": np.full(3, new, np.float32)}, targets=[target])
            for _ in range(3):
                np.testing.assert_array_equal(sess.run("y", {"x": ones}), want)
        # A fetched memoized value is the caller's own copy: changing it changes nothing.
        got = sess.run("scale")
        got += 100
        np.testing.assert_array_equal(sess.run("scale"), [9, 9, 9])


def test_a_partition_that_writes_state_memoizes_nothing():
    b = _scaled_graph()
    with Session(b.graph_def, SessionConfig(devices="cpu:1", inter_op_threads=1)) as sess:
        sess.run([], {"new": np.ones(3, np.float32)}, targets=["assign"])
        for _ in range(3):
            sess.run("y", {"x": np.ones(3, np.float32), "new": np.ones(3, np.float32)}, targets=["bump"])
        plan = [ex for ex in _executors(sess) if "y" in ex.node_names and "bump" in ex.node_names]
        assert plan and all(not _wrapped(ex) for ex in plan)


def test_a_memoized_kernel_runs_again_on_new_input_objects_only():
    calls = []

    def kernel(ctx, a, b):
        calls.append(1)
        return a + b

    a, b = np.ones(2), np.ones(2)
    for n_in in (2, -1):
        calls.clear()
        run = memo.memoized(kernel, n_in)
        out = run(None, a, b)
        assert run(None, a, b) is out and len(calls) == 1 and not out.flags.writeable
        assert run(None, a.copy(), b) is not out and len(calls) == 2
        assert run(None, a, b.copy()) is not out and len(calls) == 3


def _executors(sess):
    """The session's executors (they share its kernel state)."""
    import gc

    from specflow.runtime.executor import Executor

    return [o for o in gc.get_objects() if isinstance(o, Executor) and o._kernel_state is sess.kernel_state]


def _wrapped(ex) -> set[str]:
    return {n.name for n in ex._nodes if hasattr(n.fn, "__wrapped__")}
