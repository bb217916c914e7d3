"""Cases for gather_scatter_ops: Gather (v1), GatherNd, ScatterNd, TensorScatterUpdate/Add/Sub/Max/Min.

References are plain numpy indexing written out per case (not the kernels' vectorized paths)."""

import numpy as np

from tests.ops.harness import Case, f32, i32, i64

_p = f32(4, 3, 2)
_ids = np.array([[2, 0], [1, 0], [3, 2]], np.int32)


def _gather_nd_ref(params, indices):
    lead = indices.shape[:-1]
    rows = [params[tuple(int(v) for v in indices[i])] for i in np.ndindex(*lead)]
    return np.array(rows).reshape(lead + params.shape[indices.shape[-1]:])


def _scatter_ref(base, indices, updates, add):
    out = base.copy()
    k = indices.shape[-1]
    for i in np.ndindex(*indices.shape[:-1]):
        at = tuple(int(v) for v in indices[i])
        if add == "sub":
            out[at] = out[at] - updates[i]
        elif add in ("max", "min"):
            out[at] = (np.maximum if add == "max" else np.minimum)(out[at], updates[i])
        else:
            out[at] = out[at] + updates[i] if add else updates[i]
    del k
    return out


CASES = [
    Case("Gather", [_p, np.array([[3, 0], [0, 1]], np.int64)], ref=lambda p, i: p[[[3, 0], [0, 1]]]),
    Case("Gather", [f32(5), np.int32(4)], ref=lambda p, i: p[4], id="Gather-scalar-index"),
    Case("GatherNd", [_p, _ids], ref=_gather_nd_ref),
    Case("GatherNd", [_p, np.array([[[1], [3]]], np.int64)], ref=_gather_nd_ref, id="GatherNd-slices"),
    Case("GatherNd", [i32(2, 3), np.array([[1, 2], [0, 0], [1, 2]], np.int16)], ref=_gather_nd_ref, id="GatherNd-int"),
    Case("GatherNd", [i32(3, 3), np.array([2, 0], np.int32)], ref=lambda p, i: p[2, 0], id="GatherNd-one-element-scalar"),
    Case("GatherNd", [f32(2, 3), np.zeros((2, 0), np.int32)], ref=lambda p, i: np.stack([p, p]), id="GatherNd-empty-index"),
    Case("ScatterNd", [np.array([[1], [3], [1]], np.int32), f32(3, 2), np.array([5, 2], np.int32)],
         ref=lambda i, u, s: _scatter_ref(np.zeros((5, 2), np.float32), i, u, True), const_inputs=[2]),
    Case("ScatterNd", [np.array([[0, 1], [2, 2]], np.int64), i64(2), np.array([3, 4], np.int64)],
         ref=lambda i, u, s: _scatter_ref(np.zeros((3, 4), np.int64), i, u, True), const_inputs=[2], id="ScatterNd-elements"),
    Case("TensorScatterUpdate", [_p, _ids, f32(3, 2)], ref=lambda t, i, u: _scatter_ref(t, i, u, False)),
    Case("TensorScatterSub", [_p, _ids, f32(3, 2)], ref=lambda t, i, u: _scatter_ref(t, i, u, "sub")),
    # Duplicate indices: both updates combine with the tensor's value.
    Case("TensorScatterMax", [_p, np.array([[1], [3], [1]], np.int32), f32(3, 3, 2)], ref=lambda t, i, u: _scatter_ref(t, i, u, "max")),
    Case("TensorScatterMin", [i32(4, 3), np.array([[0, 1], [2, 2], [0, 1]], np.int64), i32(3)],
         ref=lambda t, i, u: _scatter_ref(t, i, u, "min")),
    Case("TensorScatterMin", [np.array([3.0, -1.0, 2.0], np.float32), np.array([[0], [2]], np.int32), np.array([1.0, 5.0], np.float32)],
         ref=lambda t, i, u: np.array([1.0, -1.0, 2.0], np.float32), id="TensorScatterMin-literal"),
    # TF's Eigen min/max: a NaN update never wins, a NaN in the tensor stays (TF 2.21)
    Case("TensorScatterMin", [np.array([1.0, np.nan, 3.0, -1.0]), np.array([[0], [1], [3], [3]], np.int32), np.array([np.nan, 2.0, np.nan, -2.0])],
         ref=lambda t, i, u: np.array([1.0, np.nan, 3.0, -2.0]), id="TensorScatterMin-nan"),
    Case("TensorScatterMax", [np.array([1.0, np.nan, 3.0, -1.0]), np.array([[0], [1], [2], [2]], np.int32), np.array([np.nan, 2.0, 5.0, np.nan])],
         ref=lambda t, i, u: np.array([1.0, np.nan, 5.0, -1.0]), id="TensorScatterMax-nan"),
    Case("TensorScatterAdd", [_p, _ids[:, :1], f32(3, 3, 2)], ref=lambda t, i, u: _scatter_ref(t, i, u, True)),
    Case("TensorScatterAdd", [i32(3), np.array([[1], [1]], np.int32), i32(2)], ref=lambda t, i, u: _scatter_ref(t, i, u, True),
         id="TensorScatterAdd-duplicates"),
]
