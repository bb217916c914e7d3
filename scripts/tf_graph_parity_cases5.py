"""Batch 5 of scripts/tf_graph_parity.py: the dtype and gradient corners batches 1-4 left open.
Gradients of the binary ops under every kind of broadcasting; the unary ops and common layers in
float16, bfloat16 and float64; integer arithmetic in int8/int16 and the unsigned types;
reductions with keepdims and negative axes; empty tensors; strided slices with every mask;
gathers and scatters with batch dims; segment ops' gradients; einsum forms attention and
bilinear layers use; conv/pool variants (dilations, EXPLICIT padding, rectangular windows and
strides, transposed and depthwise); resize's v1 flags; sort/top_k; cumsum/cumprod flags; banded
and linalg ops with their gradients; loops and conds with gradients; Keras layers in training
mode (scripts/tf_graph_parity_keras5.py). Every name starts with ``c5_``; ``register`` adds them
through the script's ``case`` helper and returns the Keras entries."""

import tensorflow as tf


def register(case):
    _binary(case)
    _unary_dtypes(case)
    _integers(case)
    _reductions_and_empty(case)
    _slicing_and_indexing(case)
    _segments_and_einsum(case)
    _conv_pool_resize(case)
    _sort_cumsum_linalg(case)
    _control_flow_and_edges(case)
    _fuzz_found(case)
    _fuzz2_found(case)
    _fuzz3_found(case)
    _fuzz4_found(case)
    from scripts.tf_graph_parity_keras5 import keras_cases

    return keras_cases()


# --- binary ops' gradients under broadcasting ---------------------------------------------------

_BC_SHAPES = [((2, 1, 4), (3, 1)), ((4,), (2, 3, 4)), ((), (2, 3)), ((2, 3, 1), (1, 1, 5))]


def _binary(case):
    def posv(t):
        return tf.abs(t) + 0.5

    def nz(t):
        return t + tf.sign(t) * 0.5 + tf.cast(tf.equal(t, 0.0), t.dtype)

    ops = [
        ("add", tf.add), ("sub", tf.subtract), ("mul", tf.multiply), ("div", lambda a, b: a / nz(b)),
        ("pow", lambda a, b: tf.pow(posv(a), b)), ("max", tf.maximum), ("min", tf.minimum),
        ("sqdiff", tf.math.squared_difference), ("atan2", lambda a, b: tf.atan2(a, nz(b))),
        ("xdivy", lambda a, b: tf.math.xdivy(a, nz(b))), ("xlogy", lambda a, b: tf.math.xlogy(a, posv(b))),
        ("xlog1py", lambda a, b: tf.math.xlog1py(a, posv(b))), ("divnonan", lambda a, b: tf.math.divide_no_nan(a, nz(b))),
        ("floormod", lambda a, b: tf.math.floormod(a, posv(b))), ("mulnonan", tf.math.multiply_no_nan),
        ("realdiv", lambda a, b: tf.realdiv(a, nz(b))),
    ]
    for name, f in ops:
        for i, (sa, sb) in enumerate(_BC_SHAPES[:2] if name not in ("add", "mul", "max", "pow") else _BC_SHAPES):
            case(f"c5_bc_{name}_{i}", lambda a, b, f=f: f(a, b), sa, sb)
    case("c5_bc_rank_extend_3", lambda a, b, c: a * b + c, (4, 1, 1), (3, 1), (2,))
    case("c5_bc_where_grad", lambda a, b, c: tf.where(a > 0, b, c), (2, 3, 1), (3, 4), (1, 4))
    case("c5_bc_add_n_same", lambda a, b: tf.add_n([a, b, a]), (2, 3), (2, 3))
    case("c5_bc_broadcast_to_grad", lambda a: tf.broadcast_to(a, [2, 3, 4]) * tf.range(24.0, dtype=tf.float32)[:4], (3, 1))
    case("c5_bc_tile_grad", lambda a: tf.tile(a, [2, 1, 3]) * 1.5, (1, 2, 2))
    case("c5_bc_f64_mul", lambda a, b: a * b - a / (tf.abs(b) + 1), (3, 1), (1, 4), dtype="float64")
    case("c5_bc_f16_add", lambda a, b: a + b * 2, (3, 1), (1, 4), dtype="float16")


# --- unary ops and layers in float16, bfloat16 and float64 --------------------------------------


