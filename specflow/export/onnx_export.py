"""ONNX export of one signature of a :class:`~specflow.export.serving.ServingModel`.

``export_onnx(model, path, signature)`` writes ``path`` (the CLI uses ``EXPORT_DIR/model.onnx``)
atomically. The graph's inputs and outputs are the signature's aliases (``None`` dims become
symbolic dims: ``batch`` for the first); variables and constants become initializers.

Conversion walks the part of the graph the signature's outputs need, in topological order:
constants (including small subgraphs the shape inferencer folded), variable reads, placeholders
and identities are resolved here; every other op goes through the mapping table in
:mod:`specflow.export.onnx_ops`, :mod:`specflow.export.onnx_ops_math`, `onnx_ops_array`, `onnx_ops_image` and
:mod:`specflow.export.onnx_ops_nn`. An op without a mapping
stops the export with an :class:`ExportError` naming the node, the op and the spec location.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from specflow import __version__
from specflow.errors import ExportError, SpecflowError
from specflow.export import (  # noqa: F401  (register the mappings)
    onnx_ops_array,
    onnx_ops_image,
    onnx_ops_math,
    onnx_ops_nn,
)
from specflow.export.onnx_ops import MAPPINGS, Mapping
from specflow.graph.dtypes import DType, as_dtype
from specflow.graph.graph_def import NodeDef, canonical_tensor, parse_input
from specflow.graph.shape_inference import ShapeInferencer
from specflow.graph.topo import LOOP_BACK_EDGES, forward_view, topological_order
from specflow.io.tensor_bundle import usual_mode
from specflow.ops.registry import TensorSpec, get_op, has_op

MODEL_FILE = "model.onnx"  # the file name `specflow export --format onnx` writes in EXPORT_DIR
OPSET = 26  # the newest opset onnxruntime 1.31 runs (onnx 1.23 defines up to 28)
IR_VERSION = 13  # the newest IR version onnxruntime 1.31 loads
PASS_THROUGH = {"Identity", "StopGradient", "Snapshot"}
SELECT_OPS = {"Select", "SelectV2"}
_SOURCES = {"Const", "Placeholder", "VarHandleOp", "ReadVariableOp"}  # resolved without inputs
_MISSING = object()


def export_onnx(model, out_path: str | Path, signature: str) -> None:
    """Write ``signature`` of ``model`` (a ServingModel) as an ONNX model file at ``out_path``."""
    data = to_onnx(model, signature).SerializeToString()
    path = Path(out_path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            usual_mode(tmp)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as e:
        raise ExportError(f"cannot write {path}: {e.strerror}") from None


def to_onnx(model, signature: str):
    """``signature`` of ``model`` as a checked ``onnx.ModelProto``."""
    onnx = import_onnx()
    if signature not in model.signatures:
        known = ", ".join(sorted(model.signatures)) or "none"
        raise ExportError(f"the model has no signature '{signature}' (signatures: {known})")
    graph = _Converter(onnx, model, model.signatures[signature]).convert(signature)
    proto = onnx.helper.make_model(
        graph,
        opset_imports=[onnx.helper.make_opsetid("", OPSET)],
        ir_version=IR_VERSION,
        producer_name="specflow",
        producer_version=__version__,
    )
    if any(not o.type.tensor_type.HasField("shape") for o in proto.graph.output):
        # ONNX graph outputs need a rank; take it from ONNX's shape inference where ours had none.
        proto = onnx.shape_inference.infer_shapes(proto)
        for o in proto.graph.output:
            if not o.type.tensor_type.HasField("shape"):
                raise ExportError(f"signature '{signature}': output '{o.name}' has an unknown rank, "
                                  "which an ONNX graph output cannot have")
    try:
        onnx.checker.check_model(proto, full_check=True)
    except Exception as e:  # a mapping bug, not a user error: say so, with the checker's reason
        raise ExportError(f"internal: the ONNX graph of signature '{signature}' fails onnx.checker: {e}") from None
    return proto


def run_onnx(path: str | Path, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run the ONNX model at ``path`` with onnxruntime (CPU): graph input name -> value in, graph
    output name -> value out. Used to check an export against specflow's own outputs."""
    try:
        import onnxruntime
    except ImportError:
        raise ExportError("running an ONNX export needs onnxruntime: pip install onnxruntime") from None
    try:
        session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        names = [o.name for o in session.get_outputs()]
        return dict(zip(names, session.run(names, feeds)))
    except Exception as e:  # onnxruntime raises its own exception types for corrupt files and bad feeds
        raise ExportError(f"{path}: onnxruntime cannot run the model: {e}") from None


