"""Colour ops on images whose last dimension is (red, green, blue): RGBToHSV (with TF's gradient,
image_grad.py), HSVToRGB, AdjustContrastv2, AdjustSaturation and AdjustHue (no gradients, as in
TF).

The arithmetic is TF's: RGBToHSV and HSVToRGB as its Eigen expressions (colorspace_op.h: hue in
[0, 1), 0 for grey; HSVToRGB by the piecewise-linear channel ramps of 6 h), AdjustSaturation
through its own per-pixel HSV round trip (hue sextants, adjust_saturation_op.cc) and AdjustHue
by moving the hue within the pixel's (min, max) range (adjust_hue_op.cc); the adjust ops compute
in float32 as TF does.
"""

from __future__ import annotations

import numpy as np

from specflow.graph.shapes import Shape
from specflow.ops import grad_util as gu
from specflow.ops.inference import InferenceContext
from specflow.ops.registry import gradient, kernel, not_differentiable, register_op


def _rgb_shape(ic: InferenceContext) -> list[Shape]:
    s = ic.shape(0)
    if s.rank is not None and (s.rank < 1 or s.dims[-1] not in (None, 3)):
        raise ic.fail(f"images must have 3 channels in the last dimension, got shape {s}")
    for i in range(1, ic.num_inputs):
        if ic.shape(i).rank not in (None, 0):
            raise ic.fail(f"{ic.node.op}'s factor must be a scalar, got shape {ic.shape(i)}")
    return [s]


def _check_rgb(ctx, images, min_rank: int = 1) -> None:
    if images.ndim < min_rank or images.shape[-1] != 3:
        need = "at least 3-D with " if min_rank > 1 else ""
        raise ctx.fail(f"images must be {need}3 channels in the last dimension, got shape {list(images.shape)}")


def _scalar(ctx, value, what: str) -> float:
    v = np.asarray(ctx.host(value))
    if v.ndim != 0:
        raise ctx.fail(f"{what} must be a scalar, got shape {list(v.shape)}")
    return float(v)


# --- RGBToHSV and HSVToRGB --------------------------------------------------------------------

_FLOATS = "T: {float16, float32, float64} = float32"

register_op("RGBToHSV", inputs=["images: T"], outputs=["output: T"], attrs=[_FLOATS], shape=_rgb_shape,
            doc="RGB pixels (last dimension 3, values in [0, 1]) as (hue, saturation, value), each in [0, 1]; "
            "a grey pixel's hue is 0.")  # fmt: skip


def rgb_to_hsv(xp, rgb):
    """TF's (hue, saturation, value) of ``rgb`` [..., 3], hue in [0, 1)."""
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    v = xp.maximum(xp.maximum(r, g), b)
    spread = v - xp.minimum(xp.minimum(r, g), b)
    s = xp.where(v > 0, spread / xp.where(v > 0, v, 1), 0)
    norm = 1 / (6 * xp.where(spread > 0, spread, 1))  # (grey pixels' hue is 0 below)
    one, two = rgb.dtype.type(1), rgb.dtype.type(2)
    h = xp.where(r == v, norm * (g - b), xp.where(g == v, norm * (b - r) + two / 6, norm * (r - g) + 4 * one / 6))
    h = xp.where(spread > 0, h, 0)
    h = xp.where(h < 0, h + 1, h)
    return xp.stack([h, s, v], axis=-1).astype(rgb.dtype)


@kernel("RGBToHSV")
def _rgb_to_hsv(ctx, images):
    _check_rgb(ctx, images)
    return rgb_to_hsv(ctx.xp, images)


