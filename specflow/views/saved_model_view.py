"""SavedModel directories for the CLI: ``specflow inspect EXPORT_DIR`` (tags, signatures, variables
and the graph, like ``saved_model_cli show --all``), ``specflow export``'s summary and
``specflow predict``'s outputs."""

from __future__ import annotations

import json
import os

import numpy as np
from rich.console import Group
from rich.table import Table
from rich.text import Text

from specflow.errors import CheckpointError, ExportError
from specflow.export.loader import (
    DEFAULT_SIGNATURE,
    find_meta_graph,
    meta_graphs,
    read_saved_model,
    signatures_of,
    variables_prefix,
)
from specflow.graph.dtypes import as_dtype
from specflow.graph.graph_def import GraphDef, NodeDef
from specflow.graph.names import check_graph_proto_names, check_library_names, check_reference
from specflow.io.graph_loader import graph_io, is_graph_def_file, read_graph_def, read_graph_def_proto
from specflow.io.tensor_bundle import index_filename, read_bundle_index
from specflow.io.tf_object_graph import OBJECT_GRAPH_KEY
from specflow.views import json_values
from specflow.views.graph_view import graph_table


def _signature_info(sig) -> dict:
    return {part: {alias: {"tensor": t, "dtype": s.dtype.name, "shape": s.shape.as_list()}
                   for alias, (t, s) in getattr(sig, part).items()}
            for part in ("inputs", "outputs")}


def describe_model(path: str, tags=("serve",)) -> dict:
    """``describe_saved_model`` or, for a GraphDef file, ``describe_graph_def``."""
    return describe_graph_def(path) if is_graph_def_file(path) else describe_saved_model(path, tags)


def describe_graph_def(path: str) -> dict:
    """What ``inspect GRAPH.pb`` shows: the same fields as a SavedModel's, its one signature being
    the graph's Placeholders and sink nodes (see io/graph_loader.py)."""
    from specflow.export.serving import SignatureIO

    proto = read_graph_def_proto(path)
    check_graph_proto_names(proto)  # names are shown as they are: the load rules first
    check_library_names(proto.library)
    inputs, outputs = graph_io(read_graph_def(path))
    return {
        "kind": "GraphDef",
        "export_dir": path,
        "tag_sets": [],
        "tags": [],
        "signatures": {DEFAULT_SIGNATURE: _signature_info(SignatureIO(inputs, outputs))},
        "variables": {},
        "saver": None,
        "nodes": [{"name": n.name, "op": n.op, "inputs": list(n.input), "device": n.device} for n in proto.node],
        "functions": sorted(f.signature.name for f in proto.library.function),
    }


def describe_saved_model(export_dir: str, tags=("serve",)) -> dict:
    """What ``inspect`` shows, as plain data: tag sets, the chosen meta graph's signatures,
    variables (from the bundle index) and nodes (name, op, inputs, device)."""
    proto = read_saved_model(export_dir)
    mg = find_meta_graph(export_dir, proto, tags)
    # Names are shown as they are: the load rules first (no markup, escapes or line breaks).
    check_graph_proto_names(mg.graph_def)
    check_library_names(mg.graph_def.library)
    for ref in (mg.saver_def.filename_tensor_name, mg.saver_def.restore_op_name):
        if ref:
            check_reference(ref, "saver_def: ")
    sigs = {name: _signature_info(sig) for name, sig in signatures_of(mg).items()}
    return {
        "kind": "SavedModel",
        "export_dir": export_dir,
        "tag_sets": [list(m.meta_info_def.tags) for m in meta_graphs(proto)],
        "tags": list(mg.meta_info_def.tags),
        "signatures": sigs,
        "variables": _variables(export_dir),
        "saver": {"filename_tensor": mg.saver_def.filename_tensor_name,
                  "restore_op": mg.saver_def.restore_op_name} if mg.saver_def.restore_op_name else None,
        "nodes": [{"name": n.name, "op": n.op, "inputs": list(n.input), "device": n.device}
                  for n in mg.graph_def.node],
        "functions": sorted(f.signature.name for f in mg.graph_def.library.function),
    }


