"""Still more of ``sf.keras.layers``, each Keras 3's math, arguments and weight layout:
``TimeDistributed``, ``Attention``/``AdditiveAttention``, ``UnitNormalization``,
``GroupNormalization``, ``PReLU``, the training-only noise layers (``GaussianNoise``,
``GaussianDropout``, ``AlphaDropout``, ``SpatialDropout1D/2D/3D``: identity unless called with
``training=True``), ``ActivityRegularization``, ``UpSampling1D``, ``ZeroPadding1D``,
``Cropping1D``. The 3-D pooling layers, ``Conv3D``, ``Conv1DTranspose``, ``SeparableConv1D`` and
``DepthwiseConv1D`` are in api/keras_layers_conv_extra.py; Keras's preprocessing layers
(``Rescaling``, ``Normalization``, ``CategoryEncoding``, ``Discretization``, ``Resizing``,
``CenterCrop``) in api/keras_layers_preprocessing.py.

``activity_regularizer=`` (and ``ActivityRegularization``) adds Keras's penalty of the layer's
last output divided by its batch size to ``layer.losses`` (so ``fit`` trains with it);
``kernel_constraint=`` etc. are applied after each optimizer update, as ``add_weight``'s."""

from __future__ import annotations

import math

import numpy as np

from specflow.api import keras_constraints as constraints
from specflow.api import keras_initializers as initializers
from specflow.api import keras_random as random
from specflow.api import keras_regularizers as regularizers
from specflow.api import nn, tf_array_names, tf_names
from specflow.api.keras import Layer, _known
from specflow.api.keras import layers as keras_layers
from specflow.api.keras_layers_more import _tuple
from specflow.errors import GraphError

_EPSILON = 1e-7  # Keras's backend epsilon


def _data_format(value, layer: str) -> str:
    """Keras's standardize_data_format (None: channels_last, the default image_data_format)."""
    fmt = "channels_last" if value is None else str(value).lower()
    if fmt not in ("channels_last", "channels_first"):
        raise GraphError(f"layer '{layer}': data_format must be 'channels_last' or 'channels_first', got {value!r}")
    return fmt


def to_last(x, fmt: str):
    """channels_first input as channels_last (the ops here compute channels-last)."""
    if fmt == "channels_last":
        return x
    r = x.shape.rank
    return tf_names.transpose(x, [0, *range(2, r), 1])


def from_last(y, fmt: str):
    if fmt == "channels_last":
        return y
    r = y.shape.rank
    return tf_names.transpose(y, [0, r - 1, *range(1, r - 1)])


def add_activity_loss(layer, regularizer, outputs) -> None:
    """Keras's activity regularization: ``regularizer(output) / batch size`` of this call's
    output, in ``layer.losses`` until the next call (Keras clears a layer's losses per call)."""
    if regularizer is None:
        return

    def penalty(out, reg=regularizer):
        loss = tf_names._t(reg(out))
        if out.shape.rank:
            loss = tf_names.divide_no_nan(loss, tf_names.cast(tf_names.shape(out)[0], loss.dtype))
        return loss

    entries = [e for e in layer.__dict__.get("_sf_regularizers", []) if not getattr(e[1], "_sf_activity", False)]
    penalty._sf_activity = True
    outs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    layer.__dict__["_sf_regularizers"] = entries + [(o, penalty) for o in outs]


def _weight(layer, attr: str, value, regularizer=None, constraint=None, trainable: bool = True):
    var = layer._own_weight(attr, value, trainable=trainable, regularizer=regularizer)
    var.constraint = constraints.get(constraint)
    return var


# --- wrappers ------------------------------------------------------------------------------------


