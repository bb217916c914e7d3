"""``sf.bitwise``: TensorFlow's ``tf.bitwise`` over the bitwise ops (ops/bitwise_ops.py)."""

from __future__ import annotations

from specflow.api.op_functions import call
from specflow.api.tensor import Tensor
from specflow.api.tf_names import _t


def _pair(x, y):
    """Both operands as tensors of one integer dtype (a Python int takes the tensor's)."""
    if isinstance(x, Tensor) or not isinstance(y, Tensor):
        x = _t(x)
        return x, _t(y, x.dtype) if not isinstance(y, Tensor) else y
    return _t(x, y.dtype), y


def _binary(op: str, doc: str):
    def fn(x, y, name: str | None = None):
        a, b = _pair(x, y)
        return call(op, a, b, name=name)

    fn.__doc__ = doc
    return fn


bitwise_and = _binary("BitwiseAnd", "Elementwise ``x & y`` (broadcasting).")
bitwise_or = _binary("BitwiseOr", "Elementwise ``x | y`` (broadcasting).")
bitwise_xor = _binary("BitwiseXor", "Elementwise ``x ^ y`` (broadcasting).")
left_shift = _binary("LeftShift", "``x << y``; a shift past the width or negative gives TF's result.")
right_shift = _binary("RightShift", "``x >> y`` (arithmetic for signed types), as TF.")
for _fn, _name in ((bitwise_and, "bitwise_and"), (bitwise_or, "bitwise_or"), (bitwise_xor, "bitwise_xor"),
                   (left_shift, "left_shift"), (right_shift, "right_shift")):
    _fn.__name__ = _name


def invert(x, name: str | None = None):
    """Every bit flipped (``~x``)."""
    return call("Invert", _t(x), name=name)


NAMES = sorted("bitwise_and bitwise_or bitwise_xor invert left_shift right_shift".split())
