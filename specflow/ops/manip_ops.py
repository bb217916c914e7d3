"""Shape-manipulation ops: reshape, transpose, concat/split, pack/unpack, squeeze, tile, pad.

Each op has one checking helper, ``_<op>_shape(fail, ...)``, that the shape function calls with
static (partial) shapes and the kernel calls with the real shapes, so a static error and a
run-time error read the same (``fail`` is ``ic.fail`` or ``ctx.fail``). Slice, StridedSlice and
GatherV2 belong to this family too but live in ``slice_ops``, and the pads in ``pad_ops`` (both imported
here), to keep modules small.
"""

from __future__ import annotations

import numpy as np

from specflow.graph import dtypes
from specflow.graph.shapes import Shape
from specflow.ops import grad_util as gu
from specflow.ops import (  # noqa: F401  (these belong to this family; they live apart to keep modules small)
    manip_grad_ops,  # InvertPermutation, MirrorPadGrad: emitted by the gradients below
    pad_ops,  # Pad, PadV2, MirrorPad
    slice_ops,  # Slice, StridedSlice, GatherV2
)
from specflow.ops.inference import InferenceContext
from specflow.ops.registry import gradient, kernel, not_differentiable, register_op
from specflow.ops.shape_args import (
    fmt_dims,
    norm_axis,
    scalar_arg,
    shape_of,
    unknown_of_rank,
    vector_arg,
    vector_len,
)

# --- Reshape ----------------------------------------------------------------------------------


def _reshape_shape(fail, src: Shape, target: list[int]) -> Shape:
    if target.count(-1) > 1:
        raise fail(f"only one dimension of the new shape can be -1, got {fmt_dims(target)}")
    if any(d < -1 for d in target):
        raise fail(f"new shape {fmt_dims(target)} has a negative size other than -1")
    known = int(np.prod([d for d in target if d != -1], dtype=np.int64))
    n = src.num_elements()
    if -1 not in target:
        if n is not None and n != known:
            raise fail(
                f"cannot reshape a tensor of shape {src} ({n} elements) into shape {fmt_dims(target)} "
                f"({known} elements)"
            )
        return Shape(target)
    if n is None:
        return Shape(target)  # -1 stays unknown
    # TF's rule: zero sizes are left out of the known product, and when the new shape has a zero
    # the input's zero dims are left out of its count too, so [0, 8] -> [0, -1, 4] is [0, 2, 4].
    # The product of the nonzero sizes is never 0, so -1 always resolves.
    product = int(np.prod([d for d in target if d > 0], dtype=np.int64))
    if 0 in target:
        count = int(np.prod([d for d in src.dims if d > 0], dtype=np.int64))
        missing = count // product
    else:
        missing = n // product
        if missing * product != n:
            raise fail(
                f"cannot reshape a tensor of shape {src} ({n} elements) into shape {fmt_dims(target)}: "
                f"{n} is not a multiple of {product}"
            )
    out = Shape([missing if d == -1 else d for d in target])
    if out.num_elements() != n:
        raise fail(
            f"cannot reshape a tensor of shape {src} ({n} elements) into shape {fmt_dims(target)} "
            f"({out} has {out.num_elements()} elements)"
        )
    return out


def _reshape_infer(ic: InferenceContext) -> list[Shape]:
    target = vector_arg(ic.fail, ic.value(1), "shape")
    if target is not None:
        return [_reshape_shape(ic.fail, ic.shape(0), target)]
    rank = vector_len(ic, 1, "shape")
    n = ic.shape(0).num_elements()
    if rank == 1 and n is not None:
        return [Shape([n])]
    return [unknown_of_rank(rank)]


register_op(
    "Reshape",
    inputs=["tensor: T", "shape: Tshape"],
    outputs=["output: T"],
    attrs=["T: type", "Tshape: {int32, int64} = int32"],
    shape=_reshape_infer,
    doc="`tensor` with its elements rearranged into `shape` (one entry may be -1: inferred).",
)


