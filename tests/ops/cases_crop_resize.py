"""Cases for crop_resize_ops against per-sample loops of TF's definition (crop_and_resize_op.cc)."""

import numpy as np

from tests.ops.harness import Case, f32


def crop_ref(image, boxes, ind, size, method="bilinear", extrapolation=0.0):
    _, h, w, c = image.shape
    ch, cw = size
    out = np.zeros((len(boxes), ch, cw, c), np.float32)
    for k, (y1, x1, y2, x2) in enumerate(boxes.astype(np.float64)):
        for i in range(ch):
            y = y1 * (h - 1) + i * (y2 - y1) * (h - 1) / (ch - 1) if ch > 1 else 0.5 * (y1 + y2) * (h - 1)
            for j in range(cw):
                x = x1 * (w - 1) + j * (x2 - x1) * (w - 1) / (cw - 1) if cw > 1 else 0.5 * (x1 + x2) * (w - 1)
                if not (0 <= y <= h - 1 and 0 <= x <= w - 1):
                    out[k, i, j] = extrapolation
                    continue
                img = image[ind[k]].astype(np.float64)
                if method == "nearest":
                    out[k, i, j] = img[int(np.floor(y + 0.5)), int(np.floor(x + 0.5))]
                    continue
                t, bt, lf, rt = int(np.floor(y)), int(np.ceil(y)), int(np.floor(x)), int(np.ceil(x))
                yl, xl = y - t, x - lf
                top = img[t, lf] + (img[t, rt] - img[t, lf]) * xl
                bottom = img[bt, lf] + (img[bt, rt] - img[bt, lf]) * xl
                out[k, i, j] = top + (bottom - top) * yl
    return out


def grad_image_ref(grads, boxes, ind, image_size, method="bilinear"):
    """The adjoint of crop_ref: its response to each unit image, dotted with grads."""
    out = np.zeros(image_size, np.float64)
    for flat in range(out.size):
        unit = np.zeros(image_size)
        unit.reshape(-1)[flat] = 1
        out.reshape(-1)[flat] = np.sum(crop_ref(unit, boxes, ind, grads.shape[1:3], method) * grads)
    return out.astype(np.float32)


def grad_boxes_ref(grads, image, boxes, ind, eps=1e-6):
    """Central differences of sum(grads * crop) in float64 (no sample crosses a pixel)."""
    out = np.zeros(boxes.shape, np.float32)
    for k in range(boxes.shape[0]):
        for j in range(4):
            up, down = boxes.astype(np.float64), boxes.astype(np.float64)
            up[k, j] += eps
            down[k, j] -= eps
            f = [np.sum(_crop64(image, b, ind, grads.shape[1:3]) * grads) for b in (up, down)]
            out[k, j] = (f[0] - f[1]) / (2 * eps)
    return out


def _crop64(image, boxes, ind, size):
    """crop_ref in float64 throughout (its output is float32 like the op's)."""
    _, h, w, c = image.shape
    ch, cw = size
    out = np.zeros((len(boxes), ch, cw, c))
    for k, (y1, x1, y2, x2) in enumerate(boxes):
        for i in range(ch):
            y = y1 * (h - 1) + i * (y2 - y1) * (h - 1) / (ch - 1) if ch > 1 else 0.5 * (y1 + y2) * (h - 1)
            for j in range(cw):
                x = x1 * (w - 1) + j * (x2 - x1) * (w - 1) / (cw - 1) if cw > 1 else 0.5 * (x1 + x2) * (w - 1)
                img = image[ind[k]].astype(np.float64)
                t, bt, lf, rt = int(np.floor(y)), int(np.ceil(y)), int(np.floor(x)), int(np.ceil(x))
                top = img[t, lf] + (img[t, rt] - img[t, lf]) * (x - lf)
                bottom = img[bt, lf] + (img[bt, rt] - img[bt, lf]) * (x - lf)
                out[k, i, j] = top + (bottom - top) * (y - t)
    return out


_IMG = f32(2, 6, 7, 3)
_BOXES = np.array([[0.1, 0.1, 0.8, 0.9], [0.0, 0.2, 1.0, 0.7], [-0.2, 0.3, 1.3, 0.6], [0.5, 0.5, 0.5, 0.5]], np.float32)
_IND = np.array([0, 1, 1, 0], np.int32)

# Boxes whose samples sit inside pixels (no boundary within a difference step), a 3x2 crop.
_SMOOTH = np.array([[0.13, 0.11, 0.77, 0.86], [0.21, 0.07, 0.93, 0.62]], np.float32)
_IND2 = np.array([1, 0], np.int32)
_G = f32(2, 3, 2, 1)

CASES = [
    Case("CropAndResize", [_IMG, _BOXES, _IND, np.array([3, 4], np.int32)], attrs={"extrapolation_value": -1.5},
         const_inputs=[3], ref=lambda i, b, n, s: crop_ref(i, b, n, (3, 4), extrapolation=-1.5), rtol=1e-5, atol=1e-5),
    Case("CropAndResize", [_IMG, _BOXES, _IND, np.array([1, 5], np.int32)], attrs={"method": "nearest"},
         const_inputs=[3], ref=lambda i, b, n, s: crop_ref(i, b, n, (1, 5), "nearest"), id="CropAndResize-nearest"),
    Case("CropAndResizeGradImage", [_G, _SMOOTH, _IND2, np.array([2, 4, 5, 1], np.int32)], attrs={"T": "float32"},
         const_inputs=[3], ref=lambda g, b, n, s: grad_image_ref(g, b, n, (2, 4, 5, 1)), rtol=1e-5, atol=1e-5),
    Case("CropAndResizeGradImage", [_G, _SMOOTH, _IND2, np.array([2, 4, 5, 1], np.int32)],
         attrs={"T": "float32", "method": "nearest"}, const_inputs=[3], id="CropAndResizeGradImage-nearest",
         ref=lambda g, b, n, s: grad_image_ref(g, b, n, (2, 4, 5, 1), "nearest"), rtol=1e-5, atol=1e-5),
    Case("CropAndResizeGradBoxes", [_G, f32(2, 4, 5, 1), _SMOOTH, _IND2],
         ref=lambda g, i, b, n: grad_boxes_ref(g, i, b, n), rtol=1e-4, atol=1e-4),
    # a sample below the image adds nothing, even where its clamped corners are infinite (TF
    # 2.21's numbers, found by tf_fuzz_parity.py --family 4); a sample inside one gives NaN
    Case("CropAndResizeGradBoxes", [np.ones((2, 2, 2, 1), np.float32), np.array([[[[0.0], [1.0]], [[2.0], [np.inf]]]], np.float32),
                                    np.array([[0, 0, 2, 0.5], [0, 0, 1, 0.5]], np.float32), np.array([0, 0], np.int32)],
         ref=lambda *a: np.array([[0.0, 0.0, 0.0, 1.0], [np.nan] * 4], np.float32), id="CropAndResizeGradBoxes-outside-inf"),
]  # fmt: skip
