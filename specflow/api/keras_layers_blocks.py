"""The rest of the added ``sf.keras.layers``, Keras 3's math: activation layers (``Activation``,
``ReLU``, ``LeakyReLU``, ``Softmax``, ``ELU``, ``Lambda``, ``Identity``), merge layers called with
a list (``Add``, ``Subtract``, ``Multiply``, ``Average``, ``Maximum``, ``Minimum``,
``Concatenate``, ``Dot``), ``MultiHeadAttention`` (Keras's EinsumDense weight layout) and
``SimpleRNN`` (on keras_rnn's unrolled recurrence)."""

from __future__ import annotations

import inspect
import math

import numpy as np

from specflow.api import keras_initializers as initializers
from specflow.api import keras_random as random
from specflow.api import nn, tf_names
from specflow.api.keras import Layer, _activation, _known
from specflow.api.keras_masking import get_mask, set_mask
from specflow.api.keras_rnn import _RNN
from specflow.api.tensor import Tensor
from specflow.errors import GraphError

# --- activations ---------------------------------------------------------------------------------


class Activation(Layer):
    supports_masking = True

    def __init__(self, activation, name: str | None = None):
        super().__init__(name)
        self.activation = _activation(activation)

    def call(self, x, training=None):
        return self.activation(x) if self.activation else x


class ReLU(Layer):
    """Keras 3's relu(x, negative_slope, max_value, threshold), arranged as Keras arranges it."""

    supports_masking = True

    def __init__(self, max_value=None, negative_slope: float = 0.0, threshold: float = 0.0, name: str | None = None):
        super().__init__(name)
        self.max_value = None if max_value is None else float(max_value)
        self.negative_slope, self.threshold = float(negative_slope), float(threshold)

    def call(self, x, training=None):
        slope, top, th = self.negative_slope, self.max_value, self.threshold
        if slope != 0.0:
            if top is None and th == 0:
                return nn.leaky_relu(x, alpha=slope)
            negative_part = nn.relu(-x + np.float32(th)) if th != 0 else nn.relu(-x)
        clip = top is not None
        if th != 0:
            x = x * tf_names.cast(x > np.float32(th), x.dtype)
        elif top == 6:
            x, clip = nn.relu6(x), False
        else:
            x = nn.relu(x)
        if clip:
            x = tf_names.clip_by_value(x, np.float32(0.0), np.float32(top))
        if slope != 0.0:
            x = x - np.float32(slope) * negative_part
        return x


class LeakyReLU(Layer):
    supports_masking = True

    def __init__(self, negative_slope: float = 0.3, name: str | None = None):
        super().__init__(name)
        self.negative_slope = float(negative_slope)

    def call(self, x, training=None):
        return nn.leaky_relu(x, alpha=self.negative_slope)


class ELU(Layer):
    supports_masking = True

    def __init__(self, alpha: float = 1.0, name: str | None = None):
        super().__init__(name)
        self.alpha = float(alpha)

    def call(self, x, training=None):
        y = nn.elu(x)
        return y if self.alpha == 1.0 else tf_names.where(x > np.float32(0), y, np.float32(self.alpha) * y)


class Softmax(Layer):
    """With ``mask`` (True/> 0.5 keeps): masked logits set to -1e9, masked outputs to 0 (Keras's)."""

    supports_masking = True

    def __init__(self, axis=-1, name: str | None = None):
        super().__init__(name)
        self.axis = axis

    def __call__(self, x, mask=None, training=None):
        x = tf_names._t(x)
        if mask is not None:
            mask = tf_names._t(mask)
            if mask.dtype.name != "bool":
                mask = mask > np.asarray(0.5, mask.dtype.numpy)
            x = tf_names.where(mask, x, np.float32(-1e9))
        if isinstance(self.axis, (tuple, list)) and len(self.axis) > 1:
            y = tf_names.exp(x - tf_names.reduce_logsumexp(x, axis=list(self.axis), keepdims=True))
        else:
            axis = self.axis[0] if isinstance(self.axis, (tuple, list)) else self.axis
            y = nn.softmax(x, axis=axis)
        return y if mask is None else tf_names.where(mask, y, np.float32(0.0))


