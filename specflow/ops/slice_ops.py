"""Slicing and gathering: Slice, StridedSlice (what ``x[1:, ..., None, 0]`` lowers to), GatherV2.

Part of the shape-manipulation family (``manip_ops`` imports this module). As there, one
checking helper per op serves both the shape function and the kernel.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import numpy as np

from specflow.errors import GraphError
from specflow.graph import dtypes
from specflow.graph.shapes import Shape
from specflow.ops import grad_util as gu
from specflow.ops.inference import InferenceContext
from specflow.ops.registry import gradient, kernel, register_op
from specflow.ops.shape_args import norm_axis, scalar_arg, shape_of, unknown_of_rank, vector_arg, vector_len

# --- Slice ------------------------------------------------------------------------------------


def _slice_shape(fail, s: Shape, begin: list[int] | None, size: list[int] | None) -> Shape:
    """Output shape of Slice; ``size[i] == -1`` means "to the end of dimension i"."""
    n = len(begin) if begin is not None else len(size) if size is not None else s.rank
    if begin is not None and size is not None and len(begin) != len(size):
        raise fail(f"begin {begin} and size {size} must have the same length")
    if s.rank is not None and n is not None and n != s.rank:
        raise fail(f"begin and size must have one entry per dimension of shape {s}, got {n}")
    if n is None:
        return Shape.unknown()
    out = []
    for i in range(n):
        d = s[i] if s.rank is not None else None
        b = None if begin is None else begin[i]
        z = None if size is None else size[i]
        if b is not None and (b < 0 or (d is not None and b > d)):
            raise fail(f"begin[{i}] = {b} is out of range for dimension {i} of shape {s}")
        if z is not None and (z < -1 or (d is not None and b is not None and z > d - b)):
            raise fail(f"size[{i}] = {z} does not fit dimension {i} of shape {s} from begin {b}")
        if z == -1:
            z = None if d is None or b is None else d - b
        out.append(z)
    return Shape(out)


def _slice_infer(ic: InferenceContext) -> list[Shape]:
    n = vector_len(ic, 1, "begin")
    n = vector_len(ic, 2, "size") if n is None else n
    begin = vector_arg(ic.fail, ic.value(1), "begin")
    size = vector_arg(ic.fail, ic.value(2), "size")
    if begin is None and size is None:
        return [unknown_of_rank(ic.shape(0).rank if ic.shape(0).rank is not None else n)]
    return [_slice_shape(ic.fail, ic.shape(0), begin, size)]


register_op(
    "Slice",
    inputs=["input: T", "begin: Index", "size: Index"],
    outputs=["output: T"],
    attrs=["T: type", "Index: {int32, int64}"],
    shape=_slice_infer,
    doc="The block of `input` starting at `begin` with extent `size` (-1: to the end).",
)


@kernel("Slice", host_inputs=(1, 2))
def _slice(ctx, x, begin, size):
    begin = vector_arg(ctx.fail, ctx.host(begin), "begin")
    out = _slice_shape(ctx.fail, shape_of(x), begin, vector_arg(ctx.fail, ctx.host(size), "size"))
    return x[tuple(slice(b, b + z) for b, z in zip(begin, out.dims, strict=True))]


@gradient("Slice")
def _slice_grad(b, node, dys):
    # Pad the gradient with zeros back to the input's shape: `begin` before, the rest after.
    x, begin, _ = node.data_inputs
    dy = dys[0]
    xs, ys, start, index = b.spec(x).shape, b.spec(dy).shape, b.value(begin), b.spec(begin).dtype
    if xs.is_fully_defined and ys.is_fully_defined and start is not None:
        after = np.array(xs.as_list()) - np.array(ys.as_list()) - start
        paddings = gu.const(b, np.stack([start, after], axis=1).astype(index.numpy))
    else:
        after = gu.emit(b, "Sub", gu.emit(b, "Sub", gu.shape_of(b, x, index), gu.shape_of(b, dy, index)), begin)
        paddings = gu.emit(b, "Pack", begin, after, axis=1)
    return [gu.emit(b, "Pad", dy, paddings), None, None]


# --- StridedSlice -----------------------------------------------------------------------------
#
# The i-th entry of begin/end/strides (the "sparse spec") is one of: an ellipsis (covering as
# many input dimensions as the other entries leave over), a new axis of size 1, an index that
# removes its dimension (shrink), or a range begin:end:stride whose begin/end may be masked
# (= from the start / to the end). Without an ellipsis entry, one is implied at the end. The
# precedence ellipsis > new axis > shrink and Python's clamping rules are TensorFlow's.


def _bit(mask: int, i: int) -> bool:
    return bool(mask >> i & 1)


def _strided_slice_plan(fail, s: Shape, begin, end, strides, n: int | None, attrs: dict):
    """(output Shape, numpy index tuple); the index is None unless begin/end/strides are known."""
    if n is None:
        return Shape.unknown(), None
    kinds = []
    for i in range(n):
        if _bit(attrs["ellipsis_mask"], i):
            kinds.append("...")
        elif _bit(attrs["new_axis_mask"], i):
            kinds.append("new")
        else:
            kinds.append("shrink" if _bit(attrs["shrink_axis_mask"], i) else "range")
    if kinds.count("...") > 1:
        raise fail("multiple ellipses in a slice spec are not allowed")
    if "..." not in kinds:
        kinds.append("...")
    if s.rank is None:
        return Shape.unknown(), None
    span = s.rank - sum(k in ("shrink", "range") for k in kinds)
    if span < 0:
        raise fail(f"the slice spec indexes {s.rank - span} dimensions of a tensor of shape {s}")
    dims: list[int | None] = []
    index: list = []
    d = 0  # the input dimension entry i applies to
    for i, kind in enumerate(kinds):
        if kind == "...":
            dims += s.dims[d : d + span]
            index.append(Ellipsis)
            d += span
            continue
        if kind == "new":
            dims.append(1)
            index.append(None)
            continue
        size, d = s[d], d + 1
        b, e, st = (None if v is None else int(v[i]) for v in (begin, end, strides))
        if st == 0:
            raise fail(f"strides[{i}] must be non-zero")
        if kind == "shrink":
            if st is not None and st < 0:
                raise fail(f"strides[{i}] must be positive where shrink_axis_mask indexes a single element")
            if b is not None and size is not None and not -size <= b < size:
                raise fail(f"index {b} is out of bounds for dimension {d - 1} of shape {s}")
            index.append(b)
            continue
        b = None if _bit(attrs["begin_mask"], i) else b
        e = None if _bit(attrs["end_mask"], i) else e
        known = (b is not None or _bit(attrs["begin_mask"], i)) and (
            e is not None or _bit(attrs["end_mask"], i)
        )
        # Python's slice.indices clamps exactly as TensorFlow does (to [0, d] or [-1, d - 1]).
        sliced = known and size is not None and st is not None
        dims.append(len(range(*slice(b, e, st).indices(size))) if sliced else None)
        index.append(slice(b, e, st))
    all_known = begin is not None and end is not None and strides is not None
    return Shape(dims), tuple(index) if all_known else None


def _strided_slice_infer(ic: InferenceContext) -> list[Shape]:
    lens = {
        n
        for n in (vector_len(ic, i, w) for i, w in ((1, "begin"), (2, "end"), (3, "strides")))
        if n is not None
    }
    values = [vector_arg(ic.fail, ic.value(i), w) for i, w in ((1, "begin"), (2, "end"), (3, "strides"))]
    lens |= {len(v) for v in values if v is not None}
    if len(lens) > 1:
        raise ic.fail(f"begin, end and strides must have the same length, got {sorted(lens)}")
    n = lens.pop() if lens else None
    return [_strided_slice_plan(ic.fail, ic.shape(0), *values, n, ic.attrs)[0]]


register_op(
    "StridedSlice",
    inputs=["input: T", "begin: Index", "end: Index", "strides: Index"],
    outputs=["output: T"],
    attrs=[
        "T: type",
        "Index: {int16, int32, int64}",
        "begin_mask: int = 0",
        "end_mask: int = 0",
        "ellipsis_mask: int = 0",
        "new_axis_mask: int = 0",
        "shrink_axis_mask: int = 0",
    ],
    shape=_strided_slice_infer,
    doc="Python-style slicing `input[begin:end:strides]` per dimension; bit i of each mask makes "
    "entry i: begin/end open (begin_mask/end_mask), an ellipsis, a new axis, or a single index.",
)


@kernel("StridedSlice", host_inputs=(1, 2, 3))
def _strided_slice(ctx, x, begin, end, strides):
    _, index = _strided_slice_plan(ctx.fail, shape_of(x), *_slice_spec(ctx, begin, end, strides), ctx.attrs)
    return ctx.xp.asarray(x[index])  # a full index gives a numpy scalar; keep it an array


def _slice_spec(ctx, begin, end, strides) -> tuple[list[int], list[int], list[int], int]:
    """begin, end and strides read on the host, and their common length."""
    begin, end, strides = (vector_arg(ctx.fail, ctx.host(v), w) for v, w in
                           ((begin, "begin"), (end, "end"), (strides, "strides")))  # fmt: skip
    if not len(begin) == len(end) == len(strides):
        raise ctx.fail(f"begin, end and strides must have the same length, got {begin}, {end}, {strides}")
    return begin, end, strides, len(begin)


_MASKS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")


@gradient("StridedSlice")
def _strided_slice_grad(b, node, dys):
    x, *spec = node.data_inputs
    index = b.spec(spec[0]).dtype
    if index == dtypes.int16:  # StridedSliceGrad, as TF's, takes int32 or int64 only
        spec, index = [gu.emit(b, "Cast", v, DstT=dtypes.int32) for v in spec], dtypes.int32
    masks = {k: node.attrs[k] for k in _MASKS}
    return [gu.emit(b, "StridedSliceGrad", gu.shape_of(b, x, index), *spec, dys[0], **masks), None, None, None]


# --- StridedSliceGrad: dy scattered into zeros of the sliced input's shape ---------------------


def _strided_slice_grad_infer(ic: InferenceContext) -> list[Shape]:
    if ic.shape(0).rank not in (None, 1):
        raise ic.fail(f"shape must be a 1-D tensor, got shape {ic.shape(0)}")
    out = ic.shape_from_value(0)
    spec = [vector_arg(ic.fail, ic.value(i), w) for i, w in ((1, "begin"), (2, "end"), (3, "strides"))]
    if out.is_fully_defined and None not in spec and len({len(v) for v in spec}) == 1:
        sliced = _strided_slice_plan(ic.fail, out, *spec, len(spec[0]), ic.attrs)[0]
        if not sliced.is_compatible_with(ic.shape(4)):
            raise ic.fail(f"dy has shape {ic.shape(4)}, but this slice of shape {out} has shape {sliced}")
    return [out]


register_op(
    "StridedSliceGrad",
    inputs=["shape: Index", "begin: Index", "end: Index", "strides: Index", "dy: T"],
    outputs=["output: T"],
    attrs=["T: type", "Index: {int32, int64}"] + [f"{m}: int = 0" for m in _MASKS],
    shape=_strided_slice_grad_infer,
    doc="The gradient of StridedSlice: zeros of `shape` with `dy` written where the slice read.",
)


@kernel("StridedSliceGrad", host_inputs=(0, 1, 2, 3))
def _strided_slice_grad_kernel(ctx, shape, begin, end, strides, dy):
    shape = Shape(vector_arg(ctx.fail, ctx.host(shape), "shape"))
    sliced, index = _strided_slice_plan(ctx.fail, shape, *_slice_spec(ctx, begin, end, strides), ctx.attrs)
    if sliced != shape_of(dy):
        raise ctx.fail(f"dy has shape {shape_of(dy)}, but this slice of shape {shape} has shape {sliced}")
    out = ctx.xp.zeros(shape.dims, dtype=dy.dtype)
    out[index] = dy  # a fresh array: writing into it mutates no input
    return out


@gradient("StridedSliceGrad")
def _strided_slice_grad_grad(b, node, dys):
    _, *spec, _ = node.data_inputs
    masks = {k: node.attrs[k] for k in _MASKS}
    return [None, None, None, None, gu.emit(b, "StridedSlice", dys[0], *spec, **masks)]


# --- GatherV2 ---------------------------------------------------------------------------------


def _gather_shape(fail, params: Shape, indices: Shape, axis: int | None, batch_dims: int):
    """(output Shape, normalized axis, normalized batch_dims)."""
    if params.rank is None or indices.rank is None:
        return Shape.unknown(), axis, batch_dims
    if params.rank == 0:
        raise fail("params must be at least 1-D, got a scalar")
    b = batch_dims + indices.rank if batch_dims < 0 else batch_dims
    if not 0 <= b <= indices.rank:
        raise fail(f"batch_dims {batch_dims} is out of range for indices of shape {indices}")
    if axis is None:
        return Shape.unknown_of_rank(params.rank + indices.rank - 1 - b), axis, b
    axis = norm_axis(fail, axis, params.rank)
    if b > axis:
        raise fail(f"batch_dims ({b}) must be <= axis ({axis})")
    try:
        batch = Shape(params.dims[:b]).merge_with(Shape(indices.dims[:b]))
    except ValueError:
        raise fail(f"the first {b} dimensions of params {params} and indices {indices} must match") from None
    return Shape(batch.dims + params.dims[b:axis] + indices.dims[b:] + params.dims[axis + 1 :]), axis, b


def _gather_infer(ic: InferenceContext) -> list[Shape]:
    axis = scalar_arg(ic.fail, ic.value(2), "axis")
    return [_gather_shape(ic.fail, ic.shape(0), ic.shape(1), axis, ic.attr("batch_dims"))[0]]


register_op(
    "GatherV2",
    inputs=["params: Tparams", "indices: Tindices", "axis: Taxis"],
    outputs=["output: Tparams"],
    attrs=[
        "batch_dims: int = 0",
        "Tparams: type",
        "Tindices: {int16, int32, int64}",
        "Taxis: {int32, int64}",
    ],
    shape=_gather_infer,
    doc="Slices of `params` along `axis` at `indices`; an index outside [0, size) is an error.",
)


def _slices_copied(params, axis: int) -> bool:
    """Whether a slice along ``axis`` holds anything (TF checks indices only then)."""
    return all(d for i, d in enumerate(params.shape) if i != axis)


@kernel("GatherV2", host_inputs=(2,))
def _gather(ctx, params, indices, axis):
    xp = ctx.xp
    if not indices.ndim and params.ndim and not ctx.attrs["batch_dims"]:
        # One index (a loop's time step): no shape arithmetic, the same checks and result.
        a, n_dims = ctx.host(axis), params.ndim
        if not a.ndim and -n_dims <= int(a) < n_dims:
            a = int(a) % n_dims
            i, n = int(ctx.host(indices)), params.shape[a]
            if not _slices_copied(params, a):  # empty, the index unchecked (as TF)
                return xp.zeros(params.shape[:a] + params.shape[a + 1 :], params.dtype)
            if not 0 <= i < n:
                raise ctx.fail(f"index = {i} is not in [0, {n})")
            return xp.take(params, indices, axis=a)
    out, axis, b = _gather_shape(ctx.fail, shape_of(params), shape_of(indices),
                                 scalar_arg(ctx.fail, ctx.host(axis), "axis"), ctx.attrs["batch_dims"])  # fmt: skip
    if not _slices_copied(params, axis):  # TF checks the indices only when it copies something:
        return xp.zeros(out.dims, params.dtype)  # none before the axis or after it, none checked
    n = params.shape[axis]
    bad = (indices < 0) | (indices >= n)
    if bad.size and bool(bad.any()):
        pos = tuple(int(p) for p in np.argwhere(ctx.host(bad))[0])
        where = f"indices[{', '.join(map(str, pos))}]" if pos else "index"
        raise ctx.fail(f"{where} = {ctx.host(indices)[pos]} is not in [0, {n})")
    if b == 0:
        return xp.take(params, indices, axis=axis)
    # Batched: view params as [B, M, n, R] and indices as [B, I]; pick per batch row. Advanced
    # indices separated by a slice go first, so the result is [B, I, M, R].
    def size(dims):
        return int(np.prod(dims, dtype=np.int64))

    nb, m, r = size(params.shape[:b]), size(params.shape[b:axis]), size(params.shape[axis + 1 :])
    p = params.reshape(nb, m, n, r)
    picked = p[xp.arange(nb)[:, None], :, indices.reshape(nb, size(indices.shape[b:]))]
    return xp.reshape(xp.transpose(picked, (0, 2, 1, 3)), out.dims)


@gradient("GatherV2")
def _gather_grad(b, node, dys):
    params, indices, axis = node.data_inputs
    known, rank, batch_dims = b.value(axis), b.spec(params).shape.rank, node.attrs["batch_dims"]
    if batch_dims < 0 and b.spec(indices).shape.rank is not None:
        batch_dims += b.spec(indices).shape.rank
    if rank is None or batch_dims < 0:
        raise GraphError("the gradient of GatherV2 needs params of known rank "
                         "(and indices of known rank for a negative batch_dims)",
                         node=node.name, location=node.location)  # fmt: skip
    shape = ShapeOf(b, b.spec(params).shape, lambda: gu.emit(b, "Shape", params))
    if known is None:
        return [_dynamic_axis_gather_grad(b, node, dys[0], params, indices, axis, shape, batch_dims), None, None]
    axis = int(known) % rank
    if axis == 0 and batch_dims == 0:
        # TF's IndexedSlices (the gathered rows' gradients and their ids); made dense, as
        # UnsortedSegmentSum, wherever the caller does not take it sparse (train/gradients.py)
        values = gu.emit(b, "Reshape", dys[0], concat_vectors(b, [gu.const(b, [-1], "int32"), shape.vector(1, rank)]))
        ids = gu.emit(b, "Reshape", indices, gu.const(b, [-1], "int32"))
        return [gu.IndexedSlices(b, values, ids, lambda: shape.size(0, 1)), None, None]
    return [gather_grad(b, node, dys[0], indices, shape, axis, batch_dims), None, None]


def _dynamic_axis_gather_grad(b, node, dy: str, params: str, indices: str, axis: str, shape: ShapeOf,
                              batch_dims: int) -> str:  # fmt: skip
    """GatherV2's gradient for an axis known only at run time (TF's takes it too): params' axis
    moved to just after the batch dims and dy's index dims with it, by permutations built at run
    time; then the static axis == batch_dims case, and the permutation undone."""
    i32 = lambda v: gu.const(b, np.int32(v))  # noqa: E731
    r = shape.static.rank
    a = gu.emit(b, "FloorMod", gu.emit(b, "Cast", axis, DstT=dtypes.int32), i32(r))
    a1 = gu.emit(b, "AddV2", a, i32(1))
    k = gu.emit(b, "Sub", gu.emit(b, "Rank", indices), i32(batch_dims))  # dy's index dims
    ak = gu.emit(b, "AddV2", a, k)
    rng = lambda lo, hi: gu.emit(b, "Range", lo, hi, i32(1))  # noqa: E731
    bd = i32(batch_dims)
    perm = gu.emit(b, "ConcatV2", rng(i32(0), bd), gu.emit(b, "Reshape", a, gu.const(b, [1], "int32")),
                   rng(bd, a), rng(a1, i32(r)), i32(0))  # fmt: skip
    dy_perm = gu.emit(b, "ConcatV2", rng(i32(0), bd), rng(a, ak), rng(bd, a), rng(ak, gu.emit(b, "Rank", dy)), i32(0))
    moved = ShapeOf(b, Shape([None] * r), lambda: gu.emit(b, "GatherV2", shape.dynamic(), perm, i32(0)))
    grad = gather_grad(b, node, gu.emit(b, "Transpose", dy, dy_perm), indices, moved, batch_dims, batch_dims)
    return gu.emit(b, "Transpose", grad, gu.emit(b, "InvertPermutation", perm))


# --- the dense gradient of a gather (GatherV2, ResourceGather) ---------------------------------


class ShapeOf:
    """A tensor's shape for building gradients: static (partial) dims, and the run-time shape
    vector (``dynamic()``, made at most once) for the parts not known statically."""

    def __init__(self, b, static: Shape, dynamic: Callable[[], str]):
        self.b, self.static, self.dynamic = b, static, cache(dynamic)

    def vector(self, lo: int, hi: int) -> str:
        """dims[lo:hi] as a 1-D int32 tensor (a Const when known)."""
        dims = self.static.dims[lo:hi]
        if None not in dims:
            return gu.const(self.b, np.array(dims, np.int32))
        return gu.emit(self.b, "Slice", self.dynamic(), gu.const(self.b, [lo], "int32"), gu.const(self.b, [hi - lo], "int32"))

    def size(self, lo: int, hi: int) -> str:
        """The product of dims[lo:hi] as an int32 scalar (a Const when known)."""
        dims = self.static.dims[lo:hi]
        if None not in dims:
            return gu.const(self.b, np.int32(np.prod(dims, dtype=np.int64)))
        return gu.emit(self.b, "Prod", self.vector(lo, hi), gu.const(self.b, 0, "int32"), keep_dims=False)


def concat_vectors(b, parts: list[str]) -> str:
    """1-D tensors joined end to end (folded into a Const when every part is known)."""
    values = [b.value(p) for p in parts]
    if all(v is not None for v in values):
        return gu.const(b, np.concatenate(values).astype(np.int32))
    return gu.emit(b, "ConcatV2", *parts, gu.const(b, 0, "int32"))


def gather_grad(b, node, dy: str, indices: str, params: ShapeOf, axis: int, batch_dims: int) -> str:
    """The dense gradient of params for ``Gather(params, indices, axis, batch_dims)``: every
    gathered slice of ``dy`` is added back where it came from (UnsortedSegmentSum), as TF's
    IndexedSlices gradient becomes once made dense."""
    r = params.static.rank
    if batch_dims == 0:
        values = gu.emit(b, "Reshape", dy, concat_vectors(b, [params.vector(0, axis), gu.const(b, [-1], "int32"),
                                                             params.vector(axis + 1, r)]))  # fmt: skip
        ids = gu.emit(b, "Reshape", indices, gu.const(b, [-1], "int32"))
        n = params.size(axis, axis + 1)
        if axis == 0:
            return gu.emit(b, "UnsortedSegmentSum", values, ids, n)
        # Segment-sum along the leading axis: move the gathered axis there and back.
        perm = [axis, *range(axis), *range(axis + 1, r)]
        moved = gu.emit(b, "UnsortedSegmentSum", gu.emit(b, "Transpose", values, gu.const(b, perm, "int32")), ids, n)
        return gu.emit(b, "Transpose", moved, gu.const(b, np.argsort(perm).astype(np.int32)))
    ri = b.spec(indices).shape.rank
    if ri is None:
        raise GraphError("the gradient of a batched gather needs indices of known rank",
                         node=node.name, location=node.location)  # fmt: skip
    if axis > batch_dims:
        # Gather from params with the gathered axis moved right after the batch dims; dy's
        # index dims move before the params dims they followed.
        perm = [*range(batch_dims), axis, *range(batch_dims, axis), *range(axis + 1, r)]
        moved = ShapeOf(b, Shape([params.static[i] for i in perm]),
                        lambda: gu.emit(b, "GatherV2", params.dynamic(), gu.const(b, perm, "int32"),
                                        gu.const(b, 0, "int32")))  # fmt: skip
        idx = range(axis, axis + ri - batch_dims)
        dy_perm = [*range(batch_dims), *idx, *range(batch_dims, axis), *range(idx.stop, b.spec(dy).shape.rank)]
        dy = gu.emit(b, "Transpose", dy, gu.const(b, dy_perm, "int32"))
        grad = gather_grad(b, node, dy, indices, moved, batch_dims, batch_dims)
        return gu.emit(b, "Transpose", grad, gu.const(b, np.argsort(perm).astype(np.int32)))
    # axis == batch_dims: batch row k's index i is row k * n + i of params with the batch dims
    # and the gathered axis folded into one.
    n, rows = params.size(axis, axis + 1), params.size(0, axis + 1)
    # k * n for each batch row k (a Range with step n would need n > 0: the gathered axis may be empty)
    offsets = gu.emit(b, "Mul", gu.emit(b, "Range", gu.const(b, 0, "int32"), params.size(0, batch_dims),
                                        gu.const(b, 1, "int32")), n)  # fmt: skip
    ones = gu.const(b, np.ones(ri - batch_dims, np.int32))
    offsets = gu.emit(b, "Reshape", offsets, concat_vectors(b, [params.vector(0, batch_dims), ones]))
    flat_ids = gu.emit(b, "AddV2", indices, gu.cast_like(b, offsets, indices))
    folded = params.static.dims[: axis + 1]
    flat = ShapeOf(b, Shape([None if None in folded else int(np.prod(folded))] + list(params.static.dims[axis + 1 :])),
                   lambda: concat_vectors(b, [gu.emit(b, "Reshape", rows, gu.const(b, [1], "int32")),
                                              params.vector(axis + 1, r)]))  # fmt: skip
    grad = gather_grad(b, node, dy, flat_ids, flat, 0, 0)
    return gu.emit(b, "Reshape", grad, params.vector(0, r))


# --- UnsortedSegmentSum -----------------------------------------------------------------------


def _segment_sum_shape(fail, data: Shape, ids: Shape, num_segments: int | None) -> Shape:
    if data.rank is None or ids.rank is None:
        return Shape.unknown()
    if ids.rank > data.rank or not Shape(data.dims[: ids.rank]).is_compatible_with(ids):
        raise fail(f"segment_ids of shape {ids} must be a prefix of data's shape {data}")
    if num_segments is not None and num_segments < 0:
        raise fail(f"num_segments must be non-negative, got {num_segments}")
    return Shape([num_segments] + list(data.dims[ids.rank :]))


def _segment_sum_infer(ic: InferenceContext) -> list[Shape]:
    n = scalar_arg(ic.fail, ic.value(2), "num_segments")
    return [_segment_sum_shape(ic.fail, ic.shape(0), ic.shape(1), n)]


register_op(
    "UnsortedSegmentSum",
    inputs=["data: T", "segment_ids: Tindices", "num_segments: Tnumsegments"],
    outputs=["output: T"],
    attrs=["T: {numeric}", "Tindices: {int16, int32, int64}", "Tnumsegments: {int32, int64} = int32"],
    shape=_segment_sum_infer,
    doc="output[i] = the sum of the slices data[j...] with segment_ids[j...] == i (zeros where "
    "none is); a negative segment id drops its slice, one >= num_segments is an error.",
)


def unsorted_segment_args(ctx, data, ids, num_segments):
    """An unsorted segment kernel's checked arguments: the output shape, data as one row per id,
    the flattened ids, and which of them to keep (the negative ones drop their row)."""
    n = scalar_arg(ctx.fail, ctx.host(num_segments), "num_segments")
    out_shape = _segment_sum_shape(ctx.fail, shape_of(data), shape_of(ids), n)
    rows = data.reshape((ids.size,) + tuple(data.shape[ids.ndim :]))
    flat = ids.reshape(-1)
    if not data.size:  # TF checks nothing when there is no data to add: ids out of range drop
        return out_shape, rows, flat, (flat >= 0) & (flat < n)
    if flat.size and int(flat.max()) >= n:
        bad = int(np.argmax(ctx.host(flat) >= n))
        raise ctx.fail(f"segment_ids[{bad}] = {int(ctx.host(flat)[bad])} is not in [0, {n}) (flattened index)")
    return out_shape, rows, flat, flat >= 0


@kernel("UnsortedSegmentSum", host_inputs=(2,))
def _unsorted_segment_sum(ctx, data, ids, num_segments):
    xp = ctx.xp
    out_shape, rows, ids, keep = unsorted_segment_args(ctx, data, ids, num_segments)
    out = xp.zeros(out_shape.dims, dtype=data.dtype)
    xp.add.at(out, ids[keep], rows[keep])
    return out


def padded_shape(b, x: str, like: str) -> str:
    """The shape of ``x`` (ids, or one value per segment) padded with 1s to ``like``'s rank, so
    that ``x`` reshaped to it broadcasts against ``like``."""
    rx, rl = b.spec(x).shape.rank, b.spec(like).shape.rank
    if rx is not None and rl is not None:
        return concat_vectors(b, [gu.shape_of(b, x), gu.const(b, np.ones(rl - rx, np.int32))])
    extra = gu.emit(b, "Sub", gu.emit(b, "Rank", like), gu.emit(b, "Rank", x))
    ones = gu.emit(b, "Fill", gu.emit(b, "Reshape", extra, gu.const(b, [1], "int32")), gu.const(b, 1, "int32"))
    return concat_vectors(b, [gu.shape_of(b, x), ones])


def drop_negatives(b, params: str, ids: str, data: str) -> tuple[str, str, str]:
    """TF's _GatherDropNegatives: (params gathered at max(ids, 0) with the rows of negative ids
    zeroed, the clipped ids, the ids >= 0 mask shaped to broadcast against ``data``)."""
    clipped = gu.emit(b, "Maximum", ids, gu.zeros_like(b, ids))
    gathered = gu.emit(b, "GatherV2", params, clipped, gu.const(b, 0, "int32"))
    keep = gu.emit(b, "GreaterEqual", ids, gu.zeros_like(b, ids))
    keep = gu.emit(b, "Reshape", keep, padded_shape(b, ids, data))
    return gu.emit(b, "SelectV2", keep, gathered, gu.zeros_like(b, gathered)), clipped, keep


@gradient("UnsortedSegmentSum")
def _unsorted_segment_sum_grad(b, node, dys):
    # Each data slice receives its segment's gradient; dropped (negative) ids receive zeros.
    data, ids, _ = node.data_inputs
    return [drop_negatives(b, dys[0], ids, data)[0], None, None]
