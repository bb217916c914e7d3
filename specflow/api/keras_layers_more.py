"""More of ``sf.keras.layers`` with Keras 3's math and weight layouts: ``BatchNormalization``,
``Conv1D``, ``Conv2DTranspose``, ``DepthwiseConv2D``, ``SeparableConv2D``, ``MaxPooling1D``,
``AveragePooling1D``, ``GlobalMaxPooling1D/2D``, ``UpSampling2D`` (nearest), ``ZeroPadding2D``,
``Cropping2D``, ``Reshape``, ``Permute``, ``RepeatVector`` (channels-last only), ``Masking``. The activation,
merge and attention layers are in api/keras_layers_blocks.py.

``BatchNormalization(training=True)`` normalizes with the batch's moments (``sf.nn.moments``: the
biased variance, as Keras 3's ``ops.moments``) and assigns ``moving = moving * momentum + batch *
(1 - momentum)`` to its non-trainable moving statistics, eagerly or inside the ``sf.function`` of
a ``fit`` train step; otherwise it normalizes with the moving ones."""

from __future__ import annotations

import numpy as np

from specflow.api import keras_initializers as initializers
from specflow.api import keras_regularizers as regularizers
from specflow.api import nn, nn_more, tf_names
from specflow.api.keras import Layer, _activation, _known
from specflow.api.keras_masking import set_mask
from specflow.errors import GraphError

_EPSILON = 1e-7  # Keras's backend epsilon


def _tuple(v, n: int, what: str) -> tuple:
    v = tuple(int(s) for s in np.atleast_1d(v))
    if len(v) == 1:
        return v * n
    if len(v) != n:
        raise GraphError(f"{what} must be 1 or {n} ints, got {v}")
    return v


def _pad(padding: str, layer: str, causal: bool = False) -> str:
    p = padding.lower()
    if p not in ("same", "valid") + (("causal",) if causal else ()):
        raise GraphError(f"layer '{layer}': padding must be 'valid' or 'same'{' or causal' if causal else ''}, "
                         f"got {padding!r}")
    return p.upper()


def _static(x, layer: str) -> list[int]:
    dims = x.shape.as_list()[1:]
    if None in dims:
        raise GraphError(f"layer '{layer}' needs the non-batch dimensions of its input to be known, got {x.shape}")
    return dims


class BatchNormalization(Layer):
    """Weights gamma, beta, moving_mean, moving_variance (the last two non-trainable), Keras's order.
    With a mask (one dimension less than the input), training's moments are over the unmasked
    positions only (Keras's ``_moments``)."""

    supports_masking = True

    def __init__(self, axis: int = -1, momentum: float = 0.99, epsilon: float = 1e-3, center: bool = True,
                 scale: bool = True, name: str | None = None):
        super().__init__(name)
        self.axis, self.momentum, self.epsilon = int(axis), float(momentum), float(epsilon)
        self.center, self.scale = center, scale

    def build(self, input_shape):
        if input_shape is None:
            raise GraphError(f"layer '{self.name}' needs an input of known rank")
        self._rank = len(input_shape)
        axis = self.axis % self._rank
        if input_shape[axis] is None:
            raise GraphError(f"layer '{self.name}' needs its axis {self.axis} to be known, got {input_shape}")
        n = int(input_shape[axis])
        self._reduce = [i for i in range(self._rank) if i != axis]
        self._bshape = [n if i == axis else 1 for i in range(self._rank)]
        if self.scale:
            self._own_weight("gamma", np.ones(n, np.float32))
        if self.center:
            self._own_weight("beta", np.zeros(n, np.float32))
        self._own_weight("moving_mean", np.zeros(n, np.float32), trainable=False)
        self._own_weight("moving_variance", np.ones(n, np.float32), trainable=False)

    def call(self, x, training=None, mask=None):
        if mask is not None and mask.shape.rank != x.shape.rank - 1:
            raise ValueError(f"The mask provided should be one dimension less than the inputs. Received: "
                             f"mask.shape={mask.shape}, inputs.shape={x.shape}")
        if training:
            mean, variance = nn.moments(x, axes=self._reduce) if mask is None else self._masked_moments(x, mask)
            m, rest = np.float32(self.momentum), np.float32(1.0 - self.momentum)
            self.moving_mean.assign(self.moving_mean * m + mean * rest)
            self.moving_variance.assign(self.moving_variance * m + variance * rest)
        else:
            mean, variance = self.moving_mean, self.moving_variance
        gamma = self.gamma if self.scale else None
        beta = self.beta if self.center else None
        if self._reduce != list(range(self._rank - 1)):  # not the last axis: as broadcastable shapes
            mean, variance, gamma, beta = (None if v is None else tf_names.reshape(v, self._bshape)
                                           for v in (mean, variance, gamma, beta))
        return nn.batch_normalization(x, mean, variance, beta, gamma, np.float32(self.epsilon))

    def _masked_moments(self, x, mask):
        keep = tf_names.broadcast_to(tf_names.expand_dims(tf_names.cast(mask, "bool"), -1), tf_names.shape(x))
        zero, eps = np.zeros((), x.dtype.numpy), np.asarray(_EPSILON, x.dtype.numpy)
        weights = tf_names.reduce_sum(tf_names.cast(keep, x.dtype), axis=self._reduce, keepdims=True)
        mean = tf_names.reduce_sum(tf_names.where(keep, x, zero), axis=self._reduce, keepdims=True) / (weights + eps)
        sq = tf_names.square(tf_names.where(keep, x - mean, zero))
        variance = tf_names.reduce_sum(sq, axis=self._reduce, keepdims=True) / (weights + eps)
        return tf_names.squeeze(mean), tf_names.squeeze(variance)


