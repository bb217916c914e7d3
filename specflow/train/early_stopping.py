"""``train.early_stopping``: Keras's EarlyStopping callback on the periodic evaluations.

After each evaluation every ``eval.every_steps`` steps the watched metric is compared with the
best so far; ``patience`` evaluations in a row without an improvement of more than
``min_delta`` stop the run (it saves its checkpoint and ends as a finished run). The
evaluations it has seen are kept in ``LOGDIR/early_stopping.json`` as (step, value) pairs, and
its state is recomputed from those up to the restored checkpoint's step, so a resumed run
stops where one that never stopped would, and training a stopped run again does nothing. The
evaluation at the end of a run (not on a multiple of ``every_steps``: Ctrl-C, the last step) is
not counted, since a run continued from there would not have made it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from specflow.io.atomic_write import write_atomically
from specflow.train.hooks import Hook

FILENAME = "early_stopping.json"


@dataclass
class Verdict:
    best: float | None = None
    best_step: int | None = None
    wait: int = 0
    stopped_at: int | None = None


def judge(config, evals: list[tuple[int, float]]) -> Verdict:
    """Replay the evaluations ``(step, value)`` in order, as Keras's callback sees its epochs."""
    v = Verdict()
    lower = config.direction() == "min"
    for step, value in evals:
        if v.stopped_at is not None:
            break
        # Keras's arithmetic (value + delta < best, not value - best < -delta): the same ties.
        better = math.isfinite(value) and (
            v.best is None or (value + config.min_delta < v.best if lower else value - config.min_delta > v.best))
        if better:
            v.best, v.best_step, v.wait = value, step, 0
            continue
        v.wait += 1
        if v.wait >= max(config.patience, 1):  # as Keras: patience 0 and 1 both stop at the first
            v.stopped_at = step
    return v


def load(logdir: Path, up_to_step: int) -> list[tuple[int, float]]:
    """The evaluations recorded in ``logdir`` at steps up to the restored ``up_to_step``."""
    path = Path(logdir) / FILENAME
    try:
        data = json.loads(path.read_text())
        evals = [(int(s), float(v)) for s, v in data["evals"]]
    except (OSError, ValueError, KeyError, TypeError):
        return []  # none yet, or unreadable: the run judges from its next evaluation
    return [(s, v) for s, v in evals if s <= up_to_step]


class EarlyStoppingHook(Hook):
    """Placed after the EvalHook: reads the metrics it just computed on a periodic evaluation."""

    def __init__(self, config, eval_hook, logdir: Path, evals: list[tuple[int, float]]):
        self.config = config
        self.eval_hook = eval_hook
        self.path = Path(logdir) / FILENAME
        self.evals = list(evals)
        self.verdict = judge(config, self.evals)

    def after_step(self, run, step: int, values: dict) -> None:
        if self.eval_hook.last_step != step:
            return
        self.evals.append((step, float(self.eval_hook.last_metrics[self.config.metric])))
        text = json.dumps({"metric": self.config.metric, "evals": self.evals})
        write_atomically(self.path, lambda f: f.write(text.encode()))
        self.verdict = judge(self.config, self.evals)
        if self.verdict.stopped_at is not None:
            run.request_stop("early_stopping")

    def summary(self) -> str:
        """``loss 0.1234 at step 500 (best)``: for the result table."""
        v = self.verdict
        if not self.evals:  # fewer steps than train.eval.every_steps: the final evaluation is not judged
            return f"{self.config.metric}: no periodic evaluation yet"
        if v.best is None:
            return f"{self.config.metric}: no finite value yet"
        return f"best {self.config.metric} {v.best:.4f} at step {v.best_step}"
