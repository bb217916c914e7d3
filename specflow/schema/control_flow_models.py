"""The spec's control-flow nodes as pydantic models: ``while`` loops and ``cond`` conditionals.

```yaml
fact:
  while:
    vars: {i: 1, acc: {value: 1, dtype: int64}, h: h0}   # literal, {value, dtype, shape}, or a tensor
    cond: {op: Less, inputs: [i, n]}                      # function name | one node | {nodes, outputs}
    body: {wide: {op: Cast, inputs: [i], DstT: int64}}   # intermediate nodes
    next: {i: {op: AddV2, inputs: [i, 1]}, acc: {op: Mul, inputs: [acc, wide]}, h: h}
    max_iterations: 100
choose:
  cond: {pred: flag, inputs: [x], then: square, else: {op: Neg, inputs: [x]}}
```

``body`` holds intermediate nodes and ``next`` each loop var's next value (a node, or a
reference); inside ``cond``, ``body`` and ``next`` a var's name is always its value in the current
iteration, so a new value another node needs gets its own name (``c_next``). The older form (next
values in ``body`` under the vars' names) is still read when no other node reads a var the body
sets; otherwise it is rejected as ambiguous, with both readings in the message. ``body`` may also
be a function name (the vars in, their next values out). Lowering is in
:mod:`specflow.schema.control_flow`.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, PlainValidator, TypeAdapter, model_validator

from specflow.schema.models import (
    CallInputs,
    Device,
    Dim,
    DTypeName,
    Ident,
    InputItem,
    Name,
    NameList,
    Node,
    Reference,
    StrictModel,
    Transfer,
    _fail,
    _mapping,
    show,
)

NODE_KEYS = ("op", "layer", "call", "while", "cond")


class LoopVarSpec(StrictModel):
    """A loop variable's initial value: a literal ``value`` (with an optional ``dtype``) or a
    tensor ``init`` (a reference or an inline node); ``shape`` (null dims) is a shape the var
    keeps across iterations (inferred and relaxed automatically when not given)."""

    value: Any = None
    init: InputItem | None = None
    dtype: DTypeName | None = None
    shape: list[Dim] | None = None
    doc: str | None = None

    @model_validator(mode="after")
    def _one_source(self):
        given = [k for k in ("value", "init") if k in self.model_fields_set]
        if len(given) != 1:
            raise _fail("loop_var", "a loop var needs exactly one of 'value' (a literal) or 'init' (a tensor)")
        if self.value is not None and isinstance(self.value, (str, dict)) and self.dtype != "string":
            raise _fail("loop_var", f"'value' is a literal (a number, bool or list), got {show(self.value)}; "
                                    "use 'init' for a tensor")
        return self


def _parse_loop_var(data: Any) -> LoopVarSpec:
    """Shorthands: ``1`` / ``[0, 0]`` / ``true`` are values; ``x`` / ``{op: ...}`` are tensors."""
    if isinstance(data, LoopVarSpec):
        return data
    if isinstance(data, str) or (isinstance(data, dict) and any(k in data for k in NODE_KEYS)):
        return LoopVarSpec.model_validate({"init": data})
    if isinstance(data, dict):
        return LoopVarSpec.model_validate(data)
    if data is None:
        raise _fail("loop_var", "a loop var needs an initial value, got null")
    return LoopVarSpec.model_validate({"value": data})


LoopVar = Annotated[LoopVarSpec, PlainValidator(_parse_loop_var, json_schema_input_type=Any)]


class BranchBody(StrictModel):
    """Several nodes and the references among them that are the outputs."""

    nodes: dict[Name, Node]
    outputs: list[Reference]

    @model_validator(mode="before")
    @classmethod
    def _one_output(cls, data: Any):
        if isinstance(data, dict) and isinstance(data.get("outputs"), str):
            return {**data, "outputs": [data["outputs"]]}
        return data


def _parse_branch(data: Any):
    """A function name, one node, or ``{nodes: ..., outputs: [...]}``."""
    if isinstance(data, str):
        return TypeAdapter(Ident).validate_python(data)
    if isinstance(data, dict) and any(k in data for k in NODE_KEYS):
        return TypeAdapter(Node).validate_python(data)
    if isinstance(data, dict):
        return BranchBody.model_validate(data)
    raise _fail("bad_branch", f"expected a function name, a node ({{op: ...}}) or {{nodes: ..., outputs: ...}}, got {show(data)}")


Branch = Annotated[Any, PlainValidator(_parse_branch, json_schema_input_type=str | dict)]


def _parse_body_entry(data: Any):
    if isinstance(data, str):
        return TypeAdapter(Reference).validate_python(data)
    return TypeAdapter(Node).validate_python(data)


BodyEntry = Annotated[Any, PlainValidator(_parse_body_entry, json_schema_input_type=str | dict)]


def _parse_body(data: Any):
    """A function name, or a mapping: each var's next value, and intermediate nodes."""
    if isinstance(data, str):
        return TypeAdapter(Ident).validate_python(data)
    if isinstance(data, dict):
        return TypeAdapter(dict[Name, BodyEntry]).validate_python(data, strict=True)
    raise _fail("bad_body", f"expected a function name or a mapping of loop vars to nodes, got {show(data)}")


LoopBody = Annotated[Any, PlainValidator(_parse_body, json_schema_input_type=str | dict)]


def _parse_next(data: Any):
    if isinstance(data, dict):
        return TypeAdapter(dict[Name, BodyEntry]).validate_python(data, strict=True)
    raise _fail("bad_next", f"expected a mapping of loop vars to their next values, got {show(data)}")


