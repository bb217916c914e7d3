"""Lowering the spec's ``while`` and ``cond`` nodes (models in control_flow_models.py) through the
builder constructs of :mod:`specflow.graph.control_flow`.

A loop ``fact`` lowers to ``fact/<var>/Enter|Merge|Switch|Identity|NextIteration``, the Exit
``fact/<var>`` (so ``fact/acc`` names a final value, as ``fact:1`` does),
``fact/cond/...``, ``fact/body/...`` and ``fact/LoopCond``; a conditional ``choose`` to
``choose/switch_pred``, ``choose/Switch*``, ``choose/then/...``, ``choose/else/...`` and
``choose/Merge*``. Inside a body, a loop var's (or a mapped cond input's) name is its current
value; every other name is looked up in the enclosing body, and the construct captures it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from specflow.errors import SpecflowError, did_you_mean
from specflow.graph.control_flow import cond, while_loop
from specflow.graph.dtypes import as_dtype
from specflow.graph.shapes import Shape
from specflow.schema.control_flow_models import BranchBody, CondNodeSpec, WhileNodeSpec
from specflow.schema.namespace import Namespace, Skip, refs_of_node, split_ref


class LocalNamespace(Namespace):
    """A body inside a loop or conditional: its own names (loop vars, cond inputs, body nodes)
    first, then everything the enclosing body sees."""

    def __init__(self, outer: Namespace, prefix: str, tensors: dict[str, str]):
        super().__init__(outer.b, prefix)
        self.outer = outer
        for name, t in tensors.items():
            self.add_tensors(name, [t])

    def _lookup(self, name: str):
        return super()._lookup(name) or self.outer._lookup(name)

    def names(self) -> list[str]:
        return list(dict.fromkeys(super().names() + self.outer.names()))


def is_control_flow(spec) -> bool:
    return isinstance(spec, (WhileNodeSpec, CondNodeSpec))


# --- dependencies (for the lowering order) --------------------------------------------------------


def node_refs(spec, body: dict) -> list[str]:
    """Names in ``body`` that node ``spec`` depends on; inside a loop or conditional, the names it
    binds itself (vars, mapped inputs, body nodes) shadow the enclosing body's."""
    if not is_control_flow(spec):
        return refs_of_node(spec, body)
    out: list[str] = []

    def add(items, local: set[str] = frozenset()):
        for item in items:
            if isinstance(item, str):
                head = split_ref(item)[0].split("/")[0]
                found = [head] if head in body and head not in local else []
            elif isinstance(item, BranchBody):
                inner = local | set(item.nodes)
                add(list(item.nodes.values()), inner)
                add(item.outputs, inner)
                continue
            elif isinstance(item, dict):
                add(list(item.values()), local)
                continue
            elif isinstance(item, list):
                add(item, local)
                continue
            elif item is None:
                continue
            else:
                found = [d for d in node_refs(item, body) if d not in local]
            out.extend(d for d in found if d not in out)

    common = list(spec.after) + list(spec.colocate_with)
    if isinstance(spec, WhileNodeSpec):
        w = spec.while_
        var_names = set(w.vars)
        add([v.init for v in w.vars.values()] + common)
        add([w.cond], var_names)
        if isinstance(w.body, dict):
            local = var_names | set(w.body)
            add(list(w.body.values()), local)
            if w.next is not None:
                add(list(w.next.values()), local)
    else:
        c = spec.cond
        mapped = set(c.inputs) if isinstance(c.inputs, dict) else set()
        inputs = list(c.inputs.values()) if isinstance(c.inputs, dict) else list(c.inputs)
        add([c.pred, *inputs, *common])
        add([c.then, c.else_], mapped)
    return out


# --- while -----------------------------------------------------------------------------------------


def lower_while(lw, ns: Namespace, name: str, spec: WhileNodeSpec, path: tuple, control: list[str]) -> list[str]:
    """Lower loop node ``name``; return its outputs (the final values of its vars, in order)."""
    b = lw.builder
    w = spec.while_
    wpath = path + ("while",)
    var_names = list(w.vars)
    inits, invariants = [], []
    with b.name_scope(name):
        for v, var in w.vars.items():
            inits.append(_initial_value(lw, ns, v, var, wpath + ("vars", v), name))
            invariants.append(Shape(var.shape) if var.shape is not None else None)

    def cond_fn(b, *values):
        local = LocalNamespace(ns, b.scoped("") , dict(zip(var_names, values)))
        return _branch(lw, local, w.cond, wpath + ("cond",), var_names)

    def body_fn(b, *values):
        local = LocalNamespace(ns, b.scoped(""), dict(zip(var_names, values)))
        bpath = wpath + ("body",)
        if isinstance(w.body, str):
            outs = _call(lw, local, w.body, var_names, bpath)
            if len(outs) != len(var_names):
                raise lw.error(f"function '{w.body}' returns {len(outs)} output(s) for {len(var_names)} loop "
                               f"var(s) ({', '.join(var_names)})", bpath)
            return outs
        if lw.lower_body(local, w.intermediates, bpath):
            raise Skip
        outs = []
        npath = wpath + ("next",) if w.next is not None else bpath
        for v in var_names:
            entry = w.next_values[v]
            if isinstance(entry, str):
                outs.append(local.resolve(entry, npath + (v,), lw))
            else:
                # Each var's next value in a scratch namespace: inside the body, `v` stays the
                # var's current value.
                scratch = LocalNamespace(local, local.prefix, {})
                lw.lower_node(scratch, v, entry, npath + (v,), None)
                outs.append(scratch.resolve(v, npath + (v,), lw))
        return outs

    try:
        result = while_loop(
            b, cond_fn, body_fn, inits, name=name, var_names=var_names, max_iterations=w.max_iterations,
            parallel_iterations=w.parallel_iterations, shape_invariants=invariants, control_inputs=control,
        )
    except SpecflowError as e:
        raise _at_path(lw, e, wpath) from None
    return result.outputs


