"""Ops on TensorFlow's sparse tensors, given as their (indices, values, dense_shape) triple:
SparseToDense, SparseTensorDenseMatMul and SparseReduceSum (+ SparseReduceSumSparse), with TF's
gradients (sparse_grad.py). A
``tf.sparse.SparseTensor`` of a TF graph arrives as those three tensors, so these are what a
wide-and-deep style graph (sparse features into a dense layer) needs."""

from __future__ import annotations

import numpy as np

from specflow.graph.shapes import Shape
from specflow.ops import grad_util as gu
from specflow.ops.inference import InferenceContext
from specflow.ops.reduction_ops import normalize_axes
from specflow.ops.registry import gradient, kernel, not_differentiable, register_op

# --- SparseToDense ----------------------------------------------------------------------------


def _to_dense_shape(ic: InferenceContext) -> list[Shape]:
    return [ic.shape_from_value(1)]


register_op(
    "SparseToDense",
    inputs=["sparse_indices: Tindices", "output_shape: Tindices", "sparse_values: T", "default_value: T"],
    outputs=["dense: T"],
    attrs=["validate_indices: bool = true", "T: type", "Tindices: {int32, int64}"],
    shape=_to_dense_shape,
    doc="A dense tensor of output_shape holding sparse_values at sparse_indices ([N, rank], or a "
    "vector for rank 1; a scalar value is repeated) and default_value elsewhere; with "
    "validate_indices the indices must be sorted, unique and in range.",
)


@kernel("SparseToDense", host_inputs=(0, 1))
def _sparse_to_dense(ctx, indices, shape, values, default):
    xp = ctx.xp
    dims = tuple(int(d) for d in np.asarray(ctx.host(shape)).reshape(-1))
    idx = np.asarray(ctx.host(indices)).astype(np.int64)
    idx = idx.reshape(-1, 1) if idx.ndim <= 1 else idx
    if idx.shape[1] != len(dims):
        raise ctx.fail(f"sparse_indices of shape {list(idx.shape)} do not index a tensor of rank {len(dims)}")
    if values.ndim not in (0, 1) or (values.ndim == 1 and values.shape[0] != idx.shape[0]):
        raise ctx.fail(f"sparse_values must be a scalar or hold {idx.shape[0]} values, got shape {list(values.shape)}")
    if default.ndim != 0:
        raise ctx.fail(f"default_value must be a scalar, got shape {list(default.shape)}")
    bad = np.flatnonzero(((idx < 0) | (idx >= np.array(dims, np.int64))).any(axis=1)) if idx.size else []
    if len(bad):
        raise ctx.fail(f"sparse_indices[{bad[0]}] = {idx[bad[0]].tolist()} is out of bounds of {list(dims)}")
    if ctx.attrs["validate_indices"] and idx.shape[0] > 1:
        flat = np.ravel_multi_index(tuple(idx.T), dims)
        order = np.flatnonzero(flat[1:] <= flat[:-1])
        if order.size:
            j = int(order[0]) + 1
            what = "repeated" if flat[j] == flat[j - 1] else "out of order"
            raise ctx.fail(f"sparse_indices[{j}] = {idx[j].tolist()} is {what}")
    out = xp.full(dims, default, dtype=values.dtype)
    if idx.shape[0]:
        out[tuple(xp.asarray(idx.T))] = values
    return out


@gradient("SparseToDense")
def _sparse_to_dense_grad(b, node, dys):
    # The values' gradient is the dense gradient at their indices; the default's, the rest of it.
    indices, _, values, _ = node.data_inputs
    axis0 = gu.const(b, np.array([0], np.int32))
    gathered = gu.emit(b, "GatherNd", dys[0], _as_matrix(b, indices))  # [N]
    taken = gu.emit(b, "Sum", gathered, axis0)
    every = gu.emit(b, "Sum", dys[0], gu.emit(b, "Range", gu.const(b, 0, "int32"), gu.emit(b, "Rank", dys[0]),
                                             gu.const(b, 1, "int32")))  # fmt: skip
    grad_values = taken if b.spec(values).shape.rank == 0 else gathered  # (a scalar value is repeated)
    return [None, None, grad_values, gu.emit(b, "Sub", every, taken)]


