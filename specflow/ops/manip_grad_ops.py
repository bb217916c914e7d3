"""Ops that the shape-manipulation gradients emit: InvertPermutation (Transpose with a computed
perm) and MirrorPadGrad (MirrorPad). Both are TensorFlow's ops with TensorFlow's signatures;
``manip_ops`` imports this module.
"""

from __future__ import annotations

import numpy as np

from specflow.graph.shapes import Shape
from specflow.ops import grad_util as gu
from specflow.ops.inference import InferenceContext
from specflow.ops.registry import gradient, kernel, not_differentiable, register_op
from specflow.ops.shape_args import shape_of, unknown_of_rank, vector_arg

# --- InvertPermutation ------------------------------------------------------------------------


def _invert_permutation_infer(ic: InferenceContext) -> list[Shape]:
    if ic.shape(0).rank not in (None, 1):
        raise ic.fail(f"x must be a 1-D tensor, got shape {ic.shape(0)}")
    return [ic.shape(0) if ic.shape(0).rank is not None else Shape([None])]


register_op(
    "InvertPermutation",
    inputs=["x: T"],
    outputs=["y: T"],
    attrs=["T: {int32, int64} = int32"],
    shape=_invert_permutation_infer,
    doc="The inverse permutation of `x`: y[x[i]] = i.",
)


@kernel("InvertPermutation", host_inputs=(0,))
def _invert_permutation(ctx, x):
    perm = vector_arg(ctx.fail, ctx.host(x), "x")
    if sorted(perm) != list(range(len(perm))):
        raise ctx.fail(f"x = {perm} is not a permutation of [0, {len(perm)})")
    return ctx.xp.asarray(np.argsort(perm), dtype=ctx.attrs["T"].numpy)


not_differentiable("InvertPermutation")

# --- MirrorPadGrad ----------------------------------------------------------------------------
# Folds the mirrored borders of a MirrorPad result's gradient back onto the elements they copy.


def _mirror_pad_grad_shape(fail, s: Shape, paddings, mode: str) -> Shape:
    p = np.asarray(paddings)
    if p.ndim != 2 or p.shape[1] != 2 or (s.rank is not None and p.shape[0] != s.rank):
        raise fail(f"paddings must have shape [{'rank' if s.rank is None else s.rank}, 2], got {list(p.shape)}")
    if (p < 0).any():
        raise fail(f"paddings must be non-negative, got {p.tolist()}")
    dims = s.dims if s.rank is not None else (None,) * p.shape[0]
    out = []
    for i, (d, (before, after)) in enumerate(zip(dims, p.tolist(), strict=True)):
        n = None if d is None else d - before - after
        # REFLECT mirrors at most n - 1 elements on each side, SYMMETRIC at most n.
        if n is not None and (n < 0 or max(before, after) > n - (mode == "REFLECT")):
            raise fail(f"{mode} paddings {[before, after]} of dimension {i} do not fit a padded size of {d}")
        out.append(n)
    return Shape(out)


def _mirror_pad_grad_infer(ic: InferenceContext) -> list[Shape]:
    p = ic.value(1)
    if p is not None:
        return [_mirror_pad_grad_shape(ic.fail, ic.shape(0), p, ic.attr("mode"))]
    return [unknown_of_rank(ic.shape(0).rank)]


register_op(
    "MirrorPadGrad",
    inputs=["input: T", "paddings: Tpaddings"],
    outputs=["output: T"],
    attrs=["T: type", "Tpaddings: {int32, int64} = int32", "mode: {'REFLECT', 'SYMMETRIC'}"],
    shape=_mirror_pad_grad_infer,
    doc="The gradient of MirrorPad: each mirrored border element is added to the element it copies.",
)


@kernel("MirrorPadGrad", host_inputs=(1,))
def _mirror_pad_grad(ctx, g, paddings):
    p, mode = ctx.host(paddings), ctx.attrs["mode"]
    _mirror_pad_grad_shape(ctx.fail, shape_of(g), p, mode)
    for d, (before, after) in zip(g.shape, p.tolist()):  # TF's kernel: an empty result dim fails too
        if before + after >= d:
            raise ctx.fail(f"Total paddings must be less than the input dimension size: {before + after} was not less than {d}")
    for axis, (before, after) in enumerate(p.tolist()):
        g = _fold_axis(ctx.xp, g, axis, before, after, 1 if mode == "REFLECT" else 0)
    return g


def _fold_axis(xp, g, axis: int, before: int, after: int, shift: int):
    """Un-pad one axis. ``shift`` is 1 for REFLECT (whose mirror leaves out the edge element):
    flipped, left border element m copies x[m + shift] and right one m copies x[n-after-shift+m]."""
    n = g.shape[axis] - before - after

    def part(lo, hi):
        return g[(slice(None),) * axis + (slice(lo, hi),)]

    def placed(piece, lo):  # ``piece`` zero-padded to length n along the axis, starting at lo
        widths = [(0, 0)] * g.ndim
        widths[axis] = (lo, n - lo - piece.shape[axis])
        return xp.pad(piece, widths)

    left, right = xp.flip(part(0, before), axis), xp.flip(part(before + n, None), axis)
    return part(before, before + n) + placed(left, shift) + placed(right, n - after - shift)


@gradient("MirrorPadGrad")
def _mirror_pad_grad_grad(b, node, dys):
    # MirrorPadGrad is linear; its adjoint is MirrorPad itself.
    return [gu.emit(b, "MirrorPad", dys[0], node.data_inputs[1], mode=node.attrs["mode"]), None]
