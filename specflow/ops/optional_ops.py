"""Optionals (TF's optional_ops): a ``variant`` scalar that holds a tuple of tensors or nothing.
TF2's cond_v2 wraps a branch's intermediates in them for the gradient (the branch not taken gives
OptionalNone), so the graphs of differentiated tf.cond calls (tf.linalg.expm's among them) carry
them. Gradients are TF's (optional_grad.py): an optional's gradient is an optional of gradients.
Kernels are CPU-only: an optional is a host object, as TF keeps its variants on the host."""

from __future__ import annotations

import numpy as np

from specflow.graph.shapes import Shape
from specflow.ops import grad_util as gu
from specflow.ops.registry import KernelContext, gradient, kernel, not_differentiable, register_op

_CPU = ("CPU",)


class Optional:
    """The value of a TF optional: a tuple of arrays, or None for no value."""

    __slots__ = ("components",)

    def __init__(self, components: tuple | None):
        self.components = components

    def __repr__(self) -> str:
        return "Optional(none)" if self.components is None else f"Optional({len(self.components)} component(s))"


def _wrap(opt: Optional) -> np.ndarray:
    out = np.empty((), dtype=object)
    out[()] = opt
    return out


def _unwrap(ctx: KernelContext, value) -> Optional:
    opt = value.item() if isinstance(value, np.ndarray) and value.dtype == object and value.ndim == 0 else None
    if not isinstance(opt, Optional):
        raise ctx.fail(f"optional must be an optional (a variant scalar), got {type(value).__name__}")
    return opt


register_op(
    "OptionalFromValue",
    inputs=["components: Toutput_types"],
    outputs=["optional: variant"],
    attrs=["Toutput_types: list(type) >= 1"],
    shape=lambda ic: [Shape([])],
    doc="An optional holding the tensors `components`.",
)


@kernel("OptionalFromValue", devices=_CPU)
def _from_value(ctx, *components):
    return _wrap(Optional(tuple(components)))


register_op("OptionalNone", outputs=["optional: variant"], shape=lambda ic: [Shape([])],
            doc="An optional holding no value.")  # fmt: skip


@kernel("OptionalNone", devices=_CPU)
def _none(ctx):
    return _wrap(Optional(None))


register_op(
    "OptionalHasValue",
    inputs=["optional: variant"],
    outputs=["has_value: bool"],
    shape=lambda ic: [Shape([])],
    doc="Whether the optional holds a value.",
)


@kernel("OptionalHasValue", devices=_CPU)
def _has_value(ctx, optional):
    return np.asarray(_unwrap(ctx, optional).components is not None)


register_op(
    "OptionalGetValue",
    inputs=["optional: variant"],
    outputs=["components: output_types"],
    attrs=["output_types: list(type) >= 1", "output_shapes: list(shape) >= 1"],
    shape=lambda ic: list(ic.attr("output_shapes")),
    doc="The tensors the optional holds, of output_types and output_shapes; an error if it holds none.",
)


@kernel("OptionalGetValue", devices=_CPU)
def _get_value(ctx, optional):
    opt = _unwrap(ctx, optional)
    if opt.components is None:
        raise ctx.fail("The optional variant does not have a value.")
    types = ctx.attrs["output_types"]
    got = [str(np.asarray(c).dtype) for c in opt.components]
    if len(got) != len(types) or any(np.dtype(t.numpy) != np.asarray(c).dtype for t, c in zip(types, opt.components)):
        raise ctx.fail(f"The optional holds {got}, but output_types are {[t.name for t in types]}")
    for c, s in zip(opt.components, ctx.attrs["output_shapes"]):
        if not s.is_compatible_with(Shape(np.shape(c))):
            raise ctx.fail(f"The optional holds a component of shape {list(np.shape(c))}, incompatible with {s}")
    return tuple(opt.components)


@gradient("OptionalFromValue")
def _from_value_grad(b, node, dys):
    # TF's: the components' gradients are the values of the optional's gradient.
    types = [b.spec(t).dtype for t in node.data_inputs]
    shapes = [b.spec(t).shape for t in node.data_inputs]
    if dys[0] is None:  # no gradient reached the optional
        return [None] * len(types)
    return gu.outputs(b, "OptionalGetValue", len(types), dys[0], output_types=types, output_shapes=shapes)


@gradient("OptionalGetValue")
def _get_value_grad(b, node, dys):
    # TF's: an optional holding the components' gradients (zeros for those that have none).
    grads = [dy if dy is not None else gu.zeros_like(b, f"{node.name}:{i}") for i, dy in enumerate(dys)]
    return [gu.emit(b, "OptionalFromValue", *grads)]


not_differentiable("OptionalNone", "OptionalHasValue")
