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


def test_a_tf_module_savedmodel_has_its_attributes_and_is_callable():
    """cond_loop was saved from a tf.Module with a __call__: ``m(x)`` and ``m.w`` as in TF (its
    __call__ returns {"y": ...}, and so does the loaded one)."""
    saved = np.load(TF2 / "cond_loop.npz")
    m = sf.load(TF2 / "cond_loop")
    assert m.w is m.trainable_variables[0]
    out = m(x=saved["in_x"], flag=np.array(True))
    assert list(out) == ["y"]
    np.testing.assert_allclose(out["y"].numpy(), saved["out_y_True"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(m(saved["in_x"], np.array(False))["y"].numpy(), saved["out_y_False"],
                               rtol=1e-5, atol=1e-6)
    with pytest.raises(TypeError, match="not callable .*signature: serving_default"):
        sf.load(TF2 / "conv_swish")(np.zeros((1, 8, 8, 3), np.float32))


def test_a_tf_module_savedmodels_methods_return_what_tensorflows_do():
    """methods (scripts/make_tf_fixtures.py) has four methods served by signatures; TF's loaded
    object returns a tensor from m(x) and m.f(x, 3.0), a dict from m.g(x), a tuple from m.h(x)."""
    rec = np.load(TF2 / "methods.npz")
    m = sf.load(TF2 / "methods")
    x = rec["in_x"]
    np.testing.assert_allclose(m(x).numpy(), rec["out_call"], rtol=1e-6)
    np.testing.assert_allclose(m.f(x, 3.0).numpy(), rec["out_f"], rtol=1e-6)
    np.testing.assert_allclose(m.f(scale=np.float32(3.0), x=x).numpy(), rec["out_f"], rtol=1e-6)
    g = m.g(x)
    assert sorted(g) == ["total", "twice"]
    np.testing.assert_allclose(g["total"].numpy(), rec["out_g_total"], rtol=1e-6)
    np.testing.assert_allclose(g["twice"].numpy(), rec["out_g_twice"], rtol=1e-6)
    h = m.h(x)
    assert isinstance(h, tuple) and len(h) == 2
    np.testing.assert_allclose(h[0].numpy(), rec["out_h_0"], rtol=1e-6)
    np.testing.assert_allclose(h[1].numpy(), rec["out_h_1"], rtol=1e-6)
    assert m.signatures["f"](x=x, scale=np.float32(3.0))["output_0"].numpy().shape == (4, 2)  # the signature: a dict
    with pytest.raises(sf.SpecflowError, match=r"method 'f' takes 2 argument\(s\) \(x, scale\), got 3"):
        m.f(x, 3.0, 1.0)
    with pytest.raises(sf.SpecflowError, match="argument 'x' given twice"):
        m.f(x, x=x)


def test_a_keras_exports_serve_method_is_called_as_in_tensorflow(tmp_path):
    # model.export's serve(args_0) is served by a signature whose input is 'keras_tensor': the
    # method maps its arguments through the signature wrapper, not by name
    tf = pytest.importorskip("tensorflow")
    keras = pytest.importorskip("keras")
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), keras.layers.Dense(2)])
    model.export(str(tmp_path / "k"), verbose=False)
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    loaded = tf.saved_model.load(str(tmp_path / "k"))  # kept: its variables go with it
    want = loaded.serve(x).numpy()
    m = sf.load(tmp_path / "k")
    np.testing.assert_allclose(m.serve(x).numpy(), want, rtol=1e-6)
    (key,) = m.signatures["serve"].inputs
    np.testing.assert_allclose(m.serve(**{key: x}).numpy(), want, rtol=1e-6)


