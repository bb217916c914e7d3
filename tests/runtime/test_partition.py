"""partition(): one closed GraphDef per device, _Send/_Recv pairs (whitepaper Figure 4)."""

from __future__ import annotations

import numpy as np
import pytest

from specflow.errors import DeviceError
from specflow.graph.builder import GraphBuilder
from specflow.graph.dtypes import float32
from specflow.runtime.partition import PartitionOptions, partition
from specflow.runtime.place import PlacementOptions, place
from specflow.runtime.prune import PruneOptions, prune
from tests.runtime.golden import assert_closed, assert_golden, cpu, golden, gpu

KEY = ("tensor_name", "send_device", "send_device_incarnation", "recv_device")
SHOW = ("T", "tensor_type", *KEY)


def _figure4() -> GraphBuilder:
    """a on CPU:0 feeds b and d on GPU:0 and e on CPU:1; n on CPU:1 waits on ^a."""
    b = GraphBuilder()
    b.add_op(
        "Const", attrs={"value": np.ones((2, 3), np.float32), "dtype": "float32"}, name="c", device=cpu(0)
    )
    b.add_op("Add", ["c", "c"], name="a", device=cpu(0))
    b.add_op("Identity", ["a"], name="b", device=gpu(0))
    b.add_op("Identity", ["a"], name="d", device="/job:localhost/replica:0/task:0/gpu:0")  # normalized
    b.add_op("Identity", ["a"], name="e", device=cpu(1))
    b.add_op("NoOp", name="n", device=cpu(1), control_inputs=["a", "e"])
    return b


def _partition(graph_def, **kw):
    r = partition(graph_def, PartitionOptions(**kw))
    for g in r.partitions.values():
        assert_closed(g)
    return r


def _send(x, dst, label="0", name="a:0"):
    key = f"tensor_name={name}, send_device=CPU:0, send_device_incarnation=7, recv_device={dst}"
    return f"a/_send_{label}_to_{dst.replace(':', '_')} = _Send({x}) @CPU:0 {{T=float32, {key}}}"


def _recv(dst, label="0", name="a:0"):
    key = f"tensor_name={name}, send_device=CPU:0, send_device_incarnation=7, recv_device={dst}"
    return f"a/_recv_{label}_on_{dst.replace(':', '_')} = _Recv() @{dst} {{tensor_type=float32, {key}}}"


def test_figure4_one_recv_per_destination_device_and_a_control_edge():
    r = _partition(_figure4().graph_def, incarnations={"/job:localhost/replica:0/task:0/cpu:0": 7})
    assert list(r.partitions) == [cpu(0), cpu(1), gpu(0)]
    assert_golden(
        r.partitions[cpu(0)],
        [
            "c = Const() @CPU:0",
            "a = Add(c, c) @CPU:0 {T=float32}",
            _send("a", "GPU:0"),
            _send("a", "CPU:1"),
        ],
        SHOW,
    )
    assert_golden(
        r.partitions[cpu(1)],
        [
            _recv("CPU:1"),
            "e = Identity(a/_recv_0_on_CPU_1) @CPU:1 {T=float32}",
            # ^a rides on a's value, sent to CPU:1 anyway: its _Recv is done once a has run.
            "n = NoOp(^a/_recv_0_on_CPU_1, ^e) @CPU:1",
        ],
        SHOW,
    )
    assert_golden(
        r.partitions[gpu(0)],
        [
            _recv("GPU:0"),
            "b = Identity(a/_recv_0_on_GPU_0) @GPU:0 {T=float32}",
            "d = Identity(a/_recv_0_on_GPU_0) @GPU:0 {T=float32}",
        ],
        SHOW,
    )
    assert r.partitions[cpu(0)].node("a/_send_0_to_GPU_0").attrs["client_terminated"] is False


def test_a_control_edge_alone_sends_a_dummy():
    """^a to a device a sends nothing else to: a dummy scalar made after a carries it."""
    b = _figure4()
    b.add_op("NoOp", name="m", device=gpu(1), control_inputs=["a"])
    r = _partition(b.graph_def, incarnations={"/job:localhost/replica:0/task:0/cpu:0": 7})
    cpu0 = golden(r.partitions[cpu(0)])
    assert "a/_ctrl_to_GPU_1 = _HostConst(^a) @CPU:0" in cpu0
    assert _send("a/_ctrl_to_GPU_1", "GPU:1", "ctrl", "a/_ctrl_to_GPU_1:0") in golden(r.partitions[cpu(0)], SHOW)
    assert_golden(
        r.partitions[gpu(1)],
        [
            "a/_recv_ctrl_on_GPU_1 = _Recv() @GPU:1 {tensor_type=float32, tensor_name=a/_ctrl_to_GPU_1:0, "
            "send_device=CPU:0, send_device_incarnation=7, recv_device=GPU:1}",
            "a/_ctrl_on_GPU_1 = Identity(a/_recv_ctrl_on_GPU_1) @GPU:1 {T=float32}",
            "m = NoOp(^a/_ctrl_on_GPU_1) @GPU:1",
        ],
        SHOW,
    )
    dummy = r.partitions[cpu(0)].node("a/_ctrl_to_GPU_1")
    assert dummy.attrs["dtype"] is float32 and dummy.attrs["value"] == np.float32(0)


