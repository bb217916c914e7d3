"""Lowering: a validated ModelSpec becomes a GraphDef, built through GraphBuilder.

Inputs become Placeholders, variables VarHandleOp + initializer + Assign + Read, op nodes one
NodeDef each (their keyword inputs become Consts named ``<node>/<input>``), layers expand under
their name scope, calls inline their function (see functions.py). Nodes are lowered in
dependency order, spec order where possible. Independent errors are collected and raised
together; a node whose dependency failed is skipped silently (its cause is already reported).
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from specflow.errors import Location, MultipleErrors, SpecError, SpecflowError, did_you_mean
from specflow.graph import dtypes
from specflow.graph.builder import GraphBuilder
from specflow.graph.dtypes import as_dtype
from specflow.graph.graph_def import GraphDef, canonical_tensor
from specflow.graph.shapes import Shape
from specflow.ops.array_ops import const_value
from specflow.ops.registry import ArgDef, OpDef, TensorSpec, get_op
from specflow.schema.control_flow import is_control_flow, lower_cond, lower_while, node_refs
from specflow.schema.file_values import checkpoint_initializer, read_file_value
from specflow.schema.layers import (
    TRAINING_FLAG,
    LayerContext,
    VariableInfo,
    bind_inputs,
    create_variable,
    expand_layer,
)
from specflow.schema.layers.common import ensure_training_flag
from specflow.schema.layers.partitioned import gathers_rows, lookup_rows, partitioned_variable_value
from specflow.schema.namespace import Namespace, Skip, split_ref
from specflow.schema.signature_checks import missing_inputs
from specflow.schema.source import SourceMap, dotted

COMMON_FIELDS = ("inputs", "device", "colocate_with", "after", "doc", "transfer")


@dataclass
class Lowered:
    graph_def: GraphDef
    signatures: dict[str, dict[str, dict[str, tuple[str, TensorSpec]]]]
    variables: list[VariableInfo]
    collections: dict[str, list]
    builder: GraphBuilder
    init_op: str = "init"
    training_flag: str | None = None
    namespace: Namespace | None = None  # the model body's names, to resolve spec references later


def lower_spec(model, source: SourceMap, filename: str) -> Lowered:
    """Lower ``model`` (a ModelSpec) to a GraphDef; raises SpecflowError / MultipleErrors."""
    return Lowerer(model, source, filename).run()


@dataclass
class Chain:
    """Automatic control dependencies: the last stateful op of one function call."""

    last: str | None = None


@dataclass
class Lowerer:
    model: Any
    source: SourceMap
    filename: str
    builder: GraphBuilder = field(default_factory=GraphBuilder)
    errors: list[SpecflowError] = field(default_factory=list)
    call_stack: list[str] = field(default_factory=list)
    calls: dict[str, str] = field(default_factory=dict)  # a call node's scope -> its function
    shares: dict[str, str] = field(default_factory=dict)  # a call with share: -> the call owning its variables
    partitioned: dict[str, Any] = field(default_factory=dict)  # a partitioned variable's whole read -> it

    def run(self) -> Lowered:
        b = self.builder
        ns = Namespace(b, prefix="")
        self._lower_inputs(ns)
        self._lower_variables(ns)
        self.lower_body(ns, self.model.nodes, ("nodes",))
        signatures = self._signatures(ns)
        for section in ("inputs", "variables", "nodes"):  # `init` runs the initializers (README)
            if "init" in (getattr(self.model, section) or {}):
                self.errors.append(self.error("'init' is the name of the op that runs every initializer; name "
                                              f"the {section[:-1]} otherwise", (section, "init"), key=True))
        self._raise_errors()
        init_name = b.unique_name("init")
        b.add_op("NoOp", [], name=init_name, exact_name=True, location=Location(self.filename),
                 control_inputs=b.collections.get("init_ops", []))
        flag = b.collections.get("training_flag", [None])[0]
        return Lowered(
            graph_def=b.graph_def,
            signatures=signatures,
            variables=list(b.collections.get("variables", [])),
            collections=b.collections,
            builder=b,
            init_op=init_name,
            training_flag=flag,
            namespace=ns,
        )

    def _signatures(self, ns: Namespace) -> dict:
        out: dict = {}
        declared = {*self.model.nodes, *self.model.inputs, *(self.model.variables or {})}
        for sig_name, sig in self.model.signatures.items():
            entry: dict = {"inputs": {}, "outputs": {}}
            for part in ("inputs", "outputs"):
                for alias, ref in getattr(sig, part).items():
                    path = ("signatures", sig_name, part, alias)
                    if not ns.knows(ref):
                        if self.errors and split_ref(ref)[0] in declared:
                            continue  # a node that failed to lower (or one after it): its error is reported
                        self.record(self.error(
                            f"signature '{sig_name}' names a missing tensor '{ref}'"
                            + did_you_mean(split_ref(ref)[0], ns.names()), path), path)
                        continue
                    try:
                        t = canonical_tensor(ns.resolve(ref, path, self))
                        entry[part][alias] = (t, self.builder.spec(t))
                    except SpecflowError as e:
                        self.record(e, path)
            self._signature_connected(sig_name, sig, entry)
            out[sig_name] = entry
        return out

    def _signature_connected(self, sig_name: str, sig, entry: dict) -> None:
        """Each output needs only the signature's inputs (the training flag is folded away)."""
        fed = [t for t, _ in entry["inputs"].values()]
        exempt = set(self.builder.collections.get("training_flag", []))
        for alias, (tensor, _) in entry["outputs"].items():
            for name in missing_inputs(self.builder.graph_def, tensor, fed, exempt)[:1]:
                path = ("signatures", sig_name, "outputs", alias)
                self.record(self.error(f"signature '{sig_name}' output '{alias}' needs input '{name}', which the "
                                       f"signature does not take (its inputs: {', '.join(sig.inputs) or 'none'})",
                                       path), path)  # fmt: skip

    # --- errors -----------------------------------------------------------------------------

    def error(self, message: str, path: tuple, key: bool = False, cls=SpecError) -> SpecflowError:
        loc = self.source.key_location(path) if key else self.source.location(path)
        return cls(message, location=loc, path=dotted(path))

    def record(self, e: SpecflowError, path: tuple) -> None:
        if isinstance(e, MultipleErrors):
            for sub in e.errors:
                self.record(sub, path)
            return
        if e.location is None:
            e.location = self.source.key_location(path)
        if not e.path:
            e.path = dotted(path)
        self.errors.append(e)

    def _raise_errors(self) -> None:
        if len(self.errors) == 1:
            raise self.errors[0]
        if self.errors:
            raise MultipleErrors(self.errors)

    # --- inputs and variables ---------------------------------------------------------------

    def _lower_inputs(self, ns: Namespace) -> None:
        b = self.builder
        for name, spec in self.model.inputs.items():
            path = ("inputs", name)
            try:
                with b.location(self.source.key_location(path)):
                    dt = as_dtype(spec.dtype)
                    shape = Shape(spec.shape) if spec.shape is not None else Shape.unknown()
                    if name == TRAINING_FLAG and (dt != dtypes.bool_ or shape.rank != 0):
                        raise self.error(
                            f"input '{TRAINING_FLAG}' is the training-mode flag and must be a bool scalar "
                            f"(dtype: bool, shape: [])",
                            path,
                            key=True,
                        )
                    attrs = {"dtype": dt, "shape": shape}
                    if spec.has_default:
                        value = b.const(np.asarray(spec.default, dt.numpy), dt, name=f"{name}/input")
                        b.add_op("PlaceholderWithDefault", [value], attrs, name=name, exact_name=True)
                    else:
                        b.add_op("Placeholder", [], attrs, name=name, exact_name=True)
                    if name == TRAINING_FLAG:
                        ensure_training_flag(b)
                ns.add_tensors(name, [name])
            except SpecflowError as e:
                self.record(e, path)

    def _lower_variables(self, ns: Namespace) -> None:
        b = self.builder
        for name, spec in self.model.variables.items():
            path = ("variables", name)
            try:
                init = spec.initializer
                if init.kind == "checkpoint":
                    init = checkpoint_initializer(self.filename, init, name)
                with b.location(self.source.key_location(path)), b.device(spec.device or ""):
                    if spec.partitions is not None or spec.partitioner is not None:
                        whole, self.partitioned[whole] = partitioned_variable_value(b, name, spec, init,
                                                                                    self.model.seed)  # fmt: skip
                        ns.add_tensors(name, [whole])
                        continue
                    info = create_variable(b, name, spec.shape, spec.dtype, init, spec.trainable, self.model.seed)
                ns.add_variable(name, info)
            except SpecflowError as e:
                self.record(e, path)

    # --- nodes in dependency order ----------------------------------------------------------

    def lower_body(self, ns: Namespace, nodes: dict, prefix: tuple, chain: Chain | None = None,
                   parse=None) -> set[str]:
        """Lower ``nodes`` (name -> NodeSpec, or raw dicts with ``parse``) into ``ns``; return
        the names that failed. Dependencies first (DFS in spec order); a cycle is an error
        listing its nodes, at the first one's location."""
        specs: dict[str, Any] = {}
        failed: set[str] = set()
        for name, raw in nodes.items():
            try:
                specs[name] = parse(raw, prefix + (name,)) if parse else raw
            except SpecflowError as e:
                self.record(e, prefix + (name,))
                failed.add(name)
        state: dict[str, str] = {}  # name -> "active" | "done"
        order = list(nodes)

        def visit(name: str, stack: list[str]) -> None:
            if state.get(name) == "done":
                return
            if state.get(name) == "active":
                cyc = stack[stack.index(name):]
                cyc.reverse()  # producer -> consumer
                first = min(cyc, key=order.index)
                i = cyc.index(first)
                cyc = cyc[i:] + cyc[:i]
                self.record(self.error("cycle among nodes: " + " -> ".join(cyc + [first]),
                                       prefix + (first,), key=True), prefix + (first,))
                failed.update(cyc)
                raise Skip
            state[name] = "active"
            stack.append(name)
            try:
                for dep in node_refs(specs[name], specs):
                    if dep in failed:
                        raise Skip
                    visit(dep, stack)
                    if dep in failed:
                        raise Skip
            except Skip:
                failed.add(name)
                return
            finally:
                stack.pop()
                state[name] = "done"
            try:
                self.lower_node(ns, name, specs[name], prefix + (name,), chain)
            except Skip:
                failed.add(name)
            except SpecflowError as e:
                self.record(e, prefix + (name,))
                failed.add(name)

        for name in order:
            if name in specs:
                try:
                    visit(name, [])
                except Skip:
                    pass
        return failed

    def lower_node(self, ns: Namespace, name: str, spec, path: tuple, chain: Chain | None) -> None:
        b = self.builder
        loc = self.source.key_location(path)
        device = spec.device if spec.device else None
        start = len(b.graph_def.nodes)
        with b.location(loc):
            control = [n for a in spec.after for n in ns.control_nodes(a, path + ("after",), self)]
            coloc = [ns.colocation_node(c, path + ("colocate_with",), self) for c in spec.colocate_with]
            if hasattr(spec, "op"):
                node = self.lower_op(ns, spec, name, path, chain, device, control, coloc)
                ns.add_node(name, node)
            elif hasattr(spec, "layer"):
                out = self._lower_layer(ns, spec, name, path, device, control, coloc)
                if isinstance(out, list):
                    ns.add_tensors(name, out)
                else:
                    ns.add_node(name, out)
            elif is_control_flow(spec):
                lower = lower_while if hasattr(spec, "while_") else lower_cond
                with (b.device(device) if device else nullcontext()):
                    ns.add_tensors(name, lower(self, ns, name, spec, path, control))
            else:
                from specflow.schema.functions import inline_call

                ns.add_tensors(name, inline_call(self, ns, name, spec, path, device, control))
        if spec.transfer:  # how this node's float32 outputs cross devices (runtime/partition.py)
            for n in b.graph_def.nodes[start:]:
                n.attrs.setdefault("_transfer", spec.transfer)

    def _lower_layer(self, ns, spec, name, path, device, control, coloc) -> str | list[str]:
        b = self.builder
        items = spec.inputs.items() if isinstance(spec.inputs, dict) else enumerate(spec.inputs)
        with b.name_scope(name):
            resolved = {k: self.resolve_item(ns, item, path + ("inputs", k), name) for k, item in items}
        inputs = resolved if isinstance(spec.inputs, dict) else list(resolved.values())
        ctx = LayerContext(name=b.scoped(name), graph_seed=self.model.seed, training=lambda: ensure_training_flag(b))
        try:
            bind_inputs(spec.layer, inputs, ctx.name)
        except SpecError as e:
            raise self.error(e.message, path + ("inputs",)) from None
        start = len(b.graph_def.nodes)
        with (b.device(device) if device else nullcontext()):
            out = expand_layer(b, name, inputs, spec.config, ctx, kind=spec.layer)
        created = b.graph_def.nodes[start:]
        add_control_inputs(compute_nodes(created, b), control)
        if coloc:
            b.graph_def.node(out[0] if isinstance(out, list) else out).attrs["_class"] = [f"loc:@{c}" for c in coloc]
        return out

    # --- op nodes ---------------------------------------------------------------------------

    def lower_op(self, ns: Namespace, spec, name: str, path: tuple, chain: Chain | None,
                 device: str | None = None, control=(), coloc=()) -> str:
        """Lower op node ``name`` (relative to the builder's scope); return its node name."""
        b = self.builder
        try:
            opdef = get_op(spec.op)
        except SpecflowError as e:
            raise self.error(e.message, path + ("op",)) from None
        attrs, keywords = self._split_params(opdef, spec.params, path)
        if opdef.name == "Const":
            try:
                read_file_value(self.filename, attrs)  # value: {npy: file} (what `import` writes)
            except SpecError as e:
                raise self.error(e.message, path + ("value",)) from None
            if "value" in attrs and "dtype" in attrs:
                attrs["value"] = self._const_value(attrs["value"], attrs["dtype"], path)
        assigned = self._assign_positional(opdef, spec, keywords, path)
        tensors: dict[str, list[str]] = {}
        with b.name_scope(name):
            # References and inline nodes first (so literals can take their dtypes), then literals.
            for arg in opdef.inputs:
                if arg.name in assigned:
                    tensors[arg.name] = [
                        self.resolve_item(ns, item, p, name, resource=arg.dtype == dtypes.resource, chain=chain)
                        for item, p in assigned[arg.name]
                    ]
                elif arg.name in keywords:
                    key, value = keywords[arg.name]
                    ref = self._keyword_ref(ns, arg, value, path + (key,), name, chain)
                    if ref is not None:
                        tensors[arg.name] = ref
            for arg in opdef.inputs:
                if arg.name in tensors:
                    continue
                if arg.name in keywords:
                    key, value = keywords[arg.name]
                    tensors[arg.name] = [self._literal(opdef, arg, value, attrs, tensors, path + (key,))]
                elif arg.has_default:
                    tensors[arg.name] = [self._default(opdef, arg, attrs, tensors, path)]
                else:
                    raise self.error(
                        f"{opdef.name} is missing input '{arg.name}'; it takes {_arg_names(opdef)}",
                        path + ("inputs",),
                    )
        flat = [t for arg in opdef.inputs for t in tensors[arg.name]]
        ctrl = list(control)
        if chain is not None and opdef.is_stateful:
            if chain.last is not None:
                ctrl.append(chain.last)
        full = b.scoped(name)
        table = self.partitioned.get(flat[0]) if flat else None
        if table is not None and gathers_rows(b, opdef.name, flat, attrs):  # rows of a partitioned variable
            start = len(b.graph_def.nodes)
            with b.name_scope(name), (b.device(device) if device else nullcontext()):
                out = lookup_rows(b, table, flat[1], full, self.model.seed)
            add_control_inputs(compute_nodes(b.graph_def.nodes[start:], b), ctrl)
            return out
        node = b.add_op(opdef.name, flat, attrs, name=full, exact_name=True, device=device,
                        control_inputs=ctrl, colocate_with=coloc)
        if chain is not None and opdef.is_stateful:
            chain.last = node.name
        return node.name

    def _split_params(self, opdef: OpDef, params: dict, path: tuple):
        attrs: dict[str, Any] = {}
        keywords: dict[str, tuple[str, Any]] = {}
        by_key = {a.name: a for a in opdef.inputs} | {a.alias: a for a in opdef.inputs if a.alias}
        for key, value in params.items():
            if key in opdef.attrs:
                attrs[key] = value
            elif key in by_key:
                arg = by_key[key]
                if arg.name in keywords:
                    raise self.error(f"input '{arg.name}' given twice (as '{keywords[arg.name][0]}' and '{key}')",
                                     path + (key,), key=True)
                keywords[arg.name] = (key, value)
            else:
                known = list(opdef.attrs) + list(by_key) + list(COMMON_FIELDS)
                raise self.error(f"unknown field '{key}' for op {opdef.name}" + did_you_mean(key, known),
                                 path + (key,), key=True)
        return attrs, keywords

    def _assign_positional(self, opdef: OpDef, spec, keywords: dict, path: tuple) -> dict[str, list]:
        """Positional inputs fill the args not given by keyword, in order; a list arg takes
        what the args after it (without a spec default) leave."""
        items = [(item, path + ("inputs", i)) for i, item in enumerate(spec.inputs)]
        free = [a for a in opdef.inputs if a.name not in keywords]
        lists = [i for i, a in enumerate(free) if a.is_list]
        out: dict[str, list] = {}
        if not lists:
            if len(items) > len(free):
                raise self.error(
                    f"{opdef.name} takes {len(opdef.inputs)} input(s) {_arg_names(opdef)}, got "
                    f"{len(items) + len(keywords)}",
                    path + ("inputs",),
                )
            for arg, item in zip(free, items, strict=False):
                out[arg.name] = [item]
            return out
        li = lists[0]
        before, lst, after = free[:li], free[li], free[li + 1 :]
        n_after = min(len([a for a in after if not a.has_default]), max(0, len(items) - len(before)))
        n_list = max(0, len(items) - len(before) - n_after)
        it = iter(items)
        for arg in before:
            nxt = next(it, None)
            if nxt is not None:
                out[arg.name] = [nxt]
        out[lst.name] = [next(it) for _ in range(n_list)]
        for arg in after:
            nxt = next(it, None)
            if nxt is not None:
                out[arg.name] = [nxt]
        return out

    def _const_value(self, value, dtype, path: tuple) -> np.ndarray:
        """A Const's value cast to its dtype here, so a bad one fails at its line, not at run time."""
        try:
            dt = as_dtype(dtype)
        except Exception:  # noqa: BLE001 - a bad dtype is reported with the attrs, where it is checked
            return value
        try:
            return const_value(value, dt)
        except (TypeError, ValueError) as e:
            raise self.error(f"Const value: {e}", path + ("value",)) from None

    def _keyword_ref(self, ns, arg: ArgDef, value, path, parent, chain) -> list[str] | None:
        """Tensors for a keyword input that references tensors (or inline nodes); None for a
        literal."""
        resource = arg.dtype == dtypes.resource
        if isinstance(value, str) and (arg.dtype != dtypes.string or ns.knows(value)):
            return [self.resolve_item(ns, value, path, parent, resource=resource, chain=chain)]
        if arg.is_list and isinstance(value, list) and value and all(isinstance(v, (str, dict)) for v in value):
            return [self.resolve_item(ns, v, path + (i,), parent, chain=chain) for i, v in enumerate(value)]
        if isinstance(value, dict):
            return [self.resolve_item(ns, value, path, parent, chain=chain)]
        return None

    def resolve_item(self, ns, item, path: tuple, parent: str, resource: bool = False, chain=None) -> str:
        """An input: a reference string, or an inline op node lowered as ``<parent>/<Op>``
        (the caller has the parent's name scope open)."""
        if isinstance(item, str):
            return ns.resolve(item, path, self, resource=resource)
        if isinstance(item, dict):
            from specflow.schema.models import parse_node

            item = parse_node(item, path, self.source)
        if not hasattr(item, "op"):
            raise self.error("an inline node must be an op node ({op: ...})", path)
        b = self.builder
        rel = b.unique_name(item.op).rsplit("/", 1)[-1]
        loc = self.source.location(path)
        with b.location(loc):
            node = self.lower_op(ns, item, rel, path, chain, device=item.device or None,
                                 control=[n for a in item.after for n in ns.control_nodes(a, path, self)],
                                 coloc=[ns.colocation_node(c, path, self) for c in item.colocate_with])
        return node

    def _literal(self, opdef: OpDef, arg: ArgDef, value, attrs: dict, tensors: dict, path: tuple) -> str:
        dt = self._literal_dtype(opdef, arg, value, attrs, tensors)
        if dt is not None and dt.name != "string" and not isinstance(value, str):
            try:  # as a Const's value: `y: 1.5` beside int64 labels is not truncated to 1
                return self.builder.const(const_value(value, dt), dt, name=arg.name)
            except ValueError as e:
                raise self.error(f"input '{arg.name}' of {opdef.name}: {e}", path) from None
        try:
            arr = np.asarray(value, dtype=dt.numpy if dt is not None else None)
        except OverflowError:
            kind = dt.name if dt is not None else "int64"
            raise self.error(f"input '{arg.name}' of {opdef.name}: {value!r} is out of range for {kind}", path) from None
        except (TypeError, ValueError) as e:
            raise self.error(f"input '{arg.name}' of {opdef.name}: bad literal {value!r} ({e})", path) from None
        if arr.dtype == object and dt is None:
            if _has_int(value):  # numpy keeps an int beyond int64 as a Python object
                raise self.error(f"input '{arg.name}' of {opdef.name}: {value!r} is out of range for int64", path)
            raise self.error(f"input '{arg.name}' of {opdef.name}: '{value}' names no tensor", path)
        final = dt or _default_dtype(arr, arg, opdef)
        if arr.size and arr.dtype.kind in "ui" and final.is_integer:  # 2**63 is numpy's uint64: no wrap to -2**63
            info = np.iinfo(final.numpy)
            if int(arr.min()) < info.min or int(arr.max()) > info.max:
                raise self.error(f"input '{arg.name}' of {opdef.name}: {value!r} is out of range for {final.name}", path)
        return self.builder.const(arr, final, name=arg.name)

    def _default(self, opdef: OpDef, arg: ArgDef, attrs: dict, tensors: dict, path: tuple) -> str:
        value = arg.default
        if callable(value):
            specs = [self.builder.spec(t) for a in opdef.inputs if a.name in tensors for t in tensors[a.name]]
            try:
                value = value(specs)
            except ValueError as e:
                if arg.name == "reduction_indices" and specs:  # rank unknown until run time: TF's range(rank(x))
                    return self._all_axes_at_run_time(tensors[opdef.inputs[0].name][0])
                hint = "" if "explicitly" in str(e) else "; give it explicitly"
                raise self.error(f"{opdef.name}: cannot default input '{arg.name}' ({e}){hint}", path + ("inputs",)) from None
        return self._literal(opdef, arg, value, attrs, tensors, path)

    def _all_axes_at_run_time(self, x: str) -> str:
        b = self.builder
        rank = b.add_op("Rank", [x], {}, name=b.unique_name("Rank"), exact_name=True).name
        start, delta = b.const(np.int32(0), dtypes.int32, name="start"), b.const(np.int32(1), dtypes.int32, name="delta")
        return b.add_op("Range", [start, rank, delta], {}, name=b.unique_name("reduction_indices"), exact_name=True).name

    def _literal_dtype(self, opdef: OpDef, arg: ArgDef, value, attrs: dict, tensors: dict):
        """The dtype a literal input takes: the arg's fixed type, its type attr if given or
        bound by another input, else a natural type (int32 unless values need int64)."""
        if arg.dtype is not None:
            return arg.dtype
        ta = arg.type_attr
        if ta in attrs:
            return as_dtype(attrs[ta])
        for other in opdef.inputs:
            if other.type_attr == ta and tensors.get(other.name):
                return self.builder.spec(tensors[other.name][0]).dtype
        if isinstance(value, np.ndarray):
            return as_dtype(value.dtype)
        return None


