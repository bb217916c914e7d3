"""StringFormat (specflow/ops/print_ops.py): tf.print's formatting, the references being strings
TensorFlow 2.21 wrote. PrintV2 writes to stderr: tests/ops/test_print_ops.py."""

from __future__ import annotations

import numpy as np

from tests.ops.harness import Case

EXEMPT = {"PrintV2": "writes to stderr; tests/ops/test_print_ops.py"}


def _text(s: str):
    return lambda *xs: np.array(s.encode(), dtype=object)


CASES = [
    Case("StringFormat", [np.int32(1), np.array([1.5, 2.0], np.float32)], _text("a 1 b [1.5 2] c"),
         attrs={"template": "a {} b {} c", "placeholder": "{}"}, id="StringFormat-template"),
    Case("StringFormat", [np.arange(10, dtype=np.int64)], _text("[0 1 ... 8 9]"), attrs={"summarize": 2},
         id="StringFormat-summarize"),
]
