"""The multi-process runtime's costs: ``python -m benchmarks.distributed``.

1. A step of each example model locally and on 2 tasks (ps=1, worker=1) and 3 tasks (ps=1,
   worker=2; the spec's own cluster section where it has one), default ps placement, with the
   push protocol (tasks call each other; the only one before the dataflow protocol) and with the
   protocol the master picks (dataflow where the tasks' transfers form no cycle); the cost a
   step adds over the local run (goal: <= 1.5 ms for digits_mlp on 1 ps + 1 worker), beside a
   hand-written plain-Ray parameter server for the same MLP (ordinary actor calls, and the same
   as a Ray Compiled Graph).
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

from specflow.distributed import Cluster, ClusterSpec, cluster_from_section
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
            dtype = node.attrs["dtype"].numpy
            # ints are ids and labels: [0, 2) is valid for every example (the zoo has 2-class heads)
            out[name] = (rng.integers(0, 2, shape) if dtype.kind in "iu" else rng.standard_normal(shape)).astype(dtype)
    return out


def _step_ms(spec, cluster, repeats: int, rounds: int = 5) -> list[float]:
    """Median ms of a step of ``spec``: locally (cluster None: one value), or on ``cluster``'s
    tasks with the push protocol, with the master's pick calling every task each step, and with
    the master's pick (three values): three sessions on the same tasks, timed in alternating
    rounds (the machine is shared)."""
    fetches = [t for sig in spec.signatures.values() for (t, _) in sig["outputs"].values()]
    wanted = {n.split(":")[0] for sig in spec.signatures.values() for (n, _) in sig["inputs"].values()}
    feeds = {k: v for k, v in _feeds(spec, np.random.default_rng(0)).items() if k in wanted}
    devices = "cpu:2" if "/cpu:1" in Path(spec.path).read_text() else None
    if cluster is None:
        with Session(spec.graph_def, SessionConfig(graph_seed=0, devices=devices)) as sess:
            if spec.variables:
                sess.run([], targets=[spec.lowered.init_op])
            return [_median_ms(lambda: sess.run(fetches, feeds), repeats)]
    times: list[list[float]] = [[], [], []]
    with Cluster(cluster) as tasks:
        sessions = [Session(spec.graph_def, SessionConfig(graph_seed=0), cluster=tasks) for _ in range(3)]
        sessions[0].dataflow = False
        sessions[1].reuse_reads = False
        for sess in sessions:
            if spec.variables:
                sess.run([], targets=[spec.lowered.init_op])
            for _ in range(3):
                sess.run(fetches, feeds)
        for _ in range(rounds):
            for sess, out in zip(sessions, times):
                for _ in range(max(1, repeats // rounds)):
                    t0 = time.perf_counter()
                    sess.run(fetches, feeds)
                    out.append(time.perf_counter() - t0)
        for sess in sessions:
            sess.close()
    return [statistics.median(t) * 1e3 for t in times]


def model_rows(repeats: int, only: list[str] | None = None) -> list[tuple]:
    """(model, local, then push / auto calling every task / auto on 2 tasks and on 3 tasks) in ms."""
    rows = []
    for path in sorted(MODELS.glob("*.yaml")):
        if only and path.stem not in only:
            continue
        spec = load_spec(path)
        two_cpu = "/cpu:1" in path.read_text()
        td = {"ps": "cpu:2", "worker": "cpu:2"} if two_cpu else {}
        three = (cluster_from_section(spec.model.cluster, spec.source, spec.graph_def) if spec.model.cluster
                 else ClusterSpec({"ps": 1, "worker": 2}, task_devices=td))  # fmt: skip
        two = ClusterSpec({"ps": 1, "worker": 1}, task_devices=td)
        local = _step_ms(spec, None, repeats)
        rows.append((path.stem, *local, *_step_ms(spec, two, repeats), *_step_ms(spec, three, repeats)))
    return rows


def _mlp(w, x):
    h = np.maximum(x @ w[0] + w[1], 0)
    logits = h @ w[2] + w[3]
    e = np.exp(logits - logits.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


class _PlainTask:
    """The hand-written parameter server's two roles: the ps holds digits_mlp's weights, the
    worker runs its forward pass on weights and a batch."""

    def __init__(self):
        rng = np.random.default_rng(0)
        self.w = [rng.standard_normal(s).astype(np.float32) for s in ((64, 128), (128,), (128, 10), (10,))]

    def weights(self, *_):
        return self.w

    def step(self, w, x):
        return _mlp(w, x)


def plain_ps_rows(repeats: int) -> dict[str, float]:
    """Plain Ray's cost for digits_mlp's step, ps -> worker -> driver: ordinary actor calls
    (``worker.step.remote(ps.weights.remote(), x)``; and with the weights' ref kept from the
    first call, one call a step, as the master passes a pure read on), the same two calls as a Ray Compiled
    Graph (``experimental_compile``: shared-memory channels, each actor looping on them). Each
    minus the same forward pass run in the driver."""
    ray = ensure_ray()
    from ray.dag import InputNode

    x = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
    cls = ray.remote(_PlainTask).options(num_cpus=0)
    ps, wk, cps, cwk = (cls.remote() for _ in range(4))
    w = ray.get(ps.weights.remote())
    out = {"numpy": _median_ms(lambda: _mlp(w, x), repeats * 10)}
    out["actors"] = _median_ms(lambda: ray.get(wk.step.remote(ps.weights.remote(), x)), repeats)
    held = ps.weights.remote()  # the weights' ref kept: one call a step (as the master's reuse)
    out["held"] = _median_ms(lambda: ray.get(wk.step.remote(held, x)), repeats)
    try:
        with InputNode() as inp:
            dag = cwk.step.bind(cps.weights.bind(inp), inp)
        compiled = dag.experimental_compile()
        out["compiled"] = _median_ms(lambda: ray.get(compiled.execute(x)), repeats)
        compiled.teardown()
    except Exception as e:  # noqa: BLE001 - report, do not fail the other rows
        print(f"compiled graph failed: {type(e).__name__}: {e}")
        out["compiled"] = float("nan")
    for a in (ps, wk, cps, cwk):
        ray.kill(a)
    return out


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

    def noop(self):
        return None


def _plain_once(ray, holder) -> float:
    """One plain transfer: ask the holder to ray.put its array, ray.get it, sum it (the same
    work the graph's Sum does on the received tensor)."""
    t0 = time.perf_counter()
    ray.get(ray.get(holder.put.remote())[0]).sum()
    return time.perf_counter() - t0


def _session(n: int, cluster, dataflow: bool = True):
    text = BIG.replace("[N]", f"[{n}]")
    if cluster is None:
        text = text.replace(", device: /job:ps/task:0", "").replace(", device: /job:worker/task:0", "")
    spec = load_spec_text(text, "big.yaml")
    sess = Session(spec.graph_def, cluster=cluster)
    sess.dataflow = dataflow
    if cluster is not None:
        sess.reuse_reads = False  # the ps's read is the transfer measured: do it every step
    sess.run([], targets=[spec.lowered.init_op])
    return sess


def transfer_row(repeats: int, rounds: int = 5) -> dict[str, float]:
    """A 64 MiB variable on ps summed on a worker, minus the same graph with a 1-element
    variable (the step's fixed cost); plain Ray: one actor ray.puts the array, the driver
    ray.gets and sums it, minus the same with 1 element. Interleaved call by call, not in
    blocks: a 64 MiB ``ray.put`` takes 10-60 ms here depending on the machine's spell (fresh
    object-store pages, other jobs), and a block timed in one spell against a block in another
    compares the spells. Each ratio is the median of per-iteration ratios of neighbours."""
    ray = ensure_ray()
    cluster = {"ps": 1, "worker": 1}
    sessions = {"big": _session(BIG_N, cluster), "tiny": _session(1, cluster),
                "big_push": _session(BIG_N, cluster, False), "tiny_push": _session(1, cluster, False)}
    holders = {"plain_big": ray.remote(_Holder).options(num_cpus=0).remote(BIG_N),
               "plain_tiny": ray.remote(_Holder).options(num_cpus=0).remote(1)}  # fmt: skip
    times: dict[str, list[float]] = {k: [] for k in (*sessions, *holders, "rtt")}
    noop = holders["plain_tiny"]
    for sess in sessions.values():  # warm: registration, first allocations
        sess.run("s")
    for h in holders.values():
        _plain_once(ray, h)
    for _ in range(rounds * repeats):
        for k, sess in sessions.items():
            t0 = time.perf_counter()
            sess.run("s")
            times[k].append(time.perf_counter() - t0)
        for k, h in holders.items():
            times[k].append(_plain_once(ray, h))
        t0 = time.perf_counter()
        ray.get(noop.noop.remote())
        times["rtt"].append(time.perf_counter() - t0)
    for sess in sessions.values():
        sess.close()
    for h in holders.values():
        ray.kill(h)
    out = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    out["ours"] = out["big"] - out["tiny"]
    out["push"] = out["big_push"] - out["tiny_push"]
    out["plain"] = out["plain_big"] - out["plain_tiny"]
    plain = [b - t for b, t in zip(times["plain_big"], times["plain_tiny"])]
    for name, big, tiny in (("ratio", "big", "tiny"), ("push_ratio", "big_push", "tiny_push")):
        out[name] = statistics.median((b - t) / p for b, t, p in zip(times[big], times[tiny], plain))
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=30)
    p.add_argument("--transfer-only", action="store_true", help="only the 64 MB transfer")
    p.add_argument("--training", action="store_true", help="only training examples/s (distributed_training.py)")
    p.add_argument("--quick", action="store_true", help="with --training: fewer steps")
    p.add_argument("--rounds", type=int, default=1, help="with --training: interleaved rounds (medians)")
    p.add_argument("--models", nargs="*", help="only these example models (default: all)")
    args = p.parse_args(argv)
    console = Console(width=150)  # the table is wide; never wrap it
    if args.training:
        return _training(console, args.quick, args.rounds)
    t = Table(title="a step: local vs on Ray tasks (median ms; push = tasks call each other, auto = the "
                    "master's pick: dataflow when no cycle, a pure-read task's outbox passed on again while "
                    "nothing wrote to it; flow = the same calling every task each step)", header_style="bold")  # fmt: skip
    t.add_column("model")
    t.add_column("local", justify="right")
    for col in ("2 push", "2 flow", "2 auto", "3 push", "3 flow", "3 auto"):
        t.add_column(f"{col} (added)", justify="right")
    ensure_ray()
    digits = None
    for name, local, *times in [] if args.transfer_only else model_rows(args.repeats, args.models):
        t.add_row(name, f"{local:.2f}", *[f"{v:.2f} ({v - local:+.2f})" for v in times])
        if name == "digits_mlp":
            digits = (times[0] - local, times[2] - local, times[1] - local)
    if not args.transfer_only:
        console.print(t)
    if digits is not None:
        plain = plain_ps_rows(args.repeats * 3)
        console.print(
            f"digits_mlp on 1 ps + 1 worker adds {digits[1]:.2f} ms per step (auto; calling the ps every step: "
            f"{digits[2]:.2f} ms; push protocol: {digits[0]:.2f} ms; goal <= {ADDED_GOAL_MS} ms: "
            f"{'met' if digits[1] <= ADDED_GOAL_MS else 'missed'}); "
            "a plain-Ray "
            f"parameter server for the same MLP adds {plain['actors'] - plain['numpy']:.2f} ms with actor calls "
            f"({plain['held'] - plain['numpy']:.2f} ms passing a kept weights ref), "
            f"{plain['compiled'] - plain['numpy']:.2f} ms as a Ray Compiled Graph"
        )
    r = transfer_row(max(3, args.repeats // 10))
    console.print(f"one small Ray actor round trip (driver -> actor -> driver) here, same run: {r['rtt']:.2f} ms")
    ratio = r["ratio"]
    console.print(
        f"64 MiB ps -> worker (+ its Sum): step {r['big']:.1f} ms - the same step with 1 element {r['tiny']:.1f} ms "
        f"= {r['ours']:.1f} ms ({64 * 1.048576 / r['ours'] * 1e3:.0f} MB/s); plain ray.put in an actor, ray.get "
        f"+ sum: {r['plain_big']:.1f} - {r['plain_tiny']:.1f} = {r['plain']:.1f} ms; {ratio:.2f}x "
        f"(goal <= {TRANSFER_GOAL}x: {'met' if ratio <= TRANSFER_GOAL else 'missed'}); push protocol: "
        f"{r['big_push']:.1f} - {r['tiny_push']:.1f} = {r['push']:.1f} ms, {r['push_ratio']:.2f}x (ratios: medians of per-iteration ratios)"
    )
    shutdown_ray()
    return 0


def _training(console, quick: bool, rounds: int = 1) -> int:
    import os

    from benchmarks.distributed_training import BYTES, training_rows

    t = Table(title=f"training examples/s (nproc {os.cpu_count()}; one compute thread per worker; medians of "
                    f"{rounds} interleaved round{'s' if rounds > 1 else ''})", header_style="bold")  # fmt: skip
    for col in ("model", "local", "mode", "1 ps + 1", "1 ps + 2", "2 / 1 workers"):
        t.add_column(col, justify="left" if col in ("model", "mode") else "right")
    for name, local, *modes in training_rows(quick, rounds):
        for i in range(0, len(modes), 4):
            mode, one, two, ratio = modes[i : i + 4]
            t.add_row(name if i == 0 else "", f"{local:.0f}" if i == 0 else "", mode, f"{one:.0f}", f"{two:.0f}",
                      f"{ratio:.2f}x")  # fmt: skip
    console.print(t)
    for (name, where, mode), b in sorted(BYTES.items()):
        console.print(f"{name} {mode} on {where}: {b / 1024:.0f} KiB cross tasks per replica step")
    shutdown_ray()
    return 0


if __name__ == "__main__":
    sys.exit(main())
