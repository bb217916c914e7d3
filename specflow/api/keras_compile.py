"""What ``Model.compile`` sets up, as Keras 3's trainer does: the optimizer, a ``CompileLoss``
(None without ``loss=``: a custom ``train_step`` may not need one), a ``CompileMetrics`` container
(None without ``metrics=``; its metrics made on the first batch, since "accuracy"'s kind comes
from the shapes), the loss tracker ``Mean(name="loss")`` and the train/test/predict functions."""

from __future__ import annotations

import numpy as np

from specflow.api import keras_metrics as km
from specflow.api import tf_names
from specflow.api.keras_loss_base import Loss, LossFunctionWrapper


def resolve_loss(identifier):
    """A ``Loss`` for compile()'s ``loss``: a name, a Loss object or class, or a function
    (y_true, y_pred) -> per-sample values (wrapped, as Keras's CompileLoss does)."""
    from specflow.api import keras_losses_more

    table = keras_losses_more.NAMES
    if isinstance(identifier, str):
        if identifier not in table:
            raise ValueError(f"Could not interpret loss identifier: {identifier!r} (known: {', '.join(table)})")
        return table[identifier]()
    if isinstance(identifier, type):
        identifier = identifier()
    if isinstance(identifier, Loss):
        return identifier
    if not callable(identifier):
        raise ValueError(f"Could not interpret loss identifier: {identifier!r} (a name, a loss object or a function "
                         "(y_true, y_pred) -> loss)")
    return LossFunctionWrapper(identifier, name=getattr(identifier, "__name__", None))


class CompileLoss:
    """compile()'s loss for the model's one output: ``loss(y, y_pred, sample_weight)`` (float32)
    times ``loss_weights``."""

    def __init__(self, loss, loss_weights=None):
        self.loss = resolve_loss(loss)
        self.weight = None
        if loss_weights is not None:
            w = np.asarray(loss_weights, np.float32).reshape(-1)
            if w.size != 1:
                raise ValueError(f"loss_weights: one number for the model's one output, got {loss_weights!r}")
            self.weight = np.float32(w[0])

    def __call__(self, y_true, y_pred, sample_weight=None):
        value = tf_names.cast(self.loss(y_true, y_pred, sample_weight), "float32")
        return value if self.weight is None else value * self.weight


class CompileMetrics:
    """Keras's ``CompileMetrics``: one container in ``model.metrics`` (name "compile_metrics")
    whose ``result()`` is a dict of its metrics' results. ``metrics=`` ignore sample weights;
    ``weighted_metrics=`` use them (named "weighted_<name>" when the name is taken)."""

    name = "compile_metrics"

    def __init__(self, metrics, weighted_metrics=None):
        for what, given in (("metrics", metrics), ("weighted_metrics", weighted_metrics)):
            if given is not None and not isinstance(given, (list, tuple)):
                raise ValueError(f"Expected `{what}` argument to be a list or tuple. Received instead: "
                                 f"{what}={given!r}")
            for m in given or ():
                km.check_metric(m)
        self.identifiers, self.weighted_identifiers = list(metrics or []), list(weighted_metrics or [])
        self.unweighted: list = []
        self.weighted: list = []
        self.built = False

    @property
    def metrics(self) -> list:
        return self.unweighted + self.weighted

    @staticmethod
    def _make(identifiers, y_true, y_pred) -> list:
        from specflow.api.keras_metric_objects import MeanMetricWrapper

        out = []
        for ident in identifiers:
            if km.is_metric_object(ident):
                out.append(ident)
                continue
            name, fn, direction = km.resolve_metric(ident, y_true, y_pred)
            metric = MeanMetricWrapper(fn, name=name)
            metric.direction = direction
            out.append(metric)
        return out

    def build(self, y_true, y_pred) -> None:
        self.unweighted = self._make(self.identifiers, y_true, y_pred)
        self.weighted = self._make(self.weighted_identifiers, y_true, y_pred)
        self.built = True

    def update_state(self, y_true, y_pred, sample_weight=None) -> None:
        y_true, y_pred = tf_names._t(y_true), tf_names._t(y_pred)
        if not self.built:
            self.build(y_true, y_pred)
        for m in self.unweighted:
            m.update_state(y_true, y_pred)
        for m in self.weighted:
            m.update_state(y_true, y_pred, sample_weight=sample_weight)

    def result(self) -> dict:
        """Keras's names: a repeated name gets "_1", "_2"...; a weighted metric whose name is
        taken is "weighted_<name>"."""
        results, counters = {}, {}

        def put(name, value):
            if name in counters:
                counters[name] += 1
                name = f"{name}_{counters[name] - 1}"
            else:
                counters[name] = 1
            results[name] = value

        for m in self.unweighted:
            put(m.name, m.result())
        for m in self.weighted:
            put(m.name if m.name not in counters else f"weighted_{m.name}", m.result())
        return results

    def reset_state(self) -> None:
        for m in self.metrics:
            m.reset_state()

    def directions(self) -> dict:
        """Metric name -> "up"/"down"/None, before they are built too (EarlyStopping's mode="auto")."""
        if self.built:
            return {m.name: getattr(m, "direction", None) for m in self.metrics}
        return {getattr(m, "name", None) or str(m): km.direction_of(m)
                for m in self.identifiers + self.weighted_identifiers}


class Compiled:
    """What compile() set up; a plain object, so the model's variables do not include its state."""

    def __init__(self, optimizer, loss, loss_weights, metrics, run_eagerly: bool, weighted_metrics=None):
        from specflow.api.keras_metric_objects import Mean
        from specflow.api.keras_optimizers import resolve

        self.optimizer = resolve(optimizer)
        self.loss = None if loss is None else CompileLoss(loss, loss_weights)
        self.metrics = None if metrics is None and weighted_metrics is None else \
            CompileMetrics(metrics, weighted_metrics)
        self.loss_tracker = Mean(name="loss")
        self.loss_tracker.direction = "down"
        self.run_eagerly = run_eagerly
        self.functions: dict[str, object] = {}
