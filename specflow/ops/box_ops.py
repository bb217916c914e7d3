"""Bounding-box ops: non-max suppression (NonMaxSuppressionV2 to V5) and DrawBoundingBoxes /
DrawBoundingBoxesV2, as TF computes them (non_max_suppression_op.cc, draw_bounding_box_op.cc).
Boxes are [y1, x1, y2, x2], either corner first. None of these has a gradient (as in TF).

Non-max suppression takes candidates by descending score (ties to the lower index) while their
score exceeds score_threshold, dropping one whose IoU with a box already taken exceeds
iou_threshold; with soft_nms_sigma > 0 (V5) overlaps instead scale the score by
exp(-IoU^2 / (2 sigma)) and the candidate goes back into the queue (Bodla et al. 2017).
"""

from __future__ import annotations

import heapq

import numpy as np

from specflow.graph.shapes import Shape
from specflow.ops.inference import InferenceContext
from specflow.ops.registry import kernel, not_differentiable, register_op

# --- NonMaxSuppressionV2 .. V5 ----------------------------------------------------------------


def _iou(boxes: np.ndarray, i: int, j: int) -> np.float32:
    """TF's IoU of boxes i and j in float32 (0 when either has no area)."""
    a, b = boxes[i], boxes[j]
    lo_a, hi_a = np.minimum(a[:2], a[2:]), np.maximum(a[:2], a[2:])
    lo_b, hi_b = np.minimum(b[:2], b[2:]), np.maximum(b[:2], b[2:])
    area_a, area_b = np.prod(hi_a - lo_a), np.prod(hi_b - lo_b)
    if area_a <= 0 or area_b <= 0:
        return np.float32(0)
    inter = np.prod(np.maximum(np.minimum(hi_a, hi_b) - np.maximum(lo_a, lo_b), np.float32(0)))
    return np.float32(inter / (area_a + area_b - inter))


def non_max_suppression(boxes, scores, max_output: int, iou_threshold, score_threshold, sigma=0.0):
    """TF's greedy (or soft, sigma > 0) selection: (selected indices, their final scores)."""
    boxes, scores = boxes.astype(np.float32), scores.astype(np.float32)
    score_threshold, iou_threshold = np.float32(score_threshold), np.float32(iou_threshold)
    soft = sigma > 0
    scale = np.float32(-0.5 / sigma) if soft else np.float32(0)
    # Heap entries: (-score, index, how many selected boxes it has been compared with).
    queue = [(-s, i, 0) for i, s in enumerate(scores.tolist()) if np.float32(s) > score_threshold]
    heapq.heapify(queue)
    selected: list[int] = []
    kept: list[float] = []
    while len(selected) < max_output and queue:
        neg, i, begin = heapq.heappop(queue)
        score = original = np.float32(-neg)
        suppressed = False
        for j in range(len(selected) - 1, begin - 1, -1):
            iou = _iou(boxes, i, selected[j])
            if soft or iou <= iou_threshold:
                score = np.float32(score * np.exp(scale * iou * iou, dtype=np.float32))
            else:
                score = np.float32(0)
            if not soft and iou > iou_threshold:
                suppressed = True
                break
            if score <= score_threshold:
                break
        if suppressed:
            continue
        if score == original:
            selected.append(i)
            kept.append(float(score))
        elif score > score_threshold:
            heapq.heappush(queue, (-float(score), i, len(selected)))
    return np.array(selected, np.int32), np.array(kept, np.float32)


def _nms_shape(outputs: int):
    def shape(ic: InferenceContext) -> list[Shape]:
        boxes, scores = ic.shape(0), ic.shape(1)
        if boxes.rank not in (None, 2) or (boxes.rank == 2 and boxes.dims[1] not in (None, 4)):
            raise ic.fail(f"boxes must be [num_boxes, 4], got shape {boxes}")
        if scores.rank not in (None, 1):
            raise ic.fail(f"scores must be a vector [num_boxes], got shape {scores}")
        n = ic.value(2)
        size = int(n) if ic.attrs.get("pad_to_max_output_size", False) and n is not None and np.ndim(n) == 0 else None
        vectors = max(outputs - 1, 1)  # indices (and V5's scores), then V4's and V5's count
        return [Shape([size])] * vectors + [Shape([])] * (outputs - vectors)

    return shape


