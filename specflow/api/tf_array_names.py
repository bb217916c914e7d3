"""TensorFlow's array and indexing names at the top level (``sf.gather_nd``, ``sf.boolean_mask``,
``sf.unique``, ``sf.sort``, ``sf.repeat``, ``sf.meshgrid``, ``sf.linspace``, the tensor_scatter_nd
family, space/batch reshuffles), with TensorFlow's signatures, on the registered ops. Where
TensorFlow has no single op (boolean_mask, repeat, sort, meshgrid, linspace, clip_by_norm,
batched gather_nd) they are composed as TensorFlow composes them, so values and gradients agree."""

from __future__ import annotations

import builtins

import numpy as np

from specflow.api.op_functions import call
from specflow.api.tensor import Tensor
from specflow.api.tf_math_names import _real_dtype
from specflow.api.tf_names import (
    _t,
    cast,
    concat,
    expand_dims,
    gather,
    identity,
    ones,
    reshape,
    shape,
    squeeze,
    transpose,
    where,
)
from specflow.graph import dtypes
from specflow.graph.dtypes import as_dtype
from specflow.graph.shapes import Shape, as_shape, broadcast_shapes

# The names this module adds at the top level (api/__init__.py's TF_ARRAY_NAMES; a test keeps
# the two equal).
NAMES = sorted("""
    argsort batch_to_space bitcast boolean_mask broadcast_dynamic_shape broadcast_static_shape clip_by_norm
    complex dynamic_partition dynamic_stitch gather_nd histogram_fixed_width identity_n linspace meshgrid
    parallel_stack repeat reverse_sequence roll saturate_cast scatter_nd searchsorted shape_n slice sort
    space_to_batch space_to_batch_nd strided_slice tensor_scatter_nd_add tensor_scatter_nd_max
    tensor_scatter_nd_min tensor_scatter_nd_sub tensor_scatter_nd_update unique unique_with_counts unravel_index
""".split())


def _i32(v):
    return v if isinstance(v, Tensor) else np.asarray(v, np.int32)


def _static_dims(x: Tensor, what: str) -> list[int]:
    dims = x.shape.as_list()
    if dims is None or None in dims:
        raise ValueError(f"{what}: needs a known shape, got {x.shape}")
    return dims


# --- gather and scatter ---------------------------------------------------------------------------

def gather_nd(params, indices, batch_dims: int = 0, name: str | None = None):
    """GatherNd; with batch_dims, the batch coordinates prepended to indices (batch shape known)."""
    params, indices = _t(params), _t(indices)
    if batch_dims == 0:
        return call("GatherNd", params, indices, name=name)
    batch = _static_dims(params, "gather_nd")[:batch_dims]
    grid = np.indices(batch).reshape(batch_dims, -1).T.astype(indices.dtype.numpy)  # [B, batch_dims]
    inner = indices.shape.rank - batch_dims - 1
    idx_dims = _static_dims(indices, "gather_nd")
    grid = np.broadcast_to(grid.reshape([grid.shape[0]] + [1] * inner + [batch_dims]),
                           [grid.shape[0], *idx_dims[batch_dims:-1], batch_dims])
    flat = reshape(indices, [int(np.prod(batch)), *idx_dims[batch_dims:]])
    out = call("GatherNd", params, concat([np.ascontiguousarray(grid), flat], -1))
    return reshape(out, concat([np.asarray(batch, np.int32), shape(out)[1:]], 0), name=name)


def scatter_nd(indices, updates, shape, name: str | None = None):  # noqa: A002 (TensorFlow's name)
    indices = _t(indices)
    return call("ScatterNd", indices, updates, shape if isinstance(shape, Tensor) else
                np.asarray(shape, indices.dtype.numpy), name=name)


def _tensor_scatter(op: str, pyname: str):
    def fn(tensor, indices, updates, name: str | None = None):
        return call(op, _t(tensor), indices, updates, name=name)

    fn.__name__ = pyname
    fn.__doc__ = f"TensorFlow's ``tf.{pyname}``: the {op} op."
    return fn