def _as_matrix(b, indices: str) -> str:
    """[N, rank] indices (a vector of rank-1 indices as [N, 1])."""
    if b.spec(indices).shape.rank == 2:
        return indices
    return gu.emit(b, "Reshape", indices, gu.const(b, np.array([-1, 1], np.int32)))


# --- SparseTensorDenseMatMul ------------------------------------------------------------------


def _sparse_matmul_shape(ic: InferenceContext) -> list[Shape]:
    a_shape, bs = ic.value(2), ic.shape(3)
    if bs.rank not in (None, 2):
        raise ic.fail(f"b must be a matrix, got shape {bs}")
    rows = None
    if a_shape is not None:
        a = [int(d) for d in np.asarray(a_shape).reshape(-1)]
        rows = a[1] if ic.attr("adjoint_a") else a[0]
    cols = None if bs.rank is None else bs[0] if ic.attr("adjoint_b") else bs[1]
    return [Shape([rows, cols])]


register_op(
    "SparseTensorDenseMatMul",
    inputs=["a_indices: Tindices", "a_values: T", "a_shape: int64", "b: T"],
    outputs=["product: T"],
    attrs=["T: type", "Tindices: {int32, int64} = int64", "adjoint_a: bool = false", "adjoint_b: bool = false"],
    shape=_sparse_matmul_shape,
    doc="The sparse matrix a (indices [N, 2], values [N], shape [2]) times the dense matrix b, "
    "either optionally adjoint; repeated indices add up.",
)


@kernel("SparseTensorDenseMatMul", host_inputs=(0, 2))
def _sparse_dense_matmul(ctx, indices, values, a_shape, b):
    xp = ctx.xp
    idx = np.asarray(ctx.host(indices)).astype(np.int64)
    shape = [int(d) for d in np.asarray(ctx.host(a_shape)).reshape(-1)]
    if idx.ndim != 2 or idx.shape[1] != 2 or len(shape) != 2:
        raise ctx.fail(f"a must be a sparse matrix: indices [N, 2] and shape [2], got {list(idx.shape)} and {shape}")
    if values.shape != (idx.shape[0],):
        raise ctx.fail(f"a_values must hold {idx.shape[0]} values, got shape {list(values.shape)}")
    rows, cols = (idx[:, 1], idx[:, 0]) if ctx.attrs["adjoint_a"] else (idx[:, 0], idx[:, 1])
    m, k = (shape[1], shape[0]) if ctx.attrs["adjoint_a"] else (shape[0], shape[1])
    vals = xp.conj(values) if ctx.attrs["adjoint_a"] and values.dtype.kind == "c" else values
    bm = xp.conj(b.T) if ctx.attrs["adjoint_b"] else b
    if bm.ndim != 2 or bm.shape[0] != k:
        raise ctx.fail(f"a ({shape}, adjoint_a={ctx.attrs['adjoint_a']}) and b {list(b.shape)} "
                       f"(adjoint_b={ctx.attrs['adjoint_b']}) do not multiply")  # fmt: skip
    if idx.size and ((rows < 0) | (rows >= m) | (cols < 0) | (cols >= k)).any():
        raise ctx.fail(f"a_indices hold an index outside a's shape {shape}")
    out = xp.zeros((m, bm.shape[1]), dtype=b.dtype)
    if idx.shape[0]:
        xp.add.at(out, xp.asarray(rows), vals[:, None] * bm[xp.asarray(cols)])
    return out


