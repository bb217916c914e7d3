"""Issue 14 item 5: a VALID window larger than the input gives an empty output, as in TF.

TF computes a VALID output size as (size - window + stride) / stride in C++ integer division
(truncating toward zero) and fails only when that is negative. So a 3x3 window on a 2x2 input
gives a [1, 0, 0, C] output (not a shape error), and its gradients are zeros of the input's
shape. The expected shapes below are TF 2.x's, written out literally.
"""

import numpy as np
import pytest

from specflow.errors import OpError
from specflow.graph.builder import GraphBuilder
from specflow.ops.eval import evaluate_op
from specflow.runtime.session import Session
from specflow.train.gradients import gradients

X = np.arange(12, dtype=np.float32).reshape(1, 2, 2, 3)
ONES = {"strides": [1, 1, 1, 1], "padding": "VALID"}
POOL = {**ONES, "ksize": [1, 3, 3, 1]}

# (op, extra inputs after x, attrs, TF's output shape)
FORWARD = [
    ("Conv2D", [np.ones((3, 3, 3, 4), np.float32)], ONES, (1, 0, 0, 4)),
    ("Conv2D", [np.ones((3, 3, 3, 4), np.float32)], {**ONES, "strides": [1, 2, 2, 1]}, (1, 0, 0, 4)),
    ("Conv2D", [np.ones((2, 2, 3, 4), np.float32)], {**ONES, "dilations": [1, 2, 2, 1]}, (1, 0, 0, 4)),
    ("MaxPool", [], POOL, (1, 0, 0, 3)),
    ("AvgPool", [], POOL, (1, 0, 0, 3)),
]


@pytest.mark.parametrize("op,extra,attrs,want", FORWARD, ids=lambda v: str(v)[:24])
def test_window_larger_than_input_gives_an_empty_output(op, extra, attrs, want):
    (y,) = evaluate_op(op, [X, *extra], **attrs)
    assert y.shape == want and y.dtype == np.float32
    b = GraphBuilder()
    x = b.add_op("Placeholder", [], {"dtype": "float32", "shape": list(X.shape)}, name="x").name
    ins = [x, *(b.const(e, name=f"c{i}") for i, e in enumerate(extra))]
    node = b.add_op(op, ins, dict(attrs), name="op")
    assert b.spec(node.name).shape.as_list() == list(want)  # the shape function agrees
    loss = b.add_op("Sum", [node.name, b.const(np.arange(4, dtype=np.int32), name="axes")]).name
    grads = gradients(b, [loss], ins[:1 + len(extra)])
    with Session(b.graph_def) as sess:
        got = sess.run([loss, *grads], {x: X})
    assert got[0] == 0.0
    for g, v in zip(got[1:], [X, *extra]):
        np.testing.assert_array_equal(g, np.zeros_like(v))


def test_empty_rows_but_not_columns():
    # Height 2 under a 3-row window at stride 2: (2 - 3 + 2) / 2 = 0 rows; width 9: 4 columns.
    (y,) = evaluate_op("Conv2D", [np.ones((1, 2, 9, 3), np.float32), np.ones((3, 3, 3, 4), np.float32)],
                       strides=[1, 2, 2, 1], padding="VALID")  # fmt: skip
    assert y.shape == (1, 0, 4, 4)


def test_a_negative_output_size_is_still_an_error():
    # (1 - 3 + 1) / 1 = -1: TF rejects this one ("Computed output size would be negative").
    with pytest.raises(OpError, match="the output size would be negative"):
        evaluate_op("Conv2D", [np.ones((1, 1, 1, 3), np.float32), np.ones((3, 3, 3, 4), np.float32)], **ONES)
