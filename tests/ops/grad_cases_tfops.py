"""Gradient cases for Dilation2D and SparseFillEmptyRows (finite differences, inputs away from
ties between taps); the quantize-and-dequantize ops' gradients are straight-through estimates,
checked against TF's recorded numbers instead."""

import numpy as np

from tests.ops.grad_harness import RNG, GradCase

_DIL = {"strides": [1, 2, 1, 1], "rates": [1, 1, 2, 1], "padding": "SAME"}
_FILL_IDX = np.array([[3, 1], [0, 2], [3, 0], [1, 1]], np.int64)

CASES = [
    GradCase("Dilation2D", [RNG.uniform(-2, 2, (2, 5, 6, 3)), RNG.uniform(-2, 2, (2, 3, 3))], attrs=_DIL),
    GradCase("Dilation2D", [RNG.uniform(-2, 2, (1, 6, 5, 2)), RNG.uniform(-2, 2, (3, 2, 2))], id="Dilation2D-valid",
             attrs={"strides": [1, 1, 2, 1], "rates": [1, 2, 1, 1], "padding": "VALID"}),
    GradCase("SparseFillEmptyRows", [_FILL_IDX, RNG.uniform(-2, 2, 4), np.array([6, 3], np.int64), np.float64(0.5)]),
]  # fmt: skip

_TF_NONE = "TensorFlow registers no gradient for it"
NO_GRADIENT = {
    "Dilation2DBackpropInput": _TF_NONE, "Dilation2DBackpropFilter": _TF_NONE, "SparseFillEmptyRowsGrad": _TF_NONE,
    "StatelessShuffle": _TF_NONE + " (a tape through it fails)",
    "QuantizeAndDequantizeV4Grad": "TensorFlow's registered gradient for it cannot run (one output gradient of three)",
}  # fmt: skip
TESTED_ELSEWHERE = {op: "a straight-through estimate, not a derivative: TF's numbers in tests/ops/cases_tfops.py "
                    "(QuantizeAndDequantizeV4Grad) and the parity corpus" for op in (
    "QuantizeAndDequantizeV2", "QuantizeAndDequantizeV3", "QuantizeAndDequantizeV4")}  # fmt: skip
