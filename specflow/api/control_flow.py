"""sf.cond and sf.while_loop: Python control flow on tensors.

Eagerly they are plain Python (``if``/``while`` on the value). Inside ``sf.function`` they build
``graph/control_flow.py``'s cond and while loop (Switch/Merge, Enter/Exit/NextIteration), the
constructs a spec's ``cond:``/``while:`` nodes lower to. Stateful ops in a branch or body keep
program order among themselves; the construct as a whole runs after the effects before it, and
the effects after it wait for it.
"""

from __future__ import annotations

import numpy as np

from specflow.api.context import STATE
from specflow.api.function import flatten, unflatten
from specflow.api.tensor import EagerTensor, GraphTensor, Tensor
from specflow.errors import GraphError
from specflow.graph import control_flow as gcf


def _trace_of(*values):
    if STATE.trace is not None:
        return STATE.trace
    for v in values:
        if isinstance(v, GraphTensor):
            return v.trace
    return None


def _as_graph(trace, v) -> GraphTensor:
    from specflow.api.op_functions import to_tensor
    from specflow.api.variables import Variable

    if isinstance(v, Variable):
        return v._read(trace)
    if isinstance(v, GraphTensor):
        return v
    return trace.capture(v if isinstance(v, EagerTensor) else to_tensor(v))


def _branch_outputs(trace, fn, args) -> tuple[list[str], object, bool]:
    """Run ``fn(*args)`` with its own effect chain; outputs as names, each waiting on the
    chain's last effect (so the branch's effects run whenever its outputs are used)."""
    trace.last_effect = None
    out = fn(*args)
    leaves, structure = flatten(out)
    b = trace.builder
    effects_only = out is None
    if effects_only:  # a dummy output carries the effects
        leaves = [0]
    names = []
    for leaf in leaves:
        t = _as_graph(trace, leaf)
        if trace.last_effect is not None:
            t = b.add_op("Identity", [t.name], name=b.unique_name("Identity"), exact_name=True,
                         control_inputs=[trace.last_effect])
            names.append(t.name)
        else:
            names.append(t.name)
    return names, structure, effects_only


def cond(pred, true_fn, false_fn, name: str = "cond"):
    """``true_fn()`` if ``pred`` else ``false_fn()``; both return the same structure of tensors."""
    trace = _trace_of(pred)
    if trace is None:
        return true_fn() if bool(pred.numpy() if isinstance(pred, Tensor) else pred) else false_fn()
    with trace.active():
        p = _as_graph(trace, pred)
        before = trace.last_effect
        structures = []

        def branch(fn):
            def build(b):
                names, structure, effects_only = _branch_outputs(trace, fn, ())
                structures.append((structure, effects_only))
                return names
            return build

        with trace.construct():
            result = gcf.cond(trace.builder, p.name, branch(true_fn), branch(false_fn), name=name,
                              control_inputs=[before] if before else [])
        if structures[0] != structures[1]:
            raise GraphError(f"cond '{result.name}': the branches return different structures "
                             f"({structures[0]} vs {structures[1]})", node=result.name)
        trace.last_effect = result.merges[0] if result.merges else before
        structure, effects_only = structures[0]
        if effects_only:
            return None
        return unflatten(structure, [trace._tensor(t) for t in result.outputs])


def while_loop(cond, body, loop_vars, *, max_iterations: int | None = None,  # noqa: F811 (TF's names)
               parallel_iterations: int = 10, shape_invariants=None, name: str = "while",
               maximum_iterations=None):
    """Repeat ``loop_vars = body(*loop_vars)`` while ``cond(*loop_vars)``; returns the vars.
    ``maximum_iterations`` (TensorFlow's) stops the loop after that many iterations;
    ``max_iterations`` (the spec's) fails the step when a loop runs longer."""
    cond_fn, body_fn = cond, body
    if maximum_iterations is not None:
        return _capped_while_loop(cond_fn, body_fn, loop_vars, maximum_iterations, max_iterations=max_iterations,
                                  parallel_iterations=parallel_iterations, shape_invariants=shape_invariants,
                                  name=name)
    leaves, structure = flatten(list(loop_vars))
    trace = _trace_of(*leaves)
    if trace is None:
        from specflow.api.op_functions import to_tensor

        vals = list(loop_vars)
        n = 0
        while bool(cond_fn(*vals)):
            n += 1
            if max_iterations is not None and n > max_iterations:
                raise GraphError(f"while loop '{name}' ran more than max_iterations={max_iterations} times")
            out = body_fn(*vals)
            vals = list(out) if isinstance(out, (list, tuple)) else [out]
        out = [v if isinstance(v, Tensor) or getattr(type(v), "_sf_composite", False) else to_tensor(v)
               for v in vals]
        return tuple(out) if isinstance(loop_vars, tuple) else out
    with trace.active():
        start = [_as_graph(trace, v) for v in leaves]
        before = trace.last_effect
        had_effects = []

        def cond_build(b, *names):
            trace.last_effect = None
            args = unflatten(structure, [trace._tensor(n) for n in names])
            return _as_graph(trace, cond_fn(*args)).name

        def body_build(b, *names):
            args = unflatten(structure, [trace._tensor(n) for n in names])
            out, _, _ = _branch_outputs(trace, body_fn, args)
            had_effects.append(trace.last_effect is not None)
            if len(out) != len(names):
                raise GraphError(f"while loop '{name}': the body returns {len(out)} value(s) for "
                                 f"{len(names)} loop variable(s)")
            return out

        with trace.construct():
            result = gcf.while_loop(trace.builder, cond_build, body_build, [t.name for t in start], name=name,
                                    max_iterations=max_iterations, parallel_iterations=parallel_iterations,
                                    shape_invariants=shape_invariants,
                                    control_inputs=[before] if before else [])
        trace.last_effect = parse_node(result.outputs[0]) if any(had_effects) else before
        outs = unflatten(structure, [trace._tensor(t) for t in result.outputs])
        return tuple(outs) if isinstance(loop_vars, tuple) else outs  # TF gives back the structure given


def _capped_while_loop(cond_fn, body_fn, loop_vars, cap, **kwargs):
    """TensorFlow's ``maximum_iterations``: a counter beside the vars, and ``counter < cap`` in
    the condition (checked first, as TensorFlow does: a capped loop never evaluates cond_fn again)."""
    from specflow.api.op_functions import call

    cap = cap if isinstance(cap, Tensor) else np.asarray(cap, np.int32)
    invariants = kwargs.pop("shape_invariants")
    if invariants is not None:
        invariants = [None, *invariants]

    def cond(i, *vs):
        if STATE.trace is None and not isinstance(i, GraphTensor):
            return bool(i < cap) and bool(cond_fn(*vs))
        return call("LogicalAnd", call("Less", i, cap), cond_fn(*vs))

    def body(i, *vs):
        out = body_fn(*vs)
        return [i + 1, *(out if isinstance(out, (list, tuple)) else [out])]

    counter = np.asarray(0, cap.dtype.numpy if isinstance(cap, Tensor) else cap.dtype)
    out = list(while_loop(cond, body, [counter, *loop_vars], shape_invariants=invariants, **kwargs))[1:]
    return tuple(out) if isinstance(loop_vars, tuple) else out


def parse_node(tensor: str) -> str:
    return tensor.split(":")[0]
