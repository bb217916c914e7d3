"""Cholesky's gradient, against finite differences through a symmetric input.

Cholesky reads only the lower triangle, while TF's gradient is the symmetric one (half to each
triangle), so it is checked as TF's own tests do: the input is A = X X^T + n I built from free
X, and d loss / d X (which the symmetric gradient gets exactly right) is compared."""

import numpy as np
import pytest

from specflow.graph.builder import GraphBuilder
from specflow.runtime.session import Session
from specflow.train.gradients import gradients


@pytest.mark.parametrize("batch", [(), (2,)])
def test_cholesky_gradient_through_a_symmetric_input(batch):
    rng = np.random.default_rng(5)
    n = 3
    x0 = rng.uniform(-1, 1, size=(*batch, n, n))
    w = rng.uniform(0.5, 1.5, size=(*batch, n, n))
    b = GraphBuilder()
    x = b.add_op("Placeholder", attrs={"dtype": "float64", "shape": list(x0.shape)}, name="x").name
    a = b.add_op("AddV2", [b.add_op("BatchMatMulV2", [x, x], {"adj_y": True}).name,
                           b.const(n * np.eye(n))]).name  # fmt: skip
    low = b.add_op("Cholesky", [a]).name
    loss = b.add_op("Sum", [b.add_op("Mul", [low, b.const(w)]).name, b.const(np.arange(x0.ndim, dtype=np.int32))]).name
    (g,) = gradients(b, [loss], [x])
    with Session(b.graph_def) as sess:
        got = sess.run(g, {x: x0})
        eps, numeric = 1e-6, np.zeros_like(x0)
        for j in range(x0.size):
            d = np.zeros(x0.size)
            d[j] = eps
            d = d.reshape(x0.shape)
            numeric.reshape(-1)[j] = (sess.run(loss, {x: x0 + d}) - sess.run(loss, {x: x0 - d})) / (2 * eps)
    np.testing.assert_allclose(got, numeric, rtol=1e-5, atol=1e-7)


def test_cholesky_of_a_matrix_that_is_not_positive_definite_is_a_clear_error():
    from specflow.errors import OpError
    from specflow.ops.eval import evaluate_op

    with pytest.raises(OpError, match="Cholesky decomposition was not successful"):
        evaluate_op("Cholesky", [np.array([[1.0, 2.0], [2.0, 1.0]])])
    with pytest.raises(OpError, match="Input is not invertible"):
        evaluate_op("MatrixInverse", [np.array([[1.0, 2.0], [2.0, 4.0]])])


def test_qr_gradient_refuses_full_matrices_with_more_rows_than_columns():
    from specflow.errors import GraphError

    b = GraphBuilder()
    x = b.add_op("Placeholder", attrs={"dtype": "float64", "shape": [4, 3]}, name="x").name
    q = b.add_op("Qr", [x], {"full_matrices": True}).name
    with pytest.raises(GraphError, match="full_matrices=true with more rows than columns"):
        gradients(b, [b.add_op("Sum", [q, b.const(np.array([0, 1], np.int32))]).name], [x])