@gradient("RGBToHSV")
def _rgb_to_hsv_grad(b, node, dys):
    # TF's: value follows the largest channel (ties to red, then green), saturation 1 - min/max
    # (its part for a channel at 0 taken as 0), hue (a - b) / 6 (max - min) of the two channels
    # after the largest, each part 0 where its divisor is (div_no_nan).
    x, y = node.data_inputs[0], node.name
    dtype = b.spec(x).dtype
    r, g, bl = gu.outputs(b, "Unpack", 3, x, num=3, axis=-1)
    _, sat, val = gu.outputs(b, "Unpack", 3, y, num=3, axis=-1)
    dh, ds, dv = gu.outputs(b, "Unpack", 3, dys[0], num=3, axis=-1)

    def mask(op1, a1, b1, op2, a2, b2):
        return gu.emit(b, "Cast", gu.emit(b, "LogicalAnd", gu.emit(b, op1, a1, b1), gu.emit(b, op2, a2, b2)),
                       DstT=dtype)  # fmt: skip

    def add(*ts):
        return gu.emit(b, "AddN", *ts) if len(ts) > 1 else ts[0]

    def mul(*ts):
        return gu.product(b, *ts)

    def sub(a1, b1):
        return gu.emit(b, "Sub", a1, b1)

    big = [mask("GreaterEqual", r, bl, "GreaterEqual", r, g), mask("Greater", g, r, "GreaterEqual", g, bl),
           mask("Greater", bl, r, "Greater", bl, g)]  # fmt: skip
    small = [mask("Less", r, bl, "Less", r, g), mask("LessEqual", g, r, "Less", g, bl),
             mask("LessEqual", bl, r, "LessEqual", bl, g)]  # fmt: skip
    chans = [r, g, bl]
    one = gu.const(b, 1, dtype)
    low = add(*(mul(small[i], chans[i]) for i in range(3)))
    spread = gu.emit(b, "Mul", sat, val)  # max - min
    # The hue's numerator: (g - b), (b - r) or (r - g) for red, green or blue the largest.
    num = add(*(mul(big[i], sub(chans[(i + 1) % 3], chans[(i + 2) % 3])) for i in range(3)))
    inv_spread = gu.emit(b, "DivNoNan", one, spread)
    inv_6spread = gu.emit(b, "Mul", inv_spread, gu.const(b, 1 / 6, dtype))
    lit = gu.emit(b, "Cast", gu.emit(b, "Greater", val, gu.const(b, 0, dtype)), DstT=dtype)
    grads = []
    for i in range(3):
        # d num / d channel i: +1 where it is the first after the largest, -1 where the second.
        dnum = sub(big[(i - 1) % 3], big[(i - 2) % 3])
        dspread = sub(big[i], small[i])
        dh_di = mul(lit, sub(dnum, mul(num, dspread, inv_spread)), inv_6spread)
        ds_di = mul(gu.emit(b, "Cast", gu.emit(b, "Greater", chans[i], gu.const(b, 0, dtype)), DstT=dtype),
                    sub(mul(big[i], low, gu.emit(b, "DivNoNan", one, gu.emit(b, "Square", val))),
                        mul(small[i], gu.emit(b, "DivNoNan", one, val))))  # fmt: skip
        grads.append(add(mul(dh, dh_di), mul(ds, ds_di), mul(dv, big[i])))
    return [gu.emit(b, "Pack", *grads, N=3, axis=-1)]


register_op("HSVToRGB", inputs=["images: T"], outputs=["output: T"], attrs=[_FLOATS], shape=_rgb_shape,
            doc="(hue, saturation, value) pixels, each in [0, 1], as RGB.")  # fmt: skip


def hsv_to_rgb(xp, hsv):
    """TF's RGB of ``hsv`` [..., 3]: each channel a ramp of 6 h clipped to [0, 1], mixed with
    white by s and scaled by v."""
    h, s, v = hsv[..., 0], hsv[..., 1], hsv[..., 2]
    t = hsv.dtype.type
    dh = h * t(6)
    ramps = [xp.clip(xp.abs(dh - t(3)) - t(1), 0, 1), xp.clip(t(2) - xp.abs(dh - t(2)), 0, 1),
             xp.clip(t(2) - xp.abs(dh - t(4)), 0, 1)]  # fmt: skip
    one_s = t(1) - s
    return xp.stack([(one_s + s * ramp) * v for ramp in ramps], axis=-1).astype(hsv.dtype)


@kernel("HSVToRGB")
def _hsv_to_rgb(ctx, images):
    _check_rgb(ctx, images)
    return hsv_to_rgb(ctx.xp, images)


# --- AdjustContrastv2 -------------------------------------------------------------------------


def _image_shape(ic: InferenceContext) -> list[Shape]:
    s = ic.shape(0)
    if s.rank is not None and s.rank < 3:
        raise ic.fail(f"images must be at least 3-D [..., height, width, channels], got shape {s}")
    if ic.shape(1).rank not in (None, 0):
        raise ic.fail(f"{ic.node.op}'s factor must be a scalar, got shape {ic.shape(1)}")
    return [s]


register_op(
    "AdjustContrastv2",
    inputs=["images: T", "contrast_factor: float32"],
    outputs=["output: T"],
    attrs=["T: {float16, float32} = float32"],
    shape=_image_shape,
    doc="Each channel of each image moved away from its mean over the image by contrast_factor: "
    "(x - mean) * factor + mean, over the last three dimensions [height, width, channels].",
)


@kernel("AdjustContrastv2", host_inputs=(1,))
def _adjust_contrast(ctx, images, factor):
    if images.ndim < 3:
        raise ctx.fail(f"images must be at least 3-D, got shape {list(images.shape)}")
    f = np.float32(_scalar(ctx, factor, "contrast_factor"))
    x = images.astype(np.float32)
    mean = x.mean(axis=(-3, -2), keepdims=True, dtype=np.float32)
    return ((x - mean) * f + mean).astype(images.dtype)


# --- AdjustSaturation and AdjustHue: per-pixel HSV arithmetic in float32 ----------------------


