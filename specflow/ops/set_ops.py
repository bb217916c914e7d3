"""Set operations along the last dimension (tf.sets): DenseToDenseSetOperation (a-b, b-a,
intersection, union of each pair of rows, as a sparse tensor of sorted rows) and SetSize (how many
distinct values each row of a sparse tensor holds). Sets carry no gradient (as in TF)."""

from __future__ import annotations

import numpy as np

from specflow.graph.shapes import Shape
from specflow.ops.inference import InferenceContext
from specflow.ops.registry import kernel, not_differentiable, register_op

_SET_TYPES = "T: {int8, int16, int32, int64, uint8, uint16, string}"
_OPERATIONS = {
    "a-b": lambda a, b: a - b,
    "b-a": lambda a, b: b - a,
    "intersection": lambda a, b: a & b,
    "union": lambda a, b: a | b,
}


def _set_operation_shape(ic: InferenceContext) -> list[Shape]:
    s1, s2 = ic.shape(0), ic.shape(1)
    for s in (s1, s2):
        if s.rank is not None and s.rank < 2:
            raise ic.fail(f"sets must be at least 2-D [..., n], got shape {s}")
    rank = s1.rank if s1.rank is not None else s2.rank
    return [Shape([None, rank]), Shape([None]), Shape([rank])]


register_op(
    "DenseToDenseSetOperation",
    inputs=["set1: T", "set2: T"],
    outputs=["result_indices: int64", "result_values: T", "result_shape: int64"],
    attrs=["set_operation: string", "validate_indices: bool = true", _SET_TYPES],
    shape=_set_operation_shape,
    doc="For each row (the last dimension) of set1 and set2, which must agree in every other "
    "dimension: set_operation ('a-b', 'b-a', 'intersection' or 'union') of their values, sorted, "
    "as a sparse tensor [..., largest result].",
)


def _operation(ctx):
    op = _OPERATIONS.get(ctx.attrs["set_operation"])
    if op is None:
        raise ctx.fail(f"Invalid set_operation {ctx.attrs['set_operation']!r}: expected one of {sorted(_OPERATIONS)}")
    return op


@kernel("DenseToDenseSetOperation", host_inputs=(0, 1))
def _dense_to_dense(ctx, set1, set2):
    a, b = np.asarray(ctx.host(set1)), np.asarray(ctx.host(set2))
    op = _operation(ctx)
    if a.ndim < 2 or b.ndim < 2:
        raise ctx.fail(f"sets must be at least 2-D [..., n], got shapes {list(a.shape)} and {list(b.shape)}")
    if a.shape[:-1] != b.shape[:-1]:
        raise ctx.fail(f"Shape mismatch: set1 {list(a.shape)} and set2 {list(b.shape)} differ before the last dimension")
    batch = a.shape[:-1]
    indices, values, widest = [], [], 0
    for pos in np.ndindex(*batch):
        row = sorted(op(set(a[pos].tolist()), set(b[pos].tolist())))
        widest = max(widest, len(row))
        indices.extend((*pos, j) for j in range(len(row)))
        values.extend(row)
    idx = np.array(indices, np.int64).reshape(-1, a.ndim)
    vals = np.array(values, dtype=a.dtype) if values else np.zeros(0, a.dtype)
    xp = ctx.xp
    return xp.asarray(idx), xp.asarray(vals), xp.asarray(np.array([*batch, widest], np.int64))


register_op(
    "SetSize",
    inputs=["set_indices: int64", "set_values: T", "set_shape: int64"],
    outputs=["size: int32"],
    attrs=["validate_indices: bool = true", _SET_TYPES],
    shape=lambda ic: [Shape(None) if ic.value(2) is None else Shape([int(d) for d in np.asarray(ic.value(2))[:-1]])],
    doc="The number of distinct values in each row (the last dimension) of a sparse tensor, with "
    "the tensor's shape less its last dimension.",
)


@kernel("SetSize", host_inputs=(0, 1, 2))
def _set_size(ctx, indices, values, shape):
    idx = np.asarray(ctx.host(indices)).astype(np.int64)
    vals, dims = np.asarray(ctx.host(values)), [int(d) for d in np.asarray(ctx.host(shape)).reshape(-1)]
    if len(dims) < 2:
        raise ctx.fail(f"a set must be at least 2-D, got shape {dims}")
    if idx.ndim != 2 or idx.shape[1] != len(dims) or vals.shape != (idx.shape[0],):
        raise ctx.fail(f"set_indices [N, {len(dims)}] and set_values [N] do not match: {list(idx.shape)} and "
                       f"{list(vals.shape)}")  # fmt: skip
    if idx.size and ((idx < 0) | (idx >= np.array(dims, np.int64))).any():
        raise ctx.fail(f"set_indices hold an index outside the shape {dims}")
    if ctx.attrs["validate_indices"] and idx.shape[0] > 1:
        flat = np.ravel_multi_index(tuple(idx.T), dims)
        if (flat[1:] <= flat[:-1]).any():
            j = int(np.flatnonzero(flat[1:] <= flat[:-1])[0]) + 1
            raise ctx.fail(f"set_indices[{j}] = {idx[j].tolist()} is out of order or repeated")
    out = np.zeros(dims[:-1], np.int32)
    for row in {(*i[:-1], v) for i, v in zip(map(tuple, idx.tolist()), vals.tolist())}:
        out[row[:-1]] += 1
    return ctx.xp.asarray(out)


not_differentiable("DenseToDenseSetOperation", "SetSize")  # as in TF
