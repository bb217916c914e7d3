"""Gradients of complex_ops against central differences in TF's convention: for a real loss L of
a complex x the gradient is dL/d re(x) + i dL/d im(x); Complex's real inputs get dL/d input, with
L = re(sum(conj(G) * z)) for its complex output z."""

from __future__ import annotations

import numpy as np
import pytest

from specflow.errors import OpError
from specflow.graph.builder import GraphBuilder
from specflow.graph.dtypes import complex128, float64
from specflow.ops.eval import evaluate_op
from specflow.runtime.session import Session
from specflow.train.gradients import gradients

RNG = np.random.default_rng(5)
EPS = 1e-6


def _loss_and_grad(op: str, x: np.ndarray, out_complex: bool, attrs: dict):
    b = GraphBuilder()
    dtype = complex128 if np.iscomplexobj(x) else float64
    names = [b.add_op("Placeholder", [], {"dtype": dtype, "shape": list(x.shape)}, name="x").name]
    if op == "Complex":
        names.append(b.add_op("Placeholder", [], {"dtype": float64, "shape": list(x.shape)}, name="y").name)
    out = b.add_op(op, names, attrs, name="op").name
    shape = b.spec(out).shape.as_list()
    g = RNG.uniform(-1, 1, shape) + (1j * RNG.uniform(-1, 1, shape) if out_complex else 0)
    seed = b.const(g, complex128 if out_complex else float64, name="G")
    grads = gradients(b, [out], names, grad_ys=[seed])
    return b, names, out, g, grads


@pytest.mark.parametrize("op", ["Real", "Imag", "ComplexAbs", "Angle"])
def test_gradient_of_a_complex_to_real_op_is_tfs(op):
    x = RNG.uniform(-1.5, 1.5, (2, 3)) + 1j * RNG.uniform(-1.5, 1.5, (2, 3))
    b, names, out, g, grads = _loss_and_grad(op, x, False, {"Tout": float64})
    with Session(b.graph_def) as s:
        (got,) = s.run(list(grads), {"x": x})
        want = np.zeros_like(x)
        for j in range(x.size):
            for step in (EPS, 1j * EPS):
                up, down = x.copy().reshape(-1), x.copy().reshape(-1)
                up[j] += step
                down[j] -= step
                d = (np.sum(g * s.run(out, {"x": up.reshape(x.shape)}))
                     - np.sum(g * s.run(out, {"x": down.reshape(x.shape)}))) / (2 * EPS)  # fmt: skip
                want.reshape(-1)[j] += d if step == EPS else 1j * d
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def test_gradient_of_complex_is_the_real_and_imaginary_parts_summed_over_broadcasting():
    re, im = RNG.uniform(-1, 1, (2, 3)), RNG.uniform(-1, 1, (2, 3))
    b, names, out, g, grads = _loss_and_grad("Complex", re, True, {"Tout": complex128})
    with Session(b.graph_def) as s:
        got_re, got_im = s.run(list(grads), {"x": re, "y": im})
    np.testing.assert_allclose(got_re, g.real)  # L = re(conj(G) (re + i im)) = G.re re + G.im im
    np.testing.assert_allclose(got_im, g.imag)


def test_tout_must_be_the_other_half_of_t():
    with pytest.raises(OpError, match="Tout float32 does not go with T complex128"):
        evaluate_op("Real", [np.array([1 + 1j])])