class TimeDistributed(Layer):
    """``layer``'s ``call`` on each time step ([batch, time, ...] -> [batch, time, ...]), one call
    per step with the step's mask as Keras does (so a BatchNormalization inside takes each step's
    moments); the weights are ``layer``'s (saved under ``layer``, Keras's Wrapper)."""

    supports_masking = True

    def __init__(self, layer, name: str | None = None):
        if not isinstance(layer, Layer):
            raise ValueError("Please initialize `TimeDistributed` layer with a `keras.layers.Layer` instance. "
                             f"Received: {layer}")
        super().__init__(name)
        self.layer = layer

    def build(self, input_shape):
        if not isinstance(input_shape, (tuple, list)) or len(input_shape) < 3:
            raise ValueError("`TimeDistributed` Layer should be passed an `input_shape` with at least 3 dimensions, "
                             f"received: {input_shape}")
        if not self.layer.built:
            self.layer.build([input_shape[0], *input_shape[2:]])
            self.layer.built = True

    def _step(self, x, mask, training):
        from specflow.api.keras import _parameters

        fn = self.layer.call if type(self.layer).call is not Layer.call else self.layer
        params = _parameters(fn)
        kwargs = {}
        if mask is not None and (params is None or "mask" in params):
            kwargs["mask"] = mask
        if params is None or "training" in params:
            kwargs["training"] = training
        return fn(x, **kwargs)

    def call(self, x, training=None, mask=None):
        if mask is not None:
            mask = tf_names._t(mask)
            if mask.shape.rank < 2:
                raise ValueError("The `mask` passed to the `TimeDistributed` layer must be at least 2D (e.g., "
                                 f"`(batch_size, timesteps)`), but it has {mask.shape.rank} dimension(s) with shape "
                                 f"{mask.shape}.")
            for i in (0, 1):
                a, b = x.shape[i], mask.shape[i]
                if a is not None and b is not None and a != b:
                    raise ValueError(f"The `mask` passed to the `TimeDistributed` layer has a shape {mask.shape} "
                                     f"that is incompatible with the input shape {x.shape}.")
        steps = x.shape[1]
        if steps is not None:
            outs = [self._step(x[:, i], None if mask is None else mask[:, i], training) for i in range(steps)]
            return tf_names.stack(outs, axis=1)
        # an unknown number of steps: batch and time merged into one call (a batch-statistics layer
        # inside sees all steps at once here, where Keras's vectorized_map would not)
        dyn = tf_names.shape(x)
        merged = tf_names.reshape(x, tf_names.concat([[-1], dyn[2:]], 0))
        y = self._step(merged, None, training)
        return tf_names.reshape(y, tf_names.concat([dyn[:2], tf_names.shape(y)[1:]], 0))


# --- attention -----------------------------------------------------------------------------------


