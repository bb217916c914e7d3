"""Cases for color_ops against Python's colorsys, pixel by pixel (RGB <-> HSV, hue in [0, 1)):
the adjust ops as an HSV round trip with the saturation scaled and clipped or the hue turned;
AdjustContrastv2 against numpy means. Grey and black pixels and ties between channels are
included (their hue is 0)."""

import colorsys

import numpy as np

from tests.ops.harness import RNG, Case


def _pixels(*shape):
    x = RNG.uniform(0.0, 1.0, size=(*shape, 3))
    flat = x.reshape(-1, 3)
    flat[:6] = [[0.5, 0.5, 0.5], [0.0, 0.0, 0.0], [0.2, 0.2, 0.7], [0.7, 0.2, 0.2], [0.2, 0.7, 0.7], [0.7, 0.7, 0.2]]
    return x


def _per_pixel(f, x):
    flat = np.asarray(x, np.float64).reshape(-1, 3)
    return np.array([f(*map(float, p)) for p in flat]).reshape(np.shape(x))


def _saturation(scale):
    def f(r, g, b):
        h, s, v = colorsys.rgb_to_hsv(r, g, b)
        return colorsys.hsv_to_rgb(h, min(1.0, max(0.0, s * scale)), v)

    return f


def _hue(delta):
    def f(r, g, b):
        h, s, v = colorsys.rgb_to_hsv(r, g, b)
        return colorsys.hsv_to_rgb((h + delta) % 1.0, s, v)

    return f


def _contrast(x, factor):
    mean = x.astype(np.float64).mean(axis=(-3, -2), keepdims=True)
    return ((x - mean) * factor + mean).astype(x.dtype)


_RGB = _pixels(2, 4, 5).astype(np.float32)
_HSV = RNG.uniform(0.0, 1.0, size=(3, 4, 3))
_HSV[0, :2, 0] = [0.0, 1.0]  # hue at both ends of the circle

CASES = [
    Case("RGBToHSV", [_RGB], ref=lambda x: _per_pixel(colorsys.rgb_to_hsv, x).astype(np.float32), rtol=1e-5, atol=1e-6),
    Case("RGBToHSV", [_pixels(7)], ref=lambda x: _per_pixel(colorsys.rgb_to_hsv, x), rtol=1e-12, atol=1e-14,
         id="RGBToHSV-float64"),
    Case("HSVToRGB", [_HSV], ref=lambda x: _per_pixel(colorsys.hsv_to_rgb, x), rtol=1e-12, atol=1e-14),
    Case("HSVToRGB", [_HSV.astype(np.float16)], ref=lambda x: _per_pixel(colorsys.hsv_to_rgb, x).astype(np.float16),
         rtol=2e-3, atol=2e-3, id="HSVToRGB-float16"),
    Case("AdjustContrastv2", [_RGB, np.float32(1.5)], ref=_contrast, rtol=1e-5, atol=1e-6),
    Case("AdjustContrastv2", [RNG.uniform(0, 1, (4, 3, 2)).astype(np.float16), np.float32(0.4)], ref=_contrast,
         rtol=2e-3, atol=2e-3, id="AdjustContrastv2-float16-3d"),
    *(Case("AdjustSaturation", [_RGB, np.float32(k)], ref=lambda x, k: _per_pixel(_saturation(float(k)), x),
           rtol=1e-5, atol=2e-6, id=f"AdjustSaturation-{k}") for k in (1.5, 0.3, 0.0)),
    *(Case("AdjustHue", [_RGB, np.float32(d)], ref=lambda x, d: _per_pixel(_hue(float(d)), x),
           rtol=1e-5, atol=2e-6, id=f"AdjustHue-{d}") for d in (0.2, -0.45, 0.9, 1.7)),
]  # fmt: skip
