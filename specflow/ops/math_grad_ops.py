"""The gradient ops TensorFlow's own gradient functions emit for Sqrt, Rsqrt and Reciprocal
(``SqrtGrad``, ``RsqrtGrad``, ``ReciprocalGrad`` and its older name ``InvGrad``): a training
graph written by TF carries them. specflow's gradients of those functions build the same values
from plain ops (math_unary_ops). Each is ``z = dy * conj(f(y))`` for y the forward op's output,
and its own gradient follows TF's (conjugating as TF's does for complex types). Where ``dy`` is 0
the result is 0, as TF's kernels give it, even for a NaN or infinite ``y``."""

from __future__ import annotations

from specflow.ops import grad_util as gu
from specflow.ops.inference import same_shape_inputs
from specflow.ops.math_ops import FP_STATE, QUIET_FP, quiet_fp, scalar
from specflow.ops.registry import bfloat16_native, gradient, kernel, register_op

# z(y, dy) with y conjugated for complex types, in the order of TF's Eigen functors
# (cwise_ops_gradients.h), which fixes each product's rounding: RsqrtGrad is
# (-0.5 * (dy * y)) * (y * y), not dy * (-0.5 * y**3) (an ulp apart in a third of float32 values).
_FORMULAS = {
    "SqrtGrad": ("dy * 0.5 / y, where y = sqrt(x)", lambda y, dy: dy * (y.dtype.type(0.5) / y)),
    "RsqrtGrad": ("dy * -0.5 * y ** 3, where y = rsqrt(x)", lambda y, dy: (y.dtype.type(-0.5) * (dy * y)) * (y * y)),
    "ReciprocalGrad": ("-dy * y * y, where y = 1 / x", lambda y, dy: dy * -(y * y)),
    "InvGrad": ("ReciprocalGrad under its older name: -dy * y * y, where y = 1 / x", lambda y, dy: dy * -(y * y)),
}


def _register(name: str, doc: str, formula) -> None:
    register_op(
        name,
        inputs=["y: T", "dy: T"],
        outputs=["z: T"],
        attrs=["T: {half, float, double, complex64, complex128}"],
        shape=same_shape_inputs,
        doc=doc + " (conjugated for complex).",
    )

    @kernel(name)
    @bfloat16_native  # each product rounded to bfloat16, as Eigen's
    def _run(ctx, y, dy):
        if y.shape != dy.shape:
            raise ctx.fail(f"y and dy must have the same shape, got {list(y.shape)} and {list(dy.shape)}")
        if FP_STATE.get() is QUIET_FP:
            return _z(ctx, y, dy)
        with quiet_fp():  # (called outside a step: 0.5 / 0 is inf silently, as in TF)
            return _z(ctx, y, dy)

    def _z(ctx, y, dy):
        z = formula(ctx.xp.conj(y) if y.dtype.kind == "c" else y, dy).astype(y.dtype, copy=False)
        # TF's kernels (cwise_ops.h) return 0 where dy is 0, whatever y is: no NaN from a NaN or
        # infinite y (an input where the function is undefined or infinite) that got no gradient
        return ctx.xp.where(dy == 0, ctx.xp.zeros((), y.dtype), z).astype(y.dtype, copy=False)


for _name, (_doc, _formula) in _FORMULAS.items():
    _register(_name, _doc, _formula)


def _conj(b, t: str) -> str:
    return gu.emit(b, "Conj", t) if b.spec(t).dtype.is_complex else t


@gradient("SqrtGrad")
def _sqrt_grad_grad(b, node, dys):
    # z = dy * 0.5 / y: dz/dy = -z / y, dz/d(dy) = 0.5 / y.
    y, _ = node.data_inputs
    ga = gu.emit(b, "RealDiv", dys[0], y)
    return [gu.emit(b, "Neg", gu.product(b, _conj(b, ga), node.name)), gu.product(b, ga, scalar(b, 0.5, y))]


@gradient("RsqrtGrad")
def _rsqrt_grad_grad(b, node, dys):
    # z = -0.5 * dy * y ** 3: dz/dy = -1.5 * dy * y ** 2; z is linear in dy.
    y, dy = node.data_inputs
    cy = _conj(b, y)
    return [gu.product(b, _conj(b, dys[0]), dy, cy, cy, scalar(b, -1.5, y)), gu.emit(b, "RsqrtGrad", cy, dys[0])]


def _reciprocal_grad_grad(op: str):
    def grad(b, node, dys):
        # z = -dy * y * y: dz/dy = -2 * dy * y; z is linear in dy.
        y, dy = node.data_inputs
        cy = _conj(b, y)
        return [gu.product(b, _conj(b, dys[0]), dy, cy, scalar(b, -2, y)), gu.emit(b, op, cy, dys[0])]

    return grad


gradient("ReciprocalGrad")(_reciprocal_grad_grad("ReciprocalGrad"))
gradient("InvGrad")(_reciprocal_grad_grad("InvGrad"))
