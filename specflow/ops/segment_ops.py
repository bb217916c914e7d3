"""Segment reductions and partitioning: SegmentSum/Mean/Max/Min/Prod, UnsortedSegmentMax/Min/Prod,
DynamicPartition, DynamicStitch, Bincount, DenseBincount. (UnsortedSegmentSum, which gather gradients emit, lives in ``slice_ops``.)

Segment ids are a prefix of data's shape (``[d0, ..., dk]`` of ``data[d0, ..., dk, ...]``); an
unsorted op drops the slices whose id is negative and fails on an id >= num_segments, naming it.
Empty segments hold the reduction's identity as TF defines it: 0 for sums, 1 for products, the
lowest finite value for Max and the largest for Min (not -inf/inf: TF's numeric_limits).
UnsortedSegmentMax/Min fold each row into that start value in row order, as TF's CPU kernel: a
segment of -inf alone holds the lowest finite value, and a NaN is kept only until a later row of
its segment replaces it (``cur = x < cur ? cur : x``).
"""

from __future__ import annotations

import numpy as np

from specflow.graph import dtypes
from specflow.graph.shapes import Shape
from specflow.ops import grad_util as gu
from specflow.ops.inference import InferenceContext
from specflow.ops.registry import gradient, kernel, not_differentiable, register_op
from specflow.ops.shape_args import scalar_arg, shape_of
from specflow.ops.slice_ops import _segment_sum_infer, drop_negatives, padded_shape, unsorted_segment_args

# --- SegmentSum (sorted ids) ------------------------------------------------------------------


def _sorted_segment_shape(fail, data: Shape, ids: Shape) -> Shape:
    if ids.rank not in (None, 1):
        raise fail(f"segment_ids must be a vector, got shape {ids}")
    if data.rank == 0:
        raise fail("data must be at least 1-D, got a scalar")
    if data.rank is None:
        return Shape.unknown()
    if ids.rank == 1 and not Shape(data.dims[:1]).is_compatible_with(ids):
        raise fail(f"segment_ids of shape {ids} must have one id per row of data {data}")
    return Shape([None] + list(data.dims[1:]))


def _top(ids) -> int | None:
    """max(ids) + 1 of constant ids (0 when empty): the rows of a sorted segment or stitch result."""
    if ids is None:
        return None
    return int(np.max(ids)) + 1 if np.size(ids) else 0


def _with_rows(s: Shape, rows: int | None) -> Shape:
    return s if s.rank is None or rows is None else Shape([rows] + list(s.dims[1:]))


register_op(
    "SegmentSum",
    inputs=["data: T", "segment_ids: Tindices"],
    outputs=["output: T"],
    attrs=["T: {numeric}", "Tindices: {int32, int64}"],
    shape=lambda ic: [_with_rows(_sorted_segment_shape(ic.fail, ic.shape(0), ic.shape(1)), _top(ic.value(1)))],
    doc="output[i] = the sum of the rows data[j] with segment_ids[j] == i; ids sorted, >= 0; "
    "the output has max(id) + 1 rows (zeros for ids that do not occur).",
)


def _sorted_rows(ctx, data, ids) -> int:
    """Checks sorted, non-negative ids against data; the output's row count (max id + 1)."""
    _sorted_segment_shape(ctx.fail, shape_of(data), shape_of(ids))
    host = ctx.host(ids)
    if host.size and host[0] < 0:
        raise ctx.fail(f"segment_ids[0] = {host[0]} is negative; segment ids must be >= 0")
    down = np.flatnonzero(host[1:] < host[:-1])
    if down.size:
        j = int(down[0]) + 1
        raise ctx.fail(f"segment ids are not increasing: segment_ids[{j}] = {host[j]} follows {host[j - 1]}")
    return int(host[-1]) + 1 if host.size else 0


@kernel("SegmentSum")
def _segment_sum(ctx, data, ids):
    xp = ctx.xp
    out = xp.zeros((_sorted_rows(ctx, data, ids),) + data.shape[1:], dtype=data.dtype)
    xp.add.at(out, ids, data)
    return out


@gradient("SegmentSum")
def _segment_sum_grad(b, node, dys):
    ids = node.data_inputs[1]
    return [gu.emit(b, "GatherV2", dys[0], ids, gu.const(b, 0, "int32")), None]


# --- SegmentMean / Max / Min / Prod (sorted ids) ----------------------------------------------

