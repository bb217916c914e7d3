"""The tfops batch of scripts/tf_graph_parity.py: graphs with the ops added for it
(QuantizeAndDequantizeV2/V3/V4 and V4's gradient op, Dilation2D and its backprops,
SparseFillEmptyRows and its gradient op, SparseReshape, StatelessShuffle), as TF's Python API
writes them, with their tape gradients. Every name starts with ``tfops_``; ``register`` adds them
through the script's ``case`` helper."""

import tensorflow as tf

_IDX = tf.constant([[0, 1], [0, 2], [2, 0], [4, 1]], tf.int64)  # rows 1 and 3 empty
_IDX3 = tf.constant([[0, 0, 1], [0, 1, 2], [1, 0, 0], [1, 2, 3]], tf.int64)


def _fill(v, default=-1.0):
    filled, empty = tf.sparse.fill_empty_rows(tf.SparseTensor(_IDX, v, [5, 3]), default)
    return tf.sparse.to_dense(filled) + tf.cast(empty, v.dtype)[:, None]


def register(case):
    q = tf.quantization
    case("tfops_qdq_v2_given", lambda x: q.quantize_and_dequantize_v2(x * 2, -1.0, 1.5, range_given=True), (3, 4))
    case("tfops_qdq_v2_own_axis", lambda x: q.quantize_and_dequantize_v2(x, tf.zeros([4]), tf.zeros([4]), axis=1, num_bits=4,
                                                                         signed_input=False), (3, 4))
    case("tfops_qdq_v2_half_up_f64", lambda x: q.quantize_and_dequantize_v2(x * 3, -2.0, 2.0, range_given=True, num_bits=3,
                                                                            round_mode="HALF_UP", narrow_range=True), (2, 5), dtype="float64")
    case("tfops_qdq_v1_straight_through", lambda x: q.quantize_and_dequantize(x * 2, -1.0, 1.0, range_given=True), (3, 4))
    case("tfops_qdq_v3", lambda x: tf.raw_ops.QuantizeAndDequantizeV3(input=x, input_min=-1.0, input_max=1.0, num_bits=3), (4, 3))
    dil = tf.nn.dilation2d
    case("tfops_dilation_same", lambda x, f: dil(x, f, [1, 1, 1, 1], "SAME", "NHWC", [1, 1, 1, 1]), (2, 5, 5, 3), (2, 2, 3))
    case("tfops_dilation_strided_rates", lambda x, f: dil(x, f, [1, 2, 1, 1], "SAME", "NHWC", [1, 1, 2, 1]), (1, 6, 7, 2), (3, 2, 2))
    case("tfops_dilation_valid", lambda x, f: dil(x, f, [1, 2, 2, 1], "VALID", "NHWC", [1, 2, 1, 1]), (2, 7, 6, 1), (2, 3, 1))
    case("tfops_erosion", lambda x, f: tf.nn.erosion2d(x, f, [1, 1, 1, 1], "SAME", "NHWC", [1, 1, 1, 1]), (1, 4, 5, 2), (3, 2, 2))
    case("tfops_dilation_int", lambda x: dil(x, tf.constant([[[1], [0]], [[0], [2]]], tf.int32), [1, 1, 1, 1], "SAME", "NHWC",
                                             [1, 1, 1, 1]), (1, 4, 4, 1), dtype="int32", grad=False)
    case("tfops_fill_empty_rows", lambda v: _fill(v), (4,))
    case("tfops_fill_empty_rows_default_grad", lambda v, d: _fill(v, d[0]) * 2.0, (4,), (1,))
    case("tfops_sparse_reshape", lambda v: tf.sparse.to_dense(tf.sparse.reshape(tf.SparseTensor(_IDX3, v, [2, 3, 4]), [-1, 6])), (4,))
    case("tfops_sparse_reshape_rank4", lambda v: tf.sparse.to_dense(tf.sparse.reshape(tf.SparseTensor(_IDX3, v, [2, 3, 4]),
                                                                                       [3, 1, -1, 2])), (4,))
    shuffle = tf.random.experimental.stateless_shuffle
    case("tfops_shuffle_matrix", lambda x: shuffle(x, seed=[3, 4]), (9, 3), grad=False)
    case("tfops_shuffle_vector_int", lambda x: shuffle(x, seed=[11, -2]), (40,), dtype="int32", grad=False)
    case("tfops_shuffle_philox", lambda x: shuffle(x * 2, seed=[5, 6], alg="philox"), (6, 2, 2), grad=False)
