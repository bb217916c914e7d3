"""An sf.Module as the objects of a TF2 SavedModel (export/object_graph.py), so that TensorFlow's
``tf.saved_model.load`` gives back what ``tf.saved_model.save(tf.Module)`` would: the module's
variables and submodules as attributes (lists and dicts of them as lists and dicts), each
sf.function attribute as a method with every concrete function it has traced (one with an
``input_signature`` is traced now), ``m(x)`` when the class's ``__call__`` is an sf.function, and
``variables``/``trainable_variables`` lists.

A concrete function becomes a saved trace when TF can describe its call: tensor arguments (any
nesting of lists, tuples and dicts), Python None/bool/int/float/str arguments, results that are
tensors or None. A method trace that cannot be described (a variable passed as an argument, a
Python number returned) is left out with a warning; the signatures are always saved.
"""

from __future__ import annotations

import inspect
import warnings

import numpy as np

from specflow.api.function import ConcreteFunction, Function, _param_names, unflatten
from specflow.api.function import TensorSpec as SfSpec
from specflow.api.module import Module
from specflow.api.variables import Variable
from specflow.errors import ExportError
from specflow.export.object_graph import (
    ArgSpec,
    Method,
    Obj,
    SavedObjects,
    Signature,
    Trace,
    Var,
    add_variable_lists,
)
from specflow.graph.graph_def import NodeDef, parse_input
from specflow.ops.registry import TensorSpec


class _Objects:
    def __init__(self, module, model):
        self.model = model
        self.paths = {v._uid: p for p, v in module.named_variables().items()} if isinstance(module, Module) else {}
        self.traces: dict[int, Trace] = {}
        self.memo: dict[int, Obj] = {}

    def key(self, var: Variable) -> str:
        """A variable's name in the SavedModel (its attribute path; an untracked one's uid), with
        its VarHandleOp, value and trainable flag in the model."""
        key = self.paths.get(var._uid) or var._uid
        if key not in self.model.variables:
            self.model.graph_def.nodes.insert(0, NodeDef(key, "VarHandleOp", [], "", {
                "container": "", "shared_name": key, "dtype": var.dtype, "shape": var.shape}))
            self.model.variables[key] = np.asarray(var)
            self.model.trainable[key] = var.trainable
        return key

    def tree(self, obj) -> Obj:
        if id(obj) in self.memo:
            return self.memo[id(obj)]
        node = self.memo[id(obj)] = Obj()
        if isinstance(obj, Module):
            for attr in sorted(vars(obj)):
                if attr.startswith("_sf_function_") or attr == "_module_name":
                    continue
                child = self.value(vars(obj)[attr], attr)
                if child is not None:
                    node.children[attr] = child
        for name in dir(type(obj)):
            if name in node.children or name.startswith("_") and name != "__call__":
                continue
            if isinstance(getattr(type(obj), name, None), Function):
                node.children[name] = self.method(name, getattr(obj, name))
        return node

    def value(self, v, name: str):
        if isinstance(v, Variable):
            return Var(self.key(v))
        if isinstance(v, Module):
            return self.tree(v)
        if isinstance(v, Function):
            return self.method(name, v)
        if isinstance(v, (list, tuple, dict)):
            if id(v) in self.memo:
                return self.memo[id(v)]
            items = v.items() if isinstance(v, dict) else enumerate(v)
            node = Obj("dict" if isinstance(v, dict) else "list")
            for k, x in items:
                child = self.value(x, str(k))
                if child is not None:
                    node.children[str(k)] = child
            self.memo[id(v)] = node
            return node if node.children else None
        return None

    def method(self, name: str, fn: Function) -> Method:
        concretes = fn.concrete_functions
        if fn.input_signature is not None and not concretes:
            concretes = [fn.get_concrete_function()]
        traces = []
        for cf in concretes:
            try:
                traces.append(self.trace(name, cf, fn))
            except ExportError as e:
                warnings.warn(f"sf.save: a trace of '{name}' is not saved as a TF2 method: {e.message}",
                              stacklevel=4)
        spec = None if fn.input_signature is None else tuple(_spec_tree(s) for s in fn.input_signature)
        params = _param_names(fn.python_function)
        defaults = _defaults(fn)
        return Method(params, spec, traces, tuple(defaults[p] for p in params if p in defaults) or None)

    def trace(self, name: str, cf: ConcreteFunction, fn: Function | None = None) -> Trace:
        """``cf`` as a Trace; with ``fn`` (the sf.function it is a trace of) its call too."""
        hit = self.traces.get(id(cf))
        if hit is not None and (fn is None or hit.args is not None):
            return hit
        handles = {}
        for uid, (ref, node) in cf.variables.items():
            var = ref()
            if var is None:
                raise ExportError(f"function '{cf.name}' uses variable '{uid}', which was deleted")
            handles[node] = self.key(var)
        inputs = [(t, parse_input(t).node, TensorSpec(d, s)) for t, (d, s) in zip(cf.inputs, cf.input_specs)]
        outputs = [(t, TensorSpec(d, s)) for t, (d, s) in zip(cf.outputs, cf.output_specs)]
        args, kwargs, structure = (None, {}, None) if fn is None else _call(cf, fn)
        from specflow.api.lookup import initialized_tables

        graph = initialized_tables(cf.graph_def, f"sf.save: function '{cf.name}'")  # tables fill themselves
        out = Trace(name, graph, inputs, outputs, handles, args, structure, kwargs,
                    [cf.target] if cf.target else [])
        if fn is not None or hit is None:
            self.traces[id(cf)] = out
        return out


