"""``sf.keras.metrics``: Keras 3's stateful metrics (``update_state(y_true, y_pred,
sample_weight=None)``, ``result()``, ``reset_state()``), their state float32 sf.Variables updated
with sf ops, so they update eagerly or inside ``sf.function`` and ``compile(metrics=[...])``
takes them. ``Mean``/``Sum`` take values; the others reduce ``y_true``/``y_pred`` to per-sample
values (Keras's ``MeanMetricWrapper``) or to confusion counts (``Precision``, ``Recall``, ``AUC``
with Keras's thresholds). Sample weights follow Keras's ``reduce_to_samplewise_values``: values
of higher rank are averaged down to the weights' rank, the weights broadcast, and ``count`` adds
the weights' sum; a mask riding on ``y_pred`` (padding) weighs its masked steps 0."""

from __future__ import annotations

import re

import numpy as np

from specflow.api import keras_metrics as km
from specflow.api import tf_names
from specflow.api.keras_masking import get_mask
from specflow.api.variables import Variable

_EPSILON = 1e-7


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def _f32(x):
    return tf_names.cast(tf_names._t(x), "float32")


class Metric:
    direction: str | None = None

    def __init__(self, name=None, dtype=None):
        self.name = name or _snake(type(self).__name__)
        self._vars: list[Variable] = []

    def add_variable(self, shape, name, value=0.0) -> Variable:
        var = Variable(np.full(shape, value, np.float32), trainable=False, name=f"{self.name}/{name}")
        self._vars.append(var)
        return var

    @property
    def variables(self) -> list:
        return list(self._vars)

    def reset_state(self) -> None:
        for v in self._vars:
            v.assign(np.zeros(v.shape.as_list(), np.float32))

    def __call__(self, y_true, y_pred, sample_weight=None):
        self.update_state(y_true, y_pred, sample_weight=sample_weight)
        return self.result()


def _reduce_samplewise(values, sample_weight, reduce_fn):
    values = _f32(values)
    if sample_weight is not None:
        sample_weight = _f32(sample_weight)
        values, sample_weight = km.squeeze_or_expand(values, sample_weight)
        wr, vr = sample_weight.shape.rank, values.shape.rank
        if vr > wr:
            values = reduce_fn(values, axis=list(range(wr, vr)))
        sample_weight = tf_names.broadcast_to(sample_weight, tf_names.shape(values))
        values = values * sample_weight
        if wr > 1:
            sample_weight = reduce_fn(sample_weight, axis=list(range(1, wr)))
    if values.shape.rank > 1:
        values = reduce_fn(values, axis=list(range(1, values.shape.rank)))
    return values, sample_weight


class Sum(Metric):
    def __init__(self, name="sum", dtype=None):
        super().__init__(name)
        self.total = self.add_variable([], "total")

    def update_state(self, values, sample_weight=None):
        values, _ = _reduce_samplewise(values, sample_weight, tf_names.reduce_sum)
        self.total.assign_add(tf_names.reduce_sum(values))

    def result(self):
        return self.total.read_value()


class Mean(Metric):
    def __init__(self, name="mean", dtype=None):
        super().__init__(name)
        self.total = self.add_variable([], "total")
        self.count = self.add_variable([], "count")

    def update_state(self, values, sample_weight=None):
        values, sample_weight = _reduce_samplewise(values, sample_weight, tf_names.reduce_mean)
        self.total.assign_add(tf_names.reduce_sum(values))
        if sample_weight is not None:
            n = tf_names.reduce_sum(sample_weight)
        elif values.shape.rank:
            n = tf_names.cast(tf_names.shape(values)[0], "float32")
        else:
            n = np.float32(1)
        self.count.assign_add(n)

    def result(self):
        return tf_names.divide_no_nan(self.total.read_value(), self.count.read_value())


