"""The specflow command line. The only place errors become exit codes and messages.

Exit codes: 0 ok, 1 a spec or user error (one line per problem on stderr), 2 usage.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import typer
from rich.console import Console

from specflow.errors import SpecflowError

app = typer.Typer(
    name="specflow",
    help="Declarative YAML model specs compiled to TensorFlow-style dataflow graphs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
out = Console(highlight=False)
if not out.is_terminal:
    out.width = 160  # piped output: don't squeeze tables into 80 columns
err = Console(stderr=True, highlight=False)

SetOpt = typer.Option(None, "--set", help="Override a spec field: --set nodes.hidden.units=64 (repeatable).")
FormatOpt = typer.Option("table", "--format", "-f", help="table, json or dot.")


class UserError(SpecflowError):
    """A bad command-line argument that is not a usage error (missing file, bad feed...)."""


def handle_errors(fn: Callable) -> Callable:
    """Turn SpecflowErrors into one line per problem on stderr and exit code 1."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except SpecflowError as e:
            for line in e.format().splitlines():
                err.print(f"[red]error:[/red] {_escape(line)}", soft_wrap=True)
            raise typer.Exit(1) from None
        except KeyboardInterrupt:
            err.print("interrupted")
            raise typer.Exit(130) from None

    return wrapper


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def _load(path: Path, overrides: list[str] | None):
    from specflow.schema.loader import load_spec

    if not path.exists():
        raise UserError(f"{path}: no such file")
    if path.is_dir():
        raise UserError(f"{path}: is a directory, expected a YAML spec")
    if _is_model(path):
        raise UserError(f"{path}: is a TensorFlow GraphDef, not a spec; inspect, run and predict take it, "
                        "and `specflow import` turns it into a spec")
    return load_spec(str(path), overrides=list(overrides or []))


def _is_model(path: Path) -> bool:
    """A SavedModel directory or a GraphDef file (.pb/.pbtxt): what export/loader.load_model reads."""
    from specflow.io.graph_loader import is_graph_def_file

    return path.is_dir() or is_graph_def_file(path)


def _check_format(fmt: str, allowed=("table", "json", "dot")) -> str:
    if fmt not in allowed:
        raise typer.BadParameter(f"must be one of {', '.join(allowed)}", param_hint="--format")
    return fmt


def _spec_of(spec) -> Callable[[str], list[str] | None]:
    specs = spec.lowered.builder.inferencer.specs

    def fn(name: str):
        s = specs.get(name)
        return None if s is None else [str(x) for x in s]

    return fn


# --- validate -------------------------------------------------------------------------------


@app.command()
@handle_errors
def validate(spec: Path = typer.Argument(..., help="The model spec (YAML)."), set_: list[str] | None = SetOpt):
    """Check a spec: schema, graph structure, shapes and dtypes. Prints a summary on success."""
    s = _load(spec, set_)
    n_params = sum(_num_elements(v.shape) for v in s.variables)
    trainable = sum(1 for v in s.variables if v.trainable)
    out.print(
        f"[green]ok[/green] {_escape(str(spec))}: model '{s.model.name}', {len(s.graph_def.nodes)} graph nodes, "
        f"{len(s.variables)} variables ({trainable} trainable, {n_params:,} parameters), "
        f"{len(s.model.inputs)} inputs, {len(s.signatures)} signature(s)"
    )


def _num_elements(shape) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


# --- inspect --------------------------------------------------------------------------------


DevicesOpt = typer.Option(None, "--devices", help="Devices, e.g. cpu:2 or cpu:2,gpu:1 (default: one CPU).")


