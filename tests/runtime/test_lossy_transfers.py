"""16-bit transfers (whitepaper 5.5): float32 tensors crossing devices travel as their top 16
bits, truncated before the _Send and widened with zero low bits after the _Recv."""

from __future__ import annotations

import numpy as np
import pytest

from specflow.graph.builder import GraphBuilder
from specflow.graph.control_flow import while_loop
from specflow.graph.dtypes import float32
from specflow.runtime.partition import PartitionOptions, lossy_transfer, partition
from specflow.runtime.session import Session, SessionConfig
from tests.runtime.golden import assert_closed, assert_golden, cpu

RNG = np.random.default_rng(55)
KEY = ("tensor_name", "send_device", "send_device_incarnation", "recv_device")


def bf16(x: np.ndarray) -> np.ndarray:
    """The reference: numpy's own bit arithmetic, the low 16 bits cleared."""
    return (np.ascontiguousarray(x, np.float32).view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)


def two_devices(transfer: str | None = None) -> GraphBuilder:
    """x = -p (float32) and k = -q (int32) on CPU:0; y = Neg(x) and z = k + k on CPU:1; w on
    CPU:1 waits on ^x. (A feed is placed with its consumers, so what crosses is computed.)"""
    b = GraphBuilder()
    b.add_op("Placeholder", attrs={"dtype": "float32", "shape": [4, 3]}, name="p", device=cpu(0))
    b.add_op("Placeholder", attrs={"dtype": "int32", "shape": [2]}, name="q", device=cpu(0))
    b.add_op("Neg", ["p"], {"_transfer": transfer} if transfer else {}, name="x", device=cpu(0))
    b.add_op("Neg", ["q"], name="k", device=cpu(0))
    b.add_op("Neg", ["x"], name="y", device=cpu(1))
    b.add_op("AddV2", ["k", "k"], name="z", device=cpu(1))
    b.add_op("NoOp", name="w", device=cpu(1), control_inputs=["x"])
    return b


def test_truncation_error_is_below_2_to_the_minus_7_and_rounds_toward_zero():
    """Over normal floats of every exponent: |x - bf16(x)| / |x| < 2^-7, |bf16(x)| <= |x| with
    the same sign, and a value with 7 mantissa bits comes back exactly."""
    x = (RNG.uniform(1, 2, 100_000) * 2.0 ** RNG.integers(-126, 127, 100_000)).astype(np.float32)
    x *= RNG.choice([-1, 1], x.size).astype(np.float32)
    with Session(two_devices().graph_def, SessionConfig(devices="cpu:2", lossy_transfers=True)) as s:
        y = s.run("y", {"p": x[:12].reshape(4, 3), "q": np.arange(2, dtype=np.int32)})
    np.testing.assert_array_equal(y, bf16(x[:12]).reshape(4, 3))
    from specflow.ops.eval import evaluate_op

    got = evaluate_op("_ExpandFromBfloat16", [evaluate_op("_TruncateToBfloat16", [x])[0]])[0]
    rel = np.abs(got.astype(np.float64) - x) / np.abs(x)
    assert rel.max() < 2.0**-7 and rel.max() > 2.0**-8  # the bound is reached, not beaten by luck
    assert np.all(np.abs(got) <= np.abs(x)) and np.all(np.sign(got) == np.sign(x))
    exact = bf16(x)
    np.testing.assert_array_equal(evaluate_op("_ExpandFromBfloat16", [evaluate_op("_TruncateToBfloat16", [exact])[0]])[0], exact)


def test_the_partitioner_converts_float32_edges_only():
    """Golden: x's _Send carries uint16 from a _TruncateToBfloat16 on CPU:0, its _Recv feeds an
    _ExpandFromBfloat16 on CPU:1; the int32 edge is untouched;
    the transfer records half the bytes; the control edge waits on the expansion, x's value
    being sent anyway."""
    r = partition(two_devices().graph_def, PartitionOptions(lossy_transfers=True, incarnations={cpu(0): 7}))
    for g in r.partitions.values():
        assert_closed(g)
    key0 = "send_device=CPU:0, send_device_incarnation=7, recv_device=CPU:1"
    assert_golden(r.partitions[cpu(1)], [
        "x/_recv_0_on_CPU_1 = _Recv() @CPU:1 {tensor_type=uint16, tensor_name=x:0, " + key0 + "}",
        "k/_recv_0_on_CPU_1 = _Recv() @CPU:1 {tensor_type=int32, tensor_name=k:0, " + key0 + "}",
        "x/_from_bfloat16_0_on_CPU_1 = _ExpandFromBfloat16(x/_recv_0_on_CPU_1) @CPU:1",
        "z = AddV2(k/_recv_0_on_CPU_1, k/_recv_0_on_CPU_1) @CPU:1 {T=int32}",
        "y = Neg(x/_from_bfloat16_0_on_CPU_1) @CPU:1 {T=float32}",
        "w = NoOp(^x/_from_bfloat16_0_on_CPU_1) @CPU:1",
    ], attrs=("T", "tensor_type", *KEY))  # fmt: skip
    cpu0 = {n.name: n for n in r.partitions[cpu(0)].nodes}
    trunc = cpu0["x/_to_bfloat16_0_for_CPU_1"]
    assert trunc.op == "_TruncateToBfloat16" and trunc.inputs == ["x"]
    assert cpu0["x/_send_0_to_CPU_1"].inputs == [trunc.name]
    assert cpu0["x/_send_0_to_CPU_1"].attrs["T"].name == "uint16"
    by_tensor = {t.tensor: t for t in r.transfers}
    assert by_tensor["x:0"].lossy and by_tensor["x:0"].bytes_per_step == 4 * 3 * 2
    assert by_tensor["x:0"].dtype == float32  # the tensor's own dtype: the wire is what changed
    assert not by_tensor["k:0"].lossy and by_tensor["k:0"].bytes_per_step == 8
    plain = partition(two_devices().graph_def)
    assert {t.tensor: t.bytes_per_step for t in plain.transfers}["x:0"] == 4 * 3 * 4
    assert not any(n.op == "_TruncateToBfloat16" for g in plain.partitions.values() for n in g.nodes)