def _tf_module(tf, rng):
    class Dense(tf.Module):
        def __init__(self, n_in, n_out, name=None):
            super().__init__(name=name)
            self.kernel = tf.Variable(rng.normal(size=(n_in, n_out)).astype(np.float32), name="kernel")
            self.bias = tf.Variable(rng.normal(size=n_out).astype(np.float32), name="bias")

        def __call__(self, x):
            return tf.matmul(x, self.kernel) + self.bias

    class Model(tf.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b, self.c = Dense(3, 3), Dense(3, 3), Dense(3, 2)
            self.scale = tf.Variable(2, trainable=False, name="scale")

        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
        def __call__(self, x):
            def body(i, h):
                return i + 1, tf.tanh(self.b(h))

            _, h = tf.while_loop(lambda i, h: i < 3, body, (tf.constant(0), self.a(x)))
            return self.c(h) * tf.cast(self.scale, tf.float32)

    return Model()


def test_a_tf_module_loads_with_its_paths_and_fine_tunes_as_in_tensorflow(tmp_path):
    """Three Dense layers whose variables are all named kernel/bias: each attribute path is the
    right variable (TF names their handles in an order of its own), ``m(x)`` is TF's output, and
    fine-tuning through the while loop under a tape follows TensorFlow's loss curve."""
    tf = pytest.importorskip("tensorflow")
    rng = np.random.default_rng(0)
    module = _tf_module(tf, rng)
    tf.saved_model.save(module, str(tmp_path / "m"))
    m = sf.load(tmp_path / "m")
    for name in "abc":
        for attr in ("kernel", "bias"):
            np.testing.assert_array_equal(getattr(getattr(m, name), attr).numpy(),
                                          getattr(getattr(module, name), attr).numpy())
    assert int(m.scale.numpy()) == 2 and not m.scale.trainable
    x = rng.normal(size=(4, 3)).astype(np.float32)
    y = rng.normal(size=(4, 2)).astype(np.float32)
    np.testing.assert_allclose(m(x).numpy(), module(x).numpy(), rtol=1e-5, atol=1e-6)

    loaded = tf.saved_model.load(str(tmp_path / "m"))
    tf_vars = [getattr(getattr(loaded, n), a) for n in "abc" for a in ("kernel", "bias")]
    sf_vars = [getattr(getattr(m, n), a) for n in "abc" for a in ("kernel", "bias")]
    tf_opt, sf_opt = tf.keras.optimizers.Adam(0.05), sf.optimizers.Adam(0.05)
    for _ in range(4):
        with tf.GradientTape() as tape:
            tf_loss = tf.reduce_mean(tf.square(loaded(x) - y))
        tf_opt.apply_gradients(zip(tape.gradient(tf_loss, tf_vars), tf_vars))
        with sf.GradientTape() as tape:
            sf_loss = sf.reduce_mean(sf.square(m(x) - y))
        sf_opt.apply_gradients(zip(tape.gradient(sf_loss, sf_vars), sf_vars))
        np.testing.assert_allclose(float(sf_loss), float(tf_loss), rtol=1e-5)
    for a, b in zip(sf_vars, tf_vars):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


def test_a_transformer_saved_by_specflow_runs_in_tensorflow_and_back(tmp_path):
    """The TF-style transformer encoder (tests/api/tf_style_models.py: einsum attention, a padding
    mask, layer norm, gelu) saved by sf.saved_model.save runs in TensorFlow with the same outputs;
    TensorFlow's own copy of the model, saved by TensorFlow, loads in specflow, is called as
    ``m(x=..., mask=...)`` and takes one Adam step as TensorFlow's does."""
    tf = pytest.importorskip("tensorflow")
    from . import tf_style_models as models

    x = np.random.default_rng(3).normal(size=(4, models.STEPS, models.D_MODEL)).astype(np.float32)
    ours = models.make_encoder(sf)
    sf.saved_model.save(ours, tmp_path / "sf")
    in_tf = tf.saved_model.load(str(tmp_path / "sf")).signatures["serving_default"]
    (out,) = in_tf(x=tf.constant(x), mask=tf.constant(models.MASK)).values()
    np.testing.assert_allclose(out.numpy(), ours(x, models.MASK).numpy(), rtol=1e-5, atol=1e-6)

    theirs = models.make_encoder(tf)
    tf.saved_model.save(theirs, str(tmp_path / "tf"))
    m = sf.load(tmp_path / "tf")
    np.testing.assert_allclose(m(x=x, mask=models.MASK).numpy(), theirs(x, models.MASK).numpy(), rtol=1e-5, atol=1e-6)
    y = np.array([0, 1, 2, 1])
    with tf.GradientTape() as tape:
        tf_loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=theirs(x, models.MASK)))
    tf.keras.optimizers.Adam(0.01).apply_gradients(zip(tape.gradient(tf_loss, theirs.trainable_variables),
                                                       theirs.trainable_variables))
    with sf.GradientTape() as tape:
        sf_loss = sf.reduce_mean(sf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=m(x=x, mask=models.MASK)))
    sf.optimizers.Adam(0.01).apply_gradients(zip(tape.gradient(sf_loss, m.trainable_variables), m.trainable_variables))
    np.testing.assert_allclose(float(sf_loss), float(tf_loss), rtol=1e-5)
    np.testing.assert_allclose(m(x=x, mask=models.MASK).numpy(), theirs(x, models.MASK).numpy(), rtol=1e-5, atol=1e-6)


