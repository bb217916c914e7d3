"""``sf.keras``: the Keras layers a first model reaches for, as sf.Modules built on their first
call (``Dense``, ``Conv2D``, ``MaxPooling2D``, ``AveragePooling2D``, ``Flatten``, ``Dropout``,
``Embedding``, ``LayerNormalization``, ``GlobalAveragePooling1D/2D``; named as Keras names them:
"dense", "dense_1", ...), ``Sequential`` (api/keras_sequential.py), Keras's masks
(api/keras_masking.py), the losses (api/keras_losses_more.py) and ``sf.keras.optimizers``
(sf.optimizers' rules with Keras's clipping options, and Keras's other optimizers:
api/keras_optimizers.py). A custom loop trains them, or Keras's
``compile``/``fit``/``evaluate``/``predict`` on ``Sequential`` and on subclasses of ``sf.keras.Model``
(api/keras_model.py), with ``sf.keras.callbacks`` (History, EarlyStopping).

The math is Keras 3's (layer norm's arrangement, the losses' clipping of probabilities, the
weight layouts), so weights copied from a Keras model with ``set_weights(model.get_weights())``
give Keras's outputs and gradients. Initial values, dropout masks and
``sf.keras.random`` draws are Keras's with the TensorFlow backend, bit for bit, for the same
seed (api/keras_random.py: by default Glorot uniform kernels, zero biases, uniform(-0.05, 0.05)
embeddings; ``kernel_initializer=`` etc. take ``sf.keras.initializers``; after
``sf.keras.utils.set_random_seed(s)`` a model gets Keras's initial weights). ``sf.keras.regularizers``, ``metrics`` (stateful objects), ``activations``,
``optimizers.schedules`` and ``backend`` live in api/keras_*.py modules named after them."""

from __future__ import annotations

import functools
import inspect
import re
import types

import numpy as np

from specflow.api import keras_constraints as constraints
from specflow.api import keras_initializers as initializers
from specflow.api import keras_ops as ops
from specflow.api import keras_random as random
from specflow.api import keras_regularizers as regularizers
from specflow.api import nn, tf_names
from specflow.api.keras_random import set_random_seed
from specflow.api.module import Module
from specflow.api.op_functions import call
from specflow.api.variables import Variable
from specflow.errors import GraphError


def _activation(name):
    if name is None or callable(name):
        return name
    table = {"linear": None, "relu": nn.relu, "sigmoid": nn.sigmoid, "tanh": nn.tanh, "softmax": nn.softmax,
             "gelu": nn.gelu, "elu": nn.elu, "selu": nn.selu, "swish": nn.silu, "silu": nn.silu,
             "softplus": nn.softplus, "relu6": nn.relu6, "leaky_relu": nn.leaky_relu, "log_softmax": nn.log_softmax}
    if name not in table:
        raise GraphError(f"unknown activation '{name}'; known: {', '.join(sorted(table))}")
    return table[name]


_NAME_UIDS: dict[str, int] = {}


def auto_name(class_name: str) -> str:
    """Keras's default layer name: the class name in snake case ("global_average_pooling1d"),
    made unique by a process-wide count ("dense", "dense_1", ...; clear_session() restarts it)."""
    name = re.sub(r"\W+", "", class_name)
    name = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    name = re.sub("([a-z])([A-Z])", r"\1_\2", name).lower()
    count = _NAME_UIDS.get(name, 0)
    _NAME_UIDS[name] = count + 1
    return name if count == 0 else f"{name}_{count}"


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


def traced_call(layer):
    """``layer.call``, converted by AutoGraph while a function is traced (a user's layer may
    branch on a tensor with Python's ``if``, as Keras on TensorFlow lets it)."""
    from specflow.api.context import STATE

    call = layer.call
    if STATE.trace is None:
        return call
    from specflow.api.autograph import convert, convertible_callee

    return convert(call) if convertible_callee(call) else call


