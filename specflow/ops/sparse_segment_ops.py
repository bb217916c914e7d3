"""Sparse segment reductions (tf.sparse.segment_sum/mean/sqrt_n, the embedding-bag ops): output
row s reduces the data rows ``data[indices[i]]`` of every i with ``segment_ids[i] == s`` (sum,
mean, or sum / sqrt(count)); empty segments are 0. The ``WithNumSegments`` forms fix the number of
output rows; the others have ``segment_ids[-1] + 1``. Segment ids must be sorted, as TF checks.
Their gradients are the ``*Grad`` ops TF's graphs carry: each output row's gradient, weighted,
added back to the data rows it read."""

from __future__ import annotations

import numpy as np

from specflow.graph.shapes import Shape
from specflow.ops import grad_util as gu
from specflow.ops.inference import InferenceContext
from specflow.ops.registry import gradient, kernel, not_differentiable, register_op

_NORMS = {"Sum": None, "Mean": "mean", "SqrtN": "sqrtn"}
_T = {"Sum": "{real}", "Mean": "{bfloat16, float16, float32, float64}", "SqrtN": "{bfloat16, float16, float32, float64}"}


def _weights(counts: np.ndarray, norm: str | None) -> np.ndarray:
    if norm is None:
        return np.ones(counts.shape, np.float64)
    safe = np.maximum(counts, 1).astype(np.float64)
    return 1.0 / (safe if norm == "mean" else np.sqrt(safe))


def _weighted_rows(xp, g, ids: np.ndarray, norm: str | None):
    """grad[segment_ids[i]] for every i, in float64, scaled by its segment's weight (1, 1/count
    or 1/sqrt(count)): what a gradient op adds back to data row indices[i]."""
    w = _weights(np.bincount(ids, minlength=g.shape[0]), norm)[ids].reshape(-1, *([1] * (g.ndim - 1)))
    return g[xp.asarray(ids)].astype(np.float64) * xp.asarray(w)


def _check_ids(ctx, indices, seg, rows: int, num_segments: int | None):
    if indices.ndim != 1 or seg.ndim != 1 or indices.shape != seg.shape:
        raise ctx.fail(f"indices and segment_ids must be vectors of one length, got shapes {list(indices.shape)} and {list(seg.shape)}")
    bad = (indices < 0) | (indices >= rows)
    if bad.any():
        raise ctx.fail(f"indices[{int(np.argmax(bad))}] = {int(indices[bad][0])} is not in [0, {rows})")
    if seg.size and (seg[0] < 0 or (np.diff(seg) < 0).any()):
        raise ctx.fail("segment ids are not increasing (and non-negative)")
    if num_segments is not None and seg.size and seg[-1] >= num_segments:
        raise ctx.fail(f"segment id {int(seg[-1])} out of range [0, {num_segments})")


def _reduce(ctx, norm, data, indices, seg, num_segments):
    idx, ids = ctx.host(indices).astype(np.int64), ctx.host(seg).astype(np.int64)
    if data.ndim < 1:
        raise ctx.fail("data must be at least a vector")
    n_out = int(num_segments) if num_segments is not None else (int(ids[-1]) + 1 if ids.size else 0)
    _check_ids(ctx, idx, ids, data.shape[0], None if num_segments is None else n_out)
    xp, x = ctx.xp, data
    work = np.float64 if x.dtype.kind == "f" else x.dtype
    out = xp.zeros((n_out, *x.shape[1:]), work)
    xp.add.at(out, xp.asarray(ids), x[xp.asarray(idx)].astype(work))
    if norm is not None:
        counts = np.bincount(ids, minlength=n_out)
        out = out * xp.asarray(_weights(counts, norm).reshape(-1, *([1] * (x.ndim - 1))))
    return out.astype(x.dtype)


def _shape(with_num: bool):
    def infer(ic: InferenceContext) -> list[Shape]:
        data = ic.shape(0)
        if data.rank == 0:
            raise ic.fail("data must be at least a vector")
        for i, what in ((1, "indices"), (2, "segment_ids")):
            if ic.shape(i).rank not in (None, 1):
                raise ic.fail(f"{what} must be a vector, got shape {ic.shape(i)}")
        if data.rank is None:
            return [Shape.unknown()]
        rows = None
        v = ic.value(3) if with_num else ic.value(2)
        if v is not None:
            v = np.asarray(v)
            rows = int(v) if with_num else (int(v[-1]) + 1 if v.size else 0)
        return [Shape([rows, *data.dims[1:]])]

    return infer


