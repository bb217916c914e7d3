"""EditDistance (tf.edit_distance): the Levenshtein distance between the sequences of two
SparseTensors, as TF's kernel (``edit_distance_op.cc``) computes it.

Each SparseTensor's last dimension holds the sequences; the others (its prefix) say where each
distance goes. The output's shape is the larger of the two prefixes, dim by dim. A sequence's
elements are the values in the order given (TF groups consecutive entries with one prefix). With
``normalize`` a distance is divided by the truth's length: a hypothesis against no truth gives inf,
and a position neither names stays 0. Any dtype compares by equality (strings included); CPU only.
"""

from __future__ import annotations

import numpy as np

from specflow.graph.shapes import Shape
from specflow.ops.inference import InferenceContext
from specflow.ops.registry import kernel, not_differentiable, register_op

_SIDES = ("hypothesis", "truth")


def _edit_shape(ic: InferenceContext) -> list[Shape]:
    ranks = []
    for side, base in zip(_SIDES, (0, 3)):
        ind, val, shp = ic.shape(base), ic.shape(base + 1), ic.shape(base + 2)
        if ind.rank not in (None, 2) or val.rank not in (None, 1) or shp.rank not in (None, 1):
            raise ic.fail(f"{side}: indices must be a matrix [N, R], values a vector and shape a vector, got "
                          f"{ind}, {val} and {shp}")  # fmt: skip
        ranks.append(shp[0] if shp.rank == 1 else ind[1] if ind.rank == 2 else None)
    if None not in ranks and ranks[0] != ranks[1]:
        raise ic.fail(f"hypothesis and truth must have matching ranks, got {ranks[0]} and {ranks[1]}")
    rank = ranks[0] if ranks[0] is not None else ranks[1]
    h, t = ic.value(2), ic.value(5)
    if h is not None and t is not None and len(h) == len(t) and len(h) >= 2:
        return [Shape([int(max(a, b)) for a, b in zip(h[:-1], t[:-1])])]
    return [Shape([None] * (rank - 1)) if rank is not None and rank >= 2 else Shape.unknown()]


register_op(
    "EditDistance",
    inputs=["hypothesis_indices: int64", "hypothesis_values: T", "hypothesis_shape: int64",
            "truth_indices: int64", "truth_values: T", "truth_shape: int64"],  # fmt: skip
    outputs=["output: float32"],
    attrs=["normalize: bool = true", "T: type"],
    shape=_edit_shape,
    doc="The Levenshtein distance between the hypothesis and truth sequences (SparseTensors' last "
    "dimension) at each position of their other dims; normalize=true divides by the truth's length.",
)
not_differentiable("EditDistance")


def _levenshtein(a: list, b: list) -> int:
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i]
        for j, y in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


def _sequences(ctx, side: str, indices, values, shape, out_shape) -> dict:
    if indices.ndim != 2 or values.ndim != 1 or shape.ndim != 1 or len(indices) != len(values):
        raise ctx.fail(f"{side}: indices must be [N, R], values [N] and shape [R], got {list(indices.shape)}, "
                       f"{list(values.shape)} and {list(shape.shape)}")  # fmt: skip
    if indices.shape[1] != len(shape):
        raise ctx.fail(f"{side}: indices have {indices.shape[1]} columns but shape has {len(shape)} dims")
    groups: dict = {}
    for row, value in zip(indices[:, :-1].tolist(), values.tolist()):
        key = tuple(row)
        if any(k < 0 or k >= d for k, d in zip(key, out_shape)):
            raise ctx.fail(f"{side}: index {row} is outside the output's shape {list(out_shape)}")
        groups.setdefault(key, []).append(value)
    return groups


@kernel("EditDistance", devices=("CPU",))
def _edit_distance(ctx, h_ind, h_val, h_shape, t_ind, t_val, t_shape):
    for side, shape in zip(_SIDES, (h_shape, t_shape)):
        if shape.ndim != 1 or len(shape) < 2:
            raise ctx.fail(f"{side}_shape must be a vector of at least 2 dims (rank >= 2), got {shape.tolist()}")
    if len(h_shape) != len(t_shape):
        raise ctx.fail(f"hypothesis and truth must have matching ranks, got shapes {h_shape.tolist()} and "
                       f"{t_shape.tolist()}")  # fmt: skip
    out_shape = tuple(int(max(a, b)) for a, b in zip(h_shape[:-1].tolist(), t_shape[:-1].tolist()))
    hyp = _sequences(ctx, "hypothesis", h_ind, h_val, h_shape, out_shape)
    truth = _sequences(ctx, "truth", t_ind, t_val, t_shape, out_shape)
    out = np.zeros(out_shape, np.float32)
    normalize = ctx.attrs["normalize"]
    for key in hyp.keys() | truth.keys():
        h, t = hyp.get(key, []), truth.get(key, [])
        d = float(_levenshtein(h, t))
        if normalize:
            d = d / len(t) if t else np.inf
        out[key] = d
    return out
