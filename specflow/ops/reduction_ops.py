"""Reductions (Sum, Mean, Max, Min, Prod, EuclideanNorm, All, Any), scans (Cumsum, Cumprod), ArgMax/ArgMin.

The axes are an input (``reduction_indices``, ``dimension``), as in TensorFlow, so shape
functions are exact only when that input is a known constant; specs may write ``axis:`` and
leave it out to reduce over every axis.
"""

from __future__ import annotations

import functools

import numpy as np

from specflow.graph import dtypes
from specflow.graph.shapes import Shape
from specflow.ops import grad_util as gu
from specflow.ops.inference import InferenceContext, unchanged_shape
from specflow.ops.leading_sum import leading, sum_leading
from specflow.ops.math_ops import FP_STATE, QUIET_FP, _fmt, _out, quiet_fp, trunc_div
from specflow.ops.registry import bfloat16_native, gradient, kernel, not_differentiable, register_op


def normalize_axes(values, rank: int) -> tuple[int, ...]:
    """Axes as sorted non-negative ints; ValueError if one is out of range or named twice (TF's
    ReductionHelper refuses [1, 1] and, for rank 2, [1, -1])."""
    flat = values.tolist() if isinstance(values, np.ndarray) else np.ravel(values).tolist()
    out = set()
    for a in flat if isinstance(flat, list) else [flat]:  # a 0-d array's tolist() is a scalar
        if not -rank <= a < rank:
            raise ValueError(f"Invalid reduction dimension {a} for input with {rank} dimension(s)")
        if a % rank in out:
            raise ValueError(f"Axes contains duplicate dimension: {a % rank}")
        out.add(a % rank)
    return tuple(sorted(out))


@functools.lru_cache(maxsize=1024)
def _normalized(axes: tuple[int, ...], rank: int) -> tuple[int, ...]:
    return normalize_axes(axes, rank)


def kernel_axes(ctx, axes_input, rank: int) -> tuple[int, ...]:
    """A kernel's axes input normalized (memoized by value: every step asks for the same
    axes, and normalizing them costs more than a small reduction); an error names the node."""
    # Kernels never mutate their inputs, so the same axes array (a Const's, every step) with
    # the same rank has the same normalized axes: remembered per kernel instance.
    seen = ctx.state.get("axes")
    if seen is not None and seen[0] is axes_input and seen[1] == rank:
        return seen[2]
    try:
        axes = _normalized(tuple(ctx.host(axes_input).ravel().tolist()), rank)
    except ValueError as e:
        raise ctx.fail(str(e)) from None
    ctx.state["axes"] = (axes_input, rank, axes)
    return axes


def _all_axes(input_specs) -> np.ndarray:
    """Spec default for ``reduction_indices``: every axis of the input."""
    rank = input_specs[0].shape.rank
    if rank is None:
        raise ValueError(
            "reducing over all axes needs the input's rank, which is unknown here; give 'axis' explicitly"
        )
    return np.arange(rank, dtype=np.int32)


def _reduce_shape(ic: InferenceContext) -> list[Shape]:
    shape, keep = ic.shape(0), ic.attr("keep_dims")
    axes_shape = ic.shape(1)
    if axes_shape.rank is not None and axes_shape.rank > 1:
        raise ic.fail(f"reduction_indices must be a scalar or a vector, got shape {axes_shape}")
    if shape.rank is None:
        return [Shape.unknown()]
    values = ic.value(1)
    if values is None:
        # Unknown axes: keep_dims keeps the rank; otherwise how many axes go is unknown.
        return [Shape.unknown_of_rank(shape.rank)] if keep else [Shape.unknown()]
    try:
        axes = normalize_axes(values, shape.rank)
    except ValueError as e:
        raise ic.fail(str(e)) from None
    if keep:
        return [Shape([1 if i in axes else d for i, d in enumerate(shape.dims)])]
    return [Shape([d for i, d in enumerate(shape.dims) if i not in axes])]


def _max_identity(x):
    """What Max over nothing gives in TF: the lowest value of the type (-inf for floats)."""
    return -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min


def _min_identity(x):
    return np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).max