@app.command()
@handle_errors
def inspect(
    spec: Path = typer.Argument(..., help="The model spec (YAML), a SavedModel directory or a GraphDef (.pb, .pbtxt)."),
    fmt: str = FormatOpt,
    placed: bool = typer.Option(False, "--placed", help="Prune, place and partition; show each device's partition."),
    devices: str | None = DevicesOpt,
    fetch: list[str] | None = typer.Option(None, "--fetch", help="Tensor to fetch (default: signature outputs)."),
    feed: list[str] | None = typer.Option(None, "--feed", help="Tensor that is fed (default: every input)."),
    batch_size: int | None = typer.Option(None, "--batch-size", help="Size of unknown leading dims (for bytes/step)."),
    soft_placement: bool = typer.Option(False, "--soft-placement", help="Relax device constraints that cannot be met."),
    optimize: bool = typer.Option(False, "--optimize", help="With --placed: show the graph after the optimizer (folding, fusion)."),
    cluster: str | None = typer.Option(None, "--cluster", help="Place on a cluster, e.g. local:ps=1,worker=2 (Ray is not started)."),
    task_devices: list[str] | None = typer.Option(None, "--task-devices", help="Devices of each task of a job, e.g. worker=cpu:2."),
    placement: str | None = typer.Option(None, "--placement", help="On a cluster: ps or round_robin."),
    set_: list[str] | None = SetOpt,
):
    """Print the lowered graph, or with --placed the pruned, placed and partitioned graph
    (with --cluster: per task and device, and the tensors crossing tasks; Ray is not started).
    Given a SavedModel directory or a GraphDef file: its signatures, variables and graph."""
    _check_format(fmt)
    if _is_model(spec):
        _check_format(fmt, ("table", "json"))
        from specflow.views.saved_model_view import (
            describe_model,
            saved_model_json,
            saved_model_renderable,
        )

        info = describe_model(str(spec))
        if fmt == "json":
            print(saved_model_json(info))
        else:
            out.print(saved_model_renderable(info))
        return
    s = _load(spec, set_)
    from specflow.views.graph_view import graph_dot, graph_json, graph_table

    if not placed and cluster is None:  # --cluster implies --placed
        spec_of = _spec_of(s)
        if fmt == "json":
            print(graph_json(s.graph_def, spec_of))
        elif fmt == "dot":
            print(graph_dot(s.graph_def, spec_of))
        else:
            out.print(graph_table(s.graph_def, spec_of, title=f"{s.model.name}: {len(s.graph_def.nodes)} nodes"))
        return
    cspec = _cluster_spec(s, cluster, None, task_devices, placement)
    if cspec is not None and devices:
        raise UserError("--devices is for a local run; on a cluster give each job's with --task-devices worker=cpu:2")
    if cspec is not None:
        from specflow.views.cluster_view import cluster_dot, cluster_json, cluster_renderable

        cstep = _compile(s, devices, fetch, feed, batch_size, soft_placement, optimize, cluster=cspec)
        if fmt == "json":
            print(cluster_json(cstep, cspec))
        elif fmt == "dot":
            print(cluster_dot(cstep))
        else:
            out.print(cluster_renderable(cstep, cspec, title=s.model.name))
        return
    from specflow.views.placement_view import placement_dot, placement_json, placement_renderable

    step = _compile(s, devices, fetch, feed, batch_size, soft_placement, optimize)
    if fmt == "json":
        print(placement_json(step))
    elif fmt == "dot":
        print(placement_dot(step))
    else:
        out.print(placement_renderable(step, title=s.model.name))


def _device_names(devices: str | None) -> list[str]:
    """Full names for a device list; placement needs names only, not the hardware."""
    from specflow.runtime.devices import device_name, parse_device_counts

    counts = parse_device_counts(devices or "cpu:1")
    counts.setdefault("CPU", 1)
    return [device_name(kind, i) for kind in ("CPU", "GPU") for i in range(counts.get(kind, 0))]


def _default_fetches(s) -> list[str]:
    outs = [t for sig in s.signatures.values() for (t, _) in sig["outputs"].values()]
    if outs:
        return list(dict.fromkeys(outs))
    consumed = {i.lstrip("^").split(":")[0] for n in s.graph_def.nodes for i in n.inputs}
    return [n.name for n in s.graph_def.nodes if n.name not in consumed and n.op != "NoOp"]


def _compile(s, devices, fetch, feed, batch_size, soft_placement, optimize=False, cluster=None):
    from specflow.runtime.pipeline import compile_step

    graph = s.graph_def
    if batch_size is not None:
        graph = _with_batch_size(graph, batch_size)
    fetches = list(fetch or _default_fetches(s))
    targets = [f for f in fetches if graph.node_map().get(f) is not None and graph.node(f).op == "NoOp"]
    fetches = [f for f in fetches if f not in targets]
    feeds = list(feed) if feed else [n for n in s.model.inputs if graph.node(n).op == "Placeholder"]
    if cluster is not None:
        from specflow.distributed.placement import TaskAssignment, compile_cluster_step

        graph = cluster.constrained(graph)
        return compile_cluster_step(graph, cluster, TaskAssignment(cluster), feeds=feeds, fetches=fetches,
                                    targets=targets, soft_placement=soft_placement, optimize_graph=optimize)
    return compile_step(graph, _device_names(devices), feeds=feeds, fetches=fetches, targets=targets,
                        soft_placement=soft_placement, optimize_graph=optimize)


