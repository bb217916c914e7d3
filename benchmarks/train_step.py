"""One SGD training step of an MLP (softmax cross-entropy) through specflow vs handwritten numpy.

specflow runs the training graph ``specflow train`` builds from a spec (gradients by graph
extension, ResourceApplyGradientDescent on resource variables, the global step), with the batch
fed as a Placeholder so only the step is timed (the input queue is measured by the training
run itself). The numpy reference does the same math: forward, softmax cross-entropy, backward
and in-place SGD updates, on float32 arrays.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from benchmarks.timing import paired_seconds
from specflow.runtime.session import Session, SessionConfig
from specflow.schema.loader import load_spec_text
from specflow.train.graph import build_training_graph

LR = 0.01
VARIANTS = ((64, (64, 128, 10)), (256, (784, 1024, 1024, 10)))


@dataclass
class TrainStepResult:
    batch: int
    sizes: tuple[int, ...]
    specflow_s: float
    numpy_s: float
    ratio: float


def spec_text(sizes) -> str:
    layers = []
    prev = "x"
    for i, units in enumerate(sizes[1:]):
        act = ", activation: relu" if i < len(sizes) - 2 else ""
        layers.append(f"  dense{i}: {{layer: dense, inputs: [{prev}], units: {units}{act}}}")
        prev = f"dense{i}"
    return "\n".join([
        "specflow: 1", "name: bench_mlp", "seed: 0",
        "inputs:", f"  x: {{dtype: float32, shape: [null, {sizes[0]}]}}", "  y: {dtype: int64, shape: [null]}",
        "nodes:", *layers,
        f"  xent: {{op: SparseSoftmaxCrossEntropyWithLogits, inputs: [{prev}, y]}}",
        "  loss: {op: Mean, inputs: ['xent:0']}",
        "train:", "  loss: loss", f"  optimizer: {{sgd: {{learning_rate: {LR}}}}}",
        # Required by the schema; the benchmark feeds its own batch, so nothing is read.
        "  data: {source: {npz: unused.npz}, feeds: {x: x, y: y}}",
    ])


class NumpyMlp:
    """The same network and SGD step written by hand (what an engineer would write in numpy)."""

    def __init__(self, params):
        self.params = [(w.copy(), b.copy()) for w, b in params]

    def step(self, x, y) -> float:
        acts = [x]
        for i, (w, b) in enumerate(self.params):
            z = acts[-1] @ w + b
            acts.append(np.maximum(z, 0) if i < len(self.params) - 1 else z)
        logits = acts[-1]
        shifted = logits - logits.max(axis=1, keepdims=True)
        e = np.exp(shifted)
        probs = e / e.sum(axis=1, keepdims=True)
        n = len(y)
        loss = float(-np.log(probs[np.arange(n), y]).mean())
        d = probs
        d[np.arange(n), y] -= 1
        d /= n
        for i in range(len(self.params) - 1, -1, -1):
            w, b = self.params[i]
            dw = acts[i].T @ d
            db = d.sum(axis=0)
            if i:
                d = (d @ w.T) * (acts[i] > 0)
            w -= LR * dw
            b -= LR * db
        return loss


# A sub-millisecond step is timed in this many times the rounds asked for (a round of 20 steps
# lasts ~2 ms): on a shared machine a slow spell of a few hundred milliseconds would otherwise
# cover most of its rounds and move the median.
SHORT_STEP_ROUNDS = 4


def run(batch: int, sizes, *, repeats: int = 15, number: int = 20) -> TrainStepResult:
    spec = load_spec_text(spec_text(sizes), "bench_mlp.yaml")
    tg = build_training_graph(spec, spec.train, None)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    y = rng.integers(0, sizes[-1], size=batch).astype(np.int64)
    feeds = {"x": x, "y": y}
    with Session(tg.graph_def, SessionConfig(devices="cpu:1", graph_seed=0)) as sess:
        sess.run([], targets=[tg.init_op])
        params = [(sess.run(f"dense{i}/kernel/Read/ReadVariableOp"), sess.run(f"dense{i}/bias/Read/ReadVariableOp"))
                  for i in range(len(sizes) - 1)]
        ref = NumpyMlp(params)
        # The same first steps: the graph's loss and update match numpy's.
        for _ in range(3):
            ours = float(sess.run(tg.loss, feeds, targets=[tg.train_op]))
            theirs = ref.step(x, y)
            np.testing.assert_allclose(ours, theirs, rtol=2e-4)
        t0 = time.perf_counter()
        sess.run(tg.loss, feeds, targets=[tg.train_op])
        if time.perf_counter() - t0 < 1e-3:
            repeats *= SHORT_STEP_ROUNDS
        specflow_s, numpy_s, ratio = paired_seconds(
            lambda: sess.run(tg.loss, feeds, targets=[tg.train_op]), lambda: ref.step(x, y),
            repeats=repeats, number=number,
        )
    return TrainStepResult(batch, tuple(sizes), specflow_s, numpy_s, ratio)
