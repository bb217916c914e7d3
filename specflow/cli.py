"""The specflow command line. The only place errors become exit codes and messages.

Exit codes: 0 ok, 1 a spec or user error (one line per problem on stderr), 2 usage.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import typer
from rich.console import Console

from specflow.cli_args import (
    UserError,
    _cast_inputs,
    _check_logdir,
    _check_output_dir,
    _check_spec_path,
    _flags_without_metavar,
    _help_without_metavar,
    _is_model,
    _output_file,
    _read_feed,
    _run_feeds,
    _save_npz,
    _tensor_of,
    out_path,
)
from specflow.cli_cluster import inspect_training, local_training_notes, no_devices_on_a_cluster
from specflow.cli_errors import _escape, err, handle_errors, noting_flags
from specflow.cli_signals import _stop_on_signals, exit_interrupted
from specflow.cli_steps import _compile, _quiet_numeric_warnings, _run_model, placed_only
from specflow.errors import SpecflowError

app = typer.Typer(
    name="specflow",
    help="Declarative YAML model specs compiled to TensorFlow-style dataflow graphs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
out = Console(highlight=False, emoji=False)
if not out.is_terminal:
    out.width = 160  # piped output: don't squeeze tables into 80 columns

SetOpt = typer.Option(None, "--set", help="Override a spec field: --set nodes.hidden.units=64 (repeatable).")
FormatOpt = typer.Option("table", "--format", "-f", help="table, json or dot.")


def _load(path: Path, overrides: list[str] | None, run=None):
    """The spec with ``overrides``. An error then names the --set flags (or, for ``run``, the
    RunConfig whose flags made the overrides, the run's remembered --seed/--set) that were applied:
    a shape mismatch after ``--set nodes.hidden.units=7`` is the --set's doing."""
    from specflow.io.tf_functions import check_spec_writes_no_files
    from specflow.schema.loader import load_spec

    _check_spec_path(path)
    with noting_flags(overrides, run, SpecflowError):
        s = load_spec(str(path), overrides=list(overrides or []))
        check_spec_writes_no_files(s.graph_def)  # a SaveV2/MergeV2Checkpoints of paths the spec names
    return s


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
    """Check a spec: schema, graph structure, shapes and dtypes, and its training data (files
    found; up to 64 MiB read and fitted to the inputs). Prints a summary on success."""
    from specflow.distributed.replicas import check_spec_cluster
    from specflow.train.data_fit import check_data, errors_located
    from specflow.train.loss_check import check_loss_reaches_a_variable

    s = _load(spec, set_)
    with noting_flags(set_):  # the data's checks too: `--set train.data.batch_size=...` is named
        check_data(s)
    with noting_flags(set_, kind=SpecflowError), errors_located(s):
        check_loss_reaches_a_variable(s)
        check_spec_cluster(s)  # what train --cluster local would refuse
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


DevicesOpt = typer.Option(None, "--devices", help="Devices, e.g. cpu:2 or cpu:2,gpu:1 (default: one CPU and every GPU cupy sees).")
LossyOpt = typer.Option(False, "--lossy-transfers", help="Send float32 tensors across devices and tasks as their "
                        "top 16 bits (bfloat16 by truncation; the spec's transfer: bfloat16 does the same).")


@app.command()
@handle_errors
def inspect(
    spec: Path = typer.Argument(..., help="The model spec (YAML), a SavedModel directory or a GraphDef (.pb, .pbtxt)."),
    fmt: str = FormatOpt,
    placed: bool = typer.Option(False, "--placed", help="Prune, place and partition; show each device's partition."),
    devices: str | None = DevicesOpt,
    fetch: list[str] | None = typer.Option(None, "--fetch", help="Tensor to fetch (default: signature outputs)."),
    feed: list[str] | None = typer.Option(None, "--feed", help="Tensor that is fed (default: every input)."),
    batch_size: int | None = typer.Option(None, "--batch-size", min=1, max=2**63 - 1, help="Size of unknown leading dims (for bytes/step)."),
    soft_placement: bool = typer.Option(False, "--soft-placement", help="Relax device constraints that cannot be met."),
    optimize: bool = typer.Option(False, "--optimize", help="With --placed: show the graph after the optimizer (folding, fusion)."),
    cluster: str | None = typer.Option(None, "--cluster", help="Place on a cluster, e.g. local:ps=1,worker=2 (Ray is not started)."),
    task_devices: list[str] | None = typer.Option(None, "--task-devices", help="Devices of each task of a job, e.g. worker=cpu:2."),
    placement: str | None = typer.Option(None, "--placement", help="On a cluster: ps or round_robin."),
    lossy_transfers: bool = LossyOpt,
    set_: list[str] | None = SetOpt,
):
    """Print the lowered graph, or with --placed the pruned, placed and partitioned graph
    (with --cluster: per task and device, and the tensors crossing tasks; Ray is not started).
    Given a SavedModel directory or a GraphDef file: its signatures, variables and graph."""
    _check_format(fmt)
    model = _is_model(spec)
    if model or not (placed or cluster):  # placement flags would do nothing here: refused
        placed_only(model, placed and model, devices, fetch, feed, batch_size, soft_placement, optimize,
                    task_devices, placement, lossy_transfers)
    if model:
        from specflow.views.saved_model_view import (
            describe_model,
            saved_model_json,
            saved_model_renderable,
        )

        info = describe_model(str(spec))
        if fmt == "dot":  # the graph as it is stored (`| dot -Tsvg`), as for a spec
            from specflow.graph.graph_def import GraphDef, NodeDef
            from specflow.views.graph_view import graph_dot

            print(graph_dot(GraphDef([NodeDef(n["name"], n["op"], n["inputs"], n["device"]) for n in info["nodes"]])))
        elif fmt == "json":
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
    no_devices_on_a_cluster(cspec, devices)
    lossy = lossy_transfers or s.model.transfer == "bfloat16"
    if cspec is not None and s.train is not None and cspec.jobs.get("ps") and not (fetch or feed):
        inspect_training(s, cspec, fmt, lossy, out)  # the step train --cluster runs, not the serving graph's
        return
    if cspec is not None:
        from specflow.views.cluster_view import cluster_dot, cluster_json, cluster_renderable

        cstep = _compile(s, devices, fetch, feed, batch_size, soft_placement, optimize, cluster=cspec, lossy=lossy)
        if fmt == "json":
            print(cluster_json(cstep, cspec))
        elif fmt == "dot":
            print(cluster_dot(cstep))
        else:
            out.print(cluster_renderable(cstep, cspec, title=s.model.name))
        return
    from specflow.views.placement_view import placement_dot, placement_json, placement_renderable

    step = _compile(s, devices, fetch, feed, batch_size, soft_placement, optimize, lossy=lossy)
    if fmt == "json":
        print(placement_json(step))
    elif fmt == "dot":
        print(placement_dot(step))
    else:
        out.print(placement_renderable(step, title=s.model.name))


def _cluster_spec(s, cluster, address, task_devices, placement):
    from specflow.cli_cluster import cluster_spec

    cspec, notices = cluster_spec(s, cluster, address, task_devices, placement)
    for notice in notices:
        err.print(f"note: {_escape(notice)}")
    return cspec


# --- run ------------------------------------------------------------------------------------


@app.command()
@handle_errors
def run(
    spec: Path = typer.Argument(..., help="The model spec (YAML), a SavedModel directory or a GraphDef (.pb, .pbtxt)."),
    fetch: list[str] = typer.Option(..., "--fetch", help="Tensor to fetch: any spec reference, e.g. probs, "
                                    "xent:1, a call's block1, a loop's fact:1, a variable (repeatable)."),
    feed: list[str] | None = typer.Option(None, "--feed", help="NAME=FILE.npy: a value to feed (repeatable); "
                                          "cast to the tensor's dtype only when no value changes."),
    output: Path | None = typer.Option(None, "--out", "-o", help="Save the fetched values to an .npz file.", parser=out_path),
    trace: Path | None = typer.Option(None, "--trace", help="Write a Chrome trace (open in Perfetto).", parser=out_path),
    devices: str | None = DevicesOpt,
    seed: int | None = typer.Option(None, "--seed", help="Graph-level random seed."),
    checkpoint: Path | None = typer.Option(None, "--checkpoint", help="A training run's logdir: the variables "
                                           "take its latest checkpoint's values (with the run's --set), not "
                                           "their initializers'."),
    cluster: str | None = typer.Option(None, "--cluster", help="Run on Ray tasks: local:ps=1,worker=2 (local alone: the spec's cluster section)."),
    address: str | None = typer.Option(None, "--address", help="Attach to a running Ray cluster (host:port or auto) instead of starting a private one."),
    task_devices: list[str] | None = typer.Option(None, "--task-devices", help="Devices of each task of a job, e.g. worker=cpu:2 (repeatable)."),
    placement: str | None = typer.Option(None, "--placement", help="On a cluster: ps (variables on ps tasks, compute on workers) or round_robin."),
    lossy_transfers: bool = LossyOpt,
    set_: list[str] | None = SetOpt,
):
    """Run one step: initialize the variables (or restore them with --checkpoint), feed the
    inputs and print or save the fetches. With --cluster (or --address) the step runs on Ray
    tasks, one process each."""
    from specflow.runtime.step_stats import StepStats

    _check_output_dir(output, f"{spec.stem}.npz")
    _check_output_dir(trace, "trace.json")
    stats = StepStats() if trace else None
    options = {"trace": True} if trace else None
    if _is_model(spec):  # a SavedModel or GraphDef: any tensor of its graph, variables restored
        for flag, given in (("--set", set_), ("--checkpoint", checkpoint), ("--cluster", cluster or address),
                            ("--lossy-transfers", lossy_transfers)):
            if given:
                raise UserError(f"{flag} applies to a spec, not to a SavedModel or GraphDef")
        values = _run_model(spec, list(fetch), dict(_read_feed(f) for f in feed or []), options, stats)
    else:
        on_cluster = (cluster, address, task_devices, placement)
        values = _run_spec(spec, fetch, feed, devices, seed, set_, checkpoint, options, stats, on_cluster, lossy_transfers)
    if trace:
        from specflow.io.atomic_write import write_atomically

        trace = _output_file(trace, "trace.json")
        write_atomically(trace, lambda f: f.write(json.dumps(stats.to_chrome_trace()).encode()))
        out.print(f"wrote trace of {len(stats)} node executions to {_escape(str(trace))}")
        if stats.memory:
            from specflow.views.placement_view import peak_line

            out.print(peak_line(stats.peak_bytes(), "peak memory of the step"))
    if output:
        target = _save_npz(output, dict(zip(fetch, values)), f"{spec.stem}.npz")
        out.print(f"wrote {len(values)} value(s) to {_escape(str(target))}")
        return
    from specflow.views.values_view import values_renderable

    out.print(values_renderable(list(fetch), values))


def _run_spec(spec, fetch, feed, devices, seed, set_, checkpoint, options, stats, on_cluster, lossy) -> list:
    from specflow.cli_cluster import connect
    from specflow.runtime.session import Session, SessionConfig

    s, graph, restore = _load_for_run(spec, set_, checkpoint, seed)
    feeds = _run_feeds(s, feed or [])
    graph_seed = seed if seed is not None else s.model.seed
    cspec = _cluster_spec(s, *on_cluster)
    no_devices_on_a_cluster(cspec, devices)
    where = connect(cspec, on_cluster[1], options is not None) if cspec is not None else None
    config = SessionConfig(devices=devices, graph_seed=graph_seed, lossy_transfers=lossy or s.model.transfer == "bfloat16")
    with Session(graph, config, cluster=where) as sess:
        if restore is not None:
            restore(sess)
        elif s.variables:
            sess.run([], targets=[s.lowered.init_op])
        return sess.run([_tensor_of(s, f) for f in fetch], feeds, options=options, run_metadata=stats)


def _load_for_run(spec: Path, set_: list[str] | None, checkpoint: Path | None, seed: int | None = None):
    """The spec, the graph to run and (with --checkpoint LOGDIR) what restores the variables."""
    if checkpoint is None:
        s = _load(spec, set_)
        return s, s.graph_def, None
    from specflow.train.evaluate import restoring_graph

    _check_logdir(checkpoint)
    s = _load_with_run_flags(spec, checkpoint, set_, seed)
    graph, _, restore = restoring_graph(s, checkpoint)
    return s, graph, restore


def _load_with_run_flags(spec: Path, logdir: Path, set_: list[str] | None, seed: int | None = None):
    """The spec as the run in ``logdir`` trained it: with its --seed and --set (LOGDIR/run.json),
    for the commands that read a run (eval, export, run --checkpoint)."""
    from specflow.train import run_config

    _check_spec_path(spec)
    config, warnings = run_config.eval_config(spec, logdir, set_, seed)
    for w in warnings:
        err.print(f"[yellow]warning:[/yellow] {_escape(w)}", soft_wrap=True)
    return _load(spec, _train_overrides(config.set, config.seed), config)


# --- train / eval -----------------------------------------------------------------------------


def _train_overrides(set_: list[str] | None, seed: int | None) -> list[str]:
    extra = [f"seed={seed}", f"train.data.seed={seed}"] if seed is not None else []
    return list(set_ or []) + extra


def _default_logdir(spec: Path) -> Path:
    return Path("runs") / spec.stem


@app.command()
@handle_errors
def train(
    spec: Path = typer.Argument(..., help="The model spec (YAML) with a train: section."),
    logdir: Path | None = typer.Option(None, "--logdir", help="Checkpoints and summaries (default: runs/<spec name>)."),
    steps: int | None = typer.Option(None, "--steps", min=1, max=2**63 - 1, help="Train up to this global step (default: train.steps)."),
    resume: bool = typer.Option(False, "--resume", help="Continue the run in --logdir from its latest checkpoint, "
                                "with the run's own --seed and --set (remembered in LOGDIR/run.json)."),
    seed: int | None = typer.Option(None, "--seed", min=0, max=2**63 - 1,
                                     help="Seed for initializers, data order and random ops."),
    devices: str | None = DevicesOpt,
    force: bool = typer.Option(False, "--force", help="With --resume: use a --seed/--set that differs from the "
                               "run's (a warning instead of an error)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace the run in --logdir (its checkpoints, "
                                   "events and run.json) instead of continuing it."),
    set_: list[str] | None = SetOpt,
    cluster: str | None = typer.Option(None, "--cluster", help="Train on Ray tasks, e.g. local:ps=1,worker=2 (train.distributed picks async or sync)."),
    address: str | None = typer.Option(None, "--address", help="Attach to a running Ray cluster (host:port or auto)."),
    lossy_transfers: bool = LossyOpt,
):
    """Train a model: progress bar, checkpoints, TensorBoard summaries, evaluation; Ctrl-C or
    SIGTERM saves a final checkpoint (a second signal exits at once). Training again into a
    logdir that holds the same run continues it; a finished one is left as it is. With
    --cluster: variables on the ps tasks, one replica per worker, each on its own data shard."""
    from specflow.train import run_config
    from specflow.train.data_fit import errors_located
    from specflow.train.loop import Trainer, TrainOptions
    from specflow.views.train_view import ProgressListener, result_table

    logdir = logdir or _default_logdir(spec)
    _check_spec_path(spec)
    plan = run_config.plan_train(spec, logdir, seed, set_, resume=resume, force=force, overwrite=overwrite)
    for w in plan.warnings:
        err.print(f"[yellow]warning:[/yellow] {_escape(w)}", soft_wrap=True)
    s = _load(spec, _train_overrides(plan.config.set, plan.config.seed), plan.config)
    if s.train is not None and plan.resume:
        done = run_config.latest_step(logdir)
        total = steps if steps is not None else s.train.steps
        if done is not None and done >= total:
            hint = "" if done == total else f" (the target is step {total}; --steps N trains further)"
            out.print(f"{_escape(str(logdir))}: already at step {done}; nothing to do{hint}")
            return
    _quiet_numeric_warnings()
    with noting_flags(plan.config.set, plan.config), errors_located(s), ProgressListener(out) as listener:
        options = TrainOptions(logdir=logdir, steps=steps, resume=plan.resume, devices=devices,
                               lossy_transfers=lossy_transfers)
        if cluster or address:
            from specflow.cli_cluster import distributed_trainer

            if s.train is not None and s.train.early_stopping is not None:
                from specflow.errors import SpecError
                from specflow.train.data_fit import located

                raise located(s, SpecError("early_stopping is not supported with --cluster yet; train locally or "
                                           "remove it", path="train.early_stopping"))

            cspec = _cluster_spec(s, cluster, address, None, None)
            trainer = distributed_trainer(s, options, listener, cspec, address, devices)
        else:
            for note in local_training_notes(s):
                err.print(f"note: {_escape(note)}", soft_wrap=True, highlight=False)
            trainer = Trainer(s, options, listener)
        with run_config.begun(logdir, plan), _stop_on_signals(trainer.request_stop) as signals:
            result = trainer.run()
    if result.stopped_by == "early_stopping" and result.step == result.start_step:
        out.print(f"{_escape(str(logdir))}: stopped early at step {result.step} (train.early_stopping); nothing to do")
        return
    if result.stopped_by == "end_of_data" and result.step == result.start_step:
        out.print(f"{_escape(str(logdir))}: already at the end of its data (train.data.epochs) at step {result.step}; "
                  "nothing to do")
        return
    out.print(result_table(result, logdir))
    if signals and result.stopped_by == "interrupt":
        exit_interrupted(signals[0], result.step)


@app.command("eval")
@handle_errors
def eval_(
    spec: Path = typer.Argument(..., help="The model spec (YAML) with a train: section."),
    logdir: Path = typer.Option(..., "--logdir", help="The training run's directory."),
    checkpoint: int | None = typer.Option(None, "--checkpoint", help="The step to evaluate (default: latest)."),
    fmt: str = typer.Option("table", "--format", "-f", help="table or json."),
    set_: list[str] | None = SetOpt,
):
    """Evaluate a checkpoint's metrics on the held-out split of the training run (made with the
    run's --seed and --set, which the logdir remembers)."""
    from specflow.train.evaluate import evaluate_checkpoint
    from specflow.views.train_view import metrics_table

    _check_format(fmt, ("table", "json"))
    _check_spec_path(spec)
    _check_logdir(logdir)
    s = _load_with_run_flags(spec, logdir, set_)
    path, metrics = evaluate_checkpoint(s, logdir, checkpoint)
    if fmt == "json":
        from specflow.views.json_values import dumps

        print(dumps({"checkpoint": path, "metrics": metrics}))
    else:
        out.print(metrics_table(metrics, path))


# --- export / predict --------------------------------------------------------------------------


@app.command()
@handle_errors
def export(
    spec: Path = typer.Argument(..., help="The model spec (YAML) that was trained."),
    logdir: Path | None = typer.Option(None, "--logdir", help="The training run's directory (its checkpoints); "
                                       "required unless the spec has no variables."),
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
    if logdir is None:
        _check_spec_path(spec)
        s = _load(spec, set_)
    else:
        _check_logdir(logdir)  # a file given as --logdir is "not a directory", as for eval
        s = _load_with_run_flags(spec, logdir, set_)
    _quiet_numeric_warnings()
    result = export_model(s, logdir, output, fmt=export_format, step=checkpoint,
                          signatures=list(signature or []) or None, overwrite=overwrite)
    out.print(export_summary(result))
    if export_format == "onnx" and not result.max_diff:
        err.print(f"[yellow]warning:[/yellow] {_escape(str(output))} was NOT verified: onnxruntime is not installed, so "
                  "the file was not run and compared with the spec (pip install onnxruntime, or the [onnx] extra)",
                  soft_wrap=True)


@app.command()
@handle_errors
def predict(
    export_dir: Path = typer.Argument(..., help="A SavedModel directory (specflow's or TensorFlow's) or a GraphDef (.pb, .pbtxt)."),
    input_: list[str] = typer.Option(..., "--input", "-i", help="NAME=FILE.npy: a signature input (repeatable); "
                                     "cast to the input's dtype only when no value changes."),
    signature: str = typer.Option("serving_default", "--signature", help="The signature to run."),
    output: Path | None = typer.Option(None, "--out", "-o", help="Save the outputs to an .npz file.", parser=out_path),
    fmt: str = typer.Option("table", "--format", "-f", help="table or json."),
):
    """Run a SavedModel's (or a frozen GraphDef's) signature on inputs read from .npy files."""
    from specflow.export.loader import load_model

    _check_format(fmt, ("table", "json"))
    _check_output_dir(output, "predictions.npz")
    if export_dir.is_file() and export_dir.suffix not in (".pb", ".pbtxt"):
        raise UserError(f"{export_dir}: is a file; predict runs a SavedModel directory or a GraphDef (.pb, "
                        ".pbtxt) (write one with `specflow export SPEC --logdir LOGDIR --out DIR`)")
    feeds = {}
    for text in input_:
        name, value = _read_feed(text, "--input")
        if name in feeds:
            raise UserError(f"--input {name} is given twice")
        feeds[name] = value
    _quiet_numeric_warnings()
    with load_model(str(export_dir)) as model:
        outputs = model.run(signature, _cast_inputs(model.signature(signature), feeds))
    if output:
        target = _save_npz(output, outputs, "predictions.npz")
        out.print(f"wrote {len(outputs)} output(s) to {_escape(str(target))}")
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
        from specflow.io.tf_functions import LOAD_TIME_OPS
        from specflow.ops.coverage import coverage

        out.print(coverage_renderable(coverage(missing_from, LOAD_TIME_OPS)))
        return
    if op is None:
        out.print(ops_table())
    else:
        out.print(op_detail(op))


# --- schema ---------------------------------------------------------------------------------


@app.command()
@handle_errors
def schema(output: Path | None = typer.Option(None, "--out", "-o", help="Write to a file instead of stdout.", parser=out_path)):
    """Print the JSON Schema of the spec language (for editor completion and checks)."""
    from specflow.schema.json_schema import spec_json_schema

    text = json.dumps(spec_json_schema(), indent=2)
    if output is None:
        print(text)
    else:
        from specflow.io.atomic_write import write_atomically

        output = _output_file(output, "specflow.schema.json")
        write_atomically(output, lambda f: f.write((text + "\n").encode()))
        out.print(f"wrote {_escape(str(output))}")


def _version(value: bool) -> None:
    if value:
        from specflow import __version__

        print(f"specflow {__version__}")
        raise typer.Exit(0)


@app.callback()
def _main_options(
    version: bool = typer.Option(False, "--version", help="Print the version and exit.", callback=_version,
                                 is_eager=True, metavar=""),
) -> None:
    """Declarative YAML model specs compiled to TensorFlow-style dataflow graphs."""


_flags_without_metavar(app)


def main() -> None:
    command = typer.main.get_command(app)
    _help_without_metavar(command)
    command()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
