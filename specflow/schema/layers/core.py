"""Core layers: dense, activation, flatten, dropout, embedding."""

from __future__ import annotations

import numpy as np

from specflow.errors import SpecError
from specflow.graph import dtypes
from specflow.schema.initializers import derive_seed, random_seed_attrs
from specflow.schema.layers.common import Emitter, is_linear, static_dims
from specflow.schema.layers.partitioned import (
    PartitionerConfig,
    create_partitioned_variable,
    embedding_lookup,
    num_partitions,
)
from specflow.schema.layers.variables import create_variable


def dense(e: Emitter, x: str, cfg) -> str:
    """MatMul(x, kernel) (+ BiasAdd) (+ activation); rank > 2 inputs are flattened to 2-D
    for the MatMul and reshaped back (all dims but the first must be known)."""
    shape, dt = e.shape(x), e.dtype(x)
    if shape.rank is not None and shape.rank < 2:
        raise SpecError(f"dense needs an input of rank >= 2, got shape {shape}", node=e.ctx.name)
    dims = static_dims(shape, "dense", e.ctx.name)
    in_dim = dims[-1]
    kernel = create_variable(e.b, "kernel", [in_dim, cfg.units], dt, cfg.kernel_initializer, True, e.ctx.graph_seed)
    kernel.constraint = cfg.kernel_constraint
    bias = None
    if cfg.use_bias:
        bias = create_variable(e.b, "bias", [cfg.units], dt, cfg.bias_initializer, True, e.ctx.graph_seed)
        bias.constraint = cfg.bias_constraint
    linear = is_linear(cfg.activation)
    lead = dims[:-1]  # batch dims after the first, for rank > 2
    if lead:
        flat = e.const(np.array([-1, in_dim], np.int32), dtypes.int32, name="Reshape/shape")
        x = e.op("Reshape", [x, flat])
    y = e.op("MatMul", [x, kernel.read], final=not lead and bias is None and linear)
    if lead:
        back = e.const(np.array([-1, *lead, cfg.units], np.int32), dtypes.int32, name="Reshape_1/shape")
        y = e.op("Reshape", [y, back], name="Reshape_1", final=bias is None and linear)
    if bias is not None:
        y = e.op("BiasAdd", [y, bias.read], final=linear)
    return y if linear else e.activation(y, cfg.activation)


def activation(e: Emitter, x: str, cfg) -> str:
    if is_linear(cfg.activation):
        return e.op("Identity", [x], final=True)
    return e.activation(x, cfg.activation)


def gelu_layer(e: Emitter, x: str, cfg) -> str:
    return e.activation(x, "gelu_tanh" if cfg.approximate else "gelu")


def named_activation(name: str):
    """A layer that is just activation ``name`` (``{layer: silu}``)."""

    def layer(e: Emitter, x: str, cfg) -> str:
        return e.activation(x, name)

    layer.__doc__ = f"The {name} activation as a layer."
    return layer


def flatten(e: Emitter, x: str, cfg) -> str:
    """Reshape to [-1, prod(rest)]; the non-batch dims must be known."""
    rest = static_dims(e.shape(x), "flatten", e.ctx.name)
    shape = e.const(np.array([-1, int(np.prod(rest, dtype=np.int64))], np.int32), dtypes.int32, name="shape")
    return e.op("Reshape", [x, shape], final=True)


def dropout(e: Emitter, x: str, cfg) -> str:
    """SelectV2(training, x * mask / keep, x) with mask = RandomUniform(shape(x)) >= rate."""
    if cfg.rate == 0.0:
        return e.op("Identity", [x], final=True)
    return apply_dropout(e, x, cfg.rate, cfg.seed, final=True)


def apply_dropout(e: Emitter, x: str, rate: float, seed: int | None, final: bool = False, scope: str = "") -> str:
    """Dropout of ``x`` in training mode (the ``training`` flag), identity otherwise; ops under
    ``scope`` (a prefix such as ``"dropout/"``)."""
    training = e.ctx.training_flag(e.b)
    dt = e.dtype(x)
    if seed is None and e.ctx.graph_seed is not None:
        seed = derive_seed(e.ctx.name + ("/" + scope if scope else ""))
    shape = e.op("Shape", [x], {"out_type": dtypes.int32}, name=f"{scope}Shape")
    rnd = e.op("RandomUniform", [shape], {"dtype": dt, **random_seed_attrs(seed, e.ctx.graph_seed)},
               name=f"{scope}RandomUniform")  # fmt: skip
    keep = e.op("GreaterEqual", [rnd, e.scalar(rate, x, f"{scope}rate")], name=f"{scope}GreaterEqual")
    mask = e.op("Cast", [keep], {"DstT": dt}, name=f"{scope}Cast")
    scaled = e.op("Mul", [x, e.scalar(1.0 / (1.0 - rate), x, f"{scope}scale")], name=f"{scope}Mul")
    dropped = e.op("Mul", [scaled, mask], name=f"{scope}mul_1")
    return e.op("SelectV2", [training, dropped, x], name=f"{scope}SelectV2", final=final)


def embedding(e: Emitter, ids: str, cfg) -> str | list[str]:
    """ResourceGather(embeddings, ids): ids of any integer type (others cast to int32).
    With ``mask_zero`` a second output ``<name>:1`` is the bool mask ids != 0 (Keras's
    mask_zero, made explicit: pass it as an RNN's or attention's ``mask`` input)."""
    dt = e.dtype(ids)
    raw = ids
    if dt not in (dtypes.int32, dtypes.int64):
        if not (dt.is_integer or dt.is_floating):
            raise SpecError(f"embedding needs integer ids, got {dt.name}", node=e.ctx.name)
        ids = e.op("Cast", [ids], {"DstT": dtypes.int32})
    shape = [cfg.input_dim, cfg.output_dim]
    if cfg.partitions is not None or cfg.partitioner is not None:
        n = num_partitions(cfg.partitioner or PartitionerConfig(fixed=cfg.partitions), shape, dtypes.float32)
        table = create_partitioned_variable(e.b, "embeddings", shape, dtypes.float32, cfg.embeddings_initializer,
                                            True, e.ctx.graph_seed, n)  # fmt: skip
        out = embedding_lookup(e, table, ids, cfg.partition_strategy)
    else:
        table = create_variable(
            e.b, "embeddings", shape, dtypes.float32, cfg.embeddings_initializer, True, e.ctx.graph_seed,
        )  # fmt: skip
        table.constraint = cfg.embeddings_constraint
        out = e.op("ResourceGather", [table.handle, ids], {"dtype": dtypes.float32}, final=True)
    if not cfg.mask_zero:
        return out
    zero = e.const(np.zeros((), e.dtype(raw).numpy), e.dtype(raw), name="mask/zero")
    return [out, e.op("NotEqual", [raw, zero], name="mask")]
