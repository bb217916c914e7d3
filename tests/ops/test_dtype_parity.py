"""Dtype and edge-case parity with TF's CPU kernels, found by scripts/tf_dtype_sweep.py: each
expected value is TF 2.21's (checked there) or the numpy computation TF's kernel performs."""

import ml_dtypes
import numpy as np
import pytest

from specflow.api.op_functions import call
from specflow.errors import SpecflowError

BF16 = ml_dtypes.bfloat16


def _np(t):
    return np.asarray(t.numpy())


def test_complex_squared_difference_is_real():
    # TF: v * conj(v) with v = x - y, each product rounded apart, so the imaginary part is exactly
    # 0; numpy's fused complex multiply left residues like 7.09e-09j on these values.
    x = np.array([0.17576265 - 0.28609264j, -0.41525054 - 0.7597117j, -0.22435734 + 1.0016177j], np.complex64)
    y = np.array([0.9875483 + 0.24169156j, -1.1125349 - 1.4482583j, -0.834701 - 0.7467483j], np.complex64)
    out = _np(call("SquaredDifference", x, y))
    d = x - y
    assert out.dtype == np.complex64
    assert np.all(out.imag == 0)
    np.testing.assert_array_equal(out.real, d.real * d.real + d.imag * d.imag)


def test_bfloat16_floordiv_floors_the_rounded_quotient():
    # Eigen divides in bfloat16 (rounding the quotient) and then floors: -31.125 / 0.0942383 is
    # -330.28 in float32, -330 in bfloat16; TF gives [-330, -462, 11, -5, -560].
    x = np.array([-31.125, -116.5, -10.9375, 17.625, 45.25], BF16)
    y = np.array([0.0942383, 0.251953, -0.996094, -3.51562, -0.0805664], BF16)
    out = _np(call("FloorDiv", x, y))
    assert out.dtype == BF16
    assert out.astype(np.float32).tolist() == [-330, -462, 11, -5, -560]


@pytest.mark.parametrize("op, expect", [("UnsortedSegmentMax", "min"), ("UnsortedSegmentMin", "max")])
def test_bfloat16_empty_segments_hold_bfloat16_limits(op, expect):
    # TF fills an empty segment with bfloat16's own lowest/highest (-+3.38953e38), which float32's
    # (-+3.40282e38) would round to -+inf.
    out = _np(call(op, np.array([1, 2], BF16), np.int32([0, 0]), np.int32(2)))
    limit = getattr(ml_dtypes.finfo(BF16), expect)
    assert out.dtype == BF16
    assert out[0] == (2 if op == "UnsortedSegmentMax" else 1)
    assert out[1] == limit and np.isfinite(out[1].astype(np.float32))


def test_float16_matrix_inverse():
    # TF inverts half matrices in float32 and rounds once (equal on 200 random matrices).
    a = np.array([[[1, 2], [3, 4.5]], [[2, 0.5], [-1, 3]]], np.float16)
    out = _np(call("MatrixInverse", a))
    assert out.dtype == np.float16
    np.testing.assert_array_equal(out, np.linalg.inv(a.astype(np.float32)).astype(np.float16))


def test_float16_cholesky_is_refused_like_tf():
    with pytest.raises(SpecflowError, match="no CPU kernel for Cholesky with T=float16"):
        call("Cholesky", np.eye(2, dtype=np.float16))


@pytest.mark.parametrize("keep", [False, True])
def test_complex_mean_of_nothing_is_zero(keep):
    # TF: 0j for a complex mean over an empty axis (NaN for float types).
    out = _np(call("Mean", np.zeros((2, 0), np.complex64), np.int32([-1]), keep_dims=keep))
    assert out.dtype == np.complex64 and out.shape == ((2, 1) if keep else (2,))
    assert np.all(out == 0)
    assert np.isnan(_np(call("Mean", np.zeros((2, 0), np.float32), np.int32([1])))).all()


