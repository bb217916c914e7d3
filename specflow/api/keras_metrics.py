"""What ``Model.compile`` resolves its arguments to, as Keras 3 does: optimizer names (with
Keras's default learning rates), loss names, metric names. A metric is Keras's ``Mean`` over
per-sample values (float32 ``total`` and ``count`` variables): the loss tracker adds the batch's
loss times its size, a metric the sum of its per-sample values and their number. ``"accuracy"``
becomes binary, sparse categorical or categorical accuracy from the shapes of ``y`` and the
prediction (Keras 3's ``get_metric`` looks at the shapes, not at the loss). ``Compiled`` holds
what ``compile`` set up: the optimizer, the loss (with Keras's squeeze/expand of ``y`` and a mean
over per-sample values), the metrics and the train/test/predict functions."""

from __future__ import annotations

import numpy as np

from specflow.api import tf_names
from specflow.api.variables import Variable

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


class MeanMetric:
    """Keras's ``Mean``: float32 ``total`` and ``count``; ``result`` = total / count (0 if none)."""

    def __init__(self, name: str, fn=None, direction: str | None = None):
        self.name, self.fn, self.direction = name, fn, direction
        self.total = Variable(np.float32(0), trainable=False, name=f"{name}/total")
        self.count = Variable(np.float32(0), trainable=False, name=f"{name}/count")

    def reset_state(self) -> None:
        self.total.assign(np.float32(0))
        self.count.assign(np.float32(0))

    def update(self, total, count) -> None:
        self.total.assign_add(tf_names.cast(total, "float32"))
        self.count.assign_add(tf_names.cast(count, "float32"))

    def update_samples(self, y_true, y_pred) -> None:
        """The mean over the batch of the per-sample values ``fn`` gives (rank > 1: averaged first)."""
        values = tf_names.cast(self.fn(y_true, y_pred), "float32")
        if _rank(values) > 1:
            values = tf_names.reduce_mean(values, axis=list(range(1, _rank(values))))
        n = tf_names.shape(values)[0] if _rank(values) else np.float32(1)
        self.update(tf_names.reduce_sum(values), n)

    def result_tensor(self):
        return tf_names.divide_no_nan(self.total.read_value(), self.count.read_value())

    def result(self) -> float:
        total, count = np.float32(self.total.numpy()), np.float32(self.count.numpy())
        return float(total / count) if count else 0.0


class ObjectMetric:
    """A stateful metric object (sf.keras.metrics.*) in compile's metric list."""

    def __init__(self, metric):
        self.metric, self.name, self.direction = metric, metric.name, getattr(metric, "direction", None)

    def reset_state(self) -> None:
        self.metric.reset_state()

    def update_samples(self, y_true, y_pred) -> None:
        self.metric.update_state(y_true, y_pred)

    def result_tensor(self):
        return self.metric.result()

    def result(self) -> float:
        return float(np.asarray(self.metric.result()))


def _is_object(identifier) -> bool:
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
    if _is_object(identifier):
        return getattr(identifier, "direction", None)
    name = str(identifier)
    return "up" if name.lower() in ("accuracy", "acc") else METRICS.get(name, (None, None))[1]


def check_metric(identifier) -> None:
    if _is_object(identifier) or callable(identifier) or str(identifier).lower() in ("accuracy", "acc") \
            or identifier in METRICS:
        return
    raise ValueError(f"Could not interpret metric identifier: {identifier!r} (known: accuracy, acc, "
                     f"{', '.join(METRICS)}, or a function (y_true, y_pred) -> per-sample values)")


# --- losses and optimizers -------------------------------------------------------------------------


def _mae_loss(y_true, y_pred):
    return mean_absolute_error(y_true, y_pred)


