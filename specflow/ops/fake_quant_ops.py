"""Fake quantization (quantization-aware training): FakeQuantWithMinMaxArgs (the range in attrs),
FakeQuantWithMinMaxVars (the range as two scalars) and FakeQuantWithMinMaxVarsPerChannel (one
range per last-dimension channel), with the gradient ops TF's gradients emit (array_grad.py).

TF's arithmetic (fake_quant_ops_functor.h), in float32: the range is first nudged so that 0.0
falls on a quantization step (the zero point rounded half away from zero into [quant_min,
quant_max], where quant_min is 1 with ``narrow_range`` else 0 and quant_max is 2^num_bits - 1);
inputs are clamped to the nudged range and rounded to the nearest step. The gradient passes
where the input lies within the nudged range; the Vars ops' min and max gradients collect it
below and above the range. A [0, 0] range (Vars) gives zeros and passes every gradient.
"""

from __future__ import annotations

import numpy as np

from specflow.graph.shapes import Shape
from specflow.ops import grad_util as gu
from specflow.ops.inference import InferenceContext
from specflow.ops.math_ops import quiet_fp
from specflow.ops.registry import gradient, kernel, not_differentiable, register_op

_QUANT_ATTRS = ["num_bits: int = 8", "narrow_range: bool = false"]
F32 = np.float32


def _quant_range(c) -> tuple[int, int]:
    bits = int(c.attrs["num_bits"])
    if not 2 <= bits <= 16:
        raise c.fail(f"num_bits must be between 2 and 16, inclusive, got {bits}")
    return (1 if c.attrs["narrow_range"] else 0), (1 << bits) - 1


def _round_half_away(x):
    whole = np.trunc(x)
    return whole + np.where(np.abs(x - whole) >= F32(0.5), np.sign(x), F32(0))


def nudge(lo, hi, quant_min: int, quant_max: int):
    """TF's Nudge on float32 arrays of ranges: (nudged_min, nudged_max, scale, inverse scale)."""
    lo, hi = np.asarray(lo, F32), np.asarray(hi, F32)
    qmin, qmax = F32(quant_min), F32(quant_max)
    scale = (hi - lo) / (qmax - qmin)
    inv_scale = (qmax - qmin) / (hi - lo)
    zero_from_min = qmin - lo / scale
    zero = np.where(zero_from_min < qmin, qmin, np.where(zero_from_min > qmax, qmax, _round_half_away(zero_from_min)))
    zero = zero.astype(np.uint16).astype(F32)
    return ((qmin - zero) * scale).astype(F32), ((qmax - zero) * scale).astype(F32), scale.astype(F32), inv_scale.astype(F32)


def _zero_range(lo, hi):
    """Whether each range is [0, 0], and the ranges with those replaced by [-1, 1] (no 0 / 0)."""
    zero = (np.asarray(lo) == 0) & (np.asarray(hi) == 0)
    return zero, np.where(zero, F32(-1), lo), np.where(zero, F32(1), hi)


def _fake_quant(xp, x, lo, hi, quant_min, quant_max, divide=False):
    """Quantized x for float32 ranges lo, hi (scalars or per last-dimension channel). TF's Args
    and PerChannel kernels multiply by the inverse scale, its Vars kernel divides by it (``divide``):
    an input halfway between two steps can round either way (0.5 in [0, 1] at 4 bits: 8/15 for
    Args, 7/15 for Vars; seen in TF 2.21)."""
    zero_range, lo, hi = _zero_range(lo, hi)
    n_min, n_max, scale, inv_scale = nudge(lo, hi, quant_min, quant_max)
    quant_zero = np.floor((-n_min / scale if divide else -n_min * inv_scale) + F32(0.5)).astype(F32)
    n_min, n_max, scale, inv_scale, quant_zero = (xp.asarray(v) for v in (n_min, n_max, scale, inv_scale, quant_zero))
    clamped = xp.maximum(xp.minimum(x, n_max), n_min)
    steps = (clamped - n_min) / scale if divide else (clamped - n_min) * inv_scale
    out = xp.floor(steps - quant_zero + F32(0.5)) * scale
    return xp.where(xp.asarray(zero_range), F32(0), out).astype(F32)


def _inside(xp, x, lo, hi, quant_min, quant_max):
    """(x within the nudged range, below it, above it) as float32 masks; a [0, 0] range passes all."""
    zero_range, lo, hi = _zero_range(lo, hi)
    n_min, n_max, _, _ = nudge(lo, hi, quant_min, quant_max)
    n_min, n_max, zero_range = xp.asarray(n_min), xp.asarray(n_max), xp.asarray(zero_range)
    below, above = (x < n_min) & ~zero_range, (x > n_max) & ~zero_range
    inside = ((x >= n_min) & (x <= n_max)) | zero_range
    return inside.astype(F32), below.astype(F32), above.astype(F32)


# --- FakeQuantWithMinMaxArgs ------------------------------------------------------------------

_ARGS_ATTRS = ["min: float = -6.0", "max: float = 6.0", *_QUANT_ATTRS]


def _args_range(ctx) -> tuple[float, float]:
    lo, hi = F32(ctx.attrs["min"]), F32(ctx.attrs["max"])
    if not lo < hi:
        raise ctx.fail(f"min has to be smaller than max, was: {lo} >= {hi}")
    return lo, hi


register_op(
    "FakeQuantWithMinMaxArgs",
    inputs=["inputs: float32"],
    outputs=["outputs: float32"],
    attrs=_ARGS_ATTRS,
    shape=lambda ic: [ic.shape(0)],
    doc="inputs clamped to [min, max] (nudged so that 0 is a step) and rounded to one of "
    "2^num_bits steps (from 1 with narrow_range).",
)