def _default_dtype(arr: np.ndarray, arg: ArgDef, opdef: OpDef):
    """TensorFlow's Python defaults (float32, int32 unless too big) within what the arg allows."""
    dt = as_dtype(arr.dtype) if arr.dtype != object else dtypes.string
    adef = opdef.attrs.get(arg.type_attr) if arg.type_attr else None
    if arr.size == 0 and arr.dtype == np.float64 and adef is not None and adef.has_default:
        # An empty list has no element type: TF takes the type attr's default (axis: [] is int32).
        return as_dtype(adef.default)
    if arr.dtype != object:
        dt = as_dtype(dtypes.python_number_dtype(arr))
    allowed = opdef.attrs[arg.type_attr].allowed if arg.type_attr in opdef.attrs else None
    if allowed and dt not in allowed:
        for alt in (dtypes.int64, dtypes.float32, dtypes.float64):
            if alt in allowed and (alt.is_floating or dt.is_integer):
                return alt
    return dt


def _arg_names(opdef: OpDef) -> str:
    return "(" + ", ".join(a.name for a in opdef.inputs) + ")"


def compute_nodes(nodes, builder) -> list:
    """The nodes among ``nodes`` that compute (not a variable's handle, initializer, assign or
    read): control dependencies and call chains apply to these only, so that reading a
    variable never re-runs its initializer."""
    setup: set[str] = set()
    for v in builder.collections.get("variables", []):
        setup |= {v.name, f"{v.name}/Assign", f"{v.read.split(':')[0]}"}
    return [n for n in nodes if n.name not in setup and "/Initializer/" not in n.name]


def add_control_inputs(nodes, control: list[str]) -> None:
    """Append ``^c`` for each of ``control`` to each node (control inputs go last)."""
    for n in nodes:
        for c in control:
            if f"^{c}" not in n.inputs and c != n.name:
                n.inputs.append(f"^{c}")


# --- names a body can reference -------------------------------------------------------------


def _has_int(value) -> bool:
    """Whether a literal is, or holds, a (non-bool) int."""
    if isinstance(value, (list, tuple)):
        return any(_has_int(v) for v in value)
    return isinstance(value, int) and not isinstance(value, bool)
