"""Array ops: constants, placeholders, identity, shape queries, fills, ranges and one-hot.

Shape-manipulating ops (Reshape, Concat, Slice, Gather, Pad, ...) live in ``manip_ops``.
"""

from __future__ import annotations

import numpy as np

from specflow.graph import dtypes
from specflow.graph.shapes import Shape, as_shape, broadcast_shapes
from specflow.ops import grad_util as gu
from specflow.ops import host_copies, wide_rows
from specflow.ops.inference import InferenceContext, no_outputs, scalar_shape, unchanged_shape
from specflow.ops.registry import gradient, kernel, not_differentiable, register_op, shape_fn

# --- Const ------------------------------------------------------------------------------------


def _const_shape(ic: InferenceContext) -> list[Shape]:
    value, dtype = ic.attr("value"), ic.attr("dtype")
    if value.dtype != dtype.numpy and not (value.dtype.kind in "OSU" and dtype.name == "string"):
        # The kernel hands the value out as it is: a mismatch would only fail at run time.
        raise ic.fail(f"value has dtype {value.dtype.name}, but dtype is {dtype.name}")
    return [Shape(value.shape)]


def const_value(value, dtype) -> np.ndarray:
    """A Const's ``value`` (a literal from a spec) as an array of ``dtype``, as TF converts it:
    integers take only whole numbers in range, floats any finite number that fits, bool only
    booleans. Raises ValueError saying what is wrong."""
    np_dt = dtype.numpy
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError) as e:
        raise ValueError(f"bad value {value!r} ({e})") from None
    kind = raw.dtype.kind
    if raw.size == 0 and kind == "f":  # ``[]``: numpy's default float64, whatever the dtype
        return np.empty(raw.shape, dtype=object if dtype.name == "string" else np_dt)
    if dtype.name == "string":
        if kind not in "SUO" or (kind == "O" and not all(isinstance(v, (str, bytes)) for v in raw.flat)):
            raise ValueError(f"expected strings for dtype string, got {value!r}")
        return np.asarray([v.encode() if isinstance(v, str) else v for v in raw.flat], dtype=object).reshape(raw.shape)
    if kind not in "biufc" or (kind == "b") != (np_dt.kind == "b"):
        raise ValueError(f"expected {'booleans' if np_dt.kind == 'b' else 'numbers'} for dtype {dtype.name}, "
                         f"got {value!r}")
    if np_dt.kind in "iu":
        if kind in "fc":
            raise ValueError(f"expected integers for dtype {dtype.name}, got {value!r}")
        info = np.iinfo(np_dt)
        if raw.size and (int(raw.min()) < info.min or int(raw.max()) > info.max):
            bad = next(int(v) for v in raw.flat if not info.min <= int(v) <= info.max)
            raise ValueError(f"{bad} is out of range for {dtype.name} [{info.min}, {info.max}]")
    elif np_dt.kind == "f" and kind == "c":
        raise ValueError(f"expected real numbers for dtype {dtype.name}, got {value!r}")
    with np.errstate(all="ignore"):
        arr = raw.astype(np_dt)
    if np_dt.kind in "fc" and raw.dtype.kind in "iuf":
        overflow = np.isinf(arr) & np.isfinite(raw)
        if overflow.any():
            raise ValueError(f"{raw[overflow].flat[0].item()!r} is out of range for {dtype.name}")
    return arr


register_op(
    "Const",
    outputs=["output: dtype"],
    attrs=["value: tensor", "dtype: type"],
    shape=_const_shape,
    doc="A constant tensor held in the graph (the `value` attr).",
)


@kernel("Const")
def _const(ctx):
    # Kernels never mutate their inputs, so the attr's array is returned without a copy on CPU,
    # as a read-only view kept in the node's state: consumers that keep what they resolved from
    # an input they saw before (Reshape's shape, BroadcastGradientArgs) may trust it unchanged,
    # and a variable assigned it copies it first, as a fetch of it does. The state outlives a
    # plan (plans per fed shape fold different values into a Const of one name): the view is
    # kept with the attr it shows.
    # On a GPU the copy made on the first run is kept the same way: a host-to-device copy every
    # step would wait for the GPU's queued work.
    attr = ctx.attrs["value"]
    kept = ctx.state.get("value")
    if kept is None or kept[0] is not attr:
        if ctx.xp is np:
            value = np.asarray(attr).view()
            value.flags.writeable = False
        else:
            value = host_copies.keep(ctx.xp.asarray(attr), attr)
        kept = ctx.state["value"] = (attr, value)
    return kept[1]


