"""More of TensorFlow's tf.nn names, re-exported by ``sf.nn`` (api/nn.py): depthwise and
separable convolution, 1-D/3-D and transposed convolution, ``convolution``/``pool`` dispatching on
rank, 1-D/3-D pooling, max_pool_with_argmax, morphology (dilation2d, erosion2d), depth/space
shuffles, local response normalization, and the small compositions TensorFlow writes in Python
(crelu, log_poisson_loss, weighted cross-entropy, sufficient statistics and moments, average and
regularization loss scaling), arranged as TensorFlow arranges them so values and gradients agree."""

from __future__ import annotations

import numpy as np

from specflow.api.op_functions import call
from specflow.api.tensor import Tensor
from specflow.api.tf_array_names import space_to_batch_nd
from specflow.api.tf_math_names import approx_max_k, approx_min_k  # noqa: F401 (tf.nn has them too)
from specflow.api.tf_names import _axes, _t, cast, concat, expand_dims, reduce_sum, shape, squeeze
from specflow.graph import dtypes

space_to_batch = space_to_batch_nd

NAMES = sorted("""
    approx_max_k approx_min_k atrous_conv2d avg_pool1d avg_pool3d batch_norm_with_global_normalization
    compute_average_loss conv1d_transpose conv3d conv3d_transpose conv_transpose convolution crelu depth_to_space
    depthwise_conv2d depthwise_conv2d_backprop_filter depthwise_conv2d_backprop_input dilation2d erosion2d
    local_response_normalization log_poisson_loss lrn max_pool1d max_pool3d max_pool_with_argmax normalize_moments
    pool scale_regularization_loss separable_conv2d space_to_batch space_to_depth sufficient_statistics
    weighted_cross_entropy_with_logits weighted_moments
""".split())


def _seq(value, n: int, channels_first: bool, what: str) -> list[int]:
    """TensorFlow's _get_sequence: 1, n or n + 2 ints as the n + 2 of an op's attr."""
    if value is None:
        return [1] * (n + 2)
    v = [int(s) for s in np.atleast_1d(value)]
    if len(v) == n + 2:
        return v
    if len(v) == 1:
        v = v * n
    elif len(v) != n:
        raise ValueError(f"{what} should be of length 1, {n} or {n + 2}, got {v}")
    return [1, 1] + v if channels_first else [1] + v + [1]


def _cf(data_format) -> bool:
    return data_format is not None and data_format.startswith("NC")


def _padding(padding):
    """(padding, explicit_paddings) as the conv ops take them."""
    if isinstance(padding, (list, tuple)):
        return "EXPLICIT", [int(p) for pair in padding for p in pair]
    return padding, []


# --- convolution ----------------------------------------------------------------------------------

def depthwise_conv2d(input, filter, strides, padding, data_format=None, dilations=None,  # noqa: A002
                     name: str | None = None):
    """DepthwiseConv2dNative (a dilation rate as the op's dilations attr)."""
    fmt = data_format or "NHWC"
    pad, explicit = _padding(padding)
    return call("DepthwiseConv2dNative", _t(input), filter, strides=_seq(strides, 2, _cf(fmt), "strides"),
                padding=pad, explicit_paddings=explicit, data_format=fmt,
                dilations=_seq(dilations, 2, _cf(fmt), "dilations"), name=name)


def depthwise_conv2d_backprop_filter(input, filter_sizes, out_backprop, strides, padding,  # noqa: A002
                                     data_format: str = "NHWC", dilations=None, name: str | None = None):
    pad, explicit = _padding(padding)
    return call("DepthwiseConv2dNativeBackpropFilter", _t(input), np.asarray(filter_sizes, np.int32), out_backprop,
                strides=_seq(strides, 2, _cf(data_format), "strides"), padding=pad, explicit_paddings=explicit,
                data_format=data_format, dilations=_seq(dilations, 2, _cf(data_format), "dilations"), name=name)


