"""The model zoo side by side with Keras: ``python -m benchmarks.zoo [--steps N] [MODEL ...]``.

For each zoo model: specflow trains it (the Trainer, the spec's batch size, optimizer and data
split) and so does the same architecture written in Keras (where TensorFlow imports; skipped
otherwise), for the same number of steps (the spec's own, or ``--steps``) on the same training
split with Adam at the spec's learning rate. Printed: the held-out metric of each (accuracy, or
the loss for the autoencoder) and the time per training step (the median over the steps after
the first; specflow's from its step rate, Keras's from ``train_on_batch``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
from rich.console import Console
from rich.table import Table

from specflow.schema.loader import load_spec
from specflow.train.evaluate import load_split
from specflow.train.loop import Listener, Trainer, TrainOptions

MODELS = Path(__file__).resolve().parent.parent / "models"
ZOO = ["lenet5", "resnet_digits", "lstm_language_model", "gru_classifier", "transformer_classifier", "word2vec",
       "autoencoder"]


class _Rates(Listener):
    def __init__(self):
        self.times: list[float] = []

    def on_step(self, step, loss, steps_per_sec):
        self.times.append(time.perf_counter())


def run_specflow(name: str, steps: int | None) -> tuple[float, float, str]:
    """(held-out metric, seconds per step, metric name) for the spec trained by the Trainer."""
    spec = load_spec(MODELS / f"{name}.yaml")
    rates = _Rates()
    with tempfile.TemporaryDirectory() as d:
        result = Trainer(spec, TrainOptions(logdir=Path(d), steps=steps), rates).run()
        from specflow.train.evaluate import evaluate_checkpoint

        _, metrics = evaluate_checkpoint(spec, d)
    metric = "accuracy" if "accuracy" in metrics else "loss"
    gaps = np.diff(rates.times)[1:] if len(rates.times) > 2 else [result.seconds / max(result.step, 1)]
    return metrics[metric], float(statistics.median(gaps)), metric


# --- the same architectures in Keras ----------------------------------------------------------------


def keras_model(name: str, keras):
    L = keras.layers
    if name in ("lenet5", "resnet_digits", "autoencoder"):
        images = keras.Input((64,))
        x = L.Reshape((8, 8, 1))(images)
        if name == "lenet5":
            x = L.ZeroPadding2D(2)(x)
            x = L.AveragePooling2D(2)(L.Conv2D(6, 5, activation="tanh")(x))
            x = L.AveragePooling2D(2)(L.Conv2D(16, 3, padding="same", activation="tanh")(x))
            x = L.Dense(84, activation="tanh")(L.Dense(120, activation="tanh")(L.Flatten()(x)))
            return keras.Model(images, L.Dense(10)(x))
        if name == "resnet_digits":
            def conv_bn(t, strides=1):
                t = L.Conv2D(8, 3, strides=strides, padding="same", use_bias=False)(t)
                return L.BatchNormalization(momentum=0.9)(t)

            x = L.ReLU()(conv_bn(x, strides=2))
            for _ in range(2):
                x = L.ReLU()(L.Add()([x, conv_bn(L.ReLU()(conv_bn(x)))]))
            return keras.Model(images, L.Dense(10)(L.GlobalAveragePooling2D()(x)))
        x = L.Conv2D(16, 3, strides=2, padding="same", activation="relu")(x)
        x = L.Conv2D(4, 3, strides=2, padding="same", activation="relu")(x)
        x = L.Conv2DTranspose(16, 3, strides=2, padding="same", activation="relu")(x)
        x = L.Conv2D(1, 3, padding="same", activation="sigmoid")(L.UpSampling2D()(x))
        return keras.Model(images, L.Reshape((64,))(x))
    if name == "lstm_language_model":
        tokens = keras.Input((12,), dtype="int32")
        x = L.LSTM(32, return_sequences=True)(L.Embedding(35, 16)(tokens))
        return keras.Model(tokens, L.Dense(35)(x))
    if name == "gru_classifier":
        tokens = keras.Input((12,), dtype="int32")
        return keras.Model(tokens, L.Dense(2)(L.GRU(16)(L.Embedding(10, 8, mask_zero=True)(tokens))))
    if name == "transformer_classifier":
        tokens = keras.Input((12,), dtype="int32")
        mask = keras.ops.expand_dims(keras.ops.not_equal(tokens, 0), 1)  # [batch, 1, S]: padding keys
        positions = L.Embedding(12, 16)(keras.ops.arange(12))
        x = L.Embedding(10, 16)(tokens) + positions
        for _ in range(2):
            attention = L.MultiHeadAttention(2, 8, dropout=0.1)(x, x, attention_mask=mask)
            x = L.LayerNormalization()(x + attention)
            x = L.LayerNormalization()(x + L.Dense(16)(L.Dense(32, activation="gelu")(x)))
        return keras.Model(tokens, L.Dense(2)(L.GlobalAveragePooling1D()(x)))
    if name == "word2vec":
        center, context = keras.Input((), dtype="int32"), keras.Input((), dtype="int32")
        dot = L.Dot(axes=1)([L.Embedding(35, 16)(center), L.Embedding(35, 16)(context)])
        return keras.Model([center, context], L.Reshape(())(dot))
    raise KeyError(name)


def run_keras(name: str, steps: int | None, keras) -> tuple[float, float]:
    spec = load_spec(MODELS / f"{name}.yaml")
    cfg = spec.train
    train, test = load_split(spec, cfg)
    feeds = cfg.data.feeds
    inputs = {"word2vec": ["center", "context"]}.get(name, [k for k in feeds if k in ("images", "tokens")])
    target = {"lenet5": "labels", "resnet_digits": "labels", "gru_classifier": "labels",
              "transformer_classifier": "labels", "lstm_language_model": "targets", "word2vec": "label",
              "autoencoder": "images"}[name]  # fmt: skip

    def xy(arrays):
        xs = [arrays[feeds[i]].astype("int32" if i in ("tokens", "center", "context") else "float32") for i in inputs]
        return (xs if len(xs) > 1 else xs[0]), arrays[feeds[target]]

    keras.utils.set_random_seed(0)
    model = keras_model(name, keras)
    lr = cfg.optimizer.params["learning_rate"]
    if name == "word2vec":
        loss, metrics = keras.losses.BinaryCrossentropy(from_logits=True), [keras.metrics.BinaryAccuracy(threshold=0.0)]
    elif name == "autoencoder":
        loss, metrics = "mse", []
    else:
        loss, metrics = keras.losses.SparseCategoricalCrossentropy(from_logits=True), ["accuracy"]
    model.compile(optimizer=keras.optimizers.Adam(lr), loss=loss, metrics=metrics)
    x, y = xy(train)
    n, batch = len(y), cfg.data.batch_size
    rng = np.random.default_rng(cfg.data.seed)
    order, pos, times = rng.permutation(n), 0, []
    for _ in range(steps or cfg.steps):
        if pos + batch > n:
            order, pos = rng.permutation(n), 0
        idx = order[pos:pos + batch]
        pos += batch
        t = time.perf_counter()
        model.train_on_batch([a[idx] for a in x] if isinstance(x, list) else x[idx], y[idx])
        times.append(time.perf_counter() - t)
    tx, ty = xy(test)
    result = model.evaluate(tx, ty, verbose=0, return_dict=True)
    metric = result.get("accuracy", result.get("binary_accuracy", result["loss"]))
    return float(metric), float(statistics.median(times[1:]))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=ZOO)
    parser.add_argument("--steps", type=int, default=None, help="steps for both (default: each spec's own)")
    args = parser.parse_args(argv)
    try:
        import keras
    except ImportError:
        keras = None
    table = Table(title=f"model zoo: specflow vs Keras ({args.steps or 'spec'} steps)")
    for col in ("model", "metric", "specflow", "keras", "specflow ms/step", "keras ms/step"):
        table.add_column(col, justify="left" if col in ("model", "metric") else "right")
    for name in args.models:
        value, per_step, metric = run_specflow(name, args.steps)
        k_value, k_step = run_keras(name, args.steps, keras) if keras is not None else (None, None)
        table.add_row(name, metric, f"{value:.4f}", "n/a" if k_value is None else f"{k_value:.4f}",
                      f"{per_step * 1e3:.1f}", "n/a" if k_step is None else f"{k_step * 1e3:.1f}")
        print(name, metric, value, k_value, per_step, k_step, flush=True)
    Console().print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
