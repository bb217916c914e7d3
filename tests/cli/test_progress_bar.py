"""The training progress bar on terminals of every width: the step count and the loss are never
cut (rich's own columns cut `step 123456/200000` to `step 123456…` at 80 columns, and dropped
it at 60)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from specflow.views.train_view import ProgressListener


def bar_line(width: int, metrics: dict[str, float]) -> str:
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=width, color_system=None)
    with ProgressListener(console) as listener:
        listener.on_start(0, 200000)
        listener.metrics = metrics
        listener.on_step(123456, 0.123456, 1234.0)
        listener.progress.refresh()
    lines = [ln.replace("\x1b[2K", "") for ln in buf.getvalue().replace("\r", "\n").splitlines() if "step" in ln]
    return lines[-1].rstrip()


@pytest.mark.parametrize("width", [30, 40, 60, 80, 100, 160])
@pytest.mark.parametrize("metrics", [{}, {"accuracy": 0.9611, "loss": 0.1107}])
def test_the_step_count_and_loss_always_fit(width, metrics):
    line = bar_line(width, metrics)
    assert len(line) <= width, line
    assert line.startswith("step 123456/200000 "), line
    assert "loss 0.1235" in line and "…" not in line, line


def test_a_wide_terminal_shows_everything():
    line = bar_line(160, {"accuracy": 0.9611})
    for part in ("step 123456/200000", "━", "loss 0.1235", "accuracy 0.9611", "1234 steps/s"):
        assert part in line, line
