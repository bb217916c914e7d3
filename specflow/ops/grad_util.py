"""What gradient functions share: a terse way to add ops, and undoing broadcasting.

Gradient functions (registered with ``@gradient`` beside each op) extend the graph through the
GraphBuilder they are handed. Where shapes are static these helpers fold shape arithmetic into
constants; where they are not they emit TensorFlow's dynamic ops (Shape, BroadcastGradientArgs),
so the same gradient graph works for any batch size.
"""

from __future__ import annotations

import numpy as np

from specflow.graph import dtypes
from specflow.graph.shapes import Shape
from specflow.ops.inference import InferenceContext
from specflow.ops.registry import TensorSpec, gradient, kernel, not_differentiable, register_op


def emit(b, op: str, *inputs: str, **attrs) -> str:
    """Add ``op`` with ``inputs`` and ``attrs``; return its first output's name."""
    return b.add_op(op, list(inputs), attrs).name


def product(b, *xs: str) -> str:
    """``xs[0] * xs[1] * ...`` as a chain of Muls."""
    out = xs[0]
    for x in xs[1:]:
        out = emit(b, "Mul", out, x)
    return out


def outputs(b, op: str, n: int, *inputs: str, **attrs) -> list[str]:
    """Add a multi-output ``op``; return its ``n`` output names."""
    node = b.add_op(op, list(inputs), attrs)
    return [node.name if k == 0 else f"{node.name}:{k}" for k in range(n)]


def spec(b, tensor: str) -> TensorSpec:
    return b.spec(tensor)


def const(b, value, dtype=None) -> str:
    return b.const(np.asarray(value, dtype=None if dtype is None else dtypes.as_dtype(dtype).numpy), name="Const")


def shape_of(b, x: str, out_type=dtypes.int32) -> str:
    """x's shape as a 1-D tensor: a Const when static, else a Shape op."""
    s = b.spec(x).shape
    if s.is_fully_defined:
        return const(b, np.array(s.as_list(), dtype=out_type.numpy))
    return emit(b, "Shape", x, out_type=out_type)


def cast_like(b, value: str, like: str) -> str:
    """``value`` cast to ``like``'s dtype (no op when they already agree)."""
    want = b.spec(like).dtype
    if b.spec(value).dtype == want:
        return value
    return emit(b, "Cast", value, DstT=want)


def reshape_to(b, grad: str, x: str) -> str:
    """``grad`` reshaped to ``x``'s shape (no op when it already has it statically)."""
    gs, xs = b.spec(grad).shape, b.spec(x).shape
    if xs.is_fully_defined and gs == xs:
        return grad
    return emit(b, "Reshape", grad, shape_of(b, x))


def sum_to(b, grad: str, x: str) -> str:
    """Reduce ``grad`` (the gradient of a broadcast result) to the shape of input ``x``.

    Numpy broadcasting repeats ``x`` along leading axes and along its size-1 axes; the gradient
    sums over exactly those axes."""
    gs, xs = b.spec(grad).shape, b.spec(x).shape
    if xs.is_fully_defined and gs.is_fully_defined:
        if gs == xs:
            return grad
        g, t = gs.as_list(), xs.as_list()
        lead = len(g) - len(t)
        axes = list(range(lead)) + [lead + i for i, d in enumerate(t) if d == 1 and g[lead + i] != 1]
        if axes:
            grad = emit(b, "Sum", grad, const(b, np.array(axes, dtype=np.int32)), keep_dims=False)
        return reshape_to(b, grad, x)
    if gs.rank is not None and xs.rank is not None and gs.rank == xs.rank and all(
        a is not None and a == c for a, c in zip(gs.dims, xs.dims)
    ):
        return grad
    sx, sg = shape_of(b, x), shape_of(b, grad)
    rx, _ = outputs(b, "BroadcastGradientArgs", 2, sx, sg)
    return emit(b, "Reshape", emit(b, "Sum", grad, rx, keep_dims=False), sx)


def zeros_like(b, x: str) -> str:
    return emit(b, "ZerosLike", x)


# --- convolution-like ops ----------------------------------------------------------------------


def window_attrs(node, drop=()) -> dict:
    """A window op's attrs but T (and ``drop``): its gradient ops take the same strides, padding, ... ."""
    return {k: v for k, v in node.attrs.items() if k not in ("T", *drop) and not k.startswith("_")}