NextValues = Annotated[Any, PlainValidator(_parse_next, json_schema_input_type=dict)]


class WhileSpec(StrictModel):
    vars: dict[Ident, LoopVar] = Field(min_length=1)
    cond: Branch
    body: LoopBody = {}
    next: NextValues | None = None  # var -> next value; with it, `body` holds intermediate nodes only
    max_iterations: int | None = Field(default=None, ge=1)
    parallel_iterations: int = Field(default=10, ge=1)
    doc: str | None = None

    @property
    def next_values(self) -> dict:
        """Each var's next value (the ``next:`` block, or the legacy body's var entries)."""
        if self.next is not None:
            return self.next
        return {v: self.body[v] for v in self.vars} if isinstance(self.body, dict) else {}

    @property
    def intermediates(self) -> dict:
        return {k: v for k, v in self.body.items() if k not in self.vars} if isinstance(self.body, dict) else {}

    @classmethod
    def cross_checks(cls, data: dict) -> list[dict]:
        from specflow.schema.validation_errors import custom_error

        body, names, nxt = data.get("body", {}), list(_mapping(data, "vars")), data.get("next")
        if not names:
            return []
        if nxt is not None:
            errors = []
            if isinstance(body, str):
                errors.append(custom_error("body_and_next", "a body function gives the next values itself; "
                                           "drop `next:` or make the body a mapping of nodes", ("next",), nxt))
            if isinstance(body, dict):
                for v in names:
                    if v in body:
                        errors.append(custom_error(
                            "var_in_body", f"'{v}' is a loop var: with `next:`, the body holds intermediate nodes "
                            f"and `next:` gives '{v}' its next value (name this node e.g. '{v}_next')",
                            ("body", v, "[key]"), v))  # fmt: skip
            if isinstance(nxt, dict):
                for k in nxt:
                    if k not in names:
                        errors.append(custom_error("not_a_var", f"'{k}' is not a loop var (vars: {', '.join(names)})",
                                                   ("next", k, "[key]"), k))  # fmt: skip
                errors += _missing(custom_error, names, nxt, ("next",), "`next:`")
            return errors
        if not isinstance(body, dict):
            return []
        return _missing(custom_error, names, body, ("body",), "the body") or _ambiguous(custom_error, names, body)


def _missing(custom_error, names: list[str], given: dict, loc: tuple, where: str) -> list[dict]:
    missing = [v for v in names if v not in given]
    if not missing:
        return []
    listed = ", ".join(f"'{v}'" for v in missing)
    msg = f"{where} gives no next value for loop var(s) {listed} (write `{missing[0]}: {missing[0]}` to keep one unchanged)"
    return [custom_error("missing_var", msg, loc, given)]


def _ambiguous(custom_error, names: list[str], body: dict) -> list[dict]:
    """A body that sets var ``v``'s next value among its nodes and reads ``v`` in another node
    has two readings (``v`` now, or the value set above); reject it, naming both."""
    changed = {v for v in names if body.get(v) != v}
    errors = []
    for key, entry in body.items():
        for ref_path, var in _var_reads(entry, changed - {key}):
            role = f"the next value of '{key}'" if key in names else f"node '{key}'"
            msg = (f"ambiguous: {role} reads loop var '{var}', which this body also sets; '{var}' here is its "
                   f"value in the current iteration, not the next value at body.{var}. Make it explicit: put the "
                   f"next values in a `next:` block (then '{var}' is the current value), or name the new value "
                   f"(body: {{{var}_next: ...}}, next: {{{var}: {var}_next}}) and read '{var}_next'")
            errors.append(custom_error("ambiguous_var", msg, ("body", key, *ref_path), var))
            break
    return errors


_NOT_REFS = {"op", "layer", "call", "doc", "device", "dtype", "DstT", "SrcT", "T", "out_type", "output_type",
             "padding", "data_format", "activation"}


def _var_reads(entry: Any, candidates: set[str], path: tuple = ()):
    """(path, var) of each string in a raw node that references one of ``candidates``; a nested
    loop's own vars shadow the outer ones."""
    if not candidates:
        return
    if isinstance(entry, str):
        head = entry.split(":")[0].split("/")[0]
        if head in candidates:
            yield path, head
    elif isinstance(entry, list):
        for i, item in enumerate(entry):
            yield from _var_reads(item, candidates, path + (i,))
    elif isinstance(entry, dict):
        inner = entry.get("while")
        if isinstance(inner, dict) and isinstance(inner.get("vars"), dict):
            shadowed = candidates - set(inner["vars"]) - (set(inner.get("body") or {}) if isinstance(
                inner.get("body"), dict) else set())
            for v, init in inner["vars"].items():
                yield from _var_reads(init, candidates, path + ("while", "vars", v))
            for k in ("cond", "body", "next"):
                if k in inner:
                    yield from _var_reads(inner[k], shadowed, path + ("while", k))
            return
        for k, v in entry.items():
            if k not in _NOT_REFS:
                yield from _var_reads(v, candidates, path + (k,))


class CondSpec(StrictModel):
    pred: InputItem
    inputs: CallInputs = []
    then: Branch
    else_: Branch = Field(alias="else")
    doc: str | None = None


class _ControlNode(StrictModel):
    device: Device | None = None
    colocate_with: NameList = []
    after: NameList = []
    doc: str | None = None
    transfer: Transfer | None = None


class WhileNodeSpec(_ControlNode):
    """A loop node: its outputs (``name:k``) are the final values of its vars, in order."""

    while_: WhileSpec = Field(alias="while")


class CondNodeSpec(_ControlNode):
    """A conditional node: its outputs are the taken branch's."""

    cond: CondSpec
