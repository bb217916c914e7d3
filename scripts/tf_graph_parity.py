"""TF graphs with their gradients, loaded and run by specflow: each case is a ``tf.function`` of a
few TF ops (and, for float outputs, ``tf.GradientTape`` gradients of a weighted sum), traced by
TensorFlow, written as a frozen GraphDef, loaded by specflow's loader (``specflow predict``'s)
and run; every output compared with TensorFlow's (rtol 1e-4). Unlike tf_op_parity.py, which runs
the suite's kernel cases one op at a time, this checks the graphs TF itself writes: its
gradient ops (SqrtGrad, ConcatOffset, ShapeN, ListDiff...), its lowering of Python APIs
(tf.signal, tf.linalg, Keras losses, tf.scan's functional loops); then the training graphs of
Keras layers (forward, and tape gradients for the input and every weight). Run by hand in a venv that has
TensorFlow (never a dependency; ``scripts/tf_parity.sh`` prepares one):

    PYTHONPATH=. /work/scratch/tfvenv/bin/python scripts/tf_graph_parity.py [CASE or glob ...]

Prints one line per failing case and a summary; exit 1 on any failure. Batch 4
(scripts/tf_graph_parity_cases4.py, _keras4.py: 502 cases, ``c4_*``) found grouped Conv2D, NaN in
MaxPool and ArgMax/ArgMin, integer Mean's 64-bit sum, AvgPoolGrad for windows longer than the
input, and missing ops (bitwise, TensorScatterSub/Max/Min, ParallelDynamicStitch, Bucketize,
Case/StatelessCase, TensorListResize, integer stateless uniforms, tf.math.special,
CTCGreedyDecoder, ScaleAndTranslate, RaggedTensorToTensor, then StatelessRandomBinomial/Poisson/
GammaV3, Lu, MatrixSquareRoot, TridiagonalSolve, BandedTriangularSolve, Eig, ApproxTopK and the
bfloat16 dtype). Batch 5 (scripts/tf_graph_parity_cases5.py, _keras5.py: 329 cases, ``c5_*``:
dtype variants, broadcasting gradients, masks, batch dims, conv/pool/resize variants, loops and
Keras layers in training mode) found SparseSegmentSum/Mean/SqrtN, ConjugateTranspose,
TensorListGather/ScatterIntoExistingList missing and bfloat16 Mean/MatMul. TF 2.21, 2026-11-26,
TF_ENABLE_ONEDNN_OPTS=0: 1222 of 1230 cases match. Of the 8 failing, 7 are TF's own refusals with
oneDNN off (its CPU kernels lack dilated and grouped Conv2D backprops and NCHW Conv2D: conv2d_dil,
c4_conv1d_dil, c4_conv3d_dil, c4_conv2d_groups, c4_conv2d_valid_dil, c4_conv2d_t_dil,
c4_k_conv2d_cf; they match with oneDNN on, TF's default, where 1229 of 1230 match), and one is
specflow's: c5_eig_symmetric_grad (Eig's eigenvalue order: specflow's is LAPACK's, TF's is that of
Eigen's complex Schur iteration, unsorted, which specflow does not reproduce). Batch 5 also made
float16 Sigmoid round as TF's half kernel does. Its ``c5_fz_*`` cases are what
scripts/tf_fuzz_parity.py found (integer division of nothing, scalar GatherNd/Bitcast, TF's
UnsortedSegmentMax/Min start value and NaN fold, float FloorMod's zero sign, EuclideanNorm over no
axes, empty gathers, Erf at inf in float64, Relu6Grad and CumulativeLogsumexp with non-finite
values, Elu/Selu of -0.0); with them, oneDNN on, 1242 of 1243 cases match. Float16 outputs compare at rtol 1e-3
and bfloat16 at 1e-2 (a unit in their last place). Not checked: NaN order in sort/top_k
and NaN in softmax (implementation-defined: oneDNN's softmax differs from TF's own). The tfops
batch (scripts/tf_graph_parity_tfops.py: 17 cases, ``tfops_*``) covers the ops added for it:
quantize_and_dequantize (V2/V3/V4 and V4's gradient op), dilation2d/erosion2d with their
backprops, fill_empty_rows and sparse.reshape, stateless_shuffle. Batch 6
(scripts/tf_graph_parity_cases6.py: 17 cases, ``c6_*``) holds the ops branch tfops2 added (lstsq,
nth_element, edit_distance, combined NMS, volume patches, strided slice update, first forms): all match
(ExtractVolumePatches forward only: TF's gradient of it uses SparseSlice, which specflow lacks). Not covered:
StatelessMultinomial matches TF only while TF samples the batch in
one block of rows, as it does for small batches (a large batch split across TF's threads starts
each block at its own counter); CTCLossV2 (the cuDNN variant, blank 0) is not built."""

import fnmatch
import os
import sys
import tempfile

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np
import tensorflow as tf
from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from scripts.tf_graph_parity_cases4 import register as register_batch4
from scripts.tf_graph_parity_cases5 import register as register_batch5
from scripts.tf_graph_parity_cases6 import register as register_batch6
from scripts.tf_graph_parity_keras5 import SAVED5
from scripts.tf_graph_parity_tfops import register as register_tfops
from scripts.tf_parity_common import compare, run_in_specflow, tmp_path
from specflow.errors import SpecflowError
from specflow.export.loader import load_model

rng = np.random.default_rng(0)
CASES = []


def case(name, fn, *shapes, dtype="float32", grad=True, pos=False, ints=None, extra=None):
    CASES.append((name, fn, shapes, dtype, grad, pos, ints, extra))


def sample(shape, dtype, pos):
    if dtype.startswith("int"):
        return rng.integers(-5, 6, shape).astype(dtype)
    if dtype.startswith("uint"):
        return rng.integers(0, 11, shape).astype(dtype)
    if dtype == "bool":
        return rng.random(shape) > 0.5
    x = rng.standard_normal(shape)
    if pos:
        x = np.abs(x) + 0.2
    return x.astype(dtype)


