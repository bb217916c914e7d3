"""CropAndResize (boxes of an image batch, each resized to one crop size: the region pooling of
detection models) with its two gradient ops, CropAndResizeGradImage and CropAndResizeGradBoxes.

TensorFlow's sampling (crop_and_resize_op.cc), vectorized over every box at once: box b =
(y1, x1, y2, x2) in normalized coordinates samples image row
``y1 * (H - 1) + y * (y2 - y1) * (H - 1) / (crop_h - 1)`` (the box's middle row when crop_h is
1), columns alike; a sample outside [0, H - 1] x [0, W - 1] takes ``extrapolation_value``;
bilinear between the four neighbours, or the nearest one (rounded half away from zero).
"""

from __future__ import annotations

import numpy as np

from specflow.graph.shapes import Shape, as_shape
from specflow.ops import grad_util as gu
from specflow.ops.inference import InferenceContext
from specflow.ops.math_ops import quiet_fp
from specflow.ops.registry import gradient, kernel, register_op

_METHODS = "method: {'bilinear', 'nearest'} = 'bilinear'"


def _check_boxes(c, boxes_shape, ind_shape) -> None:
    b, i = as_shape(boxes_shape), as_shape(ind_shape)
    if b.rank not in (None, 2) or (b.rank == 2 and b[1] not in (None, 4)):
        raise c.fail(f"boxes must be [num_boxes, 4], got shape {b}")
    if i.rank not in (None, 1):
        raise c.fail(f"box_ind must be a vector, got shape {i}")
    if b.rank == 2 and i.rank == 1 and not Shape([b[0]]).is_compatible_with(Shape([i[0]])):
        raise c.fail(f"boxes {b} and box_ind {i} must have one entry per box")


def _crop_size(c, value) -> tuple[int, int] | None:
    if value is None:
        return None
    v = np.asarray(value).reshape(-1)
    if v.size != 2 or (v <= 0).any():
        raise c.fail(f"crop_size must be 2 positive sizes (height, width), got {v.tolist()}")
    return int(v[0]), int(v[1])


def _crop_shape(ic: InferenceContext) -> list[Shape]:
    image = ic.shape(0)
    if image.rank not in (None, 4):
        raise ic.fail(f"image must be 4-D [batch, height, width, depth], got shape {image}")
    _check_boxes(ic, ic.shape(1), ic.shape(2))
    size = _crop_size(ic, ic.value(3))
    n = ic.shape(1)[0] if ic.shape(1).rank == 2 else None
    ch = image[3] if image.rank == 4 else None
    return [Shape([n, *(size or (None, None)), ch])]


register_op(
    "CropAndResize",
    inputs=["image: T", "boxes: float32", "box_ind: int32", "crop_size: int32"],
    outputs=["crops: float32"],
    attrs=["T: {uint8, uint16, int8, int16, int32, int64, float16, float32, float64}", _METHODS,
           "extrapolation_value: float = 0"],  # fmt: skip
    shape=_crop_shape,
    doc="Each box (y1, x1, y2, x2, normalized) of image[box_ind] resized to crop_size, bilinear or "
    "nearest; samples outside the image are extrapolation_value.",
)


def _samples(lo, hi, size: int, crop: int):
    """[N, crop] sample positions of each box along one dim, in pixels (float32, as TF)."""
    lo, hi = lo.astype(np.float32)[:, None], hi.astype(np.float32)[:, None]
    edge = np.float32(size - 1)
    if crop > 1:
        step = np.arange(crop, dtype=np.float32)[None, :]
        return lo * edge + step * ((hi - lo) * edge / np.float32(crop - 1))
    return np.broadcast_to(np.float32(0.5) * (lo + hi) * edge, (lo.shape[0], 1)).astype(np.float32)


class _Dim:
    """Per box and sample along one dim: inside the image?, the neighbours below and above, the
    upper one's weight, the nearest (host arrays [N, crop])."""

    def __init__(self, pos, size: int):
        self.valid = (pos >= 0) & (pos <= size - 1)
        clip = lambda v: np.clip(v, 0, max(size - 1, 0)).astype(np.int64)  # noqa: E731
        self.lo, self.hi, self.near = clip(np.floor(pos)), clip(np.ceil(pos)), clip(np.floor(pos + np.float32(0.5)))
        self.lerp = (pos - np.floor(pos)).astype(np.float32)


