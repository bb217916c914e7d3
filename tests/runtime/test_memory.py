"""Peak bytes per device (runtime/memory.py): measured on traced steps and estimated statically,
against hand-computed numbers; receives as late as possible (runtime/alap.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import specflow
from specflow.graph import dtypes
from specflow.graph.builder import GraphBuilder
from specflow.runtime import executor_types as xt
from specflow.runtime.devices import local_devices
from specflow.runtime.executor import CallFrame, Executor
from specflow.runtime.pipeline import compile_step
from specflow.runtime.rendezvous import Rendezvous
from specflow.runtime.session import Session, SessionConfig
from specflow.runtime.step_stats import StepStats
from specflow.views.placement_view import estimated_peaks

pytestmark = pytest.mark.usefixtures("test_ops")

F32 = dtypes.float32
CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
CPU1 = "/job:localhost/replica:0/task:0/device:CPU:1"


def _chain():
    """x [4, 8] -> a = -x -> m = a @ w (w [8, 16]) -> r = relu(m), r fetched."""
    b = GraphBuilder()
    x = b.add_op("Placeholder", [], {"dtype": F32, "shape": [4, 8]}, name="x").name
    a = b.add_op("Neg", [x], name="a").name
    w = b.const(np.ones((8, 16), np.float32), name="w")
    m = b.add_op("MatMul", [a, w], name="m").name
    b.add_op("Relu", [m], name="r")
    return b.graph_def


# By hand, in the executor's order x, w, a, m, r: outputs are allocated while the inputs are
# live, inputs released after their last consumer, the fetched r held to the end:
#   x 128 | w +512 = 640 | a +128 = 768, x out: 640 | m +256 = 896, a and w out: 256 |
#   r +256 = 512, m out: 256 (r, held until returned)   -> peak 896
CHAIN_PEAK = 896


def test_a_traced_straight_line_step_counts_the_hand_computed_peak(monkeypatch):
    monkeypatch.setattr(xt, "INLINE_COST_NS", 10**12)  # a busy machine must not make MatMul expensive
    with Session(_chain(), SessionConfig(devices="cpu:1", optimize=False)) as s:
        ex = s.plan_for("r", feeds=["x"]).single
        stats = StepStats()
        s.run("r", {"x": np.ones((4, 8), np.float32)}, options={"trace": True}, run_metadata=stats)
        assert ex.straight_line
        assert stats.peak_bytes() == {CPU0: CHAIN_PEAK}
        assert stats.memory[CPU0].live == 16 * 4 * 4  # the fetched value, until it is returned
        trace = stats.to_chrome_trace()
        assert trace["otherData"]["peak_bytes"] == {CPU0: CHAIN_PEAK}
        counters = [e["args"]["bytes"] for e in trace["traceEvents"] if e["ph"] == "C"]
        assert max(counters) == CHAIN_PEAK and counters[-1] == 256
        s.run("r", {"x": np.ones((4, 8), np.float32)})  # untraced: nothing counted
        assert stats.peak_bytes() == {CPU0: CHAIN_PEAK}


def test_the_static_estimate_runs_the_same_model():
    step = compile_step(_chain(), [CPU0], feeds=["x:0"], fetches=["r:0"], optimize_graph=False)
    assert {d: (p.bytes, p.unknown) for d, p in estimated_peaks(step).items()} == {CPU0: (CHAIN_PEAK, 0)}


def _late_receive_graph():
    """CPU:1 sends big = 1 + 0 * (4000 floats) at once; CPU:0 computes x -> a = -x ->
    b = a * x -> c = b + big. Received early, big waits in memory through a and b."""
    b = GraphBuilder()
    x = b.add_op("Placeholder", [], {"dtype": F32, "shape": [1000]}, name="x").name
    with b.device("/cpu:1"):
        big = b.add_op("ZerosLike", [b.const(np.ones(1000, np.float32), name="ones")], name="big").name
    with b.device("/cpu:0"):
        a = b.add_op("Neg", [x], name="a").name
        m = b.add_op("Mul", [a, x], name="b").name
        b.add_op("Add", [m, big], name="c")
    return b.graph_def


def _run_sender_first(step, stats) -> np.ndarray:
    """One step with CPU:1's partition run to its end before CPU:0's starts: its value waits in
    the rendezvous, so without ALAP CPU:0's receive completes before anything else runs."""
    devs = {d.name: d for d in local_devices("cpu:2")}
    parts = step.partitioned.partitions
    rv, frame = Rendezvous(), CallFrame([np.ones(1000, np.float32)], 1)
    Executor(parts[CPU1], devs[CPU1]).run(rendezvous=rv, frame=frame, stats=stats)
    Executor(parts[CPU0], devs[CPU0]).run(rendezvous=rv, frame=frame, stats=stats)
    for d in devs.values():
        d.shutdown()
    return frame.retvals[0]


