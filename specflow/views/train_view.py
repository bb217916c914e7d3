"""The training progress bar (step, loss, metrics, steps/s, ETA) and the final summary table."""

from __future__ import annotations

from rich.console import Console
from rich.progress import Progress, ProgressColumn, TimeRemainingColumn
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text


class ProgressListener:
    """A rich progress bar driven by the training loop (``specflow.train.loop.Listener``).

    On a terminal it redraws in place; when output is piped it prints a line per evaluation and
    checkpoint only, so logs stay readable."""

    def __init__(self, console: Console):
        self.console = console
        self.metrics: dict[str, float] = {}
        self.progress = Progress(_StepLine(console), console=console, transient=False,
                                 disable=not console.is_terminal)
        self.task = None

    def __enter__(self):
        self.progress.__enter__()
        return self

    def __exit__(self, *exc):
        self.progress.__exit__(*exc)

    def on_start(self, start_step: int, total_steps: int) -> None:
        self.task = self.progress.add_task("train", total=total_steps, completed=start_step,
                                           loss="-", metrics="", rate="-")
        if start_step:
            self._log(f"resumed at step {start_step}")

    def on_step(self, step: int, loss: float, steps_per_sec: float | None) -> None:
        rate = f"{steps_per_sec:.0f}" if steps_per_sec else "-"
        self.progress.update(self.task, completed=step, loss=f"{loss:.4g}", rate=rate, metrics=self._metrics())

    def on_workers(self, rates: dict[str, float]) -> None:
        """On a cluster: each worker replica's steps/s (shown beside the metrics)."""
        self.workers = " ".join(f"{_short(t)} {r:.0f}/s" for t, r in rates.items())

    def on_notice(self, text: str) -> None:
        """Something the run recovered from (a lost task)."""
        self._log(f"[yellow]{text}[/yellow]")

    def on_eval(self, step: int, metrics: dict[str, float]) -> None:
        self.metrics = dict(metrics)
        self._log(f"step {step}: eval " + ", ".join(f"{k} {v:.4f}" for k, v in metrics.items()))

    def on_checkpoint(self, step: int, path: str) -> None:
        if not self.console.is_terminal:
            self._log(f"step {step}: saved {path}")

    def _metrics(self) -> str:
        return " ".join([*(f"{k} {v:.4f}" for k, v in self.metrics.items()), *filter(None, [getattr(self, "workers", "")])])

    def _log(self, text: str) -> None:
        self.progress.console.print(text, highlight=False)


class _StepLine(ProgressColumn):
    """The whole bar as one line that fits the terminal: the step count and the loss always, then
    steps/s, the ETA, the metrics and the bar as room allows, in that order (rich's own columns
    cut the step count first on a narrow terminal: ``step 123456… ━╸ loss ...``)."""

    BAR_MIN, BAR_MAX = 10, 40

    def __init__(self, console: Console):
        super().__init__()
        self.console = console
        self.eta = TimeRemainingColumn()

    def render(self, task):
        f = task.fields
        total = f"/{int(task.total)}" if task.total is not None else ""
        parts = {"step": f"step {int(task.completed)}{total}", "loss": f"loss {f.get('loss', '-')}",
                 "rate": f"{f.get('rate', '-')} steps/s", "eta": self.eta.render(task).plain,
                 "metrics": f.get("metrics", "")}
        room = self.console.width - 1  # the last column would wrap on some terminals
        shown = ["step", "loss"]
        used = len(parts["step"]) + 1 + len(parts["loss"])
        for key in ("rate", "eta", "metrics"):
            if parts[key] and used + 1 + len(parts[key]) <= room:
                shown.append(key)
                used += 1 + len(parts[key])
        bar = min(self.BAR_MAX, room - used - 1) if task.total else 0
        head = Text(parts["step"])
        tail = Text(" ".join(parts[k] for k in ("loss", "metrics", "rate", "eta") if k in shown))
        if bar < self.BAR_MIN:
            return Text.assemble(head, " ", tail, no_wrap=True, overflow="ellipsis")
        grid = Table.grid(padding=(0, 1))
        grid.add_row(head, ProgressBar(total=task.total, completed=task.completed, width=bar), tail)
        return grid


def _short(task: str) -> str:
    """``/job:worker/replica:0/task:1`` -> ``worker:1``."""
    parts = dict(p.split(":", 1) for p in task.strip("/").split("/") if ":" in p)
    return f"{parts.get('job', '?')}:{parts.get('task', '?')}"


def result_table(result, logdir) -> Table:
    title = {"interrupt": "training stopped", "early_stopping": "training stopped early"}.get(result.stopped_by,
                                                                                            "training finished")
    t = Table(title=title, header_style="bold", show_header=False)
    t.add_column("what")
    t.add_column("value")
    t.add_row("steps", f"{result.start_step} → {result.step} ({result.stopped_by.replace('_', ' ')})")
    t.add_row("time", f"{result.seconds:.1f} s ({result.steps_per_sec:.0f} steps/s)")
    if getattr(result, "early_stopping", None):
        t.add_row("early stopping", result.early_stopping)
    if result.last_loss is not None:
        t.add_row("last loss", f"{result.last_loss:.4g}")  # (a loss of 5e-5 showed as 0.0000)
    for k, v in result.eval_metrics.items():
        t.add_row(f"eval {k}", f"{v:.4f}")
    t.add_row("checkpoint", str(result.checkpoint or "-"))
    t.add_row("logdir", str(logdir))
    return t


def metrics_table(metrics: dict[str, float], checkpoint: str) -> Table:
    title = f"evaluation of {checkpoint}"
    t = Table(title=title, header_style="bold", min_width=len(title))  # a long path not wrapped mid-name
    t.add_column("metric")
    t.add_column("value", justify="right")
    for k, v in metrics.items():
        t.add_row(k, f"{v:.6f}")
    return t
