"""Gathering and scattering by index: Gather (v1), GatherNd, ScatterNd, TensorScatterUpdate,
TensorScatterAdd, TensorScatterSub, TensorScatterMax, TensorScatterMin. (GatherV2 and UnsortedSegmentSum live in ``slice_ops``.)

An index out of range is an error naming the bad index, as TF's CPU kernels report it (TF's GPU
kernels give zeros instead; here every device checks). One checking helper per op serves the
shape function and the kernel, so a static error and a run-time error read the same.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from specflow.errors import GraphError
from specflow.graph import dtypes
from specflow.graph.shapes import Shape
from specflow.ops import grad_util as gu
from specflow.ops.host_copies import to_host
from specflow.ops.inference import InferenceContext
from specflow.ops.registry import gradient, kernel, register_op
from specflow.ops.shape_args import fmt_dims, shape_of, vector_arg
from specflow.ops.slice_ops import ShapeOf, gather_grad

INDEX_TYPES = "{int16, int32, int64}"


def _where(pos) -> str:
    return f"indices[{', '.join(map(str, pos))}]" if len(pos) else "index"


def check_range(ctx, indices, n: int) -> None:
    """Fail naming the first index outside [0, n) (TF: ``indices[1, 0] = 7 is not in [0, 5)``)."""
    bad = (indices < 0) | (indices >= n)
    if bad.size and bool(bad.any()):
        pos = tuple(int(p) for p in np.argwhere(ctx.host(bad))[0])
        raise ctx.fail(f"{_where(pos)} = {ctx.host(indices)[pos]} is not in [0, {n})")


# --- Gather (v1) ------------------------------------------------------------------------------


def _gather_v1_shape(fail, params: Shape, indices: Shape) -> Shape:
    if params.rank == 0:
        raise fail("params must be at least 1-D, got a scalar")
    if params.rank is None or indices.rank is None:
        return Shape.unknown()
    return Shape(list(indices.dims) + list(params.dims[1:]))


register_op(
    "Gather",
    inputs=["params: Tparams", "indices: Tindices"],
    outputs=["output: Tparams"],
    attrs=["validate_indices: bool = true", "Tparams: type", "Tindices: {int32, int64}"],
    shape=lambda ic: [_gather_v1_shape(ic.fail, ic.shape(0), ic.shape(1))],
    doc="Rows of `params` (slices along axis 0) at `indices` (TF1's Gather; GatherV2 takes an axis).",
)


@kernel("Gather")
def _gather_v1(ctx, params, indices):
    _gather_v1_shape(ctx.fail, shape_of(params), shape_of(indices))
    check_range(ctx, indices, params.shape[0])
    return ctx.xp.take(params, indices, axis=0)


@gradient("Gather")
def _gather_v1_grad(b, node, dys):
    params, indices = node.data_inputs
    shape = ShapeOf(b, b.spec(params).shape, lambda: gu.emit(b, "Shape", params))
    if shape.static.rank is None:
        raise GraphError("the gradient of Gather needs params of known rank", node=node.name, location=node.location)
    return [gather_grad(b, node, dys[0], indices, shape, 0, 0), None]


# --- GatherNd ---------------------------------------------------------------------------------


def _nd_shape(fail, params: Shape, indices: Shape, what: str = "params") -> Shape:
    """indices.shape[:-1] + params.shape[K:], K = indices.shape[-1]."""
    if indices.rank == 0:
        raise fail("indices must be at least 1-D, got a scalar")
    if indices.rank is None:
        return Shape.unknown()
    k = indices[-1]
    if k is None or params.rank is None:
        return Shape.unknown()
    if k > params.rank:
        raise fail(f"index innermost dimension {k} is larger than the rank of {what} {params}")
    return Shape(list(indices.dims[:-1]) + list(params.dims[k:]))


def _check_nd_range(ctx, indices, shape) -> np.ndarray:
    """``indices`` as [N, K] rows, failing on the first row outside ``shape``'s first K dims."""
    k = indices.shape[-1]
    rows = indices.reshape(int(np.prod(indices.shape[:-1], dtype=np.int64)), k)  # not -1: K may be 0
    bad = (rows < 0).any(axis=1)
    for j in range(k):  # column by column: the limits stay host ints (no copy to a device)
        bad |= rows[:, j] >= shape[j]
    if bad.size and bool(bad.any()):
        j = int(np.argmax(ctx.host(bad)))
        pos = np.unravel_index(j, indices.shape[:-1])
        row = [int(v) for v in ctx.host(rows[j])]
        raise ctx.fail(f"{_where(pos)} = {fmt_dims(row)} does not index into shape {fmt_dims(shape)}")
    return rows