not_differentiable("Const")


# --- Placeholder ------------------------------------------------------------------------------


register_op(
    "Placeholder",
    outputs=["output: dtype"],
    attrs=["dtype: type", "shape: shape = None"],
    shape=lambda ic: [as_shape(ic.attr("shape"))],
    doc="A value fed at run time; running it unfed is an error.",
)


@kernel("Placeholder")
def _placeholder(ctx):
    raise ctx.fail(f"placeholder '{ctx.node.name}' must be fed (dtype {ctx.attrs['dtype']}, shape {ctx.attrs['shape']})")


not_differentiable("Placeholder")


# --- Identity / NoOp --------------------------------------------------------------------------


register_op(
    "Identity",
    inputs=["input: T"],
    outputs=["output: T"],
    attrs=["T: type"],
    shape=unchanged_shape,
    doc="Returns its input unchanged.",
)


@kernel("Identity", T=dtypes.ALL_DTYPES)  # resource handles too: TF2 loops carry them
def _identity(ctx, x):
    return x


@gradient("Identity")
def _pass_gradient(b, node, dys):
    """Ops that return their input unchanged pass the gradient straight back."""
    return [dys[0]]


register_op("NoOp", shape=no_outputs, doc="Does nothing; useful as a target carrying control inputs.")


@kernel("NoOp")
def _noop(ctx):
    return ()


# --- PlaceholderWithDefault / StopGradient / Snapshot -----------------------------------------


def _placeholder_with_default_shape(ic: InferenceContext) -> list[Shape]:
    declared = as_shape(ic.attr("shape"))
    if not ic.shape(0).is_compatible_with(declared):
        raise ic.fail(f"default value of shape {ic.shape(0)} does not fit the declared shape {declared}")
    return [declared]


register_op(
    "PlaceholderWithDefault",
    inputs=["input: dtype"],
    outputs=["output: dtype"],
    attrs=["dtype: type", "shape: shape"],
    shape=_placeholder_with_default_shape,
    doc="Passes `input` through unless fed; `shape` may be less specific than the default's.",
)

register_op(
    "StopGradient",
    inputs=["input: T"],
    outputs=["output: T"],
    attrs=["T: type"],
    shape=unchanged_shape,
    doc="Returns its input; gradients do not flow through it.",
)

register_op(
    "Snapshot",
    inputs=["input: T"],
    outputs=["output: T"],
    attrs=["T: type"],
    shape=unchanged_shape,
    doc="A copy of its input, so later in-place updates of the input do not show through.",
)


@kernel("PlaceholderWithDefault")
@kernel("StopGradient")
def _pass_through(ctx, x):
    return x


@kernel("Snapshot")
def _snapshot(ctx, x):
    return x.copy()


gradient("PlaceholderWithDefault")(_pass_gradient)
gradient("Snapshot")(_pass_gradient)
not_differentiable("StopGradient")


# --- Shape / Size / Rank ----------------------------------------------------------------------
# These read only the input's metadata; shape inference folds them when the shape is known.

for _name, _doc in (
    ("Shape", "The shape of `input` as a 1-D tensor."),
    ("Size", "The number of elements of `input` as a scalar."),
):
    register_op(
        _name,
        inputs=["input: T"],
        outputs=["output: out_type"],
        attrs=["T: type", "out_type: {int32, int64} = int32"],
        doc=_doc,
    )

register_op(
    "Rank",
    inputs=["input: T"],
    outputs=["output: int32"],
    attrs=["T: type"],
    shape=scalar_shape,
    doc="The number of dimensions of `input` as a scalar.",
)


@shape_fn("Shape")
def _shape_shape(ic: InferenceContext) -> list[Shape]:
    return [Shape([ic.shape(0).rank])]


shape_fn("Size")(scalar_shape)


@kernel("Shape")
def _shape(ctx, x):
    # The same shape every step (every iteration, in a loop's gradient): the last output is kept
    # in the node's state and handed out again, read-only (a fetched one cannot be changed under
    # the next step; a variable assigned it copies it first). Its consumers (BroadcastGradientArgs,
    # Reshape) then find the very array they resolved last time.
    seen = ctx.state.get("shape")
    if seen is not None and seen[0] == x.shape:
        return seen[1]
    out = ctx.xp.asarray(x.shape, dtype=ctx.attrs["out_type"].numpy)
    if type(out) is np.ndarray:
        out.flags.writeable = False
    else:
        host_copies.keep(out, np.asarray(x.shape))
    ctx.state["shape"] = (x.shape, out)
    return out


