"""Simulated quantization with TF's QuantizeAndDequantizeV2/V3/V4 and V4's gradient op
(tf.quantization.quantize_and_dequantize and _v2: one range for the tensor, or one per slice
along ``axis``).

TF's arithmetic (quantize_and_dequantize_op.h), in the input's own float type: the integer range
is [-2^(b-1) (+1 with narrow_range), 2^(b-1) - 1] signed or [0, 2^b - 1] unsigned; the range
[min, max] is the one given or the input's own (NaN ignored); the scale is the larger one that
keeps both ends inside the integer range, found from each side (the side whose sign cannot
reach it giving the float's max), and the other end is moved to match it. The output is
round(x * scale) * (1 / scale), x first clamped to the moved range only when the range was given
(an unsigned op on an input below 0 rounds it to a negative step). HALF_TO_EVEN rounds as
rint, HALF_UP as floor(x + 0.5). TF's gradients: V2 and V3 pass the gradient straight through;
V4's gradient op passes it where min <= x <= max (the inputs min and max, not the moved range)
and gives min and max zero gradients. (TF 2.21's V2 and V4 kernels refuse a per-slice range that
is given, "input_min must be a scalar.", a check of theirs that ignores axis; it is computed here as
its V3 kernel computes it.)
"""

from __future__ import annotations

import numpy as np

from specflow.graph.shapes import Shape
from specflow.ops import grad_util as gu
from specflow.ops.inference import InferenceContext
from specflow.ops.math_ops import quiet_fp
from specflow.ops.registry import gradient, kernel, register_op

_FLOATS = ("float32", "float64")  # TF's CPU and GPU kernels: float and double only
_T = "T: {bfloat16, float16, float32, float64}"
_ATTRS = ["signed_input: bool = true", "num_bits: int = 8", "range_given: bool = false", _T,
          "round_mode: {'HALF_TO_EVEN', 'HALF_UP'} = 'HALF_TO_EVEN'", "narrow_range: bool = false", "axis: int = -1"]  # fmt: skip


def _check_axis(c, axis: int, rank: int | None) -> None:
    if axis < -1:
        raise c.fail(f"axis must be at least -1, got {axis}")
    if axis != -1 and rank is not None and axis >= rank:
        raise c.fail(f"axis {axis} needs an input of rank at least {axis + 1}, got rank {rank}")


def _qdq_shape(ic: InferenceContext) -> list[Shape]:
    axis, x = int(ic.attr("axis")), ic.shape(0)
    _check_axis(ic, axis, x.rank)
    want = 0 if axis == -1 else 1
    for i, name in ((1, "input_min"), (2, "input_max")):
        if ic.shape(i).rank not in (None, want):
            raise ic.fail(f"{name} must be {'a scalar' if axis == -1 else 'a vector (one per slice along axis)'}, "
                          f"got shape {ic.shape(i)}")  # fmt: skip
    if ic.node.op == "QuantizeAndDequantizeV3" and ic.shape(3).rank not in (None, 0):
        raise ic.fail(f"num_bits must be a scalar, got shape {ic.shape(3)}")
    return [x]


def _bits_range(c, bits: int, signed: bool, narrow: bool) -> tuple[int, int]:
    if not 0 < bits < (62 if signed else 63):
        raise c.fail(f"num_bits is out of range: {bits} with signed_input {signed} "
                     f"(1 to {61 if signed else 62} bits)")  # fmt: skip
    if signed:
        return -(1 << (bits - 1)) + (1 if narrow else 0), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


