"""Building and taking apart complex numbers: Complex, Real, Imag, ComplexAbs and Angle, with
TensorFlow's gradients (math_grad.py). (Conj is with the unary ops.)"""

from __future__ import annotations

import numpy as np

from specflow.ops import grad_util as gu
from specflow.ops.inference import broadcast_shape, unchanged_shape
from specflow.ops.registry import gradient, kernel, register_op

_C_TO_R = ["T: {complex64, complex128} = complex64", "Tout: {float32, float64} = float32"]


def _check_pair(ctx, t, tout) -> None:
    """Tout must be T's other half (complex64 <-> float32, complex128 <-> float64)."""
    want = {"complex64": "float32", "complex128": "float64", "float32": "complex64", "float64": "complex128"}
    if want.get(t.name) != tout.name:
        raise ctx.fail(f"Tout {tout.name} does not go with T {t.name} (expected {want.get(t.name)})")


register_op(
    "Complex",
    inputs=["real: T", "imag: T"],
    outputs=["out: Tout"],
    attrs=["T: {float32, float64} = float32", "Tout: {complex64, complex128} = complex64"],
    shape=broadcast_shape,
    doc="real + i * imag elementwise (broadcasting).",
)


@kernel("Complex")
def _complex(ctx, re, im):
    _check_pair(ctx, ctx.attrs["T"], ctx.attrs["Tout"])
    out = ctx.xp.empty(np.broadcast_shapes(re.shape, im.shape), dtype=ctx.attrs["Tout"].numpy)
    out.real, out.imag = re, im
    return out


@gradient("Complex")
def _complex_grad(b, node, dys):
    re, im = node.data_inputs
    real_t = b.spec(re).dtype
    parts = (gu.emit(b, "Real", dys[0], Tout=real_t), gu.emit(b, "Imag", dys[0], Tout=real_t))
    return [gu.sum_to(b, parts[0], re), gu.sum_to(b, parts[1], im)]


for _name, _doc, _fn in (
    ("Real", "The real part of each element.", lambda xp, x: xp.real(x)),
    ("Imag", "The imaginary part of each element.", lambda xp, x: xp.imag(x)),
    ("ComplexAbs", "|x| elementwise, computed without overflow (hypot).", lambda xp, x: xp.abs(x)),
    ("Angle", "The argument of each element: atan2(imag, real).", lambda xp, x: xp.angle(x)),
):
    register_op(
        _name, inputs=["x: T" if _name == "ComplexAbs" else "input: T"], outputs=["y: Tout" if _name == "ComplexAbs" else "output: Tout"],
        attrs=_C_TO_R, shape=unchanged_shape, doc=_doc,
    )  # fmt: skip

    def _register(name=_name, fn=_fn):
        @kernel(name)
        def _run(ctx, x):
            _check_pair(ctx, ctx.attrs["T"], ctx.attrs["Tout"])
            return fn(ctx.xp, x).astype(ctx.attrs["Tout"].numpy, copy=False)

    _register()


def _as_complex(b, re: str, im: str | None, like: str) -> str:
    """Complex(re, im or 0) in ``like``'s complex dtype."""
    real_t = b.spec(re).dtype
    im = im if im is not None else gu.zeros_like(b, re)
    return gu.emit(b, "Complex", re, im, T=real_t, Tout=b.spec(like).dtype)


@gradient("Real")
def _real_grad(b, node, dys):
    return [_as_complex(b, dys[0], None, node.data_inputs[0])]


@gradient("Imag")
def _imag_grad(b, node, dys):
    return [_as_complex(b, gu.zeros_like(b, dys[0]), dys[0], node.data_inputs[0])]


@gradient("ComplexAbs")
def _complex_abs_grad(b, node, dys):
    # grad * x / |x| (0 where x is 0), as TF's.
    x = node.data_inputs[0]
    num = gu.emit(b, "Mul", _as_complex(b, dys[0], None, x), x)
    return [gu.emit(b, "DivNoNan", num, _as_complex(b, node.name, None, x))]


@gradient("Angle")
def _angle_grad(b, node, dys):
    # d angle = -grad / (imag + i real), as TF's.
    x, real_t = node.data_inputs[0], node.attrs["Tout"]
    re, im = gu.emit(b, "Real", x, Tout=real_t), gu.emit(b, "Imag", x, Tout=real_t)
    z = gu.emit(b, "Reciprocal", _as_complex(b, im, re, x))
    return [gu.emit(b, "Neg", gu.emit(b, "Mul", _as_complex(b, dys[0], None, x), z))]
