"""Batch normalization.

Training mode normalizes with the batch's moments; inference with the moving averages. The
choice is a SelectV2 on the ``training`` flag (no control flow). The moving-average updates
(``var -= (var - batch) * (1 - momentum)``, as Keras) go in the "update_ops" collection for the
training loop to run.
"""

from __future__ import annotations

import numpy as np

from specflow.errors import SpecError
from specflow.graph import dtypes
from specflow.graph.shapes import normalize_axis
from specflow.schema.layers.common import Emitter
from specflow.schema.layers.variables import create_variable


def batch_norm(e: Emitter, x: str, cfg) -> str:
    shape, dt = e.shape(x), e.dtype(x)
    name = e.ctx.name
    if shape.rank is None:
        raise SpecError("batch_norm needs an input of known rank", node=name)
    try:
        axis = normalize_axis(cfg.axis, shape.rank)
    except ValueError as err:
        raise SpecError(f"batch_norm: {err}", node=name) from None
    channels = shape.dims[axis]
    if channels is None:
        raise SpecError(f"batch_norm needs dimension {axis} of the input known, got shape {shape}", node=name)
    seed = e.ctx.graph_seed
    var = {
        k: create_variable(e.b, k, [channels], dt, init, trainable, seed)
        for k, init, trainable, wanted in (
            ("gamma", "ones", True, cfg.scale),
            ("beta", "zeros", True, cfg.center),
            ("moving_mean", "zeros", False, True),
            ("moving_variance", "ones", False, True),
        )
        if wanted
    }

    # Batch moments over every axis but `axis`, shaped [channels].
    reduce = e.const(np.array([i for i in range(shape.rank) if i != axis], np.int32), dtypes.int32, "moments/axes")
    mean = e.op("Mean", [x, reduce], {"keep_dims": False}, name="moments/mean")
    centered = e.op("Sub", [x, _bcast(e, mean, axis, shape.rank, "moments/mean_b")], name="moments/sub")
    var_b = e.op("Mean", [e.op("Square", [centered], name="moments/Square"), reduce], {"keep_dims": False},
                 name="moments/variance")  # fmt: skip

    training = e.ctx.training_flag(e.b)
    use_mean = e.op("SelectV2", [training, mean, var["moving_mean"].read], name="mean")
    use_var = e.op("SelectV2", [training, var_b, var["moving_variance"].read], name="variance")

    # y = x * inv + (beta - mean * inv), inv = gamma / sqrt(variance + epsilon)  (tf.nn.batch_normalization)
    eps = e.const(np.asarray(cfg.epsilon, dt.numpy), dt, "epsilon")
    inv = e.op("Rsqrt", [e.op("AddV2", [use_var, eps], name="add")])
    if "gamma" in var:
        inv = e.op("Mul", [inv, var["gamma"].read], name="mul")
    inv_b = _bcast(e, inv, axis, shape.rank, "inv_b")
    shift = e.op("Mul", [use_mean, inv], name="mul_1")
    shift = e.op("Sub", [var["beta"].read, shift], name="sub") if "beta" in var else e.op("Neg", [shift])
    scaled = e.op("Mul", [x, inv_b], name="mul_2")
    y = e.op("AddV2", [scaled, _bcast(e, shift, axis, shape.rank, "shift_b")], final=True)

    decay = e.const(np.asarray(1.0 - cfg.momentum, dt.numpy), dt, "decay")
    for key, batch in (("moving_mean", mean), ("moving_variance", var_b)):
        v = var[key]
        delta = e.op("Mul", [e.op("Sub", [v.read, batch], name=f"{key}/sub"), decay], name=f"{key}/mul")
        upd = e.op("AssignSubVariableOp", [v.handle, delta], {"dtype": dt}, name="AssignMovingAvg")
        e.b.add_to_collection("update_ops", upd)
    return y


