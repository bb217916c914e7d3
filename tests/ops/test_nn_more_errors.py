"""The ops of depthwise_conv_ops, batch_norm_ops, space_depth_ops, image_ops, lrn_ops,
conv3d_ops and pool_ops reject bad inputs with one-line errors naming the node and what was
expected: in the kernel and, where shapes are static, in the shape function."""

import numpy as np
import pytest

from specflow.errors import OpError, ShapeError
from specflow.graph.builder import GraphBuilder
from specflow.ops.eval import evaluate_op


def z(*shape, dtype=np.float32):
    return np.zeros(shape, dtype)


def i32(*values):
    return np.array(values, np.int32)


_ONES = {"strides": [1, 1, 1, 1], "padding": "SAME"}
_POOL3 = {"ksize": [1, 2, 2, 2, 1], "strides": [1, 1, 1, 1, 1], "padding": "SAME"}

BAD = [
    ("DepthwiseConv2dNative", [z(1, 4, 4, 3), z(2, 2, 2, 2)], _ONES,
     r"input has 3 channels .* filter expects 2 in_channels .*\[height, width, in_channels, channel_multiplier\]"),
    ("DepthwiseConv2dNativeBackpropInput", [i32(1, 4, 4, 2), z(2, 2, 2, 2), z(1, 3, 3, 4)], _ONES,
     r"out_backprop has shape \[1, 3, 3, 4\], but DepthwiseConv2dNative .* gives \[1, 4, 4, 4\]"),
    ("FusedBatchNormV3", [z(1, 4, 4, 3), z(2), z(3), z(3), z(3)], {"is_training": False},
     r"scale has 2 entries but x has 3 channels \(NHWC\)"),
    ("FusedBatchNormV3", [z(1, 4, 4, 3), z(3), z(3), z(0), z(0)], {"exponential_avg_factor": 0.5},
     r"mean has 0 entries but x has 3 channels"),
    ("FusedBatchNorm", [z(4, 3), z(3), z(3), z(3), z(3)], {}, r"x must be 4-D for data_format NHWC, got shape \[4, 3\]"),
    ("FusedBatchNormGradV3", [z(1, 2, 2, 3), z(1, 2, 2, 2), z(3), z(3), z(3), z(0)], {},
     r"y_backprop has shape \[1, 2, 2, 3\] but x has \[1, 2, 2, 2\]"),
    ("SpaceToDepth", [z(1, 5, 4, 3)], {"block_size": 2}, r"input height 5 is not divisible by block_size 2"),
    ("DepthToSpace", [z(1, 5, 4, 3)], {"block_size": 2}, r"input depth 3 is not divisible by block_size \* block_size = 4"),
    ("SpaceToBatchND", [z(1, 5, 4), i32(2, 2), np.array([[0, 0], [0, 0]], np.int32)], {},
     r"padded size 5 \+ 0 \+ 0 is not divisible by block size 2"),
    ("SpaceToBatchND", [z(1, 4, 4), i32(2, 2), i32(0, 0)], {}, r"paddings must be a \[2, 2\] tensor of non-negative sizes"),
    ("BatchToSpaceND", [z(3, 5, 4), i32(2, 2), np.zeros((2, 2), np.int32)], {}, r"batch 3 is not divisible by the block count 4"),
    ("ResizeBilinear", [z(1, 5, 4, 3), i32(2, 2, 3)], {}, r"size must be a 1-D tensor of 2 non-negative sizes"),
    ("ResizeNearestNeighbor", [z(1, 5, 4, 3), i32(2, 2)], {"align_corners": True, "half_pixel_centers": True},
     r"half_pixel_centers and align_corners cannot both be true"),
    ("ResizeBilinear", [z(5, 4, 3), i32(2, 2)], {}, r"images must be 4-D \[batch, height, width, channels\]"),
    ("LRN", [z(5, 4, 3)], {}, r"input must be 4-D, got shape \[5, 4, 3\]"),
    ("LRNGrad", [z(1, 2, 2, 3), z(1, 2, 2, 3), z(1, 2, 2, 2)], {}, r"must be 4-D of one shape"),
    ("Conv3D", [z(1, 4, 4, 4, 3), z(2, 2, 2, 2, 2)], {"strides": [1] * 5, "padding": "SAME"},
     r"input has 3 channels .* filter expects 2 in_channels"),
    ("Conv3D", [z(1, 4, 4, 4, 2), z(2, 2, 2, 2, 2)], {"strides": [1, 2, 1, 1, 2], "padding": "SAME"},
     r"strides \[1, 2, 1, 1, 2\]: only the spatial dimensions of NDHWC may differ from 1"),
    ("AvgPool3D", [z(1, 4, 4, 4, 3)], {**_POOL3, "ksize": [1, 2, 2, 2, 2]}, r"only the spatial dimensions of NDHWC"),
    ("AvgPool3DGrad", [i32(1, 4, 4, 4, 3), z(1, 3, 4, 4, 3)], _POOL3,
     r"grad has shape \[1, 3, 4, 4, 3\], but AvgPool3D .* gives \[1, 4, 4, 4, 3\]"),
    ("MaxPoolV2", [z(1, 4, 4, 3), i32(1, 2, 2), i32(1, 1, 1, 1)], {"padding": "SAME"},
     r"ksize must be a 1-D tensor of 4 entries, got \[1, 2, 2\]"),
    ("MaxPoolGradWithArgmax", [z(1, 4, 4, 1), z(1, 2, 2, 1), np.array([0, 1, 2, 99]).reshape(1, 2, 2, 1)],
     {"ksize": [1, 2, 2, 1], "strides": [1, 2, 2, 1], "padding": "VALID"}, r"argmax holds an index outside the input"),
]  # fmt: skip


@pytest.mark.parametrize("op,inputs,attrs,message", BAD, ids=[f"{b[0]}-{i}" for i, b in enumerate(BAD)])
def test_bad_inputs_are_one_line_errors(op, inputs, attrs, message):
    with pytest.raises(OpError, match=message) as e:
        evaluate_op(op, inputs, name="n", **attrs)
    assert "node 'n'" in str(e.value) and "\n" not in str(e.value)


def test_shape_functions_reject_static_mismatches():
    b = GraphBuilder()
    x = b.add_op("Placeholder", [], {"dtype": "float32", "shape": [None, 4, 4, 3]}, name="x").name
    f = b.add_op("Placeholder", [], {"dtype": "float32", "shape": [3, 3, 2, 2]}, name="f").name
    with pytest.raises(ShapeError, match=r"node 'dw'.* input has 3 channels"):
        b.add_op("DepthwiseConv2dNative", [x, f], _ONES, name="dw")
    s = b.add_op("Placeholder", [], {"dtype": "float32", "shape": [4]}, name="s").name
    with pytest.raises(ShapeError, match=r"node 'bn'.* scale has 4 entries but x has 3 channels"):
        b.add_op("FusedBatchNormV3", [x, s, s, s, s], {"is_training": False}, name="bn")
    with pytest.raises(ShapeError, match=r"node 's2d'.* input height 4 is not divisible by block_size 3"):
        b.add_op("SpaceToDepth", [x], {"block_size": 3}, name="s2d")