class Masking(Layer):
    """Keras's: time steps whose features all equal ``mask_value`` are masked (and zeroed)."""

    supports_masking = True

    def __init__(self, mask_value=0.0, name: str | None = None):
        super().__init__(name)
        self.mask_value = mask_value

    def compute_mask(self, inputs, mask=None):
        x = tf_names._t(inputs)
        return tf_names.reduce_any(tf_names.not_equal(x, np.asarray(self.mask_value, x.dtype.numpy)), axis=-1)

    def call(self, x, training=None):
        keep = tf_names.reduce_any(tf_names.not_equal(x, np.asarray(self.mask_value, x.dtype.numpy)), axis=-1,
                                   keepdims=True)
        out = tf_names.where(keep, x, np.zeros((), x.dtype.numpy))
        set_mask(out, tf_names.squeeze(keep, [-1]))
        return out


class _Conv(Layer):
    rank = 2

    def __init__(self, filters: int, kernel_size, strides=1, padding: str = "valid", activation=None,
                 use_bias: bool = True, dilation_rate=1, name: str | None = None, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None):
        super().__init__(name)
        self.kernel_initializer = initializers.get(kernel_initializer)  # used by Conv1D and Conv2DTranspose
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        r = self.rank
        self.filters = int(filters)
        self.kernel_size = _tuple(kernel_size, r, "kernel_size")
        self.strides, self.dilation_rate = _tuple(strides, r, "strides"), _tuple(dilation_rate, r, "dilation_rate")
        self.padding = _pad(padding, self.name, causal=isinstance(self, Conv1D))
        self.activation, self.use_bias = _activation(activation), use_bias

    def _add_kernel_and_bias(self, kernel_shape) -> None:
        self._own_weight("kernel", initializers.make(self.kernel_initializer, kernel_shape),
                        regularizer=self.kernel_regularizer)
        if self.use_bias:
            self._own_weight("bias", initializers.make(self.bias_initializer, (self.filters,)),
                            regularizer=self.bias_regularizer)

    def _finish(self, y):
        if self.use_bias:
            y = nn.bias_add(y, self.bias)
        return self.activation(y) if self.activation else y


class Conv1D(_Conv):
    """Kernel [kernel_size, in, filters]; padding "valid", "same" or "causal" (left-padded)."""

    rank = 1

    def build(self, input_shape):
        c = _known(input_shape, "channels", self.name)
        (k,) = self.kernel_size
        self._add_kernel_and_bias((k, c, self.filters))

    def call(self, x, training=None):
        padding = self.padding
        if padding == "CAUSAL":
            x = tf_names.pad(x, [[0, 0], [self.dilation_rate[0] * (self.kernel_size[0] - 1), 0], [0, 0]])
            padding = "VALID"
        return self._finish(nn.conv1d(x, self.kernel, self.strides[0], padding, dilations=self.dilation_rate[0]))


def _deconv_length(n: int, k: int, s: int, d: int, padding: str) -> int:
    """Keras's deconv_output_length without output_padding."""
    k = k + (k - 1) * (d - 1)
    return n * s if padding == "SAME" else n * s + max(k - s, 0)


