"""RandomGamma's gradient in alpha: the implicit reparameterization (central differences of scipy's
gamma quantile at each sample's CDF, cases_stateless_random_dist._implicit_ref), summed over the
sample dims as TF's; and the one-line errors."""

import numpy as np
import pytest

from specflow.errors import OpError
from specflow.graph.builder import GraphBuilder
from specflow.ops.eval import evaluate_op
from specflow.runtime.session import Session
from specflow.train.gradients import gradients
from tests.ops.cases_stateless_random_dist import _implicit_ref


def test_random_gamma_gradient_is_the_implicit_reparameterization():
    alpha0 = np.array([[0.7, 2.0, 5.0]])
    w = np.array([[[1.0, -0.5, 2.0]], [[0.3, 1.5, -1.0]]])
    b = GraphBuilder()
    alpha = b.add_op("Placeholder", attrs={"dtype": "float64", "shape": [1, 3]}, name="alpha").name
    sample = b.add_op("RandomGamma", [b.const(np.array([2], np.int64)), alpha], {"seed": 7}).name
    loss = b.add_op("Sum", [b.add_op("Mul", [sample, b.const(w)]).name, b.const(np.array([0, 1, 2], np.int32))]).name
    (g,) = gradients(b, [loss], [alpha])
    with Session(b.graph_def) as sess:
        s, got = sess.run([sample, g], {alpha: alpha0})
    assert s.shape == (2, 1, 3)
    want = (w * _implicit_ref(np.broadcast_to(alpha0, s.shape), s)).sum(axis=0)
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_errors():
    with pytest.raises(OpError, match="must not contain negative dimensions"):
        evaluate_op("RandomGamma", [np.array([-1], np.int32), np.float32(1)])
    with pytest.raises(OpError, match="shape must be a vector"):
        evaluate_op("RandomPoissonV2", [np.int32(3), np.float64(1)])
    with pytest.raises(OpError, match="rate has a NaN"):
        evaluate_op("RandomPoissonV2", [np.array([2], np.int32), np.array([1.0, np.nan])])


def test_truncated_normal_refuses_what_tensorflow_refuses():
    shape = np.array([2, 3], np.int32)
    for mean, std, lo, hi in ((0.0, 1.0, 1.0, 1.0), (0.0, 1.0, 2.0, 1.0), (0.0, 0.0, -1.0, 1.0), (0.0, -1.0, -1.0, 1.0)):
        with pytest.raises(OpError, match="Invalid parameters"):
            evaluate_op("ParameterizedTruncatedNormal", [shape, *(np.float32(v) for v in (mean, std, lo, hi))])
    with pytest.raises(OpError, match=r"means should have length 1 or shape\[0\] \(2\), got shape: \[3\]"):
        evaluate_op("ParameterizedTruncatedNormal", [shape, np.zeros(3, np.float32), *(np.float32(v) for v in (1, -1, 1))])
