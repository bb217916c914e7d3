"""ONNX mappings of the trigonometric, hyperbolic and special-function ops, the NaN-safe and
truncating binary ops, ClipByValue and LinSpace.

ONNX has most of the unary functions; the rest are composed to TF's semantics: Erfc and Expm1
from Erf and Exp (less accurate in the far tail than TF's own kernels), the NaN-safe ops with
Where (0 exactly where TF gives 0), Atan2 from Atan with quadrant corrections, ClipByValue as
Max(Min(t, hi), lo) (TF's order: lo wins where lo > hi, which ONNX's Clip does not promise).
CheckNumerics (a run-time failure) and CumulativeLogsumexp (no stable ONNX form) have no mapping.
"""

from __future__ import annotations

import numpy as np

from specflow.export.onnx_ops import maps, scalar

# TF op -> ONNX op with the same inputs and semantics (Rint and Round both round halves to even;
# TruncateDiv: ONNX's integer Div truncates toward zero).
_SAME = {
    "Tan": "Tan", "Asin": "Asin", "Acos": "Acos", "Atan": "Atan", "Sinh": "Sinh", "Cosh": "Cosh",
    "Asinh": "Asinh", "Acosh": "Acosh", "Atanh": "Atanh", "Erf": "Erf", "IsInf": "IsInf", "Rint": "Round",
    "TruncateDiv": "Div",
}  # fmt: skip


def _same(onnx_op: str):
    def fn(cx):
        cx.op(onnx_op, [cx.inp(i) for i in range(cx.n_inputs)], out=cx.out())

    return fn


for _tf, _onnx in _SAME.items():
    maps(_tf)(_same(_onnx))


@maps("Erfc")
def _erfc(cx):
    cx.op("Sub", [scalar(cx, 1), cx.op("Erf", [cx.inp(0)])], out=cx.out())


@maps("Expm1")
def _expm1(cx):
    cx.op("Sub", [cx.op("Exp", [cx.inp(0)]), scalar(cx, 1)], out=cx.out())


@maps("TruncateMod")
def _truncate_mod(cx):
    cx.op("Mod", [cx.inp(0), cx.inp(1)], out=cx.out(), fmod=1)  # C's fmod: the sign follows x


def _is_zero(cx, i: int) -> str:
    return cx.op("Equal", [cx.inp(i), scalar(cx, 0, i)])


@maps("DivNoNan")
def _div_no_nan(cx):
    zero = _is_zero(cx, 1)
    safe_y = cx.op("Where", [zero, scalar(cx, 1, 1), cx.inp(1)])
    cx.op("Where", [zero, scalar(cx, 0), cx.op("Div", [cx.inp(0), safe_y])], out=cx.out())


@maps("MulNoNan")
def _mul_no_nan(cx):
    cx.op("Where", [_is_zero(cx, 1), scalar(cx, 0), cx.op("Mul", [cx.inp(0), cx.inp(1)])], out=cx.out())


@maps("Xlogy")
def _xlogy(cx):
    prod = cx.op("Mul", [cx.inp(0), cx.op("Log", [cx.inp(1)])])
    cx.op("Where", [_is_zero(cx, 0), scalar(cx, 0), prod], out=cx.out())


@maps("Xdivy")
def _xdivy(cx):
    cx.op("Where", [_is_zero(cx, 0), scalar(cx, 0), cx.op("Div", [cx.inp(0), cx.inp(1)])], out=cx.out())


@maps("Atan2")
def _atan2(cx):
    # atan(y / x), moved by pi into the left half-plane; on the y axis (x = 0), +-pi/2 or 0.
    y, x = cx.inp(0), cx.inp(1)
    zero = scalar(cx, 0)
    base = cx.op("Atan", [cx.op("Div", [y, x])])
    pi = cx.op("Where", [cx.op("GreaterOrEqual", [y, zero]), scalar(cx, np.pi), scalar(cx, -np.pi)])
    left = cx.op("Add", [base, pi])
    on_axis = cx.op("Mul", [cx.op("Sign", [y]), scalar(cx, np.pi / 2)])
    off_axis = cx.op("Where", [cx.op("Less", [x, zero]), left, base])
    cx.op("Where", [cx.op("Equal", [x, zero]), on_axis, off_axis], out=cx.out())


@maps("ClipByValue")
def _clip_by_value(cx):
    cx.op("Max", [cx.op("Min", [cx.inp(0), cx.inp(2)]), cx.inp(1)], out=cx.out())


@maps("LinSpace", consts=(2,))
def _linspace(cx):
    # start + i * step for i < num - 1, step computed in T as TF does, then stop exactly.
    n = int(cx.const(2))
    if n <= 0:
        raise cx.fail(f"LinSpace needs num > 0, got {n}")
    dt = cx.dtype(0).numpy
    start, stop = cx.inp(0), cx.inp(1)
    last = cx.op("Reshape", [stop, cx.tensor(np.array([1], np.int64))])
    if n == 1:
        cx.op("Reshape", [start, cx.tensor(np.array([1], np.int64))], out=cx.out())
        return
    step = cx.op("Div", [cx.op("Sub", [stop, start]), cx.tensor(np.array(n - 1, dt))])
    head = cx.op("Add", [start, cx.op("Mul", [step, cx.tensor(np.arange(n - 1, dtype=dt))])])
    cx.op("Concat", [head, last], out=cx.out(), axis=0)
