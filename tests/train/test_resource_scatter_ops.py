"""tf.Variable's scatter_mul/div/max/min and scatter_nd_update/add/sub/max/min (ResourceScatterMul...,
ResourceScatterNd*) in a Session, against values TensorFlow 2.21 gave for the same inputs (recorded
with tf.raw_ops on tf.Variable; NaN in both the variable and the updates, repeated indices)."""

from __future__ import annotations

import numpy as np
import pytest

from specflow.errors import RuntimeFailure, ShapeError
from specflow.graph.builder import GraphBuilder
from specflow.runtime.session import Session
from specflow.schema.layers.variables import create_variable

nan = np.nan
V0 = np.array([[1.5, -2.0, 3.0], [4.0, nan, -6.0], [7.0, 8.0, 0.5], [-1.0, 2.0, -3.0]], np.float32)
IDS = np.array([2, 0, 2], np.int32)  # row 2 twice: both updates apply, in order
UPD = np.array([[2.0, -1.0, nan], [0.5, 4.0, -2.0], [3.0, 0.25, 1.0]], np.float32)


def _run(op, value, indices, updates, attrs=None):
    b = GraphBuilder()
    value = np.asarray(value)
    var = create_variable(b, "v", value.shape, value.dtype.name, {"constant": value.tolist()})
    ins = [var.handle]
    for name, arr in (("indices", np.asarray(indices)), ("updates", np.asarray(updates))):
        ins.append(b.add_op("Placeholder", attrs={"dtype": arr.dtype.name, "shape": list(arr.shape)}, name=name).name)
    dtype_attr = {"T" if "Nd" in op else "dtype": value.dtype.name}
    apply = b.add_op(op, ins, {**dtype_attr, **(attrs or {})}, name="apply").name
    init = b.add_op("NoOp", name="init", control_inputs=b.collections["init_ops"]).name
    sess = Session(b.graph_def)
    sess.run([], targets=[init])
    sess.run([], feeds={"indices:0": np.asarray(indices), "updates:0": np.asarray(updates)}, targets=[apply])
    return sess.run([var.read])[0]


ROWS = [  # op, updates -> TF's variable after
    ("ResourceScatterMul", UPD, [[0.75, -8, -6], [4, nan, -6], [42, -2, nan], [-1, 2, -3]]),
    ("ResourceScatterMul", np.float32(-2), [[-3, 4, -6], [4, nan, -6], [28, 32, 2], [-1, 2, -3]]),
    ("ResourceScatterDiv", UPD, [[3, -0.5, -1.5], [4, nan, -6], [1.1666666269302368, -32, nan], [-1, 2, -3]]),
    ("ResourceScatterDiv", np.float32(-2), [[-0.75, 1, -1.5], [4, nan, -6], [1.75, 2, 0.125], [-1, 2, -3]]),
    ("ResourceScatterMax", UPD, [[1.5, 4, 3], [4, nan, -6], [7, 8, 1], [-1, 2, -3]]),
    ("ResourceScatterMax", np.float32(-2), V0.tolist()),
    ("ResourceScatterMin", UPD, [[0.5, -2, -2], [4, nan, -6], [2, -1, 0.5], [-1, 2, -3]]),
    ("ResourceScatterMin", np.float32(-2), [[-2, -2, -2], [4, nan, -6], [-2, -2, -2], [-1, 2, -3]]),
]


@pytest.mark.parametrize("op,updates,want", ROWS, ids=[f"{r[0]}-{np.ndim(r[1])}d" for r in ROWS])
def test_row_scatters_match_tensorflow(op, updates, want):
    got = _run(op, V0, IDS, updates)
    np.testing.assert_array_equal(got, np.asarray(want, np.float32))


def test_integer_division_truncates_and_products_repeat():
    vi = np.array([[7, -7, 9], [5, 6, -8]], np.int32)
    ids, upd = [1, 0, 1], np.array([[2, 2, -3], [-2, 4, 5], [3, -4, 2]], np.int32)
    np.testing.assert_array_equal(_run("ResourceScatterDiv", vi, ids, upd), [[-3, -1, 1], [0, 0, 1]])
    np.testing.assert_array_equal(_run("ResourceScatterMul", vi, ids, upd), [[-14, -28, 45], [30, -48, 48]])
    with pytest.raises(RuntimeFailure, match="integer division by zero"):
        _run("ResourceScatterDiv", vi, [0], np.array([[1, 0, 1]], np.int32))


