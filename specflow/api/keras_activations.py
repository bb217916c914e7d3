"""``sf.keras.activations``: Keras 3's activation functions on sf tensors, and ``get(name)``."""

from __future__ import annotations

import numpy as np

from specflow.api import nn, tf_names


def _np(x, v):
    return np.asarray(v, x.dtype.numpy)


def relu(x, negative_slope=0.0, max_value=None, threshold=0.0):
    """Keras 3's arithmetic: x where x > threshold (else 0), clipped to max_value, minus
    negative_slope * relu(threshold - x)."""
    x = tf_names._t(x)
    if negative_slope and max_value is None and not threshold:
        return nn.leaky_relu(x, alpha=negative_slope)
    negative = nn.relu(_np(x, threshold) - x) if negative_slope else None
    if threshold:
        out = x * tf_names.cast(tf_names.greater(x, _np(x, threshold)), x.dtype)
    else:
        out = nn.relu(x)
    if max_value is not None:
        out = tf_names.clip_by_value(out, _np(x, 0), _np(x, max_value))
    if negative is not None:
        out = out - _np(x, negative_slope) * negative
    return out


def sigmoid(x):
    return nn.sigmoid(tf_names._t(x))


def tanh(x):
    return nn.tanh(tf_names._t(x))


def softmax(x, axis=-1):
    return nn.softmax(tf_names._t(x), axis=axis)


def log_softmax(x, axis=-1):
    return nn.log_softmax(tf_names._t(x), axis=axis)


def gelu(x, approximate=False):
    return nn.gelu(tf_names._t(x), approximate=approximate)


def elu(x, alpha=1.0):
    x = tf_names._t(x)
    if alpha == 1.0:
        return nn.elu(x)
    res = nn.elu(x)  # Keras's: the Elu op's values, scaled where x <= 0
    return tf_names.where(tf_names.greater(x, _np(x, 0)), res, _np(x, alpha) * res)


def selu(x):
    return nn.selu(tf_names._t(x))


def softplus(x):
    return nn.softplus(tf_names._t(x))


def softsign(x):
    x = tf_names._t(x)
    return x / (_np(x, 1) + tf_names.abs(x))


def silu(x):
    return nn.silu(tf_names._t(x))


swish = silu


def linear(x):
    return tf_names._t(x)


def leaky_relu(x, negative_slope=0.2):
    return nn.leaky_relu(tf_names._t(x), alpha=negative_slope)


def relu6(x):
    return nn.relu6(tf_names._t(x))


def hard_sigmoid(x):
    """Keras 3's: relu6(x + 3) / 6."""
    x = tf_names._t(x)
    return nn.relu6(x + _np(x, 3)) / _np(x, 6)


def hard_silu(x):
    x = tf_names._t(x)
    return x * hard_sigmoid(x)


hard_swish = hard_silu


def exponential(x):
    return tf_names.exp(tf_names._t(x))


def mish(x):
    x = tf_names._t(x)
    return x * nn.tanh(nn.softplus(x))


_ALL = {f.__name__: f for f in (relu, sigmoid, tanh, softmax, log_softmax, gelu, elu, selu, softplus, softsign,
                                silu, linear, leaky_relu, relu6, hard_sigmoid, hard_silu, exponential, mish)}
_ALL.update({"swish": silu, "hard_swish": hard_silu})


def get(identifier):
    """A function from its name ("relu", ...); a callable as is; None: linear."""
    if identifier is None:
        return linear
    if callable(identifier):
        return identifier
    if isinstance(identifier, str) and identifier in _ALL:
        return _ALL[identifier]
    raise ValueError(f"Could not interpret activation function identifier: {identifier!r} (known: {', '.join(_ALL)})")


def serialize(fn) -> str:
    return getattr(fn, "__name__", str(fn))

