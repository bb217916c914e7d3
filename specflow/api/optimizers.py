"""``sf.optimizers``: Keras's optimizers (``SGD``, ``Adam``, ``AdamW``, ``RMSprop``, ``Adagrad``)
for custom training loops: ``opt.apply_gradients(zip(grads, model.trainable_variables))``
eagerly or inside ``sf.function``, ``opt.minimize(loss_fn, var_list)``.

The update rules are Keras 3's (TensorFlow 2.21's ``tf.keras.optimizers``), op for op in the same
order and dtype, so a training curve matches TensorFlow's to float32 rounding: Adam's epsilon
outside the square root with the bias correction folded into the step size, RMSprop's epsilon
inside it, AdamW's decay applied before the Adam step. Slots are sf.Variables made on the first
``apply_gradients`` (inside sf.function: on its first trace) for every variable given then; a
sparse gradient (an Embedding's sf.IndexedSlices) is applied as Keras 3 applies it
(api/keras_sparse.py: its rows scattered; Adam's, RMSprop's and Adagrad's squares taken per
occurrence of a repeated row). The
optimizer is an sf.Module, so ``sf.train.Checkpoint(optimizer=opt)`` saves ``iterations`` and
the slots (``slots/m/0`` for the first variable's first moment).
"""

from __future__ import annotations

import numpy as np

from specflow.api import keras_sparse as ks
from specflow.api.indexed_slices import IndexedSlices
from specflow.api.module import Module
from specflow.api.tensor import Tensor
from specflow.api.variables import Variable
from specflow.errors import GraphError


class Optimizer(Module):
    _slot_names: tuple[str, ...] = ()

    def __init__(self, learning_rate=0.001, name: str | None = None):
        super().__init__(name)
        self.learning_rate = learning_rate
        self.iterations = Variable(np.int64(0), trainable=False, name="iteration")
        self.slots: dict[str, list[Variable]] = {}
        self._index: dict[str, int] = {}  # variable uid -> its slots' position
        self._deferred: dict = {}  # slot path -> a checkpoint's value, for a slot not made yet

    # --- the Keras interface ----------------------------------------------------------------

    def apply_gradients(self, grads_and_vars):
        """Update each variable with its gradient (pairs whose gradient is None are skipped, as
        Keras does); then ``iterations`` += 1. Returns ``iterations``."""
        pairs = [(g, v) for g, v in grads_and_vars]
        for _g, v in pairs:
            if not isinstance(v, Variable):
                raise GraphError(f"{type(self).__name__}.apply_gradients: expected (gradient, sf.Variable) pairs, got a "
                                 f"{type(v).__name__} where the variable should be")
        pairs = [(g, v) for g, v in pairs if g is not None]
        if not pairs:
            raise GraphError(f"{type(self).__name__}.apply_gradients: no gradients (every one is None): is the loss "
                             "computed from the variables under the GradientTape?")
        self.build([v for _, v in pairs])
        lr = self._lr()
        for g, v in pairs:
            if v.dtype != (g.dtype if isinstance(g, (Tensor, IndexedSlices)) else v.dtype):
                raise GraphError(f"variable '{v.name}' is {v.dtype.name}, its gradient {g.dtype.name}")
            self.update_step(g, v, _cast(lr, v.dtype))
        self.iterations.assign_add(np.int64(1))
        for _g, v in pairs:  # Keras's weight constraints (add_weight(constraint=)), after the update
            constraint = getattr(v, "constraint", None)
            if constraint is not None:
                v.assign(constraint(v))
        return self.iterations

    def minimize(self, loss, var_list, tape=None):
        """``loss`` a callable (run under a fresh tape) or a tensor recorded by ``tape``."""
        from specflow.api.tape import GradientTape

        var_list = list(var_list() if callable(var_list) and not isinstance(var_list, Variable) else var_list)
        if callable(loss):
            with GradientTape() as tape:
                value = loss()
        elif tape is None:
            raise GraphError("minimize: give loss as a callable, or the GradientTape that recorded it (tape=)")
        else:
            value = loss
        grads = tape.gradient(value, var_list)
        return self.apply_gradients(zip(grads, var_list))

    def build(self, var_list) -> None:
        """Make the slots of the variables not seen yet (all on the first call, as Keras does)."""
        for v in var_list:
            if v._uid in self._index:
                continue
            self._index[v._uid] = len(self._index)
            for slot in self._slot_names:
                path = f"slots/{slot}/{len(self.slots.get(slot, []))}"  # its checkpoint name
                value = self._deferred.pop(path, None)  # restored before the slot existed
                if value is None:
                    value = np.zeros(v.shape.as_list(), v.dtype.numpy) + self._slot_init(slot)
                elif value.shape != tuple(v.shape.as_list()) or value.dtype != v.dtype.numpy:
                    raise GraphError(f"the checkpoint's optimizer slot '{path}' is {value.dtype}{list(value.shape)}, "
                                     f"its variable '{v.name}' {v.dtype.name}{v.shape}: restored into another model?")
                self.slots.setdefault(slot, []).append(Variable(value, trainable=False, name=f"{v.name}/{slot}"))

    def _slot_init(self, slot: str) -> float:
        return 0.0

    def slot(self, v: Variable, name: str) -> Variable:
        return self.slots[name][self._index[v._uid]]

    @property
    def variables(self) -> tuple:
        return (self.iterations, *(s for slots in self.slots.values() for s in slots))

    def _lr(self):
        lr = self.learning_rate
        if callable(lr):  # a schedule: a function of the step (Keras's LearningRateSchedule)
            return lr(self.iterations)
        return lr

    def _step(self, dtype):
        """iterations + 1 in ``dtype`` (Keras's ``local_step``)."""
        return _cast(self.iterations.read_value() + np.int64(1), dtype)

    def update_step(self, grad, var: Variable, lr) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


