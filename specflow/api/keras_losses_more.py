"""``sf.keras.losses``: Keras 3's per-sample loss functions (``mean_squared_error``, ``huber``,
``kl_divergence``, ``poisson``, ``sparse_categorical_crossentropy(y_true, y_pred,
from_logits=False, ignore_class=None)``, ...: one value per sample, reduced over the last axis)
and the loss classes over them (api/keras_loss_base.py: ``loss(y_true, y_pred,
sample_weight=None)``, ``reduction=`` "sum_over_batch_size" by default, ``y_pred``'s mask
honoured). Integer labels of shape (N, 1) are squeezed, as Keras does; the crossentropies take
``label_smoothing=``, sparse ``ignore_class=`` (those entries masked out of the mean)."""

from __future__ import annotations

import math

import numpy as np

from specflow.api import nn, tf_names
from specflow.api.keras_loss_base import LossFunctionWrapper
from specflow.api.keras_masking import set_mask
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


def mean_squared_logarithmic_error(y_true, y_pred):
    y_true, y_pred = _prep(y_true, y_pred)
    eps, one = _c(y_pred, _EPSILON), _c(y_pred, 1.0)
    first = tf_names.log(tf_names.maximum(y_pred, eps) + one)
    second = tf_names.log(tf_names.maximum(y_true, eps) + one)
    return tf_names.reduce_mean(tf_names.square(first - second), axis=-1)


def poisson(y_true, y_pred):
    y_pred = _float(y_pred)
    y_true = tf_names.cast(y_true, y_pred.dtype)
    return tf_names.reduce_mean(y_pred - y_true * tf_names.log(y_pred + _c(y_pred, _EPSILON)), axis=-1)


def _float(y_pred):
    y_pred = tf_names._t(y_pred)
    return y_pred if y_pred.dtype.is_floating else tf_names.cast(y_pred, "float32")


def _binary_crossentropy(target, output, from_logits=False):
    """The backend's elementwise binary crossentropy (probabilities clipped to [eps, 1 - eps])."""
    if from_logits:
        return nn.sigmoid_cross_entropy_with_logits(labels=target, logits=output)
    p = tf_names.clip_by_value(output, _c(output, _EPSILON), _c(output, 1 - _EPSILON))
    one = _c(p, 1)
    return -(target * tf_names.log(p) + (one - target) * tf_names.log(one - p))


def _smooth_binary(y_true, label_smoothing):
    if not label_smoothing:
        return y_true
    return y_true * _c(y_true, 1.0 - label_smoothing) + _c(y_true, 0.5 * label_smoothing)


def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    y_pred = _float(y_pred)
    y_true = _smooth_binary(tf_names.cast(y_true, y_pred.dtype), label_smoothing)
    return tf_names.reduce_mean(_binary_crossentropy(y_true, y_pred, from_logits), axis=axis)


def binary_focal_crossentropy(y_true, y_pred, apply_class_balancing=False, alpha=0.25, gamma=2.0, from_logits=False,
                              label_smoothing=0.0, axis=-1):
    """Keras's: the binary crossentropy times (1 - p_t) ** gamma (p_t: the probability of the
    true class), with class balancing times alpha (positives) or 1 - alpha (negatives)."""
    y_pred = _float(y_pred)
    y_true = _smooth_binary(tf_names.cast(y_true, y_pred.dtype), label_smoothing)
    if from_logits:
        y_pred = nn.sigmoid(y_pred)
    bce = _binary_crossentropy(y_true, y_pred)
    one = _c(y_pred, 1.0)
    p_t = y_true * y_pred + (one - y_true) * (one - y_pred)
    focal = tf_names.pow(one - p_t, _c(y_pred, gamma)) * bce
    if apply_class_balancing:
        focal = (y_true * _c(y_pred, alpha) + (one - y_true) * _c(y_pred, 1 - alpha)) * focal
    return tf_names.reduce_mean(focal, axis=axis)