class Attention(Layer):
    """Keras's dot-product (Luong) attention on ``[query, value]`` or ``[query, value, key]``:
    scores ``query @ key^T`` (times ``scale`` with ``use_scale``) or, ``score_mode="concat"``,
    ``concat_score_weight * sum(tanh(scale * (q + k)))``; masked value steps get ``scores - 1e9``,
    ``use_causal_mask`` hides later steps, a masked query step's output is 0, and the output
    carries the query's mask. ``return_attention_scores=True`` also returns the softmax."""

    supports_masking = True

    def __init__(self, use_scale: bool = False, score_mode: str = "dot", dropout: float = 0.0, seed=None,
                 name: str | None = None):
        super().__init__(name)
        self.use_scale, self.score_mode, self.dropout, self.seed = use_scale, score_mode, float(dropout), seed
        if self.dropout > 0:
            self.seed_generator = random.SeedGenerator(seed)
        if score_mode not in ("dot", "concat"):
            raise ValueError("Invalid value for argument score_mode. Expected one of {'dot', 'concat'}. "
                             f"Received: score_mode={score_mode}")

    def _validate(self, inputs, mask=None):
        cls = type(self).__name__
        if not isinstance(inputs, (list, tuple)):
            raise ValueError(f"{cls} layer must be called on a list of inputs, namely [query, value] or "
                             f"[query, value, key]. Received: inputs={inputs}.")
        if not 2 <= len(inputs) <= 3:
            raise ValueError(f"{cls} layer accepts inputs list of length 2 or 3, namely [query, value] or "
                             f"[query, value, key]. Received length: {len(inputs)}.")
        if mask is not None and (not isinstance(mask, (list, tuple)) or not 2 <= len(mask) <= 3):
            raise ValueError(f"{cls} layer mask must be a list, namely [query_mask, value_mask]. Received: mask={mask}.")

    def build(self, input_shape):
        self._validate(input_shape)
        if self.use_scale:
            _weight(self, "scale", np.ones((), np.float32))
        if self.score_mode == "concat":
            _weight(self, "concat_score_weight", np.ones((), np.float32))

    def _scores(self, q, k):
        scale = self.scale if self.use_scale else None
        if self.score_mode == "dot":
            scores = tf_names.matmul(q, k, transpose_b=True)
            return scores * scale if scale is not None else scores
        qk = tf_names.expand_dims(q, -2) + tf_names.expand_dims(k, -3)
        if scale is not None:
            qk = scale * qk
        return self.concat_score_weight * tf_names.reduce_sum(tf_names.tanh(qk), axis=-1)

    def call(self, inputs, mask=None, training=False, return_attention_scores: bool = False,
             use_causal_mask: bool = False):
        self._validate(inputs, mask)
        q, v = inputs[0], inputs[1]
        k = inputs[2] if len(inputs) > 2 else v
        q_mask = mask[0] if mask else None
        v_mask = mask[1] if mask else None
        scores = self._scores(q, k)
        scores_mask = None if v_mask is None else tf_names.expand_dims(tf_names.cast(v_mask, "bool"), -2)
        if use_causal_mask:
            tq, tv = scores.shape[-2], scores.shape[-1]
            if tq is None or tv is None:
                raise GraphError(f"layer '{self.name}': use_causal_mask needs the query and value lengths known")
            causal = np.tril(np.ones((tq, tv), bool))[None]
            scores_mask = causal if scores_mask is None else tf_names.logical_and(scores_mask, causal)
        if scores_mask is not None:
            scores = tf_names.where(scores_mask, scores, scores - np.float32(1e9))
        weights = nn.softmax(scores, axis=-1)
        dropped = (random.dropout(weights, self.dropout, seed=self.seed_generator) if training and self.dropout > 0
                   else weights)
        out = tf_names.matmul(dropped, v)
        if q_mask is not None:
            keep = tf_names.expand_dims(tf_names.cast(q_mask, "bool"), -1)
            out = tf_names.where(keep, out, np.zeros((), out.dtype.numpy))
        return (out, weights) if return_attention_scores else out

    def compute_mask(self, inputs, mask=None):
        self._validate(inputs, mask)
        if mask is None or mask[0] is None:
            return None
        return tf_names._t(mask[0])


class AdditiveAttention(Attention):
    """Bahdanau attention: scores ``sum(scale * tanh(q + k))``, ``scale`` a [dim] weight
    (glorot-uniform) with ``use_scale``."""

    def __init__(self, use_scale: bool = True, dropout: float = 0.0, seed=None, name: str | None = None):
        super().__init__(use_scale=use_scale, dropout=dropout, seed=seed, name=name)

    def build(self, input_shape):
        self._validate(input_shape)
        dim = _known(input_shape[0], "query features", self.name)
        if self.use_scale:
            _weight(self, "scale", initializers.make("glorot_uniform", (dim,)))

    def _scores(self, q, k):
        t = tf_names.tanh(tf_names.expand_dims(q, -2) + tf_names.expand_dims(k, -3))
        return tf_names.reduce_sum(self.scale * t if self.use_scale else t, axis=-1)


# --- normalization and activation ----------------------------------------------------------------


class UnitNormalization(Layer):
    """x * min(rsqrt(sum(x^2, axis)), 1e12): unit L2 norm along ``axis`` (Keras's ops.normalize)."""

    supports_masking = True

    def __init__(self, axis=-1, name: str | None = None):
        super().__init__(name)
        if isinstance(axis, (list, tuple)):
            self.axis = [int(a) for a in axis]
        elif isinstance(axis, (int, np.integer)):
            self.axis = int(axis)
        else:
            raise TypeError(f"Invalid value for `axis` argument: expected an int or a list/tuple of ints. "
                            f"Received: axis={axis}")
        self.built = True

    def call(self, x, training=None):
        inv = tf_names.rsqrt(tf_names.reduce_sum(tf_names.square(x), axis=self.axis, keepdims=True))
        return x * tf_names.minimum(inv, np.asarray(1e12, x.dtype.numpy))