def resolve_loss(identifier):
    """(callable loss, sparse?) for a compile() loss: a name, an sf.keras.losses object, a function."""
    from specflow.api import keras

    table = {
        "sparse_categorical_crossentropy": keras.SparseCategoricalCrossentropy,
        "categorical_crossentropy": keras.CategoricalCrossentropy,
        "binary_crossentropy": keras.BinaryCrossentropy,
        "mse": keras.MeanSquaredError, "mean_squared_error": keras.MeanSquaredError,
        "mae": lambda: _mae_loss, "mean_absolute_error": lambda: _mae_loss,
    }
    for cls in (keras.SparseCategoricalCrossentropy, keras.CategoricalCrossentropy, keras.BinaryCrossentropy,
                keras.MeanSquaredError):
        table[cls.__name__] = cls
    from specflow.api import keras_losses_more

    table.update(keras_losses_more.NAMES)
    if isinstance(identifier, str):
        if identifier not in table:
            raise ValueError(f"Could not interpret loss identifier: {identifier!r} (known: {', '.join(table)})")
        identifier = table[identifier]()
    elif isinstance(identifier, type):
        identifier = identifier()
    if not callable(identifier):
        raise ValueError(f"Could not interpret loss identifier: {identifier!r} (a name, a loss object or a function "
                         "(y_true, y_pred) -> loss)")
    sparse = isinstance(identifier, keras.SparseCategoricalCrossentropy) or getattr(identifier, "_sf_sparse", False)
    return identifier, sparse


def resolve_optimizer(identifier):
    from specflow.api import optimizers

    table = {"sgd": optimizers.SGD, "adam": optimizers.Adam, "adamw": optimizers.AdamW,
             "rmsprop": optimizers.RMSprop, "adagrad": optimizers.Adagrad}
    if isinstance(identifier, str):
        if identifier.lower() not in table:
            raise ValueError(f"Could not interpret optimizer identifier: {identifier!r} (known: {', '.join(table)})")
        return table[identifier.lower()]()
    if isinstance(identifier, optimizers.Optimizer):
        return identifier
    raise ValueError(f"Could not interpret optimizer identifier: {identifier!r} (a name or an sf.keras.optimizers "
                     "object)")


# --- what compile() set up ---------------------------------------------------------------------


class Compiled:
    """What compile() set up; a plain object, so the model's variables do not include its state."""

    def __init__(self, optimizer, loss, metrics, run_eagerly: bool):
        self.optimizer = resolve_optimizer(optimizer)
        if loss is None:
            raise ValueError("No loss to compute. Provide a `loss` argument in `compile()`.")
        self.loss_fn, self.sparse = resolve_loss(loss)
        if metrics is not None and not isinstance(metrics, (list, tuple)):
            raise ValueError(f"Expected `metrics` argument to be a list or tuple. Received instead: metrics={metrics!r}")
        for m in metrics or ():
            check_metric(m)
        self.metric_ids = list(metrics or [])
        self.loss_tracker = MeanMetric("loss", direction="down")
        self.metrics: list[MeanMetric] | None = None  # made on the first batch (accuracy's kind needs shapes)
        self.run_eagerly = run_eagerly
        self.loss_weight = None
        self.functions: dict[str, object] = {}

    def all_metrics(self) -> list:
        return [self.loss_tracker, *(self.metrics or [])]

    def build_metrics(self, y, y_pred) -> None:
        if self.metrics is None:
            self.metrics = [ObjectMetric(m) if _is_object(m) else MeanMetric(*resolve_metric(m, y, y_pred))
                            for m in self.metric_ids]

    def loss(self, y, y_pred):
        y = tf_names._t(y)
        if self.sparse:
            if y.shape.rank == y_pred.shape.rank and y.shape[-1] == 1:
                y = tf_names.squeeze(y, [-1])
        else:
            y, y_pred = squeeze_or_expand(tf_names.cast(y, y_pred.dtype), y_pred)
        value = self.loss_fn(y, y_pred)
        value = tf_names.reduce_mean(value) if value.shape.rank else value
        return value if self.loss_weight is None else value * self.loss_weight

    def update(self, x, y, y_pred, loss) -> list:
        """The loss tracker and metrics updated with one batch; their results (tensors)."""
        x, y = tf_names._t(x), tf_names._t(y)
        self.build_metrics(y, y_pred)
        n = x.shape[0] if x.shape.rank and x.shape[0] is not None else tf_names.shape(x)[0]
        n = tf_names.cast(n, "float32")
        self.loss_tracker.update(loss * n, n)
        for m in self.metrics:
            m.update_samples(y, y_pred)
        return [m.result_tensor() for m in self.all_metrics()]