tensor_scatter_nd_update = _tensor_scatter("TensorScatterUpdate", "tensor_scatter_nd_update")
tensor_scatter_nd_add = _tensor_scatter("TensorScatterAdd", "tensor_scatter_nd_add")
tensor_scatter_nd_sub = _tensor_scatter("TensorScatterSub", "tensor_scatter_nd_sub")
tensor_scatter_nd_min = _tensor_scatter("TensorScatterMin", "tensor_scatter_nd_min")
tensor_scatter_nd_max = _tensor_scatter("TensorScatterMax", "tensor_scatter_nd_max")


# --- slicing and masking --------------------------------------------------------------------------

def slice(input_, begin, size, name: str | None = None):  # noqa: A001
    return call("Slice", _t(input_), _i32(begin), _i32(size), name=name)


def strided_slice(input_, begin, end, strides=None, begin_mask: int = 0, end_mask: int = 0,
                  ellipsis_mask: int = 0, new_axis_mask: int = 0, shrink_axis_mask: int = 0, var=None,
                  name: str | None = None):
    begin = _i32(begin)
    strides = np.ones(np.shape(begin), np.int32) if strides is None and not isinstance(begin, Tensor) else (
        call("OnesLike", begin) if strides is None else _i32(strides))
    return call("StridedSlice", _t(input_), begin, _i32(end), strides, begin_mask=begin_mask, end_mask=end_mask,
                ellipsis_mask=ellipsis_mask, new_axis_mask=new_axis_mask, shrink_axis_mask=shrink_axis_mask,
                name=name)


def boolean_mask(tensor, mask, axis=None, name: str | None = None):
    """The masked dims flattened into one and gathered at Where(mask), as TensorFlow does."""
    tensor, mask = _t(tensor), _t(mask)
    k = mask.shape.rank
    if k is None or k == 0:
        raise ValueError(f"boolean_mask: mask must have a known rank of at least 1, got {mask.shape}")
    axis = 0 if axis is None else int(axis)
    if axis < 0 and tensor.shape.rank is not None:
        axis += tensor.shape.rank
    covered = tensor.shape[axis:axis + k] if tensor.shape.rank is not None else None
    if covered is not None and (len(covered) != k or any(
            a is not None and b is not None and a != b for a, b in zip(covered, mask.shape))):
        raise ValueError(f"boolean_mask: mask's shape {mask.shape} does not match tensor's dims {axis}..{axis + k - 1}"
                         f" of {tensor.shape}")
    dims = shape(tensor)
    lead = call("Prod", dims[axis:axis + k], np.int32(0), keep_dims=True)
    tensor = reshape(tensor, concat([dims[:axis], lead, dims[axis + k:]], 0))
    indices = squeeze(where(reshape(mask, [-1])), [1])
    return gather(tensor, indices, axis=axis, name=name)


def unique(x, out_idx=dtypes.int32, name: str | None = None):
    return call("Unique", _t(x), out_idx=as_dtype(out_idx), name=name)


def unique_with_counts(x, out_idx=dtypes.int32, name: str | None = None):
    return call("UniqueWithCounts", _t(x), out_idx=as_dtype(out_idx), name=name)


