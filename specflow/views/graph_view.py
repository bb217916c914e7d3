"""Render a GraphDef (with inferred dtypes/shapes, and placement when known) as a table, JSON or dot."""

from __future__ import annotations

from collections.abc import Callable

from rich.table import Table
from rich.text import Text

from specflow.graph.graph_def import GraphDef, NodeDef, parse_input
from specflow.views import json_values

# spec_of(node_name) -> list of "dtype[shape]" strings for the node's outputs (or None if unknown)
OutputsFn = Callable[[str], list[str] | None]


def _outputs(spec_of: OutputsFn | None, node: NodeDef) -> list[str]:
    if spec_of is None:
        return []
    return spec_of(node.name) or []


def _inputs_brief(node: NodeDef) -> str:
    data = node.data_inputs
    ctrl = node.control_inputs
    text = ", ".join(data)
    if len(ctrl) > 2:
        text += (", " if text else "") + f"^({len(ctrl)} control)"
    elif ctrl:
        text += (", " if text else "") + ", ".join(f"^{c}" for c in ctrl)
    return text


def graph_table(
    graph_def: GraphDef, spec_of: OutputsFn | None = None, title: str | None = None, show_device: bool | None = None
) -> Table:
    """One row per node. Attrs are left to --format json; the device column appears when used, the
    dtype & shape column when ``spec_of`` can fill it (a SavedModel's raw graph has no shapes)."""
    if show_device is None:
        show_device = any(n.device for n in graph_def.nodes)
    t = Table(title=title, header_style="bold")
    t.add_column("node", style="cyan", overflow="fold")
    t.add_column("op", style="magenta", no_wrap=True)
    if spec_of is not None:
        t.add_column("dtype & shape", style="green", no_wrap=True)
    t.add_column("inputs", overflow="fold")
    if show_device:
        t.add_column("device", style="yellow", overflow="fold")
    for n in graph_def.nodes:
        cells = [n.name, n.op, *([", ".join(_outputs(spec_of, n))] if spec_of is not None else []), _inputs_brief(n)]
        if show_device:
            cells.append(n.device)
        t.add_row(*(Text(c) for c in cells))  # Text: shapes like [?, 64] are not rich markup
    return t


def graph_json(graph_def: GraphDef, spec_of: OutputsFn | None = None, extra: dict | None = None) -> str:
    d = graph_def.to_dict()
    if spec_of is not None:
        for nd in d["nodes"]:
            outs = spec_of(nd["name"])
            if outs is not None:
                nd["outputs"] = outs
    if extra:
        d.update(extra)
    return json_values.dumps(d)


def _q(s: str) -> str:
    """A dot string: backslashes and quotes escaped, a line break as dot's ``\\n`` (centered)."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def graph_dot(graph_def: GraphDef, spec_of: OutputsFn | None = None, clusters: dict[str, list[str]] | None = None) -> str:
    """Graphviz dot; ``clusters`` groups node names into boxes (one per device)."""
    lines = ["digraph specflow {", "  rankdir=TB;", '  node [shape=box, style=rounded, fontname="Helvetica"];']
    by_name = graph_def.node_map()

    def node_line(n: NodeDef) -> str:
        outs = _outputs(spec_of, n)
        label = f"{n.name}\n{n.op}" + (f"\n{outs[0]}" if outs else "")
        shape = ", shape=ellipse" if n.op in ("_Send", "_Recv") else ""
        return f"    {_q(n.name)} [label={_q(label)}{shape}];"

    if clusters:
        for i, (dev, names) in enumerate(clusters.items()):
            lines.append(f"  subgraph cluster_{i} {{")
            lines.append(f"    label={_q(dev)};")
            lines.extend(node_line(by_name[nm]) for nm in names if nm in by_name)
            lines.append("  }")
    else:
        lines.extend(node_line(n) for n in graph_def.nodes)
    for n in graph_def.nodes:
        for inp in n.inputs:
            ref = parse_input(inp)
            style = " [style=dashed]" if ref.is_control else ""
            lines.append(f"  {_q(ref.node)} -> {_q(n.name)}{style};")
    lines.append("}")
    return "\n".join(lines)