def _ranges(ctx, x, lo, hi, axis: int):
    """The per-slice (min, max) as host arrays of x's dtype: [1] for the whole tensor, [depth]
    along axis; and x viewed as [outer, depth, inner]."""
    xp, t = ctx.xp, x.dtype
    _check_axis(ctx, axis, x.ndim)
    depth = 1 if axis == -1 else x.shape[axis]
    outer = 1 if axis == -1 else int(np.prod(x.shape[:axis], dtype=np.int64))
    inner = x.size if axis == -1 else int(np.prod(x.shape[axis + 1:], dtype=np.int64))
    x3 = x.reshape(outer, depth, inner)
    if ctx.attrs["range_given"]:
        lo, hi = (np.asarray(ctx.host(v), t) for v in (lo, hi))
        _check_range_shapes(ctx, lo, hi, axis, depth)
        lo, hi = lo.reshape(-1), hi.reshape(-1)
        if axis == -1 and not lo[0] <= hi[0]:
            raise ctx.fail(f"Invalid range: input_min {lo[0]} > input_max {hi[0]}")
        return lo.copy(), hi.copy(), x3
    # Eigen's min/max reductions start from the type's max/lowest and skip NaN
    big = t.type(np.finfo(t).max)
    if not x3.size:
        return np.full(depth, big, t), np.full(depth, -big, t), x3
    nan = xp.isnan(x3)
    lo, hi = xp.where(nan, big, x3).min(axis=(0, 2)), xp.where(nan, -big, x3).max(axis=(0, 2))
    return np.asarray(ctx.host(lo), t).reshape(-1), np.asarray(ctx.host(hi), t).reshape(-1), x3


def _check_range_shapes(c, lo, hi, axis: int, depth: int) -> None:
    for name, v in (("input_min", lo), ("input_max", hi)):
        if axis == -1 and v.ndim != 0:
            raise c.fail(f"{name} must be a scalar when axis is -1, got shape {list(v.shape)}")
        if axis != -1 and v.shape != (depth,):
            raise c.fail(f"{name} must be a vector of {depth} (dim {axis} of the input), got shape {list(v.shape)}")


def _scales(lo, hi, qmin: int, qmax: int):
    """TF's ComputeQuantizationRange per slice, in the float type of lo/hi: (moved lo, moved hi,
    scale, inverse scale)."""
    t = lo.dtype.type
    qmin_f, qmax_f, big = t(qmin), t(qmax), np.finfo(lo.dtype).max
    with quiet_fp():
        from_min = np.where(qmin_f * lo > 0, qmin_f / np.where(lo == 0, 1, lo), big).astype(lo.dtype)
        from_max = np.where(qmax_f * hi > 0, qmax_f / np.where(hi == 0, 1, hi), big).astype(lo.dtype)
        by_min = from_min < from_max
        scale = np.where(by_min, from_min, from_max)
        # qmin is 0 unsigned: that side never sets the scale, so the division never runs
        inv = np.where(by_min, lo / (qmin_f if qmin else t(1)), hi / qmax_f).astype(lo.dtype)
        lo = np.where(by_min, lo, qmin_f * inv).astype(lo.dtype)
        hi = np.where(by_min, qmax_f * inv, hi).astype(lo.dtype)
    return lo, hi, scale, inv


def _qdq(ctx, x, lo, hi, bits: int):
    xp = ctx.xp
    axis = int(ctx.attrs["axis"])
    qmin, qmax = _bits_range(ctx, bits, ctx.attrs["signed_input"], ctx.attrs["narrow_range"])
    lo, hi, x3 = _ranges(ctx, x, lo, hi, axis)
    lo, hi, scale, inv = (xp.asarray(v.reshape(1, -1, 1)) for v in _scales(lo, hi, qmin, qmax))
    with quiet_fp():
        if ctx.attrs["range_given"]:
            # as std::min/std::max: on equal values the first argument (0.0 against -0.0)
            x3 = xp.where(hi < x3, hi, x3)
            x3 = xp.where(x3 < lo, lo, x3)
        y = x3 * scale
        y = xp.floor(y + y.dtype.type(0.5)) if ctx.attrs.get("round_mode") == "HALF_UP" else xp.rint(y)
        return (y * inv).astype(x.dtype).reshape(x.shape)


