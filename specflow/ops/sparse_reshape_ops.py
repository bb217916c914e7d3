"""Sparse tensors (indices [N, rank], values [N], dense_shape [rank]) filled and reshaped:
SparseFillEmptyRows (tf.sparse.fill_empty_rows) with its gradient op SparseFillEmptyRowsGrad, and
SparseReshape (tf.sparse.reshape).

As TF's CPU kernels (fill_empty_rows_functor.h, reshape_util.cc): SparseFillEmptyRows keeps the
input as it is when every row has an entry and the rows are in order; otherwise it groups the
entries by row (a stable counting sort: the order within a row is the input's, columns are not
sorted) and puts one entry [row, 0, ...] = default_value first in each empty row. The gradient
takes each value's gradient from where it went (reverse_index_map), and the default's as the sum
of the rest. SparseReshape maps each entry through its row-major linear index; one new dimension
may be -1 (inferred).
"""

from __future__ import annotations

import numpy as np

from specflow.graph import dtypes
from specflow.graph.shapes import Shape
from specflow.ops import grad_util as gu
from specflow.ops.inference import InferenceContext
from specflow.ops.registry import gradient, kernel, register_op


def _rank(c, s: Shape, want: int, what: str) -> None:
    if s.rank not in (None, want):
        raise c.fail(f"{what} must be {['a scalar', 'a vector', 'a matrix'][want]}, got shape {s}")


# --- SparseFillEmptyRows ----------------------------------------------------------------------


def _fill_shape(ic: InferenceContext) -> list[Shape]:
    indices, values, dense_shape = ic.shape(0), ic.shape(1), ic.shape(2)
    for i, want, what in ((0, 2, "indices"), (1, 1, "values"), (2, 1, "dense_shape"), (3, 0, "default_value")):
        _rank(ic, ic.shape(i), want, what)
    n = indices.dims[0] if indices.rank else None
    nv = values.dims[0] if values.rank else None
    if None not in (n, nv) and n != nv:
        raise ic.fail(f"values hold {nv} entries but indices {n}")
    rank = dense_shape.dims[0] if dense_shape.rank else None
    if rank == 0:
        raise ic.fail("dense_shape must not be empty")
    known, idx = ic.value(2), ic.value(0)
    rows = int(np.asarray(known).reshape(-1)[0]) if known is not None and np.size(known) else None
    full = None  # the filled entry count, when the indices and the row count are constants
    if rows is not None and rows >= 0 and idx is not None and np.ndim(idx) == 2:
        r = np.asarray(idx, np.int64)[:, 0]
        if ((r >= 0) & (r < rows)).all():
            full = int(np.maximum(np.bincount(r, minlength=rows), 1).sum()) if rows else 0
    return [Shape([full, rank]), Shape([full]), Shape([rows]), Shape([n if n is not None else nv])]


register_op(
    "SparseFillEmptyRows",
    inputs=["indices: int64", "values: T", "dense_shape: int64", "default_value: T"],
    outputs=["output_indices: int64", "output_values: T", "empty_row_indicator: bool", "reverse_index_map: int64"],
    attrs=["T: type"],
    shape=_fill_shape,
    doc="The sparse tensor with one entry [row, 0, ...] = default_value in each row that has none "
    "(entries grouped by row, in their order within a row); which rows were empty; and where each "
    "input entry went.",
)


def _fill_args(ctx, indices, values, dense_shape, default):
    idx, shape = ctx.host(indices), ctx.host(dense_shape)
    if shape.ndim != 1:
        raise ctx.fail(f"dense_shape must be a vector, got shape {list(shape.shape)}")
    if idx.ndim != 2:
        raise ctx.fail(f"indices must be a matrix, got shape {list(idx.shape)}")
    if values.ndim != 1:
        raise ctx.fail(f"values must be a vector, got shape {list(values.shape)}")
    if idx.shape[0] != values.shape[0]:
        raise ctx.fail(f"values hold {values.shape[0]} entries but indices {idx.shape[0]}")
    if idx.shape[1] != shape.shape[0]:
        raise ctx.fail(f"dense_shape has {shape.shape[0]} dims but indices have {idx.shape[1]} columns")
    if default.ndim != 0:
        raise ctx.fail(f"default_value must be a scalar, got shape {list(default.shape)}")
    if shape.size == 0:
        raise ctx.fail("dense_shape must not be empty")
    return idx, int(shape[0])


