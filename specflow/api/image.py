"""``sf.image``: TensorFlow 2's ``tf.image`` functions over the image ops (ops/image_ops.py,
scale_translate_ops.py, color_ops.py), each emitting the ops TF's wrapper emits: ``resize``
(bilinear/nearest/bicubic with half-pixel centres, area, and the antialiased or
lanczos/gaussian/mitchellcubic kernels through ScaleAndTranslate), flips, ``rot90``, crops and
pads, grayscale, ``convert_image_dtype``, ``per_image_standardization``, brightness, contrast,
saturation and hue. Images are [height, width, channels] or [batch, height, width, channels]."""

from __future__ import annotations

import numpy as np

from specflow.api.op_functions import call
from specflow.api.tensor import Tensor
from specflow.api.tf_names import _t, cast, expand_dims, reverse, squeeze
from specflow.api.tf_names import transpose as _transpose
from specflow.graph import dtypes
from specflow.graph.dtypes import as_dtype


class ResizeMethod:
    BILINEAR = "bilinear"
    NEAREST_NEIGHBOR = "nearest"
    BICUBIC = "bicubic"
    AREA = "area"
    LANCZOS3 = "lanczos3"
    LANCZOS5 = "lanczos5"
    GAUSSIAN = "gaussian"
    MITCHELLCUBIC = "mitchellcubic"


_KERNELS = {"bilinear": "triangle", "bicubic": "keyscubic", "area": "box", "lanczos3": "lanczos3",
            "lanczos5": "lanczos5", "gaussian": "gaussian", "mitchellcubic": "mitchellcubic"}


def _batched(images):
    """(images as a 4-D tensor, whether a batch dim was added)."""
    x = _t(images)
    if x.shape.rank == 3:
        return expand_dims(x, 0), True
    if x.shape.rank != 4:
        raise ValueError(f"'images' must have either 3 or 4 dimensions, got shape {x.shape}")
    return x, False


def _unbatched(x, added: bool):
    return squeeze(x, [0]) if added else x


def resize(images, size, method: str = ResizeMethod.BILINEAR, preserve_aspect_ratio: bool = False,
           antialias: bool = False, name: str | None = None):
    """tf.image.resize (v2): float32 out, except ``nearest``, which keeps the dtype."""
    x, added = _batched(images)
    if method not in _KERNELS and method != "nearest":
        raise ValueError(f"Resize method is not implemented: [{method}]")
    h, w = x.shape[1], x.shape[2]
    new_h, new_w = (int(v) for v in np.asarray(size).reshape(-1)[:2])
    if preserve_aspect_ratio:
        if h is None or w is None:
            raise ValueError("preserve_aspect_ratio needs the image's height and width known statically")
        scale = min(new_h / h, new_w / w)
        new_h, new_w = max(int(h * scale), 1), max(int(w * scale), 1)
    target = np.array([new_h, new_w], np.int32)
    if method == "nearest":
        out = call("ResizeNearestNeighbor", x, target, align_corners=False, half_pixel_centers=True)
    elif method == "area":  # (TF's area ignores antialias)
        out = call("ResizeArea", x, target, align_corners=False)
    elif antialias or method in ("lanczos3", "lanczos5", "gaussian", "mitchellcubic"):
        if h is None or w is None:
            raise ValueError(f"resize with {method} (antialias={antialias}) needs the image's size known statically")
        scale = np.array([new_h / h, new_w / w], np.float32)
        out = call("ScaleAndTranslate", x, target, scale, np.zeros(2, np.float32), kernel_type=_KERNELS[method],
                   antialias=antialias)
    elif method == "bilinear":
        out = call("ResizeBilinear", x, target, align_corners=False, half_pixel_centers=True)
    else:
        out = call("ResizeBicubic", x, target, align_corners=False, half_pixel_centers=True)
    if method != "nearest" and out.dtype != dtypes.float32:
        out = cast(out, "float32")
    return _unbatched(out, added)


def flip_left_right(image):
    x = _t(image)
    return reverse(x, [x.shape.rank - 2])


def flip_up_down(image):
    x = _t(image)
    return reverse(x, [x.shape.rank - 3])


def rot90(image, k: int = 1, name: str | None = None):
    """Counter-clockwise by 90 degrees ``k`` times (TF's: flips and transposes)."""
    x, added = _batched(image)
    k = int(k) % 4
    if k == 1:
        x = reverse(_transpose(x, [0, 2, 1, 3]), [1])
    elif k == 2:
        x = reverse(x, [1, 2])
    elif k == 3:
        x = reverse(_transpose(x, [0, 2, 1, 3]), [2])
    return _unbatched(x, added)


def transpose(image, name: str | None = None):
    """TF's ``tf.image.transpose``: height and width swapped ([H, W, C] or [N, H, W, C])."""
    x, added = _batched(image)
    return _unbatched(_transpose(x, [0, 2, 1, 3], name=None if added else name), added)


transpose_image = transpose


def crop_to_bounding_box(image, offset_height: int, offset_width: int, target_height: int, target_width: int):
    x, added = _batched(image)
    begin = np.array([0, offset_height, offset_width, 0], np.int32)
    size = np.array([-1, target_height, target_width, -1], np.int32)
    return _unbatched(call("Slice", x, begin, size), added)