@kernel("Size")
def _size(ctx, x):
    return ctx.xp.asarray(x.size, dtype=ctx.attrs["out_type"].numpy)


@kernel("Rank")
def _rank(ctx, x):
    return ctx.xp.asarray(x.ndim, dtype=np.int32)


register_op(
    "ShapeN",
    inputs=["input: N * T"],
    outputs=["output: N * out_type"],
    attrs=["N: int >= 1", "T: type", "out_type: {int32, int64} = int32"],
    doc="The shape of each input as a 1-D tensor (TF's convolution gradients read both operands' shapes so).",
)


@shape_fn("ShapeN")
def _shape_n_shape(ic: InferenceContext) -> list[Shape]:
    return [Shape([s.rank]) for s in ic.list_shapes(0)]


@kernel("ShapeN")
def _shape_n(ctx, *xs):
    dt = ctx.attrs["out_type"].numpy
    return [ctx.xp.asarray(x.shape, dtype=dt) for x in xs]


not_differentiable("Shape", "ShapeN", "Size", "Rank")


# --- Fill / ZerosLike / OnesLike / BroadcastTo ------------------------------------------------


def _dims_arg(fail, value, what: str) -> tuple[int, ...]:
    """A 1-D shape tensor read on the host, checked non-negative."""
    dims = np.asarray(value)
    if dims.ndim != 1:
        raise fail(f"{what} must be a 1-D tensor, got shape {list(dims.shape)}")
    if (dims < 0).any():
        raise fail(f"{what} must be non-negative, got {dims.tolist()}")
    return tuple(int(d) for d in dims)


def _fill_shape(ic: InferenceContext) -> list[Shape]:
    if ic.shape(1).rank not in (None, 0):
        raise ic.fail(f"value must be a scalar, got shape {ic.shape(1)}")
    if ic.value(0) is not None:
        _dims_arg(ic.fail, ic.value(0), "dims")
    return [ic.shape_from_value(0)]


register_op(
    "Fill",
    inputs=["dims: index_type", "value: T"],
    outputs=["output: T"],
    attrs=["T: type", "index_type: {int32, int64} = int32"],
    shape=_fill_shape,
    doc="A tensor of shape `dims` with every element equal to the scalar `value`.",
)


@kernel("Fill", host_inputs=(0,))
def _fill(ctx, dims, value):
    dims = _dims_arg(ctx.fail, ctx.host(dims), "dims")
    if value.ndim != 0:
        raise ctx.fail(f"value must be a scalar, got shape {list(value.shape)}")
    return ctx.xp.broadcast_to(value, dims).copy()


@gradient("Fill")
def _fill_grad(b, node, dys):
    # Every output element is `value`: its gradient is the sum of them all.
    return [None, sum_all(b, dys[0])]


def sum_all(b, x: str) -> str:
    """The sum of every element of ``x``, a scalar (axes from Rank when the rank is unknown)."""
    rank = b.spec(x).shape.rank
    if rank is not None:
        axes = gu.const(b, np.arange(rank, dtype=np.int32))
    else:
        axes = gu.emit(b, "Range", gu.const(b, 0, "int32"), gu.emit(b, "Rank", x), gu.const(b, 1, "int32"))
    return gu.emit(b, "Sum", x, axes, keep_dims=False)


register_op(
    "ZerosLike",
    inputs=["x: T"],
    outputs=["y: T"],
    attrs=["T: type"],
    shape=unchanged_shape,
    doc="Zeros (empty strings for strings) with the shape and dtype of `x`.",
)

register_op(
    "OnesLike",
    inputs=["x: T"],
    outputs=["y: T"],
    attrs=["T: {numeric, bool}"],
    shape=unchanged_shape,
    doc="Ones with the shape and dtype of `x`.",
)


@kernel("ZerosLike")
def _zeros_like(ctx, x):
    if x.dtype == object and ctx.attrs["T"] == dtypes.variant:  # a TensorList (ops/list_ops.py)
        return x.item().zeros_like()
    if x.dtype == object:  # strings: numpy's zero would be the integer 0
        return np.full(x.shape, b"", dtype=object)
    return ctx.xp.zeros_like(x)


@kernel("OnesLike")
def _ones_like(ctx, x):
    return ctx.xp.ones_like(x)


# Their values do not depend on the input's values.
not_differentiable("ZerosLike", "OnesLike")


