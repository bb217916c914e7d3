"""ExtractVolumePatches (tf.extract_volume_patches): every ksizes window of NDHWC volumes, strides
apart, flattened along the depth in (plane, row, column, channel) order, SAME padding with zeros;
ExtractImagePatches' 3-D form (no rates). Its gradient, as TF's, adds each patch entry back to the
voxel it came from (here: Conv3DBackpropInputV2 with the one-hot filter that makes the patches)."""

from __future__ import annotations

import itertools

import numpy as np

from specflow.errors import GraphError
from specflow.graph.shapes import Shape
from specflow.ops import grad_util as gu
from specflow.ops.inference import InferenceContext
from specflow.ops.registry import gradient, kernel, register_op
from specflow.ops.shape_args import shape_of


def _window(c, x: Shape):
    """(ksize, strides, out dims, pads before) for the three spatial dims (None where unknown)."""
    if x.rank is not None and x.rank != 5:
        raise c.fail(f"input must be 5-D [batch, planes, rows, cols, depth], got shape {x}")

    def attr(name):
        v = [int(a) for a in c.attrs[name]]
        if len(v) != 5 or v[0] != 1 or v[4] != 1 or min(v) < 1:
            raise c.fail(f"{name} must be [1, planes, rows, cols, 1] with positive sizes, got {v}")
        return v[1:4]

    k, s = attr("ksizes"), attr("strides")
    same = c.attrs["padding"] == "SAME"
    outs, pads = [], []
    for d in range(3):
        size = None if x.rank is None else x[1 + d]
        if size is None:
            outs.append(None)
            pads.append(None)
            continue
        out = -(-size // s[d]) if same else max(-(-(size - k[d] + 1) // s[d]), 0)
        outs.append(out)
        pads.append(max((out - 1) * s[d] + k[d] - size, 0) // 2 if same else 0)
    return k, s, outs, pads


def _patches_shape(ic: InferenceContext) -> list[Shape]:
    x = ic.shape(0)
    k, _, outs, _ = _window(ic, x)
    if x.rank is None:
        return [Shape.unknown_of_rank(5)]
    depth = None if x[4] is None else x[4] * k[0] * k[1] * k[2]
    return [Shape([x[0], *outs, depth])]


register_op(
    "ExtractVolumePatches",
    inputs=["input: T"],
    outputs=["patches: T"],
    attrs=["ksizes: list(int) >= 5", "strides: list(int) >= 5", "T: {real}", "padding: {'SAME', 'VALID'}"],
    shape=_patches_shape,
    doc="Each ksizes window of the NDHWC input (strides apart), flattened in (plane, row, column, "
    "channel) order along the depth; SAME pads with zeros.",
)


@kernel("ExtractVolumePatches")
def _extract_volume_patches(ctx, x):
    xp = ctx.xp
    k, s, outs, pads = _window(ctx, shape_of(x))
    widths = [(0, 0)] + [(p, max((o - 1) * st + kk - n - p, 0)) for p, o, st, kk, n in
                         zip(pads, outs, s, k, x.shape[1:4])] + [(0, 0)]  # fmt: skip
    padded = xp.pad(x, widths) if any(w != (0, 0) for w in widths) else x
    n, c = x.shape[0], x.shape[4]
    if 0 in outs:
        return xp.zeros((n, *outs, k[0] * k[1] * k[2] * c), x.dtype)
    taps = [padded[:, a : a + (outs[0] - 1) * s[0] + 1 : s[0], b : b + (outs[1] - 1) * s[1] + 1 : s[1],
                   e : e + (outs[2] - 1) * s[2] + 1 : s[2], :]
            for a, b, e in itertools.product(range(k[0]), range(k[1]), range(k[2]))]  # fmt: skip
    return xp.stack(taps, axis=4).reshape(n, *outs, len(taps) * c)


@gradient("ExtractVolumePatches")
def _extract_volume_patches_grad(b, node, dys):
    x = node.data_inputs[0]
    kd, kh, kw = (int(v) for v in node.attrs["ksizes"][1:4])
    ch = b.spec(x).shape[4] if b.spec(x).shape.rank == 5 else None
    if ch is None:
        raise GraphError("the gradient of ExtractVolumePatches needs the input's channel count known",
                         node=node.name, location=node.location)  # fmt: skip
    depth = kd * kh * kw * ch
    onehot = np.eye(depth, dtype=b.spec(x).dtype.numpy).reshape(kd, kh, kw, ch, depth)
    attrs = {"strides": list(node.attrs["strides"]), "padding": node.attrs["padding"], "data_format": "NDHWC"}
    return [gu.emit(b, "Conv3DBackpropInputV2", gu.shape_of(b, x), gu.const(b, onehot), dys[0], **attrs)]
