"""Padding ops: Pad, PadV2 and MirrorPad (part of the shape-manipulation family of ``manip_ops``,
kept apart to keep modules small). As there, one checking helper serves the shape function (static
shapes) and the kernel (real shapes), so both report an error the same way."""

from __future__ import annotations

import numpy as np

from specflow.graph.shapes import Shape
from specflow.ops import grad_util as gu
from specflow.ops import manip_grad_ops  # noqa: F401  (MirrorPadGrad: emitted by MirrorPad's gradient)
from specflow.ops.inference import InferenceContext
from specflow.ops.registry import gradient, kernel, register_op
from specflow.ops.shape_args import (
    shape_of,
    unknown_of_rank,
)

# --- Pad / PadV2 / MirrorPad ------------------------------------------------------------------


def _pad_shape(fail, s: Shape, paddings: np.ndarray, mode: str = "CONSTANT") -> Shape:
    p = np.asarray(paddings)
    if p.ndim != 2 or p.shape[1] != 2 or (s.rank is not None and p.shape[0] != s.rank):
        raise fail(
            f"paddings must have shape [{'rank' if s.rank is None else s.rank}, 2], got {list(p.shape)}"
        )
    if (p < 0).any():
        raise fail(f"paddings must be non-negative, got {p.tolist()}")
    dims = s.dims if s.rank is not None else (None,) * p.shape[0]
    out = []
    for i, (d, (before, after)) in enumerate(zip(dims, p.tolist(), strict=True)):
        # REFLECT excludes the edge element, so it can mirror at most d - 1; SYMMETRIC at most d.
        limit = {"REFLECT": None if d is None else d - 1, "SYMMETRIC": d}.get(mode)
        if limit is not None and max(before, after) > limit:
            raise fail(f"{mode} paddings {[before, after]} of dimension {i} exceed {limit} for shape {s}")
        out.append(None if d is None else d + before + after)
    return Shape(out)


def _pad_infer(ic: InferenceContext) -> list[Shape]:
    s, p = ic.shape(0), ic.value(1)
    if p is not None:
        return [_pad_shape(ic.fail, s, p, ic.attrs.get("mode", "CONSTANT"))]
    ps = ic.shape(1)
    if ps.rank not in (None, 2) or (ps.rank == 2 and ps[1] not in (None, 2)):
        raise ic.fail(f"paddings must have shape [rank, 2], got {ps}")
    rank = s.rank if s.rank is not None else (ps[0] if ps.rank == 2 else None)
    return [unknown_of_rank(rank)]


def _pad_infer_v2(ic: InferenceContext) -> list[Shape]:
    if ic.shape(2).rank not in (None, 0):
        raise ic.fail(f"constant_values must be a scalar, got shape {ic.shape(2)}")
    return _pad_infer(ic)


_PAD_ATTRS = ["T: type", "Tpaddings: {int32, int64} = int32"]
register_op(
    "Pad",
    inputs=["input: T", "paddings: Tpaddings"],
    outputs=["output: T"],
    attrs=_PAD_ATTRS,
    shape=_pad_infer,
    doc="Pads dimension i with paddings[i][0] zeros before and paddings[i][1] after.",
)
register_op(
    "PadV2",
    inputs=["input: T", "paddings: Tpaddings", "constant_values: T"],
    outputs=["output: T"],
    attrs=_PAD_ATTRS,
    shape=_pad_infer_v2,
    doc="Pad with the scalar `constant_values` instead of zeros.",
)
register_op(
    "MirrorPad",
    inputs=["input: T", "paddings: Tpaddings"],
    outputs=["output: T"],
    attrs=_PAD_ATTRS + ["mode: {'REFLECT', 'SYMMETRIC'}"],
    shape=_pad_infer,
    doc="Pads with a mirror image of `input`: REFLECT leaves out the edge, SYMMETRIC repeats it.",
)


@kernel("Pad", host_inputs=(1,))
@kernel("PadV2", host_inputs=(1, 2))
def _pad(ctx, x, paddings, constant_values=None):
    paddings = ctx.host(paddings)
    _pad_shape(ctx.fail, shape_of(x), paddings)
    default = b"" if x.dtype == object else 0  # a string tensor pads with empty strings, as TF's
    value = default if constant_values is None else ctx.host(constant_values)
    if np.ndim(value) != 0:
        raise ctx.fail(f"constant_values must be a scalar, got shape {list(np.shape(value))}")
    if x.dtype == object:  # strings: filled with the (bytes) value itself, not numpy's bytes_
        out = np.empty([d + int(lo) + int(hi) for d, (lo, hi) in zip(x.shape, paddings)], object)
        out.fill(value.item() if isinstance(value, np.ndarray) else value)
        out[tuple(slice(int(lo), int(lo) + d) for d, (lo, _) in zip(x.shape, paddings))] = x
        return out
    return ctx.xp.pad(x, paddings.tolist(), mode="constant", constant_values=np.asarray(value).item())


@gradient("Pad")
@gradient("PadV2")
def _pad_grad(b, node, dys):
    # The input is the block of the output that starts after the leading paddings. As in
    # TensorFlow, constant_values gets no gradient.
    x, paddings = node.data_inputs[:2]
    p, index = b.value(paddings), b.spec(paddings).dtype
    if p is not None:
        begin = gu.const(b, np.asarray(p)[:, 0])
    else:
        first = gu.emit(b, "Slice", paddings, gu.const(b, [0, 0], index), gu.const(b, [-1, 1], index))
        begin = gu.emit(b, "Reshape", first, gu.const(b, [-1], "int32"))
    dx = gu.emit(b, "Slice", dys[0], begin, gu.shape_of(b, x, index))
    return [dx] + [None] * (len(node.data_inputs) - 1)


@kernel("MirrorPad", host_inputs=(1,))
def _mirror_pad(ctx, x, paddings):
    paddings, mode = ctx.host(paddings), ctx.attrs["mode"]
    _pad_shape(ctx.fail, shape_of(x), paddings, mode)
    return ctx.xp.pad(x, paddings.tolist(), mode=mode.lower())


@gradient("MirrorPad")
def _mirror_pad_grad(b, node, dys):
    x, paddings = node.data_inputs
    return [gu.emit(b, "MirrorPadGrad", dys[0], paddings, mode=node.attrs["mode"]), None]