class Lambda(Layer):
    """Keras's: ``function(x, **arguments)`` (with ``mask=``/``training=`` when it takes them);
    ``mask``: None (the mask ends here), a tensor, or ``fn(inputs, mask)`` giving the output's."""

    def __init__(self, function, output_shape=None, mask=None, arguments=None, name: str | None = None):
        super().__init__(name)
        self.function, self.mask, self.arguments = function, mask, dict(arguments or {})
        self.supports_masking = mask is not None
        try:
            params = inspect.signature(function).parameters
        except (TypeError, ValueError):
            params = {}
        self._takes = {k for k in ("mask", "training") if k in params}

    def call(self, x, mask=None, training=None):
        kwargs = dict(self.arguments)
        if "mask" in self._takes:
            kwargs["mask"] = mask
        if "training" in self._takes:
            kwargs["training"] = training
        return self.function(x, **kwargs)

    def compute_mask(self, inputs, mask=None):
        return self.mask(inputs, mask) if callable(self.mask) else self.mask


class Identity(Layer):
    supports_masking = True

    def call(self, x, training=None):
        return x


# --- merge layers --------------------------------------------------------------------------------


class _Merge(Layer):
    """Called with a list of tensors. Keras's masks: the output's is the OR of the inputs' when
    every input has one (``Concatenate``: any, unmasked inputs counting as all-true)."""

    least = 2
    supports_masking = True

    def __call__(self, inputs, training=None):
        if not isinstance(inputs, (list, tuple)) or len(inputs) < self.least:
            raise GraphError(f"layer '{self.name}' should be called on a list of at least {self.least} inputs")
        self.built = True
        return self._merge([_t_keep_mask(x) for x in inputs])

    def compute_mask(self, inputs, mask=None):
        if mask is None:
            return None
        if not isinstance(mask, (list, tuple)) or len(mask) != len(inputs):
            raise ValueError(f"layer '{self.name}': `mask` should be a list as long as the inputs, got {mask!r}")
        if any(m is None for m in mask):
            return None
        out = mask[0]
        for m in mask[1:]:
            out = tf_names.logical_or(out, m)
        return out


def _t_keep_mask(x):
    if isinstance(x, Tensor):
        return x
    t = tf_names._t(x)
    set_mask(t, get_mask(x))
    return t


def _fold(inputs, fn):
    out = inputs[0]
    for x in inputs[1:]:
        out = fn(out, x)
    return out


def _expanded_mask(x):
    """The input's [batch, steps] mask broadcast to its shape, or None."""
    mask = get_mask(x)
    if mask is None:
        return None
    return tf_names.broadcast_to(tf_names.expand_dims(tf_names.cast(mask, "bool"), -1), tf_names.shape(x))


def _merge_and_or_mask(fn, inputs):
    """Keras's ``_apply_merge_op_and_or_mask`` (Maximum, Minimum): a masked step of one input
    takes the other's value; the output's mask is the OR (set only when every input has one)."""
    output, output_mask = None, None
    for x in inputs:
        mask = _expanded_mask(x)
        if output is None:
            output, output_mask = x, mask
            continue
        if mask is not None:
            x = tf_names.where(mask, x, output)
        if output_mask is not None:
            output = tf_names.where(output_mask, output, x)
        output_mask = tf_names.logical_or(output_mask, mask) if mask is not None and output_mask is not None else None
        output = fn(output, x)
    if output_mask is not None:
        set_mask(output, tf_names.reduce_any(output_mask, axis=-1))
    return output


class Add(_Merge):
    def _merge(self, xs):
        return _fold(xs, lambda a, b: a + b)