class Layer(Module):
    """Built on the first call from the input's shape (``build``); ``weights`` in Keras's order.

    ``call(self, inputs, ...)`` gets ``training=`` and ``mask=`` only when it takes them, as in
    Keras; a layer that ``supports_masking`` hands its input's mask on through ``compute_mask``
    (api/keras_masking.py). Keras's ``input_shape=``/``input_dim=`` are accepted by every layer
    (for a Sequential's first layer)."""

    supports_masking = False  # Keras 3: True for layers that pass a mask on (set per class or instance)

    def __init__(self, name: str | None = None):
        super().__init__(name if name is not None else auto_name(type(self).__name__))
        self.built = False
        self._weight_order: list = []  # attribute names (built-in layers) and add_weight's variables

    def _own_weight(self, attr: str, value: np.ndarray, trainable: bool = True, regularizer=None) -> Variable:
        """A built-in layer's weight: made from ``value``, kept as attribute ``attr``."""
        var = Variable(value, trainable=trainable, name=f"{self.name}/{attr}")
        setattr(self, attr, var)
        self._weight_order.append(attr)
        if regularizer is not None:
            self.__dict__.setdefault("_sf_regularizers", []).append((attr, regularizers.get(regularizer)))
        return var

    def add_weight(self, shape=None, initializer=None, dtype=None, trainable: bool = True, autocast: bool = True,
                   regularizer=None, constraint=None, aggregation="none", overwrite_with_gradient: bool = False,
                   name: str | None = None) -> Variable:
        """Keras 3's: a new weight of ``shape`` from ``initializer`` (a name, an initializer or a
        callable ``(shape, dtype)``; default glorot_uniform for floats, zeros otherwise), tracked in
        ``weights`` in creation order; ``regularizer`` adds to ``losses``, ``constraint`` is applied
        after each optimizer update."""
        from specflow.api import keras_initializers
        from specflow.graph.dtypes import as_dtype

        dt = as_dtype(dtype or "float32")
        shape = () if shape is None else tuple(int(d) for d in shape)
        if initializer is None:
            initializer = "glorot_uniform" if dt.is_floating else "zeros"
        init = keras_initializers.get(initializer)
        value = np.asarray(init(shape, dt.name))
        if value.shape != shape:
            value = np.broadcast_to(value, shape)
        var = Variable(value.astype(dt.numpy), trainable=trainable, name=f"{self.name}/{name or 'variable'}")
        var.constraint = constraints.get(constraint)
        self._weight_order.append(var)
        if regularizer is not None:
            self.__dict__.setdefault("_sf_regularizers", []).append((var, regularizers.get(regularizer)))
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
            out.extend(reg(_weight(layer, attr)) for attr, reg in layer.__dict__.get("_sf_regularizers", ()))
            for k, value in vars(layer).items():
                if not k.startswith("_sf_"):
                    for item in held(value):
                        if isinstance(item, Layer):
                            visit(item)

        visit(self)
        return out

    def build(self, input_shape) -> None:
        pass

    def compute_mask(self, inputs, mask=None):
        """Keras's default: the input's mask, unchanged (used only when ``supports_masking``)."""
        return mask

    def __call__(self, inputs, *args, **kwargs):
        x = _as_inputs(inputs)
        if not self.built:
            self.build(_shapes(x))
            self.built = True
        return traced_call(self)(x, *args, **_accepted(self.call, kwargs))

    __call__._sf_forwards_to_call = True  # keras_masking reads masks off `call`'s parameters

    def call(self, x, training=None):  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def weights(self) -> list:
        """Its own weights, then those of the layers it holds in attributes (a custom layer made
        of layers), as Keras's."""
        out, seen = [], set()
        for w in [_weight(self, a) for a in self._weight_order] + [
                w for k, value in vars(self).items() if not k.startswith("_sf_")
                for item in held(value) if isinstance(item, Layer) and item is not self for w in item.weights]:
            if id(w) not in seen:
                seen.add(id(w))
                out.append(w)
        return out

    def get_weights(self) -> list[np.ndarray]:
        return [np.asarray(w) for w in self.weights]

    def set_weights(self, values) -> None:
        values = list(values)
        if len(values) != len(self.weights):
            raise GraphError(f"layer '{self.name}' has {len(self.weights)} weight(s), got {len(values)} "
                             "(is it built? call it once first)")
        for w, v in zip(self.weights, values):
            w.assign(np.asarray(v))

    def count_params(self) -> int:
        """The number of scalars in the weights (Keras's; the layer must be built)."""
        if not self.built:
            raise ValueError(f"You tried to call `count_params` on layer '{self.name}', but the layer isn't built. "
                             "You can build it manually via: `layer.build(input_shape)`.")
        return sum(int(np.prod(w.shape.as_list())) for w in self.weights)


def _weight(layer, entry):
    """A ``_weight_order`` entry's variable: an attribute's name (a built-in layer's weight) or
    the variable itself (``add_weight``'s)."""
    return getattr(layer, entry) if isinstance(entry, str) else entry


def _as_inputs(x):
    """A call's first argument as tensors (a list of them for merge-style layers)."""
    if isinstance(x, (list, tuple)) and x and not np.isscalar(x[0]) and not isinstance(x[0], (list, tuple)):
        return [v if isinstance(v, Variable) else tf_names._t(v) for v in x]
    return x if isinstance(x, Variable) else tf_names._t(x)