def _clipped_log_probs(y_pred, axis=-1):
    """Keras's probabilities path: normalized over ``axis``, clipped to [eps, 1 - eps], logged."""
    p = y_pred / tf_names.reduce_sum(y_pred, axis=axis, keepdims=True)
    return tf_names.log(tf_names.clip_by_value(p, _c(p, _EPSILON), _c(p, 1 - _EPSILON)))


def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    y_pred = _float(y_pred)
    y_true = tf_names.cast(y_true, y_pred.dtype)
    if label_smoothing:
        classes = tf_names.cast(tf_names.shape(y_true)[-1], y_pred.dtype)
        y_true = y_true * _c(y_pred, 1.0 - label_smoothing) + _c(y_pred, label_smoothing) / classes
    if from_logits:
        return nn.softmax_cross_entropy_with_logits(labels=y_true, logits=y_pred, axis=axis)
    return -tf_names.reduce_sum(y_true * _clipped_log_probs(y_pred, axis), axis=axis)


def _sparse_xent(labels, logits):
    """tf.nn.sparse_softmax_cross_entropy_with_logits of any rank (the op takes [batch, classes])."""
    if logits.shape.rank == 2:
        return nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    flat = nn.sparse_softmax_cross_entropy_with_logits(labels=tf_names.reshape(labels, [-1]),
                                                       logits=tf_names.reshape(logits, [-1, logits.shape[-1]]))
    return tf_names.reshape(flat, tf_names.shape(labels))


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, ignore_class=None, axis=-1):
    """Keras's: labels of y_pred's rank with a last dimension of 1 squeezed; probabilities
    clipped and logged, then softmax crossentropy (the TF backend's arithmetic); entries labelled
    ``ignore_class`` give 0 and are masked out of the loss's mean."""
    y_pred = _float(y_pred)
    labels = tf_names._t(y_true)
    if axis not in (-1, y_pred.shape.rank - 1):
        raise ValueError(f"Only axis=-1 is currently supported. Received: axis={axis}")
    if labels.shape.rank == y_pred.shape.rank and labels.shape[-1] == 1:
        labels = tf_names.squeeze(labels, [-1])
    valid = None
    if ignore_class is not None:
        valid = tf_names.not_equal(tf_names.cast(labels, y_pred.dtype), _c(y_pred, ignore_class))
        labels = tf_names.where(valid, labels, tf_names.zeros_like(labels))
        y_pred = tf_names.where(tf_names.expand_dims(valid, -1), y_pred, tf_names.zeros_like(y_pred))
    labels = tf_names.cast(labels, "int64")
    if not from_logits:
        y_pred = tf_names.log(tf_names.clip_by_value(y_pred, _c(y_pred, _EPSILON), _c(y_pred, 1 - _EPSILON)))
    res = _sparse_xent(labels, y_pred)
    if valid is not None:
        res = tf_names.where(valid, res, tf_names.zeros_like(res))
        set_mask(res, valid)
    return res


mse, mae, kld, logcosh = mean_squared_error, mean_absolute_error, kl_divergence, log_cosh
msle = mean_squared_logarithmic_error
KLD, MSE, MAE, MSLE = kl_divergence, mean_squared_error, mean_absolute_error, mean_squared_logarithmic_error

FUNCTIONS = {f.__name__: f for f in (mean_squared_error, mean_absolute_error, mean_squared_logarithmic_error, huber,
                                     log_cosh, kl_divergence, poisson, cosine_similarity, hinge, squared_hinge,
                                     binary_crossentropy, binary_focal_crossentropy, categorical_crossentropy,
                                     sparse_categorical_crossentropy)}
FUNCTIONS.update({"mse": mse, "mae": mae, "msle": msle, "kld": kld, "logcosh": log_cosh,
                  "kullback_leibler_divergence": kld, "huber_loss": huber, "MSE": MSE, "MAE": MAE, "MSLE": MSLE,
                  "KLD": KLD})


