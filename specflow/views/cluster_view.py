"""A graph placed on a cluster (``inspect --cluster ... --placed``): per task, its devices'
partitions, and the tensors crossing tasks with their bytes per step."""

from __future__ import annotations

import json
import re

from rich.console import Group
from rich.table import Table
from rich.text import Text

from specflow.distributed.stages import step_calls
from specflow.distributed.task_partition import split_virtual
from specflow.graph.device_spec import DeviceSpec
from specflow.views.placement_view import (
    _fmt_bytes,
    _total,
    _wire,
    placement_dot,
    placement_json,
    placement_renderable,
)


def _cross_rows(cstep) -> list[dict]:
    return [
        {"tensor": t.tensor, "from": t.src_device, "to": t.dst_device, "dtype": t.dtype.name,
         "shape": t.shape.as_list(), "bytes_per_step": t.bytes_per_step, "lossy": t.lossy}
        for t in cstep.cross
    ]  # fmt: skip


def _task_rows(cstep, cluster) -> list[dict]:
    out = []
    for job, t in cluster.tasks:
        task = f"/job:{job}/replica:0/task:{t}"
        piece = cstep.pieces.get(task, {})
        nodes = [n for g in piece.values() for n in g.nodes]
        out.append({
            "task": task,
            "devices": {dev: len(g.nodes) for dev, g in piece.items()},
            "nodes": len(nodes),
            "variables": sorted(n.name for n in nodes if n.op == "VarHandleOp"),
            "sends": sum(1 for r in cstep.cross if r.src_device.startswith(task + "/")),
            "recvs": sum(1 for r in cstep.cross if r.dst_device.startswith(task + "/")),
            # per step; None where a shape is unknown until run time
            "bytes_pushed": _bytes(r for r in cstep.cross if r.src_device.startswith(task + "/")),
            "bytes_pulled": _bytes(r for r in cstep.cross if r.dst_device.startswith(task + "/")),
        })  # fmt: skip
    return out


_PART = re.compile(r"(.+)/part_(\d+)")


def _partitioned_rows(cstep) -> list[dict]:
    """The partitioned variables (``name/part_0..``, see layers/partitioned.py) and where each
    part sits: task, rows of the whole, bytes."""
    found: dict[str, dict[int, tuple]] = {}
    for task, piece in cstep.pieces.items():
        for g in piece.values():
            for n in g.nodes:
                m = _PART.fullmatch(n.name) if n.op == "VarHandleOp" else None
                if m and n.attrs.get("shape") is not None and n.attrs["shape"].rank:
                    found.setdefault(m.group(1), {})[int(m.group(2))] = (n.name, task, n.attrs["shape"], n.attrs["dtype"])
    out = []
    for name, parts in sorted(found.items()):
        if sorted(parts) != list(range(len(parts))):
            continue  # not every part in this step
        offset, rows = 0, []
        for k in range(len(parts)):
            part, task, shape, dtype = parts[k]
            n_rows = shape.dims[0]
            size = shape.num_elements()
            rows.append({"part": part, "task": task, "rows": [offset, offset + n_rows] if n_rows is not None else None,
                         "bytes": None if size is None else size * (dtype.itemsize or 0)})  # fmt: skip
            offset += n_rows or 0
        tail = parts[0][2].dims[1:]
        out.append({"variable": name, "shape": [offset, *tail], "parts": rows})
    return out


def _bytes(transfers) -> int | None:
    sizes = [t.bytes_per_step for t in transfers]
    return None if any(b is None for b in sizes) else sum(sizes)


