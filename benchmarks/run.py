"""Run every benchmark and print one table: ``python -m benchmarks.run`` (or ``python benchmarks/run.py``).

Targets: executor overhead under 10 µs per node on a chain of 1,000 small ops, and an MLP
inference step within 1.10x of the same math in handwritten numpy (the runtime issue); an SGD
training step within 1.5x of numpy for the 64-128-10 MLP at batch 64 and within 1.1x for
784-1024-1024-10 at batch 256 (the training issue).
Rows marked "info" have no target; they are there to compare runs.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rich.console import Console
from rich.table import Table

from benchmarks import executor_overhead, mlp, pyface, train_step
from benchmarks.timing import machine_info

PER_NODE_TARGET_US = 10.0
MLP_TARGET_RATIO = 1.10
TRAIN_TARGETS = {64: 1.5, 256: 1.1}  # batch -> max ratio to numpy
FUNCTION_TARGET_RATIO = 1.10  # the digits step as sf.function vs the spec's Session.run


@dataclass
class Row:
    name: str
    ours: str
    reference: str
    measure: str  # the compared quantity, e.g. "2.3 µs/node" or "1.04x"
    target: str  # e.g. "< 10 µs/node"; "" for informational rows
    passed: bool | None  # None: informational


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


def chain_rows(repeats: int) -> list[Row]:
    rows = []
    for op in ("Identity", "Neg"):
        r = executor_overhead.run(op, repeats=repeats)
        rows.append(
            Row(
                f"chain {executor_overhead.CHAIN} x {op}, cpu:1",
                f"{_ms(r.step_s)}/step",
                f"{r.empty_s * 1e6:.0f} µs empty",
                f"{r.per_node_us:.2f} µs/node",
                f"< {PER_NODE_TARGET_US:g} µs/node",
                r.per_node_us < PER_NODE_TARGET_US,
            )
        )
    return rows


# (devices, weights, has a target); why the others are informational is in README.md.
MLP_VARIANTS = ((1, "consts", True), (1, "variables", False), (2, "consts", False), (2, "variables", False))


def mlp_rows(repeats: int) -> list[Row]:
    rows = []
    for devices, weights, targeted in MLP_VARIANTS:
        r = mlp.run(devices, weights, repeats=repeats)
        rows.append(
            Row(
                f"MLP, {weights}, cpu:{devices}",
                _ms(r.specflow_s),
                f"{_ms(r.numpy_s)} numpy",
                f"{r.ratio:.3f}x",
                f"<= {MLP_TARGET_RATIO:.2f}x" if targeted else "",
                r.ratio <= MLP_TARGET_RATIO if targeted else None,
            )
        )
    return rows


def train_rows(repeats: int) -> list[Row]:
    rows = []
    for batch, sizes in train_step.VARIANTS:
        r = train_step.run(batch, sizes, repeats=repeats)
        target = TRAIN_TARGETS[batch]
        rows.append(
            Row(
                f"SGD step {'-'.join(map(str, sizes))}, batch {batch}",
                _ms(r.specflow_s),
                f"{_ms(r.numpy_s)} numpy",
                f"{r.ratio:.3f}x",
                f"<= {target:.2f}x",
                r.ratio <= target,
            )
        )
    return rows


def pyface_rows(repeats: int) -> list[Row]:
    r = pyface.train_step(repeats=repeats)
    rows = [Row(f"digits Adam step as sf.function, batch {pyface.BATCH}", _ms(r.function_s),
                f"{_ms(r.session_s)} Session.run", f"{r.ratio:.3f}x", f"<= {FUNCTION_TARGET_RATIO:.2f}x",
                r.ratio <= FUNCTION_TARGET_RATIO)]
    for name, s in pyface.eager_overhead(repeats=repeats).items():
        rows.append(Row(f"eager scalar add, {name}", "not installed" if s is None else f"{s * 1e6:.2f} µs/op",
                        "", "", "", None))
    return rows


def render(rows: list[Row], elapsed: float, console: Console) -> None:
    info = Table(title="machine", show_header=False, title_justify="left")
    for k, v in machine_info():
        info.add_row(k, v)
    console.print(info)
    table = Table(title=f"specflow runtime benchmarks ({elapsed:.0f} s)", title_justify="left")
    for col, justify in (
        ("benchmark", "left"),
        ("specflow", "right"),
        ("reference", "right"),
        ("measured", "right"),
        ("target", "right"),
        ("result", "center"),
    ):
        table.add_column(col, justify=justify)
    for r in rows:
        result = "info" if r.passed is None else ("[green]PASS[/]" if r.passed else "[red]FAIL[/]")
        table.add_row(r.name, r.ours, r.reference, r.measure, r.target, result)
    console.print(table)
    console.print(
        f"chain: a float32[1] placeholder through {executor_overhead.CHAIN} ops; µs/node = (step - empty "
        f"step) / {executor_overhead.CHAIN}. MLP: {'-'.join(map(str, mlp.SIZES))}, batch {mlp.BATCH}, "
        "float32, vs the same math in numpy. Times are medians over alternating rounds (specflow "
        "and its reference back to back); ratios are medians of the per-round ratios."
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=25, help="timed rounds per benchmark (default 25)")
    parser.add_argument("--strict", action="store_true", help="exit with status 1 if a target is missed")
    args = parser.parse_args(argv)
    # A pipe or file gets 80 columns by default: too narrow for the table.
    console = Console(width=None if sys.stdout.isatty() else 110)
    t0 = time.perf_counter()
    with console.status("running benchmarks..."):
        rows = chain_rows(args.repeats) + mlp_rows(args.repeats) + train_rows(args.repeats) + pyface_rows(args.repeats)
    render(rows, time.perf_counter() - t0, console)
    missed = [r.name for r in rows if r.passed is False]
    return 1 if args.strict and missed else 0


if __name__ == "__main__":
    sys.exit(main())
