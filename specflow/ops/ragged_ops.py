"""RaggedTensorToTensor: a ragged tensor (flat values plus row partitions) as a dense, padded tensor
(``tf.RaggedTensor.to_tensor``, what ragged reductions and Keras text layers write).

The partitions are TF's: ``ROW_SPLITS`` (row i holds children splits[i]:splits[i + 1]),
``VALUE_ROWIDS`` (each child's row, sorted) after a ``FIRST_DIM_SIZE`` (the number of rows). Each
ragged dim becomes as long as its longest row, unless ``shape`` fixes it (longer rows are cut, as
are rows past a fixed first dim); missing entries take ``default_value``, broadcast to the values'
inner shape. The gradient is TF's: values get the output's gradient where they landed, the
default the sum of the rest.
"""

from __future__ import annotations

import numpy as np

from specflow.graph.shapes import Shape
from specflow.ops import grad_util as gu
from specflow.ops.inference import InferenceContext
from specflow.ops.registry import gradient, kernel, register_op

_TYPES = ("ROW_SPLITS", "VALUE_ROWIDS", "FIRST_DIM_SIZE")


def _types(c) -> list[str]:
    types = [t.decode() if isinstance(t, bytes) else str(t) for t in c.attrs["row_partition_types"]]
    bad = [t for t in types if t not in _TYPES]
    if bad:
        raise c.fail(f"row partition type {bad[0]!r} is not supported (ROW_SPLITS, or FIRST_DIM_SIZE then VALUE_ROWIDS)")
    if not types or ("VALUE_ROWIDS" in types) != (types[0] == "FIRST_DIM_SIZE") or types.count("FIRST_DIM_SIZE") > 1:
        raise c.fail(f"row_partition_types {types} must be ROW_SPLITS..., or FIRST_DIM_SIZE then VALUE_ROWIDS...")
    if len(types) != c.attrs["num_row_partition_tensors"]:
        raise c.fail(f"row_partition_types lists {len(types)} types for {c.attrs['num_row_partition_tensors']} tensors")
    return types


def _ragged_rank(types) -> int:
    return sum(t != "FIRST_DIM_SIZE" for t in types)


def _shape_fn(ic: InferenceContext) -> list[Shape]:
    types = _types(ic)
    values = ic.shape(1)
    if values.rank is None:
        return [Shape.unknown()]
    rank = 1 + _ragged_rank(types) + values.rank - 1
    dims = [None] * (1 + _ragged_rank(types)) + list(values.dims[1:])
    parts = [ic.value(3 + i) for i in range(len(types))]
    if all(p is not None for p in parts) and values.dims[0] is not None:  # constant partitions
        dims[:1 + _ragged_rank(types)] = _coordinates(ic, types, parts, values.dims[0])[1]
    given = ic.value(0)
    if given is not None and np.ndim(given) == 1:
        if len(given) != rank:
            raise ic.fail(f"shape {np.asarray(given).tolist()} must have rank {rank}")
        dims = [d if int(g) < 0 else int(g) for d, g in zip(dims, np.asarray(given))]
    return [Shape(dims)]


register_op(
    "RaggedTensorToTensor",
    inputs=["shape: Tshape", "values: T", "default_value: T", "row_partition_tensors: num_row_partition_tensors * Tindex"],
    outputs=["result: T"],
    attrs=["T: type", "Tindex: {int32, int64}", "Tshape: {int32, int64}", "num_row_partition_tensors: int",
           "row_partition_types: list(string)"],
    shape=_shape_fn,
    doc="A ragged tensor as a dense one: each ragged dim as long as its longest row (or `shape`'s "
    "dim), the gaps filled with `default_value` (tf.RaggedTensor.to_tensor).",
)


