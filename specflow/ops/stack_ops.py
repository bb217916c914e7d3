"""Stacks (TF's StackV2, StackPushV2, StackPopV2, StackCloseV2) and EnsureShape: what while-loop
gradients use to hand forward values to the backward loop (``specflow.train.loop_gradients``).

A forward loop pushes, once per iteration, each value a body op's gradient will read; the backward
loop pops them, so iteration ``i`` of the backward loop sees the values of forward iteration
``n - 1 - i``. As in TensorFlow, a stack is a per-step resource: it belongs to the step's
rendezvous (one per step), so two steps never share one and a step's stacks
are dropped with it. Every op on a stack is placed with its ``StackV2`` through the resource edge,
so they all run in the executor that holds the stack.

A stack may hold resource handles: a loop nested in another loop's body gets one stack per outer
iteration, whose handle the outer loop saves on its own stack.

A popped value has no static shape (a stack holds any shape); ``EnsureShape`` restores the shape
the pushed value had, so the gradient graph keeps precise shapes through any re-inference.
"""

from __future__ import annotations

import itertools
import threading
import weakref

from specflow.graph import dtypes
from specflow.graph.shapes import Shape, as_shape
from specflow.ops.inference import InferenceContext, no_outputs, scalar_shape
from specflow.ops.registry import KernelContext, gradient, kernel, not_differentiable, register_op
from specflow.ops.state_ops import _handle
from specflow.runtime.resources import ResourceHandle

_ANY = frozenset(dtypes.ALL_DTYPES)
_IDS = itertools.count(1)


class Stack:
    """A LIFO list of one step; ``max_size`` < 0 means unbounded."""

    def __init__(self, name: str, elem_type, max_size: int):
        self.name = name
        self.elem_type = elem_type
        self.max_size = max_size
        self.items: list = []
        self.closed = False
        self.lock = threading.Lock()


# A step's stacks, keyed by the step's rendezvous (one per step, shared by all its executors and
# frames), so they go away with the step. A kernel run outside a step keeps them in its extras.
_STEP_STACKS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def _stacks(ctx: KernelContext) -> dict:
    extras = ctx.extras
    found = extras.get("stacks")  # the step's own extras cache the lookup: a loop pushes every iteration
    if found is not None:
        return found
    step = extras.get("rendezvous")
    if step is None:
        return extras.setdefault("stacks", {})
    with _LOCK:
        found = extras["stacks"] = _STEP_STACKS.setdefault(step, {})
    return found


def _stack(ctx: KernelContext, handle) -> Stack:
    h = _handle(ctx, handle)
    stack = _stacks(ctx).get(h.name)
    if stack is None:
        raise ctx.fail(f"stack '{h.name}' does not exist in this step (stacks live for one step only)")
    if stack.closed:
        raise ctx.fail(f"stack '{stack.name}' has already been closed")
    return stack


register_op(
    "StackV2",
    inputs=["max_size: int32"],
    outputs=["handle: resource"],
    attrs=["elem_type: type", "stack_name: string = ''"],
    stateful=True,
    shape=scalar_shape,
    doc="A new stack of `elem_type` values for this step; `max_size` < 0 means unbounded.",
)


@kernel("StackV2", host_inputs=(0,), elem_type=_ANY)  # resources too: a nested loop's stack handles
def _stack_v2(ctx, max_size):
    # Unique per run of the kernel: the same StackV2 node run in two steps (or twice in a step,
    # inside a loop) makes two stacks.
    name = f"{ctx.attrs['stack_name'] or ctx.node.name}_{next(_IDS)}"
    _stacks(ctx)[name] = Stack(name, ctx.attrs["elem_type"], int(ctx.host(max_size)))
    return ResourceHandle(ctx.device, "_step", name)


register_op(
    "StackPushV2",
    inputs=["handle: resource", "elem: T"],
    outputs=["output: T"],
    attrs=["T: type", "swap_memory: bool = false"],
    stateful=True,
    shape=lambda ic: [ic.shape(1)],
    doc="Pushes `elem` onto the stack and forwards it. `swap_memory` is accepted (values stay in device memory).",
)


@kernel("StackPushV2", T=_ANY)
def _stack_push(ctx, handle, elem):
    stack = _stack(ctx, handle)
    if ctx.attrs["T"] != stack.elem_type:
        raise ctx.fail(f"stack '{stack.name}' holds {stack.elem_type}, cannot push {ctx.attrs['T']}")
    with stack.lock:
        if 0 <= stack.max_size <= len(stack.items):
            raise ctx.fail(f"stack '{stack.name}' overflowed its max_size ({stack.max_size})")
        stack.items.append(elem)
    return elem


register_op(
    "StackPopV2",
    inputs=["handle: resource"],
    outputs=["elem: elem_type"],
    attrs=["elem_type: type"],
    stateful=True,
    shape=lambda ic: [Shape.unknown()],
    doc="Pops the value pushed last.",
)


@kernel("StackPopV2", elem_type=_ANY)
def _stack_pop(ctx, handle):
    stack = _stack(ctx, handle)
    if ctx.attrs["elem_type"] != stack.elem_type:
        raise ctx.fail(f"stack '{stack.name}' holds {stack.elem_type}, cannot pop {ctx.attrs['elem_type']}")
    with stack.lock:
        if not stack.items:
            raise ctx.fail(f"stack '{stack.name}' is empty")
        return stack.items.pop()


register_op(
    "StackCloseV2",
    inputs=["handle: resource"],
    stateful=True,
    shape=no_outputs,
    doc="Deletes the stack and its values.",
)


@kernel("StackCloseV2")
def _stack_close(ctx, handle):
    stack = _stack(ctx, handle)
    stack.closed = True
    stack.items.clear()
    _stacks(ctx).pop(stack.name, None)


# --- EnsureShape ---------------------------------------------------------------------------------


def _ensure_shape_shape(ic: InferenceContext) -> list[Shape]:
    want, got = as_shape(ic.attr("shape")), ic.shape(0)
    if not want.is_compatible_with(got):
        raise ic.fail(f"input shape {got} is not compatible with the expected shape {want}")
    return [want.merge_with(got)]


register_op(
    "EnsureShape",
    inputs=["input: T"],
    outputs=["output: T"],
    attrs=["shape: shape", "T: type"],
    shape=_ensure_shape_shape,
    doc="Forwards `input` after checking that its shape is compatible with `shape` (and gives it that static shape).",
)


@kernel("EnsureShape", T=_ANY)
def _ensure_shape(ctx, x):
    if x.shape == ctx.state.get("fits"):  # the shape last found compatible (a loop checks every iteration)
        return x
    want = as_shape(ctx.attrs["shape"])
    if not want.is_compatible_with(Shape(x.shape)):
        raise ctx.fail(f"shape of tensor {list(x.shape)} is not compatible with the expected shape {want}")
    ctx.state["fits"] = x.shape
    return x


@gradient("EnsureShape")
def _ensure_shape_grad(b, node, dys):
    return [dys[0]]


# TF: stacks carry values between loops that gradients build; no gradient flows through them.
for _op in ("StackV2", "StackPushV2", "StackPopV2", "StackCloseV2"):
    not_differentiable(_op)
