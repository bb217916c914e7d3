"""``sf.keras.optimizers``: Keras 3's optimizers over sf.optimizers' update rules, with Keras's
base-class options: ``clipnorm`` (each gradient by its L2 norm, tf.clip_by_norm), ``global_clipnorm``
(all by their global norm), ``clipvalue`` (elementwise), at most one of them; ``weight_decay``
(w -= w * weight_decay * lr before the update, as Keras's base class; AdamW's own); and
``apply(grads, trainable_variables=None)`` beside ``apply_gradients``. ``Adamax``, ``Nadam``,
``Adadelta`` and ``Ftrl`` are Keras 3's update rules op for op (in the variable's dtype, Python
constants where Keras keeps them Python), so ten steps match Keras to float32 rounding."""

from __future__ import annotations

import types

import numpy as np

from specflow.api import keras_sparse as ks
from specflow.api import optimizers as base
from specflow.api import tf_names
from specflow.api.indexed_slices import IndexedSlices
from specflow.api.op_functions import call
from specflow.api.variables import Variable


def _c(v, dtype):
    return np.asarray(v, dtype.numpy)


class KerasOptimizer:
    """The Keras base-class options, mixed in before an sf optimizer."""

    def __init__(self, *args, clipnorm=None, clipvalue=None, global_clipnorm=None, **kwargs):
        own_decay = isinstance(self, base.AdamW)  # AdamW takes weight_decay itself and decays in its update
        weight_decay = None if own_decay else kwargs.pop("weight_decay", None)
        super().__init__(*args, **kwargs)
        if sum(v is not None for v in (clipnorm, clipvalue, global_clipnorm)) > 1:
            raise ValueError("Only one of `clipnorm`, `clipvalue` and `global_clipnorm` can be set. Received: "
                             f"clipnorm={clipnorm}, clipvalue={clipvalue}, global_clipnorm={global_clipnorm}")
        self.clipnorm, self.clipvalue, self.global_clipnorm = clipnorm, clipvalue, global_clipnorm
        if not own_decay:
            self.weight_decay = weight_decay
        self._sf_built_on = _Held()  # the variables of the first build, for apply(grads) (not checkpointed)

    # --- Keras's apply ---------------------------------------------------------------------------

    def apply(self, grads, trainable_variables=None):
        grads = list(grads)
        if not grads:
            return None
        if trainable_variables is None:
            known = self._sf_built_on.variables
            if known is None:
                raise ValueError("When passing `grads` without `variables`, the optimizer must already be built on a "
                                 "list of variables. Call `optimizer.build(trainable_variables)` first. ")
            trainable_variables = known
        return self.apply_gradients(zip(grads, trainable_variables))

    def build(self, var_list) -> None:
        var_list = list(var_list)
        if self._sf_built_on.variables is None:
            self._sf_built_on.variables = var_list
        super().build(var_list)

    def apply_gradients(self, grads_and_vars):
        pairs = [(g, v) for g, v in grads_and_vars]
        kept = [(g, v) for g, v in pairs if g is not None]
        if kept:
            grads = self._clip([g for g, _ in kept])
            kept = list(zip(grads, [v for _, v in kept]))
            self.build([v for _, v in kept])
            self._decay([v for _, v in kept])
            self._before_update(kept)
        return super().apply_gradients(kept + [(g, v) for g, v in pairs if g is None])

    def _before_update(self, pairs) -> None:
        """Once per step, before the per-variable updates (Nadam's running product)."""

    def _decay(self, variables) -> None:
        if self.weight_decay is None or isinstance(self, base.AdamW):
            return
        lr = self._lr()
        for v in variables:
            v.assign_sub(v * _c(self.weight_decay, v.dtype) * base._cast(lr, v.dtype))

    def _clip(self, grads: list) -> list:
        # a sparse gradient: clipnorm and clipvalue clip its values as they are (TF's clip ops on
        # an IndexedSlices); global_clipnorm returns it dense, as Keras's (its product with a tensor)
        grads = [g if isinstance(g, IndexedSlices) else tf_names._t(g) for g in grads]
        if self.clipnorm and self.clipnorm > 0:
            return [_on_values(g, lambda x: _clip_by_norm(x, self.clipnorm)) for g in grads]
        if self.global_clipnorm and self.global_clipnorm > 0:
            return _clip_by_global_norm(grads, self.global_clipnorm)
        if self.clipvalue and self.clipvalue > 0:
            return [_on_values(g, lambda x: tf_names.clip_by_value(x, _c(-self.clipvalue, x.dtype), _c(self.clipvalue, x.dtype)))
                    for g in grads]  # fmt: skip
        return grads


def _on_values(g, fn):
    return g.with_values(fn(g.values)) if isinstance(g, IndexedSlices) else fn(g)


class _Held:
    variables = None