def _unary_dtypes(case):
    def posv(t):
        return tf.abs(t) + 0.5

    unary = [
        ("exp", tf.exp), ("log", lambda x: tf.math.log(posv(x))), ("tanh", tf.tanh), ("sigmoid", tf.sigmoid),
        ("relu", tf.nn.relu), ("elu", tf.nn.elu), ("selu", tf.nn.selu), ("softplus", tf.nn.softplus),
        ("sqrt", lambda x: tf.sqrt(posv(x))), ("rsqrt", lambda x: tf.math.rsqrt(posv(x))), ("square", tf.square),
        ("reciprocal", lambda x: tf.math.reciprocal(posv(x))), ("sin", tf.sin), ("cos", tf.cos), ("erf", tf.math.erf),
        ("abs", tf.abs), ("gelu", tf.nn.gelu), ("swish", tf.nn.silu), ("softmax", tf.nn.softmax),
        ("log_softmax", tf.nn.log_softmax), ("leaky", lambda x: tf.nn.leaky_relu(x, 0.3)), ("relu6", lambda x: tf.nn.relu6(x * 4)),
        ("softsign", tf.nn.softsign), ("log1p", lambda x: tf.math.log1p(posv(x))), ("expm1", tf.math.expm1),
    ]
    for name, f in unary:
        case(f"c5_f16_{name}", f, (3, 4), dtype="float16")
    for name, f in unary[:12]:
        case(f"c5_bf16_{name}", f, (3, 4), dtype="bfloat16")
    for name, f in [("lgamma", tf.math.lgamma), ("digamma", tf.math.digamma), ("erfc", tf.math.erfc),
                    ("atanh", lambda x: tf.atanh(tf.tanh(x) * 0.9)), ("asinh", tf.asinh), ("acos", lambda x: tf.acos(tf.tanh(x))),
                    ("tan", lambda x: tf.tan(x * 0.5)), ("sinh_cosh", lambda x: tf.sinh(x) + tf.cosh(x))]:
        case(f"c5_f64_{name}", f, (3, 4), dtype="float64", pos=name in ("lgamma", "digamma"))
    case("c5_bf16_add_mul", lambda a, b: a * b + a - b, (3, 4), (3, 4), dtype="bfloat16")
    case("c5_bf16_div_max", lambda a, b: tf.maximum(a, b) / (tf.abs(b) + 1), (3, 4), (4,), dtype="bfloat16")
    case("c5_bf16_matmul", lambda a, b: tf.matmul(a, b), (3, 4), (4, 2), dtype="bfloat16")
    case("c5_bf16_reduce", lambda x: tf.reduce_sum(x, 1) + tf.reduce_max(x, 1) + tf.reduce_mean(x, 1), (3, 4), dtype="bfloat16")
    case("c5_bf16_cast_round", lambda x: tf.cast(tf.cast(x * 100, tf.bfloat16), tf.float32), (4, 5))
    case("c5_bf16_cast_int", lambda x: tf.cast(tf.cast(x * 50, tf.bfloat16), tf.int32), (4, 5), grad=False)
    case("c5_bf16_from_int", lambda x: tf.cast(tf.cast(tf.cast(x * 1000, tf.int32), tf.bfloat16), tf.float32), (4, 5), grad=False)
    case("c5_bf16_compare", lambda a, b: tf.cast(a > b, tf.int32) + tf.cast(tf.equal(a, b), tf.int32), (3, 4), (3, 4),
         dtype="bfloat16", grad=False)
    case("c5_bf16_mixed_grad", lambda x: tf.reduce_sum(tf.cast(tf.nn.relu(tf.cast(x, tf.bfloat16)) * 3, tf.float32) * x), (3, 4))
    case("c5_bf16_round_floor", lambda x: tf.round(x * 3) + tf.floor(x * 3) + tf.math.ceil(x * 3), (3, 4), dtype="bfloat16", grad=False)
    case("c5_f16_matmul", lambda a, b: tf.matmul(a, b), (3, 4), (4, 2), dtype="float16")
    case("c5_f16_reduce_mean", lambda x: tf.reduce_mean(x, axis=-1, keepdims=True) * x, (3, 4), dtype="float16")
    case("c5_f16_conv2d", lambda x, w: tf.nn.conv2d(x, w, 1, "SAME"), (1, 4, 4, 2), (3, 3, 2, 2), dtype="float16")
    case("c5_f16_bias_add", lambda x, b: tf.nn.bias_add(x, b), (2, 3, 4), (4,), dtype="float16")
    case("c5_f16_maxpool", lambda x: tf.nn.max_pool2d(x, 2, 2, "VALID"), (1, 4, 4, 2), dtype="float16")
    case("c5_f16_xent", lambda x, y: tf.nn.softmax_cross_entropy_with_logits(tf.nn.softmax(y), x), (3, 4), (3, 4), dtype="float16")
    case("c5_f64_matmul_t", lambda a, b: tf.matmul(a, b, transpose_a=True, adjoint_b=True), (4, 3), (2, 4), dtype="float64")
    case("c5_f64_conv2d_t", lambda x, w: tf.nn.conv2d_transpose(x, w, [1, 6, 6, 2], 2, "SAME"), (1, 3, 3, 3), (3, 3, 2, 3),
         dtype="float64")
    case("c5_f64_dwconv", lambda x, w: tf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "VALID"), (1, 5, 5, 2), (3, 3, 2, 2), dtype="float64")
    case("c5_f64_avgpool", lambda x: tf.nn.avg_pool2d(x, 3, 2, "SAME"), (1, 5, 5, 2), dtype="float64")
    case("c5_f64_sparse_xent", lambda x: tf.nn.sparse_softmax_cross_entropy_with_logits(tf.constant([1, 0, 3]), x), (3, 4),
         dtype="float64")
    case("c5_f64_sigmoid_xent", lambda x, y: tf.nn.sigmoid_cross_entropy_with_logits(tf.sigmoid(y), x), (3, 4), (3, 4), dtype="float64")
    case("c5_f64_lse", lambda x: tf.reduce_logsumexp(x, axis=[0, 2], keepdims=True), (2, 3, 4), dtype="float64")
    case("c5_f64_cumsum", lambda x: tf.cumsum(x, axis=0, exclusive=True, reverse=True), (4, 3), dtype="float64")


# --- integers: int8/int16 and the unsigned types -------------------------------------------------


def _integers(case):
    for dt in ("int8", "int16", "uint8", "uint16", "uint32", "uint64"):
        case(f"c5_{dt}_arith", lambda a, b: a + b * 2 - tf.minimum(a, b) + tf.maximum(a, b), (3, 4), (4,), dtype=dt, grad=False)
        if dt.startswith("u"):  # (TF's CPU has no FloorMod for int8/int16)
            case(f"c5_{dt}_divmod", lambda a, b: tf.math.floordiv(a, b + 1) + tf.math.floormod(a, b + 1), (3, 4), (3, 4), dtype=dt,
                 grad=False)
        case(f"c5_{dt}_reduce", lambda a: tf.reduce_sum(a, 0) + tf.reduce_max(a, 0) + tf.reduce_min(a, 0), (3, 4), dtype=dt, grad=False)
        case(f"c5_{dt}_compare", lambda a, b: tf.cast(a < b, tf.int32) + tf.cast(tf.equal(a, b), tf.int32) * 2, (3, 4), (3, 4),
             dtype=dt, grad=False)
    case("c5_int8_wrap", lambda a: a * 50 + 100, (3, 4), dtype="int8", grad=False)
    case("c5_uint8_wrap", lambda a: a * 60 - 7, (3, 4), dtype="uint8", grad=False)
    case("c5_int16_abs_neg", lambda a: tf.abs(a) - tf.negative(a) * 3 + tf.sign(a), (3, 4), dtype="int16", grad=False)
    case("c5_int8_cast_f", lambda a: tf.cast(a, tf.float32) * 0.5 + tf.cast(tf.cast(a, tf.uint8), tf.float32), (3, 4), dtype="int8",
         grad=False)
    case("c5_uint8_cumsum", lambda a: tf.cumsum(a, axis=1), (3, 4), dtype="uint8", grad=False)
    case("c5_int16_cumsum_rev", lambda a: tf.cumsum(a, axis=0, reverse=True, exclusive=True), (3, 4), dtype="int16", grad=False)
    case("c5_int64_truncdiv", lambda a, b: tf.truncatediv(a * 7, b + tf.cast(tf.equal(b, 0), tf.int64)) + tf.truncatemod(a * 7, b + 10),
         (3, 4), (3, 4), dtype="int64", grad=False)
    case("c5_int32_argmax_i64", lambda a: tf.argmax(a, axis=-1, output_type=tf.int64) + tf.argmin(a, 0, output_type=tf.int64)[:3],
         (3, 4), dtype="int32", grad=False)
    case("c5_uint8_bitwise", lambda a, b: tf.bitwise.bitwise_xor(a, b) + tf.bitwise.invert(a), (3, 4), (3, 4), dtype="uint8", grad=False)
    case("c5_int32_clip_sq", lambda a: tf.clip_by_value(a * a, 2, 10), (3, 4), dtype="int32", grad=False)


# --- reductions (keepdims, negative axes, dtypes) and empty tensors -----------------------------


