"""Training throughput on Ray tasks: ``python -m benchmarks.distributed --training``.

Examples/s of ``specflow train`` locally vs on 1 ps + 1 worker and 1 ps + 2 workers (async and
sync), for the digits MLP (batch 64) and a compute-heavy MLP (784-1024-1024-10, batch 256, random
data), one compute thread per worker. Timed from a warm-up step to the last step (plans built,
caches warm); bytes per step are the tensors crossing tasks in one replica's step.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from specflow.schema.loader import load_spec_text
from specflow.train.loop import Listener, Trainer, TrainOptions

DIGITS = (Path(__file__).resolve().parent.parent / "models" / "digits_mlp.yaml").read_text()
HEAVY = """
specflow: 1
name: heavy_mlp
seed: 0
inputs:
  x: {dtype: float32, shape: [null, 784]}
  y: {dtype: int64, shape: [null]}
nodes:
  h1: {layer: dense, inputs: [x], units: 1024, activation: relu}
  h2: {layer: dense, inputs: [h1], units: 1024, activation: relu}
  logits: {layer: dense, inputs: [h2], units: 10}
  xent: {op: SparseSoftmaxCrossEntropyWithLogits, inputs: [logits, y]}
  loss: {op: Mean, inputs: ["xent:0"]}
train:
  loss: loss
  optimizer: {sgd: {learning_rate: 0.01}}
  data: {source: {npz: DATA}, feeds: {x: x, y: y}, batch_size: 256}
  steps: 1000
  checkpoints: {every_steps: 100000}
  summaries: {every_steps: 100000, graph: false}
"""


class _Clock(Listener):
    def __init__(self, warm: int):
        self.warm, self.t_warm, self.s_warm, self.t_end, self.s_end = warm, None, None, None, None

    def on_step(self, step, loss, rate):
        now = time.perf_counter()
        if self.t_warm is None and step >= self.warm:
            self.t_warm, self.s_warm = now, step
        self.t_end, self.s_end = now, step


def _spec(name: str, mode: str, data_dir: str):
    if name == "digits_mlp":
        text = DIGITS.replace("  steps: 2000", f"  steps: 2000\n  distributed: {{mode: {mode}}}")
        text = text.replace("every_steps: 500", "every_steps: 100000").replace("every_steps: 200", "every_steps: 100000")
    else:
        path = os.path.join(data_dir, "heavy.npz")
        if not os.path.exists(path):
            rng = np.random.default_rng(0)
            np.savez(path, x=rng.standard_normal((4096, 784)).astype(np.float32), y=rng.integers(0, 10, 4096))
        text = HEAVY.replace("DATA", path) + f"  distributed: {{mode: {mode}}}\n"
    return load_spec_text(text, f"{name}.yaml")


ONE_THREAD = {v: "1" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}


def local_one_thread(name: str, steps: int, warm: int, data_dir: str) -> float:
    """The local run in a child process with one BLAS thread, as each task gets (else the local
    run's BLAS threads fight over the cores and the comparison flatters the cluster)."""
    code = ("import sys; from benchmarks.distributed_training import examples_per_sec as f; "
            f"print(f({name!r}, 'local', 'async', {steps}, {warm}, {data_dir!r}))")  # fmt: skip
    root = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, **ONE_THREAD, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, cwd=root)
    return float(out.stdout.strip().splitlines()[-1])