class GroupNormalization(Layer):
    """Keras's: the channels (``axis``) split into ``groups``, each normalized over its channels
    and the non-batch axes (biased variance), then ``gamma``/``beta`` per channel, arranged as
    Keras's (inv = rsqrt(var + eps) * gamma; x * inv + (beta - mean * inv)). ``groups=-1``:
    one group per channel (instance normalization)."""

    supports_masking = True

    def __init__(self, groups: int = 32, axis: int = -1, epsilon: float = 1e-3, center: bool = True,
                 scale: bool = True, beta_initializer="zeros", gamma_initializer="ones", beta_regularizer=None,
                 gamma_regularizer=None, beta_constraint=None, gamma_constraint=None, name: str | None = None):
        if not isinstance(groups, (int, np.integer)) or (groups <= 0 and groups != -1):
            raise ValueError("Received an invalid value for argument `groups`, expected a positive integer (or `-1` "
                             f"for instance normalization). Received: groups={groups}")
        super().__init__(name)
        self.groups, self.axis, self.epsilon, self.center, self.scale = int(groups), int(axis), float(epsilon), center, scale
        self.beta_initializer, self.gamma_initializer = initializers.get(beta_initializer), initializers.get(gamma_initializer)
        self.beta_regularizer, self.gamma_regularizer = regularizers.get(beta_regularizer), regularizers.get(gamma_regularizer)
        self.beta_constraint, self.gamma_constraint = beta_constraint, gamma_constraint

    def build(self, input_shape):
        dim = input_shape[self.axis]
        if dim is None:
            raise ValueError(f"Axis {self.axis} of input tensor should have a defined dimension but the layer received "
                             f"an input with shape {input_shape}.")
        if self.groups == -1:
            self.groups = int(dim)
        if dim < self.groups:
            raise ValueError(f"Number of groups ({self.groups}) cannot be more than the number of channels ({dim}).")
        if dim % self.groups:
            raise ValueError(f"Number of groups ({self.groups}) must be a multiple of the number of channels ({dim}).")
        self._rank = len(input_shape)
        if self.scale:
            _weight(self, "gamma", initializers.make(self.gamma_initializer, (dim,)), self.gamma_regularizer,
                    self.gamma_constraint)
        if self.center:
            _weight(self, "beta", initializers.make(self.beta_initializer, (dim,)), self.beta_regularizer,
                    self.beta_constraint)

    def call(self, x, training=None):
        r, a = x.shape.rank, self.axis % x.shape.rank
        dims, dyn = x.shape.as_list(), tf_names.shape(x)
        per = dims[a] // self.groups
        grouped = [-1] + [d if d is not None else dyn[i + 1] for i, d in enumerate(dims[1:])]
        grouped[a:a + 1] = [self.groups, per]
        shape = tf_names.stack([np.int32(d) if isinstance(d, int) else d for d in grouped]) \
            if any(not isinstance(d, int) for d in grouped) else grouped
        g = tf_names.reshape(x, shape)
        mean, variance = nn.moments(g, axes=[i for i in range(1, r + 1) if i != a], keepdims=True)
        inv = tf_names.rsqrt(variance + np.float32(self.epsilon))
        bshape = [1] * (r + 1)
        bshape[a], bshape[a + 1] = self.groups, per
        if self.scale:
            inv = inv * tf_names.reshape(self.gamma, bshape)
        res = -mean * inv
        if self.center:
            res = res + tf_names.reshape(self.beta, bshape)
        return tf_names.reshape(g * inv + res, dyn)


class PReLU(Layer):
    """relu(x) - alpha * relu(-x), ``alpha`` of the input's non-batch shape (1 along ``shared_axes``)."""

    supports_masking = True

    def __init__(self, alpha_initializer="Zeros", alpha_regularizer=None, alpha_constraint=None, shared_axes=None,
                 name: str | None = None):
        super().__init__(name)
        self.alpha_initializer = initializers.get(alpha_initializer)
        self.alpha_regularizer = regularizers.get(alpha_regularizer)
        self.alpha_constraint = alpha_constraint
        if shared_axes is None:
            self.shared_axes = None
        else:
            self.shared_axes = [int(a) for a in (shared_axes if isinstance(shared_axes, (list, tuple)) else [shared_axes])]

    def build(self, input_shape):
        shape = list(input_shape[1:])
        for i in self.shared_axes or ():
            shape[i - 1] = 1
        if None in shape:
            raise GraphError(f"layer '{self.name}' needs the non-batch dimensions of its input known (or shared), "
                             f"got {input_shape}")
        _weight(self, "alpha", initializers.make(self.alpha_initializer, shape), self.alpha_regularizer,
                self.alpha_constraint)

    def call(self, x, training=None):
        return nn.relu(x) + -self.alpha * nn.relu(-x)