def _broadcast_to_shape(ic: InferenceContext) -> list[Shape]:
    target = ic.shape_from_value(1)
    if ic.value(1) is not None:
        _dims_arg(ic.fail, ic.value(1), "shape")
    src = ic.shape(0)
    if target.rank is None or src.rank is None:
        return [target]
    try:
        out = broadcast_shapes(src, target)
    except ValueError:
        out = None
    if out is None or src.rank > target.rank or not out.is_compatible_with(target):
        raise ic.fail(f"cannot broadcast a tensor of shape {src} to shape {target}")
    return [out.merge_with(target)]


register_op(
    "BroadcastTo",
    inputs=["input: T", "shape: Tidx"],
    outputs=["output: T"],
    attrs=["T: type", "Tidx: {int32, int64} = int32"],
    shape=_broadcast_to_shape,
    doc="`input` broadcast (numpy rules) to `shape`.",
)


@kernel("BroadcastTo", host_inputs=(1,))
def _broadcast_to(ctx, x, shape):
    shape = _dims_arg(ctx.fail, ctx.host(shape), "shape")
    src = x.shape
    ok = len(src) <= len(shape) and all(s in (1, t) for s, t in zip(src[::-1], shape[::-1], strict=False))
    if not ok:
        raise ctx.fail(f"cannot broadcast a tensor of shape {list(src)} to shape {list(shape)}")
    # Materialised, as TF does: a zero-stride view would surprise code expecting a dense array.
    if len(shape) >= 2 and x.dtype.kind in "biufc" and x.size == shape[-1] > 0 and x.ndim and x.shape[-1] == shape[-1]:
        # A vector over the last axis (a batch-norm moment's gradient): whole lines at a time.
        return wide_rows.broadcast_channels(ctx.xp, x, ctx.empty(tuple(shape), x.dtype))
    return ctx.xp.broadcast_to(x, shape).copy()


@gradient("BroadcastTo")
def _broadcast_to_grad(b, node, dys):
    # Each input element was copied to several outputs: sum their gradients back.
    return [gu.sum_to(b, dys[0], node.data_inputs[0]), None]


def _broadcast_args_shape(ic: InferenceContext) -> list[Shape]:
    for i in (0, 1):
        if ic.shape(i).rank not in (None, 1):
            raise ic.fail(f"s{i} must be a shape vector, got shape {ic.shape(i)}")
    a, c = ic.value(0), ic.value(1)
    if a is not None and c is not None:
        return [Shape([len(_broadcast_dims(ic.fail, a, c))])]
    n0, n1 = ic.shape(0).with_rank(1)[0], ic.shape(1).with_rank(1)[0]
    return [Shape([None if n0 is None or n1 is None else max(n0, n1)])]


def _broadcast_dims(fail, s0, s1) -> tuple[int, ...]:
    if np.ndim(s0) != 1 or np.ndim(s1) != 1:
        raise fail(f"s0 and s1 must be shape vectors, got shapes {list(np.shape(s0))} and {list(np.shape(s1))}")
    try:
        return np.broadcast_shapes(tuple(int(d) for d in s0), tuple(int(d) for d in s1))
    except ValueError:
        raise fail(f"incompatible shapes: {list(map(int, s0))} vs. {list(map(int, s1))}") from None


register_op(
    "BroadcastArgs",
    inputs=["s0: T", "s1: T"],
    outputs=["r0: T"],
    attrs=["T: {int32, int64} = int32"],
    shape=_broadcast_args_shape,
    doc="The shape two tensors of shapes s0 and s1 broadcast to (numpy rules).",
)


@kernel("BroadcastArgs", host_inputs=(0, 1))
def _broadcast_args(ctx, s0, s1):
    return ctx.xp.asarray(_broadcast_dims(ctx.fail, ctx.host(s0), ctx.host(s1)), dtype=ctx.attrs["T"].numpy)


not_differentiable("BroadcastArgs")


# --- Range ------------------------------------------------------------------------------------


def _range_size(fail, start, limit, delta) -> int:
    """Number of elements of Range(start, limit, delta), with TF's checks."""
    if delta == 0:
        raise fail("requires delta != 0")
    if delta > 0 and start > limit:
        raise fail(f"requires start <= limit when delta > 0: {start}/{limit}")
    if delta < 0 and start < limit:
        raise fail(f"requires start >= limit when delta < 0: {start}/{limit}")
    if isinstance(start, (int, np.integer)):
        return (abs(int(limit) - int(start)) + abs(int(delta)) - 1) // abs(int(delta))
    # TF counts in the element type: float32 (0.7 - 3.7) / -0.2 is exactly 15, in float64 15.0000002.
    with np.errstate(all="ignore"):
        n = np.ceil(np.abs((limit - start) / delta))
    if not np.isfinite(n):
        raise fail(f"requires a finite number of elements: {start}/{limit}/{delta}")
    return int(n)