def _bcast(e: Emitter, t: str, axis: int, rank: int, name: str) -> str:
    """A [channels] tensor reshaped to broadcast against the input along ``axis``."""
    if axis == rank - 1:
        return t
    shape = [1] * rank
    shape[axis] = -1
    s = e.const(np.array(shape, np.int32), dtypes.int32, f"{name}/shape")
    return e.op("Reshape", [t, s], name=name)


def _axes(e: Emitter, cfg_axis, rank: int, what: str) -> list[int]:
    try:
        return sorted({normalize_axis(a, rank) for a in (cfg_axis if isinstance(cfg_axis, list) else [cfg_axis])})
    except ValueError as err:
        raise SpecError(f"{what}: {err}", node=e.ctx.name) from None


def _normalize(e: Emitter, x: str, axes: str, eps: float) -> tuple[str, str]:
    """(mean, rsqrt(variance + eps)) over ``axes`` (kept, so they broadcast against ``x``)."""
    mean = e.op("Mean", [x, axes], {"keep_dims": True}, name="moments/mean")
    var = e.op("Mean", [e.op("SquaredDifference", [x, mean], name="moments/SquaredDifference"), axes],
               {"keep_dims": True}, name="moments/variance")  # fmt: skip
    inv = e.op("Rsqrt", [e.op("AddV2", [var, e.scalar(eps, x, "epsilon")], name="add")])
    return mean, inv


def _affine(e: Emitter, y: str, gamma, beta, final: bool) -> str:
    if gamma is not None:
        y = e.op("Mul", [y, gamma], name="mul_gamma", final=final and beta is None)
    if beta is not None:
        y = e.op("AddV2", [y, beta], name="add_beta", final=final)
    return y


def layer_norm(e: Emitter, x: str, cfg) -> str:
    """Keras LayerNormalization: per sample, moments over ``axis``; gamma and beta shaped like
    those axes."""
    shape, dt = e.shape(x), e.dtype(x)
    if shape.rank is None:
        raise SpecError("layer_norm needs an input of known rank", node=e.ctx.name)
    axes = _axes(e, cfg.axis, shape.rank, "layer_norm")
    if any(shape.dims[a] is None for a in axes):
        raise SpecError(f"layer_norm needs the normalized axes {axes} known, got shape {shape}", node=e.ctx.name)
    param = [int(shape.dims[a]) for a in axes]
    bshape = [int(shape.dims[i]) if i in axes else 1 for i in range(shape.rank)]
    params = {}
    for key, init, wanted in (("gamma", "ones", cfg.scale), ("beta", "zeros", cfg.center)):
        if wanted:
            v = create_variable(e.b, key, param, dt, init, True, e.ctx.graph_seed).read
            if axes != list(range(axes[0], shape.rank)):  # not trailing: reshape to broadcast
                v = e.op("Reshape", [v, e.i32(bshape, f"{key}_b/shape")], name=f"{key}_b")
            params[key] = v
    mean, inv = _normalize(e, x, e.i32(axes, "moments/axes"), cfg.epsilon)
    y = e.op("Mul", [e.op("Sub", [x, mean]), inv], final=not params)
    return _affine(e, y, params.get("gamma"), params.get("beta"), final=True) if params else y


