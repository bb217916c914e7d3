"""Eager ops: every kernel case of tests/ops run through its generated op function (sf.ops.<op>)
gives the reference result; every registered op has a function; errors are the spec's."""

from __future__ import annotations

import numpy as np
import pytest

import specflow as sf
from specflow.api.op_functions import function_for, op_function_names, snake_case
from specflow.errors import OpError, ShapeError
from specflow.ops import all_ops
from specflow.ops.registry import get_op, input_ranges
from tests.ops.harness import Case, collect_cases
from tests.ops.test_kernels import _as_list, _case_id, _compare

# Kernel cases whose op cannot run as one eager op, each with the reason.
NOT_EAGER = {
    "_Arg": "reads the call frame of a Session step",
    "_Retval": "writes the call frame of a Session step",
    "_Send": "hands a value to a rendezvous between partitions",
    "_Recv": "waits on a rendezvous between partitions",
}

CASES: list[Case] = [c for c in collect_cases("cases_", "EXEMPT", {}) if c.op not in NOT_EAGER]


def _grouped(case: Case) -> list:
    """The case's flat inputs as the op function takes them: one value per input arg, a list for
    a list arg."""
    opdef = get_op(case.op)
    ranges = input_ranges(opdef, len(case.inputs), dict(case.attrs))
    return [list(case.inputs[lo:hi]) if arg.is_list else case.inputs[lo]
            for arg, (lo, hi) in zip(opdef.inputs, ranges)]


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_eager_op_matches_numpy(case: Case):
    fn = function_for(snake_case(case.op))
    result = fn(*_grouped(case), **case.attrs)
    flat = [] if result is None else [x for r in _as_list(result) for x in _as_list(r)]
    outs = [np.asarray(t) for t in flat]  # (numpy() gives a scalar as a numpy scalar or bytes, as TF)
    if case.check is not None:
        case.check(outs, case.inputs)
        return
    want = _as_list(case.ref(*case.inputs))
    assert len(outs) == len(want)
    for got, w in zip(outs, want):
        _compare(got, w, case)


def test_every_registered_op_is_a_function():
    names = set(op_function_names())
    for op in all_ops():
        assert snake_case(op) in names
        fn = getattr(sf.ops, snake_case(op))
        assert fn.__name__ == snake_case(op) and op in fn.__doc__
        assert getattr(sf.ops, op) is not None  # the op's own name works too


def test_snake_case_spelling():
    assert [snake_case(o) for o in ("MatMul", "AddV2", "Conv2D", "Conv2DBackpropInput", "_FusedMatMul")] == [
        "mat_mul", "add_v2", "conv2d", "conv2d_backprop_input", "_fused_mat_mul"]
    assert sf.ops.matmul is sf.ops.matmul and sf.ops.matmul.__name__ == "matmul"
    with pytest.raises(AttributeError, match="did you mean"):
        sf.ops.matmull  # noqa: B018


