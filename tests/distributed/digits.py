"""The digits MLP example as the distributed training tests run it: fewer steps, an optional
``train.distributed`` section, and checkpoints and evaluation only at the end."""

from __future__ import annotations

from pathlib import Path

from specflow.schema.loader import load_spec_text

DIGITS = (Path(__file__).resolve().parents[2] / "models" / "digits_mlp.yaml").read_text()


def digits_spec(distributed: str = "", optimizer: str = "{adam: {learning_rate: 0.001}}", steps: int = 60):
    text = DIGITS.replace("  steps: 2000", f"  steps: {steps}" + (f"\n  distributed: {distributed}" if distributed else ""))
    text = text.replace("{adam: {learning_rate: 0.001}}", optimizer)
    text = text.replace("every_steps: 500", "every_steps: 1000").replace("every_steps: 200", "every_steps: 1000")
    return load_spec_text(text, "digits_mlp.yaml")


def summaries(logdir) -> dict[int, dict]:
    """Per step, the run's summaries: scalars, and each histogram's (count, sum, min, max)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(logdir), size_guidance={"scalars": 0, "histograms": 0})
    acc.Reload()
    out: dict[int, dict] = {}
    for tag in acc.Tags()["scalars"]:
        if tag != "global_step/sec":
            for e in acc.Scalars(tag):
                out.setdefault(e.step, {})[tag] = e.value
    for tag in acc.Tags()["histograms"]:
        for e in acc.Histograms(tag):
            h = e.histogram_value
            out.setdefault(e.step, {})[tag] = [h.num, h.sum, h.min, h.max]
    return out
