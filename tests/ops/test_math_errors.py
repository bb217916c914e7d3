"""Math and reduction ops: the errors users see (shape functions at build time, kernels at run time)."""

from __future__ import annotations

import numpy as np
import pytest

from specflow.errors import OpError, ShapeError
from specflow.graph.builder import GraphBuilder
from specflow.graph.dtypes import float32, int32
from specflow.graph.shapes import Shape
from specflow.ops import get_op
from specflow.ops.eval import evaluate_op
from specflow.ops.registry import TensorSpec


def _ph(b: GraphBuilder, name: str, shape, dtype="float32") -> str:
    return b.add_op("Placeholder", attrs={"dtype": dtype, "shape": shape}, name=name).name


def _build(op: str, shapes, dtypes=None, attrs=None, consts=None):
    """Placeholders of the given shapes (Consts where ``consts`` gives a value), then ``op``."""
    b = GraphBuilder()
    dtypes = dtypes or ["float32"] * len(shapes)
    consts = consts or {}
    names = [
        b.const(consts[i], name=f"c{i}") if i in consts else _ph(b, f"p{i}", s, d)
        for i, (s, d) in enumerate(zip(shapes, dtypes, strict=True))
    ]
    return b.add_op(op, names, attrs or {}, name="op")


# --- shape functions -------------------------------------------------------------------------


def test_incompatible_broadcast_names_both_shapes():
    with pytest.raises(ShapeError) as e:
        _build("Mul", [[2, 3], [4]])
    assert e.value.message == "Mul: incompatible shapes [2, 3] and [4] (cannot broadcast)"
    assert e.value.node == "op"


def test_matmul_inner_dimensions():
    with pytest.raises(ShapeError) as e:
        _build("MatMul", [[None, 64], [32, 10]])
    assert e.value.message == "MatMul: inner dimensions differ: [?, 64] x [32, 10]"
    assert "node 'op'" in str(e.value)


def test_matmul_inner_dimensions_mentions_transposes():
    with pytest.raises(ShapeError) as e:
        _build("MatMul", [[8, 64], [10, 32]], attrs={"transpose_b": True})
    assert e.value.message == "MatMul: inner dimensions differ: [8, 64] x [10, 32] (transpose_b=true)"


def test_matmul_transpose_fixes_the_mismatch():
    node = _build("MatMul", [[64, None], [10, 64]], attrs={"transpose_a": True, "transpose_b": True})
    assert node.attrs["transpose_a"] is True


def test_matmul_needs_matrices():
    with pytest.raises(
        ShapeError, match=r"MatMul: input 'a' must be a matrix \(rank 2\), got shape \[2, 3, 4\]"
    ):
        _build("MatMul", [[2, 3, 4], [4, 5]])


def test_batch_matmul_inner_and_batch_dims():
    with pytest.raises(
        ShapeError, match=r"BatchMatMulV2: inner dimensions differ: \[2, 3, 4\] x \[2, 5, 6\]"
    ):
        _build("BatchMatMulV2", [[2, 3, 4], [2, 5, 6]])
    with pytest.raises(ShapeError, match=r"BatchMatMulV2: batch dimensions cannot broadcast"):
        _build("BatchMatMulV2", [[2, 3, 4], [3, 4, 6]])


def test_dtype_mismatch():
    with pytest.raises(ShapeError) as e:
        _build("AddV2", [[2], [2]], dtypes=["float32", "int32"])
    assert e.value.message == "dtype mismatch in AddV2: input 'y' is int32 but input 'x' is float32"


def test_disallowed_dtype_lists_what_is_allowed():
    with pytest.raises(OpError, match="Sqrt does not support dtype int32 for T; allowed: bfloat16, complex128"):
        _build("Sqrt", [[2]], dtypes=["int32"])


def test_reduction_axis_out_of_range():
    with pytest.raises(ShapeError) as e:
        _build("Sum", [[2, 3], None], consts={1: np.array([2], np.int32)})
    assert e.value.message == "Sum: Invalid reduction dimension 2 for input with 2 dimension(s)"


def test_reduction_axis_named_twice_is_refused_as_tf_does():
    with pytest.raises(ShapeError, match=r"Sum: Axes contains duplicate dimension: 1"):
        _build("Sum", [[2, 3], None], consts={1: np.array([1, -1], np.int32)})
    with pytest.raises(OpError, match="Axes contains duplicate dimension: 1"):
        evaluate_op("Max", [np.ones((2, 3), np.float32), np.array([1, 1], np.int32)])


