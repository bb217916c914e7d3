"""Layers that reshape or combine: global pooling, zero padding, upsampling, and the merges
``add``, ``multiply``, ``concat``."""

from __future__ import annotations

from specflow.errors import SpecError
from specflow.graph.shapes import normalize_axis
from specflow.schema.layers.common import Emitter, pair


def _spatial_rank(e: Emitter, x: str, what: str, ranks=(3, 4, 5)) -> int:
    """The number of axes between batch and channels (1 for [batch, steps, channels])."""
    shape = e.shape(x)
    if shape.rank is None or shape.rank not in ranks:
        want = " or ".join(str(r) for r in ranks)
        raise SpecError(f"{what} needs an input of rank {want} (batch, spatial axes, channels), got shape {shape}",
                        node=e.ctx.name)
    return shape.rank - 2


def global_pool(op: str):
    def layer(e: Emitter, x: str, cfg) -> str:
        n = _spatial_rank(e, x, "global pooling")
        axes = e.i32(list(range(1, n + 1)), "axes")
        return e.op(op, [x, axes], {"keep_dims": cfg.keepdims}, final=True)

    layer.__doc__ = f"{op} over the spatial axes (channels last), keepdims as Keras."
    return layer


def global_avg_pool(e: Emitter, inputs: dict, cfg) -> str:
    """Mean over the spatial axes; with a ``mask`` [batch, steps] (an embedding's ``name:1``) the
    mean of the unmasked steps only, as Keras's GlobalAveragePooling1D with a mask (all masked:
    0/0, NaN, as there)."""
    x, mask = inputs["x"], inputs.get("mask")
    if mask is None:
        return global_pool("Mean")(e, x, cfg)
    _spatial_rank(e, x, "global_avg_pool with a mask", ranks=(3,))
    m = e.op("Cast", [mask], {"DstT": e.dtype(x)}, name="mask")
    m = e.op("ExpandDims", [m, e.i32(-1, "mask/axis")], name="mask")
    axes = e.i32([1], "axes")
    total = e.op("Sum", [e.op("Mul", [x, m]), axes], {"keep_dims": cfg.keepdims}, name="total")
    count = e.op("Sum", [m, axes], {"keep_dims": cfg.keepdims}, name="count")
    return e.op("RealDiv", [total, count], final=True)


def zero_padding(e: Emitter, x: str, cfg) -> str:
    """Pad with zeros around the spatial axes (Keras ZeroPadding1D/2D/3D by the input's rank)."""
    n = _spatial_rank(e, x, "zero_padding")
    p = cfg.padding
    if isinstance(p, int):
        pads = [[p, p]] * n
    elif all(isinstance(v, int) for v in p):
        pads = [[v, v] for v in p]
    else:
        pads = [list(v) if isinstance(v, list) else [v, v] for v in p]
    if len(pads) != n:
        raise SpecError(f"zero_padding: {len(pads)} paddings for {n} spatial axes", node=e.ctx.name)
    return e.op("Pad", [x, e.i32([[0, 0], *pads, [0, 0]], "paddings")], final=True)


def upsampling2d(e: Emitter, x: str, cfg) -> str:
    """Nearest neighbour: each pixel repeated size[0] x size[1] times, as Reshape -> Tile ->
    Reshape ([N, H, 1, W, 1, C] tiled to [N, H, sh, W, sw, C])."""
    _spatial_rank(e, x, "upsampling2d", ranks=(4,))
    sh, sw = pair(cfg.size)
    shape = e.shape(x)
    h, w, c = shape.dims[1:]
    if None in (h, w, c):
        raise SpecError(f"upsampling2d needs height, width and channels known, got shape {shape}", node=e.ctx.name)
    split = e.op("Reshape", [x, e.i32([-1, h, 1, w, 1, c], "expand/shape")], name="expand")
    tiled = e.op("Tile", [split, e.i32([1, 1, sh, 1, sw, 1], "multiples")])
    return e.op("Reshape", [tiled, e.i32([-1, h * sh, w * sw, c], "shape")], final=True)


def merge(op: str):
    def layer(e: Emitter, xs: list[str], cfg) -> str:
        acc = xs[0]
        for i, x in enumerate(xs[1:], 1):
            acc = e.op(op, [acc, x], final=i == len(xs) - 1)
        return acc

    layer.__doc__ = f"{op} of the inputs, left to right."
    return layer


def concat(e: Emitter, xs: list[str], cfg) -> str:
    ranks = {e.shape(x).rank for x in xs} - {None}
    if len(ranks) > 1:
        raise SpecError(f"concat needs inputs of one rank, got {[str(e.shape(x)) for x in xs]}", node=e.ctx.name)
    axis = cfg.axis
    if ranks:
        try:
            axis = normalize_axis(axis, ranks.pop())
        except ValueError as err:
            raise SpecError(f"concat: {err}", node=e.ctx.name) from None
    return e.op("ConcatV2", [*xs, e.i32(axis, "axis")], final=True)
