"""Keras 3's training API for ``sf.keras.Model`` (a base class to subclass) and
``sf.keras.Sequential`` (both take ``TrainingMixin``): ``compile``, ``fit``, ``evaluate``,
``predict``, ``train_on_batch``, ``test_on_batch``, ``predict_on_batch``.

As in Keras 3 (TensorFlow backend), ``fit`` runs ``self.train_step(data)`` inside one
``sf.function`` per compiled model (traced once per batch signature; ``run_eagerly=True`` runs
it op by op), ``evaluate`` ``test_step`` and ``predict`` ``predict_step``: a subclass may
override them, with ``self.compute_loss(x=, y=, y_pred=, sample_weight=)``, ``self.metrics``,
``self.optimizer`` and ``self.trainable_variables``, and the dict a step returns is the logs (the
metrics' results instead when the keys are the same, as Keras's ``_get_metrics_result_or_logs``).
The default steps are Keras's: forward under a GradientTape, the compiled loss plus the
regularizers' penalties, ``optimizer.apply_gradients``, the loss tracker (``Mean`` of the batch
losses weighted by batch size) and the compiled metrics (api/keras_compile.py). Data handling
(batches, sample weights, validation_split) is api/keras_data_adapter.py."""

from __future__ import annotations

import inspect
import time
import warnings

import numpy as np

from specflow.api import keras_data_adapter as adapter
from specflow.api import tf_names
from specflow.api.keras_callbacks import CallbackList
from specflow.api.keras_compile import Compiled, CompileMetrics
from specflow.api.keras_export import note_input
from specflow.api.module import Module
from specflow.api.variables import Variable


def _fmt(logs: dict) -> str:
    return " - ".join(f"{k}: {v:.4f}" if abs(v) >= 1e-3 or v == 0 else f"{k}: {v:.4e}" for k, v in logs.items())


def _verbose(verbose) -> int:
    return 1 if verbose == "auto" else int(verbose)


def pythonify_logs(logs) -> dict:
    """Keras's: nested dicts flattened, values as floats, sorted by name."""
    out = {}
    for k, v in sorted((logs or {}).items()):
        if isinstance(v, dict):
            out.update(pythonify_logs(v))
        else:
            try:
                out[k] = float(np.asarray(v))
            except (TypeError, ValueError):
                out[k] = v
    return out


def _first_leaf(x):
    while isinstance(x, (list, tuple, dict)):
        x = next(iter(x.values())) if isinstance(x, dict) else x[0]
    return x