def _with_batch_size(graph, batch_size: int):
    """A copy whose Placeholders have unknown leading dims set to ``batch_size``."""
    from specflow.graph.shapes import Shape

    g = graph.copy()
    for n in g.nodes:
        shape = n.attrs.get("shape")
        if n.op == "Placeholder" and shape is not None and shape.rank and shape[0] is None:
            n.attrs["shape"] = Shape((batch_size,) + tuple(shape.dims[1:]))
    return g


# --- run ------------------------------------------------------------------------------------


@app.command()
@handle_errors
def run(
    spec: Path = typer.Argument(..., help="The model spec (YAML), a SavedModel directory or a GraphDef (.pb, .pbtxt)."),
    fetch: list[str] = typer.Option(..., "--fetch", help="Tensor to fetch, e.g. probs or xent:1 (repeatable)."),
    feed: list[str] | None = typer.Option(None, "--feed", help="NAME=FILE.npy: a value to feed (repeatable)."),
    output: Path | None = typer.Option(None, "--out", "-o", help="Save the fetched values to an .npz file."),
    trace: Path | None = typer.Option(None, "--trace", help="Write a Chrome trace (open in Perfetto)."),
    devices: str | None = DevicesOpt,
    seed: int | None = typer.Option(None, "--seed", help="Graph-level random seed."),
    cluster: str | None = typer.Option(None, "--cluster", help="Run on Ray tasks: local:ps=1,worker=2 (local alone: the spec's cluster section)."),
    address: str | None = typer.Option(None, "--address", help="Attach to a running Ray cluster (host:port or auto) instead of starting a private one."),
    task_devices: list[str] | None = typer.Option(None, "--task-devices", help="Devices of each task of a job, e.g. worker=cpu:2 (repeatable)."),
    placement: str | None = typer.Option(None, "--placement", help="On a cluster: ps (variables on ps tasks, compute on workers) or round_robin."),
    set_: list[str] | None = SetOpt,
):
    """Run one step: initialize the variables, feed the inputs and print or save the fetches.
    With --cluster (or --address) the step runs on Ray tasks, one process each."""

    from specflow.runtime.step_stats import StepStats

    feeds = dict(_read_feed(f) for f in feed or [])
    stats = StepStats() if trace else None
    options = {"trace": True} if trace else None
    on_cluster = (cluster, address, task_devices, placement)
    if _is_model(spec):  # a SavedModel or GraphDef: any tensor of its graph, variables restored
        if set_:
            raise UserError("--set changes a spec; it does not apply to a SavedModel or GraphDef")
        if cluster or address:
            raise UserError("--cluster runs a spec; a SavedModel or GraphDef runs in this process")
        values = _run_model(spec, list(fetch), feeds, options, stats)
    else:
        values = _run_spec(spec, list(fetch), feeds, devices, seed, set_, options, stats, on_cluster)
    if trace:
        from specflow.io.atomic_write import write_atomically

        write_atomically(trace, lambda f: f.write(json.dumps(stats.to_chrome_trace()).encode()))
        out.print(f"wrote trace of {len(stats)} node executions to {trace}")
    if output:
        _save_npz(output, dict(zip(fetch, values)))
        out.print(f"wrote {len(values)} value(s) to {output}")
        return
    from specflow.views.values_view import values_renderable

    out.print(values_renderable(list(fetch), values))