@kernel("Reshape", host_inputs=(1,))
def _reshape(ctx, x, shape):
    # Checked and resolved once per (input shape, target) in the node's state: a step asks the
    # same every time, and the check builds Shapes (a few microseconds, more than the reshape).
    # The very (read-only, so unchanged) shape array of last time: Shape hands its last one out again.
    last = ctx.state.get("reshape_last")
    if last is not None and last[0] is shape and last[1] == x.shape:
        return x.reshape(last[2])  # (the method: xp.reshape's Python wrapper costs ~0.4 us more)
    target = ctx.host(shape)
    key = (x.shape, target.shape, target.dtype.str, target.tobytes()) if isinstance(target, np.ndarray) else None
    seen = ctx.state.setdefault("reshape", {})
    dims = seen.get(key) if key is not None else None
    if dims is None:
        dims = _reshape_shape(ctx.fail, shape_of(x), vector_arg(ctx.fail, target, "shape")).dims
        if key is not None:
            if len(seen) > 64:  # every batch size ever fed would otherwise stay
                seen.clear()
            seen[key] = dims
    if key is not None and type(shape) is np.ndarray and not shape.flags.writeable:
        ctx.state["reshape_last"] = (shape, x.shape, dims)
    return ctx.xp.reshape(x, dims)


@gradient("Reshape")
def _reshape_grad(b, node, dys):
    return [gu.reshape_to(b, dys[0], node.data_inputs[0]), None]


# --- Transpose --------------------------------------------------------------------------------


def _transpose_shape(fail, src: Shape, perm: list[int]) -> Shape:
    rank = len(perm) if src.rank is None else src.rank
    if sorted(perm) != list(range(rank)):
        raise fail(f"perm {perm} is not a permutation of [0, {rank}) for a tensor of shape {src}")
    return Shape([src[p] for p in perm])


def _transpose_infer(ic: InferenceContext) -> list[Shape]:
    perm = vector_arg(ic.fail, ic.value(1), "perm")
    if perm is not None:
        return [_transpose_shape(ic.fail, ic.shape(0), perm)]
    rank = ic.shape(0).rank
    rank = vector_len(ic, 1, "perm") if rank is None else rank
    return [unknown_of_rank(rank)]


register_op(
    "Transpose",
    inputs=["x: T", "perm: Tperm"],
    outputs=["y: T"],
    attrs=["T: type", "Tperm: {int32, int64} = int32"],
    shape=_transpose_infer,
    doc="Permutes the dimensions of `x`: output dimension i is input dimension perm[i].",
)


@kernel("Transpose", host_inputs=(1,))
def _transpose(ctx, x, perm):
    perm = vector_arg(ctx.fail, ctx.host(perm), "perm")
    _transpose_shape(ctx.fail, shape_of(x), perm)
    return ctx.xp.transpose(x, perm)


@gradient("Transpose")
def _transpose_grad(b, node, dys):
    perm = node.data_inputs[1]
    known = b.value(perm)
    if known is not None:
        inverse = gu.const(b, np.argsort(known).astype(known.dtype))
    else:
        inverse = gu.emit(b, "InvertPermutation", perm)
    return [gu.emit(b, "Transpose", dys[0], inverse), None]


# --- ConcatV2 / Pack --------------------------------------------------------------------------


def _common_rank(fail, shapes: list[Shape]) -> int | None:
    """The rank all (known-rank) shapes share; naming the first two that differ."""
    known = [s for s in shapes if s.rank is not None]
    for s in known[1:]:
        if s.rank != known[0].rank:
            raise fail(f"all inputs must have the same rank, got shapes {known[0]} and {s}")
    return known[0].rank if known else None


def _merge_all(fail, shapes: list[Shape], skip_axis: int | None = None) -> Shape:
    """Merge shapes that must agree (except along ``skip_axis``), naming two that conflict."""
    rank = _common_rank(fail, shapes)
    known = [s for s in shapes if s.rank is not None]
    probes = [Shape([None if i == skip_axis else d for i, d in enumerate(s)]) for s in known]
    out = unknown_of_rank(rank)
    for j, p in enumerate(probes):
        if not out.is_compatible_with(p):
            # A conflicting dimension was set by some earlier input: name that one.
            k = next(k for k in range(j) if not probes[k].is_compatible_with(p))
            what = "shapes" if skip_axis is None else f"dimensions other than axis {skip_axis}"
            raise fail(f"all inputs must have matching {what}, got shapes {known[k]} and {known[j]}")
        out = out.merge_with(p)
    return out


