"""Layers expanded directly on a GraphBuilder: op structure, output shapes, config checks."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

import specflow.ops  # noqa: F401  (registers the ops)
from specflow.errors import SpecError
from specflow.graph.builder import GraphBuilder
from specflow.graph.shapes import Shape
from specflow.schema.layers import LAYERS, LayerContext, expand_layer
from tests.schema.test_initializers import evaluate


def builder_with(shape, dtype="float32", name="x") -> GraphBuilder:
    b = GraphBuilder()
    b.add_op("Placeholder", [], {"dtype": dtype, "shape": Shape(shape)}, name=name)
    return b


def expand(kind, shape, dtype="float32", name="layer", **config):
    b = builder_with(shape, dtype)
    out = expand_layer(b, name, ["x"], LAYERS[kind].model_validate(config), LayerContext(name=name))
    return b, out


def ops(b, prefix):
    return [(n.name, n.op, [i for i in n.inputs]) for n in b.graph_def if n.name.startswith(prefix)]


def test_dense_golden_structure():
    b, out = expand("dense", [None, 64], name="hidden", units=128, activation="relu")
    assert out == "hidden"
    compute = [(n, o, i) for n, o, i in ops(b, "hidden") if "/kernel" not in n and "/bias" not in n]
    assert compute == [
        ("hidden/MatMul", "MatMul", ["x", "hidden/kernel/Read/ReadVariableOp"]),
        ("hidden/BiasAdd", "BiasAdd", ["hidden/MatMul", "hidden/bias/Read/ReadVariableOp"]),
        ("hidden", "Relu", ["hidden/BiasAdd"]),
    ]
    assert b.spec("hidden").shape == Shape([None, 128])
    names = [v.name for v in b.collections["trainable_variables"]]
    assert names == ["hidden/kernel", "hidden/bias"]
    assert b.collections["variables"][0].shape == Shape([64, 128])


def test_dense_final_op_is_named_as_the_layer():
    b, out = expand("dense", [None, 8], units=4)  # linear: BiasAdd is last
    assert b.graph_def.node("layer").op == "BiasAdd"
    b, out = expand("dense", [None, 8], units=4, use_bias=False)
    assert b.graph_def.node("layer").op == "MatMul"
    assert "bias" not in str([v.name for v in b.collections["variables"]])


def test_dense_rank3_reshapes():
    b, out = expand("dense", [None, 5, 8], units=4, activation="tanh")
    assert b.spec(out).shape == Shape([None, 5, 4])
    assert [n.op for n in b.graph_def if n.name.startswith("layer/Reshape")].count("Reshape") == 2


@pytest.mark.parametrize(
    "kind, shape, config, out_shape",
    [
        ("dense", [None, 64], {"units": 10, "activation": "softmax"}, [None, 10]),
        ("conv2d", [None, 8, 8, 1], {"filters": 16, "kernel_size": 3, "padding": "same"}, [None, 8, 8, 16]),
        ("conv2d", [None, 8, 8, 3], {"filters": 4, "kernel_size": [3, 2]}, [None, 6, 7, 4]),
        ("conv2d", [2, 8, 8, 3], {"filters": 4, "kernel_size": 3, "strides": 2, "padding": "same"}, [2, 4, 4, 4]),
        ("max_pool2d", [None, 8, 8, 16], {}, [None, 4, 4, 16]),
        ("avg_pool2d", [None, 9, 9, 2], {"pool_size": 3, "strides": 1}, [None, 7, 7, 2]),
        ("flatten", [None, 4, 4, 8], {}, [None, 128]),
        ("dropout", [None, 32], {"rate": 0.5}, [None, 32]),
        ("batch_norm", [None, 4, 4, 8], {}, [None, 4, 4, 8]),
        ("batch_norm", [None, 3, 5], {"axis": 1, "center": False, "scale": False}, [None, 3, 5]),
        ("activation", [None, 7], {"activation": "elu"}, [None, 7]),
    ],
)
def test_output_shapes(kind, shape, config, out_shape):
    b, out = expand(kind, shape, **config)
    assert out == "layer"
    assert b.spec(out).shape == Shape(out_shape)
    assert b.spec(out).dtype.name == "float32"


def test_embedding():
    b, out = expand("embedding", [None, 6], "int64", input_dim=100, output_dim=8)
    node = b.graph_def.node(out)
    assert node.op == "ResourceGather" and node.inputs == ["layer/embeddings", "x"]
    assert b.spec(out).shape == Shape([None, 6, 8])
    init = b.collections["variables"][0].initializer
    assert init.kind == "random_uniform" and init.params["maxval"] == 0.05


def test_dropout_structure_and_training_flag():
    b, out = expand("dropout", [None, 32], rate=0.25, seed=3)
    node = b.graph_def.node(out)
    assert node.op == "SelectV2" and node.inputs[0] == "training" and node.inputs[2] == "x"
    flag = b.graph_def.node("training")
    assert flag.op == "PlaceholderWithDefault" and b.collections["training_flag"] == ["training"]
    rnd = next(n for n in b.graph_def if n.op == "RandomUniform")
    assert rnd.attrs["seed2"] == 3
    # Inference (the default): identity. Training: kept values scaled by 1/keep.
    x = np.ones((50, 32), np.float32)
    feeds = {"x": x}
    assert np.array_equal(_run(b, out, feeds), x)
    y = _run(b, out, {**feeds, "training": np.array(True)})
    assert set(np.unique(y)) <= {0.0, np.float32(1 / 0.75)}
    assert 0.15 < (y == 0).mean() < 0.35


def _run(b, tensor, feeds):
    """Evaluate with placeholders replaced by Consts."""
    g = b.graph_def.copy()
    for node in g.nodes:
        if node.name in feeds:
            v = np.asarray(feeds[node.name])
            node.op, node.inputs = "Const", []
            node.attrs = {"value": v, "dtype": node.attrs["dtype"]}
    return evaluate(g, tensor)


def test_batch_norm_modes_and_updates():
    b, out = expand("batch_norm", [None, 3], momentum=0.9, epsilon=1e-5, name="bn")
    upd = b.collections["update_ops"]
    assert [b.graph_def.node(u).op for u in upd] == ["AssignSubVariableOp"] * 2
    assert [v.name for v in b.collections["trainable_variables"]] == ["bn/gamma", "bn/beta"]
    assert {v.name for v in b.collections["variables"]} >= {"bn/moving_mean", "bn/moving_variance"}
    x = np.random.default_rng(0).normal(3, 2, size=(64, 3)).astype(np.float32)
    # Training: batch statistics normalize to mean 0, std 1 (gamma=1, beta=0 from their initializers).
    g = _with_initial_values(b)
    y = _run_graph(g, out, {"x": x, "training": np.array(True)})
    np.testing.assert_allclose(y.mean(0), 0, atol=1e-4)
    np.testing.assert_allclose(y.std(0), 1, atol=1e-3)
    # Inference: moving statistics (0 and 1 initially) leave x (almost) unchanged.
    y = _run_graph(g, out, {"x": x})
    np.testing.assert_allclose(y, x / np.sqrt(1 + 1e-5), rtol=1e-5)


def _with_initial_values(b):
    """Replace each ReadVariableOp by its initializer value (no resource manager needed)."""
    g = b.graph_def.copy()
    for v in b.collections["variables"]:
        value = evaluate(b.graph_def, b.graph_def.node(v.assign).inputs[1])
        node = g.node(v.read)
        node.op, node.inputs, node.attrs = "Const", [], {"value": value, "dtype": v.dtype}
    return g


def _run_graph(g, tensor, feeds):
    g = g.copy()
    for node in g.nodes:
        if node.name in feeds:
            node.op, node.inputs = "Const", []
            node.attrs = {"value": np.asarray(feeds[node.name]), "dtype": node.attrs["dtype"]}
    return evaluate(g, tensor)


def test_dense_numerics():
    b, out = expand("dense", [None, 3], units=2, activation="relu", kernel_initializer={"constant": 0.5},
                    bias_initializer={"constant": -1.0})
    y = _run_graph(_with_initial_values(b), out, {"x": np.array([[1, 2, 3], [0, 0, 1]], np.float32)})
    np.testing.assert_allclose(y, [[2, 2], [0, 0]])


@pytest.mark.parametrize(
    "kind, config, message",
    [
        ("dense", {"units": 0}, "greater than or equal to 1"),
        ("dense", {"units": 3, "activation": "relux"}, "relu"),
        ("dense", {"units": 3, "unit": 2}, "Extra inputs are not permitted"),
        ("dropout", {"rate": 1.0}, "less than 1"),
        ("conv2d", {"filters": 2, "kernel_size": [3, 3, 3]}, "kernel_size must be an int or a list of 2 ints"),
        ("conv2d", {"filters": 2}, "Field required"),
        ("dense", {"units": 3, "kernel_initializer": "glorot_unifrom"}, "did you mean 'glorot_uniform'"),
    ],
)
def test_config_validation(kind, config, message):
    with pytest.raises(ValidationError) as e:
        LAYERS[kind].model_validate(config)
    assert message in str(e.value)


def test_layer_input_errors():
    with pytest.raises(SpecError, match="dense needs an input of rank >= 2"):
        expand("dense", [None], units=2)
    with pytest.raises(SpecError, match="conv2d needs a 4-D NHWC input"):
        expand("conv2d", [None, 8, 8], filters=2, kernel_size=3)
    with pytest.raises(SpecError, match="flatten needs the input's dimensions after the first known"):
        expand("flatten", [None, None, 4])


@pytest.mark.parametrize(
    "kind, shape, config, message",
    [
        ("conv2d", [None, 8, 8, 1], {"filters": 2, "kernel_size": 9}, "conv2d's output [?, 0, 0, 2] has a dimension of 0"),
        ("conv1d", [None, 12, 3], {"filters": 2, "kernel_size": 13}, "conv1d's output [?, 0, 2] has a dimension of 0"),
        ("max_pool2d", [None, 1, 8, 3], {"pool_size": 2}, "max_pool2d's output [?, 0, 4, 3] has a dimension of 0"),
        ("depthwise_conv2d", [None, 4, 4, 3], {"kernel_size": 5}, "output [?, 0, 0, 3] has a dimension of 0"),
    ],
)
def test_a_window_larger_than_the_input_is_refused(kind, shape, config, message):
    """A valid-padded window one wider than the input (Keras: "One of the dimensions in the
    output is <= 0") gave an empty output silently: a conv1d of kernel 13 on 12 steps validated,
    its model trained on nothing."""
    with pytest.raises(SpecError, match=message.replace("[", r"\[").replace("?", r"\?")):
        expand(kind, shape, **config)
    expand(kind, shape, **{**config, "padding": "same"})  # same padding fits any window
