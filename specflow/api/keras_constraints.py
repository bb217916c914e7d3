"""``sf.keras.constraints``: Keras 3's weight constraints, applied by the optimizers after each
update to a weight made with ``add_weight(constraint=...)`` (Keras's order: after the update and
``iterations``). Formulas as Keras's (epsilon 1e-7)."""

from __future__ import annotations

import re

import numpy as np

from specflow.api import tf_names

EPSILON = 1e-7


def _norms(w, axis):
    return tf_names.sqrt(tf_names.reduce_sum(tf_names.square(w), axis=axis, keepdims=True))


def _c(v, w):
    return np.asarray(v, w.dtype.numpy)


class Constraint:
    def __call__(self, w):
        return w

    def get_config(self) -> dict:
        return {}


class MaxNorm(Constraint):
    def __init__(self, max_value=2, axis=0):
        self.max_value, self.axis = max_value, axis

    def __call__(self, w):
        w = tf_names._t(w)
        norms = _norms(w, self.axis)
        desired = tf_names.clip_by_value(norms, _c(0, w), _c(self.max_value, w))
        return w * (desired / (_c(EPSILON, w) + norms))

    def get_config(self) -> dict:
        return {"max_value": self.max_value, "axis": self.axis}


class NonNeg(Constraint):
    def __call__(self, w):
        w = tf_names._t(w)
        return tf_names.maximum(w, _c(0, w))


class UnitNorm(Constraint):
    def __init__(self, axis=0):
        self.axis = axis

    def __call__(self, w):
        w = tf_names._t(w)
        return w / (_c(EPSILON, w) + _norms(w, self.axis))

    def get_config(self) -> dict:
        return {"axis": self.axis}


class MinMaxNorm(Constraint):
    def __init__(self, min_value=0.0, max_value=1.0, rate=1.0, axis=0):
        self.min_value, self.max_value, self.rate, self.axis = min_value, max_value, rate, axis

    def __call__(self, w):
        w = tf_names._t(w)
        norms = _norms(w, self.axis)
        desired = _c(self.rate, w) * tf_names.clip_by_value(norms, _c(self.min_value, w), _c(self.max_value, w)) \
            + _c(1 - self.rate, w) * norms  # fmt: skip
        return w * (desired / (_c(EPSILON, w) + norms))

    def get_config(self) -> dict:
        return {"min_value": self.min_value, "max_value": self.max_value, "rate": self.rate, "axis": self.axis}


max_norm, non_neg, unit_norm, min_max_norm = MaxNorm, NonNeg, UnitNorm, MinMaxNorm
_CLASSES = (Constraint, MaxNorm, MinMaxNorm, NonNeg, UnitNorm)
_BY_NAME = {c.__name__: c for c in _CLASSES} | {re.sub(r"(?<=[a-z])(?=[A-Z])", "_", c.__name__).lower(): c for c in _CLASSES}


def get(identifier):
    """A constraint from a name ("non_neg", "MaxNorm", ...), a constraint, or a callable."""
    if identifier is None:
        return None
    if isinstance(identifier, str):
        if identifier not in _BY_NAME:
            raise ValueError(f"Could not interpret constraint identifier: {identifier!r} (known: {', '.join(_BY_NAME)})")
        return _BY_NAME[identifier]()
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret constraint identifier: {identifier!r}")