@kernel("SparseFillEmptyRows", host_inputs=(0, 2))
def _sparse_fill_empty_rows(ctx, indices, values, dense_shape, default):
    xp = ctx.xp
    idx, dense_rows = _fill_args(ctx, indices, values, dense_shape, default)
    n, rank = idx.shape
    rows = idx[:, 0]
    bad = np.flatnonzero((rows < 0) | (rows >= dense_rows))
    if bad.size:
        raise ctx.fail(f"indices[{bad[0]}, 0] = {rows[bad[0]]} is not a row of a dense shape with {dense_rows} rows")
    if dense_rows < 0:
        raise ctx.fail(f"dense_shape[0] must be >= 0, got {dense_rows}")
    if dense_rows == 0:
        return (xp.zeros((0, rank), np.int64), values[:0], xp.zeros(0, bool), xp.zeros(0, np.int64))
    counts = np.bincount(rows, minlength=dense_rows)
    empty = counts == 0
    if not empty.any() and (n < 2 or (rows[1:] >= rows[:-1]).all()):
        return xp.asarray(idx), values, xp.asarray(empty), xp.arange(n, dtype=np.int64)
    ends = np.cumsum(np.maximum(counts, 1))
    starts = ends - np.maximum(counts, 1)
    order = np.argsort(rows, kind="stable")
    first = np.searchsorted(rows[order], rows[order], side="left")  # each entry's row's first slot
    where = np.empty(n, np.int64)
    where[order] = starts[rows[order]] + np.arange(n) - first
    out_idx = np.zeros((int(ends[-1]), rank), np.int64)
    out_idx[where] = idx
    out_idx[starts[empty], 0] = np.flatnonzero(empty)
    out_values = xp.empty(int(ends[-1]), values.dtype)
    out_values[xp.asarray(where)] = values
    out_values[xp.asarray(starts[empty])] = default
    return xp.asarray(out_idx), out_values, xp.asarray(empty), xp.asarray(where)


@gradient("SparseFillEmptyRows")
def _sparse_fill_empty_rows_grad(b, node, dys):
    if dys[1] is None:
        return [None] * 4
    d_values, d_default = gu.outputs(b, "SparseFillEmptyRowsGrad", 2, f"{node.name}:3", dys[1])
    return [None, d_values, None, d_default]


register_op(
    "SparseFillEmptyRowsGrad",
    inputs=["reverse_index_map: int64", "grad_values: T"],
    outputs=["d_values: T", "d_default_value: T"],
    attrs=["T: type"],
    shape=lambda ic: [Shape([ic.shape(0).dims[0] if ic.shape(0).rank else None]), Shape([])],
    doc="SparseFillEmptyRows' gradient: each input value's gradient from where it went, and the "
    "default value's as the sum of the gradients of the filled-in entries.",
)


@kernel("SparseFillEmptyRowsGrad", host_inputs=(0,), T=dtypes.NUMERIC)  # TF's: number types
def _sparse_fill_empty_rows_grad_kernel(ctx, reverse, grad):
    xp = ctx.xp
    rev = ctx.host(reverse)
    if rev.ndim != 1:
        raise ctx.fail(f"reverse_index_map must be a vector, got shape {list(rev.shape)}")
    if grad.ndim != 1:
        raise ctx.fail(f"grad_values must be a vector, got shape {list(grad.shape)}")
    bad = np.flatnonzero((rev < 0) | (rev >= grad.shape[0]))
    if bad.size:
        raise ctx.fail(f"reverse_index_map[{bad[0]}] = {rev[bad[0]]} is not in [0, {grad.shape[0]})")
    seen = np.zeros(grad.shape[0], bool)
    seen[rev] = True
    rest = grad[xp.asarray(np.flatnonzero(~seen))]
    return grad[xp.asarray(rev)], rest.sum(dtype=grad.dtype)


