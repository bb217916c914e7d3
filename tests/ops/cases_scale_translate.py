"""Cases for scale_translate_ops: ScaleAndTranslate (tf.image.resize with antialias or the lanczos,
gaussian and mitchellcubic methods) and its gradient op, against weights worked out by hand."""

import numpy as np

from tests.ops.harness import Case, f32

_ROW = np.array([1.0, 2.0, 4.0, 8.0], np.float32).reshape(1, 1, 4, 1)


def _st(x, size, scale, translation, kernel_type, antialias=True):
    return [x, np.array(size, np.int32), np.array(scale, np.float32), np.array(translation, np.float32)], \
        {"kernel_type": kernel_type, "antialias": antialias}


# Halving a row with the antialiased triangle kernel: samples at 1 and 3, the kernel twice as
# wide, taps at -0.25, 0.25, 0.75 (weights 3/7, 3/7, 1/7) and mirrored for the second output.
_HALF, _HALF_ATTRS = _st(_ROW, [1, 2], [1.0, 0.5], [0.0, 0.0], "triangle")
# The box kernel at scale 2 without antialiasing: each output copies its nearest input.
_BOX, _BOX_ATTRS = _st(_ROW, [1, 8], [1.0, 2.0], [0.0, 0.0], "box", antialias=False)
# A translation past the image: outputs sampled outside it are 0.
_OUT, _OUT_ATTRS = _st(_ROW, [1, 4], [1.0, 1.0], [0.0, 2.0], "triangle")
_X = f32(2, 3, 4, 2)
_ID, _ID_ATTRS = _st(_X, [3, 4], [1.0, 1.0], [0.0, 0.0], "lanczos3")

CASES = [
    Case("ScaleAndTranslate", _HALF, attrs=_HALF_ATTRS, const_inputs=[1, 2, 3], rtol=1e-6,
         ref=lambda *a: np.array([(3 * 1 + 3 * 2 + 4) / 7, (2 + 3 * 4 + 3 * 8) / 7], np.float32).reshape(1, 1, 2, 1)),
    Case("ScaleAndTranslate", _BOX, attrs=_BOX_ATTRS, const_inputs=[1, 2, 3], id="ScaleAndTranslate-box-up",
         ref=lambda *a: np.repeat(_ROW, 2, axis=2)),
    Case("ScaleAndTranslate", _OUT, attrs=_OUT_ATTRS, const_inputs=[1, 2, 3], id="ScaleAndTranslate-outside-is-zero",
         ref=lambda *a: np.array([0, 0, 1, 2], np.float32).reshape(1, 1, 4, 1)),
    Case("ScaleAndTranslate", _ID, attrs=_ID_ATTRS, const_inputs=[1, 2, 3], rtol=1e-5, atol=1e-6,
         id="ScaleAndTranslate-identity", ref=lambda x, *a: x),
    Case("ScaleAndTranslate", [np.array([[[[10], [20], [40], [80]]]], np.uint8), *_HALF[1:]], attrs=_HALF_ATTRS,
         const_inputs=[1, 2, 3], rtol=1e-6, id="ScaleAndTranslate-uint8",
         ref=lambda *a: np.array([(30 + 60 + 40) / 7, (20 + 120 + 240) / 7], np.float32).reshape(1, 1, 2, 1)),
    # The gradient of halving: each input collects the weights it was read with.
    Case("ScaleAndTranslateGrad", [np.array([1.0, 10.0], np.float32).reshape(1, 1, 2, 1), _ROW, _HALF[2], _HALF[3]],
         attrs=_HALF_ATTRS, const_inputs=[2, 3], rtol=1e-6,
         ref=lambda *a: np.array([3 / 7, 3 / 7 + 10 / 7, 1 / 7 + 30 / 7, 30 / 7], np.float32).reshape(1, 1, 4, 1)),
]
