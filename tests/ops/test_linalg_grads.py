"""Cholesky's gradient, against finite differences through a symmetric input; Qr's refusal of
full_matrices with more rows than columns, and its complex gradient in TF's convention.

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
    with pytest.raises(OpError, match=r"input must have rank >= 2, got shape \[3\]"):
        evaluate_op("Qr", [np.ones(3)])


def test_qr_gradient_refuses_full_tall_matrices_and_dynamic_shapes():
    from specflow.errors import GraphError

    b = GraphBuilder()
    x = b.add_op("Placeholder", attrs={"dtype": "float64", "shape": [4, 3]}, name="x").name
    q = b.add_op("Qr", [x], {"full_matrices": True}).name
    with pytest.raises(GraphError, match="full_matrices=true with more rows than columns"):
        gradients(b, [b.add_op("Sum", [q, b.const(np.array([0, 1], np.int32))]).name], [x])
    x = b.add_op("Placeholder", attrs={"dtype": "float64", "shape": [None, 3]}, name="x2").name
    q = b.add_op("Qr", [x]).name
    with pytest.raises(GraphError, match="the gradient of Qr needs static matrix dimensions"):  # as TF
        gradients(b, [b.add_op("Sum", [q, b.const(np.array([0, 1], np.int32))]).name], [x])


@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 3), (3, 5)])
def test_qr_complex_gradient_is_tfs(shape):
    # TF's convention (tests/ops/test_complex_gradients.py): for L = re(sum(conj(Gq) q + conj(Gr) r)),
    # the gradient is dL/d re(x) + i dL/d im(x); both outputs are seeded.
    from specflow.graph.dtypes import complex128

    rng = np.random.default_rng(9)
    x0 = rng.uniform(-1, 1, shape) + 1j * rng.uniform(-1, 1, shape)
    b = GraphBuilder()
    x = b.add_op("Placeholder", attrs={"dtype": complex128, "shape": list(shape)}, name="x").name
    node = b.add_op("Qr", [x])
    outs = [node.name, f"{node.name}:1"]
    seeds = [rng.uniform(-1, 1, b.spec(o).shape.as_list()) * (1 + 0.5j) for o in outs]
    (g,) = gradients(b, outs, [x], grad_ys=[b.const(s, complex128) for s in seeds])
    with Session(b.graph_def) as sess:
        got = sess.run(g, {x: x0})

        def loss(v):
            return sum(float(np.sum(np.conj(s) * o).real) for s, o in zip(seeds, sess.run(outs, {x: v})))

        want, eps = np.zeros_like(x0), 1e-6
        for j in range(x0.size):
            for step in (eps, 1j * eps):
                d = np.zeros(x0.size, complex)
                d[j] = step
                d = d.reshape(shape)
                want.reshape(-1)[j] += (loss(x0 + d) - loss(x0 - d)) / (2 * eps) * (1 if step == eps else 1j)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