def _run_spec(spec, fetch, feeds, devices, seed, set_, options, stats, on_cluster) -> list:
    from specflow.runtime.session import Session, SessionConfig

    s = _load(spec, set_)
    graph_seed = seed if seed is not None else s.model.seed
    cspec = _cluster_spec(s, *on_cluster)
    where = None
    if cspec is not None:
        if devices:
            raise UserError("--devices is for a local run; on a cluster give each job's with --task-devices worker=cpu:2")
        from specflow.distributed.engine import Cluster, require_ray

        require_ray()
        if options:
            raise UserError("--trace is not supported with --cluster yet")
        where = Cluster(cspec, address=on_cluster[1])
    with Session(s.graph_def, SessionConfig(devices=devices, graph_seed=graph_seed), cluster=where) as sess:
        if s.variables:
            sess.run([], targets=[s.lowered.init_op])
        # A variable's name fetches its value (as it does in spec inputs), not its handle.
        reads = {v.name: v.read for v in s.variables}
        return sess.run([reads.get(f, f) for f in fetch], feeds, options=options, run_metadata=stats)


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
        return model.session.run(fetch, feeds, options=options, run_metadata=stats)


def _cluster_spec(s, cluster: str | None, address: str | None, task_devices, placement):
    """The cluster a command runs on: --cluster's jobs over the spec's cluster section (which
    gives the rest), or None for a local run."""
    if cluster is None and address is None:
        if task_devices or placement:
            raise UserError("--task-devices and --placement need --cluster")
        return None
    from specflow.distributed.cluster_spec import (
        PLACEMENTS,
        ClusterSpec,
        cluster_from_section,
        parse_cli,
        parse_task_devices,
    )

    jobs = parse_cli(cluster) if cluster else None
    section = s.model.cluster
    if jobs is None and section is None:
        raise UserError(f"{s.path} has no cluster: section; give the jobs, e.g. --cluster local:ps=1,worker=2")
    spec = cluster_from_section(section, s.source, s.graph_def) if section is not None else ClusterSpec(jobs)
    if jobs is not None:
        spec = spec.with_jobs(jobs)
    if task_devices:
        spec.task_devices.update(parse_task_devices(task_devices))
        unknown = [j for j in spec.task_devices if j not in spec.jobs]
        if unknown:
            raise UserError(f"--task-devices names job '{unknown[0]}', which the cluster lacks (jobs: {', '.join(spec.jobs)})")
    if placement is not None:
        if placement not in PLACEMENTS:
            raise UserError(f"--placement: expected one of {', '.join(PLACEMENTS)}, got '{placement}'")
        spec.placement = placement
    spec.constrained(s.graph_def)  # every device constraint must exist on this cluster
    for notice in spec.notices:
        err.print(f"note: {_escape(notice)}")
    return spec


def _save_npz(output: Path, arrays: dict) -> None:
    """``np.savez``'s file (``.npz`` added when missing), written whole or not at all."""
    import numpy as np

    from specflow.io.atomic_write import write_atomically

    target = output if output.suffix == ".npz" else output.with_name(output.name + ".npz")
    write_atomically(target, lambda f: np.savez(f, **arrays))


def _read_feed(text: str, option: str = "--feed"):
    from specflow.io.npy import NpyError, load_array_file

    name, sep, path = text.partition("=")
    if not sep or not name or not path:
        raise UserError(f"{option} '{text}': expected NAME=FILE.npy")
    p = Path(path)
    if not p.exists():
        raise UserError(f"{option} {name}: {path}: no such file")
    try:
        value = load_array_file(p)  # the header is checked before anything is allocated
    except NpyError as e:
        raise UserError(f"{option} {name}: {path}: not a readable .npy file ({e})") from None
    if isinstance(value, dict):  # an .npz archive: take its only array
        if len(value) != 1:
            raise UserError(f"{option} {name}: {path} holds {len(value)} arrays; give an .npy file")
        value = next(iter(value.values()))
    return name, value


# --- train / eval -----------------------------------------------------------------------------


def _train_overrides(set_: list[str] | None, seed: int | None) -> list[str]:
    extra = [f"seed={seed}", f"train.data.seed={seed}"] if seed is not None else []
    return list(set_ or []) + extra


def _quiet_numeric_warnings() -> None:
    """numpy's overflow/invalid RuntimeWarnings come from kernels on diverging values; the NaN
    guard reports a diverged run with its step, so the warnings are only noise here."""
    import warnings

    warnings.simplefilter("ignore", RuntimeWarning)