# An empty segment (an id that does not occur) holds 0, or 1 for Prod, as TF's sorted ops give.
_SORTED = {"SegmentMean": "mean", "SegmentMax": "max", "SegmentMin": "min", "SegmentProd": "prod"}

for _name, _kind in _SORTED.items():
    register_op(
        _name,
        inputs=["data: T", "segment_ids: Tindices"],
        outputs=["output: T"],
        attrs=["T: {real}" if _kind in ("max", "min") else "T: {numeric}", "Tindices: {int32, int64}"],
        shape=lambda ic: [_with_rows(_sorted_segment_shape(ic.fail, ic.shape(0), ic.shape(1)), _top(ic.value(1)))],
        doc=f"output[i] = the {_kind} of the rows data[j] with segment_ids[j] == i; ids sorted, >= 0; the "
        f"output has max(id) + 1 rows ({1 if _kind == 'prod' else 0} for ids that do not occur).",
    )


def _sorted_kernel(kind: str):
    def fn(ctx, data, ids):
        xp = ctx.xp
        if kind == "mean":
            total = _segment_sum(ctx, data, ids)
            count = xp.bincount(ids, minlength=total.shape[0]).reshape((-1,) + (1,) * (data.ndim - 1))
            return (total / xp.maximum(count, 1).astype(total.dtype)).astype(data.dtype, copy=False)
        shape = (_sorted_rows(ctx, data, ids),) + data.shape[1:]
        out = xp.full(shape, 1 if kind == "prod" else 0, dtype=data.dtype)
        if kind != "prod":  # occupied segments start from the identity, empty ones stay 0
            out[xp.unique(ids)] = _identity(kind, data.dtype)
        combine = {"max": xp.maximum, "min": xp.minimum, "prod": xp.multiply}[kind]
        return segment_reduce(xp, combine, data, ids, out)

    return fn


def _sorted_count(b, node) -> str:
    """The output's row count, for the unsorted ops the gradients share."""
    return gu.emit(b, "StridedSlice", gu.shape_of(b, node.name), gu.const(b, [0], "int32"), gu.const(b, [1], "int32"),
                   gu.const(b, [1], "int32"), shrink_axis_mask=1)  # fmt: skip


@gradient("SegmentMean")
def _segment_mean_grad(b, node, dys):
    # Each row gets its segment's gradient divided by the segment's size.
    data, ids = node.data_inputs
    ones = gu.emit(b, "OnesLike", data)
    count = gu.emit(b, "SegmentSum", ones, ids)
    return [gu.emit(b, "GatherV2", gu.emit(b, "RealDiv", dys[0], count), ids, gu.const(b, 0, "int32")), None]


@gradient("SegmentMax")
def _segment_max_grad(b, node, dys):
    data, ids = node.data_inputs
    return [_min_max_grads(b, node.name, data, ids, _sorted_count(b, node), dys[0]), None]


gradient("SegmentMin")(_segment_max_grad)


@gradient("SegmentProd")
def _segment_prod_grad(b, node, dys):
    data, ids = node.data_inputs
    return [_prod_grads(b, node.name, data, ids, _sorted_count(b, node), dys[0]), None]


# --- UnsortedSegmentMax / Min / Prod ----------------------------------------------------------


def _identity(kind: str, dtype) -> object:
    if kind == "prod":
        return 1
    if dtype is dtypes.bfloat16:  # bfloat16's own limits (the kernel sees float32, whose are inf there)
        import ml_dtypes

        info = ml_dtypes.finfo(dtypes.bfloat16.numpy)
    else:
        info = np.finfo(dtype) if np.dtype(dtype).kind == "f" else np.iinfo(dtype)
    return info.min if kind == "max" else info.max


_UNSORTED = {"UnsortedSegmentMax": "max", "UnsortedSegmentMin": "min", "UnsortedSegmentProd": "prod"}

for _name, _kind in _UNSORTED.items():
    register_op(
        _name,
        inputs=["data: T", "segment_ids: Tindices", "num_segments: Tnumsegments"],
        outputs=["output: T"],
        attrs=[
            "T: {numeric}" if _kind == "prod" else "T: {real}",
            "Tindices: {int16, int32, int64}",
            "Tnumsegments: {int32, int64} = int32",
        ],
        shape=_segment_sum_infer,
        doc=f"output[i] = the {_kind} of the slices data[j...] with segment_ids[j...] == i "
        f"(an empty segment holds {'1' if _kind == 'prod' else 'the lowest' if _kind == 'max' else 'the largest'}"
        f" value); a negative id drops its slice, one >= num_segments is an error.",
    )


