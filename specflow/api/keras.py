"""``sf.keras``: the Keras layers a first model reaches for, as sf.Modules built on their first
call (``Dense``, ``Conv2D``, ``MaxPooling2D``, ``AveragePooling2D``, ``Flatten``, ``Dropout``,
``Embedding``, ``LayerNormalization``, ``GlobalAveragePooling1D/2D``), ``Sequential``, the common
losses and ``sf.keras.optimizers`` (= sf.optimizers). A custom loop trains them, or Keras's
``compile``/``fit``/``evaluate``/``predict`` on ``Sequential`` and on subclasses of ``sf.keras.Model``
(api/keras_model.py), with ``sf.keras.callbacks`` (History, EarlyStopping).

The math is Keras 3's (layer norm's arrangement, the losses' clipping of probabilities, the
weight layouts), so weights copied from a Keras model with ``set_weights(model.get_weights())``
give Keras's outputs and gradients. Initial values come from numpy (by default Glorot uniform
kernels, zero biases, uniform(-0.05, 0.05) embeddings; ``kernel_initializer=`` etc. take
``sf.keras.initializers``), seeded by ``sf.keras.utils.set_random_seed``; they are not
TensorFlow's draws. ``sf.keras.regularizers``, ``metrics`` (stateful objects), ``activations``,
``optimizers.schedules`` and ``backend`` live in api/keras_*.py modules named after them."""

from __future__ import annotations

import types

import numpy as np

from specflow.api import keras_initializers as initializers
from specflow.api import keras_regularizers as regularizers
from specflow.api import nn, optimizers, tf_names
from specflow.api.module import Module
from specflow.api.op_functions import call
from specflow.api.variables import Variable
from specflow.errors import GraphError

_RNG = [np.random.default_rng()]


def set_random_seed(seed: int) -> None:
    """Seed the initial values of layers built from now on."""
    _RNG[0] = np.random.default_rng(seed)
    tf_names.random.set_seed(seed)


def _activation(name):
    if name is None or callable(name):
        return name
    table = {"linear": None, "relu": nn.relu, "sigmoid": nn.sigmoid, "tanh": nn.tanh, "softmax": nn.softmax,
             "gelu": nn.gelu, "elu": nn.elu, "selu": nn.selu, "swish": nn.silu, "silu": nn.silu,
             "softplus": nn.softplus, "relu6": nn.relu6, "leaky_relu": nn.leaky_relu, "log_softmax": nn.log_softmax}
    if name not in table:
        raise GraphError(f"unknown activation '{name}'; known: {', '.join(sorted(table))}")
    return table[name]


def _glorot(shape, fan_in: int, fan_out: int) -> np.ndarray:
    limit = np.sqrt(6.0 / (fan_in + fan_out))
    return _RNG[0].uniform(-limit, limit, shape).astype(np.float32)


def held(value):
    """What an attribute holds, through lists, tuples and dicts (how layers and variables are kept)."""
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from held(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from held(item)
    else:
        yield value


class Layer(Module):
    """Built on the first call from the input's shape (``build``); ``weights`` in Keras's order."""

    def __init__(self, name: str | None = None):
        super().__init__(name)
        self.built = False
        self._weight_order: list[str] = []

    def add_weight(self, attr: str, value: np.ndarray, trainable: bool = True, regularizer=None) -> Variable:
        var = Variable(value, trainable=trainable, name=f"{self.name}/{attr}")
        setattr(self, attr, var)
        self._weight_order.append(attr)
        if regularizer is not None:
            self.__dict__.setdefault("_sf_regularizers", []).append((attr, regularizers.get(regularizer)))
        return var

    @property
    def losses(self) -> list:
        """The penalties of this layer's regularized weights, then its sub-layers' (Keras's
        ``layer.losses``), computed from the current values when read."""
        out, seen = [], set()

        def visit(layer):
            if id(layer) in seen:
                return
            seen.add(id(layer))
            out.extend(reg(getattr(layer, attr)) for attr, reg in layer.__dict__.get("_sf_regularizers", ()))
            for k, value in vars(layer).items():
                if not k.startswith("_sf_"):
                    for item in held(value):
                        if isinstance(item, Layer):
                            visit(item)

        visit(self)
        return out

    def build(self, input_shape) -> None:
        pass

    def __call__(self, x, training: bool | None = None):
        x = x if isinstance(x, Variable) else tf_names._t(x)
        if not self.built:
            self.build(x.shape.as_list() if x.shape.rank is not None else None)
            self.built = True
        return self.call(x, training=training)

    def call(self, x, training=None):  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def weights(self) -> list:
        return [getattr(self, a) for a in self._weight_order]

    def get_weights(self) -> list[np.ndarray]:
        return [w.numpy() for w in self.weights]

    def set_weights(self, values) -> None:
        values = list(values)
        if len(values) != len(self.weights):
            raise GraphError(f"layer '{self.name}' has {len(self.weights)} weight(s), got {len(values)} "
                             "(is it built? call it once first)")
        for w, v in zip(self.weights, values):
            w.assign(np.asarray(v))


def _known(shape, what: str, layer: str) -> int:
    if shape is None or shape[-1] is None:
        raise GraphError(f"layer '{layer}' needs the last dimension of its input ({what}) to be known, got {shape}")
    return int(shape[-1])


class Dense(Layer):
    def __init__(self, units: int, activation=None, use_bias: bool = True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None, name: str | None = None):
        super().__init__(name)
        self.units, self.activation, self.use_bias = int(units), _activation(activation), use_bias
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)

    def build(self, input_shape):
        n = _known(input_shape, "features", self.name)
        self.add_weight("kernel", initializers.make(self.kernel_initializer, (n, self.units)),
                        regularizer=self.kernel_regularizer)
        if self.use_bias:
            self.add_weight("bias", initializers.make(self.bias_initializer, (self.units,)),
                            regularizer=self.bias_regularizer)

    def call(self, x, training=None):
        y = tf_names.matmul(x, self.kernel)
        if self.use_bias:
            y = y + self.bias
        return self.activation(y) if self.activation else y