# unary
for n, f, pos in [
    ("abs", tf.abs, False), ("neg", tf.negative, False), ("exp", tf.exp, False), ("log", tf.math.log, True),
    ("log1p", tf.math.log1p, True), ("expm1", tf.math.expm1, False), ("sqrt", tf.sqrt, True), ("rsqrt", tf.math.rsqrt, True),
    ("square", tf.square, False), ("sin", tf.sin, False), ("cos", tf.cos, False), ("tan", tf.tan, False),
    ("tanh", tf.tanh, False), ("sigmoid", tf.sigmoid, False), ("softplus", tf.nn.softplus, False),
    ("softsign", tf.nn.softsign, False), ("relu", tf.nn.relu, False), ("relu6", lambda x: tf.nn.relu6(x * 4), False),
    ("elu", tf.nn.elu, False), ("selu", tf.nn.selu, False), ("leaky", lambda x: tf.nn.leaky_relu(x, 0.1), False),
    ("gelu", lambda x: tf.nn.gelu(x), False), ("gelu_t", lambda x: tf.nn.gelu(x, approximate=True), False),
    ("erf", tf.math.erf, False), ("erfc", tf.math.erfc, False), ("atan", tf.atan, False), ("asinh", tf.asinh, False),
    ("acos", lambda x: tf.acos(tf.tanh(x) * 0.9), False), ("asin", lambda x: tf.asin(tf.tanh(x) * 0.9), False),
    ("atanh", lambda x: tf.atanh(tf.tanh(x) * 0.9), False), ("acosh", tf.acosh, True), ("sinh", tf.sinh, False),
    ("cosh", tf.cosh, False), ("sign", tf.sign, False), ("floor", tf.floor, False), ("ceil", tf.math.ceil, False),
    ("round", tf.round, False), ("reciprocal", tf.math.reciprocal, True), ("softmax", tf.nn.softmax, False),
    ("logsoftmax", tf.nn.log_softmax, False), ("swish", tf.nn.silu, False), ("lgamma", tf.math.lgamma, True),
    ("digamma", tf.math.digamma, True), ("l2norm", lambda x: tf.math.l2_normalize(x, axis=-1), False),
    ("clip", lambda x: tf.clip_by_value(x, -0.5, 0.7), False), ("softmax0", lambda x: tf.nn.softmax(x, axis=0), False),
    ("cumsum", lambda x: tf.cumsum(x, axis=1), False), ("cumsum_ex_rev", lambda x: tf.cumsum(x, axis=1, exclusive=True, reverse=True), False),
    ("cumprod", lambda x: tf.math.cumprod(x, axis=1), False), ("cumlse", lambda x: tf.math.cumulative_logsumexp(x, axis=1), False),
    ("is_finite_where", lambda x: tf.where(tf.math.is_finite(tf.math.log(x)), x, tf.zeros_like(x)), False),
]:
    case(n, f, (3, 5), pos=pos)

# binary with broadcasting
for n, f, pos in [
    ("add", tf.add, False), ("sub", tf.subtract, False), ("mul", tf.multiply, False), ("div", tf.divide, True),
    ("max", tf.maximum, False), ("min", tf.minimum, False), ("pow", tf.pow, True), ("sqdiff", tf.math.squared_difference, False),
    ("floordiv", tf.math.floordiv, True), ("floormod", tf.math.floormod, True), ("atan2", tf.atan2, False),
    ("divnonan", tf.math.divide_no_nan, False), ("xdivy", tf.math.xdivy, True), ("xlogy", tf.math.xlogy, True),
    ("xlog1py", tf.math.xlog1py, True), ("truncdiv", tf.truncatediv, True),
]:
    case(n + "_bc", f, (4, 1, 3), (5, 1), pos=pos)
    case(n, f, (2, 3), (2, 3), pos=pos)

for n, f in [("addi", tf.add), ("floordivi", tf.math.floordiv), ("floormodi", tf.math.floormod),
             ("truncdivi", tf.truncatediv), ("truncmodi", tf.truncatemod), ("maxi", tf.maximum)]:
    case(n, lambda x, y, f=f: f(x, tf.where(tf.equal(y, 0), tf.ones_like(y), y)), (3, 4), (3, 4), dtype="int32", grad=False)

# reductions
for n, f in [("sum", tf.reduce_sum), ("mean", tf.reduce_mean), ("max", tf.reduce_max), ("min", tf.reduce_min),
             ("prod", tf.reduce_prod), ("lse", tf.reduce_logsumexp), ("std", tf.math.reduce_std), ("var", tf.math.reduce_variance),
             ("euclid", tf.norm)]:
    case("r" + n, lambda x, f=f: f(x, axis=1), (3, 4, 5))
    case("r" + n + "_k", lambda x, f=f: f(x, axis=[0, 2], keepdims=True), (3, 4, 5))
    case("r" + n + "_all", lambda x, f=f: f(x), (3, 4))
case("argmax", lambda x: tf.cast(tf.argmax(x, axis=1), tf.float32), (4, 6), grad=False)
case("argmin", lambda x: tf.cast(tf.argmin(x, axis=0), tf.float32), (4, 6), grad=False)
case("all_any", lambda x: tf.cast(tf.reduce_any(x > 0, axis=1), tf.float32) + tf.cast(tf.reduce_all(x > -1, axis=1), tf.float32), (4, 6), grad=False)

