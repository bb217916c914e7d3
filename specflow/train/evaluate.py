"""Evaluating metrics on the held-out split: during training (EvalHook) and from a checkpoint
(``specflow eval``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from specflow.errors import SpecflowError, TrainingError
from specflow.graph.builder import GraphBuilder
from specflow.io.checkpoint import CheckpointManager
from specflow.runtime.session import Session, SessionConfig
from specflow.train import state
from specflow.train.data import load_source, split
from specflow.train.data_fit import check_fixed_batch, errors_located, fit_to_inputs, located
from specflow.train.sharding import FILE_INDEX


def load_split(spec, cfg) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray] | None]:
    """The spec's training data and its held-out split (None without ``split``)."""
    arrays = load_fitted(spec, cfg)
    if cfg.data.split is None:
        train, test = arrays, None
    else:
        with errors_located(spec):
            train, test = split(arrays, cfg.data.split.test, cfg.data.seed, cfg.data.split.stratify)
    check_fixed_batch(spec, cfg, train, test)
    n = len(next(iter(train.values()))) if train else None
    if n is not None and cfg.data.batch_size > n:  # here, so `validate` says it too (not clamped: see InputPipeline)
        from specflow.errors import SpecError

        raise located(spec, SpecError(f"batch_size {cfg.data.batch_size} is larger than the training data ({n} examples"
                                      f"{' after the split' if test is not None else ''})", path="train.data.batch_size"))
    return train, test


def load_fitted(spec, cfg) -> dict[str, np.ndarray]:
    """The spec's data source, each fed field fitted to its input (``data_fit.py``); errors at
    the spec's line."""
    base = Path(spec.path).parent if spec.path else Path(".")
    used = {*cfg.data.feeds.values(), *([cfg.data.split.stratify] if cfg.data.split else [])} - {None}
    try:
        arrays = load_source(cfg.data.source_dict(), base, used)
    except SpecflowError as e:
        raise located(spec, e) from None
    arrays = fit_to_inputs(spec, cfg, arrays)
    return {k: a for k, a in arrays.items() if k in used or k == FILE_INDEX}  # the others are not examples


def evaluate(session, cfg, training_flag, arrays, metrics: dict[str, str], batch: int = 1024) -> dict[str, float]:
    """The mean of each metric over ``arrays`` (fed to the model inputs in chunks of ``batch``,
    weighted by chunk size: the metrics are per-example means such as accuracy and loss)."""
    feeds_by_input = {inp: arrays[f] for inp, f in cfg.data.feeds.items()}
    n = len(next(iter(feeds_by_input.values())))
    totals = np.zeros(len(metrics))
    for lo in range(0, n, batch):
        feed = {inp: a[lo : lo + batch] for inp, a in feeds_by_input.items()}
        if training_flag:
            feed[training_flag] = False
        vals = session.run(list(metrics.values()), feed)
        totals += np.array([float(v) for v in vals]) * len(next(iter(feed.values())))
    return {m: float(t / n) for m, t in zip(metrics, totals)}


def eval_metrics(spec) -> dict[str, str]:
    """Metric name -> tensor: the spec's ``eval.metrics``, or its loss."""
    cfg = spec.train
    names = list(cfg.eval.metrics) if cfg.eval is not None else [cfg.loss]
    return {n: spec.resolve(n) for n in names}


def evaluate_checkpoint(spec, logdir, step: int | None = None) -> tuple[str, dict[str, float]]:
    """Restore the model's variables from the run in ``logdir`` (the checkpoint of ``step``, or
    the latest) and evaluate the spec's metrics on its held-out split."""
    cfg = spec.train
    if cfg is None:
        raise TrainingError(f"{spec.path} has no train: section (it names the data and metrics)")
    if cfg.data.split is None:
        msg = "there is no held-out data to evaluate on: add split: {test: 0.2} to it"
        raise located(spec, TrainingError(msg, path="train.data"))
    graph_def, path, restore = restoring_graph(spec, logdir, step, keep=cfg.checkpoints.keep)
    _, test = load_split(spec, cfg)
    with Session(graph_def, SessionConfig(graph_seed=spec.model.seed)) as sess:
        restore(sess)
        metrics = evaluate(sess, cfg, spec.lowered.training_flag, test, eval_metrics(spec))
    return path, metrics


def restoring_graph(spec, logdir, step: int | None = None, keep: int = 5):
    """The spec's graph with restore ops, the checkpoint (of ``step``, or the latest) in
    ``logdir``, and ``restore(session)``, which sets the model's variables from it (``eval``
    and ``run --checkpoint``)."""
    manager = CheckpointManager(Path(logdir), keep=keep)
    if step is None:
        path = manager.latest()
        if path is None:
            raise TrainingError(f"{logdir} has no checkpoint")
    else:
        path = manager.path_for_step(step)
        if path is None:
            kept = ", ".join(Path(p).name for p in manager.all()) or "none"
            raise TrainingError(f"{logdir} has no checkpoint for step {step} (kept: {kept})")
    b = GraphBuilder(spec.graph_def)
    sr = state.add_save_restore(b, list(spec.variables))

    def restore(sess) -> None:
        state.restore(sess, sr, manager.restore(path), str(path))

    return b.graph_def, str(path), restore
