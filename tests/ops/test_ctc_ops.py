"""CTCLoss's gradient output takes no gradient: TF's gradient puts it behind PreventGradient, and
differentiating through PreventGradient is a one-line error naming its message; a label sequence
longer than its time is an error unless ignored."""

from __future__ import annotations

import numpy as np
import pytest

from specflow.errors import SpecflowError
from specflow.graph import dtypes
from specflow.graph.builder import GraphBuilder
from specflow.ops.eval import evaluate_op
from specflow.train.gradients import gradients


def test_gradient_through_prevent_gradient_is_an_error():
    b = GraphBuilder()
    x = b.add_op("Placeholder", attrs={"dtype": dtypes.float64, "shape": [3]}, name="x").name
    y = b.add_op("PreventGradient", [x], {"message": "not twice"}).name
    loss = b.add_op("Sum", [y, b.const(np.array([0], np.int32))]).name
    with pytest.raises(SpecflowError, match="Gradient explicitly disabled. Reason: not twice"):
        gradients(b, [loss], [x])


def test_labels_longer_than_the_time_are_an_error():
    x = np.zeros((3, 1, 3), np.float32)
    idx, vals = np.array([[0, 0], [0, 1], [0, 2]], np.int64), np.array([0, 1, 0], np.int32)
    with pytest.raises(SpecflowError, match=r"Not enough time for target transition sequence \(required: 3, available: 2\)"):
        evaluate_op("CTCLoss", [x, idx, vals, np.array([2], np.int32)])
    with pytest.raises(SpecflowError, match="label values must be in"):
        evaluate_op("CTCLoss", [x, idx, np.array([0, 2, 0], np.int32), np.array([2], np.int32)])
    with pytest.raises(SpecflowError, match=r"indices\[2\] = \[0,0\] is out of order"):
        evaluate_op("CTCLoss", [x, idx[[1, 2, 0]], vals, np.array([2], np.int32)])
