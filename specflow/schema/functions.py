"""Function calls: a `{call: f, inputs: ..., attrs: ...}` node inlines f's body under its name.

Per call: attrs are checked and defaulted, the caller's tensors are bound to the function's
inputs after checking their dtype/shape patterns (a type variable ``T`` or a symbolic dim ``D``
binds to one value across all inputs), ``$attr`` strings in the body are substituted, and each body node is validated (models.parse_node) and lowered under
``<call>/``. Stateful op nodes of one call run in declaration order (TF2's automatic control
dependencies): each gets a control input on the previous one. Variable setup ops are never
chained, so reading a variable does not re-run its initializer.
"""

from __future__ import annotations

import re
from contextlib import nullcontext
from typing import Any

from pydantic_core import PydanticCustomError

from specflow.errors import SpecflowError, did_you_mean
from specflow.graph.dtypes import as_dtype
from specflow.schema.layers.variables import create_variable
from specflow.schema.lower import Chain, Lowerer, add_control_inputs, compute_nodes
from specflow.schema.namespace import Namespace, Skip


def inline_call(lw: Lowerer, ns: Namespace, name: str, spec, path: tuple, device: str | None,
                control: list[str]) -> list[str]:
    """Inline call node ``name``; return the tensors of the function's outputs, in order."""
    fn_name = spec.call
    functions = lw.model.functions
    if fn_name not in functions:
        raise lw.error(f"unknown function '{fn_name}'" + did_you_mean(fn_name, functions), path + ("call",))
    if fn_name in lw.call_stack:
        chain = " -> ".join(lw.call_stack + [fn_name])
        raise lw.error(f"recursive function call: {chain}", path + ("call",))
    fn = functions[fn_name]
    fpath = ("functions", fn_name)
    values = _bind_attrs(lw, fn, spec, fn_name, path)
    b = lw.builder
    with b.name_scope(name):
        tensors = _bind_inputs(lw, ns, fn, spec, name, path)
    _check_patterns(lw, fn, fn_name, tensors, path)

    from specflow.schema.models import parse_node, substitute_attrs

    def parse(raw: Any, node_path: tuple):
        return parse_node(substitute_attrs(raw, values), node_path, lw.source)

    body = Namespace(b, prefix=b.scoped(name) + "/", captured=ns)
    for arg, t in tensors.items():
        body.add_tensors(arg, [t])
    sharing = _share_rule(lw, ns, spec, name, path)
    lw.calls[b.scoped(name)] = fn_name
    start = len(b.graph_def.nodes)
    lw.call_stack.append(fn_name)
    n_errors = len(lw.errors)
    if sharing:
        b.variable_sharing.append(sharing)
    try:
        with b.name_scope(name), (b.device(device) if device else nullcontext()):
            _create_variables(lw, body, fn, values, fpath)
            failed = lw.lower_body(body, fn.nodes, fpath + ("nodes",), chain=Chain(), parse=parse)
    finally:
        lw.call_stack.pop()
        if sharing:
            b.variable_sharing.pop()
    for e in lw.errors[n_errors:]:
        e.message += f" (in call '{b.scoped(name)}')"
    if failed:
        raise Skip
    add_control_inputs(compute_nodes(b.graph_def.nodes[start:], b), control)
    outputs = []
    for alias, ref in fn.outputs.items():
        outputs.append(body.resolve(ref, fpath + ("outputs", alias), lw))
    return outputs


def _share_rule(lw: Lowerer, ns: Namespace, spec, name: str, path: tuple) -> tuple[str, str] | None:
    """(this call's scope, the shared call's scope) for ``share: OTHER``: OTHER must be a call of
    the same function lowered in the same body (the dependency order puts it first)."""
    other = getattr(spec, "share", None)
    if other is None:
        return None
    b = lw.builder
    target = b.scoped(other)
    called = lw.calls.get(target)
    if called is None:
        scope = b.scoped(name).rpartition("/")[0]
        calls = [c.rpartition("/")[2] for c in lw.calls if c.rpartition("/")[0] == scope]
        raise lw.error(f"share: '{other}' names no call of a function" + did_you_mean(other, calls), path + ("share",))
    if called != spec.call:
        raise lw.error(f"share: '{other}' calls '{called}', not '{spec.call}'; only calls of one function share "
                       "variables", path + ("share",))
    owner = lw.shares.get(target, target)  # `c` shares `b`, which shares `a`: `a`'s variables
    lw.shares[b.scoped(name)] = owner
    return b.scoped(name) + "/", owner + "/"