# shapes and indexing
case("reshape", lambda x: tf.reshape(x, [4, -1]) * 2, (2, 6, 2))
case("transpose", lambda x: tf.transpose(x, [2, 0, 1]), (2, 3, 4))
case("concat", lambda x, y: tf.concat([x, y, x], axis=1), (2, 3), (2, 4))
case("stack", lambda x, y: tf.stack([x, y], axis=1), (2, 3), (2, 3))
case("unstack", lambda x: tf.unstack(x, axis=1)[1] * 3, (2, 3, 4))
case("split", lambda x: tf.split(x, [1, 3, 2], axis=1)[2], (3, 6))
case("slice", lambda x: tf.slice(x, [1, 0, 2], [2, -1, 2]), (3, 4, 5))
case("strided", lambda x: x[1:, ::2, ::-1], (3, 4, 5))
case("strided2", lambda x: x[..., 1, tf.newaxis, :3], (3, 4, 5))
case("strided3", lambda x: x[-1, 1:-1], (3, 4, 5))
case("tile", lambda x: tf.tile(x, [2, 1, 3]), (2, 3, 2))
case("pad", lambda x: tf.pad(x, [[1, 2], [0, 1]]), (3, 4))
case("pad_reflect", lambda x: tf.pad(x, [[1, 2], [2, 1]], mode="REFLECT"), (4, 5))
case("pad_symmetric", lambda x: tf.pad(x, [[1, 2], [2, 1]], mode="SYMMETRIC"), (4, 5))
case("pad_const", lambda x: tf.pad(x, [[1, 0], [0, 2]], constant_values=3.0), (4, 5))
case("gather", lambda x: tf.gather(x, [2, 0, 2, 1], axis=1), (3, 4, 2))
case("gather_bd", lambda x: tf.gather(x, [[0, 2], [1, 1], [2, 0]], axis=1, batch_dims=1), (3, 4, 2))
case("gathernd", lambda x: tf.gather_nd(x, [[0, 1], [2, 3], [0, 1]]), (3, 4, 2))
case("squeeze", lambda x: tf.squeeze(x, axis=1) * 2, (3, 1, 4))
case("expand", lambda x: tf.expand_dims(x, -1) * 2, (3, 4))
case("reverse", lambda x: tf.reverse(x, [0, 2]), (2, 3, 4))
case("roll", lambda x: tf.roll(x, shift=[1, -2], axis=[0, 1]), (3, 5))
case("bcast_to", lambda x: tf.broadcast_to(x, [4, 3, 5]), (3, 1))
case("onehot", lambda x: tf.one_hot(tf.cast(tf.abs(x) * 3, tf.int32) % 4, 4), (5,), grad=False)
case("topk", lambda x: tf.math.top_k(x, k=3).values, (4, 7))
case("topk_idx", lambda x: tf.cast(tf.math.top_k(x, k=3).indices, tf.float32), (4, 7), grad=False)
case("where", lambda x, y: tf.where(x > y, x * 2, y * 3), (3, 4), (3, 4))
case("matmul", lambda x, y: tf.matmul(x, y), (3, 4), (4, 5))
case("matmul_tt", lambda x, y: tf.matmul(x, y, transpose_a=True, transpose_b=True), (4, 3), (5, 4))
case("bmm", lambda x, y: tf.matmul(x, y), (2, 3, 4), (2, 4, 5))
case("bmm_bc", lambda x, y: tf.matmul(x, y), (2, 1, 3, 4), (3, 4, 5))
case("einsum", lambda x, y: tf.einsum("bij,bjk->bik", x, y), (2, 3, 4), (2, 4, 5))
case("einsum2", lambda x, y: tf.einsum("ij,kj->ik", x, y), (3, 4), (5, 4))
case("einsum3", lambda x: tf.einsum("bii->b", x), (2, 3, 3))
case("segsum", lambda x: tf.math.segment_sum(x, [0, 0, 1, 2, 2]), (5, 3))
case("usegsum", lambda x: tf.math.unsorted_segment_sum(x, [2, 0, 2, 1, 0], 4), (5, 3))
case("usegmax", lambda x: tf.math.unsorted_segment_max(x, [2, 0, 2, 1, 0], 3), (5, 3))
case("usegmean", lambda x: tf.math.unsorted_segment_mean(x, [2, 0, 2, 1, 0], 3), (5, 3))
case("dynstitch", lambda x: tf.dynamic_stitch([[0, 2], [1, 3]], [x[:2], x[2:]]), (4, 3))
case("bandpart", lambda x: tf.linalg.band_part(x, 1, 0), (4, 4))
case("diag", lambda x: tf.linalg.diag(x), (2, 3))
case("diagpart", lambda x: tf.linalg.diag_part(x), (2, 3, 3))
case("inverse", lambda x: tf.linalg.inv(x + 3 * tf.eye(3)), (2, 3, 3))
case("chol", lambda x: tf.linalg.cholesky(tf.matmul(x, x, transpose_b=True) + tf.eye(3)), (3, 3))
case("det", lambda x: tf.linalg.det(x + 3 * tf.eye(3)), (2, 3, 3))
case("solve", lambda x, y: tf.linalg.solve(x + 3 * tf.eye(3), y), (3, 3), (3, 2))
case("trisolve", lambda x, y: tf.linalg.triangular_solve(tf.linalg.band_part(x, -1, 0) + 3 * tf.eye(3), y), (3, 3), (3, 2))
case("cross", lambda x, y: tf.linalg.cross(x, y), (4, 3), (4, 3))
case("select_v2", lambda x: tf.where(x > 0, x, 0.5 * x), (3, 4))
case("fill_like", lambda x: x * tf.ones_like(x) + tf.zeros_like(x) + tf.fill(tf.shape(x), 2.0), (3, 4))
case("range", lambda x: x * tf.range(0.0, 4.0, 1.0), (3, 4))
case("linspace", lambda x: x * tf.linspace(-1.0, 2.0, 4), (3, 4))
case("cast_int", lambda x: tf.cast(tf.cast(x * 3, tf.int32), tf.float32), (3, 4), grad=False)
case("sort", lambda x: tf.sort(x, axis=-1, direction="DESCENDING"), (3, 5))
case("argsort", lambda x: tf.cast(tf.argsort(x, axis=-1), tf.float32), (3, 5), grad=False)
case("unique", lambda x: tf.unique(tf.cast(tf.abs(x) * 2, tf.int32)).y, (8,), grad=False)
case("moments", lambda x: sum(tf.nn.moments(x, axes=[0, 1])), (4, 3, 5))
case("bincount", lambda x: tf.cast(tf.math.bincount(tf.cast(tf.abs(x) * 2, tf.int32), minlength=5), tf.float32), (8,), grad=False)