def repeat(input, repeats, axis=None, name: str | None = None):  # noqa: A002
    """TensorFlow's repeat_with_axis: one new dim tiled, a sequence mask dropping extra copies."""
    x = _t(input)
    if axis is None:
        x, axis = reshape(x, [-1]), 0
    rank = x.shape.rank
    axis = axis % rank
    repeats = _t(repeats, dtypes.int32) if not isinstance(repeats, Tensor) else repeats
    dims = shape(x)
    expanded = expand_dims(x, axis + 1)
    if repeats.shape.num_elements() == 1:
        r = reshape(repeats, [])
        mult = call("Pack", [np.int32(1)] * (axis + 1) + [r] + [np.int32(1)] * (rank - axis - 1), axis=0)
        return reshape(call("Tile", expanded, mult),
                       concat([dims[:axis], reshape(r * dims[axis], [1]), dims[axis + 1:]], 0), name=name)
    if repeats.shape.rank not in (None, 0, 1):
        raise ValueError(f"repeat: repeats must have rank 0 or 1, got {repeats.shape}")
    repeats = original = call("BroadcastTo", repeats, reshape(dims[axis], [1]))
    if axis > 0:
        repeats = call("BroadcastTo", repeats, dims[:axis + 1])
    max_repeat = call("Maximum", np.int32(0), call("Max", repeats, np.arange(axis + 1, dtype=np.int32)))
    mask = call("Less", call("Range", np.int32(0), max_repeat, np.int32(1)), expand_dims(repeats, -1))
    mult = call("Pack", [np.int32(1)] * (axis + 1) + [max_repeat] + [np.int32(1)] * (rank - axis - 1), axis=0)
    masked = boolean_mask(call("Tile", expanded, mult), mask)
    if axis == 0:
        return identity(masked, name=name) if name else masked
    total = reshape(call("Sum", original, np.int32(0)), [1])
    return reshape(masked, concat([dims[:axis], total, dims[axis + 1:]], 0), name=name)


def roll(input, shift, axis, name: str | None = None):  # noqa: A002
    return call("Roll", _t(input), _i32(shift), _i32(axis), name=name)


def reverse_sequence(input, seq_lengths, seq_axis=None, batch_axis=None, name: str | None = None):  # noqa: A002
    if seq_axis is None:
        raise ValueError("reverse_sequence: seq_axis is required")
    lengths = seq_lengths if isinstance(seq_lengths, Tensor) else np.asarray(seq_lengths, np.int64)
    return call("ReverseSequence", _t(input), lengths, seq_dim=int(seq_axis),
                batch_dim=0 if batch_axis is None else int(batch_axis), name=name)


# --- sorting and searching ------------------------------------------------------------------------

def _sort(values, axis, direction: str, want_indices: bool, name):
    x = _t(values)
    if direction not in ("ASCENDING", "DESCENDING"):
        raise ValueError(f"direction must be 'ASCENDING' or 'DESCENDING', got {direction!r}")
    rank = x.shape.rank
    axis = axis % rank
    if direction == "ASCENDING":  # TensorFlow's flip: max - x (unsigned), ~x (signed ints), -x (floats)
        if x.dtype.numpy.kind == "u":
            offset = np.asarray(np.iinfo(x.dtype.numpy).max, x.dtype.numpy)
            flip = lambda v: call("Sub", offset, v)  # noqa: E731
        elif x.dtype.is_integer:
            flip = lambda v: call("Invert", v)  # noqa: E731
        else:
            flip = lambda v: call("Neg", v)  # noqa: E731
        x = flip(x)
    perm = None
    if axis != rank - 1:
        perm = list(builtins.range(rank))
        perm[axis], perm[-1] = rank - 1, axis
        x = transpose(x, perm)
    vals, idx = call("TopKV2", x, shape(x)[-1])
    out = idx if want_indices else vals
    if perm is not None:
        out = transpose(out, perm)
    if direction == "ASCENDING" and not want_indices:
        out = flip(out)
    return identity(out, name=name) if name else out


def sort(values, axis: int = -1, direction: str = "ASCENDING", name: str | None = None):
    """TopKV2 over ``axis`` with k its size (ascending: of the flipped values, as TensorFlow)."""
    return _sort(values, axis, direction, False, name)


def argsort(values, axis: int = -1, direction: str = "ASCENDING", stable: bool = False,
            name: str | None = None):
    return _sort(values, axis, direction, True, name)


def searchsorted(sorted_sequence, values, side: str = "left", out_type=dtypes.int32, name: str | None = None):
    """LowerBound (left) or UpperBound (right) over the innermost dimension, as TensorFlow."""
    seq, vals = _t(sorted_sequence), _t(values)
    op = {"left": "LowerBound", "right": "UpperBound"}.get(side)
    if op is None:
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    seq2 = reshape(seq, call("Pack", [np.int32(-1), shape(seq)[-1]], axis=0))
    vals2 = reshape(vals, call("Pack", [np.int32(-1), shape(vals)[-1]], axis=0))
    return reshape(call(op, seq2, vals2, out_type=as_dtype(out_type)), shape(vals), name=name)


