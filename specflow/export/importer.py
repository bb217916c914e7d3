"""``specflow import SAVEDMODEL|GRAPH.pb --out model.yaml``: a TensorFlow model as an editable
op-level spec.

The model is loaded with ``load_model`` (functions inlined, variables restored) and the part its
signatures need is written back as a spec:

- Placeholders become ``inputs:``; variables (``VarHandleOp``) become ``variables:`` whose
  ``initializer: {checkpoint: <stem>_checkpoint/model.ckpt-0}`` reads the value the model had,
  from a checkpoint written beside the spec as training writes one (so ``specflow export
  model.yaml --logdir <stem>_checkpoint`` exports it again);
- every other node is one op node, its name kept with ``/`` written as ``.`` (a spec name has no
  ``/``); a node inlined from a function is named as it is inside that function when that name
  is free (``sequential.dense.MatMul``, not ``StatefulPartitionedCall.StatefulPartitionedCall...``);
- a Const with more than ``INLINE_LIMIT`` elements is folded to ``<stem>_constants/NAME.npy``;
- attrs the spec infers again (type attrs bound by inputs, list lengths, defaults) are left out;
  control inputs become ``after:``; the signatures keep their aliases.

A TF2 While, If or Case (lowered at load time) is written back as ``while:`` or ``cond:`` nodes
(``import_control_flow.py``), TF1 loops and conds by their structure; other control flow is
refused, naming the node.
``verify_import`` loads the written spec and compares every signature with the source model on
random inputs; ``specflow import`` reports success only after it.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from specflow.errors import ExportError, SpecflowError
from specflow.export.import_control_flow import Block, check_control_flow, construct_node, find_constructs
from specflow.export.import_tf1_loops import name_tf1_constructs
from specflow.graph.dtypes import DType
from specflow.graph.graph_def import FuncRef, GraphDef, NodeDef, parse_input
from specflow.graph.shapes import Shape
from specflow.graph.topo import needed
from specflow.io.checkpoint import CheckpointManager
from specflow.io.tf_functions import CALL_ATTR, check_supported
from specflow.ops.registry import get_op

INLINE_LIMIT = 16  # Const elements written inline; more go to an .npy file
CHECKPOINT_PREFIX = "model.ckpt"  # as training writes it: <stem>_checkpoint/model.ckpt-0
_BAD_CHARS = re.compile(r"[^A-Za-z0-9_.-]")


@dataclass
class ImportResult:
    spec: Path
    nodes: int
    inputs: list[str]
    variables: dict[str, tuple[str, list[int]]]  # spec name -> (dtype, shape)
    constant_files: list[Path] = field(default_factory=list)
    checkpoint: Path | None = None
    signatures: list[str] = field(default_factory=list)


def import_model(source, out, overwrite: bool = False) -> ImportResult:
    """Write ``source`` (a SavedModel or GraphDef file) as the spec ``out`` (see the module doc)."""
    from specflow.export.loader import load_model

    out = Path(out)
    if out.suffix not in (".yaml", ".yml"):
        raise ExportError(f"--out {out}: the spec must be a .yaml file")
    stem = out.stem
    ckpt_dir = out.with_name(f"{stem}_checkpoint")  # a training logdir: export/train --logdir take it
    ckpt = ckpt_dir / f"{CHECKPOINT_PREFIX}-0"
    const_dir = out.with_name(f"{stem}_constants")
    if out.exists() and not overwrite:
        raise ExportError(f"{out} exists; pass --overwrite to replace it")
    _check_beside(ckpt_dir, const_dir, overwrite)
    with load_model(str(source)) as model:
        sigs = {n: s for n, s in model.signatures.items()}
        if not sigs:
            raise ExportError(f"{source} has no signature to import")
        roots = [t for s in sigs.values() for t, _ in s.outputs.values()]
        feeds = [t for s in sigs.values() for t, _ in s.inputs.values()]
        check_supported(model.graph_def, roots, feeds)
        fed = {parse_input(f).node for f in feeds}
        nodes = model.graph_def.node_map()
        # a fed PlaceholderWithDefault keeps its default (an input with `default:`)
        defaults = [nodes[n].data_inputs[0] for n in fed if nodes[n].op == "PlaceholderWithDefault"]
        graph = _closure(model.graph_def, roots + defaults, fed)
        check_control_flow(graph, source)
        names = _spec_names(graph)
        variables = _variable_values(model, graph, names)
        trainable = _trainable(model.meta_graph, model.graph_def)
    out.parent.mkdir(parents=True, exist_ok=True)
    # Everything is written into a hidden directory beside the spec, laid out as it will be, and
    # renamed into place only once written: a failed write (ENOSPC, Ctrl-C) leaves neither a torn
    # import nor, with --overwrite, a previous import with its checkpoint already deleted.
    staging = Path(tempfile.mkdtemp(prefix=f".{stem}.import-", dir=out.parent))
    try:
        writer = _SpecWriter(names, staging / const_dir.name, f"{ckpt_dir.name}/{ckpt.name}", trainable)
        body = writer.write(graph, variables, sigs, _ident(stem), source)
        if variables:
            CheckpointManager(str(staging / ckpt_dir.name), prefix=CHECKPOINT_PREFIX).save(
                {names[n]: v for n, v in variables.items()}, 0)
        (staging / out.name).write_text(body)
        for final in (ckpt_dir, const_dir):  # a previous import's (_check_beside passed) goes with staging
            if final.is_dir() and not final.is_symlink():
                os.rename(final, staging / f"previous-{final.name}")
            if (staging / final.name).exists():
                os.rename(staging / final.name, final)
        os.replace(staging / out.name, out)
    except (OSError, SpecflowError) as e:  # named as the files it was writing will be, not staging's
        text = e.format() if isinstance(e, SpecflowError) else f"{e.filename}: {e.strerror}"
        for written, final in ((staging.resolve(), out.parent.resolve()), (staging, out.parent)):
            text = text.replace(str(written), str(final))
        raise ExportError(text) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return ImportResult(out, len(writer.nodes), list(writer.inputs), {
        names[n]: (str(v.dtype), list(v.shape)) for n, v in variables.items()},
        [const_dir / f.name for f in writer.files], ckpt if variables else None, list(sigs))


_IMPORT_FILES = (re.compile(re.escape(CHECKPOINT_PREFIX) + r"-0\.(index|data-\d{5}-of-\d{5})|checkpoint"),
                 re.compile(r"[A-Za-z0-9_.-]+\.npy"))


def _check_beside(ckpt_dir: Path, const_dir: Path, overwrite: bool) -> None:
    """The import writes ``<stem>_checkpoint/`` and ``<stem>_constants/`` beside the spec. A
    directory there holding anything an import does not write (a training logdir of that name:
    its checkpoints would lose 'latest' to step 0 and its oldest would go to the keep policy) is
    refused, even with --overwrite; a previous import's needs --overwrite, as the spec does."""
    for d, pattern in zip((ckpt_dir, const_dir), _IMPORT_FILES):
        if not os.path.lexists(d):
            continue
        if d.is_symlink() or not d.is_dir():
            raise ExportError(f"{d} exists and is not a directory an import wrote; move it or choose another --out")
        entries = sorted(os.listdir(d))
        stray = [e for e in entries if not pattern.fullmatch(e) or (d / e).is_symlink() or not (d / e).is_file()]
        if stray:
            raise ExportError(f"{d} holds {stray[0]!r}, which an import does not write; "
                              "move it or choose another --out")
        if entries and not overwrite:
            raise ExportError(f"{d} exists (a previous import's); pass --overwrite to replace it")


