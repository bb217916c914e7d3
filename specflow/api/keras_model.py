"""Keras 3's training API for ``sf.keras.Model`` (a base class to subclass) and
``sf.keras.Sequential`` (both take ``TrainingMixin``): ``compile``, ``fit``, ``evaluate``,
``predict``, ``train_on_batch``, ``test_on_batch``, ``predict_on_batch``.

A train step is one ``sf.function`` per compiled model (forward under a GradientTape, loss,
gradients, ``optimizer.apply_gradients``, the metrics' updates), traced once per batch
signature; ``run_eagerly=True`` runs the same Python step op by op. The numbers are Keras's:
the epoch's ``loss`` is the mean of the batch losses weighted by batch size, metrics are means
over the epoch's samples (api/keras_metrics.py), ``validation_split`` takes the last fraction of
the arrays before shuffling, float arrays are fed as float32, ``batch_size`` defaults to 32 and
the last batch is partial. ``x`` is arrays (or sf.Tensors) with ``y``, or a re-iterable of
``(x, y)`` batches (an ``sf.data.Dataset``), iterated afresh each epoch."""

from __future__ import annotations

import inspect
import math
import time

import numpy as np

from specflow.api import keras_metrics as km
from specflow.api.keras_callbacks import CallbackList
from specflow.api.keras_export import note_input
from specflow.api.module import Module
from specflow.api.tensor import Tensor
from specflow.api.variables import Variable


def _as_array(a):
    """Keras's array adapter: a tensor/list as numpy, float arrays as float32."""
    if isinstance(a, Tensor):
        a = a.numpy()
    a = np.asarray(a)
    return a.astype(np.float32) if a.dtype.kind == "f" and a.dtype != np.float32 else a


def _is_batches(x) -> bool:
    """An iterable of batches (a Dataset, a list of (x, y) tuples) rather than one array."""
    if isinstance(x, (np.ndarray, Tensor)) or x is None:
        return False
    if isinstance(x, list):
        return bool(x) and isinstance(x[0], tuple)
    return hasattr(x, "__iter__")


def _unpack(batch, what: str, need_y: bool = True):
    if isinstance(batch, (tuple, list)) and len(batch) in (1, 2, 3):
        if len(batch) == 3:
            raise ValueError(f"{what}: (x, y, sample_weight) batches are not supported (no sample weights)")
        bx, by = batch[0], batch[1] if len(batch) == 2 else None
    else:
        bx, by = batch, None
    if need_y and by is None:
        raise ValueError(f"{what}: each batch must be an (x, y) tuple, got {type(batch).__name__}")
    return _leaf(bx), None if by is None else _leaf(by)


def _leaf(v):
    return v if isinstance(v, Tensor) else _as_array(v)


def _length(batches) -> int | None:
    """How many batches an iterable holds, when it says (a Dataset after filter or repeat() does
    not: its len() raises, as TF's does)."""
    try:
        return len(batches) if hasattr(batches, "__len__") else None
    except TypeError:
        return None


