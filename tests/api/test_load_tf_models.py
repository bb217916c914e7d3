"""sf.load of TensorFlow-made artefacts (the fixtures of tests/io/data/tf2, written by
scripts/make_tf_fixtures.py): outputs against TensorFlow's recorded ones."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import specflow as sf

TF2 = Path(__file__).resolve().parents[1] / "io" / "data" / "tf2"


@pytest.mark.parametrize("file", ["frozen_cnn.pb", "frozen_cnn.pbtxt", "frozen_lstm.pb"])
def test_load_a_frozen_graph_def(file):
    rec = np.load(TF2 / f"{Path(file).stem}.npz")
    m = sf.load(TF2 / file)
    sig = m.signatures["serving_default"]
    feeds = {k[3:].split(":")[0]: rec[k] for k in rec if k.startswith("in_")}
    got = sig(**feeds)
    for k in rec:
        if k.startswith("out_"):
            np.testing.assert_allclose(got[k[4:].split(":")[0]].numpy(), rec[k], rtol=1e-5, atol=1e-6)
    m.close()


def test_a_keras_savedmodel_has_its_own_variables_and_trainable_flags(tmp_path):
    tf = pytest.importorskip("tensorflow")
    keras = pytest.importorskip("keras")
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), keras.layers.BatchNormalization(),
                              keras.layers.Dense(2)])
    tf.saved_model.save(model, str(tmp_path / "keras"))
    m = sf.load(tmp_path / "keras")
    want = {v.path: v.trainable for v in model.variables}  # the Keras model's own, not the saver's copies
    assert {name: v.trainable for name, v in m.named_variables().items()} == want
    assert sum(want.values()) == len(m.trainable_variables) == 6  # moving mean/variance are not trainable
    for v in model.variables:
        np.testing.assert_array_equal(m.named_variables()[v.path].numpy(), v.numpy())

    class Plain(tf.Module):  # unnamed tf.Variables: all 'Variable' in the object graph
        def __init__(self):
            self.a = tf.Variable([1.0, 2.0])
            self.b = tf.Variable([3.0, 4.0], trainable=False)
            self.c = tf.Variable([5.0, 6.0], trainable=False)

        @tf.function(input_signature=[tf.TensorSpec([2], tf.float32)])
        def f(self, x):
            return x * self.a + self.b * self.c

    plain = Plain()
    tf.saved_model.save(plain, str(tmp_path / "plain"), signatures=plain.f)
    m = sf.load(tmp_path / "plain")
    assert len(m.variables) == 3
    np.testing.assert_array_equal(m.signatures["serving_default"](x=np.ones(2, np.float32))["output_0"].numpy(),
                                  [16.0, 26.0])


def test_a_saved_modules_untrainable_variable_stays_untrainable(tmp_path):
    class Counter(sf.Module):
        def __init__(self):
            super().__init__()
            self.w = sf.Variable(np.float32(2.0))
            self.offset = sf.Variable(np.float32(1.0), trainable=False)

        @sf.function(input_signature=[sf.TensorSpec([None], "float32")])
        def __call__(self, x):
            return x * self.w + self.offset

    sf.save(Counter(), tmp_path / "counter")
    m = sf.load(tmp_path / "counter")
    assert {name: v.trainable for name, v in m.named_variables().items()} == {"w": True, "offset": False}


@pytest.mark.parametrize("name", ["lstm", "conv_swish"])
def test_save_a_loaded_keras_savedmodel_again(tmp_path, name):
    rec = np.load(TF2 / f"{name}.npz")
    feeds = {k[3:]: rec[k] for k in rec if k.startswith("in_")}
    m = sf.load(TF2 / name)
    sf.save(m, tmp_path / "again")  # as tf.saved_model.save(tf.saved_model.load(...)) does
    again = sf.load(tmp_path / "again")
    got = again.signatures["serving_default"](**feeds)
    for k in rec:
        if k.startswith("out_"):
            np.testing.assert_allclose(got[k[4:]].numpy(), rec[k], rtol=1e-5, atol=1e-6)
    assert sorted(again.named_variables()) == sorted(m.named_variables())
    # the variables' current values are written, not the ones loaded
    bias = next(n for n in m.named_variables() if n.endswith("bias"))
    m.named_variables()[bias].assign_add(np.ones(m.named_variables()[bias].shape.as_list(), np.float32))
    sf.save(m, tmp_path / "changed")
    changed = sf.load(tmp_path / "changed").named_variables()[bias]
    np.testing.assert_array_equal(changed.numpy(), m.named_variables()[bias].numpy())
    tf = pytest.importorskip("tensorflow")
    out = tf.saved_model.load(str(tmp_path / "again")).signatures["serving_default"](
        **{k: tf.constant(v) for k, v in feeds.items()})
    for k in rec:
        if k.startswith("out_"):
            np.testing.assert_allclose(out[k[4:]].numpy(), rec[k], rtol=1e-5, atol=1e-6)


def test_a_savedmodel_signature_with_several_inputs_takes_keywords_only(tmp_path):
    # Its inputs come back in alias order, not the function's: positional values could land in
    # the wrong input unnoticed where shapes agree (TensorFlow refuses them too).
    class Two(sf.Module):
        @sf.function(input_signature=[sf.TensorSpec([None], "float32"), sf.TensorSpec([None], "float32")])
        def __call__(self, y, x):
            return y - x

    sf.save(Two(), tmp_path / "two")
    sig = sf.load(tmp_path / "two").signatures["serving_default"]
    five, one = np.array([5.0], np.float32), np.array([1.0], np.float32)
    np.testing.assert_array_equal(sig(y=five, x=one)["output_0"].numpy(), [4.0])
    with pytest.raises(sf.SpecflowError, match=r"takes its inputs by keyword \(x, y\)"):
        sig(five, one)
    rec = np.load(TF2 / "gru.npz")  # one input: positional is unambiguous
    (alias,) = [k[3:] for k in rec if k.startswith("in_")]
    out = sf.load(TF2 / "gru").signatures["serving_default"](rec[f"in_{alias}"])
    np.testing.assert_allclose(out["output_0"].numpy(), rec["out_output_0"], rtol=1e-5, atol=1e-6)
