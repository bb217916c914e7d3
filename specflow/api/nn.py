"""``sf.nn``: TensorFlow's tf.nn names with its signatures, on the registered ops (activations,
convolution and pooling, losses, moments and batch normalization, dropout), composed as
TensorFlow composes them where it has no single op (gelu, moments, batch_normalization,
sigmoid cross-entropy), so values and gradients agree with it."""

from __future__ import annotations

import numpy as np

from specflow.api import tf_names
from specflow.api.op_functions import call
from specflow.api.tensor import Tensor
from specflow.api.tf_math_names import (  # noqa: F401 (tf.math has them too; sf.nn re-exports)
    in_top_k,
    l2_normalize,
    log_softmax,
    softmax,
    softsign,
    zero_fraction,
)
from specflow.api.tf_names import (
    _t,
    cast,
    expand_dims,
    random_uniform,
    reduce_mean,
    shape,
    squeeze,
    stop_gradient,
    top_k,  # noqa: F401 (tf.nn.top_k)
    transpose,
)


def _unary(op: str, pyname: str):
    def fn(features, name: str | None = None):
        return call(op, _t(features), name=name)

    fn.__name__ = pyname
    fn.__doc__ = f"TensorFlow's ``tf.nn.{pyname}``: the {op} op."
    return fn


relu = _unary("Relu", "relu")
relu6 = _unary("Relu6", "relu6")
elu = _unary("Elu", "elu")
selu = _unary("Selu", "selu")
softplus = _unary("Softplus", "softplus")
sigmoid = tf_names.sigmoid  # (x, as TF's tf.nn.sigmoid and tf.nn.tanh name it)
tanh = tf_names.tanh


def leaky_relu(features, alpha: float = 0.2, name: str | None = None):
    return call("LeakyRelu", _t(features), alpha=float(alpha), name=name)


def silu(features, beta: float = 1.0, name: str | None = None):
    x = _t(features)
    return x * call("Sigmoid", x if beta == 1.0 else x * beta)


swish = silu


def gelu(features, approximate: bool = False, name: str | None = None):
    """0.5 x (1 + erf(x / sqrt 2)); with ``approximate`` the tanh form (TensorFlow's formulas)."""
    x = _t(features)
    if approximate:
        inner = (x + 0.044715 * x * x * x) * np.sqrt(2.0 / np.pi)
        return 0.5 * x * (1.0 + call("Tanh", inner))
    return 0.5 * x * (1.0 + call("Erf", x * (1.0 / np.sqrt(2.0))))


def _four(v, name: str) -> list[int]:
    v = [int(s) for s in np.atleast_1d(v)]
    if len(v) == 1:
        return [1, v[0], v[0], 1]
    if len(v) == 2:
        return [1, v[0], v[1], 1]
    if len(v) == 4:
        return v
    raise ValueError(f"{name} must be 1, 2 or 4 ints, got {v}")


def conv2d(input, filters, strides, padding, data_format: str = "NHWC", dilations=None,  # noqa: A002
           name: str | None = None):
    if isinstance(padding, (list, tuple)):
        pads = [int(p) for pair in padding for p in pair]
        return call("Conv2D", _t(input), filters, strides=_four(strides, "strides"), padding="EXPLICIT",
                    explicit_paddings=pads, data_format=data_format,
                    dilations=_four(1 if dilations is None else dilations, "dilations"), name=name)
    return call("Conv2D", _t(input), filters, strides=_four(strides, "strides"), padding=padding,
                data_format=data_format, dilations=_four(1 if dilations is None else dilations, "dilations"),
                name=name)


def conv1d(input, filters, stride, padding, data_format: str = "NWC", dilations=None,  # noqa: A002
           name: str | None = None):
    """As TensorFlow does it: a Conv2D over an added height of 1."""
    x = expand_dims(input, 1)
    f = expand_dims(filters, 0)
    d = 1 if dilations is None else int(np.atleast_1d(dilations)[-1])
    out = call("Conv2D", x, f, strides=[1, 1, int(np.atleast_1d(stride)[-1]), 1], padding=padding,
               dilations=[1, 1, d, 1])
    return squeeze(out, [1], name=name)