# --- regularization ------------------------------------------------------------------------------


class GaussianNoise(Layer):
    """x + N(0, stddev) with ``training=True``; the identity otherwise."""

    supports_masking = True

    def __init__(self, stddev: float, seed=None, name: str | None = None):
        super().__init__(name)
        if not 0 <= stddev <= 1:
            raise ValueError("Invalid value received for argument `stddev`. Expected a float value between 0 and 1. "
                             f"Received: stddev={stddev}")
        self.stddev, self.seed = stddev, seed
        if stddev > 0:
            self.seed_generator = random.SeedGenerator(seed)
        self.built = True

    def call(self, x, training=False):
        if training and self.stddev > 0:
            return x + random.normal(tf_names.shape(x), 0.0, self.stddev, dtype=x.dtype, seed=self.seed_generator)
        return x


class GaussianDropout(Layer):
    """x * N(1, sqrt(rate / (1 - rate))) with ``training=True``; the identity otherwise."""

    supports_masking = True

    def __init__(self, rate: float, seed=None, name: str | None = None):
        super().__init__(name)
        if not 0 <= rate <= 1:
            raise ValueError("Invalid value received for argument `rate`. Expected a float value between 0 and 1. "
                             f"Received: rate={rate}")
        self.rate, self.seed = rate, seed
        if rate > 0:
            self.seed_generator = random.SeedGenerator(seed)
        self.built = True

    def call(self, x, training=False):
        if training and self.rate > 0:
            stddev = math.sqrt(self.rate / (1.0 - self.rate))
            return x * random.normal(tf_names.shape(x), 1.0, stddev, dtype=x.dtype, seed=self.seed_generator)
        return x


class AlphaDropout(Layer):
    """Keras's: with ``training=True``, a kept unit is x and a dropped one SELU's negative
    saturation -alpha * scale, then a * x + b keeps the mean and variance; the keep mask is
    uniform >= rate from the layer's SeedGenerator (Keras's draws)."""

    supports_masking = True
    _ALPHA, _SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946

    def __init__(self, rate: float, noise_shape=None, seed=None, name: str | None = None):
        super().__init__(name)
        if not 0 <= rate <= 1:
            raise ValueError("Invalid value received for argument `rate`. Expected a float value between 0 and 1. "
                             f"Received: rate={rate}")
        self.rate, self.seed, self.noise_shape = rate, seed, noise_shape
        if rate > 0:
            self.seed_generator = random.SeedGenerator(seed)
        self.built = True

    def call(self, x, training=False):
        if not (training and self.rate > 0):
            return x
        dyn, dt = tf_names.shape(x), x.dtype.numpy
        shape = dyn if self.noise_shape is None else tf_names.stack(
            [dyn[i] if d is None else np.int32(d) for i, d in enumerate(self.noise_shape)])
        alpha_p = -self._ALPHA * self._SCALE
        kept = tf_names.cast(random.uniform(shape, seed=self.seed_generator) >= np.float32(self.rate), x.dtype)
        a = ((1 - self.rate) * (1 + self.rate * alpha_p**2)) ** -0.5  # (Python floats, as Keras's)
        b = -a * alpha_p * self.rate
        dropped = x * kept + np.asarray(alpha_p, dt) * (np.asarray(1, dt) - kept)
        return np.asarray(a, dt) * dropped + np.asarray(b, dt)