def _closure(graph: GraphDef, roots: list[str], inputs: set[str]) -> GraphDef:
    """The nodes ``roots`` need (control inputs included), in graph order, not looking past inputs."""
    keep = needed(graph, roots, inputs)
    return GraphDef([n for n in graph.nodes if n.name in keep])


def _sanitize(name: str) -> str:
    s = _BAD_CHARS.sub("_", name.replace("/", "."))
    return s if re.match(r"[A-Za-z_]", s) else f"_{s}"


def _ident(stem: str) -> str:
    s = re.sub(r"[^A-Za-z0-9_]", "_", stem)
    return s if re.match(r"[A-Za-z_]", s) else f"m_{s}"


def _spec_names(graph: GraphDef) -> dict[str, str]:
    """TF node name -> spec name: the name inside its function where that is free, else the full
    name; ``/`` as ``.``. VarHandleOps are named by their variable (``shared_name``)."""
    names: dict[str, str] = {}
    taken: set[str] = {"init"}  # the spec's own init op
    calls = {c for n in graph.nodes if (c := n.attrs.get(CALL_ATTR))}
    for n in graph.nodes:
        full = n.attrs.get("shared_name") or n.name if n.op == "VarHandleOp" else n.name
        call = n.attrs.get(CALL_ATTR)
        if call is None:  # a call's result or a lowered loop's node: inside the call that holds it
            call = max((c for c in calls if n.name.startswith(c + "/")), key=len, default=None)
        local = n.name[len(call) + 1:] if call and n.name.startswith(call + "/") and n.op != "VarHandleOp" else full
        for candidate in (_sanitize(local), _sanitize(full), _sanitize(n.name)):
            if candidate not in taken:
                break
        else:
            k = 1
            while f"{candidate}_{k}" in taken:
                k += 1
            candidate = f"{candidate}_{k}"
        taken.add(candidate)
        names[n.name] = candidate
    return names


