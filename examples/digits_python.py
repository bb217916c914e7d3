"""The digits MLP written in Python: an sf.Module trained with @sf.function + GradientTape,
checkpointed, saved as a SavedModel that `specflow predict` (and TensorFlow) load.

    python examples/digits_python.py EXPORT_DIR [--steps 600]
    specflow predict EXPORT_DIR -i images=images.npy
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import specflow as sf  # noqa: E402


class Dense(sf.Module):
    def __init__(self, n_in: int, n_out: int, rng, activation=None):
        super().__init__()
        limit = np.sqrt(6 / (n_in + n_out))  # Glorot uniform, as the spec's dense layer
        self.kernel = sf.Variable(rng.uniform(-limit, limit, (n_in, n_out)).astype(np.float32), name="kernel")
        self.bias = sf.Variable(np.zeros(n_out, np.float32), name="bias")
        self.activation = activation

    def __call__(self, x):
        y = sf.ops.bias_add(sf.ops.mat_mul(x, self.kernel), self.bias)
        return self.activation(y) if self.activation else y


class DigitsMlp(sf.Module):
    def __init__(self, seed: int = 0):
        super().__init__()
        rng = np.random.default_rng(seed)
        self.hidden = Dense(64, 128, rng, sf.ops.relu)
        self.logits = Dense(128, 10, rng)

    @sf.function(input_signature=[sf.TensorSpec([None, 64], "float32", name="images")])
    def predict(self, images):
        return {"probabilities": sf.ops.softmax(self.logits(self.hidden(images)))}

    @sf.function
    def train_step(self, images, labels, learning_rate):
        with sf.GradientTape() as tape:
            logits = self.logits(self.hidden(images))
            xent, _ = sf.ops.sparse_softmax_cross_entropy_with_logits(logits, labels)
            loss = sf.ops.mean(xent)
        for var, grad in zip(self.trainable_variables, tape.gradient(loss, self.trainable_variables)):
            var.assign_sub(learning_rate * grad)
        return loss


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("export_dir")
    parser.add_argument("--steps", type=int, default=600)
    args = parser.parse_args(argv)
    data = np.load(Path(sf.__file__).parent / "data" / "digits.npz")
    x, y = (data["images"] / 16).astype(np.float32), data["labels"].astype(np.int64)
    train_x, train_y, test_x, test_y = x[:1500], y[:1500], x[1500:], y[1500:]
    model = DigitsMlp()
    lr = sf.constant(np.float32(0.5))  # a tensor, not a Python float: one trace for every step
    rng = np.random.default_rng(1)
    for step in range(1, args.steps + 1):
        idx = rng.integers(0, len(train_x), 64)
        loss = model.train_step(train_x[idx], train_y[idx], lr)
        if step % 200 == 0:
            print(f"step {step}: loss {float(loss):.4f}")
    accuracy = float((model.predict(test_x)["probabilities"].numpy().argmax(1) == test_y).mean())
    print(f"held-out accuracy: {accuracy:.4f}")
    sf.train.Checkpoint(model=model).save(Path(args.export_dir).with_suffix(".ckpt") / "ckpt")  # <dir>/ckpt-1
    sf.save(model, args.export_dir, overwrite=True)  # the one sf.function with an input_signature
    print(f"saved {args.export_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