class Subtract(_Merge):
    def _merge(self, xs):
        if len(xs) != 2:
            raise GraphError(f"layer '{self.name}' should be called on exactly 2 inputs, got {len(xs)}")
        return xs[0] - xs[1]


class Multiply(_Merge):
    """Keras's: masked steps multiply as 1; with every input masked, masked outputs are 0."""

    def _merge(self, xs):
        masks = [_expanded_mask(x) for x in xs]
        every = all(m is not None for m in masks)
        output, output_mask = None, None
        for x, mask in zip(xs, masks):
            if mask is not None:
                x = tf_names.where(mask, x, np.ones((), x.dtype.numpy))
                if every:
                    output_mask = mask if output_mask is None else tf_names.logical_or(output_mask, mask)
            output = x if output is None else output * x
        if every:
            output = tf_names.where(output_mask, output, np.zeros((), output.dtype.numpy))
            set_mask(output, tf_names.reduce_any(output_mask, axis=-1))
        return output


class Average(_Merge):
    def _merge(self, xs):
        return _fold(xs, lambda a, b: a + b) / np.float32(len(xs))


class Maximum(_Merge):
    def _merge(self, xs):
        return _merge_and_or_mask(tf_names.maximum, xs)


class Minimum(_Merge):
    def _merge(self, xs):
        return _merge_and_or_mask(tf_names.minimum, xs)


class Concatenate(_Merge):
    def __init__(self, axis: int = -1, name: str | None = None):
        super().__init__(name)
        self.axis = int(axis)

    def _merge(self, xs):
        return tf_names.concat(xs, axis=self.axis)

    def compute_mask(self, inputs, mask=None):
        if mask is None:
            return None
        if not isinstance(mask, (list, tuple)) or len(mask) != len(inputs):
            raise ValueError(f"layer '{self.name}': `mask` should be a list as long as the inputs, got {mask!r}")
        if all(m is None for m in mask):
            return None
        masks = []
        for x, m in zip(inputs, mask):
            x = tf_names._t(x)
            if m is None:
                masks.append(tf_names.ones_like(x, dtype="bool"))
            elif m.shape.rank < x.shape.rank:
                masks.append(tf_names.logical_or(tf_names.expand_dims(m, -1), tf_names.zeros_like(x, dtype="bool")))
            else:
                masks.append(m)
        return tf_names.reduce_any(tf_names.concat(masks, axis=self.axis), axis=-1)


class Dot(_Merge):
    """Keras's batch_dot of two 2-D or 3-D inputs over ``axes`` (an int or a pair);
    ``normalize``: each input L2-normalized along its axis first (x * min(rsqrt(sum x^2), 1e7))."""

    def __init__(self, axes, normalize: bool = False, name: str | None = None):
        super().__init__(name)
        self.axes, self.normalize = axes, normalize

    def compute_mask(self, inputs, mask=None):
        return None

    def _merge(self, xs):
        if len(xs) != 2:
            raise GraphError(f"layer '{self.name}' should be called on exactly 2 inputs, got {len(xs)}")
        x, y = xs
        rx, ry = x.shape.rank, y.shape.rank
        if rx != ry or rx not in (2, 3):
            raise GraphError(f"layer '{self.name}': inputs of rank 2 or 3 (the same) are supported, got {rx} and {ry}")
        ax, ay = (self.axes, self.axes) if np.ndim(self.axes) == 0 else tuple(self.axes)
        ax, ay = int(ax) % rx, int(ay) % ry
        if self.normalize:
            x, y = _normalize(x, ax), _normalize(y, ay)
        if rx == 2:
            return tf_names.reduce_sum(x * y, axis=1, keepdims=True)
        if ax == 1:
            x = tf_names.transpose(x, [0, 2, 1])
        if ay == 2:
            y = tf_names.transpose(y, [0, 2, 1])
        return tf_names.matmul(x, y)