def _clip_by_norm(g, clip_norm):
    """tf.clip_by_norm: g * clip_norm / max(||g||, clip_norm) (a zero gradient stays zero)."""
    l2sum = tf_names.reduce_sum(g * g, keepdims=True)
    pred = l2sum > _c(0, g.dtype)
    l2norm = tf_names.where(pred, tf_names.sqrt(tf_names.where(pred, l2sum, tf_names.ones_like(l2sum))), l2sum)
    c = _c(clip_norm, g.dtype)
    return (g * c) / tf_names.maximum(l2norm, c)


def _clip_by_global_norm(grads, clip_norm):
    """Keras's clip_by_global_norm: every gradient times clip_norm * min(1 / norm, 1 / clip_norm)."""
    norm = tf_names.sqrt(tf_names.reduce_sum(tf_names.stack([tf_names.reduce_sum(ks.dense(ks.square(g))) for g in grads])))
    dtype = norm.dtype
    scale = _c(clip_norm, dtype) * tf_names.minimum(_c(1.0, dtype) / norm, _c(1.0 / clip_norm, dtype))
    scale = scale + (norm - norm)  # NaN for a non-finite norm, as Keras's
    return [ks.dense(g) * tf_names.cast(scale, g.dtype) for g in grads]


# --- sf's optimizers with the Keras options --------------------------------------------------------


class SGD(KerasOptimizer, base.SGD):
    pass


class Adam(KerasOptimizer, base.Adam):
    pass


class AdamW(KerasOptimizer, base.AdamW):
    pass


class RMSprop(KerasOptimizer, base.RMSprop):
    pass


class Adagrad(KerasOptimizer, base.Adagrad):
    pass


# --- Keras 3's other optimizers --------------------------------------------------------------------


class Adamax(KerasOptimizer, base.Optimizer):
    """m += (g - m)(1 - b1); u = max(b2 u, |g|); w -= lr m / ((1 - b1^t)(u + epsilon))."""

    _slot_names = ("momentum", "norm")

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, name=None, **kwargs):
        super().__init__(learning_rate, name, **kwargs)
        self.beta_1, self.beta_2, self.epsilon = float(beta_1), float(beta_2), float(epsilon)

    def update_step(self, grad, var, lr):
        dt = var.dtype
        beta_1_power = call("Pow", _c(self.beta_1, dt), self._step(dt))
        m, u = self.slot(var, "momentum"), self.slot(var, "norm")
        m.assign_add((ks.dense(grad) - m) * _c(1 - self.beta_1, dt))
        u.assign(tf_names.maximum(_c(self.beta_2, dt) * u, ks.dense(ks.absolute(grad))))
        var.assign_sub((lr * m) / ((_c(1, dt) - beta_1_power) * (u + _c(self.epsilon, dt))))


class Nadam(KerasOptimizer, base.Optimizer):
    """Keras's Nadam: Adam with Nesterov momentum and the momentum schedule
    u_t = b1 (1 - 0.5 * 0.96^t), whose running product is kept in ``u_product``."""

    _slot_names = ("momentum", "velocity")

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, name=None, **kwargs):
        super().__init__(learning_rate, name, **kwargs)
        self.beta_1, self.beta_2, self.epsilon = float(beta_1), float(beta_2), float(epsilon)
        self.u_product = Variable(np.float32(1.0), trainable=False, name="u_product")

    @property
    def variables(self) -> tuple:
        return (*super().variables, self.u_product)

    def _before_update(self, pairs) -> None:
        dt = self.u_product.dtype
        step = self._step(dt)
        schedule = _c(1.0, dt) - _c(0.5, dt) * call("Pow", _c(0.96, dt), step)
        self.u_product.assign(self.u_product * _c(self.beta_1, dt) * schedule)

    def update_step(self, grad, var, lr):
        dt = var.dtype
        local_step = self._step(dt)
        next_step = base._cast(self.iterations.read_value() + np.int64(2), dt)
        decay, one, half = _c(0.96, dt), _c(1.0, dt), _c(0.5, dt)
        beta_1, beta_2 = _c(self.beta_1, dt), _c(self.beta_2, dt)
        u_t = beta_1 * (one - half * call("Pow", decay, local_step))
        u_t_1 = beta_1 * (one - half * call("Pow", decay, next_step))
        u_product_t = base._cast(self.u_product.read_value(), dt)
        u_product_t_1 = u_product_t * u_t_1
        beta_2_power = call("Pow", beta_2, local_step)
        m, v = self.slot(var, "momentum"), self.slot(var, "velocity")
        m.assign_add((ks.dense(grad) - m) * (one - beta_1))  # (1 - beta) in the variable's dtype, as Keras's Nadam
        v.assign_add((ks.dense(ks.square(grad)) - v) * (one - beta_2))
        m_hat = (u_t_1 * m) / (one - u_product_t_1) + ks.dense(ks.div(ks.mul(one - u_t, grad), one - u_product_t))
        v_hat = v / (one - beta_2_power)
        var.assign_sub((m_hat * lr) / (tf_names.sqrt(v_hat) + _c(self.epsilon, dt)))