def import_onnx():
    try:
        import onnx
    except ImportError:
        raise ExportError('ONNX export needs the onnx package: pip install "onnx>=1.23" "onnxruntime>=1.32" (the [onnx] extra)') from None
    return onnx


class _Converter:
    """State of one conversion: specflow tensor -> ONNX name, emitted nodes and initializers."""

    def __init__(self, onnx, model, sig):
        self.onnx = onnx
        self.graph = model.graph_def
        self.nodes = self.graph.node_map()
        self.order = topological_order(self.graph, allow_back_edges=LOOP_BACK_EDGES)
        self.variables = model.variables
        self.sig = sig
        self.inferencer = _infer(self.order, self.nodes)
        self.loops = _loops_by_exit(self.graph)  # Exit node -> its while loop
        self.fed = {canonical_tensor(t): alias for alias, (t, _) in sig.inputs.items()}
        self.names: dict[str, str] = dict(self.fed)  # specflow tensor "n:k" -> ONNX tensor name
        self.taken: set[str] = set(sig.inputs) | set(sig.outputs)
        self.onnx_nodes: list = []
        self.initializers: list = []
        self.var_names: dict[str, str] = {}  # variable shared_name -> initializer name
        self.used: set[str] = set()  # tensors the signature's outputs need

    # --- the walk ---------------------------------------------------------------------------

    def convert(self, name: str):
        for alias, (_, spec) in self.sig.inputs.items():
            if spec.shape.rank is None:
                raise ExportError(f"signature '{name}': input '{alias}' has an unknown rank, which an ONNX "
                                  "graph input cannot have (declare its shape in the spec)")
        clash = set(self.sig.inputs) & set(self.sig.outputs)
        if clash:
            raise ExportError(f"signature '{name}' names both an input and an output '{sorted(clash)[0]}'; "
                              "ONNX needs distinct names")
        helper = self.onnx.helper
        outputs = {alias: canonical_tensor(t) for alias, (t, _) in self.sig.outputs.items()}
        self._emit_all(self._closure(outputs.values(), set(self.fed)))
        for alias, t in outputs.items():
            self.onnx_nodes.append(helper.make_node("Identity", [self.name(t)], [alias], name=self.fresh(alias)))
        return helper.make_graph(
            self.onnx_nodes,
            name,
            [self._value_info(a, s) for a, (_, s) in self.sig.inputs.items()],
            [self._value_info(a, s) for a, (_, s) in self.sig.outputs.items()],
            initializer=self.initializers,
        )

    def _closure(self, tensors, stop: set[str]) -> set[str]:
        """Names of the nodes computing ``tensors`` from ``stop`` (tensors already named);
        adds the tensors read to ``self.used``."""
        todo, nodes, seen = list(tensors), set(), set()
        while todo:
            t = todo.pop()
            if t in seen:
                continue
            seen.add(t)
            self.used.add(t)
            if t in stop:
                continue
            name = parse_input(t).node
            if name not in self.nodes:
                raise ExportError(f"signature tensor '{t}' names no node in the serving graph")
            if name not in nodes:
                nodes.add(name)
                todo.extend(self._reads(self.nodes[name]))
        return nodes

    def _reads(self, node: NodeDef) -> list[str]:
        """The tensors converting ``node`` reads (constant-read and variable inputs excluded)."""
        ins = [canonical_tensor(i) for i in node.data_inputs]
        if node.op in _SOURCES or self._folded(node):
            return []
        if node.op in PASS_THROUGH or node.op == "PlaceholderWithDefault":
            return ins[:1]
        if node.op in SELECT_OPS and (branch := self._select_branch(node)) is not None:
            return [branch]
        if node.name in self.loops:  # a while loop's Exit: the loop needs its inputs and captures
            loop = self.loops[node.name]
            return [canonical_tensor(t) for t in [*loop.loop_vars, *loop.captures]]
        mapping = MAPPINGS.get(node.op)
        if mapping is None:
            return []  # _emit reports it
        consts = {c % len(ins) for c in mapping.consts}
        return [t for i, t in enumerate(ins) if i not in consts and self._producer(t).op != "VarHandleOp"]

    def _emit_all(self, names: set[str]) -> None:
        for node in self.order:
            if node.name in names:
                self._emit(node)

    def _emit(self, node: NodeDef) -> None:
        out0 = f"{node.name}:0"
        if node.op == "Const" or self._folded(node) or (
                node.op in PASS_THROUGH | {"PlaceholderWithDefault"} and self.const_value(out0) is not None):
            return  # constants become initializers when first read (see name())
        if node.op == "ReadVariableOp":
            self.names[out0] = self.variable(parse_input(node.data_inputs[0]).node, node)
        elif node.op in ("Placeholder", "VarHandleOp"):
            what = "placeholder" if node.op == "Placeholder" else "variable handle"
            raise ExportError(f"the signature needs {what} '{node.name}' but does not take it as an input "
                              f"(inputs: {', '.join(sorted(self.fed.values())) or 'none'})",
                              node=node.name, location=node.location)
        elif node.op in PASS_THROUGH or node.op == "PlaceholderWithDefault":
            self.names[out0] = self.name(canonical_tensor(node.data_inputs[0]))
        elif node.op in SELECT_OPS and (branch := self._select_branch(node)) is not None:
            self.names[out0] = self.name(branch)
        elif node.name in self.loops:
            if f"{node.name}:0" not in self.names:  # one Loop writes every Exit of its frame
                self._emit_loop(self.loops[node.name])
        elif node.op in MAPPINGS:
            MAPPINGS[node.op].fn(NodeContext(self, node, MAPPINGS[node.op]))
        else:
            raise ExportError(f"op '{node.op}' has no ONNX mapping", node=node.name, location=node.location)

    def name(self, t: str) -> str:
        """The ONNX name of specflow tensor ``t``; a constant becomes an initializer on first use."""
        if t not in self.names:
            value = self.const_value(t)
            if value is None:
                raise ExportError(f"internal: tensor '{t}' read before it was converted")
            self.names[t] = self.tensor(value, t)
        return self.names[t]

    # --- while loops ------------------------------------------------------------------------

    def _emit_loop(self, loop) -> None:
        """A TF while loop (Enter/Merge/Switch/Exit/NextIteration) as one ONNX Loop. TF tests the
        condition before each iteration, ONNX after: the condition is converted twice, on the
        initial values (outside) and on each iteration's new values (inside the body). Captured
        tensors are read from the outer scope."""
        helper, frame = self.onnx.helper, loop.frame_name
        captures = {f"{enter}:0": self.name(canonical_tensor(t)) for t, enter in loop.captures.items()}
        cond = canonical_tensor(self.nodes[loop.loop_cond].data_inputs[0])
        initial = [self.name(canonical_tensor(v)) for v in loop.loop_vars]
        first = self._subgraph([cond], {**captures, **{f"{m}:0": v for m, v in zip(loop.merges, initial)}})
        self.onnx_nodes.extend(first[0])
        specs = [self.spec(f"{m}:0") for m in loop.merges]
        inside = [self.fresh(f"{m}/in") for m in loop.merges]
        nexts = [canonical_tensor(self.nodes[n].data_inputs[0]) for n in loop.next_iterations]
        step = {f"{i}:0": v for i, v in zip(loop.identities, inside) if i}
        body_nodes, names = self._subgraph(nexts, {**captures, **step})
        new = [names[t] for t in nexts]
        cond_nodes, cond_names = self._subgraph([cond], {**captures, **{f"{m}:0": v for m, v in zip(loop.merges, new)}})
        outs = [self.fresh(f"{frame}/cond_out"), *(self.fresh(f"{m}/out") for m in loop.merges)]
        copies = [helper.make_node("Identity", [v], [o], name=self.fresh(o))
                  for v, o in zip([cond_names[cond], *new], outs)]  # body outputs need names of their own
        bool_type = onnx_type(self.onnx, as_dtype("bool"))
        body = helper.make_graph(
            body_nodes + cond_nodes + copies, self.fresh(f"{frame}/body"),
            [helper.make_tensor_value_info(self.fresh(f"{frame}/iteration"), onnx_type(self.onnx, as_dtype("int64")), []),
             helper.make_tensor_value_info(self.fresh(f"{frame}/cond_in"), bool_type, []),
             *(self._loop_var_info(n, s, loop) for n, s in zip(inside, specs))],
            [helper.make_tensor_value_info(outs[0], bool_type, []),
             *(self._loop_var_info(n, s, loop) for n, s in zip(outs[1:], specs))],
        )
        results = [f"{e}:0" if e else self.fresh(f"{frame}/unused") for e in loop.exits]
        results = [self.fresh(r) for r in results]
        self.onnx_nodes.append(helper.make_node("Loop", ["", first[1][cond], *initial], results,
                                                name=self.fresh(frame), body=body))
        for e, r in zip(loop.exits, results):
            if e:
                self.names[f"{e}:0"] = r

    def _subgraph(self, tensors: list[str], names: dict[str, str]) -> tuple[list, dict[str, str]]:
        """Convert what ``tensors`` need with ``names`` bound (loop values, captures) into a separate
        node list; returns it and the names it ends with. Outer names stay visible."""
        saved = self.names, self.onnx_nodes
        self.names, self.onnx_nodes = {**self.names, **names}, []
        try:
            self._emit_all(self._closure(tensors, set(self.names)))
            return self.onnx_nodes, self.names
        finally:
            self.names, self.onnx_nodes = saved

    def _loop_var_info(self, name: str, spec: TensorSpec | None, loop):
        if spec is None or spec.shape.rank is None:
            raise ExportError(f"while loop '{loop.frame_name}': a loop variable of unknown rank cannot be "
                              "exported to ONNX")
        return self.onnx.helper.make_tensor_value_info(name, onnx_type(self.onnx, spec.dtype), spec.shape.as_list())

    # --- constants ----------------------------------------------------------------------------

    def const_value(self, t: str) -> np.ndarray | None:
        """The value of tensor ``t`` when it is a constant (through identities and unfed defaults)."""
        if t in self.fed:
            return None
        node = self._producer(t)
        if node.op == "Const":
            return np.asarray(node.attrs["value"], dtype=node.attrs["dtype"].numpy)
        if node.op in PASS_THROUGH or node.op == "PlaceholderWithDefault":
            return self.const_value(canonical_tensor(node.data_inputs[0]))
        value = self.inferencer.value(t)
        return None if value is None else np.asarray(value)

    def _folded(self, node: NodeDef) -> bool:
        """Whether the shape inferencer computed every output of ``node`` (a constant subgraph)."""
        if node.op in _SOURCES or node.op in PASS_THROUGH or not has_op(node.op) or get_op(node.op).is_stateful:
            return False
        outs = self.inferencer.values.get(node.name)
        return bool(outs) and all(v is not None for v in outs)

    def _select_branch(self, node: NodeDef) -> str | None:
        """The branch a Select with a constant scalar condition always picks (dropout and batch
        norm at inference), when it has the Select's shape; else None."""
        cond = self.const_value(canonical_tensor(node.data_inputs[0]))
        if cond is None or cond.ndim != 0:
            return None
        branch = canonical_tensor(node.data_inputs[1 if cond else 2])
        out, b = self.spec(f"{node.name}:0"), self.spec(branch)
        return branch if out is not None and b is not None and out.shape == b.shape else None

    # --- names, initializers, variables ----------------------------------------------------------

    def fresh(self, base: str) -> str:
        name, i = base, 0
        while name in self.taken:
            i += 1
            name = f"{base}_{i}"
        self.taken.add(name)
        return name

    def tensor(self, array: np.ndarray, base: str) -> str:
        name = self.fresh(base)
        self.initializers.append(self.onnx.numpy_helper.from_array(np.asarray(array), name))
        return name

    def variable(self, handle: str, user: NodeDef) -> str:
        node = self.nodes[handle]
        if node.op != "VarHandleOp":
            raise ExportError(f"reads a resource from '{handle}' ({node.op}), not from a VarHandleOp",
                              node=user.name, location=user.location)
        shared = node.attrs.get("shared_name") or node.name
        if shared not in self.var_names:
            if shared not in self.variables:
                raise ExportError(f"the serving model has no value for variable '{shared}'",
                                  node=user.name, location=user.location)
            self.var_names[shared] = self.tensor(self.variables[shared], shared)
        return self.var_names[shared]

    def spec(self, t: str) -> TensorSpec | None:
        try:
            return self.inferencer.spec(t)
        except SpecflowError:
            return None

    def _producer(self, t: str) -> NodeDef:
        return self.nodes[parse_input(t).node]

    def _value_info(self, alias: str, spec: TensorSpec):
        dims = spec.shape.as_list()
        if dims is not None:
            dims = [d if d is not None else ("batch" if i == 0 else f"{alias}_dim{i}") for i, d in enumerate(dims)]
        return self.onnx.helper.make_tensor_value_info(alias, onnx_type(self.onnx, spec.dtype), dims)