class _Data:
    """One input of fit/evaluate/predict: arrays batched by ``batch_size`` (reshuffled on each
    pass when ``shuffle``), or an iterable of batches iterated afresh on each pass. With
    ``steps_per_epoch``, passes continue one iterator across epochs, as Keras's EpochIterator."""

    def __init__(self, x, y, batch_size, what: str, shuffle: bool = False, steps=None, need_y: bool = True):
        self.what, self.shuffle, self.steps, self.need_y = what, shuffle, steps, need_y
        self.batches = _is_batches(x)
        if self.batches:
            if y is not None:
                raise ValueError(f"{what}: `y` is not supported when x is an iterable of (x, y) batches")
            if batch_size is not None:
                raise ValueError(f"{what}: `batch_size` must not be given when x is an iterable of batches")
            self.x, self.y = x, None
            self.num_batches = _length(x)
        else:
            if x is None:
                raise ValueError(f"{what}: x is missing")
            self.x = _as_array(x)
            if need_y and y is None:
                raise ValueError(f"{what}: y is missing: give the targets (y=...), or x as an iterable of (x, y) batches")
            self.y = None if y is None else _as_array(y)
            if self.x.ndim == 0:
                raise ValueError(f"{what}: x must have a batch dimension, got a scalar")
            if self.y is not None and len(self.y) != len(self.x):
                raise ValueError(f"{what}: data cardinality is ambiguous: x has {len(self.x)} samples, y has "
                                 f"{len(self.y)}; make sure all arrays contain the same number of samples")
            self.batch_size = 32 if batch_size is None else int(batch_size)
            self.num_batches = math.ceil(len(self.x) / self.batch_size)
        self._it, self._seen = None, 0

    def _fresh(self):
        if self.batches:
            for b in self.x:
                yield _unpack(b, self.what, self.need_y)
            return
        n, bs = len(self.x), self.batch_size
        order = np.random.permutation(n) if self.shuffle else None
        for start in range(0, n, bs):
            sl = slice(start, start + bs) if order is None else order[start:start + bs]
            yield self.x[sl], None if self.y is None else self.y[sl]

    def epoch(self):
        if self.steps is None:
            yield from self._fresh()
            return
        if self._it is None:
            self._it, self._seen = self._fresh(), 0
        for _ in range(int(self.steps)):
            if self.num_batches and self._seen >= self.num_batches:
                break
            try:
                batch = next(self._it)
            except StopIteration:
                self.num_batches = self.num_batches or self._seen
                self._it = None
                return
            self._seen += 1
            yield batch
        if self.num_batches and self._seen >= self.num_batches:
            self._it = None


def _fmt(logs: dict) -> str:
    return " - ".join(f"{k}: {v:.4f}" if abs(v) >= 1e-3 or v == 0 else f"{k}: {v:.4e}" for k, v in logs.items())