def conv_gradients(conv: str, backprop_input: str, backprop_filter: str, sizes_attrs=()) -> None:
    """Register the gradients of a convolution and its two backprop ops. All three are bilinear
    in (input, filter), so each one's gradient is made of the other two. ``sizes_attrs``: attrs
    of the backprop ops' sizes input (Tshape) that the convolution itself lacks."""

    def conv_grad(b, node, dys):
        x, f = node.data_inputs
        attrs = window_attrs(node)
        return [
            emit(b, backprop_input, shape_of(b, x), f, dys[0], **attrs),
            emit(b, backprop_filter, x, shape_of(b, f), dys[0], **attrs),
        ]

    def input_grad(b, node, dys):
        _, f, dy = node.data_inputs
        attrs = window_attrs(node, sizes_attrs)
        return [
            None,
            emit(b, backprop_filter, dys[0], shape_of(b, f), dy, **attrs),
            emit(b, conv, dys[0], f, **attrs),
        ]

    def filter_grad(b, node, dys):
        x, _, dy = node.data_inputs
        attrs = window_attrs(node, sizes_attrs)
        return [
            emit(b, backprop_input, shape_of(b, x), dys[0], dy, **attrs),
            None,
            emit(b, conv, x, dys[0], **attrs),
        ]

    for op, fn in ((conv, conv_grad), (backprop_input, input_grad), (backprop_filter, filter_grad)):
        gradient(op)(fn)


# --- BroadcastGradientArgs ---------------------------------------------------------------------


def _bga_shape(ic: InferenceContext) -> list[Shape]:
    return [Shape([None]), Shape([None])]


register_op(
    "BroadcastGradientArgs",
    inputs=["s0: T", "s1: T"],
    outputs=["r0: T", "r1: T"],
    attrs=["T: {int32, int64} = int32"],
    shape=_bga_shape,
    doc="The axes to sum a broadcast result over to get back the shapes s0 and s1 (for gradients).",
)


def broadcast_reduction_axes(s0, s1) -> tuple[np.ndarray, np.ndarray]:
    """For shapes s0 and s1 broadcast together: the output axes each must be summed over.

    TF's rule (BCast): equal shapes need no reduction; otherwise an input reduces over every
    output axis where it has (or is padded to) size 1, even where the other input has 1 too."""
    s0, s1 = [int(d) for d in s0], [int(d) for d in s1]
    if s0 == s1:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    rank = max(len(s0), len(s1))
    p0, p1 = [1] * (rank - len(s0)) + s0, [1] * (rank - len(s1)) + s1
    r0, r1 = [], []
    for i, (a, c) in enumerate(zip(p0, p1)):
        if a != c and a != 1 and c != 1:
            raise ValueError(f"incompatible shapes {s0} and {s1}")
        if a == 1:
            r0.append(i)
        if c == 1:
            r1.append(i)
    return np.array(r0, dtype=np.int64), np.array(r1, dtype=np.int64)


def _frozen(a) -> bool:
    """A read-only numpy array: its values cannot have changed since it was last seen (a fed
    array could have been written to between steps)."""
    return type(a) is np.ndarray and not a.flags.writeable


@kernel("BroadcastGradientArgs", host_inputs=(0, 1))
def _bga(ctx, s0, s1):
    # The same shapes every step (every iteration, in a loop's gradient): the outputs for the
    # last pair are kept in the node's state and handed out again, read-only (as Shape's). The
    # pair is often the very arrays of last time (Shape hands out its last output again).
    seen = ctx.state.get("bga")
    if seen is not None and seen[0] is s0 and seen[1] is s1 and _frozen(s0) and _frozen(s1):
        return seen[3]
    h0, h1 = ctx.host(s0), ctx.host(s1)
    key = (h0.tobytes(), h1.tobytes())
    if seen is not None and seen[2] == key:
        ctx.state["bga"] = (s0, s1, key, seen[3])
        return seen[3]
    try:
        r0, r1 = broadcast_reduction_axes(h0, h1)
    except ValueError as e:
        raise ctx.fail(str(e)) from None
    dt = ctx.attr("T").numpy
    outs = ctx.xp.asarray(r0, dtype=dt), ctx.xp.asarray(r1, dtype=dt)
    for o in outs:
        if type(o) is np.ndarray:
            o.flags.writeable = False
    ctx.state["bga"] = (s0, s1, key, outs)
    return outs


not_differentiable("BroadcastGradientArgs")


class IndexedSlices:
    """A sparse gradient of a variable (TF's IndexedSlices): ``values[i]`` is the gradient of
    row ``indices[i]`` (rows may repeat: they add up). ResourceGather's gradient is one;
    ``gradients(..., sparse=True)`` hands it to the optimizer, which then sends and updates only
    those rows. ``dense()`` adds the ops making the full gradient (UnsortedSegmentSum)."""

    def __init__(self, b, values: str, indices: str, rows):
        self.values, self.indices = values, indices
        self._rows = rows  # () -> an int32 scalar tensor: the variable's row count

    def dense(self, b, colocate_with: str | None = None) -> str:
        """The full gradient; made beside ``colocate_with`` (a variable) when given, so on a
        cluster only the rows travel to the variable's task."""
        rows = self._rows()
        return b.add_op("UnsortedSegmentSum", [self.values, self.indices, rows],
                        colocate_with=[colocate_with] if colocate_with else ()).name  # fmt: skip

    def __repr__(self) -> str:
        return f"IndexedSlices(values={self.values!r}, indices={self.indices!r})"
