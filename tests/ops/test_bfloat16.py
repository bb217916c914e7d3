"""bfloat16: TF's round-to-nearest-even casts (literal bit patterns), and kernels run as TF's CPU
kernels run bfloat16 (inputs widened to float32, each result rounded once), checked against
values worked out by hand."""

import ml_dtypes
import numpy as np

from specflow.graph import dtypes
from specflow.ops.eval import evaluate_op

BF16 = ml_dtypes.bfloat16


def _bits(x) -> list[int]:
    return np.asarray(x).view(np.uint16).tolist()


def test_cast_rounds_to_nearest_even():
    # 1 + 2^-8 lies halfway between 1 (0x3F80) and 1 + 2^-7 (0x3F81): even wins (0x3F80);
    # 1 + 3 * 2^-8 halfway between 0x3F81 and 0x3F82: even wins (0x3F82); just above half rounds up.
    x = np.array([1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-8 + 2**-20, -2.0, 65504.0], np.float32)
    out = evaluate_op("Cast", [x], SrcT="float32", DstT="bfloat16")[0]
    assert out.dtype == BF16
    assert _bits(out) == [0x3F80, 0x3F82, 0x3F81, 0xC000, 0x4780]
    back = evaluate_op("Cast", [out], SrcT="bfloat16", DstT="int32")[0]
    assert back.tolist() == [1, 1, 1, -2, 65536]


def test_arithmetic_rounds_each_result_once():
    a = np.array([1.0, 256.0, 3.0], BF16)
    b = np.array([2**-8, 1.0, 1 / 3], BF16)
    total = evaluate_op("AddV2", [a, b])[0]
    assert total.dtype == BF16
    assert total.astype(np.float32).tolist() == [1.0, 256.0, 3.328125]  # 1 + 2^-8 ties to 1; 257 to 256
    # A mean of bf16 sums in float32 and rounds once: (1 + 2^-8 + 2^-8 + 2^-8 + 2^-8) / 1 -> 1.015625
    m = evaluate_op("Mean", [np.array([[1.0, 2**-8, 2**-8, 2**-8, 2**-8]], BF16), np.array([1], np.int32)])[0]
    assert m.dtype == BF16 and m.astype(np.float32).tolist() == [np.float32(BF16((1 + 4 * 2**-8) / 5))]


def test_matmul_accumulates_in_float32():
    a = np.full((1, 4), 1.0, BF16)
    b = np.array([[1.0], [2**-8], [2**-8], [2**-8]], BF16)
    out = evaluate_op("MatMul", [a, b])[0]
    # 1 + 3 * 2^-8 in float32, rounded once to even: 1 + 2^-6 (0x3F82); rounding after each add gives 1.
    assert out.dtype == BF16 and _bits(out) == [[0x3F82]]


def test_bfloat16_is_a_floating_dtype():
    assert dtypes.as_dtype("bfloat16") is dtypes.bfloat16 and dtypes.bfloat16.is_floating
    assert dtypes.as_dtype(np.dtype(BF16)) is dtypes.bfloat16 and dtypes.as_dtype(14) is dtypes.bfloat16


def test_session_fetches_keep_bfloat16():
    # A fetch leaves through _Retval, which has no outputs: run as a float32 kernel it handed back
    # the widened float32 value (found by tf_fuzz_parity.py --family 4's dtype check)
    from specflow.graph.builder import GraphBuilder
    from specflow.runtime.session import Session

    b = GraphBuilder()
    x = b.add_op("Placeholder", [], {"dtype": dtypes.bfloat16, "shape": [3]}, name="x").name
    y = b.add_op("Mul", [x, x], {}, name="y").name
    with Session(b.graph_def) as s:
        got_x, got_y = s.run([x, y], {"x": np.array([1.5, -2.0, 3.0], BF16)})
    assert got_x.dtype == BF16 and got_y.dtype == BF16
    assert got_y.astype(np.float32).tolist() == [2.25, 4.0, 9.0]


def test_bfloat16_variables_stay_bfloat16_through_assigns_and_optimizer_updates():
    # Assign ops and optimizer kernels ran on widened float32 values: AssignAddVariableOp refused
    # to store the float32 sum into the bfloat16 variable, and an apply stored float32 into it.
    from specflow.graph.builder import GraphBuilder
    from specflow.runtime.session import Session

    b = GraphBuilder()
    bf = {"dtype": dtypes.bfloat16}
    v = b.add_op("VarHandleOp", [], {**bf, "shape": [2], "shared_name": "v"}, name="v").name
    x = b.add_op("Placeholder", [], {**bf, "shape": [2]}, name="x").name
    init = b.add_op("AssignVariableOp", [v, x], bf, name="init").name
    add = b.add_op("AssignAddVariableOp", [v, x], bf, name="add").name
    lr = b.add_op("Const", [], {**bf, "value": np.array(0.5, BF16)}, name="lr").name
    sgd = b.add_op("ResourceApplyGradientDescent", [v, lr, x], {"T": dtypes.bfloat16}, name="sgd").name
    read = b.add_op("ReadVariableOp", [v], bf, name="read").name
    feed = {"x": np.array([1.5, 2.3], BF16)}
    with Session(b.graph_def) as s:
        s.run([], feed, targets=[init])
        s.run([], feed, targets=[add])
        got = s.run(read)
        x2 = float(BF16(2.3))  # 2.296875
        assert got.dtype == BF16 and got.astype(np.float32).tolist() == [3.0, 2 * x2]
        s.run([], feed, targets=[sgd])  # v - 0.5 * x, in float32, rounded once (to even)
        got = s.run(read)
    want = [float(BF16(np.float32(3.0 - 0.75))), float(BF16(np.float32(2 * x2 - 0.5 * x2)))]
    assert got.dtype == BF16 and got.astype(np.float32).tolist() == want == [2.25, 3.4375]
