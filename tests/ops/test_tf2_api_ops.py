"""MatrixSolveLs's gradient against TensorFlow 2.21's recorded one (GradientTape, fast=True), and the
one-line errors of UnravelIndex, NthElement, MatrixSolveLs and EditDistance where TF raises."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from specflow.errors import GraphError, OpError, ShapeError
from specflow.graph.builder import GraphBuilder
from specflow.ops.eval import evaluate_op
from specflow.runtime.session import Session
from specflow.train.gradients import gradients
from tests.ops.cases_tf2_api import LS_A, LS_B

TF = json.loads((Path(__file__).parent / "data" / "tf_matrix_solve_ls.json").read_text())["grad"]


def _lstsq_grads(a, rhs, l2, fast=True):
    b = GraphBuilder()
    pa = b.add_op("Placeholder", attrs={"dtype": "float64", "shape": list(a.shape)}, name="a").name
    pb = b.add_op("Placeholder", attrs={"dtype": "float64", "shape": list(rhs.shape)}, name="b").name
    x = b.add_op("MatrixSolveLs", [pa, pb, b.const(np.float64(l2), "float64")], {"fast": fast}, name="x").name
    n = int(np.prod(b.spec(x).shape.as_list()))
    w = b.const(np.arange(n, dtype=np.float64).reshape(b.spec(x).shape.as_list()))
    loss = b.add_op("Sum", [b.add_op("Mul", [x, w]).name, b.const(np.arange(3, dtype=np.int32))]).name
    grads = gradients(b, [loss], [pa, pb])
    with Session(b.graph_def) as s:
        return s.run(list(grads), {pa: a, pb: rhs})


@pytest.mark.parametrize("kind", ["over", "under"])
def test_matrix_solve_ls_gradient_equals_tensorflows(kind):
    a, rhs = (LS_A, LS_B) if kind == "over" else (np.swapaxes(LS_A, -1, -2), LS_A[..., :3, :2])
    for got, want in zip(_lstsq_grads(a, rhs, 0.3), TF[kind]):
        np.testing.assert_allclose(got, np.array(want), rtol=1e-9, atol=1e-12)


def test_matrix_solve_ls_slow_path_has_no_gradient_as_in_tensorflow():
    with pytest.raises(GraphError, match="no gradient with fast=False"):
        _lstsq_grads(LS_A, LS_B, 0.0, fast=False)


def test_errors_name_what_tensorflow_refuses():
    with pytest.raises(OpError, match=r"index 12 is out of bounds for dims \[3, 4\]"):
        evaluate_op("UnravelIndex", [np.array([12], np.int32), np.array([3, 4], np.int32)])
    with pytest.raises(OpError, match=r"dims\[1\] = 0: every dim must be positive"):
        evaluate_op("UnravelIndex", [np.array([0], np.int32), np.array([3, 0], np.int32)])
    with pytest.raises((OpError, ShapeError), match="indices can only be a scalar or a vector"):
        evaluate_op("UnravelIndex", [np.array([[1, 2]], np.int32), np.array([3, 4], np.int32)])
    x = np.ones((2, 5), np.float32)
    with pytest.raises((OpError, ShapeError), match=r"last dimension > n = 5"):
        evaluate_op("NthElement", [x, np.int32(5)])
    with pytest.raises((OpError, ShapeError), match="n must be non-negative but is -1"):
        evaluate_op("NthElement", [x, np.int32(-1)])
    with pytest.raises((OpError, ShapeError), match="at least rank 1 but is rank 0"):
        evaluate_op("NthElement", [np.float32(2), np.int32(0)])
    rank1 = np.array([[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]])
    with pytest.raises(OpError, match="rank deficient or ill-conditioned. Try setting fast=False"):
        evaluate_op("MatrixSolveLs", [rank1, np.ones((3, 1)), np.float64(0)])
    with pytest.raises((OpError, ShapeError), match="Input matrix and rhs are incompatible"):
        evaluate_op("MatrixSolveLs", [rank1, np.ones((2, 1)), np.float64(0)])
    with pytest.raises(OpError, match=r"hypothesis and truth must have matching ranks"):
        evaluate_op("EditDistance", [np.zeros((1, 2), np.int64), np.ones(1, np.int32), np.array([1, 2]),
                                     np.zeros((1, 3), np.int64), np.ones(1, np.int32), np.array([1, 1, 2])])
    with pytest.raises(OpError, match=r"_shape must be a vector of at least 2 dims"):
        evaluate_op("EditDistance", [np.zeros((1, 1), np.int64), np.ones(1, np.int32), np.array([2]),
                                     np.zeros((1, 1), np.int64), np.ones(1, np.int32), np.array([1])])


def test_extract_volume_patches_gradient_equals_tensorflows():
    from tests.ops.cases_volume_patches import TF as PATCHES
    from tests.ops.cases_volume_patches import X

    b = GraphBuilder()
    x = b.add_op("Placeholder", attrs={"dtype": "float64", "shape": list(X.shape)}, name="x").name
    y = b.add_op("ExtractVolumePatches", [x], {"ksizes": [1, 2, 2, 3, 1], "strides": [1, 1, 2, 2, 1],
                                               "padding": "SAME"}).name  # fmt: skip
    shape = b.spec(y).shape.as_list()
    w = b.const(np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) % 7)
    loss = b.add_op("Sum", [b.add_op("Mul", [y, w]).name, b.const(np.arange(5, dtype=np.int32))]).name
    (g,) = gradients(b, [loss], [x])
    with Session(b.graph_def) as s:
        got = s.run(g, {x: X.astype(np.float64)})
    np.testing.assert_array_equal(got.reshape(-1), PATCHES["grad"])
    with pytest.raises((OpError, ShapeError), match=r"ksizes must be \[1, planes, rows, cols, 1\]"):
        evaluate_op("ExtractVolumePatches", [X], ksizes=[2, 2, 2, 3, 1], strides=[1, 1, 1, 1, 1], padding="SAME")


def test_combined_nms_refuses_what_tensorflow_refuses():
    from tests.ops.cases_combined_nms import _B, _args

    with pytest.raises((OpError, ShapeError), match=r"third dimension of boxes must be 1 or num_classes \(3\), got 2"):
        evaluate_op("CombinedNonMaxSuppression", _args(_B[:, :, :2], 3, 5, 0.5, 0.1))
    with pytest.raises((OpError, ShapeError), match="max_total_size must be > 0"):
        evaluate_op("CombinedNonMaxSuppression", _args(_B, 3, 0, 0.5, 0.1))
    with pytest.raises((OpError, ShapeError), match=r"iou_threshold must be in \[0, 1\]"):
        evaluate_op("CombinedNonMaxSuppression", _args(_B, 3, 5, 1.5, 0.1))
