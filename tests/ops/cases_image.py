"""Cases for image_ops (resizing) and lrn_ops.

Resize references walk every output pixel with TF's per-pixel arithmetic written out in float32
scalars (scale, source position, floor/ceil/round, clamp); their gradients scatter each output
pixel back by the same taps. LRN's references loop over every depth position.
"""

import itertools
import math

import numpy as np

from tests.ops.harness import Case, f32, f64, i32

F = np.float32


def _scale(i, o, align):
    return F(i - 1) / F(o - 1) if align and o > 1 else F(i) / F(o)


def _bilinear_tap(o, i_size, scale, half):
    src = (F(o) + F(0.5)) * scale - F(0.5) if half else F(o) * scale
    lo = max(int(math.floor(src)), 0)
    hi = min(int(math.ceil(src)), i_size - 1)
    return lo, hi, F(src - F(math.floor(src)))


def _nearest_tap(o, i_size, scale, align, half):
    src = (F(o) + F(0.5)) * scale if half else F(o) * scale
    idx = int(math.floor(src) + (1 if align and src - F(math.floor(src)) >= 0.5 else 0))
    return min(max(idx, 0), i_size - 1)


def bilinear_ref(x, size, align=False, half=False):
    n, h, w, c = x.shape
    oh, ow = (int(v) for v in size)
    sy, sx = _scale(h, oh, align), _scale(w, ow, align)
    x = x.astype(F)
    out = np.zeros((n, oh, ow, c), F)
    for y, xx in itertools.product(range(oh), range(ow)):
        y0, y1, ly = _bilinear_tap(y, h, sy, half)
        x0, x1, lx = _bilinear_tap(xx, w, sx, half)
        top = x[:, y0, x0] + (x[:, y0, x1] - x[:, y0, x0]) * lx
        bottom = x[:, y1, x0] + (x[:, y1, x1] - x[:, y1, x0]) * lx
        out[:, y, xx] = top + (bottom - top) * ly
    return out


def bilinear_grad_ref(g, image, align=False, half=False):
    n, h, w, c = image.shape
    _, oh, ow, _ = g.shape
    sy, sx = _scale(h, oh, align), _scale(w, ow, align)
    out = np.zeros(image.shape, np.float64)
    for y, xx in itertools.product(range(oh), range(ow)):
        y0, y1, ly = _bilinear_tap(y, h, sy, half)
        x0, x1, lx = _bilinear_tap(xx, w, sx, half)
        ly, lx = float(ly), float(lx)
        out[:, y0, x0] += g[:, y, xx] * (1 - ly) * (1 - lx)
        out[:, y0, x1] += g[:, y, xx] * (1 - ly) * lx
        out[:, y1, x0] += g[:, y, xx] * ly * (1 - lx)
        out[:, y1, x1] += g[:, y, xx] * ly * lx
    return out.astype(image.dtype)


def nearest_ref(x, size, align=False, half=False):
    n, h, w, c = x.shape
    oh, ow = (int(v) for v in size)
    sy, sx = _scale(h, oh, align), _scale(w, ow, align)
    out = np.zeros((n, oh, ow, c), x.dtype)
    for y, xx in itertools.product(range(oh), range(ow)):
        out[:, y, xx] = x[:, _nearest_tap(y, h, sy, align, half), _nearest_tap(xx, w, sx, align, half)]
    return out


def nearest_grad_ref(g, size, align=False, half=False):
    n, oh, ow, c = g.shape
    h, w = (int(v) for v in size)
    sy, sx = _scale(h, oh, align), _scale(w, ow, align)
    out = np.zeros((n, h, w, c), g.dtype)
    for y, xx in itertools.product(range(oh), range(ow)):
        out[:, _nearest_tap(y, h, sy, align, half), _nearest_tap(xx, w, sx, align, half)] += g[:, y, xx]
    return out


def lrn_ref(x, r=5, bias=1.0, alpha=1.0, beta=0.5):
    bias, alpha, beta = (x.dtype.type(np.float32(v)) for v in (bias, alpha, beta))
    out = np.zeros_like(x)
    depth = x.shape[-1]
    for d in range(depth):
        window = x[..., max(0, d - r) : min(depth, d + r + 1)]
        out[..., d] = x[..., d] / (bias + alpha * (window**2).sum(-1)) ** beta
    return out