def _sextant_hsv(xp, rgb):
    """TF's adjust ops' (h in [0, 6), s, v): which channels are max, mid and min picks the sextant."""
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    v = xp.maximum(xp.maximum(r, g), b)
    spread = v - xp.minimum(xp.minimum(r, g), b)
    s = xp.where(v > 0, spread / xp.where(v > 0, v, 1), 0)
    norm = 1 / (6 * xp.where(spread > 0, spread, 1))
    h = xp.where(r == v, norm * (g - b), xp.where(g == v, norm * (b - r) + np.float32(2 / 6),
                                                 norm * (r - g) + np.float32(4 / 6)))  # fmt: skip
    h = xp.where(spread <= 0, 0, h)
    h = xp.where(h < 0, h + 1, h)
    return h, s, v


def _hsv_sextant_rgb(xp, h, s, v):
    """TF's adjust_saturation hsv_to_rgb: chroma s v spread over the sextant int(6 h)."""
    c = s * v
    m = v - c
    dh = h * np.float32(6)
    sextant = dh.astype(np.int32)
    wrapped = dh - 2 * xp.floor(dh / 2)  # 6 h mod 2 (h >= 0 here)
    x = c * (1 - xp.abs(wrapped - 1))
    zero = xp.zeros_like(c)
    table = [(c, x, zero), (x, c, zero), (zero, c, x), (zero, x, c), (x, zero, c), (c, zero, x)]
    out = [xp.zeros_like(c) for _ in range(3)]
    for k, chans in enumerate(table):
        for ch in range(3):
            out[ch] = xp.where(sextant == k, chans[ch], out[ch])
    return xp.stack([o + m for o in out], axis=-1)


def _adjust_args(ctx, images, factor, what):
    _check_rgb(ctx, images)
    return images.astype(np.float32), np.float32(_scalar(ctx, factor, what))


register_op(
    "AdjustSaturation",
    inputs=["images: T", "scale: float32"],
    outputs=["output: T"],
    attrs=["T: {float16, float32, float64} = float32"],
    shape=_rgb_shape,
    doc="RGB images (last dimension 3) with each pixel's HSV saturation multiplied by scale and "
    "clipped to [0, 1].",
)


@kernel("AdjustSaturation", host_inputs=(1,))
def _adjust_saturation(ctx, images, scale):
    xp = ctx.xp
    x, k = _adjust_args(ctx, images, scale, "scale")
    h, s, v = _sextant_hsv(xp, x)
    return _hsv_sextant_rgb(xp, h, xp.clip(s * k, 0, 1), v).astype(images.dtype)


register_op(
    "AdjustHue",
    inputs=["images: T", "delta: float32"],
    outputs=["output: T"],
    attrs=["T: {float16, float32, float64} = float32"],
    shape=_rgb_shape,
    doc="RGB images (last dimension 3) with each pixel's hue turned by delta (a fraction of the "
    "colour circle), its smallest and largest channel kept.",
)


@kernel("AdjustHue", host_inputs=(1,))
def _adjust_hue(ctx, images, delta):
    # TF's: the hue as a sextant plus the middle channel's place between min and max; delta * 6
    # added, wrapped into [0, 6); the sextant says which channel gets min, mid and max.
    xp = ctx.xp
    x, d = _adjust_args(ctx, images, delta, "delta")
    r, g, b = x[..., 0], x[..., 1], x[..., 2]
    r_lt_g = r < g
    sextant = xp.where(r_lt_g, xp.where(b < r, 1, xp.where(b > g, 3, 2)), xp.where(b < g, 0, xp.where(b > r, 4, 5)))
    mid = xp.select([sextant == k for k in range(6)], [g, r, b, g, r, b])
    hi = xp.select([sextant == k for k in range(6)], [r, g, g, b, b, r])
    lo = xp.select([sextant == k for k in range(6)], [b, b, r, r, g, g])
    spread = hi - lo
    ratio = (mid - lo) / xp.where(spread == 0, 1, spread)
    even = sextant % 2 == 0
    h = xp.where(spread == 0, np.float32(0), sextant.astype(np.float32) + xp.where(even, ratio, 1 - ratio))
    h = h + d * np.float32(6)
    h = xp.where(h < 0, h + np.float32(6) * xp.ceil(-h / np.float32(6)), h)
    h = xp.where(h >= 6, h - np.float32(6) * xp.floor(h / np.float32(6)), h)
    cat = xp.minimum(h.astype(np.int32), 5)
    frac = h - cat.astype(np.float32)
    frac = xp.where(cat % 2 == 0, frac, 1 - frac)
    mid = lo + frac * (hi - lo)
    table = [(hi, mid, lo), (mid, hi, lo), (lo, hi, mid), (lo, mid, hi), (mid, lo, hi), (hi, lo, mid)]
    out = [xp.select([cat == k for k in range(6)], [row[ch] for row in table]) for ch in range(3)]
    return xp.stack(out, axis=-1).astype(images.dtype)


not_differentiable("HSVToRGB", "AdjustContrastv2", "AdjustSaturation", "AdjustHue")  # as in TF