def _reductions_and_empty(case):
    case("c5_red_sum_kd_neg", lambda x: tf.reduce_sum(x, axis=[-1, -3], keepdims=True) * x, (2, 3, 4))
    case("c5_red_mean_kd_f16", lambda x: tf.reduce_mean(x, axis=-2, keepdims=True), (2, 3, 4), dtype="float16")
    case("c5_red_prod_f64", lambda x: tf.reduce_prod(x, axis=-1), (3, 4), dtype="float64")
    case("c5_red_max_kd", lambda x: tf.reduce_max(x, axis=(0, 2), keepdims=True), (2, 3, 4))
    case("c5_red_min_all", lambda x: tf.reduce_min(x) + tf.reduce_max(x), (3, 4))
    case("c5_red_std_f64", lambda x: tf.math.reduce_std(x, axis=-1, keepdims=True), (3, 4), dtype="float64")
    case("c5_red_var_neg", lambda x: tf.math.reduce_variance(x, axis=-2), (2, 3, 4))
    case("c5_red_all_any_kd", lambda x: tf.cast(tf.reduce_all(x > -1, axis=-1, keepdims=True), tf.int32)
         + tf.cast(tf.reduce_any(x > 1, axis=0, keepdims=True), tf.int32), (3, 4), grad=False)
    case("c5_red_euclid_kd", lambda x: tf.norm(x, axis=-1, keepdims=True), (3, 4))
    case("c5_red_sum_uint8", lambda x: tf.reduce_sum(x, axis=-1, keepdims=True), (3, 4), dtype="uint8", grad=False)
    case("c5_red_mean_int16", lambda x: tf.reduce_mean(x, axis=0), (3, 4), dtype="int16", grad=False)
    case("c5_red_lse_axis_none", lambda x: tf.reduce_logsumexp(x * 10), (3, 4))
    case("c5_empty_concat", lambda x: tf.concat([x, tf.zeros([0, 4]), x * 2], 0), (2, 4))
    case("c5_empty_reduce", lambda x: tf.reduce_sum(x[:0], 0) + tf.reduce_prod(x[:0], 0) + tf.reduce_mean(x, 0), (3, 4))
    case("c5_empty_max", lambda x: tf.reduce_max(x[:, :0], axis=1), (3, 4), grad=False)
    case("c5_empty_matmul", lambda a, b: tf.matmul(a[:, :0], b[:0]) + 1.0, (2, 3), (3, 4))
    case("c5_empty_tile_pad", lambda x: tf.pad(tf.tile(x, [0, 1]), [[1, 1], [0, 0]]) + tf.reduce_sum(x), (2, 3))
    case("c5_empty_gather", lambda x: tf.gather(x, tf.zeros([0], tf.int32)) + 0.0, (3, 4))
    case("c5_empty_topk", lambda x: tf.math.top_k(x[:0], 2)[0], (3, 4), grad=False)
    case("c5_empty_split", lambda x: tf.split(x, [0, 4, 0], axis=1)[1] * 2, (3, 4))


# --- strided slices, gathers and scatters ---------------------------------------------------------


