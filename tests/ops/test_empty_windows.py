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
X5 = np.arange(24, dtype=np.float32).reshape(1, 2, 2, 2, 3)
ONES = {"strides": [1, 1, 1, 1], "padding": "VALID"}
POOL = {**ONES, "ksize": [1, 3, 3, 1]}
ONES5 = {"strides": [1, 1, 1, 1, 1], "padding": "VALID"}

# (op, x, extra inputs after x, attrs, TF's output shape)
FORWARD = [
    ("Conv2D", X, [np.ones((3, 3, 3, 4), np.float32)], ONES, (1, 0, 0, 4)),
    ("Conv2D", X, [np.ones((3, 3, 3, 4), np.float32)], {**ONES, "strides": [1, 2, 2, 1]}, (1, 0, 0, 4)),
    ("Conv2D", X, [np.ones((2, 2, 3, 4), np.float32)], {**ONES, "dilations": [1, 2, 2, 1]}, (1, 0, 0, 4)),
    ("MaxPool", X, [], POOL, (1, 0, 0, 3)),
    ("AvgPool", X, [], POOL, (1, 0, 0, 3)),
    ("DepthwiseConv2dNative", X, [np.ones((3, 3, 3, 2), np.float32)], ONES, (1, 0, 0, 6)),
    ("MaxPoolV2", X, [np.array([1, 3, 3, 1], np.int32), np.array([1, 1, 1, 1], np.int32)], {"padding": "VALID"},
     (1, 0, 0, 3)),
    ("MaxPoolWithArgmax", X, [], POOL, (1, 0, 0, 3)),
    ("Conv3D", X5, [np.ones((3, 3, 3, 3, 2), np.float32)], ONES5, (1, 0, 0, 0, 2)),
    ("AvgPool3D", X5, [], {**ONES5, "ksize": [1, 3, 1, 1, 1]}, (1, 0, 2, 2, 3)),
]  # fmt: skip


@pytest.mark.parametrize("op,x0,extra,attrs,want", FORWARD, ids=[f"{f[0]}-{i}" for i, f in enumerate(FORWARD)])
def test_window_larger_than_input_gives_an_empty_output(op, x0, extra, attrs, want):
    y = evaluate_op(op, [x0, *extra], **attrs)[0]
    assert y.shape == want and y.dtype == np.float32
    b = GraphBuilder()
    x = b.add_op("Placeholder", [], {"dtype": "float32", "shape": list(x0.shape)}, name="x").name
    ins = [x, *(b.const(e, name=f"c{i}") for i, e in enumerate(extra))]
    node = b.add_op(op, ins, dict(attrs), name="op")
    assert b.spec(node.name).shape.as_list() == list(want)  # the shape function agrees
    loss = b.add_op("Sum", [node.name, b.const(np.arange(len(want), dtype=np.int32), name="axes")]).name
    floats = [(t, v) for t, v in zip(ins, [x0, *extra]) if v.dtype == np.float32]
    grads = gradients(b, [loss], [t for t, _ in floats])
    with Session(b.graph_def) as sess:
        got = sess.run([loss, *grads], {x: x0})
    assert got[0] == 0.0
    for g, (_, v) in zip(got[1:], floats):
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