def _nms_args(ctx, boxes, scores, max_output_size, iou_threshold, score_threshold=None, sigma=None):
    b, s = np.asarray(ctx.host(boxes)), np.asarray(ctx.host(scores))
    if b.ndim != 2 or b.shape[1] != 4:
        raise ctx.fail(f"boxes must be 2-D [num_boxes, 4], got shape {list(b.shape)}")
    if s.shape != (b.shape[0],):
        raise ctx.fail(f"scores must be a vector of the {b.shape[0]} boxes' scores, got shape {list(s.shape)}")
    values = []
    for name, t in (("max_output_size", max_output_size), ("iou_threshold", iou_threshold),
                    ("score_threshold", score_threshold), ("soft_nms_sigma", sigma)):  # fmt: skip
        if t is None:
            values.append(None)
            continue
        v = np.asarray(ctx.host(t))
        if v.ndim != 0:
            raise ctx.fail(f"{name} must be 0-D, got shape {list(v.shape)}")
        values.append(v)
    n, iou, score, sig = values
    if int(n) < 0:
        raise ctx.fail(f"max_output_size must be non-negative, got {int(n)}")
    if not 0 <= float(iou) <= 1:
        raise ctx.fail(f"iou_threshold must be in [0, 1], got {float(iou)}")
    if sig is not None and float(sig) < 0:
        raise ctx.fail(f"soft_nms_sigma must be non-negative, got {float(sig)}")
    lowest = np.finfo(np.float32).min
    return b, s, int(n), float(iou), float(score) if score is not None else lowest, float(sig) if sig is not None else 0.0


def _padded(ctx, selected, scores, n: int):
    """(indices, scores, valid count), padded with 0 to n with pad_to_max_output_size."""
    valid = len(selected)
    if ctx.attrs.get("pad_to_max_output_size", False):
        selected = np.concatenate([selected, np.zeros(n - valid, np.int32)])
        scores = np.concatenate([scores, np.zeros(n - valid, np.float32)])
    return selected, scores, np.int32(valid)


_BOXES_IN = ["boxes: T", "scores: T", "max_output_size: int32", "iou_threshold: T_threshold"]
_NMS_T = ["T: {float16, float32} = float32", "T_threshold: {float16, float32} = float32"]
_NMS_DOC = ("Indices of the boxes ([num_boxes, 4]) that non-max suppression keeps, at most max_output_size, "
            "by descending score: a box whose IoU with a kept box exceeds iou_threshold is dropped")

register_op("NonMaxSuppressionV2", inputs=_BOXES_IN, outputs=["selected_indices: int32"], attrs=_NMS_T,
            shape=_nms_shape(1), doc=_NMS_DOC + ".")  # fmt: skip
register_op("NonMaxSuppressionV3", inputs=[*_BOXES_IN, "score_threshold: T_threshold"],
            outputs=["selected_indices: int32"], attrs=_NMS_T, shape=_nms_shape(1),
            doc=_NMS_DOC + "; only scores above score_threshold count.")  # fmt: skip
register_op("NonMaxSuppressionV4", inputs=[*_BOXES_IN, "score_threshold: T_threshold"],
            outputs=["selected_indices: int32", "valid_outputs: int32"],
            attrs=[*_NMS_T, "pad_to_max_output_size: bool = false"], shape=_nms_shape(2),
            doc=_NMS_DOC + "; only scores above score_threshold count; with pad_to_max_output_size "
            "padded with 0 to max_output_size; valid_outputs counts the real ones.")  # fmt: skip
register_op("NonMaxSuppressionV5", inputs=["boxes: T", "scores: T", "max_output_size: int32", "iou_threshold: T",
                                           "score_threshold: T", "soft_nms_sigma: T"],
            outputs=["selected_indices: int32", "selected_scores: T", "valid_outputs: int32"],
            attrs=["T: {float16, float32} = float32", "pad_to_max_output_size: bool = false"], shape=_nms_shape(3),
            doc=_NMS_DOC + " (soft_nms_sigma > 0: scaled by exp(-IoU^2 / (2 sigma)) instead); only scores "
            "above score_threshold count; selected_scores are the scores after suppression.")  # fmt: skip


@kernel("NonMaxSuppressionV2", host_inputs=(0, 1, 2, 3))
def _nms_v2(ctx, boxes, scores, n, iou):
    return ctx.xp.asarray(non_max_suppression(*_nms_args(ctx, boxes, scores, n, iou))[0])


@kernel("NonMaxSuppressionV3", host_inputs=(0, 1, 2, 3, 4))
def _nms_v3(ctx, boxes, scores, n, iou, score):
    return ctx.xp.asarray(non_max_suppression(*_nms_args(ctx, boxes, scores, n, iou, score))[0])


@kernel("NonMaxSuppressionV4", host_inputs=(0, 1, 2, 3, 4))
def _nms_v4(ctx, boxes, scores, n, iou, score):
    args = _nms_args(ctx, boxes, scores, n, iou, score)
    selected, _, valid = _padded(ctx, *non_max_suppression(*args), args[2])
    return ctx.xp.asarray(selected), ctx.xp.asarray(valid)


@kernel("NonMaxSuppressionV5", host_inputs=(0, 1, 2, 3, 4, 5))
def _nms_v5(ctx, boxes, scores, n, iou, score, sigma):
    args = _nms_args(ctx, boxes, scores, n, iou, score, sigma)
    selected, kept, valid = _padded(ctx, *non_max_suppression(*args), args[2])
    return ctx.xp.asarray(selected), ctx.xp.asarray(kept.astype(scores.dtype)), ctx.xp.asarray(valid)


