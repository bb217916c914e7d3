"""The placed and partitioned graph: per-device partitions, _Send/_Recv pairs, bytes per step."""

from __future__ import annotations

import json

from rich.console import Group
from rich.table import Table
from rich.text import Text

from specflow.graph.device_spec import DeviceSpec
from specflow.runtime.memory import PeakEstimate, estimate_peak_bytes
from specflow.runtime.pipeline import CompiledStep
from specflow.runtime.prune import infer_runtime_graph
from specflow.views.graph_view import graph_dot, graph_table


def _fmt_bytes(n: int | None) -> str:
    if n is None:
        return "?"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:,} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def short_device(name: str) -> str:
    """``CPU:0`` for this process's devices; the full name for other jobs and tasks."""
    d = DeviceSpec.parse(name)
    if d.job == "localhost" and d.task == 0:
        return f"{d.device_type}:{d.device_index}"
    return name


def _specs(graph_def, transfers=()) -> dict:
    """Each node's output specs. A _Recv's own shape function knows nothing of what it receives,
    so for inference each _Recv stands in as a Placeholder of the sent tensor's dtype and shape:
    received tensors, and what is computed from them, keep their shapes."""
    received = {t.recv_node: t for t in transfers}
    g = graph_def.copy()
    for n in g.nodes:
        t = received.get(n.name)
        if n.op == "_Recv" and t is not None:
            n.op, n.attrs = "Placeholder", {"dtype": n.attrs["tensor_type"], "shape": t.shape}  # uint16 if lossy
    return infer_runtime_graph(g).inferencer.specs


def _spec_of(graph_def, transfers=()):
    specs = _specs(graph_def, transfers)

    def fn(name):
        s = specs.get(name)
        return None if s is None else [str(x) for x in s]

    return fn


def estimated_peaks(step: CompiledStep) -> dict[str, PeakEstimate]:
    """Per device, the step's estimated peak live bytes (runtime/memory.py's model over the
    partition in its executor's order, sizes from shape inference)."""
    out = {}
    for dev, g in step.partitioned.partitions.items():
        specs = _specs(g, step.partitioned.transfers)

        def sizes(name, specs=specs):
            return [_spec_bytes(s) for s in specs.get(name, ())]

        out[dev] = estimate_peak_bytes(g, sizes)
    return out


def _spec_bytes(spec) -> int | None:
    if spec.dtype.np_type is None:  # a resource handle: no tensor memory
        return 0
    if not spec.shape.is_fully_defined:
        return None
    n = spec.dtype.itemsize
    for d in spec.shape.dims:
        n *= d
    return n


def peak_line(peaks: dict, what: str) -> str:
    """``what: CPU:0 1.5 MiB, CPU:1 12 KiB`` (peaks: bytes or PeakEstimate per device)."""

    def fmt(p) -> str:
        if isinstance(p, int):
            return _fmt_bytes(p)
        return _fmt_bytes(p.bytes) + (f" + {p.unknown} value(s) of unknown size" if p.unknown else "")

    return f"{what}: " + ", ".join(f"{short_device(d)} {fmt(p)}" for d, p in peaks.items())


def transfer_rows(step: CompiledStep) -> list[dict]:
    return [
        {
            "tensor": t.tensor,
            "from": t.src_device,
            "to": t.dst_device,
            "dtype": t.dtype.name,
            "shape": t.shape.as_list(),
            "bytes_per_step": t.bytes_per_step,  # on the wire: half the tensor's when lossy
            "lossy": t.lossy,  # sent as bfloat16 bits (whitepaper 5.5)
            "send": t.send_node,
            "recv": t.recv_node,
        }
        for t in step.partitioned.transfers
    ]


def _wire(row: dict) -> str:
    """What a lossy transfer's dtype cell adds: the tensor travels as bfloat16 bits."""
    return " as bfloat16" if row.get("lossy") else ""


def _total(rows: list[dict]) -> tuple[int, bool]:
    known = [r["bytes_per_step"] for r in rows if r["bytes_per_step"] is not None]
    return sum(known), len(known) < len(rows)


def placement_renderable(step: CompiledStep, title: str) -> Group:
    parts = []
    for dev, g in step.partitioned.partitions.items():
        parts.append(graph_table(g, _spec_of(g, step.partitioned.transfers), title=f"{dev}: {len(g.nodes)} nodes", show_device=False))
    rows = transfer_rows(step)
    t = Table(title="tensors crossing devices (per step)", header_style="bold")
    for col in ("tensor", "from", "to", "dtype & shape", "bytes", "_Send → _Recv"):
        t.add_column(col)
    for r in rows:
        shape = "?" if r["shape"] is None else "[" + ", ".join("?" if d is None else str(d) for d in r["shape"]) + "]"
        t.add_row(*(Text(x) for x in (r["tensor"], short_device(r["from"]), short_device(r["to"]), f"{r['dtype']}{shape}{_wire(r)}",
                                       _fmt_bytes(r["bytes_per_step"]), f"{r['send']} → {r['recv']}")))
    total, partial = _total(rows)
    summary = Text(
        f"{title}: {len(step.partitioned.partitions)} partition(s), {len(rows)} transfer(s), "
        f"{_fmt_bytes(total)}{' + unknown' if partial else ''} crossing devices per step, "
        f"estimated makespan {step.placed.estimated_makespan * 1e6:.1f} µs",
        style="bold",
    )
    parts.append(t if rows else Text("no tensors cross devices"))
    parts.append(Text(peak_line(estimated_peaks(step), "estimated peak memory per step")))
    parts.append(summary)
    return Group(*parts)


def placement_json(step: CompiledStep) -> str:
    rows = transfer_rows(step)
    total, partial = _total(rows)
    return json.dumps(
        {
            "assignment": step.placed.assignment,
            "partitions": {dev: g.to_dict() for dev, g in step.partitioned.partitions.items()},
            "transfers": rows,
            "bytes_per_step": total,
            "bytes_per_step_complete": not partial,
            "estimated_makespan_s": step.placed.estimated_makespan,
            "estimated_peak_bytes": {d: {"bytes": p.bytes, "unknown_values": p.unknown}
                                     for d, p in estimated_peaks(step).items()},  # fmt: skip
        },
        indent=2,
    )


def placement_dot(step: CompiledStep) -> str:
    from specflow.graph.graph_def import GraphDef

    merged = GraphDef(nodes=[n for g in step.partitioned.partitions.values() for n in g.nodes])
    clusters = {dev: [n.name for n in g.nodes] for dev, g in step.partitioned.partitions.items()}
    transfers = step.partitioned.transfers
    specs = {dev: _spec_of(g, transfers) for dev, g in step.partitioned.partitions.items()}
    device_of = {n.name: dev for dev, g in step.partitioned.partitions.items() for n in g.nodes}
    dot = graph_dot(merged, lambda name: specs[device_of[name]](name) if name in device_of else None, clusters=clusters)
    # Draw each _Send → _Recv pair as a bold edge across the clusters.
    extra = [f'  "{t.send_node}" -> "{t.recv_node}" [style=bold, color=red];' for t in step.partitioned.transfers]
    return dot[: dot.rstrip().rfind("}")] + "\n".join(extra) + "\n}"
