"""Gradient cases for color_ops: RGBToHSV's (TF registers none for HSVToRGB or the adjust ops).
Channels of a pixel stay apart (no ties) and the red-largest pixels keep green and blue apart, so
that the hue does not wrap from 0 to 1 within a finite-difference step."""

import numpy as np

from tests.ops.grad_harness import GradCase

NO_GRADIENT = {op: "TensorFlow registers no gradient for it"
               for op in ("HSVToRGB", "AdjustContrastv2", "AdjustSaturation", "AdjustHue")}  # fmt: skip

_PIXELS = np.array([[0.8, 0.5, 0.2], [0.8, 0.2, 0.5], [0.5, 0.8, 0.2], [0.2, 0.8, 0.5], [0.5, 0.2, 0.8],
                    [0.2, 0.5, 0.8], [0.9, 0.35, 0.6], [0.3, 0.45, 0.1]]).reshape(2, 4, 3)  # fmt: skip

CASES = [GradCase("RGBToHSV", [_PIXELS])]