class Conv2D(Layer):
    def __init__(self, filters: int, kernel_size, strides=1, padding: str = "valid", activation=None,
                 use_bias: bool = True, dilation_rate=1, kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, name: str | None = None):
        super().__init__(name)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.filters = int(filters)
        self.kernel_size = tuple(np.broadcast_to(np.atleast_1d(kernel_size), 2).tolist())
        self.strides, self.padding, self.dilation_rate = strides, padding.upper(), dilation_rate
        self.activation, self.use_bias = _activation(activation), use_bias

    def build(self, input_shape):
        c = _known(input_shape, "channels", self.name)
        kh, kw = self.kernel_size
        self.add_weight("kernel", initializers.make(self.kernel_initializer, (kh, kw, c, self.filters)),
                        regularizer=self.kernel_regularizer)
        if self.use_bias:
            self.add_weight("bias", initializers.make(self.bias_initializer, (self.filters,)),
                            regularizer=self.bias_regularizer)

    def call(self, x, training=None):
        y = nn.conv2d(x, self.kernel, self.strides, self.padding, dilations=self.dilation_rate)
        if self.use_bias:
            y = nn.bias_add(y, self.bias)
        return self.activation(y) if self.activation else y


class _Pool2D(Layer):
    op = ""

    def __init__(self, pool_size=2, strides=None, padding: str = "valid", name: str | None = None):
        super().__init__(name)
        self.pool_size, self.strides, self.padding = pool_size, pool_size if strides is None else strides, padding.upper()

    def call(self, x, training=None):
        fn = nn.max_pool2d if self.op == "max" else nn.avg_pool2d
        return fn(x, self.pool_size, self.strides, self.padding)


class MaxPooling2D(_Pool2D):
    op = "max"


class AveragePooling2D(_Pool2D):
    op = "avg"


class Flatten(Layer):
    def call(self, x, training=None):
        dims = x.shape.as_list()[1:]
        if None in dims:
            return tf_names.reshape(x, [tf_names.shape(x)[0], -1])
        return tf_names.reshape(x, [-1, int(np.prod(dims))])


class GlobalAveragePooling1D(Layer):
    """The mean over time; with a mask, over the unmasked steps only (Keras's)."""

    def __call__(self, x, mask=None, training=None):
        x = tf_names._t(x)
        if mask is None:
            return tf_names.reduce_mean(x, axis=1)
        m = tf_names.expand_dims(tf_names.cast(mask, x.dtype), -1)
        return tf_names.reduce_sum(x * m, axis=1) / tf_names.reduce_sum(m, axis=1)


class GlobalAveragePooling2D(Layer):
    def call(self, x, training=None):
        return tf_names.reduce_mean(x, axis=[1, 2])


class Dropout(Layer):
    """Active only with ``training=True`` (a Python bool: each value is its own trace)."""

    def __init__(self, rate: float, seed: int | None = None, name: str | None = None):
        super().__init__(name)
        self.rate, self.seed = float(rate), seed

    def call(self, x, training=None):
        return nn.dropout(x, self.rate, seed=self.seed) if training and self.rate > 0 else x


