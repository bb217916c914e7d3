"""Convolution and pooling layers on NHWC inputs."""

from __future__ import annotations

from specflow.errors import SpecError
from specflow.ops.registry import has_op
from specflow.schema.layers.common import Emitter, is_linear, pair
from specflow.schema.layers.variables import create_variable


def _nhwc_channels(e: Emitter, x: str, what: str) -> int | None:
    shape = e.shape(x)
    if shape.rank is not None and shape.rank != 4:
        raise SpecError(f"{what} needs a 4-D NHWC input, got shape {shape}", node=e.ctx.name)
    return None if shape.rank is None else shape.dims[3]


def _fits(e: Emitter, x: str, y: str, what: str) -> str:
    """``y``, a window's output; an error when a valid-padded window left a dimension of 0 (Keras:
    "One of the dimensions in the output is <= 0"), which would run on empty tensors."""
    shape = e.shape(y)
    if shape.rank is not None and 0 in shape.dims[1:-1]:
        raise SpecError(f"{what}'s output {shape} has a dimension of 0: its window does not fit the input "
                        f"{e.shape(x)}; use padding: same, a smaller window or fewer strides", node=e.ctx.name)
    return y


def conv2d(e: Emitter, x: str, cfg) -> str:
    """Conv2D(x, kernel[kh, kw, in, filters]) (+ BiasAdd) (+ activation)."""
    channels = _nhwc_channels(e, x, "conv2d")
    if channels is None:
        raise SpecError(f"conv2d needs the input's channel dimension known, got shape {e.shape(x)}", node=e.ctx.name)
    dt = e.dtype(x)
    kh, kw = pair(cfg.kernel_size)
    kernel = create_variable(
        e.b, "kernel", [kh, kw, channels, cfg.filters], dt, cfg.kernel_initializer, True, e.ctx.graph_seed
    )
    kernel.constraint = cfg.kernel_constraint
    bias = None
    if cfg.use_bias:
        bias = create_variable(e.b, "bias", [cfg.filters], dt, cfg.bias_initializer, True, e.ctx.graph_seed)
        bias.constraint = cfg.bias_constraint
    linear = is_linear(cfg.activation)
    attrs = {
        "strides": [1, *pair(cfg.strides), 1],
        "padding": cfg.padding.upper(),
        "dilations": [1, *pair(cfg.dilation_rate), 1],
        "data_format": "NHWC",
    }
    y = _fits(e, x, e.op("Conv2D", [x, kernel.read], attrs, name="Conv2D", final=bias is None and linear), "conv2d")
    if bias is not None:
        y = e.op("BiasAdd", [y, bias.read], final=linear)
    return y if linear else e.activation(y, cfg.activation)


def _pool(op: str):
    def layer(e: Emitter, x: str, cfg) -> str:
        _nhwc_channels(e, x, op)
        size = pair(cfg.pool_size)
        strides = pair(cfg.strides) if cfg.strides is not None else size
        attrs = {
            "ksize": [1, *size, 1],
            "strides": [1, *strides, 1],
            "padding": cfg.padding.upper(),
            "data_format": "NHWC",
        }
        return _fits(e, x, e.op(op, [x], attrs, final=True), {"MaxPool": "max_pool2d", "AvgPool": "avg_pool2d"}[op])

    layer.__doc__ = f"{op} with ksize [1, pool_size, 1] and strides defaulting to pool_size."
    return layer


max_pool2d = _pool("MaxPool")
avg_pool2d = _pool("AvgPool")


def _pool1d(op: str, kind: str):
    def layer(e: Emitter, x: str, cfg) -> str:
        shape = e.shape(x)
        if shape.rank is not None and shape.rank != 3:
            raise SpecError(f"{kind} needs a 3-D [batch, steps, channels] input, got shape {shape}", node=e.ctx.name)
        strides = cfg.strides if cfg.strides is not None else cfg.pool_size
        # As Keras: the 2-D pool over [batch, 1, steps, channels] (same padding averages only the
        # steps inside the sequence).
        x4 = e.op("ExpandDims", [x, e.i32(1, "ExpandDims/dim")])
        attrs = {"ksize": [1, 1, cfg.pool_size, 1], "strides": [1, 1, strides, 1], "padding": cfg.padding.upper(),
                 "data_format": "NHWC"}  # fmt: skip
        y = e.op(op, [x4], attrs)
        return _fits(e, x, e.op("Squeeze", [y], {"squeeze_dims": [1]}, final=True), kind)

    layer.__doc__ = f"Keras's {kind}: {op} with ksize [1, 1, pool_size, 1] on the input expanded at axis 1."
    return layer