def lrn_grad_ref(dy, x, y, r=5, bias=1.0, alpha=1.0, beta=0.5):
    bias, alpha, beta = (x.dtype.type(np.float32(v)) for v in (bias, alpha, beta))
    depth = x.shape[-1]
    dx = np.zeros_like(x)
    for j in range(depth):  # TF's loop: each output depth j adds into its window's inputs k
        lo, hi = max(0, j - r), min(depth, j + r + 1)
        norm = bias + alpha * (x[..., lo:hi] ** 2).sum(-1)
        for k in range(lo, hi):
            d = -2 * alpha * beta * x[..., k] * y[..., j] / norm
            if k == j:
                d = d + norm**-beta
            dx[..., k] += d * dy[..., j]
    return dx


_FLAGS = [(False, False), (True, False), (False, True)]
_img = f32(2, 5, 4, 3)
_TOL = {"rtol": 1e-5, "atol": 1e-5}


def _resize_cases():
    cases = []
    for (align, half), (oh, ow) in itertools.product(_FLAGS, [(8, 7), (3, 2), (1, 1), (5, 9)]):
        tag = f"{'align' if align else 'half' if half else 'legacy'}-{oh}x{ow}"
        attrs = {"align_corners": align, "half_pixel_centers": half}
        size = np.array([oh, ow], np.int32)
        cases.append(Case("ResizeBilinear", [_img, size], attrs=attrs, const_inputs=[1], id=f"ResizeBilinear-{tag}",
                          ref=lambda x, s, a=align, h=half: bilinear_ref(x, s, a, h), **_TOL))
        cases.append(Case("ResizeNearestNeighbor", [_img, size], attrs=attrs, const_inputs=[1],
                          id=f"ResizeNearestNeighbor-{tag}", ref=lambda x, s, a=align, h=half: nearest_ref(x, s, a, h)))
        g = f32(2, oh, ow, 3)
        cases.append(Case("ResizeBilinearGrad", [g, _img], attrs=attrs, id=f"ResizeBilinearGrad-{tag}",
                          ref=lambda gg, x, a=align, h=half: bilinear_grad_ref(gg, x, a, h), **_TOL))
        cases.append(Case("ResizeNearestNeighborGrad", [g, np.array([5, 4], np.int32)], attrs=attrs, const_inputs=[1],
                          id=f"ResizeNearestNeighborGrad-{tag}",
                          ref=lambda gg, s, a=align, h=half: nearest_grad_ref(gg, s, a, h), **_TOL))
    return cases


_2x2 = np.array([1, 2, 3, 4], np.float32).reshape(1, 2, 2, 1)
_LITERAL = [  # TF's values, independent of the references above
    ("ResizeBilinear", {"half_pixel_centers": True}, [4, 4],
     [[1, 1.25, 1.75, 2], [1.5, 1.75, 2.25, 2.5], [2.5, 2.75, 3.25, 3.5], [3, 3.25, 3.75, 4]]),
    ("ResizeBilinear", {"align_corners": True}, [3, 3], [[1, 1.5, 2], [2, 2.5, 3], [3, 3.5, 4]]),
    ("ResizeBilinear", {}, [4, 4], [[1, 1.5, 2, 2], [2, 2.5, 3, 3], [3, 3.5, 4, 4], [3, 3.5, 4, 4]]),
    ("ResizeNearestNeighbor", {"half_pixel_centers": True}, [3, 3], [[1, 2, 2], [3, 4, 4], [3, 4, 4]]),
    ("ResizeNearestNeighbor", {}, [3, 3], [[1, 1, 2], [1, 1, 2], [3, 3, 4]]),
    ("ResizeNearestNeighbor", {"align_corners": True}, [3, 3], [[1, 2, 2], [3, 4, 4], [3, 4, 4]]),
]  # fmt: skip


