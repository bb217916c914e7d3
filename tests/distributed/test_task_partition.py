"""Two-level partitioning (task_partition.py), no Ray: the master's per-task graphs (golden), each
worker's per-device partition of its piece, and a loop split over tasks and over each task's
devices run in one process with one rendezvous, against the local result."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from specflow.distributed import ClusterSpec
from specflow.distributed.placement import TaskAssignment, compile_cluster_step
from specflow.distributed.task_partition import partition_by_task, partition_piece
from specflow.graph.builder import GraphBuilder
from specflow.runtime.devices import local_devices
from specflow.runtime.executor import CallFrame, Executor
from specflow.runtime.executor_types import UNSET
from specflow.runtime.frame_info import ControlFlowInfo
from specflow.runtime.partition import PartitionOptions
from specflow.runtime.rendezvous import Rendezvous
from specflow.runtime.session import Session, SessionConfig
from specflow.schema.loader import load_spec
from tests.runtime.golden import assert_closed, golden

PS, W = "/job:ps/replica:0/task:0", "/job:worker/replica:0/task:0"
PS0, W0, W1 = f"{PS}/device:CPU:0", f"{W}/device:CPU:0", f"{W}/device:CPU:1"
KEY = ("tensor_name", "send_device", "send_device_incarnation", "recv_device")
RNN = Path(__file__).resolve().parents[2] / "models" / "rnn_sequence_sum.yaml"


def _placed():
    """a on ps feeds b on worker CPU:1 and e on worker CPU:0; n on worker CPU:1 waits on ^a and
    ^f (which sends the worker nothing else); the Const c feeds the ps and worker CPU:0."""
    b = GraphBuilder()
    b.add_op("Const", attrs={"value": np.ones((2, 3), np.float32), "dtype": "float32"}, name="c", device=PS0)
    b.add_op("Add", ["c", "c"], name="a", device=PS0)
    b.add_op("Neg", ["c"], name="f", device=PS0)
    b.add_op("Identity", ["a"], name="b", device=W1)
    b.add_op("Identity", ["a"], name="e", device=W0)
    b.add_op("Identity", ["c"], name="k", device=W0)
    b.add_op("NoOp", name="n", device=W1, control_inputs=["a", "f"])
    return b.graph_def


def _key(src, dst, tensor, inc):
    return f"{{tensor_name={tensor}, send_device={src}, send_device_incarnation={inc}, recv_device={dst}}}"


def test_master_partitions_by_task_with_one_pair_per_tensor_and_task():
    r = partition_by_task(_placed(), PartitionOptions(incarnations={PS0: 7, W0: 5}))
    assert list(r.partitions) == [PS, W]
    for g in r.partitions.values():
        assert_closed(g)
    data, ctrl = _key(PS0, W1, "a:0", 7), _key(PS0, W1, "f/_ctrl_to_worker_0:0", 7)
    assert golden(r.partitions[PS], KEY) == [
        f"c = Const() @{PS0}",
        f"a = Add(c, c) @{PS0}",
        f"f = Neg(c) @{PS0}",
        f"a/_send_0_to_worker_0 = _Send(a) @{PS0} {data}",
        f"f/_ctrl_to_worker_0 = _HostConst(^f) @{PS0}",
        f"f/_send_ctrl_to_worker_0 = _Send(f/_ctrl_to_worker_0) @{PS0} {ctrl}",
    ]
    # One _Recv for both consumers, on its first consumer's device; the nodes keep their devices.
    # ^a waits on a's _Recv (a's value comes anyway); ^f, with nothing else from f, on a dummy.
    # The Const is copied, not sent each step.
    assert golden(r.partitions[W], KEY) == [
        f"a/_recv_0_on_worker_0 = _Recv() @{W1} {data}",
        f"c/_copy_on_worker_0 = Const() @{W0}",
        f"f/_recv_ctrl_on_worker_0 = _Recv() @{W1} {ctrl}",
        f"b = Identity(a/_recv_0_on_worker_0) @{W1}",
        f"e = Identity(a/_recv_0_on_worker_0) @{W0}",
        f"k = Identity(c/_copy_on_worker_0) @{W0}",
        f"f/_ctrl_on_worker_0 = Identity(f/_recv_ctrl_on_worker_0) @{W1}",
        f"n = NoOp(^a/_recv_0_on_worker_0, ^f/_ctrl_on_worker_0) @{W1}",
    ]
    np.testing.assert_array_equal(r.partitions[W].node("c/_copy_on_worker_0").attrs["value"], np.ones((2, 3)))
    assert [(t.tensor, t.src_device, t.dst_device) for t in r.transfers] == [
        ("a:0", PS0, W1), ("f/_ctrl_to_worker_0:0", PS0, W1),
    ]  # fmt: skip


def test_worker_partitions_its_piece_by_device():
    piece = partition_by_task(_placed(), PartitionOptions(incarnations={PS0: 7, W0: 5})).partitions[W]
    r = partition_piece(piece, {W0: 5, W1: 3})
    assert list(r.partitions) == [W0, W1]
    names = {d: {n.name for n in g.nodes} for d, g in r.partitions.items()}
    assert names[W1] == {"a/_recv_0_on_worker_0", "f/_recv_ctrl_on_worker_0", "b", "f/_ctrl_on_worker_0", "n",
                         "a/_recv_0_on_worker_0/_send_0_to_CPU_0"}  # fmt: skip
    assert names[W0] == {"a/_recv_0_on_worker_0/_recv_0_on_CPU_0", "e", "c/_copy_on_worker_0", "k"}
    # The cross-task receive is untouched; the hop between the task's devices is a local pair.
    assert [(t.tensor, t.src_device, t.dst_device) for t in r.transfers] == [("a/_recv_0_on_worker_0:0", W1, W0)]
    recv = next(n for n in r.partitions[W0].nodes if n.op == "_Recv")
    assert recv.attrs["send_device_incarnation"] == 3


def _run_in_process(step, devices, args, n_ret):
    """Every task's piece partitioned by device as its worker does, all run at once with one
    rendezvous (the keys carry the devices, so cross-task and local pairs meet there)."""
    executors = [Executor(g, devices[d], graph_seed=3) for piece in step.pieces.values() for d, g in piece.items()]
    rv = Rendezvous(partitions=len(executors))
    frame = CallFrame(list(args), n_ret)
    handles = [ex.run_async(rendezvous=rv, frame=frame, step_id=1) for ex in executors]
    for h in handles:
        h.wait(timeout=20)
        assert h.error is None, h.error
    return [v for v in frame.retvals if v is not UNSET]


def test_rnn_loop_split_over_tasks_and_their_devices_runs_as_locally():
    """The RNN's loop round-robin over 3 tasks of 2 devices: the loop spans tasks (task-level
    control loops) and the devices inside them (device-level ones, where a task without the
    LoopCond follows the one it receives)."""
    spec = load_spec(RNN)
    x = np.random.default_rng(2).uniform(-1, 1, (5, 8, 1)).astype(np.float32)
    with Session(spec.graph_def, SessionConfig(graph_seed=3)) as local:
        local.run([], targets=[spec.lowered.init_op])
        want = local.run("prediction", {"x": x})
    cluster = ClusterSpec({"ps": 1, "worker": 2}, task_devices={"ps": "cpu:2", "worker": "cpu:2"},
                          placement="round_robin")  # fmt: skip
    graph, assignment = cluster.constrained(spec.graph_def), TaskAssignment(cluster)
    compile_kw = {"incarnations": {d: 11 for d in cluster.all_devices}}
    init = compile_cluster_step(graph, cluster, assignment, targets=[spec.lowered.init_op], **compile_kw)
    step = compile_cluster_step(graph, cluster, assignment, feeds=["x"], fetches=["prediction:0"], unroll_limit=0,
                                **compile_kw)  # fmt: skip
    borrowed = [
        t for t, g in step.graphs.items()
        for f, info in ControlFlowInfo(g).frames.items()
        if info.loop_cond is None and len({n.device for n in g.nodes if ControlFlowInfo(g).frame_of[n.name] == f}) > 1
    ]  # fmt: skip
    assert borrowed, "no task holds a loop over its devices without the LoopCond: the case is not exercised"
    devices = {d.name: d for job, t in cluster.tasks
               for d in local_devices("cpu:2", job=job, task=t)}  # fmt: skip
    _run_in_process(init, devices, [], 0)
    got = _run_in_process(step, devices, [x], 1)
    np.testing.assert_allclose(got[0], want, rtol=1e-6, atol=1e-6)


def test_inspect_pieces_are_what_workers_make():
    cluster = ClusterSpec({"ps": 1, "worker": 1}, task_devices={"worker": "cpu:2"})
    spec = load_spec(RNN.parent / "digits_mlp.yaml")
    step = compile_cluster_step(cluster.constrained(spec.graph_def), cluster, TaskAssignment(cluster),
                                feeds=["images"], fetches=["probs:0"])  # fmt: skip
    assert set(step.pieces) == set(step.graphs)
    for task, piece in step.pieces.items():
        again = partition_piece(step.graphs[task]).partitions
        assert {d: [n.name for n in g.nodes] for d, g in piece.items()} == \
            {d: [n.name for n in g.nodes] for d, g in again.items()}  # fmt: skip
        assert all(d.startswith(task + "/") for d in piece)


def test_only_pieces_that_never_wait_run_one_call_at_a_time():
    """A ps's dataflow calls go to its serial "flow" group only when nothing in them can wait on
    another call: a queue's dequeue (waiting for an enqueue) keeps the pool."""
    from specflow.distributed.task_partition import FLOW_GROUP, flow_group

    pieces = partition_by_task(_placed(), PartitionOptions()).partitions
    assert flow_group(pieces[W]) == FLOW_GROUP  # its _Recv's values come with the call
    b = GraphBuilder()
    b.add_op("FIFOQueueV2", attrs={"component_types": ["float32"]}, name="q", device=PS0)
    b.add_op("QueueDequeueV2", ["q"], attrs={"component_types": ["float32"]}, name="d", device=PS0)
    assert flow_group(b.graph_def) == {}