def _slicing_and_indexing(case):
    case("c5_ss_neg_step", lambda x: x[1:, ::-2], (4, 5))
    case("c5_ss_last", lambda x: x[..., -1], (2, 3, 4))
    case("c5_ss_newaxis_mid", lambda x: x[:, tf.newaxis, 1] * 2, (3, 4))
    case("c5_ss_step_inner", lambda x: x[::2, 1:-1], (5, 4))
    case("c5_ss_rev_range", lambda x: x[-1:0:-1], (5, 3))
    case("c5_ss_shrink_rev", lambda x: x[:, :, ::-1][1], (3, 2, 4))
    case("c5_ss_empty_range", lambda x: tf.reduce_sum(x[3:1]) + x[0], (4, 3))
    case("c5_ss_both_new", lambda x: x[tf.newaxis, ..., tf.newaxis] * 3, (2, 3))
    case("c5_ss_ellipsis_mid", lambda x: x[0, ..., 1:], (2, 3, 4, 5))
    case("c5_ss_raw_masks", lambda x: tf.strided_slice(x, [1, 0, 2], [0, 2, 0], [1, 1, -1], begin_mask=2, end_mask=1,
                                                       shrink_axis_mask=0), (3, 3, 4))
    case("c5_ss_raw_shrink", lambda x: tf.strided_slice(x, [0, 1], [2, 2], [1, 1], shrink_axis_mask=2), (3, 4))
    case("c5_ss_dynamic_begin", lambda x: x[tf.shape(x)[0] - 2:, : tf.shape(x)[1] // 2], (4, 6))
    case("c5_gather_bd2", lambda x: tf.gather(x, tf.constant([[[1, 0], [2, 2]], [[0, 0], [1, 2]]]), axis=2, batch_dims=2), (2, 2, 3, 2))
    case("c5_gather_i64", lambda x: tf.gather(x, tf.constant([3, 0, 3], tf.int64), axis=-1), (2, 4))
    case("c5_gather_nd_bd2", lambda x: tf.gather_nd(x, tf.constant([[[[1], [0]]], [[[2], [1]]]]), batch_dims=2), (2, 1, 3, 2))
    case("c5_gather_nd_i64", lambda x: tf.gather_nd(x, tf.constant([[0, 1], [2, 0], [0, 1]], tf.int64)), (3, 2, 2))
    case("c5_scatter_nd_3d", lambda u: tf.scatter_nd(tf.constant([[0, 1], [1, 0], [0, 1]]), u, [2, 2, 3]), (3, 3))
    case("c5_tscatter_add_dups", lambda x, u: tf.tensor_scatter_nd_add(x, tf.constant([[1], [1], [0]]), u), (3, 4), (3, 4))
    case("c5_tscatter_upd_grad", lambda x, u: tf.tensor_scatter_nd_update(x, tf.constant([[0, 1], [2, 3]]), u), (3, 4), (2,))
    case("c5_tscatter_max_grad", lambda x, u: tf.tensor_scatter_nd_max(x, tf.constant([[0], [2]]), u), (3, 4), (2, 4))
    case("c5_gather_bd1_axis2", lambda x: tf.gather(x, tf.constant([[0, 2], [1, 1]]), axis=2, batch_dims=1), (2, 3, 4))
    case("c5_boolean_mask_axis", lambda x: tf.boolean_mask(x, tf.constant([True, False, True, True]), axis=1), (2, 4, 2))
    case("c5_onehot_f64_axis0", lambda x: tf.one_hot(tf.constant([2, 0, -1]), 3, axis=0, dtype=tf.float64) + 0 * x, (1,),
         dtype="float64")


# --- segment ops and einsum ------------------------------------------------------------------------


def _segments_and_einsum(case):
    ids = tf.constant([0, 0, 1, 3, 3])
    uids = tf.constant([2, 0, 2, -1, 1])
    case("c5_seg_sum_2d", lambda x: tf.math.segment_sum(x, ids), (5, 3))
    case("c5_seg_mean_2d", lambda x: tf.math.segment_mean(x, ids), (5, 3))
    case("c5_seg_max_2d", lambda x: tf.math.segment_max(x, ids), (5, 3))
    case("c5_seg_min_2d", lambda x: tf.math.segment_min(x, ids), (5, 3))
    case("c5_seg_prod_2d", lambda x: tf.math.segment_prod(x, ids), (5, 3))
    case("c5_useg_sum_neg", lambda x: tf.math.unsorted_segment_sum(x, uids, 4), (5, 2))
    case("c5_useg_mean", lambda x: tf.math.unsorted_segment_mean(x, uids, 3), (5, 2))
    case("c5_useg_sqrtn", lambda x: tf.math.unsorted_segment_sqrt_n(x, uids, 3), (5, 2))
    case("c5_useg_max_grad", lambda x: tf.math.unsorted_segment_max(x, uids, 3), (5, 2))
    case("c5_sparse_seg_sum", lambda x: tf.sparse.segment_sum(x, tf.constant([0, 2, 2, 1]), tf.constant([0, 0, 1, 1])), (3, 4))
    case("c5_sparse_seg_mean", lambda x: tf.sparse.segment_mean(x, tf.constant([0, 2, 1]), tf.constant([0, 1, 1])), (3, 4))
    case("c5_sparse_seg_sqrtn", lambda x: tf.sparse.segment_sqrt_n(x, tf.constant([2, 2, 1]), tf.constant([0, 0, 2])), (3, 4))
    case("c5_sparse_seg_num", lambda x: tf.sparse.segment_sum(x, tf.constant([0, 1]), tf.constant([0, 2]), num_segments=4), (3, 2))
    for i, (eq, shapes) in enumerate([
        ("bij,bkj->bik", [(2, 3, 4), (2, 5, 4)]), ("i,i->", [(5,), (5,)]), ("ij,j->i", [(3, 4), (4,)]),
        ("bi,bj->bij", [(2, 3), (2, 4)]), ("abcd->acbd", [(2, 3, 4, 1)]), ("ii->", [(3, 3)]),
        ("...i,...i->...", [(2, 3, 4), (3, 4)]), ("bqhd,bkhd->bhqk", [(1, 3, 2, 4), (1, 5, 2, 4)]),
        ("ijk,ikl->jl", [(2, 3, 4), (2, 4, 5)]), ("bij,jk->bik", [(2, 3, 4), (4, 2)]), ("ij,kj->ikj", [(2, 3), (4, 3)]),
    ]):
        case(f"c5_einsum_{i}", lambda *a, eq=eq: tf.einsum(eq, *a), *shapes)
    case("c5_einsum_f64_bilinear", lambda a, w, b: tf.einsum("bi,oij,bj->bo", a, w, b), (2, 3), (4, 3, 5), (2, 5), dtype="float64")


# --- conv, pool, resize ------------------------------------------------------------------------------


def _conv_pool_resize(case):
    case("c5_conv_dil_rect", lambda x, w: tf.nn.conv2d(x, w, 1, "SAME", dilations=[2, 2]), (1, 6, 5, 2), (3, 2, 2, 3), grad=False)
    case("c5_conv_explicit_asym", lambda x, w: tf.nn.conv2d(x, w, [1, 2, 1, 1], [[0, 0], [2, 0], [0, 1], [0, 0]]), (1, 5, 5, 2),
         (3, 3, 2, 2))
    case("c5_conv_stride_rect_valid", lambda x, w: tf.nn.conv2d(x, w, [1, 1, 2, 1], "VALID"), (2, 5, 7, 2), (2, 3, 2, 3))
    case("c5_conv_stride3_same", lambda x, w: tf.nn.conv2d(x, w, 3, "SAME"), (1, 7, 8, 1), (2, 2, 1, 2))
    case("c5_convT_stride3", lambda x, w: tf.nn.conv2d_transpose(x, w, [1, 7, 8, 2], 3, "SAME"), (1, 3, 3, 3), (3, 3, 2, 3))
    case("c5_convT_valid_rect", lambda x, w: tf.nn.conv2d_transpose(x, w, [2, 6, 5, 1], [1, 2, 1, 1], "VALID"), (2, 2, 3, 2),
         (3, 3, 1, 2))
    case("c5_conv1dT_s3", lambda x, w: tf.nn.conv1d_transpose(x, w, [2, 9, 2], 3, "VALID"), (2, 3, 3), (3, 2, 3))
    case("c5_conv3dT", lambda x, w: tf.nn.conv3d_transpose(x, w, [1, 4, 4, 4, 2], [1, 2, 2, 2, 1], "SAME"), (1, 2, 2, 2, 3),
         (2, 2, 2, 2, 3))
    case("c5_dw_dil_same", lambda x, w: tf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME", dilations=[2, 2]), (1, 6, 6, 2),
         (3, 3, 2, 1))
    case("c5_dw_stride_rect", lambda x, w: tf.nn.depthwise_conv2d(x, w, [1, 2, 2, 1], "VALID"), (2, 5, 4, 3), (2, 3, 3, 2))
    case("c5_sep_dil", lambda x, d, p: tf.nn.separable_conv2d(x, d, p, [1, 1, 1, 1], "SAME", dilations=[2, 2]), (1, 6, 6, 2),
         (3, 3, 2, 2), (1, 1, 4, 3))
    case("c5_maxpool_rect_stride", lambda x: tf.nn.max_pool2d(x, (2, 3), (1, 2), "VALID"), (2, 5, 7, 2))
    case("c5_avgpool_rect_same", lambda x: tf.nn.avg_pool2d(x, (3, 1), (2, 1), "SAME"), (1, 5, 4, 3))
    case("c5_maxpool3d_s2", lambda x: tf.nn.max_pool3d(x, 2, 2, "VALID"), (1, 4, 5, 4, 2))
    case("c5_avgpool3d_same", lambda x: tf.nn.avg_pool3d(x, 3, 2, "SAME"), (1, 5, 4, 4, 1))
    case("c5_avgpool1d_same_s2", lambda x: tf.nn.avg_pool1d(x, 3, 2, "SAME"), (2, 7, 3))
    case("c5_maxpool1d_valid", lambda x: tf.nn.max_pool1d(x, 2, 3, "VALID"), (2, 8, 2))
    case("c5_argmax_batch_idx", lambda x: tf.nn.max_pool_with_argmax(x, 2, 2, "SAME", include_batch_in_index=True)[0], (2, 5, 5, 2))
    case("c5_argmax_idx_out", lambda x: tf.nn.max_pool_with_argmax(x, 3, 2, "VALID", include_batch_in_index=True)[1], (2, 5, 5, 2),
         grad=False)
    case("c5_pool_avg_dil", lambda x: tf.nn.pool(x, [2, 2], "AVG", padding="VALID", dilations=[2, 2]), (1, 6, 6, 2))
    case("c5_fbn_nchw_train", lambda x, s, o: tf.compat.v1.nn.fused_batch_norm(x, s, o, is_training=True, data_format="NCHW")[0],
         (2, 3, 2, 2), (3,), (3,))
    case("c5_conv_1x1_s2_f64", lambda x, w: tf.nn.conv2d(x, w, 2, "VALID"), (1, 5, 5, 2), (1, 1, 2, 3), dtype="float64")
    case("c5_conv3d_explicit_free", lambda x, w: tf.nn.conv3d(tf.pad(x, [[0, 0], [1, 0], [0, 1], [1, 1], [0, 0]]), w, [1, 1, 2, 1, 1],
                                                              "VALID"), (1, 3, 4, 3, 2), (2, 2, 2, 2, 2))
    case("c5_rs_bilinear_hp_v1", lambda x: tf.compat.v1.image.resize_bilinear(x, [5, 7], half_pixel_centers=True), (1, 3, 4, 2))
    case("c5_rs_nearest_hp_v1", lambda x: tf.compat.v1.image.resize_nearest_neighbor(x, [5, 3], half_pixel_centers=True), (1, 3, 4, 2))
    case("c5_rs_bicubic_ac_v1", lambda x: tf.compat.v1.image.resize_bicubic(x, [5, 6], align_corners=True), (1, 3, 4, 1))
    case("c5_rs_bicubic_hp_v1", lambda x: tf.compat.v1.image.resize_bicubic(x, [2, 7], half_pixel_centers=True), (1, 3, 4, 1))
    case("c5_rs_bilinear_down_odd", lambda x: tf.image.resize(x, [3, 2], method="bilinear"), (1, 7, 5, 2))
    case("c5_rs_nearest_down_odd", lambda x: tf.image.resize(x, [3, 4], method="nearest"), (2, 7, 5, 1))
    case("c5_rs_area_nonint", lambda x: tf.image.resize(x, [3, 4], method="area"), (1, 7, 5, 2), grad=False)  # (no TF gradient)
    case("c5_rs_bilinear_up_nonint", lambda x: tf.image.resize(x, [7, 5], method="bilinear"), (1, 3, 4, 2))
    case("c5_rs_bilinear_ac_down", lambda x: tf.compat.v1.image.resize_bilinear(x, [2, 3], align_corners=True), (1, 5, 6, 2))


# --- sort/top_k, cumsum/cumprod, band part and linalg ------------------------------------------------


def _sort_cumsum_linalg(case):
    case("c5_topk_all", lambda x: tf.math.top_k(x, 4)[0], (3, 4))
    case("c5_topk_1d", lambda x: tf.math.top_k(x, 2)[0] * 3, (6,))
    case("c5_topk_f64_idx", lambda x: tf.cast(tf.math.top_k(x, 3)[1], tf.float64) + tf.math.top_k(x, 3)[0], (2, 5), dtype="float64")
    case("c5_sort_desc_axis0", lambda x: tf.sort(x, axis=0, direction="DESCENDING"), (4, 2, 3))
    case("c5_argsort_desc_int", lambda x: tf.argsort(x, direction="DESCENDING", stable=True), (3, 6), dtype="int32", grad=False)
    case("c5_sort_int", lambda x: tf.sort(x, axis=-1), (3, 5), dtype="int32", grad=False)
    case("c5_topk_f16", lambda x: tf.math.top_k(x, 2)[0], (3, 5), dtype="float16")
    case("c5_cumsum_ex_rev_ax0", lambda x: tf.cumsum(x, axis=0, exclusive=True, reverse=True), (4, 3))
    case("c5_cumprod_ex", lambda x: tf.math.cumprod(x, axis=-1, exclusive=True), (3, 4))
    case("c5_cumprod_rev_zero", lambda x: tf.math.cumprod(tf.nn.relu(x), axis=0, reverse=True), (4, 3))
    case("c5_cumsum_int8", lambda x: tf.cumsum(x, axis=-1, exclusive=True), (3, 4), dtype="int8", grad=False)
    case("c5_cumlse_ex_f64", lambda x: tf.math.cumulative_logsumexp(x, axis=1, exclusive=True), (3, 4), dtype="float64")
    case("c5_band_1_1", lambda x: tf.linalg.band_part(x, 1, 1), (2, 4, 4))
    case("c5_band_0_0", lambda x: tf.linalg.band_part(x, 0, 0), (3, 5))
    case("c5_band_2_m1_f64", lambda x: tf.linalg.band_part(x, 2, -1), (5, 4), dtype="float64")
    case("c5_inv_f64", lambda x: tf.linalg.inv(x + 3 * tf.eye(3, dtype=tf.float64)), (2, 3, 3), dtype="float64")
    case("c5_det_batch", lambda x: tf.linalg.det(x + 2 * tf.eye(3)), (2, 3, 3))
    case("c5_slogdet_f64", lambda x: tf.linalg.slogdet(x + 3 * tf.eye(3, dtype=tf.float64))[1], (3, 3), dtype="float64")
    case("c5_chol_grad", lambda x: tf.linalg.cholesky(tf.matmul(x, x, transpose_b=True) + tf.eye(3)), (3, 3))
    case("c5_trisolve_bc", lambda a, b: tf.linalg.triangular_solve(a + 3 * tf.eye(3), b, lower=True, adjoint=True), (3, 3), (2, 3, 2))
    case("c5_solve_batch", lambda a, b: tf.linalg.solve(a + 3 * tf.eye(3), b), (2, 3, 3), (2, 3, 1))
    case("c5_qr_grad", lambda x: tf.linalg.qr(x)[1], (4, 3))
    case("c5_svd_vals_grad", lambda x: tf.linalg.svd(x, compute_uv=False), (3, 4))
    case("c5_eigh_vals_f64", lambda x: tf.linalg.eigvalsh(x + tf.transpose(x)), (4, 4), dtype="float64")
    case("c5_norm_ord2", lambda x: tf.norm(x, ord=2, axis=[-2, -1]), (3, 4))
    case("c5_lu_reconstruct", lambda x: tf.linalg.lu_reconstruct(*tf.linalg.lu(x + 3 * tf.eye(3))), (2, 3, 3), grad=False)
    case("c5_lu_inverse", lambda x: tf.linalg.lu_matrix_inverse(*tf.linalg.lu(x + 3 * tf.eye(3))), (3, 3), grad=False)
    case("c5_lu_perm_i64", lambda x: tf.cast(tf.linalg.lu(x, output_idx_type=tf.int64)[1], tf.float32), (4, 4), grad=False)
    case("c5_lu_f64_batch", lambda x: tf.linalg.lu(x)[0], (2, 4, 4), dtype="float64", grad=False)
    case("c5_sqrtm_grad", lambda x: tf.linalg.sqrtm(tf.matmul(x, x, transpose_b=True) + tf.eye(3)), (3, 3))
    case("c5_banded_grad", lambda a, b: tf.linalg.banded_triangular_solve(a + tf.constant([[3.0], [0.0]]), b, lower=False), (2, 4), (4, 2))
    case("c5_banded_adj_grad", lambda a, b: tf.linalg.banded_triangular_solve(a + tf.constant([[3.0], [0.0], [0.0]]), b, adjoint=True),
         (3, 4), (4, 3))
    case("c5_eigvals_triangular", lambda x: tf.math.real(tf.linalg.eigvals(tf.linalg.band_part(x, 0, -1) + tf.linalg.diag([0.0, 3.0, 6.0]))),
         (3, 3))
    case("c5_eig_symmetric_grad", lambda x: tf.math.real(tf.linalg.eigvals(x + tf.transpose(x) + tf.linalg.diag([0.0, 4.0, 8.0]))),
         (3, 3))
    case("c5_matrix_diag_rect", lambda x: tf.linalg.diag(x, k=1, num_rows=4, num_cols=5), (2, 4))
    case("c5_logdet_grad", lambda x: tf.linalg.logdet(tf.matmul(x, x, transpose_b=True) + tf.eye(3)), (3, 3))
    case("c5_matrix_solve_ls", lambda a, b: tf.linalg.lstsq(a, b, l2_regularizer=0.1), (4, 3), (4, 2))


# --- loops and conds with gradients, float edges ------------------------------------------------------


def _control_flow_and_edges(case):
    case("c5_while_pow", lambda x: tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * x), (0, tf.ones_like(x)))[1], (3, 4))
    case("c5_while_two_grads", lambda x, y: tf.add_n(tf.while_loop(lambda i, a, b: i < 3, lambda i, a, b: (i + 1, a * b + 1.0, tf.sin(a)),
                                                                  (0, x, y))[1:]), (3,), (3,))
    case("c5_while_nested", lambda x: tf.while_loop(
        lambda i, y: i < 2, lambda i, y: (i + 1, tf.while_loop(lambda j, z: j < 2, lambda j, z: (j + 1, tf.tanh(z) * 1.5), (0, y))[1]),
        (0, x))[1], (2, 3))
    case("c5_while_maxiter", lambda x: tf.while_loop(lambda y: tf.reduce_sum(y) < 1e6, lambda y: y * 2.0, [x], maximum_iterations=4)[0],
         (3,))
    case("c5_while_dyn_count", lambda x: tf.while_loop(lambda i, y: i < tf.shape(x)[0], lambda i, y: (i + 1, y + x[i] * y), (0, x[0]))[1],
         (4, 2))
    case("c5_cond_both_grad", lambda x, y: tf.cond(tf.reduce_sum(x) > 0, lambda: x * y, lambda: x - y), (3,), (3,))
    case("c5_cond_false_grad", lambda x: tf.cond(tf.reduce_sum(x) > 100.0, lambda: tf.exp(x), lambda: tf.sin(x) * x), (3, 2))
    case("c5_cond_in_while", lambda x: tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, tf.cond(i % 2 == 0, lambda: y * 2.0,
                                                                                                   lambda: tf.square(y))), (0, x))[1],
         (3,))
    case("c5_switch_case_grad", lambda x: tf.switch_case(tf.cast(tf.reduce_sum(x) > 0, tf.int32) + 1,
                                                        [lambda: x, lambda: x * 2.0, lambda: tf.tanh(x)]), (4,))
    case("c5_scan_cumprod", lambda x: tf.scan(lambda a, b: a * b, x), (4, 3))
    case("c5_foldl_grad", lambda x: tf.foldl(lambda a, b: a * 0.5 + tf.sin(b), x, initializer=tf.zeros([3])), (4, 3))
    case("c5_map_fn_grad", lambda x: tf.map_fn(lambda r: tf.reduce_sum(r * r) * r, x), (3, 4))
    case("c5_ta_scatter_gather", lambda x: tf.TensorArray(tf.float32, 3).scatter([2, 0, 1], x).gather([1, 2]) * 2.0, (3, 4))
    case("c5_ta_while_write", lambda x: tf.while_loop(lambda i, ta: i < 3, lambda i, ta: (i + 1, ta.write(i, x[i] * tf.cast(i + 1, tf.float32))),
                                                      (0, tf.TensorArray(tf.float32, 3)))[1].stack(), (3, 2))
    case("c5_round_half_even_f64", lambda x: tf.round(tf.round(x * 4) / 2), (3, 4), dtype="float64", grad=False)
    case("c5_sign_zero", lambda x: tf.sign(x * 0.0) + tf.sign(-x * 0.0) + tf.sign(x), (3, 4), grad=False)
    case("c5_floor_ceil_neg", lambda x: tf.floor(x * 3) * 2 + tf.math.ceil(x * 3), (3, 4), grad=False)
    case("c5_clip_by_norm_axes", lambda x: tf.clip_by_norm(x, 1.0, axes=[1]), (3, 4))
    case("c5_l2_normalize_f64", lambda x: tf.math.l2_normalize(x, axis=-1), (3, 4), dtype="float64")
    case("c5_log1p_expm1_tiny", lambda x: tf.math.log1p(x * 1e-6) + tf.math.expm1(x * 1e-6), (3, 4))
    case("c5_relu6_edges", lambda x: tf.nn.relu6(tf.round(x * 4) * 1.5), (3, 4))
    case("c5_gelu_approx", lambda x: tf.nn.gelu(x * 2, approximate=True), (3, 4))
    case("c5_elu_selu_f64", lambda x: tf.nn.elu(x) + tf.nn.selu(x), (3, 4), dtype="float64")
    case("c5_softplus_neg", lambda x: tf.nn.softplus(x * 40 - 20), (3, 4))
    case("c5_igamma_grads", lambda a, x: tf.math.igamma(a, x) + tf.math.igammac(a, x * 2), (3, 4), (3, 4), pos=True)
    case("c5_sigmoid_f16_big", lambda x: tf.sigmoid(x * 20), (3, 4), dtype="float16")
    case("c5_reduce_sum_bool_cast", lambda x: tf.reduce_sum(tf.cast(x > 0, tf.int64), axis=-1), (3, 4), grad=False)
    case("c5_mod_f64_neg", lambda x, y: tf.math.floormod(x * 5, y) + tf.truncatemod(x * 5, y), (3, 4), (3, 4), dtype="float64", grad=False)
    case("c5_div_int_neg", lambda a, b: tf.math.floordiv(-a * 7, tf.abs(b) + 1) * 10 + tf.math.floormod(-a * 7, -(tf.abs(b) + 1)), (3, 4),
         (3, 4), dtype="int32", grad=False)