def _extremum(name, identity):
    def body(ctx, x, axes, keep):
        if any(x.shape[a] == 0 for a in axes):  # numpy refuses empty max/min; TF gives the identity
            shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape) if keep or i not in axes)
            return ctx.xp.full(shape, identity(x), dtype=x.dtype)
        return getattr(ctx.xp, name)(x, axis=axes, keepdims=keep)

    return body


# A count up to this is exact in float32 (24-bit significand) and in every wider float type.
_EXACT_COUNT = 1 << 24


def _mean(ctx, x, axes, keep):
    xp = ctx.xp
    count = 1
    for a in axes:
        count *= x.shape[a]
    if x.dtype.kind == "c" and count == 0:  # TF's complex mean of nothing is 0 (its float one, NaN)
        shape = [1 if i in axes else d for i, d in enumerate(x.shape)] if keep else \
            [d for i, d in enumerate(x.shape) if i not in axes]
        return xp.zeros(shape, x.dtype)
    if x.dtype.kind in "fc":
        # numpy's mean without its Python wrapper, the same rounding: the sum in T (float16: in
        # float32), divided by the count in float64 (an intp), rounded (the caller casts to T).
        acc = xp.float32 if x.dtype.itemsize == 2 else None
        total = _leading_total(xp, x, axes, keep)
        if total is None and type(x) is np.ndarray:  # what x.sum calls, without numpy's Python wrapper
            total = np.add.reduce(x, axes, acc, None, keep)
        elif total is None:
            total = x.sum(axis=axes, keepdims=keep, dtype=acc)
        if x.dtype.kind == "f" and count <= _EXACT_COUNT:
            # Dividing by the count in the sum's type, where it is exact, gives the same
            # correctly rounded quotient without the mixed-type division (complex division
            # rounds differently: not there).
            return total / count
        if type(total) is not xp.ndarray:  # a full reduction gives a numpy scalar
            total = xp.asarray(total)
        return xp.true_divide(total, np.intp(count), out=total, casting="unsafe")
    # Integers: TF sums 8-, 16- and 32-bit types in a 64-bit integer of the same signedness (its
    # Mean reducer's casting specializations; 64-bit types in T, wrapping) and divides with
    # integer (truncating) division.
    if count == 0:  # TF's integer mean of nothing is 0
        shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape) if keep or i not in axes)
        return xp.zeros(shape, x.dtype)
    wide = np.dtype(np.uint64 if x.dtype.kind == "u" else np.int64)
    total = xp.sum(x, axis=axes, keepdims=keep, dtype=wide)
    return xp.asarray(trunc_div(xp, total, xp.asarray(count, dtype=wide))).astype(x.dtype)


def _leading_total(xp, x, axes, keep):
    """The sum over leading axes as one matrix-vector product (leading_sum.py), or None."""
    total = sum_leading(xp, x, leading(axes, x.ndim))
    if total is not None and keep:
        total = total.reshape((1,) * len(axes) + total.shape)
    return total


def _sum(ctx, x, axes, keep):
    total = _leading_total(ctx.xp, x, axes, keep)
    return total if total is not None else x.sum(axis=axes, keepdims=keep, dtype=x.dtype)


def _accumulate(name):
    """Sum/Prod accumulate in T (numpy would widen small ints to int64). The array method skips
    the np.sum wrapper (microseconds, more than a small reduction itself)."""
    return lambda ctx, x, axes, keep: getattr(x, name)(axis=axes, keepdims=keep, dtype=x.dtype)


def _euclidean(ctx, x, axes, keep):
    """sqrt(sum |x|^2) in T (TF's EuclideanNorm: integers take the integer square root's floor)."""
    xp = ctx.xp
    if x.dtype.kind == "c":
        return xp.sqrt((x * xp.conj(x)).sum(axis=axes, keepdims=keep))
    if x.dtype.kind in "iu":
        total = (x.astype(np.float64) ** 2).sum(axis=axes, keepdims=keep)
        return xp.floor(xp.sqrt(total)).astype(x.dtype)
    return xp.sqrt((x * x).sum(axis=axes, keepdims=keep, dtype=x.dtype))


def _logical(name):
    return lambda ctx, x, axes, keep: getattr(ctx.xp, name)(x, axis=axes, keepdims=keep)


