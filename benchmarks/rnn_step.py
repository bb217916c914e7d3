"""The RNN of ``models/rnn_sequence_sum.yaml`` (an 8-step while loop, batch 64) side by side with
TensorFlow's ``tf.while_loop``, one thread each, same weights and batch, interleaved rounds.

Rows: the Adam training step (specflow with counted loops unrolled, the default; with
``unroll_limit=0``: the loops compiled, ``runtime/loop_plan.py``; and with ``compile_loops=False``
too: the loops on frames), inference (the serving signature), and a training step
whose trip count is fed (``n``: never unrolled). TensorFlow's rows appear when it is importable
(run this module with a Python that has it, e.g. ``/path/to/tfvenv/bin/python -m
benchmarks.rnn_step`` with ``PYTHONPATH`` at the repository root); the first losses are checked
equal before timing.

    python -m benchmarks.rnn_step [--batch 64] [--repeats 21] [--number 20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from benchmarks.timing import _openblas_lib, machine_info
from specflow.runtime.session import Session, SessionConfig
from specflow.schema.loader import load_spec_text
from specflow.train.graph import build_training_graph

MODEL = Path(__file__).resolve().parents[1] / "models" / "rnn_sequence_sum.yaml"
WEIGHTS = ("W", "U", "b", "V", "c")


def spec_text(fed_trips: bool) -> str:
    text = MODEL.read_text()
    if fed_trips:  # the trip count an input: the same loop, not unrollable
        text = text.replace("nodes:\n", "nodes:\n  n: {op: PlaceholderWithDefault, input: 8, shape: []}\n", 1)
        text = text.replace("cond: {op: Less, inputs: [t], y: 8}", "cond: {op: Less, inputs: [t, n]}")
        assert "inputs: [t, n]" in text
    return text


class Specflow:
    """One training graph in one Session (cpu:1)."""

    def __init__(self, fed_trips: bool, unroll_limit: int, batch: int, compile_loops: bool = True):
        spec = load_spec_text(spec_text(fed_trips), str(MODEL))
        self.tg = build_training_graph(spec, spec.train, None)
        config = SessionConfig(devices="cpu:1", graph_seed=0, unroll_limit=unroll_limit, compile_loops=compile_loops)
        self.sess = Session(self.tg.graph_def, config)
        self.sess.run([], targets=[self.tg.init_op])
        rng = np.random.default_rng(0)
        x = rng.uniform(-1, 1, (batch, 8, 1)).astype(np.float32)
        self.feeds = {"x": x, "y": x.sum(axis=1)}
        if fed_trips:
            self.feeds["n"] = np.int32(8)

    def weights(self) -> list[np.ndarray]:
        return [self.sess.run(f"{w}/Read/ReadVariableOp") for w in WEIGHTS]

    def step(self) -> float:
        return self.sess.run(self.tg.loss, self.feeds, targets=[self.tg.train_op])

    def infer(self):
        return self.sess.run("prediction", {"x": self.feeds["x"]})


class TensorFlow:
    """The same RNN, loss and Adam step as a ``tf.function`` with ``tf.while_loop``."""

    def __init__(self, weights, feeds, fed_trips: bool):
        import tensorflow as tf

        self.vars = [tf.Variable(w) for w in weights]
        self.opt = tf.keras.optimizers.Adam(0.02)
        W, U, b, V, c = self.vars

        def forward(x, n):
            steps = tf.transpose(x, [1, 0, 2])
            h0 = tf.zeros([tf.shape(x)[0], 16])

            def body(t, h):
                return t + 1, tf.tanh(tf.nn.bias_add(tf.gather(steps, t) @ W + h @ U, b))

            _, h = tf.while_loop(lambda t, h: t < n, body, [tf.constant(0), h0])
            return tf.nn.bias_add(h @ V, c)

        @tf.function
        def step(x, y, n):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.math.squared_difference(forward(x, n), y))
            self.opt.apply_gradients(zip(tape.gradient(loss, self.vars), self.vars))
            return loss

        n = tf.constant(np.int32(8)) if fed_trips else 8  # a Python 8 is traced as a constant
        self.args = (tf.constant(feeds["x"]), tf.constant(feeds["y"]), n)
        self._step, self._infer = step, tf.function(lambda x: forward(x, 8))

    def step(self) -> float:
        return float(self._step(*self.args))

    def infer(self):
        return self._infer(self.args[0]).numpy()


def interleaved(fns: dict[str, Callable[[], object]], repeats: int, number: int) -> dict[str, tuple[float, ...]]:
    """(median, mean, median CPU) seconds per call of each function over ``repeats`` rounds that
    run each ``number`` times in turn (the order rotating every round), after a warm-up. Every
    call is timed: on a machine shared with other jobs a descheduled call takes 10-100x a normal
    one, so the median of the calls holds still better than the mean (what an idle machine
    gives), and the process's CPU time per call (all its threads) best of all."""
    for fn in fns.values():
        for _ in range(3):
            fn()
    names = list(fns)
    wall: dict[str, list[float]] = {k: [] for k in names}
    cpu: dict[str, list[float]] = {k: [] for k in names}
    clock, cpu_clock = time.perf_counter, time.process_time
    for r in range(repeats):
        for k in names[r % len(names) :] + names[: r % len(names)]:
            fn, out, out_cpu = fns[k], wall[k], cpu[k]
            for _ in range(number):
                c0, t0 = cpu_clock(), clock()
                fn()
                out.append(clock() - t0)
                out_cpu.append(cpu_clock() - c0)
    return {k: (statistics.median(wall[k]), statistics.mean(wall[k]), statistics.median(cpu[k])) for k in names}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument("--number", type=int, default=20)
    args = parser.parse_args()
    try:
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    except ImportError:
        tf = None
    lib = _openblas_lib()  # numpy's BLAS on one thread too, like both runtimes
    for name in ("scipy_openblas_set_num_threads64_", "openblas_set_num_threads64_", "openblas_set_num_threads"):
        if lib is not None and hasattr(lib, name):
            getattr(lib, name)(1)
            break
    for k, v in machine_info():
        print(f"{k:10} {v}")
    print(f"threads    specflow cpu:1, TF intra/inter 1/1, load {os.getloadavg()[0]:.1f}; batch {args.batch}")
    rows = []
    for label, fed in (("training step, 8 steps", False), ("training step, trips fed", True)):
        unrolled, looped = Specflow(fed, 2000, args.batch), Specflow(fed, 0, args.batch)
        frames = Specflow(fed, 0, args.batch, compile_loops=False)
        fns = {"unrolled": unrolled.step, "loop": looped.step, "frames": frames.step}
        if tf is not None:
            fns["tensorflow"] = TensorFlow(unrolled.weights(), unrolled.feeds, fed).step
        first = [fn() for fn in fns.values()]  # the same weights: the same first loss
        np.testing.assert_allclose(first, first[0], rtol=1e-5)
        rows.append((label, interleaved(fns, args.repeats, args.number)))
    model = Specflow(False, 2000, args.batch)
    looped, frames = Specflow(False, 0, args.batch), Specflow(False, 0, args.batch, compile_loops=False)
    fns = {"unrolled": model.infer, "loop": looped.infer, "frames": frames.infer}
    if tf is not None:
        peer = TensorFlow(model.weights(), model.feeds, False)
        np.testing.assert_allclose(peer.infer(), model.infer(), rtol=1e-5, atol=1e-6)
        fns["tensorflow"] = peer.infer
    rows.append(("inference", interleaved(fns, args.repeats, args.number)))
    print(f"\nµs per call over {args.repeats} x {args.number} interleaved calls: wall median (mean) | CPU "
          f"median; load now {os.getloadavg()[0]:.1f}")  # fmt: skip
    cols = ("unrolled", "loop", "frames", "tensorflow")
    print(f"{'workload':26} " + " ".join(f"{c:>23}" for c in cols) + f" {'unrolled/TF':>12} {'loop/TF':>8}")
    for label, t in rows:
        cells = [f"{t[c][0] * 1e6:6.0f} ({t[c][1] * 1e6:6.0f}) | {t[c][2] * 1e6:5.0f}" if c in t else "-" for c in cols]
        peer = t.get("tensorflow")
        ratios = [f"{t[c][0] / peer[0]:.2f}x|{t[c][2] / peer[2]:.2f}x" if peer else "-" for c in ("unrolled", "loop")]
        print(f"{label:26} " + " ".join(f"{c:>23}" for c in cells) + f" {ratios[0]:>12} {ratios[1]:>8}")
    print("ratios: wall median | CPU median")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
