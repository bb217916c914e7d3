"""Receives as late as possible (whitepaper 5.2) measured: ``python -m benchmarks.late_receives``.

models/two_tower.yaml on 2 local devices (batch 64), with and without ``alap_recv``: CPU:0's
estimated peak bytes (the static model ``inspect --placed`` prints, where a receive completes
as soon as it starts), the measured peak of traced steps (min / median / max over the steps:
without ALAP it depends on when the right tower's value arrives), and step times (medians of
interleaved rounds, untraced). The results of both are identical (tests/runtime/test_memory.py).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
from rich.console import Console
from rich.table import Table

from specflow.runtime.pipeline import compile_step
from specflow.runtime.session import Session, SessionConfig
from specflow.runtime.step_stats import StepStats
from specflow.schema.loader import load_spec
from specflow.views.placement_view import estimated_peaks

MODELS = Path(__file__).resolve().parent.parent / "models"
BATCH = 64


def measure(traced: int = 200, rounds: int = 11, steps: int = 50) -> dict[bool, dict]:
    spec = load_spec(MODELS / "two_tower.yaml")
    x = np.random.default_rng(0).standard_normal((BATCH, 32)).astype(np.float32)
    out: dict[bool, dict] = {}
    sessions = {}
    for alap in (False, True):
        s = Session(spec.graph_def, SessionConfig(devices="cpu:2", graph_seed=0, alap_recv=alap))
        s.run([], targets=[spec.lowered.init_op])
        sessions[alap] = s
        step = compile_step(spec.graph_def, s.device_names, feeds=["x:0"], fetches=["out:0"], alap_recv=alap,
                            feed_shapes=[(BATCH, 32)])  # the plan the session runs for this feed's shape
        cpu0 = s.device_names[0]
        peaks = []
        for _ in range(traced):
            stats = StepStats()
            s.run("out", {"x": x}, options={"trace": True}, run_metadata=stats)
            peaks.append(stats.peak_bytes()[cpu0])
        out[alap] = {"estimated": estimated_peaks(step)[cpu0].bytes, "measured": peaks,
                     "edges": len(step.alap.edges) if step.alap else 0}  # fmt: skip
    times: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(rounds):
        for alap, s in sessions.items():
            t0 = time.perf_counter()
            for _ in range(steps):
                s.run("out", {"x": x})
            times[alap].append((time.perf_counter() - t0) / steps)
    for alap, s in sessions.items():
        out[alap]["step_ms"] = statistics.median(times[alap]) * 1e3
        s.close()
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traced", type=int, default=200, help="traced steps per setting")
    args = parser.parse_args(argv)
    r = measure(args.traced)
    t = Table(title=f"two_tower, cpu:2, batch {BATCH}: CPU:0's peak bytes", header_style="bold")
    for col in ("alap_recv", "edges", "estimated", "measured min", "median", "max", "at estimate", "step ms"):
        t.add_column(col, justify="right")
    for alap in (False, True):
        m, est = r[alap]["measured"], r[alap]["estimated"]
        t.add_row(str(alap), str(r[alap]["edges"]), f"{est:,}", f"{min(m):,}", f"{int(np.median(m)):,}",
                  f"{max(m):,}", f"{sum(p == est for p in m)}/{len(m)}", f"{r[alap]['step_ms']:.3f}")  # fmt: skip
    Console().print(t)
    saved = r[False]["estimated"] - r[True]["estimated"]
    print(f"estimated peak saved: {saved:,} bytes ({saved / r[False]['estimated']:.0%}); "
          f"measured max saved: {max(r[False]['measured']) - max(r[True]['measured']):,} bytes")  # fmt: skip


if __name__ == "__main__":
    main()