class TrainingMixin:
    """compile/fit/evaluate/predict for a model whose ``weights`` are in Keras's order."""

    stop_training = False

    # --- weights in Keras's order ------------------------------------------------------------

    @property
    def trainable_weights(self) -> list:
        return [w for w in self.weights if w.trainable]

    @property
    def non_trainable_weights(self) -> list:
        return [w for w in self.weights if not w.trainable]

    @property
    def trainable_variables(self) -> tuple:
        return tuple(self.trainable_weights)

    @property
    def variables(self) -> tuple:
        return tuple(self.weights)

    # --- compile -----------------------------------------------------------------------------

    def compile(self, optimizer="rmsprop", loss=None, loss_weights=None, metrics=None, weighted_metrics=None,
                run_eagerly: bool = False, steps_per_execution=1, jit_compile="auto") -> None:
        """Keras's parameters (in its order): optimizer "rmsprop" | "adam" | "sgd" | "adamw" |
        "adagrad" | ... or an object; loss a name, an sf.keras.losses object or a function, or
        None (a custom train_step may compute its own); loss_weights a number (one output);
        metrics ["accuracy", "mse", ...] or metric objects (sample weights ignored), weighted_metrics
        the same, weighted. ``steps_per_execution`` and ``jit_compile`` have no effect."""
        self._sf_compiled = Compiled(optimizer, loss, loss_weights, metrics, run_eagerly, weighted_metrics)

    @property
    def compiled(self) -> bool:
        return getattr(self, "_sf_compiled", None) is not None

    @property
    def optimizer(self):
        return self._sf_compiled.optimizer if self.compiled else None

    def compiled_loss(self, y, y_pred, sample_weight=None, regularization_losses=None):
        """Keras 3's deprecated shim: ``compute_loss(y=y, y_pred=y_pred, sample_weight=...)``."""
        warnings.warn("`model.compiled_loss()` is deprecated. Instead, use `model.compute_loss(x, y, y_pred, "
                      "sample_weight, training)`.", stacklevel=2)
        return self.compute_loss(x=None, y=y, y_pred=y_pred, sample_weight=sample_weight)

    @property
    def compiled_metrics(self):
        """Keras 3's deprecated shim: ``update_state(y, y_pred, sample_weight=None)`` updates
        every metric of ``self.metrics`` (a ``Mean``, the loss tracker, with ``y_pred``)."""
        model = self

        class DeprecatedCompiledMetric:
            def update_state(_, y, y_pred, sample_weight=None):
                from specflow.api.keras_metric_objects import Mean, MeanMetricWrapper

                warnings.warn("`model.compiled_metrics()` is deprecated. Instead, use e.g.: for metric in "
                              "self.metrics: metric.update_state(y, y_pred)", stacklevel=2)
                for m in model.metrics:
                    if isinstance(m, Mean) and not isinstance(m, MeanMetricWrapper):
                        m.update_state(y_pred, sample_weight=sample_weight)
                    else:
                        m.update_state(y, y_pred, sample_weight=sample_weight)

        return DeprecatedCompiledMetric()

    @property
    def metrics(self) -> list:
        """Keras's order: the loss tracker, the compiled metrics' container, then the metric
        objects set as attributes of the model."""
        out = []
        if self.compiled:
            out.append(self._sf_compiled.loss_tracker)
            if self._sf_compiled.metrics is not None:
                out.append(self._sf_compiled.metrics)
        for k, value in vars(self).items():
            if not k.startswith("_sf_"):
                out.extend(item for item in held(value) if _is_metric(item) and item not in out)
        return out

    @property
    def metrics_names(self) -> list[str]:
        return [m.name for m in self.metrics]

    def reset_metrics(self) -> None:
        for m in self.metrics:
            m.reset_state()

    def get_metrics_result(self) -> dict:
        """Each metric's result by name (a container's dict merged in), as Keras's."""
        out = {}
        for m in self.metrics:
            result = m.result()
            if isinstance(result, dict):
                out.update(result)
            else:
                out[m.name] = result
        return out

    def _metric_directions(self) -> dict:
        """Metric name -> "up" or "down" (None: unknown), for EarlyStopping's mode="auto"."""
        out = {}
        for m in self.metrics:
            if isinstance(m, CompileMetrics):
                out.update(m.directions())
            else:
                out[m.name] = getattr(m, "direction", None)
        return out

    def _need_compiled(self) -> Compiled:
        if not self.compiled:
            raise ValueError("You must call `compile()` before using the model.")
        return self._sf_compiled

    # --- the steps (Keras 3's, TensorFlow backend) ------------------------------------------------

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """The compiled loss plus the regularizers' penalties (``self.losses``), as Keras's."""
        c = self._need_compiled()
        losses = []
        if c.loss is not None:
            losses.append(c.loss(y, y_pred, sample_weight))
        for penalty in self.losses:
            penalty = tf_names._t(penalty)
            losses.append(tf_names.reduce_sum(penalty if penalty.dtype.is_floating else tf_names.cast(penalty,
                                                                                                      "float32")))
        if not losses:
            raise ValueError("No loss to compute. Provide a `loss` argument in `compile()`.")
        total = losses[0]
        for value in losses[1:]:
            total = total + value
        return total

    def _compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """compute_loss, without ``training=`` for an override that does not take it."""
        params = inspect.signature(self.compute_loss).parameters
        if "training" in params or any(p.kind is p.VAR_KEYWORD for p in params.values()):
            return self.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight, training=training)
        return self.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight)

    def compute_metrics(self, x, y, y_pred, sample_weight=None) -> dict:
        c = self._need_compiled()
        if c.metrics is not None:
            c.metrics.update_state(y, y_pred, sample_weight)
        return self.get_metrics_result()

    def _track_loss(self, loss, x) -> None:
        n = tf_names.cast(tf_names.shape(_first_leaf(x))[0], "float32")
        self._sf_compiled.loss_tracker.update_state(loss, sample_weight=n)

    def train_step(self, data) -> dict:
        from specflow.api.tape import GradientTape

        x, y, sample_weight = adapter.unpack(data)
        with GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self._compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight, training=True)
            self._track_loss(loss, x)
        variables = self.trainable_weights
        if variables:
            grads = tape.gradient(loss, variables)
            self.optimizer.apply_gradients(zip(grads, variables))
        else:
            warnings.warn("The model does not have any trainable weights.", stacklevel=2)
        return self.compute_metrics(x, y, y_pred, sample_weight=sample_weight)

    def test_step(self, data) -> dict:
        x, y, sample_weight = adapter.unpack(data)
        y_pred = self(x, training=False)
        loss = self._compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight, training=False)
        self._track_loss(loss, x)
        return self.compute_metrics(x, y, y_pred, sample_weight=sample_weight)

    def predict_step(self, data):
        x, _, _ = adapter.unpack(data)
        return self(x, training=False)

    def _function(self, kind: str):
        c = self._sf_compiled if self.compiled else None
        cache = c.functions if c is not None else self.__dict__.setdefault("_sf_predict_fns", {})
        fn = cache.get(kind)
        if fn is None:
            from specflow.api.function import function

            step = {"train": self.train_step, "test": self.test_step, "predict": self.predict_step}[kind]
            fn = step if (c is not None and c.run_eagerly) else function(step, name=f"{kind}_function")
            cache[kind] = fn
        return fn

    def _needs_targets(self, step: str) -> bool:
        """The default train/test step with a compiled loss needs y (a clear error early)."""
        overridden = getattr(type(self), step) is not getattr(TrainingMixin, step)
        return not overridden and self.compiled and self._sf_compiled.loss is not None

    def _metrics_or_logs(self, logs) -> dict:
        """Keras's ``_get_metrics_result_or_logs``: the metrics' results when the step's logs
        have the same keys, else the step's logs (a custom step's own)."""
        results = self.get_metrics_result()
        if isinstance(logs, dict) and set(logs) == set(results):
            return pythonify_logs(results)
        return pythonify_logs(logs)

    def _in_order(self, logs: dict, return_dict: bool):
        """The dict, or Keras's list: in ``metrics``' order (a container's metrics in theirs),
        then the other keys sorted; one value: a float."""
        if return_dict:
            return logs
        names = []
        for m in self.metrics:
            names.extend([sub.name for sub in m.metrics] if isinstance(m, CompileMetrics) else [m.name])
        values = [logs[n] for n in names if n in logs] + [logs[k] for k in sorted(logs) if k not in names]
        return values[0] if len(values) == 1 else values

    # --- fit / evaluate / predict --------------------------------------------------------------

    def fit(self, x=None, y=None, batch_size=None, epochs: int = 1, verbose="auto", callbacks=None,
            validation_split: float = 0.0, validation_data=None, shuffle: bool = True, sample_weight=None,
            initial_epoch: int = 0, steps_per_epoch=None, validation_batch_size=None):
        """Keras's fit (no class weights, validation_freq or validation_steps); returns the History."""
        self._need_compiled()
        if validation_split and validation_data is None:
            (x, y, sample_weight), validation_data = adapter.split_validation(x, y, sample_weight, validation_split)
        data = adapter.Data(x, y, batch_size, "fit", shuffle=shuffle, steps=steps_per_epoch,
                            need_y=self._needs_targets("train_step"), sample_weight=sample_weight)
        val = None
        if validation_data is not None:
            if adapter.is_batches(validation_data) and not isinstance(validation_data, tuple):
                val = (validation_data, None, None)
            else:
                val = adapter.unpack(tuple(validation_data))
        verbose = _verbose(verbose)
        cbs = CallbackList(callbacks, self, {"epochs": epochs, "steps": steps_per_epoch or data.num_batches,
                                             "verbose": verbose})
        self.history = cbs.history
        self.stop_training = False
        train = self._function("train")
        cbs.on_train_begin(logs={})
        epoch_logs: dict = {}
        for epoch in range(initial_epoch, epochs):
            self.reset_metrics()
            cbs.on_epoch_begin(epoch, logs={})
            start, logs, steps = time.perf_counter(), {}, 0
            for step, batch in enumerate(data.epoch()):
                cbs.on_train_batch_begin(step, logs={})
                logs = train(batch)
                steps += 1
                cbs.on_train_batch_end(step, logs=pythonify_logs(logs))
                if self.stop_training:
                    break
            epoch_logs = self._metrics_or_logs(logs)
            if val is not None:
                vx, vy, vsw = val
                vbs = None if adapter.is_batches(vx) else (validation_batch_size or batch_size)
                vlogs = self._evaluate(vx, vy, vsw, vbs, cbs)
                epoch_logs = dict(sorted({**epoch_logs, **{f"val_{k}": v for k, v in vlogs.items()}}.items()))
            if verbose:
                print(f"Epoch {epoch + 1}/{epochs} - {steps} steps - {time.perf_counter() - start:.2f}s - "
                      f"{_fmt(epoch_logs)}", flush=True)
            cbs.on_epoch_end(epoch, logs=epoch_logs)
            if self.stop_training:
                break
        cbs.on_train_end(logs=epoch_logs)
        return self.history

    def _evaluate(self, x, y, sample_weight, batch_size, cbs) -> dict:
        data = adapter.Data(x, y, batch_size, "evaluate", need_y=self._needs_targets("test_step"),
                            sample_weight=sample_weight)
        self.reset_metrics()
        test = self._function("test")
        cbs.on_test_begin(logs={})
        logs = {}
        for step, batch in enumerate(data.epoch()):
            cbs.on_test_batch_begin(step, logs={})
            logs = test(batch)
            cbs.on_test_batch_end(step, logs=pythonify_logs(logs))
        logs = self._metrics_or_logs(logs)
        cbs.on_test_end(logs=logs)
        return logs

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None, steps=None,
                 callbacks=None, return_dict: bool = False):
        """The loss (and metrics) over the data: a float, [loss, *metrics], or a dict."""
        self._need_compiled()
        if steps is not None and not adapter.is_batches(x):
            raise ValueError("evaluate: `steps` is supported for an iterable of batches only")
        logs = self._evaluate(x, y, sample_weight, batch_size, CallbackList(callbacks, self, add_history=False))
        if _verbose(verbose):
            print(_fmt(logs), flush=True)
        return self._in_order(logs, return_dict)

    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None):
        """``predict_step`` (``model(x, training=False)``) over batches, as numpy, concatenated
        (leaf by leaf for several outputs)."""
        data = adapter.Data(x, None, batch_size, "predict", need_y=False, steps=steps)
        fn = self._function("predict")
        outs = [fn(batch) for batch in data.epoch()]
        if not outs:
            raise ValueError("predict: no data (x is empty)")
        return _concat(outs)

    def train_on_batch(self, x, y=None, sample_weight=None, return_dict: bool = False):
        """One train step on one batch, the metrics reset first (Keras 3's)."""
        self._need_compiled()
        self.reset_metrics()
        logs = pythonify_logs(self._function("train")(adapter.leaves(adapter.pack(x, y, sample_weight))))
        return self._in_order(logs, return_dict)

    def test_on_batch(self, x, y=None, sample_weight=None, return_dict: bool = False):
        self._need_compiled()
        self.reset_metrics()
        logs = pythonify_logs(self._function("test")(adapter.leaves(adapter.pack(x, y, sample_weight))))
        return self._in_order(logs, return_dict)

    def predict_on_batch(self, x):
        return _concat([self._function("predict")(adapter.leaves((x,)))])

    def save_weights(self, filepath, overwrite: bool = True) -> None:
        """Keras 3's ``.weights.h5`` file (api/keras_weights_file.py): Keras loads it, and the reverse."""
        from specflow.api.keras_weights_file import save_weights

        save_weights(self, filepath, overwrite)

    def load_weights(self, filepath, skip_mismatch: bool = False) -> None:
        from specflow.api.keras_weights_file import load_weights

        load_weights(self, filepath, skip_mismatch)

    def export(self, filepath, format: str = "tf_saved_model", verbose: bool = True, input_signature=None) -> None:
        """Keras 3's ``model.export``: a SavedModel for inference (api/keras_export.py)."""
        from specflow.api.keras_export import export_saved_model

        export_saved_model(self, filepath, format, verbose, input_signature)

    def _layer_list(self) -> list:
        return list(getattr(self, "layers", []))

    def count_params(self) -> int:
        return sum(int(np.prod(w.shape.as_list())) for w in self.weights)

    def summary(self, line_length: int = 90, print_fn=None) -> None:
        """Keras's table: each layer's name (type), output shape (where known) and parameter
        count, then the totals."""
        from specflow.api.keras_summary import summary

        summary(self, line_length, print_fn or print)