# nn
case("conv2d_same", lambda x, f: tf.nn.conv2d(x, f, 1, "SAME"), (2, 6, 5, 3), (3, 3, 3, 4))
case("conv2d_valid_s2", lambda x, f: tf.nn.conv2d(x, f, 2, "VALID"), (2, 7, 6, 3), (3, 2, 3, 4))
case("conv2d_dil", lambda x, f: tf.nn.conv2d(x, f, 1, "SAME", dilations=2), (1, 7, 7, 2), (3, 3, 2, 3))
case("conv2d_explicit", lambda x, f: tf.nn.conv2d(x, f, 1, [[0, 0], [1, 2], [0, 1], [0, 0]]), (1, 5, 5, 2), (3, 3, 2, 3))
case("conv2d_s2_same", lambda x, f: tf.nn.conv2d(x, f, 2, "SAME"), (2, 8, 7, 3), (3, 3, 3, 2))
case("conv1d", lambda x, f: tf.nn.conv1d(x, f, 1, "SAME"), (2, 9, 3), (3, 3, 4))
case("conv3d", lambda x, f: tf.nn.conv3d(x, f, [1, 1, 1, 1, 1], "SAME"), (1, 4, 4, 4, 2), (2, 2, 2, 2, 3))
case("dwconv", lambda x, f: tf.nn.depthwise_conv2d(x, f, [1, 1, 1, 1], "SAME"), (2, 6, 6, 3), (3, 3, 3, 2))
case("dwconv_s2", lambda x, f: tf.nn.depthwise_conv2d(x, f, [1, 2, 2, 1], "VALID"), (2, 7, 7, 3), (3, 3, 3, 1))
case("conv2d_t", lambda x, f: tf.nn.conv2d_transpose(x, f, [2, 8, 8, 2], 2, "SAME"), (2, 4, 4, 3), (3, 3, 2, 3))
case("sepconv", lambda x, f, p: tf.nn.separable_conv2d(x, f, p, [1, 1, 1, 1], "SAME"), (1, 5, 5, 2), (3, 3, 2, 2), (1, 1, 4, 3))
case("maxpool", lambda x: tf.nn.max_pool2d(x, 2, 2, "VALID"), (2, 6, 6, 3))
case("maxpool_same3", lambda x: tf.nn.max_pool2d(x, 3, 2, "SAME"), (2, 7, 7, 3))
case("avgpool", lambda x: tf.nn.avg_pool2d(x, 2, 2, "VALID"), (2, 6, 6, 3))
case("avgpool_same3", lambda x: tf.nn.avg_pool2d(x, 3, 2, "SAME"), (2, 7, 7, 3))
case("maxpool3d", lambda x: tf.nn.max_pool3d(x, 2, 2, "VALID"), (1, 4, 4, 4, 2))
case("avgpool3d", lambda x: tf.nn.avg_pool3d(x, 2, 2, "SAME"), (1, 5, 4, 4, 2))
case("maxpool1d", lambda x: tf.nn.max_pool1d(x, 2, 2, "SAME"), (2, 7, 3))
case("biasadd", lambda x, b: tf.nn.bias_add(x, b), (2, 3, 4), (4,))
case("fbn_train", lambda x, s, o: tf.compat.v1.nn.fused_batch_norm(x, s, o, is_training=True)[0], (2, 3, 3, 4), (4,), (4,))
case("fbn_infer", lambda x, s, o: tf.compat.v1.nn.fused_batch_norm(x, s, o, mean=tf.constant([0.1, 0.2, -0.1, 0.0]), variance=tf.constant([1.0, 0.5, 2.0, 1.5]), is_training=False)[0], (2, 3, 3, 4), (4,), (4,))
case("batchnorm", lambda x, s, o: tf.nn.batch_normalization(x, tf.reduce_mean(x, 0), tf.math.reduce_variance(x, 0), o, s, 1e-3), (5, 4), (4,), (4,))
case("lrn", lambda x: tf.nn.local_response_normalization(x, 2, 1.0, 0.5, 0.75), (1, 3, 3, 6))
case("sxent", lambda x: tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[1, 0, 3], logits=x), (3, 4))
case("xent", lambda x, y: tf.nn.softmax_cross_entropy_with_logits(labels=tf.nn.softmax(y), logits=x), (3, 4), (3, 4))
case("sigxent", lambda x, y: tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.sigmoid(y), logits=x), (3, 4), (3, 4))
case("resize_bilinear", lambda x: tf.image.resize(x, [5, 7], "bilinear"), (1, 3, 4, 2))
case("resize_bilinear_v1ac", lambda x: tf.compat.v1.image.resize_bilinear(x, [5, 7], align_corners=True), (1, 3, 4, 2))
case("resize_nearest", lambda x: tf.image.resize(x, [6, 8], "nearest"), (1, 3, 4, 2))
case("s2d", lambda x: tf.nn.space_to_depth(x, 2), (1, 4, 4, 3))
case("d2s", lambda x: tf.nn.depth_to_space(x, 2), (1, 2, 2, 8))
case("s2b", lambda x: tf.space_to_batch_nd(x, [2, 2], [[0, 0], [1, 1]]), (1, 4, 2, 3))
case("dropout_inf", lambda x: tf.nn.dropout(x, 0.0) if False else x * 1.0, (3, 4))
case("layernorm", lambda x: (x - tf.reduce_mean(x, -1, keepdims=True)) * tf.math.rsqrt(tf.math.reduce_variance(x, -1, keepdims=True) + 1e-5), (3, 6))
case("attention", lambda q, k, v: tf.matmul(tf.nn.softmax(tf.matmul(q, k, transpose_b=True) / 2.0), v), (2, 3, 4), (2, 5, 4), (2, 5, 3))
case("while", lambda x: tf.while_loop(lambda i, a: i < 4, lambda i, a: (i + 1, tf.tanh(a * 1.1 + 0.1)), (0, x))[1], (3, 4))
case("cond", lambda x: tf.cond(tf.reduce_sum(x) > 0, lambda: x * 2, lambda: tf.sin(x)), (3, 4))
case("cond2", lambda x: tf.cond(tf.reduce_sum(x) < 0, lambda: x * 2, lambda: tf.sin(x)), (3, 4))
case("scan", lambda x: tf.scan(lambda a, e: a * 0.5 + e, x), (5, 3))
case("map_fn", lambda x: tf.map_fn(lambda r: tf.reduce_sum(r * r), x), (4, 3))
case("tensorarray", lambda x: tf.reduce_sum(tf.TensorArray(tf.float32, 3).unstack(x).stack() * 2, 0), (3, 4))