def _concat_shape(fail, shapes: list[Shape], axis: int | None) -> Shape:
    rank = _common_rank(fail, shapes)
    if rank == 0:
        raise fail("cannot concatenate scalars (use Pack)")
    if rank is None or axis is None:
        return unknown_of_rank(rank)
    axis = norm_axis(fail, axis, rank)
    dims = list(_merge_all(fail, shapes, skip_axis=axis).dims)
    sizes = [s[axis] for s in shapes]
    dims[axis] = None if None in sizes else sum(sizes)
    return Shape(dims)


def _concat_infer(ic: InferenceContext) -> list[Shape]:
    axis = scalar_arg(ic.fail, ic.value(ic.num_inputs - 1), "axis")
    return [_concat_shape(ic.fail, ic.list_shapes(0), axis)]


register_op(
    "ConcatV2",
    inputs=["values: N * T", "axis: Tidx"],
    outputs=["output: T"],
    attrs=["N: int >= 2", "T: type", "Tidx: {int32, int64} = int32"],
    shape=_concat_infer,
    doc="Joins `values` along `axis`; all other dimensions must match.",
)


# The axis is the last input (index N); negative host_inputs count from the end.
@kernel("ConcatV2", host_inputs=(-1,))
def _concat(ctx, *args):
    values, axis = args[:-1], scalar_arg(ctx.fail, ctx.host(args[-1]), "axis")
    _concat_shape(ctx.fail, [shape_of(v) for v in values], axis)
    return ctx.xp.concatenate(values, axis=axis)


@gradient("ConcatV2")
def _concat_grad(b, node, dys):
    # Split the gradient back into pieces as wide as the inputs were (TF's SplitV path).
    *values, axis = node.data_inputs
    rank, known = b.spec(values[0]).shape.rank, b.value(axis)
    if known is not None and rank is not None:
        a = int(known) % rank
        axis, dims = gu.const(b, np.int32(a)), [b.spec(v).shape[a] for v in values]
    else:  # normalize a negative axis at run time
        axis = gu.emit(b, "FloorMod", _as_int32(b, axis), gu.emit(b, "Rank", values[0]))
        dims = [None]
    if None not in dims:
        sizes = gu.const(b, np.array(dims, np.int32))
    else:
        zero = gu.const(b, 0, "int32")
        sizes = gu.emit(b, "Pack", *(gu.emit(b, "GatherV2", gu.shape_of(b, v), axis, zero) for v in values))
    return [*gu.outputs(b, "SplitV", len(values), dys[0], sizes, axis, num_split=len(values)), None]


register_op(
    "ConcatOffset",
    inputs=["concat_dim: int32", "shape: N * shape_type"],
    outputs=["offset: N * shape_type"],
    attrs=["N: int >= 2", "shape_type: {int32, int64} = int32"],
    shape=lambda ic: list(ic.list_shapes(1)),
    doc="Where each input of a ConcatV2 along concat_dim starts in its output (TF's concat "
    "gradient slices the output's gradient at these offsets).",
)


@kernel("ConcatOffset", host_inputs=(0,))
def _concat_offset(ctx, concat_dim, *shapes):
    shapes = [ctx.host(s) for s in shapes]  # a few integers each
    first = [int(d) for d in shapes[0]]
    axis = scalar_arg(ctx.fail, ctx.host(concat_dim), "concat_dim")
    if not -len(first) <= axis < len(first):
        raise ctx.fail(f"concat_dim {axis} is out of range for shapes of rank {len(first)}")
    axis %= len(first)
    out, at = [], 0
    for i, s in enumerate(shapes):
        dims = [int(d) for d in s]
        if len(dims) != len(first) or any(a != b for k, (a, b) in enumerate(zip(dims, first)) if k != axis):
            raise ctx.fail(f"input {i} has shape {dims}, which does not match {first} outside dimension {axis}")
        offset = [0] * len(dims)
        offset[axis] = at
        at += dims[axis]
        out.append(ctx.xp.asarray(offset, dtype=ctx.attrs["shape_type"].numpy))
    return out


not_differentiable("ConcatOffset")


def _as_int32(b, x: str) -> str:
    """``x`` as int32 (shape and axis arguments of either index type)."""
    return x if b.spec(x).dtype == dtypes.int32 else gu.emit(b, "Cast", x, DstT=dtypes.int32)


