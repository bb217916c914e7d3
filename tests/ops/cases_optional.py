"""Cases for optional_ops: an optional made from tensors gives them back; OptionalNone holds
nothing. (An optional is a host object: the cases check what comes out of it, chained in
tests/ops/test_optional_ops.py.)"""

import numpy as np

from specflow.ops.eval import evaluate_op
from tests.ops.harness import Case


def _check_holds(outs, ins):
    opt = outs[0]
    assert opt.shape == () and opt.dtype == object
    back = evaluate_op("OptionalGetValue", [opt], output_types=["float32", "int32"], output_shapes=[[2], []])
    np.testing.assert_array_equal(back[0], ins[0])
    np.testing.assert_array_equal(back[1], ins[1])
    assert evaluate_op("OptionalHasValue", [opt])[0]


def _check_none(outs, ins):
    assert not evaluate_op("OptionalHasValue", [outs[0]])[0]


def _holding(*values):
    return evaluate_op("OptionalFromValue", list(values))[0]


CASES = [
    Case("OptionalFromValue", [np.array([1.5, -2.0], np.float32), np.int32(7)], check=_check_holds),
    Case("OptionalNone", [], check=_check_none),
    Case("OptionalHasValue", [_holding(np.float32(1))], ref=lambda o: np.bool_(True)),
    Case("OptionalGetValue", [_holding(np.array([[1.0, 2.0]]))], attrs={"output_types": ["float64"], "output_shapes": [[1, 2]]},
         ref=lambda o: np.array([[1.0, 2.0]])),
]  # fmt: skip