class Embedding(Layer):
    """``mask_zero=True``: id 0 is padding; ``Sequential`` hands the mask (ids != 0) to the
    layers after it that take one (LSTM, GRU, Bidirectional, GlobalAveragePooling1D), as Keras."""

    def __init__(self, input_dim: int, output_dim: int, mask_zero: bool = False, embeddings_initializer="uniform",
                 embeddings_regularizer=None, name: str | None = None):
        super().__init__(name)
        self.input_dim, self.output_dim, self.mask_zero = int(input_dim), int(output_dim), mask_zero
        self.add_weight("embeddings", initializers.make(embeddings_initializer, (self.input_dim, self.output_dim)),
                        regularizer=embeddings_regularizer)
        self.built = True

    def __call__(self, ids, training=None):
        return call("GatherV2", self.embeddings, ids, np.int32(0))


class LayerNormalization(Layer):
    """Keras 3's arithmetic: inv = rsqrt(var + epsilon) * gamma; x * inv + (beta - mean * inv)."""

    def __init__(self, axis: int = -1, epsilon: float = 1e-3, center: bool = True, scale: bool = True,
                 name: str | None = None):
        super().__init__(name)
        self.axis, self.epsilon, self.center, self.scale = axis, float(epsilon), center, scale

    def build(self, input_shape):
        n = int(input_shape[self.axis])
        if self.scale:
            self.add_weight("gamma", np.ones(n, np.float32))
        if self.center:
            self.add_weight("beta", np.zeros(n, np.float32))

    def call(self, x, training=None):
        mean, variance = nn.moments(x, axes=[self.axis], keepdims=True)
        inv = call("Rsqrt", variance + np.float32(self.epsilon))
        if self.scale:
            inv = inv * self.gamma
        res = -mean * inv
        if self.center:
            res = res + self.beta
        return x * inv + res


from specflow.api.keras_model import TrainingMixin  # noqa: E402 (its Model subclasses Layer, above)


class Sequential(TrainingMixin, Layer):
    def __init__(self, layers=None, name: str | None = None):
        super().__init__(name)
        self.layers = list(layers or [])

    def add(self, layer) -> None:
        self.layers.append(layer)

    def __call__(self, x, training: bool | None = None, mask=None):
        from specflow.api.keras_export import note_input

        note_input(self, x)
        for layer in self.layers:
            takes_mask = isinstance(layer, GlobalAveragePooling1D) or type(layer).__name__ in _MASKED
            if takes_mask:
                out = layer(x, mask=mask, training=training)
                if not getattr(layer, "return_sequences", False):
                    mask = None  # the time axis is gone
            else:
                out = layer(x, training=training)
            if isinstance(layer, Embedding) and layer.mask_zero:
                mask = tf_names.not_equal(x, 0)
            x = out
        return x

    @property
    def weights(self) -> list:
        return [w for layer in self.layers if isinstance(layer, Layer) for w in layer.weights]

    def set_weights(self, values) -> None:
        values = list(values)
        for layer in self.layers:
            n = len(layer.weights)
            layer.set_weights(values[:n])
            values = values[n:]
        if values:
            raise GraphError(f"Sequential.set_weights: {len(values)} value(s) left over")


_MASKED = ("LSTM", "GRU", "Bidirectional")


# --- losses --------------------------------------------------------------------------------------

_EPSILON = 1e-7  # Keras's backend epsilon: probabilities are clipped to [eps, 1 - eps]


class SparseCategoricalCrossentropy:
    def __init__(self, from_logits: bool = False):
        self.from_logits = from_logits

    def __call__(self, y_true, y_pred):
        labels = tf_names.cast(y_true, "int64")
        if self.from_logits:
            return tf_names.reduce_mean(nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=y_pred))
        logp = _clipped_log_probs(y_pred)
        picked = tf_names.gather(logp, labels, axis=-1, batch_dims=labels.shape.rank)
        return -tf_names.reduce_mean(picked)


def _clipped_log_probs(y_pred):
    """Keras's probabilities path: normalized over the last axis, clipped to [eps, 1 - eps], logged."""
    p = y_pred / tf_names.reduce_sum(y_pred, axis=-1, keepdims=True)
    return tf_names.log(tf_names.clip_by_value(p, _EPSILON, 1 - _EPSILON))


class CategoricalCrossentropy:
    def __init__(self, from_logits: bool = False):
        self.from_logits = from_logits

    def __call__(self, y_true, y_pred):
        if self.from_logits:
            return tf_names.reduce_mean(nn.softmax_cross_entropy_with_logits(labels=y_true, logits=y_pred))
        logp = _clipped_log_probs(y_pred)
        return tf_names.reduce_mean(-tf_names.reduce_sum(y_true * logp, axis=-1))


class MeanSquaredError:
    def __call__(self, y_true, y_pred):
        return tf_names.reduce_mean(tf_names.square(y_pred - y_true))