def _concat_pieces(b, parts: list[str], axis) -> str:
    """ConcatV2 of ``parts`` along ``axis`` (an int or a tensor); one part is returned as is."""
    if len(parts) == 1:
        return parts[0]
    axis = gu.const(b, np.int32(axis)) if isinstance(axis, int) else axis
    return gu.emit(b, "ConcatV2", *parts, axis)


def _pack_shape(fail, shapes: list[Shape], axis: int) -> Shape:
    s = _merge_all(fail, shapes)
    if s.rank is None:
        return s
    dims = list(s.dims)
    dims.insert(norm_axis(fail, axis, s.rank + 1), len(shapes))
    return Shape(dims)


register_op(
    "Pack",
    inputs=["values: N * T"],
    outputs=["output: T"],
    attrs=["N: int >= 1", "T: type", "axis: int = 0"],
    shape=lambda ic: [_pack_shape(ic.fail, ic.list_shapes(0), ic.attr("axis"))],
    doc="Stacks N tensors of one shape into a tensor with a new dimension of size N at `axis`.",
)


@kernel("Pack")
def _pack(ctx, *values):
    _pack_shape(ctx.fail, [shape_of(v) for v in values], ctx.attrs["axis"])
    return ctx.xp.stack(values, axis=ctx.attrs["axis"])


@gradient("Pack")
def _pack_grad(b, node, dys):
    n = node.attrs["N"]
    return gu.outputs(b, "Unpack", n, dys[0], num=n, axis=node.attrs["axis"])


def _unpack_shape(fail, s: Shape, axis: int, num: int) -> tuple[Shape, int]:
    if s.rank is None:
        return Shape.unknown(), axis
    if s.rank == 0:
        raise fail("cannot unpack a scalar")
    axis = norm_axis(fail, axis, s.rank)
    if s[axis] is not None and s[axis] != num:
        raise fail(f"dimension {axis} of shape {s} must equal num = {num}")
    return Shape(s.dims[:axis] + s.dims[axis + 1 :]), axis


def _unpack_infer(ic: InferenceContext) -> list[Shape]:
    num = ic.attr("num")
    return [_unpack_shape(ic.fail, ic.shape(0), ic.attr("axis"), num)[0]] * num


register_op(
    "Unpack",
    inputs=["value: T"],
    outputs=["output: num * T"],
    attrs=["num: int >= 0", "T: type", "axis: int = 0"],
    shape=_unpack_infer,
    doc="Splits `value` along `axis` into `num` tensors with that dimension removed.",
)


@kernel("Unpack")
def _unpack(ctx, x):
    _, axis = _unpack_shape(ctx.fail, shape_of(x), ctx.attrs["axis"], ctx.attrs["num"])
    lead = (slice(None),) * axis
    return tuple(x[lead + (i,)] for i in range(ctx.attrs["num"]))


@gradient("Unpack")
def _unpack_grad(b, node, dys):
    return [gu.emit(b, "Pack", *dys, axis=node.attrs["axis"])]


# --- Split / SplitV ---------------------------------------------------------------------------