# --- building tensors -----------------------------------------------------------------------------

def meshgrid(*args, **kwargs):
    """Each input reshaped onto its axis times ones of the full shape ('xy' swaps the first two)."""
    indexing = kwargs.pop("indexing", "xy")
    kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"meshgrid: unexpected keyword arguments {sorted(kwargs)}")
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    args = [_t(a) for a in args]
    n = len(args)
    outs = [reshape(call("Pack", [a], axis=0), [1] * i + [-1] + [1] * (n - i - 1)) for i, a in enumerate(args)]
    sizes = [call("Size", a) for a in args]
    if indexing == "xy" and n > 1:
        outs[0] = reshape(outs[0], [1, -1] + [1] * (n - 2))
        outs[1] = reshape(outs[1], [-1, 1] + [1] * (n - 2))
        sizes[0], sizes[1] = sizes[1], sizes[0]
    mult = ones(sizes, args[0].dtype)
    return [o * mult for o in outs]


def linspace(start, stop, num, name: str | None = None, axis: int = 0):
    """TensorFlow's linspace_nd: start/stop may broadcast; both endpoints exact."""
    start = _t(start)
    if start.dtype.is_integer:  # integer endpoints divide as float64 (TensorFlow's truediv)
        start = cast(start, dtypes.float64)
    stop = _t(stop, start.dtype) if not isinstance(stop, Tensor) else stop
    num = int(num)
    if num < 0:
        raise ValueError(f"linspace: num must be >= 0, got {num}")
    bshape = call("BroadcastArgs", shape(start), shape(stop))
    lo = expand_dims(call("BroadcastTo", start, bshape), axis)
    hi = expand_dims(call("BroadcastTo", stop, bshape), axis)
    rank = lo.shape.rank
    axis = axis % rank
    delta = (hi - lo) / cast(np.float64(max(num - 1, 1)), lo.dtype)
    steps = np.arange(1, max(num - 1, 1), dtype=lo.dtype.numpy).reshape(
        [1] * axis + [-1] + [1] * (rank - axis - 1))
    out = concat([lo, lo + delta * steps, hi], axis)
    size = call("SelectV2", np.arange(rank) == axis, np.int32(num), shape(lo))
    return call("Slice", out, np.zeros(rank, np.int32), size, name=name)


def identity_n(input, name: str | None = None):  # noqa: A002
    return call("IdentityN", [_t(v) for v in input], name=name)


def shape_n(input, out_type=dtypes.int32, name: str | None = None):  # noqa: A002
    return call("ShapeN", [_t(v) for v in input], out_type=as_dtype(out_type), name=name)


def parallel_stack(values, name: str = "parallel_stack"):
    return call("Pack", [_t(v) for v in values], axis=0)


def dynamic_partition(data, partitions, num_partitions, name: str | None = None):
    return call("DynamicPartition", _t(data), partitions, num_partitions=int(num_partitions), name=name)


def dynamic_stitch(indices, data, name: str | None = None):
    return call("DynamicStitch", list(indices), list(data), name=name)


def unravel_index(indices, dims, name: str | None = None):
    indices = _t(indices)
    return call("UnravelIndex", indices, dims if isinstance(dims, Tensor) else np.asarray(dims, indices.dtype.numpy),
                name=name)


def histogram_fixed_width(values, value_range, nbins=100, dtype=dtypes.int32, name: str | None = None):
    values = _t(values)
    rng = value_range if isinstance(value_range, Tensor) else np.asarray(value_range, values.dtype.numpy)
    return call("HistogramFixedWidth", values, rng, _i32(nbins), dtype=as_dtype(dtype), name=name)