def _trainable(meta_graph, graph: GraphDef | None = None) -> dict[str, bool]:
    """Variable name -> trainable: from a TF2 SavedModel's object graph (Keras marks batch-norm
    statistics not trainable), or a TF1 MetaGraph's ``trainable_variables`` collection (a
    variable of the ``variables`` collection not in it is not trainable); empty for a GraphDef
    or a MetaGraph with neither."""
    if meta_graph is None:
        return {}
    out = {n.variable.name: bool(n.variable.trainable) for n in meta_graph.object_graph_def.nodes
           if n.WhichOneof("kind") == "variable"}
    if out or "trainable_variables" not in meta_graph.collection_def:
        return out
    from tensorboard.compat.proto.variable_pb2 import VariableDef

    def ops(key: str) -> set[str]:
        names = set()
        for raw in meta_graph.collection_def[key].bytes_list.value:
            v = VariableDef()
            v.ParseFromString(raw)
            names.add(v.variable_name.split(":")[0])
        return names

    trainable = ops("trainable_variables")
    every = ops("variables") if "variables" in meta_graph.collection_def else set()
    nodes = graph.node_map() if graph is not None else {}
    for op in trainable | every:  # keyed as the importer looks variables up: shared_name, else op name
        node = nodes.get(op)
        out[(node.attrs.get("shared_name") if node is not None else None) or op] = op in trainable
    return out


def _variable_values(model, graph: GraphDef, names: dict[str, str]) -> dict[str, np.ndarray]:
    """Each VarHandleOp's current value in the loaded model (read through ReadVariableOp)."""
    handles = [n for n in graph.nodes if n.op == "VarHandleOp"]
    if not handles:
        return {}
    reads = [NodeDef(f"_import_read/{i}", "ReadVariableOp", [h.name], h.device, {"dtype": h.attrs["dtype"]})
             for i, h in enumerate(handles)]
    model.session.extend(GraphDef(reads))
    try:
        values = model.session.run([r.name for r in reads])
    except SpecflowError as e:
        raise ExportError(f"cannot read the model's variables: {e.format()}") from None
    return {h.name: np.asarray(v) for h, v in zip(handles, values)}