def cluster_renderable(cstep, cluster, title: str) -> Group:
    tasks = Table(title=f"{title} on {cluster.describe()} ({cluster.placement} placement)", header_style="bold")
    for col in ("task", "partitions (nodes)", "variables", "sends", "receives", "pushed/step", "pulled/step"):
        tasks.add_column(col)
    for r in _task_rows(cstep, cluster):
        parts = ", ".join(f"{d.rsplit('/', 1)[-1]} ({n})" for d, n in r["devices"].items()) or "idle"
        pushed, pulled = ("?" if b is None else _fmt_bytes(b) for b in (r["bytes_pushed"], r["bytes_pulled"]))
        tasks.add_row(Text(r["task"]), Text(parts), Text(", ".join(r["variables"]) or "-"),
                      str(r["sends"]), str(r["recvs"]), pushed, pulled)  # fmt: skip
    rows = _cross_rows(cstep)
    cross = Table(title="tensors crossing tasks (per step)", header_style="bold")
    for col in ("tensor", "from", "to", "dtype & shape", "bytes"):
        cross.add_column(col)
    for r in rows:
        shape = "?" if r["shape"] is None else "[" + ", ".join("?" if d is None else str(d) for d in r["shape"]) + "]"
        cross.add_row(*(Text(x) for x in (r["tensor"], r["from"], r["to"], f"{r['dtype']}{shape}{_wire(r)}",
                                           _fmt_bytes(r["bytes_per_step"]))))  # fmt: skip
    total, partial = _total(rows)
    pairs = {(r["from"].rsplit("/device", 1)[0], r["to"].rsplit("/device", 1)[0]) for r in rows}
    protocol = _protocol(cstep)
    summary = Text(f"{len(cstep.pieces)} task(s) involved, {len(rows)} cross-task transfer(s) over {len(pairs)} "
                   f"task pair(s), {_fmt_bytes(total)}{' + unknown' if partial else ''} crossing tasks per step; "
                   f"{protocol['protocol']}: {len(protocol['calls'])} call(s) a step "
                   f"({' -> '.join(_short(c) for c in protocol['calls'])})", style="bold")  # fmt: skip
    pieces = []
    parted = _partitioned_rows(cstep)
    if parted:
        table = Table(title="partitioned variables", header_style="bold")
        for col in ("variable", "part", "task", "rows", "bytes"):
            table.add_column(col)
        for v in parted:
            for p in v["parts"]:
                span = "?" if p["rows"] is None else f"{p['rows'][0]}:{p['rows'][1]}"
                table.add_row(Text(f"{v['variable']}{v['shape']}"), Text(p["part"].rsplit("/", 1)[-1]), Text(p["task"]),
                              span, _fmt_bytes(p["bytes"]))  # fmt: skip
        pieces.append(table)
    return Group(placement_renderable(cstep.compiled, title), tasks, *pieces,
                 cross if rows else Text("no tensors cross tasks"), summary)  # fmt: skip


def cluster_json(cstep, cluster) -> str:
    data = json.loads(placement_json(cstep.compiled))
    rows = _cross_rows(cstep)
    total, partial = _total(rows)
    data["cluster"] = {"jobs": cluster.jobs, "task_devices": cluster.task_devices, "task_threads": cluster.task_threads,
                       "placement": cluster.placement}
    data["tasks"] = _task_rows(cstep, cluster)
    data["partitioned_variables"] = _partitioned_rows(cstep)
    data["cross_task_transfers"] = rows
    data["cross_task_bytes_per_step"] = total
    data["cross_task_bytes_per_step_complete"] = not partial
    data["step_protocol"] = _protocol(cstep)
    return json.dumps(data, indent=2)


def _protocol(cstep) -> dict:
    """How the master runs the step (``stages.step_calls``): the protocol and its calls in order
    (a stage's call is ``TASK#s``; pushing, every task's at once)."""
    protocol, graphs, order = step_calls(cstep.graphs)
    return {"protocol": protocol, "calls": [t for t, _, _ in order] if order is not None else list(graphs)}


def _short(call: str) -> str:
    """``/job:ps/replica:0/task:0#2`` -> ``ps:0#2``."""
    task, stage = split_virtual(call)
    spec = DeviceSpec.parse(task)
    return f"{spec.job}:{spec.task}" + ("" if stage is None else f"#{stage}")


def cluster_dot(cstep) -> str:
    """The per-device clusters of ``placement_dot``, each labelled with its task."""
    return placement_dot(cstep.compiled)


def training_renderable(plan, title: str) -> Group:
    """The training step of ``train --cluster`` (``distributed/training_plan.py``): worker 0's
    replica placed, where each variable and slot lives, and every worker's traffic per step."""
    from specflow.distributed.training_plan import plan_json

    data = plan_json(plan)
    where = Table(title=f"training ({plan.mode}, {plan.strategy} placement, batch {plan.batch_size}): "
                        "variables and slots on the ps tasks", header_style="bold")  # fmt: skip
    for col in ("ps task", "variables and slots", "bytes"):
        where.add_column(col)
    for task, p in data["ps_tasks"].items():
        where.add_row(Text(task), Text(", ".join(p["variables"])), _fmt_bytes(p["bytes"]))
    traffic = Table(title="each worker's step (pulls variables, pushes gradients)", header_style="bold")
    for col in ("worker", "pulled/step", "pushed/step"):
        traffic.add_column(col)
    for w in data["workers"]:
        traffic.add_row(Text(w["task"]), *("?" if b is None else _fmt_bytes(b)
                                           for b in (w["bytes_pulled_per_step"], w["bytes_pushed_per_step"])))  # fmt: skip
    parts = [cluster_renderable(plan.first, plan.cluster, f"{title}: worker 0's training step"), where, traffic]
    if data["apply_step_cross_task_bytes"] is not None:
        parts.append(Text(f"sync: the chief applies the average on the ps tasks, "
                          f"{_fmt_bytes(data['apply_step_cross_task_bytes'])} between tasks per step", style="bold"))  # fmt: skip
    return Group(*parts)


def training_json(plan) -> str:
    from specflow.distributed.training_plan import plan_json

    data = json.loads(cluster_json(plan.first, plan.cluster))
    data["training"] = plan_json(plan)
    return json.dumps(data, indent=2)