def _shapes(x):
    if isinstance(x, list):
        return [_shapes(v) for v in x]
    return x.shape.as_list() if x.shape.rank is not None else None


def _accepted(fn, kwargs: dict) -> dict:
    """``kwargs`` less ``training``/``mask`` when ``fn`` does not take them (Keras's call context)."""
    if not ("training" in kwargs or "mask" in kwargs):
        return kwargs
    params = _parameters(fn)
    if params is None:
        return kwargs
    return {k: v for k, v in kwargs.items() if k not in ("training", "mask") or k in params}


def _parameters(fn):
    """Parameter names of ``fn`` (None: it takes **kwargs or cannot be inspected)."""
    return _parameters_of(getattr(fn, "__func__", fn))


@functools.cache
def _parameters_of(fn):
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return None
    return frozenset(params)


def _known(shape, what: str, layer: str) -> int:
    if shape is None or shape[-1] is None:
        raise GraphError(f"layer '{layer}' needs the last dimension of its input ({what}) to be known, got {shape}")
    return int(shape[-1])


class Dense(Layer):
    supports_masking = True

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
        self._own_weight("kernel", initializers.make(self.kernel_initializer, (n, self.units)),
                        regularizer=self.kernel_regularizer)
        if self.use_bias:
            self._own_weight("bias", initializers.make(self.bias_initializer, (self.units,)),
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
        self._own_weight("kernel", initializers.make(self.kernel_initializer, (kh, kw, c, self.filters)),
                        regularizer=self.kernel_regularizer)
        if self.use_bias:
            self._own_weight("bias", initializers.make(self.bias_initializer, (self.filters,)),
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
    """The mean over time; with a mask, over the unmasked steps only (Keras's); the mask ends here."""

    supports_masking = True

    def __call__(self, x, mask=None, training=None):
        x = tf_names._t(x)
        if mask is None:
            return tf_names.reduce_mean(x, axis=1)
        keep = tf_names.expand_dims(tf_names.cast(mask, "bool"), 2)
        x = tf_names.where(keep, x, np.zeros((), x.dtype.numpy))
        return tf_names.reduce_sum(x, axis=1) / tf_names.reduce_sum(tf_names.cast(keep, x.dtype), axis=1)

    def compute_mask(self, inputs, mask=None):
        return None


class GlobalAveragePooling2D(Layer):
    def call(self, x, training=None):
        return tf_names.reduce_mean(x, axis=[1, 2])


class Dropout(Layer):
    """Active only with ``training=True`` (a Python bool: each value is its own trace). Its
    masks are Keras's: a SeedGenerator(seed) made with the layer, one draw per call."""

    supports_masking = True

    def __init__(self, rate: float, noise_shape=None, seed: int | None = None, name: str | None = None):
        super().__init__(name)
        if not 0 <= rate <= 1:
            raise ValueError(f"Invalid value received for argument `rate`. Expected a float value between 0 and 1. "
                             f"Received: rate={rate}")
        self.rate, self.seed = rate, seed
        self.noise_shape = None if noise_shape is None else tuple(noise_shape)
        if rate > 0:
            self.seed_generator = random.SeedGenerator(seed)

    def call(self, x, training=None):
        if training and self.rate > 0:
            return random.dropout(x, self.rate, noise_shape=self.noise_shape, seed=self.seed_generator)
        return x


class Embedding(Layer):
    """``mask_zero=True``: id 0 is padding: the output carries the mask ids != 0, which the layers
    after it pass on or use (LSTM, GRU, Bidirectional, GlobalAveragePooling1D...), as Keras's."""

    def __init__(self, input_dim: int, output_dim: int, mask_zero: bool = False, embeddings_initializer="uniform",
                 embeddings_regularizer=None, name: str | None = None):
        super().__init__(name)
        self.input_dim, self.output_dim, self.mask_zero = int(input_dim), int(output_dim), mask_zero
        self.supports_masking = mask_zero
        self._own_weight("embeddings", initializers.make(embeddings_initializer, (self.input_dim, self.output_dim)),
                        regularizer=embeddings_regularizer)
        self.built = True

    def __call__(self, ids, training=None):
        ids = tf_names._t(ids)
        if ids.dtype.name not in ("int32", "int64"):
            ids = tf_names.cast(ids, "int32")  # Keras casts float ids (a Sequential built on float zeros)
        return call("GatherV2", self.embeddings, ids, np.int32(0))

    def compute_mask(self, inputs, mask=None):
        return tf_names.not_equal(tf_names._t(inputs), 0) if self.mask_zero else None


class LayerNormalization(Layer):
    """Keras 3's arithmetic: inv = rsqrt(var + epsilon) * gamma; x * inv + (beta - mean * inv)."""

    supports_masking = True

    def __init__(self, axis: int = -1, epsilon: float = 1e-3, center: bool = True, scale: bool = True,
                 name: str | None = None):
        super().__init__(name)
        self.axis, self.epsilon, self.center, self.scale = axis, float(epsilon), center, scale

    def build(self, input_shape):
        n = int(input_shape[self.axis])
        if self.scale:
            self._own_weight("gamma", np.ones(n, np.float32))
        if self.center:
            self._own_weight("beta", np.zeros(n, np.float32))

    def call(self, x, training=None):
        mean, variance = nn.moments(x, axes=[self.axis], keepdims=True)
        inv = call("Rsqrt", variance + np.float32(self.epsilon))
        if self.scale:
            inv = inv * self.gamma
        res = -mean * inv
        if self.center:
            res = res + self.beta
        return x * inv + res


layers = types.ModuleType("specflow.keras.layers", "Keras layers on specflow (sf.keras.layers.Dense, ...).")
for _cls in (Layer, Dense, Conv2D, MaxPooling2D, AveragePooling2D, Flatten, GlobalAveragePooling1D,
             GlobalAveragePooling2D, Dropout, Embedding, LayerNormalization):
    setattr(layers, _cls.__name__, _cls)
losses = types.ModuleType("specflow.keras.losses", "Keras 3's losses (api/keras_losses_more.py).")
utils = types.ModuleType("specflow.keras.utils")
utils.set_random_seed = set_random_seed
from specflow.api import keras_activations as activations  # noqa: E402
from specflow.api import keras_loss_base as _loss_base  # noqa: E402
from specflow.api import keras_losses_more, keras_metric_objects, keras_metrics, keras_schedules  # noqa: E402

for _name, _fn in keras_losses_more.FUNCTIONS.items():
    setattr(losses, _name, _fn)
for _cls in keras_losses_more.CLASSES:
    setattr(losses, _cls.__name__, _cls)
losses.Loss, losses.LossFunctionWrapper = _loss_base.Loss, _loss_base.LossFunctionWrapper
metrics = types.ModuleType("specflow.keras.metrics", "Keras's stateful metrics (api/keras_metric_objects.py).")
for _cls in keras_metric_objects.CLASSES:
    setattr(metrics, _cls.__name__, _cls)
for _name in ("binary_accuracy", "categorical_accuracy", "sparse_categorical_accuracy", "mean_squared_error",
              "mean_absolute_error"):
    setattr(metrics, _name, getattr(keras_metrics, _name))
metrics.accuracy = keras_metric_objects.accuracy
metrics.top_k_categorical_accuracy = keras_metric_objects.top_k_categorical_accuracy
metrics.sparse_top_k_categorical_accuracy = keras_metric_objects.sparse_top_k_categorical_accuracy
from specflow.api import keras_optimizers  # noqa: E402
from specflow.api import optimizers as _sf_optimizers  # noqa: E402

optimizers = keras_optimizers.namespace
optimizers.schedules = types.ModuleType("specflow.keras.optimizers.schedules", "Keras's learning-rate schedules.")
for _cls in keras_schedules.CLASSES:
    setattr(optimizers.schedules, _cls.__name__, _cls)
_sf_optimizers.schedules = optimizers.schedules  # (sf.optimizers.schedules too, as before)
backend = types.ModuleType("specflow.keras.backend")


def clear_session() -> None:
    """Keras's ``clear_session``: default layer names count from the start again ("dense"); the
    seeded generator is left as set_random_seed left it."""
    _NAME_UIDS.clear()


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
from specflow.api.keras_callbacks import callbacks  # noqa: E402
from specflow.api.keras_functional import Input, InputLayer  # noqa: E402 (wraps the layers above)
from specflow.api.keras_sequential import Sequential  # noqa: E402

layers.Input, layers.InputLayer = Input, InputLayer


def __getattr__(name: str):
    if name == "Model":  # on first use: keras_model imports this module (either may be imported first)
        from specflow.api.keras_model import Model

        return Model
    raise AttributeError(f"module 'specflow.keras' has no attribute '{name}'")


__all__ = ["layers", "losses", "optimizers", "utils", "callbacks", "Model", "Sequential", "Input",  # noqa: F822
           "random", "initializers", "regularizers", "constraints", "metrics", "activations", "backend", "ops"]  # (Model: __getattr__)
from specflow.api import keras_layers_extra  # noqa: E402, F401 (registers its layers on sf.keras.layers)