class MeanMetricWrapper(Mean):
    """Keras's: the ``Mean`` of ``fn(y_true, y_pred, **kwargs)``'s per-sample values."""

    fn = None

    def __init__(self, fn=None, name=None, dtype=None, **kwargs):
        super().__init__(name or _snake(type(self).__name__))
        self._fn = fn or type(self).fn
        self._fn_kwargs = kwargs

    def update_state(self, y_true, y_pred, sample_weight=None):
        from specflow.api.keras_loss_base import apply_mask

        mask = get_mask(y_pred)  # a sequence model's padding: those steps weigh 0, as Keras's
        y_pred = tf_names._t(y_pred)
        y_true = tf_names._t(y_true)
        values = self._fn(y_true, y_pred, **self._fn_kwargs)
        if mask is not None:
            sample_weight = apply_mask(None if sample_weight is None else _f32(sample_weight), mask, "float32", "sum")
        super().update_state(values, sample_weight=sample_weight)


def accuracy(y_true, y_pred):
    y_pred = _f32(y_pred)
    y_true, y_pred = km.squeeze_or_expand(tf_names.cast(y_true, y_pred.dtype), y_pred)
    return tf_names.cast(tf_names.equal(y_true, y_pred), "float32")


def _in_top_k(labels, y_pred, k):
    """TF's in_top_k: the label's score is at least the k-th largest (ties count as in)."""
    y_pred = _f32(y_pred)
    kth = tf_names.reduce_min(tf_names.top_k(y_pred, k=min(k, y_pred.shape[-1]))[0], axis=-1)
    picked = tf_names.gather(y_pred, labels, axis=-1, batch_dims=labels.shape.rank)
    return tf_names.cast(tf_names.greater_equal(picked, kth), "float32")


def sparse_top_k_categorical_accuracy(y_true, y_pred, k=5):
    y_true = tf_names._t(y_true)
    y_pred = tf_names._t(y_pred)
    if y_true.shape.rank == y_pred.shape.rank:
        y_true = tf_names.reshape(y_true, [-1])
    return _in_top_k(tf_names.cast(y_true, "int32"), y_pred, k)


def top_k_categorical_accuracy(y_true, y_pred, k=5):
    return _in_top_k(tf_names.cast(tf_names.argmax(y_true, axis=-1), "int32"), y_pred, k)


def _binary_accuracy(y_true, y_pred, threshold=0.5):
    return km.binary_accuracy(y_true, _f32(y_pred), threshold=threshold)


class Accuracy(MeanMetricWrapper):
    fn, direction = staticmethod(accuracy), "up"


class BinaryAccuracy(MeanMetricWrapper):
    fn, direction = staticmethod(_binary_accuracy), "up"

    def __init__(self, name="binary_accuracy", dtype=None, threshold=0.5):
        super().__init__(name=name, threshold=threshold)


class CategoricalAccuracy(MeanMetricWrapper):
    fn, direction = staticmethod(km.categorical_accuracy), "up"


class SparseCategoricalAccuracy(MeanMetricWrapper):
    fn, direction = staticmethod(km.sparse_categorical_accuracy), "up"


class TopKCategoricalAccuracy(MeanMetricWrapper):
    fn, direction = staticmethod(top_k_categorical_accuracy), "up"

    def __init__(self, k=5, name="top_k_categorical_accuracy", dtype=None):
        super().__init__(name=name, k=k)


class SparseTopKCategoricalAccuracy(MeanMetricWrapper):
    fn, direction = staticmethod(sparse_top_k_categorical_accuracy), "up"

    def __init__(self, k=5, name="sparse_top_k_categorical_accuracy", dtype=None):
        super().__init__(name=name, k=k)


class MeanSquaredError(MeanMetricWrapper):
    fn, direction = staticmethod(km.mean_squared_error), "down"


class MeanAbsoluteError(MeanMetricWrapper):
    fn, direction = staticmethod(km.mean_absolute_error), "down"


class RootMeanSquaredError(Mean):
    direction = "down"

    def __init__(self, name="root_mean_squared_error", dtype=None):
        super().__init__(name)

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_pred = _f32(y_pred)
        y_true, y_pred = km.squeeze_or_expand(tf_names.cast(y_true, y_pred.dtype), y_pred)
        super().update_state(tf_names.square(y_pred - y_true), sample_weight=sample_weight)

    def result(self):
        return tf_names.sqrt(super().result())


