"""place(): constraints, colocation, kernels, soft placement, the greedy cost model, error texts."""

from __future__ import annotations

import numpy as np
import pytest

from specflow.errors import DeviceError, Location
from specflow.graph.builder import GraphBuilder
from specflow.ops.registry import kernel_summary
from specflow.runtime.place import PlacementOptions, place
from specflow.runtime.prune import PruneOptions, prune
from tests.runtime.golden import assert_golden, cpu, gpu

DEVICES = [cpu(0), cpu(1), gpu(0)]


def _place(b: GraphBuilder, devices=DEVICES, **kw):
    return place(b.graph_def, PlacementOptions(list(devices), **kw))


def _adds(b: GraphBuilder, **devices) -> None:
    """c -> one Add per keyword, named by it and requesting the given device."""
    b.const(np.ones(4, np.float32), name="c")
    for name, dev in devices.items():
        b.add_op("Add", ["c", "c"], name=name, device=dev)


def _matmul_chain(b: GraphBuilder, prefix: str, n: int = 128, device: str = "") -> None:
    """An expensive chain: const -> MatMul -> MatMul (2 * n^3 flops each)."""
    c = b.const(np.ones((n, n), np.float32), name=f"{prefix}_c")
    m1 = b.add_op("MatMul", [c, c], name=f"{prefix}_m1", device=device).name
    b.add_op("MatMul", [m1, m1], name=f"{prefix}_m2", device=device)


def _variable(b: GraphBuilder, device: str = "", dtype: str = "float32") -> None:
    b.add_op("VarHandleOp", attrs={"dtype": dtype, "shape": [2], "shared_name": "v"}, name="v", device=device)
    b.add_op("ReadVariableOp", ["v"], {"dtype": dtype}, name="read")
    b.const(np.zeros(2, np.float32) if dtype == "float32" else np.array([b"", b""], object), name="zero")
    b.add_op("AssignVariableOp", ["v", "zero"], {"dtype": dtype}, name="assign")


# --- constraints --------------------------------------------------------------------------


def test_unconstrained_graph_on_one_cpu_stays_on_cpu0():
    b = GraphBuilder()
    _adds(b, a="", d="")
    r = _place(b, [cpu(0)])
    assert set(r.assignment.values()) == {cpu(0)}
    assert_golden(r.graph_def, ["c = Const() @CPU:0", "a = Add(c, c) @CPU:0", "d = Add(c, c) @CPU:0"])


@pytest.mark.parametrize(
    "request_, expected",
    [
        (cpu(1), cpu(1)),  # full name
        ("/device:GPU:0", gpu(0)),  # partial
        ("/cpu:1", cpu(1)),  # short form
        ("/job:localhost/device:CPU:*", cpu(0)),  # any CPU: the greedy choice (ties -> CPU:0)
        ("/job:localhost/replica:0/task:0", gpu(0)),  # only the task: a float op prefers the GPU
    ],
)
def test_full_and_partial_requests_are_honoured(request_, expected):
    b = GraphBuilder()
    _adds(b, a=request_)
    assert _place(b).assignment["a"] == expected


def test_with_a_gpu_float_work_goes_there_and_integer_work_stays_on_the_host():
    """TF's preference: every group computing on floating-point tensors to the GPU (variables and
    their updates with it), shapes and integer counters to the CPU, whatever the greedy
    simulation would gain by spreading small float ops over both (each crossing waits for the GPU)."""
    b = GraphBuilder()
    x = b.add_op("Placeholder", attrs={"dtype": "float32", "shape": [8, 4]}, name="x").name
    w = b.add_op("VarHandleOp", attrs={"dtype": "float32", "shape": [4, 4]}, name="w").name
    r = b.add_op("ReadVariableOp", [w], attrs={"dtype": "float32"}, name="r").name
    y = b.add_op("MatMul", [x, r], name="y").name
    b.add_op("Relu", [y], name="z")
    b.add_op("Neg", [y], name="n")  # cheap, and the CPU idle: still the GPU
    s = b.add_op("Shape", [x], name="s").name
    k = b.add_op("Placeholder", attrs={"dtype": "int32", "shape": []}, name="k").name
    b.add_op("AddV2", [k, k], name="count")
    b.add_op("Prod", [s, b.const(np.int32(0), name="axis")], name="size")
    got = _place(b, [cpu(0), gpu(0)]).assignment
    assert {n: got[n][-5:] for n in ("x", "w", "r", "y", "z", "n", "s", "k", "count", "size")} == {
        "x": "GPU:0", "w": "GPU:0", "r": "GPU:0", "y": "GPU:0", "z": "GPU:0", "n": "GPU:0",
        "s": "GPU:0",  # it reads a float tensor where that lives
        "k": "CPU:0", "count": "CPU:0", "size": "CPU:0",
    }  # fmt: skip
    only_cpus = _place(b, [cpu(0), cpu(1)]).assignment
    assert set(only_cpus.values()) <= {cpu(0), cpu(1)}


