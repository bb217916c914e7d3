"""Gradients of complex inputs, against finite differences in TF's convention.

For a real loss L of a complex x, TF's gradient is dL/d re(x) + i dL/d im(x); with an upstream
gradient G of z = f(x, y), L = re(sum(conj(G) * z)), so a holomorphic f gets G * conj(f'(x)).
Each case seeds the op's output with a random complex G (``grad_ys``) and compares the gradient
with central differences of L along the real and the imaginary part of each element.
"""

from __future__ import annotations

import numpy as np
import pytest

from specflow.graph.builder import GraphBuilder
from specflow.graph.dtypes import complex128
from specflow.runtime.session import Session
from specflow.train.gradients import gradients

RNG = np.random.default_rng(77)


def _c(*shape, low=-1.5, high=1.5):
    return RNG.uniform(low, high, shape) + 1j * RNG.uniform(low, high, shape)


def _away(*shape):
    z = _c(*shape)
    return np.where(np.abs(z) < 0.4, z / np.abs(z) * 0.8, z)


UNARY = {
    "Neg": _c(2, 3), "Square": _c(2, 3), "Sqrt": _away(2, 3), "Rsqrt": _away(2, 3), "Exp": _c(2, 3),
    "Log": _away(2, 3), "Log1p": _away(2, 3) + 1.0, "Tanh": _c(2, 3, low=-0.7, high=0.7),
    "Sigmoid": _c(2, 3, low=-0.7, high=0.7), "Sin": _c(2, 3), "Cos": _c(2, 3), "Tan": _c(2, 3, low=-0.6, high=0.6),
    "Reciprocal": _away(2, 3), "Asin": _c(2, 3, low=-0.6, high=0.6), "Acos": _c(2, 3, low=-0.6, high=0.6),
    "Atan": _c(2, 3, low=-0.6, high=0.6), "Sinh": _c(2, 3), "Cosh": _c(2, 3), "Asinh": _c(2, 3, low=-0.6, high=0.6),
    "Acosh": _c(2, 3, low=1.5, high=2.5), "Atanh": _c(2, 3, low=-0.6, high=0.6), "Expm1": _c(2, 3),
    "Conj": _c(2, 3),
    "FFT": _c(2, 5), "IFFT": _c(2, 4), "FFT2D": _c(2, 3), "IFFT2D": _c(3, 2), "FFT3D": _c(2, 2, 2), "IFFT3D": _c(2, 1, 3),
}  # fmt: skip
BINARY = {
    "Add": (_c(2, 3), _c(3)), "AddV2": (_c(2, 3), _c(2, 3)), "Sub": (_c(3, 1), _c(2)),
    "Mul": (_c(2, 3), _c(3)), "Div": (_c(2, 3), _away(2, 1)), "RealDiv": (_c(3), _away(3)),
    "DivNoNan": (_c(2, 3), _away(3)), "Pow": (_away(2, 3), _c(2, 3, low=-0.8, high=0.8)),
}  # fmt: skip


PRODUCTS = {
    "MatMul": (_c(2, 3), _c(3, 4), {}),
    "MatMul-ta-tb": (_c(3, 2), _c(4, 3), {"transpose_a": True, "transpose_b": True}),
    "MatMul-tb": (_c(2, 3), _c(4, 3), {"transpose_b": True}),
    "BatchMatMulV2": (_c(2, 2, 3), _c(3, 2), {}),
    "BatchMatMulV2-adj": (_c(2, 3, 2), _c(2, 4, 3), {"adj_x": True, "adj_y": True}),
}


def _check(op: str, inputs: list[np.ndarray], eps: float = 1e-6, attrs: dict | None = None) -> None:
    b = GraphBuilder()
    names = [
        b.add_op("Placeholder", [], {"dtype": complex128, "shape": list(x.shape)}, name=f"x{i}").name
        for i, x in enumerate(inputs)
    ]
    out = b.add_op(op, names, dict(attrs or {}), name="op").name
    shape = b.spec(out).shape.as_list()
    g = RNG.uniform(-1, 1, shape) + 1j * RNG.uniform(-1, 1, shape)
    seed = b.const(g, complex128, name="G")
    grads = gradients(b, [out], names, grad_ys=[seed])
    with Session(b.graph_def) as sess:
        feeds = dict(zip(names, inputs))
        analytic = sess.run(list(grads), feeds)

        def loss(i, x):
            z = sess.run(out, {**feeds, names[i]: x})
            return float(np.sum(np.conj(g) * z).real)

        for i, (x, got) in enumerate(zip(inputs, analytic)):
            want = np.zeros_like(x)
            for j in range(x.size):
                for step in (eps, 1j * eps):
                    up, down = x.copy().reshape(-1), x.copy().reshape(-1)
                    up[j] += step
                    down[j] -= step
                    d = (loss(i, up.reshape(x.shape)) - loss(i, down.reshape(x.shape))) / (2 * eps)
                    want.reshape(-1)[j] += d if step == eps else 1j * d
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7, err_msg=f"{op}: gradient of input {i}")