def test_bfloat16_image_batch_norm_and_matmul_v3():
    # TF accepts bfloat16 for these; its values equal the float32 computation rounded once.
    r = np.random.default_rng(0)
    img = r.standard_normal((1, 3, 4, 2)).astype(BF16)
    bil = _np(call("ResizeBilinear", img, np.int32([5, 3]), half_pixel_centers=True))
    ref = _np(call("ResizeBilinear", img.astype(np.float32), np.int32([5, 3]), half_pixel_centers=True))
    assert bil.dtype == np.float32
    np.testing.assert_array_equal(bil, ref)
    near = _np(call("ResizeNearestNeighbor", img, np.int32([5, 3]), half_pixel_centers=True))
    assert near.dtype == BF16
    np.testing.assert_array_equal(near.astype(np.float32), _np(call(
        "ResizeNearestNeighbor", img.astype(np.float32), np.int32([5, 3]), half_pixel_centers=True)))
    x = r.standard_normal((2, 3, 3, 4)).astype(BF16)
    one = np.ones(4, np.float32)
    y = call("FusedBatchNormV3", x, one, one * 0.1, one * 0.2, one * 0.5, is_training=True)
    y32 = call("FusedBatchNormV3", x.astype(np.float32), one, one * 0.1, one * 0.2, one * 0.5, is_training=True)
    assert _np(y[0]).dtype == BF16
    np.testing.assert_array_equal(_np(y[0]), _np(y32[0]).astype(BF16))
    a, b = r.standard_normal((2, 3, 4)).astype(BF16), r.standard_normal((2, 4, 5)).astype(BF16)
    mm = _np(call("BatchMatMulV3", a, b, Tout="bfloat16"))
    assert mm.dtype == BF16
    np.testing.assert_array_equal(mm, (a.astype(np.float32) @ b.astype(np.float32)).astype(BF16))


def test_complex_cumprod_gradient_is_tfs_formula():
    # TF's _CumprodGrad, for complex too (no conjugates): DivNoNan(cumsum(cumprod(x) * dy,
    # the other direction), x).
    from specflow.graph import dtypes
    from specflow.graph.builder import GraphBuilder
    from specflow.runtime.session import Session
    from specflow.train.gradients import gradients

    x = np.array([1 + 2j, -0.5 + 1j, 2 - 1j, 0j])
    dy = np.array([0.5 - 1j, 2 + 0.25j, -1j, 1 + 1j])
    b = GraphBuilder()
    a = b.add_op("Placeholder", [], {"dtype": dtypes.complex128, "shape": [4]}, name="a").name
    y = b.add_op("Cumprod", [a, b.const(np.int32(0), name="axis")]).name
    (g,) = gradients(b, [y], [a], grad_ys=[b.const(dy, dtypes.complex128, name="dy")])
    got = Session(b.graph_def).run(g, {a: x})
    total = np.cumsum((np.cumprod(x) * dy)[::-1])[::-1]
    want = np.where(x == 0, 0, total / np.where(x == 0, 1, x))
    np.testing.assert_allclose(got, want, rtol=1e-14)


# TF 2.21's Elu and Selu of these inputs, as bit patterns: exp(x) - 1 with Eigen's exp (not
# expm1), so near 0 the cancellation shows (float32 Elu(-1e-5) is -1.001358e-05; a float16 or
# bfloat16 exp rounds to 1 there and the result is +0).
_X = [-1e-5, -3e-4, -1e-7, -0.3, -2.5, 1.5]
_TF_BITS = {
    ("float32", "Elu"): [0xB7280000, 0xB99D4000, 0xB4000000, 0xBE84B37A, 0xBF6AFC7A, 0x3FC00000],
    ("float32", "Selu"): [0xB793AE2B, 0xBA0A3B06, 0xB4610966, 0xBEE94D3B, 0xBFCE9088, 0x3FC9BC0E],
    ("float16", "Elu"): [0x0, 0x9000, 0x0, 0xB426, 0xBB58, 0x3E00],
    ("float16", "Selu"): [0x0, 0x9308, 0x0, 0xB74B, 0xBE74, 0x3E4E],
    ("bfloat16", "Elu"): [0x0, 0x0, 0x0, 0xBE84, 0xBF6B, 0x3FC0],
    ("bfloat16", "Selu"): [0x0, 0x0, 0x0, 0xBEE8, 0xBFCF, 0x3FC9],
}


@pytest.mark.parametrize("dt, op", list(_TF_BITS))
def test_elu_selu_equal_tf_bit_for_bit(dt, op):
    np_dt = BF16 if dt == "bfloat16" else np.dtype(dt)
    x = np.array(_X, np.float32).astype(np_dt)
    out = _np(call(op, x))
    assert out.dtype == np_dt
    assert out.view(np.uint32 if dt == "float32" else np.uint16).tolist() == _TF_BITS[(dt, op)]


