"""Keras applications and RNNs saved by the TensorFlow installed beside specflow load, predict
within 1e-4 of TensorFlow, and round-trip through ``specflow import``. Skipped where TensorFlow
is not importable (CI); ``scripts/tf_parity.sh`` runs them in a scratch environment.

Random weights (``weights=None``) and a small input keep each model to seconds. A model needing
an op specflow lacks is skipped with the ops named (they come from other changes)."""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

from specflow.errors import OpError  # noqa: E402
from specflow.export.importer import import_model, verify_import  # noqa: E402
from specflow.export.loader import load_model  # noqa: E402

ATOL = 1e-4
SIZE = 64  # every application accepts 32x32 and up without weights


def _apps():
    A = keras.applications
    return {
        "MobileNetV2": lambda: A.MobileNetV2(weights=None, input_shape=(SIZE, SIZE, 3), classes=10),
        "EfficientNetB0": lambda: A.EfficientNetB0(weights=None, input_shape=(SIZE, SIZE, 3), classes=10),
        "ResNet50": lambda: A.ResNet50(weights=None, input_shape=(SIZE, SIZE, 3), classes=10),
        "DenseNet121": lambda: A.DenseNet121(weights=None, input_shape=(SIZE, SIZE, 3), classes=10),
    }


def _rnns():
    L = keras.layers
    return {
        "LSTM": lambda: keras.Sequential([keras.Input((7, 4)), L.LSTM(8, return_sequences=True), L.LSTM(5)]),
        "GRU": lambda: keras.Sequential([keras.Input((7, 4)), L.GRU(6), L.Dense(3)]),
        "Bidirectional": lambda: keras.Sequential([keras.Input((7, 4)), L.Bidirectional(L.LSTM(4)), L.Dense(2)]),
    }


def _save_and_run(build, tmp_path, shape):
    keras.utils.set_random_seed(0)
    model = build()
    path = str(tmp_path / "model")
    tf.saved_model.save(model, path)
    serving = tf.saved_model.load(path).signatures["serving_default"]
    (arg,) = serving.structured_input_signature[1]
    x = np.random.default_rng(1).standard_normal(shape).astype("float32")
    want = {k: v.numpy() for k, v in serving(**{arg: tf.constant(x)}).items()}
    return path, {arg: x}, want


def _check(path, feeds, want, tmp_path):
    try:
        with load_model(path) as m:
            got = m.run("serving_default", feeds)
    except OpError as e:
        pytest.skip(f"needs ops from other changes: {e.message}")
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=0, atol=ATOL * max(1.0, float(np.abs(want[k]).max())))
    result = import_model(path, tmp_path / "imported.yaml")
    diffs = verify_import(path, result)
    assert diffs and max(diffs.values()) <= ATOL * max(1.0, max(float(np.abs(w).max()) for w in want.values()))


@pytest.mark.parametrize("name", list(_apps()))
def test_keras_application_matches_tensorflow(name, tmp_path):
    path, feeds, want = _save_and_run(_apps()[name], tmp_path, (2, SIZE, SIZE, 3))
    _check(path, feeds, want, tmp_path)


@pytest.mark.parametrize("name", list(_rnns()))
def test_keras_rnn_matches_tensorflow(name, tmp_path):
    path, feeds, want = _save_and_run(_rnns()[name], tmp_path, (3, 7, 4))
    _check(path, feeds, want, tmp_path)