def _unsorted_kernel(kind: str):
    def fn(ctx, data, ids, num_segments):
        xp = ctx.xp
        out_shape, rows, flat, keep = unsorted_segment_args(ctx, data, ids, num_segments)
        t = ctx.attrs["T"]
        out = xp.full(out_shape.dims, _identity(kind, t if t is dtypes.bfloat16 else data.dtype), dtype=data.dtype)
        rows, flat = rows[keep], flat[keep]
        if kind != "prod" and data.dtype.kind == "f" and bool(xp.isnan(rows).any()):
            return _fold_in_order(ctx, kind, rows, flat, out)
        combine = {"max": xp.maximum, "min": xp.minimum, "prod": xp.multiply}[kind]
        return segment_reduce(xp, combine, rows, flat, out, into_out=True)

    return fn


def _fold_in_order(ctx, kind: str, rows, ids, out):
    """TF's CPU fold of Max/Min, row by row on the host: ``cur = x < cur ? cur : x`` (Max), so a
    NaN row wins, and a later row of its segment replaces it (numpy's maximum would keep it)."""
    keep_old = np.less if kind == "max" else np.greater
    rows, ids, acc = ctx.host(rows), ctx.host(ids), np.array(ctx.host(out))
    for x, i in zip(rows, ids):
        acc[i] = np.where(keep_old(x, acc[i]), acc[i], x)
    return ctx.xp.asarray(acc)


def segment_reduce(xp, combine, rows, ids, out, into_out: bool = False):
    """``out[s] = combine``-reduction of the rows with id s (ids >= 0), leaving other rows of out;
    with ``into_out``, combined with out's row s too (the unsorted ops' start value).

    A segmented scan (Hillis-Steele: log2(n) vectorized steps) over the rows sorted by id instead
    of ``ufunc.at``, which cupy has only for a few ufuncs (not multiply)."""
    n = ids.shape[0]
    if n == 0:
        return out
    order = xp.argsort(ids, kind="stable")
    seg, vals = ids[order], rows[order]
    tail = (1,) * (vals.ndim - 1)
    shift = 1
    while shift < n:  # vals[i] becomes the reduction of its segment's rows up to i
        same = (seg[shift:] == seg[:-shift]).reshape((n - shift,) + tail)
        vals = xp.concatenate([vals[:shift], xp.where(same, combine(vals[shift:], vals[:-shift]), vals[shift:])])
        shift *= 2
    last = xp.concatenate([seg[1:] != seg[:-1], xp.ones(1, dtype=bool)])  # each segment's final row
    out[seg[last]] = combine(out[seg[last]], vals[last]) if into_out else vals[last]
    return out


for _name, _kind in _UNSORTED.items():
    kernel(_name, host_inputs=(2,))(_unsorted_kernel(_kind))
for _name, _kind in _SORTED.items():
    kernel(_name)(_sorted_kernel(_kind))


def _min_max_grads(b, out: str, data: str, ids: str, n: str, dy: str) -> str:
    # TF's rule: the gradient goes to the elements equal to their segment's result, split evenly
    # between ties.
    gathered_out, _, keep = drop_negatives(b, out, ids, data)
    selected = gu.emit(b, "LogicalAnd", gu.emit(b, "Equal", data, gathered_out), keep)
    count = gu.emit(b, "UnsortedSegmentSum", gu.emit(b, "Cast", selected, DstT=b.spec(data).dtype), ids, n)
    weighted = gu.emit(b, "RealDiv", dy, count)
    spread, _, _ = drop_negatives(b, weighted, ids, data)
    return gu.emit(b, "SelectV2", selected, spread, gu.zeros_like(b, spread))


def _min_max_grad(b, node, dys):
    data, ids, n = node.data_inputs
    return [_min_max_grads(b, node.name, data, ids, n, dys[0]), None, None]


gradient("UnsortedSegmentMax")(_min_max_grad)
gradient("UnsortedSegmentMin")(_min_max_grad)


@gradient("UnsortedSegmentProd")
def _unsorted_segment_prod_grad(b, node, dys):
    data, ids, n = node.data_inputs
    return [_prod_grads(b, node.name, data, ids, n, dys[0]), None, None]