# ResizeBicubic / ResizeArea / ResizeBicubicGrad: TensorFlow 2.21's outputs for this input
# (tf.raw_ops, recorded; scripts/tf_op_parity.py re-checks them against a live TensorFlow).
_RAMP = (np.arange(12, dtype=np.float32).reshape(1, 3, 4, 1) ** 1.5) / 4
_G = np.ones((1, 5, 6, 1), np.float32)
_G[0, 1, 2, 0] = 3
_TF_BICUBIC = np.array([[[[0.0], [0.120595], [0.388684], [0.707107], [1.138256], [1.364808]], [[0.828321], [1.130022], [1.612627], [2.064854], [2.642046], [2.938738]], [[2.836407], [3.345759], [4.08339], [4.704772], [5.46902], [5.856383]], [[5.060623], [5.658873], [6.517374], [7.231472], [8.101078], [8.540477]], [[6.051665], [6.691391], [7.605884], [8.362542], [9.280439], [9.743664]]]], np.float32)
_TF_BICUBIC_HALF = np.array([[[[0.276627], [0.431497], [0.722986], [1.07952], [1.555728], [1.876046]], [[4.937562], [5.434629], [6.236518], [6.977549], [7.854481], [8.418758]]]], np.float32)
_TF_AREA = np.array([[[[0.77459], [1.397256], [2.231072]], [[4.686351], [5.963451], [7.341677]]]], np.float32)
_TF_BICUBIC_GRAD = np.array([[[[1.439947], [2.569383], [2.212297], [2.165316]], [[1.923892], [3.809406], [3.160408], [2.935282]], [[2.430695], [2.903627], [2.955421], [3.494328]]]], np.float32)

CASES = [
    *(Case(op, [_2x2, np.array(size, np.int32)], attrs=attrs, const_inputs=[1], id=f"{op}-literal-{i}",
           ref=lambda x, s, want=want: np.array(want, np.float32).reshape(1, *s, 1))
      for i, (op, attrs, size, want) in enumerate(_LITERAL)),
    *_resize_cases(),
    Case("ResizeBilinear", [i32(1, 3, 3, 2, low=0, high=255).astype(np.uint8), np.array([4, 5], np.int32)],
         attrs={"half_pixel_centers": True}, const_inputs=[1], id="ResizeBilinear-uint8",
         ref=lambda x, s: bilinear_ref(x, s, False, True), **_TOL),
    Case("ResizeNearestNeighbor", [i32(1, 3, 5, 2), np.array([7, 2], np.int32)], attrs={"align_corners": True},
         const_inputs=[1], id="ResizeNearestNeighbor-int32", ref=lambda x, s: nearest_ref(x, s, True, False)),
    Case("ResizeNearestNeighborGrad", [i32(1, 6, 6, 1), np.array([4, 3], np.int32)], const_inputs=[1],
         attrs={"half_pixel_centers": True}, id="ResizeNearestNeighborGrad-int32",
         ref=lambda g, s: nearest_grad_ref(g, s, False, True)),
    Case("LRN", [f32(2, 3, 2, 7)], ref=lambda x: lrn_ref(x)),
    Case("LRN", [f64(1, 2, 3, 9)], attrs={"depth_radius": 2, "bias": 2.0, "alpha": 0.3, "beta": 0.75},
         ref=lambda x: lrn_ref(x, 2, 2.0, 0.3, 0.75), id="LRN-float64-radius2"),
    Case("LRNGrad", [f64(1, 2, 3, 9), (_x := f64(1, 2, 3, 9)), lrn_ref(_x, 2, 2.0, 0.3, 0.75)],
         attrs={"depth_radius": 2, "bias": 2.0, "alpha": 0.3, "beta": 0.75},
         ref=lambda g, x, y: lrn_grad_ref(g, x, y, 2, 2.0, 0.3, 0.75), id="LRNGrad-float64"),
    Case("LRNGrad", [f32(2, 2, 2, 4), (_y := f32(2, 2, 2, 4)), lrn_ref(_y, 1)], attrs={"depth_radius": 1},
         ref=lambda g, x, y: lrn_grad_ref(g, x, y, 1), id="LRNGrad-radius1", **_TOL),
    Case("ResizeBicubic", [_RAMP, np.array([5, 6], np.int32)], const_inputs=[1], ref=lambda x, s: _TF_BICUBIC, **_TOL),
    Case("ResizeBicubic", [_RAMP, np.array([2, 6], np.int32)], attrs={"half_pixel_centers": True}, const_inputs=[1],
         ref=lambda x, s: _TF_BICUBIC_HALF, id="ResizeBicubic-half-pixel", **_TOL),
    Case("ResizeArea", [_RAMP, np.array([2, 3], np.int32)], const_inputs=[1], ref=lambda x, s: _TF_AREA, **_TOL),
    Case("ResizeBicubicGrad", [_G, _RAMP], ref=lambda g, x: _TF_BICUBIC_GRAD, **_TOL),
]  # fmt: skip