class _SpecWriter:
    def __init__(self, names: dict[str, str], const_dir: Path, checkpoint: str, trainable: dict[str, bool]):
        self.names = names
        self.trainable = trainable
        self.checkpoint = checkpoint
        self.const_dir = const_dir
        self.inputs: dict[str, dict] = {}
        self.nodes: dict[str, dict] = {}
        self.files: list[Path] = []
        self.loop_refs: dict = {}  # a While's/If's node -> index -> reference to its spec node's output
        self.in_construct: dict[str, str] = {}  # a While's/If's part -> its spec node's name
        self.visible: set[str] = set(names.values())  # names a loop's or branch's nodes must not shadow
        self.tf1_depth = 0  # how deep in TF1 loops the node being written is (their vars' names)

    def ref(self, tensor: str) -> str:
        """A top-level tensor as a spec reference (a loop's results are its while node's outputs)."""
        t = parse_input(tensor)
        if t.node in self.loop_refs:
            return self.loop_refs[t.node](t.index)
        name = self.names[t.node]
        return name if t.index == 0 else f"{name}:{t.index}"

    def control(self, name: str) -> str | None:
        return self.in_construct.get(name) or self.names[name]  # after a loop's part: after the loop

    def write(self, graph: GraphDef, variables: dict, sigs, name: str, source) -> str:
        var_specs = {}
        loops = find_constructs(graph.nodes)
        name_tf1_constructs(loops, self.names, "")
        self.in_construct = {m.name: self.names[loop.name] for loop in loops.values() for m in loop.members}
        members = set(self.in_construct)
        for loop in loops.values():
            self.loop_refs.update(loop.outer_refs(self.names[loop.name], self.ref))
        nodes = graph.node_map()
        users: dict[str, int] = {}
        for n in graph.nodes:
            for i in n.inputs:
                users[parse_input(i).node] = users.get(parse_input(i).node, 0) + 1
        default_of = {n.name: nodes[parse_input(n.data_inputs[0]).node] for n in graph.nodes
                      if n.op == "PlaceholderWithDefault" and nodes[parse_input(n.data_inputs[0]).node].op == "Const"}
        written_defaults = {c.name for c in default_of.values() if users.get(c.name) == 1}
        for n in graph.nodes:
            spec_name = self.names[n.name]
            if n.name in written_defaults:
                continue  # its PlaceholderWithDefault's `default:`
            if n.name in loops:
                self.nodes[spec_name] = construct_node(self, loops[n.name], self.ref)
            elif n.name in members:
                continue
            elif n.op == "Placeholder" or n.name in default_of:
                shape = n.attrs.get("shape")
                self.inputs[spec_name] = {"dtype": n.attrs["dtype"].name,
                                          "shape": None if shape is None or shape.rank is None else list(shape.dims)}
                if n.name in default_of:
                    self.inputs[spec_name]["default"] = _plain(default_of[n.name].attrs["value"],
                                                               f"the default of input '{n.name}'")
            elif n.op == "VarHandleOp":
                v = variables[n.name]
                var_specs[spec_name] = {"shape": list(v.shape), "dtype": str(n.attrs["dtype"]),
                                        "initializer": {"checkpoint": self.checkpoint},
                                        "trainable": self.trainable.get(n.attrs.get("shared_name") or n.name, True)}
            else:
                self.nodes[spec_name] = self.node(n, spec_name)
        signatures = {}
        for sig_name, sig in sigs.items():
            signatures[sig_name] = {"inputs": {a: self.ref(t) for a, (t, _) in sig.inputs.items()},
                                    "outputs": {a: self.ref(t) for a, (t, _) in sig.outputs.items()}}
        lines = [f"# Imported from {source} by `specflow import`: TF node names kept, '/' written as '.'.",
                 "specflow: 1", f"name: {name}"]
        for section, items in (("inputs", self.inputs), ("variables", var_specs), ("nodes", self.nodes)):
            if items:
                lines.append(f"{section}:")
                for k, v in items.items():
                    lines += _entry(k, v, 2)
        lines.append("signatures:")
        for sig_name, sig in signatures.items():
            lines.append(f"  {_flow(sig_name)}:")
            lines += [f"    {part}: {_flow(sig[part])}" for part in ("inputs", "outputs")]
        return "\n".join(lines) + "\n"

    def node(self, n: NodeDef, spec_name: str, ref=None, control=None) -> dict:
        """Op node ``n`` in spec form; ``ref``/``control`` map its inputs in the node's scope."""
        ref, control = ref or self.ref, control or self.control
        opdef = get_op(n.op)
        out: dict[str, Any] = {"op": n.op}
        data = n.data_inputs
        if data:
            if any(a.is_list for a in opdef.inputs):  # keywords: a list arg's length is then explicit
                i = 0
                for arg in opdef.inputs:
                    k = _arg_length(arg, n.attrs)
                    refs = [ref(t) for t in data[i:i + k]]
                    out[arg.name] = refs if arg.is_list else refs[0]
                    i += k
            else:
                out["inputs"] = [ref(t) for t in data]
        inferred = {a.type_attr for a in opdef.inputs if a.type_attr} | {
            a.number_attr for a in opdef.inputs if a.number_attr} | {
            a.type_list_attr for a in opdef.inputs if a.type_list_attr}
        for key, value in n.attrs.items():
            adef = opdef.attrs.get(key)
            if key.startswith("_") or adef is None or key in inferred:
                continue
            if n.op == "Const" and key == "value":
                out[key] = self.const(value, spec_name)
                continue
            if adef.has_default and _same(adef.default, value):
                continue
            out[key] = _plain(value, f"attr '{key}' of node '{n.name}'")
        after = [c for c in (control(c) for c in n.control_inputs) if c is not None]
        if after:
            out["after"] = after
        return out

    def const(self, value: np.ndarray, spec_name: str):
        # (complex values go to .npy whatever their size: YAML has no complex numbers)
        if (value.size <= INLINE_LIMIT and value.dtype.kind != "c") or value.dtype == object:
            return _plain(value, f"Const '{spec_name}'")
        self.const_dir.mkdir(parents=True, exist_ok=True)
        path = self.const_dir / f"{spec_name}.npy"
        np.save(path, value, allow_pickle=False)
        self.files.append(path)
        return {"npy": f"{self.const_dir.name}/{path.name}"}