# name, allowed T (None: bool input), body(ctx, x, axes, keep_dims), doc
_REDUCTIONS = [
    ("Sum", "numeric", _sum, "The sum of elements across the given axes."),
    ("Prod", "numeric", _accumulate("prod"), "The product of elements across the given axes."),
    ("Mean", "numeric", _mean, "The mean across the given axes; integer means truncate toward zero "
     "(8- to 32-bit integers summed in 64 bits, as TF)."),
    ("Max", "real", _extremum("max", _max_identity), "The maximum across the given axes."),
    ("Min", "real", _extremum("min", _min_identity), "The minimum across the given axes."),
    ("EuclideanNorm", "numeric", _euclidean, "The Euclidean norm (sqrt of the sum of squared magnitudes) across the given axes."),
    ("All", None, _logical("all"), "Logical AND across the given axes."),
    ("Any", None, _logical("any"), "Logical OR across the given axes."),
]


def _register_reduction(name, types, body, doc):
    typ = "T" if types else "bool"
    register_op(
        name,
        inputs=[f"input: {typ}", "reduction_indices: Tidx"],
        outputs=[f"output: {typ}"],
        attrs=["keep_dims: bool = false"]
        + ([f"T: {{{types}}}"] if types else [])
        + ["Tidx: {int32, int64} = int32"],
        shape=_reduce_shape,
        doc=doc + " Reduced axes are dropped unless keep_dims (then they have size 1); "
        "negative axes count from the end.",
        aliases={"reduction_indices": "axis"},
        defaults={"reduction_indices": _all_axes},
    )

    @kernel(name, host_inputs=(1,))
    def run(ctx, x, reduction_indices):
        if not reduction_indices.size and name != "EuclideanNorm":  # over no axes: x itself (a
            return x  # gradient's Sum over no broadcast axes); EuclideanNorm's is |x|, as TF's
        axes = kernel_axes(ctx, reduction_indices, x.ndim)
        keep = ctx.attrs["keep_dims"]
        # Integer and bool reductions never warn; a quiet step needs no quiet_fp (math_ops.QUIET_FP).
        if x.dtype.kind not in "fc" or FP_STATE.get() is QUIET_FP:
            return _out(ctx, body(ctx, x, axes, keep), x.dtype)
        with quiet_fp():  # float mean over nothing is NaN silently, as in TF
            return _out(ctx, body(ctx, x, axes, keep), x.dtype)


for _row in _REDUCTIONS:
    _register_reduction(*_row)

not_differentiable("All", "Any")


# --- reduction gradients (TensorFlow's math_grad.py) -----------------------------------------


def _static_axes(b, node) -> tuple[int, ...] | None:
    """The reduced axes when the axes are a constant and the input's rank is known."""
    x, axes = node.data_inputs
    rank, value = b.spec(x).shape.rank, b.value(axes)
    if rank is None or value is None:
        return None
    return normalize_axes(value, rank)


def _kept_shape(b, node) -> str:
    """The output's shape with the reduced axes kept as 1 (TF's reduced_shape)."""
    x, axes = node.data_inputs
    shape, red = b.spec(x).shape, _static_axes(b, node)
    if red is not None:
        kept = [1 if i in red else d for i, d in enumerate(shape.dims)]
        if None not in kept:
            return gu.const(b, np.array(kept, dtype=np.int32))
        mask = gu.const(b, np.array([i in red for i in range(shape.rank)]))
        return gu.emit(b, "SelectV2", mask, gu.const(b, np.ones(shape.rank, np.int32)), gu.shape_of(b, x))
    # Axes or rank known only at run time: mark each dim i that some wrapped axis equals.
    dyn_shape, rank = gu.emit(b, "Shape", x), gu.emit(b, "Rank", x)
    flat = gu.emit(b, "Cast", gu.emit(b, "Reshape", axes, gu.const(b, np.array([-1], np.int32))), DstT=dtypes.int32)
    wrapped = gu.emit(b, "FloorMod", flat, rank)
    dims = gu.emit(b, "Range", gu.const(b, np.int32(0)), rank, gu.const(b, np.int32(1)))
    hit = gu.emit(
        b,
        "Equal",
        gu.emit(b, "ExpandDims", dims, gu.const(b, np.int32(1))),
        gu.emit(b, "ExpandDims", wrapped, gu.const(b, np.int32(0))),
    )
    reduced = gu.emit(b, "Any", hit, gu.const(b, np.int32(1)))
    return gu.emit(b, "SelectV2", reduced, gu.emit(b, "OnesLike", dyn_shape), dyn_shape)


