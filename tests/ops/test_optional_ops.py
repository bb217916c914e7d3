"""Optionals through a chain: OptionalFromValue -> OptionalGetValue gives the tensors back, and
the gradients (TF's optional_grad.py) carry d loss / d components through the optional; reading
an empty optional is a one-line error."""

from __future__ import annotations

import numpy as np
import pytest

from specflow.errors import SpecflowError
from specflow.graph import dtypes
from specflow.graph.builder import GraphBuilder
from specflow.runtime.session import Session
from specflow.train.gradients import gradients

F64 = dtypes.float64
X = np.array([[0.5, -1.5], [2.0, 0.25]])


def test_optional_round_trip_gradient_matches_finite_differences():
    b = GraphBuilder()
    x = b.add_op("Placeholder", attrs={"dtype": F64, "shape": [2, 2]}, name="x").name
    k = b.const(np.int32(3), name="k")
    opt = b.add_op("OptionalFromValue", [x, k]).name
    got = b.add_op("OptionalGetValue", [opt], {"output_types": [F64, dtypes.int32], "output_shapes": [[2, 2], []]})
    y = b.add_op("Mul", [got.name, got.name]).name  # x * x: the int component takes no gradient
    loss = b.add_op("Sum", [y, b.const(np.array([0, 1], np.int32))]).name
    (dx,) = gradients(b, [loss], [x])
    with Session(b.graph_def) as s:
        value, grad, count = s.run([y, dx, f"{got.name}:1"], {x: X})
    np.testing.assert_allclose(value, X * X)
    np.testing.assert_allclose(grad, 2 * X, rtol=1e-12)
    assert count == 3


def test_reading_an_empty_optional_is_an_error():
    b = GraphBuilder()
    opt = b.add_op("OptionalNone", []).name
    got = b.add_op("OptionalGetValue", [opt], {"output_types": [F64], "output_shapes": [[]]}).name
    with Session(b.graph_def) as s, pytest.raises(SpecflowError, match="does not have a value"):
        s.run(got)