@pytest.mark.parametrize(
    ("session", "attr", "lossy"),
    [(False, None, False), (True, None, True), (False, "bfloat16", True), (True, "float32", False)],
)
def test_a_nodes_transfer_attr_wins_over_the_session(session, attr, lossy):
    want = bf16 if lossy else (lambda v: v)
    x = RNG.normal(size=(4, 3)).astype(np.float32)
    with Session(two_devices(attr).graph_def, SessionConfig(devices="cpu:2", lossy_transfers=session)) as s:
        y, z = s.run(["y", "z"], {"p": x, "q": np.array([3, -4], np.int32)})
    np.testing.assert_array_equal(y, want(x))
    np.testing.assert_array_equal(z, [-6, 8])
    assert lossy_transfer(float32, {"_transfer": attr} if attr else {}, session) is lossy


def test_non_float32_tensors_are_never_converted():
    from specflow.graph.dtypes import float16, float64, int32

    for dtype in (float64, float16, int32):
        assert not lossy_transfer(dtype, {"_transfer": "bfloat16"}, True)


def test_a_loop_split_across_devices_truncates_every_iteration():
    """h = tanh(h @ u) five times, the MatMul on CPU:1: h and the product cross each iteration
    (u once: a constant Enter's value), each truncated; equal to numpy emulating the crossings."""
    b = GraphBuilder()
    u0 = RNG.normal(scale=0.6, size=(3, 3)).astype(np.float32)
    h0 = RNG.normal(size=(2, 3)).astype(np.float32)
    u = b.add_op("Placeholder", attrs={"dtype": "float32", "shape": [3, 3]}, name="u").name
    h_in = b.add_op("Placeholder", attrs={"dtype": "float32", "shape": [2, 3]}, name="h0").name

    def body(b, t, h):
        mm = b.add_op("MatMul", [h, u], name="mm").name
        return [b.add_op("AddV2", [t, b.const(np.int32(1))]).name, b.add_op("Tanh", [mm]).name]

    r = while_loop(b, lambda b, t, h: b.add_op("Less", [t, b.const(np.int32(5))]).name, body,
                   [b.const(np.int32(0), name="zero"), h_in], name="loop", var_names=["t", "h"])  # fmt: skip
    for n in b.graph_def.nodes:
        n.device = "/cpu:1" if n.op == "MatMul" else "/cpu:0"
    cfg = SessionConfig(devices="cpu:2", lossy_transfers=True, unroll_limit=0)
    with Session(b.graph_def, cfg) as s:
        got = s.run(r.outputs[1], {"u": u0, "h0": h0}, timeout_s=20)
        ops = [n.op for g in s.plan_for(r.outputs[1], ["u", "h0"]).partitions.values() for n in g.nodes]
    assert ops.count("_TruncateToBfloat16") == 3 and ops.count("_ExpandFromBfloat16") == 3
    h = h0
    for _ in range(5):
        h = np.tanh(bf16(bf16(h) @ bf16(u0)))
    np.testing.assert_allclose(got, h, rtol=1e-5, atol=1e-6)
    exact = h0
    for _ in range(5):
        exact = np.tanh(exact @ u0)
    assert np.abs(got - exact).max() > 1e-4  # the truncation is really there


def test_scalars_and_empty_tensors_keep_their_shapes():
    """A learning rate (a scalar) crossing to the parameter server stays a scalar."""
    b = GraphBuilder()
    for name, shape in (("s", []), ("e", [0, 3])):
        b.add_op("Placeholder", attrs={"dtype": "float32", "shape": shape}, name=f"{name}_in", device=cpu(0))
        b.add_op("Neg", [f"{name}_in"], name=name, device=cpu(0))
        b.add_op("Neg", [name], name=f"{name}_out", device=cpu(1))
    with Session(b.graph_def, SessionConfig(devices="cpu:2", lossy_transfers=True)) as s:
        got_s, got_e = s.run(["s_out", "e_out"], {"s_in": np.float32(1 / 3), "e_in": np.zeros((0, 3), np.float32)})
    assert got_s.shape == () and got_s == bf16(np.float32(1 / 3))
    assert got_e.shape == (0, 3)