def _coordinates(ctx, types, parts, n_values):
    """The dense coordinates (one int64 column per outer dim) of each flat value, and each outer
    dim's size (the first dim's row count, then each ragged dim's longest row)."""
    if types[0] == "FIRST_DIM_SIZE":
        nrows = int(np.asarray(parts[0]).reshape(-1)[0]) if np.size(parts[0]) else 0
        parts, types = parts[1:], types[1:]
        first = None
    else:
        first = np.asarray(parts[0], np.int64)
        if first.ndim != 1 or first.size == 0 or first[0] != 0 or (np.diff(first) < 0).any():
            raise ctx.fail("row_splits must be a non-empty, non-decreasing vector starting at 0")
        nrows = first.size - 1
    coords = [np.arange(nrows, dtype=np.int64)]
    sizes = [nrows]
    for typ, part in zip(types, parts):
        part = np.asarray(part, np.int64)
        parents = coords[0].size
        if typ == "ROW_SPLITS":
            if part.ndim != 1 or part.size != parents + 1 or part[0] != 0 or (np.diff(part) < 0).any():
                raise ctx.fail(f"row_splits must be {parents + 1} non-decreasing values starting at 0, got {part.tolist()}")
            lengths = np.diff(part)
            rows = np.repeat(np.arange(parents, dtype=np.int64), lengths)
            starts = part[:-1]
        else:
            if part.ndim != 1 or (part.size and (part.min() < 0 or part.max() >= parents or (np.diff(part) < 0).any())):
                raise ctx.fail(f"value_rowids must be sorted row ids in [0, {parents}), got {part.tolist()}")
            rows = part
            lengths = np.bincount(rows, minlength=parents)
            starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        within = np.arange(rows.size, dtype=np.int64) - starts[rows]
        coords = [c[rows] for c in coords] + [within]
        sizes.append(int(lengths.max()) if lengths.size else 0)
    if coords[0].size != n_values:
        raise ctx.fail(f"the row partitions place {coords[0].size} values but values has {n_values} rows")
    return coords, sizes


@kernel("RaggedTensorToTensor", host_inputs=(0,))
def _ragged_to_tensor(ctx, shape, values, default_value, *parts):
    xp = ctx.xp
    types = _types(ctx)
    if values.ndim == 0:
        raise ctx.fail("values must be at least 1-D (its first dim is the flat values)")
    coords, sizes = _coordinates(ctx, types, [ctx.host(p) for p in parts], values.shape[0])
    inner = values.shape[1:]
    dims = sizes + list(inner)
    given = np.asarray(ctx.host(shape))
    if given.ndim == 1:
        if given.size != len(dims):
            raise ctx.fail(f"shape {given.tolist()} must have rank {len(dims)}")
        for i, g in enumerate(given.tolist()):
            if g >= 0:
                if i >= len(sizes) and g != dims[i]:
                    raise ctx.fail(f"shape {given.tolist()} does not match the values' inner dims {list(inner)}")
                dims[i] = int(g)
    try:
        fill = xp.broadcast_to(xp.asarray(default_value, dtype=values.dtype), tuple(inner))
    except ValueError:
        raise ctx.fail(f"default_value of shape {list(np.shape(default_value))} does not broadcast to the values' "
                       f"inner shape {list(inner)}") from None
    out = xp.empty(tuple(dims), dtype=values.dtype)
    out[...] = fill
    keep = np.ones(values.shape[0], bool)
    for c, d in zip(coords, dims):
        keep &= c < d
    index = tuple(xp.asarray(c[keep]) for c in coords)
    out[index] = values[xp.asarray(np.nonzero(keep)[0])]
    return out


@gradient("RaggedTensorToTensor")
def _ragged_to_tensor_grad(b, node, dys):
    # TF's _ragged_tensor_to_tensor_grad: the flat index each output came from (-1: the default).
    shape, values, default_value, *parts = node.data_inputs
    (dy,) = dys
    outer = 1 + _ragged_rank([t.decode() if isinstance(t, bytes) else str(t) for t in node.attrs["row_partition_types"]])
    n = gu.emit(b, "Slice", gu.shape_of(b, values), gu.const(b, np.array([0], np.int32)), gu.const(b, np.array([1], np.int32)))
    positions = gu.emit(b, "Range", gu.const(b, np.int32(0)), gu.emit(b, "Reshape", n, gu.const(b, np.array([], np.int32))),
                        gu.const(b, np.int32(1)), Tidx="int32")
    dy_outer = gu.emit(b, "Slice", gu.shape_of(b, dy), gu.const(b, np.array([0], np.int32)),
                       gu.const(b, np.array([outer], np.int32)))
    indices = gu.emit(b, "RaggedTensorToTensor", dy_outer, positions, gu.const(b, np.int32(-1)), *parts,
                      row_partition_types=node.attrs["row_partition_types"],
                      num_row_partition_tensors=node.attrs["num_row_partition_tensors"])
    mask = gu.emit(b, "NotEqual", indices, gu.const(b, np.int32(-1)))
    where = gu.emit(b, "Where", mask)
    picked = gu.emit(b, "GatherNd", dy, where)
    values_grad = gu.emit(b, "UnsortedSegmentSum", picked, gu.emit(b, "GatherNd", indices, where),
                          gu.emit(b, "Reshape", n, gu.const(b, np.array([], np.int32))))
    unused = gu.emit(b, "GatherNd", dy, gu.emit(b, "Where", gu.emit(b, "LogicalNot", mask)))
    rest = gu.emit(b, "Sum", unused, gu.const(b, np.int32(0)), keep_dims=False)
    return [None, values_grad, gu.sum_to(b, rest, default_value)] + [None] * len(parts)