def _read(ctx, boxes, box_ind, dims, crop):
    """The checked box indices and the rows and columns every box samples."""
    b, h, w = dims
    _check_boxes(ctx, boxes.shape, box_ind.shape)
    ind = ctx.host(box_ind).astype(np.int64)
    if ind.size and (ind.min() < 0 or ind.max() >= b):
        bad = int(ind[(ind < 0) | (ind >= b)][0])
        raise ctx.fail(f"box_ind has {bad}, not in [0, {b}) (the image batch)")
    boxes = ctx.host(boxes)
    ys = _Dim(_samples(boxes[:, 0], boxes[:, 2], h, crop[0]), h)
    xs = _Dim(_samples(boxes[:, 1], boxes[:, 3], w, crop[1]), w)
    return ind, ys, xs


def _valid(xp, ys: _Dim, xs: _Dim):
    """[N, ch, cw, 1]: the samples inside the image."""
    return xp.asarray(ys.valid[:, :, None] & xs.valid[:, None, :])[..., None]


def _corners(xp, image, ind, ys: _Dim, xs: _Dim):
    """Each sample's four neighbours (top-left, top-right, bottom-left, bottom-right), float32."""
    img, n = image.astype(np.float32, copy=False), ind[:, None, None]
    t, bt = xp.asarray(ys.lo)[:, :, None], xp.asarray(ys.hi)[:, :, None]
    lf, rt = xp.asarray(xs.lo)[:, None, :], xp.asarray(xs.hi)[:, None, :]
    return img[n, t, lf], img[n, t, rt], img[n, bt, lf], img[n, bt, rt]


@kernel("CropAndResize", host_inputs=(1, 2, 3))
def _crop_and_resize(ctx, image, boxes, box_ind, crop_size):
    xp = ctx.xp
    if image.ndim != 4:
        raise ctx.fail(f"image must be 4-D [batch, height, width, depth], got shape {list(image.shape)}")
    crop = _crop_size(ctx, ctx.host(crop_size))
    ind, ys, xs = _read(ctx, boxes, box_ind, image.shape[:3], crop)
    if ctx.attrs["method"] == "nearest":
        img = image.astype(np.float32, copy=False)
        out = img[ind[:, None, None], xp.asarray(ys.near)[:, :, None], xp.asarray(xs.near)[:, None, :]]
    else:
        tl, tr, bl, br = _corners(xp, image, ind, ys, xs)
        xl = xp.asarray(xs.lerp)[:, None, :, None]
        top_row, bottom_row = tl + (tr - tl) * xl, bl + (br - bl) * xl
        out = top_row + (bottom_row - top_row) * xp.asarray(ys.lerp)[:, :, None, None]
    return xp.where(_valid(xp, ys, xs), out, np.float32(ctx.attrs["extrapolation_value"])).astype(np.float32, copy=False)


@gradient("CropAndResize")
def _crop_and_resize_grad(b, node, dys):
    image, boxes, box_ind, _ = node.data_inputs
    s = b.spec(image).shape
    size = gu.const(b, np.array(s.dims, np.int32)) if s.is_fully_defined else gu.shape_of(b, image)
    t = b.spec(image).dtype
    grad_image = None
    if t.name in ("float16", "float32", "float64"):
        grad_image = gu.emit(b, "CropAndResizeGradImage", dys[0], boxes, box_ind, size, T=t, method=node.attrs["method"])
    grad_boxes = gu.emit(b, "CropAndResizeGradBoxes", dys[0], image, boxes, box_ind)
    return [grad_image, grad_boxes, None, None]


register_op(
    "CropAndResizeGradImage",
    inputs=["grads: float32", "boxes: float32", "box_ind: int32", "image_size: int32"],
    outputs=["output: T"],
    attrs=["T: {float16, float32, float64}", _METHODS],
    shape=lambda ic: [ic.shape_from_value(3)],
    doc="The gradient of CropAndResize for its image: each crop's grads spread back onto the "
    "pixels it was sampled from, with the sampling's weights, in an image of image_size.",
)