@kernel("FakeQuantWithMinMaxArgs")
def _fq_args(ctx, x):
    lo, hi = _args_range(ctx)
    return _fake_quant(ctx.xp, x, lo, hi, *_quant_range(ctx))


register_op(
    "FakeQuantWithMinMaxArgsGradient",
    inputs=["gradients: float32", "inputs: float32"],
    outputs=["backprops: float32"],
    attrs=_ARGS_ATTRS,
    shape=lambda ic: [ic.shape(1)],
    doc="FakeQuantWithMinMaxArgs' gradient: gradients where inputs lie within the nudged range, else 0.",
)


@kernel("FakeQuantWithMinMaxArgsGradient")
def _fq_args_grad(ctx, dy, x):
    if dy.shape != x.shape:
        raise ctx.fail(f"gradients and inputs must have the same shape, got {list(dy.shape)} and {list(x.shape)}")
    lo, hi = _args_range(ctx)
    return dy * _inside(ctx.xp, x, lo, hi, *_quant_range(ctx))[0]


@gradient("FakeQuantWithMinMaxArgs")
def _fq_args_gradient(b, node, dys):
    attrs = {k: node.attrs[k] for k in ("min", "max", "num_bits", "narrow_range")}
    return [gu.emit(b, "FakeQuantWithMinMaxArgsGradient", dys[0], node.data_inputs[0], **attrs)]


# --- FakeQuantWithMinMaxVars and FakeQuantWithMinMaxVarsPerChannel ----------------------------


def _vars_range(ctx, lo, hi, per_channel: bool, x):
    lo, hi = np.asarray(ctx.host(lo), F32), np.asarray(ctx.host(hi), F32)
    if per_channel:
        depth = x.shape[-1] if x.ndim else None
        for name, v in (("min", lo), ("max", hi)):
            if v.shape != (depth,):
                raise ctx.fail(f"{name} must be a vector of the inputs' last dimension {depth}, got shape {list(v.shape)}")
    else:
        for name, v in (("min", lo), ("max", hi)):
            if v.ndim != 0:
                raise ctx.fail(f"`{name}` must be rank 0 but is rank {v.ndim}")
    return lo, hi


def _vars_shape(per_channel: bool, grad: bool):
    def shape(ic: InferenceContext) -> list[Shape]:
        x = ic.shape(1 if grad else 0)
        want = 1 if per_channel else 0
        for i in ((2, 3) if grad else (1, 2)):
            if ic.shape(i).rank not in (None, want):
                raise ic.fail(f"min and max must be {'vectors' if per_channel else 'scalars'}, got shape {ic.shape(i)}")
        if not grad:
            return [x]
        depth = Shape([x.dims[-1] if x.rank else None]) if per_channel else Shape([])
        return [x, depth, depth]

    return shape


def _register_vars(name: str, per_channel: bool, what: str) -> None:
    register_op(
        name,
        inputs=["inputs: float32", "min: float32", "max: float32"],
        outputs=["outputs: float32"],
        attrs=_QUANT_ATTRS,
        shape=_vars_shape(per_channel, False),
        doc=f"inputs clamped to [min, max] ({what}; nudged so that 0 is a step) and rounded to one of "
        "2^num_bits steps (from 1 with narrow_range); 0 for a [0, 0] range.",
    )
    register_op(
        name + "Gradient",
        inputs=["gradients: float32", "inputs: float32", "min: float32", "max: float32"],
        outputs=["backprops_wrt_input: float32", "backprop_wrt_min: float32", "backprop_wrt_max: float32"],
        attrs=_QUANT_ATTRS,
        shape=_vars_shape(per_channel, True),
        doc=f"{name}'s gradients: to inputs within the nudged range, and the sums of the gradients below "
        "it (to min) and above it (to max)" + (", per channel." if per_channel else "."),
    )

    @kernel(name, host_inputs=(1, 2))
    def _run(ctx, x, lo, hi):
        lo, hi = _vars_range(ctx, lo, hi, per_channel, x)
        return _fake_quant(ctx.xp, x, lo, hi, *_quant_range(ctx), divide=not per_channel)

    @kernel(name + "Gradient", host_inputs=(2, 3))
    def _run_grad(ctx, dy, x, lo, hi):
        if dy.shape != x.shape:
            raise ctx.fail(f"gradients and inputs must have the same shape, got {list(dy.shape)} and {list(x.shape)}")
        lo, hi = _vars_range(ctx, lo, hi, per_channel, x)
        inside, below, above = _inside(ctx.xp, x, lo, hi, *_quant_range(ctx))
        axes = tuple(range(x.ndim - 1)) if per_channel else None
        # a [0, 0] range's min and max gradients are 0, even where dy is inf or NaN (TF sets them)
        zero = ctx.xp.asarray(_zero_range(lo, hi)[0])
        with quiet_fp():  # (inf * 0 is NaN silently, as in TF)
            d_min = ctx.xp.where(zero, F32(0), (dy * below).sum(axis=axes))
            d_max = ctx.xp.where(zero, F32(0), (dy * above).sum(axis=axes))
            return dy * inside, d_min.astype(F32), d_max.astype(F32)

    @gradient(name)
    def _grad(b, node, dys):
        attrs = {k: node.attrs[k] for k in ("num_bits", "narrow_range")}
        return gu.outputs(b, name + "Gradient", 3, dys[0], *node.data_inputs, **attrs)

    not_differentiable(name + "Gradient")  # as in TF


_register_vars("FakeQuantWithMinMaxVars", False, "two scalars")
_register_vars("FakeQuantWithMinMaxVarsPerChannel", True, "one range per channel of the last dimension")
not_differentiable("FakeQuantWithMinMaxArgsGradient")  # as in TF