def test_eigen_exp_equals_tf_bit_for_bit():
    # TF 2.21's float32 Exp: Eigen's polynomial (exp(-3e-4) is 1 ulp from numpy's correctly
    # rounded value), results below float32's smallest normal flushed to 0 (exp(-95)).
    from specflow.ops.eigen_math import exp_f32

    x = np.array([-3e-4, 0.1, 1.7, -20.5, 50.25, -95.0, 88.8, -np.inf, np.nan], np.float32)
    bits = exp_f32(x).view(np.uint32).tolist()
    assert bits[:8] == [0x3F7FEC58, 0x3F8D763E, 0x40AF2A94, 0x30ABD1D8, 0x63B47241, 0x0, 0x7F800000, 0x0]
    assert np.isnan(exp_f32(x)[8])


# TF 2.21's Softplus (x above -threshold, exp(x) below threshold, else log1p(exp(x)), with
# threshold = log(Eigen's epsilon of T) + 2: bfloat16 returns 2.9 itself, float16 computes 5.0)
# and SoftplusGrad (g / (exp(-x) + 1)), every step rounded to T; as bit patterns.
_SP_X = [-3.0, -2.9, 2.5, 2.9, 5.0, 7.5, -8.0, 0.1]
_SP_G = [1.0, -0.5, 2.0, 1.5, -1.0, 0.25, 3.0, 1.0]
_SP_BITS = {
    ("float16", "Softplus"): [0x2A38, 0x2ADA, 0x4128, 0x41E9, 0x4502, 0x4780, 0x0D7F, 0x39F5],
    ("float16", "SoftplusGrad"): [0x2A13, 0xA6AC, 0x3F65, 0x3DB0, 0xBBF2, 0x33FE, 0x1420, 0x3833],
    ("bfloat16", "Softplus"): [0x3D4C, 0x3D60, 0x4025, 0x403A, 0x40A0, 0x40F0, 0x39B0, 0x3F3E],
    ("bfloat16", "SoftplusGrad"): [0x3D42, 0xBCD5, 0x3FED, 0x3FB6, 0xBF7E, 0x3E80, 0x3A84, 0x3F06],
    ("float32", "SoftplusGrad"): [0x3D4241A2, 0xBCD59EF9, 0x3FEC948F, 0x3FB5FC8D, 0xBF7E4961, 0x3E7FDBC5,
                                  0x3A83DD73, 0x3F066509],
}


@pytest.mark.parametrize("dt, op", list(_SP_BITS))
def test_softplus_and_its_gradient_equal_tf_bit_for_bit(dt, op):
    np_dt = BF16 if dt == "bfloat16" else np.dtype(dt)
    x = np.array(_SP_X, np.float32).astype(np_dt)
    args = [x] if op == "Softplus" else [np.array(_SP_G, np.float32).astype(np_dt), x]
    out = _np(call(op, *args))
    assert out.dtype == np_dt
    assert out.view(np.uint32 if dt == "float32" else np.uint16).tolist() == _SP_BITS[(dt, op)]


def test_float32_softplus_gradient_flushes_denormals_like_tf():
    # exp(100) overflows: 1 / inf is 0; g / (exp(87) + 1) is a float32 denormal, 0 in TF.
    out = _np(call("SoftplusGrad", np.float32([1.0, 1e-3]), np.float32([-100.0, -87.0])))
    assert out.tolist() == [0.0, 0.0]


def test_bfloat16_truncate_div_and_squared_difference_round_each_step():
    # TF: trunc of the bfloat16-rounded quotient (-10.9375 / -0.996094 is 10.98 in float32, 11 in
    # bfloat16); the difference rounded to bfloat16 before it is squared (6.28125 - 0.972656 ->
    # 5.3125, squared 28.25, where the float32 difference gives 28.125).
    a = np.array([-10.9375, 45.25, 17.75, 6.28125, -6.59375, 32], BF16)
    b = np.array([-0.996094, -0.0805664, 1.04688, 0.972656, 3.375, 0.410156], BF16)
    assert _np(call("TruncateDiv", a, b)).astype(np.float32).tolist() == [11, -560, 17, 6, -1, 78]
    assert _np(call("SquaredDifference", a, b)).view(np.uint16).tolist() == [0x42C6, 0x4500, 0x438C, 0x41E2,
                                                                              0x42C8, 0x447A]


