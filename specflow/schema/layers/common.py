"""What every layer shares: the expansion context, final-op naming, activations, the training flag."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from specflow.errors import SpecError
from specflow.graph import dtypes
from specflow.graph.shapes import Shape
from specflow.schema.layers.activations import COMPOSITE

Activation = Literal[
    "relu", "relu6", "elu", "selu", "sigmoid", "tanh", "softmax",
    "softplus", "softsign", "leaky_relu", "linear",
    "gelu", "gelu_tanh", "silu", "swish", "hard_sigmoid",
]  # fmt: skip

# Activation name -> op (None: identity).
ACTIVATION_OPS: dict[str, str | None] = {
    "relu": "Relu",
    "relu6": "Relu6",
    "elu": "Elu",
    "selu": "Selu",
    "sigmoid": "Sigmoid",
    "tanh": "Tanh",
    "softmax": "Softmax",
    "softplus": "Softplus",
    "softsign": "Softsign",
    "leaky_relu": "LeakyRelu",
    "linear": None,
}
# The others are built from several ops (activations.py).

TRAINING_FLAG = "training"


@dataclass
class LayerContext:
    """What a layer needs from lowering besides the builder.

    ``name`` is the layer's output node name (scoped); ``graph_seed`` the spec's ``seed``;
    ``training`` returns the bool training-mode tensor, created on first need.
    """

    name: str
    graph_seed: int | None = None
    training: Callable[[], str] | None = None

    def training_flag(self, builder) -> str:
        return self.training() if self.training is not None else ensure_training_flag(builder)


def ensure_training_flag(builder) -> str:
    """The bool scalar ``training`` input: the spec's own (checked) or a new
    PlaceholderWithDefault(False) at the graph root, recorded in the "training_flag" collection."""
    if builder.has_node(TRAINING_FLAG):
        spec = builder.spec(TRAINING_FLAG)
        if spec.dtype != dtypes.bool_ or spec.shape.rank != 0:
            raise SpecError(
                f"input '{TRAINING_FLAG}' is the training-mode flag and must be a bool scalar, got {spec}",
                node=TRAINING_FLAG,
            )
    else:
        default = builder.add_op(
            "Const", [], {"value": np.array(False), "dtype": dtypes.bool_},
            name=f"{TRAINING_FLAG}/input", exact_name=True, device="",
        )  # fmt: skip
        builder.add_op(
            "PlaceholderWithDefault", [default.name], {"dtype": dtypes.bool_, "shape": Shape.scalar()},
            name=TRAINING_FLAG, exact_name=True, device="",
        )  # fmt: skip
    if TRAINING_FLAG not in builder.collections.get("training_flag", []):
        builder.add_to_collection("training_flag", TRAINING_FLAG)
    return TRAINING_FLAG


class Emitter:
    """Adds a layer's ops under its scope; ``final=True`` names the op exactly the layer."""

    def __init__(self, builder, ctx: LayerContext):
        self.b = builder
        self.ctx = ctx

    def op(self, op: str, inputs: Sequence[str], attrs: dict[str, Any] | None = None, *,
           name: str | None = None, final: bool = False) -> str:
        full = self.ctx.name if final else self.b.unique_name(name or op)
        return self.b.add_op(op, list(inputs), attrs or {}, name=full, exact_name=True).name

    def const(self, value, dtype, name: str) -> str:
        return self.b.const(value, dtype, name=name)

    def activation(self, x: str, activation: str | None, final: bool = True) -> str:
        """Apply a non-linear ``activation``, by default as the layer's final op."""
        if activation in COMPOSITE:
            return COMPOSITE[activation](self, x, final)
        op = ACTIVATION_OPS[activation]
        if op is None:
            return x
        return self.op(op, [x], final=final, name=None if final else op)

    def i32(self, values, name: str) -> str:
        """An int32 constant (shapes, axes, permutations)."""
        return self.b.const(np.asarray(values, np.int32), dtypes.int32, name=name)

    def scalar(self, value: float, like: str, name: str) -> str:
        """A scalar of ``like``'s dtype."""
        dt = self.dtype(like)
        return self.b.const(np.asarray(value, dt.numpy), dt, name=name)

    def dims(self, x: str, start: int, stop: int | None, name: str) -> str:
        """``shape(x)[start:stop]`` as a 1-D int32 tensor: a constant where those dims are
        known, else sliced from Shape(x) at run time (the batch dim usually is not)."""
        shape = self.shape(x)
        if shape.rank is not None:
            part = shape.dims[start:stop]
            if all(d is not None for d in part):
                return self.i32([int(d) for d in part], name)
        full = self.op("Shape", [x], {"out_type": dtypes.int32}, name=f"{name}/Shape")
        end = [stop] if stop is not None else [0]
        attrs = {"end_mask": 0 if stop is not None else 1}
        return self.op("StridedSlice", [full, self.i32([start], f"{name}/begin"), self.i32(end, f"{name}/end"),
                                        self.i32([1], f"{name}/strides")], attrs, name=name)

    def lead_shape(self, x: str, n: int, tail: Sequence[int], name: str) -> str:
        """A Reshape target: ``shape(x)[:n] + tail``, as a constant with -1 for the batch dim when
        ``x``'s dims 1..n-1 are known (so shape inference keeps them), else computed at run time."""
        shape = self.shape(x)
        if shape.rank is not None and all(d is not None for d in shape.dims[1:n]):
            return self.i32([-1, *[int(d) for d in shape.dims[1:n]], *tail], name)
        return self.concat([self.dims(x, 0, n, f"{name}/lead"), self.i32(list(tail), f"{name}/tail")], 0, name)

    def concat(self, parts: Sequence[str], axis: int, name: str) -> str:
        return self.op("ConcatV2", [*parts, self.i32(axis, f"{name}/axis")], name=name)

    def shape(self, x: str) -> Shape:
        return self.b.spec(x).shape

    def dtype(self, x: str):
        return self.b.spec(x).dtype


def is_linear(activation: str | None) -> bool:
    return activation in (None, "linear")


def static_dims(shape: Shape, what: str, node: str, first: int = 1) -> list[int]:
    """``shape[first:]`` as ints; SpecError naming the layer when any is unknown."""
    if shape.rank is None or any(d is None for d in shape.dims[first:]):
        raise SpecError(f"{what} needs the input's dimensions after the first known, got shape {shape}", node=node)
    return [int(d) for d in shape.dims[first:]]


def pair(v: int | Sequence[int]) -> list[int]:
    """``3`` -> ``[3, 3]``; ``[2, 3]`` unchanged (kernel sizes, strides)."""
    return [int(v), int(v)] if isinstance(v, int) else [int(x) for x in v]
