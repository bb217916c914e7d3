"""Activations that are more than one op, as Keras defines them.

``gelu`` is exact (``0.5 x (1 + erf(x / sqrt 2))``, Keras's default) and needs the Erf op;
``gelu_tanh`` is the tanh approximation; ``silu``/``swish`` is ``x * sigmoid(x)``;
``hard_sigmoid`` is Keras 3's ``relu6(x + 3) / 6``. Each builder takes the layer's Emitter and
names its last op as the layer when ``final``.
"""

from __future__ import annotations

import math

import numpy as np

from specflow.errors import SpecError
from specflow.ops.registry import has_op


def _scalar(e, value: float, like: str, name: str) -> str:
    dt = e.dtype(like)
    return e.const(np.asarray(value, dt.numpy), dt, name=name)


def gelu_tanh(e, x: str, final: bool) -> str:
    """0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    cube = e.op("Mul", [e.op("Square", [x], name="gelu/Square"), x], name="gelu/cube")
    inner = e.op("AddV2", [x, e.op("Mul", [cube, _scalar(e, 0.044715, x, "gelu/c")], name="gelu/mul")],
                 name="gelu/add")  # fmt: skip
    t = e.op("Tanh", [e.op("Mul", [inner, _scalar(e, math.sqrt(2 / math.pi), x, "gelu/k")], name="gelu/mul_1")],
             name="gelu/Tanh")  # fmt: skip
    half = e.op("Mul", [x, _scalar(e, 0.5, x, "gelu/half")], name="gelu/mul_2")
    one = e.op("AddV2", [t, _scalar(e, 1.0, x, "gelu/one")], name="gelu/add_1")
    return e.op("Mul", [half, one], name="gelu/mul_3", final=final)


def gelu(e, x: str, final: bool) -> str:
    """0.5 x (1 + erf(x / sqrt(2)))."""
    if not has_op("Erf"):
        raise SpecError("activation 'gelu' (exact) needs the Erf op, which this build lacks; use 'gelu_tanh'",
                        node=e.ctx.name)
    erf = e.op("Erf", [e.op("Mul", [x, _scalar(e, 1 / math.sqrt(2), x, "gelu/rsqrt2")], name="gelu/mul")],
               name="gelu/Erf")  # fmt: skip
    half = e.op("Mul", [x, _scalar(e, 0.5, x, "gelu/half")], name="gelu/mul_1")
    one = e.op("AddV2", [erf, _scalar(e, 1.0, x, "gelu/one")], name="gelu/add")
    return e.op("Mul", [half, one], name="gelu/mul_2", final=final)


def silu(e, x: str, final: bool) -> str:
    """x * sigmoid(x) (Keras's silu and swish)."""
    return e.op("Mul", [x, e.op("Sigmoid", [x], name="silu/Sigmoid")], name="silu/mul", final=final)


def hard_sigmoid(e, x: str, final: bool) -> str:
    """relu6(x + 3) / 6: 0 below -3, 1 above 3, linear between."""
    r = e.op("Relu6", [e.op("AddV2", [x, _scalar(e, 3.0, x, "hard_sigmoid/three")], name="hard_sigmoid/add")],
             name="hard_sigmoid/Relu6")  # fmt: skip
    return e.op("Mul", [r, _scalar(e, 1 / 6, x, "hard_sigmoid/sixth")], name="hard_sigmoid/mul", final=final)


COMPOSITE = {"gelu": gelu, "gelu_tanh": gelu_tanh, "silu": silu, "swish": silu, "hard_sigmoid": hard_sigmoid}
