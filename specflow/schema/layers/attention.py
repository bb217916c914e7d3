"""Keras MultiHeadAttention.

Weights as Keras lays them out (so Keras weights load unchanged): ``query/kernel`` [dim, heads,
key_dim] and ``query/bias`` [heads, key_dim], the same for ``key`` and ``value`` (value_dim),
``attention_output/kernel`` [heads, value_dim, out] and its bias [out]. The math::

    q, k, v = projections, each [batch, heads, steps, depth]
    scores  = (q / sqrt(key_dim)) k^T + (1 - mask) * -1e9      [batch, heads, T, S]
    probs   = dropout(softmax(scores) * mask)     (a fully masked row: zeros, as Keras 3)
    out     = (probs v) merged over heads, projected to the query's width

With ``return_attention_scores`` the layer has two outputs, ``NAME`` and ``NAME:1`` (the
softmax before dropout), as Keras's ``return_attention_scores=True`` returns them.
"""

from __future__ import annotations

import math

from specflow.errors import SpecError
from specflow.graph import dtypes
from specflow.schema.layers.common import Emitter
from specflow.schema.layers.core import apply_dropout
from specflow.schema.layers.variables import create_variable

_LARGE_NEGATIVE = -1e9  # Keras's masked-softmax adder for float32


def _width(e: Emitter, x: str, role: str) -> int:
    shape = e.shape(x)
    if shape.rank != 3 or shape.dims[2] is None:
        raise SpecError(f"multi_head_attention: {role} must be [batch, steps, features] with features known, "
                        f"got shape {shape}", node=e.ctx.name)
    return int(shape.dims[2])


def _project(e: Emitter, x: str, scope: str, heads: int, depth: int, cfg) -> str:
    """x [B, T, dim] -> [B, heads, T, depth] through kernel [dim, heads, depth] (+ bias)."""
    dim, dt, seed = _width(e, x, scope), e.dtype(x), e.ctx.graph_seed
    with e.b.name_scope(scope):
        kernel = create_variable(e.b, "kernel", [dim, heads, depth], dt, cfg.kernel_initializer, True, seed)
        bias = create_variable(e.b, "bias", [heads, depth], dt, cfg.bias_initializer, True, seed) if cfg.use_bias \
            else None
        flat = e.op("Reshape", [x, e.i32([-1, dim], "flat/shape")], name="flat")
        w = e.op("Reshape", [kernel.read, e.i32([dim, heads * depth], "kernel2d/shape")], name="kernel2d")
        y = e.op("MatMul", [flat, w])
        if bias is not None:
            y = e.op("BiasAdd", [y, e.op("Reshape", [bias.read, e.i32([heads * depth], "bias1d/shape")],
                                         name="bias1d")])  # fmt: skip
        y = e.op("Reshape", [y, e.lead_shape(x, 2, [heads, depth], "split/shape")], name="split")
        return e.op("Transpose", [y, e.i32([0, 2, 1, 3], "perm")], name="heads")


def _mask_float(e: Emitter, mask: str, dt, name: str) -> str:
    """1.0 where the mask is true, else 0.0; a numeric mask is true where nonzero (Keras casts
    masks to bool, so token ids mask their padding rather than scaling the scores)."""
    if not e.dtype(mask).is_bool:
        mask = e.op("NotEqual", [mask, e.scalar(0, mask, f"{name}/zero")], name=f"{name}/nonzero")
    return e.op("Cast", [mask], {"DstT": dt}, name=f"{name}/Cast")


