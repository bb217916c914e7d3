"""Cases for CombinedNonMaxSuppression: TensorFlow 2.21's outputs for the same boxes and scores
(data/tf_combined_nms.json: per-class boxes (q = 3) and shared ones (q = 1), pad_per_class,
clip_boxes off)."""

import json
from pathlib import Path

import numpy as np

from tests.ops.harness import Case

TF = json.loads((Path(__file__).parent / "data" / "tf_combined_nms.json").read_text())
_B, _S = np.array(TF["boxes"], np.float32), np.array(TF["scores"], np.float32)


def _want(name):
    return lambda *_: [np.array(TF[name][k], np.float32 if k < 3 else np.int32) for k in range(4)]


def _args(boxes, per, total, iou, thr):
    return [boxes, _S, np.int32(per), np.int32(total), np.float32(iou), np.float32(thr)]


_OP = "CombinedNonMaxSuppression"
CASES = [
    Case(_OP, _args(_B, 4, 7, 0.3, 0.2), _want("q3"), const_inputs=[2, 3], rtol=0, atol=0),
    Case(_OP, _args(_B[:, :, :1], 2, 20, 0.5, 0.1), _want("q1-pad"), attrs={"pad_per_class": True},
         const_inputs=[2, 3], rtol=0, atol=0, id=f"{_OP}-shared-boxes-pad-per-class"),
    Case(_OP, _args(_B[:, :, :1], 3, 30, 0.5, 0.6), _want("q1-noclip"), attrs={"clip_boxes": False},
         const_inputs=[2, 3], rtol=0, atol=0, id=f"{_OP}-no-clip"),
]
