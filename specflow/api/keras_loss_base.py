"""Keras 3's ``Loss``: ``loss(y_true, y_pred, sample_weight=None)`` computes per-sample values
(``call``) and reduces them by ``reduction``: "sum_over_batch_size" (the default: the weighted
values' sum over their number), "sum", "mean", "mean_with_sample_weight" (over the weights'
sum), or "none"/None (the values). A mask riding on ``y_pred`` (a sequence model's padding,
api/keras_masking.py) or on the values (``ignore_class``) weighs the masked entries 0 and, for
the mean reductions, the others total/valid, so the mean is over the valid entries, as Keras's
``apply_mask``. ``LossFunctionWrapper(fn, **kwargs)`` is a loss from a per-sample function, its
``y_true``/``y_pred`` squeezed or expanded to the same rank first."""

from __future__ import annotations

import re

import numpy as np

from specflow.api import tf_names
from specflow.api.keras_masking import get_mask
from specflow.api.keras_metrics import squeeze_or_expand

REDUCTIONS = ("sum_over_batch_size", "sum", None, "none", "mean", "mean_with_sample_weight")


def standardize_reduction(reduction):
    if reduction not in REDUCTIONS:
        raise ValueError(f"Invalid value for argument `reduction`. Expected one of {set(REDUCTIONS)}. Received: "
                         f"reduction={reduction!r}")
    return reduction


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def _as(x, dtype):
    x = tf_names._t(x)
    return x if x.dtype.name == dtype else tf_names.cast(x, dtype)


def apply_mask(sample_weight, mask, dtype, reduction):
    """Keras's: the mask folded into the sample weights (mean reductions: valid entries weigh
    total / valid, so the mean is over them)."""
    if mask is None:
        return sample_weight
    if reduction in ("mean", "sum_over_batch_size"):
        total = tf_names.cast(tf_names.size(mask), dtype)
        valid = tf_names.reduce_sum(tf_names.cast(mask, dtype))
        float_mask = tf_names.where(tf_names.cast(mask, "bool"), tf_names.divide_no_nan(total, valid),
                                    np.zeros((), np.dtype(dtype)))
    else:
        float_mask = tf_names.cast(mask, dtype)
    if sample_weight is None:
        return float_mask
    float_mask, sample_weight = squeeze_or_expand(float_mask, _as(sample_weight, dtype))
    return sample_weight * float_mask


def reduce_values(values, sample_weight=None, reduction="sum_over_batch_size"):
    if reduction in (None, "none") or values.shape.rank == 0 or values.shape.as_list() == [0]:
        return values
    loss = tf_names.reduce_sum(values)
    if reduction in ("sum_over_batch_size", "mean", "mean_with_sample_weight"):
        if reduction == "mean_with_sample_weight" and sample_weight is not None:
            divisor = tf_names.cast(tf_names.reduce_sum(sample_weight), loss.dtype)
        else:
            divisor = tf_names.cast(tf_names.size(values), loss.dtype)
        loss = tf_names.divide_no_nan(loss, divisor)
    return loss


def reduce_weighted_values(values, sample_weight=None, mask=None, reduction="sum_over_batch_size", dtype="float32"):
    reduction = standardize_reduction(reduction)
    values = _as(values, dtype)
    sample_weight = apply_mask(None if sample_weight is None else _as(sample_weight, dtype), mask, values.dtype.name,
                               reduction)
    if sample_weight is not None:
        values, sample_weight = squeeze_or_expand(values, _as(sample_weight, values.dtype.name))
        values = values * sample_weight
    return reduce_values(values, sample_weight, reduction)


class Loss:
    """Keras 3's base class: subclasses write ``call(y_true, y_pred)`` -> per-sample values."""

    def __init__(self, name=None, reduction="sum_over_batch_size", dtype=None):
        self.name = name or _snake(type(self).__name__)
        self.reduction = standardize_reduction(reduction)
        self.dtype = getattr(dtype, "name", dtype) or "float32"

    def __call__(self, y_true, y_pred, sample_weight=None):
        in_mask = get_mask(y_pred)
        y_pred, y_true = _as(y_pred, self.dtype), _as(y_true, self.dtype)
        values = self.call(y_true, y_pred)
        out_mask = get_mask(values)
        if in_mask is not None and out_mask is not None:
            mask = tf_names.logical_and(tf_names.cast(in_mask, "bool"), tf_names.cast(out_mask, "bool"))
        else:
            mask = in_mask if in_mask is not None else out_mask
        return reduce_weighted_values(values, sample_weight, mask, self.reduction, self.dtype)

    def call(self, y_true, y_pred):  # pragma: no cover - abstract
        raise NotImplementedError

    def get_config(self) -> dict:
        return {"name": self.name, "reduction": self.reduction}


class LossFunctionWrapper(Loss):
    """A ``Loss`` from ``fn(y_true, y_pred, **kwargs)`` -> per-sample values."""

    fn = None  # a subclass's function

    def __init__(self, fn=None, reduction="sum_over_batch_size", name=None, dtype=None, **kwargs):
        super().__init__(name=name, reduction=reduction, dtype=dtype)
        self.fn = fn if fn is not None else type(self).fn
        self._fn_kwargs = kwargs

    def call(self, y_true, y_pred):
        y_true, y_pred = squeeze_or_expand(y_true, y_pred)
        return self.fn(y_true, y_pred, **self._fn_kwargs)

    def __repr__(self) -> str:
        return f"<LossFunctionWrapper({getattr(self.fn, '__name__', self.fn)}, kwargs={self._fn_kwargs})>"
