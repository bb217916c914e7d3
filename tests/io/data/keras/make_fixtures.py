"""Writes the Keras SavedModel fixtures next to this file. Run by hand with a scratch TensorFlow
(never from specflow or its tests)::

    /tmp/tfvenv/bin/python tests/io/data/keras/make_fixtures.py

Each fixture is ``<name>/`` (``tf.saved_model.save`` of a tiny Keras model: saved_model.pb and
variables/) plus ``<name>.npz`` holding the signature's inputs (``in_<arg>``) and TensorFlow's
outputs (``out_<key>``) from ``tf.saved_model.load(...).signatures["serving_default"]``.
"""

import os
import shutil
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

HERE = Path(__file__).resolve().parent
L = keras.layers


def mlp():  # Dense relu -> Dense softmax
    return keras.Sequential([keras.Input((8,)), L.Dense(6, activation="relu"), L.Dense(3, activation="softmax")])


def cnn():  # Conv2D relu -> MaxPooling2D -> Flatten -> Dense
    return keras.Sequential([
        keras.Input((8, 8, 2)),
        L.Conv2D(4, 3, activation="relu"),
        L.MaxPooling2D(2),
        L.Flatten(),
        L.Dense(5),
    ])


def cnn_extras():  # "same" padding, batch norm (inference), avg pooling, dropout, more activations
    return keras.Sequential([
        keras.Input((6, 6, 3)),
        L.Conv2D(4, 3, padding="same", strides=1, activation="tanh"),
        L.BatchNormalization(),
        L.AveragePooling2D(2),
        L.Flatten(),
        L.Dropout(0.5),
        L.Dense(4, activation="sigmoid"),
        L.Dense(2),
    ])


def gelu():  # exact GELU lowers to Erfc (the tests also hide Erfc to check the unsupported-op error)
    return keras.Sequential([keras.Input((4,)), L.Dense(3, activation=keras.activations.gelu), L.Dense(2)])


FIXTURES = {"mlp": (mlp, (5, 8)), "cnn": (cnn, (3, 8, 8, 2)), "cnn_extras": (cnn_extras, (2, 6, 6, 3)),
            "gelu": (gelu, (3, 4))}


def make(name: str, build, input_shape) -> None:
    keras.utils.set_random_seed(0)
    model = build()
    for layer in model.layers:  # non-trivial batch-norm statistics, so inference mode matters
        if isinstance(layer, L.BatchNormalization):
            n = layer.moving_mean.shape[0]
            layer.moving_mean.assign(np.linspace(-0.5, 0.5, n).astype("float32"))
            layer.moving_variance.assign(np.linspace(0.5, 2.0, n).astype("float32"))
            layer.gamma.assign(np.linspace(0.8, 1.2, n).astype("float32"))
            layer.beta.assign(np.linspace(-0.1, 0.1, n).astype("float32"))
    out_dir = HERE / name
    shutil.rmtree(out_dir, ignore_errors=True)
    tf.saved_model.save(model, str(out_dir))
    for extra in ("fingerprint.pb", "assets"):  # not part of what a loader reads
        path = out_dir / extra
        shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)

    serving = tf.saved_model.load(str(out_dir)).signatures["serving_default"]
    (arg,) = serving.structured_input_signature[1]
    x = np.random.default_rng(1).standard_normal(input_shape).astype("float32")
    outputs = serving(**{arg: tf.constant(x)})
    np.savez(HERE / f"{name}.npz", **{f"in_{arg}": x}, **{f"out_{k}": v.numpy() for k, v in outputs.items()})
    size = sum(p.stat().st_size for p in out_dir.rglob("*") if p.is_file())
    print(f"{name}: {size} bytes, input {arg} {x.shape}, outputs {sorted(outputs)}")


def exported() -> None:
    """``mlp_export/``: Keras 3's ``model.export`` of the mlp (its object graph tracks each
    variable twice, as ``variables`` and ``_all_variables``; its signatures' GraphDef calls read
    the second copies, its functions bind the first), with TF's ``loaded.variables`` names, its
    outputs and the gradients of their sum w.r.t. ``loaded.trainable_variables``."""
    keras.utils.set_random_seed(0)
    model = mlp()
    out_dir = HERE / "mlp_export"
    shutil.rmtree(out_dir, ignore_errors=True)
    model.export(str(out_dir), verbose=False)
    for extra in ("fingerprint.pb", "assets"):
        path = out_dir / extra
        shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)
    loaded = tf.saved_model.load(str(out_dir))
    x = np.random.default_rng(1).standard_normal((5, 8)).astype("float32")
    with tf.GradientTape() as tape:
        y = loaded.serve(tf.constant(x))
        total = tf.reduce_sum(y * np.arange(3, dtype="float32"))
    grads = tape.gradient(total, loaded.trainable_variables)
    np.savez(HERE / "mlp_export.npz", in_x=x, out=y.numpy(), names=np.array([v.name for v in loaded.variables]),
             **{f"grad_{k}": g.numpy() for k, g in enumerate(grads)})
    print(f"mlp_export: {len(loaded.variables)} variables")


if __name__ == "__main__":
    for name, (build, shape) in FIXTURES.items():
        make(name, build, shape)
    exported()
