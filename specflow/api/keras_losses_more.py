"""More of ``sf.keras.losses``: Keras 3's per-sample loss functions (``mean_squared_error``,
``huber``, ``kl_divergence``, ``sparse_categorical_crossentropy(y_true, y_pred,
from_logits=False)``, ...: one value per sample, reduced over the last axis) and the loss
classes ``MeanAbsoluteError``, ``Huber``, ``KLDivergence``, ``CosineSimilarity``, ``Hinge``,
``LogCosh`` (``loss(y_true, y_pred, sample_weight=None)``: Keras's "sum_over_batch_size", the
weighted per-sample values' sum over their number)."""

from __future__ import annotations

import math

import numpy as np

from specflow.api import nn, tf_names
from specflow.api.keras_metrics import squeeze_or_expand

_EPSILON = 1e-7


def _prep(y_true, y_pred):
    y_pred = tf_names._t(y_pred)
    if y_pred.dtype.name not in ("float32", "float64", "float16", "bfloat16"):
        y_pred = tf_names.cast(y_pred, "float32")
    return squeeze_or_expand(tf_names.cast(y_true, y_pred.dtype), y_pred)


def _c(x, v):
    return np.asarray(v, x.dtype.numpy)


def mean_squared_error(y_true, y_pred):
    y_true, y_pred = _prep(y_true, y_pred)
    return tf_names.reduce_mean(tf_names.square(y_true - y_pred), axis=-1)


def mean_absolute_error(y_true, y_pred):
    y_true, y_pred = _prep(y_true, y_pred)
    return tf_names.reduce_mean(tf_names.abs(y_true - y_pred), axis=-1)


def huber(y_true, y_pred, delta=1.0):
    y_true, y_pred = _prep(y_true, y_pred)
    error = y_pred - y_true
    abs_error = tf_names.abs(error)
    half, d = _c(error, 0.5), _c(error, delta)
    return tf_names.reduce_mean(tf_names.where(tf_names.less_equal(abs_error, d), half * tf_names.square(error),
                                               d * abs_error - half * np.square(d)), axis=-1)


def log_cosh(y_true, y_pred):
    y_true, y_pred = _prep(y_true, y_pred)
    x = y_pred - y_true
    return tf_names.reduce_mean(x + nn.softplus(x * _c(x, -2.0)) - _c(x, math.log(2.0)), axis=-1)


def kl_divergence(y_true, y_pred):
    y_true, y_pred = _prep(y_true, y_pred)
    y_true = tf_names.clip_by_value(y_true, _c(y_true, _EPSILON), _c(y_true, 1))
    y_pred = tf_names.clip_by_value(y_pred, _c(y_pred, _EPSILON), _c(y_pred, 1))
    return tf_names.reduce_sum(y_true * tf_names.log(y_true / y_pred), axis=-1)


def _l2_normalize(x, axis):
    """Keras's ``ops.normalize``: x * min(rsqrt(sum x^2), 1 / epsilon)."""
    inv = tf_names.rsqrt(tf_names.reduce_sum(tf_names.square(x), axis=axis, keepdims=True))
    return x * tf_names.minimum(inv, _c(x, 1.0 / _EPSILON))


def cosine_similarity(y_true, y_pred, axis=-1):
    y_true, y_pred = _prep(y_true, y_pred)
    return -tf_names.reduce_sum(_l2_normalize(y_true, axis) * _l2_normalize(y_pred, axis), axis=axis)


def _hinge_labels(y_true):
    """Keras's: labels that are all 0/1 become -1/1."""
    binary = tf_names.reduce_all(tf_names.logical_or(tf_names.equal(y_true, _c(y_true, 0)),
                                                     tf_names.equal(y_true, _c(y_true, 1))))
    return tf_names.where(binary, _c(y_true, 2.0) * y_true - _c(y_true, 1.0), y_true)


def hinge(y_true, y_pred):
    y_true, y_pred = _prep(y_true, y_pred)
    y_true = _hinge_labels(y_true)
    return tf_names.reduce_mean(tf_names.maximum(_c(y_pred, 1.0) - y_true * y_pred, _c(y_pred, 0.0)), axis=-1)


def squared_hinge(y_true, y_pred):
    y_true, y_pred = _prep(y_true, y_pred)
    y_true = _hinge_labels(y_true)
    return tf_names.reduce_mean(tf_names.square(tf_names.maximum(_c(y_pred, 1.0) - y_true * y_pred, _c(y_pred, 0.0))),
                                axis=-1)