@gradient("SparseTensorDenseMatMul")
def _sparse_dense_matmul_grad(b, node, dys):
    # TF's: b's gradient is adjoint(a) @ grad (again a sparse product); each value's, the dot of
    # the grad's row and b's row it met.
    indices, values, a_shape, bm = node.data_inputs
    adj_a, adj_b = node.attrs["adjoint_a"], node.attrs["adjoint_b"]
    grad_b = gu.emit(b, "SparseTensorDenseMatMul", indices, values, a_shape, dys[0], adjoint_a=not adj_a)
    if adj_b:
        grad_b = gu.emit(b, "Transpose", grad_b, gu.const(b, np.array([1, 0], np.int32)))
        if b.spec(bm).dtype.is_complex:
            grad_b = gu.emit(b, "Conj", grad_b)
    idx = gu.emit(b, "Cast", indices, DstT="int32") if b.spec(indices).dtype.name != "int32" else indices
    zero, one = gu.const(b, np.array([0, 0], np.int32)), gu.const(b, np.array([0, 1], np.int32))
    size = gu.const(b, np.array([-1, 1], np.int32))
    first = gu.emit(b, "Reshape", gu.emit(b, "Slice", idx, zero, size), gu.const(b, np.array([-1], np.int32)))
    second = gu.emit(b, "Reshape", gu.emit(b, "Slice", idx, one, size), gu.const(b, np.array([-1], np.int32)))
    rows, cols = (second, first) if adj_a else (first, second)
    b_rows = bm if not adj_b else gu.emit(b, "Transpose", bm, gu.const(b, np.array([1, 0], np.int32)))
    axis0 = gu.const(b, 0, "int32")
    parts = gu.emit(b, "Mul", gu.emit(b, "GatherV2", dys[0], rows, axis0), gu.emit(b, "GatherV2", b_rows, cols, axis0))
    grad_values = gu.emit(b, "Sum", parts, gu.const(b, np.array([1], np.int32)))
    return [None, grad_values, None, grad_b]


# --- SparseReduceSum and SparseReduceSumSparse ------------------------------------------------

_REDUCE_INPUTS = ["input_indices: int64", "input_values: T", "input_shape: int64", "reduction_axes: int32"]


def _reduce_args(ctx, indices, values, shape, axes):
    """(indices [N, R], shape, reduced axes) of a SparseReduceSum, checked."""
    idx = np.asarray(ctx.host(indices)).astype(np.int64)
    dims = [int(d) for d in np.asarray(ctx.host(shape)).reshape(-1)]
    if idx.ndim != 2 or idx.shape[1] != len(dims):
        raise ctx.fail(f"input_indices must be [N, {len(dims)}] for a shape of rank {len(dims)}, got {list(idx.shape)}")
    if values.shape != (idx.shape[0],):
        raise ctx.fail(f"input_values must hold {idx.shape[0]} values, got shape {list(values.shape)}")
    if idx.size and ((idx < 0) | (idx >= np.array(dims, np.int64))).any():
        row = int(np.flatnonzero(((idx < 0) | (idx >= np.array(dims, np.int64))).any(axis=1))[0])
        raise ctx.fail(f"input_indices[{row}] = {idx[row].tolist()} is out of bounds of {dims}")
    a = np.asarray(ctx.host(axes)).reshape(-1)
    try:
        return idx, dims, normalize_axes(a, len(dims))
    except ValueError as e:
        raise ctx.fail(str(e)) from None


def _reduced_index(idx, dims, red, keep: bool):
    """Each entry's output index and the output shape: reduced axes dropped, or kept as 0 / 1."""
    if keep:
        return np.where(np.isin(np.arange(len(dims)), red), 0, idx), [1 if i in red else d for i, d in enumerate(dims)]
    kept = [i for i in range(len(dims)) if i not in red]
    return idx[:, kept], [dims[i] for i in kept]


def _reduce_sum_shape(ic: InferenceContext) -> list[Shape]:
    shape, axes = ic.value(2), ic.value(3)
    if shape is None or axes is None:
        return [Shape(None)]
    dims = [int(d) for d in np.asarray(shape).reshape(-1)]
    a = np.asarray(axes).reshape(-1)
    try:
        red = normalize_axes(a, len(dims))
    except ValueError as e:
        raise ic.fail(str(e)) from None
    if ic.attr("keep_dims"):
        return [Shape([1 if i in red else d for i, d in enumerate(dims)])]
    return [Shape([d for i, d in enumerate(dims) if i not in red])]


