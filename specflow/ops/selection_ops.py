"""Selecting elements by value: TopKV2 (the k largest along the last axis), Where (coordinates of
the true/nonzero elements) and Unique (distinct values in order of first appearance)."""

from __future__ import annotations

import numpy as np

from specflow.errors import GraphError
from specflow.graph import dtypes
from specflow.graph.shapes import Shape
from specflow.ops import grad_util as gu
from specflow.ops.inference import InferenceContext
from specflow.ops.registry import gradient, kernel, not_differentiable, register_op
from specflow.ops.shape_args import scalar_arg, shape_of

# --- TopKV2 -----------------------------------------------------------------------------------


def _top_k_shape(fail, x: Shape, k: int | None) -> Shape:
    if x.rank == 0:
        raise fail("input must be at least 1-D, got a scalar")
    if k is not None and k < 0:
        raise fail(f"k ({k}) must be non-negative")
    if x.rank is None:
        return x
    last = x[-1]
    if k is not None and last is not None and last < k:
        raise fail(f"input must have at least k = {k} columns, got shape {x}")
    return Shape(list(x.dims[:-1]) + [k])


def _top_k_infer(ic: InferenceContext) -> list[Shape]:
    s = _top_k_shape(ic.fail, ic.shape(0), scalar_arg(ic.fail, ic.value(1), "k"))
    return [s, s]


register_op(
    "TopKV2",
    inputs=["input: T", "k: Tk"],
    outputs=["values: T", "indices: index_type"],
    attrs=[
        "sorted: bool = true",
        "T: {real}",
        "Tk: {int16, int32, int64} = int32",
        "index_type: {int16, int32, int64} = int32",
    ],
    shape=_top_k_infer,
    doc="The k largest entries along the last axis and their indices, largest first; equal "
    "values keep their order (the lower index first).",
)


@kernel("TopKV2", host_inputs=(1,))
def _top_k(ctx, x, k):
    xp = ctx.xp
    k = scalar_arg(ctx.fail, ctx.host(k), "k")
    _top_k_shape(ctx.fail, shape_of(x), k)
    n = x.shape[-1]
    # A stable ascending sort of the reversed row, read backwards: descending, ties by index.
    order = xp.argsort(x[..., ::-1], axis=-1, kind="stable")[..., ::-1][..., :k]
    indices = (n - 1) - order
    values = xp.take_along_axis(x, indices, axis=-1)
    return values, indices.astype(ctx.attrs["index_type"].numpy)


@gradient("TopKV2")
def _top_k_grad(b, node, dys):
    # As TF: scatter the values' gradient back to the positions they came from, row by row
    # (rows flattened to one axis, each row's indices offset by its start).
    x = node.data_inputs[0]
    indices = f"{node.name}:1"
    if node.attrs["index_type"] != dtypes.int64:
        indices = gu.emit(b, "Cast", indices, DstT=dtypes.int64)
    shape = gu.shape_of(b, x, dtypes.int64)
    one = gu.const(b, [1], "int32")
    n = gu.emit(b, "StridedSlice", shape, gu.const(b, [-1], "int32"), gu.const(b, [0], "int32"), one,
                end_mask=1, shrink_axis_mask=1)  # fmt: skip
    lead = gu.emit(b, "StridedSlice", shape, gu.const(b, [0], "int32"), gu.const(b, [-1], "int32"), one)
    rows = gu.emit(b, "Prod", lead, gu.const(b, 0, "int32"))
    total = gu.emit(b, "Mul", rows, n)
    starts = gu.emit(b, "Range", gu.const(b, 0, "int64"), total, n)
    by_row = gu.emit(b, "Reshape", indices, gu.emit(b, "Pack", rows, gu.const(b, -1, "int64")))
    flat = gu.emit(b, "AddV2", by_row, gu.emit(b, "ExpandDims", starts, gu.const(b, 1, "int32")))
    flat = gu.emit(b, "Reshape", flat, gu.const(b, [-1, 1], "int32"))
    values = gu.emit(b, "Reshape", dys[0], gu.const(b, [-1], "int32"))
    dense = gu.emit(b, "ScatterNd", flat, values, gu.emit(b, "Reshape", total, one))
    return [gu.emit(b, "Reshape", dense, shape), None]


# --- ApproxTopK -------------------------------------------------------------------------------
# tf.math.approx_max_k/approx_min_k: approximate on TPUs; on CPU and GPU TF computes the exact top k
# (largest, or smallest with is_max_k=false) along reduction_dimension, as here.


def _approx_top_k_infer(ic: InferenceContext) -> list[Shape]:
    x, k, axis = ic.shape(0), ic.attr("k"), ic.attr("reduction_dimension")
    if x.rank is None:
        return [x, x]
    if not -x.rank <= axis < max(x.rank, 1) or x.rank == 0:
        raise ic.fail(f"reduction_dimension {axis} is out of range for an input of shape {x}")
    axis %= x.rank
    if x[axis] is not None and x[axis] < k:
        raise ic.fail(f"input must have at least k = {k} entries along dimension {axis}, got shape {x}")
    s = Shape([k if i == axis else d for i, d in enumerate(x.dims)])
    return [s, s]