def test_a_control_edge_from_a_switch_keeps_its_dummy():
    """A live Switch's untaken output is dead: waiting on its value's _Recv would make the
    waiting node dead too, so ^switch keeps a dummy even where an output is sent."""
    b = GraphBuilder()
    b.add_op("Placeholder", attrs={"dtype": "float32", "shape": []}, name="x", device=cpu(0))
    b.add_op("Placeholder", attrs={"dtype": "bool", "shape": []}, name="p", device=cpu(0))
    b.add_op("Switch", ["x", "p"], name="s", device=cpu(0))
    b.add_op("Identity", ["s:1"], name="t", device=cpu(1))
    b.add_op("NoOp", name="n", device=cpu(1), control_inputs=["s"])
    r = _partition(b.graph_def)
    n = r.partitions[cpu(1)].node("n")
    assert n.inputs == ["^s/_ctrl_on_CPU_1"]


def test_transfers_and_bytes_per_step():
    b = _figure4()
    b.add_op("Placeholder", attrs={"dtype": "int64", "shape": [None, 3]}, name="p", device=cpu(0))
    b.add_op("Identity", ["p"], name="q", device=gpu(0))
    r = _partition(b.graph_def)
    got = [
        (t.tensor, t.dst_device, str(t.shape), t.bytes_per_step, t.send_node, t.recv_node)
        for t in r.transfers
    ]
    assert got == [
        ("a:0", gpu(0), "[2, 3]", 24, "a/_send_0_to_GPU_0", "a/_recv_0_on_GPU_0"),
        ("a:0", cpu(1), "[2, 3]", 24, "a/_send_0_to_CPU_1", "a/_recv_0_on_CPU_1"),
        ("p:0", gpu(0), "[?, 3]", None, "p/_send_0_to_GPU_0", "p/_recv_0_on_GPU_0"),
    ]
    assert all(t.src_device == cpu(0) and t.dtype.name in ("float32", "int64") for t in r.transfers)
    # The default incarnation is used when none is given.
    assert r.partitions[cpu(0)].node("p/_send_0_to_GPU_0").attrs["send_device_incarnation"] == 1


def test_every_send_has_a_matching_recv():
    r = _partition(_figure4().graph_def)
    nodes = [n for g in r.partitions.values() for n in g.nodes]
    sends = sorted(tuple(n.attrs[k] for k in KEY) for n in nodes if n.op == "_Send")
    recvs = sorted(tuple(n.attrs[k] for k in KEY) for n in nodes if n.op == "_Recv")
    assert sends == recvs and len(sends) == 2
    names = [n.name for n in nodes]
    assert len(names) == len(set(names))


def test_prune_place_partition_end_to_end():
    b = GraphBuilder()
    for prefix in ("a", "b"):
        c = b.const(np.ones((128, 128), np.float32), name=f"{prefix}_c")
        b.add_op("MatMul", [c, c], name=f"{prefix}_m")
    b.add_op("AddV2", ["a_m", "b_m"], name="sum")
    b.add_op("Placeholder", attrs={"dtype": "float32"}, name="unused")
    pruned = prune(b.graph_def, PruneOptions(fetches=["sum"]))
    placed = place(pruned.graph_def, PlacementOptions([cpu(0), cpu(1)]))
    r = _partition(placed.graph_def)
    assert_golden(
        r.partitions[cpu(1)],
        ["b_c = Const() @CPU:1", "b_m = MatMul(b_c, b_c) @CPU:1", "b_m/_send_0_to_CPU_0 = _Send(b_m) @CPU:1"],
    )
    assert_golden(
        r.partitions[cpu(0)],
        [
            "a_c = Const() @CPU:0",
            "b_m/_recv_0_on_CPU_0 = _Recv() @CPU:0",
            "a_m = MatMul(a_c, a_c) @CPU:0",
            "sum = AddV2(a_m, b_m/_recv_0_on_CPU_0) @CPU:0",
            "_retval_sum_0_0 = _Retval(sum) @CPU:0",
        ],
    )
    assert [t.bytes_per_step for t in r.transfers] == [128 * 128 * 4]


def test_unplaced_node_is_an_error():
    b = _figure4()
    b.graph_def.node("e").device = ""
    with pytest.raises(DeviceError, match="'e' \\(Identity\\) has no device"):
        partition(b.graph_def)
    b.graph_def.node("e").device = "/device:CPU:1"
    with pytest.raises(DeviceError, match="device '/device:CPU:1' is not a full device name"):
        partition(b.graph_def)
