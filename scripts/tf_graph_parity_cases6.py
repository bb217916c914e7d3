"""Batch 6 of scripts/tf_graph_parity.py: graphs holding the ops added for TF2's Python API and
older graphs (branch tfops2): tf.linalg.lstsq (both paths, with gradients), nth_element,
unravel_index, edit_distance, combined_non_max_suppression, extract_volume_patches, a strided
slice update, and the first forms (Concat, Reverse, MatrixDiag/Part/SetDiag, Inv, Mod,
BiasAddV1, InTopK, the V1 stateless randoms) through tf.raw_ops. Every name starts with ``c6_``."""

import tensorflow as tf

R = tf.raw_ops


def register(case):
    case("c6_lstsq_fast", lambda a, b: tf.linalg.lstsq(a, b, l2_regularizer=0.1), (2, 5, 3), (2, 5, 2), dtype="float64")
    case("c6_lstsq_under", lambda a, b: tf.linalg.lstsq(a, b), (3, 5), (3, 2), dtype="float64")
    case("c6_lstsq_slow", lambda a, b: tf.linalg.lstsq(a, b, fast=False), (5, 3), (5, 2), dtype="float64", grad=False)
    case("c6_nth_element", lambda x: R.NthElement(input=x, n=2) + R.NthElement(input=x, n=0, reverse=True), (3, 6))
    case("c6_unravel", lambda x: tf.cast(tf.unravel_index(tf.cast(tf.abs(x) * 3, tf.int32) % 12, [3, 4]), tf.float32)
         + tf.reduce_sum(x), (5,))  # fmt: skip
    case("c6_edit_distance", lambda x: tf.edit_distance(
        tf.sparse.from_dense(tf.cast(x > 0, tf.int32) + 1), tf.sparse.from_dense(tf.cast(x > 0.5, tf.int32) + 1)), (3, 4),
         grad=False)  # fmt: skip
    def nms(x):
        boxes = tf.concat([tf.abs(x[..., :2]), tf.abs(x[..., :2]) + tf.abs(x[..., 2:]) + 0.1], -1)[:, :, None, :]
        b, s, c, n = tf.image.combined_non_max_suppression(boxes, tf.sigmoid(x[..., :3]), 3, 5, 0.4, 0.2)
        return tf.concat([b, s[..., None], c[..., None], tf.cast(n, tf.float32)[:, None, None] + 0 * s[..., None]], -1)

    case("c6_combined_nms", nms, (2, 6, 4), grad=False)
    # TF's own gradient of it is built from SparseSlice and friends, which specflow lacks: forward only
    case("c6_volume_patches", lambda x: tf.extract_volume_patches(x, [1, 2, 2, 2, 1], [1, 1, 2, 1, 1], "SAME"),
         (1, 3, 4, 3, 2), grad=False)
    case("c6_strided_update", lambda x, v: R.TensorStridedSliceUpdate(input=x, begin=[1, 0], end=[3, 6], strides=[1, 2],
                                                                      value=v), (4, 6), (2, 3))  # fmt: skip
    case("c6_concat_v1", lambda x, y: R.Concat(concat_dim=1, values=[x, y]), (2, 3), (2, 2))
    case("c6_reverse_v1", lambda x: R.Reverse(tensor=x, dims=[True, False, True]), (2, 3, 4))
    # (TopK itself: TF 2.21 no longer runs it; its values are TopKV2's, checked in the suite)
    case("c6_in_top_k_v1", lambda x: tf.cast(R.InTopK(predictions=x, targets=[0, 1, 2], k=2), tf.float32)
         + tf.reduce_sum(x), (3, 5), grad=False)  # fmt: skip
    case("c6_matrix_diag_v1", lambda x: R.MatrixSetDiag(input=x, diagonal=R.MatrixDiagPart(input=x) * 2.0)
         + R.MatrixDiag(diagonal=x[:, 0]), (2, 3, 3))  # fmt: skip
    case("c6_matrix_diag_v2", lambda x: R.MatrixDiagPartV2(input=x, k=[-1, 1], padding_value=0.0), (2, 3, 4))
    case("c6_inv_mod", lambda x: R.Inv(x=x) + R.Mod(x=x * 7.0, y=tf.ones_like(x) * 2.0), (3, 4), pos=True, grad=False)
    case("c6_bias_add_v1", lambda x, b: R.BiasAddV1(value=x, bias=b), (2, 3, 4), (4,))
    case("c6_stateless_v1", lambda x: x + R.StatelessRandomNormal(shape=[3, 4], seed=[5, 9])
         + R.StatelessRandomUniform(shape=[3, 4], seed=[1, 2]), (3, 4))  # fmt: skip
    return []