# --- found by scripts/tf_fuzz_parity.py ----------------------------------------------------------


def _fuzz_found(case):
    case("c5_fz_prod_scalar_grad", lambda x: tf.reduce_prod(x), (), dtype="float16")  # (axes + 0) % 0 of no axes
    case("c5_fz_gather_nd_scalar", lambda x: tf.gather_nd(tf.cast(x * 3, tf.int32), [2, 0]), (3, 3), grad=False)
    case("c5_fz_bitcast_scalar", lambda x: tf.bitcast(x[0, 0], tf.int32), (2, 2), grad=False)
    nan_inf = tf.constant([[float("nan"), -float("inf")], [0.0, 0.0], [0.0, float("nan")], [-float("inf"), 0.0]])
    case("c5_fz_useg_max_inf_nan", lambda x: tf.math.unsorted_segment_max(x + nan_inf, [0, 0, 1, 2], 3), (4, 2))
    case("c5_fz_useg_min_inf_nan", lambda x: tf.math.unsorted_segment_min(x - nan_inf, [2, 0, 0, 1], 3), (4, 2))
    case("c5_fz_floormod_zero_sign", lambda x: (tf.abs(x) + 1) / tf.math.floormod(tf.constant([1.0, -1.0]), tf.constant([-0.5, 0.5])), (2,))
    case("c5_fz_euclid_no_axes", lambda x: tf.math.reduce_euclidean_norm(x, axis=[]) + tf.math.reduce_euclidean_norm(x[0, 0]), (2, 3))
    case("c5_fz_gather_empty_slices", lambda x: tf.gather(x[:, :0], [5, 1]) + 1, (3, 2))  # no index checked: nothing copied
    case("c5_fz_mean_int_empty", lambda x: tf.reduce_mean(tf.cast(x[:0], tf.int64), axis=[0, -1], keepdims=True), (2, 2), grad=False)
    case("c5_fz_erf_f64_inf", lambda x: tf.math.erf(x / tf.constant([0.0, 0.0, 1.0], tf.float64)), (3,), dtype="float64")
    case("c5_fz_relu6_grad_inf", lambda x: tf.nn.relu6(x * 4) * tf.constant([[float("inf"), 1.0, -float("inf")]]), (2, 3))
    nan_inf2 = tf.constant([[0.0, float("nan"), 0.0, float("inf")], [float("nan"), 0.0, float("inf"), float("inf")]])
    case("c5_fz_cumlse_nan_inf", lambda x: tf.math.cumulative_logsumexp(x + nan_inf2, axis=1, reverse=True), (2, 4), grad=False)
    case("c5_fz_elu_selu_neg_zero", lambda x: 1.0 / tf.nn.elu(-tf.abs(x) * 0.0) + 1.0 / tf.nn.selu(-tf.abs(x) * 0.0), (2, 3), grad=False)
    case("c5_fz_einsum_presum_inf", lambda x, y: tf.einsum("bij,jk->k", tf.sign(x) + 0.5, y * tf.constant([[1.0], [float("inf")]])),
         (2, 3, 2), (2, 1), grad=False)


