"""The errors users see from the special math ops: CheckNumerics' own message, bad bounds and
counts, integer division by zero."""

from __future__ import annotations

import numpy as np
import pytest

from specflow.errors import OpError, RuntimeFailure, ShapeError
from specflow.graph.builder import GraphBuilder
from specflow.ops.eval import evaluate_op
from specflow.runtime.session import Session, SessionConfig


@pytest.mark.parametrize(
    "values, what",
    [([1.0, np.nan], "NaN"), ([np.inf, 1.0], "Inf"), ([-np.inf, np.nan], "Inf and NaN")],
)
def test_check_numerics_fails_with_its_message(values, what):
    with pytest.raises(OpError) as e:
        evaluate_op("CheckNumerics", [np.array(values, np.float32)], message="logits went bad")
    assert e.value.message == f"logits went bad : Tensor had {what} values"


def test_check_numerics_is_kept_by_the_optimizer_and_fails_the_step():
    b = GraphBuilder()
    x = b.add_op("Placeholder", [], {"dtype": "float32", "shape": [2]}, name="x").name
    y = b.add_op("CheckNumerics", [x], {"message": "x is bad"}, name="check").name
    with Session(b.graph_def, SessionConfig(devices="cpu:1")) as sess:
        np.testing.assert_array_equal(sess.run(y, {x: np.array([1.0, 2.0], np.float32)}), [1.0, 2.0])
        with pytest.raises(RuntimeFailure, match="CheckNumerics on .*CPU:0: x is bad : Tensor had NaN values$"):
            sess.run(y, {x: np.array([1.0, np.nan], np.float32)})
    # On a constant too (stateful: constant folding leaves it to run).
    b = GraphBuilder()
    c = b.const(np.array([np.inf], np.float32), name="c")
    y = b.add_op("CheckNumerics", [c], {"message": "c is bad"}, name="check").name
    with Session(b.graph_def, SessionConfig(devices="cpu:1")) as sess, pytest.raises(RuntimeFailure, match="c is bad : Tensor had Inf values$"):
        sess.run(y)


def test_check_numerics_gradient_checks_the_gradient():
    from specflow.train.gradients import gradients

    b = GraphBuilder()
    x = b.add_op("Placeholder", [], {"dtype": "float32", "shape": [2]}, name="x").name
    y = b.add_op("CheckNumerics", [x], {"message": "fwd"}, name="check").name
    (g,) = gradients(b, [y], [x], grad_ys=[b.const(np.array([1.0, np.inf], np.float32), name="dy")])
    with Session(b.graph_def) as sess, pytest.raises(RuntimeFailure) as e:
        sess.run(g, {x: np.array([1.0, 2.0], np.float32)})
    assert e.value.message.endswith(": Not a number (NaN) or infinity (Inf) values detected in gradient. fwd : "
                                    "Tensor had Inf values")


def test_clip_by_value_bounds_must_be_scalars_or_match():
    with pytest.raises(OpError, match="clip_value_min and clip_value_max must be either scalars or have the "
                                      r"same shape as the input t: \[2, 3\], \[3\], \[\]"):
        evaluate_op("ClipByValue", [np.zeros((2, 3), np.float32), np.zeros(3, np.float32), np.float32(1)])
    b = GraphBuilder()
    t = b.add_op("Placeholder", [], {"dtype": "float32", "shape": [2, 3]}, name="t").name
    lo = b.add_op("Placeholder", [], {"dtype": "float32", "shape": [3]}, name="lo").name
    hi = b.const(np.float32(1), name="hi")
    with pytest.raises(ShapeError, match=r"clip_value_min must be a scalar or have the shape of t, got \[3\]"):
        b.add_op("ClipByValue", [t, lo, hi], {}, name="clip")


@pytest.mark.parametrize("op", ["TruncateDiv", "TruncateMod"])
def test_integer_truncating_division_by_zero_is_an_error(op):
    with pytest.raises(OpError, match="Integer division by zero"):
        evaluate_op(op, [np.array([1, 2], np.int32), np.array([1, 0], np.int32)])


def test_linspace_needs_a_positive_count():
    with pytest.raises(OpError, match="Requires num > 0: 0"):
        evaluate_op("LinSpace", [np.float32(0), np.float32(1), np.int32(0)])
    b = GraphBuilder()
    args = [b.const(np.float32(0), name="a"), b.const(np.float32(1), name="b"), b.const(np.int32(-2), name="n")]
    with pytest.raises(ShapeError, match="Requires num > 0: -2"):
        b.add_op("LinSpace", args, {}, name="ls")


def test_cumulative_logsumexp_axis_out_of_range():
    with pytest.raises(OpError, match="Invalid reduction dimension 2 for input with 2 dimension"):
        evaluate_op("CumulativeLogsumexp", [np.zeros((2, 3), np.float32), np.int32(2)])


def test_truncate_div_on_floats_rounds_toward_zero_and_divides_by_zero_as_ieee():
    """TensorFlow 2.21 runs TruncateDiv on floats (checked in a scratch environment): trunc(x / y)."""
    got = evaluate_op("TruncateDiv", [np.float32([7.5, -7.5, 1.0]), np.float32([2.0, 2.0, 0.0])])[0]
    np.testing.assert_array_equal(got, np.float32([3.0, -3.0, np.inf]))


def test_concat_offset_names_the_shape_that_does_not_match():
    with pytest.raises(OpError, match="input 1 has shape \\[2, 4\\], which does not match \\[2, 3\\] outside dimension 0"):
        evaluate_op("ConcatOffset", [np.int32(0), np.int32([2, 3]), np.int32([2, 4])])