def _arg_length(arg, attrs: dict) -> int:
    if arg.number_attr:
        return int(attrs[arg.number_attr])
    if arg.type_list_attr:
        return len(attrs[arg.type_list_attr])
    return 1


def _same(default, value) -> bool:
    try:
        return bool(default == value) if not isinstance(value, np.ndarray) else False
    except Exception:
        return False


def _plain(value: Any, where: str) -> Any:
    """An attr value as YAML-ready data."""
    if isinstance(value, DType):
        return value.name
    if isinstance(value, Shape):
        return None if value.rank is None else list(value.dims)
    if isinstance(value, np.ndarray):
        if value.dtype == object or value.dtype.kind == "c":
            return [_plain(x, where) for x in value.ravel().tolist()] if value.ndim else _plain(value.item(), where)
        if value.dtype in (np.float32, np.float16):  # shortest text that reads back to the same bits
            short = np.array([float(str(x)) for x in value.ravel()], dtype=object)
            return short.reshape(value.shape).tolist()
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [_plain(v, where) for v in value]
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            raise ExportError(f"{where} holds binary bytes, which a spec cannot hold") from None
    if isinstance(value, FuncRef):
        raise ExportError(f"{where} names function '{value.name}', which an op-level spec cannot hold")
    if isinstance(value, float) and not math.isfinite(value):
        return value  # YAML writes .inf / .nan
    if isinstance(value, complex):
        raise ExportError(f"{where} holds a complex number, which a spec attr cannot hold")
    return value


def _entry(key: str, value: Any, indent: int) -> list[str]:
    """YAML lines for ``key: value``: one flow line, or a block for a ``Block`` (a loop's parts)."""
    pad = " " * indent
    if not isinstance(value, Block):
        return [f"{pad}{_flow(key)}: {_flow(value)}"]
    lines = [f"{pad}{_flow(key)}:"]
    for k, v in value.items():
        lines += _entry(k, v, indent + 2)
    return lines