def _register(kind: str, with_num: bool) -> None:
    name = f"SparseSegment{kind}" + ("WithNumSegments" if with_num else "")
    norm = _NORMS[kind]
    extra = ["num_segments: Tnumsegments"] if with_num else []
    register_op(
        name,
        inputs=["data: T", "indices: Tidx", "segment_ids: Tsegmentids", *extra],
        outputs=["output: T"],
        attrs=[f"T: {_T[kind]}", "Tidx: {int32, int64} = int32", "Tsegmentids: {int32, int64} = int32",
               *(["Tnumsegments: {int32, int64} = int32"] if with_num else []), "sparse_gradient: bool = false"],  # fmt: skip
        shape=_shape(with_num),
        doc=f"Row s: the {kind.lower()} (sum / sqrt(count) for SqrtN) of data[indices[i]] over the i with "
        "segment_ids[i] == s (sorted ids); empty segments 0.",
    )

    host = (1, 2, 3) if with_num else (1, 2)

    @kernel(name, host_inputs=host)
    def _run(ctx, data, indices, seg, *num):
        n = None
        if num:
            n = ctx.host(num[0])
            if n.ndim != 0 or int(n) < 0:
                raise ctx.fail(f"num_segments must be a non-negative scalar, got {n.tolist()}")
        return _reduce(ctx, norm, data, indices, seg, n)

    @gradient(name)
    def _grad(b, node, dys):
        data, indices, seg = node.data_inputs[:3]
        dim0 = gu.emit(b, "StridedSlice", gu.shape_of(b, data), gu.const(b, [0], "int32"), gu.const(b, [1], "int32"),
                       gu.const(b, [1], "int32"), shrink_axis_mask=1)  # fmt: skip
        g = gu.emit(b, f"SparseSegment{kind}Grad", dys[0], indices, seg, dim0)
        return [g, None, None] + ([None] if with_num else [])


for _kind in _NORMS:
    _register(_kind, False)
    _register(_kind, True)


# --- the gradient ops -------------------------------------------------------------------------


def _register_grad(kind: str) -> None:
    name = f"SparseSegment{kind}Grad"
    norm = _NORMS[kind]

    def infer(ic: InferenceContext) -> list[Shape]:
        g = ic.shape(0)
        v = ic.value(3)
        if g.rank is None:
            return [Shape.unknown()]
        return [Shape([int(v) if v is not None else None, *g.dims[1:]])]

    register_op(
        name,
        inputs=["grad: T", "indices: Tidx", "segment_ids: Tsegmentids", "output_dim0: int32"],
        outputs=["output: T"],
        attrs=["T: {bfloat16, float16, float32, float64}", "Tidx: {int32, int64} = int32", "Tsegmentids: {int32, int64} = int32"],
        shape=infer,
        doc=f"SparseSegment{kind}'s gradient: row indices[i] of the [output_dim0, ...] result gathers grad[segment_ids[i]]"
        + ("" if norm is None else (" / count" if norm == "mean" else " / sqrt(count)")) + ", summed.",
    )

    @kernel(name, host_inputs=(1, 2, 3))
    def _run(ctx, grad, indices, seg, dim0):
        idx, ids, rows = ctx.host(indices).astype(np.int64), ctx.host(seg).astype(np.int64), int(ctx.host(dim0))
        xp, g = ctx.xp, grad
        if g.ndim < 1:
            raise ctx.fail("grad must be at least a vector")
        _check_ids(ctx, idx, ids, rows, g.shape[0])
        out = xp.zeros((rows, *g.shape[1:]), np.float64)
        xp.add.at(out, xp.asarray(idx), _weighted_rows(xp, g, ids, norm))
        return out.astype(g.dtype)

    not_differentiable(name)


for _kind in _NORMS:
    _register_grad(_kind)


def _register_grad_v2(kind: str) -> None:
    # TF's newer gradients (embedding_lookup_sparse's, an IndexedSlices): one row per distinct
    # index, in increasing order, beside those indices, instead of the dense [output_dim0, ...]
    name = f"SparseSegment{kind}GradV2"
    norm = _NORMS[kind]

    def infer(ic: InferenceContext) -> list[Shape]:
        g = ic.shape(0)
        return [Shape.unknown() if g.rank is None else Shape([None, *g.dims[1:]]), Shape([None])]

    register_op(
        name,
        inputs=["grad: T", "indices: Tidx", "segment_ids: Tsegmentids", "dense_output_dim0: int32"],
        outputs=["output: T", "sorted_unique_indices: Tidx"],
        attrs=["T: {bfloat16, float16, float32, float64}", "Tidx: {int32, int64} = int32", "Tsegmentids: {int32, int64} = int32"],
        shape=infer,
        doc=f"SparseSegment{kind}'s gradient as slices: row k gathers grad[segment_ids[i]]"
        + ("" if norm is None else (" / count" if norm == "mean" else " / sqrt(count)"))
        + " over the i with indices[i] == sorted_unique_indices[k] (the distinct indices, increasing).",
    )

    @kernel(name, host_inputs=(1, 2, 3))
    def _run(ctx, grad, indices, seg, dim0):
        it = ctx.host(indices).dtype
        idx, ids, rows = ctx.host(indices).astype(np.int64), ctx.host(seg).astype(np.int64), int(ctx.host(dim0))
        xp, g = ctx.xp, grad
        if g.ndim < 1:
            raise ctx.fail("grad must be at least a vector")
        _check_ids(ctx, idx, ids, rows, g.shape[0])
        uniq, where = np.unique(idx, return_inverse=True)
        out = xp.zeros((uniq.size, *g.shape[1:]), np.float64)
        xp.add.at(out, xp.asarray(where.reshape(-1)), _weighted_rows(xp, g, ids, norm))
        return out.astype(g.dtype), xp.asarray(uniq.astype(it))

    not_differentiable(name)


for _kind in _NORMS:
    _register_grad_v2(_kind)
