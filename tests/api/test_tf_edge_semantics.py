"""Where TensorFlow 2 code relies on an edge of TF's semantics: the gradient of a guarded
``where(x > 0, sqrt(x), 0)`` is 0 (not NaN) where the guard is false; ``reduce_logsumexp`` of an
all ``-inf`` or a ``+inf`` row; tensors as indices inside ``sf.function``. References are TF
2.21's results, written out."""

from __future__ import annotations

import numpy as np
import pytest

import specflow as sf

INF = np.inf


@pytest.mark.parametrize("fn, want", [
    (sf.sqrt, [0.25, 0.0, 0.0]),
    (sf.math.rsqrt, [-0.0625, 0.0, 0.0]),
    (sf.math.reciprocal, [-0.0625, 0.0, 0.0]),
])  # fmt: skip
@pytest.mark.parametrize("traced", [False, True])
def test_guarded_gradient_is_zero_where_the_branch_is_not_taken(fn, want, traced):
    x = sf.Variable([4.0, -1.0, 0.0])

    def grad():
        with sf.GradientTape() as tape:
            y = sf.reduce_sum(sf.where(x > 0, fn(x), sf.zeros_like(x)))
        return tape.gradient(y, x)

    got = (sf.function(grad) if traced else grad)().numpy()
    np.testing.assert_array_equal(got, np.float32(want))


def test_complex_sqrt_rsqrt_reciprocal_gradients_conjugate_as_tf():
    want = {  # tf.GradientTape over real(f(x) * c), complex128
        sf.sqrt: [0.30456729 - 0.45870284j, 1.03775108 - 0.36844379j],
        sf.math.rsqrt: [-0.09864541 + 0.09001436j, 0.05129695 + 0.53169978j],
        sf.math.reciprocal: [-0.10726644 + 0.07612457j, 0.51211073 + 0.53979239j],
    }
    for fn, w in want.items():
        x = sf.Variable([4.0 + 1j, 0.5 - 2j], dtype=sf.complex128)
        with sf.GradientTape() as tape:
            y = sf.reduce_sum(sf.math.real(fn(x) * sf.constant([1 + 2j, 3 - 1j], sf.complex128)))
        np.testing.assert_allclose(tape.gradient(y, x).numpy(), w, rtol=1e-7)


def test_reduce_logsumexp_of_non_finite_rows():
    assert sf.reduce_logsumexp([-INF, -INF]).numpy() == -INF
    assert sf.reduce_logsumexp([INF, 1.0]).numpy() == INF
    got = sf.reduce_logsumexp([[1.0, 2.0], [-INF, -INF]], axis=1, keepdims=True).numpy()
    np.testing.assert_allclose(got, [[np.logaddexp(1.0, 2.0)], [-INF]], rtol=1e-6)
    x = sf.Variable([[1.0, 2.0], [3.0, -INF]])
    with sf.GradientTape() as tape:
        y = sf.reduce_sum(sf.reduce_logsumexp(x, axis=1))
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [[0.26894143, 0.7310586], [1.0, 0.0]], rtol=1e-6)


def test_traced_tensors_index_and_slice():
    x = sf.constant([[1, 2, 3], [4, 5, 6]])

    @sf.function
    def f(x, i):
        return x[i], x[:i], x[i, 1:], x[-i], x[i:i + 1, ::i], x[: sf.shape(x)[0] - 1]

    for dtype in (sf.int32, sf.int64):
        got = [t.numpy().tolist() for t in f(x, sf.constant(1, dtype))]
        assert got == [[4, 5, 6], [[1, 2, 3]], [5, 6], [4, 5, 6], [[4, 5, 6]], [[1, 2, 3]]]
    assert x[sf.constant(1)].numpy().tolist() == [4, 5, 6]  # eagerly, as an int
    assert x[np.array(1)].numpy().tolist() == [4, 5, 6]
    v = sf.Variable([[1.0, 2.0], [3.0, 4.0]])

    @sf.function
    def g(i):
        with sf.GradientTape() as tape:
            y = sf.reduce_sum(v[i] * v[i])
        return tape.gradient(y, v)

    np.testing.assert_array_equal(g(sf.constant(1)).numpy(), [[0, 0], [6, 8]])


