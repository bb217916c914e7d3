"""ONNX mappings of the neural-network ops: softmax, convolution, pooling, batch norm.

TensorFlow's default layout is NHWC; ONNX's Conv, pooling and BatchNormalization are NCHW only,
so NHWC nodes are wrapped in Transposes (onnxruntime folds or fuses them). TF's SAME padding puts
the odd pixel after the data, which is ONNX's SAME_UPPER; pads are computed explicitly when the
spatial dims are static.
"""

from __future__ import annotations

import numpy as np

from specflow.export.onnx_ops import maps

TO_NCHW = [0, 3, 1, 2]
TO_NHWC = [0, 2, 3, 1]


@maps("Softmax", "LogSoftmax")
def _softmax(cx):
    cx.op(cx.node.op, [cx.inp(0)], out=cx.out(), axis=-1)


def _spatial(values, data_format: str) -> list:
    """The spatial entries of a per-dimension attr or shape (strides, ksize, dilations): H, W of
    NHWC / NCHW, D, H, W of NDHWC / NCDHW."""
    values = [None if v is None else int(v) for v in values]
    return values[2:] if data_format.startswith("NC") else values[1:-1]


def _padding(cx, kernel: list[int], strides: list[int], dilations: list[int]) -> dict:
    """ONNX pad attrs ([h_begin, w_begin, h_end, w_end] or auto_pad) for TF's padding attr."""
    padding, fmt = cx.attr("padding"), cx.attr("data_format", "NHWC")  # MaxPoolWithArgmax: NHWC only
    if padding == "VALID":
        return {"pads": [0] * 2 * len(kernel)}
    if padding == "EXPLICIT":
        pairs = [int(p) for p in cx.attr("explicit_paddings")]
        h, w = (pairs[2:4], pairs[4:6]) if fmt == "NHWC" else (pairs[4:6], pairs[6:8])
        return {"pads": [h[0], w[0], h[1], w[1]]}
    spec = cx.spec(0)
    dims = spec.shape.as_list() if spec is not None and spec.shape.rank == len(fmt) else None
    sizes = _spatial(dims, fmt) if dims else None
    if sizes is None or None in sizes:
        return {"auto_pad": "SAME_UPPER"}
    begins, ends = [], []
    for size, k, s, d in zip(sizes, kernel, strides, dilations):
        out = -(-size // s)
        total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
        begins.append(total // 2)
        ends.append(total - total // 2)
    return {"pads": begins + ends}


def _nchw(cx, onnx_op: str, inputs: list[str], **attrs) -> None:
    """Run ``onnx_op`` on input 0 (and ``inputs``) channels-first, transposing a channels-last
    (NHWC, NDHWC) node around it."""
    fmt = cx.attr("data_format")
    if fmt.startswith("NC"):
        cx.op(onnx_op, [cx.inp(0), *inputs], out=cx.out(), **attrs)
        return
    first, last = (TO_NCHW, TO_NHWC) if len(fmt) == 4 else ([0, 4, 1, 2, 3], [0, 2, 3, 4, 1])
    x = cx.op("Transpose", [cx.inp(0)], perm=first)
    y = cx.op(onnx_op, [x, *inputs], **attrs)
    cx.op("Transpose", [y], out=cx.out(), perm=last)


def _conv(cx, weights: str, kernel: list[int], **attrs) -> None:
    """An ONNX Conv of input 0 by ``weights`` (O, I, spatial...) with the node's strides,
    dilations and padding."""
    fmt = cx.attr("data_format")
    strides, dilations = _spatial(cx.attr("strides"), fmt), _spatial(cx.attr("dilations"), fmt)
    _nchw(cx, "Conv", [weights], strides=strides, dilations=dilations, kernel_shape=kernel,
          **_padding(cx, kernel, strides, dilations), **attrs)  # fmt: skip


@maps("Conv2D")
def _conv2d(cx):
    fmt = cx.attr("data_format")
    fspec = cx.spec(1)
    if fspec is None or fspec.shape.rank != 4 or None in fspec.shape.as_list()[:2]:
        raise cx.fail("Conv2D needs a filter of static spatial size for ONNX export")
    kh, kw, fin, _ = fspec.shape.as_list()
    attrs = {}
    xspec = cx.spec(0)
    channels = None if xspec is None or xspec.shape.rank != 4 else xspec.shape.as_list()[3 if fmt == "NHWC" else 1]
    if channels and fin and channels != fin:  # TF infers grouped convolution from the shapes
        attrs["group"] = channels // fin
    weights = cx.op("Transpose", [cx.inp(1)], perm=[3, 2, 0, 1])  # HWIO -> OIHW
    _conv(cx, weights, [kh, kw], **attrs)


@maps("DepthwiseConv2dNative")
def _depthwise_conv2d(cx):
    # A grouped Conv with one group per input channel: filter [KH, KW, C, M] -> [C * M, 1, KH, KW]
    # (output channel c * M + m, as TF orders them).
    fspec = cx.spec(1)
    if fspec is None or not fspec.shape.is_fully_defined:
        raise cx.fail("DepthwiseConv2dNative needs a filter of static shape for ONNX export")
    kh, kw, c, m = fspec.shape.as_list()
    flat = cx.op("Reshape", [cx.inp(1), cx.tensor(np.array([kh, kw, 1, c * m], np.int64))])
    weights = cx.op("Transpose", [flat], perm=[3, 2, 0, 1])
    _conv(cx, weights, [kh, kw], group=c)


@maps("Conv3D")
def _conv3d(cx):
    fspec = cx.spec(1)
    if fspec is None or fspec.shape.rank != 5 or None in fspec.shape.as_list()[:3]:
        raise cx.fail("Conv3D needs a filter of static spatial size for ONNX export")
    weights = cx.op("Transpose", [cx.inp(1)], perm=[4, 3, 0, 1, 2])  # DHWIO -> OIDHW
    _conv(cx, weights, fspec.shape.as_list()[:3])


def _pool_nd(cx, onnx_op: str, ksize, strides) -> None:
    fmt = cx.attr("data_format")
    ksize, strides = [int(k) for k in ksize], [int(s) for s in strides]
    batch_and_channel = (0, 1) if fmt.startswith("NC") else (0, len(fmt) - 1)
    if any(ksize[i] != 1 or strides[i] != 1 for i in batch_and_channel):
        raise cx.fail(f"{cx.node.op} over the batch or channel dim has no ONNX mapping")
    kernel, strides = _spatial(ksize, fmt), _spatial(strides, fmt)
    attrs = {"kernel_shape": kernel, "strides": strides, **_padding(cx, kernel, strides, [1] * len(kernel))}
    if onnx_op == "AveragePool":  # TF averages over the valid (unpadded) pixels only
        attrs["count_include_pad"] = 0
    _nchw(cx, onnx_op, [], **attrs)


@maps("MaxPool", "AvgPool", "AvgPool3D")
def _pool(cx):
    _pool_nd(cx, "MaxPool" if cx.node.op == "MaxPool" else "AveragePool", cx.attr("ksize"), cx.attr("strides"))


@maps("MaxPoolWithArgmax")
def _max_pool_with_argmax(cx):
    # ONNX MaxPool's Indices flatten the NCHW input, batch included; TF's flatten one NHWC image
    # (batch added with include_batch_in_index). Converting needs the static H, W and C.
    spec = cx.spec(0)
    dims = spec.shape.as_list() if spec is not None and spec.shape.rank == 4 else None
    if dims is None or None in dims[1:]:
        raise cx.fail("MaxPoolWithArgmax needs an input of static height, width and channels for ONNX export")
    _, h, w, c = dims
    ksize, strides = [int(k) for k in cx.attr("ksize")], [int(s) for s in cx.attr("strides")]
    if ksize[0] != 1 or ksize[3] != 1 or strides[0] != 1 or strides[3] != 1:
        raise cx.fail("MaxPoolWithArgmax over the batch or channel dim has no ONNX mapping")
    kernel, strides = ksize[1:3], strides[1:3]
    attrs = {"kernel_shape": kernel, "strides": strides, **_padding(cx, kernel, strides, [1, 1])}
    x = cx.op("Transpose", [cx.inp(0)], perm=TO_NCHW)
    y, idx = cx.op("MaxPool", [x], out=2, **attrs)
    cx.op("Transpose", [y], out=cx.out(0), perm=TO_NHWC)

    def i64(v):
        return cx.tensor(np.array(v, np.int64))

    pixel = cx.op("Mod", [idx, i64(h * w)])
    channel = cx.op("Mod", [cx.op("Div", [idx, i64(h * w)]), i64(c)])
    index = cx.op("Add", [cx.op("Mul", [pixel, i64(c)]), channel])
    if cx.attr("include_batch_in_index"):
        index = cx.op("Add", [index, cx.op("Mul", [cx.op("Div", [idx, i64(c * h * w)]), i64(h * w * c)])])
    index = cx.op("Transpose", [index], perm=TO_NHWC)
    cx.cast_to(index, cx.attr("Targmax"), cx.out(1))


@maps("MaxPoolV2", consts=(1, 2))
def _max_pool_v2(cx):
    _pool_nd(cx, "MaxPool", cx.const(1).ravel(), cx.const(2).ravel())


@maps("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3")
def _fused_batch_norm(cx):
    if cx.attr("is_training", True):
        raise cx.fail(f"{cx.node.op} with is_training=true has no ONNX mapping (export uses inference mode)")
    for k in (3, 4, 5):
        if cx.used(k):
            raise cx.fail(f"{cx.node.op}'s reserve_space_{k - 2} output has no ONNX equivalent")
    eps = float(cx.attr("epsilon", 1e-4))
    _nchw(cx, "BatchNormalization", [cx.inp(i) for i in range(1, 5)], epsilon=eps)
    # At inference TF returns the given mean and variance as batch_mean and batch_variance.
    for k in (1, 2):
        if cx.used(k):
            cx.op("Identity", [cx.inp(k + 2)], out=cx.out(k))


def _known_sizes(cx) -> list | None:
    """input_sizes as far as known: its value, else the output's inferred shape, else a ConcatV2
    of a run-time batch and constant trailing sizes (a layer's dynamic batch) read part by part."""
    if cx.is_const(0):
        return [int(v) for v in cx.const(0)]
    out = cx.conv.spec(f"{cx.node.name}:0")
    dims = out.shape.as_list() if out is not None and out.shape.rank == 4 else None
    if dims is not None and None not in dims[1:]:
        return dims
    producer = cx.conv.nodes.get(cx.inputs[0].split(":")[0])
    if producer is None or producer.op != "ConcatV2":
        return dims
    sizes: list = []
    for t in producer.data_inputs[:-1]:
        value = cx.conv.const_value(t)
        spec = cx.conv.spec(t)
        n = spec.shape.as_list()[0] if spec is not None and spec.shape.rank == 1 else None
        if value is not None:
            sizes += [int(v) for v in np.ravel(value)]
        elif n is not None:
            sizes += [None] * n
        else:
            return dims
    return sizes if len(sizes) == 4 else dims


@maps("Conv2DBackpropInput")
def _conv2d_backprop_input(cx):
    """A transposed convolution: ONNX ConvTranspose with explicit pads and output_padding, the
    filter [kh, kw, out, in] as ONNX's [in, out, kh, kw]. Needs static spatial sizes."""
    fmt = cx.attr("data_format")
    strides, dilations = _spatial(cx.attr("strides"), fmt), _spatial(cx.attr("dilations"), fmt)
    fspec, xspec = cx.spec(1), cx.spec(2)
    dims = [s.shape.as_list() if s is not None and s.shape.rank == 4 else None for s in (fspec, xspec)]
    dims.append(_known_sizes(cx))
    h_w = (lambda d: d[1:3]) if fmt == "NHWC" else (lambda d: d[2:4])
    if None in dims or None in dims[0][:2] or None in h_w(dims[1]) or None in h_w(dims[2]):
        raise cx.fail("Conv2DBackpropInput needs static filter, input and output sizes for ONNX export")
    if cx.attr("padding") not in ("SAME", "VALID"):
        raise cx.fail(f"Conv2DBackpropInput padding {cx.attr('padding')} has no ONNX mapping")
    kernel = dims[0][:2]
    begins, ends, extra = [], [], []
    for size, out_size, k, s, d in zip(h_w(dims[1]), h_w(dims[2]), kernel, strides, dilations):
        span = (k - 1) * d + 1
        # The forward convolution's padding (out_size -> size), begin = total // 2 as TF's SAME.
        total = max((size - 1) * s + span - out_size, 0) if cx.attr("padding") == "SAME" else 0
        begins.append(total // 2)
        ends.append(total - total // 2)
        extra.append(out_size - ((size - 1) * s + span - total))
    weights = cx.op("Transpose", [cx.inp(1)], perm=[3, 2, 0, 1])  # [kh, kw, out, in] -> [in, out, kh, kw]
    attrs = {"strides": strides, "dilations": dilations, "kernel_shape": kernel, "pads": begins + ends,
             "output_padding": extra}  # fmt: skip
    if fmt == "NCHW":
        cx.op("ConvTranspose", [cx.inp(2), weights], out=cx.out(), **attrs)
        return
    x = cx.op("Transpose", [cx.inp(2)], perm=TO_NCHW)
    y = cx.op("ConvTranspose", [x, weights], **attrs)
    cx.op("Transpose", [y], out=cx.out(), perm=TO_NHWC)


@maps("SpaceToDepth", "DepthToSpace")
def _space_depth(cx):
    # ONNX's (NCHW) SpaceToDepth and DCR-mode DepthToSpace order depth as TF does.
    attrs = {"blocksize": int(cx.attr("block_size"))}
    if cx.node.op == "DepthToSpace":
        attrs["mode"] = "DCR"
    _nchw(cx, cx.node.op, [], **attrs)


@maps("LRN")
def _lrn(cx):
    # ONNX divides alpha by the window size (2 * depth_radius + 1); TF does not. NHWC only in TF.
    size = 2 * int(cx.attr("depth_radius", 5)) + 1
    x = cx.op("Transpose", [cx.inp(0)], perm=TO_NCHW)
    y = cx.op("LRN", [x], size=size, alpha=float(cx.attr("alpha", 1.0)) * size, beta=float(cx.attr("beta", 0.5)),
              bias=float(cx.attr("bias", 1.0)))  # fmt: skip
    cx.op("Transpose", [y], out=cx.out(), perm=TO_NHWC)