# CPU:0 by hand (4,000 bytes per value). A received value is CPU:0's from its _Recv on.
#   early: x 4000 | big +4000 = 8000 | a +4000 = 12000 | b +4000 = 16000, x, a out | c ...
#   late (the receive waits for b): x | a 8000 | b 12000, x, a out: 4000 | big 8000 | c 12000
def test_alap_holds_the_receive_until_its_consumer_is_nearly_ready_and_lowers_the_peak():
    kw = dict(feeds=["x:0"], fetches=["c:0"], optimize_graph=False)
    early = compile_step(_late_receive_graph(), [CPU0, CPU1], alap_recv=False, **kw)
    late = compile_step(_late_receive_graph(), [CPU0, CPU1], **kw)
    assert early.alap is None
    assert late.alap.edges == [("b", "big/_recv_0_on_CPU_0")]
    recv = late.partitioned.partitions[CPU0].node("big/_recv_0_on_CPU_0")
    assert recv.control_inputs == ["b"]
    results = []
    for step, peak in ((early, 16000), (late, 12000)):
        stats = StepStats()
        results.append(_run_sender_first(step, stats))
        assert stats.peak_bytes()[CPU0] == peak  # the dataflow loop's count
        assert estimated_peaks(step)[CPU0].bytes == peak
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_array_equal(results[1], -np.ones(1000, np.float32))


def test_alap_never_closes_a_cycle_through_another_device():
    """c = r + r2 on CPU:0, where r2 comes back from CPU:1 computed from -r: every ancestor of
    c on CPU:0 depends on r's receive, so it gets no control input (it would deadlock)."""
    b = GraphBuilder()
    with b.device("/cpu:1"):
        v = b.add_op("Neg", [b.const(np.ones(4, np.float32), name="k")], name="v").name
    with b.device("/cpu:0"):
        d = b.add_op("Neg", [v], name="d").name
    with b.device("/cpu:1"):
        e = b.add_op("Neg", [d], name="e").name
    with b.device("/cpu:0"):
        b.add_op("Add", [v, e], name="c")
    step = compile_step(b.graph_def, [CPU0, CPU1], fetches=["c:0"], optimize_graph=False)
    assert step.alap.edges == []
    with Session(b.graph_def, SessionConfig(devices="cpu:2", optimize=False)) as s:
        np.testing.assert_array_equal(s.run("c", timeout_s=20), -np.ones(4) * 2)


def test_alap_leaves_graphs_with_control_flow_alone():
    b = GraphBuilder()
    p = b.add_op("Placeholder", [], {"dtype": dtypes.bool_, "shape": []}, name="p").name
    with b.device("/cpu:1"):
        v = b.add_op("Neg", [b.const(np.ones(4, np.float32), name="k")], name="v").name
    with b.device("/cpu:0"):
        sw = b.add_op("Switch", [b.add_op("Neg", [v], name="nv").name, p], name="sw").name
        b.add_op("Merge", [sw, f"{sw}:1"], name="mg")
    step = compile_step(b.graph_def, [CPU0, CPU1], feeds=["p:0"], fetches=["mg:0"], optimize_graph=False)
    assert step.alap.edges == []


def test_two_tower_golden_edges_lower_peak_and_identical_results():
    spec = specflow.load_spec("models/two_tower.yaml")
    kw = dict(feeds=["x:0"], fetches=["out:0"], feed_shapes=[(64, 32)])
    step = compile_step(spec.graph_def, [CPU0, CPU1], **kw)
    # The received right tower waits for the left one (its concat partner), the received
    # concat for `joined` (its Mul partner); CPU:1's copy of x for its first variable read, and
    # its received axis for the tower's output.
    assert step.alap.edges == [
        ("right_hidden/bias/Read/ReadVariableOp", "_arg_x_0_0/_recv_0_on_CPU_1"),
        ("right", "joined/axis/_recv_0_on_CPU_1"),
        ("left", "right/_recv_0_on_CPU_0"),
        ("joined", "gate/ConcatV2/_recv_0_on_CPU_0"),
    ]
    # Batch 64 on CPU:0. Received at once, right (64x64 floats) is live through the left
    # tower's 64x256 hidden layer: the peak is that layer, its 64x64 output, x and right.
    # Held back, right arrives after the hidden layer is freed: the peak is gate's.
    early = compile_step(spec.graph_def, [CPU0, CPU1], alap_recv=False, **kw)
    assert estimated_peaks(early)[CPU0].bytes == 224532
    assert estimated_peaks(step)[CPU0].bytes == 175380
    x = np.random.default_rng(0).standard_normal((16, 32)).astype(np.float32)
    outs = []
    for alap in (False, True):
        with Session(spec.graph_def, SessionConfig(devices="cpu:2", graph_seed=3, alap_recv=alap)) as s:
            s.run([], targets=[spec.lowered.init_op])
            outs.append(s.run("out", {"x": x}))
    np.testing.assert_array_equal(outs[0], outs[1])


def test_the_cli_reports_estimated_and_measured_peaks(tmp_path):
    from typer.testing import CliRunner

    from specflow.cli import app

    runner = CliRunner()
    r = runner.invoke(app, ["inspect", "models/two_tower.yaml", "--placed", "--devices", "cpu:2", "--batch-size", "8",
                            "--format", "json"])  # fmt: skip
    assert r.exit_code == 0, r.output
    peaks = json.loads(r.output)["estimated_peak_bytes"]
    assert set(peaks) == {CPU0, CPU1} and all(p["bytes"] > 0 and p["unknown_values"] == 0 for p in peaks.values())
    np.save(tmp_path / "x.npy", np.ones((8, 32), np.float32))
    r = runner.invoke(app, ["run", "models/two_tower.yaml", "--fetch", "out", "--feed", f"x={tmp_path / 'x.npy'}",
                            "--devices", "cpu:2", "--trace", str(tmp_path / "t.json")], env={"COLUMNS": "200"})  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "peak memory of the step: CPU:0 " in r.output and ", CPU:1 " in r.output
    trace = json.loads((tmp_path / "t.json").read_text())
    assert set(trace["otherData"]["peak_bytes"]) == {CPU0, CPU1}
