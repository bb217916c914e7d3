"""Kernels with fast paths for the training step keep numpy's results and TF's errors exactly:
Mean divides in T (bit-equal to numpy's mean), binary ops check broadcasting only when numpy
refuses the shapes, reductions memoize their normalized axes, MatMul checks inner dimensions
only when the product fails."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from specflow.errors import OpError, SpecflowError
from specflow.ops.eval import evaluate_op

RNG = np.random.default_rng(11)


def _numpy_mean(x, axes, keep):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Mean of empty slice"
        out = np.asarray(np.mean(x, axis=axes, keepdims=keep), dtype=x.dtype)
    if x.dtype.kind == "c" and not all(x.shape[a] for a in axes):
        return np.zeros_like(out)  # TF's complex mean of nothing is 0, where numpy's is NaN
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.float16])
@pytest.mark.parametrize(
    "shape,axes",
    [((64,), (0,)), ((7, 13), (1,)), ((7, 13), (0, 1)), ((3, 0, 4), (1,)), ((5, 6, 7), (0, 2)), ((300, 301), (0, 1))],
)
def test_mean_is_bit_equal_to_numpy(dtype, shape, axes):
    scale = 10.0 ** RNG.uniform(-3, 3, size=shape)
    x = (RNG.standard_normal(shape) * scale).astype(dtype)
    if np.dtype(dtype).kind == "c":
        x = (x + 1j * RNG.standard_normal(shape)).astype(dtype)
    for keep in (False, True):
        (got,) = evaluate_op("Mean", [x, np.array(axes, np.int32)], keep_dims=keep)
        want = _numpy_mean(x, axes, keep)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)  # NaN (empty reductions) equal NaN here


def test_reduction_axes_are_checked_on_every_call():
    x = np.ones((2, 3), np.float32)
    for axes in ([1], [-1], [0, -1]):  # a memoized value must not hide a later bad one
        evaluate_op("Mean", [x, np.array(axes, np.int32)])
    with pytest.raises(OpError, match=r"Invalid reduction dimension 2 for input with 2 dimension\(s\)"):
        evaluate_op("Mean", [x, np.array([2], np.int32)])
    (got,) = evaluate_op("Mean", [np.ones((2, 3, 4), np.float32), np.array([2], np.int32)])
    assert got.shape == (2, 3)


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Maximum", "Minimum", "SquaredDifference", "Div", "FloorMod"])
def test_unbroadcastable_shapes_name_both(op):
    with pytest.raises(OpError, match=r"Incompatible shapes: \[2, 3\] vs. \[2\]"):
        evaluate_op(op, [np.ones((2, 3), np.float32), np.ones(2, np.float32)])


def test_divisions_report_the_shapes_before_a_zero_divisor():
    with pytest.raises(OpError, match="Incompatible shapes"):
        evaluate_op("FloorDiv", [np.ones((2, 3), np.int32), np.zeros(2, np.int32)])


def test_float_overflow_stays_silent():
    big = np.array([3e38], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (out,) = evaluate_op("Mul", [big, big])
        (mean,) = evaluate_op("Mean", [np.array([3e38, 3e38], np.float32), np.array([0], np.int32)])
    assert np.isinf(out[0]) and np.isinf(mean)


def test_matmul_of_every_type_keeps_the_type():
    for dtype in (np.float16, np.float32, np.float64, np.int32, np.int64, np.complex64):
        a = RNG.integers(-3, 3, size=(3, 4)).astype(dtype)
        b = RNG.integers(-3, 3, size=(4, 2)).astype(dtype)
        (got,) = evaluate_op("MatMul", [a, b])
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, a @ b)


def test_fused_matmul_rejects_what_it_cannot_run():
    a, b, bias = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32), np.ones(4, np.float32)
    with pytest.raises(OpError, match=r"unsupported fused_ops \['Relu'\]"):
        evaluate_op("_FusedMatMul", [a, b, bias], fused_ops=["Relu"], num_args=1)


def test_fused_conv2d_rejects_what_it_cannot_run():
    x, f = np.ones((1, 4, 4, 2), np.float32), np.ones((3, 3, 2, 5), np.float32)
    conv = {"strides": [1, 1, 1, 1], "padding": "SAME", "num_args": 1, "num_host_args": 0}
    with pytest.raises(OpError, match=r"unsupported fused_ops \['Relu'\]"):
        evaluate_op("_FusedConv2D", [x, f, np.ones(5, np.float32)], fused_ops=["Relu"], **conv)
    with pytest.raises(OpError, match=r"does not match the convolution's 5 output channels"):
        evaluate_op("_FusedConv2D", [x, f, np.ones(4, np.float32)], fused_ops=["BiasAdd"], **conv)


def test_quiet_fp_is_errstate_ignore_and_restores_the_callers_state():
    from specflow.ops.math_ops import quiet_fp

    with np.errstate(divide="raise", over="warn"):
        outer = np.geterr()
        with quiet_fp():
            assert np.geterr() == {"divide": "ignore", "over": "ignore", "under": "ignore", "invalid": "ignore"}
            assert np.isinf(np.float32(1) / np.float32(0))  # no FloatingPointError
        assert np.geterr() == outer
        with pytest.raises(FloatingPointError):
            np.float32(1) / np.float32(0)
    with np.errstate(invalid="raise"), quiet_fp():  # a new caller state is not served a stale one
        assert np.geterr()["invalid"] == "ignore"
    assert np.geterr()["invalid"] == "warn"


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int32])
def test_relu_grad_is_tfs_product(dtype):
    f = RNG.standard_normal((9, 7)).astype(dtype) if dtype != np.int32 else RNG.integers(-3, 3, (9, 7)).astype(dtype)
    g = (RNG.standard_normal((9, 7)) * 4).astype(dtype)
    if dtype != np.int32:  # NaN/inf gradients where features <= 0 give NaN, as TF's product does
        f[0, :3], g[0, :3] = -1, [np.nan, np.inf, -np.inf]
        f[1, 0], g[1, 0] = 2, np.nan
    with np.errstate(invalid="ignore"):
        (got,) = evaluate_op("ReluGrad", [g, f])
        want = g * (f > 0)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, want)
    assert np.array_equal(np.signbit(got), np.signbit(want))  # -0.0 stays -0.0


def test_sparse_xent_by_columns_matches_the_row_formula():
    f = (RNG.standard_normal((33, 10)) * 5).astype(np.float32)
    labels = RNG.integers(0, 10, 33)
    loss, backprop = evaluate_op("SparseSoftmaxCrossEntropyWithLogits", [f, labels])
    f64 = f.astype(np.float64)
    shifted = f64 - f64.max(axis=1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(loss, -logp[np.arange(33), labels], rtol=1e-5, atol=1e-6)
    want = np.exp(logp)
    want[np.arange(33), labels] -= 1
    assert backprop.shape == (33, 10) and backprop.dtype == np.float32
    np.testing.assert_allclose(backprop, want, rtol=1e-5, atol=1e-6)
    for bad in (-1, 10):
        labels[5] = bad
        with pytest.raises(OpError, match=rf"label value of {bad} \(labels\[5\]\)"):
            evaluate_op("SparseSoftmaxCrossEntropyWithLogits", [f, labels])


def test_a_kernel_instance_remembers_axes_per_array_not_per_node():
    from specflow.graph.builder import GraphBuilder
    from specflow.runtime.session import Session, SessionConfig

    b = GraphBuilder()
    b.add_op("Placeholder", attrs={"dtype": "float32", "shape": [2, 3]}, name="x")
    b.add_op("Placeholder", attrs={"dtype": "int32", "shape": [None]}, name="axes")
    b.add_op("Mean", ["x", "axes"], name="m")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    with Session(b.graph_def, SessionConfig(devices="cpu:1")) as sess:
        for axes in ([0], [1], [0, 1], [1]):
            np.testing.assert_array_equal(sess.run("m", {"x": x, "axes": np.array(axes, np.int32)}), x.mean(axis=tuple(axes)))
        with pytest.raises(SpecflowError, match="Invalid reduction dimension 2"):
            sess.run("m", {"x": x, "axes": np.array([2], np.int32)})


@pytest.mark.parametrize("devices", ["cpu:1", "cpu:2"])
def test_a_step_runs_quiet_and_gives_the_caller_its_fp_state_back(devices):
    # The executor installs the quiet state for a whole step (math_ops.QUIET_FP), kernels skip
    # their own quiet_fp then; the caller's state, even one that raises, is back afterwards.
    from specflow.graph.builder import GraphBuilder
    from specflow.runtime.session import Session, SessionConfig

    b = GraphBuilder()
    b.add_op("Placeholder", [], {"dtype": "float32", "shape": [2]}, name="x")
    b.add_op("Mul", ["x", "x"], {"T": "float32"}, name="sq", device="/device:CPU:0")
    b.add_op("Const", [], {"dtype": "int32", "value": np.array([0], np.int32)}, name="axes")
    b.add_op("Mean", ["sq", "axes"], {"T": "float32"}, name="mean", device=f"/device:CPU:{int(devices[-1]) - 1}")
    b.add_op("Log", ["mean"], {"T": "float32"}, name="log")
    big = np.array([3e38, 0], np.float32)
    with Session(b.graph_def, SessionConfig(devices=devices)) as sess:
        for _ in range(40):  # past the timed steps, onto the generated line
            with np.errstate(all="raise"), warnings.catch_warnings():
                warnings.simplefilter("error")
                out = sess.run(["sq", "mean", "log"], {"x": big})
                assert np.geterr() == {"divide": "raise", "over": "raise", "under": "raise", "invalid": "raise"}
        assert np.isinf(out[0][0]) and np.isinf(out[1]) and np.isinf(out[2])
        with np.errstate(over="raise"), pytest.raises(FloatingPointError):
            np.float32(3e38) * np.float32(10)  # the caller's state is its own again


def test_a_const_is_read_only_to_kernels_and_the_callers_own_when_fetched():
    """Const hands its kernels a read-only view (Reshape resolves a shape it saw once); a fetch
    of it, and a variable assigned it and then updated, leave the graph's value unchanged."""
    from specflow.graph.builder import GraphBuilder
    from specflow.runtime.session import Session

    b = GraphBuilder()
    x = b.add_op("Placeholder", attrs={"dtype": "float32", "shape": [None, 6]}, name="x").name
    shape = b.const(np.array([-1, 3], np.int32), name="shape")
    b.add_op("Reshape", [x, shape], name="r")
    k = b.const(np.ones(2, np.float32), name="k")
    v = b.add_op("VarHandleOp", attrs={"dtype": "float32", "shape": [2], "shared_name": "v"}, name="v").name
    b.add_op("AssignVariableOp", [v, k], {"dtype": "float32"}, name="init")
    b.add_op("AssignAddVariableOp", [v, k], {"dtype": "float32"}, name="inc")
    b.add_op("ReadVariableOp", [v], {"dtype": "float32"}, name="read")
    with Session(b.graph_def) as s:
        for n in (1, 2, 1):  # plans per fed batch, the kernel state shared by name
            assert s.run("r", {"x": np.zeros((n, 6), np.float32)}).shape == (2 * n, 3)
        got = s.run("k")
        got[:] = 7  # the caller's copy
        s.run([], targets=["init"])
        s.run([], targets=["inc"])
        np.testing.assert_array_equal(s.run("read"), [2, 2])
        np.testing.assert_array_equal(s.run("k"), [1, 1])


@pytest.mark.parametrize("n", [1, 5, 10, 33, 1000])
def test_softmax_of_one_row_equals_that_row_in_a_batch_bit_for_bit(n):
    rng = np.random.default_rng(n)
    rows = (rng.standard_normal((3, n)) * 10).astype(np.float32)
    batched = evaluate_op("Softmax", [rows])[0]
    for i in range(3):
        np.testing.assert_array_equal(evaluate_op("Softmax", [rows[i : i + 1]])[0], batched[i : i + 1])
        np.testing.assert_array_equal(evaluate_op("Softmax", [rows[i]])[0], batched[i])
    nan = rows[:1].copy()
    nan[0, 0] = np.nan
    assert np.isnan(evaluate_op("Softmax", [nan])[0]).all()