def _flow(value: Any) -> str:
    """One YAML flow-style line (a node per line reads like a graph listing)."""
    text = yaml.safe_dump(value, default_flow_style=True, width=math.inf, sort_keys=False).strip()
    return text[:-4].strip() if text.endswith("\n...") else text.removesuffix("...").strip()



def verify_import(source, result: ImportResult, batch: int = 2, atol: float = 1e-4) -> dict[str, float]:
    """Load the written spec, run every signature on the same random inputs as ``source``, and
    return ``signature/output -> max |difference|``; ExportError past ``atol`` (relative to the
    output's scale)."""
    from specflow.export.loader import load_model
    from specflow.runtime.session import Session
    from specflow.schema.loader import load_spec

    spec = load_spec(str(result.spec))
    rng = np.random.default_rng(0)
    diffs: dict[str, float] = {}
    with load_model(str(source)) as model, Session(spec.graph_def) as sess:
        if spec.variables:
            sess.run([], targets=[spec.lowered.init_op])
        for sig_name, sig in model.signatures.items():
            for trial in range(2):  # bool inputs all true, then all false: both branches of a cond
                feeds = {a: _sample(s, batch, rng, trial == 0) for a, (_, s) in sig.inputs.items()}
                try:
                    want = model.run(sig_name, feeds)
                except SpecflowError:
                    # the model itself refuses random integers (gather indices past a dimension,
                    # unsorted segment ids): zeros are valid wherever an index or id is
                    feeds = {a: _sample(s, batch, rng, trial == 0, zeros=True) for a, (_, s) in sig.inputs.items()}
                    want = model.run(sig_name, feeds)
                _compare(sess, spec, sig_name, feeds, want, atol, diffs)
    return diffs


def _compare(sess, spec, sig_name: str, feeds: dict, want: dict, atol: float, diffs: dict[str, float]) -> None:
    mine = spec.signatures[sig_name]
    aliases = list(mine["outputs"])
    got = sess.run([mine["outputs"][a][0] for a in aliases], {mine["inputs"][a][0]: v for a, v in feeds.items()})
    for alias, g in zip(aliases, got):
        w = want[alias]
        if np.shape(g) != np.shape(w):
            raise ExportError(f"the imported spec's {sig_name}/{alias} has shape {list(np.shape(g))}, "
                              f"the model's {list(np.shape(w))}")
        numeric = np.size(w) and w.dtype.kind in "fc"
        diff = float(np.max(np.abs(np.asarray(g, np.float64) - w))) if numeric else float(not np.array_equal(g, w))
        scale = max(1.0, float(np.max(np.abs(w)))) if numeric else 1.0
        if diff > atol * scale:
            raise ExportError(f"the imported spec's {sig_name}/{alias} differs from the model's by {diff:.3g}")
        key = f"{sig_name}/{alias}"
        diffs[key] = max(diff, diffs.get(key, 0.0))


def _sample(spec, batch: int, rng, flag: bool, zeros: bool = False) -> np.ndarray:
    dims = spec.shape.dims
    if dims is None:
        raise ExportError("a signature input of unknown rank cannot be sampled to check the import")
    shape = [batch if d is None else d for d in dims]
    dt = spec.dtype
    if dt.is_floating:
        return rng.standard_normal(shape).astype(dt.numpy)
    if dt.is_bool:
        return np.full(shape, flag)
    if dt.is_integer:
        return np.zeros(shape, dt.numpy) if zeros else rng.integers(0, 3, shape).astype(dt.numpy)
    if dt.name == "string":  # words with case, spaces and punctuation for the text ops to act on
        words = np.array([b"Hello world", b"a", b"", b"TF2 ops!", b"x y z"], dtype=object)
        return np.asarray(words[rng.integers(0, len(words), shape)], dtype=object)
    raise ExportError(f"a {dt.name} signature input cannot be sampled to check the import")