def _initial_value(lw, ns, v: str, var, path: tuple, parent: str) -> str:
    b = lw.builder
    if "init" in var.model_fields_set:
        t = lw.resolve_item(ns, var.init, path, parent)
        if var.dtype is not None and b.spec(t).dtype != as_dtype(var.dtype):
            raise lw.error(f"loop var '{v}': init is {b.spec(t).dtype.name} but dtype says {var.dtype}", path)
        return t
    dt = as_dtype(var.dtype) if var.dtype is not None else None
    try:
        arr = np.asarray(var.value, dtype=dt.numpy if dt is not None else None)
    except (TypeError, ValueError) as e:
        raise lw.error(f"loop var '{v}': bad value {var.value!r} ({e})", path) from None
    return b.const(arr if dt is not None else var.value, dt, name=f"{v}/init")


# --- cond ------------------------------------------------------------------------------------------


def lower_cond(lw, ns: Namespace, name: str, spec: CondNodeSpec, path: tuple, control: list[str]) -> list[str]:
    """Lower conditional node ``name``; return its outputs (the taken branch's, in order)."""
    b = lw.builder
    c = spec.cond
    cpath = path + ("cond",)
    mapped = isinstance(c.inputs, dict)
    items = list(c.inputs.items()) if mapped else list(enumerate(c.inputs))
    with b.name_scope(name):
        pred = lw.resolve_item(ns, c.pred, cpath + ("pred",), name)
        inputs = [lw.resolve_item(ns, item, cpath + ("inputs", k), name) for k, item in items]
    aliases = [k for k, _ in items] if mapped else None

    def branch(body, key: str):
        def fn(b, *args):
            bpath = cpath + (key,)
            names = aliases
            if names is None and isinstance(body, str):
                names = _function_inputs(lw, body, len(args), bpath)
            local = LocalNamespace(ns, b.scoped(""), dict(zip(names or [], args)))
            return _branch(lw, local, body, bpath, names or [])

        return fn

    try:
        result = cond(b, pred, branch(c.then, "then"), branch(c.else_, "else"), inputs, name=name,
                      control_inputs=control)
    except SpecflowError as e:
        raise _at_path(lw, e, cpath) from None
    return result.outputs


def _function_inputs(lw, fname: str, n: int, path: tuple) -> list[str]:
    """The input names of function ``fname``, which the conditional passes ``n`` inputs."""
    fn = _function(lw, fname, path)
    if len(fn.inputs) != n:
        raise lw.error(f"function '{fname}' takes {len(fn.inputs)} input(s) ({', '.join(fn.inputs)}), "
                       f"the cond passes {n}", path)
    return list(fn.inputs)


# --- branches: a function, one node, or several --------------------------------------------------


def _branch(lw, local: LocalNamespace, body: Any, path: tuple, arg_names: list[str]) -> list[str]:
    """Lower a cond branch or a loop condition; return its outputs."""
    if isinstance(body, str):
        return _call(lw, local, body, arg_names, path)
    if isinstance(body, BranchBody):
        if lw.lower_body(local, body.nodes, path + ("nodes",)):
            raise Skip
        return [local.resolve(ref, path + ("outputs", i), lw) for i, ref in enumerate(body.outputs)]
    leaf = _leaf_name(body)
    lw.lower_node(local, leaf, body, path, None)
    return _outputs(lw, local, leaf)


def _call(lw, local: LocalNamespace, fname: str, arg_names: list[str], path: tuple) -> list[str]:
    """Call function ``fname`` with the local names ``arg_names`` (by position)."""
    from specflow.schema.functions import inline_call
    from specflow.schema.models import CallNodeSpec

    fn = _function(lw, fname, path)
    if len(fn.inputs) != len(arg_names):
        raise lw.error(f"function '{fname}' takes {len(fn.inputs)} input(s) ({', '.join(fn.inputs)}), "
                       f"got {len(arg_names)} ({', '.join(arg_names)})", path)
    spec = CallNodeSpec.model_validate({"call": fname, "inputs": list(arg_names)})
    return inline_call(lw, local, fname, spec, path, None, [])


def _function(lw, fname: str, path: tuple):
    functions = lw.model.functions
    if fname not in functions:
        raise lw.error(f"unknown function '{fname}'" + did_you_mean(fname, functions), path)
    return functions[fname]


def _leaf_name(spec) -> str:
    for kind in ("op", "layer", "call"):
        if hasattr(spec, kind):
            return getattr(spec, kind)
    return "while" if isinstance(spec, WhileNodeSpec) else "cond"


def _outputs(lw, ns: Namespace, name: str) -> list[str]:
    kind, val = ns.entries[name]
    if kind == "tensors":
        return list(val)
    n = len(lw.builder.inferencer.specs[val])
    return [val if i == 0 else f"{val}:{i}" for i in range(n)]


def _at_path(lw, e: SpecflowError, path: tuple) -> SpecflowError:
    """A construct's error (which names the node) at the construct's place in the spec."""
    if e.location is None:
        e.location = lw.source.key_location(path)
        e.path = e.path or ".".join(str(p) for p in path)
    return e
