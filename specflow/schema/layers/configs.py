"""Layer configs: the keys a `{layer: NAME, ...}` node accepts, validated by pydantic."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from specflow.schema.initializers import InitializerSpec
from specflow.schema.layers.common import Activation
from specflow.schema.layers.constraints import Constraint
from specflow.schema.layers.partitioned import PartitionerConfig

IntPair = int | list[int]


class LayerConfig(BaseModel):
    # validate_default parses the default initializer strings into Initializer objects.
    model_config = ConfigDict(extra="forbid", validate_default=True)


def _check_pair(v: IntPair, what: str) -> IntPair:
    vals = [v] if isinstance(v, int) else v
    if isinstance(v, list) and len(v) != 2:
        raise ValueError(f"{what} must be an int or a list of 2 ints, got {v}")
    if any(x < 1 for x in vals):
        raise ValueError(f"{what} must be >= 1, got {v}")
    return v


class DenseConfig(LayerConfig):
    units: int = Field(ge=1)
    activation: Activation | None = None
    use_bias: bool = True
    kernel_initializer: InitializerSpec = "glorot_uniform"
    bias_initializer: InitializerSpec = "zeros"
    kernel_constraint: Constraint = None  # Keras's, after each update
    bias_constraint: Constraint = None


class Conv2DConfig(LayerConfig):
    filters: int = Field(ge=1)
    kernel_size: IntPair
    strides: IntPair = 1
    padding: Literal["valid", "same"] = "valid"
    dilation_rate: IntPair = 1
    activation: Activation | None = None
    use_bias: bool = True
    kernel_initializer: InitializerSpec = "glorot_uniform"
    bias_initializer: InitializerSpec = "zeros"
    kernel_constraint: Constraint = None  # Keras's, after each update
    bias_constraint: Constraint = None

    @field_validator("kernel_size", "strides", "dilation_rate")
    @classmethod
    def _pairs(cls, v, info):
        return _check_pair(v, info.field_name)


class Pool2DConfig(LayerConfig):
    pool_size: IntPair = 2
    strides: IntPair | None = None  # defaults to pool_size
    padding: Literal["valid", "same"] = "valid"

    @field_validator("pool_size", "strides")
    @classmethod
    def _pairs(cls, v, info):
        return v if v is None else _check_pair(v, info.field_name)


class MaxPool2DConfig(Pool2DConfig):
    pass


class AvgPool2DConfig(Pool2DConfig):
    pass


class Pool1DConfig(LayerConfig):
    """Keras MaxPooling1D / AveragePooling1D over [batch, steps, channels]."""

    pool_size: int = Field(2, ge=1)
    strides: int | None = Field(None, ge=1)  # defaults to pool_size
    padding: Literal["valid", "same"] = "valid"


class MaxPool1DConfig(Pool1DConfig):
    pass


class AvgPool1DConfig(Pool1DConfig):
    pass


class FlattenConfig(LayerConfig):
    pass


class DropoutConfig(LayerConfig):
    rate: float = Field(ge=0.0, lt=1.0)
    seed: int | None = None


class BatchNormConfig(LayerConfig):
    axis: int = -1
    momentum: float = Field(0.99, ge=0.0, le=1.0)
    epsilon: float = Field(1e-3, gt=0.0)
    center: bool = True
    scale: bool = True


class EmbeddingConfig(LayerConfig):
    input_dim: int = Field(ge=1)
    output_dim: int = Field(ge=1)
    mask_zero: bool = False  # a second output: the mask ids != 0 (bool), for an RNN's mask input
    embeddings_initializer: InitializerSpec = {"random_uniform": {"minval": -0.05, "maxval": 0.05}}
    # A table split along axis 0 (layers/partitioned.py): `partitions: N` or a `partitioner:`.
    partitions: int | None = Field(None, ge=1)
    partitioner: PartitionerConfig | None = None
    partition_strategy: Literal["div", "mod"] = "div"
    embeddings_constraint: Constraint = None  # Keras's, after each update; not with partitions

    @model_validator(mode="after")
    def _one_partitioning(self):
        if self.embeddings_constraint is not None and (self.partitions is not None or self.partitioner is not None):
            raise ValueError("embeddings_constraint applies to a table held whole: drop partitions/partitioner")
        if self.partitions is not None and self.partitioner is not None:
            raise ValueError("give partitions or partitioner, not both")
        return self


class ActivationConfig(LayerConfig):
    activation: Activation | None


def _check_n(v: int | list[int], n: int, what: str) -> int | list[int]:
    vals = [v] if isinstance(v, int) else v
    if isinstance(v, list) and len(v) != n:
        raise ValueError(f"{what} must be an int or a list of {n} ints, got {v}")
    if any(x < 1 for x in vals):
        raise ValueError(f"{what} must be >= 1, got {v}")
    return v


class Conv1DConfig(LayerConfig):
    """1-D convolution over [batch, steps, channels] (Keras Conv1D; kernel [k, in, filters])."""

    filters: int = Field(ge=1)
    kernel_size: int = Field(ge=1)
    strides: int = Field(1, ge=1)
    padding: Literal["valid", "same", "causal"] = "valid"
    dilation_rate: int = Field(1, ge=1)
    activation: Activation | None = None
    use_bias: bool = True
    kernel_initializer: InitializerSpec = "glorot_uniform"
    bias_initializer: InitializerSpec = "zeros"
    kernel_constraint: Constraint = None  # Keras's, after each update
    bias_constraint: Constraint = None


class Conv2DTransposeConfig(LayerConfig):
    """Transposed 2-D convolution on NHWC (Keras Conv2DTranspose; kernel [kh, kw, filters, in])."""

    filters: int = Field(ge=1)
    kernel_size: IntPair
    strides: IntPair = 1
    padding: Literal["valid", "same"] = "valid"
    activation: Activation | None = None
    use_bias: bool = True
    kernel_initializer: InitializerSpec = "glorot_uniform"
    bias_initializer: InitializerSpec = "zeros"

    @field_validator("kernel_size", "strides")
    @classmethod
    def _pairs(cls, v, info):
        return _check_pair(v, info.field_name)


class GlobalAvgPoolConfig(LayerConfig):
    """Mean over every axis between the batch and the channels (NHWC, or [batch, steps, channels])."""

    keepdims: bool = False


class GlobalMaxPoolConfig(GlobalAvgPoolConfig):
    """Max over every axis between the batch and the channels."""


class ZeroPaddingConfig(LayerConfig):
    """Zeros around the spatial axes: ``padding`` is an int, one int per spatial axis, or
    [before, after] pairs per spatial axis (Keras ZeroPadding1D/2D)."""

    padding: int | list[int] | list[list[int]] = 1

    @field_validator("padding")
    @classmethod
    def _non_negative(cls, v):
        flat = [v] if isinstance(v, int) else [x for p in v for x in (p if isinstance(p, list) else [p])]
        if any(x < 0 for x in flat):
            raise ValueError(f"padding must be >= 0, got {v}")
        if isinstance(v, list) and any(isinstance(p, list) and len(p) != 2 for p in v):
            raise ValueError(f"padding pairs are [before, after], got {v}")
        return v


class UpSampling2DConfig(LayerConfig):
    """Nearest-neighbour upsampling of NHWC by ``size`` (rows, cols)."""

    size: IntPair = 2

    @field_validator("size")
    @classmethod
    def _pairs(cls, v, info):
        return _check_pair(v, info.field_name)


class LayerNormConfig(LayerConfig):
    """(x - mean) / sqrt(var + epsilon) * gamma + beta, moments over ``axis`` (Keras LayerNormalization)."""

    axis: int | list[int] = -1
    epsilon: float = Field(1e-3, gt=0.0)
    center: bool = True
    scale: bool = True


class NormalizationConfig(LayerConfig):
    """Keras's Normalization with its statistics given (``Normalization(mean=..., variance=...)``):
    (x - mean) / max(sqrt(variance), 1e-7); ``invert``: mean + x * max(sqrt(variance), 1e-7).
    A list holds one value per index of ``axis``."""

    mean: float | list[float]
    variance: float | list[float]
    axis: int = -1
    invert: bool = False

    @model_validator(mode="after")
    def _same_length(self):
        lengths = {len(v) if isinstance(v, list) else None for v in (self.mean, self.variance)}
        if len(lengths) != 1:
            raise ValueError(f"mean and variance differ in length ({self.mean!r} and {self.variance!r})")
        variance = self.variance if isinstance(self.variance, list) else [self.variance]
        if any(v < 0 for v in variance):
            raise ValueError(f"a variance is >= 0, got {self.variance!r}")
        return self


class GroupNormConfig(LayerConfig):
    """Channels split into ``groups``; each sample normalized per group (Keras GroupNormalization)."""

    groups: int = Field(32, ge=1)
    axis: int = -1
    epsilon: float = Field(1e-3, gt=0.0)
    center: bool = True
    scale: bool = True


class GeluConfig(LayerConfig):
    """GELU: exact (erf) by default, the tanh form with ``approximate: true``."""

    approximate: bool = False


class SiluConfig(LayerConfig):
    """x * sigmoid(x)."""


class SwishConfig(SiluConfig):
    """x * sigmoid(x) (the same as silu)."""


class SoftplusConfig(LayerConfig):
    """log(1 + exp(x))."""


class HardSigmoidConfig(LayerConfig):
    """relu6(x + 3) / 6."""


class AddConfig(LayerConfig):
    """The sum of 2 or more inputs of one shape (broadcasting)."""


class MultiplyConfig(LayerConfig):
    """The elementwise product of 2 or more inputs."""


class ConcatConfig(LayerConfig):
    """The inputs joined along ``axis``."""

    axis: int = -1


class MultiHeadAttentionConfig(LayerConfig):
    """Keras MultiHeadAttention: inputs (query, value?, key?, mask?, query_mask?); value defaults
    to query, key to value; mask is [batch, T, S] or a key padding mask [batch, S], query_mask
    [batch, T] (Keras's propagated query mask); nonzero = attend; a row with nothing to attend
    to gets zero weights, as in Keras 3."""

    num_heads: int = Field(ge=1)
    key_dim: int = Field(ge=1)
    value_dim: int | None = Field(None, ge=1)
    output_dim: int | None = Field(None, ge=1)
    dropout: float = Field(0.0, ge=0.0, lt=1.0)
    use_bias: bool = True
    causal: bool = False
    return_attention_scores: bool = False  # outputs (out, scores [batch, heads, T, S]) as Keras does
    kernel_initializer: InitializerSpec = "glorot_uniform"
    bias_initializer: InitializerSpec = "zeros"
    seed: int | None = None


class RNNConfig(LayerConfig):
    units: int = Field(ge=1)
    activation: Activation | None = "tanh"
    use_bias: bool = True
    return_sequences: bool = False
    return_state: bool = False
    go_backwards: bool = False
    dropout: float = Field(0.0, ge=0.0, lt=1.0)
    recurrent_dropout: float = Field(0.0, ge=0.0, lt=1.0)
    kernel_initializer: InitializerSpec = "glorot_uniform"
    recurrent_initializer: InitializerSpec = "orthogonal"  # Keras' default for LSTM/GRU/SimpleRNN
    bias_initializer: InitializerSpec = "zeros"
    seed: int | None = None


class SimpleRNNConfig(RNNConfig):
    """h = activation(x W + h U + b) (Keras SimpleRNN)."""


class LSTMConfig(RNNConfig):
    """Keras LSTM: gates i, f, c, o in the kernel's columns; ``return_state`` adds h, c."""

    recurrent_activation: Activation | None = "sigmoid"
    unit_forget_bias: bool = True


class GRUConfig(RNNConfig):
    """Keras GRU: gates z, r, h; ``reset_after`` (the default, cuDNN's form) has a [2, 3 units] bias."""

    recurrent_activation: Activation | None = "sigmoid"
    reset_after: bool = True


class BidirectionalConfig(LayerConfig):
    """One RNN forward and a copy backward over the sequence (Keras Bidirectional):
    ``rnn: {lstm: {units: 8, return_sequences: true}}``; outputs merged by ``merge_mode``."""

    rnn: dict[Literal["lstm", "gru", "simple_rnn"], dict] = Field(min_length=1, max_length=1)
    merge_mode: Literal["concat", "sum", "mul", "ave"] | None = "concat"

    @property
    def inner(self) -> tuple[str, RNNConfig]:
        kind, raw = next(iter(self.rnn.items()))
        cls = {"lstm": LSTMConfig, "gru": GRUConfig, "simple_rnn": SimpleRNNConfig}[kind]
        return kind, cls.model_validate(raw)

    @field_validator("rnn")
    @classmethod
    def _inner_valid(cls, v):
        kind, raw = next(iter(v.items()))
        inner = {"lstm": LSTMConfig, "gru": GRUConfig, "simple_rnn": SimpleRNNConfig}[kind]
        inner.model_validate(raw)  # errors surface at the bidirectional node
        if raw.get("go_backwards"):
            raise ValueError("the wrapped layer must not set go_backwards (the backward copy sets it)")
        return v


class DepthwiseConv2DConfig(LayerConfig):
    """Keras DepthwiseConv2D: each input channel convolved with ``depth_multiplier`` filters of its
    own (depthwise_kernel [kh, kw, in, depth_multiplier])."""

    kernel_size: IntPair
    depth_multiplier: int = Field(1, ge=1)
    strides: IntPair = 1
    padding: Literal["valid", "same"] = "valid"
    dilation_rate: IntPair = 1
    activation: Activation | None = None
    use_bias: bool = True
    depthwise_initializer: InitializerSpec = "glorot_uniform"
    bias_initializer: InitializerSpec = "zeros"

    @field_validator("kernel_size", "strides", "dilation_rate")
    @classmethod
    def _pairs(cls, v, info):
        return _check_pair(v, info.field_name)


class SeparableConv2DConfig(DepthwiseConv2DConfig):
    """Keras SeparableConv2D: a depthwise convolution, then a 1x1 convolution to ``filters``
    (pointwise_kernel [1, 1, in * depth_multiplier, filters])."""

    filters: int = Field(ge=1)
    pointwise_initializer: InitializerSpec = "glorot_uniform"