def depthwise_conv2d_backprop_input(input_sizes, filter, out_backprop, strides, padding,  # noqa: A002
                                    data_format: str = "NHWC", dilations=None, name: str | None = None):
    pad, explicit = _padding(padding)
    return call("DepthwiseConv2dNativeBackpropInput", np.asarray(input_sizes, np.int32), filter, out_backprop,
                strides=_seq(strides, 2, _cf(data_format), "strides"), padding=pad, explicit_paddings=explicit,
                data_format=data_format, dilations=_seq(dilations, 2, _cf(data_format), "dilations"), name=name)


def separable_conv2d(input, depthwise_filter, pointwise_filter, strides, padding, data_format=None,  # noqa: A002
                     dilations=None, name: str | None = None):
    """A depthwise convolution, then a 1x1 Conv2D (VALID) with ``pointwise_filter``."""
    fmt = data_format or "NHWC"
    depthwise = depthwise_conv2d(input, depthwise_filter, strides, padding, fmt, dilations)
    return call("Conv2D", depthwise, pointwise_filter, strides=[1, 1, 1, 1], padding="VALID", data_format=fmt,
                name=name)


def conv3d(input, filters, strides, padding, data_format: str = "NDHWC", dilations=None,  # noqa: A002
           name: str | None = None):
    return call("Conv3D", _t(input), filters, strides=_seq(strides, 3, _cf(data_format), "strides"), padding=padding,
                data_format=data_format, dilations=_seq(dilations, 3, _cf(data_format), "dilations"), name=name)


def _sizes(output_shape):
    return output_shape if isinstance(output_shape, Tensor) else np.asarray(output_shape, np.int32)


def conv1d_transpose(input, filters, output_shape, strides, padding: str = "SAME",  # noqa: A002
                     data_format: str = "NWC", dilations=None, name: str | None = None):
    """Conv2DBackpropInput over an added height of 1, as TensorFlow does it."""
    if data_format not in (None, "NWC", "NCW"):
        raise ValueError(f"conv1d_transpose: data_format must be 'NWC' or 'NCW', got {data_format!r}")
    cf = data_format == "NCW"
    spatial = 2 if cf else 1
    sizes = _sizes(output_shape)
    sizes = concat([sizes[:spatial], np.array([1], np.int32), sizes[spatial:]], 0)
    out = call("Conv2DBackpropInput", sizes, expand_dims(filters, 0), expand_dims(input, spatial),
               strides=[1] + _seq(strides, 1, cf, "strides"), padding=padding, data_format="NCHW" if cf else "NHWC",
               dilations=[1] + _seq(dilations, 1, cf, "dilations"))
    return squeeze(out, [spatial], name=name)


def _conv2d_transpose(input, filters, output_shape, strides, padding: str = "SAME",  # noqa: A002
                     data_format: str = "NHWC", dilations=None, name: str | None = None):
    cf = _cf(data_format)
    return call("Conv2DBackpropInput", _sizes(output_shape), filters, _t(input),
                strides=_seq(strides, 2, cf, "strides"), padding=padding, data_format=data_format,
                dilations=_seq(dilations, 2, cf, "dilations"), name=name)


def conv3d_transpose(input, filters, output_shape, strides, padding: str = "SAME",  # noqa: A002
                     data_format: str = "NDHWC", dilations=None, name: str | None = None):
    fmt = data_format or "NDHWC"
    return call("Conv3DBackpropInputV2", _sizes(output_shape), filters, _t(input),
                strides=_seq(strides, 3, _cf(fmt), "strides"), padding=padding, data_format=fmt,
                dilations=_seq(dilations, 3, _cf(fmt), "dilations"), name=name)


