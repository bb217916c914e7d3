"""Cases for box_ops. Non-max suppression against a plain greedy loop: repeatedly take the
highest remaining score (ties to the lower index) above the threshold, then drop (hard) or
rescale by exp(-IoU^2 / (2 sigma)) (soft) every remaining box by its IoU with it. Drawing against
a loop that paints each box's outline pixel by pixel."""

import numpy as np

from tests.ops.harness import RNG, Case


def _iou(a, b):
    ya, xa, ya2, xa2 = min(a[0], a[2]), min(a[1], a[3]), max(a[0], a[2]), max(a[1], a[3])
    yb, xb, yb2, xb2 = min(b[0], b[2]), min(b[1], b[3]), max(b[0], b[2]), max(b[1], b[3])
    area_a, area_b = (ya2 - ya) * (xa2 - xa), (yb2 - yb) * (xb2 - xb)
    if area_a <= 0 or area_b <= 0:
        return 0.0
    inter = max(min(ya2, yb2) - max(ya, yb), 0) * max(min(xa2, xb2) - max(xa, xb), 0)
    return inter / (area_a + area_b - inter)


def _nms(boxes, scores, n, iou, score_threshold=-np.inf, sigma=0.0):
    live = {i: float(s) for i, s in enumerate(scores) if s > score_threshold}
    picked, kept = [], []
    while live and len(picked) < n:
        best = min(live, key=lambda i: (-live[i], i))
        picked.append(best)
        kept.append(live.pop(best))
        for i in list(live):
            o = _iou(boxes[best].tolist(), boxes[i].tolist())
            live[i] = live[i] * np.exp(-0.5 * o * o / sigma) if sigma > 0 else (0.0 if o > iou else live[i])
            if live[i] <= score_threshold or (sigma == 0 and o > iou):
                del live[i]
    return np.array(picked, np.int32), np.array(kept, np.float32)


def _boxes(n):
    corner = RNG.uniform(0, 6, (n, 2))
    return np.concatenate([corner, corner + RNG.uniform(0.5, 3, (n, 2))], axis=1).astype(np.float32)


_B = _boxes(12)
_B[3] = _B[3][[2, 3, 0, 1]]  # corners given the other way round
_S = RNG.uniform(0, 1, 12).astype(np.float32)
_S[5] = _S[7]  # a tie
_F = np.float32


def _draw_ref(images, boxes, colors):
    out = images.copy()
    _, height, width, depth = images.shape
    for b in range(images.shape[0]):
        for k, (y1, x1, y2, x2) in enumerate(boxes[b]):
            top, left = int(_F(y1) * _F(height - 1)), int(_F(x1) * _F(width - 1))
            bottom, right = int(_F(y2) * _F(height - 1)), int(_F(x2) * _F(width - 1))
            if top > bottom or left > right:
                continue
            for y in range(height):
                for x in range(width):
                    inside_y, inside_x = top <= y <= bottom, left <= x <= right
                    if (inside_x and y in (top, bottom)) or (inside_y and x in (left, right)):
                        out[b, y, x] = colors[k % len(colors)][:depth]
    return out


_IMG = RNG.uniform(0, 1, (2, 6, 7, 3)).astype(np.float32)
_DRAW_BOXES = np.array([[[0.1, 0.1, 0.6, 0.7], [-0.2, 0.5, 0.4, 1.3], [0.5, 0.5, 0.2, 0.9]],
                        [[0.0, 0.0, 1.0, 1.0], [0.3, -0.5, 0.35, -0.1], [0.2, 0.2, 0.2, 0.2]]], np.float32)
_COLORS = np.array([[1, 0, 0, 1], [0, 0.5, 1, 1]], np.float32)
_TF_COLORS = np.array([[1, 1, 0, 1], [0, 0, 1, 1], [1, 0, 0, 1]], np.float32)  # the start of TF's table

CASES = [
    Case("NonMaxSuppressionV2", [_B, _S, np.int32(6), _F(0.3)], ref=lambda b, s, n, i: _nms(b, s, 6, 0.3)[0],
         exact_shape=False),
    Case("NonMaxSuppressionV3", [_B, _S, np.int32(10), _F(0.2), _F(0.3)], exact_shape=False,
         ref=lambda b, s, n, i, t: _nms(b, s, 10, 0.2, 0.3)[0]),
    Case("NonMaxSuppressionV4", [_B, _S, np.int32(8), _F(0.5), _F(0.1)], attrs={"pad_to_max_output_size": True},
         const_inputs=[2], id="NonMaxSuppressionV4-padded",
         ref=lambda b, s, n, i, t: (np.pad(_nms(b, s, 8, 0.5, 0.1)[0], (0, 8 - len(_nms(b, s, 8, 0.5, 0.1)[0]))),
                                    np.int32(len(_nms(b, s, 8, 0.5, 0.1)[0])))),
    Case("NonMaxSuppressionV4", [_B, _S, np.int32(3), _F(0.5), _F(0.1)], exact_shape=False,
         ref=lambda b, s, n, i, t: (_nms(b, s, 3, 0.5, 0.1)[0], np.int32(3))),
    Case("NonMaxSuppressionV5", [_B, _S, np.int32(10), _F(0.4), _F(0.0), _F(0.0)], exact_shape=False,
         ref=lambda b, s, n, i, t, g: (*_nms(b, s, 10, 0.4, 0.0), np.int32(len(_nms(b, s, 10, 0.4, 0.0)[0])))),
    Case("NonMaxSuppressionV5", [_B, _S, np.int32(10), _F(0.5), _F(0.05), _F(0.5)], exact_shape=False,
         id="NonMaxSuppressionV5-soft", rtol=1e-5,
         ref=lambda b, s, n, i, t, g: (*_nms(b, s, 10, 0.5, 0.05, 0.5), np.int32(len(_nms(b, s, 10, 0.5, 0.05, 0.5)[0])))),
    Case("DrawBoundingBoxesV2", [_IMG, _DRAW_BOXES, _COLORS], ref=_draw_ref),
    Case("DrawBoundingBoxesV2", [_IMG, _DRAW_BOXES, np.zeros((0, 4), np.float32)], id="DrawBoundingBoxesV2-tf-colors",
         ref=lambda i, b, c: _draw_ref(i, b, _TF_COLORS)),
    Case("DrawBoundingBoxes", [_IMG[:1, :, :, :1], _DRAW_BOXES[:1]],
         ref=lambda i, b: _draw_ref(i, b, np.ones((3, 4), np.float32))),  # one channel: TF's table's first is 1
]  # fmt: skip