def test_a_keras_export_has_one_set_of_variables_which_both_paths_read():
    """Keras 3's ``model.export`` tracks each variable twice (``variables``, ``_all_variables``);
    its GraphDef's signature calls read the second copies, its functions bind the first. sf.load
    lists TF's ``loaded.variables`` (4, not 8) as the copies both its signatures and its restored
    functions read: gradients reach every one (TF's numbers), an assignment changes both."""
    keras = Path(__file__).resolve().parents[1] / "io" / "data" / "keras"
    rec = np.load(keras / "mlp_export.npz")
    m = sf.load(keras / "mlp_export")
    x = rec["in_x"]
    assert len(m.variables) == len(rec["names"]) == 4
    weights = np.arange(3, dtype=np.float32)
    for call in (lambda: m.serve(x), lambda: m.signatures["serving_default"](keras_tensor=x)["output_0"]):
        with sf.GradientTape() as tape:
            y = call()
            total = sf.reduce_sum(y * weights)
        np.testing.assert_allclose(y.numpy(), rec["out"], rtol=1e-6)
        grads = tape.gradient(total, m.trainable_variables)
        for k, g in enumerate(grads):
            np.testing.assert_allclose(g.numpy(), rec[f"grad_{k}"], rtol=1e-5, atol=1e-7)
    bias = m.variables[1]  # the hidden layer's (the last one's would shift the softmax's logits alike)
    bias.assign(bias.numpy() + 1.0)
    moved = m.serve(x).numpy()
    assert not np.allclose(moved, rec["out"])
    np.testing.assert_allclose(m.signatures["serving_default"](keras_tensor=x)["output_0"].numpy(), moved, rtol=1e-6)
    m.close()


def test_a_savedmodels_custom_gradients_are_its_own():
    """tf.custom_gradient's saved gradient functions (registered_gradients) replace the ops'
    own gradients, as TF's loader registers them: TF's gradients w.r.t. input and variable,
    through the signature eagerly, in sf.function, and through the restored function."""
    rec = np.load(TF2 / "custom_gradient.npz")
    m = sf.load(TF2 / "custom_gradient")
    x = sf.constant(rec["in_x"])
    weights = sf.constant([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.25]])

    def grads(call, x):
        with sf.GradientTape() as tape:
            tape.watch(x)
            total = sf.reduce_sum(call(x) * weights)
        return tape.gradient(total, [x, m.trainable_variables[0]])

    paths = {"signature": lambda v: m.signatures["serving_default"](x=v)["y"], "method": lambda v: m.f(v)["y"]}
    for name, call in paths.items():
        np.testing.assert_allclose(call(x).numpy(), rec["out_y"], rtol=1e-6, err_msg=name)
        for got in (grads(call, x), sf.function(lambda v, call=call: grads(call, v))(x)):
            np.testing.assert_allclose(got[0].numpy(), rec["grad_x"], rtol=1e-5, err_msg=name)
            np.testing.assert_allclose(got[1].numpy(), rec["grad_w"], rtol=1e-5, err_msg=name)
    m.close()
