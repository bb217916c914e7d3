"""``sf.keras.callbacks``: Keras 3's ``Callback`` protocol, ``History`` and ``EarlyStopping``,
called by ``Model.fit``/``evaluate`` (api/keras_model.py). A plain object with some of the
``on_*`` methods is called too; the ones it lacks are skipped."""

from __future__ import annotations

import types
import warnings

import numpy as np


class Callback:
    """The hooks ``fit`` calls (each a no-op here); ``self.model`` is the model being trained."""

    def __init__(self):
        self.model = None
        self.params: dict = {}

    def set_model(self, model) -> None:
        self.model = model

    def set_params(self, params: dict) -> None:
        self.params = params

    def on_train_begin(self, logs=None): ...
    def on_train_end(self, logs=None): ...
    def on_epoch_begin(self, epoch, logs=None): ...
    def on_epoch_end(self, epoch, logs=None): ...
    def on_train_batch_begin(self, batch, logs=None): ...
    def on_train_batch_end(self, batch, logs=None): ...
    def on_test_begin(self, logs=None): ...
    def on_test_end(self, logs=None): ...
    def on_test_batch_begin(self, batch, logs=None): ...
    def on_test_batch_end(self, batch, logs=None): ...


class History(Callback):
    """``history``: metric name -> one value per epoch (appended, as Keras, across ``fit`` calls
    that reuse this object); ``epoch``: the epochs' indices in the last ``fit``."""

    def __init__(self):
        super().__init__()
        self.history: dict[str, list] = {}
        self.epoch: list[int] = []

    def on_train_begin(self, logs=None):
        self.epoch = []

    def on_epoch_end(self, epoch, logs=None):
        self.epoch.append(epoch)
        for k, v in (logs or {}).items():
            self.history.setdefault(k, []).append(v)
        if self.model is not None:
            self.model.history = self


class EarlyStopping(Callback):
    """Keras 3's: stop once ``monitor`` has not improved (by more than ``min_delta``) for
    ``patience`` epochs; ``restore_best_weights`` sets the best epoch's weights back at the end."""

    def __init__(self, monitor: str = "val_loss", min_delta=0, patience: int = 0, verbose: int = 0,
                 mode: str = "auto", baseline=None, restore_best_weights: bool = False, start_from_epoch: int = 0):
        super().__init__()
        if mode not in ("auto", "min", "max"):
            warnings.warn(f"EarlyStopping mode '{mode}' is unknown, fallback to auto mode.", stacklevel=2)
            mode = "auto"
        self.monitor, self.mode, self.baseline = monitor, mode, baseline
        self.min_delta, self.patience, self.verbose = abs(min_delta), patience, verbose
        self.restore_best_weights, self.start_from_epoch = restore_best_weights, start_from_epoch
        self.monitor_op = None
        self.wait = self.stopped_epoch = self.best_epoch = 0
        self.best = None
        self.best_weights = None

    def _set_monitor_op(self) -> None:
        if self.mode == "min":
            self.monitor_op = np.less
        elif self.mode == "max":
            self.monitor_op = np.greater
        else:
            name = self.monitor.removeprefix("val_")
            direction = "down" if name == "loss" else None
            directions = getattr(self.model, "_metric_directions", None)
            if callable(directions):
                direction = directions().get(name, direction)
            if direction is None:
                raise ValueError(f"EarlyStopping callback received monitor={self.monitor}, but Keras isn't able to "
                                 "automatically determine whether that metric should be maximized or minimized. "
                                 "Pass `mode='max'` in order to monitor based on the highest metric value, or pass "
                                 "`mode='min'` in order to use the lowest value.")
            self.monitor_op = np.greater if direction == "up" else np.less
        if self.monitor_op is np.less:
            self.min_delta *= -1

    def _is_improvement(self, value, reference) -> bool:
        return reference is None or bool(self.monitor_op(value - self.min_delta, reference))

    def on_train_begin(self, logs=None):
        self.wait = self.stopped_epoch = self.best_epoch = 0
        self.best = None
        self.best_weights = None

    def on_epoch_end(self, epoch, logs=None):
        if self.monitor_op is None:
            self._set_monitor_op()
        current = (logs or {}).get(self.monitor)
        if current is None:
            warnings.warn(f"Early stopping conditioned on metric `{self.monitor}` which is not available. "
                          f"Available metrics are: {','.join(logs or {})}", stacklevel=2)
        if current is None or epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights = self.model.get_weights()
            self.best_epoch = epoch
        self.wait += 1
        if self._is_improvement(current, self.best):
            self.best, self.best_epoch = current, epoch
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            if self.baseline is None or self._is_improvement(current, self.baseline):
                self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True

    def on_train_end(self, logs=None):
        if self.stopped_epoch > 0 and self.verbose > 0:
            print(f"Epoch {self.stopped_epoch + 1}: early stopping")
        if self.restore_best_weights and self.best_weights is not None:
            if self.verbose > 0:
                print(f"Restoring model weights from the end of the best epoch: {self.best_epoch + 1}.")
            self.model.set_weights(self.best_weights)


class CallbackList:
    """Calls each callback's hook if it has one; ``History`` added last unless one is given."""

    def __init__(self, callbacks, model, params: dict | None = None, add_history: bool = True):
        self.callbacks = list(callbacks or [])
        self.history = next((c for c in self.callbacks if isinstance(c, History)), None)
        if self.history is None and add_history:
            self.history = History()
            self.callbacks.append(self.history)
        for c in self.callbacks:
            if hasattr(c, "set_model"):
                c.set_model(model)
            else:
                try:
                    c.model = model
                except AttributeError:
                    pass
            if params is not None and hasattr(c, "set_params"):
                c.set_params(params)

    def __getattr__(self, hook: str):
        if not hook.startswith("on_"):
            raise AttributeError(hook)

        def call(*args, logs=None):  # logs by keyword, as Keras passes them
            for c in self.callbacks:
                fn = getattr(c, hook, None)
                if fn is not None:
                    fn(*args, logs=logs)
        return call


callbacks = types.ModuleType("specflow.keras.callbacks", "Keras callbacks (Callback, History, EarlyStopping).")
for _cls in (Callback, History, EarlyStopping):
    setattr(callbacks, _cls.__name__, _cls)