def examples_per_sec(name: str, where: str, mode: str, steps: int, warm: int, data_dir: str,
                     loops: bool = True) -> float:  # fmt: skip
    """``where``: "local", or a cluster "ps=1,worker=N"; ``loops``: False has the driver run
    every async step itself (as before each worker ran its own loop, ``replica_loop.py``)."""
    spec = _spec(name, mode, data_dir)
    clock = _Clock(warm)
    logdir = tempfile.mkdtemp(prefix="bench-train-")
    options = TrainOptions(logdir=Path(logdir), steps=steps)
    if where == "local":
        Trainer(spec, options, clock).run()
        per_step = 1
    else:
        from specflow.distributed import Cluster, ClusterSpec, parse_cli
        from specflow.distributed.replicas import training_cluster
        from specflow.distributed.training import DistributedTrainer

        class Measured(DistributedTrainer):
            def _close(self):  # the plans go with the sessions: count their transfers first
                BYTES[(name, where, mode)] = replica_bytes(self)
                super()._close()

        jobs = parse_cli(f"local:{where}")  # one compute thread per task: an inter-op pool and BLAS
        cluster = Cluster(training_cluster(ClusterSpec(jobs, task_threads=dict.fromkeys(jobs, 1))), threads=1)
        try:
            trainer = Measured(spec, options, clock, cluster=cluster)
            trainer.worker_loops = loops
            trainer.run()
        finally:
            cluster.shutdown()
        per_step = len(trainer.tasks) if mode == "sync" else 1  # a sync step averages every worker's batch
    batch = spec.train.data.batch_size
    return (clock.s_end - clock.s_warm) * batch * per_step / (clock.t_end - clock.t_warm)


BYTES: dict[tuple, int] = {}  # (model, cluster, mode) -> bytes crossing tasks in one replica's step


def replica_bytes(trainer) -> int:
    """Bytes crossing tasks in replica 0's training step (async: the train op; sync: its push),
    from the plan's statically known transfer sizes (the unknown batch dimension counted as the
    batch size)."""
    batch = trainer.cfg.data.batch_size
    g = trainer.graph
    fetches, targets = [g.loss, g.global_step.read], trainer._ends(g.train_op)
    per_plan = [0]  # the replica runs one signature per step (its plans differ only in fetches)
    steps = [p.step for p in trainer.replicas[0]._plans.values() if getattr(p, "step", None) is not None]
    if not steps and trainer.sync is None:  # the worker's own loop ran them: the same plan, made here
        steps = [trainer.replicas[0].compile(sorted(trainer._feeds(0, 0)), fetches, targets)]
    for step in steps:
        total = 0
        for t in step.cross:
            dims = t.shape.as_list() if t.shape is not None and t.shape.rank is not None else None
            if dims is not None:
                total += int(np.prod([batch if d is None else d for d in dims])) * (t.dtype.itemsize or 4)
        per_plan.append(total)
    return max(per_plan)


def training_rows(quick: bool = False, rounds: int = 1) -> list[tuple]:
    """Per model: the local rate, then (mode, 1 worker, 2 workers, the median of the rounds'
    2 / 1 ratios) per configuration; each round runs every configuration once, interleaved."""
    rows = []
    data_dir = tempfile.mkdtemp(prefix="bench-data-")
    configs = [("async (worker loops)", "async", True), ("async (driver)", "async", False), ("sync", "sync", False),
               ("async, plain Ray ps (peer)", None, None)]  # fmt: skip
    for name, steps, warm in (("digits_mlp", 150 if quick else 1000, 50), ("heavy_mlp", 20 if quick else 100, 5)):
        local = local_one_thread(name, steps, warm, data_dir)
        got: dict[str, list[tuple[float, float]]] = {label: [] for label, _, _ in configs}
        for _ in range(rounds):
            for label, mode, loops in configs:  # interleaved: the same load for all
                if mode is None:
                    pair = tuple(plain_ray_examples_per_sec(name, w, steps, warm) for w in (1, 2))
                else:
                    pair = tuple(examples_per_sec(name, f"ps=1,worker={w}", mode, steps, warm, data_dir, loops)
                                 for w in (1, 2))  # fmt: skip
                got[label].append(pair)
        row = [name, local]
        for label, pairs in got.items():
            med = lambda xs: float(np.median(xs))  # noqa: E731
            row += [label, med([p[0] for p in pairs]), med([p[1] for p in pairs]), med([p[1] / p[0] for p in pairs])]
        rows.append(tuple(row))
    return rows


