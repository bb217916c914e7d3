"""The training loop: a MonitoredSession-style run of the training graph with hooks.

``Trainer(spec, options).run()`` loads the data, builds the training graph, creates the
session, initializes or restores every variable (and the random and input state), starts the
queue runner that prefetches batches, and steps until the configured number of steps, the end
of the data, a stop request (Ctrl-C) or an error. Hooks save checkpoints, summaries and
evaluations; a listener (the CLI's progress bar) is told what happens. Nothing here prints.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from specflow.errors import Location, OutOfRangeError, TrainingError
from specflow.io.checkpoint import CheckpointManager
from specflow.io.summaries import SummaryWriter
from specflow.runtime.session import Session, SessionConfig
from specflow.train import early_stopping, state
from specflow.train import hooks as hk
from specflow.train.coordinator import Coordinator
from specflow.train.evaluate import eval_metrics, evaluate, load_split
from specflow.train.graph import TrainingGraph, build_training_graph
from specflow.train.logdir_lock import LogdirLock


class Listener:
    """What the loop reports; the CLI's progress bar implements it. All methods are optional."""

    def on_start(self, start_step: int, total_steps: int) -> None: ...
    def on_step(self, step: int, loss: float, steps_per_sec: float | None) -> None: ...
    def on_eval(self, step: int, metrics: dict[str, float]) -> None: ...
    def on_checkpoint(self, step: int, path: str) -> None: ...


@dataclass
class TrainOptions:
    logdir: Path
    steps: int | None = None  # overrides train.steps
    resume: bool = False
    devices: str | None = None
    lossy_transfers: bool = False  # float32 across devices/tasks as 16 bits (also the spec's transfer:)

    def lossy(self, spec) -> bool:
        """Whether this run's sessions send float32 tensors as 16 bits (whitepaper 5.5)."""
        return self.lossy_transfers or spec.model.transfer == "bfloat16"


@dataclass
class TrainResult:
    start_step: int
    step: int
    seconds: float
    stopped_by: str  # "steps", "end_of_data", "interrupt", "early_stopping"
    last_loss: float | None
    eval_metrics: dict[str, float] = field(default_factory=dict)
    checkpoint: str | None = None
    early_stopping: str | None = None  # the best value of the watched metric and its step

    @property
    def steps_per_sec(self) -> float:
        return (self.step - self.start_step) / self.seconds if self.seconds > 0 else 0.0


def has_run(logdir: Path) -> bool:
    return (logdir / "checkpoint").exists() or any(logdir.glob("events.out.tfevents.*"))


