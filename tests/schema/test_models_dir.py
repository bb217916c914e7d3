"""Every example spec in models/ loads, lowers, verifies, and initializes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from specflow.graph.shapes import Shape
from specflow.schema.loader import load_spec
from tests.schema.test_initializers import evaluate

MODELS = sorted((Path(__file__).resolve().parents[2] / "models").glob("*.yaml"))


def test_models_exist():
    names = {p.stem for p in MODELS}
    assert {"digits_mlp", "linear_regression", "mnist_cnn", "residual_mlp"} <= names


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.stem)
def test_model_lowers_and_verifies(path):
    spec = load_spec(path)
    g = spec.graph_def
    assert g.node(spec.lowered.init_op).op == "NoOp"
    assert sorted(g.node(spec.lowered.init_op).control_inputs) == sorted(v.assign for v in spec.variables)
    assert all(n.location is not None for n in g), [n.name for n in g if n.location is None]
    for sig in spec.signatures.values():
        for tensor, tspec in list(sig["inputs"].values()) + list(sig["outputs"].values()):
            assert spec.tensor_spec(tensor) == tspec
    # Every initial value is computable and has the variable's shape and dtype.
    for v in spec.variables:
        value = evaluate(g, g.node(v.assign).inputs[1])
        assert value.shape == tuple(v.shape.dims) and value.dtype == v.dtype.numpy


def test_digits_mlp_shapes():
    spec = load_spec(MODELS[[p.stem for p in MODELS].index("digits_mlp")])
    assert spec.tensor_spec("probs").shape == Shape([None, 10])
    assert spec.tensor_spec("loss").shape == Shape([])
    assert spec.tensor_spec("accuracy").dtype.name == "float32"
    assert [v.name for v in spec.variables] == ["hidden/kernel", "hidden/bias", "logits/kernel", "logits/bias"]
    assert spec.train.loss == "loss"


def test_mnist_cnn_structure():
    spec = load_spec(MODELS[[p.stem for p in MODELS].index("mnist_cnn")])
    g = spec.graph_def
    assert g.node("conv1/Conv2D").attrs["padding"] == "SAME"
    assert spec.tensor_spec("pool1").shape == Shape([None, 4, 4, 16])
    assert spec.tensor_spec("flat").shape == Shape([None, 512])
    assert len(spec.lowered.collections["update_ops"]) == 2
    assert spec.lowered.training_flag == "training"
    assert g.node("training").op == "PlaceholderWithDefault"
    kernel = next(v for v in spec.variables if v.name == "conv1/kernel")
    value = evaluate(g, g.node(kernel.assign).inputs[1])
    limit = np.sqrt(6 / (9 * 1 + 9 * 16))  # glorot_uniform with receptive field 3x3
    assert np.abs(value).max() <= limit


@pytest.mark.parametrize("path", [p for p in MODELS if p.stem != "two_tower"], ids=lambda p: p.stem)  # (needs cpu:2)
def test_an_empty_batch_predicts_an_empty_result(path):
    """A zero-row batch through every example's serving signature (convolutions, fused
    conv + pool, RNN loops, attention): empty outputs of the right trailing shape, as TF's."""
    from specflow.runtime.session import Session

    spec = load_spec(path)
    sig = spec.signatures.get("serving_default") or next(iter(spec.signatures.values()))
    feeds = {}
    for tensor, _ in sig["inputs"].values():
        node = spec.graph_def.node(tensor.split(":")[0])
        feeds[tensor] = np.zeros([0 if d is None else d for d in node.attrs["shape"].dims], node.attrs["dtype"].numpy)
    fetches = [t for t, _ in sig["outputs"].values()]
    with Session(spec.graph_def) as session:
        session.run([], targets=[spec.lowered.init_op])
        outs = session.run(fetches, feeds)
    assert all(np.shape(o)[0] == 0 for o in outs)