def _verbose(verbose) -> int:
    return 1 if verbose == "auto" else int(verbose)


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

    def compile(self, optimizer="rmsprop", loss=None, loss_weights=None, metrics=None, run_eagerly: bool = False) -> None:
        """Keras's parameters (in its order): optimizer "rmsprop" | "adam" | "sgd" | "adamw" |
        "adagrad" or an object; loss a name, an sf.keras.losses object or a function;
        loss_weights a number (one output); metrics ["accuracy", "mse", ...]."""
        self._sf_compiled = km.Compiled(optimizer, loss, metrics, run_eagerly)
        if loss_weights is not None:
            w = loss_weights if np.isscalar(loss_weights) else np.asarray(loss_weights).reshape(-1)
            if not np.isscalar(w) and w.size != 1:
                raise ValueError(f"loss_weights: one number for the model's one output, got {loss_weights!r}")
            self._sf_compiled.loss_weight = np.float32(w if np.isscalar(w) else w[0])

    @property
    def compiled(self) -> bool:
        return getattr(self, "_sf_compiled", None) is not None

    @property
    def optimizer(self):
        return self._sf_compiled.optimizer if self.compiled else None

    @property
    def metrics_names(self) -> list[str]:
        return [m.name for m in self._sf_compiled.all_metrics()] if self.compiled else []

    def _metric_directions(self) -> dict:
        """Metric name -> "up" or "down" (None: unknown), for EarlyStopping's mode="auto"."""
        if not self.compiled:
            return {}
        c = self._sf_compiled
        if c.metrics is not None:
            return {m.name: m.direction for m in c.all_metrics()}
        return {"loss": "down", **{str(m): km.direction_of(m) for m in c.metric_ids if not callable(m)}}

    def _need_compiled(self) -> km.Compiled:
        if not self.compiled:
            raise ValueError("You must call `compile()` before using the model.")
        return self._sf_compiled

    def reset_metrics(self) -> None:
        for m in self._need_compiled().all_metrics():
            m.reset_state()

    # --- the steps ---------------------------------------------------------------------------

    def _function(self, kind: str):
        c = self._sf_compiled if self.compiled else None
        cache = c.functions if c is not None else self.__dict__.setdefault("_sf_predict_fns", {})
        fn = cache.get(kind)
        if fn is None:
            from specflow.api.function import function

            step = {"train": self._train_step, "test": self._test_step, "predict": self._predict_step}[kind]
            fn = step if (c is not None and c.run_eagerly) else function(step, name=f"{kind}_function")
            cache[kind] = fn
        return fn

    def _train_step(self, x, y):
        from specflow.api.tape import GradientTape

        c = self._sf_compiled
        with GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self._with_penalties(c.loss(y, y_pred))
        variables = self.trainable_weights
        grads = tape.gradient(loss, variables)
        c.optimizer.apply_gradients(zip(grads, variables))
        return c.update(x, y, y_pred, loss)

    def _test_step(self, x, y):
        c = self._sf_compiled
        y_pred = self(x, training=False)
        return c.update(x, y, y_pred, self._with_penalties(c.loss(y, y_pred)))

    def _with_penalties(self, loss):
        """The compiled loss plus the regularizers' penalties (``sum(model.losses)``), as Keras."""
        penalties = self.losses
        for p in penalties:
            loss = loss + p
        return loss

    def _predict_step(self, x):
        return self(x, training=False)

    def _logs(self, results) -> dict:
        """Keras's logs: name -> float, sorted by name (its ``pythonify_logs``)."""
        return dict(sorted((m.name, float(r)) for m, r in zip(self._sf_compiled.all_metrics(), results)))

    def _results(self) -> dict:
        return dict(sorted((m.name, m.result()) for m in self._sf_compiled.all_metrics()))

    def _in_order(self, logs: dict, return_dict: bool):
        """The dict, or Keras's list: loss, then the metrics in compile order (one value: a float)."""
        if return_dict:
            return logs
        values = [logs[m.name] for m in self._sf_compiled.all_metrics()]
        return values[0] if len(values) == 1 else values

    # --- fit / evaluate / predict --------------------------------------------------------------

    def fit(self, x=None, y=None, batch_size=None, epochs: int = 1, verbose="auto", callbacks=None,
            validation_split: float = 0.0, validation_data=None, shuffle: bool = True, initial_epoch: int = 0,
            steps_per_epoch=None):
        """Keras's fit (no sample/class weights, validation_freq or validation_steps); returns the History."""
        self._need_compiled()
        if validation_split and validation_data is None:
            if _is_batches(x):
                raise ValueError("`validation_split` is only supported for Tensors or NumPy arrays, not an "
                                 "iterable of batches")
            x, vx = _as_array(x), None
            y = None if y is None else _as_array(y)
            split_at = int(math.floor(len(x) * (1.0 - validation_split)))
            if split_at in (0, len(x)):
                raise ValueError(f"Training data contains {len(x)} samples, which is not sufficient to split it into a "
                                 f"validation and training set as specified by `validation_split={validation_split}`.")
            if y is not None and len(y) != len(x):
                _Data(x, y, batch_size, "fit")  # the cardinality error
            x, vx = x[:split_at], x[split_at:]
            y, vy = (None, None) if y is None else (y[:split_at], y[split_at:])
            validation_data = (vx, vy)
        data = _Data(x, y, batch_size, "fit", shuffle=shuffle, steps=steps_per_epoch)
        val = None
        if validation_data is not None:
            if _is_batches(validation_data) and not isinstance(validation_data, tuple):
                val = validation_data
            else:
                vx, vy = _unpack(tuple(validation_data), "fit: validation_data")
                val = (vx, vy)
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
            for step, (bx, by) in enumerate(data.epoch()):
                cbs.on_train_batch_begin(step, logs={})
                logs = self._logs(train(bx, by))
                steps += 1
                cbs.on_train_batch_end(step, logs=logs)
                if self.stop_training:
                    break
            epoch_logs = self._results()
            if val is not None:
                vx, vy, vbs = (*val, batch_size) if isinstance(val, tuple) else (val, None, None)
                vlogs = self._evaluate(vx, vy, vbs, cbs)
                epoch_logs = dict(sorted({**epoch_logs, **{f"val_{k}": v for k, v in vlogs.items()}}.items()))
            if verbose:
                print(f"Epoch {epoch + 1}/{epochs} - {steps} steps - {time.perf_counter() - start:.2f}s - "
                      f"{_fmt(epoch_logs)}", flush=True)
            cbs.on_epoch_end(epoch, logs=epoch_logs)
            if self.stop_training:
                break
        cbs.on_train_end(logs=epoch_logs)
        return self.history

    def _evaluate(self, x, y, batch_size, cbs) -> dict:
        data = _Data(x, y, batch_size, "evaluate")
        self.reset_metrics()
        test = self._function("test")
        cbs.on_test_begin(logs={})
        logs = {}
        for step, (bx, by) in enumerate(data.epoch()):
            cbs.on_test_batch_begin(step, logs={})
            logs = self._logs(test(bx, by))
            cbs.on_test_batch_end(step, logs=logs)
        logs = self._results()
        cbs.on_test_end(logs=logs)
        return logs

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", return_dict: bool = False, callbacks=None):
        """The loss (and metrics) over the data: a float, [loss, *metrics], or a dict."""
        self._need_compiled()
        logs = self._evaluate(x, y, batch_size, CallbackList(callbacks, self, add_history=False))
        if _verbose(verbose):
            print(_fmt(logs), flush=True)
        return self._in_order(logs, return_dict)

    def predict(self, x, batch_size=None, verbose="auto"):
        """``model(x, training=False)`` over batches, as numpy, concatenated (one array per output)."""
        data = _Data(x, None, batch_size, "predict", need_y=False)
        fn = self._function("predict")
        outs = [fn(bx) for bx, _ in data.epoch()]
        if not outs:
            raise ValueError("predict: no data (x is empty)")
        if isinstance(outs[0], (list, tuple)):
            return [np.concatenate([np.asarray(o[i]) for o in outs]) for i in range(len(outs[0]))]
        return np.concatenate([np.asarray(o) for o in outs])

    def train_on_batch(self, x, y=None, return_dict: bool = False):
        """One train step on one batch; the metrics are reset first (Keras's reset_metrics=True)."""
        self._need_compiled()
        self.reset_metrics()
        bx, by = _Data(x, y, len(_as_array(x)) or 1, "train_on_batch").epoch().__next__()
        return self._in_order(self._logs(self._function("train")(bx, by)), return_dict)

    def test_on_batch(self, x, y=None, return_dict: bool = False):
        self._need_compiled()
        self.reset_metrics()
        bx, by = _Data(x, y, len(_as_array(x)) or 1, "test_on_batch").epoch().__next__()
        return self._in_order(self._logs(self._function("test")(bx, by)), return_dict)

    def predict_on_batch(self, x):
        return np.asarray(self._function("predict")(_leaf(x)))

    def export(self, filepath, format: str = "tf_saved_model", verbose: bool = True, input_signature=None) -> None:
        """Keras 3's ``model.export``: a SavedModel for inference (api/keras_export.py)."""
        from specflow.api.keras_export import export_saved_model

        export_saved_model(self, filepath, format, verbose, input_signature)

    def _layer_list(self) -> list:
        return list(getattr(self, "layers", []))

    def summary(self, print_fn=print) -> None:
        """Layer, type and parameter count per layer (built layers only), and the totals."""
        rows = [(getattr(layer, "name", "?"), type(layer).__name__,
                 sum(int(np.prod(w.shape.as_list())) for w in getattr(layer, "weights", [])))
                for layer in self._layer_list()]
        total = sum(int(np.prod(w.shape.as_list())) for w in self.weights)
        trainable = sum(int(np.prod(w.shape.as_list())) for w in self.trainable_weights)
        print_fn(f'Model: "{self.name}"')
        for name, kind, count in rows:
            print_fn(f"  {name:<28} {kind:<24} {count:>10}")
        print_fn(f"Total params: {total}\nTrainable params: {trainable}\nNon-trainable params: {total - trainable}")


from specflow.api.keras import Layer, held  # noqa: E402 (keras.py's Sequential takes TrainingMixin, above)

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
        out = self.call(*args, **kwargs)
        self.built = True
        return out

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
                    elif isinstance(item, Module):
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
