"""Gradient clipping by global norm, as TensorFlow's ``tf.clip_by_global_norm``; and each
gradient by its own norm or elementwise (Keras's ``clipnorm``/``clipvalue``: ``tf.clip_by_norm``,
``tf.clip_by_value``), a sparse gradient by its values as they are.

``global_norm = sqrt(sum(sum(g ** 2) for g in grads))`` and every gradient is scaled by
``clip_norm / max(global_norm, clip_norm)``: unchanged while the norm is within the limit,
shrunk together (keeping their direction) when it is not. As in TensorFlow, an infinite or NaN
norm makes every clipped gradient NaN, so a diverging step is noticed instead of zeroed.

A sparse gradient (``IndexedSlices``) counts and is clipped by its rows as they are, repeated
ids not merged first (TensorFlow's global_norm takes an IndexedSlices' values the same way),
and stays sparse: its rows are scaled, its ids kept.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from specflow.errors import SpecError
from specflow.graph.dtypes import float32
from specflow.ops.grad_util import IndexedSlices


def clip_by_global_norm(
    builder, grads: Sequence[str | IndexedSlices | None], clip_norm: float, path: str = "clip_global_norm"
) -> tuple[list[str | IndexedSlices | None], str]:
    """``(clipped, global_norm)``: the clipped gradients (None stays None; an IndexedSlices
    stays one) and the norm.

    The norm is computed in the gradients' dtype when they share one, else in float32."""
    if isinstance(clip_norm, bool) or not isinstance(clip_norm, (int, float)) or not (
        math.isfinite(clip_norm) and clip_norm > 0
    ):
        raise SpecError(f"clip norm must be a finite number > 0, got {clip_norm!r}", path=path)
    present = [g.values if isinstance(g, IndexedSlices) else g for g in grads if g is not None]
    kinds = {builder.spec(g).dtype for g in present}
    dtype = kinds.pop() if len(kinds) == 1 else float32

    def op(name: str, inputs: list[str], attrs: dict | None = None) -> str:
        return builder.add_op(name, inputs, attrs, name=builder.unique_name(name), exact_name=True).name

    def cast(x: str, to) -> str:
        return x if builder.spec(x).dtype == to else op("Cast", [x], {"DstT": to})

    with builder.name_scope("clip_by_global_norm"):
        if not present:
            return list(grads), builder.const(0.0, dtype, name="global_norm")
        # L2Loss is sum(g ** 2) / 2, as in TensorFlow's global_norm.
        halves = [cast(op("L2Loss", [g]), dtype) for g in present]
        total = halves[0] if len(halves) == 1 else op("AddN", halves)
        two = builder.const(2.0, dtype, name="two")
        norm = builder.add_op(
            "Sqrt", [op("Mul", [total, two])], name=builder.unique_name("global_norm"), exact_name=True
        ).name
        limit = builder.const(float(clip_norm), dtype, name="clip_norm")
        scale = op("RealDiv", [limit, op("Maximum", [norm, limit])])
        scale = op("AddV2", [scale, op("Sub", [norm, norm])])  # NaN when the norm is not finite
        clipped: list[str | IndexedSlices | None] = []
        for i, g in enumerate(grads):
            if g is None:
                clipped.append(None)
                continue
            x = g.values if isinstance(g, IndexedSlices) else g
            factor = cast(scale, builder.spec(x).dtype)
            y = builder.add_op("Mul", [x, factor], name=builder.unique_name(f"_{i}"), exact_name=True).name
            clipped.append(IndexedSlices(builder, y, g.indices, g._rows) if isinstance(g, IndexedSlices) else y)
    return clipped, norm


def _each(builder, grads, fn) -> list:
    out = []
    for g in grads:
        if g is None:
            out.append(None)
        elif isinstance(g, IndexedSlices):
            out.append(IndexedSlices(builder, fn(g.values), g.indices, g._rows))
        else:
            out.append(fn(g))
    return out


def clip_each_by_norm(builder, grads: Sequence[str | IndexedSlices | None], clip_norm: float) -> list:
    """TF's clip_by_norm of every gradient: g * c / max(||g||, c), a zero norm's gradient kept
    finite (the norm's square root taken only where it is above zero)."""

    def op(name: str, inputs: list[str], attrs: dict | None = None) -> str:
        return builder.add_op(name, inputs, attrs, name=builder.unique_name(name), exact_name=True).name

    def clip(g: str) -> str:
        dt = builder.spec(g).dtype
        zero = builder.const(0.0, dt, name="zero")
        rank = builder.spec(g).shape.rank
        axes = builder.const(np.arange(rank, dtype=np.int32), name="axes") if rank is not None else \
            op("Range", [builder.const(np.int32(0), name="start"), op("Rank", [g]), builder.const(np.int32(1), name="delta")])  # fmt: skip
        l2sum = op("Sum", [op("Mul", [g, g]), axes], {"keep_dims": True})
        pred = op("Greater", [l2sum, zero])
        safe = op("SelectV2", [pred, l2sum, op("OnesLike", [l2sum])])
        l2norm = op("SelectV2", [pred, op("Sqrt", [safe]), l2sum])
        limit = builder.const(float(clip_norm), dt, name="clip_norm")
        return op("RealDiv", [op("Mul", [g, limit]), op("Maximum", [l2norm, limit])])

    with builder.name_scope("clip_by_norm"):
        return _each(builder, grads, clip)


def clip_each_by_value(builder, grads: Sequence[str | IndexedSlices | None], clip_value: float) -> list:
    """TF's clip_by_value of every gradient to [-v, v]: Minimum, then Maximum."""

    def clip(g: str) -> str:
        dt = builder.spec(g).dtype
        high, low = builder.const(float(clip_value), dt, name="high"), builder.const(-float(clip_value), dt, name="low")
        t = builder.add_op("Minimum", [g, high], name=builder.unique_name("Minimum"), exact_name=True).name
        return builder.add_op("Maximum", [t, low], name=builder.unique_name("Maximum"), exact_name=True).name

    with builder.name_scope("clip_by_value"):
        return _each(builder, grads, clip)