# --- found by scripts/tf_fuzz_parity.py --family 2 -----------------------------------------------


def _fuzz2_found(case):
    inf, nan = float("inf"), float("nan")
    w_inf = tf.constant([inf, 1.0, -inf, 2.0])[None, None, :, None]
    case("c5_fz2_maxpool_grad_inf_dy", lambda x: tf.nn.max_pool2d(x, [1, 2], [1, 2], "VALID") * w_inf[:, :, :2], (1, 1, 4, 1))
    neg = tf.constant([-inf, -inf, nan, -inf, 0.0, 0.0])[None, None, :, None]
    case("c5_fz2_maxpool_grad_no_max", lambda x: tf.nn.max_pool2d(x + neg, [1, 2], [1, 2], "VALID") * tf.constant([1.0, 2.0, 3.0])[None, None, :, None],
         (1, 1, 6, 1))
    case("c5_fz2_resize_nearest_grad_inf", lambda x: tf.compat.v1.image.resize_nearest_neighbor(x, [1, 4]) * w_inf, (1, 1, 2, 1))
    case("c5_fz2_resize_bilinear_grad_nan", lambda x: tf.compat.v1.image.resize_bilinear(x, [1, 4], align_corners=True) * tf.constant([nan, 1.0, 1.0, 2.0])[None, None, :, None],
         (1, 1, 3, 1))
    case("c5_fz2_resize_bicubic_nan", lambda x: tf.compat.v1.image.resize_bicubic(x * tf.constant([1.0] * 7 + [nan])[None, None, :, None], [1, 4]),
         (1, 1, 8, 1), grad=False)
    case("c5_fz2_resize_bicubic_grad_inf", lambda x: tf.compat.v1.image.resize_bicubic(x, [1, 4]) * w_inf, (1, 1, 8, 1))
    case("c5_fz2_lrn_inf", lambda x: tf.nn.local_response_normalization(x + tf.constant([inf, 0.0, 0.0, 0.0]), 1, 1.0, 0.1, 0.5), (1, 2, 2, 4),
         grad=False)
    case("c5_fz2_lrn_grad_inf", lambda x: tf.nn.local_response_normalization(x, 0, 1.0, 0.1, 0.5) * tf.constant([inf, 1.0, 1.0]), (1, 1, 2, 3))
    case("c5_fz2_tensor_scatter_min_nan", lambda x: tf.tensor_scatter_nd_min(x * tf.constant([1.0, nan, 1.0]), [[0], [1], [2]], tf.constant([nan, 0.0, -9.0])),
         (3,), grad=False)
    case("c5_fz2_maxpool3d_ties", lambda x: tf.nn.max_pool3d(x + tf.stop_gradient(tf.round(x) - x), [2, 2, 2], [1, 1, 1], "SAME"),
         (1, 3, 3, 3, 2))  # oneDNN in graphs: a tie's gradient to the first maximum
    case("c5_fz2_maxpool3d_nan", lambda x: tf.nn.max_pool3d(x * tf.constant([1.0, nan]), [1, 1, 2], [1, 1, 2], "VALID"), (1, 1, 2, 2, 2),
         grad=False)
    case("c5_fz2_square_uint8", lambda x: tf.square(tf.cast(tf.abs(x) * 40, tf.uint8)), (3, 4), grad=False)


