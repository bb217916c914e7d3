"""Session: feeds, fetch structures, targets, errors, the executor cache, variables, traces."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from specflow.errors import GraphError, RuntimeFailure, ShapeError, SpecflowError
from specflow.graph import dtypes
from specflow.graph.builder import GraphBuilder
from specflow.runtime import session as session_mod
from specflow.runtime.session import Session, SessionConfig
from specflow.runtime.step_stats import StepStats

pytestmark = pytest.mark.usefixtures("test_ops")

F32 = dtypes.float32


def _graph():
    """x (float32 [?, 3]) and n (int32 scalar) placeholders; y = x + 1 on CPU:0, z = y * n on CPU:1."""
    b = GraphBuilder()
    x = b.add_op("Placeholder", [], {"dtype": F32, "shape": [None, 3]}, name="x").name
    n = b.add_op("Placeholder", [], {"dtype": dtypes.int32, "shape": []}, name="n").name
    y = b.add_op("Add", [x, b.const(np.float32(1), name="one")], name="y").name
    with b.device("/cpu:1"):
        nf = b.add_op("Cast", [n], {"DstT": F32}, name="nf").name
        b.add_op("Mul", [y, nf], name="z")
    b.add_op("NoOp", [], name="nothing")
    return b


@pytest.fixture
def sess():
    with Session(_graph().graph_def, SessionConfig(devices="cpu:2")) as s:
        yield s


X = np.arange(6, dtype=np.float32).reshape(2, 3)


def test_fetch_structures_follow_the_request(sess):
    feeds = {"x": X, "n:0": 2}
    np.testing.assert_array_equal(sess.run("y", feeds), X + 1)
    z, y = sess.run(["z", "y:0"], feeds)
    np.testing.assert_array_equal(z, (X + 1) * 2)
    out = sess.run({"a": "y", "b": ("z", ["y"])}, feeds)
    assert set(out) == {"a", "b"} and isinstance(out["b"], tuple) and isinstance(out["b"][1], list)
    np.testing.assert_array_equal(out["b"][1][0], X + 1)
    assert isinstance(z, np.ndarray) and z.dtype == np.float32


def test_fetching_a_fed_tensor_returns_the_feed_and_ops_return_none(sess):
    y = np.ones((1, 3), np.float32)
    got = sess.run(["y", "nothing"], {"y": y})
    np.testing.assert_array_equal(got[0], y)
    assert got[1] is None


def test_feeds_convert_only_when_safe(sess):
    np.testing.assert_array_equal(sess.run("y", {"x": [[1, 2, 3]]}), [[2, 3, 4]])  # ints -> float32
    with pytest.raises(ShapeError, match=r"cannot feed float64 to 'n:0' of dtype int32"):
        sess.run("z", {"x": X, "n": 2.5})
    with pytest.raises(ShapeError, match=r"cannot feed int64 to 'n:0' of dtype int32"):
        sess.run("z", {"x": X, "n": 2**40})  # does not fit
    with pytest.raises(ShapeError, match=r"cannot feed shape \[2, 2\] to 'x:0' of shape \[\?, 3\]"):
        sess.run("y", {"x": np.zeros((2, 2), np.float32)})


def test_unknown_names_suggest_the_close_one(sess):
    with pytest.raises(GraphError, match="no node named 'yy'.*did you mean 'y'"):
        sess.run("yy", {"x": X})
    with pytest.raises(GraphError, match="did you mean 'x'"):
        sess.run("y", {"xx": X})
    with pytest.raises(GraphError, match="unknown target 'nothin'.*did you mean 'nothing'"):
        sess.run([], targets="nothin")
    with pytest.raises(SpecflowError, match="did you mean 'trace'"):
        sess.run("y", {"x": X}, options={"tracing": True})


def test_unfed_placeholder_fails_naming_node_and_op(sess):
    with pytest.raises(RuntimeFailure, match="node 'x'.*Placeholder on .*CPU:0.*must be fed"):
        sess.run("y")


def test_executors_are_cached_per_signature(sess, monkeypatch):
    calls = []
    real = session_mod.compile_step

    def counting(*a, **kw):
        calls.append(kw["fetches"])
        return real(*a, **kw)

    monkeypatch.setattr(session_mod, "compile_step", counting)
    for _ in range(3):
        sess.run("z", {"x": X, "n": 1})
    assert len(calls) == 1
    sess.run("z", {"n": 1, "x": X})  # feed order does not matter
    assert len(calls) == 1
    sess.run(["y"], {"x": X})
    assert len(calls) == 2


def test_variables_persist_across_runs_and_executor_rebuilds():
    b = GraphBuilder()
    h = b.add_op("VarHandleOp", [], {"dtype": F32, "shape": [2]}, name="v").name
    b.add_op("AssignVariableOp", [h, b.const(np.zeros(2, np.float32), name="zeros")], name="init")
    b.add_op("AssignAddVariableOp", [h, b.const(np.ones(2, np.float32), name="ones")], name="inc")
    b.add_op("ReadVariableOp", [h], {"dtype": F32}, name="read")
    with Session(b.graph_def, SessionConfig(devices="cpu:1")) as s:
        with pytest.raises(RuntimeFailure, match="before it was initialized"):
            s.run("read")
        s.run([], targets=["init"])
        for _ in range(3):
            s.run([], targets="inc")
        np.testing.assert_array_equal(s.run("read"), [3, 3])
        s.run("read", targets=["inc"])  # a new signature: new executors, same variable
        np.testing.assert_array_equal(s.run("read"), [4, 4])


def test_a_variables_handle_is_looked_up_once_per_executor_however_signatures_alternate(monkeypatch):
    """Executors of two signatures hold a VarHandleOp of one name (kernel state is per node
    name): each keeps its own cached handle instead of evicting the other's every step."""
    from specflow.runtime.resources import ResourceMgr

    b = GraphBuilder()
    h = b.add_op("VarHandleOp", [], {"dtype": F32, "shape": [2]}, name="v").name
    b.add_op("AssignVariableOp", [h, b.const(np.zeros(2, np.float32), name="zeros")], name="init")
    b.add_op("AssignAddVariableOp", [h, b.const(np.ones(2, np.float32), name="ones")], name="inc")
    b.add_op("ReadVariableOp", [h], {"dtype": F32}, name="read")
    lookups = []
    original = ResourceMgr.lookup_or_create
    monkeypatch.setattr(ResourceMgr, "lookup_or_create", lambda self, *a: lookups.append(a) or original(self, *a))
    with Session(b.graph_def, SessionConfig(devices="cpu:1")) as s:
        s.run([], targets=["init"])
        s.run([], targets=["inc"])
        s.run("read")
        first = len(lookups)
        for _ in range(5):
            s.run([], targets=["inc"])
            s.run("read")
        assert len(lookups) == first
        np.testing.assert_array_equal(s.run("read"), [6, 6])