# TF 2.21's gradient kernels in bfloat16, which round every product and difference (Eigen's
# functors) where a float32 evaluation rounded once differs by up to 7 ulps (TanhGrad near 1).
_GY = [0.1, 0.35, 0.62, 0.9, 0.97, 0.5]
_GDY = [1.3, -0.7, 2.1, 0.45, -1.9, 3.3]
_GRAD_BITS = {
    "SigmoidGrad": [0x3DEF, 0xBE22, 0x3EFC, 0x3D28, 0xBD6B, 0x3F53],
    "TanhGrad": [0x3FA4, 0xBF1D, 0x3FA4, 0x3DB0, 0xBDF3, 0x401E],
    "RsqrtGrad": [0xBA2A, 0x3C74, 0xBE80, 0xBE27, 0x3F5C, 0xBE53],
    "ReciprocalGrad": [0xBC55, 0x3DAF, 0xBF4F, 0xBEBA, 0x3FE4, 0xBF53],
}


@pytest.mark.parametrize("op", list(_GRAD_BITS))
def test_bfloat16_gradient_kernels_equal_tf_bit_for_bit(op):
    y, dy = np.array(_GY, np.float32).astype(BF16), np.array(_GDY, np.float32).astype(BF16)
    out = _np(call(op, y, dy))
    assert out.dtype == BF16
    assert out.view(np.uint16).tolist() == _GRAD_BITS[op]


def test_bfloat16_sqrt_gradient_equals_tfs_vectorized_kernel():
    # TF's packet path, dy * (0.5 / y), on 16 elements (whole packets): its scalar path, which
    # arrays shorter than a packet take, rounds (0.5 * dy) / y instead (0x40CF for the first).
    y = np.array([0.1, 0.35, 0.62, 0.9, 0.97, 0.5, 0.23, 0.77] * 2, np.float32)
    dy = np.array([1.3, -0.7, 2.1, 0.45, -1.9, 3.3, 0.6, -1.1] * 2, np.float32) * np.repeat([1, 1.7], 8)
    out = _np(call("SqrtGrad", y.astype(BF16), dy.astype(np.float32).astype(BF16)))
    assert out.view(np.uint16).tolist() == [0x40D0, 0xBF80, 0x3FD8, 0x3E7F, 0xBF7B, 0x4053, 0x3FA7, 0xBF37,
                                            0x4130, 0xBFD9, 0x4037, 0x3ED9, 0xBFD5, 0x40B4, 0x400E, 0xBF9B]


def test_bfloat16_softsign_gradient_equals_tf():
    f = (np.array(_GY, np.float32) * 7 - 3).astype(BF16)
    out = _np(call("SoftsignGrad", np.array(_GDY, np.float32).astype(BF16), f))
    assert out.view(np.uint16).tolist() == [0x3DF4, 0xBE96, 0x3EC3, 0x3CC6, 0xBDA8, 0x3FBC]


def test_float32_rsqrt_gradient_rounds_in_tfs_order():
    # TF: (-0.5 * (dy * y)) * (y * y); dy * (-0.5 * y**3) is an ulp off in 4 of these 6.
    y = np.array([0.37, 1.7, 2.9, 0.123, 5.5, 0.81], np.float32)
    out = _np(call("RsqrtGrad", y, np.array(_GDY, np.float32)))
    assert out.view(np.uint32).tolist() == [0xBD06DBCA, 0x3FDC1A38, 0xC1CCDE1D, 0xB9DB844F, 0x431E0E66, 0xBF607B0C]


def test_bfloat16_sigmoid_equals_tf_bit_for_bit():
    # TF: e / (1 + e) with e = exp(x), each step rounded to bfloat16; the once-rounded logistic
    # of -3 is 0x3D42, TF's 0x3D43.
    x = np.array([-12.0, -3.0, -0.0096, 0.5, 2.0, 11.1, 15.0, 0.83], BF16)
    out = _np(call("Sigmoid", x))
    assert out.dtype == BF16
    assert out.view(np.uint16).tolist() == [0x36CE, 0x3D43, 0x3EFF, 0x3F1F, 0x3F61, 0x3F80, 0x3F80, 0x3F32]
    edges = _np(call("Sigmoid", np.array([np.inf, -np.inf, np.nan, 100.0], BF16))).astype(np.float32)
    assert edges[0] == 1 and edges[1] == 0 and np.isnan(edges[2]) and edges[3] == 1


