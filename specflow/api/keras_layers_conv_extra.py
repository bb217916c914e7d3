"""More of ``sf.keras.layers``, convolutions and pooling beyond keras_layers_more.py's, each
Keras 3's math, arguments and weight layout: the 3-D pooling layers (``MaxPooling3D``,
``AveragePooling3D``, their global forms), ``Conv3D``, ``Conv1DTranspose``, ``DepthwiseConv1D``
and ``SeparableConv1D``; ``data_format``, activity regularizers and constraints as in
keras_layers_extra.py, whose helpers they share."""

from __future__ import annotations

import numpy as np

from specflow.api import keras_initializers as initializers
from specflow.api import keras_regularizers as regularizers
from specflow.api import nn, nn_more, tf_names
from specflow.api.keras import Layer, _activation
from specflow.api.keras_layers_extra import _data_format, _weight, add_activity_loss, from_last, to_last
from specflow.api.keras_layers_more import _pad, _tuple
from specflow.api.op_functions import call
from specflow.errors import GraphError

# --- 3-D pooling ---------------------------------------------------------------------------------


class _Pool3D(Layer):
    op = ""

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding: str = "valid", data_format=None,
                 name: str | None = None):
        super().__init__(name)
        self.pool_size = _tuple(pool_size, 3, "pool_size")
        self.strides = self.pool_size if strides is None else _tuple(strides, 3, "strides")
        self.padding = _pad(padding, self.name)
        self.data_format = _data_format(data_format, self.name)

    def call(self, x, training=None):
        fn = nn_more.max_pool3d if self.op == "max" else nn_more.avg_pool3d
        return from_last(fn(to_last(x, self.data_format), self.pool_size, self.strides, self.padding), self.data_format)


class MaxPooling3D(_Pool3D):
    op = "max"


class AveragePooling3D(_Pool3D):
    op = "avg"

    def __init__(self, pool_size, strides=None, padding: str = "valid", data_format=None, name: str | None = None):
        super().__init__(pool_size, strides, padding, data_format, name)


class _Global3D(Layer):
    op = ""

    def __init__(self, data_format=None, keepdims: bool = False, name: str | None = None):
        super().__init__(name)
        self.data_format, self.keepdims = _data_format(data_format, self.name), keepdims

    def call(self, x, training=None):
        axes = [1, 2, 3] if self.data_format == "channels_last" else [2, 3, 4]
        fn = tf_names.reduce_max if self.op == "max" else tf_names.reduce_mean
        return fn(x, axis=axes, keepdims=self.keepdims)


class GlobalAveragePooling3D(_Global3D):
    op = "avg"


class GlobalMaxPooling3D(_Global3D):
    op = "max"


# --- convolutions --------------------------------------------------------------------------------


class _ConvBase(Layer):
    """What Keras's convolutions share: initializers, regularizers, constraints, bias, activation,
    ``activity_regularizer`` and ``data_format`` (channels_first computed as channels_last)."""

    rank = 1

    def _setup(self, kernel_size, strides, padding, data_format_, dilation_rate, activation, use_bias,
               bias_initializer, bias_regularizer, activity_regularizer, bias_constraint, causal: bool = False):
        r = self.rank
        self.kernel_size = _tuple(kernel_size, r, "kernel_size")
        self.strides, self.dilation_rate = _tuple(strides, r, "strides"), _tuple(dilation_rate, r, "dilation_rate")
        self.padding = _pad(padding, self.name, causal=causal)
        self.data_format = _data_format(data_format_, self.name)
        self.activation, self.use_bias = _activation(activation), use_bias
        self.bias_initializer, self.bias_regularizer = initializers.get(bias_initializer), regularizers.get(bias_regularizer)
        self.bias_constraint = bias_constraint
        self.activity_regularizer = regularizers.get(activity_regularizer)

    def _channels(self, input_shape) -> int:
        shape = list(input_shape)
        c = shape[-1] if self.data_format == "channels_last" else shape[1]
        if c is None:
            raise GraphError(f"layer '{self.name}' needs its input's channels known, got {input_shape}")
        return int(c)

    def _bias(self, n: int) -> None:
        if self.use_bias:
            _weight(self, "bias", initializers.make(self.bias_initializer, (n,)), self.bias_regularizer,
                    self.bias_constraint)

    def call(self, x, training=None):
        y = self._conv(to_last(x, self.data_format))
        if self.use_bias:
            y = nn.bias_add(y, self.bias)
        if self.activation:
            y = self.activation(y)
        y = from_last(y, self.data_format)
        add_activity_loss(self, self.activity_regularizer, y)
        return y


