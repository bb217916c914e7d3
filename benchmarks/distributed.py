"""The multi-process runtime's costs: ``python -m benchmarks.distributed``.

1. A step of each example model locally and on 2 tasks (ps=1, worker=1) and 3 tasks (ps=1,
   worker=2; the spec's own cluster section where it has one), default ps placement; the cost a
   step adds over the local run (goal: <= 1.5 ms for digits_mlp on 1 ps + 1 worker).
2. A 64 MB tensor sent from a ps task to a worker task in a step, against a plain ray.put/ray.get of
   the same array between two actors (goal: within 1.5x).
Medians over timed steps after warm-up; one private local Ray instance.
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

from specflow.distributed import ClusterSpec, cluster_from_section
from specflow.distributed.engine import ensure_ray, shutdown_ray
from specflow.runtime.session import Session, SessionConfig
from specflow.schema.loader import load_spec, load_spec_text

MODELS = Path(__file__).resolve().parent.parent / "models"
ADDED_GOAL_MS = 1.5
TRANSFER_GOAL = 1.5


def _median_ms(fn, repeats: int) -> float:
    for _ in range(3):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def _feeds(spec, rng):
    out = {}
    for name in spec.model.inputs:
        node = spec.graph_def.node(name)
        if node.op == "Placeholder":
            shape = [64 if d is None else d for d in node.attrs["shape"].dims]
            out[name] = rng.standard_normal(shape).astype(node.attrs["dtype"].numpy)
    return out


def _step_ms(spec, cluster, repeats: int) -> float:
    fetches = [t for sig in spec.signatures.values() for (t, _) in sig["outputs"].values()]
    wanted = {n.split(":")[0] for sig in spec.signatures.values() for (n, _) in sig["inputs"].values()}
    feeds = {k: v for k, v in _feeds(spec, np.random.default_rng(0)).items() if k in wanted}
    devices = "cpu:2" if "/cpu:1" in Path(spec.path).read_text() else None
    config = SessionConfig(graph_seed=0, devices=None if cluster else devices)
    with Session(spec.graph_def, config, cluster=cluster) as sess:
        if spec.variables:
            sess.run([], targets=[spec.lowered.init_op])
        return _median_ms(lambda: sess.run(fetches, feeds), repeats)


def model_rows(repeats: int) -> list[tuple]:
    rows = []
    for path in sorted(MODELS.glob("*.yaml")):
        spec = load_spec(path)
        two_cpu = "/cpu:1" in path.read_text()
        td = {"ps": "cpu:2", "worker": "cpu:2"} if two_cpu else {}
        three = (cluster_from_section(spec.model.cluster, spec.source, spec.graph_def) if spec.model.cluster
                 else ClusterSpec({"ps": 1, "worker": 2}, task_devices=td))  # fmt: skip
        local = _step_ms(spec, None, repeats)
        two = _step_ms(spec, ClusterSpec({"ps": 1, "worker": 1}, task_devices=td), repeats)
        three_ms = _step_ms(spec, three, repeats)
        rows.append((path.stem, local, two, three_ms))
    return rows


BIG = """
specflow: 1
name: big
variables:
  w: {shape: [N], initializer: ones, device: /job:ps/task:0}
nodes:
  s: {op: Sum, inputs: [w], axis: 0, device: /job:worker/task:0}
"""
BIG_N = 16 * 1024 * 1024  # float32: 64 MiB


class _Holder:
    def __init__(self, n):
        self.arr = np.ones(n, np.float32)

    def put(self):
        import ray

        return [ray.put(self.arr)]  # a ref in a list: the caller gets the ref, then the array


class _Puller:
    def pull(self, holder, repeats):
        import ray

        times = []
        for _ in range(repeats + 2):
            t0 = time.perf_counter()
            ray.get(ray.get(holder.put.remote())[0])
            times.append(time.perf_counter() - t0)
        return statistics.median(times[2:]) * 1e3


def _graph_step_ms(n: int, cluster, repeats: int) -> float:
    text = BIG.replace("[N]", f"[{n}]")
    if cluster is None:
        text = text.replace(", device: /job:ps/task:0", "").replace(", device: /job:worker/task:0", "")
    spec = load_spec_text(text, "big.yaml")
    with Session(spec.graph_def, cluster=cluster) as sess:
        sess.run([], targets=[spec.lowered.init_op])
        return _median_ms(lambda: sess.run("s"), repeats)


def _plain_ms(ray, n: int, repeats: int) -> float:
    holder = ray.remote(_Holder).options(num_cpus=0).remote(n)
    puller = ray.remote(_Puller).options(num_cpus=0).remote()
    ms = ray.get(puller.pull.remote(holder, repeats))
    ray.kill(holder)
    ray.kill(puller)
    return ms


def transfer_row(repeats: int) -> dict[str, float]:
    """A 64 MiB variable on ps summed on a worker, against the same graph with a 1-element
    variable (the step's fixed cost) and the Sum alone locally; plain Ray: one actor asks
    another to ray.put the array and ray.gets it, against the same with a 1-element array."""
    ray = ensure_ray()
    cluster = {"ps": 1, "worker": 1}
    out = {
        "big": _graph_step_ms(BIG_N, cluster, repeats),
        "tiny": _graph_step_ms(1, cluster, repeats),
        "sum": _graph_step_ms(BIG_N, None, repeats) - _graph_step_ms(1, None, repeats),
        "plain_big": _plain_ms(ray, BIG_N, repeats),
        "plain_tiny": _plain_ms(ray, 1, repeats),
    }
    out["ours"] = out["big"] - out["tiny"] - out["sum"]
    out["plain"] = out["plain_big"] - out["plain_tiny"]
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=30)
    args = p.parse_args(argv)
    console = Console()
    t = Table(title="a step: local vs on Ray tasks (median ms)", header_style="bold")
    for col in ("model", "local", "2 tasks", "added", "3 tasks", "added"):
        t.add_column(col, justify="right" if col != "model" else "left")
    ensure_ray()
    digits_added = None
    for name, local, two, three in model_rows(args.repeats):
        t.add_row(name, f"{local:.2f}", f"{two:.2f}", f"{two - local:+.2f}", f"{three:.2f}", f"{three - local:+.2f}")
        if name == "digits_mlp":
            digits_added = two - local
    console.print(t)
    r = transfer_row(max(5, args.repeats // 3))
    console.print(
        f"digits_mlp on 1 ps + 1 worker adds {digits_added:.2f} ms per step "
        f"(goal <= {ADDED_GOAL_MS} ms: {'met' if digits_added <= ADDED_GOAL_MS else 'missed'}); "
        f"one small Ray actor round trip here now: {r['plain_tiny']:.2f} ms"
    )
    ratio = r["ours"] / r["plain"]
    console.print(
        f"64 MiB ps -> worker: step {r['big']:.1f} ms - same step with 1 element {r['tiny']:.1f} ms - the Sum "
        f"{r['sum']:.1f} ms = {r['ours']:.1f} ms ({64 * 1.048576 / r['ours'] * 1e3:.0f} MB/s); "
        f"plain Ray put in one actor, get in another: {r['plain']:.1f} ms ({r['plain_big']:.1f} - {r['plain_tiny']:.1f}); "
        f"{ratio:.2f}x (goal <= {TRANSFER_GOAL}x: {'met' if ratio <= TRANSFER_GOAL else 'missed'})"
    )
    shutdown_ray()
    return 0


if __name__ == "__main__":
    sys.exit(main())