def module_objects(module, model, concretes: dict[str, ConcreteFunction], aliases) -> None:
    """Set ``model.objects`` (a ServingModel of ``module``'s signatures ``concretes``) to the
    module's objects, adding every variable they hold to the model; ``aliases(cf)``: a
    signature's output aliases."""
    objs = _Objects(module, model)
    root = objs.tree(module)
    sigs = {}
    for name, cf in concretes.items():
        body = objs.trace(name, cf)
        sigs[name] = Signature(body, {kw: i for i, (_, kw, _) in enumerate(body.inputs)},
                               {a: i for i, a in enumerate(aliases(cf))})
    keys = list(objs.paths.values()) if isinstance(module, Module) else []
    add_variable_lists(root, [k for k in keys if k in model.variables], model.trainable)
    model.objects = SavedObjects(root, sigs)


def _call(cf: ConcreteFunction, fn: Function) -> tuple[tuple, dict, object]:
    """The call ``cf`` answers, as TF canonicalizes it (keywords naming positional parameters
    join the positional arguments), and its result structure (output indices, None)."""
    if cf.call_structure is None:
        raise ExportError("its call is not known")
    structure, leaves = cf.call_structure
    values, k = [], 0
    for leaf in leaves:
        if isinstance(leaf, SfSpec):  # a tensor argument: the trace's k-th input
            values.append(ArgSpec(parse_input(cf.inputs[k]).node, TensorSpec(*cf.input_specs[k])))
            k += 1
        elif isinstance(leaf, Variable):
            raise ExportError("a variable is passed as an argument")
        else:
            values.append(leaf)
    args, kwargs = unflatten(structure, values)
    args = tuple(args)
    defaults = _defaults(fn)
    for p in _param_names(fn.python_function)[len(args):]:
        if p not in kwargs and p not in defaults:
            break
        args += (kwargs.pop(p) if p in kwargs else defaults[p],)  # TF binds a call's defaults too
    if kwargs:
        raise ExportError(f"keyword argument(s) {', '.join(sorted(kwargs))} are not its next positional parameters")
    outs = []
    for kind, x in cf._out:
        if kind == "v" and x is not None:
            raise ExportError(f"it returns a Python {type(x).__name__}, not a tensor")
        outs.append(x if kind == "t" else None)
    return args, {}, unflatten(cf._structure, outs)


def _defaults(fn: Function) -> dict:
    try:
        params = inspect.signature(fn.python_function).parameters.values()
    except (TypeError, ValueError):
        return {}
    return {p.name: p.default for p in params if p.default is not p.empty}


def _spec_tree(spec):
    if isinstance(spec, SfSpec):
        return ArgSpec(spec.name, TensorSpec(spec.dtype, spec.shape))
    if isinstance(spec, dict):
        return {k: _spec_tree(v) for k, v in spec.items()}
    return type(spec)(_spec_tree(v) for v in spec)