register_op(
    "SparseReduceSum",
    inputs=_REDUCE_INPUTS,
    outputs=["output: T"],
    attrs=["keep_dims: bool = false", "T: {numeric}"],
    shape=_reduce_sum_shape,
    doc="The sum of a sparse tensor (indices [N, R], values [N], shape [R]) over reduction_axes "
    "(none when empty: the tensor made dense), as a dense tensor; keep_dims keeps them as size 1.",
)


@kernel("SparseReduceSum", host_inputs=(0, 2, 3))
def _sparse_reduce_sum(ctx, indices, values, shape, axes):
    xp = ctx.xp
    idx, dims, red = _reduce_args(ctx, indices, values, shape, axes)
    out_idx, out_dims = _reduced_index(idx, dims, red, ctx.attrs["keep_dims"])
    if not out_dims:  # every axis reduced: a scalar
        return xp.asarray(values.sum(), dtype=values.dtype)
    out = xp.zeros(out_dims, dtype=values.dtype)
    if idx.shape[0]:
        xp.add.at(out, tuple(xp.asarray(out_idx.T)), values)
    return out


@gradient("SparseReduceSum")
def _sparse_reduce_sum_grad(b, node, dys):
    # TF's: each value's gradient is the output gradient at its index with the reduced axes
    # taken to 0 (indices // (shape // kept shape), the kept shape having 1 at reduced axes).
    indices, _, shape, axes = node.data_inputs
    rank = gu.emit(b, "Size", shape)
    dims = gu.emit(b, "Range", gu.const(b, np.int32(0)), rank, gu.const(b, np.int32(1)))
    flat = gu.emit(b, "Reshape", axes, gu.const(b, np.array([-1], np.int32)))
    hit = gu.emit(b, "Equal", gu.emit(b, "ExpandDims", dims, gu.const(b, np.int32(1))),
                  gu.emit(b, "ExpandDims", gu.emit(b, "FloorMod", flat, rank), gu.const(b, np.int32(0))))  # fmt: skip
    reduced = gu.emit(b, "Any", hit, gu.const(b, np.int32(1)))
    kept = gu.emit(b, "SelectV2", reduced, gu.emit(b, "OnesLike", shape), shape)
    scale = gu.emit(b, "FloorDiv", shape, kept)
    grad = gu.emit(b, "GatherNd", gu.emit(b, "Reshape", dys[0], kept), gu.emit(b, "FloorDiv", indices, scale))
    return [None, grad, None, None]


register_op(
    "SparseReduceSumSparse",
    inputs=_REDUCE_INPUTS,
    outputs=["output_indices: int64", "output_values: T", "output_shape: int64"],
    attrs=["keep_dims: bool = false", "T: {numeric}"],
    shape=lambda ic: [Shape([None, None]), Shape([None]), Shape([None])],
    doc="SparseReduceSum's result as a sparse tensor: one entry per distinct output index the "
    "input's entries reach, in row-major order.",
)


@kernel("SparseReduceSumSparse", host_inputs=(0, 2, 3))
def _sparse_reduce_sum_sparse(ctx, indices, values, shape, axes):
    xp = ctx.xp
    idx, dims, red = _reduce_args(ctx, indices, values, shape, axes)
    out_idx, out_dims = _reduced_index(idx, dims, red, ctx.attrs["keep_dims"])
    keys, where = np.unique(out_idx, axis=0, return_inverse=True)
    sums = xp.zeros(keys.shape[0], dtype=values.dtype)
    if idx.shape[0]:
        xp.add.at(sums, xp.asarray(where.reshape(-1)), values)
    return xp.asarray(keys.astype(np.int64)), sums, xp.asarray(np.array(out_dims, np.int64))


not_differentiable("SparseReduceSumSparse")  # as in TF
