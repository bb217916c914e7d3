"""SavedModels written by TensorFlow itself (``tf.saved_model.save`` of small Keras models, made by
tests/io/data/keras/make_fixtures.py) load into specflow's runtime and compute TensorFlow's own
outputs, saved next to each model; an op specflow lacks is one clear error naming it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from specflow.cli import app
from specflow.errors import CheckpointError, OpError
from specflow.export.loader import load_saved_model
from specflow.io.tensor_bundle import read_bundle
from specflow.io.tf_object_graph import OBJECT_GRAPH_KEY, object_graph_variables

KERAS = Path(__file__).resolve().parents[1] / "io" / "data" / "keras"
SUPPORTED = ["mlp", "cnn", "cnn_extras", "gelu"]  # Dense/Conv2D/pooling/Flatten/BatchNorm/Dropout/activations


def expected(name: str) -> tuple[np.ndarray, np.ndarray]:
    saved = np.load(KERAS / f"{name}.npz")
    return saved["in_inputs"], saved["out_output_0"]


@pytest.mark.parametrize("name", SUPPORTED)
def test_keras_model_computes_tensorflows_outputs(name):
    x, want = expected(name)
    with load_saved_model(KERAS / name) as model:
        assert list(model.signatures) == ["serving_default"]  # the init-op signature is not one
        sig = model.signatures["serving_default"]
        assert list(sig.inputs) == ["inputs"] and list(sig.outputs) == ["output_0"]
        assert sig.inputs["inputs"][1].shape.dims == (None, *x.shape[1:])
        ops = {n.op for n in model.graph_def}
        assert not ops & {"StatefulPartitionedCall", "PartitionedCall"}  # every call inlined
        got = model.run("serving_default", {"inputs": x})["output_0"]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)


def test_variables_come_from_the_object_graph():
    """The serving function reads the variables it captured, which only the object graph ties
    to checkpoint keys (the saver_def's restore assigns copies of them)."""
    with load_saved_model(KERAS / "mlp") as model:
        tensors = read_bundle(str(KERAS / "mlp" / "variables" / "variables"))
        values = object_graph_variables(model.meta_graph, tensors)
        assert sorted(values) == ["sequential/dense/bias", "sequential/dense/kernel",
                                  "sequential/dense_1/bias", "sequential/dense_1/kernel"]
        np.testing.assert_array_equal(values["sequential/dense/kernel"],
                                      tensors["_layers/1/_kernel/.ATTRIBUTES/VARIABLE_VALUE"])
        kernel = model.session.run("sequential/dense/kernel/Read/ReadVariableOp:0")
        np.testing.assert_array_equal(kernel, values["sequential/dense/kernel"])
        del tensors[OBJECT_GRAPH_KEY]
        with pytest.raises(CheckpointError, match=OBJECT_GRAPH_KEY):
            object_graph_variables(model.meta_graph, tensors)


@pytest.fixture
def without_erfc(monkeypatch):
    """The op registry without Erfc: gelu's graph then uses an op specflow lacks."""
    from specflow.ops import registry

    monkeypatch.delitem(registry._OPS, "Erfc")


def test_unsupported_op_is_named_with_its_node_and_function(without_erfc):
    x, _ = expected("gelu")
    with load_saved_model(KERAS / "gelu") as model:  # loading and restoring do not need Erfc
        with pytest.raises(OpError) as info:
            model.run("serving_default", {"inputs": x})
    message = str(info.value)
    assert "uses op 'Erfc'" in message and "does not support" in message
    assert "/Gelu/Erfc' in function '__inference_serving_default_" in message


runner = CliRunner()


def test_predict_cli_on_keras_models(tmp_path):
    x, want = expected("cnn")
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "out.npz"
    r = runner.invoke(app, ["predict", str(KERAS / "cnn"), "--input", f"inputs={tmp_path / 'x.npy'}", "--out", str(out)])
    assert r.exit_code == 0, r.output
    np.testing.assert_allclose(np.load(out)["output_0"], want, rtol=0, atol=1e-5)



def test_predict_cli_names_an_unsupported_op(tmp_path, without_erfc):
    np.save(tmp_path / "g.npy", expected("gelu")[0])
    r = runner.invoke(app, ["predict", str(KERAS / "gelu"), "--input", f"inputs={tmp_path / 'g.npy'}"])
    assert r.exit_code == 1
    assert "op 'Erfc'" in r.output and "Traceback" not in r.output