# --- found by scripts/tf_fuzz_parity.py --family 3 -----------------------------------------------


def _fuzz3_found(case):
    # RsqrtGrad/SqrtGrad/ReciprocalGrad give 0 where dy is 0, even for a NaN y (Maximum passed none
    # of the gradient to its NaN side), in the branch taken
    case("c5_fz3_cond_rsqrt_grad_nan_y", lambda x: tf.cond(tf.reduce_max(x) > -100.0,
                                                           lambda: tf.maximum(tf.math.rsqrt(tf.sqrt(x)), x * 0.5), lambda: x), (3, 4))
    case("c5_fz3_reciprocal_sqrt_grad_inf_y", lambda x: tf.nn.relu(-tf.math.reciprocal(tf.sqrt(tf.abs(x) * 0.0))) + x, (2, 3))

    def ta_concat(x):  # TensorListConcatV2, TensorListSplit its gradient
        ta = tf.TensorArray(x.dtype, size=3, infer_shape=False, element_shape=tf.TensorShape(None))
        ta = tf.while_loop(lambda i, ta: i < 3, lambda i, ta: (i + 1, ta.write(i, tf.sin(x[: i + 1]) * tf.cast(i + 1, x.dtype))),
                           [0, ta])[1]
        return ta.concat()
    case("c5_fz3_ta_concat_loop", ta_concat, (3, 2))

    def grown(x):  # a loop var growing under shape_invariants: its static shape must not stay [3]
        i0 = tf.constant(0)
        t = tf.while_loop(lambda i, t: i < 1, lambda i, t: (i + 1, tf.concat([t, t * 0.5], 0)), [i0, x],
                          shape_invariants=[i0.shape, tf.TensorShape([None])])[1]
        return tf.maximum(t, tf.range(6, dtype=x.dtype) * 0.1)
    case("c5_fz3_while_shape_invariant", grown, (3,), grad=False)  # (TF's gradient of such a loop fails)