def _variables(export_dir: str) -> dict[str, dict]:
    prefix = variables_prefix(export_dir)
    if not os.path.exists(index_filename(prefix)):
        return {}
    try:
        entries = read_bundle_index(prefix)
    except CheckpointError as e:
        raise ExportError(f"variables index: {e.format()}") from None
    out = {}
    for key, e in entries.items():
        if key == OBJECT_GRAPH_KEY:  # the checkpoint's object graph, not a variable
            continue
        name = key.split("/.ATTRIBUTES/")[0]  # a TF2 checkpoint key: the object's path
        try:
            dtype = as_dtype(e.dtype).name
        except TypeError:
            dtype = f"enum {e.dtype}"
        out[name] = {"dtype": dtype, "shape": [d.size for d in e.shape.dim]}
    return out


def _shape(dims) -> str:
    return "<unknown rank>" if dims is None else "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"


def saved_model_json(info: dict) -> str:
    return json.dumps(info, indent=2)


def saved_model_renderable(info: dict) -> Group:
    if info.get("kind") == "GraphDef":
        head = Text(f"{info['export_dir']}: frozen GraphDef (inputs: its Placeholders, outputs: its sink nodes)")
    else:
        tag_sets = "; ".join(",".join(t) for t in info["tag_sets"])
        head = Text(f"{info['export_dir']}: SavedModel, tag sets: {tag_sets}; showing '{','.join(info['tags'])}'")
    sigs = Table(title="signatures", header_style="bold")
    for col in ("signature", "", "alias", "dtype", "shape", "tensor"):
        sigs.add_column(col)
    for name, sig in info["signatures"].items():
        for part in ("inputs", "outputs"):
            for alias, t in sig[part].items():
                sigs.add_row(Text(name), part[:-1] if part == "inputs" else "output", Text(alias),
                             t["dtype"], Text(_shape(t["shape"])), Text(t["tensor"]))
    parts = [head, sigs]
    if info["variables"]:
        var = Table(title="variables", header_style="bold")
        for col in ("variable", "dtype", "shape"):
            var.add_column(col)
        for name, v in info["variables"].items():
            var.add_row(Text(name), v["dtype"], Text(_shape(v["shape"])))
        parts.append(var)
    graph = GraphDef([NodeDef(n["name"], n["op"], n["inputs"], n["device"]) for n in info["nodes"]])
    title = f"graph: {len(graph.nodes)} nodes"
    if info["functions"]:
        title += f", {len(info['functions'])} library functions"
    parts.append(graph_table(graph, title=title))
    return Group(*parts)


def export_summary(result) -> Table:
    t = Table(header_style="bold", show_header=False)
    t.add_column("", style="bold")
    t.add_column("")
    t.add_row("exported", Text(f"{result.out} ({result.format})"))
    t.add_row("checkpoint", Text(result.checkpoint or "none (the spec has no variables)"))
    t.add_row("signatures", Text(", ".join(result.signatures)))
    t.add_row("variables", Text(f"{len(result.variables)} "
                                f"({sum(int(np.prod(s)) for _, s in result.variables.values()):,} values)"))
    for name, diff in result.max_diff.items():
        t.add_row("verified", Text(f"{name}: re-loaded outputs match the spec (max |diff| {diff:.3g})"))
    return t


def predictions_json(outputs: dict[str, np.ndarray]) -> str:
    def plain(v: np.ndarray):
        if v.dtype == object:  # strings: bytes are not JSON
            text = [x.decode("utf-8", "replace") if isinstance(x, bytes) else x for x in v.ravel().tolist()]
            return np.array(text, dtype=object).reshape(v.shape).tolist()
        return v.tolist()

    return json_values.dumps({alias: {"dtype": str(v.dtype), "shape": list(v.shape), "value": plain(v)}
                              for alias, v in outputs.items()})


def import_summary(result, diffs: dict[str, float]) -> Table:
    t = Table(header_style="bold", show_header=False)
    t.add_column("", style="bold")
    t.add_column("")
    t.add_row("spec", Text(f"{result.spec} ({result.nodes} nodes, {len(result.inputs)} inputs)"))
    if result.checkpoint is not None:
        n = sum(int(np.prod(s)) for _, s in result.variables.values())
        t.add_row("variables", Text(f"{len(result.variables)} ({n:,} values) in {result.checkpoint}"))
    if result.constant_files:
        t.add_row("constants", Text(f"{len(result.constant_files)} .npy file(s) in {result.constant_files[0].parent}"))
    for name, diff in diffs.items():
        t.add_row("verified", Text(f"{name}: the spec reproduces the model (max |diff| {diff:.3g})"))
    return t
