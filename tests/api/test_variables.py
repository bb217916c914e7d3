"""sf.Variable: value semantics, updates through the state ops' kernels, errors, collection; and
the eager ops on a GPU (skipped without one)."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import specflow as sf
from specflow.errors import GraphError, OpError, ShapeError


def test_reads_are_snapshots_and_updates_use_the_kernels():
    v = sf.Variable([1.0, 2.0], name="v")
    assert v.dtype.name == "float32" and v.shape.as_list() == [2] and v.trainable
    before = v.read_value()
    assert v.assign_add([1.0, 1.0]) is v
    np.testing.assert_array_equal(before.numpy(), [1.0, 2.0])  # a value handed out never changes
    np.testing.assert_array_equal(v.numpy(), [2.0, 3.0])
    np.testing.assert_array_equal(v.assign_sub([0.5, 0.5], read_value=True).numpy(), [1.5, 2.5])
    v.assign(np.array([7.0, 8.0], np.float32))
    np.testing.assert_array_equal(np.asarray(v), [7.0, 8.0])
    np.testing.assert_array_equal((v * 2).numpy(), [14.0, 16.0])  # used as a tensor: its value
    np.testing.assert_array_equal(sf.ops.sum(v).numpy(), 15.0)


def test_dtypes_shapes_and_errors():
    i = sf.Variable(3)
    assert i.dtype.name == "int32" and not i.trainable  # integers are never trainable
    d = sf.Variable([1.0, 2.0], dtype="float64", trainable=False)
    assert d.dtype.name == "float64" and not d.trainable
    with pytest.raises((OpError, ShapeError), match="shape"):
        d.assign([1.0, 2.0, 3.0])
    with pytest.raises(ShapeError, match="AssignVariableOp"):
        d.assign(sf.constant(np.array([1, 2], np.int32)))  # a tensor keeps its dtype, as in TensorFlow
    with pytest.raises(GraphError, match="does not fit shape"):
        sf.Variable([1.0, 2.0], shape=[3])
    flexible = sf.Variable(np.zeros(2, np.float32), shape=[None])
    flexible.assign(np.zeros(5, np.float32))
    assert flexible.numpy().shape == (5,)


def test_assigned_numpy_arrays_take_the_variables_dtype():
    # As TensorFlow converts them: numpy's float64 and int64 defaults into float32/int32 variables.
    v = sf.Variable([1.0, 2.0])
    v.assign(np.array([1.5, 2.5]))
    v.assign_add(np.array([1, 1]))
    v.assign_sub(np.array([0.5, 0.5]))
    s = sf.Variable(1.0)
    s.assign(np.float64(2.5))
    assert s.dtype.name == "float32" and float(s) == 2.5
    assert v.dtype.name == "float32"
    np.testing.assert_array_equal(v.numpy(), [2.0, 3.0])
    i = sf.Variable([1, 2])
    i.assign(np.array([3, 4]))
    i.assign_add(np.array([1.0, 1.0]))  # integral floats convert
    np.testing.assert_array_equal(i.numpy(), [4, 5])
    assert i.numpy().dtype == np.int32
    with pytest.raises(GraphError, match="would change 1 of 2 value"):
        i.assign(np.array([1.5, 2.0]))
    with pytest.raises(GraphError, match="would change 1 of 1 value"):
        sf.Variable(np.int8(1)).assign(np.array(300))
    with pytest.raises(GraphError, match="complex128 value would change"):
        v.assign(np.array([1j, 2]))

    @sf.function
    def reset():
        v.assign(np.zeros(2))  # inside a function too
        return v.read_value()

    np.testing.assert_array_equal(reset().numpy(), [0.0, 0.0])


def test_collected_when_unreferenced():
    v = sf.Variable(np.ones(1000, np.float32))
    ref, mgr, uid = weakref.ref(v), v._managers[0], v._uid
    assert mgr.get("sf", uid) is not None
    del v
    gc.collect()
    assert ref() is None and mgr.get("sf", uid) is None


@pytest.mark.gpu
def test_eager_ops_and_functions_on_a_gpu():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    with sf.device("/gpu:0"):
        t = sf.ops.mat_mul(a, a, transpose_b=True)
        v = sf.Variable(a)
        v.assign_add(a)
    assert t.device.endswith("device:GPU:0") and type(t.numpy()) is np.ndarray
    np.testing.assert_allclose(t.numpy(), a @ a.T)
    np.testing.assert_allclose(v.numpy(), 2 * a)

    @sf.function
    def f(x):
        with sf.device("/gpu:0"):
            return sf.ops.relu(x - 1.0)

    np.testing.assert_allclose(f(a).numpy(), np.maximum(a - 1, 0))