def _prod_grads(b, out: str, data: str, ids: str, n: str, dy: str) -> str:
    # TF's zero-safe rule: an element's partial derivative is the product of the others in its
    # segment: output / x where x != 0, the product of the nonzero others where x is the only
    # zero, and 0 where the segment holds two zeros or more.
    zero = gu.zeros_like(b, data)
    is_zero = gu.emit(b, "Equal", data, zero)
    zeros = gu.emit(b, "UnsortedSegmentSum", gu.emit(b, "Cast", is_zero, DstT=dtypes.int32), ids, n)
    many = gu.emit(b, "Greater", zeros, gu.const(b, 1, "int32"))
    many = gu.emit(b, "Reshape", many, padded_shape(b, many, dy))
    grad = gu.emit(b, "SelectV2", many, gu.zeros_like(b, dy), dy)
    nonzero_data = gu.emit(b, "SelectV2", is_zero, gu.emit(b, "OnesLike", data), data)
    nonzero_prod = gu.emit(b, "UnsortedSegmentProd", nonzero_data, ids, n)
    clipped = gu.emit(b, "Maximum", ids, gu.zeros_like(b, ids))
    axis0 = gu.const(b, 0, "int32")
    by_el = gu.emit(b, "RealDiv", gu.emit(b, "GatherV2", out, clipped, axis0), data)
    partial = gu.emit(b, "SelectV2", is_zero, gu.emit(b, "GatherV2", nonzero_prod, clipped, axis0), by_el)
    spread, _, _ = drop_negatives(b, grad, ids, data)
    return gu.emit(b, "Mul", spread, partial)


# --- DynamicPartition -------------------------------------------------------------------------


def _partition_shape(fail, data: Shape, parts: Shape) -> Shape:
    if data.rank is None or parts.rank is None:
        return Shape.unknown()
    if parts.rank > data.rank or not Shape(data.dims[: parts.rank]).is_compatible_with(parts):
        raise fail(f"partitions of shape {parts} must be a prefix of data's shape {data}")
    return Shape([None] + list(data.dims[parts.rank :]))


def _partition_infer(ic: InferenceContext) -> list[Shape]:
    s, n, parts = _partition_shape(ic.fail, ic.shape(0), ic.shape(1)), ic.attr("num_partitions"), ic.value(1)
    if parts is None:
        return [s] * n
    return [_with_rows(s, int(np.count_nonzero(parts == i))) for i in range(n)]


register_op(
    "DynamicPartition",
    inputs=["data: T", "partitions: int32"],
    outputs=["outputs: num_partitions * T"],
    attrs=["num_partitions: int >= 1", "T: type"],
    shape=_partition_infer,
    doc="outputs[i] = the slices data[j...] with partitions[j...] == i, in order.",
)


@kernel("DynamicPartition")
def _dynamic_partition(ctx, data, parts):
    xp = ctx.xp
    _partition_shape(ctx.fail, shape_of(data), shape_of(parts))
    n = ctx.attrs["num_partitions"]
    bad = (parts < 0) | (parts >= n)
    if bad.size and bool(bad.any()):
        pos = tuple(int(p) for p in np.argwhere(ctx.host(bad))[0])
        where = f"partitions[{', '.join(map(str, pos))}]" if pos else "partitions"
        raise ctx.fail(f"{where} = {ctx.host(parts)[pos]} is not in [0, {n})")
    rows = data.reshape((parts.size,) + data.shape[parts.ndim :])
    flat = parts.reshape(-1)
    return tuple(xp.ascontiguousarray(rows[flat == i]) for i in range(n))


@gradient("DynamicPartition")
def _dynamic_partition_grad(b, node, dys):
    # Partition the positions the same way, then stitch the gradients back to them.
    data, parts = node.data_inputs
    n = node.attrs["num_partitions"]
    size = gu.emit(b, "Size", parts)
    positions = gu.emit(b, "Reshape", gu.emit(b, "Range", gu.const(b, 0, "int32"), size, gu.const(b, 1, "int32")),
                        gu.shape_of(b, parts))  # fmt: skip
    split = gu.outputs(b, "DynamicPartition", n, positions, parts, num_partitions=n)
    stitched = gu.emit(b, "DynamicStitch", *split, *dys)
    return [gu.reshape_to(b, stitched, data), None]


# --- DynamicStitch ----------------------------------------------------------------------------