def conv_transpose(input, filters, output_shape, strides, padding: str = "SAME", data_format=None,  # noqa: A002
                   dilations=None, name: str | None = None):
    """conv1d/2d/3d_transpose by the length of ``output_shape``."""
    n = (output_shape.shape[0] if isinstance(output_shape, Tensor) else len(output_shape)) - 2
    if not 1 <= n <= 3:
        raise ValueError(f"conv_transpose: output_shape must have length 3, 4 or 5, got {n + 2}")
    op = (conv1d_transpose, _conv2d_transpose, conv3d_transpose)[n - 1]
    kw = {} if data_format is None else {"data_format": data_format}
    return op(input, filters, output_shape, strides, padding=padding, dilations=dilations, name=name, **kw)


def convolution(input, filters, strides=None, padding: str = "VALID", data_format=None,  # noqa: A002
                dilations=None, name: str | None = None):
    """Conv1D (as a Conv2D of height 1), Conv2D or Conv3D by the filters' rank."""
    filters = _t(filters)
    n = filters.shape.rank - 2
    if n not in (1, 2, 3):
        raise ValueError(f"convolution: filters must have rank 3, 4 or 5, got {filters.shape}")
    cf = _cf(data_format)
    st, dl = _seq(strides, n, cf, "strides"), _seq(dilations, n, cf, "dilations")
    if n == 2:
        pad, explicit = _padding(padding)
        return call("Conv2D", _t(input), filters, strides=st, padding=pad, explicit_paddings=explicit,
                    data_format=data_format or "NHWC", dilations=dl, name=name)
    if n == 3:
        return call("Conv3D", _t(input), filters, strides=st, padding=padding, data_format=data_format or "NDHWC",
                    dilations=dl, name=name)
    spatial = 2 if cf else 1
    out = call("Conv2D", expand_dims(input, spatial), expand_dims(filters, 0), strides=[1] + st, padding=padding,
               data_format="NCHW" if cf else "NHWC", dilations=[1] + dl)
    return squeeze(out, [spatial], name=name)


def atrous_conv2d(value, filters, rate, padding, name: str | None = None):
    return convolution(value, filters, padding=padding, dilations=[int(rate), int(rate)], name=name)


# --- pooling --------------------------------------------------------------------------------------

def _pool1d(op: str, pyname: str):
    def fn(input, ksize, strides, padding, data_format: str = "NWC", name: str | None = None):  # noqa: A002
        fmt = data_format or "NWC"
        cf = fmt.startswith("NC")
        dim = 2 if cf else 1
        out = call(op, expand_dims(input, dim), ksize=[1] + _seq(ksize, 1, cf, "ksize"),
                   strides=[1] + _seq(strides, 1, cf, "strides"), padding=padding,
                   data_format="NCHW" if cf else "NHWC")
        return squeeze(out, [dim], name=name)

    fn.__name__ = pyname
    fn.__doc__ = f"TensorFlow's ``tf.nn.{pyname}``: {op} over an added height of 1."
    return fn


def _pool3d(op: str, pyname: str):
    def fn(input, ksize, strides, padding, data_format: str = "NDHWC", name: str | None = None):  # noqa: A002
        fmt = data_format or "NDHWC"
        return call(op, _t(input), ksize=_seq(ksize, 3, _cf(fmt), "ksize"), strides=_seq(strides, 3, _cf(fmt), "strides"),
                    padding=padding, data_format=fmt, name=name)

    fn.__name__ = pyname
    fn.__doc__ = f"TensorFlow's ``tf.nn.{pyname}``: the {op} op."
    return fn


avg_pool1d = _pool1d("AvgPool", "avg_pool1d")
max_pool1d = _pool1d("MaxPool", "max_pool1d")
avg_pool3d = _pool3d("AvgPool3D", "avg_pool3d")
max_pool3d = _pool3d("MaxPool3D", "max_pool3d")


