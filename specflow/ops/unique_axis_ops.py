"""UniqueV2 and UniqueWithCountsV2 (tf.unique's axis forms): the distinct slices of x along one
axis in order of first appearance, each slice's index into them and (WithCounts) how often each
occurs. An empty axis is Unique of a vector. CPU only (slices are compared by their bytes)."""

from __future__ import annotations

import numpy as np

from specflow.graph.shapes import Shape
from specflow.ops.inference import InferenceContext
from specflow.ops.registry import kernel, not_differentiable, register_op


def _unique_v2_shape(ic: InferenceContext) -> list[Shape]:
    x, axis = ic.shape(0), ic.value(1)
    if ic.shape(1).rank not in (None, 1):
        raise ic.fail(f"axis must be a vector of at most one element, got shape {ic.shape(1)}")
    if axis is None or x.rank is None:
        return [Shape.unknown(), Shape([None])]
    if np.size(axis) == 0:
        if x.rank != 1:
            raise ic.fail(f"x must be a vector when axis is empty, got shape {x}")
        return [Shape([None]), x]
    if np.size(axis) > 1:
        raise ic.fail(f"axis must have at most one element, got {np.ravel(axis).tolist()}")
    a = ic.axis(int(np.ravel(axis)[0]), x.rank)
    return [Shape([None if j == a else d for j, d in enumerate(x.dims)]), Shape([x[a]])]


def _unique_slices(ctx, x, axis):
    axis = ctx.host(axis).reshape(-1)
    if axis.size > 1:
        raise ctx.fail(f"axis must have at most one element, got {axis.tolist()}")
    if axis.size == 0:
        if x.ndim != 1:
            raise ctx.fail(f"x must be a vector when axis is empty, got shape {list(x.shape)}")
        a = 0
    else:
        a = int(axis[0])
        if not -x.ndim <= a < x.ndim:
            raise ctx.fail(f"axis {a} is out of range for x of rank {x.ndim}")
        a %= x.ndim
    moved = np.moveaxis(x, a, 0)
    flat = moved.reshape(moved.shape[0], -1)
    first: dict = {}
    idx = np.empty(flat.shape[0], np.int64)
    if flat.dtype.kind in "fc":
        flat = flat + 0  # -0.0 and 0.0 are one value (TF compares values, not bytes)
    for k, row in enumerate(flat):
        key = tuple(row.tolist()) if row.dtype == object else row.tobytes()
        idx[k] = first.setdefault(key, len(first))
    keep = np.unique(idx, return_index=True)[1]  # each distinct slice's first row, in order
    return np.moveaxis(moved[keep], 0, a), idx


for _op, _counts in (("UniqueV2", False), ("UniqueWithCountsV2", True)):
    register_op(
        _op,
        inputs=["x: T", "axis: Taxis"],
        outputs=["y: T", "idx: out_idx", *(["count: out_idx"] if _counts else [])],
        attrs=["T: type", "Taxis: {int32, int64} = int64", "out_idx: {int32, int64} = int32"],
        shape=(lambda ic: [*_unique_v2_shape(ic), Shape([None])]) if _counts else _unique_v2_shape,
        doc="The distinct slices of x along `axis` in order of first appearance and each slice's index "
        "into them" + (", with how often each occurs." if _counts else "."),
    )
not_differentiable("UniqueV2", "UniqueWithCountsV2")  # as TF


@kernel("UniqueV2", devices=("CPU",), host_inputs=(1,))
def _unique_v2(ctx, x, axis):
    y, idx = _unique_slices(ctx, x, axis)
    return y, idx.astype(ctx.attrs["out_idx"].numpy)


@kernel("UniqueWithCountsV2", devices=("CPU",), host_inputs=(1,))
def _unique_with_counts_v2(ctx, x, axis):
    y, idx = _unique_slices(ctx, x, axis)
    dt = ctx.attrs["out_idx"].numpy
    return y, idx.astype(dt), np.bincount(idx).astype(dt)
