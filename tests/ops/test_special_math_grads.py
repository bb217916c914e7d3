"""CumulativeLogsumexp's gradient with exclusive=True, where the first output is -inf (so the
generic finite-difference harness, which sums every output, cannot check it): the loss here
leaves that output out."""

from __future__ import annotations

import numpy as np
import pytest

from specflow.graph.builder import GraphBuilder
from specflow.graph.dtypes import float64
from specflow.runtime.session import Session
from specflow.train.gradients import gradients


@pytest.mark.parametrize("reverse", [False, True])
def test_exclusive_cumulative_logsumexp_gradient(reverse):
    rng = np.random.default_rng(5)
    x0 = rng.uniform(-2, 2, (5, 3))
    w = rng.uniform(-1.5, 1.5, (4, 3))  # both signs: the gradient splits dy by sign
    b = GraphBuilder()
    x = b.add_op("Placeholder", [], {"dtype": float64, "shape": [5, 3]}, name="x").name
    y = b.add_op("CumulativeLogsumexp", [x, b.const(np.int32(0), name="axis")],
                 {"exclusive": True, "reverse": reverse}, name="y").name
    begin = [0, 0] if reverse else [1, 0]  # drop the -inf row
    kept = b.add_op("Slice", [y, b.const(np.array(begin, np.int32), name="b"),
                              b.const(np.array([4, 3], np.int32), name="s")], {}, name="kept").name
    prod = b.add_op("Mul", [kept, b.const(w, float64, name="w")], {}, name="prod").name
    loss = b.add_op("Sum", [prod, b.const(np.array([0, 1], np.int32), name="axes")], {}, name="loss").name
    (g,) = gradients(b, [loss], [x])
    eps = 1e-6
    with Session(b.graph_def) as sess:
        got = sess.run(g, {x: x0})
        want = np.zeros_like(x0)
        for i in np.ndindex(x0.shape):
            up, down = x0.copy(), x0.copy()
            up[i] += eps
            down[i] -= eps
            want[i] = (sess.run(loss, {x: up}) - sess.run(loss, {x: down})) / (2 * eps)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