register_op(
    "GatherNd",
    inputs=["params: Tparams", "indices: Tindices"],
    outputs=["output: Tparams"],
    attrs=["Tparams: type", f"Tindices: {INDEX_TYPES}", "bad_indices_policy: string = ''"],
    shape=lambda ic: [_nd_shape(ic.fail, ic.shape(0), ic.shape(1))],
    doc="Slices of `params` at the index vectors in `indices`' last dimension: output[i...] = "
    "params[indices[i..., :]] (a short index vector picks a whole slice).",
)


@kernel("GatherNd")
def _gather_nd(ctx, params, indices):
    xp = ctx.xp
    out = _nd_shape(ctx.fail, shape_of(params), shape_of(indices))
    rows = _check_nd_range(ctx, indices, params.shape)
    k = rows.shape[1]
    if k == 0:  # every empty index vector picks all of params
        picked = xp.broadcast_to(params, (rows.shape[0],) + params.shape)
    else:
        picked = params[tuple(rows[:, j] for j in range(k))]
    return xp.reshape(xp.asarray(picked, order="C"), out.dims)  # (ascontiguousarray makes a scalar 1-D)


@gradient("GatherNd")
def _gather_nd_grad(b, node, dys):
    params, indices = node.data_inputs
    dt = b.spec(indices).dtype
    shape = gu.shape_of(b, params, dt if dt != dtypes.int16 else dtypes.int32)  # Shape gives no int16
    return [gu.emit(b, "ScatterNd", indices, dys[0], gu.cast_like(b, shape, indices)), None]


# --- ScatterNd / TensorScatterUpdate / TensorScatterAdd ---------------------------------------


def _scatter_shape(fail, indices: Shape, updates: Shape, shape: Shape) -> Shape:
    """Checks updates.shape == indices.shape[:-1] + shape[K:]; returns ``shape``."""
    if indices.rank == 0:
        raise fail("indices must be at least 1-D, got a scalar")
    want = _nd_shape(fail, shape, indices, what="the output")
    if not want.is_compatible_with(updates):
        raise fail(f"updates must have shape indices.shape[:-1] + shape[K:] = {want} "
                   f"(indices {indices}, output {shape}), got {updates}")  # fmt: skip
    return shape


def _scatter_nd_infer(ic: InferenceContext) -> list[Shape]:
    shape = ic.shape_from_value(2)
    return [_scatter_shape(ic.fail, ic.shape(0), ic.shape(1), shape)]


register_op(
    "ScatterNd",
    inputs=["indices: Tindices", "updates: T", "shape: Tindices"],
    outputs=["output: T"],
    attrs=["T: type", f"Tindices: {INDEX_TYPES}", "bad_indices_policy: string = ''"],
    shape=_scatter_nd_infer,
    doc="A zero tensor of `shape` with `updates` added at the index vectors of `indices` "
    "(duplicate indices add up).",
)


def _scatter(ctx, out, indices, updates, add):
    """Write (or, with ``add`` True or one of "sub", "max", "min", combine) ``updates`` into the
    fresh array ``out`` at ``indices``' index vectors."""
    xp = ctx.xp
    _scatter_shape(ctx.fail, shape_of(indices), shape_of(updates), shape_of(out))
    rows = _check_nd_range(ctx, indices, out.shape)
    k = rows.shape[1]
    vals = xp.reshape(updates, (rows.shape[0],) + out.shape[k:])
    if add in ("max", "min"):
        ufunc = xp.maximum if add == "max" else xp.minimum
        if vals.dtype.kind == "f":
            # TF's Eigen min/max (y < x ? y : x) keeps the tensor's value against a NaN update,
            # and a NaN already there: a NaN update is one that never wins
            vals = xp.where(xp.isnan(vals), vals.dtype.type(-np.inf if add == "max" else np.inf), vals)
        if k == 0:
            if rows.shape[0]:
                out[...] = ufunc(out, (xp.max if add == "max" else xp.min)(vals, axis=0))
        else:
            with np.errstate(invalid="ignore"):  # a NaN already in the tensor stays
                ufunc.at(out, tuple(rows[:, j] for j in range(k)), vals)
        return out
    if add == "sub":
        vals = -vals
    if k == 0:  # each update covers the whole output
        if add:
            out += vals.sum(axis=0, dtype=out.dtype)
        elif rows.shape[0]:
            out[...] = vals[-1]
        return out
    index = tuple(rows[:, j] for j in range(k))
    if add:
        xp.add.at(out, index, vals)
    else:
        out[index] = vals  # duplicates: the last write wins (TF leaves their order unspecified)
    return out