class Adadelta(KerasOptimizer, base.Optimizer):
    """acc_g = rho acc_g + (1 - rho) g^2; d = -sqrt(acc_d + eps) g / sqrt(acc_g + eps);
    acc_d = rho acc_d + (1 - rho) d^2; w += lr d."""

    _slot_names = ("accumulated_grad", "accumulated_delta_var")

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-7, name=None, **kwargs):
        super().__init__(learning_rate, name, **kwargs)
        self.rho, self.epsilon = float(rho), float(epsilon)

    def update_step(self, grad, var, lr):
        dt = var.dtype
        rho, rest, eps = _c(self.rho, dt), _c(1 - self.rho, dt), _c(self.epsilon, dt)
        acc_g, acc_d = self.slot(var, "accumulated_grad"), self.slot(var, "accumulated_delta_var")
        acc_g.assign(rho * acc_g + ks.dense(ks.mul(rest, ks.square(grad))))
        delta = -ks.div(ks.mul(tf_names.sqrt(acc_d + eps), grad), tf_names.sqrt(acc_g + eps))
        acc_d.assign(rho * acc_d + ks.dense(ks.mul(rest, ks.square(delta))))
        ks.assign_add(var, ks.mul(lr, delta))


class Ftrl(KerasOptimizer, base.Optimizer):
    """Keras's FTRL-proximal: accumulator (from initial_accumulator_value) and linear slots."""

    _slot_names = ("accumulator", "linear")

    def __init__(self, learning_rate=0.001, learning_rate_power=-0.5, initial_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 l2_shrinkage_regularization_strength=0.0, beta=0.0, name=None, **kwargs):
        super().__init__(learning_rate, name, **kwargs)
        for what, v, sign in (("initial_accumulator_value", initial_accumulator_value, 1),
                              ("learning_rate_power", learning_rate_power, -1),
                              ("l1_regularization_strength", l1_regularization_strength, 1),
                              ("l2_regularization_strength", l2_regularization_strength, 1),
                              ("l2_shrinkage_regularization_strength", l2_shrinkage_regularization_strength, 1)):
            if v * sign < 0:
                raise ValueError(f"`{what}` needs to be {'positive' if sign > 0 else 'negative'} or zero. Received: "
                                 f"{what}={v}.")
        self.learning_rate_power = float(learning_rate_power)
        self.initial_accumulator_value = float(initial_accumulator_value)
        self.l1_regularization_strength = float(l1_regularization_strength)
        self.l2_regularization_strength = float(l2_regularization_strength)
        self.l2_shrinkage_regularization_strength = float(l2_shrinkage_regularization_strength)
        self.beta = float(beta)

    def _slot_init(self, slot: str) -> float:
        return self.initial_accumulator_value if slot == "accumulator" else 0.0

    def update_step(self, grad, var, lr):
        dt = var.dtype
        accum, linear = self.slot(var, "accumulator"), self.slot(var, "linear")
        power = _c(-self.learning_rate_power, dt)
        l2_reg = _c(self.l2_regularization_strength, dt) + _c(self.beta, dt) / (_c(2.0, dt) * lr)
        grad_to_use = ks.dense(grad) + _c(2 * self.l2_shrinkage_regularization_strength, dt) * var
        new_accum = accum + ks.dense(ks.square(grad))
        new_power = call("Pow", new_accum, power)
        linear.assign_add(grad_to_use - ((new_power - call("Pow", accum, power)) / lr) * var)
        quadratic = new_power / lr + _c(2.0, dt) * l2_reg
        l1 = self.l1_regularization_strength
        clipped = tf_names.clip_by_value(linear, _c(-l1, dt), _c(l1, dt))
        var.assign((clipped - linear) / quadratic)
        accum.assign(new_accum)


CLASSES = (SGD, Adam, AdamW, RMSprop, Adagrad, Adamax, Nadam, Adadelta, Ftrl)
NAMES = {c.__name__.lower(): c for c in CLASSES}

namespace = types.ModuleType("specflow.keras.optimizers", "Keras 3's optimizers (api/keras_optimizers.py).")
for _cls in CLASSES:
    setattr(namespace, _cls.__name__, _cls)
namespace.Optimizer = base.Optimizer
namespace.get = lambda identifier: NAMES[identifier.lower()]() if isinstance(identifier, str) else identifier


def resolve(identifier):
    """compile()'s optimizer: a name (Keras's default hyperparameters) or an optimizer object."""
    if isinstance(identifier, str):
        if identifier.lower() not in NAMES:
            raise ValueError(f"Could not interpret optimizer identifier: {identifier!r} (known: {', '.join(NAMES)})")
        return NAMES[identifier.lower()]()
    if isinstance(identifier, base.Optimizer):
        return identifier
    raise ValueError(f"Could not interpret optimizer identifier: {identifier!r} (a name or an sf.keras.optimizers "
                     "object)")
