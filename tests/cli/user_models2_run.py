"""Train a spec of tests/cli/data/user_models2 with the Trainer (what `specflow train` runs) and
record what a comparison with Keras needs: the initial and final weights and the loss of each step."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from specflow.schema.loader import load_spec
from specflow.train.evaluate import evaluate_checkpoint
from specflow.train.loop import Listener, Trainer, TrainOptions

DATA = Path(__file__).resolve().parent / "data" / "user_models2"


class _Recorder(Listener):
    def __init__(self):
        self.trainer: Trainer | None = None
        self.initial: dict[str, np.ndarray] = {}
        self.final: dict[str, np.ndarray] = {}
        self.losses: list[float] = []

    def _weights(self) -> dict[str, np.ndarray]:
        t = self.trainer
        model = [v for v in t.graph.variables if not _is_optimizer_state(v.name)]
        return dict(zip([v.name for v in model], t.session.run([v.read for v in model])))

    def on_start(self, start_step, total_steps):
        self.initial = self._weights()

    def on_step(self, step, loss, steps_per_sec):
        self.losses.append(loss)
        if step == self.trainer.total_steps:
            self.final = self._weights()


def _is_optimizer_state(name: str) -> bool:
    last = name.rsplit("/", 1)[-1]
    return name in ("global_step", "beta1_power", "beta2_power") or last.split("_")[0] in (
        "Adam", "AdamW", "RMSProp", "Adagrad", "Momentum")


def train(name: str, logdir: Path, overrides: list[str] | None = None):
    """(initial weights, losses per step, final weights, held-out metrics) of the Trainer on
    ``name``.yaml."""
    spec = load_spec(DATA / f"{name}.yaml", overrides)
    rec = _Recorder()
    trainer = Trainer(spec, TrainOptions(logdir=Path(logdir)), rec)
    rec.trainer = trainer
    trainer.run()
    _, metrics = evaluate_checkpoint(spec, logdir)
    return rec.initial, np.array(rec.losses), rec.final, metrics
