"""Cases for inplace_ops' Empty: a new tensor of the shape and dtype asked for (zeros here, which
TF guarantees only with init, so the cases without it hold no elements or strings)."""

import numpy as np

from tests.ops.harness import Case

CASES = [
    Case("Empty", [np.array([2, 3], np.int32)], attrs={"dtype": "float32", "init": True}, const_inputs=[0],
         ref=lambda s: np.zeros((2, 3), np.float32)),
    Case("Empty", [np.array([0, 4], np.int32)], attrs={"dtype": "int64"}, const_inputs=[0],
         ref=lambda s: np.zeros((0, 4), np.int64), id="Empty-zero-size"),
    Case("Empty", [np.array([2], np.int32)], attrs={"dtype": "string"}, const_inputs=[0],
         ref=lambda s: np.array([b"", b""], object), id="Empty-string"),
]
