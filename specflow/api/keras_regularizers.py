"""``sf.keras.regularizers``: Keras 3's ``L1`` (``l1``), ``L2`` (``l2``), ``L1L2`` (``l1_l2``).
A regularizer is a function of a weight to its penalty (an sf tensor): ``L1``: l1 sum|w|,
``L2``: l2 sum w^2 (factors default to 0.01; ``L1L2``'s to 0). Layers taking
``kernel_regularizer=``/``bias_regularizer=`` list the penalties of their current weights in
``layer.losses`` (computed when read, so a tape sees them), and ``fit``/``evaluate`` add their
sum to the loss, as Keras does."""

from __future__ import annotations

import numpy as np

from specflow.api import tf_names


class Regularizer:
    def __call__(self, x):
        return np.float32(0.0)

    def get_config(self) -> dict:
        return {}


class L1L2(Regularizer):
    def __init__(self, l1=0.0, l2=0.0):
        self.l1 = float(0.0 if l1 is None else l1)
        self.l2 = float(0.0 if l2 is None else l2)

    def __call__(self, x):
        x = tf_names._t(x)
        dt = x.dtype.numpy
        out = tf_names.zeros([], x.dtype)
        if self.l1:
            out = out + np.asarray(self.l1, dt) * tf_names.reduce_sum(tf_names.abs(x))
        if self.l2:
            out = out + np.asarray(self.l2, dt) * tf_names.reduce_sum(tf_names.square(x))
        return out

    def get_config(self) -> dict:
        return {"l1": self.l1, "l2": self.l2}


class L1(Regularizer):
    def __init__(self, l1=0.01):
        self.l1 = float(0.01 if l1 is None else l1)

    def __call__(self, x):
        x = tf_names._t(x)
        return np.asarray(self.l1, x.dtype.numpy) * tf_names.reduce_sum(tf_names.abs(x))

    def get_config(self) -> dict:
        return {"l1": self.l1}


class L2(Regularizer):
    def __init__(self, l2=0.01):
        self.l2 = float(0.01 if l2 is None else l2)

    def __call__(self, x):
        x = tf_names._t(x)
        return np.asarray(self.l2, x.dtype.numpy) * tf_names.reduce_sum(tf_names.square(x))

    def get_config(self) -> dict:
        return {"l2": self.l2}


l1, l2, l1_l2 = L1, L2, L1L2
_NAMES = {"l1": L1, "l2": L2, "l1_l2": L1L2, "L1": L1, "L2": L2, "L1L2": L1L2}


def get(identifier):
    """A regularizer from a name ("l1", "l2", "l1_l2"), an object or a callable (None: None)."""
    if identifier is None:
        return None
    if isinstance(identifier, str):
        if identifier not in _NAMES:
            raise ValueError(f"Could not interpret regularizer identifier: {identifier!r} (known: l1, l2, l1_l2)")
        return _NAMES[identifier]()
    if isinstance(identifier, type) and issubclass(identifier, Regularizer):
        return identifier()
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret regularizer identifier: {identifier!r}")
