"""The per-sample metric functions ``Model.compile``'s metric names resolve to, as Keras 3's:
each becomes a ``MeanMetricWrapper`` (api/keras_metric_objects.py; api/keras_compile.py holds
what compile sets up). ``"accuracy"`` becomes binary, sparse categorical or categorical accuracy
from the shapes of ``y`` and the prediction (Keras 3's ``get_metric`` looks at the shapes, not at
the loss); ``squeeze_or_expand`` is Keras's ``squeeze_or_expand_to_same_rank``."""

from __future__ import annotations

from specflow.api import tf_names

# --- shapes and per-sample values ----------------------------------------------------------------


def _rank(t) -> int:
    return t.shape.rank


def squeeze_or_expand(y_true, y_pred):
    """Keras's ``squeeze_or_expand_to_same_rank``: ranks one apart with a last dimension of 1."""
    rt, rp = _rank(y_true), _rank(y_pred)
    if rt == rp + 1 and y_true.shape[-1] == 1:
        if rp == 1:
            y_pred = tf_names.expand_dims(y_pred, -1)
        else:
            y_true = tf_names.squeeze(y_true, [-1])
    elif rp == rt + 1 and y_pred.shape[-1] == 1:
        if rt == 1:
            y_true = tf_names.expand_dims(y_true, -1)
        else:
            y_pred = tf_names.squeeze(y_pred, [-1])
    return y_true, y_pred


def _float(y_true, y_pred):
    return tf_names.cast(y_true, y_pred.dtype)


def _argmax_matches(y_true, y_pred):
    """Keras's sparse_categorical_accuracy on integer-valued ``y_true``."""
    y_true = _float(y_true, y_pred)
    if _rank(y_true) == _rank(y_pred) and y_true.shape[-1] == 1:
        y_true = tf_names.squeeze(y_true, [-1])
    picked = tf_names.cast(tf_names.argmax(y_pred, axis=-1), y_pred.dtype)
    return tf_names.cast(tf_names.equal(y_true, picked), "float32")


def sparse_categorical_accuracy(y_true, y_pred):
    return _argmax_matches(y_true, y_pred)


def categorical_accuracy(y_true, y_pred):
    return _argmax_matches(tf_names.argmax(y_true, axis=-1), y_pred)


def binary_accuracy(y_true, y_pred, threshold: float = 0.5):
    y_true, y_pred = squeeze_or_expand(_float(y_true, y_pred), y_pred)
    return tf_names.cast(tf_names.equal(y_true, tf_names.cast(y_pred > threshold, y_true.dtype)), "float32")


def mean_squared_error(y_true, y_pred):
    y_true, y_pred = squeeze_or_expand(_float(y_true, y_pred), y_pred)
    return tf_names.reduce_mean(tf_names.square(y_pred - y_true), axis=-1)


def mean_absolute_error(y_true, y_pred):
    y_true, y_pred = squeeze_or_expand(_float(y_true, y_pred), y_pred)
    return tf_names.reduce_mean(tf_names.abs(y_pred - y_true), axis=-1)


# name -> (per-sample function, direction)
METRICS = {
    "binary_accuracy": (binary_accuracy, "up"),
    "categorical_accuracy": (categorical_accuracy, "up"),
    "sparse_categorical_accuracy": (sparse_categorical_accuracy, "up"),
    "mse": (mean_squared_error, "down"), "mean_squared_error": (mean_squared_error, "down"),
    "mae": (mean_absolute_error, "down"), "mean_absolute_error": (mean_absolute_error, "down"),
}


def is_metric_object(identifier) -> bool:
    return hasattr(identifier, "update_state") and hasattr(identifier, "result")


def resolve_metric(identifier, y_true, y_pred) -> tuple:
    """(name, per-sample function, direction) for a compile() metric, given the first batch."""
    if callable(identifier):
        return getattr(identifier, "__name__", type(identifier).__name__), identifier, None
    name = str(identifier)
    if name.lower() in ("accuracy", "acc"):
        binary = y_pred.shape[-1] == 1
        sparse = _rank(y_true) < _rank(y_pred) or (y_true.shape[-1] == 1 and y_pred.shape[-1] != 1)
        kind = "binary_accuracy" if binary else "sparse_categorical_accuracy" if sparse else "categorical_accuracy"
        return name, METRICS[kind][0], "up"
    return name, *METRICS[name]


def direction_of(identifier) -> str | None:
    if is_metric_object(identifier):
        return getattr(identifier, "direction", None)
    name = str(identifier)
    return "up" if name.lower() in ("accuracy", "acc") else METRICS.get(name, (None, None))[1]


def check_metric(identifier) -> None:
    if is_metric_object(identifier) or callable(identifier) or str(identifier).lower() in ("accuracy", "acc") \
            or identifier in METRICS:
        return
    raise ValueError(f"Could not interpret metric identifier: {identifier!r} (known: accuracy, acc, "
                     f"{', '.join(METRICS)}, or a function (y_true, y_pred) -> per-sample values)")