max_pool1d = _pool1d("MaxPool", "max_pool1d")
avg_pool1d = _pool1d("AvgPool", "avg_pool1d")


def conv1d(e: Emitter, x: str, cfg) -> str:
    """Keras Conv1D on [batch, steps, channels] as a Conv2D over [batch, 1, steps, channels];
    ``causal`` padding pads (kernel_size - 1) * dilation steps on the left."""
    shape = e.shape(x)
    if shape.rank is not None and shape.rank != 3:
        raise SpecError(f"conv1d needs a 3-D [batch, steps, channels] input, got shape {shape}", node=e.ctx.name)
    channels = None if shape.rank is None else shape.dims[2]
    if channels is None:
        raise SpecError(f"conv1d needs the input's channel dimension known, got shape {shape}", node=e.ctx.name)
    dt, k = e.dtype(x), cfg.kernel_size
    kernel = create_variable(e.b, "kernel", [k, channels, cfg.filters], dt, cfg.kernel_initializer, True,
                             e.ctx.graph_seed)  # fmt: skip
    kernel.constraint = cfg.kernel_constraint
    padding = cfg.padding
    if padding == "causal":
        x = e.op("Pad", [x, e.i32([[0, 0], [(k - 1) * cfg.dilation_rate, 0], [0, 0]], "causal/paddings")],
                 name="causal_pad")  # fmt: skip
        padding = "valid"
    x4 = e.op("ExpandDims", [x, e.i32(1, "ExpandDims/dim")])
    k4 = e.op("ExpandDims", [kernel.read, e.i32(0, "ExpandDims_1/dim")], name="ExpandDims_1")
    attrs = {"strides": [1, 1, cfg.strides, 1], "padding": padding.upper(),
             "dilations": [1, 1, cfg.dilation_rate, 1], "data_format": "NHWC"}  # fmt: skip
    y = e.op("Conv2D", [x4, k4], attrs)
    linear = is_linear(cfg.activation)
    y = _fits(e, x, e.op("Squeeze", [y], {"squeeze_dims": [1]}, final=not cfg.use_bias and linear), "conv1d")
    if cfg.use_bias:
        bias = create_variable(e.b, "bias", [cfg.filters], dt, cfg.bias_initializer, True, e.ctx.graph_seed)
        bias.constraint = cfg.bias_constraint
        y = e.op("BiasAdd", [y, bias.read], final=linear)
    return y if linear else e.activation(y, cfg.activation)


