"""sf.sparse and sf.SparseTensor against TensorFlow 2.21's tf.sparse: making and unmaking,
reorder, reshape, transpose, slice, concat, add (dense and sparse, with a threshold),
reductions, matmul both ways, segment reductions, gradients to the values, a SparseTensor
through a traced function. The fixture holds TF's results (scripts/make_sparse_fixture.py)."""

from pathlib import Path

import numpy as np
import pytest

import specflow as sf
from tests.api.tf_results import all_results, assert_matches

DATA = Path(__file__).parent / "data" / "tf_sparse.npz"


def cases(tf):
    rng = np.random.default_rng(5)
    idx = np.array([[2, 1], [0, 3], [1, 0], [0, 0], [2, 3]], np.int64)  # out of order
    vals = rng.standard_normal(5).astype(np.float32)
    ST = tf.sparse.SparseTensor  # noqa: N806
    unordered = ST(idx, vals, [3, 4])
    sp = tf.sparse.reorder(unordered)
    other = tf.sparse.reorder(ST(np.array([[0, 3], [1, 1], [2, 3]], np.int64),
                                 np.array([1.0, -2.0, -vals[4]], np.float32), [3, 4]))  # fmt: skip
    dense = rng.standard_normal((3, 4)).astype(np.float32)
    D = rng.standard_normal((4, 2)).astype(np.float32)  # noqa: N806
    D2 = rng.standard_normal((2, 3)).astype(np.float32)  # noqa: N806
    S3 = tf.sparse.reorder(ST(np.array([[1, 0, 2], [0, 1, 1], [1, 1, 0]], np.int64),  # noqa: N806
                              np.array([1, 2, 3], np.int32), [2, 2, 3]))  # fmt: skip
    seg_data = rng.standard_normal((5, 3)).astype(np.float32)

    def grad(fn, *xs):
        xs = [tf.constant(x) for x in xs]
        with tf.GradientTape() as tape:
            for x in xs:
                tape.watch(x)
            y = fn(*xs)
        return tuple(tape.gradient(y, xs))

    def traced(x):
        f = tf.function(lambda s: (tf.sparse.reduce_sum(s, 0), tf.sparse.add(s, s)))
        return f(x)

    return {  # fmt: skip
        "reorder": lambda: sp, "to_dense": lambda: tf.sparse.to_dense(sp),
        "to_dense_default": lambda: tf.sparse.to_dense(sp, default_value=-1.0),
        "to_dense_unordered": lambda: tf.sparse.to_dense(unordered, validate_indices=False),
        "from_dense": lambda: tf.sparse.from_dense(dense * (dense > 0)),
        "from_dense_int": lambda: tf.sparse.from_dense(np.array([[0, 3], [5, 0]], np.int32)),
        "reshape": lambda: tf.sparse.reshape(sp, [6, -1]), "reshape3": lambda: tf.sparse.reshape(S3, [3, 4]),
        "transpose": lambda: tf.sparse.transpose(sp), "transpose3": lambda: tf.sparse.transpose(S3, [2, 0, 1]),
        "slice": lambda: tf.sparse.slice(sp, [0, 1], [2, 3]), "slice_edge": lambda: tf.sparse.slice(sp, [1, 2], [5, 5]),
        "expand_dims": lambda: tf.sparse.expand_dims(sp, 1), "expand_last": lambda: tf.sparse.expand_dims(sp, -1),
        "retain": lambda: tf.sparse.retain(sp, np.array([True, False, True, True, False])),
        "fill_empty": lambda: tf.sparse.fill_empty_rows(ST(np.array([[0, 1], [2, 0]], np.int64),
                                                             np.array([5.0, 6.0], np.float32), [4, 2]), -1.0),
        "concat0": lambda: tf.sparse.concat(0, [sp, other]), "concat1": lambda: tf.sparse.concat(1, [sp, other]),
        "concat_expand": lambda: tf.sparse.concat(1, [sp, ST(np.array([[4, 0]], np.int64), np.array([9.0], np.float32),
                                                            [5, 2])], expand_nonconcat_dims=True),
        "add_dense": lambda: tf.sparse.add(sp, dense), "add_dense_first": lambda: tf.sparse.add(dense, sp),
        "add_sparse": lambda: tf.sparse.add(sp, other), "add_threshold": lambda: tf.sparse.add(sp, other, threshold=0.5),
        "add_int": lambda: tf.sparse.add(S3, S3),
        "reduce_sum": lambda: tf.sparse.reduce_sum(sp), "reduce_sum_axis": lambda: tf.sparse.reduce_sum(sp, 1),
        "reduce_sum_keep": lambda: tf.sparse.reduce_sum(S3, [0, 2], keepdims=True),
        "reduce_sum_sparse": lambda: tf.sparse.reduce_sum(S3, 1, output_is_sparse=True),
        "matmul": lambda: tf.sparse.sparse_dense_matmul(sp, D),
        "matmul_adj": lambda: tf.sparse.sparse_dense_matmul(sp, D2, adjoint_a=True, adjoint_b=True),
        "matmul_dense_first": lambda: tf.sparse.sparse_dense_matmul(D2, sp),
        "mul_dense": lambda: sp * dense, "mul_broadcast": lambda: sp * np.array([1.0, 2.0, 3.0, 4.0], np.float32),
        "div_scalar": lambda: sp / 2.0,
        "map_values": lambda: tf.sparse.map_values(tf.math.square, sp),
        "segment_sum": lambda: tf.sparse.segment_sum(seg_data, [0, 2, 4], [0, 0, 1]),
        "segment_mean": lambda: tf.sparse.segment_mean(seg_data, [1, 3, 3, 4], [0, 1, 1, 3]),
        "segment_sqrt_n_num": lambda: tf.sparse.segment_sqrt_n(seg_data, [1, 2], [0, 2], num_segments=4),
        "grad_matmul": lambda: grad(lambda v, d: tf.reduce_sum(tf.sparse.sparse_dense_matmul(
            ST(sp.indices, v, sp.dense_shape), d) ** 2), sp.values, D),
        "grad_to_dense": lambda: grad(lambda v: tf.reduce_sum(tf.sparse.to_dense(ST(sp.indices, v, sp.dense_shape))
                                                             * dense), sp.values),
        "grad_add": lambda: grad(lambda v: tf.reduce_sum(tf.sparse.add(ST(sp.indices, v, sp.dense_shape), other).values
                                                        ** 2), sp.values),
        "grad_reduce": lambda: grad(lambda v: tf.reduce_sum(tf.sparse.reduce_sum(ST(sp.indices, v, sp.dense_shape), 0)
                                                           ** 3), sp.values),
        "traced": lambda: traced(sp),
    }


def flat_results(tf) -> dict[str, np.ndarray]:
    return all_results(cases(tf))


CASES = cases(sf)


@pytest.fixture(scope="module")
def expected():
    return dict(np.load(DATA))  # committed; rewritten by scripts/make_sparse_fixture.py


@pytest.mark.parametrize("key", sorted(CASES))
def test_matches_tensorflow(key, expected):
    assert_matches(key, CASES[key](), expected, rtol=2e-6, atol=1e-6)


def test_bad_inputs_are_clear_errors():
    with pytest.raises(TypeError, match="expected a SparseTensor"):
        sf.sparse.to_dense(np.zeros((2, 2), np.float32))
    with pytest.raises(ValueError, match="indices must be a matrix"):
        sf.SparseTensor([0, 1], [1.0, 2.0], [3])