def binary_crossentropy(y_true, y_pred, from_logits=False):
    y_true, y_pred = _prep(y_true, y_pred)
    if from_logits:
        return tf_names.reduce_mean(nn.sigmoid_cross_entropy_with_logits(labels=y_true, logits=y_pred), axis=-1)
    p = tf_names.clip_by_value(y_pred, _c(y_pred, _EPSILON), _c(y_pred, 1 - _EPSILON))
    bce = y_true * tf_names.log(p) + (_c(p, 1) - y_true) * tf_names.log(_c(p, 1) - p)
    return tf_names.reduce_mean(-bce, axis=-1)


def categorical_crossentropy(y_true, y_pred, from_logits=False):
    from specflow.api.keras import _clipped_log_probs

    y_pred = tf_names._t(y_pred)
    y_true = tf_names.cast(y_true, y_pred.dtype)
    if from_logits:
        return nn.softmax_cross_entropy_with_logits(labels=y_true, logits=y_pred)
    return -tf_names.reduce_sum(y_true * _clipped_log_probs(y_pred), axis=-1)


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False):
    from specflow.api.keras import _clipped_log_probs

    y_pred = tf_names._t(y_pred)
    labels = tf_names._t(y_true)
    if labels.shape.rank == y_pred.shape.rank and labels.shape[-1] == 1:
        labels = tf_names.squeeze(labels, [-1])
    labels = tf_names.cast(labels, "int64")
    if from_logits:
        return nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=y_pred)
    return -tf_names.gather(_clipped_log_probs(y_pred), labels, axis=-1, batch_dims=labels.shape.rank)


sparse_categorical_crossentropy._sf_sparse = True  # compile() hands it integer labels
mse, mae, kld, logcosh = mean_squared_error, mean_absolute_error, kl_divergence, log_cosh
KLD, MSE, MAE = kl_divergence, mean_squared_error, mean_absolute_error

FUNCTIONS = {f.__name__: f for f in (mean_squared_error, mean_absolute_error, huber, log_cosh, kl_divergence,
                                     cosine_similarity, hinge, squared_hinge, binary_crossentropy,
                                     categorical_crossentropy, sparse_categorical_crossentropy)}
FUNCTIONS.update({"mse": mse, "mae": mae, "kld": kld, "logcosh": log_cosh, "kullback_leibler_divergence": kld})


class _Wrapper:
    """Keras's LossFunctionWrapper with "sum_over_batch_size": sum(w * values) / size(values)."""

    fn = staticmethod(mean_squared_error)

    def __init__(self, name=None, **kwargs):
        self.name, self.kwargs = name, kwargs

    def __call__(self, y_true, y_pred, sample_weight=None):
        values = self.fn(y_true, y_pred, **self.kwargs)
        if sample_weight is not None:
            w = tf_names.cast(sample_weight, values.dtype)
            values, w = squeeze_or_expand(values, w)
            values = values * w
        total = tf_names.reduce_sum(values)
        return tf_names.divide_no_nan(total, tf_names.cast(tf_names.size(values), total.dtype))


class MeanAbsoluteError(_Wrapper):
    fn = staticmethod(mean_absolute_error)


class Huber(_Wrapper):
    fn = staticmethod(huber)

    def __init__(self, delta=1.0, name=None):
        super().__init__(name, delta=delta)


class KLDivergence(_Wrapper):
    fn = staticmethod(kl_divergence)


class CosineSimilarity(_Wrapper):
    fn = staticmethod(cosine_similarity)

    def __init__(self, axis=-1, name=None):
        super().__init__(name, axis=axis)


class Hinge(_Wrapper):
    fn = staticmethod(hinge)


class SquaredHinge(_Wrapper):
    fn = staticmethod(squared_hinge)


class LogCosh(_Wrapper):
    fn = staticmethod(log_cosh)


CLASSES = (MeanAbsoluteError, Huber, KLDivergence, CosineSimilarity, Hinge, SquaredHinge, LogCosh)
# compile(loss=name) for these: name -> a factory of the callable loss
NAMES = {"huber": Huber, "huber_loss": Huber, "kl_divergence": KLDivergence, "kld": KLDivergence,
         "kullback_leibler_divergence": KLDivergence, "cosine_similarity": CosineSimilarity, "hinge": Hinge,
         "squared_hinge": SquaredHinge, "log_cosh": LogCosh, "logcosh": LogCosh,
         **{c.__name__: c for c in CLASSES}}