class Conv2DTranspose(_Conv):
    """Kernel [kh, kw, filters, in] (Keras's); output size in * stride ("same") or
    in * stride + max(kernel - stride, 0) ("valid")."""

    def build(self, input_shape):
        c = _known(input_shape, "channels", self.name)
        kh, kw = self.kernel_size
        self._add_kernel_and_bias((kh, kw, self.filters, c))

    def call(self, x, training=None):
        h, w, _ = _static(x, self.name)
        oh, ow = (_deconv_length(n, k, s, d, self.padding)
                  for n, k, s, d in zip((h, w), self.kernel_size, self.strides, self.dilation_rate))
        batch = x.shape[0]
        out_shape = ([batch, oh, ow, self.filters] if batch is not None
                     else tf_names.stack([tf_names.shape(x)[0], np.int32(oh), np.int32(ow), np.int32(self.filters)]))
        y = nn.conv2d_transpose(x, self.kernel, out_shape, self.strides, self.padding, dilations=self.dilation_rate)
        return self._finish(y)


class DepthwiseConv2D(_Conv):
    """Kernel [kh, kw, in, depth_multiplier]; in * depth_multiplier outputs."""

    def __init__(self, kernel_size, strides=1, padding: str = "valid", depth_multiplier: int = 1, activation=None,
                 use_bias: bool = True, dilation_rate=1, name: str | None = None):
        super().__init__(1, kernel_size, strides, padding, activation, use_bias, dilation_rate, name)
        self.depth_multiplier = int(depth_multiplier)

    def build(self, input_shape):
        c = _known(input_shape, "channels", self.name)
        kh, kw = self.kernel_size
        dm = self.depth_multiplier
        # (_Conv's default Glorot uniform kernel_initializer is Keras's depthwise_initializer)
        self._own_weight("kernel", initializers.make(self.kernel_initializer, (kh, kw, c, dm)))
        if self.use_bias:
            self._own_weight("bias", np.zeros(c * dm, np.float32))

    def call(self, x, training=None):
        y = nn_more.depthwise_conv2d(x, self.kernel, self.strides, self.padding, dilations=self.dilation_rate)
        return self._finish(y)


class SeparableConv2D(_Conv):
    """Weights depthwise_kernel [kh, kw, in, depth_multiplier], pointwise_kernel [1, 1, in *
    depth_multiplier, filters], bias."""

    def __init__(self, filters: int, kernel_size, strides=1, padding: str = "valid", depth_multiplier: int = 1,
                 activation=None, use_bias: bool = True, dilation_rate=1, name: str | None = None):
        super().__init__(filters, kernel_size, strides, padding, activation, use_bias, dilation_rate, name)
        self.depth_multiplier = int(depth_multiplier)
        self.pointwise_initializer = initializers.GlorotUniform()  # (kernel_initializer: the depthwise one)

    def build(self, input_shape):
        c = _known(input_shape, "channels", self.name)
        kh, kw = self.kernel_size
        dm, f = self.depth_multiplier, self.filters
        self._own_weight("depthwise_kernel", initializers.make(self.kernel_initializer, (kh, kw, c, dm)))
        self._own_weight("pointwise_kernel", initializers.make(self.pointwise_initializer, (1, 1, c * dm, f)))
        if self.use_bias:
            self._own_weight("bias", np.zeros(f, np.float32))

    def call(self, x, training=None):
        y = nn_more.separable_conv2d(x, self.depthwise_kernel, self.pointwise_kernel, self.strides, self.padding,
                                     dilations=self.dilation_rate)
        return self._finish(y)


class _Pool1D(Layer):
    op = ""

    def __init__(self, pool_size=2, strides=None, padding: str = "valid", name: str | None = None):
        super().__init__(name)
        self.pool_size = int(pool_size)
        self.strides = self.pool_size if strides is None else int(strides)
        self.padding = _pad(padding, self.name)

    def call(self, x, training=None):
        fn = nn_more.max_pool1d if self.op == "max" else nn_more.avg_pool1d
        return fn(x, self.pool_size, self.strides, self.padding)


class MaxPooling1D(_Pool1D):
    op = "max"


class AveragePooling1D(_Pool1D):
    op = "avg"


class _GlobalMax(Layer):
    axes: list = []

    def __init__(self, keepdims: bool = False, name: str | None = None):
        super().__init__(name)
        self.keepdims = keepdims

    def call(self, x, training=None):
        return tf_names.reduce_max(x, axis=self.axes, keepdims=self.keepdims)