def test_float32_tanh_and_its_gradient_are_within_ulps_of_tf():
    # TF 2.21's Tanh is Eigen's [9/8] rational approximation; float32 keeps numpy's correctly
    # rounded tanh (Eigen's in numpy costs 8-35x), at most 2 ulps away (tanh(-5.5)), which
    # TanhGrad's 1 - y * y makes a 0.4% different gradient there: 2.7e-7 absolute.
    import specflow as sf

    x = np.float32([-5.5, -3.0, 0.3, 7.0])
    tf_y = np.array([0xBF7FFDCF, 0xBF7EBBE8, 0x3E9526EE, 0x3F7FFFE4], np.uint32).view(np.float32)
    y = _np(call("Tanh", x))
    assert np.abs(y.view(np.int32) - tf_y.view(np.int32)).max() <= 2
    t = sf.constant(x)
    with sf.GradientTape() as tape:
        tape.watch(t)
        out = call("Tanh", t)
    g = _np(tape.gradient(out, t))
    tf_g = np.array([0x388C4000, 0x3C21A580, 0x3F6A466A, 0x36600000], np.uint32).view(np.float32)
    np.testing.assert_allclose(g, tf_g, atol=3e-7, rtol=5e-3)
    assert _np(call("Tanh", np.float32([np.nan, np.inf, -np.inf, 1e-40]))).tolist()[1:3] == [1.0, -1.0]


def test_half_tanh_equals_tf_bit_for_bit():
    from specflow.ops.eigen_math import tanh_f32

    x = np.float16([-5.5, -3.0, 0.3, 7.0, -0.01])
    np.testing.assert_array_equal(_np(call("Tanh", x)), tanh_f32(x.astype(np.float32)).astype(np.float16))


@pytest.mark.parametrize("dt, y", [(np.float32, 3e38), (np.float64, 1e308)])
def test_floordiv_of_a_denormal_quotient_is_zero_like_tf(dt, y):
    # -1 / 3e38 is a float32 denormal (-1 / 1e308 a float64 one), flushed to -0 on TF's CPUs:
    # floor gives -0, not -1.
    out = _np(call("FloorDiv", np.array([-1.0, 1.0, -6.0], dt), np.array([y, y, 3.0], dt)))
    assert out.tolist() == [0.0, 0.0, -2.0] and np.signbit(out[0]) and not np.signbit(out[1])


def test_bfloat16_cumsum_rounds_every_partial_sum():
    # TF's bfloat16 scan rounds each running sum: 1 + 0.01 + 0.01 + ... creeps up one ulp at a
    # time (0x3F81, 0x3F82, ...), where a float32 sum rounded once gets 0x3F83 at the third.
    x = np.array([1.0, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 3.3, -1.7], np.float32).astype(BF16)
    out = _np(call("Cumsum", x, np.int32(0)))
    assert out.dtype == BF16
    assert out.view(np.uint16).tolist() == [0x3F80, 0x3F81, 0x3F82, 0x3F83, 0x3F84, 0x3F85, 0x3F86, 0x3F87,
                                            0x408B, 0x4029]
    back = _np(call("Cumsum", x, np.int32(-1), exclusive=True, reverse=True))
    assert back.view(np.uint16).tolist() == [0x3FD3, 0x3FD2, 0x3FD1, 0x3FD0, 0x3FCF, 0x3FCE, 0x3FCD, 0x3FCC,
                                             0xBFDA, 0x0]


def test_pad_of_strings_fills_empty_strings():
    out = _np(call("Pad", np.array([b"a", b"b"], object), np.array([[1, 2]], np.int32)))
    assert out.tolist() == [b"", b"a", b"b", b"", b""] and all(type(v) is bytes for v in out)
    out = _np(call("PadV2", np.array([[b"a"]], object), np.array([[0, 1], [1, 0]], np.int32), np.array(b"z", object)))
    assert out.tolist() == [[b"z", b"a"], [b"z", b"z"]]