def _split_shape(fail, s: Shape, axis: int | None, num: int) -> Shape:
    if s.rank is None or axis is None:
        return unknown_of_rank(s.rank)
    axis = norm_axis(fail, axis, s.rank)
    if s[axis] is not None and s[axis] % num:
        raise fail(f"dimension {axis} of shape {s} is not divisible by num_split = {num}")
    return Shape([None if d is None else d // num if i == axis else d for i, d in enumerate(s)])


def _split_infer(ic: InferenceContext) -> list[Shape]:
    num, axis = ic.attr("num_split"), scalar_arg(ic.fail, ic.value(0), "split_dim")
    return [_split_shape(ic.fail, ic.shape(1), axis, num)] * num


register_op(
    "Split",
    inputs=["split_dim: int32", "value: T"],
    outputs=["output: num_split * T"],
    attrs=["num_split: int >= 1", "T: type"],
    shape=_split_infer,
    aliases={"split_dim": "axis"},
    doc="Splits `value` along `split_dim` into `num_split` equal pieces.",
)


@kernel("Split", host_inputs=(0,))
def _split(ctx, axis, x):
    axis = scalar_arg(ctx.fail, ctx.host(axis), "split_dim")
    _split_shape(ctx.fail, shape_of(x), axis, ctx.attrs["num_split"])
    return tuple(ctx.xp.split(x, ctx.attrs["num_split"], axis=axis))


@gradient("Split")
def _split_grad(b, node, dys):
    return [None, _concat_pieces(b, dys, node.data_inputs[0])]


def _splitv_sizes(fail, dim: int | None, sizes: list[int], num: int) -> list[int | None]:
    """``size_splits`` with its -1 entry resolved (None while ``dim`` is unknown)."""
    if len(sizes) != num:
        raise fail(f"size_splits has {len(sizes)} entries, but num_split is {num}")
    if sizes.count(-1) > 1 or any(z < -1 for z in sizes):
        raise fail(f"size_splits {sizes} may hold one -1, all other entries non-negative")
    known = sum(z for z in sizes if z != -1)
    if dim is None:
        return [None if z == -1 else z for z in sizes]
    if (-1 in sizes and known > dim) or (-1 not in sizes and known != dim):
        raise fail(f"size_splits {sizes} do not add up to the dimension's size {dim}")
    return [dim - known if z == -1 else z for z in sizes]


def _splitv_infer(ic: InferenceContext) -> list[Shape]:
    num, s = ic.attr("num_split"), ic.shape(0)
    sizes = vector_arg(ic.fail, ic.value(1), "size_splits")
    axis = scalar_arg(ic.fail, ic.value(2), "split_dim")
    if s.rank is None or axis is None or sizes is None:
        return [_split_shape(ic.fail, s, None, num)] * num
    axis = norm_axis(ic.fail, axis, s.rank)
    out = []
    for z in _splitv_sizes(ic.fail, s[axis], sizes, num):
        out.append(Shape(s.dims[:axis] + (z,) + s.dims[axis + 1 :]))
    return out


register_op(
    "SplitV",
    inputs=["value: T", "size_splits: Tlen", "split_dim: int32"],
    outputs=["output: num_split * T"],
    attrs=["num_split: int >= 1", "T: type", "Tlen: {int8, int32, int64} = int64"],
    shape=_splitv_infer,
    aliases={"split_dim": "axis"},
    doc="Splits `value` along `split_dim` into pieces of sizes `size_splits` (one may be -1).",
)


@kernel("SplitV", host_inputs=(1, 2))
def _splitv(ctx, x, sizes, axis):
    axis = norm_axis(ctx.fail, scalar_arg(ctx.fail, ctx.host(axis), "split_dim"), x.ndim)
    sizes = _splitv_sizes(ctx.fail, x.shape[axis], vector_arg(ctx.fail, ctx.host(sizes), "size_splits"),
                          ctx.attrs["num_split"])  # fmt: skip
    return tuple(ctx.xp.split(x, np.cumsum(sizes[:-1]).tolist(), axis=axis))


@gradient("SplitV")
def _splitv_grad(b, node, dys):
    return [_concat_pieces(b, dys, node.data_inputs[2]), None, None]


# --- ExpandDims / Squeeze ---------------------------------------------------------------------


def _expand_dims_shape(fail, s: Shape, dim: int | None) -> Shape:
    if s.rank is None:
        return s
    if dim is None:
        return Shape.unknown_of_rank(s.rank + 1)
    axis = norm_axis(fail, dim, s.rank + 1, "dim")
    return Shape(s.dims[:axis] + (1,) + s.dims[axis:])


register_op(
    "ExpandDims",
    inputs=["input: T", "dim: Tdim"],
    outputs=["output: T"],
    attrs=["T: type", "Tdim: {int32, int64} = int32"],
    shape=lambda ic: [_expand_dims_shape(ic.fail, ic.shape(0), scalar_arg(ic.fail, ic.value(1), "dim"))],
    aliases={"dim": "axis"},
    doc="Inserts a dimension of size 1 at index `dim` (negative counts from the end).",
)


@kernel("ExpandDims", host_inputs=(1,))
def _expand_dims(ctx, x, dim):
    out = _expand_dims_shape(ctx.fail, shape_of(x), scalar_arg(ctx.fail, ctx.host(dim), "dim"))
    return ctx.xp.reshape(x, out.dims)


@gradient("ExpandDims")
def _expand_dims_grad(b, node, dys):
    return [gu.reshape_to(b, dys[0], node.data_inputs[0]), None]


def _squeeze_shape(fail, s: Shape, squeeze_dims: list[int]) -> Shape:
    if s.rank is None:
        return s
    if not squeeze_dims:
        if None in s.dims:
            return Shape.unknown()  # an unknown size might or might not be 1
        return Shape([d for d in s.dims if d != 1])
    axes = {norm_axis(fail, a, s.rank, "squeeze dimension") for a in squeeze_dims}
    for a in sorted(axes):
        if s[a] not in (None, 1):
            raise fail(f"cannot squeeze dimension {a} of shape {s}: its size is {s[a]}, not 1")
    return Shape([d for i, d in enumerate(s.dims) if i not in axes])


register_op(
    "Squeeze",
    inputs=["input: T"],
    outputs=["output: T"],
    attrs=["T: type", "squeeze_dims: list(int) = []"],
    shape=lambda ic: [_squeeze_shape(ic.fail, ic.shape(0), ic.attr("squeeze_dims"))],
    doc="Removes dimensions of size 1: those in `squeeze_dims`, or all of them when it is empty.",
)


@kernel("Squeeze")
def _squeeze(ctx, x):
    return ctx.xp.reshape(x, _squeeze_shape(ctx.fail, shape_of(x), ctx.attrs["squeeze_dims"]).dims)


@gradient("Squeeze")
def _squeeze_grad(b, node, dys):
    return [gu.reshape_to(b, dys[0], node.data_inputs[0])]


# --- Tile -------------------------------------------------------------------------------------


def _tile_shape(fail, s: Shape, multiples: list[int]) -> Shape:
    if s.rank is not None and len(multiples) != s.rank:
        raise fail(f"multiples {multiples} must have one entry per dimension of shape {s}")
    if any(m < 0 for m in multiples):
        raise fail(f"multiples must be non-negative, got {multiples}")
    dims = s.dims if s.rank is not None else (None,) * len(multiples)
    return Shape([None if d is None else d * m for d, m in zip(dims, multiples, strict=True)])


def _tile_infer(ic: InferenceContext) -> list[Shape]:
    multiples = vector_arg(ic.fail, ic.value(1), "multiples")
    if multiples is not None:
        return [_tile_shape(ic.fail, ic.shape(0), multiples)]
    rank = ic.shape(0).rank
    rank = vector_len(ic, 1, "multiples") if rank is None else rank
    return [unknown_of_rank(rank)]


register_op(
    "Tile",
    inputs=["input: T", "multiples: Tmultiples"],
    outputs=["output: T"],
    attrs=["T: type", "Tmultiples: {int32, int64} = int32"],
    shape=_tile_infer,
    doc="Repeats `input` multiples[i] times along dimension i.",
)


@kernel("Tile", host_inputs=(1,))
def _tile(ctx, x, multiples):
    multiples = vector_arg(ctx.fail, ctx.host(multiples), "multiples")
    _tile_shape(ctx.fail, shape_of(x), multiples)
    return ctx.xp.tile(x, multiples)


@gradient("Tile")
def _tile_grad(b, node, dys):
    # View the gradient as [m0, d0, m1, d1, ...] and sum over the copies (the even axes).
    x, multiples = node.data_inputs
    xs, m = b.spec(x).shape, b.value(multiples)
    if xs.is_fully_defined and m is not None:
        split = gu.const(b, np.stack([m, np.array(xs.as_list(), m.dtype)], axis=1).reshape(-1))
        axes = gu.const(b, np.arange(0, 2 * len(m), 2, dtype=np.int32))
    else:
        pairs = gu.emit(b, "Pack", multiples, gu.shape_of(b, x, b.spec(multiples).dtype), axis=1)
        split = gu.emit(b, "Reshape", pairs, gu.const(b, [-1], "int32"))
        axes = gu.emit(b, "Range", gu.const(b, 0, "int32"), gu.emit(b, "Size", split), gu.const(b, 2, "int32"))
    return [gu.emit(b, "Sum", gu.emit(b, "Reshape", dys[0], split), axes, keep_dims=False), None]