def conv2d_transpose(e: Emitter, x: str, cfg) -> str:
    """Keras Conv2DTranspose as Conv2DBackpropInput (the gradient of a Conv2D with respect to its
    input); kernel [kh, kw, filters, in]; output size (in - 1) * stride + k (valid) or
    in * stride (same)."""
    channels = _nhwc_channels(e, x, "conv2d_transpose")
    shape = e.shape(x)
    if channels is None or shape.dims[1] is None or shape.dims[2] is None:
        raise SpecError(f"conv2d_transpose needs height, width and channels known, got shape {shape}",
                        node=e.ctx.name)
    dt = e.dtype(x)
    (kh, kw), (sh, sw) = pair(cfg.kernel_size), pair(cfg.strides)
    kernel = create_variable(e.b, "kernel", [kh, kw, cfg.filters, channels], dt, cfg.kernel_initializer, True,
                             e.ctx.graph_seed)  # fmt: skip
    h, w = int(shape.dims[1]), int(shape.dims[2])
    if cfg.padding == "valid":
        oh, ow = (h - 1) * sh + max(kh, sh), (w - 1) * sw + max(kw, sw)
    else:
        oh, ow = h * sh, w * sw
    sizes = e.concat([e.dims(x, 0, 1, "batch"), e.i32([oh, ow, cfg.filters], "output_dims")], 0, "output_shape")
    attrs = {"strides": [1, sh, sw, 1], "padding": cfg.padding.upper(), "data_format": "NHWC"}
    linear = is_linear(cfg.activation)
    y = e.op("Conv2DBackpropInput", [sizes, kernel.read, x], attrs, name="conv2d_transpose")
    # The op's shape function cannot read sizes whose batch is known only at run time; this
    # Reshape (no data moves) gives the output its static height, width and channels.
    y = e.op("Reshape", [y, e.i32([-1, oh, ow, cfg.filters], "static_shape/shape")], name="static_shape",
             final=not cfg.use_bias and linear)  # fmt: skip
    if cfg.use_bias:
        bias = create_variable(e.b, "bias", [cfg.filters], dt, cfg.bias_initializer, True, e.ctx.graph_seed)
        y = e.op("BiasAdd", [y, bias.read], final=linear)
    return y if linear else e.activation(y, cfg.activation)


def _depthwise(e: Emitter, x: str, cfg, what: str) -> tuple[str, int]:
    """The depthwise stage of depthwise_conv2d / separable_conv2d; returns (output, its channels)."""
    if not has_op("DepthwiseConv2dNative"):
        raise SpecError(f"{what} needs the DepthwiseConv2dNative op, which this build lacks", node=e.ctx.name)
    channels = _nhwc_channels(e, x, what)
    if channels is None:
        raise SpecError(f"{what} needs the input's channel dimension known, got shape {e.shape(x)}", node=e.ctx.name)
    kh, kw = pair(cfg.kernel_size)
    kernel = create_variable(e.b, "depthwise_kernel", [kh, kw, channels, cfg.depth_multiplier], e.dtype(x),
                             cfg.depthwise_initializer, True, e.ctx.graph_seed)  # fmt: skip
    attrs = {"strides": [1, *pair(cfg.strides), 1], "padding": cfg.padding.upper(),
             "dilations": [1, *pair(cfg.dilation_rate), 1], "data_format": "NHWC"}  # fmt: skip
    y = _fits(e, x, e.op("DepthwiseConv2dNative", [x, kernel.read], attrs, name="depthwise"), what)
    return y, channels * cfg.depth_multiplier


def _bias_activation(e: Emitter, y: str, cfg, width: int) -> str:
    linear = is_linear(cfg.activation)
    if cfg.use_bias:
        bias = create_variable(e.b, "bias", [width], e.dtype(y), cfg.bias_initializer, True, e.ctx.graph_seed)
        y = e.op("BiasAdd", [y, bias.read], final=linear)
    elif linear:
        y = e.op("Identity", [y], final=True)
    return y if linear else e.activation(y, cfg.activation)


def depthwise_conv2d(e: Emitter, x: str, cfg) -> str:
    """DepthwiseConv2dNative (+ BiasAdd) (+ activation), Keras's DepthwiseConv2D."""
    y, width = _depthwise(e, x, cfg, "depthwise_conv2d")
    return _bias_activation(e, y, cfg, width)


def separable_conv2d(e: Emitter, x: str, cfg) -> str:
    """Depthwise, then a 1x1 Conv2D to ``filters`` (+ BiasAdd) (+ activation), as
    tf.nn.separable_conv2d."""
    y, width = _depthwise(e, x, cfg, "separable_conv2d")
    pointwise = create_variable(e.b, "pointwise_kernel", [1, 1, width, cfg.filters], e.dtype(x),
                                cfg.pointwise_initializer, True, e.ctx.graph_seed)  # fmt: skip
    attrs = {"strides": [1, 1, 1, 1], "padding": "VALID", "dilations": [1, 1, 1, 1], "data_format": "NHWC"}
    y = e.op("Conv2D", [y, pointwise.read], attrs, name="pointwise")
    return _bias_activation(e, y, cfg, cfg.filters)