def max_pool_with_argmax(input, ksize, strides, padding, data_format: str = "NHWC",  # noqa: A002
                         output_dtype=dtypes.int64, include_batch_in_index: bool = False, name: str | None = None):
    if data_format != "NHWC":
        raise ValueError(f"max_pool_with_argmax: only data_format='NHWC' is supported, got {data_format!r}")
    return call("MaxPoolWithArgmax", _t(input), ksize=_seq(ksize, 2, False, "ksize"),
                strides=_seq(strides, 2, False, "strides"), padding=padding, Targmax=dtypes.as_dtype(output_dtype),
                include_batch_in_index=include_batch_in_index, name=name)


def pool(input, window_shape, pooling_type, strides=None, padding: str = "VALID", data_format=None,  # noqa: A002
         dilations=None, name: str | None = None):
    """MAX or AVG pooling of 1, 2 or 3 spatial dims; dilation rates above 1 as TF's: the input
    space-to-batched by the rates (SAME's padding, zeros, included in the windows), pooled VALID,
    and batched back."""
    n = len(window_shape)
    if n not in (1, 2, 3):
        raise ValueError(f"pool: window_shape must have length 1, 2 or 3, got {window_shape}")
    if pooling_type not in ("MAX", "AVG"):
        raise ValueError(f"pool: pooling_type must be 'MAX' or 'AVG', got {pooling_type!r}")
    rates = [1] * n if dilations is None else [int(d) for d in np.broadcast_to(np.atleast_1d(dilations), (n,))]
    if any(r != 1 for r in rates):
        return _dilated_pool(_t(input), list(window_shape), pooling_type, strides, padding, data_format, rates, name)
    strides = [1] * n if strides is None else [int(s) for s in np.atleast_1d(strides)]
    if any(s > w for s, w in zip(strides, window_shape)):
        raise ValueError(f"pool: strides {strides} > window_shape {list(window_shape)} is not supported")
    if n == 1:
        return (max_pool1d if pooling_type == "MAX" else avg_pool1d)(
            input, list(window_shape), strides, padding, data_format or "NWC", name=name)
    if n == 3:
        return (max_pool3d if pooling_type == "MAX" else avg_pool3d)(
            input, list(window_shape), strides, padding, data_format or "NDHWC", name=name)
    fmt = data_format or "NHWC"
    return call("MaxPool" if pooling_type == "MAX" else "AvgPool", _t(input),
                ksize=_seq(list(window_shape), 2, _cf(fmt), "ksize"), strides=_seq(strides, 2, _cf(fmt), "strides"),
                padding=padding, data_format=fmt, name=name)


def _dilated_pool(x, window: list[int], pooling_type: str, strides, padding: str, data_format, rates: list[int], name):
    """TF's with_space_to_batch for VALID (TF 2 refuses SAME with a rate above 1): each spatial
    size padded at its end to a multiple of its rate, SpaceToBatchND, the pool (VALID, stride 1),
    BatchToSpaceND cropping the padding's share."""
    n = len(window)
    if padding == "SAME":
        raise ValueError("pooling with 'SAME' padding is not implemented for `dilation_rate` > 1. Received: "
                         f"padding={padding} and dilation_rate={rates}")
    if padding != "VALID":
        raise ValueError(f"pool: padding must be 'SAME' or 'VALID', got {padding!r}")
    if strides is not None and any(int(s) != 1 for s in np.atleast_1d(strides)):
        raise ValueError(f"pool: strides > 1 not supported in conjunction with dilation_rate > 1, got strides {strides}")
    start = 2 if data_format and data_format.startswith("NC") else 1
    rate = np.asarray(rates, np.int32)
    spatial = call("StridedSlice", shape(x, out_type=dtypes.int32), np.array([start], np.int32),
                   np.array([start + n], np.int32), np.array([1], np.int32))  # fmt: skip
    end = (rate - spatial % rate) % rate
    lead = np.zeros((start - 1, 2), np.int32)  # a channels-first layout's channel dim: block 1
    pads = concat([lead, call("Pack", [np.zeros(n, np.int32) + end * 0, end], axis=1)], 0)  # crops are the same
    block = np.asarray([1] * (start - 1) + rates, np.int32)
    pooled = pool(space_to_batch_nd(x, block, pads), window, pooling_type, None, "VALID", data_format)
    return call("BatchToSpaceND", pooled, block, pads, name=name)