# --- the peer: a plain-Ray parameter server (Ray's own async PS example, in numpy) -------------

SHAPES = {"digits_mlp": ([64, 128, 10], 64, "adam"), "heavy_mlp": ([784, 1024, 1024, 10], 256, "sgd")}


class _PlainPS:
    """Holds the MLP's weights; ``apply`` takes one worker's gradients (Adam or SGD, as the
    spec's optimizer) and returns the new weights, as Ray's parameter-server example does."""

    def __init__(self, sizes: list[int], optimizer: str):
        rng = np.random.default_rng(0)
        self.w = []
        for a, b in zip(sizes, sizes[1:]):
            self.w += [(rng.standard_normal((a, b)) * np.sqrt(2 / a)).astype(np.float32), np.zeros(b, np.float32)]
        self.opt, self.t = optimizer, 0
        self.m = [np.zeros_like(w) for w in self.w]
        self.v = [np.zeros_like(w) for w in self.w]

    def weights(self):
        return self.w

    def apply(self, *grads):
        self.t += 1
        if self.opt == "sgd":
            for w, g in zip(self.w, grads):
                w -= 0.01 * g
            return self.w
        lr = 0.001 * np.sqrt(1 - 0.999**self.t) / (1 - 0.9**self.t)
        for w, g, m, v in zip(self.w, grads, self.m, self.v):
            m += 0.1 * (g - m)
            v += 0.001 * (g * g - v)
            w -= lr * m / (np.sqrt(v) + 1e-7)
        return self.w


class _PlainWorker:
    """Forward and backward of the MLP (ReLU hidden layers, softmax cross-entropy) on its own
    batches; each step sends the gradients and waits for the new weights."""

    def __init__(self, ps, sizes: list[int], batch: int, seed: int):
        rng = np.random.default_rng(seed)
        self.ps, self.x = ps, rng.standard_normal((batch, sizes[0])).astype(np.float32)
        self.y = rng.integers(0, sizes[-1], batch)

    def run(self, steps: int) -> float:
        import ray

        t0 = time.perf_counter()
        w = ray.get(self.ps.weights.remote())
        for _ in range(steps):
            acts, h = [self.x], self.x
            for i in range(0, len(w), 2):
                h = h @ w[i] + w[i + 1]
                if i + 2 < len(w):
                    h = np.maximum(h, 0)
                acts.append(h)
            p = np.exp(h - h.max(1, keepdims=True))
            p /= p.sum(1, keepdims=True)
            p[np.arange(len(p)), self.y] -= 1
            d, grads = p / len(p), [None] * len(w)
            for i in range(len(w) - 2, -1, -2):
                grads[i], grads[i + 1] = acts[i // 2].T @ d, d.sum(0)
                if i:
                    d = (d @ w[i].T) * (acts[i // 2] > 0)
            w = ray.get(self.ps.apply.remote(*grads))
        return time.perf_counter() - t0


def plain_ray_examples_per_sec(name: str, workers: int, steps: int, warm: int) -> float:
    """Examples/s of the plain-Ray parameter server: 1 ps + ``workers`` workers, one BLAS thread
    each, ``steps`` steps per worker after ``warm``."""
    from specflow.distributed.engine import ensure_ray

    ray = ensure_ray()
    sizes, batch, opt = SHAPES[name]
    env = {"runtime_env": {"env_vars": ONE_THREAD}, "num_cpus": 0}
    ps = ray.remote(_PlainPS).options(**env).remote(sizes, opt)
    ws = [ray.remote(_PlainWorker).options(**env).remote(ps, sizes, batch, k) for k in range(workers)]
    try:
        ray.get([w.run.remote(warm) for w in ws])
        t0 = time.perf_counter()
        ray.get([w.run.remote(steps) for w in ws])
        return workers * steps * batch / (time.perf_counter() - t0)
    finally:
        for a in [ps, *ws]:
            ray.kill(a)
