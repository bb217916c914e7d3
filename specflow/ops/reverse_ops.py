"""Reordering along axes: ReverseV2, Roll, ReverseSequence. Each is its own gradient's shape:
the gradient reverses (or rolls back) the incoming gradient the same way."""

from __future__ import annotations

import numpy as np

from specflow.graph.shapes import Shape
from specflow.ops import grad_util as gu
from specflow.ops.inference import InferenceContext
from specflow.ops.registry import gradient, kernel, register_op
from specflow.ops.shape_args import norm_axis, shape_of

# --- ReverseV2 --------------------------------------------------------------------------------


def _reverse_axes(fail, axes, rank: int | None) -> list[int] | None:
    """The normalized axes to reverse; a repeated axis is an error (as in TF)."""
    if axes is None or rank is None:
        return None
    axes = np.asarray(axes)
    if axes.ndim != 1:
        raise fail(f"axis must be a 1-D tensor, got shape {list(axes.shape)}")
    out = [norm_axis(fail, a, rank) for a in axes]
    dup = next((a for i, a in enumerate(out) if a in out[:i]), None)
    if dup is not None:
        raise fail(f"axis {dup} specified more than once")
    return out


def _reverse_infer(ic: InferenceContext) -> list[Shape]:
    _reverse_axes(ic.fail, ic.value(1), ic.shape(0).rank)
    return [ic.shape(0)]


register_op(
    "ReverseV2",
    inputs=["tensor: T", "axis: Tidx"],
    outputs=["output: T"],
    attrs=["Tidx: {int32, int64} = int32", "T: type"],
    shape=_reverse_infer,
    doc="`tensor` with the order of its elements reversed along each axis in `axis`.",
)


@kernel("ReverseV2", host_inputs=(1,))
def _reverse(ctx, x, axis):
    axes = _reverse_axes(ctx.fail, ctx.host(axis), x.ndim)
    return ctx.xp.flip(x, axis=tuple(axes)).copy() if axes else x


@gradient("ReverseV2")
def _reverse_grad(b, node, dys):
    return [gu.emit(b, "ReverseV2", dys[0], node.data_inputs[1]), None]


# --- Roll -------------------------------------------------------------------------------------


def _roll_args(fail, shift, axis, rank: int | None):
    """(shifts, normalized axes) as lists, checked to pair up."""
    shift, axis = np.asarray(shift), np.asarray(axis)
    if shift.ndim > 1 or axis.ndim > 1:
        raise fail(f"shift and axis must be scalars or 1-D, got shapes {list(shift.shape)} and {list(axis.shape)}")
    if shift.shape != axis.shape:
        raise fail(f"shift and axis must have the same size, got {shift.size} and {axis.size}")
    axes = [int(a) for a in axis.reshape(-1)] if rank is None else [norm_axis(fail, a, rank) for a in axis.reshape(-1)]
    return [int(s) for s in shift.reshape(-1)], axes


def _roll_infer(ic: InferenceContext) -> list[Shape]:
    shift, axis = ic.value(1), ic.value(2)
    if shift is not None and axis is not None:
        _roll_args(ic.fail, shift, axis, ic.shape(0).rank)
    return [ic.shape(0)]


register_op(
    "Roll",
    inputs=["input: T", "shift: Tshift", "axis: Taxis"],
    outputs=["output: T"],
    attrs=["T: type", "Tshift: {int32, int64}", "Taxis: {int32, int64}"],
    shape=_roll_infer,
    doc="`input` rotated by shift[i] places along axis[i] (elements pushed off one end come back "
    "at the other; shifts along a repeated axis add up).",
)


@kernel("Roll", host_inputs=(1, 2))
def _roll(ctx, x, shift, axis):
    shifts, axes = _roll_args(ctx.fail, ctx.host(shift), ctx.host(axis), x.ndim)
    if not shifts:
        return x
    return ctx.xp.roll(x, shifts, axis=axes)


@gradient("Roll")
def _roll_grad(b, node, dys):
    _, shift, axis = node.data_inputs
    return [gu.emit(b, "Roll", dys[0], gu.emit(b, "Neg", shift), axis), None, None]


# --- ReverseSequence --------------------------------------------------------------------------


def _reverse_sequence_shape(fail, x: Shape, lengths: Shape, seq_dim: int, batch_dim: int) -> Shape:
    if lengths.rank not in (None, 1):
        raise fail(f"seq_lengths must be a vector, got shape {lengths}")
    if x.rank is None:
        return x
    for name, d in (("seq_dim", seq_dim), ("batch_dim", batch_dim)):
        if not 0 <= d < x.rank:
            raise fail(f"{name} ({d}) must be in [0, {x.rank}) for input of shape {x}")
    if seq_dim == batch_dim:
        raise fail(f"seq_dim and batch_dim must differ, both are {seq_dim}")
    n = lengths[0] if lengths.rank == 1 else None
    if n is not None and x[batch_dim] is not None and n != x[batch_dim]:
        raise fail(f"seq_lengths has {n} entries, but input {x} has {x[batch_dim]} rows along batch_dim {batch_dim}")
    return x


register_op(
    "ReverseSequence",
    inputs=["input: T", "seq_lengths: Tlen"],
    outputs=["output: T"],
    attrs=["seq_dim: int", "batch_dim: int = 0", "T: type", "Tlen: {int32, int64} = int64"],
    shape=lambda ic: [_reverse_sequence_shape(ic.fail, ic.shape(0), ic.shape(1), ic.attr("seq_dim"),
                                              ic.attr("batch_dim"))],  # fmt: skip
    doc="For each slice b along batch_dim, the first seq_lengths[b] elements along seq_dim "
    "reversed; the rest left in place.",
)


@kernel("ReverseSequence")
def _reverse_sequence(ctx, x, lengths):
    xp = ctx.xp
    seq, batch = ctx.attrs["seq_dim"], ctx.attrs["batch_dim"]
    _reverse_sequence_shape(ctx.fail, shape_of(x), shape_of(lengths), seq, batch)
    host = ctx.host(lengths)
    over = np.flatnonzero((host < 0) | (host > x.shape[seq]))
    if over.size:
        i = int(over[0])
        raise ctx.fail(f"seq_lengths[{i}] = {host[i]} is not in [0, {x.shape[seq]}] (the size of seq_dim {seq})")
    # Source position along seq_dim for every (batch, position): reversed below the length.
    pos = xp.arange(x.shape[seq])[None, :]
    n = xp.asarray(lengths).astype(np.int64)[:, None]
    src = xp.where(pos < n, n - 1 - pos, pos)  # [batch, seq]
    shape = [1] * x.ndim
    shape[batch], shape[seq] = x.shape[batch], x.shape[seq]
    if batch > seq:
        src = src.T
    index = xp.broadcast_to(xp.reshape(src, shape), x.shape)
    return xp.take_along_axis(x, index, axis=seq)


@gradient("ReverseSequence")
def _reverse_sequence_grad(b, node, dys):
    attrs = {"seq_dim": node.attrs["seq_dim"], "batch_dim": node.attrs["batch_dim"]}
    return [gu.emit(b, "ReverseSequence", dys[0], node.data_inputs[1], **attrs), None]