def _stitch_shape(fail, indices: list[Shape], data: list[Shape]) -> Shape:
    inner = None
    for m, (i, d) in enumerate(zip(indices, data)):
        if i.rank is None or d.rank is None:
            continue
        if i.rank > d.rank or not Shape(d.dims[: i.rank]).is_compatible_with(i):
            raise fail(f"data[{m}] of shape {d} must start with indices[{m}]'s shape {i}")
        rest = Shape(d.dims[i.rank :])
        if inner is not None and not inner.is_compatible_with(rest):
            raise fail(f"data[{m}] has slices of shape {rest}, other data have {inner}")
        inner = rest if inner is None else inner.merge_with(rest)
    return Shape.unknown() if inner is None else Shape([None] + list(inner.dims))


def _stitch_infer(ic: InferenceContext) -> list[Shape]:
    s = _stitch_shape(ic.fail, ic.list_shapes(0), ic.list_shapes(1))
    lo, hi = ic.input_ranges[0]
    values = [ic.value(i) for i in range(lo, hi)]
    if any(v is None for v in values):
        return [s]
    return [_with_rows(s, max(_top(v) for v in values))]


register_op(
    "DynamicStitch",
    inputs=["indices: N * int32", "data: N * T"],
    outputs=["merged: T"],
    attrs=["N: int >= 1", "T: type"],
    shape=_stitch_infer,
    doc="merged[indices[m][i...]] = data[m][i...]; later writes win; the output has max(index) + 1 "
    "rows (zeros at indices that never occur).",
)


@kernel("DynamicStitch")
def _dynamic_stitch(ctx, *args):
    xp = ctx.xp
    n = len(args) // 2
    indices, data = args[:n], args[n:]
    _stitch_shape(ctx.fail, [shape_of(i) for i in indices], [shape_of(d) for d in data])
    inner = next((d.shape[i.ndim :] for i, d in zip(indices, data)), ())
    top = -1
    for m, idx in enumerate(indices):
        if idx.size:
            host = ctx.host(idx)
            if int(host.min()) < 0:
                pos = tuple(int(p) for p in np.argwhere(host < 0)[0])
                raise ctx.fail(f"indices[{m}][{', '.join(map(str, pos))}] = {host[pos]} is negative")
            top = max(top, int(host.max()))
    out = xp.zeros((top + 1,) + tuple(inner), dtype=data[0].dtype if data else np.float32)
    for idx, d in zip(indices, data):
        out[idx.reshape(-1)] = d.reshape((idx.size,) + tuple(inner))
    return out


register_op(
    "ParallelDynamicStitch",
    inputs=["indices: N * int32", "data: N * T"],
    outputs=["merged: T"],
    attrs=["N: int >= 1", "T: type"],
    shape=_stitch_infer,
    doc="DynamicStitch (what tf.dynamic_stitch writes inside a tf.function): merged[indices[m][i...]] "
    "= data[m][i...]; where indices repeat, the later write wins here (TF leaves it unspecified).",
)
kernel("ParallelDynamicStitch")(_dynamic_stitch)


@gradient("DynamicStitch")
def _dynamic_stitch_grad(b, node, dys):
    # As TF: each data slice gets the gradient at its index (also where a later write won).
    n = node.attrs["N"]
    indices = node.data_inputs[:n]
    axis0 = gu.const(b, 0, "int32")
    return [None] * n + [gu.emit(b, "GatherV2", dys[0], i, axis0) for i in indices]


gradient("ParallelDynamicStitch")(_dynamic_stitch_grad)


# --- Bincount ---------------------------------------------------------------------------------


def _bincount_infer(ic: InferenceContext) -> list[Shape]:
    size = scalar_arg(ic.fail, ic.value(1), "size")
    if size is not None and size < 0:
        raise ic.fail(f"size ({size}) must be non-negative")
    return [Shape([size])]


register_op(
    "Bincount",
    inputs=["arr: int32", "size: int32", "weights: T"],
    outputs=["bins: T"],
    attrs=["T: {int32, int64, float32, float64}"],
    shape=_bincount_infer,
    doc="bins[i] = the number of entries of `arr` equal to i (or the sum of their `weights`, when "
    "weights is not empty), for i < size; values >= size are ignored, negative ones an error.",
)


def _bincount_checks(ctx, arr, size, weights) -> int:
    """Bincount's and DenseBincount's checks (TF's messages); the bin count."""
    n = scalar_arg(ctx.fail, ctx.host(size), "size")
    if n < 0:
        raise ctx.fail(f"size ({n}) must be non-negative")
    if weights.size and weights.shape != arr.shape:
        raise ctx.fail(f"weights of shape {shape_of(weights)} must be empty or have arr's shape {shape_of(arr)}")
    if arr.size and int(arr.min()) < 0:
        raise ctx.fail("Input arr must be non-negative!")
    return n