def test_trace_fills_run_metadata_with_a_chrome_trace(sess):
    md: dict = {}
    sess.run("z", {"x": X, "n": 3}, options={"trace": True}, run_metadata=md)
    stats = md["step_stats"]
    names = {s.node for s in stats.nodes}
    assert {"y", "z", "nf"} <= names and any(n.startswith("_retval") for n in names)
    trace = json.loads(json.dumps(stats.to_chrome_trace()))
    procs = {
        e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"
    }
    assert procs == set(sess.device_names)
    z = next(e for e in trace["traceEvents"] if e["ph"] == "X" and e["name"] == "z")
    assert z["args"] == {"op": "Mul", "bytes": 24} and z["dur"] >= 0
    assert set(stats.measured_costs()) == names
    collected = StepStats()
    sess.run("y", {"x": X}, options={"trace": True}, run_metadata=collected)
    assert "y" in collected.by_node()


def test_timeout_cancels_the_step():
    b = GraphBuilder()
    slow = b.add_op("TestSleep", [b.const(np.float32(1), name="c")], {"seconds": 2.0}, name="slow").name
    with b.device("/cpu:1"):
        b.add_op("Identity", [slow], name="after")
    with Session(b.graph_def, SessionConfig(devices="cpu:2")) as s:
        t0 = time.perf_counter()
        with pytest.raises(RuntimeFailure, match=r"step timed out after 0.2s"):
            s.run("after", timeout_s=0.2)
        assert time.perf_counter() - t0 < 1.0


def test_extend_appends_and_rejects_duplicates(sess):
    more = GraphBuilder(sess.graph_def)
    more.add_op("Neg", ["y"], name="neg_y")
    added = [n for n in more.graph_def.nodes if n.name == "neg_y"]
    sess.extend(type(sess.graph_def)(added))
    np.testing.assert_array_equal(sess.run("neg_y", {"x": X}), -(X + 1))
    with pytest.raises(GraphError, match="duplicate node name 'neg_y'"):
        sess.extend(type(sess.graph_def)(added))


def test_closed_session_refuses_to_run():
    s = Session(_graph().graph_def, SessionConfig(devices="cpu:1"))
    s.close()
    with pytest.raises(RuntimeFailure, match="closed"):
        s.run("y", {"x": X})


def test_from_spec(tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text(
        "specflow: 1\nname: tiny\ninputs:\n  x: {dtype: float32, shape: [null, 2]}\n"
        "nodes:\n  y: {op: Add, inputs: [x, x]}\n"
    )
    with Session.from_spec(str(path), config=SessionConfig(devices="cpu:1")) as s:
        np.testing.assert_array_equal(s.run("y", {"x": [[1, 2]]}), [[2, 4]])


@pytest.mark.gpu
def test_gpu_partition_results_come_back_as_numpy():
    b = _graph()
    with b.device("/gpu:0"):
        b.add_op("Mul", ["y", "y"], name="y2")
    with Session(b.graph_def, SessionConfig(devices="cpu:2,gpu:1")) as s:
        y2 = s.run("y2", {"x": X})
        assert isinstance(y2, np.ndarray)
        np.testing.assert_allclose(y2, (X + 1) ** 2)


def test_fetched_arrays_are_the_callers_own():
    """A fetch that is a variable's value, a constant or a feed passed through is copied (as
    TensorFlow's fetches are): writing into it changes nothing the session holds."""
    from specflow.schema.loader import load_spec_text

    spec = load_spec_text(
        "specflow: 1\nname: m\ninputs:\n  x: {dtype: float32, shape: [2]}\nvariables:\n  w: {shape: [2], initializer: ones}\n"
        "nodes:\n  c: {op: Const, value: [1.0, 2.0], dtype: float32}\n  same: {op: Identity, inputs: [x]}\n"
        "  y: {op: Mul, inputs: [x, w]}\n", "m.yaml")  # fmt: skip
    x = np.array([3.0, 4.0], np.float32)
    with Session(spec.graph_def) as s:
        s.run([], targets=[spec.lowered.init_op])
        read = spec.variables[0].read
        for _ in range(2):  # the second time on the cached plan
            w, c, same, y = s.run([read, "c", "same", "y"], {"x": x})
            for a in (w, c, same, y):
                a *= 10
            assert same is not x and x.tolist() == [3.0, 4.0]
            np.testing.assert_array_equal(s.run([read, "c"]), [[1.0, 1.0], [1.0, 2.0]])