register_op(
    "ApproxTopK",
    inputs=["input: T"],
    outputs=["values: T", "indices: int32"],
    attrs=["k: int >= 0", "reduction_dimension: int = -1", "recall_target: float = 0.95", "is_max_k: bool = true",
           "reduction_input_size_override: int = -1", "aggregate_to_topk: bool = true", "T: {float16, float32}"],  # fmt: skip
    shape=_approx_top_k_infer,
    doc="The k largest (is_max_k) or smallest entries along reduction_dimension and their indices, "
    "exactly (TF's CPU kernel); ties keep the lower index first.",
)


@kernel("ApproxTopK")
def _approx_top_k(ctx, x):
    xp, k, axis = ctx.xp, ctx.attrs["k"], ctx.attrs["reduction_dimension"]
    if x.ndim == 0 or not -x.ndim <= axis < x.ndim:
        raise ctx.fail(f"reduction_dimension {axis} is out of range for an input of shape {list(x.shape)}")
    if x.shape[axis] < k:
        raise ctx.fail(f"input must have at least k = {k} entries along dimension {axis % x.ndim}, got shape {list(x.shape)}")
    moved = xp.moveaxis(x, axis, -1)
    n = moved.shape[-1]
    if ctx.attrs["is_max_k"]:
        order = (n - 1) - xp.argsort(moved[..., ::-1], axis=-1, kind="stable")[..., ::-1][..., :k]
    else:
        order = xp.argsort(moved, axis=-1, kind="stable")[..., :k]
    values = xp.take_along_axis(moved, order, axis=-1)
    return xp.moveaxis(values, -1, axis), xp.moveaxis(order, -1, axis).astype(np.int32)


@gradient("ApproxTopK")
def _approx_top_k_grad(b, node, dys):
    # As TF: scatter the values' gradient back to the entries they came from (ScatterNd on the full
    # coordinates: the indices along the reduction dim, iotas along the others).
    x = node.data_inputs[0]
    idx_shape = b.spec(f"{node.name}:1").shape
    if not idx_shape.is_fully_defined:
        raise GraphError(f"ApproxTopK '{node.name}': its gradient needs a static shape, got {idx_shape}")
    dims = idx_shape.as_list()
    rank, axis = len(dims), node.attrs["reduction_dimension"] % len(dims)
    lifted = gu.const(b, np.array([*dims, 1], np.int32))
    parts = []
    for d in range(rank):
        if d == axis:
            parts.append(gu.emit(b, "Reshape", f"{node.name}:1", lifted))
        else:
            iota = np.arange(dims[d], dtype=np.int32).reshape([dims[d] if i == d else 1 for i in range(rank)] + [1])
            parts.append(gu.const(b, np.broadcast_to(iota, [*dims, 1]).copy()))
    idx = gu.emit(b, "ConcatV2", *parts, gu.const(b, -1, "int32"), N=rank) if rank > 1 else parts[0]
    return [gu.emit(b, "ScatterNd", idx, dys[0], gu.shape_of(b, x))]


# --- Where ------------------------------------------------------------------------------------


def _where_infer(ic: InferenceContext) -> list[Shape]:
    return [Shape([None, ic.shape(0).rank])]


register_op(
    "Where",
    inputs=["input: T"],
    outputs=["index: int64"],
    attrs=["T: {numeric, bool} = bool"],
    shape=_where_infer,
    doc="The coordinates of the true (nonzero) elements of `input`, one row each, in row-major order.",
)


@kernel("Where")
def _where(ctx, x):
    if x.ndim == 0:  # TF's kernel handles ranks 1 and up (its shape function lets a scalar through)
        raise ctx.fail("WhereOp: Unhandled input dimensions: 0")
    return ctx.xp.argwhere(x).astype(np.int64)


not_differentiable("Where")


# --- Unique -----------------------------------------------------------------------------------


def _unique_infer(ic: InferenceContext) -> list[Shape]:
    x = ic.shape(0)
    if x.rank not in (None, 1):
        raise ic.fail(f"x must be a vector, got shape {x}")
    return [Shape([None]), x.with_rank(1)]


register_op(
    "Unique",
    inputs=["x: T"],
    outputs=["y: T", "idx: out_idx"],
    attrs=["T: type", "out_idx: {int32, int64} = int32"],
    shape=_unique_infer,
    doc="The distinct values of the vector `x` in order of first appearance, and for each element "
    "of x the index of its value in y (x = y[idx]).",
)


@kernel("Unique")
def _unique(ctx, x):
    xp = ctx.xp
    if x.ndim != 1:
        raise ctx.fail(f"x must be a vector, got shape {shape_of(x)}")
    values, first, inverse = xp.unique(x, return_index=True, return_inverse=True)
    # np.unique sorts; TF keeps first-appearance order: renumber the sorted values by where
    # they first appear.
    order = xp.argsort(first, kind="stable")
    rank = xp.empty_like(order)
    rank[order] = xp.arange(order.size)
    return values[order], rank[inverse.reshape(-1)].astype(ctx.attrs["out_idx"].numpy)


