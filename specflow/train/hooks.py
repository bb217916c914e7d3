"""Training hooks in the style of TensorFlow's MonitoredSession.

The loop (``specflow.train.loop``) runs one step at a time; before a step it asks every hook
which extra tensors to fetch (``before_step``), after it hands them their values
(``after_step``), and hooks ask the loop to stop through ``run.request_stop``. Everything that
is not the step itself (checkpoints, summaries, evaluation, NaN checks, steps/s) lives here.
"""

from __future__ import annotations

import math
import time

import numpy as np

from specflow.errors import TrainingError


class Hook:
    def begin(self, run) -> None:
        """Once, after the session is initialized or restored."""

    def before_step(self, run, step: int) -> dict[str, str]:
        """Extra tensors to fetch in the step that will make the global step ``step + 1``."""
        return {}

    def after_step(self, run, step: int, values: dict) -> None:
        """``step`` is the global step after the update; ``values`` the fetched tensors."""

    def end(self, run) -> None:
        """Once, when the loop ends for any reason other than an error."""


class StepCounterHook(Hook):
    """Steps per second over the last ``every_steps`` steps (TensorBoard's ``global_step/sec``),
    and over at least ``min_secs``: async cluster workers report their steps in chunks, so a
    window of a few steps could span one chunk's arrival and read as thousands of steps/s."""

    def __init__(self, every_steps: int, min_secs: float = 0.0):
        self.every = max(1, every_steps)
        self.min_secs = min_secs
        self.rate: float | None = None

    def begin(self, run) -> None:
        self._t, self._step = time.perf_counter(), run.step

    def after_step(self, run, step: int, values: dict) -> None:
        if step - self._step >= self.every or step == 1:
            now = time.perf_counter()
            if now - self._t < self.min_secs:
                return
            if step > self._step and now > self._t:
                self.rate = (step - self._step) / (now - self._t)
                run.writer.add_scalar("global_step/sec", self.rate, step)
            self._t, self._step = now, step


class NanGuardHook(Hook):
    """Stops with an error naming the step and the last good checkpoint when the loss stops
    being finite (TF's NanTensorHook)."""

    def after_step(self, run, step: int, values: dict) -> None:
        loss = values["loss"]
        if not math.isfinite(float(loss)):
            last = run.checkpoints.latest()
            where = f"the last good checkpoint is {last}" if last else "no checkpoint was written yet"
            raise TrainingError(f"the loss is {float(loss)} at step {step}; {where}", path="train.loss")


class SummarySaverHook(Hook):
    """Every ``every_steps``: the named scalars, the learning rate and histograms of the chosen
    variables, written to the run's event file. The graph is written once at the start."""

    def __init__(self, every_steps: int, scalars: dict[str, str], histograms: dict[str, str], graph_def=None):
        self.every = max(1, every_steps)
        self.scalars = dict(scalars)  # tag -> tensor
        self.histograms = dict(histograms)  # tag -> value tensor
        self.graph_def = graph_def

    def begin(self, run) -> None:
        if self.graph_def is not None and run.step == 0:
            run.writer.add_graph(self.graph_def)

    def _due(self, step: int) -> bool:
        return (step + 1) % self.every == 0 or step == 0

    def fetches(self, run) -> dict[str, str]:
        """What a due step fetches: key (``scalar/``/``histogram/`` + tag) -> tensor."""
        fetch = {f"scalar/{tag}": t for tag, t in self.scalars.items()}
        fetch["scalar/learning_rate"] = run.graph.learning_rate
        fetch.update({f"histogram/{tag}": t for tag, t in self.histograms.items()})
        return fetch

    def before_step(self, run, step: int) -> dict[str, str]:
        return self.fetches(run) if self._due(step) else {}

    def after_step(self, run, step: int, values: dict) -> None:
        """Writes the summaries ``values`` holds: a step fetches them only when due (here, or
        in an async chief's own loop, ``replica_loop.py``, whose steps the global step may
        outrun)."""
        wrote = False
        for key, value in values.items():
            if key.startswith("scalar/"):
                run.writer.add_scalar(key[len("scalar/"):], float(value), step)
            elif key.startswith("histogram/"):
                run.writer.add_histogram(key[len("histogram/"):], np.asarray(value), step)
            else:
                continue
            wrote = True
        if wrote:
            run.writer.flush()


class CheckpointSaverHook(Hook):
    """Saves every ``every_steps`` steps and/or ``every_secs`` seconds, and at the end (also
    when the run is interrupted)."""

    def __init__(self, every_steps: int | None, every_secs: float | None):
        self.every_steps = every_steps
        self.every_secs = every_secs
        self._last_step = -1

    def begin(self, run) -> None:
        self._last_step = run.step
        self._last_time = time.monotonic()

    def after_step(self, run, step: int, values: dict) -> None:
        # Crossing a multiple, not landing on it: on a cluster the global step may jump.
        due = bool(self.every_steps) and step // self.every_steps > self._last_step // self.every_steps
        due = due or (self.every_secs is not None and time.monotonic() - self._last_time >= self.every_secs)
        if due:
            self._save(run, step)

    def end(self, run) -> None:
        if run.step != self._last_step:
            self._save(run, run.step)

    def _save(self, run, step: int) -> None:
        run.save(step)
        self._last_step = step
        self._last_time = time.monotonic()


class EvalHook(Hook):
    """Evaluates the metrics on the held-out split every ``every_steps`` steps and at the end."""

    def __init__(self, every_steps: int):
        self.every = max(1, every_steps)
        self._last = -1
        self.last_metrics: dict[str, float] = {}

    @property
    def last_step(self) -> int:
        """The step of the last evaluation (-1: none in this run)."""
        return self._last

    def begin(self, run) -> None:
        self._prev = run.step

    def after_step(self, run, step: int, values: dict) -> None:
        prev, self._prev = getattr(self, "_prev", step - 1), step
        if step // self.every > prev // self.every:  # crossed a multiple (a cluster's step may jump)
            self._eval(run, step)

    def end(self, run) -> None:
        if run.step != self._last:
            self._eval(run, run.step)

    def _eval(self, run, step: int) -> None:
        step = run.eval_step(step)
        self.last_metrics = run.evaluate()
        self._last = step
        for name, value in self.last_metrics.items():
            run.eval_writer.add_scalar(name, value, step)
        run.eval_writer.flush()
        run.listener.on_eval(step, self.last_metrics)