# --- the classes (Keras 3's LossFunctionWrapper subclasses, their names and defaults) ------------


def _loss_class(class_name: str, fn, default_name: str, params: tuple = ()):
    """A LossFunctionWrapper subclass taking ``params`` (name, default) before reduction/name."""

    def __init__(self, *args, reduction="sum_over_batch_size", name=default_name, dtype=None, **kwargs):
        if len(args) > len(params):
            raise TypeError(f"{class_name} takes at most {len(params)} positional argument(s)")
        values = dict(params)
        values.update(zip((p for p, _ in params), args))
        unknown = set(kwargs) - set(values)
        if unknown:
            raise TypeError(f"{class_name}: unexpected argument(s) {sorted(unknown)}")
        values.update(kwargs)
        LossFunctionWrapper.__init__(self, fn, reduction=reduction, name=name, dtype=dtype, **values)
        for k, v in values.items():
            setattr(self, k, v)

    return type(class_name, (LossFunctionWrapper,), {"__init__": __init__, "fn": staticmethod(fn),
                                                    "__doc__": f"Keras's {class_name}: ``{fn.__name__}`` reduced."})


MeanSquaredError = _loss_class("MeanSquaredError", mean_squared_error, "mean_squared_error")
MeanAbsoluteError = _loss_class("MeanAbsoluteError", mean_absolute_error, "mean_absolute_error")
MeanSquaredLogarithmicError = _loss_class("MeanSquaredLogarithmicError", mean_squared_logarithmic_error,
                                          "mean_squared_logarithmic_error")
Poisson = _loss_class("Poisson", poisson, "poisson")
Huber = _loss_class("Huber", huber, "huber_loss", (("delta", 1.0),))
KLDivergence = _loss_class("KLDivergence", kl_divergence, "kl_divergence")
CosineSimilarity = _loss_class("CosineSimilarity", cosine_similarity, "cosine_similarity", (("axis", -1),))
Hinge = _loss_class("Hinge", hinge, "hinge")
SquaredHinge = _loss_class("SquaredHinge", squared_hinge, "squared_hinge")
LogCosh = _loss_class("LogCosh", log_cosh, "log_cosh")
BinaryCrossentropy = _loss_class("BinaryCrossentropy", binary_crossentropy, "binary_crossentropy",
                                 (("from_logits", False), ("label_smoothing", 0.0), ("axis", -1)))
BinaryFocalCrossentropy = _loss_class(
    "BinaryFocalCrossentropy", binary_focal_crossentropy, "binary_focal_crossentropy",
    (("apply_class_balancing", False), ("alpha", 0.25), ("gamma", 2.0), ("from_logits", False),
     ("label_smoothing", 0.0), ("axis", -1)))
CategoricalCrossentropy = _loss_class("CategoricalCrossentropy", categorical_crossentropy, "categorical_crossentropy",
                                      (("from_logits", False), ("label_smoothing", 0.0), ("axis", -1)))
SparseCategoricalCrossentropy = _loss_class("SparseCategoricalCrossentropy", sparse_categorical_crossentropy,
                                            "sparse_categorical_crossentropy",
                                            (("from_logits", False), ("ignore_class", None)))

CLASSES = (MeanSquaredError, MeanAbsoluteError, MeanSquaredLogarithmicError, Poisson, Huber, KLDivergence,
           CosineSimilarity, Hinge, SquaredHinge, LogCosh, BinaryCrossentropy, BinaryFocalCrossentropy,
           CategoricalCrossentropy, SparseCategoricalCrossentropy)
# compile(loss=...) names -> a factory of the loss (Keras wraps its functions the same way)
NAMES = {**{c.__name__: c for c in CLASSES},
         **{name: (lambda fn=fn: LossFunctionWrapper(fn, name=fn.__name__)) for name, fn in FUNCTIONS.items()}}