def _create_variables(lw: Lowerer, body: Namespace, fn, values: dict, fpath: tuple) -> None:
    """The function's own variables, one set per call under the call's scope (or the shared
    call's, through the builder's sharing rule)."""
    from specflow.schema.models import VariableSpec, substitute_attrs

    b = lw.builder
    for vname, raw in fn.variables.items():
        vpath = fpath + ("variables", vname)
        try:
            spec = VariableSpec.model_validate(substitute_attrs(raw, values))
        except Exception as e:  # a $attr made it invalid: a pydantic ValidationError
            why = re.sub(r"\s*\[type=.*\]$", "", str(e).splitlines()[-1].strip())  # pydantic's own details
            raise lw.error(f"variable '{vname}': {why}", vpath) from None
        with b.location(lw.source.key_location(vpath)), (b.device(spec.device) if spec.device else nullcontext()):
            try:
                info = create_variable(b, vname, spec.shape, spec.dtype, spec.initializer, spec.trainable,
                                       lw.model.seed)  # fmt: skip
            except SpecflowError as e:
                raise lw.error(e.message, vpath, key=True) from None
        body.add_variable(vname, info)


def _bind_attrs(lw: Lowerer, fn, spec, fn_name: str, path: tuple) -> dict[str, Any]:
    from specflow.schema.models import check_attr_value

    values: dict[str, Any] = {}
    for key, value in spec.attrs.items():
        if key not in fn.attrs:
            raise lw.error(f"function '{fn_name}' has no attr '{key}'" + did_you_mean(key, fn.attrs),
                           path + ("attrs", key), key=True)
        try:
            values[key] = check_attr_value(fn.attrs[key].type, value)
        except PydanticCustomError as e:
            raise lw.error(f"attr '{key}' of function '{fn_name}': {e.message()}", path + ("attrs", key)) from None
    for key, attr in fn.attrs.items():
        if key not in values:
            if not attr.has_default:
                raise lw.error(f"call of '{fn_name}' needs attr '{key}' ({attr.type})", path + ("attrs",))
            values[key] = attr.default
    return values


def _bind_inputs(lw: Lowerer, ns: Namespace, fn, spec, name: str, path: tuple) -> dict[str, str]:
    """The caller's tensor for each function input (list: by position; mapping: by name)."""
    wanted = list(fn.inputs)
    given = spec.inputs
    if isinstance(given, dict):
        for key in given:
            if key not in fn.inputs:
                raise lw.error(f"function '{spec.call}' has no input '{key}'" + did_you_mean(key, wanted),
                               path + ("inputs", key), key=True)
        items = [(k, given[k], path + ("inputs", k)) for k in wanted if k in given]
        missing = [k for k in wanted if k not in given]
    else:
        if len(given) > len(wanted):
            raise lw.error(f"function '{spec.call}' takes {len(wanted)} input(s) ({', '.join(wanted)}), "
                           f"got {len(given)}", path + ("inputs",))
        items = [(k, v, path + ("inputs", i)) for i, (k, v) in enumerate(zip(wanted, given, strict=False))]
        missing = wanted[len(given):]
    if missing:
        raise lw.error(f"call of '{spec.call}' is missing input(s) {', '.join(missing)}", path + ("inputs",))
    return {k: lw.resolve_item(ns, v, p, name) for k, v, p in items}


def _check_patterns(lw: Lowerer, fn, fn_name: str, tensors: dict[str, str], path: tuple) -> None:
    """Check each input against its dtype/shape pattern, binding type variables and symbolic
    dims consistently across the inputs."""
    types: dict[str, tuple[Any, str]] = {}
    dims: dict[str, tuple[int | None, str]] = {}
    for arg, tensor in tensors.items():
        pattern = fn.inputs[arg]
        spec = lw.builder.spec(tensor)
        where = path + ("inputs",)

        def mismatch(what: str) -> SpecflowError:
            return lw.error(f"input '{arg}' of function '{fn_name}': {what}", where)  # noqa: B023

        if _is_type_var(pattern.dtype):
            bound = types.setdefault(pattern.dtype, (spec.dtype, arg))
            if bound[0] != spec.dtype:
                raise mismatch(f"{pattern.dtype} is {bound[0].name} (from input '{bound[1]}') but got {spec.dtype.name}")
        elif as_dtype(pattern.dtype) != spec.dtype:
            raise mismatch(f"expected dtype {pattern.dtype}, got {spec.dtype.name}")
        if pattern.shape is None:
            continue
        shown = "[" + ", ".join("?" if d is None else str(d) for d in pattern.shape) + "]"
        if spec.shape.rank is not None and spec.shape.rank != len(pattern.shape):
            raise mismatch(f"expected shape {shown}, got {spec.shape} (rank {spec.shape.rank})")
        actual = spec.shape.dims or (None,) * len(pattern.shape)
        for i, (want, got) in enumerate(zip(pattern.shape, actual, strict=True)):
            if isinstance(want, int) and got is not None and want != got:
                raise mismatch(f"expected shape {shown}, got {spec.shape} (dimension {i})")
            if isinstance(want, str) and got is not None:
                prev = dims.setdefault(want, (got, f"{arg}[{i}]"))
                if prev[0] != got:
                    raise mismatch(
                        f"expected shape {shown} with {want}={prev[0]} (from {prev[1]}), got {spec.shape}"
                    )


def _is_type_var(name: str) -> bool:
    try:
        as_dtype(name)
    except TypeError:
        return True
    return False