def _mask_adder(e: Emitter, scores: str, mask: str | None, causal: bool,
                query_mask: str | None = None) -> tuple[str, str] | None:
    """``((1 - allowed) * -1e9, allowed)``, both broadcasting against scores [B, H, T, S], or None."""
    dt = e.dtype(scores)
    allowed = None
    if mask is not None:
        shape = e.shape(mask)
        if shape.rank not in (2, 3):
            raise SpecError(f"multi_head_attention: mask must be [batch, S] (key padding) or [batch, T, S], "
                            f"got shape {shape}", node=e.ctx.name)
        m = _mask_float(e, mask, dt, "mask")
        dims = e.dims(m, 1, None, "mask/dims")
        to = e.concat([e.i32([-1, 1] if shape.rank == 3 else [-1, 1, 1], "mask/lead"), dims], 0, "mask/shape")
        allowed = e.op("Reshape", [m, to], name="mask/broadcast")
    if causal:
        t = e.op("StridedSlice", [e.op("Shape", [scores], {"out_type": dtypes.int32}, name="causal/Shape"),
                                  e.i32([2], "causal/begin"), e.i32([4], "causal/end"), e.i32([1], "causal/strides")],
                 name="causal/TS")  # fmt: skip
        rows_n, cols_n = (e.op("StridedSlice", [t, e.i32([i], f"causal/b{i}"), e.i32([i + 1], f"causal/e{i}"),
                                                e.i32([1], f"causal/s{i}")], {"shrink_axis_mask": 1},
                               name=f"causal/n{i}") for i in (0, 1))  # fmt: skip
        zero, one = e.i32(0, "causal/zero"), e.i32(1, "causal/one")
        rows = e.op("ExpandDims", [e.op("Range", [zero, rows_n, one], name="causal/rows"), e.i32(1, "causal/ax1")],
                    name="causal/rows_col")  # fmt: skip
        cols = e.op("Range", [zero, cols_n, one], name="causal/cols")
        tri = e.op("Cast", [e.op("GreaterEqual", [rows, cols], name="causal/ge")], {"DstT": dt}, name="causal/Cast")
        allowed = tri if allowed is None else e.op("Mul", [allowed, tri], name="mask/and_causal")
    if query_mask is not None:
        shape = e.shape(query_mask)
        if shape.rank != 2:
            raise SpecError(f"multi_head_attention: query_mask must be [batch, T], got shape {shape}",
                            node=e.ctx.name)
        qm = _mask_float(e, query_mask, dt, "query_mask")
        to = e.concat([e.i32([-1, 1], "query_mask/lead"), e.dims(qm, 1, None, "query_mask/dims"),
                       e.i32([1], "query_mask/tail")], 0, "query_mask/shape")
        rows = e.op("Reshape", [qm, to], name="query_mask/broadcast")  # [B, 1, T, 1]
        allowed = rows if allowed is None else e.op("Mul", [allowed, rows], name="mask/and_query")
    if allowed is None:
        return None
    blocked = e.op("Sub", [e.scalar(1.0, scores, "mask/one"), allowed], name="mask/blocked")
    return e.op("Mul", [blocked, e.scalar(_LARGE_NEGATIVE, scores, "mask/large_negative")], name="mask/adder"), allowed


def multi_head_attention(e: Emitter, inputs: dict[str, str], cfg) -> str:
    query = inputs["query"]
    value = inputs.get("value", query)
    key = inputs.get("key", value)
    heads, kd = cfg.num_heads, cfg.key_dim
    vd = cfg.value_dim or kd
    out_dim = cfg.output_dim or _width(e, query, "query")
    q = _project(e, query, "query", heads, kd, cfg)
    k = _project(e, key, "key", heads, kd, cfg)
    v = _project(e, value, "value", heads, vd, cfg)
    q = e.op("Mul", [q, e.scalar(1.0 / math.sqrt(kd), q, "scale")], name="scaled_query")
    scores = e.op("BatchMatMulV2", [q, k], {"adj_y": True}, name="scores")
    masking = _mask_adder(e, scores, inputs.get("mask"), cfg.causal, inputs.get("query_mask"))
    if masking is None:
        weights = e.op("Softmax", [scores], name="attention_scores")
    else:
        adder, allowed = masking
        scores = e.op("AddV2", [scores, adder], name="masked_scores")
        # Keras's masked softmax zeroes the masked positions afterwards, so a query row with
        # every key masked (a padded query, a left-padded causal row) attends to nothing
        # instead of uniformly to everything.
        weights = e.op("Mul", [e.op("Softmax", [scores], name="softmax"), allowed], name="attention_scores")
    probs = weights
    if cfg.dropout > 0:
        probs = apply_dropout(e, probs, cfg.dropout, cfg.seed, scope="dropout/")
    ctx = e.op("BatchMatMulV2", [probs, v], name="context")
    ctx = e.op("Transpose", [ctx, e.i32([0, 2, 1, 3], "context/perm")], name="context/merge")
    dt, seed = e.dtype(query), e.ctx.graph_seed
    with e.b.name_scope("attention_output"):
        kernel = create_variable(e.b, "kernel", [heads, vd, out_dim], dt, cfg.kernel_initializer, True, seed)
        bias = create_variable(e.b, "bias", [out_dim], dt, cfg.bias_initializer, True, seed) if cfg.use_bias else None
        flat = e.op("Reshape", [ctx, e.i32([-1, heads * vd], "flat/shape")], name="flat")
        w = e.op("Reshape", [kernel.read, e.i32([heads * vd, out_dim], "kernel2d/shape")], name="kernel2d")
        y = e.op("MatMul", [flat, w])
        if bias is not None:
            y = e.op("BiasAdd", [y, bias.read])
        shape = e.lead_shape(query, 2, [out_dim], "shape")
    out = e.op("Reshape", [y, shape], final=not cfg.return_attention_scores)
    if not cfg.return_attention_scores:
        return out
    # Keras returns the scores before dropout; output 0 is the layer's result, output 1 the scores.
    return [e.op("Identity", [out], final=True), weights]


