"""Our SavedModels in TensorFlow 2 as TF2 objects (``tf.saved_model.load``): an sf.Module's methods,
``__call__``, signatures, variables and checkpoint; a spec export's signatures as methods and its
variables as attributes; all with sf's numbers. Skipped where TensorFlow is not importable (the
same files are checked without TF in test_object_graph.py)."""

from __future__ import annotations

import numpy as np
import pytest

import specflow as sf
from specflow.export.exporter import export_model
from specflow.export.loader import load_saved_model
from tests.export.test_object_graph import TF_CALL, TF_F3, Looping, X, Y, saved_net

tf = pytest.importorskip("tensorflow")


def test_saved_module_is_a_tf2_object(tmp_path):
    net = saved_net(tmp_path / "net")
    m = tf.saved_model.load(str(tmp_path / "net"))
    np.testing.assert_allclose(m(X).numpy(), net(X).numpy(), rtol=1e-6)
    np.testing.assert_allclose(m(X).numpy(), TF_CALL, atol=1e-6)
    for scale in (2.0, 3.0):
        got = m.f(X, scale) if scale != 2.0 else m.f(X)
        np.testing.assert_allclose(got["a"].numpy(), net.f(X, scale)["a"].numpy(), rtol=1e-6)
    np.testing.assert_allclose(m.f(X, 3.0)["a"].numpy(), TF_F3, rtol=1e-6)
    np.testing.assert_allclose(m.signatures["scaled"](x=tf.constant(X))["a"].numpy(), net.f(X)["a"].numpy(),
                               rtol=1e-6)
    np.testing.assert_allclose(m.signatures["serving_default"](tf.constant(X))["output_0"].numpy(),
                               net(X).numpy(), rtol=1e-6)
    assert [v.name for v in m.trainable_variables] == [f"{p}:0" for p, v in net.named_variables().items()
                                                       if v.trainable]
    np.testing.assert_array_equal(m.layers[1].kernel.numpy(), net.layers[1].kernel.numpy())
    assert int(m.step.numpy()) == 1
    # a training step in TF updates TF's variables as sf's step updates sf's
    np.testing.assert_allclose(m.train(X, Y).numpy(), net.train(X, Y).numpy(), rtol=1e-6)
    np.testing.assert_allclose(m.l1.kernel.numpy(), net.l1.kernel.numpy(), rtol=1e-6)
    assert int(m.step.numpy()) == 2
    # the variables bundle is a TF2 checkpoint of the object
    m.l1.kernel.assign(tf.zeros([3, 4]))
    tf.train.Checkpoint(m).read(str(tmp_path / "net" / "variables" / "variables")).assert_existing_objects_matched()
    np.testing.assert_array_equal(m.l1.kernel.numpy(), sf.load(tmp_path / "net").l1.kernel.numpy())


def test_spec_export_is_a_tf2_object(trained, tmp_path):
    spec, logdir = trained("digits_mlp")
    export_model(spec, logdir, tmp_path / "m")
    ours = load_saved_model(tmp_path / "m")
    m = tf.saved_model.load(str(tmp_path / "m"))
    x = np.random.default_rng(0).uniform(0, 1, (3, 64)).astype(np.float32)
    want = ours.run("serving_default", {"images": x})["probabilities"]
    np.testing.assert_allclose(m.serving_default(images=tf.constant(x))["probabilities"].numpy(), want, rtol=1e-5)
    np.testing.assert_allclose(m.serving_default(x)["probabilities"].numpy(), want, rtol=1e-5)
    assert sorted(v.name for v in m.trainable_variables) == \
        ["hidden/bias:0", "hidden/kernel:0", "logits/bias:0", "logits/kernel:0"]
    np.testing.assert_array_equal(m.hidden.kernel.numpy(), sf.load(tmp_path / "m").hidden.kernel.numpy())


def test_a_loop_reading_a_variable_runs_in_tensorflow(tmp_path):
    """A function whose while loop reads a variable: its control outputs are the loop's Exits,
    not nodes in the loop's frame, which TF refuses."""
    sf.save(Looping(), tmp_path / "m")
    m = tf.saved_model.load(str(tmp_path / "m"))
    np.testing.assert_allclose(m(tf.constant([1.0, 2.0])).numpy(), [0.125, 0.25])
    np.testing.assert_allclose(m.signatures["serving_default"](x=tf.constant([1.0, 2.0]))["output_0"].numpy(),
                               [0.125, 0.25])


def test_a_keras_lstm_imported_then_exported_runs_in_tensorflow(tmp_path):
    from typer.testing import CliRunner

    from specflow.cli import app
    from specflow.export.importer import import_model
    from tests.export.test_import import TF2, recorded

    import_model(TF2 / "lstm", tmp_path / "lstm.yaml")
    r = CliRunner().invoke(app, ["export", str(tmp_path / "lstm.yaml"), "--logdir", str(tmp_path / "lstm_checkpoint"),
                                 "--out", str(tmp_path / "export")])
    assert r.exit_code == 0, r.output
    inputs, want = recorded(TF2 / "lstm.npz")
    serve = tf.saved_model.load(str(tmp_path / "export")).signatures["serving_default"]
    (arg,) = serve.structured_input_signature[1]
    got = serve(**{arg: tf.constant(inputs["inputs"])})
    np.testing.assert_allclose(got["output_0"].numpy(), want["output_0"], rtol=0, atol=1e-4)