# --- batch 2 ---
case("f64_matmul", lambda x, y: tf.matmul(x, y), (3, 4), (4, 2), dtype="float64")
case("f64_softmax_xent", lambda x: tf.nn.log_softmax(x) * 2, (3, 4), dtype="float64")
case("f16_relu_mul", lambda x, y: tf.nn.relu(x) * y, (3, 4), (3, 4), dtype="float16")
case("i64_ops", lambda x, y: tf.cast(tf.math.floormod(x, tf.where(y == 0, tf.ones_like(y), y)) + tf.abs(x) * 2 - tf.maximum(x, y), tf.float32), (3, 4), (3, 4), dtype="int64", grad=False)
case("searchsorted", lambda x: tf.cast(tf.searchsorted(tf.sort(x[0]), x[1]), tf.float32), (2, 6), grad=False)
case("histogram", lambda x: tf.cast(tf.histogram_fixed_width(x, [-2.0, 2.0], nbins=5), tf.float32), (20,), grad=False)
case("in_top_k", lambda x: tf.cast(tf.math.in_top_k([1, 0, 3], x, 2), tf.float32), (3, 4), grad=False)
case("embedding", lambda x: tf.nn.embedding_lookup(x, [[0, 2], [3, 3]]), (5, 3), grad=False)
case("embedding_g", lambda x: tf.nn.embedding_lookup(x * 1.0, [[0, 2], [3, 3]]) * 2, (5, 3))
case("segmean", lambda x: tf.math.segment_mean(x, [0, 0, 1, 1, 1]), (5, 3))
case("segmax", lambda x: tf.math.segment_max(x, [0, 0, 1, 1, 1]), (5, 3))
case("usegprod", lambda x: tf.math.unsorted_segment_prod(x, [1, 0, 1, 0, 2], 3), (5, 3))
case("crop_resize", lambda x: tf.image.crop_and_resize(x, [[0.1, 0.1, 0.8, 0.9], [0.0, 0.2, 1.0, 0.7]], [0, 1], [3, 4]), (2, 6, 6, 2))
case("resize_bicubic", lambda x: tf.image.resize(x, [5, 7], "bicubic"), (1, 3, 4, 2))
case("resize_area", lambda x: tf.image.resize(x, [2, 3], "area"), (1, 4, 6, 2), grad=False)
case("fft", lambda x: tf.math.real(tf.signal.fft(tf.complex(x, x * 0.5))), (3, 8))
case("rfft", lambda x: tf.abs(tf.signal.rfft(x)), (3, 8))
case("complex_ops", lambda x, y: tf.math.real(tf.complex(x, y) * tf.math.conj(tf.complex(y, x))) + tf.math.imag(tf.complex(x, y)), (3, 4), (3, 4))
case("angle_abs_c", lambda x, y: tf.math.angle(tf.complex(x, y)) + tf.abs(tf.complex(x, y)), (3, 4), (3, 4))
case("matrix_band", lambda x: tf.linalg.band_part(x, 0, 1) @ tf.transpose(x), (4, 4))
case("logdet", lambda x: tf.linalg.logdet(tf.matmul(x, x, transpose_b=True) + tf.eye(3)), (3, 3))
case("slogdet", lambda x: tf.linalg.slogdet(x + 3 * tf.eye(3))[1], (2, 3, 3))
case("eigh", lambda x: tf.linalg.eigh(x + tf.transpose(x))[0], (3, 3))
case("svd", lambda x: tf.linalg.svd(x, compute_uv=False), (4, 3))
case("qr", lambda x: tf.linalg.qr(x)[1], (4, 3))
case("trace", lambda x: tf.linalg.trace(x), (2, 3, 3))
case("tensordot", lambda x, y: tf.tensordot(x, y, [[1, 2], [0, 1]]), (2, 3, 4), (3, 4, 5))
case("norm_fro", lambda x: tf.norm(x, ord="fro", axis=[-2, -1]), (2, 3, 4))
case("norm_1", lambda x: tf.norm(x, ord=1, axis=-1), (3, 4))
case("norm_inf", lambda x: tf.norm(x, ord=np.inf, axis=-1), (3, 4))
case("cosine", lambda x, y: tf.reduce_sum(tf.math.l2_normalize(x, -1) * tf.math.l2_normalize(y, -1), -1), (3, 4), (3, 4))
case("huber", lambda x, y: tf.keras.losses.Huber()(x, y), (3, 4), (3, 4))
case("kld", lambda x, y: tf.keras.losses.KLDivergence()(tf.nn.softmax(x), tf.nn.softmax(y)), (3, 4), (3, 4))
case("bce", lambda x, y: tf.keras.losses.BinaryCrossentropy(from_logits=True)(tf.sigmoid(y), x), (3, 4), (3, 4))
case("cce_ls", lambda x, y: tf.keras.losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1)(tf.nn.softmax(y), x), (3, 4), (3, 4))
case("scce", lambda x: tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)(tf.constant([1, 0, 3]), x), (3, 4))
case("mse_mae", lambda x, y: tf.keras.losses.MSE(x, y) + tf.keras.losses.MAE(x, y), (3, 4), (3, 4))
case("ctc_free", lambda x: tf.reduce_logsumexp(x, axis=-1), (3, 4, 5))
case("scatter_nd", lambda x: tf.scatter_nd([[1], [3], [1]], x, [5, 2]), (3, 2))
case("tensor_scatter_add", lambda x, y: tf.tensor_scatter_nd_add(x, [[0], [2]], y), (4, 3), (2, 3))
case("tensor_scatter_upd", lambda x, y: tf.tensor_scatter_nd_update(x, [[0], [2]], y), (4, 3), (2, 3))
case("gather_neg_axis", lambda x: tf.gather(x, [1, 0], axis=-1), (2, 3, 2))
case("boolean_mask", lambda x: tf.boolean_mask(x, x[:, 0] > 0), (5, 3))
case("where_idx", lambda x: tf.cast(tf.where(x > 0), tf.float32), (3, 4), grad=False)
case("reverse_seq", lambda x: tf.reverse_sequence(x, [2, 3, 1], seq_axis=1, batch_axis=0), (3, 4, 2))
case("mirror_pad_grad", lambda x: tf.pad(x, [[0, 0], [2, 2], [1, 1], [0, 0]], mode="REFLECT"), (1, 4, 4, 2))
case("extract_patches", lambda x: tf.image.extract_patches(x, [1, 2, 2, 1], [1, 2, 2, 1], [1, 1, 1, 1], "VALID"), (1, 4, 4, 2))
case("avgpool1d", lambda x: tf.nn.avg_pool1d(x, 3, 2, "SAME"), (2, 7, 3))
case("conv1d_t", lambda x, f: tf.nn.conv1d_transpose(x, f, [2, 8, 2], 2, "SAME"), (2, 4, 3), (3, 2, 3))
case("conv3d_t", lambda x, f: tf.nn.conv3d_transpose(x, f, [1, 4, 4, 4, 2], 2, "SAME"), (1, 2, 2, 2, 3), (2, 2, 2, 2, 3))
case("dw_dil", lambda x, f: tf.nn.depthwise_conv2d(x, f, [1, 1, 1, 1], "SAME", dilations=[2, 2]), (1, 7, 7, 2), (3, 3, 2, 2))
case("maxpool_argmax", lambda x: tf.nn.max_pool_with_argmax(x, 2, 2, "SAME")[0], (1, 5, 5, 2))
case("frac", lambda x: tf.math.floormod(x, 1.0) + tf.math.rint(x), (3, 4))
case("sigmoid_stable", lambda x: tf.math.log_sigmoid(x * 30), (3, 4))
case("softmax_3d", lambda x: tf.nn.softmax(x, axis=1), (2, 3, 4))
case("logsumexp_k", lambda x: tf.reduce_logsumexp(x * 50, axis=[1], keepdims=True), (3, 4))
case("clip_norm", lambda x: tf.clip_by_norm(x, 1.0), (3, 4))
case("clip_global", lambda x, y: tf.clip_by_global_norm([x, y], 1.0)[0][1], (3, 4), (2,))
case("nested_cond_while", lambda x: tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, tf.cond(tf.reduce_sum(a) > 0, lambda: a * 0.5, lambda: a + 1.0)), (0, x))[1], (3, 4))
case("while_dyn", lambda x: tf.while_loop(lambda a: tf.reduce_sum(tf.abs(a)) > 1.0, lambda a: (a * 0.5,), (x,), maximum_iterations=20)[0], (3, 4))
case("foldl", lambda x: tf.foldl(lambda a, e: a * 0.9 + tf.sin(e), x), (5, 3))
case("vectorized_map", lambda x: tf.vectorized_map(lambda r: tf.reduce_sum(r * r), x), (4, 3))
case("einsum_bh", lambda q, k: tf.einsum("bqhd,bkhd->bhqk", q, k), (2, 3, 2, 4), (2, 5, 2, 4))
case("einsum_outer", lambda x, y: tf.einsum("i,j->ij", x, y), (3,), (4,))
case("cumsum_rev", lambda x: tf.cumsum(x, axis=0, reverse=True), (4, 3))
case("top_k_sorted", lambda x: tf.math.top_k(x, k=4, sorted=True).values, (3, 6))
case("squeeze_all", lambda x: tf.squeeze(x) * 2, (1, 3, 1, 2))
case("size_rank", lambda x: x * tf.cast(tf.size(x), tf.float32) + tf.cast(tf.rank(x), tf.float32), (3, 4))
case("stop_grad", lambda x: x * tf.stop_gradient(x), (3, 4))
case("identity_n", lambda x, y: tf.identity_n([x, y])[0] * tf.identity_n([x, y])[1], (3, 4), (3, 4))
case("shape_dyn", lambda x: tf.reshape(x, tf.concat([tf.shape(x)[:1], [-1]], 0)), (3, 2, 2))

case("irfft", lambda x, y: tf.signal.irfft(tf.complex(x, y)), (3, 5), (3, 5))
case("irfft_len", lambda x, y: tf.signal.irfft(tf.complex(x, y), fft_length=[7]), (3, 5), (3, 5), grad=False)
case("rfft_len", lambda x: tf.abs(tf.signal.rfft(x, fft_length=[6])) + tf.math.real(tf.signal.rfft(x, fft_length=[10])[..., :4]), (3, 8), grad=False)
case("fft2d", lambda x, y: tf.math.imag(tf.signal.fft2d(tf.complex(x, y))), (2, 3, 4), (2, 3, 4))
case("ifft", lambda x, y: tf.math.real(tf.signal.ifft(tf.complex(x, y))) * 3, (3, 4), (3, 4))
case("rfft2d", lambda x: tf.math.real(tf.signal.rfft2d(x)) + tf.math.imag(tf.signal.rfft2d(x)), (2, 4, 6))
case("irfft2d", lambda x, y: tf.signal.irfft2d(tf.complex(x, y)), (2, 4, 3), (2, 4, 3))
case("stft_like", lambda x: tf.abs(tf.signal.rfft(tf.signal.frame(x, 4, 2) * tf.signal.hann_window(4))), (2, 12))