def _cast(x, dtype):
    from specflow.api.op_functions import call

    if isinstance(x, Tensor):
        return x if x.dtype == dtype else call("Cast", x, DstT=dtype)
    return np.asarray(x, dtype.numpy)


def _sqrt(x):
    from specflow.api.op_functions import call

    return call("Sqrt", x)


class SGD(Optimizer):
    """w -= lr g; with momentum m = momentum m - lr g, w += m (Nesterov: w += momentum m - lr g)."""

    def __init__(self, learning_rate=0.01, momentum: float = 0.0, nesterov: bool = False, name: str | None = None):
        super().__init__(learning_rate, name)
        if not 0 <= momentum <= 1:
            raise GraphError(f"SGD momentum must be in [0, 1], got {momentum}")
        self.momentum, self.nesterov = float(momentum), bool(nesterov)
        self._slot_names = ("momentum",) if self.momentum else ()

    def update_step(self, grad, var, lr):
        if not self.momentum:
            ks.assign_sub(var, ks.mul(grad, lr))  # sparse: each row's -lr g scattered, as Keras
            return
        m = self.slot(var, "momentum")
        momentum = np.asarray(self.momentum, var.dtype.numpy)
        m.assign(m * momentum - ks.dense(ks.mul(grad, lr)))
        if self.nesterov:
            var.assign_add(m * momentum - ks.dense(ks.mul(grad, lr)))
        else:
            var.assign_add(m)


class Adam(Optimizer):
    """Keras's Adam: alpha = lr sqrt(1 - b2^t) / (1 - b1^t); m += (g - m)(1 - b1);
    v += (g^2 - v)(1 - b2); w -= alpha m / (sqrt(v) + epsilon) (amsgrad: the running max of v)."""

    def __init__(self, learning_rate=0.001, beta_1: float = 0.9, beta_2: float = 0.999, epsilon: float = 1e-7,
                 amsgrad: bool = False, name: str | None = None):
        super().__init__(learning_rate, name)
        self.beta_1, self.beta_2, self.epsilon, self.amsgrad = float(beta_1), float(beta_2), float(epsilon), amsgrad
        self._slot_names = ("m", "v", "vhat") if amsgrad else ("m", "v")

    def update_step(self, grad, var, lr):
        from specflow.api.op_functions import call

        dt = var.dtype.numpy
        step = self._step(var.dtype)
        b1, b2 = np.asarray(self.beta_1, dt), np.asarray(self.beta_2, dt)
        b1_power, b2_power = call("Pow", b1, step), call("Pow", b2, step)
        m, v = self.slot(var, "m"), self.slot(var, "v")
        alpha = lr * _sqrt(1 - b2_power) / (1 - b1_power)
        # (1 - beta) in Python then cast, as Keras does (1 - b1 in float32 rounds differently)
        # a sparse gradient: its rows' squares added up (Keras: a repeated row's occurrences apart)
        m.assign_add((ks.dense(grad) - m) * np.asarray(1 - self.beta_1, dt))
        v.assign_add((ks.dense(ks.square(grad)) - v) * np.asarray(1 - self.beta_2, dt))
        if self.amsgrad:
            vhat = self.slot(var, "vhat")
            vhat.assign(call("Maximum", vhat, v))
            v = vhat
        var.assign_sub((m * alpha) / (_sqrt(v) + np.asarray(self.epsilon, dt)))


