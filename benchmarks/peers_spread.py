"""The CNN step's spread across processes with the processes alternating:
``python -m benchmarks.peers --spread --alternate``.

``--spread`` alone runs its three processes one after another, so a slow spell of the machine
(minutes long on a shared VM) lands on one process and reads as that process's spread. Here
the three processes live at once and take turns: the parent asks each in rotation to time one
round of one side (the others wait on their pipes, idle), so a spell hits every process alike
and what is left between their medians is the processes themselves: allocator state, memory
layout, page placement, a JIT's or BLAS's per-process choices. Every side that imports runs in
the same processes, so the peers' spread is measured beside specflow's in the same way.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

TAG = "@@"  # marks this protocol's lines on a child's stdout (a peer may print its own)


def serve(sides_wanted: list[str], batches) -> None:
    """Child: build the CNN rows, warm up, report each (row, side)'s calls per ~20 ms round,
    then time ``n`` calls of a (row, side) for every request line until stdin closes."""
    from benchmarks import peers

    loaded = peers.load_peers(set(sides_wanted))
    rows, cleanup = peers.cnn_rows(loaded, batches)
    try:
        number = {}
        for name, sides in rows.items():
            for side, fn in sides.items():
                number[f"{name}|{side}"] = peers.warm_up(fn)
        print(TAG, json.dumps(number), flush=True)
        for line in sys.stdin:
            key, n = line.rsplit("|", 1)
            name, side = key.split("|")
            fn, n = rows[name][side], int(n)
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            print(TAG, json.dumps((time.perf_counter() - t0) / n), flush=True)
    finally:
        for fn in cleanup:
            fn()


class _Child:
    def __init__(self, sides: list[str], batches) -> None:
        from benchmarks.peers import ONE_THREAD

        root = str(Path(__file__).resolve().parent.parent)
        # the repository first, the caller's path kept (packages installed beside the image's)
        env = {**os.environ, **ONE_THREAD, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
        code = ("import sys; from benchmarks import peers_spread; "
                f"peers_spread.serve({sides!r}, {tuple(batches)!r})")  # fmt: skip
        self.proc = subprocess.Popen([sys.executable, "-c", code], env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1)  # fmt: skip

    def read(self):
        for line in self.proc.stdout:
            if line.startswith(TAG):
                return json.loads(line[len(TAG):])
        raise SystemExit(f"a --spread --alternate child exited ({self.proc.wait()})")

    def time(self, key: str, n: int) -> float:
        self.proc.stdin.write(f"{key}|{n}\n")
        return self.read()

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


def spread_alternating(rounds: int, sides: list[str], processes: int = 3, batches=(64, 256, 1024)) -> dict:
    """{row: {side: [median seconds of each process]}}: ``rounds`` rounds, each timing every
    process on every side once, the process and side order rotating every round."""
    children = [_Child(sides, batches) for _ in range(processes)]
    try:
        numbers = [c.read() for c in children]  # each child builds and warms up meanwhile
        keys = list(numbers[0])
        times = {k: [[] for _ in children] for k in keys}
        for r in range(rounds):
            for key in keys:
                order = list(range(processes))
                order = order[r % processes:] + order[: r % processes]
                for p in order:
                    times[key][p].append(children[p].time(key, numbers[0][key]))
    finally:
        for c in children:
            c.close()
    out: dict = {}
    for key, per_process in times.items():
        name, side = key.split("|")
        out.setdefault(name, {})[side] = [statistics.median(t) for t in per_process]
    return out


def print_spread(result: dict, load: str, processes: int = 3) -> None:
    print(f"CNN step, {processes} processes alternating round by round ({load}): medians, then max/min")
    for name, sides in result.items():
        for side, meds in sides.items():
            print(f"{name:30s} {side:9s}" + " ".join(f"{m * 1e3:8.3f}ms" for m in meds)
                  + f"   max/min {max(meds) / min(meds):.3f}")  # fmt: skip