def _normalize(x, axis: int):
    inv = tf_names.rsqrt(tf_names.reduce_sum(tf_names.square(x), axis=axis, keepdims=True))
    return x * tf_names.minimum(inv, np.float32(1e7))


# --- attention -----------------------------------------------------------------------------------


class MultiHeadAttention(Layer):
    """Keras 3's layout: query/key/value kernels [d, num_heads, key_dim (value_dim)], biases
    [num_heads, key_dim], output kernel [num_heads, value_dim, d_query], bias [d_query], in that
    order. Keras's masks: the query's [B, T] and the value's/key's [B, S] (``query_mask=`` etc., or
    the masks the inputs carry) restrict the attention, the output carries the query's. Without
    dropout or returned scores it is Keras's dot_product_attention path (logits
    scaled after the product, masked logits at -0.7 * float32 max); otherwise its explicit path
    (query scaled, Softmax with mask, dropout with ``training=True``)."""

    supports_masking = True

    def __init__(self, num_heads: int, key_dim: int, value_dim: int | None = None, dropout: float = 0.0,
                 use_bias: bool = True, output_shape=None, seed=None, name: str | None = None):
        super().__init__(name)
        # Keras's: the layer's initializer takes a default seed; each projection clones it
        # (a new default seed each, at build), the dropout draws from a SeedGenerator(seed)
        self.kernel_initializer, self.seed = initializers.GlorotUniform(), seed
        self.num_heads, self.key_dim = int(num_heads), int(key_dim)
        self.value_dim = int(value_dim) if value_dim is not None else self.key_dim
        self.dropout, self.use_bias = float(dropout), use_bias
        if output_shape is not None and np.ndim(output_shape) > 0:
            if len(output_shape) != 1:
                raise GraphError(f"MultiHeadAttention: output_shape must be one int, got {output_shape}")
            output_shape = output_shape[0]
        self.output_shape = None if output_shape is None else int(output_shape)

    def _dense(self, attr: str, d_in: int, units: int):
        n = self.num_heads
        init = initializers.GlorotUniform(input_axes=[0], output_axes=[1, 2])
        self._own_weight(f"{attr}_kernel", init((d_in, n, units)))
        if self.use_bias:
            self._own_weight(f"{attr}_bias", np.zeros((n, units), np.float32))

    def build(self, query_shape, value_shape, key_shape):
        dq = _known(query_shape, "query features", self.name)
        dv = _known(value_shape, "value features", self.name)
        dk = _known(key_shape, "key features", self.name)
        self._dense("query", dq, self.key_dim)
        self._dense("key", dk, self.key_dim)
        self._dense("value", dv, self.value_dim)
        if self.dropout > 0:
            self.seed_generator = random.SeedGenerator(self.seed)
        out, n, v = self.output_shape or dq, self.num_heads, self.value_dim
        init = initializers.GlorotUniform(input_axes=[0, 1], output_axes=[2])
        self._own_weight("output_kernel", init((n, v, out)))
        if self.use_bias:
            self._own_weight("output_bias", np.zeros(out, np.float32))

    def _project(self, x, attr: str):
        y = tf_names.einsum("abc,cde->abde", x, getattr(self, f"{attr}_kernel"))
        return y + getattr(self, f"{attr}_bias") if self.use_bias else y

    def __call__(self, query, value, key=None, query_mask=None, value_mask=None, key_mask=None, attention_mask=None,
                 return_attention_scores: bool = False, training=None, use_causal_mask: bool = False):
        query_mask = get_mask(query)  # Keras reads the query's own mask, and takes the inputs' masks off
        for t in (query, value, key):
            set_mask(t, None)
        query, value = tf_names._t(query), tf_names._t(value)
        key = value if key is None else tf_names._t(key)
        for t, what in ((query, "query"), (value, "value"), (key, "key")):
            if t.shape.rank != 3:
                raise GraphError(f"layer '{self.name}': {what} must be [batch, steps, features], got {t.shape}")
        if not self.built:
            self.build(query.shape.as_list(), value.shape.as_list(), key.shape.as_list())
            self.built = True
        mask = self._attention_mask(query, value, query_mask, value_mask, key_mask, attention_mask, use_causal_mask)
        if mask is not None:
            mask = tf_names.expand_dims(mask, -3)  # [B, 1, T, S]: the same for each head
        out, scores = self._attend(query, key, value, mask, return_attention_scores, training)
        if query_mask is not None:
            set_mask(out, query_mask)
        return (out, scores) if return_attention_scores else out

    @staticmethod
    def _attention_mask(query, value, query_mask, value_mask, key_mask, attention_mask, use_causal_mask):
        """Keras's ``_compute_attention_mask``: [B, T, S] from the query's [B, T], the value's and
        key's [B, S] masks, the causal [1, T, S] and ``attention_mask``, all and-ed."""
        auto = None
        for m, axis in ((query_mask, -1), (value_mask, -2), (key_mask, -2)):
            if m is not None:
                m = tf_names.expand_dims(tf_names.cast(m, "bool"), axis)
                auto = m if auto is None else tf_names.logical_and(auto, m)
        if use_causal_mask:
            causal = np.tril(np.ones((query.shape[1], value.shape[1]), bool))[None]
            auto = causal if auto is None else tf_names.logical_and(auto, causal)
        if attention_mask is not None:
            attention_mask = tf_names.cast(attention_mask, "bool")
        if auto is not None:
            attention_mask = auto if attention_mask is None else tf_names.logical_and(attention_mask, auto)
        return attention_mask

    def _attend(self, query, key, value, mask, return_attention_scores, training):
        q, k, v = self._project(query, "query"), self._project(key, "key"), self._project(value, "value")
        scale = np.float32(1.0 / math.sqrt(float(self.key_dim)))
        if self.dropout == 0.0 and not return_attention_scores:
            logits = tf_names.einsum("BTNH,BSNH->BNTS", q, k) * scale
            if mask is not None:
                logits = tf_names.where(mask, logits, np.float32(-0.7 * 3.38953e38))
            scores = nn.softmax(logits, axis=-1)
            out = tf_names.einsum("BNTS,BSNH->BTNH", scores, v)
        else:
            softmax = Softmax(axis=-1, name="attention_softmax")
            scores = softmax(tf_names.einsum("aecd,abcd->acbe", k, q * scale), mask=mask)
            drop = random.dropout(scores, self.dropout, seed=self.seed_generator) if training and self.dropout > 0 \
                else scores
            out = tf_names.einsum("acbe,aecd->abcd", drop, v)
        out = tf_names.einsum("abcd,cde->abe", out, self.output_kernel)
        if self.use_bias:
            out = out + self.output_bias
        return out, scores


# --- SimpleRNN -----------------------------------------------------------------------------------


class SimpleRNN(_RNN):
    """h = activation(x @ kernel + bias + h @ recurrent_kernel); weights kernel, recurrent_kernel, bias."""

    gates = 1
    _n_states = 1
    _seed_first = True

    def __init__(self, units: int, activation="tanh", return_sequences: bool = False, return_state: bool = False,
                 go_backwards: bool = False, zero_output_for_mask: bool = False, name: str | None = None):
        super().__init__(units, activation, None, return_sequences, return_state, go_backwards,
                         zero_output_for_mask, name)

    def _bias_init(self):
        return np.zeros(self.units, np.float32)

    def _step(self, x, states):
        (h,) = states
        z = tf_names.matmul(x, self.kernel) + self.bias + tf_names.matmul(h, self.recurrent_kernel)
        h = self.activation(z) if self.activation else z
        return h, [h]


LAYERS = (Activation, ReLU, LeakyReLU, ELU, Softmax, Lambda, Identity, Add, Subtract, Multiply, Average, Maximum,
          Minimum, Concatenate, Dot, MultiHeadAttention, SimpleRNN)