def conv2d_transpose(input, filters, output_shape, strides, padding: str = "SAME",  # noqa: A002
                     data_format: str = "NHWC", dilations=None, name: str | None = None):
    out = output_shape if isinstance(output_shape, Tensor) else np.asarray(output_shape, np.int32)
    return call("Conv2DBackpropInput", out, filters, _t(input), strides=_four(strides, "strides"), padding=padding,
                data_format=data_format, dilations=_four(1 if dilations is None else dilations, "dilations"),
                name=name)


def max_pool2d(input, ksize, strides, padding, data_format: str = "NHWC", name: str | None = None):  # noqa: A002
    return call("MaxPool", _t(input), ksize=_four(ksize, "ksize"), strides=_four(strides, "strides"),
                padding=padding, data_format=data_format, name=name)


def avg_pool2d(input, ksize, strides, padding, data_format: str = "NHWC", name: str | None = None):  # noqa: A002
    return call("AvgPool", _t(input), ksize=_four(ksize, "ksize"), strides=_four(strides, "strides"),
                padding=padding, data_format=data_format, name=name)





def bias_add(value, bias, data_format: str | None = None, name: str | None = None):
    return call("BiasAdd", _t(value), bias, data_format=data_format or "NHWC", name=name)


def dropout(x, rate, noise_shape=None, seed=None, name: str | None = None):
    """Each element kept with probability 1 - rate and scaled by 1 / (1 - rate)."""
    x = _t(x)
    if not 0 <= float(rate) < 1:
        raise ValueError(f"dropout rate must be in [0, 1), got {rate}")
    if float(rate) == 0:
        return x
    keep = random_uniform(shape(x) if noise_shape is None else noise_shape, dtype=x.dtype, seed=seed) >= rate
    return call("Mul", x * (1.0 / (1.0 - float(rate))), cast(keep, x.dtype), name=name)


def sparse_softmax_cross_entropy_with_logits(labels=None, logits=None, name: str | None = None):
    if labels is None or logits is None:
        raise ValueError("sparse_softmax_cross_entropy_with_logits needs labels= and logits=")
    logits, labels = _t(logits), _t(labels)
    if logits.shape.rank is None or logits.shape.rank == 2:
        return call("SparseSoftmaxCrossEntropyWithLogits", logits, labels, name=name)[0]
    if logits.shape.rank < 2:
        raise ValueError(f"sparse_softmax_cross_entropy_with_logits: logits must have rank >= 2, got shape "
                         f"{logits.shape}")
    # the op takes a matrix: the leading dims flattened and restored, as TensorFlow does
    n = logits.shape[-1] if logits.shape[-1] is not None else -1
    flat = call("SparseSoftmaxCrossEntropyWithLogits", call("Reshape", logits, np.array([-1, n], np.int32)),
                call("Reshape", labels, np.array([-1], np.int32)))[0]
    return call("Reshape", flat, shape(labels), name=name)


def softmax_cross_entropy_with_logits(labels=None, logits=None, axis: int = -1, name: str | None = None):
    if labels is None or logits is None:
        raise ValueError("softmax_cross_entropy_with_logits needs labels= and logits=")
    logits, labels = _t(logits), _t(labels, None)
    if axis not in (-1, logits.shape.rank - 1):
        perm = list(range(logits.shape.rank))
        perm[axis], perm[-1] = perm[-1], perm[axis]
        logits, labels = transpose(logits, perm), transpose(labels, perm)
    if logits.shape.rank == 2:
        return call("SoftmaxCrossEntropyWithLogits", logits, labels, name=name)[0]
    # the op takes matrices: flatten the leading dims, as TensorFlow does
    lead = call("Slice", shape(logits), np.array([0], np.int32), np.array([logits.shape.rank - 1], np.int32))
    n = logits.shape[-1]
    flat = call("SoftmaxCrossEntropyWithLogits", call("Reshape", logits, np.array([-1, n], np.int32)),
                call("Reshape", labels, np.array([-1, n], np.int32)))[0]
    return call("Reshape", flat, lead, name=name)