# --- SparseReshape ----------------------------------------------------------------------------


def _reshape_shape(ic: InferenceContext) -> list[Shape]:
    for i, what in ((0, "input_indices"), (1, "input_shape"), (2, "new_shape")):
        _rank(ic, ic.shape(i), 2 if i == 0 else 1, what)
    n = ic.shape(0).dims[0] if ic.shape(0).rank else None
    rank = ic.shape(2).dims[0] if ic.shape(2).rank else None
    return [Shape([n, rank]), Shape([rank])]


register_op(
    "SparseReshape",
    inputs=["input_indices: int64", "input_shape: int64", "new_shape: int64"],
    outputs=["output_indices: int64", "output_shape: int64"],
    shape=_reshape_shape,
    doc="A sparse tensor's indices for new_shape (one dimension may be -1, inferred), each entry at "
    "the same row-major position; and the new dense shape.",
)


def _target(ctx, dense: list[int], new: list[int]) -> list[int]:
    """new_shape with its -1 filled in, checked against the dense size as TF does."""
    size, product, unknown = int(np.prod(dense, dtype=np.int64)), 1, -1
    for d, v in enumerate(new):
        if v == -1:
            if unknown != -1:
                raise ctx.fail(f"only one output dimension may be -1, not both {unknown} and {d}")
            unknown = d
        elif v < 0:
            raise ctx.fail(f"size {d} must be non-negative, not {v}")
        else:
            product *= v
    out = list(new)
    if unknown != -1:
        if product <= 0:
            raise ctx.fail("reshape cannot infer the missing input size for an empty tensor unless all "
                           "specified input sizes are non-zero")  # fmt: skip
        if size % product:
            raise ctx.fail(f"Input to reshape is a SparseTensor with {size} dense values, but the requested "
                           f"shape requires a multiple of {product}. input_shape={dense} output_shape={new}")  # fmt: skip
        out[unknown] = size // product
    if int(np.prod(out, dtype=np.int64)) != size:
        raise ctx.fail(f"Input to reshape is a tensor with {size} dense values, but the requested shape has "
                       f"{int(np.prod(out, dtype=np.int64))}. input_shape={dense} output_shape={out}")  # fmt: skip
    return out


@kernel("SparseReshape", devices=("CPU",))
def _sparse_reshape(ctx, indices, shape, new_shape):
    for name, v, want in (("input_indices", indices, 2), ("input_shape", shape, 1), ("new_shape", new_shape, 1)):
        if v.ndim != want:
            raise ctx.fail(f"{name} must be a {'matrix' if want == 2 else 'vector'}, got shape {list(v.shape)}")
    dense = [int(d) for d in shape]
    if any(d < 0 for d in dense):
        raise ctx.fail(f"input_shape {dense} has a negative dimension")
    if indices.shape[1] != len(dense):
        raise ctx.fail(f"input_indices have {indices.shape[1]} columns but input_shape has {len(dense)} dims")
    out = _target(ctx, dense, [int(d) for d in new_shape])
    n = indices.shape[0]
    if n and not (int(np.prod(dense, dtype=np.int64)) > 0 and int(np.prod([d for d in out], dtype=np.int64)) > 0):
        raise ctx.fail(f"Input tensor has {n} non zero elements but input shape ({dense}) or output shape "
                       f"({out}) is empty")  # fmt: skip
    if out == dense:
        return indices, shape
    flat = indices.astype(np.int64) @ _strides(dense) if n else np.zeros(0, np.int64)
    result = np.zeros((n, len(out)), np.int64)
    for j, s in enumerate(_strides(out)):
        q = np.abs(flat) // s * np.sign(flat)  # C++'s division, toward zero (an index out of range)
        result[:, j], flat = q, flat - q * s
    return result, np.array(out, np.int64)


def _strides(dims: list[int]) -> np.ndarray:
    """Row-major strides of dims, as int64."""
    out = np.ones(len(dims), np.int64)
    for d in range(len(dims) - 2, -1, -1):
        out[d] = out[d + 1] * dims[d + 1]
    return out
