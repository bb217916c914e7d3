"""The SVD's gradient through s, u and v (TF's SvdGrad), against TensorFlow 2.21: 12 inputs (real
and complex, square, wide, tall, batched, full_matrices), each a phase-free loss of all three
outputs; the fixture holds TF's gradients. Also pinv's (through u and v) and the API's real s."""

from pathlib import Path

import numpy as np
import pytest

import specflow as sf

DATA = np.load(Path(__file__).parent / "data" / "tf_svd_gradients.npz")


def _loss(a, full, wu, wv, ws, wp):
    s, u, v = sf.linalg.svd(a, full_matrices=full)
    k = s.shape[-1]
    pair = sf.linalg.matmul(u[..., :, :k] * sf.cast(sf.expand_dims(s, -2), u.dtype), v[..., :, :k], adjoint_b=True)
    return (sf.reduce_sum(sf.cast(sf.abs(u) ** 2, sf.float64) * wu) + sf.reduce_sum(sf.cast(sf.abs(v) ** 2, sf.float64) * wv)
            + sf.reduce_sum(sf.cast(s, sf.float64) * ws) + sf.reduce_sum(sf.math.real(pair) * wp))  # fmt: skip


@pytest.mark.parametrize("i", range(12))
def test_svd_gradient_matches_tensorflow(i):
    a = sf.Variable(DATA[f"a{i}"])
    with sf.GradientTape() as tape:
        y = _loss(a, bool(DATA[f"w{i}"][0]), DATA[f"wu{i}"], DATA[f"wv{i}"], DATA[f"ws{i}"], DATA[f"wp{i}"])
    got, ref = tape.gradient(y, a).numpy(), DATA[f"g{i}"]
    np.testing.assert_allclose(got, ref, atol=1e-12 * np.abs(ref).max())


def _tape_and_numeric(f, a0):
    """The tape's gradient of scalar f at a0, and central differences (step 1e-6)."""
    a = sf.Variable(a0)
    with sf.GradientTape() as tape:
        y = f(a)
    got = tape.gradient(y, a).numpy()
    eps, num = 1e-6, np.zeros_like(a0)
    for idx in np.ndindex(*a0.shape):
        d = np.zeros_like(a0)
        d[idx] = eps
        num[idx] = (float(f(a0 + d)) - float(f(a0 - d))) / (2 * eps)
    return got, num


def test_svd_gradient_matches_finite_differences():
    a0 = np.random.default_rng(7).standard_normal((4, 3))
    w = np.random.default_rng(8).standard_normal((4, 3))

    def f(a):
        _, u, _ = sf.linalg.svd(a)
        return sf.reduce_sum(u ** 2 * w)

    got, num = _tape_and_numeric(f, a0)
    np.testing.assert_allclose(got, num, atol=1e-6)


def test_complex_svd_values_are_real_and_abs_is_complex_abs():
    a = np.array([[1 + 2j, 0], [0, 3 - 4j]], np.complex64)
    s = sf.linalg.svd(a, compute_uv=False)
    assert s.dtype == sf.float32
    np.testing.assert_allclose(np.sort(s.numpy()), [np.sqrt(5), 5], rtol=1e-6)
    assert sf.abs(a).dtype == sf.float32 and abs(sf.constant(a)).dtype == sf.float32
    np.testing.assert_allclose(sf.abs(a).numpy(), np.abs(a), rtol=1e-6)


def test_math_divide_of_integers_is_true_division():
    assert sf.math.divide(3, 2).numpy() == 1.5 and sf.math.divide(3, 2).dtype == sf.float64
    assert (sf.constant(6, sf.int8) / sf.constant(4, sf.int8)).dtype == sf.float32  # 8/16-bit ints: float32
    assert sf.divide(sf.constant(7, sf.int64), 2).dtype == sf.float64


def test_pinv_gradient_matches_finite_differences():
    got, num = _tape_and_numeric(lambda a: sf.reduce_sum(sf.linalg.pinv(a) ** 2), np.random.default_rng(0).standard_normal((4, 3)))
    np.testing.assert_allclose(got, num, rtol=1e-5)
    np.testing.assert_allclose(got[0], [8.96555432, -22.07439045, -16.01119252], rtol=1e-7)  # TF 2.21's