@contextlib.contextmanager
def _stop_on_signals(stop: Callable[[], None]):
    """SIGINT (Ctrl-C) and SIGTERM (docker stop, Kubernetes, Ray) alike: the first calls ``stop``
    (the trainer finishes its step and saves); a second exits at once, with no save (saves are
    atomic: the last complete checkpoint stays readable, and the kernel drops the logdir lock)."""
    import signal

    seen: list[int] = []

    def handler(signum, _frame):
        if seen:
            os.write(2, f"{signal.Signals(signum).name} again: exiting without saving\n".encode())
            os._exit(128 + signum)
        seen.append(signum)
        stop()

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def _default_logdir(spec: Path) -> Path:
    return Path("runs") / spec.stem


@app.command()
@handle_errors
def train(
    spec: Path = typer.Argument(..., help="The model spec (YAML) with a train: section."),
    logdir: Path | None = typer.Option(None, "--logdir", help="Checkpoints and summaries (default: runs/<spec name>)."),
    steps: int | None = typer.Option(None, "--steps", min=1, help="Train up to this global step (default: train.steps)."),
    resume: bool = typer.Option(False, "--resume", help="Continue the run in --logdir from its latest checkpoint."),
    seed: int | None = typer.Option(None, "--seed", help="Seed for initializers, data order and random ops."),
    devices: str | None = DevicesOpt,
    set_: list[str] | None = SetOpt,
    cluster: str | None = typer.Option(None, "--cluster", help="Train on Ray tasks, e.g. local:ps=1,worker=2 (train.distributed picks async or sync)."),
    address: str | None = typer.Option(None, "--address", help="Attach to a running Ray cluster (host:port or auto)."),
):
    """Train a model: progress bar, checkpoints, TensorBoard summaries, evaluation; Ctrl-C or
    SIGTERM saves a final checkpoint (a second signal exits at once). With --cluster: variables
    on the ps tasks, one replica per worker, each on its own shard of the data."""
    from specflow.train.loop import Trainer, TrainOptions
    from specflow.views.train_view import ProgressListener, result_table

    s = _load(spec, _train_overrides(set_, seed))
    logdir = logdir or _default_logdir(spec)
    _quiet_numeric_warnings()
    with ProgressListener(out) as listener:
        options = TrainOptions(logdir=logdir, steps=steps, resume=resume, devices=devices)
        if cluster or address:
            from specflow.distributed.training import DistributedTrainer

            if devices:
                raise UserError("--devices is for a local run; a cluster's tasks have their own devices")
            from specflow.distributed.engine import ensure_ray

            cspec = _cluster_spec(s, cluster, address, None, None)
            trainer = DistributedTrainer(s, options, listener, cluster=cspec, address=address)
            ensure_ray(address)  # before the handlers below: ray.init installs its own for SIGTERM
        else:
            trainer = Trainer(s, options, listener)
        with _stop_on_signals(trainer.request_stop):
            result = trainer.run()
    out.print(result_table(result, logdir))


@app.command("eval")
@handle_errors
def eval_(
    spec: Path = typer.Argument(..., help="The model spec (YAML) with a train: section."),
    logdir: Path = typer.Option(..., "--logdir", help="The training run's directory."),
    checkpoint: int | None = typer.Option(None, "--checkpoint", help="The step to evaluate (default: latest)."),
    fmt: str = typer.Option("table", "--format", "-f", help="table or json."),
    set_: list[str] | None = SetOpt,
):
    """Evaluate a checkpoint's metrics on the spec's held-out split."""
    from specflow.train.evaluate import evaluate_checkpoint
    from specflow.views.train_view import metrics_table

    _check_format(fmt, ("table", "json"))
    s = _load(spec, set_)
    path, metrics = evaluate_checkpoint(s, logdir, checkpoint)
    if fmt == "json":
        print(json.dumps({"checkpoint": path, "metrics": metrics}, indent=2))
    else:
        out.print(metrics_table(metrics, path))


# --- export / predict --------------------------------------------------------------------------