@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary_complex_gradient_is_tfs(op):
    _check(op, [UNARY[op]])


@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_complex_gradient_is_tfs(op):
    _check(op, list(BINARY[op]))


@pytest.mark.parametrize("case", sorted(PRODUCTS))
def test_matrix_product_complex_gradient_is_tfs(case):
    x, y, attrs = PRODUCTS[case]
    _check(case.split("-")[0], [x, y], attrs=attrs)


def test_mul_gradient_is_dy_times_conj_of_the_other_input_literal():
    # TF: d/dx = dz * conj(y), d/dy = conj(x) * dz.
    b = GraphBuilder()
    x = b.const(np.array([1 + 2j]), complex128, name="x")
    y = b.const(np.array([3 - 1j]), complex128, name="y")
    z = b.add_op("Mul", [x, y], {}, name="z").name
    dz = b.const(np.array([1j]), complex128, name="dz")
    gx, gy = gradients(b, [z], [x, y], grad_ys=[dz])
    with Session(b.graph_def) as sess:
        got_x, got_y = sess.run([gx, gy])
    np.testing.assert_array_equal(got_x, [1j * (3 + 1j)])  # -1 + 3j
    np.testing.assert_array_equal(got_y, [(1 - 2j) * 1j])  # 2 + 1j


def test_squared_difference_mul_no_nan_xlogy_xdivy_keep_tfs_unconjugated_formulas():
    # TF writes these without conj: d SquaredDifference / dx = 2 dz (x - y); MulNoNan's are
    # MulNoNan(dz, y) and MulNoNan(x, dz); Xlogy's Xlogy(x != 0, y) dz and Xdivy(x, y) dz;
    # Xdivy's Xdivy(x != 0, y) dz and Xdivy(-x, y^2) dz.
    b = GraphBuilder()
    x = b.const(np.array([1 + 2j, 2j]), complex128, name="x")
    y = b.const(np.array([3 - 1j, 0j]), complex128, name="y")
    dz = b.const(np.array([1j, 1 + 1j]), complex128, name="dz")
    sd = b.add_op("SquaredDifference", [x, y], {}, name="sd").name
    mn = b.add_op("MulNoNan", [x, y], {}, name="mn").name
    g_sd = gradients(b, [sd], [x, y], grad_ys=[dz])
    g_mn = gradients(b, [mn], [x, y], grad_ys=[dz])
    y2 = b.const(np.array([3 - 1j, 2 + 0j]), complex128, name="y2")
    x2 = b.const(np.array([1 + 2j, 0j]), complex128, name="x2")
    xl = b.add_op("Xlogy", [x2, y2], {}, name="xl").name
    xd = b.add_op("Xdivy", [x2, y2], {}, name="xd").name
    g_xl = gradients(b, [xl], [x2, y2], grad_ys=[dz])
    g_xd = gradients(b, [xd], [x2, y2], grad_ys=[dz])
    with Session(b.graph_def) as sess:
        sdx, sdy, mnx, mny = sess.run(list(g_sd) + list(g_mn))
        xlx, xly, xdx, xdy = sess.run(list(g_xl) + list(g_xd))
    # log(3 - 1j) = 1.1512925464970229 - 0.3217505543966422j; (1 + 2j) / (3 - 1j) = 0.1 + 0.7j
    np.testing.assert_allclose(xlx, [0.3217505543966422 + 1.1512925464970229j, 0])  # 0 where x is 0
    np.testing.assert_allclose(xly, [-0.7 + 0.1j, 0])
    np.testing.assert_allclose(xdx, [(0.3 + 0.1j) * 1j, 0])  # 1 / (3 - 1j) = 0.3 + 0.1j; 0 where x is 0
    np.testing.assert_allclose(xdy, [-(1 + 2j) / (3 - 1j) ** 2 * 1j, 0])
    np.testing.assert_allclose(sdx, [2j * (-2 + 3j), 2 * (1 + 1j) * 2j])  # [-6-4j, -4+4j]
    np.testing.assert_allclose(sdy, -sdx)
    np.testing.assert_allclose(mnx, [1j * (3 - 1j), 0])  # 0 where y is 0
    np.testing.assert_allclose(mny, [(1 + 2j) * 1j, 2j * (1 + 1j)])
