"""Elementwise chains fused by the optimize stage on CPUs (runtime/optimize_fuse_train.py).

``_FusedScaleShift``: (x * scale + shift) (-> Relu) for an [..., C] ``x`` and per-channel
``scale`` and ``shift`` (batch norm's normalization in training, where the scale cannot be
folded into a filter). numpy still makes one pass per operation, but in place in one output
buffer instead of three full-size arrays (fresh memory written and read back: 1.4x the time at
batch 1024's [16384, 32]; blocks of the rows sized for the cache were slower still, numpy's
~2 us per call outweighing what stays cached). Each element meets the same operands in the same
order as in the unfused Mul, AddV2 and Relu (ops/wide_rows.py's lines): the same values.

``_FusedScaledSum``: x * scale + addend + shift, the same way (batch norm's input gradient:
the upstream gradient times the scale, plus the variance's share, plus the mean's): AddN's sum
of the product and the addend, then the shift, in place in one buffer instead of three arrays.
"""

from __future__ import annotations

import numpy as np

from specflow.ops.registry import kernel, not_differentiable, register_op
from specflow.ops.wide_rows import MIN_SIZE, _zero_line, relu, rows_per_line

register_op(
    "_FusedScaleShift",
    inputs=["x: T", "scale: T", "shift: T"],
    outputs=["y: T"],
    attrs=["T: {float16, float32, float64}", "fused_ops: list(string) = []"],
    shape=lambda ic: [ic.shape(0)],
    doc="x * scale + shift, then Relu if fused_ops lists it: x is [..., C], scale and shift hold "
    "C values (shape [C] or [1, ..., 1, C]).",
)


@kernel("_FusedScaleShift", devices=("CPU",))
def _fused_scale_shift(ctx, x, scale, shift):
    c = x.shape[-1] if x.ndim else 0
    if x.ndim < 2 or scale.size != c or shift.size != c or scale.ndim > x.ndim or shift.ndim > x.ndim:
        raise ctx.fail(f"scale and shift must hold one value per channel of x {list(x.shape)}, "
                       f"got shapes {list(scale.shape)} and {list(shift.shape)}")  # fmt: skip
    with_relu = "Relu" in (ctx.attrs.get("fused_ops") or ())
    out = ctx.empty(x.shape, x.dtype)
    rows = rows_per_line(x.size // c, c) if c else 1
    if x.size < MIN_SIZE or rows == 1 or not x.flags.c_contiguous:
        np.multiply(x, scale.reshape(c), out=out)
        np.add(out, shift.reshape(c), out=out)
        return relu(np, out, out) if with_relu else out
    width = c * rows
    s, t = np.tile(scale.reshape(c), rows), np.tile(shift.reshape(c), rows)
    zeros = _zero_line(np, x.dtype, width) if with_relu else None
    o = out.reshape(-1, width)
    np.multiply(x.reshape(-1, width), s, out=o)
    np.add(o, t, out=o)
    if with_relu:
        np.maximum(o, zeros, out=o)
    return out


register_op(
    "_FusedScaledSum",
    inputs=["x: T", "scale: T", "addend: T", "shift: T"],
    outputs=["y: T"],
    attrs=["T: {float16, float32, float64}"],
    shape=lambda ic: [ic.shape(0)],
    doc="x * scale + addend + shift: x and addend are [..., C] of one shape, scale and shift hold "
    "C values (shape [C] or [1, ..., 1, C]).",
)


@kernel("_FusedScaledSum", devices=("CPU",))
def _fused_scaled_sum(ctx, x, scale, addend, shift):
    c = x.shape[-1] if x.ndim else 0
    if x.ndim < 2 or addend.shape != x.shape or any(v.size != c or v.ndim > x.ndim for v in (scale, shift)):
        raise ctx.fail(f"x and addend must be one [..., C] shape and scale and shift hold C values, got "
                       f"shapes {[list(a.shape) for a in (x, scale, addend, shift)]}")  # fmt: skip
    out = ctx.empty(x.shape, x.dtype)
    rows = rows_per_line(x.size // c, c) if c else 1
    if x.size < MIN_SIZE or rows == 1 or not (x.flags.c_contiguous and addend.flags.c_contiguous):
        s, t, a, b, o = scale.reshape(c), shift.reshape(c), x, addend, out
    else:
        width = c * rows
        s, t = np.tile(scale.reshape(c), rows), np.tile(shift.reshape(c), rows)
        a, b, o = (v.reshape(-1, width) for v in (x, addend, out))
    np.multiply(a, s, out=o)
    np.add(o, b, out=o)  # AddN's sum
    np.add(o, t, out=o)
    return out


not_differentiable("_FusedScaleShift", "_FusedScaledSum")