def test_argmax_dimension_must_be_scalar():
    with pytest.raises(ShapeError, match=r"ArgMax: dimension must be a scalar, got shape \[1\]"):
        _build("ArgMax", [[2, 3], None], consts={1: np.array([1], np.int32)})


def test_select_shapes():
    with pytest.raises(
        ShapeError, match=r"Select: 't' and 'e' must have the same shape, got \[2\] and \[3\]"
    ):
        _build("Select", [[2], [2], [3]], dtypes=["bool", "float32", "float32"])
    with pytest.raises(ShapeError, match=r"Select: a vector condition must match the first dimension"):
        _build("Select", [[3], [2, 4], [2, 4]], dtypes=["bool", "float32", "float32"])


# --- partial shapes ---------------------------------------------------------------------------


def test_reduction_shapes_without_constant_axes():
    b = GraphBuilder()
    x, axes = _ph(b, "x", [None, 3, 4]), _ph(b, "axes", [1], "int32")
    keep = b.add_op("Max", [x, axes], {"keep_dims": True}, name="keep")
    drop = b.add_op("Max", [x, axes], name="drop")
    assert b.spec(keep.name).shape == Shape([None, None, None])
    assert b.spec(drop.name).shape.rank is None


def test_reduction_alias_and_default_axes():
    opdef = get_op("Mean")
    axes = opdef.inputs[1]
    assert axes.alias == "axis" and axes.has_default
    spec = TensorSpec(float32, Shape([None, 5]))
    np.testing.assert_array_equal(axes.default([spec]), np.array([0, 1], np.int32))
    assert axes.default([spec]).dtype == np.int32
    with pytest.raises(ValueError, match="rank, which is unknown"):
        axes.default([TensorSpec(int32, Shape(None))])
    assert get_op("ArgMax").inputs[1].alias == "axis"


# --- kernels ----------------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["Div", "FloorDiv", "FloorMod"])
def test_integer_division_by_zero(op):
    with pytest.raises(OpError, match="Integer division by zero"):
        evaluate_op(op, [np.array([1, 2], np.int32), np.array([1, 0], np.int32)])


@pytest.mark.parametrize("op", ["Div", "FloorDiv", "FloorMod", "TruncateDiv", "TruncateMod", "Pow"])
def test_integer_division_of_nothing_is_no_error(op):
    # TF checks each element it computes: an empty result divides by nothing (the gradient of
    # a scalar's Prod takes (axes + rank) % rank with rank 0 and no axes).
    x = np.zeros((0, 2), np.int32)
    (out,) = evaluate_op(op, [x, np.array([0, -1], np.int32)])
    assert out.shape == (0, 2) and out.dtype == np.int32


def test_float_division_by_zero_is_inf():
    (out,) = evaluate_op("Div", [np.array([1.0, -1.0], np.float32), np.array(0.0, np.float32)])
    np.testing.assert_array_equal(out, [np.inf, -np.inf])


def test_integer_negative_power():
    with pytest.raises(OpError, match="Integers to negative integer powers are not allowed"):
        evaluate_op("Pow", [np.array([2], np.int32), np.array([-1], np.int32)])


def test_runtime_broadcast_error():
    with pytest.raises(OpError, match=r"Incompatible shapes: \[2, 3\] vs. \[4\]"):
        evaluate_op("Add", [np.zeros((2, 3), np.float32), np.zeros(4, np.float32)])


def test_runtime_matmul_error():
    with pytest.raises(OpError, match=r"inner dimensions differ: \[2, 3\] x \[2, 3\]"):
        evaluate_op("MatMul", [np.zeros((2, 3)), np.zeros((2, 3))])


def test_argmax_over_empty_axis():
    with pytest.raises(OpError, match=r"Reduction axis 1 is empty in shape \[2, 0\]"):
        evaluate_op("ArgMax", [np.zeros((2, 0)), np.array(1, np.int32)])


def test_kernels_never_mutate_inputs():
    xs = [np.arange(3, dtype=np.float32), np.ones(3, np.float32)]
    before = [x.copy() for x in xs]
    evaluate_op("AddN", xs)
    evaluate_op("Cast", [xs[0]], DstT="float16", Truncate=True)
    for x, b in zip(xs, before, strict=True):
        np.testing.assert_array_equal(x, b)


def test_zero_dim_results_are_arrays():
    (out,) = evaluate_op("Mul", [np.array(2, np.int32), np.array(3, np.int32)])
    assert isinstance(out, np.ndarray) and out.dtype == np.int32 and out.shape == ()