class AdamW(Adam):
    """Adam with decoupled weight decay: w -= w * weight_decay * lr first (Keras's order)."""

    def __init__(self, learning_rate=0.001, weight_decay: float = 0.004, beta_1: float = 0.9, beta_2: float = 0.999,
                 epsilon: float = 1e-7, amsgrad: bool = False, name: str | None = None):
        super().__init__(learning_rate, beta_1, beta_2, epsilon, amsgrad, name)
        self.weight_decay = float(weight_decay)

    def update_step(self, grad, var, lr):
        if self.weight_decay:
            var.assign(var - var * np.asarray(self.weight_decay, var.dtype.numpy) * lr)
        super().update_step(grad, var, lr)


class RMSprop(Optimizer):
    """Keras's RMSprop: ms = rho ms + (1 - rho) g^2; w -= lr g / sqrt(ms + epsilon) (centered:
    the mean gradient's square subtracted first; momentum: through a momentum slot)."""

    def __init__(self, learning_rate=0.001, rho: float = 0.9, momentum: float = 0.0, epsilon: float = 1e-7,
                 centered: bool = False, name: str | None = None):
        super().__init__(learning_rate, name)
        self.rho, self.momentum, self.epsilon, self.centered = float(rho), float(momentum), float(epsilon), centered
        self._slot_names = ("velocity",) + (("momentum",) if momentum else ()) + (("average_gradient",) if centered else ())

    def update_step(self, grad, var, lr):
        from specflow.api.op_functions import call

        dt = var.dtype.numpy
        rho = np.asarray(self.rho, dt)
        velocity = self.slot(var, "velocity")
        velocity.assign(rho * velocity + ks.dense(ks.mul(np.asarray(1 - self.rho, dt), ks.square(grad))))
        if self.centered:
            avg = self.slot(var, "average_gradient")
            avg.assign(rho * avg + ks.dense(ks.mul(np.asarray(1 - self.rho, dt), grad)))
            denominator = velocity - call("Square", avg) + np.asarray(self.epsilon, dt)
        else:
            denominator = velocity + np.asarray(self.epsilon, dt)
        increment = ks.div(ks.mul(lr, grad), _sqrt(denominator))
        if self.momentum:
            m = self.slot(var, "momentum")
            m.assign(np.asarray(self.momentum, dt) * m + ks.dense(increment))
            var.assign_sub(m)
        else:
            ks.assign_sub(var, increment)


class Adagrad(Optimizer):
    """Keras's Adagrad: acc += g^2 (from initial_accumulator_value); w -= lr g / sqrt(acc + epsilon)."""

    def __init__(self, learning_rate=0.001, initial_accumulator_value: float = 0.1, epsilon: float = 1e-7,
                 name: str | None = None):
        super().__init__(learning_rate, name)
        self.initial_accumulator_value, self.epsilon = float(initial_accumulator_value), float(epsilon)
        self._slot_names = ("accumulator",)

    def _slot_init(self, slot: str) -> float:
        return self.initial_accumulator_value

    def update_step(self, grad, var, lr):

        acc = self.slot(var, "accumulator")
        ks.assign_add(acc, ks.square(grad))
        ks.assign_sub(var, ks.div(ks.mul(lr, grad), _sqrt(acc + np.asarray(self.epsilon, var.dtype.numpy))))
