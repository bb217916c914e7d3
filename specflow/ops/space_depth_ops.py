"""Rearranging blocks between space, depth and batch: SpaceToDepth, DepthToSpace,
SpaceToBatchND, BatchToSpaceND (TF's array_ops.cc), with their gradients (each pair is the
other's inverse, so each one's gradient is the other); and ExtractImagePatches, every window of
an image laid out along the depth (an im2col, whose gradient is a convolution's input gradient).

Every kernel is one reshape, one transpose and one reshape (plus a pad or a crop): TF defines
these ops that way. NCHW SpaceToDepth / DepthToSpace are the NHWC op on the transposed tensor.
"""

from __future__ import annotations

import math

import numpy as np

from specflow.errors import GraphError
from specflow.graph.shapes import Shape
from specflow.ops import grad_util as gu
from specflow.ops.inference import InferenceContext
from specflow.ops.registry import gradient, kernel, register_op

_DEPTH_ATTRS = ["T: type", "block_size: int >= 2", "data_format: {'NHWC', 'NCHW'} = 'NHWC'"]


def _nhwc(dims, fmt):
    return dims if fmt == "NHWC" else (dims[0], dims[2], dims[3], dims[1])


def _fmt(dims, fmt):
    return dims if fmt == "NHWC" else (dims[0], dims[3], dims[1], dims[2])