def _keep_dims(b, node, t: str) -> str:
    """``t`` (output-shaped) reshaped so its reduced axes are kept as size 1."""
    return t if node.attrs["keep_dims"] else gu.emit(b, "Reshape", t, _kept_shape(b, node))


def _spread(b, node, dy: str) -> str:
    """The output gradient broadcast back over the reduced axes (d Sum)."""
    return gu.emit(b, "BroadcastTo", _keep_dims(b, node, dy), gu.shape_of(b, node.data_inputs[0]))


@gradient("Sum")
def _sum_grad(b, node, dys):
    return [_spread(b, node, dys[0]), None]


@gradient("Mean")
def _mean_grad(b, node, dys):
    x, y = node.data_inputs[0], node.name
    xs, ys = b.spec(x).shape, b.spec(y).shape
    if xs.is_fully_defined and ys.is_fully_defined:
        count = gu.const(b, xs.num_elements() // max(ys.num_elements(), 1), b.spec(x).dtype)
    else:  # elements per output, at run time (max(.., 1) guards an empty output like TF)
        every = gu.const(b, np.array([0], np.int32))
        sizes = [gu.emit(b, "Prod", gu.emit(b, "Shape", t), every) for t in (x, y)]
        per = gu.emit(b, "FloorDiv", sizes[0], gu.emit(b, "Maximum", sizes[1], gu.const(b, np.int32(1))))
        count = gu.cast_like(b, per, x)
    return [gu.emit(b, "RealDiv", _spread(b, node, dys[0]), count), None]


def _extremum_grad(b, node, dys):
    # The gradient goes to the elements equal to the result, split evenly among ties.
    x, axes = node.data_inputs
    y, dy = _keep_dims(b, node, node.name), _keep_dims(b, node, dys[0])
    hits = gu.emit(b, "Cast", gu.emit(b, "Equal", y, x), DstT=b.spec(x).dtype)
    count = gu.emit(b, "Sum", hits, axes, keep_dims=True)
    return [gu.emit(b, "Mul", gu.emit(b, "RealDiv", hits, count), dy), None]


gradient("Max")(_extremum_grad)
gradient("Min")(_extremum_grad)


@gradient("EuclideanNorm")
def _euclidean_norm_grad(b, node, dys):
    # x / (norm / dy), as TF writes it (so a zero norm gives what TF's division gives).
    y, dy = _keep_dims(b, node, node.name), _keep_dims(b, node, dys[0])
    return [gu.emit(b, "RealDiv", node.data_inputs[0], gu.emit(b, "RealDiv", y, dy)), None]


@gradient("Prod")
def _prod_grad(b, node, dys):
    """TF's zero-safe Prod gradient: each element's partial product of all the others in its
    reduction group, from exclusive cumulative products from both ends (no division); for
    complex inputs their conjugates (TF's direction)."""
    x = node.data_inputs[0]
    red = _static_axes(b, node)
    if red is None:
        return [_dynamic_prod_grad(b, node, x, dys[0]), None]
    shape = b.spec(x).shape
    other = [i for i in range(shape.rank) if i not in red]
    perm = list(red) + other
    # Reduced axes first, flattened to one: [reduced elements, everything else].
    permuted = gu.emit(b, "Transpose", x, gu.const(b, np.array(perm, np.int32)))
    if all(shape[i] is not None for i in red):
        groups = gu.const(b, np.array([int(np.prod([shape[i] for i in red])), -1], np.int32))
    else:
        size = gu.emit(
            b,
            "Prod",
            gu.emit(b, "GatherV2", gu.shape_of(b, x), gu.const(b, np.array(red, np.int32)), gu.const(b, np.int32(0))),
            gu.const(b, np.int32(0)),
            keep_dims=True,
        )
        groups = gu.emit(b, "ConcatV2", size, gu.const(b, np.array([-1], np.int32)), gu.const(b, np.int32(0)))
    flat = gu.emit(b, "Reshape", permuted, groups)
    zero = gu.const(b, np.int32(0))
    left = gu.emit(b, "Cumprod", flat, zero, exclusive=True)
    right = gu.emit(b, "Cumprod", flat, zero, exclusive=True, reverse=True)
    if b.spec(x).dtype.is_complex:
        left, right = gu.emit(b, "Conj", left), gu.emit(b, "Conj", right)
    others = gu.emit(b, "Reshape", gu.emit(b, "Mul", left, right), gu.shape_of(b, permuted))
    unpermuted = gu.emit(b, "Transpose", others, gu.const(b, np.argsort(perm).astype(np.int32)))
    return [gu.emit(b, "Mul", _spread(b, node, dys[0]), unpermuted), None]


def _dynamic_prod_grad(b, node, x: str, dy: str) -> str:
    """Prod's gradient with axes (or rank) known only at run time: TF's _ProdGrad, the
    permutation (reduced axes first, ListDiff for the rest) built by ops."""
    i32 = lambda v: gu.const(b, np.int32(v))  # noqa: E731
    rank, shape = gu.emit(b, "Rank", x), gu.emit(b, "Shape", x)
    axes = gu.emit(b, "Cast", gu.emit(b, "Reshape", node.data_inputs[1], gu.const(b, np.array([-1], np.int32))),
                   DstT=dtypes.int32)  # fmt: skip
    red = gu.emit(b, "FloorMod", axes, rank)
    other = gu.emit(b, "ListDiff", gu.emit(b, "Range", i32(0), rank, i32(1)), red, out_idx=dtypes.int32)
    perm = gu.emit(b, "ConcatV2", red, other, i32(0))
    sizes = [gu.emit(b, "Prod", gu.emit(b, "GatherV2", shape, t, i32(0)), i32(0), keep_dims=True) for t in (red, other)]
    permuted = gu.emit(b, "Transpose", x, perm)
    flat = gu.emit(b, "Reshape", permuted, gu.emit(b, "ConcatV2", *sizes, i32(0)))
    left = gu.emit(b, "Cumprod", flat, i32(0), exclusive=True)
    right = gu.emit(b, "Cumprod", flat, i32(0), exclusive=True, reverse=True)
    if b.spec(x).dtype.is_complex:
        left, right = gu.emit(b, "Conj", left), gu.emit(b, "Conj", right)
    others = gu.emit(b, "Reshape", gu.emit(b, "Mul", left, right), gu.emit(b, "Shape", permuted))
    unpermuted = gu.emit(b, "Transpose", others, gu.emit(b, "InvertPermutation", perm))
    return gu.emit(b, "Mul", _spread(b, node, dy), unpermuted)


# --- Cumsum / Cumprod -------------------------------------------------------------------------


def scan_axis(ctx, axis, rank: int) -> int:
    """A scan kernel's (Cumsum, CumulativeLogsumexp, ...) axis input as a non-negative int."""
    a = ctx.host(axis)
    if a.ndim != 0:
        raise ctx.fail(f"axis must be a scalar, got shape {_fmt(a.shape)}")
    try:
        (a,) = normalize_axes(a, rank)
    except ValueError as e:
        raise ctx.fail(str(e)) from None
    return a


def _register_scan(name, fn, identity, what):
    register_op(
        name,
        inputs=["x: T", "axis: Tidx"],
        outputs=["out: T"],
        attrs=["exclusive: bool = false", "reverse: bool = false", "T: {numeric}", "Tidx: {int32, int64} = int32"],
        shape=unchanged_shape,
        doc=f"The cumulative {what} along `axis`. exclusive leaves out each element itself (the "
        f"first result is {identity}); reverse accumulates from the end.",
    )

    @kernel(name, host_inputs=(1,))
    @bfloat16_native  # each partial sum (product) rounded to bfloat16, as Eigen's scan does
    def run(ctx, x, axis):
        a = scan_axis(ctx, axis, x.ndim)
        xp, reverse = ctx.xp, ctx.attrs["reverse"]
        if reverse:
            x = xp.flip(x, axis=a)
        out = getattr(xp, fn)(x, axis=a, dtype=x.dtype)
        if ctx.attrs["exclusive"] and x.shape[a] > 0:
            # Shift by one along the axis, the identity entering first.
            head = xp.full(x.shape[:a] + (1,) + x.shape[a + 1 :], identity, dtype=x.dtype)
            out = xp.concatenate([head, xp.take(out, xp.arange(x.shape[a] - 1), axis=a)], axis=a)
        return xp.asarray(xp.flip(out, axis=a) if reverse else out, dtype=x.dtype)


_register_scan("Cumsum", "cumsum", 0, "sum")
_register_scan("Cumprod", "cumprod", 1, "product")


@gradient("Cumsum")
def _cumsum_grad(b, node, dys):
    # Each input feeds every output after it: sum the gradients in the opposite direction.
    attrs = node.attrs
    return [
        gu.emit(b, "Cumsum", dys[0], node.data_inputs[1], exclusive=attrs["exclusive"], reverse=not attrs["reverse"]),
        None,
    ]


@gradient("Cumprod")
def _cumprod_grad(b, node, dys):
    # TF's formula: cumsum(out * dout) in the opposite direction, divided by x with DivNoNan, so
    # an element that is 0 gets gradient 0 (TF 2.21's value there, not the true derivative).
    # Complex inputs take the same formula, without conjugates (TF's, unlike its Prod gradient).
    x, axis = node.data_inputs
    attrs = node.attrs
    weighted = gu.emit(b, "Mul", node.name, dys[0])
    total = gu.emit(b, "Cumsum", weighted, axis, exclusive=attrs["exclusive"], reverse=not attrs["reverse"])
    return [gu.emit(b, "DivNoNan", total, x), None]


# --- ArgMax / ArgMin --------------------------------------------------------------------------


def _arg_shape(ic: InferenceContext) -> list[Shape]:
    shape, dim = ic.shape(0), ic.shape(1)
    if dim.rank is not None and dim.rank != 0:
        raise ic.fail(f"dimension must be a scalar, got shape {dim}")
    if shape.rank is None:
        return [Shape.unknown()]
    value = ic.value(1)
    if value is None:
        return [Shape.unknown_of_rank(max(shape.rank - 1, 0))]
    try:
        (axis,) = normalize_axes(value, shape.rank)
    except ValueError as e:
        raise ic.fail(str(e)) from None
    return [Shape(d for i, d in enumerate(shape.dims) if i != axis)]


# TF's ArgMax OpDef allows complex, but it registers kernels only for ordered types.
_ORDERED = dtypes.REAL | {dtypes.bool_}


def _register_arg(name, fn, what):
    register_op(
        name,
        inputs=["input: T", "dimension: Tidx"],
        outputs=["output: output_type"],
        attrs=[
            "T: {numeric, bool}",
            "Tidx: {int32, int64} = int32",
            "output_type: {int32, int64} = int64",
        ],
        shape=_arg_shape,
        doc=f"The index of the {what} value along `dimension` (the first one on ties; NaN never "
        "wins, and a slice of NaNs gives 0).",
        aliases={"dimension": "axis"},
    )

    @kernel(name, host_inputs=(1,), T=_ORDERED)
    def run(ctx, x, dimension):
        dim = ctx.host(dimension)
        if dim.ndim != 0:
            raise ctx.fail(f"dimension must be a scalar, got shape {_fmt(dim.shape)}")
        try:
            (axis,) = normalize_axes(dim, x.ndim)
        except ValueError as e:
            raise ctx.fail(str(e)) from None
        if x.shape[axis] == 0:
            raise ctx.fail(f"Reduction axis {axis} is empty in shape {_fmt(x.shape)}")
        if x.dtype.kind == "f":
            # TF's CPU kernel (Eigen's arg reducer) never picks a NaN: a row of NaNs gives 0.
            x = ctx.xp.where(ctx.xp.isnan(x), x.dtype.type(-np.inf if fn == "argmax" else np.inf), x)
        return ctx.xp.asarray(getattr(ctx.xp, fn)(x, axis=axis), dtype=ctx.attrs["output_type"].numpy)


_register_arg("ArgMax", "argmax", "largest")
_register_arg("ArgMin", "argmin", "smallest")
not_differentiable("ArgMax", "ArgMin")