def test_tensor_protocol_and_operators():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = sf.constant(a)
    assert t.dtype.name == "float32" and t.shape.as_list() == [2, 3] and t.ndim == 2
    np.testing.assert_array_equal(np.asarray(t), a)
    np.testing.assert_array_equal((t + 1).numpy(), a + 1)
    np.testing.assert_array_equal((2 * t - t).numpy(), a)
    np.testing.assert_array_equal((a + t).numpy(), a + a)  # numpy defers to the tensor
    np.testing.assert_allclose((t / 2).numpy(), a / 2)
    np.testing.assert_array_equal((t @ t.numpy().T).numpy(), a @ a.T)
    np.testing.assert_array_equal((t ** 2).numpy(), a ** 2)
    np.testing.assert_array_equal((-t).numpy(), -a)
    np.testing.assert_array_equal((t > 2).numpy(), a > 2)
    np.testing.assert_array_equal(t[1].numpy(), a[1])
    np.testing.assert_array_equal(t[:, 1:].numpy(), a[:, 1:])
    np.testing.assert_array_equal(t[..., -1].numpy(), a[..., -1])
    np.testing.assert_array_equal(t[None, 0, ::2].numpy(), a[None, 0, ::2])
    i = sf.constant([7, 2])
    assert i.dtype.name == "int32"
    np.testing.assert_allclose((i / 2).numpy(), [3.5, 1.0])  # ints divide as float64
    assert (i / 2).dtype.name == "float64"
    np.testing.assert_array_equal((i // 2).numpy(), [3, 1])
    assert float(sf.constant(2.5)) == 2.5 and int(sf.constant(3)) == 3


def test_literals_take_the_other_inputs_dtype():
    x = sf.constant(np.ones(3, np.float64))
    assert (x * 2).dtype.name == "float64"
    assert sf.ops.add_v2(x, [1, 2, 3]).dtype.name == "float64"
    np.testing.assert_array_equal(sf.ops.sum([[1, 2], [3, 4]], axis=0).numpy(), [4, 6])
    np.testing.assert_array_equal(sf.ops.sum([[1, 2], [3, 4]]).numpy(), 10)  # the spec's default axes


def test_errors_are_the_specs():
    with pytest.raises(ShapeError, match="dtype mismatch in AddV2"):
        sf.ops.add_v2(sf.constant([1.0]), np.array([1], np.int32))
    with pytest.raises(OpError, match="has no input or attr 'transpose'"):
        sf.ops.matmul(np.eye(2, dtype=np.float32), np.eye(2, dtype=np.float32), transpose=True)
    with pytest.raises(OpError, match="node 'MatMul': inner dimensions differ"):
        sf.ops.matmul(np.ones((2, 3), np.float32), np.ones((2, 3), np.float32))
    with pytest.raises(ShapeError, match="missing input 'b'"):
        sf.ops.matmul(np.ones((2, 3), np.float32))
    with pytest.raises(OpError, match="Reshape does not support dtype float32 for Tshape"):  # as a spec says
        sf.ops.reshape(np.ones(4, np.float32), [2.5, 2])
    with pytest.raises(ShapeError, match="must be int64, got the non-integer"):
        sf.ops.reshape(np.ones(4, np.float32), [2.5, 2], Tshape="int64")


def test_device_scope():
    with sf.device("/cpu:1"):
        t = sf.ops.add_v2(sf.constant(1.0), 2.0)
        v = sf.Variable(1.0)
    assert t.device.endswith("device:CPU:1") and v.device.endswith("device:CPU:1")
    assert sf.constant(1.0).device.endswith("device:CPU:0")


def test_random_ops_draw_new_numbers_each_call():
    a = sf.ops.random_uniform([3], dtype="float32").numpy()
    b = sf.ops.random_uniform([3], dtype="float32").numpy()
    assert a.shape == (3,) and not np.array_equal(a, b)


def test_keyword_inputs_take_tensorflows_names():
    """Atan2's inputs are (y, x), as TF names them: by keyword, atan2(y=1, x=-1) is 3pi/4."""
    got = sf.ops.atan2(y=np.float32(1.0), x=np.float32(-1.0)).numpy()
    np.testing.assert_allclose(got, 3 * np.pi / 4, rtol=1e-6)
    np.testing.assert_allclose(sf.ops.atan2(np.float32(1.0), np.float32(-1.0)).numpy(), 3 * np.pi / 4, rtol=1e-6)


def test_dtypes_are_module_attributes():
    # TensorFlow code writes dtype=tf.float32; sf.float32 is the same DType as "float32"
    from specflow.graph import dtypes

    assert sf.float32 is dtypes.float32 and sf.int64 is dtypes.int64 and sf.bool is dtypes.bool_
    assert sf.double is dtypes.float64
    v = sf.Variable([1, 2], dtype=sf.float64)
    assert v.dtype == sf.float64
    assert sf.ops.cast(sf.constant([1.5]), DstT=sf.int32).dtype == sf.int32
    with pytest.raises(AttributeError):
        sf.float31  # noqa: B018


def test_equality_is_elementwise_as_in_tensorflow_2_and_hashing_by_identity():
    a = sf.constant([1, 2, 3])
    np.testing.assert_array_equal((a == 2).numpy(), [False, True, False])
    np.testing.assert_array_equal((a != np.array([1, 2, 4])).numpy(), [False, False, True])
    assert (a == None) is False and (a != None) is True  # noqa: E711 (the operator is what is tested)
    assert (a == "text") is False and (a == sf.constant([1, 2])) is False  # cannot be compared
    v, w = sf.Variable(3.0), sf.Variable(4.0)
    assert bool(v == 3.0) and not bool(v == w)
    assert {v: "v", w: "w"}[w] == "w" and len({a, sf.constant([1, 2, 3])}) == 2  # keys by identity

    @sf.function
    def evens(x):
        return sf.boolean_mask(x, x % 2 == 0)

    np.testing.assert_array_equal(evens(np.arange(6)).numpy(), [0, 2, 4])


def test_an_operators_numpy_operand_takes_the_tensors_dtype_as_in_tensorflow():
    x = sf.constant([1.0, 2.0])
    for got, want in [(x + np.array([1.0, 3.0]), [2.0, 5.0]), (np.array([1.0, 3.0]) * x, [1.0, 6.0]),
                      (x / np.array([2.0, 4.0]), [0.5, 0.5]), (x + np.array([1, 2]), [2.0, 4.0])]:
        assert got.dtype == sf.float32
        np.testing.assert_array_equal(got.numpy(), want)
    i = sf.constant([1, 2, 3])
    assert (i + np.array([1, 2, 4])).dtype == sf.int32
    with pytest.raises(sf.SpecflowError, match="dtype mismatch"):  # TensorFlow would truncate 1.5 to 1
        i + np.array([1.5, 2.0, 4.0])
    with pytest.raises(sf.SpecflowError, match="dtype mismatch"):  # and wrap 2**40
        i[:2] + np.array([2**40, 1])


def test_numpy_of_a_scalar_is_a_numpy_scalar_as_tensorflows():
    assert type(sf.constant(1.5).numpy()) is np.float32 and type(sf.constant(3).numpy()) is np.int32
    assert sf.constant(b"ab").numpy() == b"ab" and sf.constant("ab").numpy().decode() == "ab"
    assert isinstance(sf.constant([1.0]).numpy(), np.ndarray) and np.asarray(sf.constant(2.0)).shape == ()
    v = sf.Variable(2.0)
    assert type(v.numpy()) is np.float32 and np.asarray(v).shape == ()