def test_devices_are_normalized_and_every_node_gets_a_full_name():
    b = GraphBuilder()
    _adds(b, a="/gpu:0")
    r = _place(b, ["/job:localhost/replica:0/task:0/cpu:0", "/job:localhost/replica:0/task:0/gpu:0"])
    assert r.assignment == {"c": gpu(0), "a": gpu(0)}  # the const goes with its only consumer


def test_colocation_groups_follow_the_constrained_member():
    b = GraphBuilder()
    _adds(b, a=cpu(1))
    b.add_op("Identity", ["a"], name="i", colocate_with=["a"])
    b.add_op("Identity", ["i"], name="j", colocate_with=["i"])
    r = _place(b)
    assert r.assignment["i"] == r.assignment["j"] == cpu(1)
    assert r.groups["a"] == r.groups["i"] == r.groups["j"] != r.groups["c"]


def test_resource_edges_colocate_a_variable_with_its_users():
    b = GraphBuilder()
    _variable(b, device="/device:GPU:0")
    r = _place(b)
    assert {r.assignment[n] for n in ("v", "read", "assign")} == {gpu(0)}
    assert r.groups["v"] == r.groups["read"] == r.groups["assign"]


def test_default_device_is_a_preference():
    b = GraphBuilder()
    _adds(b, a="", d=cpu(1))
    b.const(np.array([b"x"], object), name="s")
    b.add_op("Add", ["s", "s"], name="cat")  # strings: no GPU kernel
    r = _place(b, default_device="/device:GPU:0")
    assert (r.assignment["a"], r.assignment["d"], r.assignment["cat"]) == (gpu(0), cpu(1), cpu(0))


def test_args_and_retvals_sit_with_their_consumer_and_producer():
    b = GraphBuilder()
    b.add_op("Placeholder", attrs={"dtype": "float32", "shape": [4]}, name="x")
    b.add_op("Identity", ["x"], name="i", device=cpu(1))
    pruned = prune(b.graph_def, PruneOptions(fetches=["i"], feeds=["x"])).graph_def
    r = place(pruned, PlacementOptions(DEVICES))
    assert r.assignment == {"_arg_x_0_0": cpu(1), "i": cpu(1), "_retval_i_0_0": cpu(1)}


# --- soft placement -----------------------------------------------------------------------


def test_soft_placement_relaxes_index_then_type():
    b = GraphBuilder()
    _adds(b, a="/device:CPU:7", g="/device:GPU:1", t="/device:TPU:0")
    with pytest.raises(DeviceError, match="cannot place 'a'"):
        _place(b)
    r = _place(b, soft_placement=True)
    # CPU:7 -> another CPU; GPU:1 -> GPU:0 (the requested type wins over a faster CPU); TPU -> any.
    assert (r.assignment["a"], r.assignment["g"]) == (cpu(0), gpu(0))
    assert r.assignment["t"] in DEVICES


def test_soft_placement_moves_a_node_without_a_kernel():
    b = GraphBuilder()
    b.const(np.array([b"x"], object), name="s")
    b.add_op("Add", ["s", "s"], name="cat", device="/device:GPU:0")
    with pytest.raises(DeviceError, match="no GPU kernel for Add with T=string"):
        _place(b)
    assert _place(b, soft_placement=True).assignment["cat"] == cpu(0)


def test_soft_placement_drops_conflicting_colocated_requests():
    b = GraphBuilder()
    _variable(b, device="/device:GPU:0")
    b.graph_def.node("read").device = cpu(1)
    r = _place(b, soft_placement=True)
    assert r.assignment["v"] == r.assignment["read"] == r.assignment["assign"]


# --- the greedy cost model ----------------------------------------------------------------