def _depth_dims(c, shape, to_depth: bool) -> tuple:
    """Output dims of SpaceToDepth (``to_depth``) or DepthToSpace for input ``shape``."""
    s = shape if isinstance(shape, Shape) else Shape(shape)
    fmt, b = c.attrs["data_format"], int(c.attrs["block_size"])
    if s.rank is None:
        return (None,) * 4
    if s.rank != 4:
        raise c.fail(f"input must be 4-D, got shape {s}")
    n, h, w, ch = _nhwc(s.dims, fmt)
    if to_depth:
        for what, d in (("height", h), ("width", w)):
            if d is not None and d % b:
                raise c.fail(f"input {what} {d} is not divisible by block_size {b} (input shape {s}, {fmt})")
        out = (n, h and h // b, w and w // b, ch and ch * b * b)
    else:
        if ch is not None and ch % (b * b):
            raise c.fail(f"input depth {ch} is not divisible by block_size * block_size = {b * b} "
                         f"(input shape {s}, {fmt})")  # fmt: skip
        out = (n, h and h * b, w and w * b, ch and ch // (b * b))
    return _fmt(out, fmt)


def _to_nhwc(x, fmt):
    return x if fmt == "NHWC" else x.transpose(0, 2, 3, 1)


def _from_nhwc(x, fmt):
    return x if fmt == "NHWC" else x.transpose(0, 3, 1, 2)


register_op(
    "SpaceToDepth",
    inputs=["input: T"],
    outputs=["output: T"],
    attrs=_DEPTH_ATTRS,
    shape=lambda ic: [Shape(_depth_dims(ic, ic.shape(0), True))],
    doc="Moves each block_size x block_size spatial block into depth: [N, H, W, C] -> "
    "[N, H / b, W / b, C * b * b], depth index (row * b + col) * C + c.",
)


@kernel("SpaceToDepth")
def _space_to_depth(ctx, x):
    fmt, b = ctx.attrs["data_format"], int(ctx.attrs["block_size"])
    n, oh, ow, oc = _nhwc(_depth_dims(ctx, x.shape, True), fmt)
    x = _to_nhwc(x, fmt)
    out = x.reshape(n, oh, b, ow, b, x.shape[3]).transpose(0, 1, 3, 2, 4, 5).reshape(n, oh, ow, oc)
    return ctx.xp.ascontiguousarray(_from_nhwc(out, fmt))


register_op(
    "DepthToSpace",
    inputs=["input: T"],
    outputs=["output: T"],
    attrs=_DEPTH_ATTRS,
    shape=lambda ic: [Shape(_depth_dims(ic, ic.shape(0), False))],
    doc="The inverse of SpaceToDepth: [N, H, W, C] -> [N, H * b, W * b, C / (b * b)].",
)


@kernel("DepthToSpace")
def _depth_to_space(ctx, x):
    fmt, b = ctx.attrs["data_format"], int(ctx.attrs["block_size"])
    n, oh, ow, oc = _nhwc(_depth_dims(ctx, x.shape, False), fmt)
    x = _to_nhwc(x, fmt)
    h, w = x.shape[1:3]
    out = x.reshape(n, h, w, b, b, oc).transpose(0, 1, 3, 2, 4, 5).reshape(n, oh, ow, oc)
    return ctx.xp.ascontiguousarray(_from_nhwc(out, fmt))


def _attrs(node) -> dict:
    return {k: v for k, v in node.attrs.items() if not k.startswith("_")}


@gradient("SpaceToDepth")
def _space_to_depth_grad(b, node, dys):
    return [gu.emit(b, "DepthToSpace", dys[0], **_attrs(node))]


@gradient("DepthToSpace")
def _depth_to_space_grad(b, node, dys):
    return [gu.emit(b, "SpaceToDepth", dys[0], **_attrs(node))]


# --- SpaceToBatchND / BatchToSpaceND ----------------------------------------------------------

_ND_ATTRS = ["T: type", "Tblock_shape: {int32, int64} = int32"]


def _block_args(c, block, pads, what: str) -> tuple[list[int], list[list[int]]]:
    """block_shape (M positive sizes) and paddings / crops (an [M, 2] of non-negative sizes)."""
    block, pads = np.asarray(block), np.asarray(pads)
    if block.ndim != 1 or block.size < 1 or (block < 1).any():
        raise c.fail(f"block_shape must be a 1-D tensor of positive sizes, got {block.tolist()}")
    if pads.shape != (block.size, 2) or (pads < 0).any():
        raise c.fail(f"{what} must be a [{block.size}, 2] tensor of non-negative sizes, got {pads.tolist()}")
    return [int(v) for v in block], [[int(a), int(z)] for a, z in pads]


def _nd_dims(c, shape: Shape, block, pads, to_batch: bool) -> tuple:
    """Output dims of SpaceToBatchND (``to_batch``, pads = paddings) or BatchToSpaceND (crops)."""
    m = len(block)
    if shape.rank is None:
        return None
    if shape.rank < m + 1:
        raise c.fail(f"input must have rank at least {m + 1} (batch + {m} block dims), got shape {shape}")
    dims = list(shape.dims)
    batch, prod = dims[0], math.prod(block)
    out = []
    for d, k, (a, z) in zip(dims[1 : m + 1], block, pads):
        if d is None:
            out.append(None)
        elif to_batch:
            if (d + a + z) % k:
                raise c.fail(f"padded size {d} + {a} + {z} is not divisible by block size {k} (input shape {shape})")
            out.append((d + a + z) // k)
        else:
            if a + z > d * k:
                raise c.fail(f"crops {a} + {z} exceed the size {d * k} of a block dim (input shape {shape})")
            out.append(d * k - a - z)
    if to_batch:
        batch = None if batch is None else batch * prod
    elif batch is not None:
        if batch % prod:
            raise c.fail(f"batch {batch} is not divisible by the block count {prod} (block_shape {block})")
        batch //= prod
    return (batch, *out, *dims[m + 1 :])


def _nd_shape(to_batch: bool, what: str):
    def fn(ic: InferenceContext) -> list[Shape]:
        block, pads = ic.value(1), ic.value(2)
        if block is None or pads is None:
            rank = ic.shape(0).rank
            return [Shape.unknown() if rank is None else Shape.unknown_of_rank(rank)]
        dims = _nd_dims(ic, ic.shape(0), *_block_args(ic, block, pads, what), to_batch)
        return [Shape(dims)]

    return fn


register_op(
    "SpaceToBatchND",
    inputs=["input: T", "block_shape: Tblock_shape", "paddings: Tpaddings"],
    outputs=["output: T"],
    attrs=[*_ND_ATTRS, "Tpaddings: {int32, int64} = int32"],
    shape=_nd_shape(True, "paddings"),
    doc="Zero-pads the M dims after batch, splits each into blocks of block_shape and moves the "
    "block offsets into the batch dim (block offset major, then batch).",
)


@kernel("SpaceToBatchND", host_inputs=[1, 2])
def _space_to_batch_nd(ctx, x, block, pads):
    xp = ctx.xp
    block, pads = _block_args(ctx, ctx.host(block), ctx.host(pads), "paddings")
    _nd_dims(ctx, Shape(x.shape), block, pads, True)
    m = len(block)
    x = xp.pad(x, [(0, 0), *pads, *[(0, 0)] * (x.ndim - m - 1)])
    n, rest = x.shape[0], x.shape[m + 1 :]
    split = [s for d, k in zip(x.shape[1 : m + 1], block) for s in (d // k, k)]
    x = x.reshape(n, *split, *rest)
    perm = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)]
    x = x.transpose(*perm, *range(2 * m + 1, x.ndim))
    return xp.ascontiguousarray(x).reshape(n * math.prod(block), *split[::2], *rest)


register_op(
    "BatchToSpaceND",
    inputs=["input: T", "block_shape: Tblock_shape", "crops: Tcrops"],
    outputs=["output: T"],
    attrs=[*_ND_ATTRS, "Tcrops: {int32, int64} = int32"],
    shape=_nd_shape(False, "crops"),
    doc="The inverse of SpaceToBatchND: moves block offsets from the batch dim back into the M "
    "dims after it, then crops them.",
)


@kernel("BatchToSpaceND", host_inputs=[1, 2])
def _batch_to_space_nd(ctx, x, block, crops):
    block, crops = _block_args(ctx, ctx.host(block), ctx.host(crops), "crops")
    out_dims = _nd_dims(ctx, Shape(x.shape), block, crops, False)
    m = len(block)
    n, inner, rest = out_dims[0], x.shape[1 : m + 1], x.shape[m + 1 :]
    x = x.reshape(*block, n, *inner, *rest)
    perm = [m] + [i for j in range(m) for i in (m + 1 + j, j)]
    x = x.transpose(*perm, *range(2 * m + 1, x.ndim))
    x = ctx.xp.ascontiguousarray(x).reshape(n, *(d * k for d, k in zip(inner, block)), *rest)
    crop = tuple(slice(a, x.shape[1 + i] - z) for i, (a, z) in enumerate(crops))
    return ctx.xp.ascontiguousarray(x[(slice(None), *crop)])


@gradient("SpaceToBatchND")
def _space_to_batch_nd_grad(b, node, dys):
    _, block, pads = node.data_inputs
    attrs = {"Tblock_shape": node.attrs["Tblock_shape"], "Tcrops": node.attrs["Tpaddings"]}
    return [gu.emit(b, "BatchToSpaceND", dys[0], block, pads, **attrs), None, None]


@gradient("BatchToSpaceND")
def _batch_to_space_nd_grad(b, node, dys):
    _, block, crops = node.data_inputs
    attrs = {"Tblock_shape": node.attrs["Tblock_shape"], "Tpaddings": node.attrs["Tcrops"]}
    return [gu.emit(b, "SpaceToBatchND", dys[0], block, crops, **attrs), None, None]


# --- ExtractImagePatches ----------------------------------------------------------------------


def _patches_window(c, x_shape):
    """ExtractImagePatches' window over NHWC images, TF's output sizes and SAME padding."""
    from specflow.ops.conv_ops import _out_size, _rank4
    from specflow.ops.window import _Window

    x = _rank4(c, x_shape, "images")

    def attr(name):
        v = [int(a) for a in c.attrs[name]]
        if len(v) != 4 or v[0] != 1 or v[3] != 1 or min(v) < 1:
            raise c.fail(f"{name} must be [1, rows, cols, 1] with positive sizes, got {v}")
        return v[1], v[2]

    k, st, r = attr("ksizes"), attr("strides"), attr("rates")
    rows, cols = (_out_size(c, x[1 + d], k[d], st[d], r[d], None) for d in (0, 1))
    return _Window(k, st, r, (rows[0], cols[0]), (rows[1], cols[1])), x


def _patches_shape(ic: InferenceContext) -> list[Shape]:
    win, x = _patches_window(ic, ic.shape(0))
    depth = None if x[3] is None else x[3] * win.ksize[0] * win.ksize[1]
    return [Shape([x[0], *win.out, depth])]


register_op(
    "ExtractImagePatches",
    inputs=["images: T"],
    outputs=["patches: T"],
    attrs=["ksizes: list(int) >= 4", "strides: list(int) >= 4", "rates: list(int) >= 4",
           "T: {real, complex, bool}", "padding: {'SAME', 'VALID'}"],  # fmt: skip
    shape=_patches_shape,
    doc="Each ksizes window of the NHWC images (rates apart within it, strides apart), flattened in "
    "(row, column, channel) order along the depth; SAME pads with zeros.",
)


@kernel("ExtractImagePatches")
def _extract_image_patches(ctx, x):
    from specflow.ops import window as wn

    win, _ = _patches_window(ctx, x.shape)
    if x.dtype == np.bool_:  # (im2col's matmul-ready buffers are numeric)
        return wn.im2col(ctx.xp, x.astype(np.uint8), win).astype(np.bool_)
    return wn.im2col(ctx.xp, x, win)


@gradient("ExtractImagePatches")
def _extract_image_patches_grad(b, node, dys):
    # The patches are Conv2D of the images with a one-hot filter (window tap and channel -> the
    # depth position TF puts them at); their gradient is that convolution's input gradient.
    x = node.data_inputs[0]
    _, kr, kc, _ = (int(v) for v in node.attrs["ksizes"])
    ch = b.spec(x).shape[3]
    if ch is None:
        raise GraphError("the gradient of ExtractImagePatches needs the images' channel count known",
                         node=node.name, location=node.location)  # fmt: skip
    depth = kr * kc * ch
    onehot = np.eye(depth, dtype=b.spec(x).dtype.numpy).reshape(kr, kc, ch, depth)
    attrs = {"strides": list(node.attrs["strides"]), "padding": node.attrs["padding"],
             "dilations": list(node.attrs["rates"]), "data_format": "NHWC"}  # fmt: skip
    return [gu.emit(b, "Conv2DBackpropInput", gu.shape_of(b, x), gu.const(b, onehot), dys[0], **attrs)]