def pad_to_bounding_box(image, offset_height: int, offset_width: int, target_height: int, target_width: int):
    x, added = _batched(image)
    h, w = x.shape[1], x.shape[2]
    after_h, after_w = target_height - offset_height - h, target_width - offset_width - w
    if min(offset_height, offset_width, after_h, after_w) < 0:
        raise ValueError("the image does not fit in the target box at that offset")
    paddings = np.array([[0, 0], [offset_height, after_h], [offset_width, after_w], [0, 0]], np.int32)
    return _unbatched(call("Pad", x, paddings), added)


def central_crop(image, central_fraction: float):
    """TF's: the central fraction of height and width (integer offsets as TF rounds them)."""
    if not 0.0 < central_fraction <= 1.0:
        raise ValueError("central_fraction must be within (0, 1]")
    x, added = _batched(image)
    if central_fraction == 1.0:
        return _unbatched(x, added)
    h, w = x.shape[1], x.shape[2]
    off_h = int((h - h * central_fraction) / 2)
    off_w = int((w - w * central_fraction) / 2)
    return _unbatched(crop_to_bounding_box(x, off_h, off_w, h - 2 * off_h, w - 2 * off_w), added)


def rgb_to_grayscale(images, name: str | None = None):
    """TF's weights (0.2989, 0.5870, 0.1140) in float, keeping a last dim of 1."""
    x = _t(images)
    flt = convert_image_dtype(x, "float32")
    weights = np.array([0.2989, 0.5870, 0.1140], np.float32)
    gray = call("Sum", flt * weights, np.int32(-1), keep_dims=True)
    return convert_image_dtype(gray, x.dtype)


def grayscale_to_rgb(images, name: str | None = None):
    x = _t(images)
    multiples = np.ones(x.shape.rank, np.int32)
    multiples[-1] = 3
    return call("Tile", x, multiples)


def convert_image_dtype(image, dtype, saturate: bool = False, name: str | None = None):
    """TF's: integers scale to [0, MAX], floats to [0, 1]; float -> int multiplies by MAX + 0.5."""
    x = _t(image)
    dtype = as_dtype(dtype)
    if x.dtype == dtype:
        return x
    src_int, dst_int = x.dtype.is_integer, dtype.is_integer
    if src_int and dst_int:
        smax, dmax = np.iinfo(x.dtype.numpy).max, np.iinfo(dtype.numpy).max
        if smax > dmax:
            scale = (smax + 1) // (dmax + 1)
            return cast(call("FloorDiv", x, np.asarray(scale, x.dtype.numpy)), dtype)
        scale = (dmax + 1) // (smax + 1)
        return cast(x, dtype) * np.asarray(scale, dtype.numpy)
    if not src_int and not dst_int:
        return cast(x, dtype)
    if src_int:
        scale = 1.0 / np.iinfo(x.dtype.numpy).max
        return cast(x, dtype) * np.asarray(scale, dtype.numpy)
    scale = np.iinfo(dtype.numpy).max + 0.5
    scaled = x * np.asarray(scale, x.dtype.numpy)
    if saturate:
        info = np.iinfo(dtype.numpy)
        scaled = call("ClipByValue", scaled, np.asarray(info.min, x.dtype.numpy), np.asarray(info.max, x.dtype.numpy))
    return cast(scaled, dtype)


def per_image_standardization(image):
    """(x - mean) / max(stddev, 1 / sqrt(N)) per image, as TF."""
    x = _t(image)
    x = cast(x, "float32")  # (a cast, not convert_image_dtype: TF's)
    axes = np.arange(-3, 0, dtype=np.int32)
    n = call("Prod", call("Shape", x)[-3:], np.int32(0))
    mean = call("Mean", x, axes, keep_dims=True)
    std = call("Sqrt", call("Mean", call("Square", x - mean), axes, keep_dims=True))
    floor = call("Rsqrt", cast(n, x.dtype))
    return (x - mean) / call("Maximum", std, floor)


def _in_float(image, adjust):
    """TF's colour adjustments: on float32 (an integer image converted to [0, 1]), then back to
    the image's dtype, saturating."""
    x = _t(image)
    if not x.dtype.is_integer:
        return adjust(x)
    return convert_image_dtype(adjust(convert_image_dtype(x, "float32")), x.dtype, saturate=True)


def adjust_brightness(image, delta):
    return _in_float(image, lambda x: x + np.asarray(delta, x.dtype.numpy))


def adjust_contrast(images, contrast_factor):
    return _in_float(images, lambda x: call("AdjustContrastv2", x, np.float32(contrast_factor)))


def adjust_saturation(image, saturation_factor):
    return _in_float(image, lambda x: call("AdjustSaturation", x, np.float32(saturation_factor)))


def adjust_hue(image, delta, name: str | None = None):
    if not isinstance(delta, Tensor) and not -1.0 <= float(delta) <= 1.0:
        raise ValueError(f"adjust_hue: delta must be in the interval [-1, 1], got {delta}")  # (TF's check)
    return _in_float(image, lambda x: call("AdjustHue", x, np.float32(delta)))


def rgb_to_hsv(images):
    return call("RGBToHSV", _t(images))


def hsv_to_rgb(images):
    return call("HSVToRGB", _t(images))


NAMES = ("ResizeMethod resize flip_left_right flip_up_down rot90 transpose transpose_image crop_to_bounding_box "
         "pad_to_bounding_box central_crop rgb_to_grayscale grayscale_to_rgb convert_image_dtype "
         "per_image_standardization adjust_brightness adjust_contrast adjust_saturation adjust_hue rgb_to_hsv "
         "hsv_to_rgb").split()