def _confusion(y_true, y_pred, sample_weight, thresholds):
    """Weighted (tp, fp, tn, fn), one per threshold, with "predicted positive" = y_pred > threshold
    (Keras's ``update_confusion_matrix_variables``)."""
    y_pred = _f32(y_pred)
    y_true = _f32(y_true)
    y_pred, y_true = km.squeeze_or_expand(y_pred, y_true)
    pred = tf_names.reshape(y_pred, [1, -1])
    truth = tf_names.not_equal(tf_names.reshape(y_true, [1, -1]), np.float32(0))  # cast to bool, as Keras
    above = tf_names.greater(pred, np.asarray(thresholds, np.float32).reshape(-1, 1))
    if sample_weight is None:
        w = tf_names.ones_like(pred)
    else:
        y_pred2, sw = km.squeeze_or_expand(y_pred, _f32(sample_weight))
        w = tf_names.reshape(tf_names.broadcast_to(sw, tf_names.shape(y_pred2)), [1, -1])

    def count(a, b):
        return tf_names.reduce_sum(w * tf_names.cast(tf_names.logical_and(a, b), "float32"), axis=1)

    not_truth, not_above = tf_names.logical_not(truth), tf_names.logical_not(above)
    return count(truth, above), count(not_truth, above), count(not_truth, not_above), count(truth, not_above)


class _Confusion(Metric):
    direction = "up"

    def __init__(self, thresholds, name):
        super().__init__(name)
        self.thresholds = thresholds
        n = len(thresholds)
        self.true_positives = self.add_variable([n], "true_positives")
        self.false_positives = self.add_variable([n], "false_positives")
        self.true_negatives = self.add_variable([n], "true_negatives")
        self.false_negatives = self.add_variable([n], "false_negatives")

    def update_state(self, y_true, y_pred, sample_weight=None):
        tp, fp, tn, fn = _confusion(y_true, y_pred, sample_weight, self.thresholds)
        self.true_positives.assign_add(tp)
        self.false_positives.assign_add(fp)
        self.true_negatives.assign_add(tn)
        self.false_negatives.assign_add(fn)

    def _one(self, x):
        return tf_names.reshape(x, []) if len(self.thresholds) == 1 else x


class Precision(_Confusion):
    def __init__(self, thresholds=None, name="precision", dtype=None):
        super().__init__([0.5] if thresholds is None else list(np.atleast_1d(thresholds)), name)

    def result(self):
        tp = self.true_positives.read_value()
        return self._one(tf_names.divide_no_nan(tp, tp + self.false_positives.read_value()))


class Recall(_Confusion):
    def __init__(self, thresholds=None, name="recall", dtype=None):
        super().__init__([0.5] if thresholds is None else list(np.atleast_1d(thresholds)), name)

    def result(self):
        tp = self.true_positives.read_value()
        return self._one(tf_names.divide_no_nan(tp, tp + self.false_negatives.read_value()))


class AUC(_Confusion):
    """ROC AUC with Keras's ``num_thresholds`` (200) evenly spaced thresholds plus -eps and
    1 + eps, and its "interpolation" summation (trapezoids over the ROC points)."""

    def __init__(self, num_thresholds=200, curve="ROC", name="auc", dtype=None):
        if curve != "ROC":
            raise ValueError("sf.keras.metrics.AUC: only curve='ROC' is supported")
        inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
        super().__init__([0.0 - _EPSILON, *inner, 1.0 + _EPSILON], name)
        self.num_thresholds = num_thresholds

    def result(self):
        tp, fp = self.true_positives.read_value(), self.false_positives.read_value()
        tn, fn = self.true_negatives.read_value(), self.false_negatives.read_value()
        recall = tf_names.divide_no_nan(tp, tp + fn)
        fp_rate = tf_names.divide_no_nan(fp, fp + tn)
        n = self.num_thresholds
        heights = (recall[: n - 1] + recall[1:]) / np.float32(2.0)
        return tf_names.reduce_sum((fp_rate[: n - 1] - fp_rate[1:]) * heights)


CLASSES = (Mean, Sum, Accuracy, BinaryAccuracy, CategoricalAccuracy, SparseCategoricalAccuracy,
           TopKCategoricalAccuracy, SparseTopKCategoricalAccuracy, MeanSquaredError, MeanAbsoluteError,
           RootMeanSquaredError, Precision, Recall, AUC, MeanMetricWrapper, Metric)
