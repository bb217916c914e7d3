"""ScaleAndTranslate and ScaleAndTranslateGrad: what tf.image.resize runs for antialias=True and for
the lanczos3/5, gaussian and mitchellcubic methods (TF's scale_and_translate_op.cc and
sampling_kernels.h).

Each output row (then column) samples the input at ``(o + 0.5) / scale - translation / scale``
with a kernel that is widened by 1 / scale when antialiasing a downscale; the weights over the
kernel's span of input pixels are normalized to sum to 1, and an output sampled outside the image
gets none (zero). Rows are resized first, then columns, in float32, as TF; here each pass is one
product with a dense [out, in] weight matrix, and the gradient is the two transposed products.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from specflow.graph.shapes import Shape
from specflow.ops import grad_util as gu
from specflow.ops.inference import InferenceContext
from specflow.ops.registry import gradient, kernel, not_differentiable, register_op

_PI = np.float32(3.14159265359)


def _lanczos(radius: float):
    def f(x):
        x = np.abs(x)
        with np.errstate(divide="ignore", invalid="ignore"):
            v = radius * np.sin(_PI * x) * np.sin(_PI * x / radius) / (_PI * _PI * x * x)
        return np.where(x > radius, 0.0, np.where(x <= 1e-3, 1.0, v))

    return f, radius


def _gaussian(x):
    x, sigma = np.abs(x), 1.5 / 3.0
    return np.where(x >= 1.5, 0.0, np.exp(-x * x / (2.0 * sigma * sigma)))


def _box(x):
    x = np.abs(x)
    return np.where(x < 0.5, 1.0, np.where(x == 0.5, 0.5, 0.0))


def _triangle(x):
    x = np.abs(x)
    return np.where(x < 1.0, 1.0 - x, 0.0)


def _keys_cubic(x):
    x = np.abs(x)
    return np.where(x >= 2.0, 0.0, np.where(x >= 1.0, ((-0.5 * x + 2.5) * x - 4.0) * x + 2.0,
                                            ((1.5 * x - 2.5) * x) * x + 1.0))


def _mitchell_cubic(x):
    x = np.abs(x)
    return np.where(x >= 2.0, 0.0, np.where(x >= 1.0, (((-7.0 / 18.0) * x + 2.0) * x - 10.0 / 3.0) * x + 16.0 / 9.0,
                                            (((7.0 / 6.0) * x - 2.0) * x) * x + 8.0 / 9.0))


KERNELS = {
    "lanczos1": _lanczos(1.0), "lanczos3": _lanczos(3.0), "lanczos5": _lanczos(5.0),
    "gaussian": (_gaussian, 1.5), "box": (_box, 1.0), "triangle": (_triangle, 1.0),
    "keyscubic": (_keys_cubic, 2.0), "mitchellcubic": (_mitchell_cubic, 2.0),
}


@functools.lru_cache(maxsize=256)
def span_weights(kernel_type: str, out_size: int, in_size: int, scale: float, translate: float, antialias: bool):
    """The [out_size, in_size] float32 matrix of TF's ComputeSpans: row o holds the normalized
    kernel weights of the input pixels output o samples."""
    fn, radius = KERNELS[kernel_type]
    f32 = np.float32
    inv_scale = f32(1.0 / f32(scale))
    inv_translate = f32(-inv_scale * f32(translate))
    kernel_scale = f32(max(inv_scale, f32(1.0))) if antialias else f32(1.0)
    reach = f32(radius) * kernel_scale
    weights = np.zeros((out_size, in_size), np.float32)
    for o in range(out_size):
        sample = f32(f32(o) + f32(0.5)) * inv_scale + inv_translate
        if sample < 0 or sample > in_size:
            continue  # outside the image: no weights (a zero output)
        start = min(max(math.ceil(sample - reach - f32(0.5)), 0), in_size - 1)
        end = min(max(math.floor(sample + reach - f32(0.5)), 0), in_size - 1) + 1
        pos = (np.arange(start, end, dtype=np.float32) + f32(0.5) - sample) / kernel_scale
        w = fn(pos.astype(np.float64)).astype(np.float32)
        total = np.float32(w.sum(dtype=np.float32))
        if abs(total) >= 1000.0 * np.finfo(np.float32).tiny:
            weights[o, start:end] = w * (f32(1.0) / total)
    weights.setflags(write=False)
    return weights


def _check(c, kernel_type: str) -> None:
    if kernel_type not in KERNELS:
        raise c.fail(f"unknown kernel_type '{kernel_type}'; one of {', '.join(sorted(KERNELS))}")


def _pair(c, value, what: str) -> tuple[float, float]:
    v = np.asarray(value, np.float32)
    if v.shape != (2,):
        raise c.fail(f"{what} must be a vector of 2 values (height, width), got shape {list(v.shape)}")
    return float(v[0]), float(v[1])


def _matrices(c, in_hw, out_hw, scale, translation):
    sy, sx = _pair(c, scale, "scale")
    ty, tx = _pair(c, translation, "translation")
    if sy <= 0 or sx <= 0:
        raise c.fail(f"scale must be positive, got {[sy, sx]}")
    k, aa = c.attrs["kernel_type"], c.attrs["antialias"]
    _check(c, k)
    return (span_weights(k, out_hw[0], in_hw[0], sy, ty, aa), span_weights(k, out_hw[1], in_hw[1], sx, tx, aa))


def _st_shape(ic: InferenceContext) -> list[Shape]:
    _check(ic, ic.attrs["kernel_type"])
    x = ic.shape(0)
    if x.rank not in (None, 4):
        raise ic.fail(f"images must be 4-D [batch, height, width, channels], got shape {x}")
    size = ic.value(1)
    oh, ow = (None, None) if size is None else (int(size[0]), int(size[1]))
    n, ch = (x[0], x[3]) if x.rank == 4 else (None, None)
    return [Shape([n, oh, ow, ch])]


_ATTRS = ['kernel_type: string = "lanczos3"', "antialias: bool = true"]

register_op(
    "ScaleAndTranslate",
    inputs=["images: T", "size: int32", "scale: float32", "translation: float32"],
    outputs=["resized_images: float32"],
    attrs=["T: {int8, uint8, int16, uint16, int32, int64, float16, float32, float64}", *_ATTRS],
    shape=_st_shape,
    doc="Resamples [batch, height, width, channels] images to `size` with a sampling kernel (kernel_type: "
    "lanczos1/3/5, gaussian, box, triangle, keyscubic, mitchellcubic), output = input * scale + "
    "translation; antialias widens the kernel when downscaling (tf.image.resize with antialias=True).",
)


@kernel("ScaleAndTranslate", host_inputs=(1, 2, 3))
def _scale_and_translate(ctx, images, size, scale, translation):
    xp = ctx.xp
    if images.ndim != 4:
        raise ctx.fail(f"images must be 4-D [batch, height, width, channels], got shape {list(images.shape)}")
    dims = np.asarray(ctx.host(size))
    if dims.shape != (2,) or (dims <= 0).any():
        raise ctx.fail(f"size must be 2 positive sizes (height, width), got {dims.tolist()}")
    n, h, w, c = images.shape
    if h == 0 or w == 0:
        raise ctx.fail(f"cannot resize an empty image (shape {list(images.shape)})")
    rows, cols = _matrices(ctx, (h, w), (int(dims[0]), int(dims[1])), ctx.host(scale), ctx.host(translation))
    x = images.astype(np.float32, copy=False)
    mid = xp.einsum("yh,nhwc->nywc", xp.asarray(rows), x)
    return xp.einsum("xw,nywc->nyxc", xp.asarray(cols), mid).astype(np.float32, copy=False)


@gradient("ScaleAndTranslate")
def _scale_and_translate_gradient(b, node, dys):
    images, _, scale, translation = node.data_inputs
    grad = gu.emit(b, "ScaleAndTranslateGrad", dys[0], images, scale, translation,
                   kernel_type=node.attrs["kernel_type"], antialias=node.attrs["antialias"])
    return [grad, None, None, None]


register_op(
    "ScaleAndTranslateGrad",
    inputs=["grads: T", "original_image: T", "scale: float32", "translation: float32"],
    outputs=["output: T"],
    attrs=["T: {float32}", *_ATTRS],
    shape=lambda ic: [ic.shape(1)],
    doc="The gradient of ScaleAndTranslate with respect to its images: the transposed resampling.",
)


@kernel("ScaleAndTranslateGrad", host_inputs=(2, 3))
def _scale_and_translate_grad(ctx, grads, original, scale, translation):
    xp = ctx.xp
    if grads.ndim != 4 or original.ndim != 4 or grads.shape[0] != original.shape[0] or grads.shape[3] != original.shape[3]:
        raise ctx.fail(f"grads {list(grads.shape)} and original_image {list(original.shape)} must be 4-D with the "
                       "same batch and channels")
    _, h, w, _ = original.shape
    rows, cols = _matrices(ctx, (h, w), grads.shape[1:3], ctx.host(scale), ctx.host(translation))
    mid = xp.einsum("xw,nyxc->nywc", xp.asarray(cols), grads)
    return xp.einsum("yh,nywc->nhwc", xp.asarray(rows), mid).astype(original.dtype, copy=False)


not_differentiable("ScaleAndTranslateGrad")
