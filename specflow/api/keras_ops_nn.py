"""``sf.keras.ops.nn`` (also at ``sf.keras.ops``' top level): Keras 3's activations, one-hot
encodings, moments, normalize and the three cross-entropies, with Keras's defaults (``gelu``
approximate, ``leaky_relu`` slope 0.2) and its epsilon-clipped probabilities."""

from __future__ import annotations

import types

import numpy as np

from specflow.api import nn as _nn
from specflow.api import tf_names as _tf
from specflow.api.keras_ops import _dt, _same, call, convert_to_tensor, maximum, norm


def relu(x):
    return _nn.relu(convert_to_tensor(x))


def relu6(x):
    return _nn.relu6(convert_to_tensor(x))


def sigmoid(x):
    return _nn.sigmoid(convert_to_tensor(x))


def softplus(x):
    return _nn.softplus(convert_to_tensor(x))


def softsign(x):
    return _nn.softsign(convert_to_tensor(x))


def silu(x):
    x = convert_to_tensor(x)
    return x * _nn.sigmoid(x)


swish = silu


def gelu(x, approximate: bool = True):
    return _nn.gelu(convert_to_tensor(x), approximate=approximate)


def elu(x, alpha: float = 1.0):
    x = convert_to_tensor(x)
    out = _nn.elu(x)
    return out if alpha == 1.0 else call("SelectV2", x > 0, out, out * np.asarray(alpha, x.dtype.numpy))


def selu(x):
    return _nn.selu(convert_to_tensor(x))


def leaky_relu(x, negative_slope: float = 0.2):
    return _nn.leaky_relu(convert_to_tensor(x), alpha=negative_slope)


def hard_sigmoid(x):
    x = convert_to_tensor(x)
    return relu6(x + np.asarray(3.0, x.dtype.numpy)) / np.asarray(6.0, x.dtype.numpy)


def softmax(x, axis: int = -1):
    return _nn.softmax(convert_to_tensor(x), axis=axis)


def log_softmax(x, axis: int = -1):
    return _nn.log_softmax(convert_to_tensor(x), axis=axis)


def one_hot(x, num_classes, axis: int = -1, dtype=None, sparse: bool = False):
    return _tf.one_hot(convert_to_tensor(x), num_classes, axis=axis, dtype=_dt(dtype))


def multi_hot(inputs, num_classes, axis: int = -1, dtype=None, sparse: bool = False):
    hot = one_hot(inputs, num_classes, axis=axis, dtype=dtype)
    return _tf.reduce_max(hot, axis=-2 if axis == -1 else axis)


def moments(x, axes, keepdims: bool = False, synchronized: bool = False):
    (x,) = _same(x, float_result=True)
    m = _tf.reduce_mean(x, axis=list(axes), keepdims=True)
    v = _tf.reduce_mean(_tf.square(x - _tf.stop_gradient(m)), axis=list(axes), keepdims=True)
    if not keepdims:
        m, v = _tf.squeeze(m, list(axes)), _tf.squeeze(v, list(axes))
    return m, v


def normalize(x, axis: int = -1, order: int = 2, epsilon=None):
    x = convert_to_tensor(x)
    if order != 2:
        n = norm(x, ord=order, axis=axis, keepdims=True)
        return x / maximum(n, np.asarray(1e-7 if epsilon is None else epsilon, x.dtype.numpy))
    square_sum = _tf.reduce_sum(_tf.square(x), axis=axis, keepdims=True)
    eps = np.asarray(1e-7 if epsilon is None else epsilon, x.dtype.numpy)
    return x * _tf.rsqrt(_tf.maximum(square_sum, eps * eps))


def binary_crossentropy(target, output, from_logits: bool = False):
    return _bce(convert_to_tensor(target), convert_to_tensor(output), from_logits)


def _bce(target, output, from_logits):
    target = _tf.cast(target, output.dtype)
    if from_logits:
        return _nn.sigmoid_cross_entropy_with_logits(labels=target, logits=output)
    eps = np.asarray(1e-7, output.dtype.numpy)
    output = _tf.clip_by_value(output, eps, np.asarray(1.0, output.dtype.numpy) - eps)
    one = np.asarray(1.0, output.dtype.numpy)
    return -(target * _tf.log(output) + (one - target) * _tf.log(one - output))


def categorical_crossentropy(target, output, from_logits: bool = False, axis: int = -1):
    target, output = convert_to_tensor(target), convert_to_tensor(output)
    target = _tf.cast(target, output.dtype)
    if from_logits:
        return _nn.softmax_cross_entropy_with_logits(labels=target, logits=output, axis=axis)
    output = output / _tf.reduce_sum(output, axis=axis, keepdims=True)
    eps = np.asarray(1e-7, output.dtype.numpy)
    output = _tf.clip_by_value(output, eps, np.asarray(1.0, output.dtype.numpy) - eps)
    return -_tf.reduce_sum(target * _tf.log(output), axis=axis)


def sparse_categorical_crossentropy(target, output, from_logits: bool = False, axis: int = -1):
    target, output = convert_to_tensor(target), convert_to_tensor(output)
    if target.shape.rank == output.shape.rank and target.shape.as_list()[-1] == 1:
        target = _tf.squeeze(target, [-1])
    target = _tf.cast(target, "int64")
    if not from_logits:
        eps = np.asarray(1e-7, output.dtype.numpy)
        output = _tf.log(_tf.clip_by_value(output, eps, np.asarray(1.0, output.dtype.numpy) - eps))
    return _nn.sparse_softmax_cross_entropy_with_logits(labels=target, logits=output)



nn = types.ModuleType("specflow.keras.ops.nn", "Keras 3's keras.ops.nn functions.")
for _name in ("relu", "relu6", "sigmoid", "softplus", "softsign", "silu", "swish", "gelu", "elu", "selu", "leaky_relu", "hard_sigmoid", "softmax", "log_softmax", "one_hot", "multi_hot", "moments", "normalize", "binary_crossentropy", "categorical_crossentropy", "sparse_categorical_crossentropy"):
    setattr(nn, _name, globals()[_name])