def test_two_expensive_chains_go_to_two_devices():
    b = GraphBuilder()
    _matmul_chain(b, "a")
    _matmul_chain(b, "b")
    r = _place(b, [cpu(0), cpu(1)])
    assert {r.assignment[n] for n in ("a_c", "a_m1", "a_m2")} == {cpu(0)}
    assert {r.assignment[n] for n in ("b_c", "b_m1", "b_m2")} == {cpu(1)}
    one_matmul = 2 * 128**3 / 5e9
    assert 2 * one_matmul < r.estimated_makespan < 3 * one_matmul  # the chains overlap


def test_cheap_independent_ops_stay_together():
    b = GraphBuilder()
    _adds(b, a="", d="")
    r = _place(b, [cpu(0), cpu(1)])
    assert set(r.assignment.values()) == {cpu(0)}


def test_big_matmuls_prefer_the_gpu():
    b = GraphBuilder()
    _matmul_chain(b, "a")
    assert {d for n, d in _place(b).assignment.items()} == {gpu(0)}


def test_measured_costs_change_the_decision():
    b = GraphBuilder()
    _matmul_chain(b, "a", device=cpu(0))
    b.const(np.ones((128, 128), np.float32), name="b_c")
    b.graph_def.node("b_c").device = cpu(0)  # b's input lives on CPU:0: moving b costs a transfer
    b.add_op("MatMul", ["b_c", "b_c"], name="b_m")
    devices = [cpu(0), cpu(1)]
    # Estimated: CPU:0 is busy with a's two MatMuls, so b runs on CPU:1 despite the transfer.
    assert _place(b, devices).assignment["b_m"] == cpu(1)
    # Measured: a's MatMuls turned out to be quick, so CPU:0 is free and b stays next to its input.
    measured = {"a_m1": 1e-6, "a_m2": 1e-6}
    r = _place(b, devices, cost_model="measured", measured_costs=measured)
    assert r.assignment["b_m"] == cpu(0)


# --- error texts --------------------------------------------------------------------------


def test_error_no_such_device():
    b = GraphBuilder()
    with b.location(Location("model.yaml", 3, 5)):
        _matmul_chain(b, "m", device="/device:GPU:0")
    with pytest.raises(DeviceError) as e:
        _place(b, [cpu(0)])
    assert str(e.value) == (
        "model.yaml:3:5: node 'm_m1': cannot place 'm_m1' (MatMul, requested /device:GPU:0): "
        f"no such device; devices: {cpu(0)}; kernels: {kernel_summary('MatMul')}"
    )


def test_error_no_kernel_for_dtype():
    b = GraphBuilder()
    b.const(np.array([b"x"], object), name="s")
    b.add_op("Add", ["s", "s"], name="cat", device="/device:GPU:0")
    with pytest.raises(DeviceError) as e:
        _place(b)
    assert e.value.message == (
        "cannot place 'cat' (Add, requested /device:GPU:0): no GPU kernel for Add with T=string; "
        f"devices: {', '.join(DEVICES)}; kernels: {kernel_summary('Add')}"
    )


def test_error_colocation_conflict_names_the_chain():
    b = GraphBuilder()
    _variable(b, device="/device:GPU:0")
    b.add_op("Identity", ["read"], name="copy", device="/device:CPU:0", colocate_with=["read"])
    with pytest.raises(DeviceError) as e:
        _place(b)
    assert e.value.node == "copy"
    assert e.value.message.startswith(
        "cannot place 'copy' (Identity, requested /device:CPU:0): colocated with 'v' (VarHandleOp, "
        "requested /device:GPU:0) through copy -(loc:@read)- read -(resource edge)- v, and their "
        "requested devices conflict; devices: "
    )


def test_error_colocated_member_without_kernel():
    b = GraphBuilder()
    b.const(np.array([b"x"], object), name="s")
    _adds(b)
    b.add_op("Add", ["c", "c"], name="f", device="/device:GPU:0", colocate_with=["s"])
    with pytest.raises(DeviceError) as e:
        _place(b)
    assert e.value.message.startswith(
        "cannot place 'f' (Add, requested /device:GPU:0): colocated with 's' (Const) through "
        "f -(loc:@s)- s, which has no GPU kernel for dtype=string; "
    )
    assert e.value.message.endswith(
        f"kernels: {kernel_summary('Add')}; kernels of 's': {kernel_summary('Const')}"
    )


def test_error_bad_options():
    b = GraphBuilder()
    _adds(b, a="")
    with pytest.raises(DeviceError, match="unknown cost model 'magic'"):
        _place(b, cost_model="magic")
    with pytest.raises(DeviceError, match="is not a device name"):
        _place(b, ["/device:CPU:*"])