# --- found by scripts/tf_fuzz_parity.py --family 4 -----------------------------------------------


def _fuzz4_found(case):
    inf, nan = float("inf"), float("nan")
    sp = tf.math.special
    edges = tf.constant([-inf, -2.5, -0.5, 0.0, inf])
    # special functions off their real domain: K +inf, Y -inf below 0, Expint NaN there and at inf
    case("c5_fz4_bessel_k_y_negative", lambda x: tf.concat([sp.bessel_k0(edges + x * 0), sp.bessel_k1e(edges + x * 0),
                                                            sp.bessel_y0(edges + x * 0), sp.bessel_y1(-tf.abs(x))], 0), (5,), grad=False)
    case("c5_fz4_bessel_k1_grad_negative", lambda x: sp.bessel_k1(x), (6,))
    case("c5_fz4_expint_negative", lambda x: sp.expint(x) + sp.expint(edges[4] + x * 0), (6,))
    case("c5_fz4_digamma_lgamma_edges", lambda x: tf.concat([tf.math.digamma(x * 0.0), tf.math.lgamma(edges + x * 0)], 0), (5,))
    case("c5_fz4_polygamma_poles", lambda x: tf.math.polygamma(tf.constant([1.0, 2.0, 3.0, 2.0, 0.0]), tf.constant([-1.0, -1.0, 0.0, -inf, 0.0]) + x * 0),
         (5,), grad=False)
    case("c5_fz4_zeta_igamma_inf", lambda x: tf.concat([tf.math.zeta(inf + x * 0, tf.constant([-1.5, 0.0, 1.0, 1.5])),
                                                        tf.math.igamma(inf + x * 0, tf.constant([inf, 1.0, inf, 2.0])),
                                                        tf.math.igammac(tf.constant([inf, 2.0, 1.0, inf]), inf + x * 0)], 0), (4,), grad=False)
    case("c5_fz4_betainc_edges", lambda x: tf.math.betainc(tf.constant([0.5, inf, nan, inf, 2.0]), tf.constant([inf, 1.0, 1.0, inf, nan]),
                                                           tf.constant([0.3, 0.3, 0.0, 1.0, 1.0]) + x * 0), (5,), grad=False)
    case("c5_fz4_igamma_grad_a_inf", lambda x: tf.math.igamma(tf.constant([inf, inf, 2.0]) + x * 0.0, tf.abs(x) + 0.5), (3,))
    # TF 2.21's gradients of embedding_lookup_sparse: SparseSegment{Sum,Mean,SqrtN}GradV2
    sp_ids = tf.SparseTensor([[0, 0], [0, 1], [2, 0]], tf.constant([3, 0, 3], tf.int64), [3, 2])
    for comb in ("sum", "mean", "sqrtn"):
        case(f"c5_fz4_embedding_sparse_{comb}", lambda p, c=comb: tf.nn.embedding_lookup_sparse(p, sp_ids, None, combiner=c), (4, 3))
    case("c5_fz4_stateless_gamma_scalar_grad", lambda x: tf.random.stateless_gamma([], [66, 6], tf.abs(x[0]) + 0.5) * x, (3,))
    case("c5_fz4_stateless_bf16", lambda x: tf.concat([tf.cast(f([6], [54, 56], dtype=tf.bfloat16), tf.float32) for f in (
        tf.random.stateless_uniform, tf.random.stateless_normal, tf.random.stateless_truncated_normal)], 0) + x * 0, (18,), grad=False)
    case("c5_fz4_stateless_truncated_empty", lambda x: tf.random.stateless_truncated_normal([0, 3], [5, 9]) + x, (1, 3))
    case("c5_fz4_fft_empty", lambda x: tf.math.real(tf.signal.ifft(tf.signal.fft(tf.complex(x[:, :0], x[:, :0])))), (2, 3))
    # fake_quant: Vars divides by the scale (0.5 in [0, 1] at 4 bits rounds down), PerChannel
    # multiplies; a [0, 0] channel's range gradients are 0
    case("c5_fz4_fake_quant_vars_halfway", lambda x: tf.quantization.fake_quant_with_min_max_vars(
        tf.constant([0.5, 0.1, 2.0]) + x * 0, 0.0, 1.0, 4) + tf.quantization.fake_quant_with_min_max_vars(tf.constant([2.0, 0.5, 6.0]) + x * 0, -6.0, 6.0, 4), (3,))
    case("c5_fz4_fake_quant_per_channel_zero", lambda x, m: tf.quantization.fake_quant_with_min_max_vars_per_channel(
        x * 2, m * 0.0 + [0.0, -1.0, 0.0], m * 0.0 + [1.0, 1.0, 0.0], 4) * tf.constant([1.0, 1.0, nan]), (4, 3), (3,))
    # complex tanh/sigmoid gradients: TF's TanhGrad/SigmoidGrad kernels do not conjugate
    case("c5_fz4_complex_tanh_sigmoid_grad", lambda x, y: tf.math.real(tf.tanh(tf.complex(x, y)) * tf.sigmoid(tf.complex(y, x))), (2, 3), (2, 3))
    case("c5_fz4_crop_resize_boxes_outside_inf", lambda b: tf.image.crop_and_resize(
        tf.constant([[[[0.0], [1.0]], [[2.0], [inf]]]]), tf.constant([[0.0, 0.0, 2.0, 0.5]]) + b * 0.0, [0], [2, 2]), (1, 4))
    case("c5_fz4_dense_bincount_empty_rows", lambda x: tf.math.bincount(tf.cast(x[:, :0], tf.int32), minlength=3, axis=-1), (2, 3), grad=False)
    case("c5_fz4_searchsorted_nan", lambda x: tf.concat([tf.searchsorted(tf.constant([[-1.0, nan, 0.5, 1.0]]), x * 0 + [[nan, inf, -inf, 0.5, -0.0]],
                                                                         side=side) for side in ("left", "right")], 1), (1, 5), grad=False)
    # a second constant-folding pass met Consts the first appended after their consumers
    boxes = tf.constant([[0.9, 0.36, 2.7, 1.7], [0.53, 3.0, 1.96, 4.95]])
    case("c5_fz4_fold_order", lambda x: tf.math.betainc(0.7, 2.07, tf.sigmoid(x[0])) + tf.cast(tf.reduce_sum(
        tf.image.non_max_suppression_padded(boxes, tf.constant([0.5, 0.7]), 3, 0.5, 0.2, pad_to_max_output_size=True)[0]), tf.float32), (2,))
