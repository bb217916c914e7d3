"""The step a command inspects or runs: a spec's step compiled (pruned, placed, partitioned,
locally or by task on a cluster) for ``inspect --placed``, and a loaded SavedModel or GraphDef run
for ``run``. Kept apart from ``cli.py`` (the commands) so each stays readable."""

from __future__ import annotations

from specflow.cli_args import UserError, _tensor_of


def _device_names(devices: str | None) -> list[str]:
    """Full names for a device list; placement needs names only, not the hardware."""
    from specflow.runtime.devices import device_name, parse_device_counts

    counts = parse_device_counts(devices or "cpu:1")
    counts.setdefault("CPU", 1)
    if not any(counts.values()):  # as a Session says it (runtime/devices.local_devices)
        raise UserError(f"devices '{devices}': no devices requested")
    return [device_name(kind, i) for kind in ("CPU", "GPU") for i in range(counts.get(kind, 0))]


def _default_fetches(s) -> list[str]:
    outs = [t for sig in s.signatures.values() for (t, _) in sig["outputs"].values()]
    if outs:
        return list(dict.fromkeys(outs))
    consumed = {i.lstrip("^").split(":")[0] for n in s.graph_def.nodes for i in n.inputs}
    return [n.name for n in s.graph_def.nodes if n.name not in consumed and n.op != "NoOp"]


def _compile(s, devices, fetch, feed, batch_size, soft_placement, optimize=False, cluster=None, lossy=False):
    from specflow.runtime.pipeline import compile_step

    graph = s.graph_def
    if batch_size is not None:
        graph = _with_batch_size(graph, batch_size)
    fetches = [_tensor_of(s, f) for f in fetch] if fetch else _default_fetches(s)
    targets = [f for f in fetches if graph.node_map().get(f) is not None and graph.node(f).op == "NoOp"]
    fetches = [f for f in fetches if f not in targets]
    feeds = [_tensor_of(s, f) for f in feed] if feed else [n for n in s.model.inputs if graph.node(n).op == "Placeholder"]
    if cluster is not None:
        from specflow.distributed.placement import TaskAssignment, compile_cluster_step

        return compile_cluster_step(cluster.constrained(graph), cluster, TaskAssignment(cluster), feeds=feeds,
                                    fetches=fetches, targets=targets, soft_placement=soft_placement,
                                    optimize_graph=optimize, lossy_transfers=lossy)
    return compile_step(graph, _device_names(devices), feeds=feeds, fetches=fetches, targets=targets,
                        soft_placement=soft_placement, optimize_graph=optimize, lossy_transfers=lossy)


def _with_batch_size(graph, batch_size: int):
    """A copy whose Placeholders have unknown leading dims set to ``batch_size``."""
    from specflow.graph.shapes import Shape

    g = graph.copy()
    for n in g.nodes:
        shape = n.attrs.get("shape")
        if n.op == "Placeholder" and shape is not None and shape.rank and shape[0] is None:
            n.attrs["shape"] = Shape((batch_size,) + tuple(shape.dims[1:]))
    return g


def _run_model(path, fetch, feeds, options, stats) -> list:
    from specflow.export.loader import load_model
    from specflow.io.tf_functions import check_supported

    _quiet_numeric_warnings()
    with load_model(str(path)) as model:
        nodes = model.graph_def.node_map()
        for name in [*fetch, *feeds]:
            if name.rsplit(":", 1)[0] not in nodes and name not in nodes:
                raise UserError(f"{path} has no tensor '{name}'")
        check_supported(model.graph_def, fetch, list(feeds))
        feeds = {name: _cast_to_placeholder(nodes, name, value) for name, value in feeds.items()}
        fetch = _variable_reads(model.session, nodes, fetch)
        return model.session.run(fetch, feeds, options=options, run_metadata=stats)


def _variable_reads(session, nodes, fetch: list[str]) -> list[str]:
    """A fetched variable (its VarHandleOp) is read, as ``run SPEC --fetch VAR`` reads it: its
    handle is no value to print or save."""
    from specflow.graph.graph_def import GraphDef, NodeDef

    out, added = [], []
    for name in fetch:
        node_name, _, index = name.partition(":")
        node = nodes.get(node_name)
        if node is not None and node.op == "VarHandleOp" and index in ("", "0"):
            read = f"{node_name}/_specflow_cli_read"
            if read not in nodes and all(n.name != read for n in added):
                added.append(NodeDef(read, "ReadVariableOp", [node_name], node.device, {"dtype": node.attrs["dtype"]}))
            name = f"{read}:0"
        out.append(name)
    if added:
        session.extend(GraphDef(added))
    return out


def _cast_to_placeholder(nodes, name: str, value):
    """A feed of a model's placeholder follows the one feed rule that ``run SPEC --feed`` and
    ``predict --input`` follow (io/feed_cast.py): cast to its dtype only when no value changes."""
    from specflow.io.feed_cast import cast_exactly

    node_name, _, index = name.partition(":")
    node = nodes.get(node_name)
    if node is None or node.op not in ("Placeholder", "PlaceholderWithDefault") or index not in ("", "0"):
        return value  # an intermediate tensor: the session checks its dtype
    want = node.attrs.get("dtype")
    if want is None or want.np_type is None or want.name == "string":
        return value
    return cast_exactly(value, want.numpy, f"--feed {name}", UserError)


def _quiet_numeric_warnings() -> None:
    """numpy's overflow/invalid RuntimeWarnings come from kernels on diverging values; the NaN
    guard reports a diverged run with its step, so the warnings are only noise here."""
    import warnings

    warnings.simplefilter("ignore", RuntimeWarning)


_PLACED_ONLY = ("--placed", "--devices", "--fetch", "--feed", "--batch-size", "--soft-placement", "--optimize",
                "--task-devices", "--placement", "--lossy-transfers")


def placed_only(is_model: bool, *values) -> None:
    """``inspect``'s placement flags (``_PLACED_ONLY``, in order) shape only the placed graph:
    given without --placed (or for a SavedModel, always shown whole) they would be ignored, so
    they are refused, naming them."""
    named = [flag for flag, v in zip(_PLACED_ONLY, values, strict=True) if v]
    if not named:
        return
    if is_model:
        raise UserError(f"{', '.join(named)}: inspect shows a SavedModel or GraphDef as it is; placing one "
                        "takes a spec (`specflow import` writes one)")
    raise UserError(f"{', '.join(named)} only shape{'s' if len(named) == 1 else ''} the placed graph: add --placed (without it every node "
                    "of the lowered graph is shown)")