def _register_qdq(name: str, v3: bool) -> None:
    attrs = [a for a in _ATTRS if not (v3 and a.startswith(("num_bits", "round_mode")))]
    if v3:  # V3: num_bits an input, range_given on by default, always HALF_TO_EVEN
        attrs = [a.replace("range_given: bool = false", "range_given: bool = true") for a in attrs]
    register_op(
        name,
        inputs=["input: T", "input_min: T", "input_max: T", *(["num_bits: int32"] if v3 else [])],
        outputs=["output: T"],
        attrs=attrs,
        shape=_qdq_shape,
        doc="input quantized to num_bits integers (signed or not; one scale for the tensor, or per "
        "slice along axis) over [input_min, input_max] or, unless range_given, the input's own "
        "range, and scaled back: TF's simulated quantization" + (" (num_bits as a tensor)." if v3 else "."),
    )

    @kernel(name, host_inputs=(1, 2, 3) if v3 else (1, 2), T=_FLOATS)
    def _run(ctx, x, lo, hi, *num_bits):
        if v3:
            nb = ctx.host(num_bits[0])
            if nb.ndim != 0:
                raise ctx.fail(f"num_bits must be a scalar, got shape {list(nb.shape)}")
            bits = int(nb)
        else:
            bits = int(ctx.attrs["num_bits"])
        return _qdq(ctx, x, lo, hi, bits)


_register_qdq("QuantizeAndDequantizeV2", v3=False)
_register_qdq("QuantizeAndDequantizeV3", v3=True)
_register_qdq("QuantizeAndDequantizeV4", v3=False)


@gradient("QuantizeAndDequantizeV2")
def _qdq_v2_grad(b, node, dys):
    return [dys[0], None, None]  # TF's: straight through, everywhere


@gradient("QuantizeAndDequantizeV3")
def _qdq_v3_grad(b, node, dys):
    return [dys[0], None, None, None]


@gradient("QuantizeAndDequantizeV4")
def _qdq_v4_grad(b, node, dys):
    x, lo, hi = node.data_inputs
    return gu.outputs(b, "QuantizeAndDequantizeV4Grad", 3, dys[0], x, lo, hi, axis=node.attrs["axis"])


# --- QuantizeAndDequantizeV4Grad ------------------------------------------------------------------


def _v4_grad_shape(ic: InferenceContext) -> list[Shape]:
    axis, x = int(ic.attr("axis")), ic.shape(1)
    _check_axis(ic, axis, x.rank)
    if not ic.shape(0).is_compatible_with(x):
        raise ic.fail(f"gradients {ic.shape(0)} and input {x} must have the same shape")
    want = 0 if axis == -1 else 1
    for i, name in ((2, "input_min"), (3, "input_max")):
        if ic.shape(i).rank not in (None, want):
            raise ic.fail(f"{name} must be {'a scalar' if axis == -1 else 'a vector'}, got shape {ic.shape(i)}")
    return [x, ic.shape(2), ic.shape(3)]


register_op(
    "QuantizeAndDequantizeV4Grad",
    inputs=["gradients: T", "input: T", "input_min: T", "input_max: T"],
    outputs=["input_backprop: T", "input_min_backprop: T", "input_max_backprop: T"],
    attrs=[_T, "axis: int = -1"],
    shape=_v4_grad_shape,
    doc="QuantizeAndDequantizeV4's gradient: gradients where input_min <= input <= input_max (per "
    "slice along axis), else 0; zero gradients for input_min and input_max.",
)


@kernel("QuantizeAndDequantizeV4Grad", host_inputs=(2, 3), T=_FLOATS)
def _qdq_v4_grad_kernel(ctx, dy, x, lo, hi):
    xp, axis = ctx.xp, int(ctx.attrs["axis"])
    if dy.shape != x.shape:
        raise ctx.fail(f"gradients {list(dy.shape)} and input {list(x.shape)} must have the same shape")
    _check_axis(ctx, axis, x.ndim)
    lo, hi = np.asarray(ctx.host(lo), x.dtype), np.asarray(ctx.host(hi), x.dtype)
    depth = 1 if axis == -1 else x.shape[axis]
    _check_range_shapes(ctx, lo, hi, axis, depth)
    shape = [1] * x.ndim
    if axis != -1:
        shape[axis] = depth
    inside = (x >= xp.asarray(lo.reshape(shape))) & (x <= xp.asarray(hi.reshape(shape)))
    with quiet_fp():  # a multiplication, as TF's: -dy * 0 is -0.0, inf * 0 NaN
        grad = dy * inside.astype(x.dtype)
    return grad, xp.zeros(lo.shape, x.dtype), xp.zeros(hi.shape, x.dtype)

# No gradient: TF registers one for it that cannot run (it takes one output gradient of three),
# so a second derivative through it fails in TF too.
