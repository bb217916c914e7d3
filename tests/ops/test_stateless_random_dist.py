"""StatelessRandomGammaV3's gradient in alpha against the implicit reparameterization computed
independently (central differences of scipy's gamma quantile at each sample's CDF), summed over
the sample dims as TF's; and the distribution ops' one-line errors."""

import numpy as np
import pytest

from specflow.errors import OpError
from specflow.graph.builder import GraphBuilder
from specflow.ops.eval import evaluate_op
from specflow.runtime.session import Session
from specflow.train.gradients import gradients
from tests.ops.cases_stateless_random_dist import COUNTER, KEY, SEED, _implicit_ref


def test_gamma_gradient_is_the_implicit_reparameterization():
    alpha0 = np.array([0.7, 2.0, 5.0])
    w = np.array([[1.0, -0.5, 2.0], [0.3, 1.5, -1.0]])
    b = GraphBuilder()
    alpha = b.add_op("Placeholder", attrs={"dtype": "float64", "shape": [3]}, name="alpha").name
    sample = b.add_op("StatelessRandomGammaV3", [b.const(np.array([2, 3], np.int32)), b.const(np.array([KEY], np.uint64)),
                                                 b.const(np.array(COUNTER, np.uint64)), b.const(np.int32(1)), alpha],
                      {"dtype": "float64"}).name  # fmt: skip
    loss = b.add_op("Sum", [b.add_op("Mul", [sample, b.const(w)]).name, b.const(np.array([0, 1], np.int32))]).name
    (g,) = gradients(b, [loss], [alpha])
    with Session(b.graph_def) as sess:
        s, got = sess.run([sample, g], {alpha: alpha0})
    want = (w * _implicit_ref(np.broadcast_to(alpha0, s.shape), s)).sum(axis=0)
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_parameters_that_do_not_end_the_shape_are_a_clear_error():
    with pytest.raises(OpError, match=r"shape \[2, 3\] must end with the parameters' shape \[2\]"):
        evaluate_op("StatelessRandomPoisson", [np.array([2, 3], np.int32), SEED, np.array([1.0, 2.0], np.float32)], dtype="int32")
    with pytest.raises(OpError, match="non-negative dimensions"):
        evaluate_op("StatelessRandomBinomial", [np.array([-1], np.int32), SEED, np.float32(3), np.float32(0.5)], dtype="int32")