class BinaryCrossentropy:
    def __init__(self, from_logits: bool = False):
        self.from_logits = from_logits

    def __call__(self, y_true, y_pred):
        if self.from_logits:
            return tf_names.reduce_mean(nn.sigmoid_cross_entropy_with_logits(labels=y_true, logits=y_pred))
        p = tf_names.clip_by_value(y_pred, _EPSILON, 1 - _EPSILON)
        return tf_names.reduce_mean(-(y_true * tf_names.log(p) + (1 - y_true) * tf_names.log(1 - p)))


layers = types.ModuleType("specflow.keras.layers", "Keras layers on specflow (sf.keras.layers.Dense, ...).")
for _cls in (Layer, Dense, Conv2D, MaxPooling2D, AveragePooling2D, Flatten, GlobalAveragePooling1D,
             GlobalAveragePooling2D, Dropout, Embedding, LayerNormalization):
    setattr(layers, _cls.__name__, _cls)
losses = types.ModuleType("specflow.keras.losses", "Keras losses (mean over the batch).")
for _cls in (SparseCategoricalCrossentropy, CategoricalCrossentropy, MeanSquaredError, BinaryCrossentropy):
    setattr(losses, _cls.__name__, _cls)
utils = types.ModuleType("specflow.keras.utils")
utils.set_random_seed = set_random_seed
from specflow.api import keras_activations as activations  # noqa: E402
from specflow.api import keras_losses_more, keras_metric_objects, keras_metrics, keras_schedules  # noqa: E402

for _name, _fn in keras_losses_more.FUNCTIONS.items():
    setattr(losses, _name, _fn)
for _cls in keras_losses_more.CLASSES:
    setattr(losses, _cls.__name__, _cls)
metrics = types.ModuleType("specflow.keras.metrics", "Keras's stateful metrics (api/keras_metric_objects.py).")
for _cls in keras_metric_objects.CLASSES:
    setattr(metrics, _cls.__name__, _cls)
for _name in ("binary_accuracy", "categorical_accuracy", "sparse_categorical_accuracy", "mean_squared_error",
              "mean_absolute_error"):
    setattr(metrics, _name, getattr(keras_metrics, _name))
metrics.accuracy = keras_metric_objects.accuracy
metrics.top_k_categorical_accuracy = keras_metric_objects.top_k_categorical_accuracy
metrics.sparse_top_k_categorical_accuracy = keras_metric_objects.sparse_top_k_categorical_accuracy
optimizers.schedules = types.ModuleType("specflow.keras.optimizers.schedules", "Keras's learning-rate schedules.")
for _cls in keras_schedules.CLASSES:
    setattr(optimizers.schedules, _cls.__name__, _cls)
backend = types.ModuleType("specflow.keras.backend")


def clear_session() -> None:
    """Keras's ``clear_session``: here a no-op (layer names are not uniquified by a global counter
    and the seeded generator is left as set_random_seed left it), kept for scripts that call it."""


def to_categorical(y, num_classes=None) -> np.ndarray:
    """Keras's: integer labels as one-hot rows (float64), a trailing dimension of 1 dropped."""
    y = np.asarray(y, dtype="int64")
    shape = y.shape
    if shape and shape[-1] == 1 and len(shape) > 1:
        shape = shape[:-1]
    y = y.reshape(-1)
    num_classes = int(np.max(y)) + 1 if num_classes is None else int(num_classes)
    out = np.zeros((y.shape[0], num_classes))
    out[np.arange(y.shape[0]), y] = 1
    return out.reshape(shape + (num_classes,))


backend.clear_session = clear_session
utils.to_categorical = to_categorical
from specflow.api import keras_rnn  # noqa: E402 (its layers subclass Layer, above)

for _cls in (keras_rnn.LSTM, keras_rnn.GRU, keras_rnn.Bidirectional):
    setattr(layers, _cls.__name__, _cls)
from specflow.api import keras_layers_blocks, keras_layers_more  # noqa: E402 (their layers subclass Layer)

for _cls in keras_layers_more.LAYERS + keras_layers_blocks.LAYERS:
    setattr(layers, _cls.__name__, _cls)
_MASKED = (*_MASKED, "SimpleRNN")  # Sequential hands it the mask, as to LSTM/GRU
from specflow.api.keras_callbacks import callbacks  # noqa: E402
from specflow.api.keras_functional import Input, InputLayer  # noqa: E402 (wraps the layers above)

layers.Input, layers.InputLayer = Input, InputLayer


def __getattr__(name: str):
    if name == "Model":  # on first use: keras_model imports this module (either may be imported first)
        from specflow.api.keras_model import Model

        return Model
    raise AttributeError(f"module 'specflow.keras' has no attribute '{name}'")


__all__ = ["layers", "losses", "optimizers", "utils", "callbacks", "Model", "Sequential", "Input",  # noqa: F822
           "initializers", "regularizers", "metrics", "activations", "backend"]  # (Model: __getattr__)