@kernel("ScatterNd", host_inputs=(2,))
def _scatter_nd(ctx, indices, updates, shape):
    dims = vector_arg(ctx.fail, ctx.host(shape), "shape")
    if any(d < 0 for d in dims):
        raise ctx.fail(f"shape {fmt_dims(dims)} has a negative dimension")
    return _scatter(ctx, ctx.xp.zeros(dims, dtype=updates.dtype), indices, updates, add=True)


@gradient("ScatterNd")
def _scatter_nd_grad(b, node, dys):
    indices = node.data_inputs[0]
    return [None, gu.emit(b, "GatherNd", dys[0], indices), None]


for _name, _add, _what in (
    ("TensorScatterUpdate", False, "replaced by"),
    ("TensorScatterAdd", True, "plus"),
    ("TensorScatterSub", "sub", "minus"),
    ("TensorScatterMax", "max", "replaced by their maximum with"),
    ("TensorScatterMin", "min", "replaced by their minimum with"),
):
    register_op(
        _name,
        inputs=["tensor: T", "indices: Tindices", "updates: T"],
        outputs=["output: T"],
        attrs=["T: type", f"Tindices: {INDEX_TYPES}", "bad_indices_policy: string = ''"],
        shape=lambda ic: [_scatter_shape(ic.fail, ic.shape(1), ic.shape(2), ic.shape(0))],
        doc=f"A copy of `tensor` with the slices at `indices`' index vectors {_what} `updates`.",
    )


@kernel("TensorScatterUpdate")
def _tensor_scatter_update(ctx, tensor, indices, updates):
    return _scatter(ctx, tensor.copy(), indices, updates, add=False)


@kernel("TensorScatterAdd")
def _tensor_scatter_add(ctx, tensor, indices, updates):
    return _scatter(ctx, tensor.copy(), indices, updates, add=True)


@gradient("TensorScatterUpdate")
def _tensor_scatter_update_grad(b, node, dys):
    # The replaced slices of `tensor` get no gradient; `updates` gets the gradient where it went.
    _, indices, updates = node.data_inputs
    cleared = gu.emit(b, "TensorScatterUpdate", dys[0], indices, gu.zeros_like(b, updates))
    return [cleared, None, gu.emit(b, "GatherNd", dys[0], indices)]


@gradient("TensorScatterAdd")
def _tensor_scatter_add_grad(b, node, dys):
    indices = node.data_inputs[1]
    return [dys[0], None, gu.emit(b, "GatherNd", dys[0], indices)]


def _tensor_scatter_kernel(mode):
    def run(ctx, tensor, indices, updates):
        if mode in ("max", "min") and ctx.xp is not np:
            # On a GPU, cupy's atomic min/max replaced a NaN already in the tensor and gave a
            # float64 row scatter values matching neither input (an H100 run): the host's ordered
            # numpy loop instead, the CPU kernel's numbers, and the result copied back
            host = dataclasses.replace(ctx, xp=np)
            got = _scatter(host, to_host(tensor).copy(), to_host(indices), to_host(updates), add=mode)
            return ctx.xp.asarray(got)
        return _scatter(ctx, tensor.copy(), indices, updates, add=mode)

    return run


for _name, _mode in (("TensorScatterSub", "sub"), ("TensorScatterMax", "max"), ("TensorScatterMin", "min")):
    kernel(_name)(_tensor_scatter_kernel(_mode))


@gradient("TensorScatterSub")
def _tensor_scatter_sub_grad(b, node, dys):
    indices = node.data_inputs[1]
    return [dys[0], None, gu.emit(b, "Neg", gu.emit(b, "GatherNd", dys[0], indices))]


def _tensor_scatter_min_max_grad(b, node, dys):
    # TF's _TensorScatterMinOrMaxGrad: the gradient goes to whichever of tensor and the updates
    # gave each output, shared evenly where several tie.
    tensor, indices, updates = node.data_inputs
    dt = b.spec(tensor).dtype
    x_ind = gu.emit(b, "Cast", gu.emit(b, "Equal", node.name, tensor), DstT=dt)
    y_ind = gu.emit(b, "Cast", gu.emit(b, "Equal", gu.emit(b, "GatherNd", node.name, indices), updates), DstT=dt)
    shape = gu.cast_like(b, gu.shape_of(b, tensor), indices)
    counts = gu.emit(b, "AddV2", x_ind, gu.emit(b, "ScatterNd", indices, y_ind, shape))
    x_grad = gu.emit(b, "RealDiv", gu.emit(b, "Mul", dys[0], x_ind), counts)
    y_grad = gu.emit(b, "Mul", gu.emit(b, "GatherNd", gu.emit(b, "RealDiv", dys[0], counts), indices), y_ind)
    return [x_grad, None, y_grad]


gradient("TensorScatterMax")(_tensor_scatter_min_max_grad)
gradient("TensorScatterMin")(_tensor_scatter_min_max_grad)
