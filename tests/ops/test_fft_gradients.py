"""Gradients of the real transforms against central differences in TF's convention: RFFT's real
input gets dL/dx for L = re(sum(conj(G) * y)); IRFFT's complex input gets dL/d re + i dL/d im for
L = sum(G * y). Cropped and padded fft_lengths included (TF's own gradients fail on those)."""

from __future__ import annotations

import numpy as np
import pytest

from specflow.graph.builder import GraphBuilder
from specflow.graph.dtypes import complex128, float64
from specflow.runtime.session import Session
from specflow.train.gradients import gradients

RNG = np.random.default_rng(9)
EPS = 1e-6

CASES = [
    ("RFFT", (2, 8), [8]), ("RFFT", (2, 7), [5]), ("RFFT", (3, 4), [7]),
    ("RFFT2D", (2, 3, 4), [3, 4]), ("RFFT2D", (3, 5), [2, 6]), ("RFFT3D", (2, 2, 3), [2, 2, 3]),
    ("IRFFT", (2, 5), [8]), ("IRFFT", (2, 4), [7]), ("IRFFT", (3, 6), [6]),
    ("IRFFT2D", (3, 3), [3, 4]), ("IRFFT2D", (2, 4, 2), [4, 3]), ("IRFFT3D", (2, 2, 3), [2, 2, 4]),
]  # fmt: skip


@pytest.mark.parametrize(("op", "shape", "n"), CASES, ids=[f"{op}-{shape}-{n}" for op, shape, n in CASES])
def test_real_transform_gradient_is_tfs(op, shape, n):
    inverse = op.startswith("I")
    x = RNG.uniform(-1, 1, shape) + (1j * RNG.uniform(-1, 1, shape) if inverse else 0)
    b = GraphBuilder()
    ph = b.add_op("Placeholder", [], {"dtype": complex128 if inverse else float64, "shape": list(shape)}, name="x").name
    attrs = {"Treal": float64, "Tcomplex": complex128}
    out = b.add_op(op, [ph, b.const(np.array(n, np.int32), name="n")], attrs, name="op").name
    oshape = b.spec(out).shape.as_list()
    g = RNG.uniform(-1, 1, oshape) + (0 if inverse else 1j * RNG.uniform(-1, 1, oshape))
    (grad,) = gradients(b, [out], [ph], grad_ys=[b.const(g, float64 if inverse else complex128, name="G")])
    with Session(b.graph_def) as s:
        got = s.run(grad, {ph: x})

        def loss(v):
            y = s.run(out, {ph: v})
            return float(np.sum(g * y)) if inverse else float(np.sum(np.conj(g) * y).real)

        want = np.zeros_like(x)
        for j in range(x.size):
            for step in (EPS, 1j * EPS) if inverse else (EPS,):
                up, down = x.copy().reshape(-1), x.copy().reshape(-1)
                up[j] += step
                down[j] -= step
                d = (loss(up.reshape(shape)) - loss(down.reshape(shape))) / (2 * EPS)
                want.reshape(-1)[j] += d if step == EPS else 1j * d
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
