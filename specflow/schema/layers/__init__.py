"""Layers: spec nodes `{layer: NAME, ...}` that expand into variables and ops.

``LAYERS`` maps each layer name to its config class (the schema validates a node's extra keys
against it); :func:`expand_layer` adds the layer's ops under its name scope. The layer's last op
is named exactly as the node, so ``hidden`` is the output and ``hidden/kernel`` its kernel.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel

from specflow.errors import SpecError, SpecflowError, did_you_mean
from specflow.schema.layers import configs, recurrent
from specflow.schema.layers.attention import multi_head_attention
from specflow.schema.layers.common import (  # noqa: F401  (re-exported)
    ACTIVATION_OPS,
    TRAINING_FLAG,
    Emitter,
    LayerContext,
    ensure_training_flag,
)
from specflow.schema.layers.conv import (
    avg_pool1d,
    avg_pool2d,
    conv1d,
    conv2d,
    conv2d_transpose,
    depthwise_conv2d,
    max_pool1d,
    max_pool2d,
    separable_conv2d,
)
from specflow.schema.layers.core import (
    activation,
    dense,
    dropout,
    embedding,
    flatten,
    gelu_layer,
    named_activation,
)
from specflow.schema.layers.norm import batch_norm, group_norm, layer_norm, normalization
from specflow.schema.layers.shaping import (
    concat,
    global_avg_pool,
    global_pool,
    merge,
    upsampling2d,
    zero_padding,
)
from specflow.schema.layers.variables import VariableInfo, create_variable  # noqa: F401

LAYERS: dict[str, type[BaseModel]] = {
    "dense": configs.DenseConfig,
    "conv2d": configs.Conv2DConfig,
    "conv1d": configs.Conv1DConfig,
    "conv2d_transpose": configs.Conv2DTransposeConfig,
    "depthwise_conv2d": configs.DepthwiseConv2DConfig,
    "separable_conv2d": configs.SeparableConv2DConfig,
    "max_pool2d": configs.MaxPool2DConfig,
    "avg_pool2d": configs.AvgPool2DConfig,
    "max_pool1d": configs.MaxPool1DConfig,
    "avg_pool1d": configs.AvgPool1DConfig,
    "global_avg_pool": configs.GlobalAvgPoolConfig,
    "global_max_pool": configs.GlobalMaxPoolConfig,
    "zero_padding": configs.ZeroPaddingConfig,
    "upsampling2d": configs.UpSampling2DConfig,
    "flatten": configs.FlattenConfig,
    "dropout": configs.DropoutConfig,
    "batch_norm": configs.BatchNormConfig,
    "layer_norm": configs.LayerNormConfig,
    "group_norm": configs.GroupNormConfig,
    "normalization": configs.NormalizationConfig,
    "embedding": configs.EmbeddingConfig,
    "activation": configs.ActivationConfig,
    "gelu": configs.GeluConfig,
    "silu": configs.SiluConfig,
    "swish": configs.SwishConfig,
    "softplus": configs.SoftplusConfig,
    "hard_sigmoid": configs.HardSigmoidConfig,
    "multi_head_attention": configs.MultiHeadAttentionConfig,
    "add": configs.AddConfig,
    "multiply": configs.MultiplyConfig,
    "concat": configs.ConcatConfig,
    "lstm": configs.LSTMConfig,
    "gru": configs.GRUConfig,
    "simple_rnn": configs.SimpleRNNConfig,
    "bidirectional": configs.BidirectionalConfig,
}

_EXPANDERS: dict[str, Callable] = {
    "dense": dense,
    "conv2d": conv2d,
    "conv1d": conv1d,
    "conv2d_transpose": conv2d_transpose,
    "depthwise_conv2d": depthwise_conv2d,
    "separable_conv2d": separable_conv2d,
    "max_pool2d": max_pool2d,
    "avg_pool2d": avg_pool2d,
    "max_pool1d": max_pool1d,
    "avg_pool1d": avg_pool1d,
    "global_avg_pool": global_avg_pool,
    "global_max_pool": global_pool("Max"),
    "zero_padding": zero_padding,
    "upsampling2d": upsampling2d,
    "flatten": flatten,
    "dropout": dropout,
    "batch_norm": batch_norm,
    "layer_norm": layer_norm,
    "group_norm": group_norm,
    "normalization": normalization,
    "embedding": embedding,
    "activation": activation,
    "gelu": gelu_layer,
    "silu": named_activation("silu"),
    "swish": named_activation("swish"),
    "softplus": named_activation("softplus"),
    "hard_sigmoid": named_activation("hard_sigmoid"),
    "multi_head_attention": multi_head_attention,
    "add": merge("AddV2"),
    "multiply": merge("Mul"),
    "concat": concat,
    "lstm": recurrent.lstm,
    "gru": recurrent.gru,
    "simple_rnn": recurrent.simple_rnn,
    "bidirectional": recurrent.bidirectional,
}

# A layer's inputs by name: (required, optional), in positional order. "*" is any number >= 2
# (merges). Layers not listed take one input.
_RNN_INPUTS = (("sequence",), ("mask", "initial_h"))
LAYER_INPUTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]] | str] = {
    # query_mask: Keras's mask on the query (an embedding's, propagated): padded query rows attend to nothing.
    "multi_head_attention": (("query",), ("value", "key", "mask", "query_mask")),
    "lstm": (("sequence",), ("mask", "initial_h", "initial_c")),
    "gru": _RNN_INPUTS,
    "simple_rnn": _RNN_INPUTS,
    # Keras's initial_state [h_f, (c_f,) h_b, (c_b)] by role; the c roles are lstm's only.
    "bidirectional": (("sequence",), ("mask", "forward_initial_h", "forward_initial_c", "backward_initial_h",
                                      "backward_initial_c")),
    "global_avg_pool": (("x",), ("mask",)),  # Keras's GlobalAveragePooling1D's mask
    "add": "*",
    "multiply": "*",
    "concat": "*",
}


def layer_kind(config: BaseModel) -> str:
    """The layer name of a config instance (the first kind whose config class it is)."""
    for kind, cls in LAYERS.items():
        if type(config) is cls:
            return kind
    raise SpecError(f"unknown layer config {type(config).__name__}")


def bind_inputs(kind: str, inputs: list[str] | dict[str, str], node: str) -> list[str] | dict[str, str]:
    """A layer's inputs checked against what it takes: a list for single-input and merge layers,
    else a mapping role -> tensor. ``inputs`` is positional (a list) or by role (a mapping)."""
    roles = LAYER_INPUTS.get(kind, (("x",), ()))
    if roles == "*":
        if isinstance(inputs, dict) or len(inputs) < 2:
            raise SpecError(f"layer {kind} takes a list of 2 or more inputs, got {_show(inputs)}", node=node)
        return list(inputs)
    required, optional = roles
    names = required + optional
    if isinstance(inputs, dict):
        unknown = [k for k in inputs if k not in names]
        if unknown:
            raise SpecError(f"layer {kind} has no input '{unknown[0]}'" + did_you_mean(unknown[0], names)
                            + f"; it takes {_signature(required, optional)}", node=node)
        bound = dict(inputs)
    else:
        if len(inputs) > len(names):
            raise SpecError(f"layer {kind} takes {_signature(required, optional)}, got {len(inputs)} inputs",
                            node=node)
        bound = dict(zip(names, inputs, strict=False))
    missing = [r for r in required if r not in bound]
    if missing:
        raise SpecError(f"layer {kind} is missing input '{missing[0]}'; it takes {_signature(required, optional)}",
                        node=node)
    return bound if kind in LAYER_INPUTS else [bound["x"]]


def _signature(required, optional) -> str:
    return "(" + ", ".join([*required, *(f"{o}?" for o in optional)]) + ")"


def _show(inputs) -> str:
    return f"a mapping {list(inputs)}" if isinstance(inputs, dict) else f"{len(inputs)}"


def expand_layer(
    builder,
    name: str,
    inputs: list[str] | dict[str, str],
    config: BaseModel | dict,
    ctx: LayerContext | None = None,
    kind: str | None = None,
) -> str | list[str]:
    """Expand layer ``name`` (relative to the builder's scope) on ``inputs``; return its output
    (a list for a layer with several outputs: an RNN's ``return_state``, embedding's mask).

    ``config`` is a config instance from ``LAYERS``, or a raw dict (validated here) with
    ``kind`` naming the layer.
    """
    kind = kind or layer_kind(config)
    if kind not in LAYERS:
        raise SpecError(f"unknown layer '{kind}'" + did_you_mean(kind, LAYERS), node=name)
    if isinstance(config, dict):
        config = LAYERS[kind].model_validate(config)
    full = builder.scoped(name)
    if ctx is None:
        ctx = LayerContext(name=full)
    elif ctx.name != full:
        ctx = LayerContext(name=full, graph_seed=ctx.graph_seed, training=ctx.training)
    bound = bind_inputs(kind, inputs, full)
    try:
        with builder.name_scope(name):
            arg = bound[0] if kind not in LAYER_INPUTS else bound
            return _EXPANDERS[kind](Emitter(builder, ctx), arg, config)
    except SpecflowError as e:
        e.node = e.node or full
        raise