@pytest.mark.parametrize("index, named", [(1.0, "float"), (True, "bool")])
def test_an_index_neither_int_nor_integer_tensor_is_refused(index, named):
    x = sf.constant([1, 2])
    with pytest.raises(TypeError, match=named):
        x[index]
    with pytest.raises(TypeError, match="float32"):
        x[sf.constant(1.0)]


def test_multi_output_ops_return_tfs_named_tuples_eagerly_and_traced():
    r = sf.math.top_k([3.0, 1.0, 2.0], k=2)
    assert type(r).__name__ == "TopKV2" and r.values.numpy().tolist() == [3.0, 2.0] and r.indices.numpy().tolist() == [0, 2]
    u = sf.unique([1, 2, 1])
    assert u.y.numpy().tolist() == [1, 2] and u.idx.numpy().tolist() == [0, 1, 0]
    values, _ = sf.math.top_k([3.0, 1.0, 2.0], k=1)  # still a tuple
    assert values.numpy().tolist() == [3.0]
    got = sf.function(lambda x: sf.math.top_k(x, 2))(sf.constant([3.0, 1.0, 2.0]))
    assert type(got).__name__ == "TopKV2" and got.indices.numpy().tolist() == [0, 2]


def test_constant_shape_and_newaxis():
    np.testing.assert_array_equal(sf.constant(1.5, shape=[2, 2]).numpy(), np.full((2, 2), 1.5, np.float32))
    np.testing.assert_array_equal(sf.constant([1, 2, 3, 4], shape=(2, 2)).numpy(), [[1, 2], [3, 4]])
    assert sf.constant(7, sf.int64, shape=[]).numpy() == 7
    with pytest.raises(TypeError, match="3 value"):
        sf.constant([1, 2, 3], shape=[2, 2])
    assert sf.constant([1.0, 2.0])[:, sf.newaxis].shape == [2, 1]


def test_sparse_softmax_cross_entropy_of_higher_rank_logits():
    """TF flattens the leading dims for the op (a sequence model's [batch, time, classes])."""
    rng = np.random.default_rng(0)
    logits, labels = rng.standard_normal((2, 3, 5)).astype(np.float32), rng.integers(0, 5, (2, 3))
    want = -np.take_along_axis(logits - np.log(np.exp(logits).sum(-1, keepdims=True)), labels[..., None], -1)[..., 0]
    got = sf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5)
    traced = sf.function(lambda a, b: sf.nn.sparse_softmax_cross_entropy_with_logits(labels=b, logits=a))
    np.testing.assert_allclose(traced(logits, labels).numpy(), want, rtol=1e-5)
    v = sf.Variable(logits)
    with sf.GradientTape() as tape:
        y = sf.reduce_sum(sf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=v))
    soft = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    np.testing.assert_allclose(tape.gradient(y, v).numpy(), soft - np.eye(5)[labels], rtol=1e-5, atol=1e-6)


def test_a_variables_slice_assigns_as_tensorflows():
    v = sf.Variable([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    v[0, 1:].assign([9.0, 8.0])
    v[1].assign(0.5)  # broadcast to the slice
    np.testing.assert_array_equal(v.numpy(), [[1, 9, 8], [0.5, 0.5, 0.5]])
    np.testing.assert_array_equal((v[0] * 2).numpy(), [2, 18, 16])  # still a tensor

    @sf.function
    def f(i):
        v[i, 0].assign(7.0)
        return v[:, 0]

    np.testing.assert_array_equal(f(sf.constant(1)).numpy(), [1, 7])
    np.testing.assert_array_equal(v.numpy(), [[1, 9, 8], [7, 0.5, 0.5]])
    w = sf.Variable([1.0, 2.0])
    with sf.GradientTape() as tape:
        y = w[1] * 3.0
    np.testing.assert_array_equal(tape.gradient(y, w).numpy(), [0, 3])