def _range_scalars(fail, *values):
    for name, v in zip(("start", "limit", "delta"), values, strict=True):
        if np.ndim(v) != 0:
            raise fail(f"{name} must be a scalar, got shape {list(np.shape(v))}")
    # Numpy scalars, not Python numbers: the length and the values are computed in the type.
    return [np.asarray(v)[()] for v in values]


def _range_shape(ic: InferenceContext) -> list[Shape]:
    for i, name in enumerate(("start", "limit", "delta")):
        if ic.shape(i).rank not in (None, 0):
            raise ic.fail(f"{name} must be a scalar, got shape {ic.shape(i)}")
    values = [ic.value(i) for i in range(3)]
    if any(v is None for v in values):
        return [Shape([None])]
    return [Shape([_range_size(ic.fail, *_range_scalars(ic.fail, *values))])]


register_op(
    "Range",
    inputs=["start: Tidx", "limit: Tidx", "delta: Tidx"],
    outputs=["output: Tidx"],
    attrs=["Tidx: {float16, float32, float64, int8, int16, int32, int64, uint16, uint32} = int32"],
    shape=_range_shape,
    doc="The sequence start, start + delta, ... up to but excluding `limit`.",
)


@kernel("Range", host_inputs=(0, 1, 2))
def _range(ctx, start, limit, delta):
    start, limit, delta = _range_scalars(ctx.fail, *(ctx.host(v) for v in (start, limit, delta)))
    n = _range_size(ctx.fail, start, limit, delta)
    dt = ctx.attrs["Tidx"].numpy
    if dt.kind != "f":
        return (ctx.xp.arange(n, dtype=np.int64) * int(delta) + int(start)).astype(dt)
    # TF adds delta to a running value of type T: a cumulative sum in T is that sum, rounding and all.
    steps = ctx.xp.full(n, delta, dtype=dt)
    if n:
        steps[0] = start
    return ctx.xp.cumsum(steps, dtype=dt)


not_differentiable("Range")  # as in TensorFlow, even for float start/limit/delta


# --- OneHot -----------------------------------------------------------------------------------


def _one_hot_axis(fail, axis: int, indices_rank: int) -> int:
    if not -1 <= axis <= indices_rank:
        raise fail(f"axis must be -1 or in [0, {indices_rank}] for indices of rank {indices_rank}, got {axis}")
    return indices_rank if axis == -1 else axis


def _one_hot_shape(ic: InferenceContext) -> list[Shape]:
    for i, name in ((1, "depth"), (2, "on_value"), (3, "off_value")):
        if ic.shape(i).rank not in (None, 0):
            raise ic.fail(f"{name} must be a scalar, got shape {ic.shape(i)}")
    depth = ic.value(1)
    if depth is not None and int(depth) < 0:
        raise ic.fail(f"depth must be non-negative, got {int(depth)}")
    indices = ic.shape(0)
    if indices.rank is None:
        return [Shape.unknown()]
    axis = _one_hot_axis(ic.fail, ic.attr("axis"), indices.rank)
    dims = list(indices.dims)
    dims.insert(axis, None if depth is None else int(depth))
    return [Shape(dims)]


register_op(
    "OneHot",
    inputs=["indices: TI", "depth: int32", "on_value: T", "off_value: T"],
    outputs=["output: T"],
    attrs=["axis: int = -1", "T: type", "TI: {uint8, int8, int32, int64} = int64"],
    shape=_one_hot_shape,
    doc="One-hot encoding of `indices` along a new axis of size `depth`; out-of-range indices "
    "give a row of `off_value`.",
)


@kernel("OneHot", host_inputs=(1,))
def _one_hot(ctx, indices, depth, on_value, off_value):
    xp = ctx.xp
    depth = int(ctx.host(depth))
    if depth < 0:
        raise ctx.fail(f"depth must be non-negative, got {depth}")
    axis = _one_hot_axis(ctx.fail, ctx.attrs["axis"], indices.ndim)
    hot = indices[..., None] == xp.arange(depth)
    out = xp.where(hot, on_value, off_value).astype(ctx.attrs["T"].numpy)
    return xp.moveaxis(out, -1, axis)


not_differentiable("OneHot")  # as in TensorFlow: indices are discrete, on/off values rarely trained