# --- shuffles and morphology ----------------------------------------------------------------------

def depth_to_space(input, block_size, data_format: str = "NHWC", name: str | None = None):  # noqa: A002
    return call("DepthToSpace", _t(input), block_size=int(block_size), data_format=data_format, name=name)


def space_to_depth(input, block_size, data_format: str = "NHWC", name: str | None = None):  # noqa: A002
    return call("SpaceToDepth", _t(input), block_size=int(block_size), data_format=data_format, name=name)


def dilation2d(input, filters, strides, padding, data_format: str, dilations, name: str | None = None):  # noqa: A002
    if data_format != "NHWC":
        raise ValueError(f"dilation2d: only data_format='NHWC' is supported, got {data_format!r}")
    return call("Dilation2D", _t(input), filters, strides=_seq(strides, 2, False, "strides"),
                rates=_seq(dilations, 2, False, "dilations"), padding=padding, name=name)


def erosion2d(value, filters, strides, padding, data_format: str, dilations, name: str | None = None):
    """-dilation2d(-value, the filters reversed), as TensorFlow."""
    if data_format != "NHWC":
        raise ValueError(f"erosion2d: only data_format='NHWC' is supported, got {data_format!r}")
    out = call("Dilation2D", -_t(value), call("ReverseV2", _t(filters), np.array([0, 1], np.int32)),
               strides=_seq(strides, 2, False, "strides"), rates=_seq(dilations, 2, False, "dilations"),
               padding=padding)
    return call("Neg", out, name=name)


def local_response_normalization(input, depth_radius: int = 5, bias: float = 1.0, alpha: float = 1.0,  # noqa: A002
                                 beta: float = 0.5, name: str | None = None):
    return call("LRN", _t(input), depth_radius=int(depth_radius), bias=float(bias), alpha=float(alpha),
                beta=float(beta), name=name)


lrn = local_response_normalization


# --- activations, losses, statistics --------------------------------------------------------------

def crelu(features, axis: int = -1, name: str | None = None):
    """relu(concat([x, -x], axis))."""
    x = _t(features)
    return call("Relu", concat([x, -x], axis), name=name)


def log_poisson_loss(targets, log_input, compute_full_loss: bool = False, name: str | None = None):
    """exp(log_input) - log_input * targets, plus Stirling's term for targets > 1 when full."""
    log_input = _t(log_input)
    targets = _t(targets, log_input.dtype) if not isinstance(targets, Tensor) else targets
    result = call("Exp", log_input) - log_input * targets
    if compute_full_loss:
        half, two_pi = (np.asarray(v, targets.dtype.numpy) for v in (0.5, 2 * np.pi))
        stirling = targets * call("Log", targets) - targets + half * call("Log", two_pi * targets)
        zeros = call("ZerosLike", targets)
        small = call("LogicalAnd", targets >= zeros, targets <= call("OnesLike", targets))
        result = result + call("SelectV2", small, zeros, stirling)
    return result


def weighted_cross_entropy_with_logits(labels, logits, pos_weight, name: str | None = None):
    """(1 - z) x + (1 + (q - 1) z) (log1p(exp(-|x|)) + relu(-x)), TensorFlow's stable form."""
    x = _t(logits)
    z = _t(labels, x.dtype) if not isinstance(labels, Tensor) else labels
    log_weight = 1 + (pos_weight - 1) * z
    return call("AddV2", (1 - z) * x, log_weight * (call("Log1p", call("Exp", -call("Abs", x))) + call("Relu", -x)),
                name=name)