# --- DrawBoundingBoxes and DrawBoundingBoxesV2 ------------------------------------------------

# TF's colours when none are given: yellow, blue, red, lime, purple, olive, maroon, navy, aqua, fuchsia.
_DEFAULT_COLORS = np.array([[1, 1, 0, 1], [0, 0, 1, 1], [1, 0, 0, 1], [0, 1, 0, 1], [0.5, 0, 0.5, 1],
                            [0.5, 0.5, 0, 1], [0.5, 0, 0, 1], [0, 0, 0.5, 1], [0, 1, 1, 1], [1, 0, 1, 1]],
                           np.float32)  # fmt: skip


def _draw_shape(ic: InferenceContext) -> list[Shape]:
    s = ic.shape(0)
    if s.rank not in (None, 4):
        raise ic.fail(f"images must be 4-D [batch, height, width, depth], got shape {s}")
    if ic.shape(1).rank not in (None, 3):
        raise ic.fail(f"boxes must be 3-D [batch, num_boxes, 4], got shape {ic.shape(1)}")
    return [s]


def _draw(ctx, images, boxes, colors=None):
    img, bx = ctx.host(images), np.asarray(ctx.host(boxes), np.float32)
    if img.ndim != 4:
        raise ctx.fail(f"images must be 4-D [batch, height, width, depth], got shape {list(img.shape)}")
    batch, height, width, depth = img.shape
    if depth not in (1, 3, 4):
        raise ctx.fail(f"Channel depth should be either 1 (GRY), 3 (RGB), or 4 (RGBA), got {depth}")
    if bx.ndim != 3 or bx.shape[0] != batch or bx.shape[2] != 4:
        raise ctx.fail(f"boxes must be [{batch}, num_boxes, 4] for {batch} images, got shape {list(bx.shape)}")
    table = _DEFAULT_COLORS.copy()
    if depth == 1:
        table[:, 0] = 1
    if colors is not None:
        c = np.asarray(ctx.host(colors), np.float32)
        if c.ndim != 2 or c.shape[1] < depth:
            raise ctx.fail(f"colors must be a matrix [num_colors, >= {depth} channels], got shape {list(c.shape)}")
        if c.size:
            table = c[:, :4]
    out = np.array(img, copy=True)
    for b in range(batch):
        for k in range(bx.shape[1]):
            color = table[k % len(table)][:depth].astype(out.dtype)
            top, bottom = int(bx[b, k, 0] * np.float32(height - 1)), int(bx[b, k, 2] * np.float32(height - 1))
            left, right = int(bx[b, k, 1] * np.float32(width - 1)), int(bx[b, k, 3] * np.float32(width - 1))
            if top > bottom or left > right:  # inverted: not drawn (TF logs a warning)
                continue
            if top >= height or bottom < 0 or left >= width or right < 0:  # outside the image
                continue
            rows = slice(max(top, 0), min(bottom, height - 1) + 1)
            cols = slice(max(left, 0), min(right, width - 1) + 1)
            if top >= 0:
                out[b, top, cols] = color
            if bottom < height:
                out[b, bottom, cols] = color
            if left >= 0:
                out[b, rows, left] = color
            if right < width:
                out[b, rows, right] = color
    return ctx.xp.asarray(out)


register_op("DrawBoundingBoxes", inputs=["images: T", "boxes: float32"], outputs=["output: T"],
            attrs=["T: {float32, float16} = float32"], shape=_draw_shape,
            doc="images [batch, height, width, depth] with each box of boxes [batch, num_boxes, 4] "
            "(fractions of the image) outlined one pixel wide, in TF's colour table in turn.")  # fmt: skip
register_op("DrawBoundingBoxesV2", inputs=["images: T", "boxes: float32", "colors: float32"], outputs=["output: T"],
            attrs=["T: {float32, float16} = float32"], shape=_draw_shape,
            doc="DrawBoundingBoxes with the colours [num_colors, channels] given, one per box in turn "
            "(TF's table when empty).")  # fmt: skip


@kernel("DrawBoundingBoxes", host_inputs=(0, 1))
def _draw_boxes(ctx, images, boxes):
    return _draw(ctx, images, boxes)


@kernel("DrawBoundingBoxesV2", host_inputs=(0, 1, 2))
def _draw_boxes_v2(ctx, images, boxes, colors):
    return _draw(ctx, images, boxes, colors)


not_differentiable("NonMaxSuppressionV2", "NonMaxSuppressionV3", "NonMaxSuppressionV4", "NonMaxSuppressionV5",
                   "DrawBoundingBoxes", "DrawBoundingBoxesV2")  # fmt: skip
