"""16-bit transfers (whitepaper 5.5) measured: ``python -m benchmarks.lossy_transfers``.

1. two_tower on 2 local devices (batch 64): bytes crossing devices per step with and without;
   the largest relative error per element among the tensors crossing (this step's values,
   through the same two kernels the partitioner inserts); the error it leaves in the output;
   step times (medians of interleaved rounds).
2. digits_mlp on ``local:ps=1,worker=1`` (``--cluster`` only; starts a private Ray): bytes
   crossing tasks per training step; the error across tasks, measured on the wire (each weight
   as the worker receives it, through an Identity pinned there, against the ps's value); and a
   short async training run with and without (last loss, held-out accuracy and loss, time).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
from rich.console import Console
from rich.table import Table

from specflow.graph.graph_def import GraphDef, NodeDef
from specflow.ops.eval import evaluate_op
from specflow.runtime.session import Session, SessionConfig
from specflow.schema.loader import load_spec

MODELS = Path(__file__).resolve().parent.parent / "models"
BATCH = 64


def through_the_wire(x: np.ndarray) -> np.ndarray:
    """``x`` as an _ExpandFromBfloat16 after a _TruncateToBfloat16 gives it back."""
    return evaluate_op("_ExpandFromBfloat16", [evaluate_op("_TruncateToBfloat16", [x])[0]])[0]


def max_rel_error(sent: np.ndarray, received: np.ndarray) -> float:
    """The largest |received - sent| / |sent| over the nonzero elements."""
    sent, received = sent.astype(np.float64), received.astype(np.float64)
    nz = sent != 0
    return float(np.max(np.abs(received[nz] - sent[nz]) / np.abs(sent[nz]))) if nz.any() else 0.0


def _wire_bytes(transfers, batch: int) -> int:
    """Bytes per step of ``transfers``, an unknown (batch) dimension counted as ``batch``."""
    total = 0
    for t in transfers:
        if t.bytes_per_step is not None:
            total += t.bytes_per_step
        elif t.shape.rank is not None:
            n = int(np.prod([batch if d is None else d for d in t.shape.as_list()]))
            total += n * (2 if t.lossy else t.dtype.itemsize)
    return total


def two_tower(rounds: int = 11, steps: int = 50) -> dict:
    from specflow.runtime.pipeline import compile_step

    spec = load_spec(MODELS / "two_tower.yaml")
    x = np.random.default_rng(0).standard_normal((BATCH, 32)).astype(np.float32)
    out: dict = {}
    sessions = {}
    for lossy in (False, True):
        s = Session(spec.graph_def, SessionConfig(devices="cpu:2", graph_seed=0, lossy_transfers=lossy))
        s.run([], targets=[spec.lowered.init_op])
        sessions[lossy] = s
        step = compile_step(spec.graph_def, s.device_names, feeds=["x:0"], fetches=["out:0"], lossy_transfers=lossy,
                            feed_shapes=[(BATCH, 32)])  # the plan the session runs for this feed's shape
        out[f"bytes_{lossy}"] = _wire_bytes(step.partitioned.transfers, BATCH)
        out[f"transfers_{lossy}"] = [t.tensor for t in step.partitioned.transfers if t.lossy or not lossy]
    exact = sessions[False]
    crossing = out["transfers_True"]  # the feed crosses as its _Arg's output: its value is x
    sent = [x] + exact.run([t for t in crossing if not t.startswith("_arg_x")], {"x": x})
    out["tensor_error"] = max(max_rel_error(v, through_the_wire(v)) for v in sent)
    want, got = exact.run("out", {"x": x}), sessions[True].run("out", {"x": x})
    out["output_error"] = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
    times: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(rounds):
        for lossy, s in sessions.items():
            t0 = time.perf_counter()
            for _ in range(steps):
                s.run("out", {"x": x})
            times[lossy].append((time.perf_counter() - t0) / steps)
    for lossy, s in sessions.items():
        out[f"step_{lossy}"] = statistics.median(times[lossy])
        s.close()
    return out


def digits_on_tasks(steps: int = 300) -> dict:
    """Bytes, wire error and a short training run on ps=1, worker=1 (a private Ray)."""
    from specflow.distributed import Cluster, ClusterSpec, parse_cli
    from specflow.distributed.engine import shutdown_ray
    from specflow.distributed.replicas import training_cluster
    from specflow.distributed.training import DistributedTrainer
    from specflow.train.loop import TrainOptions

    spec = load_spec(MODELS / "digits_mlp.yaml")
    out: dict = {}
    cluster = Cluster(training_cluster(ClusterSpec(parse_cli("local:ps=1,worker=1"))), threads=1)
    try:
        # The error on the wire: each weight read on the ps, received by a Neg on the worker (exact;
        # an Identity would be optimized away).
        reads = [n.name for n in spec.graph_def.nodes if n.op == "ReadVariableOp"]
        probe = GraphDef([NodeDef(f"{r}/on_worker", "Neg", [r], "/job:worker/task:0", {"T": "float32"})
                          for r in reads])  # fmt: skip
        # Initialized at full precision first (variables stay on the ps across sessions): with
        # lossy transfers the initial values, computed on the worker, would cross truncated.
        with Session(spec.graph_def, SessionConfig(graph_seed=2), cluster=cluster) as s:
            s.run([], targets=[spec.lowered.init_op])
        with Session(spec.graph_def, SessionConfig(graph_seed=2, lossy_transfers=True), cluster=cluster) as s:
            s.extend(probe)
            values = s.run(reads + [f"{r}/on_worker" for r in reads])
            values[len(reads):] = [-v for v in values[len(reads):]]
            out["wire_error"] = max(max_rel_error(values[i], values[len(reads) + i]) for i in range(len(reads)))
            out["wire_exact"] = all(
                np.array_equal(values[len(reads) + i], through_the_wire(values[i])) for i in range(len(reads))
            )
        for lossy in (False, True):
            sizes: list[int] = []

            class Measured(DistributedTrainer):
                def _close(self, sizes=sizes):  # the plans go with the sessions: count their transfers first
                    for plan in self.replicas[0]._plans.values():
                        if getattr(plan, "step", None) is not None:
                            sizes.append(_wire_bytes(plan.step.cross, spec.train.data.batch_size))
                    super()._close()

            options = TrainOptions(logdir=Path(tempfile.mkdtemp(prefix="bench-lossy-")), steps=steps,
                                   lossy_transfers=lossy)  # fmt: skip
            t0 = time.perf_counter()
            result = Measured(spec, options, None, cluster=cluster).run()
            out[f"train_{lossy}"] = (result.last_loss, result.eval_metrics, time.perf_counter() - t0)
            out[f"task_bytes_{lossy}"] = max(sizes)
    finally:
        cluster.shutdown()
        shutdown_ray()
    return out


def _kib(n: int) -> str:
    return f"{n / 1024:.1f} KiB"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cluster", action="store_true", help="also digits_mlp on ps=1, worker=1 (starts Ray)")
    p.add_argument("--steps", type=int, default=300, help="training steps per cluster run")
    args = p.parse_args(argv)
    console = Console()
    r = two_tower()
    t = Table(title=f"two_tower, cpu:2, batch {BATCH}", header_style="bold")
    for col in ("", "float32", "bfloat16 transfers"):
        t.add_column(col)
    t.add_row("bytes crossing devices / step", _kib(r["bytes_False"]), _kib(r["bytes_True"]))
    t.add_row("max relative error per element crossing", "0", f"{r['tensor_error']:.2e} (bound 2^-7 = {2**-7:.2e})")
    t.add_row("output error (max abs / max |out|)", "0", f"{r['output_error']:.2e}")
    t.add_row("step time (median)", f"{r['step_False'] * 1e6:.0f} µs", f"{r['step_True'] * 1e6:.0f} µs")
    console.print(t)
    if args.cluster:
        c = digits_on_tasks(args.steps)
        t = Table(title=f"digits_mlp on ps=1, worker=1: async training, {args.steps} steps", header_style="bold")
        for col in ("", "float32", "bfloat16 transfers"):
            t.add_column(col)
        t.add_row("bytes crossing tasks / training step", _kib(c["task_bytes_False"]), _kib(c["task_bytes_True"]))
        t.add_row("max relative error on the wire (weights ps -> worker)", "0",
                  f"{c['wire_error']:.2e} ({'equal to' if c['wire_exact'] else 'DIFFERS from'} the kernels' truncation)")
        for k, label in ((0, "last training loss"), (1, "held-out accuracy"), (1, "held-out loss"), (2, "wall time")):
            cells = []
            for lossy in (False, True):
                v = c[f"train_{lossy}"][k]
                if k == 1:
                    v = v.get("accuracy" if "accuracy" in label else "loss", float("nan"))
                cells.append(f"{v:.1f} s" if k == 2 else f"{v:.4f}")
            t.add_row(label, *cells)
        console.print(t)


if __name__ == "__main__":
    main()
