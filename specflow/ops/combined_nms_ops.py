"""CombinedNonMaxSuppression (tf.image.combined_non_max_suppression), as TF's CPU kernel does it
(``non_max_suppression_op.cc``): per batch entry and class, greedy NMS of the boxes scoring above
score_threshold (at most max_output_size_per_class, a box suppressed by IoU > iou_threshold with
one kept); then every class's kept boxes by score, the best max_total_size of them (with
pad_per_class: at most max_output_size_per_class * num_classes), boxes clipped to [0, 1] unless
clip_boxes is false, zero-padded, and how many are valid. Boxes are [batch, num_boxes, q, 4] with q
1 (shared by the classes) or num_classes. Equal scores across classes keep class order (TF's sort
leaves their order unspecified). CPU only."""

from __future__ import annotations

import numpy as np

from specflow.graph.shapes import Shape
from specflow.ops.box_ops import _iou
from specflow.ops.inference import InferenceContext
from specflow.ops.registry import kernel, not_differentiable, register_op


def _output_size(fail, per_class, total, pad: bool, num_classes):
    if total is not None and total <= 0:
        raise fail("max_total_size must be > 0")
    if not pad:
        return total
    if total is None or per_class is None or num_classes is None:
        return None
    return min(total, per_class * num_classes)


def _combined_shape(ic: InferenceContext) -> list[Shape]:
    boxes, scores = ic.shape(0), ic.shape(1)
    if boxes.rank not in (None, 4) or (boxes.rank == 4 and boxes[3] not in (None, 4)):
        raise ic.fail(f"boxes must be [batch, num_boxes, q, 4], got shape {boxes}")
    if scores.rank not in (None, 3):
        raise ic.fail(f"scores must be [batch, num_boxes, num_classes], got shape {scores}")
    for i, what in ((2, "max_output_size_per_class"), (3, "max_total_size"), (4, "iou_threshold"),
                    (5, "score_threshold")):  # fmt: skip
        if ic.shape(i).rank not in (None, 0):
            raise ic.fail(f"{what} must be a scalar, got shape {ic.shape(i)}")
    classes = scores[2] if scores.rank == 3 else None
    per_class, total = (None if ic.value(i) is None else int(ic.value(i)) for i in (2, 3))
    n = _output_size(ic.fail, per_class, total, ic.attrs["pad_per_class"], classes)
    batch = boxes[0] if boxes.rank == 4 else (scores[0] if scores.rank == 3 else None)
    return [Shape([batch, n, 4]), Shape([batch, n]), Shape([batch, n]), Shape([batch])]


register_op(
    "CombinedNonMaxSuppression",
    inputs=["boxes: float32", "scores: float32", "max_output_size_per_class: int32", "max_total_size: int32",
            "iou_threshold: float32", "score_threshold: float32"],  # fmt: skip
    outputs=["nmsed_boxes: float32", "nmsed_scores: float32", "nmsed_classes: float32", "valid_detections: int32"],
    attrs=["pad_per_class: bool = false", "clip_boxes: bool = true"],
    shape=_combined_shape,
    doc="Greedy NMS per batch entry and class, then the best max_total_size boxes over the classes: "
    "boxes [batch, n, 4] (clipped to [0, 1] with clip_boxes), scores, classes, and the valid count.",
)
not_differentiable("CombinedNonMaxSuppression")


def _per_class(boxes: np.ndarray, scores: np.ndarray, limit: int, iou: np.float32, threshold: np.float32) -> list:
    """The indices TF's greedy NMS keeps for one class, best first."""
    order = [i for i in np.argsort(-scores, kind="stable").tolist() if scores[i] > threshold]
    kept: list[int] = []
    for i in order:
        if len(kept) >= limit:
            break
        if all(_iou(boxes, i, j) <= iou for j in reversed(kept)):
            kept.append(i)
    return kept


@kernel("CombinedNonMaxSuppression", devices=("CPU",), host_inputs=(2, 3, 4, 5))
def _combined_nms(ctx, boxes, scores, per_class, total, iou, threshold):
    if boxes.ndim != 4 or boxes.shape[3] != 4:
        raise ctx.fail(f"boxes must be [batch, num_boxes, q, 4], got shape {list(boxes.shape)}")
    if scores.ndim != 3 or scores.shape[:2] != boxes.shape[:2]:
        raise ctx.fail(f"scores must be [batch, num_boxes, num_classes] for boxes of shape {list(boxes.shape)}, "
                       f"got {list(scores.shape)}")  # fmt: skip
    batch, num_boxes, q = boxes.shape[:3]
    classes = scores.shape[2]
    if q not in (1, classes):
        raise ctx.fail(f"the third dimension of boxes must be 1 or num_classes ({classes}), got {q}")
    for v, what in ((per_class, "max_output_size_per_class"), (total, "max_total_size"), (iou, "iou_threshold"),
                    (threshold, "score_threshold")):  # fmt: skip
        if np.ndim(v):
            raise ctx.fail(f"{what} must be a scalar, got shape {list(np.shape(v))}")
    iou, threshold = np.float32(iou), np.float32(threshold)
    if not 0 <= iou <= 1:
        raise ctx.fail(f"iou_threshold must be in [0, 1], got {iou}")
    pad, clip = ctx.attrs["pad_per_class"], ctx.attrs["clip_boxes"]
    n = _output_size(ctx.fail, int(per_class), int(total), pad, classes)
    limit = min(int(per_class), num_boxes)
    out_boxes = np.zeros((batch, n, 4), np.float32)
    out_scores, out_classes = np.zeros((batch, n), np.float32), np.zeros((batch, n), np.float32)
    valid = np.zeros(batch, np.int32)
    for b in range(batch):
        found = []  # (score, class, box), class-major as TF collects them
        for c in range(classes):
            cls_boxes = boxes[b, :, c if q > 1 else 0]
            for i in _per_class(cls_boxes, scores[b, :, c], limit, iou, threshold):
                found.append((scores[b, i, c], c, cls_boxes[i]))
        found.sort(key=lambda f: -f[0])  # stable: equal scores keep class order
        count = min(len(found), n)
        valid[b] = count
        for k, (s, c, box) in enumerate(found[:count]):
            out_boxes[b, k] = np.clip(box, 0.0, 1.0) if clip else box
            out_scores[b, k], out_classes[b, k] = s, c
    return out_boxes, out_scores, out_classes, valid