class _SpatialDropout(Layer):
    """Dropout of whole channels (one draw per example and channel) with ``training=True``."""

    supports_masking = True
    rank = 3

    def __init__(self, rate: float, data_format=None, seed=None, name: str | None = None):
        super().__init__(name)
        if not 0 <= rate <= 1:
            raise ValueError(f"Invalid value received for argument `rate`. Expected a float value between 0 and 1. "
                             f"Received: rate={rate}")
        self.rate, self.seed = rate, seed
        if rate > 0:
            self.seed_generator = random.SeedGenerator(seed)
        self.data_format = _data_format(data_format, self.name) if self.rank > 3 else "channels_last"

    def call(self, x, training=False):
        if x.shape.rank != self.rank:
            raise ValueError(f"Input 0 of layer '{self.name}' is incompatible with the layer: expected ndim="
                             f"{self.rank}, found ndim={x.shape.rank}. Full shape received: {x.shape}")
        if not (training and self.rate > 0):
            return x
        dyn = tf_names.shape(x)
        ones = [np.ones(1, np.int32)] * (self.rank - 2)
        parts = [dyn[:1], *ones, dyn[-1:]] if self.data_format == "channels_last" else [dyn[:2], *ones]
        return random.dropout(x, self.rate, noise_shape=tf_names.concat(parts, 0), seed=self.seed_generator)


class SpatialDropout1D(_SpatialDropout):
    def __init__(self, rate: float, seed=None, name: str | None = None):
        super().__init__(rate, None, seed, name)


class SpatialDropout2D(_SpatialDropout):
    rank = 4


class SpatialDropout3D(_SpatialDropout):
    rank = 5


class ActivityRegularization(Layer):
    """The identity; ``l1 * sum|x| + l2 * sum x^2`` over the batch size goes to ``losses``."""

    supports_masking = True

    def __init__(self, l1: float = 0.0, l2: float = 0.0, name: str | None = None):
        super().__init__(name)
        self.l1, self.l2 = l1, l2
        self.activity_regularizer = regularizers.L1L2(l1=l1, l2=l2)
        self.built = True

    def call(self, x, training=None):
        add_activity_loss(self, self.activity_regularizer, x)
        return x


# --- 1-D reshaping -------------------------------------------------------------------------------


class UpSampling1D(Layer):
    """Each step repeated ``size`` times (Keras's ops.repeat on axis 1)."""

    def __init__(self, size: int = 2, name: str | None = None):
        super().__init__(name)
        if not isinstance(size, (int, np.integer)) or isinstance(size, bool):
            raise TypeError(f"Expected an integer value for `size`, got {type(size)}.")
        if size <= 0:
            raise ValueError(f"Argument `size` should be a positive integer. Received: size={size}")
        self.size = int(size)

    def call(self, x, training=None):
        return tf_array_names.repeat(x, self.size, axis=1)


class ZeroPadding1D(Layer):
    def __init__(self, padding=1, data_format=None, name: str | None = None):
        super().__init__(name)
        self.data_format = _data_format(data_format, self.name)
        self.padding = _tuple(padding, 2, "padding")

    def call(self, x, training=None):
        pads = [[0, 0], [0, 0], list(self.padding)]
        if self.data_format == "channels_last":
            pads = [[0, 0], list(self.padding), [0, 0]]
        return tf_names.pad(x, pads)


class Cropping1D(Layer):
    def __init__(self, cropping=(1, 1), name: str | None = None):
        super().__init__(name)
        self.cropping = _tuple(cropping, 2, "cropping")

    def call(self, x, training=None):
        a, b = self.cropping
        if x.shape[1] is not None and a + b >= x.shape[1]:
            raise ValueError("`cropping` parameter of `Cropping1D` layer must be smaller than the input length. "
                             f"Received: inputs.shape={x.shape}, cropping={self.cropping}")
        return x[:, a:, :] if b == 0 else x[:, a:-b, :]


from specflow.api import keras_layers_conv_extra, keras_layers_preprocessing  # noqa: E402 (they subclass Layer too)

LAYERS = (TimeDistributed, Attention, AdditiveAttention, UnitNormalization, GroupNormalization, PReLU, GaussianNoise,
          AlphaDropout, GaussianDropout, SpatialDropout1D, SpatialDropout2D, SpatialDropout3D, ActivityRegularization, UpSampling1D,
          ZeroPadding1D, Cropping1D) + keras_layers_conv_extra.LAYERS + keras_layers_preprocessing.LAYERS
for _cls in LAYERS:  # on sf.keras.layers (keras.py imports this module at its end)
    setattr(keras_layers, _cls.__name__, _cls)