def sigmoid_cross_entropy_with_logits(labels=None, logits=None, name: str | None = None):
    """max(x, 0) - x z + log(1 + exp(-|x|)), TensorFlow's stable form."""
    if labels is None or logits is None:
        raise ValueError("sigmoid_cross_entropy_with_logits needs labels= and logits=")
    x = _t(logits)
    z = _t(labels, x.dtype) if not isinstance(labels, Tensor) else labels
    return call("AddV2", call("Relu", x) - x * z, call("Log1p", call("Exp", -call("Abs", x))), name=name)


def moments(x, axes, shift=None, keepdims: bool = False, name: str | None = None):
    """Mean and variance over ``axes`` (the variance about the mean with its gradient stopped,
    as TensorFlow computes it)."""
    x = _t(x)
    mean = reduce_mean(x, axes, keepdims=True)
    variance = reduce_mean(call("SquaredDifference", x, stop_gradient(mean)), axes, keepdims=True)
    if not keepdims:
        mean, variance = squeeze(mean, axes), squeeze(variance, axes)
    return mean, variance


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name: str | None = None):
    """x * inv + (offset - mean * inv), inv = scale / sqrt(variance + epsilon) (TensorFlow's
    arrangement of the arithmetic)."""
    inv = call("Rsqrt", variance + variance_epsilon)
    if scale is not None:
        inv = inv * scale
    shift = -mean * inv if offset is None else offset - mean * inv
    return call("AddV2", _t(x) * inv, shift, name=name)


def l2_loss(t, name: str | None = None):
    return call("L2Loss", _t(t), name=name)


def embedding_lookup(params, ids, name: str | None = None):
    return call("GatherV2", params, ids, np.int32(0), name=name)



# The rest of tf.nn (depthwise/separable/3-D/transposed convolution, more pooling, morphology,
# LRN, more losses and statistics): api/nn_more.py.
from specflow.api.nn_more import (  # noqa: E402,F401
    approx_max_k,
    approx_min_k,
    atrous_conv2d,
    avg_pool1d,
    avg_pool3d,
    batch_norm_with_global_normalization,
    compute_average_loss,
    conv1d_transpose,
    conv3d,
    conv3d_transpose,
    conv_transpose,
    convolution,
    crelu,
    depth_to_space,
    depthwise_conv2d,
    depthwise_conv2d_backprop_filter,
    depthwise_conv2d_backprop_input,
    dilation2d,
    erosion2d,
    local_response_normalization,
    log_poisson_loss,
    lrn,
    max_pool1d,
    max_pool3d,
    max_pool_with_argmax,
    normalize_moments,
    pool,
    scale_regularization_loss,
    separable_conv2d,
    space_to_batch,
    space_to_depth,
    sufficient_statistics,
    weighted_cross_entropy_with_logits,
    weighted_moments,
)


def _by_rank(pyname: str, pools: tuple):
    """TF 2's ``tf.nn.max_pool``/``avg_pool``: the 1-D, 2-D or 3-D pool by the input's rank (3, 4
    or 5), ``data_format`` None meaning that rank's channels-last layout."""
    def fn(input, ksize, strides, padding, data_format: str | None = None, name: str | None = None):  # noqa: A002
        x = _t(input)
        r = x.shape.rank
        if r not in (3, 4, 5):
            raise ValueError(f"{pyname}: input must be of rank 3, 4 or 5 (1-D, 2-D or 3-D pooling), got shape "
                             f"{x.shape}")
        fmt = data_format or ("NWC", "NHWC", "NDHWC")[r - 3]
        return pools[r - 3](x, ksize, strides, padding, data_format=fmt, name=name)

    fn.__name__ = pyname
    fn.__doc__ = f"TensorFlow 2's ``tf.nn.{pyname}``: 1-D, 2-D or 3-D pooling by the input's rank."
    return fn


max_pool = _by_rank("max_pool", (max_pool1d, max_pool2d, max_pool3d))
avg_pool = _by_rank("avg_pool", (avg_pool1d, avg_pool2d, avg_pool3d))