def clip_by_norm(t, clip_norm, axes=None, name: str | None = None):
    """x * clip_norm / max(norm, clip_norm), a double where keeping a zero norm's gradient 0."""
    from specflow.api.indexed_slices import IndexedSlices
    from specflow.api.tf_names import _axes

    if isinstance(t, IndexedSlices):  # TF's: the norm of the values as they are, the rows kept
        return t.with_values(clip_by_norm(t.values, clip_norm, axes, name))
    x = _t(t)
    if isinstance(clip_norm, Tensor):
        clip_norm = cast(call("Maximum", clip_norm, np.asarray(0, clip_norm.dtype.numpy)), x.dtype)
    else:
        clip_norm = np.asarray(max(float(clip_norm), 0.0), x.dtype.numpy)
    l2sum = call("Sum", x * x, _axes(x, axes), keep_dims=True)
    pred = l2sum > 0
    safe = call("SelectV2", pred, l2sum, call("OnesLike", l2sum))
    l2norm = call("SelectV2", pred, call("Sqrt", safe), l2sum)
    return identity((x * clip_norm) / call("Maximum", l2norm, clip_norm), name=name)


# --- space, batch and bits ------------------------------------------------------------------------

def space_to_batch_nd(input, block_shape, paddings, name: str | None = None):  # noqa: A002
    return call("SpaceToBatchND", _t(input), _i32(block_shape), _i32(paddings), name=name)


space_to_batch = space_to_batch_nd


def batch_to_space(input, block_shape, crops, name: str | None = None):  # noqa: A002
    if isinstance(block_shape, int):
        block_shape = [block_shape, block_shape]
    return call("BatchToSpaceND", _t(input), _i32(block_shape), _i32(crops), name=name)


def bitcast(input, type, name: str | None = None):  # noqa: A002
    return call("Bitcast", _t(input), type=as_dtype(type), name=name)


def _finfo(dt: np.dtype):
    if dt == dtypes.bfloat16.numpy:
        import ml_dtypes

        return ml_dtypes.finfo(dt)
    return np.finfo(dt)


def saturate_cast(value, dtype, name: str | None = None):
    """Clamped into dtype's range first (TensorFlow's limits, nudged where unrepresentable)."""
    x = _t(value)
    dt = as_dtype(dtype)
    if x.dtype.is_complex:
        if dt.is_complex:
            return cast(x, dt, name=name)
        x = call("Real", x, Tout=_real_dtype(x.dtype))
    src = x.dtype.numpy
    out = np.dtype(_real_dtype(dt).numpy)
    if out == np.bool_:
        return cast(x, dt, name=name)
    # (bfloat16 is no numpy floating type: its limits through ml_dtypes' finfo)
    info_in = _finfo(src) if x.dtype.is_floating else np.iinfo(src)
    info_out = _finfo(out) if _real_dtype(dt).is_floating else np.iinfo(out)
    promoted = np.promote_types(src, out)
    lo = src.type(np.maximum(info_in.min, info_out.min))
    if np.array(lo, promoted) < np.array(info_out.min, promoted):
        lo = np.nextafter(lo, src.type(0), dtype=src)
    hi = src.type(np.minimum(float(info_in.max), float(info_out.max)))
    if np.array(hi, promoted) > np.array(info_out.max, promoted):
        hi = np.nextafter(hi, src.type(0), dtype=src)
    return cast(call("ClipByValue", x, np.asarray(lo, src), np.asarray(hi, src)), dt, name=name)


def complex(real, imag, name: str | None = None):  # noqa: A001
    real, imag = _t(real), _t(imag)
    if real.dtype != imag.dtype or real.dtype not in (dtypes.float32, dtypes.float64):
        raise TypeError(f"complex: real and imag must both be float32 or both float64, got "
                        f"{real.dtype.name} and {imag.dtype.name}")
    tout = dtypes.complex128 if real.dtype == dtypes.float64 else dtypes.complex64
    return call("Complex", real, imag, Tout=tout, name=name)


def broadcast_static_shape(shape_x, shape_y) -> Shape:
    return broadcast_shapes(as_shape(shape_x), as_shape(shape_y))


def broadcast_dynamic_shape(shape_x, shape_y):
    return call("BroadcastArgs", _i32(shape_x), _i32(shape_y))