# --- tf.image, tf.sparse, tf.random.stateless_*, special functions, quantization -------------
case("rgb_to_gray", lambda x: tf.image.rgb_to_grayscale(x), (1, 3, 3, 3))
case("rgb_to_hsv", lambda x: tf.image.rgb_to_hsv(tf.sigmoid(x)), (1, 3, 3, 3), grad=False)
case("hsv_to_rgb", lambda x: tf.image.hsv_to_rgb(tf.sigmoid(x)), (1, 3, 3, 3), grad=False)
case("adjust_contrast", lambda x: tf.image.adjust_contrast(x, 1.5), (1, 3, 3, 3), grad=False)
case("adjust_saturation", lambda x: tf.image.adjust_saturation(tf.sigmoid(x), 1.5), (1, 3, 3, 3), grad=False)
case("adjust_hue", lambda x: tf.image.adjust_hue(tf.sigmoid(x), 0.2), (1, 3, 3, 3), grad=False)
case("rgb_to_hsv_grad", lambda x: tf.image.rgb_to_hsv(tf.sigmoid(x)), (1, 3, 3, 3))
case("per_image_std", lambda x: tf.image.per_image_standardization(x), (2, 3, 3, 3))
case("sobel", lambda x: tf.image.sobel_edges(x), (1, 5, 5, 1))
case("flip_rot", lambda x: tf.image.rot90(tf.image.flip_left_right(x), 1), (1, 3, 4, 2))
case("central_crop", lambda x: tf.image.central_crop(x, 0.5), (1, 6, 6, 2))
case("resize_pad", lambda x: tf.image.resize_with_pad(x, 5, 7), (1, 3, 4, 2))
case("image_gradients", lambda x: tf.image.image_gradients(x)[0], (1, 4, 4, 2))
case("total_variation", lambda x: tf.image.total_variation(x), (2, 4, 4, 2))
case("psnr_ssim", lambda x, y: tf.image.psnr(tf.sigmoid(x), tf.sigmoid(y), 1.0), (1, 8, 8, 1), (1, 8, 8, 1))
case("ssim", lambda x, y: tf.image.ssim(tf.sigmoid(x), tf.sigmoid(y), 1.0, filter_size=3), (1, 8, 8, 1), (1, 8, 8, 1))
case("nms", lambda x: tf.cast(tf.image.non_max_suppression(tf.sort(tf.abs(x), axis=1), tf.sigmoid(x[:, 0]), 3, 0.5), tf.float32), (6, 4), grad=False)
case("nms_pad", lambda x: tf.cast(tf.image.non_max_suppression_padded(tf.sort(tf.abs(x), axis=1), tf.sigmoid(x[:, 0]), 3, 0.5, pad_to_max_output_size=True)[0], tf.float32), (6, 4), grad=False)
case("nms_soft", lambda x: tf.image.non_max_suppression_with_scores(tf.sort(tf.abs(x), axis=1), tf.sigmoid(x[:, 0]), 4, 0.5,
                                                                      soft_nms_sigma=0.5)[1], (6, 4), grad=False)
case("draw", lambda x: tf.image.draw_bounding_boxes(x, [[[0.1, 0.1, 0.6, 0.7]]], [[1.0, 0.0, 0.0, 1.0]]), (1, 5, 5, 3), grad=False)
case("sparse_to_dense", lambda x: tf.sparse.to_dense(tf.sparse.SparseTensor([[0, 1], [2, 3]], x[0, :2], [3, 4])), (2, 3))
case("sparse_matmul", lambda x, y: tf.sparse.sparse_dense_matmul(tf.sparse.SparseTensor([[0, 1], [2, 0]], x[0, :2], [3, 2]), y), (2, 3), (2, 4))
case("sparse_reduce_sparse", lambda x: tf.sparse.reduce_sum(tf.sparse.SparseTensor([[0, 1], [2, 0], [2, 1]], x[0, :3], [3, 2]),
                                                            axis=1, output_is_sparse=True).values, (2, 3), grad=False)
case("sparse_reduce", lambda x: tf.sparse.reduce_sum(tf.sparse.SparseTensor([[0, 1], [2, 0]], x[0, :2], [3, 2]), axis=1), (2, 3))
case("ctc", lambda x: tf.nn.ctc_loss(tf.constant([[1, 2], [2, 1]]), x, tf.constant([2, 2]), tf.constant([5, 5]), logits_time_major=False, blank_index=0), (2, 5, 4))
case("ctc_v1", lambda x: tf.compat.v1.nn.ctc_loss(tf.sparse.SparseTensor([[0, 0], [0, 1], [1, 0]], tf.constant([1, 2, 2]), [2, 2]),
                                                  x, tf.constant([5, 4]), time_major=False), (2, 5, 4))
case("expm", lambda x: tf.linalg.expm(x * 0.3), (3, 3))
case("lstsq", lambda x, y: tf.linalg.lstsq(x, y), (4, 3), (4, 2))
case("pinv", lambda x: tf.linalg.pinv(x), (4, 3), grad=False)
case("matrix_rank", lambda x: tf.cast(tf.linalg.matrix_rank(x), tf.float32), (4, 3), grad=False)
case("sqrt_n", lambda x: tf.math.unsorted_segment_sqrt_n(x, [0, 1, 0, 2], 3), (4, 3))
case("bessel", lambda x: tf.math.bessel_i0e(x) + tf.math.bessel_i1e(x), (3, 4))
case("igamma", lambda x, y: tf.math.igamma(tf.abs(x) + 0.5, tf.abs(y) + 0.5), (3, 4), (3, 4), grad=False)
case("betainc", lambda x: tf.math.betainc(tf.ones_like(x), tf.ones_like(x) * 2, tf.sigmoid(x)), (3, 4), grad=False)
case("zeta", lambda x: tf.math.zeta(tf.abs(x) + 2, tf.abs(x) + 1), (3, 4), grad=False)
case("igamma_grad", lambda x, y: tf.math.igamma(tf.abs(x) + 0.5, tf.abs(y) + 0.5) + tf.math.igammac(tf.abs(y) + 1, tf.abs(x)),
     (3, 4), (3, 4))