ND_IDS = np.array([[0, 1], [3, 2], [0, 1], [1, 1]], np.int64)  # [0, 1] twice
ND_UPD = np.array([5.0, -1.0, 2.0, 9.0], np.float32)
ROW_IDS, ROW_UPD = np.array([[3], [1]]), np.array([[1.0, 2.0, 3.0], [-1.0, -2.0, nan]], np.float32)
ND = [  # op, TF's variable after (ND_IDS, ND_UPD), after (ROW_IDS, ROW_UPD)
    ("ResourceScatterNdUpdate", [[1.5, 5, 3], [4, 9, -6], [7, 8, 0.5], [-1, 2, -1]],
     [[1.5, -2, 3], [-1, -2, nan], [7, 8, 0.5], [1, 2, 3]]),
    ("ResourceScatterNdAdd", [[1.5, 5, 3], [4, nan, -6], [7, 8, 0.5], [-1, 2, -4]],
     [[1.5, -2, 3], [3, nan, nan], [7, 8, 0.5], [0, 4, 0]]),
    ("ResourceScatterNdSub", [[1.5, -9, 3], [4, nan, -6], [7, 8, 0.5], [-1, 2, -2]],
     [[1.5, -2, 3], [5, nan, nan], [7, 8, 0.5], [-2, 0, -6]]),
    ("ResourceScatterNdMax", [[1.5, 5, 3], [4, nan, -6], [7, 8, 0.5], [-1, 2, -1]],
     [[1.5, -2, 3], [4, nan, -6], [7, 8, 0.5], [1, 2, 3]]),
    ("ResourceScatterNdMin", [[1.5, -2, 3], [4, nan, -6], [7, 8, 0.5], [-1, 2, -3]],
     [[1.5, -2, 3], [-1, nan, -6], [7, 8, 0.5], [-1, 2, -3]]),
]  # fmt: skip


@pytest.mark.parametrize("op,want,want_rows", ND, ids=[r[0] for r in ND])
def test_nd_scatters_match_tensorflow(op, want, want_rows):
    ids, upd = (ND_IDS[[0, 1, 3]], ND_UPD[[0, 1, 3]]) if op.endswith("Update") else (ND_IDS, ND_UPD)
    np.testing.assert_array_equal(_run(op, V0, ids, upd), np.asarray(want, np.float32))
    np.testing.assert_array_equal(_run(op, V0, ROW_IDS, ROW_UPD), np.asarray(want_rows, np.float32))


def test_errors_name_what_is_wrong():
    with pytest.raises(RuntimeFailure, match=r"indices\[0\] = 5 is not in \[0, 4\)"):
        _run("ResourceScatterMul", V0, [5], np.ones((1, 3), np.float32))
    with pytest.raises(RuntimeFailure, match=r"indices\[0\] = \[0, 3\] does not index into shape \[4, 3\]"):
        _run("ResourceScatterNdAdd", V0, [[0, 3]], np.ones(1, np.float32))
    with pytest.raises(ShapeError, match=r"updates must have shape indices.shape\[:-1\] \+ shape\[K:\] = \[1\]"):
        _run("ResourceScatterNdAdd", V0, [[0, 1]], np.ones(2, np.float32))
    with pytest.raises(ShapeError, match=r"index innermost dimension 3 is larger than the rank"):
        _run("ResourceScatterNdAdd", V0, [[0, 1, 1]], np.ones(1, np.float32))
    with pytest.raises(ShapeError, match=r"updates of shape \[1, 2\] must be indices.shape"):
        _run("ResourceScatterMax", V0, [1], np.ones((1, 2), np.float32))  # TF's kernel reads past them


def test_agrees_with_tensorflow_on_random_inputs():
    tf = pytest.importorskip("tensorflow")
    rng = np.random.default_rng(5)
    for op in [r[0] for r in ND] + ["ResourceScatterMul", "ResourceScatterDiv", "ResourceScatterMax",
                                    "ResourceScatterMin"]:  # fmt: skip
        v0 = rng.uniform(-3, 3, (6, 4)).astype(np.float64)
        if "Nd" in op:
            ids = rng.integers(0, 4, (5, 2)) if not op.endswith("Update") else np.array([[0, 1], [5, 3], [2, 2]])
            upd = rng.uniform(-3, 3, len(ids))
        else:
            ids, upd = rng.integers(0, 6, 7), rng.uniform(0.5, 3, (7, 4))
        v = tf.Variable(v0)
        first = "ref" if "Nd" in op else "resource"
        getattr(tf.raw_ops, op)(**{first: v.handle, "indices": ids, "updates": upd})
        np.testing.assert_allclose(_run(op, v0, ids, upd), v.numpy(), rtol=1e-12, err_msg=op)