class Conv3D(_ConvBase):
    """Kernel [kd, kh, kw, in / groups, filters]; ``groups`` > 1 convolves each channel group
    with its share of the filters."""

    rank = 3

    def __init__(self, filters: int, kernel_size, strides=(1, 1, 1), padding: str = "valid", data_format=None,
                 dilation_rate=(1, 1, 1), groups: int = 1, activation=None, use_bias: bool = True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros", kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 name: str | None = None):
        super().__init__(name)
        self.filters, self.groups = int(filters), int(groups)
        if self.filters % self.groups:
            raise ValueError(f"The number of filters must be evenly divisible by the number of groups. Received: "
                             f"groups={groups}, filters={filters}.")
        self._setup(kernel_size, strides, padding, data_format, dilation_rate, activation, use_bias, bias_initializer,
                    bias_regularizer, activity_regularizer, bias_constraint)
        self.kernel_initializer, self.kernel_regularizer = initializers.get(kernel_initializer), regularizers.get(kernel_regularizer)
        self.kernel_constraint = kernel_constraint

    def build(self, input_shape):
        c = self._channels(input_shape)
        if c % self.groups:
            raise ValueError(f"The number of input channels must be evenly divisible by the number of groups. "
                             f"Received groups={self.groups}, but the input has {c} channels "
                             f"(full input shape is {input_shape}).")
        shape = (*self.kernel_size, c // self.groups, self.filters)
        _weight(self, "kernel", initializers.make(self.kernel_initializer, shape), self.kernel_regularizer,
                self.kernel_constraint)
        self._bias(self.filters)

    def _conv(self, x):
        if self.groups == 1:
            return nn_more.conv3d(x, self.kernel, self.strides, self.padding, dilations=self.dilation_rate)
        xs = tf_names.split(x, self.groups, axis=-1)
        ks = tf_names.split(self.kernel, self.groups, axis=-1)
        return tf_names.concat([nn_more.conv3d(a, k, self.strides, self.padding, dilations=self.dilation_rate)
                                for a, k in zip(xs, ks)], axis=-1)


def _transpose_length(n: int, k: int, s: int, d: int, padding: str, output_padding) -> int:
    """Keras's _get_output_shape_given_tf_padding."""
    k = (k - 1) * d + 1
    if padding == "VALID":
        return (n - 1) * s + k + (max(k, s) - k if output_padding is None else output_padding)
    return n * s if output_padding is None else (n - 1) * s + k % 2 + output_padding


class Conv1DTranspose(_ConvBase):
    """Kernel [kernel_size, filters, in] (Keras's); the output length Keras's (``output_padding``
    included)."""

    def __init__(self, filters: int, kernel_size, strides=1, padding: str = "valid", output_padding=None,
                 data_format=None, dilation_rate=1, activation=None, use_bias: bool = True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros", kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 name: str | None = None):
        super().__init__(name)
        self.filters = int(filters)
        self._setup(kernel_size, strides, padding, data_format, dilation_rate, activation, use_bias, bias_initializer,
                    bias_regularizer, activity_regularizer, bias_constraint)
        self.output_padding = None if output_padding is None else _tuple(output_padding, 1, "output_padding")
        if self.output_padding is not None and self.output_padding[0] >= self.strides[0]:
            raise ValueError(f"Strides {self.strides} must be greater than output padding {self.output_padding}.")
        self.kernel_initializer, self.kernel_regularizer = initializers.get(kernel_initializer), regularizers.get(kernel_regularizer)
        self.kernel_constraint = kernel_constraint

    def build(self, input_shape):
        c = self._channels(input_shape)
        _weight(self, "kernel", initializers.make(self.kernel_initializer, (self.kernel_size[0], self.filters, c)),
                self.kernel_regularizer, self.kernel_constraint)
        self._bias(self.filters)

    def _conv(self, x):
        n = x.shape[1] if x.shape[1] is not None else tf_names.shape(x)[1]
        out = _transpose_length(n, self.kernel_size[0], self.strides[0], self.dilation_rate[0], self.padding,
                                None if self.output_padding is None else self.output_padding[0])
        if x.shape[0] is not None and isinstance(out, int):
            shape = [x.shape[0], out, self.filters]
        else:
            shape = tf_names.stack([tf_names.shape(x)[0], out, np.int32(self.filters)])
        return nn_more.conv1d_transpose(x, self.kernel, shape, self.strides, self.padding,
                                        dilations=self.dilation_rate)


def _depthwise_1d(layer, x, kernel, pointwise=None):
    """Keras's TF path: a depthwise (then pointwise) 2-D conv over an added height of 1; with
    both a stride and a dilation > 1, the stride-1 dilated conv subsampled (TF has no such op)."""
    s, d = layer.strides[0], layer.dilation_rate[0]
    x = tf_names.expand_dims(x, 1)
    kernel = tf_names.expand_dims(kernel, 0)
    padding = layer.padding
    if s > 1 and d > 1:
        if padding == "SAME":  # TF's SAME padding, explicit (the extra one after)
            n = x.shape[2] if x.shape[2] is not None else tf_names.shape(x)[2]
            eff = (kernel.shape[1] - 1) * d + 1
            total = tf_names.maximum(((n + s - 1) // s - 1) * s + eff - n, 0)
            zero = np.zeros(2, np.int32)
            # (the Pad op itself: sf.pad takes only concrete paddings)
            x = call("Pad", x, tf_names.stack([zero, zero, tf_names.stack([total // 2, total - total // 2]), zero]))
        y = nn_more.depthwise_conv2d(x, kernel, [1, 1, 1, 1], "VALID", dilations=[1, d])[:, :, ::s, :]
    else:
        y = nn_more.depthwise_conv2d(x, kernel, [1, s, s, 1], padding, dilations=[1, d])  # Keras's strides
    if pointwise is not None:
        y = nn.conv2d(y, tf_names.expand_dims(pointwise, 0), 1, "VALID")
    return tf_names.squeeze(y, [1])


class DepthwiseConv1D(_ConvBase):
    """Kernel [kernel_size, in, depth_multiplier]; in * depth_multiplier outputs."""

    def __init__(self, kernel_size, strides=1, padding: str = "valid", depth_multiplier: int = 1, data_format=None,
                 dilation_rate=1, activation=None, use_bias: bool = True, depthwise_initializer="glorot_uniform",
                 bias_initializer="zeros", depthwise_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, depthwise_constraint=None, bias_constraint=None, name: str | None = None):
        super().__init__(name)
        self.depth_multiplier = int(depth_multiplier)
        self._setup(kernel_size, strides, padding, data_format, dilation_rate, activation, use_bias, bias_initializer,
                    bias_regularizer, activity_regularizer, bias_constraint)
        self.depthwise_initializer = initializers.get(depthwise_initializer)
        self.depthwise_regularizer = regularizers.get(depthwise_regularizer)
        self.depthwise_constraint = depthwise_constraint

    def build(self, input_shape):
        c = self._channels(input_shape)
        shape = (self.kernel_size[0], c, self.depth_multiplier)
        _weight(self, "kernel", initializers.make(self.depthwise_initializer, shape), self.depthwise_regularizer,
                self.depthwise_constraint)
        self._bias(c * self.depth_multiplier)

    def _conv(self, x):
        return _depthwise_1d(self, x, self.kernel)


class SeparableConv1D(_ConvBase):
    """Weights depthwise_kernel [k, in, depth_multiplier], pointwise_kernel [1, in *
    depth_multiplier, filters], bias [filters]."""

    def __init__(self, filters: int, kernel_size, strides=1, padding: str = "valid", data_format=None,
                 dilation_rate=1, depth_multiplier: int = 1, activation=None, use_bias: bool = True,
                 depthwise_initializer="glorot_uniform", pointwise_initializer="glorot_uniform",
                 bias_initializer="zeros", depthwise_regularizer=None, pointwise_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, depthwise_constraint=None,
                 pointwise_constraint=None, bias_constraint=None, name: str | None = None):
        super().__init__(name)
        self.filters, self.depth_multiplier = int(filters), int(depth_multiplier)
        self._setup(kernel_size, strides, padding, data_format, dilation_rate, activation, use_bias, bias_initializer,
                    bias_regularizer, activity_regularizer, bias_constraint)
        self.depthwise_initializer = initializers.get(depthwise_initializer)
        self.pointwise_initializer = initializers.get(pointwise_initializer)
        self.depthwise_regularizer = regularizers.get(depthwise_regularizer)
        self.pointwise_regularizer = regularizers.get(pointwise_regularizer)
        self.depthwise_constraint, self.pointwise_constraint = depthwise_constraint, pointwise_constraint

    def build(self, input_shape):
        c = self._channels(input_shape)
        dm, f = self.depth_multiplier, self.filters
        _weight(self, "depthwise_kernel", initializers.make(self.depthwise_initializer, (self.kernel_size[0], c, dm)),
                self.depthwise_regularizer, self.depthwise_constraint)
        _weight(self, "pointwise_kernel", initializers.make(self.pointwise_initializer, (1, c * dm, f)),
                self.pointwise_regularizer, self.pointwise_constraint)
        self._bias(f)

    def _conv(self, x):
        return _depthwise_1d(self, x, self.depthwise_kernel, self.pointwise_kernel)


LAYERS = (MaxPooling3D, AveragePooling3D, GlobalAveragePooling3D, GlobalMaxPooling3D, Conv3D, Conv1DTranspose,
          DepthwiseConv1D, SeparableConv1D)