class NodeContext:
    """What a mapping function sees of the node it converts (see :mod:`specflow.export.onnx_ops`)."""

    def __init__(self, conv: _Converter, node: NodeDef, mapping: Mapping):
        self.conv, self.node, self.mapping = conv, node, mapping
        self.inputs = [canonical_tensor(i) for i in node.data_inputs]
        self.n_inputs = len(self.inputs)

    def inp(self, i: int) -> str:
        """The ONNX name of data input ``i``."""
        return self.conv.name(self.inputs[i])

    def is_const(self, i: int) -> bool:
        return self.conv.const_value(self.inputs[i]) is not None

    def const(self, i: int) -> np.ndarray:
        value = self.conv.const_value(self.inputs[i])
        if value is None:
            raise self.fail(f"input {i % self.n_inputs} ('{self.inputs[i]}') must be a constant for ONNX export")
        return value

    def spec(self, i: int) -> TensorSpec | None:
        return self.conv.spec(self.inputs[i])

    def dtype(self, i: int) -> DType:
        spec = self.spec(i)
        if spec is not None:
            return spec.dtype
        if isinstance(self.node.attrs.get("T"), DType):
            return self.node.attrs["T"]
        raise self.fail(f"the dtype of input {i} is unknown")

    def rank(self, i: int) -> int:
        spec = self.spec(i)
        if spec is None or spec.shape.rank is None:
            raise self.fail(f"input {i} needs a static rank for ONNX export")
        return spec.shape.rank

    def attr(self, name: str, default: Any = _MISSING) -> Any:
        if name in self.node.attrs:
            return self.node.attrs[name]
        if has_op(self.node.op):
            adef = get_op(self.node.op).attrs.get(name)
            if adef is not None and adef.has_default:
                return adef.default
        if default is _MISSING:
            raise self.fail(f"has no attr '{name}'")
        return default

    def out(self, k: int = 0) -> str:
        """The ONNX name output ``k`` is written to."""
        t = f"{self.node.name}:{k}"
        if t in self.conv.names:  # a fed tensor: the graph input replaces it; write elsewhere
            return self.conv.fresh(t)
        self.conv.names[t] = self.conv.fresh(t)
        return self.conv.names[t]

    def used(self, k: int) -> bool:
        return f"{self.node.name}:{k}" in self.conv.used

    def op(self, op_type: str, inputs: list[str], out: str | list[str] | int | None = None, **attrs):
        """Emit one ONNX node; returns its output name (or names when ``out`` is a count or list)."""
        base = f"{self.node.name}/{op_type}"
        if out is None or isinstance(out, int):
            outs = [self.conv.fresh(f"{base}:{k}") for k in range(out or 1)]
        else:
            outs = [out] if isinstance(out, str) else list(out)
        self.conv.onnx_nodes.append(
            self.conv.onnx.helper.make_node(op_type, inputs, outs, name=self.conv.fresh(base), **attrs))
        return outs[0] if out is None or isinstance(out, str) else outs

    def tensor(self, array: np.ndarray) -> str:
        """An initializer holding ``array``."""
        return self.conv.tensor(array, f"{self.node.name}/const")

    def tensor_proto(self, array: np.ndarray):
        return self.conv.onnx.numpy_helper.from_array(np.asarray(array))

    def int64_1d(self, i: int) -> str:
        """Input ``i`` (a shape, axes, sizes) as the 1-D int64 tensor ONNX takes."""
        if self.is_const(i):
            return self.tensor(self.const(i).astype(np.int64).reshape(-1))
        cast = self.op("Cast", [self.inp(i)], to=self.onnx_type("int64"))
        return self.op("Reshape", [cast, self.tensor(np.array([-1], dtype=np.int64))])

    def onnx_type(self, dtype) -> int:
        return onnx_type(self.conv.onnx, as_dtype(dtype))

    def cast_to(self, x: str, dtype, out: str) -> None:
        """Write ``x`` (int64, as ONNX's shape and index ops give) to ``out`` as ``dtype``."""
        if as_dtype(dtype).name == "int64":
            self.op("Identity", [x], out=out)
        else:
            self.op("Cast", [x], out=out, to=self.onnx_type(dtype))

    def variable(self, i: int) -> str:
        """The initializer holding the variable whose handle is input ``i``."""
        return self.conv.variable(parse_input(self.inputs[i]).node, self.node)

    def fail(self, message: str) -> ExportError:
        return ExportError(message, node=self.node.name, location=self.node.location)


def onnx_type(onnx, dtype: DType) -> int:
    if dtype.np_type is None:
        raise ExportError(f"{dtype.name} tensors have no ONNX type")
    return onnx.helper.np_dtype_to_tensor_dtype(dtype.numpy)


def _infer(order: list[NodeDef], nodes: dict[str, NodeDef]) -> ShapeInferencer:
    """Static specs and folded constants of every node the registry knows (others stay unknown:
    a graph loaded from elsewhere may hold ops only the ONNX table maps)."""
    inferencer = ShapeInferencer()
    for node in order:
        if has_op(node.op):
            try:
                inferencer.add(forward_view(node, nodes))
            except SpecflowError:
                pass
    return inferencer


def _loops_by_exit(graph) -> dict:
    """Exit node name -> the while loop (``find_while_loops``) it leaves."""
    if not any(n.op == "Exit" for n in graph.nodes):
        return {}
    from specflow.graph.control_flow import find_while_loops

    return {e: loop for loop in find_while_loops(graph).values() for e in loop.exits if e}