@kernel("Bincount", host_inputs=(1,))
def _bincount(ctx, arr, size, weights):
    xp = ctx.xp
    n = _bincount_checks(ctx, arr, size, weights)
    flat = arr.reshape(-1)
    keep = flat < n
    out = xp.zeros(n, dtype=ctx.attrs["T"].numpy)
    vals = weights.reshape(-1)[keep] if weights.size else xp.ones(int(keep.sum()), dtype=out.dtype)
    xp.add.at(out, flat[keep], vals)
    return out


not_differentiable("Bincount")


def _dense_bincount_infer(ic: InferenceContext) -> list[Shape]:
    size = scalar_arg(ic.fail, ic.value(1), "size")
    if size is not None and size < 0:
        raise ic.fail(f"size ({size}) must be non-negative")
    x = ic.shape(0)
    if x.rank is not None and x.rank not in (1, 2):
        raise ic.fail(f"input must be a vector or a matrix (a batch of vectors), got shape {x}")
    return [Shape([size]) if x.rank == 1 else Shape([x[0], size]) if x.rank == 2 else Shape.unknown()]


register_op(
    "DenseBincount",
    inputs=["input: Tidx", "size: Tidx", "weights: T"],
    outputs=["output: T"],
    attrs=["Tidx: {int32, int64}", "T: {int32, int64, float32, float64}", "binary_output: bool = false"],
    shape=_dense_bincount_infer,
    doc="Bincount of a vector, or of each row of a matrix ([batch, size] out): counts (or summed "
    "weights, when weights is not empty) of the values < size; binary_output gives 1 where any "
    "value fell. Negative values are an error.",
)


@kernel("DenseBincount", host_inputs=(1,))
def _dense_bincount(ctx, arr, size, weights):
    xp = ctx.xp
    if arr.ndim not in (1, 2):
        raise ctx.fail(f"input must be a vector or a matrix (a batch of vectors), got shape {shape_of(arr)}")
    n = _bincount_checks(ctx, arr, size, weights)
    rows = arr if arr.ndim == 2 else arr.reshape(1, -1)  # (a [b, 0] matrix: reshape(-1, 0) is ambiguous)
    out = xp.zeros((rows.shape[0], n), dtype=ctx.attrs["T"].numpy)
    keep = rows < n
    which = xp.nonzero(keep)
    if ctx.attrs["binary_output"]:
        out[which[0], rows[keep]] = 1
    else:
        vals = weights.reshape(rows.shape)[keep] if weights.size else xp.ones(int(keep.sum()), dtype=out.dtype)
        xp.add.at(out, (which[0], rows[keep]), vals)
    return out if arr.ndim == 2 else out[0]


not_differentiable("DenseBincount")


register_op(
    "HistogramFixedWidth",
    inputs=["values: T", "value_range: T", "nbins: int32"],
    outputs=["out: dtype"],
    attrs=["T: {int32, int64, float32, float64}", "dtype: {int32, int64} = int32"],
    shape=lambda ic: [Shape([scalar_arg(ic.fail, ic.value(2), "nbins")])],
    doc="Counts of values in nbins equal bins over value_range [lo, hi); values below lo go to the "
    "first bin, values at or above hi to the last.",
)


@kernel("HistogramFixedWidth", host_inputs=(1, 2))
def _histogram_fixed_width(ctx, values, value_range, nbins):
    xp = ctx.xp
    n = scalar_arg(ctx.fail, ctx.host(nbins), "nbins")
    lo_hi = ctx.host(value_range)
    if n <= 0:
        raise ctx.fail(f"nbins should be a positive number, but got '{n}'")
    if lo_hi.shape != (2,) or not lo_hi[0] < lo_hi[1]:
        raise ctx.fail(f"value_range should satisfy value_range[0] < value_range[1], but got {lo_hi.tolist()}")
    lo, hi = float(lo_hi[0]), float(lo_hi[1])
    idx = xp.floor((values.reshape(-1).astype(np.float64) - lo) / (hi - lo) * n)
    idx = xp.clip(idx, 0, n - 1).astype(np.int64)
    return xp.bincount(idx, minlength=n).astype(ctx.attrs["dtype"].numpy)


not_differentiable("HistogramFixedWidth")
