"""StringFormat / PrintV2 (what tf.print builds) and their tensor formatting, against strings
TensorFlow 2.21's ``tf.strings.format`` wrote for the same values."""

from __future__ import annotations

import numpy as np
import pytest

import specflow as sf
from specflow.ops.print_ops import format_tensor

# value, summarize, what TensorFlow wrote
CASES = [
    (np.arange(10, dtype=np.int32), 3, "[0 1 2 ... 7 8 9]"),
    (np.arange(10, dtype=np.int32), -1, "[0 1 2 3 4 5 6 7 8 9]"),
    (np.arange(6, dtype=np.int64), 3, "[0 1 2 3 4 5]"),
    (np.arange(7, dtype=np.int64), 3, "[0 1 2 ... 4 5 6]"),
    (np.arange(100, dtype=np.int32).reshape(10, 10), 2,
     "[[0 1 ... 8 9]\n [10 11 ... 18 19]\n ...\n [80 81 ... 88 89]\n [90 91 ... 98 99]]"),
    (np.arange(12, dtype=np.int32).reshape(3, 4), 3, "[[0 1 2 3]\n [4 5 6 7]\n [8 9 10 11]]"),
    (np.arange(24, dtype=np.int32).reshape(2, 3, 4), 3,
     "[[[0 1 2 3]\n  [4 5 6 7]\n  [8 9 10 11]]\n\n [[12 13 14 15]\n  [16 17 18 19]\n  [20 21 22 23]]]"),
    (np.arange(60, dtype=np.int32).reshape(3, 4, 5), 1,
     "[[[0 ... 4]\n  ...\n  [15 ... 19]]\n\n ...\n\n [[40 ... 44]\n  ...\n  [55 ... 59]]]"),
    (np.array([0.0, -0.0, 1.5, 1 / 3, 1e-8, 1e20, np.nan, np.inf, -np.inf, 123456789.0, 2.0], np.float32), -1,
     "[0 -0 1.5 0.333333343 1e-08 1e+20 nan inf -inf 123456792 2]"),
    (np.array([1 / 3, 0.1, 1e-300, 2.0, 12345.678], np.float64), -1, "[0.33333333333333331 0.1 1e-300 2 12345.678]"),
    (np.array([1 / 3, 0.1, 2.0], np.float16), -1, "[0.333251953 0.0999755859 2]"),
    (np.array([True, False]), 3, "[1 0]"),
    (np.float32(2.5), 3, "2.5"),
    (np.int32(-7), 3, "-7"),
    (np.zeros([0], np.float32), 3, "[]"),
    (np.zeros([2, 0], np.float32), 3, "[\n ...]"),
    (np.zeros([2, 0, 3], np.float32), 3, "[\n\n ...]"),
    (np.array([0, 255], np.uint8), 3, "[0 255]"),
    (np.array([b"a", b"b c"], dtype=object), 3, '["a" "b c"]'),
    (np.array(b"hi", dtype=object), 3, '"hi"'),
    (np.array([b'a"b\n\x01'], dtype=object), 3, '["a\\"b\\n\\001"]'),
    (np.arange(8, dtype=np.int32).reshape(8, 1), 3, "[[0]\n [1]\n [2]\n ...\n [5]\n [6]\n [7]]"),
    (np.array([1 + 2j], np.complex64), 3, "[?]"),
]


@pytest.mark.parametrize("value,summarize,want", CASES)
def test_tensors_are_formatted_as_tensorflow_prints_them(value, summarize, want):
    assert format_tensor(value, summarize) == want


def test_string_format_and_print_v2_ops(capfd):
    out = sf.ops.StringFormat(inputs=[sf.constant(1), sf.constant([1.5, 2.0])], template="a {} b {} c",
                              placeholder="{}")
    assert out.numpy() == b"a 1 b [1.5 2] c"
    with pytest.raises(sf.SpecflowError, match=r"1 placeholder\(s\) '%s' but there are 2 input"):
        sf.ops.StringFormat(inputs=[sf.constant(1), sf.constant(2)], template="%s")
    sf.ops.PrintV2(input=out, end="!\n")
    assert capfd.readouterr().err == "a 1 b [1.5 2] c!\n"
    with pytest.warns(RuntimeWarning, match="printed to stderr instead"):
        sf.ops.PrintV2(input=out, output_stream="file:///tmp/elsewhere")
    assert capfd.readouterr().err == "a 1 b [1.5 2] c\n"