def _concat(outs: list):
    first = outs[0]
    if isinstance(first, dict):
        return {k: _concat([o[k] for o in outs]) for k in first}
    if isinstance(first, (list, tuple)):
        return [_concat([o[i] for o in outs]) for i in range(len(first))]
    return np.concatenate([np.asarray(o) for o in outs])


def _is_metric(item) -> bool:
    from specflow.api.keras_metric_objects import Metric

    return isinstance(item, Metric)


from specflow.api.keras import Layer, held  # noqa: E402 (keras.py's Sequential takes TrainingMixin, above)
from specflow.api.optimizers import Optimizer  # noqa: E402

_INTERNAL = {"_module_name", "_weight_order", "built", "history", "stop_training"}


class Model(TrainingMixin, Layer):
    """Subclass it: make layers in ``__init__`` (after ``super().__init__()``), write ``call(self,
    x, training=None)``. Weights are in Keras's order: the model's own variables, then each layer's
    in the order the attributes were set."""

    def __new__(cls, *args, **kwargs):
        if cls is Model and (args or "inputs" in kwargs or "outputs" in kwargs):  # Model(inputs, outputs)
            from specflow.api.keras_functional import Functional

            return object.__new__(Functional)
        return object.__new__(cls)

    def __init__(self, *args, name: str | None = None, **kwargs):
        if len(args) == 2 or (len(args) == 1 and "outputs" in kwargs) or {"inputs", "outputs"} <= set(kwargs):
            # a subclass handing (inputs, outputs) on: it becomes a functional model of its class (Keras's
            # inject_functional_model_class), its own methods (train_step...) kept
            from specflow.api.keras_functional import Functional, functional_subclass

            if not isinstance(self, Functional):
                self.__class__ = functional_subclass(type(self))
            Functional.__init__(self, *args, name=name, **kwargs)
            return
        if args or kwargs:
            raise ValueError("sf.keras.Model: subclass it (super().__init__() takes only name=) or build a functional "
                             f"model with Model(inputs, outputs); got arguments {list(kwargs) or len(args)}")
        super().__init__(name)

    def __call__(self, *args, training=None, **kwargs):
        if "_weight_order" not in vars(self):
            raise RuntimeError("It looks like you are subclassing `Model` and you forgot to call "
                               "`super().__init__()`. Always start with this line.")
        params = inspect.signature(self.call).parameters
        if "training" in params or any(p.kind is p.VAR_KEYWORD for p in params.values()):
            kwargs["training"] = training
        if args:
            note_input(self, args[0])
        from specflow.api.keras import traced_call

        out = traced_call(self)(*args, **kwargs)
        self.built = True
        return out

    __call__._sf_forwards_to_call = True  # keras_masking reads masks off `call`'s parameters

    def call(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define call(self, inputs, training=None)")

    def _tracked(self):
        """(own variables, sub-layers/modules), attributes in the order they were set."""
        own, subs = [], []
        for k, value in vars(self).items():
            if k not in _INTERNAL and not k.startswith("_sf_"):
                for item in held(value):
                    if isinstance(item, Variable):
                        own.append(item)
                    elif isinstance(item, Module) and not isinstance(item, Optimizer):  # a GAN's own optimizers
                        subs.append(item)
        return own, subs

    def _layer_list(self) -> list:
        return self._tracked()[1]

    @property
    def layers(self) -> list:
        return [m for m in self._layer_list() if isinstance(m, Layer)]

    @property
    def weights(self) -> list:
        own, subs = self._tracked()
        out, seen = [], set()
        for w in own + [w for m in subs for w in (m.weights if isinstance(m, Layer) else m.variables)]:
            if id(w) not in seen:
                seen.add(id(w))
                out.append(w)
        return out
