"""The Python face against the spec it mirrors, and eager op overhead.

- The digits training step (64-128-10 MLP, softmax cross-entropy, Adam, batch 64) written in
  Python (an sf.Module, an ``@sf.function`` step with a GradientTape and ResourceApplyAdam)
  vs the training graph ``specflow train`` builds from ``models/digits_mlp.yaml``, run by
  ``Session.run`` with the batch fed. Same initial weights; the losses of the first steps are
  checked equal before timing.
- Eager per-op overhead: ``sf.ops.add_v2`` on two float32 scalars, per call; TensorFlow's and
  PyTorch's eager ``add`` beside it where they are installed.

``python -m benchmarks.pyface`` prints both; ``benchmarks/run.py`` adds them as rows.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.timing import median_seconds, paired_seconds

ROOT = Path(__file__).resolve().parent.parent
BATCH = 64


@dataclass
class StepResult:
    function_s: float
    session_s: float
    ratio: float


def _python_model(sf, weights: dict):
    """The digits MLP and Adam (TensorFlow 1's: bias correction in the step size, the powers as
    variables) as an sf.Module; the update is the same ResourceApplyAdam op the spec's uses."""

    class Dense(sf.Module):
        def __init__(self, kernel, bias):
            super().__init__()
            self.kernel = sf.Variable(kernel, name="kernel")
            self.bias = sf.Variable(bias, name="bias")

        def __call__(self, x):
            return sf.ops.bias_add(sf.ops.mat_mul(x, self.kernel), self.bias)

    class Mlp(sf.Module):
        def __init__(self):
            super().__init__()
            self.hidden = Dense(weights["hidden/kernel"], weights["hidden/bias"])
            self.logits = Dense(weights["logits/kernel"], weights["logits/bias"])
            self.slots = [(sf.Variable(np.zeros_like(v.numpy()), trainable=False),
                           sf.Variable(np.zeros_like(v.numpy()), trainable=False)) for v in self.params]
            self.beta1_power = sf.Variable(np.float32(0.9), trainable=False)
            self.beta2_power = sf.Variable(np.float32(0.999), trainable=False)
            self.step = sf.Variable(np.int64(0), trainable=False)

        @property
        def params(self):
            return [self.hidden.kernel, self.hidden.bias, self.logits.kernel, self.logits.bias]

        @sf.function
        def train_step(self, images, labels):
            with sf.GradientTape() as tape:
                logits = self.logits(sf.ops.relu(self.hidden(images)))
                xent, _ = sf.ops.sparse_softmax_cross_entropy_with_logits(logits, labels)
                loss = sf.ops.mean(xent)
            grads = tape.gradient(loss, self.params)
            b1, b2 = self.beta1_power.read_value(), self.beta2_power.read_value()
            for var, (m, v), g in zip(self.params, self.slots, grads):
                sf.ops.resource_apply_adam(var, m, v, b1, b2, 0.001, 0.9, 0.999, 1e-7, g)
            self.beta1_power.assign(b1 * 0.9)
            self.beta2_power.assign(b2 * 0.999)
            self.step.assign_add(np.int64(1))
            return loss

    return Mlp()


def train_step(*, repeats: int = 15, number: int = 20) -> StepResult:
    import specflow as sf
    from specflow.runtime.session import Session, SessionConfig
    from specflow.train.graph import build_training_graph

    spec = sf.load_spec(ROOT / "models" / "digits_mlp.yaml")
    tg = build_training_graph(spec, spec.train, None)
    data = np.load(ROOT / "specflow" / "data" / "digits.npz")
    x = (data["images"][:BATCH] / 16).astype(np.float32)
    y = data["labels"][:BATCH].astype(np.int64)
    feeds = {"images": x, "labels": y, tg.training_flag: True} if tg.training_flag else {"images": x, "labels": y}
    with Session(tg.graph_def, SessionConfig(devices="cpu:1")) as sess:
        sess.run([], targets=[tg.init_op])
        weights = {v.name: sess.run(v.read) for v in tg.trainable}
        model = _python_model(sf, weights)
        for _ in range(3):  # the same first steps: same losses
            ours = float(model.train_step(x, y))
            theirs = float(sess.run(tg.loss, feeds, targets=[tg.train_op]))
            np.testing.assert_allclose(ours, theirs, rtol=1e-4)
        function_s, session_s, ratio = paired_seconds(
            lambda: model.train_step(x, y), lambda: sess.run(tg.loss, feeds, targets=[tg.train_op]),
            repeats=repeats * 4, number=number,  # sub-millisecond steps: more rounds (see train_step.py)
        )
    return StepResult(function_s, session_s, ratio)


def eager_overhead(*, repeats: int = 15, number: int = 2000) -> dict[str, float | None]:
    """Seconds per eager scalar add: specflow, and TensorFlow / PyTorch where importable."""
    import specflow as sf

    a, b = sf.constant(np.float32(1.0)), sf.constant(np.float32(2.0))
    add = sf.ops.add_v2
    out: dict[str, float | None] = {"specflow": median_seconds(lambda: add(a, b), repeats=repeats, number=number)}
    try:
        import tensorflow as tf

        ta, tb = tf.constant(1.0), tf.constant(2.0)
        out["tensorflow"] = median_seconds(lambda: tf.add(ta, tb), repeats=repeats, number=number)
    except ImportError:
        out["tensorflow"] = None
    try:
        import torch

        pa, pb = torch.tensor(1.0), torch.tensor(2.0)
        out["pytorch"] = median_seconds(lambda: torch.add(pa, pb), repeats=repeats, number=number)
    except ImportError:
        out["pytorch"] = None
    return out


def main() -> int:
    t0 = time.perf_counter()
    r = train_step()
    print(f"digits train step, batch {BATCH}: sf.function {r.function_s * 1e3:.3f} ms, "
          f"Session.run {r.session_s * 1e3:.3f} ms, ratio {r.ratio:.3f}x (target <= 1.10x)")
    for name, s in eager_overhead().items():
        print(f"eager scalar add, {name}: " + ("not installed" if s is None else f"{s * 1e6:.2f} µs/op"))
    print(f"({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