def group_norm(e: Emitter, x: str, cfg) -> str:
    """Keras GroupNormalization: the channels on ``axis`` (default the last) split into
    ``groups``; moments per sample and group over every other axis and the group's channels;
    gamma, beta per channel."""
    shape, dt = e.shape(x), e.dtype(x)
    name = e.ctx.name
    if shape.rank is None or shape.rank < 2:
        raise SpecError(f"group_norm needs an input of rank >= 2, got shape {shape}", node=name)
    rank = shape.rank
    if not -rank <= cfg.axis < rank or cfg.axis % rank == 0:
        raise SpecError(f"group_norm: axis {cfg.axis} is not a channel axis of a rank-{rank} input "
                        f"(axis 0 is the batch)", node=name)
    a = cfg.axis % rank
    channels = shape.dims[a]
    if channels is None:
        raise SpecError(f"group_norm needs the channel dimension (axis {cfg.axis}) known, got shape {shape}", node=name)
    if channels % cfg.groups:
        raise SpecError(f"group_norm: {channels} channels do not split into {cfg.groups} groups", node=name)
    params = {
        key: create_variable(e.b, key, [channels], dt, init, True, e.ctx.graph_seed).read
        for key, init, wanted in (("gamma", "ones", cfg.scale), ("beta", "zeros", cfg.center)) if wanted
    }
    split = [cfg.groups, channels // cfg.groups]
    if a == rank - 1:
        grouped_shape = e.lead_shape(x, rank - 1, split, "grouped_shape")
        input_shape = e.lead_shape(x, rank - 1, [channels], "input_shape")
    else:  # channels first (or in the middle): the dims after the channels follow the split
        grouped_shape = e.concat([e.dims(x, 0, a, "grouped_shape/lead"), e.i32(split, "grouped_shape/split"),
                                  e.dims(x, a + 1, None, "grouped_shape/tail")], 0, "grouped_shape")  # fmt: skip
        input_shape = e.op("Shape", [x], {"out_type": dtypes.int32}, name="input_shape")
        per_channel = e.i32([channels] + [1] * (rank - 1 - a), "per_channel_shape")
        params = {k: e.op("Reshape", [v, per_channel], name=f"{k}_per_channel") for k, v in params.items()}
    grouped = e.op("Reshape", [x, grouped_shape], name="grouped")
    axes = [i for i in range(1, rank + 1) if i != a]  # all but batch and group
    mean, inv = _normalize(e, grouped, e.i32(axes, "moments/axes"), cfg.epsilon)
    y = e.op("Mul", [e.op("Sub", [grouped, mean]), inv])
    y = e.op("Reshape", [y, input_shape], name="ungrouped", final=not params)
    return _affine(e, y, params.get("gamma"), params.get("beta"), final=True) if params else y


def normalization(e: Emitter, x: str, cfg) -> str:
    """Keras's Normalization given mean and variance: constants, no variables (as Keras holds them)."""
    shape, dt = e.shape(x), e.dtype(x)
    if not dt.is_floating:
        raise SpecError(f"normalization needs a float input, got {dt.name}", node=e.ctx.name)
    mean, std = np.asarray(cfg.mean, np.float64), np.sqrt(np.asarray(cfg.variance, np.float64))
    if mean.ndim:
        if shape.rank is None:
            raise SpecError("normalization with a mean per feature needs an input of known rank", node=e.ctx.name)
        try:
            axis = normalize_axis(cfg.axis, shape.rank)
        except ValueError as err:
            raise SpecError(f"normalization: {err}", node=e.ctx.name) from None
        if shape.dims[axis] not in (None, len(mean)):
            raise SpecError(f"normalization: {len(mean)} means for axis {cfg.axis} of size {shape.dims[axis]} "
                            f"(input shape {shape})", node=e.ctx.name)
        bshape = [1] * shape.rank
        bshape[axis] = len(mean)
        mean, std = mean.reshape(bshape), std.reshape(bshape)
    np_dt = dt.numpy
    # Keras computes max(sqrt(variance), epsilon) in the input's dtype.
    scale = np.maximum(np.sqrt(np.asarray(cfg.variance, np_dt)).reshape(std.shape), np.asarray(1e-7, np_dt))
    mean_c = e.const(mean.astype(np_dt), dt, name="mean")
    scale_c = e.const(scale, dt, name="scale")
    if cfg.invert:
        return e.op("AddV2", [mean_c, e.op("Mul", [x, scale_c])], final=True)
    return e.op("RealDiv", [e.op("Sub", [x, mean_c]), scale_c], final=True)