@app.command()
@handle_errors
def export(
    spec: Path = typer.Argument(..., help="The model spec (YAML) that was trained."),
    logdir: Path = typer.Option(..., "--logdir", help="The training run's directory (its checkpoints)."),
    output: Path = typer.Option(..., "--out", "-o", help="The SavedModel directory (or .onnx file) to write."),
    checkpoint: int | None = typer.Option(None, "--checkpoint", help="The step to export (default: latest)."),
    signature: list[str] | None = typer.Option(None, "--signature", help="Export only this signature (repeatable)."),
    export_format: str = typer.Option("savedmodel", "--format", "-f", help="savedmodel or onnx."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing export."),
    set_: list[str] | None = SetOpt,
):
    """Export a checkpoint as a TensorFlow SavedModel (checked by re-loading it) or an ONNX model."""
    from specflow.export.exporter import FORMATS, export_model
    from specflow.views.saved_model_view import export_summary

    _check_format(export_format, FORMATS)
    s = _load(spec, set_)
    _quiet_numeric_warnings()
    result = export_model(s, logdir, output, fmt=export_format, step=checkpoint,
                          signatures=list(signature or []) or None, overwrite=overwrite)
    out.print(export_summary(result))


@app.command()
@handle_errors
def predict(
    export_dir: Path = typer.Argument(..., help="A SavedModel directory (specflow's or TensorFlow's) or a GraphDef (.pb, .pbtxt)."),
    input_: list[str] = typer.Option(..., "--input", "-i", help="NAME=FILE.npy: a signature input (repeatable)."),
    signature: str = typer.Option("serving_default", "--signature", help="The signature to run."),
    output: Path | None = typer.Option(None, "--out", "-o", help="Save the outputs to an .npz file."),
    fmt: str = typer.Option("table", "--format", "-f", help="table or json."),
):
    """Run a SavedModel's (or a frozen GraphDef's) signature on inputs read from .npy files."""

    from specflow.export.loader import load_model

    _check_format(fmt, ("table", "json"))
    feeds = {}
    for text in input_:
        name, value = _read_feed(text, "--input")
        if name in feeds:
            raise UserError(f"--input {name} is given twice")
        feeds[name] = value
    _quiet_numeric_warnings()
    with load_model(str(export_dir)) as model:
        outputs = model.run(signature, feeds)
    if output:
        _save_npz(output, outputs)
        out.print(f"wrote {len(outputs)} output(s) to {output}")
        return
    if fmt == "json":
        from specflow.views.saved_model_view import predictions_json

        print(predictions_json(outputs))
        return
    from specflow.views.values_view import values_renderable

    out.print(values_renderable(list(outputs), list(outputs.values())))


@app.command("import")
@handle_errors
def import_(
    source: Path = typer.Argument(..., help="A SavedModel directory or a GraphDef (.pb, .pbtxt)."),
    output: Path = typer.Option(..., "--out", "-o", help="The spec to write (model.yaml)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing spec."),
):
    """Write a TensorFlow model as an op-level spec: variables to a checkpoint beside it, large
    constants to .npy files; the spec is loaded and checked against the model before success."""
    from specflow.export.importer import import_model, verify_import
    from specflow.views.saved_model_view import import_summary

    _quiet_numeric_warnings()
    result = import_model(source, output, overwrite=overwrite)
    diffs = verify_import(source, result)
    out.print(import_summary(result, diffs))


# --- ops ------------------------------------------------------------------------------------


@app.command()
@handle_errors
def ops(
    op: str | None = typer.Argument(None, help="Show one op in detail."),
    missing_from: str | None = typer.Option(
        None, "--missing-from", help="List the ops of a reference list that specflow lacks, with the "
        "coverage: 'tf' (the most common TF ops) or a file of op names, one a line."),
):
    """List the op registry, or one op's signature, attrs, kernels and documentation."""
    from specflow.views.ops_view import coverage_renderable, op_detail, ops_table

    if missing_from is not None:
        if op is not None:
            raise UserError("give either an op or --missing-from, not both")
        from specflow.ops.coverage import coverage

        out.print(coverage_renderable(coverage(missing_from)))
        return
    if op is None:
        out.print(ops_table())
    else:
        out.print(op_detail(op))


# --- schema ---------------------------------------------------------------------------------


@app.command()
@handle_errors
def schema(output: Path | None = typer.Option(None, "--out", "-o", help="Write to a file instead of stdout.")):
    """Print the JSON Schema of the spec language (for editor completion and checks)."""
    from specflow.schema.json_schema import spec_json_schema

    text = json.dumps(spec_json_schema(), indent=2)
    if output is None:
        print(text)
    else:
        from specflow.io.atomic_write import write_atomically

        write_atomically(output, lambda f: f.write((text + "\n").encode()))
        out.print(f"wrote {output}")


def main() -> None:
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
