"""Batch 4 of scripts/tf_graph_parity.py: what users write that batches 1-3 missed. Integer
arithmetic on negatives, keepdims and negative axes, casts that truncate or wrap, tf.math odds and
ends, gathers and scatters with batch dims, tf.linalg and tf.signal helpers, tf.image ops, tf.nn
variants, control flow (tf.case, tf.switch_case, TensorArrays in while loops), and Keras layers
with options the first Keras batch left at their defaults. Every name starts with ``c4_``;
``register`` adds them through the script's ``case`` helper and returns the Keras entries."""

import numpy as np
import tensorflow as tf


def register(case):
    ci = dict(dtype="int32", grad=False)

    def nz(y):
        return tf.where(tf.equal(y, 0), tf.ones_like(y), y)

    # --- integer arithmetic on negatives, casts -----------------------------------------------
    for n, f in [("floordiv", tf.math.floordiv), ("floormod", tf.math.floormod), ("truncdiv", tf.truncatediv),
                 ("truncmod", tf.truncatemod), ("mod", tf.math.mod), ("div", lambda a, b: a // b),
                 ("min", tf.minimum), ("sqdiff", tf.math.squared_difference), ("mul", tf.multiply), ("sub", tf.subtract)]:
        case("c4_i_" + n, lambda x, y, f=f: f(x, nz(y)), (3, 4), (1, 4), **ci)
        case("c4_i64_" + n, lambda x, y, f=f: f(x, nz(y)), (2, 5), (2, 5), dtype="int64", grad=False)
    case("c4_i_abs_neg_sign", lambda x: tf.abs(x) * 3 - tf.negative(x) + tf.sign(x) + tf.square(x), (3, 4), **ci)
    case("c4_i_pow", lambda x, y: tf.pow(x, tf.abs(y) % 3), (3, 4), (3, 4), **ci)
    case("c4_i_realdiv", lambda x, y: tf.math.truediv(x, nz(y)), (3, 4), (3, 4), **ci)
    case("c4_i_reduce", lambda x: tf.reduce_sum(x, -1) + tf.reduce_prod(x, 0)[:3] + tf.reduce_max(x, 1, keepdims=True)[:, 0],
         (3, 4), **ci)
    case("c4_i_cumsum", lambda x: tf.cumsum(x, -1, exclusive=True) + tf.math.cumprod(x, 0, reverse=True), (3, 4), **ci)
    case("c4_i_mean", lambda x: tf.reduce_mean(x, 1), (3, 4), **ci)
    case("c4_bitwise", lambda x, y: tf.bitwise.bitwise_and(x, y) + tf.bitwise.bitwise_or(x, y) * 3 + tf.bitwise.bitwise_xor(x, y) * 7
         + tf.bitwise.invert(x), (3, 4), (3, 4), **ci)
    case("c4_shift", lambda x, y: tf.bitwise.left_shift(x, tf.abs(y) % 4) + tf.bitwise.right_shift(x, tf.abs(y) % 3), (3, 4), (3, 4), **ci)
    case("c4_cast_trunc", lambda x: tf.cast(tf.cast(x * 4, tf.int32), tf.float32) + tf.cast(tf.cast(x * 4, tf.int64), tf.float32), (3, 4), grad=False)
    case("c4_cast_uint8", lambda x: tf.cast(tf.cast(tf.cast(x * 100, tf.int32), tf.uint8), tf.int32), (3, 4), grad=False)
    case("c4_cast_int8", lambda x: tf.cast(tf.cast(x * 100, tf.int32) + 100, tf.int8), (3, 4), grad=False)
    case("c4_cast_bool", lambda x: tf.cast(tf.cast(x, tf.bool), tf.float32) + tf.cast(x > 0, tf.float32), (3, 4), grad=False)
    case("c4_cast_f16", lambda x: tf.cast(tf.cast(x * 1000, tf.float16), tf.float32), (3, 4))
    case("c4_cast_f64_grad", lambda x: tf.cast(tf.exp(tf.cast(x, tf.float64)), tf.float32), (3, 4))
    case("c4_cast_bf16", lambda x: tf.cast(tf.cast(x * 7, tf.bfloat16), tf.float32), (3, 4))
    case("c4_cast_uint_from_neg", lambda x: tf.cast(tf.cast(x * 10, tf.int32), tf.uint16), (3, 4), grad=False)
    case("c4_saturate", lambda x: tf.dtypes.saturate_cast(x * 300, tf.uint8), (3, 4), grad=False)
    case("c4_logical", lambda x, y: tf.cast(tf.math.logical_xor(x > 0, y > 0), tf.int32) + tf.cast(tf.logical_not(x > y), tf.int32) * 2
         + tf.cast(tf.logical_and(x > 0, tf.logical_or(y > 0, x > 1)), tf.int32) * 4, (3, 4), (3, 4), grad=False)
    case("c4_compare", lambda x, y: tf.cast(tf.equal(tf.round(x), tf.round(y)), tf.float32) + tf.cast(tf.not_equal(x, y), tf.float32)
         + tf.cast(tf.greater_equal(x, y), tf.float32) + tf.cast(tf.less_equal(x, 0.0), tf.float32), (3, 4), (3, 4), grad=False)

    # --- float math on awkward values ----------------------------------------------------------
    case("c4_pow_negbase", lambda x: tf.pow(x, 3.0) + tf.pow(x, 2.0), (3, 4))
    case("c4_pow_negbase_frac", lambda x: tf.pow(x, 0.5), (3, 4), grad=False)
    case("c4_pow_scalar_exp", lambda x, y: tf.pow(tf.abs(x) + 0.5, y), (3, 4), ())
    case("c4_floordiv_neg", lambda x, y: tf.math.floordiv(x * 3, y), (3, 4), (3, 4), grad=False)
    case("c4_floormod_neg", lambda x, y: tf.math.floormod(x * 3, y), (3, 4), (3, 4))
    case("c4_truncmod_f", lambda x, y: tf.truncatemod(x * 3, y), (3, 4), (3, 4), grad=False)
    case("c4_atan2_bc", lambda x, y: tf.atan2(x, y), (3, 4), (4,))
    case("c4_square_diff_bc", lambda x, y: tf.math.squared_difference(x, y), (2, 3, 4), (3, 1))
    case("c4_reciprocal_no_nan", lambda x: tf.math.reciprocal_no_nan(x * tf.cast(x > 0, tf.float32)), (3, 4), grad=False)
    case("c4_multiply_no_nan", lambda x, y: tf.math.multiply_no_nan(x, y), (3, 4), (3, 4))
    case("c4_div_no_nan_zero", lambda x, y: tf.math.divide_no_nan(x, y * tf.cast(y > 0, tf.float32)), (3, 4), (3, 4))
    case("c4_log_sigmoid", lambda x: tf.math.log_sigmoid(x), (3, 4))
    case("c4_softplus_big", lambda x: tf.nn.softplus(x * 30), (3, 4))
    case("c4_sigmoid_big", lambda x: tf.sigmoid(x * 40), (3, 4))
    case("c4_tanh_big", lambda x: tf.tanh(x * 40), (3, 4))
    case("c4_exp_big", lambda x: tf.exp(x * 40), (3, 4))
    case("c4_log_zero", lambda x: tf.math.log(tf.nn.relu(x)), (3, 4), grad=False)
    case("c4_sqrt_zero", lambda x: tf.sqrt(tf.nn.relu(x)), (3, 4), grad=False)
    case("c4_rint_half", lambda x: tf.math.rint(tf.round(x * 4) / 2) + tf.round(tf.round(x * 4) / 2), (3, 4), grad=False)
    case("c4_is_nan_inf", lambda x: tf.cast(tf.math.is_nan(tf.math.log(x)), tf.float32) + tf.cast(tf.math.is_inf(1.0 / tf.round(x)), tf.float32),
         (3, 4), grad=False)
    case("c4_maximum_ties", lambda x: tf.maximum(x, tf.round(x)) + tf.minimum(tf.round(x), x), (3, 4))
    case("c4_clip_tensor", lambda x, lo: tf.clip_by_value(x, lo, lo + 1.0), (3, 4), (4,))
    case("c4_addn", lambda x, y: tf.add_n([x, y, x * y]), (3, 4), (3, 4))
    case("c4_polyval", lambda x: tf.math.polyval([1.0, -2.0, 0.5], x), (3, 4))
    case("c4_cumsum_neg_axis", lambda x: tf.cumsum(x, axis=-2, exclusive=True), (2, 3, 4))
    case("c4_cumprod_ex_rev", lambda x: tf.math.cumprod(x, axis=1, exclusive=True, reverse=True), (3, 4))
    case("c4_cumprod_zero", lambda x: tf.math.cumprod(tf.nn.relu(x), axis=1), (3, 5))
    case("c4_cumlse_rev", lambda x: tf.math.cumulative_logsumexp(x, axis=0, reverse=True, exclusive=True), (4, 3))
    case("c4_reduce_neg_axis", lambda x: tf.reduce_sum(x, axis=-1, keepdims=True) + tf.reduce_max(x, axis=[-1, -3], keepdims=True),
         (2, 3, 4))
    case("c4_reduce_prod_zero", lambda x: tf.reduce_prod(tf.nn.relu(x), axis=1), (3, 4))
    case("c4_reduce_min_ties", lambda x: tf.reduce_min(tf.round(x), axis=0), (5, 3))
    case("c4_reduce_max_ties_grad", lambda x: tf.reduce_max(tf.concat([x, x], 1), axis=1), (3, 2))
    case("c4_reduce_std_k", lambda x: tf.math.reduce_std(x, axis=-1, keepdims=True), (3, 4))
    case("c4_reduce_lse_neg", lambda x: tf.reduce_logsumexp(x, axis=-2), (2, 3, 4))
    case("c4_reduce_mean_empty_axis", lambda x: tf.reduce_mean(x, axis=[]), (3, 4))
    case("c4_argmax_neg", lambda x: tf.cast(tf.argmax(x, axis=-1, output_type=tf.int32), tf.float32), (2, 3, 4), grad=False)
    case("c4_argmax_ties", lambda x: tf.argmax(tf.round(x), axis=1), (4, 5), grad=False)
    case("c4_count_nonzero", lambda x: tf.math.count_nonzero(tf.round(x), axis=1), (3, 5), grad=False)
    case("c4_norm_2_axis", lambda x: tf.norm(x, ord=2, axis=[-2, -1]), (3, 3), grad=False)
    case("c4_l2norm_axis0", lambda x: tf.math.l2_normalize(x, axis=0), (3, 4))
    case("c4_l2norm_multi", lambda x: tf.math.l2_normalize(x, axis=[1, 2]), (2, 3, 4))
    case("c4_logsoftmax_axis", lambda x: tf.nn.log_softmax(x, axis=1), (2, 3, 4))
    case("c4_softmax_big", lambda x: tf.nn.softmax(x * 50), (3, 4))

    # --- NaN, inf and out-of-range values: where numpy's conventions and TF's kernels can part ----
    def nan_in(x):  # NaN where x < 0
        return tf.math.log(x) * 0.0 + x

    def inf_in(x):  # +-inf where |x| < 0.3
        return tf.where(tf.abs(x) < 0.3, tf.math.sign(x) / 0.0, x)

    # Not checked: NaN in sort/top_k (TF's order of NaNs follows its partial sort's comparisons) or in
    # softmax (oneDNN's kernel, on by default, zeroes the row's other entries; TF's own gives NaN).
    g0 = dict(grad=False)
    case("c4_nan_maximum", lambda x, y: tf.maximum(nan_in(x), y) + tf.minimum(y, nan_in(x)), (3, 4), (3, 4), **g0)
    case("c4_nan_maximum_second", lambda x, y: tf.maximum(y, nan_in(x)) + tf.minimum(nan_in(x), y), (3, 4), (3, 4), **g0)
    case("c4_nan_reduce_max", lambda x: tf.reduce_max(nan_in(x), axis=1) + tf.reduce_min(nan_in(x), axis=0)[:3], (3, 4), **g0)
    case("c4_nan_reduce_sum", lambda x: tf.reduce_sum(nan_in(x), axis=1) + tf.reduce_mean(nan_in(x), axis=1), (3, 4), **g0)
    case("c4_nan_argmax", lambda x: tf.argmax(nan_in(x), axis=1) + tf.argmin(nan_in(x), axis=1), (4, 5), **g0)
    case("c4_nan_relu", lambda x: tf.nn.relu(nan_in(x)) + tf.nn.relu6(nan_in(x)) + tf.nn.elu(nan_in(x)), (3, 4), **g0)
    case("c4_nan_clip", lambda x: tf.clip_by_value(nan_in(x), -0.5, 0.5), (3, 4), **g0)
    case("c4_nan_sign_abs", lambda x: tf.sign(nan_in(x)) + tf.abs(nan_in(x)) + tf.floor(nan_in(x)) + tf.round(nan_in(x)), (3, 4), **g0)
    case("c4_nan_compare", lambda x, y: tf.cast(nan_in(x) > y, tf.int32) + tf.cast(tf.equal(nan_in(x), nan_in(x)), tf.int32) * 2
         + tf.cast(tf.not_equal(nan_in(x), nan_in(x)), tf.int32) * 4, (3, 4), (3, 4), **g0)
    case("c4_nan_where", lambda x: tf.where(nan_in(x) > 0, x, -x), (3, 4), **g0)
    case("c4_nan_cumsum_max", lambda x: tf.cumsum(nan_in(x), axis=1) + tf.math.cumprod(nan_in(x), axis=1), (3, 4), **g0)
    case("c4_nan_segment_max", lambda x: tf.math.segment_max(nan_in(x), [0, 0, 1, 1]) + tf.math.unsorted_segment_min(nan_in(x), [1, 0, 1, 0], 2),
         (4, 3), **g0)
    case("c4_nan_maxpool", lambda x: tf.nn.max_pool2d(nan_in(x), 2, 2, "VALID"), (1, 4, 4, 2), **g0)
    case("c4_nan_cast_int", lambda x: tf.cast(nan_in(x), tf.int32) + tf.cast(inf_in(x), tf.int32), (3, 4), **g0)
    case("c4_cast_big_int", lambda x: tf.cast(x * 3e9, tf.int32), (3, 4), **g0)
    case("c4_cast_neg_uint8", lambda x: tf.cast(x * 10, tf.uint8), (3, 4), **g0)
    case("c4_cast_big_int64", lambda x: tf.cast(x * 1e19, tf.int64), (3, 4), **g0)
    case("c4_inf_softmax", lambda x: tf.nn.softmax(tf.where(x > 0, x, -np.inf)), (3, 4))
    case("c4_inf_softmax_row", lambda x: tf.nn.softmax(tf.where(x > 100, x, -np.inf)), (3, 4), **g0)
    case("c4_inf_log_softmax", lambda x: tf.nn.log_softmax(tf.where(x > 0, x, -np.inf)), (3, 4), **g0)
    case("c4_inf_lse", lambda x: tf.reduce_logsumexp(tf.where(x > 100, x, -np.inf), axis=1)
         + tf.reduce_logsumexp(inf_in(x), axis=1), (3, 4), **g0)
    case("c4_inf_ops", lambda x: tf.exp(inf_in(x)) + tf.tanh(inf_in(x)) + tf.sigmoid(inf_in(x)) + tf.nn.softplus(inf_in(x)), (3, 4), **g0)
    case("c4_inf_arith", lambda x, y: inf_in(x) * 0.0 + inf_in(x) - inf_in(y) + tf.math.floormod(inf_in(x), 2.0), (3, 4), (3, 4), **g0)
    case("c4_inf_maximum", lambda x, y: tf.maximum(inf_in(x), inf_in(y)) + tf.reduce_max(inf_in(x)), (3, 4), (3, 4), **g0)
    case("c4_zero_div_float", lambda x: x / tf.round(x * 0.3) + tf.math.floordiv(x, tf.round(x * 0.3)), (3, 4), **g0)
    case("c4_pow_edge", lambda x: tf.pow(tf.round(x), -1.0) + tf.pow(x, 1.0 / 3.0) + tf.pow(0.0, tf.round(x)), (3, 4), **g0)
    case("c4_sqrt_rsqrt_neg", lambda x: tf.sqrt(x) + tf.math.rsqrt(x) + tf.math.log1p(x - 1.0), (3, 4), **g0)
    case("c4_l2norm_zero", lambda x: tf.math.l2_normalize(x * tf.cast(x > 10, tf.float32), axis=1), (3, 4))
    case("c4_int_min_div", lambda x: tf.math.floordiv(tf.constant([-2147483648, 7, -7], tf.int32), tf.constant([-1, -2, 2], tf.int32))
         + tf.cast(tf.reduce_sum(x), tf.int32) * 0, (1,), **g0)
    case("c4_int_overflow", lambda x: tf.constant([2147483647, -2147483648], tf.int32) + tf.constant([1, -1], tf.int32)
         + tf.abs(tf.constant([-2147483648, 5], tf.int32)) + tf.cast(tf.reduce_sum(x), tf.int32) * 0, (1,), **g0)
    case("c4_int_neg_mod", lambda x, y: tf.math.floormod(x, nz(y)) * 100 + tf.truncatemod(x, nz(y)) * 10 + tf.math.floordiv(x, nz(y)),
         (4, 5), (4, 5), dtype="int64", grad=False)
    case("c4_sigmoid_xent_extreme", lambda x, y: tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.sigmoid(y), logits=x * 100), (3, 4), (3, 4))
    case("c4_softmax_xent_extreme", lambda x, y: tf.nn.softmax_cross_entropy_with_logits(labels=tf.nn.softmax(y), logits=x * 100),
         (3, 4), (3, 4))
    case("c4_sparse_xent_extreme", lambda x: tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[1, 0, 3], logits=x * 200), (3, 4))
    case("c4_mean_empty", lambda x: tf.reduce_mean(x[:, :0], axis=1) + tf.reduce_max(x[:, :0], axis=1) * 0 + tf.reduce_prod(x[:, :0], 1),
         (3, 4), **g0)
    case("c4_argmax_empty_free", lambda x: tf.reduce_sum(x[:0], axis=0), (3, 4))

    # --- tf.nn --------------------------------------------------------------------------------
    case("c4_silu_beta", lambda x: tf.nn.silu(x, beta=1.5), (3, 4))
    case("c4_relu6_leaky", lambda x: tf.nn.relu6(x * 5) + tf.nn.leaky_relu(x, 0.3), (3, 4))
    case("c4_crelu", lambda x: tf.nn.crelu(x), (3, 4))
    case("c4_moments_keep", lambda x: tf.concat(tf.nn.moments(x, axes=[0, 1, 2], keepdims=True), -1), (2, 3, 3, 2))
    case("c4_weighted_moments", lambda x, w: tf.concat(tf.nn.weighted_moments(x, [0], tf.abs(w)), 0), (4, 3), (4, 3))
    case("c4_normalize_moments", lambda x: tf.nn.batch_normalization(x, *tf.nn.moments(x, [0]), None, None, 1e-3), (5, 3))
    case("c4_sig_xent_hard", lambda x: tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.cast(x > 0, tf.float32), logits=x * 3), (3, 4))
    case("c4_softmax_xent_axis", lambda x, y: tf.nn.softmax_cross_entropy_with_logits(tf.nn.softmax(y, 0), x, axis=0), (4, 3), (4, 3))
    case("c4_sparse_xent_3d", lambda x: tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[[1, 0], [3, 2]], logits=x), (2, 2, 4))
    case("c4_log_poisson_full", lambda x, y: tf.nn.log_poisson_loss(tf.abs(y) + 1, x, compute_full_loss=True), (3, 4), (3, 4))
    case("c4_embedding_maxnorm", lambda x: tf.nn.embedding_lookup(x, [[0, 2], [3, 3]], max_norm=1.0), (5, 3))
    case("c4_scale_regularization", lambda x: tf.nn.scale_regularization_loss(tf.reduce_sum(x * x)), (3, 4))
    case("c4_conv2d_nchw_free", lambda x, f: tf.nn.conv2d(x, f, [1, 2, 1, 1], "SAME"), (1, 6, 5, 2), (2, 3, 2, 3))
    case("c4_conv2d_t_valid", lambda x, f: tf.nn.conv2d_transpose(x, f, [1, 9, 9, 2], 2, "VALID"), (1, 4, 4, 3), (3, 3, 2, 3))
    case("c4_conv2d_t_s1", lambda x, f: tf.nn.conv2d_transpose(x, f, [2, 5, 5, 2], 1, "SAME"), (2, 5, 5, 3), (3, 3, 2, 3))
    case("c4_conv2d_t_odd", lambda x, f: tf.nn.conv2d_transpose(x, f, [1, 7, 7, 2], 2, "SAME"), (1, 4, 4, 3), (3, 3, 2, 3))
    case("c4_atrous", lambda x, f: tf.nn.atrous_conv2d(x, f, 2, "SAME"), (1, 7, 7, 2), (3, 3, 2, 3))
    case("c4_atrous_valid", lambda x, f: tf.nn.atrous_conv2d(x, f, 2, "VALID"), (1, 8, 8, 2), (2, 2, 2, 3))
    case("c4_conv1d_stride_valid", lambda x, f: tf.nn.conv1d(x, f, 2, "VALID", dilations=1), (2, 9, 3), (3, 3, 4))
    case("c4_conv1d_dil", lambda x, f: tf.nn.conv1d(x, f, 1, "SAME", dilations=2), (2, 9, 3), (3, 3, 4))
    case("c4_conv3d_s2", lambda x, f: tf.nn.conv3d(x, f, [1, 2, 2, 2, 1], "VALID"), (1, 5, 5, 5, 2), (3, 3, 3, 2, 2))
    case("c4_conv3d_dil", lambda x, f: tf.nn.conv3d(x, f, [1, 1, 1, 1, 1], "SAME", dilations=[1, 2, 2, 2, 1]), (1, 5, 5, 5, 1),
         (2, 2, 2, 1, 2))
    case("c4_conv2d_1x1", lambda x, f: tf.nn.conv2d(x, f, 1, "VALID"), (2, 3, 3, 4), (1, 1, 4, 5))
    case("c4_conv2d_big_kernel", lambda x, f: tf.nn.conv2d(x, f, 1, "SAME"), (1, 4, 4, 2), (5, 5, 2, 2))
    case("c4_conv2d_groups", lambda x, f: tf.nn.conv2d(x, f, 1, "SAME"), (1, 5, 5, 4), (3, 3, 2, 6))
    case("c4_sepconv_s2", lambda x, f, p: tf.nn.separable_conv2d(x, f, p, [1, 2, 2, 1], "VALID"), (1, 7, 7, 2), (3, 3, 2, 2), (1, 1, 4, 3))
    case("c4_dwconv_native", lambda x, f: tf.nn.depthwise_conv2d_backprop_input([1, 5, 5, 2], f, x, [1, 1, 1, 1], "SAME"),
         (1, 5, 5, 4), (3, 3, 2, 2))
    case("c4_maxpool_s1", lambda x: tf.nn.max_pool2d(x, 3, 1, "SAME"), (1, 5, 5, 2))
    case("c4_maxpool_rect", lambda x: tf.nn.max_pool2d(x, [2, 3], [1, 2], "VALID"), (2, 5, 7, 2))
    case("c4_avgpool_rect", lambda x: tf.nn.avg_pool2d(x, [3, 2], [2, 1], "SAME"), (2, 5, 6, 2))
    case("c4_maxpool3d_same", lambda x: tf.nn.max_pool3d(x, 3, 2, "SAME"), (1, 5, 5, 5, 2))
    case("c4_avgpool3d_valid", lambda x: tf.nn.avg_pool3d(x, [2, 3, 2], [1, 2, 2], "VALID"), (1, 4, 5, 4, 2))
    case("c4_pool_generic", lambda x: tf.nn.pool(x, [2, 2], "AVG", strides=[2, 2], padding="SAME"), (1, 5, 5, 2))
    case("c4_pool_dilated", lambda x: tf.nn.pool(x, [2, 2], "MAX", dilations=[2, 2], padding="VALID"), (1, 6, 6, 2))
    case("c4_maxpool_ties", lambda x: tf.nn.max_pool2d(tf.round(x), 2, 2, "VALID"), (1, 4, 4, 2))
    case("c4_lrn_big", lambda x: tf.nn.local_response_normalization(x, 1, 2.0, 1e-1, 0.5), (1, 2, 2, 5))
    case("c4_fbn_nhwc_eps", lambda x, s, o: tf.compat.v1.nn.fused_batch_norm(x, s, o, epsilon=0.1, is_training=True)[0], (3, 2, 2, 3), (3,), (3,))
    case("c4_bias_add_nchw", lambda x, b: tf.nn.bias_add(x, b, data_format="NCHW"), (2, 3, 2, 2), (3,))
    case("c4_dropout_seed0", lambda x: tf.nn.experimental.stateless_dropout(x, 0.5, seed=[1, 2]), (3, 4))
    case("c4_gelu_big", lambda x: tf.nn.gelu(x * 6) + tf.nn.gelu(x * 6, approximate=True), (3, 4))
    case("c4_ctc_greedy", lambda x: tf.cast(tf.sparse.to_dense(tf.nn.ctc_greedy_decoder(x, [5, 4])[0][0]), tf.float32), (5, 2, 4), grad=False)
    case("c4_ctc_greedy_opts", lambda x: tf.concat([tf.cast(tf.sparse.to_dense(tf.nn.ctc_greedy_decoder(x, [6, 3], merge_repeated=False,
                                                                                                      blank_index=0)[0][0]), tf.float32),
                                                     tf.nn.ctc_greedy_decoder(x, [6, 3], blank_index=0)[1]], 1), (6, 2, 3), grad=False)
    case("c4_in_top_k_ties", lambda x: tf.cast(tf.math.in_top_k([1, 0, 3], tf.round(x), 2), tf.float32), (3, 4), grad=False)

    # --- shapes, gathers, scatters ------------------------------------------------------------
    case("c4_gather_bd2", lambda x: tf.gather(x, [[[0, 1], [1, 0]], [[1, 1], [0, 0]]], axis=2, batch_dims=2), (2, 2, 3, 2))
    case("c4_gather_bd_neg", lambda x: tf.gather(x, [[2, 0], [1, 1]], axis=-1, batch_dims=-1), (2, 3))
    case("c4_gather_axis0_2d", lambda x: tf.gather(x, [[0, 1], [2, 2]]), (3, 4))
    case("c4_gather_nd_slices", lambda x: tf.gather_nd(x, [[[0], [2]], [[1], [1]]]), (3, 4))
    case("c4_gather_nd_bd2", lambda x: tf.gather_nd(x, [[[1], [0]], [[2], [2]]], batch_dims=1), (2, 3, 4))
    case("c4_gather_nd_full", lambda x: tf.gather_nd(x, [[0, 1, 2], [1, 0, 0]]), (2, 3, 4))
    case("c4_scatter_nd_2d", lambda x: tf.scatter_nd([[0, 1], [2, 3], [0, 1]], x, [3, 4]), (3,))
    case("c4_scatter_nd_slices", lambda x: tf.scatter_nd([[1, 0], [0, 2]], x, [2, 3, 4]), (2, 4))
    case("c4_tscatter_sub", lambda x, y: tf.tensor_scatter_nd_sub(x, [[1], [3]], y), (4, 3), (2, 3))
    case("c4_tscatter_max", lambda x, y: tf.tensor_scatter_nd_max(x, [[1], [3], [1]], y), (4, 3), (3, 3))
    case("c4_tscatter_min", lambda x, y: tf.tensor_scatter_nd_min(x, [[0, 1], [2, 2]], y), (4, 3), (2,))
    case("c4_tscatter_upd_elems", lambda x, y: tf.tensor_scatter_nd_update(x, [[0, 1], [2, 2]], y), (4, 3), (2,))
    case("c4_where_bc", lambda c, x, y: tf.where(c > 0, x, y), (3, 1), (1, 4), (3, 4))
    case("c4_where_scalar", lambda x: tf.where(x > 0, x, 0.0), (3, 4))
    case("c4_where_v1", lambda x, y: tf.compat.v1.where(x[:, 0] > 0, x, y), (3, 4), (3, 4))
    case("c4_pad_reflect_3d", lambda x: tf.pad(x, [[0, 0], [1, 1], [2, 0]], mode="REFLECT"), (2, 3, 4))
    case("c4_pad_symmetric_full", lambda x: tf.pad(x, [[3, 3], [0, 4]], mode="SYMMETRIC"), (3, 4))
    case("c4_pad_neg_const", lambda x: tf.pad(x, [[2, 0], [0, 1]], constant_values=-1.5), (3, 4))
    case("c4_tile_mult1", lambda x: tf.tile(x, [1, 3]), (3, 2))
    case("c4_roll_neg_axis", lambda x: tf.roll(x, shift=[2, 7], axis=[-1, 0]), (3, 4))
    case("c4_roll_same_axis", lambda x: tf.roll(x, shift=[1, 2], axis=[1, 1]), (3, 5))
    case("c4_reverse_neg", lambda x: tf.reverse(x, [-1]), (2, 3, 4))
    case("c4_d2s_nchw_free", lambda x: tf.nn.depth_to_space(x, 3), (1, 2, 2, 9))
    case("c4_s2d_b3", lambda x: tf.nn.space_to_depth(x, 3), (2, 3, 6, 2))
    case("c4_b2s", lambda x: tf.batch_to_space(x, [2, 2], [[0, 1], [1, 0]]), (4, 2, 3, 2))
    case("c4_s2b_1d", lambda x: tf.space_to_batch_nd(x, [3], [[1, 2]]), (2, 6, 2))
    case("c4_onehot_onoff", lambda x: tf.one_hot(tf.cast(tf.abs(x) * 3, tf.int32) % 4, 4, on_value=2.5, off_value=-1.0, axis=-1), (3, 2), grad=False)
    case("c4_onehot_neg_idx", lambda x: tf.one_hot(tf.cast(x * 2, tf.int32), 3, axis=1), (4, 2), grad=False)
    case("c4_sequence_mask", lambda x: tf.cast(tf.sequence_mask(tf.cast(tf.abs(x) * 3, tf.int32), 5), tf.float32), (2, 3), grad=False)
    case("c4_sequence_mask_nomax", lambda x: tf.cast(tf.sequence_mask([1, 3, 2]), tf.float32) * x, (3, 3))
    case("c4_range_int", lambda x: tf.cast(tf.range(10, 1, -3), tf.float32) * x, (3,))
    case("c4_range_dtype", lambda x: tf.range(0.5, 2.0, 0.5, dtype=tf.float64), (1,), grad=False)
    case("c4_linspace_axis", lambda x, y: tf.linspace(x, y, 5, axis=-1), (2, 3), (2, 3))
    case("c4_meshgrid", lambda x, y: tf.meshgrid(x, y)[0] * tf.meshgrid(x, y, indexing="ij")[1], (3,), (3,))
    case("c4_eye_batch", lambda x: tf.eye(3, 4, batch_shape=[2]) * x, (2, 3, 4))
    case("c4_unique_float", lambda x: tf.unique(tf.round(x)).y, (8,), grad=False)
    case("c4_unique_idx", lambda x: tf.cast(tf.unique(tf.round(x)).idx, tf.float32), (8,), grad=False)
    case("c4_argsort_stable", lambda x: tf.argsort(tf.round(x), stable=True), (9,), grad=False)
    case("c4_sort_asc_axis0", lambda x: tf.sort(x, axis=0), (4, 3))
    case("c4_topk_ties", lambda x: tf.math.top_k(tf.round(x), k=3).indices, (3, 6), grad=False)
    case("c4_bincount_weights", lambda x: tf.math.bincount(tf.constant([0, 2, 2, 4, 1]), weights=x, minlength=6), (5,), grad=False)
    case("c4_bincount_maxlen", lambda x: tf.math.bincount(tf.cast(tf.abs(x) * 3, tf.int32), maxlength=3), (8,), grad=False)
    case("c4_bincount_2d", lambda x: tf.math.bincount(tf.cast(tf.abs(x) * 2, tf.int32), minlength=4, axis=-1), (3, 5), grad=False)
    case("c4_segsum_gaps", lambda x: tf.math.segment_sum(x, [0, 0, 2, 2, 4]), (5, 3))
    case("c4_segmin_prod", lambda x: tf.math.segment_min(x, [0, 1, 1, 2]) + tf.math.segment_prod(x, [0, 1, 1, 2]), (4, 3))
    case("c4_useg_neg_ids", lambda x: tf.math.unsorted_segment_sum(x, [0, -1, 1, 0], 2), (4, 3))
    case("c4_useg_min_empty", lambda x: tf.math.unsorted_segment_min(x, [0, 0, 2, 2], 4), (4, 2))
    case("c4_useg_2d_ids", lambda x: tf.math.unsorted_segment_sum(x, [[0, 1], [1, 2]], 3), (2, 2, 3))
    case("c4_dyn_partition", lambda x: tf.dynamic_partition(x, [0, 1, 0, 2], 3)[0] * 2, (4, 3))
    case("c4_split_neg", lambda x: tf.split(x, 3, axis=-1)[1], (2, 6))
    case("c4_unstack_neg", lambda x: tf.unstack(x, axis=-1)[0] - tf.unstack(x, axis=-1)[2], (2, 3))
    case("c4_concat_neg", lambda x, y: tf.concat([x, y], -1), (2, 3), (2, 1))
    case("c4_strided_shrink", lambda x: x[:, 1] + x[:, -1], (3, 4))
    case("c4_strided_neg_step", lambda x: x[::-2, 3:0:-1], (5, 4))
    case("c4_strided_ellipsis_new", lambda x: x[tf.newaxis, ..., ::2, tf.newaxis], (2, 3, 4))
    case("c4_strided_oob", lambda x: x[1:100, -100:2], (3, 4))
    case("c4_slice_size_neg", lambda x: tf.slice(x, [0, 1], [-1, -1]), (3, 4))
    case("c4_reshape_scalar", lambda x: tf.reshape(tf.reduce_sum(x), [1, 1]), (3, 4))
    case("c4_ensure_shape", lambda x: tf.ensure_shape(x, [3, None]) * 2, (3, 4))
    case("c4_broadcast_grad", lambda x, y: x * y + tf.broadcast_to(y, [3, 4]), (3, 4), (1, 4))
    case("c4_diag_part_rect", lambda x: tf.linalg.diag_part(x), (3, 4))
    case("c4_diag_part_k", lambda x: tf.linalg.diag_part(x, k=(-1, 1), align="LEFT_RIGHT"), (3, 4))
    case("c4_set_diag", lambda x, d: tf.linalg.set_diag(x, d), (2, 3, 3), (2, 3))
    case("c4_band_neg", lambda x: tf.linalg.band_part(x, -1, 1), (3, 4))
    case("c4_tensor_diag", lambda x: tf.linalg.tensor_diag(x), (2, 2))
    case("c4_trace_rect", lambda x: tf.linalg.trace(x), (3, 4))
    case("c4_matvec", lambda x, v: tf.linalg.matvec(x, v), (2, 3, 4), (4,))
    case("c4_matmul_adjoint", lambda x, y: tf.matmul(x, y, adjoint_a=True), (2, 4, 3), (2, 4, 5))
    case("c4_matmul_bc_left", lambda x, y: tf.matmul(x, y), (3, 4), (2, 4, 5))
    case("c4_matmul_i32", lambda x, y: tf.matmul(x, y), (3, 4), (4, 2), **ci)
    case("c4_einsum_ellipsis", lambda x, y: tf.einsum("...ij,...jk->...ik", x, y), (2, 3, 4), (4, 2))
    case("c4_einsum_trace", lambda x: tf.einsum("ii", x), (3, 3))
    case("c4_einsum_sum", lambda x: tf.einsum("ijk->j", x), (2, 3, 4))
    case("c4_einsum_bcast", lambda x, y: tf.einsum("bi,i->b", x, y), (3, 4), (4,))
    case("c4_einsum_three", lambda x, y, z: tf.einsum("ij,jk,kl->il", x, y, z), (2, 3), (3, 4), (4, 2))
    case("c4_einsum_diag_out", lambda x: tf.einsum("ij->ji", x) * 2, (2, 3))
    case("c4_tensordot_int", lambda x, y: tf.tensordot(x, y, 1), (2, 3), (3, 4))

    # --- linalg, signal -----------------------------------------------------------------------
    case("c4_inv_adjoint", lambda x: tf.linalg.inv(x + 3 * tf.eye(3), adjoint=True), (3, 3))
    case("c4_solve_adjoint", lambda x, y: tf.linalg.solve(x + 3 * tf.eye(3), y, adjoint=True), (2, 3, 3), (2, 3, 2))
    case("c4_trisolve_upper_adj", lambda x, y: tf.linalg.triangular_solve(tf.linalg.band_part(x, 0, -1) + 3 * tf.eye(3), y,
                                                                            lower=False, adjoint=True), (3, 3), (3, 2))
    case("c4_cholesky_solve", lambda x, y: tf.linalg.cholesky_solve(tf.linalg.cholesky(tf.matmul(x, x, transpose_b=True) + tf.eye(3)), y),
         (3, 3), (3, 2))
    case("c4_det_neg", lambda x: tf.linalg.det(x), (2, 3, 3))
    case("c4_slogdet_sign", lambda x: tf.linalg.slogdet(x)[0], (2, 3, 3), grad=False)
    case("c4_qr_full", lambda x: tf.linalg.qr(x, full_matrices=True)[0] @ tf.linalg.qr(x, full_matrices=True)[1], (4, 3), grad=False)
    case("c4_qr_wide", lambda x: tf.abs(tf.linalg.qr(x)[1]), (2, 4))
    case("c4_svd_uv", lambda x: tf.abs(tf.linalg.svd(x)[1][:, 0]), (4, 3), grad=False)
    case("c4_eigvalsh", lambda x: tf.linalg.eigvalsh(x + tf.transpose(x)), (4, 4))
    case("c4_norm_nuclear_free", lambda x: tf.reduce_sum(tf.linalg.svd(x, compute_uv=False)), (3, 3))
    case("c4_lu_free_logm", lambda x: tf.linalg.logdet(tf.matmul(x, x, transpose_a=True) + 2 * tf.eye(3)), (3, 3))
    case("c4_expm_batch", lambda x: tf.linalg.expm(x * 0.5), (2, 2, 2))
    case("c4_lstsq_l2", lambda x, y: tf.linalg.lstsq(x, y, l2_regularizer=0.1), (4, 3), (4, 2))
    case("c4_normalize", lambda x: tf.linalg.normalize(x, axis=-1)[0], (3, 4))
    case("c4_global_norm", lambda x, y: tf.linalg.global_norm([x, y]), (3, 4), (2,))
    case("c4_clip_norm_axes", lambda x: tf.clip_by_norm(x, 0.5, axes=[1]), (3, 4))
    case("c4_frame_pad", lambda x: tf.signal.frame(x, 4, 3, pad_end=True, pad_value=0.5), (2, 10))
    case("c4_frame_axis", lambda x: tf.signal.frame(x, 3, 2, axis=-2), (2, 7, 2))
    case("c4_overlap_add", lambda x: tf.signal.overlap_and_add(x, 2), (2, 3, 4))
    case("c4_stft", lambda x: tf.abs(tf.signal.stft(x, 8, 4, 8)), (2, 32))
    case("c4_stft_pad", lambda x: tf.math.real(tf.signal.stft(x, 6, 3, 8, pad_end=True)), (1, 20))
    case("c4_inverse_stft", lambda x, y: tf.signal.inverse_stft(tf.complex(x, y), 8, 4, 8), (1, 5, 5), (1, 5, 5))
    case("c4_hamming", lambda x: x * tf.signal.hamming_window(5, periodic=False), (2, 5))
    case("c4_dct2", lambda x: tf.signal.dct(x, type=2), (2, 8))
    case("c4_dct2_ortho", lambda x: tf.signal.dct(x, type=2, norm="ortho"), (2, 8))
    case("c4_idct", lambda x: tf.signal.idct(x, type=2, norm="ortho"), (2, 8))
    case("c4_mel", lambda x: tf.matmul(tf.abs(x), tf.signal.linear_to_mel_weight_matrix(4, 9, 8000, 100.0, 3000.0)), (3, 9))
    case("c4_mfcc", lambda x: tf.signal.mfccs_from_log_mel_spectrograms(x), (2, 8))
    case("c4_fftshift", lambda x: tf.signal.fftshift(x, axes=-1) + tf.signal.ifftshift(x, axes=0), (3, 5))
    case("c4_fft3d", lambda x, y: tf.math.real(tf.signal.fft3d(tf.complex(x, y))), (2, 2, 3, 2), (2, 2, 3, 2))

    # --- tf.image -----------------------------------------------------------------------------
    case("c4_resize_antialias", lambda x: tf.image.resize(x, [3, 2], "bilinear", antialias=True), (1, 6, 5, 2))
    case("c4_resize_bicubic_aa", lambda x: tf.image.resize(x, [3, 3], "bicubic", antialias=True), (1, 7, 6, 1))
    case("c4_resize_lanczos3", lambda x: tf.image.resize(x, [5, 4], "lanczos3"), (1, 3, 3, 1))
    case("c4_resize_mitchell", lambda x: tf.image.resize(x, [5, 4], "mitchellcubic"), (1, 3, 3, 1))
    case("c4_resize_gaussian", lambda x: tf.image.resize(x, [5, 4], "gaussian"), (1, 3, 3, 1))
    case("c4_resize_aa_up", lambda x: tf.image.resize(x, [7, 5], "bilinear", antialias=True), (1, 3, 4, 2))
    case("c4_resize_lanczos5_down", lambda x: tf.image.resize(x, [3, 4], "lanczos5", antialias=True), (1, 9, 7, 1))
    case("c4_resize_aa_uint8", lambda x: tf.image.resize(tf.cast(tf.abs(x) * 60, tf.uint8), [3, 2], antialias=True), (1, 7, 5, 3),
         grad=False)
    case("c4_scale_translate", lambda x: tf.raw_ops.ScaleAndTranslate(images=x, size=[6, 5], scale=[1.5, 0.8], translation=[-1.0, 0.7],
                                                                      kernel_type="keyscubic", antialias=False), (2, 4, 6, 2))
    case("c4_scale_translate_box", lambda x: tf.raw_ops.ScaleAndTranslate(images=x, size=[4, 4], scale=[0.5, 2.0], translation=[0.5, -3.0],
                                                                          kernel_type="box", antialias=True), (1, 8, 3, 1))
    case("c4_resize_down_bilinear", lambda x: tf.image.resize(x, [3, 2], "bilinear"), (1, 7, 5, 2))
    case("c4_resize_area_up", lambda x: tf.image.resize(x, [5, 7], "area"), (1, 3, 4, 2), grad=False)
    case("c4_resize_nn_v1_ac", lambda x: tf.compat.v1.image.resize_nearest_neighbor(x, [5, 7], align_corners=True), (1, 3, 4, 2))
    case("c4_resize_nn_down", lambda x: tf.image.resize(x, [2, 3], "nearest"), (1, 5, 7, 2))
    case("c4_resize_bicubic_v1", lambda x: tf.compat.v1.image.resize_bicubic(x, [5, 6]), (1, 3, 4, 1))
    case("c4_resize_preserve", lambda x: tf.image.resize(x, [8, 8], preserve_aspect_ratio=True), (1, 3, 6, 1))
    case("c4_resize_crop_or_pad", lambda x: tf.image.resize_with_crop_or_pad(x, 4, 7), (1, 6, 5, 2))
    case("c4_crop_to_bbox", lambda x: tf.image.crop_to_bounding_box(x, 1, 2, 3, 2), (2, 5, 5, 2))
    case("c4_pad_to_bbox", lambda x: tf.image.pad_to_bounding_box(x, 1, 2, 6, 7), (2, 3, 4, 2))
    case("c4_flip_ud_transpose", lambda x: tf.image.transpose(tf.image.flip_up_down(x)), (1, 3, 4, 2))
    case("c4_rot90_k3", lambda x: tf.image.rot90(x, 3), (2, 3, 4, 1))
    case("c4_rot90_3d", lambda x: tf.image.rot90(x, 2), (3, 4, 2))
    case("c4_rgb_to_yuv", lambda x: tf.image.rgb_to_yuv(x) + tf.image.yuv_to_rgb(x), (1, 3, 3, 3))
    case("c4_rgb_to_yiq", lambda x: tf.image.rgb_to_yiq(x), (1, 3, 3, 3))
    case("c4_gray_to_rgb", lambda x: tf.image.grayscale_to_rgb(x), (1, 3, 3, 1))
    case("c4_adjust_brightness", lambda x: tf.image.adjust_brightness(x, 0.3), (1, 3, 3, 3))
    case("c4_adjust_gamma", lambda x: tf.image.adjust_gamma(tf.sigmoid(x), 2.2, 1.1), (1, 3, 3, 3))
    case("c4_convert_dtype", lambda x: tf.image.convert_image_dtype(tf.image.convert_image_dtype(tf.sigmoid(x), tf.uint8, saturate=True),
                                                                     tf.float32), (1, 3, 3, 3), grad=False)
    case("c4_ssim_multiscale_free", lambda x, y: tf.image.ssim(tf.sigmoid(x), tf.sigmoid(y), 1.0, filter_size=5, filter_sigma=1.0),
         (2, 10, 10, 3), (2, 10, 10, 3))
    case("c4_psnr_uint8", lambda x: tf.image.psnr(tf.cast(tf.abs(x) * 50, tf.uint8), tf.cast(tf.abs(x) * 40, tf.uint8), 255),
         (1, 4, 4, 1), grad=False)
    case("c4_total_variation_3d", lambda x: tf.image.total_variation(x), (4, 4, 2))
    case("c4_crop_resize_nearest", lambda x: tf.image.crop_and_resize(x, [[0.1, 0.1, 0.8, 0.9]], [0], [3, 3], method="nearest"),
         (1, 6, 6, 2), grad=False)
    case("c4_crop_resize_extrap", lambda x: tf.image.crop_and_resize(x, [[-0.2, 0.1, 1.3, 0.9]], [0], [4, 3], extrapolation_value=0.5),
         (1, 5, 5, 2))
    case("c4_extract_patches_same", lambda x: tf.image.extract_patches(x, [1, 3, 3, 1], [1, 2, 2, 1], [1, 1, 1, 1], "SAME"), (1, 5, 5, 2))
    case("c4_extract_patches_rate", lambda x: tf.image.extract_patches(x, [1, 2, 2, 1], [1, 1, 1, 1], [1, 2, 2, 1], "VALID"), (1, 5, 5, 1))

    # --- control flow, functional ops, random ---------------------------------------------------
    case("c4_case", lambda x: tf.case([(tf.reduce_sum(x) > 10.0, lambda: x * 2), (tf.reduce_sum(x) > -10.0, lambda: tf.sin(x))],
                                      default=lambda: x), (3, 4))
    case("c4_switch_case", lambda x: tf.switch_case(tf.cast(tf.reduce_sum(tf.abs(x)), tf.int32) % 3,
                                                    [lambda: x * 2, lambda: tf.sin(x), lambda: x * x]), (3, 4))
    case("c4_switch_case_oob", lambda x: tf.switch_case(tf.cast(tf.reduce_sum(tf.abs(x)), tf.int32) + 5,
                                                        [lambda: x * 2, lambda: tf.sin(x)]), (3, 4))
    case("c4_switch_in_while", lambda x: tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, tf.switch_case(
        i, [lambda: a * 0.5, lambda: tf.cos(a), lambda: a + 1.0])), (0, x))[1], (3, 4))
    case("c4_cond_int", lambda x: tf.cond(x[0, 0] > 0, lambda: tf.shape(x)[0] * 2, lambda: tf.shape(x)[1]) * tf.ones([2], tf.int32),
         (3, 4), grad=False)
    case("c4_while_ta", lambda x: tf.while_loop(lambda i, ta: i < 3, lambda i, ta: (i + 1, ta.write(i, tf.sin(x[i]) * tf.cast(i, tf.float32))),
                                                (0, tf.TensorArray(tf.float32, 3)))[1].stack(), (3, 4))
    case("c4_while_ta_dyn", lambda x: tf.while_loop(lambda i, ta: i < tf.shape(x)[0],
                                                    lambda i, ta: (i + 1, ta.write(i, tf.reduce_sum(x[:i + 1], 0))),
                                                    (0, tf.TensorArray(tf.float32, 0, dynamic_size=True)))[1].stack(), (4, 3))
    case("c4_while_two_vars", lambda x, y: tf.add_n(tf.while_loop(lambda i, a, b: i < 3, lambda i, a, b: (i + 1, a * b, a + b), (0, x, y))[1:]),
         (3, 2), (3, 2))
    case("c4_while_shape_inv", lambda x: tf.while_loop(lambda a: tf.shape(a)[0] < 8, lambda a: (tf.concat([a, a * 0.5], 0),), (x,),
                                                       shape_invariants=(tf.TensorShape([None, 3]),))[0], (1, 3))
    case("c4_map_fn_multi", lambda x, y: tf.map_fn(lambda t: t[0] * tf.reduce_sum(t[1]), (x, y), fn_output_signature=tf.float32),
         (4, 3), (4, 2))
    case("c4_foldr", lambda x: tf.foldr(lambda a, e: a * 0.5 + tf.cos(e), x, initializer=tf.zeros([3])), (4, 3))
    case("c4_scan_reverse", lambda x: tf.scan(lambda a, e: a + e * a, x, initializer=tf.ones([3]), reverse=True), (4, 3))
    case("c4_scan_tuple", lambda x: tf.scan(lambda a, e: (a[0] + e, a[1] * 0.5 + e), x, initializer=(tf.zeros([3]), tf.ones([3])))[1],
         (4, 3))
    case("c4_stateless_uniform_int", lambda x: tf.random.stateless_uniform([3, 4], seed=[5, 6], minval=-3, maxval=7, dtype=tf.int32),
         (1,), grad=False)
    case("c4_stateless_uniform_i64", lambda x: tf.random.stateless_uniform([5, 3], seed=[9, 1], minval=-(2 ** 40), maxval=7,
                                                                         dtype=tf.int64), (1,), grad=False)
    case("c4_stateless_full_int", lambda x: tf.random.stateless_uniform([7], seed=[3, 3], minval=None, maxval=None, dtype=tf.int32),
         (1,), grad=False)
    case("c4_stateless_full_u64", lambda x: tf.random.stateless_uniform([3], seed=[4, 2], minval=None, maxval=None, dtype=tf.uint64),
         (1,), grad=False)
    case("c4_stateless_uniform_range", lambda x: x * tf.random.stateless_uniform([3, 4], seed=[7, 8], minval=-2.0, maxval=3.0), (3, 4))
    case("c4_stateless_normal_ms", lambda x: x + tf.random.stateless_normal([3, 4], seed=[2, 9], mean=1.0, stddev=0.5), (3, 4))
    case("c4_stateless_f64", lambda x: tf.random.stateless_uniform([3, 4], seed=[1, 1], dtype=tf.float64), (1,), grad=False)
    case("c4_stateless_binomial", lambda x: tf.random.stateless_binomial([3, 4], [3, 4], 5.0, 0.5), (1,), grad=False)
    case("c4_stateless_poisson", lambda x: tf.random.stateless_poisson([3, 4], [3, 4], 2.0), (1,), grad=False)
    case("c4_stateless_gamma", lambda x: tf.random.stateless_gamma([3, 4], [3, 4], 2.0), (1,), grad=False)
    case("c4_ragged_sum", lambda x: tf.reduce_sum(tf.RaggedTensor.from_row_lengths(x, [2, 0, 3]), axis=1), (5,))
    case("c4_ragged_to_tensor", lambda x: tf.RaggedTensor.from_row_lengths(x, [2, 0, 3]).to_tensor(default_value=-1.0), (5,))
    case("c4_ragged_inner", lambda x: tf.RaggedTensor.from_row_lengths(x, [1, 3, 0, 1]).to_tensor(default_value=[0.5, -0.5]), (5, 2))
    case("c4_ragged_nested", lambda x: tf.RaggedTensor.from_nested_row_lengths(x, [[2, 1], [1, 0, 3]]).to_tensor(), (4,))
    case("c4_ragged_shape", lambda x: tf.RaggedTensor.from_row_lengths(x, [1, 4, 2]).to_tensor(shape=[2, 3]), (7,))
    case("c4_ragged_rowids", lambda x: tf.RaggedTensor.from_value_rowids(x, [0, 0, 2, 2, 2], nrows=4).to_tensor(), (5,))
    case("c4_ragged_int", lambda x: tf.RaggedTensor.from_row_splits(tf.cast(x * 5, tf.int32), [0, 2, 2, 5]).to_tensor(-1), (5,),
         grad=False)
    case("c4_ragged_mean", lambda x: tf.reduce_mean(tf.RaggedTensor.from_row_splits(x, [0, 2, 5]), axis=1), (5, 2))

    # --- more tf.math / tf.linalg / tf.image helpers users reach for --------------------------------
    case("c4_repeat", lambda x: tf.repeat(x, [1, 0, 2], axis=0) + 0.0, (3, 2))
    case("c4_repeat_scalar", lambda x: tf.repeat(x, 2, axis=-1), (2, 3))
    case("c4_confusion", lambda x: tf.math.confusion_matrix([0, 1, 2, 1], tf.argmax(x, 1), num_classes=3), (4, 3), grad=False)
    case("c4_hist_bins", lambda x: tf.histogram_fixed_width_bins(x, [-1.0, 1.0], nbins=4), (3, 4), grad=False)
    case("c4_searchsorted_right", lambda x: tf.searchsorted(tf.sort(x[0]), x[1], side="right"), (2, 6), grad=False)
    case("c4_is_non_decreasing", lambda x: tf.cast(tf.math.is_non_decreasing(tf.sort(x)), tf.float32)
         + tf.cast(tf.math.is_strictly_increasing(x), tf.float32), (5,), grad=False)
    case("c4_reduce_variance_int_free", lambda x: tf.math.reduce_variance(x, axis=[0, 1]), (2, 3, 4))
    case("c4_lu", lambda x: tf.linalg.lu(x + 3 * tf.eye(3))[0], (3, 3), grad=False)
    case("c4_lu_solve", lambda x, y: tf.linalg.lu_solve(*tf.linalg.lu(x + 3 * tf.eye(3)), y), (3, 3), (3, 2), grad=False)
    case("c4_sqrtm", lambda x: tf.linalg.sqrtm(tf.matmul(x, x, transpose_b=True) + tf.eye(3)), (3, 3), grad=False)
    case("c4_tridiag_solve", lambda x, y: tf.linalg.tridiagonal_solve(x + tf.constant([[0.0], [4.0], [0.0]]), y), (3, 4), (4, 2))
    case("c4_banded_trisolve", lambda x, y: tf.linalg.banded_triangular_solve(x + tf.constant([[0.0], [3.0]]), y), (2, 4), (4, 2),
         grad=False)
    case("c4_eig", lambda x: tf.math.real(tf.linalg.eigvals(x + tf.transpose(x))), (3, 3), grad=False)
    case("c4_matrix_transpose", lambda x: tf.linalg.matrix_transpose(x) @ x, (2, 3, 4))
    case("c4_matrix_set_diag_k", lambda x, d: tf.linalg.set_diag(x, d, k=(0, 1)), (3, 3), (2, 3))
    case("c4_bessel_j0", lambda x: tf.math.special.bessel_j0(x) + tf.math.special.bessel_j1(x), (3, 4))
    case("c4_bessel_k", lambda x: tf.math.special.bessel_k0e(x) + tf.math.special.bessel_k1e(x), (3, 4), pos=True)
    case("c4_dawsn", lambda x: tf.math.special.dawsn(x), (3, 4))
    case("c4_expint", lambda x: tf.math.special.expint(x), (3, 4), pos=True)
    case("c4_spence", lambda x: tf.math.special.spence(x), (3, 4), pos=True)
    case("c4_fresnel", lambda x: tf.math.special.fresnel_cos(x) + tf.math.special.fresnel_sin(x), (3, 4))
    case("c4_polygamma", lambda x: tf.math.polygamma(tf.ones_like(x), x), (3, 4), pos=True)
    case("c4_lbeta", lambda x: tf.math.lbeta(x), (3, 4), pos=True)
    case("c4_erfcinv_free", lambda x: tf.math.erfinv(1.0 - tf.sigmoid(x)), (3, 4))
    case("c4_approx_topk", lambda x: tf.math.approx_max_k(x, 2)[0], (3, 6))
    case("c4_stateless_flip", lambda x: tf.image.stateless_random_flip_left_right(x, seed=[1, 2]), (2, 3, 4, 2))
    case("c4_stateless_brightness", lambda x: tf.image.stateless_random_brightness(x, 0.3, seed=[3, 4]), (2, 3, 3, 3))
    case("c4_stateless_contrast", lambda x: tf.image.stateless_random_contrast(x, 0.5, 1.5, seed=[5, 6]), (1, 3, 3, 3), grad=False)
    case("c4_stateless_crop", lambda x: tf.image.stateless_random_crop(x, [2, 2, 3], seed=[7, 8]), (4, 5, 3))
    case("c4_rfft_odd", lambda x: tf.abs(tf.signal.rfft(x)), (2, 7))
    case("c4_irfft_odd", lambda x, y: tf.signal.irfft(tf.complex(x, y), fft_length=[9]), (2, 5), (2, 5))
    case("c4_collapse_repeated", lambda x: tf.nn.collapse_repeated(tf.constant([[1, 1, 2, 2, 3], [4, 4, 4, 5, 5]]), [5, 4])[0]
         + tf.cast(tf.reduce_sum(x), tf.int32) * 0, (1,), grad=False)
    case("c4_where_3arg_int", lambda x: tf.where(x > 0, tf.ones_like(x, tf.int32), tf.zeros_like(x, tf.int32) - 3), (3, 4), grad=False)
    case("c4_clip_int", lambda x: tf.clip_by_value(x, -2, 3), (3, 4), **ci)
    case("c4_ones_zeros_dyn", lambda x: tf.ones(tf.reverse(tf.shape(x), [0])) * tf.reduce_sum(x) + tf.zeros([tf.shape(x)[0]])[0], (3, 4))
    case("c4_tnp", lambda x: tf.experimental.numpy.tril(x) + tf.experimental.numpy.flip(x, 0), (3, 3))
    case("c4_cumsum_int64", lambda x: tf.cumsum(x, axis=0, reverse=True), (4, 3), dtype="int64", grad=False)
    case("c4_sum_int8", lambda x: tf.reduce_sum(tf.cast(x * 50, tf.int8), axis=1), (3, 4), grad=False)
    case("c4_mean_uint8", lambda x: tf.reduce_mean(tf.cast(tf.abs(x) * 100, tf.uint8), axis=1), (3, 4), grad=False)
    case("c4_f64_conv", lambda x, f: tf.nn.conv2d(x, f, 1, "SAME"), (1, 4, 4, 2), (3, 3, 2, 2), dtype="float64")
    case("c4_f64_lstm_cell_math", lambda x, w: tf.tanh(x @ w) * tf.sigmoid(x @ w), (3, 4), (4, 4), dtype="float64")
    case("c4_f64_segment", lambda x: tf.math.unsorted_segment_mean(x, [1, 0, 1], 2), (3, 2), dtype="float64")

    # --- Keras losses and helpers ---------------------------------------------------------------
    K = tf.keras.losses
    case("c4_huber_delta", lambda x, y: K.Huber(delta=0.5)(x, y), (3, 4), (3, 4))
    case("c4_logcosh", lambda x, y: K.LogCosh()(x, y), (3, 4), (3, 4))
    case("c4_mape", lambda x, y: K.MeanAbsolutePercentageError()(x, y), (3, 4), (3, 4))
    case("c4_msle", lambda x, y: K.MeanSquaredLogarithmicError()(tf.abs(x), tf.abs(y)), (3, 4), (3, 4))
    case("c4_poisson", lambda x, y: K.Poisson()(tf.abs(x), tf.abs(y) + 0.1), (3, 4), (3, 4))
    case("c4_cosine_loss", lambda x, y: K.CosineSimilarity()(x, y), (3, 4), (3, 4))
    case("c4_hinge", lambda x, y: K.Hinge()(tf.sign(x), y) + K.SquaredHinge()(tf.sign(x), y), (3, 4), (3, 4))
    case("c4_cat_hinge", lambda x, y: K.CategoricalHinge()(tf.one_hot([1, 0, 3], 4), y), (3, 4), (3, 4))
    case("c4_bce_probs", lambda x, y: K.BinaryCrossentropy()(tf.sigmoid(y), tf.sigmoid(x)), (3, 4), (3, 4))
    case("c4_bce_ls", lambda x, y: K.BinaryCrossentropy(from_logits=True, label_smoothing=0.2)(tf.sigmoid(y), x), (3, 4), (3, 4))
    case("c4_bfocal", lambda x, y: K.BinaryFocalCrossentropy(from_logits=True, gamma=2.0)(tf.cast(y > 0, tf.float32), x),
         (3, 4), (3, 4))
    case("c4_cce_probs", lambda x, y: K.CategoricalCrossentropy()(tf.nn.softmax(y), tf.nn.softmax(x)), (3, 4), (3, 4))
    case("c4_scce_probs", lambda x: K.SparseCategoricalCrossentropy()(tf.constant([1, 0, 3]), tf.nn.softmax(x)), (3, 4))
    case("c4_cfocal", lambda x, y: K.CategoricalFocalCrossentropy(from_logits=True)(tf.nn.softmax(y), x), (3, 4), (3, 4))
    case("c4_loss_sum", lambda x, y: K.MeanSquaredError(reduction="sum")(x, y), (3, 4), (3, 4))
    case("c4_loss_weights", lambda x, y: K.MeanAbsoluteError()(x, y, sample_weight=tf.constant([0.5, 1.0, 2.0])), (3, 4), (3, 4))

    L = tf.keras.layers
    return [
        ("c4_k_conv1dT", lambda: L.Conv1DTranspose(3, 3, strides=2, padding="same"), (2, 5, 2), {}),
        ("c4_k_conv3dT", lambda: L.Conv3DTranspose(2, 2, strides=2), (1, 2, 3, 2, 2), {}),
        ("c4_k_sepconv1d", lambda: L.SeparableConv1D(4, 3, padding="same", depth_multiplier=2), (2, 7, 3), {}),
        ("c4_k_conv1d_dil", lambda: L.Conv1D(3, 3, dilation_rate=2, padding="same", activation="tanh"), (2, 9, 2), {}),
        ("c4_k_conv1d_s2", lambda: L.Conv1D(3, 4, strides=2, use_bias=False), (2, 9, 2), {}),
        ("c4_k_conv3d_same", lambda: L.Conv3D(2, 3, padding="same", strides=2), (1, 5, 5, 5, 2), {}),
        ("c4_k_dwconv_s2", lambda: L.DepthwiseConv2D(3, strides=2, padding="valid"), (2, 7, 7, 2), {}),
        ("c4_k_dwconv1d", lambda: L.DepthwiseConv1D(3, padding="same", depth_multiplier=2), (2, 6, 3), {}),
        ("c4_k_conv2dT_valid", lambda: L.Conv2DTranspose(2, (3, 2), strides=(2, 1), padding="valid"), (1, 3, 4, 3), {}),
        ("c4_k_mha_mask", lambda: L.MultiHeadAttention(num_heads=2, key_dim=2, value_dim=3), (2, 4, 5), {"mask": True}),
        ("c4_k_mha_causal", lambda: L.MultiHeadAttention(num_heads=2, key_dim=3), (2, 4, 6), {"causal": True}),
        ("c4_k_attention_scale", lambda: L.Attention(use_scale=True, score_mode="concat"), (2, 4, 3), {"pair": True}),
        ("c4_k_additive_attention", lambda: L.AdditiveAttention(), (2, 4, 3), {"pair": True}),
        ("c4_k_layernorm_axis", lambda: L.LayerNormalization(axis=[1, 2], epsilon=1e-3), (2, 3, 4), {}),
        ("c4_k_layernorm_rms", lambda: L.LayerNormalization(rms_scaling=True), (2, 5), {}),
        ("c4_k_groupnorm1d", lambda: L.GroupNormalization(groups=3), (2, 4, 6), {}),
        ("c4_k_bn_axis1", lambda: L.BatchNormalization(axis=1), (3, 2, 4), {"training": False}),
        ("c4_k_bn_infer_conv", lambda: L.BatchNormalization(), (2, 3, 3, 4), {"training": False}),
        ("c4_k_embedding_maskzero", lambda: L.Embedding(6, 3, mask_zero=True), (2, 5), {"ints": 6}),
        ("c4_k_gru_v1", lambda: L.GRU(3, reset_after=False, return_sequences=True), (2, 4, 3), {}),
        ("c4_k_lstm_state", lambda: L.LSTM(3, return_state=True), (2, 4, 2), {"first": True}),
        ("c4_k_lstm_mask", lambda: _masked(L.LSTM(3, return_sequences=True)), (2, 5, 2), {}),
        ("c4_k_gru_goback", lambda: L.GRU(3, go_backwards=True), (2, 4, 2), {}),
        ("c4_k_bigru_concat", lambda: L.Bidirectional(L.GRU(2, return_sequences=True), merge_mode="sum"), (2, 4, 3), {}),
        ("c4_k_timedist_conv", lambda: L.TimeDistributed(L.Conv2D(2, 2)), (1, 3, 4, 4, 2), {}),
        ("c4_k_upsample1d", lambda: L.UpSampling1D(3), (2, 3, 2), {}),
        ("c4_k_upsample3d", lambda: L.UpSampling3D(2), (1, 2, 2, 2, 1), {}),
        ("c4_k_upsample_bil_odd", lambda: L.UpSampling2D((2, 3), interpolation="bilinear"), (1, 3, 2, 2), {}),
        ("c4_k_zeropad1d", lambda: L.ZeroPadding1D((1, 2)), (2, 3, 2), {}),
        ("c4_k_zeropad3d", lambda: L.ZeroPadding3D(1), (1, 2, 2, 2, 1), {}),
        ("c4_k_crop1d", lambda: L.Cropping1D((1, 2)), (2, 6, 2), {}),
        ("c4_k_crop3d", lambda: L.Cropping3D(((1, 0), (0, 1), (1, 1))), (1, 3, 3, 4, 1), {}),
        ("c4_k_gap1d", lambda: L.GlobalAveragePooling1D(), (2, 5, 3), {}),
        ("c4_k_gap3d", lambda: L.GlobalAveragePooling3D(keepdims=True), (1, 3, 3, 3, 2), {}),
        ("c4_k_gmp2d", lambda: L.GlobalMaxPooling2D(), (2, 4, 4, 3), {}),
        ("c4_k_avgpool1d", lambda: L.AveragePooling1D(3, strides=2, padding="same"), (2, 7, 3), {}),
        ("c4_k_maxpool3d", lambda: L.MaxPooling3D(2, padding="same"), (1, 3, 4, 4, 2), {}),
        ("c4_k_avgpool3d", lambda: L.AveragePooling3D(2), (1, 4, 4, 4, 2), {}),
        ("c4_k_relu_opts", lambda: L.ReLU(max_value=1.0, negative_slope=0.1, threshold=0.2), (3, 4), {}),
        ("c4_k_leaky", lambda: L.LeakyReLU(negative_slope=0.2), (3, 4), {}),
        ("c4_k_prelu_shared", lambda: L.PReLU(shared_axes=[1, 2]), (2, 3, 3, 2), {}),
        ("c4_k_softmax_neg", lambda: L.Softmax(axis=-2), (2, 3, 4), {}),
        ("c4_k_rescaling", lambda: L.Rescaling(1.0 / 255, offset=-0.5), (2, 3), {}),
        ("c4_k_normalization", lambda: L.Normalization(mean=[0.5, -1.0, 2.0], variance=[1.0, 4.0, 0.25]), (2, 3), {}),
        ("c4_k_random_flip_inf", lambda: L.RandomFlip(), (1, 3, 3, 2), {"training": False}),
        ("c4_k_activation_mix", lambda: _seq(L.Activation("hard_sigmoid"), L.Activation("softsign"), L.Activation("selu")), (3, 4), {}),
        ("c4_k_activation_more", lambda: _seq(L.Activation("mish"), L.Activation("hard_silu"), L.Activation("relu6")), (3, 4), {}),
        ("c4_k_activation_log_softmax", lambda: L.Activation("log_softmax"), (3, 4), {}),
        ("c4_k_dot_norm", lambda: L.Dot(axes=-1, normalize=True), (3, 4), {"pair": True}),
        ("c4_k_dot_axes", lambda: L.Dot(axes=(1, 1)), (2, 3, 4), {"pair": True}),
        ("c4_k_concat", lambda: L.Concatenate(axis=1), (2, 3), {"pair": True}),
        ("c4_k_average", lambda: L.Average(), (2, 3), {"pair": True}),
        ("c4_k_maximum", lambda: L.Maximum(), (2, 3), {"pair": True}),
        ("c4_k_minimum_sub", lambda: L.Subtract(), (2, 3), {"pair": True}),
        ("c4_k_multiply", lambda: L.Multiply(), (2, 3), {"pair": True}),
        ("c4_k_dense_3d", lambda: L.Dense(4, activation="swish"), (2, 3, 5), {}),
        ("c4_k_einsum_dense", lambda: L.EinsumDense("abc,cd->abd", output_shape=(None, 4), bias_axes="d"), (2, 3, 5), {}),
        ("c4_k_reshape", lambda: L.Reshape((-1, 2)), (2, 3, 4), {}),
        ("c4_k_gauss_noise_inf", lambda: L.GaussianNoise(0.5), (2, 3), {"training": False}),
        ("c4_k_alpha_dropout_inf", lambda: L.AlphaDropout(0.5), (2, 3), {"training": False}),
        ("c4_k_category_enc", lambda: L.CategoryEncoding(num_tokens=5, output_mode="multi_hot"), (2, 3), {"ints": 5}),
        # whole small models, as users write them
        ("c4_m_cnn", lambda: _seq(L.Conv2D(4, 3, padding="same", activation="relu"), L.MaxPooling2D(), L.Conv2D(3, 3),
                                  L.GlobalAveragePooling2D(), L.Dense(2, activation="softmax")), (2, 8, 8, 1), {}),
        ("c4_m_cnn_bn", lambda: _seq(L.Conv2D(4, 3, use_bias=False), L.BatchNormalization(), L.ReLU(), L.Flatten(),
                                     L.Dropout(0.3), L.Dense(3)), (2, 6, 6, 2), {"training": False}),
        ("c4_m_mlp", lambda: _seq(L.Dense(8, activation="relu"), L.LayerNormalization(), L.Dense(4, activation="tanh"),
                                  L.Dense(1, activation="sigmoid")), (5, 6), {}),
        ("c4_m_autoenc", lambda: _seq(L.Conv2D(3, 3, strides=2, padding="same", activation="elu"),
                                      L.Conv2DTranspose(2, 3, strides=2, padding="same", activation="sigmoid")), (1, 6, 6, 2), {}),
        ("c4_m_transformer", lambda: Block(), (2, 5, 8), {}),
        ("c4_m_text_lstm", lambda: _seq(L.Embedding(20, 4, mask_zero=True), L.LSTM(3), L.Dense(2)), (2, 6),
         {"ints": 20, "nograd_input": True}),
        ("c4_m_gru_stack", lambda: _seq(L.GRU(4, return_sequences=True), L.GRU(3), L.Dense(2)), (2, 5, 3), {}),
        ("c4_m_conv1d_text", lambda: _seq(L.Conv1D(4, 3, activation="relu"), L.GlobalMaxPooling1D(), L.Dense(2)), (2, 8, 3), {}),
        ("c4_m_resnet_block", lambda: ResBlock(), (1, 5, 5, 4), {}),
        ("c4_m_sepconv_net", lambda: _seq(L.SeparableConv2D(4, 3, padding="same", activation="relu6"), L.DepthwiseConv2D(3),
                                          L.GlobalAveragePooling2D(), L.Dense(3, activation="log_softmax")), (1, 6, 6, 3), {}),
        ("c4_k_hashed_free_discret", lambda: L.Discretization(bin_boundaries=[-0.5, 0.0, 0.5]), (3, 4), {"nograd": True}),
    ]


