"""Bitwise ops on integers (tf.bitwise): BitwiseAnd, BitwiseOr, BitwiseXor, Invert, LeftShift,
RightShift, PopulationCount. Shifts clamp the shift amount to [0, bits - 1] as TF's kernels do
(a left shift wraps, a right shift of a signed value is arithmetic). None has a gradient."""

from __future__ import annotations

import numpy as np

from specflow.ops.inference import broadcast_shape, unchanged_shape
from specflow.ops.math_ops import check_broadcast
from specflow.ops.registry import kernel, not_differentiable, register_op

_INTS = "int8, int16, int32, int64, uint8, uint16, uint32, uint64"


def _shift(ctx, x, y, left: bool):
    xp = ctx.xp
    bits = x.dtype.itemsize * 8
    amount = xp.clip(y, 0, bits - 1).astype(x.dtype)
    return (xp.left_shift if left else xp.right_shift)(x, amount)


_BINARY = [
    ("BitwiseAnd", lambda ctx, x, y: ctx.xp.bitwise_and(x, y), "x & y elementwise."),
    ("BitwiseOr", lambda ctx, x, y: ctx.xp.bitwise_or(x, y), "x | y elementwise."),
    ("BitwiseXor", lambda ctx, x, y: ctx.xp.bitwise_xor(x, y), "x ^ y elementwise."),
    ("LeftShift", lambda ctx, x, y: _shift(ctx, x, y, True), "x << y elementwise, y clamped to [0, bits - 1]; "
     "bits shifted out are lost (signed values wrap)."),
    ("RightShift", lambda ctx, x, y: _shift(ctx, x, y, False), "x >> y elementwise, y clamped to [0, bits - 1]; "
     "signed values shift in their sign bit."),
]


def _register(name, body, doc):
    register_op(name, inputs=["x: T", "y: T"], outputs=["z: T"], attrs=[f"T: {{{_INTS}}}"], shape=broadcast_shape,
                doc=doc + " Broadcasts like numpy.")

    def run(ctx, x, y):
        try:
            return ctx.xp.asarray(body(ctx, x, y), dtype=x.dtype)
        except ValueError:
            check_broadcast(ctx, x, y)  # TF's message when the shapes are the cause
            raise

    kernel(name)(run)


for _row in _BINARY:
    _register(*_row)


register_op("Invert", inputs=["x: T"], outputs=["y: T"], attrs=[f"T: {{{_INTS}}}"], shape=unchanged_shape,
            doc="~x elementwise: every bit flipped.")


@kernel("Invert")
def _invert(ctx, x):
    return ctx.xp.invert(x)


register_op("PopulationCount", inputs=["x: T"], outputs=["y: uint8"], attrs=[f"T: {{{_INTS}}}"], shape=unchanged_shape,
            doc="The number of bits set in each element of x (of its two's complement bits when negative).")

_BYTE_BITS = np.array([bin(i).count("1") for i in range(256)], np.uint8)


@kernel("PopulationCount")
def _population_count(ctx, x):
    xp = ctx.xp
    table = xp.asarray(_BYTE_BITS)
    size = x.dtype.itemsize
    as_bytes = xp.ascontiguousarray(x.reshape(-1)).view(np.uint8).reshape(x.shape + (size,))
    return table[as_bytes].sum(axis=-1, dtype=np.uint8)


not_differentiable("BitwiseAnd", "BitwiseOr", "BitwiseXor", "LeftShift", "RightShift", "Invert", "PopulationCount")