@kernel("CropAndResizeGradImage", host_inputs=(1, 2, 3))
def _crop_and_resize_grad_image(ctx, grads, boxes, box_ind, image_size):
    xp = ctx.xp
    dims = [int(v) for v in ctx.host(image_size).reshape(-1)]
    if len(dims) != 4 or min(dims) < 0:
        raise ctx.fail(f"image_size must be 4 non-negative sizes, got {dims}")
    b, h, w, c = dims
    n_boxes, ch, cw, gc = grads.shape
    ind, ys, xs = _read(ctx, boxes, box_ind, (b, h, w), (ch, cw))
    if gc != c or n_boxes != boxes.shape[0]:
        raise ctx.fail(f"grads of shape {list(grads.shape)} does not match {n_boxes} boxes of depth {c}")
    out = xp.zeros((b, h, w, c), dtype=np.float32)
    g = xp.where(_valid(xp, ys, xs), grads.astype(np.float32), np.float32(0))
    n = np.broadcast_to(ind[:, None, None], (n_boxes, ch, cw))
    if ctx.attrs["method"] == "nearest":
        taps = [(ys.near, xs.near, None)]
    else:
        yl, xl = ys.lerp[:, :, None, None], xs.lerp[:, None, :, None]
        taps = [(ys.lo, xs.lo, (1 - yl) * (1 - xl)), (ys.lo, xs.hi, (1 - yl) * xl),
                (ys.hi, xs.lo, yl * (1 - xl)), (ys.hi, xs.hi, yl * xl)]  # fmt: skip
    for rows, cols, weight in taps:
        r, cc = np.broadcast_to(rows[:, :, None], n.shape), np.broadcast_to(cols[:, None, :], n.shape)
        xp.add.at(out, (xp.asarray(n), xp.asarray(r), xp.asarray(cc)), g if weight is None else g * xp.asarray(weight))
    return out.astype(ctx.attrs["T"].numpy, copy=False)


register_op(
    "CropAndResizeGradBoxes",
    inputs=["grads: float32", "image: T", "boxes: float32", "box_ind: int32"],
    outputs=["output: float32"],
    attrs=["T: {uint8, uint16, int8, int16, int32, int64, float16, float32, float64}", "method: {'bilinear'} = 'bilinear'"],
    shape=lambda ic: [ic.shape(2)],
    doc="The gradient of (bilinear) CropAndResize for its boxes: how each sample moves with each "
    "box coordinate, times the image's slope there, summed over the crop.",
)


@kernel("CropAndResizeGradBoxes", host_inputs=(2, 3))
def _crop_and_resize_grad_boxes(ctx, grads, image, boxes, box_ind):
    xp = ctx.xp
    b, h, w, _ = image.shape
    n_boxes, ch, cw, _ = grads.shape
    ind, ys, xs = _read(ctx, boxes, box_ind, (b, h, w), (ch, cw))
    tl, tr, bl, br = _corners(xp, image, ind, ys, xs)
    yl, xl = xp.asarray(ys.lerp)[:, :, None, None], xp.asarray(xs.lerp)[:, None, :, None]
    with quiet_fp():  # (inf - inf is NaN silently, as in TF)
        slope_y = (1 - xl) * (bl - tl) + xl * (br - tr)  # d sample / d row position
        slope_x = (1 - yl) * (tr - tl) + yl * (br - bl)
    # samples outside the image add nothing (TF skips them): not 0 * their (clamped) corners'
    # slope, which is NaN where those corners are infinite
    valid, g = _valid(xp, ys, xs), grads.astype(np.float32)
    zero = np.float32(0)
    gy, gx = xp.where(valid, g * slope_y, zero).sum(axis=3), xp.where(valid, g * slope_x, zero).sum(axis=3)  # [N, ch, cw]
    out = xp.zeros((n_boxes, 4), dtype=np.float32)
    for (first, second), grad, size, crop, axis in (((0, 2), gy, h, ch, 2), ((1, 3), gx, w, cw, 1)):
        along = grad.sum(axis=axis)  # [N, crop]: summed over the other dim
        if crop > 1:  # position = lo * (size - 1) * (1 - k / (crop - 1)) + hi * (size - 1) * k / (crop - 1)
            k = xp.arange(crop, dtype=np.float32)[None, :] * np.float32((size - 1) / (crop - 1))
            out[:, first] = (along * (np.float32(size - 1) - k)).sum(axis=1)
            out[:, second] = (along * k).sum(axis=1)
        else:  # the middle: half of each coordinate
            out[:, first] = out[:, second] = along.sum(axis=1) * np.float32(0.5 * (size - 1))
    return out
