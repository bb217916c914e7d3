"""Control-flow primitives (whitepaper 4.4, TF's control_flow_ops): Switch, Merge, Enter, Exit,
NextIteration and LoopCond.

A conditional is ``Switch`` (route a value to one of two outputs by a predicate; the other output
is *dead*) followed by ``Merge`` (forward whichever input is alive). A loop wraps its variables in
``Enter`` (into a named frame) -> ``Merge`` (the initial value, or the previous iteration's
value via ``NextIteration``, the loop's back edge) -> ``Switch`` on ``LoopCond`` -> the body ->
``NextIteration``, and ``Exit`` takes the value out of the frame when the predicate turns false.

The kernels here only move data: frames, iterations and the rule "a dead input makes the outputs
dead, except for Merge" belong to the executor (``specflow.runtime.executor``).
"""

from __future__ import annotations

import numpy as np

from specflow.errors import GraphError
from specflow.graph import dtypes
from specflow.graph.graph_def import parse_input, tensor_name
from specflow.graph.shapes import Shape
from specflow.ops import grad_util as gu
from specflow.ops.inference import InferenceContext, no_outputs
from specflow.ops.registry import gradient, kernel, not_differentiable, register_op
from specflow.runtime.rendezvous import DEAD

# Control flow routes any value: resource handles and strings included (strings stay on CPU).
_ANY = frozenset(dtypes.ALL_DTYPES)

# Sources of loop back edges (a NextIteration feeding a Merge).
_BACK_EDGE_OPS = ("NextIteration", "RefNextIteration")


def _scalar_pred(ic: InferenceContext, i: int, what: str) -> None:
    rank = ic.shape(i).rank
    if rank is not None and rank != 0:
        raise ic.fail(f"{what} must be a bool scalar, got shape {ic.shape(i)}")


# --- Switch ------------------------------------------------------------------------------------


def _switch_shape(ic: InferenceContext) -> list[Shape]:
    _scalar_pred(ic, 1, "pred")
    return [ic.shape(0), ic.shape(0)]


register_op(
    "Switch",
    inputs=["data: T", "pred: bool"],
    outputs=["output_false: T", "output_true: T"],
    attrs=["T: type"],
    shape=_switch_shape,
    doc="Forwards `data` to output_true if `pred` is true, else to output_false; the other output is dead.",
)


@kernel("Switch", T=_ANY, host_inputs=(1,))
def _switch(ctx, data, pred):
    return (DEAD, data) if bool(ctx.host(pred)) else (data, DEAD)


@gradient("Switch")
def _switch_grad(b, node, dys):
    """TF's cond gradient: exactly one branch was taken, so exactly one of the branch gradients
    is alive (the other branch's ops, its ZerosLike included, saw dead inputs); Merge picks it.

    A variable's handle switched into one branch only (a branch reading it, the other not) has
    a gradient from that branch alone: the other side's is zeros of the variable, read through
    that side's output so that it is alive exactly when that branch runs (TF merges the one
    gradient with itself there, leaving it dead when the other branch runs)."""
    false_dy, true_dy = (d.dense(b) if isinstance(d, gu.IndexedSlices) else d for d in dys)
    if false_dy is None or true_dy is None:
        have = true_dy if false_dy is None else false_dy
        if have is None or b.spec(node.data_inputs[0]).dtype != dtypes.resource:
            return [None, None]  # nothing carries a gradient here (TF: None too)
        side = 0 if false_dy is None else 1
        read = gu.emit(b, "ReadVariableOp", tensor_name(node.name, side), dtype=b.spec(have).dtype)
        zeros = gu.emit(b, "ZerosLike", read)
        false_dy, true_dy = (zeros, have) if side == 0 else (have, zeros)
    return [gu.emit(b, "Merge", false_dy, true_dy), None]


# --- Merge -------------------------------------------------------------------------------------


def _merge_shape(ic: InferenceContext) -> list[Shape]:
    """The output is one of the inputs, so its shape is the most specific shape compatible with
    every input (TF relaxes: a dimension the inputs disagree on becomes unknown)."""
    shapes = ic.list_shapes(0)
    out = shapes[0]
    for s in shapes[1:]:
        if out.rank is None or s.rank is None or out.rank != s.rank:
            out = Shape.unknown()
            break
        out = Shape(a if a == c else None for a, c in zip(out.dims, s.dims))
    return [out, Shape.scalar()]


register_op(
    "Merge",
    inputs=["inputs: N * T"],
    outputs=["output: T", "value_index: int32"],
    attrs=["T: type", "N: int >= 1"],
    shape=_merge_shape,
    doc="Forwards the first of its inputs that is alive, and that input's index.",
)


@kernel("Merge", T=_ANY)
def _merge(ctx, *inputs):
    # The executor runs Merge even with dead inputs; all dead means the Merge is dead too.
    for i, x in enumerate(inputs):
        if x is not DEAD:
            return x, ctx.xp.asarray(i, dtype=np.int32)
    return DEAD, DEAD


