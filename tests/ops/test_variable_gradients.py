"""Gradients with respect to a variable (through its resource handle), summed gradients of a
tensor used twice, and StopGradient.

A variable read twice and gathered once gets one dense gradient of its own shape: the sum of
what flows into each ReadVariableOp and ResourceGather. It is checked against central finite
differences computed by assigning perturbed values to the variable.
"""

from __future__ import annotations

import numpy as np
import pytest

from specflow.errors import GraphError
from specflow.graph import dtypes
from specflow.graph.builder import GraphBuilder
from specflow.runtime.session import Session
from specflow.train.gradients import gradients

F64 = dtypes.float64
RNG = np.random.default_rng(11)


def _weighted_sum(b, t, w=None):
    """sum(t * w) with fixed weights (sum(t * t) when ``w`` is None: t used twice)."""
    other = t if w is None else b.const(w, F64, name="w")
    prod = b.add_op("Mul", [t, other]).name
    axes = b.const(np.arange(len(b.spec(prod).shape), dtype=np.int32), name="axes")
    return b.add_op("Sum", [prod, axes]).name


def _variable_loss(declared, value_shape, indices, batch_dims):
    b = GraphBuilder()
    h = b.add_op("VarHandleOp", [], {"dtype": F64, "shape": declared}, name="v").name
    value = b.add_op("Placeholder", [], {"dtype": F64, "shape": value_shape}, name="value").name
    b.add_op("AssignVariableOp", [h, value], name="assign")
    r1 = b.add_op("ReadVariableOp", [h], {"dtype": F64}, name="read1").name
    r2 = b.add_op("ReadVariableOp", [h], {"dtype": F64}, name="read2").name
    rows = b.add_op("ResourceGather", [h, b.const(indices, name="indices")],
                    {"dtype": F64, "batch_dims": batch_dims}, name="gather").name  # fmt: skip
    w_rows = RNG.uniform(0.5, 1.5, size=indices.shape + tuple(value_shape[batch_dims + 1 :]))
    terms = [_weighted_sum(b, r1, RNG.uniform(0.5, 1.5, size=value_shape)), _weighted_sum(b, r2),
             _weighted_sum(b, rows, w_rows)]  # fmt: skip
    loss = b.add_op("AddN", terms, name="loss").name
    (grad,) = gradients(b, [loss], [h])
    return b, loss, grad


@pytest.mark.parametrize(
    "declared, shape, indices, batch_dims",
    [
        ([4, 3], [4, 3], np.array([[1, 3], [1, 0]], np.int32), 0),
        ([None, 3], [4, 3], np.array([3, 3, 0], np.int64), 0),  # first dim known only at run time
        ([2, 3, 2], [2, 3, 2], np.array([[0, 2, 0], [1, 1, 2]], np.int32), 1),
    ],
    ids=["static", "unknown-first-dim", "batch-dims"],
)
def test_variable_read_twice_and_gathered_matches_finite_differences(declared, shape, indices, batch_dims):
    b, loss, grad = _variable_loss(declared, shape, indices, batch_dims)
    x = RNG.uniform(-2.0, 2.0, size=shape)
    eps = 1e-6
    with Session(b.graph_def) as sess:

        def loss_at(v):
            sess.run([], {"value": v}, targets=["assign"])
            return sess.run(loss)

        loss_at(x)
        got = sess.run(grad)
        numeric = np.zeros_like(x)
        for j in range(x.size):
            step = np.zeros(x.size)
            step[j] = eps
            step = step.reshape(x.shape)
            numeric.reshape(-1)[j] = (loss_at(x + step) - loss_at(x - step)) / (2 * eps)
    assert got.shape == x.shape
    np.testing.assert_allclose(got, numeric, rtol=1e-5, atol=1e-6)


def _placeholder(b, shape, name="x"):
    return b.add_op("Placeholder", [], {"dtype": F64, "shape": shape}, name=name).name


def test_a_tensor_used_by_two_ops_gets_the_sum_of_their_gradients():
    b = GraphBuilder()
    x = _placeholder(b, [2, 3])
    y = b.add_op("Identity", [x], name="y").name
    flat = b.add_op("Reshape", [y, b.const(np.array([6], np.int32))]).name
    turned = b.add_op("Transpose", [y, b.const(np.array([1, 0], np.int32))]).name
    wa, wc = RNG.uniform(size=6), RNG.uniform(size=(3, 2))
    loss = b.add_op("AddN", [_weighted_sum(b, flat, wa), _weighted_sum(b, turned, wc)]).name
    (grad,) = gradients(b, [loss], [x])
    with Session(b.graph_def) as sess:
        got = sess.run(grad, {x: RNG.uniform(size=(2, 3))})
    np.testing.assert_allclose(got, wa.reshape(2, 3) + wc.T)


def test_stop_gradient_stops_the_flow():
    b = GraphBuilder()
    x = _placeholder(b, [2, 3])
    stopped = b.add_op("StopGradient", [x], name="stopped").name
    w1, w2 = RNG.uniform(size=(2, 3)), RNG.uniform(size=(2, 3))
    through_stop = _weighted_sum(b, stopped, w2)
    loss = b.add_op("AddN", [_weighted_sum(b, x, w1), through_stop]).name
    grad, = gradients(b, [loss], [x])
    with Session(b.graph_def) as sess:
        got = sess.run(grad, {x: RNG.uniform(size=(2, 3))})
    np.testing.assert_allclose(got, w1)  # StopGradient's path contributes nothing
    assert gradients(b, [through_stop], [x]) == [None]  # and alone, nothing reaches x


def test_gather_gradient_with_a_computed_axis():
    # As TF's: the axis is read at run time (its sign wrapped too).
    b = GraphBuilder()
    x = _placeholder(b, [2, 3])
    axis = b.add_op("Placeholder", [], {"dtype": dtypes.int32, "shape": []}, name="axis").name
    g = b.add_op("GatherV2", [x, b.const(np.array([0, 0], np.int32)), axis], name="pick").name
    grad, = gradients(b, [g], [x])
    with Session(b.graph_def) as sess:
        for a, want in ((1, [[2, 0, 0], [2, 0, 0]]), (-2, [[2, 2, 2], [0, 0, 0]])):
            np.testing.assert_array_equal(sess.run(grad, {x: np.ones((2, 3)), axis: np.int32(a)}), want)


def test_gather_gradient_of_params_of_unknown_rank_names_the_node():
    b = GraphBuilder()
    x = b.add_op("Placeholder", [], {"dtype": dtypes.float64}, name="x").name
    axis = b.add_op("Placeholder", [], {"dtype": dtypes.int32, "shape": []}, name="axis").name
    g = b.add_op("GatherV2", [x, b.const(np.array([0], np.int32)), axis], name="pick").name
    with pytest.raises(GraphError, match="known rank") as err:
        gradients(b, [g], [x])
    assert err.value.node == "pick"
