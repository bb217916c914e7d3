"""ScaleAndTranslate's gradient is its adjoint: <A x, y> = <x, A^T y> for the gradient op's A^T, and
the gradient graph of sum(w * ScaleAndTranslate(x)) is ScaleAndTranslateGrad(w)."""

from __future__ import annotations

import numpy as np
import pytest

from specflow.graph import dtypes
from specflow.graph.builder import GraphBuilder
from specflow.ops.eval import evaluate_op
from specflow.runtime.session import Session
from specflow.train.gradients import gradients

RNG = np.random.default_rng(5)


@pytest.mark.parametrize("kernel_type, antialias, size, scale, translation", [
    ("lanczos3", True, [3, 4], [0.5, 0.8], [0.0, 0.0]),
    ("keyscubic", False, [7, 4], [1.4, 0.8], [-0.5, 0.3]),
    ("gaussian", True, [2, 9], [0.4, 1.8], [0.2, -1.0]),
    ("mitchellcubic", True, [5, 5], [1.0, 1.0], [0.0, 0.0]),
])
def test_gradient_op_is_the_adjoint(kernel_type, antialias, size, scale, translation):
    x = RNG.standard_normal((2, 5, 5, 3)).astype(np.float32)
    y = RNG.standard_normal((2, *size, 3)).astype(np.float32)
    attrs = {"kernel_type": kernel_type, "antialias": antialias}
    args = [np.array(scale, np.float32), np.array(translation, np.float32)]
    ax = evaluate_op("ScaleAndTranslate", [x, np.array(size, np.int32), *args], **attrs)[0]
    aty = evaluate_op("ScaleAndTranslateGrad", [y, x, *args], **attrs)[0]
    assert aty.shape == x.shape
    np.testing.assert_allclose(np.sum(ax.astype(np.float64) * y), np.sum(x.astype(np.float64) * aty), rtol=1e-5)


def test_gradient_graph_uses_the_gradient_op():
    b = GraphBuilder()
    x = b.add_op("Placeholder", attrs={"dtype": dtypes.float32, "shape": [1, 6, 4, 2]}, name="x").name
    out = b.add_op("ScaleAndTranslate", [x, b.const(np.array([3, 5], np.int32)), b.const(np.array([0.5, 1.25], np.float32)),
                                         b.const(np.array([0.0, 0.0], np.float32))],
                   {"kernel_type": "triangle", "antialias": True}).name
    w = RNG.standard_normal((1, 3, 5, 2)).astype(np.float32)
    loss = b.add_op("Sum", [b.add_op("Mul", [out, b.const(w)]).name, b.const(np.arange(4, dtype=np.int32))]).name
    (grad,) = gradients(b, [loss], [x])
    xv = RNG.standard_normal((1, 6, 4, 2)).astype(np.float32)
    with Session(b.graph_def) as s:
        got = s.run(grad, {"x": xv})
    want = evaluate_op("ScaleAndTranslateGrad", [w, xv, np.array([0.5, 1.25], np.float32), np.array([0.0, 0.0], np.float32)],
                       kernel_type="triangle", antialias=True)[0]
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_unknown_kernel_type_is_a_one_line_error():
    from specflow.errors import SpecflowError

    with pytest.raises(SpecflowError, match="unknown kernel_type 'cubic'"):
        evaluate_op("ScaleAndTranslate", [np.zeros((1, 2, 2, 1), np.float32), np.array([1, 1], np.int32),
                                          np.array([0.5, 0.5], np.float32), np.zeros(2, np.float32)], kernel_type="cubic")