@gradient("Merge")
def _merge_grad(b, node, dys):
    """Route the gradient back to the input that was forwarded: input i's gradient is alive
    only when ``value_index == i`` (TF switches on the cond's predicate; the value index is the
    same fact, and needs no knowledge of the Switch that made the branches)."""
    nodes = {n.name: n for n in b.graph_def.nodes}
    for inp in node.data_inputs:
        src = nodes.get(parse_input(inp).node)
        if src is not None and src.op in _BACK_EDGE_OPS:
            raise GraphError(
                "internal error: a loop's Merge is differentiated with its whole loop "
                "(specflow.train.loop_gradients), not on its own",
                node=node.name,
                location=node.location,
            )
    dxs = []
    for i in range(len(node.data_inputs)):
        taken = gu.emit(b, "Equal", f"{node.name}:1", gu.const(b, np.int32(i)))
        dxs.append(gu.outputs(b, "Switch", 2, dys[0], taken)[1])
    return dxs


# --- Enter / Exit / NextIteration / LoopCond -----------------------------------------------------


def _forward_shape(ic: InferenceContext) -> list[Shape]:
    """The input's shape; a resource keeps pointing at its variable (a loop reading a captured
    variable through a constant Enter knows the value's shape)."""
    spec = ic.handle_data(0)
    if spec is not None:
        ic.output_handle_data[0] = spec
    return [ic.shape(0)]


register_op(
    "Enter",
    inputs=["data: T"],
    outputs=["output: T"],
    attrs=["T: type", "frame_name: string", "is_constant: bool = false", "parallel_iterations: int = 10"],
    shape=_forward_shape,
    doc=(
        "Makes `data` available in the child frame `frame_name` (a loop). A constant Enter "
        "(is_constant) gives the same value to every iteration; parallel_iterations bounds how "
        "many iterations may run at once."
    ),
)

register_op(
    "Exit",
    inputs=["data: T"],
    outputs=["output: T"],
    attrs=["T: type"],
    shape=_forward_shape,
    doc="Takes `data` out of the current frame into its parent (a loop's result).",
)

register_op(
    "NextIteration",
    inputs=["data: T"],
    outputs=["output: T"],
    attrs=["T: type"],
    shape=_forward_shape,
    doc="Passes `data` to the next iteration of the current frame (a loop's back edge, into a Merge).",
)


def _loop_cond_shape(ic: InferenceContext) -> list[Shape]:
    _scalar_pred(ic, 0, "input")
    return [Shape.scalar()]


register_op(
    "LoopCond",
    inputs=["input: bool"],
    outputs=["output: bool"],
    shape=_loop_cond_shape,
    doc="Forwards the loop predicate `input`; marks it as the condition of its frame's loop.",
)


def _forward(ctx, x):
    return x


for _op in ("Enter", "Exit", "NextIteration"):
    kernel(_op, T=_ANY)(_forward)


@kernel("LoopCond")
def _loop_cond(ctx, x):
    # The shape is checked statically where it is known; a condition of unknown rank is checked
    # here, every iteration (``.shape`` needs no device-to-host copy).
    if x.shape != ():
        raise ctx.fail(f"the loop condition must be a bool scalar, got shape {list(x.shape)}")
    return x

# LoopCond carries a bool. Enter, Exit and NextIteration have no per-node gradient: gradients()
# differentiates a whole loop at once (specflow.train.loop_gradients builds its backward loop).
not_differentiable("LoopCond")


# --- Assert (a while loop's maximum-iterations check) --------------------------------------------


register_op(
    "Assert",
    inputs=["condition: bool", "data: T"],
    attrs=["T: list(type)", "summarize: int = 3"],
    stateful=True,
    shape=no_outputs,
    doc=(
        "Fails the step with 'assertion failed: [d0] [d1] ...' (each `data` tensor, at most "
        "`summarize` elements) when `condition` is false."
    ),
)


def _summary(x: np.ndarray, n: int) -> str:
    flat = [v.decode() if isinstance(v, bytes) else str(v) for v in np.asarray(x, dtype=object).ravel()[:n]]
    return " ".join(flat) + (" ..." if x.size > n else "")


@kernel("Assert", host_inputs=(0,))
def _assert(ctx, condition, *data):
    if bool(ctx.host(condition)):
        return ()
    n = ctx.attr("summarize")
    raise ctx.fail("assertion failed: " + " ".join(f"[{_summary(ctx.host(d), n)}]" for d in data))


not_differentiable("Assert")


# --- ControlTrigger (TF1 loop gradients' f_sync/b_sync) -------------------------------------------


register_op(
    "ControlTrigger",
    shape=no_outputs,
    doc=(
        "Does nothing, like NoOp; TF1's while-loop gradients order a loop's stack pushes and pops "
        "through it (f_sync, b_sync). TensorFlow runs it even when a control input is dead."
    ),
)


@kernel("ControlTrigger")
def _control_trigger(ctx):
    return ()


not_differentiable("ControlTrigger")