def _seq(*layers):
    return tf.keras.Sequential(list(layers))


class Block(tf.keras.layers.Layer):
    """A post-norm transformer encoder block: attention, residual, layer norm, feed-forward."""

    def __init__(self):
        super().__init__()
        L = tf.keras.layers
        self.att = L.MultiHeadAttention(num_heads=2, key_dim=4)
        self.n1, self.n2 = L.LayerNormalization(), L.LayerNormalization()
        self.ff1, self.ff2 = L.Dense(16, activation="gelu"), L.Dense(8)

    def call(self, t):
        h = self.n1(t + self.att(t, t, use_causal_mask=True))
        return self.n2(h + self.ff2(self.ff1(h)))


class ResBlock(tf.keras.layers.Layer):
    def __init__(self):
        super().__init__()
        L = tf.keras.layers
        self.c1, self.c2 = L.Conv2D(4, 3, padding="same"), L.Conv2D(4, 3, padding="same")
        self.bn = L.BatchNormalization()

    def call(self, t):
        return tf.nn.relu(t + self.bn(self.c2(tf.nn.relu(self.c1(t))), training=False))


def _masked(layer):
    class Masked(tf.keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.inner = layer

        def call(self, t):
            mask = tf.sequence_mask(tf.constant([3, 5]), tf.shape(t)[1])
            return self.inner(t, mask=mask)

    return Masked()


_ = np