case("betainc_grad", lambda x: tf.math.betainc(tf.ones_like(x) * 1.5, tf.ones_like(x) * 2, tf.sigmoid(x)), (3, 4))
case("zeta_grad", lambda x: tf.math.zeta(tf.ones_like(x) * 3, tf.abs(x) + 1), (3, 4))
case("erfinv", lambda x: tf.math.erfinv(tf.tanh(x) * 0.9), (3, 4))
case("ndtri", lambda x: tf.math.ndtri(tf.sigmoid(x)), (3, 4))
case("nextafter", lambda x, y: tf.math.nextafter(x, y), (3, 4), (3, 4), grad=False)
case("round_trip_bitcast", lambda x: tf.bitcast(tf.bitcast(x, tf.int32), tf.float32) * 2, (3, 4))
case("random_stateless", lambda x: x * tf.random.stateless_uniform([3, 4], seed=[1, 2]), (3, 4))
case("random_stateless_normal", lambda x: x * tf.random.stateless_normal([3, 4], seed=[1, 2]), (3, 4))
case("stateless_trunc", lambda x: x * tf.random.stateless_truncated_normal([3, 4], seed=[3, 4]), (3, 4))
case("stateless_cat", lambda x: tf.cast(tf.random.stateless_categorical(x, 5, seed=[1, 2]), tf.float32), (3, 4), grad=False)
case("uniq_counts", lambda x: tf.cast(tf.unique_with_counts(tf.cast(tf.abs(x) * 2, tf.int32))[2], tf.float32), (8,), grad=False)
case("sets", lambda x: tf.cast(tf.sets.size(tf.sets.intersection(tf.cast(x > 0, tf.int32)[None], tf.ones((1, 4), tf.int32))), tf.float32), (4,), grad=False)
case("matrix_diag_bands", lambda x: tf.linalg.diag(x, k=(-1, 1)), (3, 3))
case("tridiag", lambda x, y: tf.linalg.tridiagonal_matmul(x, y), (3, 4), (4, 2))
case("adjoint", lambda x: tf.linalg.adjoint(x) * 2, (2, 3))
case("l2loss", lambda x: tf.nn.l2_loss(x), (3, 4))
case("log_poisson", lambda x, y: tf.nn.log_poisson_loss(tf.abs(y), x), (3, 4), (3, 4))
case("weighted_ce", lambda x, y: tf.nn.weighted_cross_entropy_with_logits(tf.sigmoid(y), x, 2.0), (3, 4), (3, 4))
case("sampled", lambda x: tf.nn.compute_average_loss(tf.reduce_sum(x, -1)), (3, 4))
case("fractional", lambda x: tf.math.reduce_euclidean_norm(x, 1), (3, 4))
case("gather_nd_bd", lambda x: tf.gather_nd(x, [[1], [0]], batch_dims=1), (2, 3, 2))
case("one_hot_axis", lambda x: tf.one_hot(tf.cast(tf.abs(x) * 2, tf.int32) % 3, 3, axis=0), (4,), grad=False)
case("quantize", lambda x: tf.quantization.fake_quant_with_min_max_args(x, -1.0, 1.0), (3, 4))
case("quantize_vars", lambda x: tf.quantization.fake_quant_with_min_max_vars(x, -1.0, 1.0), (3, 4))
case("quantize_channels", lambda x: tf.quantization.fake_quant_with_min_max_vars_per_channel(
    x, [-1.0, -0.5, 0.0, -2.0], [1.0, 0.5, 1.0, 2.0], num_bits=4), (3, 4))
case("clip_by_avg_norm", lambda x: x / tf.maximum(tf.norm(x), 1.0), (3, 4))
case("random_shuffle_free", lambda x: tf.sort(tf.reshape(x, [-1])), (3, 4))
# batch 4 (scripts/tf_graph_parity_cases4.py) registers its cases and Keras layers below KERAS


def run_case(name, fn, shapes, dtype, grad, pos, ints, extra, tmp):
    xs = [sample(s, dtype, pos) for s in shapes]
    specs = [tf.TensorSpec(s, dtype) for s in shapes]

    @tf.function(input_signature=specs)
    def f(*args):
        with tf.GradientTape() as tape:
            for a in args:
                tape.watch(a)
            y = fn(*args)
            w = tf.cast(tf.reshape(tf.range(tf.size(y)), tf.shape(y)) % 5, y.dtype) * 0.3 - 0.5 if y.dtype.is_floating else None
            loss = tf.reduce_sum(y * w) if w is not None else None
        outs = [y]
        if grad and loss is not None:
            gs = tape.gradient(loss, list(args))
            outs += [tf.convert_to_tensor(g) if g is not None else tf.zeros_like(a) for g, a in zip(gs, args)]
        return outs

    cf = f.get_concrete_function()
    want = [t.numpy() for t in f(*[tf.constant(x) for x in xs])]
    got = run_in_specflow(cf, xs, tmp_path(tmp, name))
    return compare(dict(enumerate(got)), dict(enumerate(want)))


# --- Keras layers' training graphs: forward, and tape gradients for the input and every weight --
# Frozen by TF's convert_variables_to_constants_v2; the layers whose graphs TF cannot freeze
# (variable assigns, VariableShape in loops: batch norm in training, the RNNs) go through a
# SavedModel with their variables instead (``SAVED``).

L = tf.keras.layers
KERAS = [
    ("dense", lambda: L.Dense(5, activation="gelu"), (3, 4), {}),
    ("conv2d", lambda: L.Conv2D(4, 3, padding="same", activation="relu"), (2, 6, 6, 3), {}),
    ("conv2d_s2", lambda: L.Conv2D(4, 3, strides=2, dilation_rate=1), (2, 7, 7, 3), {}),
    ("conv2d_dil", lambda: L.Conv2D(2, 3, dilation_rate=2, padding="same"), (1, 7, 7, 2), {}),
    ("conv1d", lambda: L.Conv1D(4, 3, padding="causal"), (2, 8, 3), {}),
    ("conv3d", lambda: L.Conv3D(2, 2), (1, 4, 4, 4, 2), {}),
    ("dwconv", lambda: L.DepthwiseConv2D(3, padding="same", depth_multiplier=2), (2, 5, 5, 3), {}),
    ("sepconv", lambda: L.SeparableConv2D(4, 3, padding="same"), (2, 5, 5, 3), {}),
    ("conv2dT", lambda: L.Conv2DTranspose(3, 3, strides=2, padding="same"), (2, 4, 4, 2), {}),
    ("bn_train", lambda: L.BatchNormalization(), (4, 3, 3, 2), {"training": True}),
    ("bn_infer", lambda: L.BatchNormalization(), (4, 5), {"training": False}),
    ("layernorm", lambda: L.LayerNormalization(), (3, 4, 5), {}),
    ("groupnorm", lambda: L.GroupNormalization(groups=2), (2, 4, 4, 4), {}),
    ("lstm", lambda: L.LSTM(4, return_sequences=True), (2, 5, 3), {}),
    ("gru", lambda: L.GRU(4), (2, 5, 3), {}),
    ("simplernn", lambda: L.SimpleRNN(4), (2, 5, 3), {}),
    ("bilstm", lambda: L.Bidirectional(L.LSTM(3)), (2, 4, 3), {}),
    ("mha", lambda: L.MultiHeadAttention(num_heads=2, key_dim=3), (2, 4, 6), {"self": True}),
    ("attention", lambda: L.Attention(), (2, 4, 6), {"pair": True}),
    ("maxpool", lambda: L.MaxPooling2D(2), (2, 6, 6, 3), {}),
    ("avgpool", lambda: L.AveragePooling2D(3, strides=2, padding="same"), (2, 7, 7, 3), {}),
    ("gap", lambda: L.GlobalAveragePooling2D(), (2, 4, 4, 3), {}),
    ("gmp1d", lambda: L.GlobalMaxPooling1D(), (2, 6, 3), {}),
    ("upsample", lambda: L.UpSampling2D(2, interpolation="bilinear"), (1, 3, 3, 2), {}),
    ("upsample_nn", lambda: L.UpSampling2D(2), (1, 3, 3, 2), {}),
    ("zeropad", lambda: L.ZeroPadding2D(((1, 0), (2, 1))), (1, 3, 3, 2), {}),
    ("cropping", lambda: L.Cropping2D(((1, 0), (0, 1))), (1, 4, 4, 2), {}),
    ("prelu", lambda: L.PReLU(), (3, 4), {}),
    ("elu", lambda: L.ELU(0.5), (3, 4), {}),
    ("softmax_l", lambda: L.Softmax(axis=1), (2, 3, 4), {}),
    ("embedding", lambda: L.Embedding(10, 3), (2, 4), {"ints": 10}),
    ("reshape_flat", lambda: L.Flatten(), (2, 3, 4), {}),
    ("permute", lambda: L.Permute((2, 1)), (2, 3, 4), {}),
    ("repeat", lambda: L.RepeatVector(3), (2, 4), {}),
    ("dropout_eval", lambda: L.Dropout(0.5), (3, 4), {"training": False}),
    ("spatialdrop_eval", lambda: L.SpatialDropout2D(0.5), (1, 3, 3, 2), {"training": False}),
    ("conv_lstm", lambda: L.ConvLSTM1D(2, 2), (1, 3, 5, 2), {}),
    ("timedist", lambda: L.TimeDistributed(L.Dense(3)), (2, 4, 5), {}),
    ("unitnorm", lambda: L.UnitNormalization(), (3, 4), {}),
]