class GlobalMaxPooling1D(_GlobalMax):
    axes = [1]


class GlobalMaxPooling2D(_GlobalMax):
    axes = [1, 2]


class UpSampling2D(Layer):
    """Nearest: each row and column repeated ``size`` times (Keras's ops.repeat on axes 1 and 2)."""

    def __init__(self, size=(2, 2), interpolation: str = "nearest", name: str | None = None):
        super().__init__(name)
        if interpolation != "nearest":
            raise GraphError(f"UpSampling2D: only interpolation='nearest' is supported, got {interpolation!r}")
        self.size = _tuple(size, 2, "size")

    def call(self, x, training=None):
        h, w, c = _static(x, self.name)
        sh, sw = self.size
        x = tf_names.reshape(tf_names.tile(tf_names.expand_dims(x, 2), [1, 1, sh, 1, 1]), [-1, h * sh, w, c])
        return tf_names.reshape(tf_names.tile(tf_names.expand_dims(x, 3), [1, 1, 1, sw, 1]), [-1, h * sh, w * sw, c])


def _pairs(v, what: str) -> tuple:
    """int | (h, w) | ((top, bottom), (left, right)) as ((top, bottom), (left, right))."""
    if np.ndim(v) == 0:
        return ((int(v),) * 2,) * 2
    v = list(v)
    if len(v) != 2:
        raise GraphError(f"{what} must be an int, 2 ints or 2 pairs, got {v}")
    return tuple(tuple(int(s) for s in np.broadcast_to(np.atleast_1d(p), 2)) for p in v)


class ZeroPadding2D(Layer):
    def __init__(self, padding=(1, 1), name: str | None = None):
        super().__init__(name)
        self.padding = _pairs(padding, "padding")

    def call(self, x, training=None):
        return tf_names.pad(x, [[0, 0], list(self.padding[0]), list(self.padding[1]), [0, 0]])


class Cropping2D(Layer):
    def __init__(self, cropping=((0, 0), (0, 0)), name: str | None = None):
        super().__init__(name)
        self.cropping = _pairs(cropping, "cropping")

    def call(self, x, training=None):
        h, w, _ = _static(x, self.name)
        (t, b), (left, r) = self.cropping
        return x[:, t:h - b, left:w - r, :]


class Reshape(Layer):
    """To ``[batch, *target_shape]``; one entry of ``target_shape`` may be -1."""

    def __init__(self, target_shape, name: str | None = None):
        super().__init__(name)
        self.target_shape = tuple(int(s) for s in target_shape)

    def call(self, x, training=None):
        dims = list(self.target_shape)
        if -1 in dims:
            total, rest = int(np.prod(_static(x, self.name))), int(-np.prod(dims))
            if rest <= 0 or total % rest:
                raise GraphError(f"layer '{self.name}': cannot reshape {x.shape} to {self.target_shape}")
            dims[dims.index(-1)] = total // rest
        return tf_names.reshape(x, [-1, *dims])


class Permute(Layer):
    """``dims``: a permutation of 1..rank-1 (the batch axis stays first)."""

    def __init__(self, dims, name: str | None = None):
        super().__init__(name)
        self.dims = tuple(int(d) for d in dims)
        if sorted(self.dims) != list(range(1, len(self.dims) + 1)):
            raise GraphError(f"Permute: dims must be a permutation of 1..{len(self.dims)}, got {self.dims}")

    def call(self, x, training=None):
        return tf_names.transpose(x, [0, *self.dims])


class RepeatVector(Layer):
    """[batch, features] -> [batch, n, features]."""

    def __init__(self, n: int, name: str | None = None):
        super().__init__(name)
        self.n = int(n)

    def call(self, x, training=None):
        if x.shape.rank != 2:
            raise GraphError(f"layer '{self.name}' expects a 2-D input, got {x.shape}")
        return tf_names.tile(tf_names.expand_dims(x, 1), [1, self.n, 1])


LAYERS = (BatchNormalization, Masking, Conv1D, Conv2DTranspose, DepthwiseConv2D, SeparableConv2D, MaxPooling1D,
          AveragePooling1D, GlobalMaxPooling1D, GlobalMaxPooling2D, UpSampling2D, ZeroPadding2D, Cropping2D,
          Reshape, Permute, RepeatVector)
