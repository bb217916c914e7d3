"""Reshape's -1 on tensors with zero elements, resolved by TF's rule, and Prod's gradient over an
empty dimension (which reshapes to [0, -1]). Expected shapes are TensorFlow's (reshape_op.h)."""

import numpy as np
import pytest

from specflow.graph.builder import GraphBuilder
from specflow.graph.shapes import Shape
from specflow.ops.eval import evaluate_op
from specflow.runtime.session import Session
from specflow.train.gradients import gradients


@pytest.mark.parametrize(
    "src, target, want",
    [
        ([0, 8], [0, -1, 4], [0, 2, 4]),  # the case: zero dims skipped on both sides
        ([0, 8], [-1, 4], [0, 4]),  # no zero in the new shape: -1 is 0 / 4
        ([0, 8], [-1, 0], [8, 0]),  # nonzero product 1; the input counts 8 without its zero dim
        ([3, 0], [-1, 0], [3, 0]),
        ([2, 0, 3], [-1, 0, 6], [1, 0, 6]),
        ([2, 4], [-1, 4], [2, 4]),
    ],
)
def test_minus_one_resolves_like_tf(src, target, want):
    out = evaluate_op("Reshape", [np.zeros(src, np.float32), np.array(target, np.int32)])[0]
    assert list(out.shape) == want
    b = GraphBuilder()
    x = b.add_op("Placeholder", attrs={"dtype": "float32", "shape": src}).name
    node = b.add_op("Reshape", [x, b.const(np.array(target, np.int32))])
    assert b.spec(node.name).shape == Shape(want)  # the static shape agrees with the kernel


def test_minus_one_with_a_zero_in_a_nonempty_tensor_is_an_error():
    with pytest.raises(Exception, match=r"\[8, 0\] has 0 elements"):
        evaluate_op("Reshape", [np.zeros((2, 4), np.float32), np.array([-1, 0], np.int32)])


@pytest.mark.parametrize("shape, axis, dynamic", [([0, 3], 0, False), ([2, 0, 3], 1, False), ([0, 3], 0, True)])
def test_prod_gradient_over_an_empty_dimension(shape, axis, dynamic):
    b = GraphBuilder()
    ph_shape = [None] * len(shape) if dynamic else shape
    x = b.add_op("Placeholder", attrs={"dtype": "float64", "shape": ph_shape}, name="x").name
    p = b.add_op("Prod", [x, b.const(np.array([axis], np.int32))]).name
    w = np.arange(1, 4, dtype=np.float64)  # weights on the output's last dim (3)
    loss = b.add_op("Sum", [b.add_op("Mul", [p, b.const(w)]).name, b.const(np.arange(len(shape) - 1, dtype=np.int32))]).name
    (g,) = gradients(b, [loss], [x])
    with Session(b.graph_def) as sess:
        prod, lv, grad = sess.run([p, loss, g], {x: np.zeros(shape)})
    out_shape = [d for i, d in enumerate(shape) if i != axis]
    np.testing.assert_array_equal(prod, np.ones(out_shape))  # the empty product is 1
    assert lv == pytest.approx(6.0 * int(np.prod(out_shape[:-1])))
    assert grad.shape == tuple(shape) and grad.dtype == np.float64