KERAS += register_batch4(case)
KERAS += register_batch5(case)
register_tfops(case)  # the ops of the tfops batch (scripts/tf_graph_parity_tfops.py)
KERAS += register_batch6(case)
SAVED = {"bn_train", "lstm", "gru", "simplernn", "bilstm", "conv_lstm", "c4_k_gru_v1", "c4_k_lstm_state", "c4_k_lstm_mask",
         "c4_k_gru_goback", "c4_k_bigru_concat", "c4_m_text_lstm", "c4_m_gru_stack", "c4_k_lstm_unroll", "c4_k_masking_gru",
         "c4_k_simplernn_state", "c4_k_bilstm_seq", "c4_k_convlstm2d"} | SAVED5


def keras_call(layer, t, opts):
    if opts.get("self"):
        return layer(t, t)
    if opts.get("pair"):
        return layer([t, t * 0.5 + 0.1])
    if opts.get("mask"):
        return layer(t, t, attention_mask=tf.constant(np.tril(np.ones((t.shape[1], t.shape[1]), bool))[None]))
    if opts.get("causal_pair"):
        return layer([t, t * 0.5 + 0.1], use_causal_mask=True)
    if opts.get("causal"):
        return layer(t, t, use_causal_mask=True)
    if opts.get("zero_tail"):  # the last two steps of the second sequence masked out (all zeros)
        return layer(t * tf.constant(np.array([1, 1, 1, 1, 1] + [1, 1, 1, 0, 0], np.float32).reshape(2, 5, 1)))
    if opts.get("first"):
        return layer(t)[0]
    if "training" in opts:
        return layer(t, training=opts["training"])
    return layer(t)


def run_keras(name, make, shape, opts, tmp):
    layer = make()
    if opts.get("ints"):
        x = rng.integers(0, opts["ints"], shape).astype(np.int32)
        spec = tf.TensorSpec(shape, tf.int32)
    else:
        x = rng.standard_normal(shape).astype(np.float32)
        spec = tf.TensorSpec(shape, tf.float32)
    def call(t):
        return keras_call(layer, t, opts)
    call(tf.constant(x))  # build
    weights = layer.trainable_variables

    @tf.function(input_signature=[spec])
    def f(t):
        with tf.GradientTape() as tape:
            if t.dtype.is_floating:
                tape.watch(t)
            y = call(t)
            if not y.dtype.is_floating:
                return [y]
            w = tf.cast(tf.reshape(tf.range(tf.size(y)), tf.shape(y)) % 7, y.dtype) * 0.3 - 0.9
            loss = tf.reduce_sum(y * w)
        srcs = ([t] if t.dtype.is_floating else []) + list(weights)
        gs = tape.gradient(loss, srcs)
        return [y] + [tf.convert_to_tensor(g) if g is not None else tf.zeros_like(s) for g, s in zip(gs, srcs)]

    cf = f.get_concrete_function()
    frozen = convert_variables_to_constants_v2(cf)
    want = [t.numpy() for t in frozen(tf.constant(x))]
    got = run_in_specflow(frozen, [x], tmp_path(tmp, name))
    return compare(dict(enumerate(got)), dict(enumerate(want)))


def run_saved(name, make, shape, opts, tmp):
    layer = make()
    if opts.get("ints"):
        x = rng.integers(0, opts["ints"], shape).astype(np.int32)
    else:
        x = rng.standard_normal(shape).astype(np.float32)
    def call(t):
        return keras_call(layer, t, opts)
    call(tf.constant(x))
    m = tf.Module()
    m.layer = layer
    @tf.function(input_signature=[tf.TensorSpec(shape, x.dtype)])
    def f(t):
        with tf.GradientTape() as tape:
            if t.dtype.is_floating:
                tape.watch(t)
            y = call(t)
            w = tf.cast(tf.reshape(tf.range(tf.size(y)), tf.shape(y)) % 7, y.dtype) * 0.3 - 0.9
            loss = tf.reduce_sum(y * w)
        srcs = ([t] if t.dtype.is_floating else []) + list(layer.trainable_variables)
        gs = tape.gradient(loss, srcs)
        return {f"o{i}": tf.convert_to_tensor(g) for i, g in enumerate([y] + gs)}
    m.f = f
    path = os.path.join(tmp, name)
    tf.saved_model.save(m, path, signatures={"serving_default": f})
    want = {k: v.numpy() for k, v in tf.saved_model.load(path).signatures["serving_default"](t=tf.constant(x)).items()}
    with load_model(path) as lm:
        got = lm.run("serving_default", {"t": x})
    return compare(got, want)



if __name__ == "__main__":
    pick = sys.argv[1:]
    tmp = tempfile.mkdtemp()
    fails = 0
    everything = [(c[0], run_case, c) for c in CASES] + [
        (c[0], run_saved if c[0] in SAVED else run_keras, c) for c in KERAS
    ]
    for name, fn, c in everything:
        if pick and not any(fnmatch.fnmatchcase(name, p) for p in pick):
            continue
        try:
            bad = fn(*c, tmp)
        except SpecflowError as e:
            bad = [f"specflow error: {e}"[:300]]
        except Exception as e:
            bad = [f"EXC {type(e).__name__}: {e}"[:300]]
        if bad:
            fails += 1
            print(f"FAIL {name}: {'; '.join(bad)}", flush=True)
    print(f"{len(everything)} cases, {fails} failing")
    sys.exit(1 if fails else 0)
