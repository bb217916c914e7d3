"""Cases for sparse_ops against dense numpy (the sparse tensor made dense by hand)."""

import numpy as np

from tests.ops.harness import Case, f32, f64

_IDX = np.array([[0, 1], [1, 0], [2, 2]], np.int64)
_VALS = np.array([1.5, -2.0, 3.0])


def _dense(idx, vals, shape):
    out = np.zeros(shape, np.asarray(vals).dtype)
    for i, v in zip(idx, np.broadcast_to(vals, (len(idx),))):
        out[tuple(i)] += v
    return out


_B = f64(3, 4)
# A rank-3 sparse tensor, unsorted, two entries meeting when axis 1 is summed.
_IDX3 = np.array([[0, 1, 2], [2, 0, 1], [0, 1, 0], [1, 3, 2], [2, 0, 0], [0, 3, 2]], np.int64)
_VALS3 = np.array([1.5, -2.0, 3.0, 0.5, 4.0, -1.0])
_SHAPE3 = np.array([3, 4, 3], np.int64)


def _as_sparse(dense, reached):
    """(indices, values, shape) of ``dense`` at the positions ``reached`` counts, row-major."""
    where = np.argwhere(reached > 0)
    return where.astype(np.int64), dense[tuple(where.T)], np.array(dense.shape, np.int64)


CASES = [
    Case("SparseToDense", [_IDX, np.array([3, 3], np.int64), _VALS, np.float64(-1)], const_inputs=[1],
         ref=lambda i, s, v, d: np.where(_dense(i, np.ones(3), (3, 3)) > 0, _dense(i, v, (3, 3)), -1.0)),
    Case("SparseToDense", [np.array([1, 3], np.int32), np.array([5], np.int32), np.float32(4), np.float32(0)],
         const_inputs=[1], ref=lambda i, s, v, d: np.array([0, 4, 0, 4, 0], np.float32), id="SparseToDense-vector-scalar"),
    Case("SparseTensorDenseMatMul", [_IDX, _VALS, np.array([3, 3], np.int64), _B], const_inputs=[2],
         ref=lambda i, v, s, b: _dense(i, v, (3, 3)) @ b),
    Case("SparseTensorDenseMatMul", [_IDX, _VALS, np.array([3, 3], np.int64), _B.T.copy()],
         attrs={"adjoint_a": True, "adjoint_b": True}, const_inputs=[2], id="SparseTensorDenseMatMul-adjoints",
         ref=lambda i, v, s, b: _dense(i, v, (3, 3)).T @ b.T),
    Case("SparseTensorDenseMatMul", [np.array([[0, 0], [0, 0]], np.int64), np.array([1.0, 2.0], np.float32),
                                     np.array([1, 2], np.int64), f32(2, 3)], rtol=1e-6, const_inputs=[2],
         ref=lambda i, v, s, b: 3.0 * b[:1], id="SparseTensorDenseMatMul-repeated-index-adds"),
    *(Case("SparseReduceSum", [_IDX3, _VALS3, _SHAPE3, np.array(axes, np.int32)], attrs={"keep_dims": keep},
           const_inputs=[2, 3], id=f"SparseReduceSum-{axes}-{keep}",
           ref=lambda i, v, s, a, keep=keep: _dense(i, v, tuple(s)).sum(axis=tuple(a.tolist()), keepdims=keep))
      for axes, keep in [([1], False), ([0, -1], True), ([], False), ([0, 1, 2], False)]),
    Case("SparseReduceSum", [_IDX3, _IDX3[:, 0].astype(np.int32), _SHAPE3, np.array([2], np.int32)], const_inputs=[2, 3],
         ref=lambda i, v, s, a: _dense(i, v, tuple(s)).sum(axis=2), id="SparseReduceSum-int32"),
    Case("SparseReduceSumSparse", [_IDX3, _VALS3, _SHAPE3, np.array([1], np.int32)], const_inputs=[2, 3],
         exact_shape=False, ref=lambda i, v, s, a: _as_sparse(_dense(i, v, tuple(s)).sum(axis=1),
                                                                _dense(i, np.ones(len(i)), tuple(s)).sum(axis=1))),
    Case("SparseReduceSumSparse", [_IDX3, _VALS3, _SHAPE3, np.array([0, 2], np.int32)], attrs={"keep_dims": True},
         const_inputs=[2, 3], exact_shape=False, id="SparseReduceSumSparse-keep-dims",
         ref=lambda i, v, s, a: _as_sparse(_dense(i, v, tuple(s)).sum(axis=(0, 2), keepdims=True),
                                           _dense(i, np.ones(len(i)), tuple(s)).sum(axis=(0, 2), keepdims=True))),
]  # fmt: skip