def sufficient_statistics(x, axes, shift=None, keepdims: bool = False, name: str | None = None):
    """(count, sum of x - shift, sum of squares of x - shift, shift) over ``axes``."""
    x = _t(x)
    axes = sorted(set(int(a) for a in np.atleast_1d(axes)))
    dims = x.shape.as_list()
    if dims is not None and all(dims[d] is not None for d in axes):
        counts = _t(np.asarray(np.prod([dims[d] for d in axes]), x.dtype.numpy))
    else:
        rank = x.shape.rank
        counts = call("Prod", call("GatherV2", cast(shape(x), x.dtype), np.asarray(
            [a % rank for a in axes], np.int32), np.int32(0)), np.int32(0))
    if shift is not None:
        shift = shift if isinstance(shift, Tensor) else _t(shift, x.dtype)
        m_ss, v_ss = call("Sub", x, shift), call("SquaredDifference", x, shift)
    else:
        m_ss, v_ss = x, call("Square", x)
    return counts, reduce_sum(m_ss, axes, keepdims=keepdims), reduce_sum(v_ss, axes, keepdims=keepdims), shift


def normalize_moments(counts, mean_ss, variance_ss, shift, name: str | None = None):
    divisor = call("Reciprocal", _t(counts))
    shifted_mean = call("Mul", mean_ss, divisor)
    mean = shifted_mean if shift is None else call("AddV2", shifted_mean, shift)
    variance = call("Sub", call("Mul", variance_ss, divisor), call("Square", shifted_mean))
    return mean, variance


def weighted_moments(x, axes, frequency_weights, keepdims: bool = False, name: str | None = None):
    """The frequency-weighted mean and variance over ``axes`` (div_no_nan by the weight sums)."""
    x = _t(x)
    half = x.dtype == dtypes.float16
    if half:
        x = cast(x, dtypes.float32)
    w = cast(_t(frequency_weights), x.dtype)
    ax = _axes(x, axes)
    wsum = call("Sum", w * x, ax, keep_dims=True)
    total = call("Sum", w + call("ZerosLike", x), ax, keep_dims=True)
    mean = call("DivNoNan", wsum, total)
    variance = call("DivNoNan", call("Sum", w * call("SquaredDifference", x, mean), ax, keep_dims=True), total)
    if not keepdims:
        mean, variance = squeeze(mean, axes), squeeze(variance, axes)
    if half:
        mean, variance = cast(mean, dtypes.float16), cast(variance, dtypes.float16)
    return mean, variance


def batch_norm_with_global_normalization(input, mean, variance, beta, gamma, variance_epsilon,  # noqa: A002
                                         scale_after_normalization, name: str | None = None):
    from specflow.api.nn import batch_normalization

    return batch_normalization(input, mean, variance, beta, gamma if scale_after_normalization else None,
                               variance_epsilon, name=name)


def compute_average_loss(per_example_loss, sample_weight=None, global_batch_size=None):
    """sum(loss * sample_weight) / global_batch_size (default: the batch size; one replica)."""
    loss = _t(per_example_loss)
    dt = loss.dtype
    if loss.shape.rank == 0:
        raise ValueError("compute_average_loss: per_example_loss must have rank at least 1")
    if sample_weight is not None:
        w = cast(_t(sample_weight), dtypes.float32)
        scaled = cast(loss, dtypes.float32)
        if w.shape.rank - scaled.shape.rank == 1:
            w = squeeze(w, [-1])
        elif scaled.shape.rank - w.shape.rank == 1:
            w = expand_dims(w, -1)
        loss = cast(scaled * w, dt)
    if global_batch_size is None:
        global_batch_size = shape(loss)[0]
    elif not isinstance(global_batch_size, Tensor) and (
            not float(global_batch_size).is_integer() or global_batch_size < 0):
        raise ValueError(f"compute_average_loss: global_batch_size must be a non-negative integer, "
                         f"got {global_batch_size}")
    return call("DivNoNan", call("Sum", loss, _axes(loss, None)), cast(_t(global_batch_size), dt))


def scale_regularization_loss(regularization_loss):
    """The summed regularization loss (divided by the one replica)."""
    return reduce_sum(regularization_loss) / 1