class Trainer:
    def __init__(self, spec, options: TrainOptions, listener: Listener | None = None):
        if spec.train is None:
            raise TrainingError(f"{spec.path} has no train: section; add one to train this model")
        self.spec = spec
        self.cfg = spec.train
        self.options = options
        self.listener = listener or Listener()
        self.logdir = Path(options.logdir)
        self.total_steps = options.steps if options.steps is not None else self.cfg.steps
        self._stop = threading.Event()
        self.stopped_by = "steps"
        self.step = 0
        self.data_done = False  # resumed with its epochs used up (set by _setup)

    def request_stop(self, reason: str = "interrupt") -> None:
        """Stop after the current step, save and end normally (what Ctrl-C does)."""
        self.stopped_by = reason
        self._stop.set()

    # --- setup ----------------------------------------------------------------------------------

    def _setup(self) -> None:
        cfg = self.cfg
        if has_run(self.logdir) and not self.options.resume:
            raise TrainingError(
                f"{self.logdir} already holds a training run; pass --resume to continue it, or choose "
                "another --logdir"
            )
        self.checkpoints = CheckpointManager(
            self.logdir, keep=cfg.checkpoints.keep, keep_every_hours=cfg.checkpoints.keep_every_hours
        )
        latest = self.checkpoints.latest() if self.options.resume else None
        if self.options.resume and latest is None:
            raise TrainingError(f"--resume: {self.logdir} has no checkpoint to resume from")
        self.train_arrays, self.test_arrays = load_split(self.spec, cfg)
        self.graph: TrainingGraph = build_training_graph(self.spec, cfg, self.train_arrays)
        self.save_restore = state.add_save_restore(self.graph.builder, self.graph.variables)
        self.session = Session(
            self.graph.graph_def,
            SessionConfig(devices=self.options.devices, graph_seed=self.spec.model.seed,
                          lossy_transfers=self.options.lossy(self.spec)),
        )
        self.session.run([], targets=[self.graph.init_op])
        next_batch = 0
        if latest is not None:
            next_batch = state.restore(self.session, self.save_restore, self.checkpoints.restore(latest), latest) or 0
        self.step = int(self.session.run(self.graph.global_step.read))
        self.graph.pipeline.restore(next_batch)
        ends = self.graph.pipeline.num_batches
        self.data_done = latest is not None and ends is not None and next_batch >= ends
        self.early_evals = early_stopping.load(self.logdir, self.step) if cfg.early_stopping else []
        if cfg.early_stopping and early_stopping.judge(cfg.early_stopping, self.early_evals).stopped_at is not None:
            self.data_done, self.stopped_by = True, "early_stopping"  # stopped before: nothing to do
        if self.data_done:  # resumed at the end of its epochs: nothing to train, evaluate or log
            self.session.close()
            return
        self.logdir.mkdir(parents=True, exist_ok=True)
        self.writer = SummaryWriter(self.logdir)
        self.eval_writer = SummaryWriter(self.logdir / "eval")
        self.hooks = self._hooks()

    def _hooks(self) -> list[hk.Hook]:
        cfg = self.cfg
        sums = cfg.summaries
        var_reads = {v.name: v.read for v in self.graph.variables}
        self.step_counter = hk.StepCounterHook(sums.every_steps)
        hooks: list[hk.Hook] = [self.step_counter]
        if cfg.nan_guard:
            hooks.append(hk.NanGuardHook())
        hooks.append(hk.SummarySaverHook(
            sums.every_steps, {n: self.spec.resolve(n) for n in sums.scalars}, {h: var_reads[h] for h in sums.histograms},
            graph_def=self.graph.graph_def if sums.graph else None,
        ))
        self.eval_hook = None
        if cfg.eval is not None and self.test_arrays is not None:
            self.eval_hook = hk.EvalHook(cfg.eval.every_steps)
            hooks.append(self.eval_hook)
        self.early_hook = None
        if cfg.early_stopping is not None and self.eval_hook is not None:
            self.early_hook = early_stopping.EarlyStoppingHook(cfg.early_stopping, self.eval_hook, self.logdir,
                                                               self.early_evals)
            hooks.append(self.early_hook)
        hooks.append(hk.CheckpointSaverHook(cfg.checkpoints.every_steps, cfg.checkpoints.every_secs))
        return hooks

    # --- what hooks call ------------------------------------------------------------------------

    def save(self, step: int) -> str:
        tensors = state.capture(self.session, self.save_restore, self.graph.pipeline.state())
        path = self.checkpoints.save(tensors, step, slices=state.save_slices(self.save_restore))
        self.last_checkpoint = path
        self.listener.on_checkpoint(step, path)
        return path

    def eval_step(self, step: int) -> int:
        """The global step an evaluation due at ``step`` is labelled with: ``step`` here."""
        return step

    def evaluate(self) -> dict[str, float]:
        with state.generators_untouched(self.session):
            return evaluate(self.session, self.cfg, self.graph.training_flag, self.test_arrays, eval_metrics(self.spec))

    # --- the loop -------------------------------------------------------------------------------

    def run(self) -> TrainResult:
        """Train, holding the logdir's lock for the whole run (a second trainer is refused)."""
        with LogdirLock(self.logdir):
            try:
                return self._run()
            except OSError as e:  # a full disk under summaries or the lock: one line, no traceback
                where = e.filename or str(self.logdir)
                raise TrainingError(f"{e.strerror or e}", location=Location(str(where))) from None

    def _run(self) -> TrainResult:
        self._setup()
        self.last_checkpoint = self.checkpoints.latest()
        start_step = self.step
        if self.data_done:
            return TrainResult(start_step=start_step, step=self.step, seconds=0.0,
                               stopped_by="early_stopping" if self.stopped_by == "early_stopping" else "end_of_data",
                               last_loss=None, eval_metrics={}, checkpoint=self.last_checkpoint)
        pipeline = self.graph.pipeline
        coord = Coordinator()
        pipeline.queue_runner(self.session).create_threads(coord)
        t0 = time.perf_counter()
        loss = None
        feeds = {self.graph.training_flag: True} if self.graph.training_flag else {}
        try:
            for h in self.hooks:
                h.begin(self)
            self.listener.on_start(self.step, self.total_steps)
            while self.step < self.total_steps and not self._stop.is_set():
                extra: dict[str, str] = {}
                for h in self.hooks:
                    extra.update(h.before_step(self, self.step))
                keys = ["loss", "batch_index", *extra]
                try:
                    values = self.session.run([self.graph.loss, pipeline.batch_index, *extra.values()], feeds,
                                              targets=[self.graph.train_op])
                except OutOfRangeError:
                    self.stopped_by = "end_of_data"
                    break
                got = dict(zip(keys, values))
                pipeline.consumed(got["batch_index"])
                self.step += 1
                loss = float(got["loss"])
                for h in self.hooks:
                    h.after_step(self, self.step, got)
                self.listener.on_step(self.step, loss, self.step_counter.rate)
            for h in self.hooks:
                h.end(self)
        finally:
            coord.request_stop()
            coord.join(stop_grace_period_s=10.0, ignore_live_threads=True)
            self.writer.close()
            self.eval_writer.close()
            self.session.close()
        return TrainResult(
            start_step=start_step,
            step=self.step,
            seconds=time.perf_counter() - t0,
            stopped_by=self.stopped_by,
            last_loss=loss,
            eval_metrics=dict(self.eval_hook.last_metrics) if self.eval_hook else {},
            checkpoint=self.last_checkpoint,
            early_stopping=self.early_hook.summary() if self.early_hook else None,
        )