register_op(
    "UniqueWithCounts",
    inputs=["x: T"],
    outputs=["y: T", "idx: out_idx", "count: out_idx"],
    attrs=["T: type", "out_idx: {int32, int64} = int32"],
    shape=lambda ic: [*_unique_infer(ic), Shape([None])],
    doc="Unique's outputs and how often each distinct value occurs in x.",
)


@kernel("UniqueWithCounts")
def _unique_with_counts(ctx, x):
    y, idx = _unique(ctx, x)
    counts = ctx.xp.bincount(idx, minlength=y.shape[0]).astype(ctx.attrs["out_idx"].numpy)
    return y, idx, counts


not_differentiable("Unique", "UniqueWithCounts")  # TF registers no gradient for them either


register_op(
    "ListDiff",
    inputs=["x: T", "y: T"],
    outputs=["out: T", "idx: out_idx"],
    attrs=["T: type", "out_idx: {int32, int64} = int32"],
    shape=lambda ic: [Shape([None]), Shape([None])],
    doc="The values of the vector `x` that are not in the vector `y`, in x's order, and their "
    "indices in x (tf.compat.v1.setdiff1d; TF's gradient of Prod uses it).",
)


@kernel("ListDiff")
def _list_diff(ctx, x, y):
    xp = ctx.xp
    for name, v in (("x", x), ("y", y)):
        if v.ndim != 1:
            raise ctx.fail(f"{name} must be a vector, got shape {shape_of(v)}")
    keep = xp.flatnonzero(~xp.isin(x, y))
    return x[keep], keep.astype(ctx.attrs["out_idx"].numpy)


not_differentiable("ListDiff")


def _bound_shape(ic) -> list[Shape]:
    s, v = ic.shape(0), ic.shape(1)
    for name, t in (("sorted_inputs", s), ("values", v)):
        if t.rank not in (None, 2):
            raise ic.fail(f"{name} must be a matrix (a batch of vectors), got shape {t}")
    if s.rank == 2 and v.rank == 2 and not Shape([s[0]]).is_compatible_with(Shape([v[0]])):
        raise ic.fail(f"sorted_inputs {s} and values {v} must have the same batch size")
    return [v]


def _std_bound(xp, rows, values, upper: bool):
    """C++'s std::lower_bound (std::upper_bound if ``upper``) of each value in its row, probe for
    probe as TF runs them: the same answer as numpy's searchsorted on ordered rows, and TF's where
    a NaN makes them unordered (numpy sorts NaN last; every comparison with a NaN is false here)."""
    n = rows.shape[1]
    first = xp.zeros(values.shape, np.int64)
    if n == 0:
        return first
    count = xp.full(values.shape, n, np.int64)
    while bool((count > 0).any()):
        step = count // 2
        probe = xp.take_along_axis(rows, xp.minimum(first + step, n - 1), axis=1)
        go = (count > 0) & (~(values < probe) if upper else probe < values)
        first = xp.where(go, first + step + 1, first)
        count = xp.where(go, count - step - 1, step)
    return first


for _name, _side in (("LowerBound", "left"), ("UpperBound", "right")):
    register_op(
        _name,
        inputs=["sorted_inputs: T", "values: T"],
        outputs=["output: out_type"],
        attrs=["T: type", "out_type: {int32, int64} = int32"],
        shape=_bound_shape,
        doc=f"Per row, where each value would go in the sorted row ({'first' if _side == 'left' else 'last'} "
        "such position): tf.searchsorted.",
    )

    def _register_bound(name=_name, side=_side):
        @kernel(name)
        def _bound(ctx, sorted_inputs, values):
            xp = ctx.xp
            if sorted_inputs.ndim != 2 or values.ndim != 2 or sorted_inputs.shape[0] != values.shape[0]:
                raise ctx.fail(f"sorted_inputs {shape_of(sorted_inputs)} and values {shape_of(values)} must be "
                               "matrices with the same batch size")  # fmt: skip
            return _std_bound(xp, sorted_inputs, values, side == "right").astype(ctx.attrs["out_type"].numpy)

    _register_bound()
    not_differentiable(_name)


# --- Bucketize --------------------------------------------------------------------------------

register_op(
    "Bucketize",
    inputs=["input: T"],
    outputs=["output: int32"],
    attrs=["T: {int32, int64, float32, float64}", "boundaries: list(float)"],
    shape=lambda ic: [ic.shape(0)],
    doc="The bucket of each element: how many of the sorted boundaries are <= it (Keras "
    "Discretization, tf.raw_ops.Bucketize).",
)


@kernel("Bucketize")
def _bucketize(ctx, x):
    xp = ctx.xp
    bounds = np.asarray(ctx.attrs["boundaries"], np.float64)
    if bounds.size > 1 and np.any(bounds[1:] < bounds[:-1]):
        raise ctx.fail(f"boundaries must be sorted, got {list(ctx.attrs['boundaries'])}")
    # TF compares in float32 (its boundaries attr is a float list) for every input type.
    return xp.searchsorted(xp.asarray(bounds.astype(np.float32)), x.astype(np.float32) if x.dtype != np.float64 else x,
                           side="right").astype(np.int32)


not_differentiable("Bucketize")
