"""ONNX export of every model in models/: onnxruntime must give specflow's outputs within 1e-5.

Two ways in: a ServingModel assembled from the spec with perturbed initial variable values (every
model, also those without a train: section), and the real path (train a few steps, checkpoint,
``serving_model``). The reference is specflow's Session on the same serving graph.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

from specflow.errors import ExportError
from specflow.export import serving
from specflow.export.onnx_export import MODEL_FILE, OPSET, export_onnx, run_onnx, to_onnx
from specflow.graph.dtypes import as_dtype
from specflow.graph.graph_def import NodeDef
from specflow.runtime.session import Session, SessionConfig
from specflow.schema.loader import load_spec, load_spec_text
from specflow.train.loop import Trainer, TrainOptions

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

MODELS = Path(__file__).resolve().parents[2] / "models"
SIGNED = sorted(p.name for p in MODELS.glob("*.yaml") if load_spec(p).signatures)
TRAINABLE = [m for m in SIGNED if load_spec(MODELS / m).train is not None]
BATCHES = (1, 7)  # two batch sizes through the same ONNX file: the batch dim is symbolic


def perturbed_model(spec, seed=0) -> serving.ServingModel:
    """The spec's serving form with its initial variable values plus noise (nonzero biases, batch
    norm statistics away from 0 and 1), built without a checkpoint."""
    sigs = serving.select_signatures(spec, None)
    with Session(spec.graph_def, SessionConfig(graph_seed=spec.model.seed, devices="cpu:2")) as sess:
        sess.run([], targets=["init"])
        values = sess.run({v.name: v.read for v in spec.variables})
    rng = np.random.default_rng(seed)
    values = {k: (v + rng.normal(0, 0.1, v.shape)).astype(v.dtype) for k, v in values.items()}
    graph = serving.fold_training_flag(spec.graph_def, spec.lowered.training_flag, spec.tensor_spec)
    tensors = [t for sig in sigs.values() for io in (sig.inputs, sig.outputs) for t, _ in io.values()]
    return serving.ServingModel(serving.closure(graph, tensors), sigs, values, "")


def specflow_outputs(model, signature, feeds) -> dict[str, np.ndarray]:
    """The signature's outputs from specflow's runtime (variable reads replaced by their values)."""
    graph = model.graph_def.copy()
    handles = graph.node_map()
    extra = []
    for i, node in enumerate(graph.nodes):
        if node.op == "ReadVariableOp":
            value = model.variables[handles[node.inputs[0]].attrs["shared_name"]]
            graph.nodes[i] = NodeDef(node.name, "Const", [], "", {"value": value, "dtype": as_dtype(value.dtype)})
        elif node.op == "ResourceGather":  # an embedding lookup reads its table through the handle
            value = model.variables[handles[node.inputs[0]].attrs["shared_name"]]
            table, axis = f"{node.name}/table_value", f"{node.name}/gather_axis"
            extra += [NodeDef(table, "Const", [], "", {"value": value, "dtype": as_dtype(value.dtype)}),
                      NodeDef(axis, "Const", [], "", {"value": np.array(0, np.int32), "dtype": as_dtype("int32")})]
            graph.nodes[i] = NodeDef(node.name, "GatherV2", [table, node.inputs[1], axis], "", {})
    graph.nodes.extend(extra)
    sig = model.signatures[signature]
    with Session(graph, SessionConfig(devices="cpu:2")) as sess:
        return sess.run({a: t for a, (t, _) in sig.outputs.items()}, {sig.inputs[a][0]: v for a, v in feeds.items()})


def sample_feeds(sig, batch, seed=0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {a: rng.uniform(0, 1, [batch if d is None else d for d in s.shape.as_list()]).astype(s.dtype.numpy)
            for a, (_, s) in sig.inputs.items()}


def max_diff(model, path, signature="serving_default") -> float:
    """Largest |onnx - specflow| over both batch sizes; fails beyond 1e-5 (relative for large values)."""
    worst = 0.0
    for batch in BATCHES:
        feeds = sample_feeds(model.signatures[signature], batch, seed=batch)
        got, want = run_onnx(path, feeds), specflow_outputs(model, signature, feeds)
        for alias, w in want.items():
            assert got[alias].shape == w.shape and got[alias].dtype == w.dtype
            diff = float(np.abs(got[alias] - w).max())
            assert diff <= 1e-5 * max(1.0, float(np.abs(w).max())), (alias, batch, diff)
            worst = max(worst, diff)
    return worst


@pytest.mark.parametrize("name", SIGNED)
def test_export_of_each_model_matches_specflow(name, tmp_path):
    model = perturbed_model(load_spec(MODELS / name))
    path = tmp_path / MODEL_FILE
    export_onnx(model, path, "serving_default")
    max_diff(model, path)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """name -> (spec, logdir) of the model trained 3 steps (on first use: xdist workers share out
    the models)."""
    runs = {}

    def get(name):
        if name not in runs:
            spec = load_spec(MODELS / name)
            logdir = tmp_path_factory.mktemp(name.removesuffix(".yaml"))
            Trainer(spec, TrainOptions(logdir=logdir, steps=3)).run()
            runs[name] = spec, logdir
        return runs[name]

    return get


@pytest.mark.parametrize("name", TRAINABLE)
def test_export_from_a_checkpoint_matches_specflow(name, trained, tmp_path):
    spec, logdir = trained(name)
    model = serving.serving_model(spec, logdir)
    path = tmp_path / "out" / MODEL_FILE
    export_onnx(model, path, "serving_default")
    max_diff(model, path)
    proto = onnx.load(str(path))
    # Variables are initializers holding the checkpoint's values.
    inits = {i.name: onnx.numpy_helper.to_array(i) for i in proto.graph.initializer}
    for var, value in model.variables.items():
        np.testing.assert_array_equal(inits[var], value)


def test_graph_interface_uses_signature_aliases_and_a_symbolic_batch(tmp_path):
    model = perturbed_model(load_spec(MODELS / "mnist_cnn.yaml"))
    export_onnx(model, tmp_path / MODEL_FILE, "serving_default")
    proto = onnx.load(str(tmp_path / MODEL_FILE))
    assert [(o.domain, o.version) for o in proto.opset_import] == [("", OPSET)]

    def interface(values):
        return [(v.name, v.type.tensor_type.elem_type,
                 [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]) for v in values]

    assert interface(proto.graph.input) == [("images", onnx.TensorProto.FLOAT, ["batch", 64])]
    assert interface(proto.graph.output) == [("probabilities", onnx.TensorProto.FLOAT, ["batch", 10])]
    # Inference mode: no random dropout mask, no batch statistics, no training-only nodes.
    ops = {n.op_type for n in proto.graph.node}
    assert not ops & {"RandomUniform", "RandomUniformLike", "ReduceMean", "Where"}
    assert {"Conv", "MaxPool", "Softmax"} <= ops
    assert os.listdir(tmp_path) == [MODEL_FILE]  # no temporary file left behind


SPEC = """\
specflow: 1
name: m
inputs:
  x: {dtype: float32, shape: [null, 4]}
nodes:
  h: {op: Relu, inputs: [x]}
  y: {op: Cumprod, inputs: [h], axis: 1}
signatures:
  serving_default: {inputs: {x: x}, outputs: {y: y}}
  hidden: {inputs: {x: x}, outputs: {h: h}}
"""


def test_op_without_mapping_names_node_op_and_spec_location(tmp_path):
    model = perturbed_model(load_spec_text(SPEC, "m.yaml"))
    path = tmp_path / MODEL_FILE
    with pytest.raises(ExportError) as err:
        export_onnx(model, path, "serving_default")
    assert str(err.value) == "m.yaml:7:3: node 'y': op 'Cumprod' has no ONNX mapping"
    assert not path.exists() and os.listdir(tmp_path) == []
    # The other signature does not need the node, so it exports.
    export_onnx(model, path, "hidden")
    x = np.array([[-1, 2, -3, 4]], np.float32)
    np.testing.assert_array_equal(run_onnx(path, {"x": x})["h"], np.maximum(x, 0))


def test_rewrite_replaces_the_file_atomically(tmp_path):
    model = perturbed_model(load_spec(MODELS / "linear_regression.yaml"))
    path = tmp_path / MODEL_FILE
    path.write_bytes(b"old")
    export_onnx(model, path, "serving_default")
    assert onnx.load(str(path)).graph.output[0].name == "prediction"
    assert os.listdir(tmp_path) == [MODEL_FILE]


def test_unknown_signature_and_missing_onnx_are_clear_errors(monkeypatch):
    model = perturbed_model(load_spec(MODELS / "linear_regression.yaml"))
    with pytest.raises(ExportError, match=r"no signature 'predict' \(signatures: serving_default\)"):
        to_onnx(model, "predict")
    monkeypatch.setitem(sys.modules, "onnx", None)  # import onnx now raises ImportError
    with pytest.raises(ExportError, match=r'pip install "onnx>=1.23" "onnxruntime>=1.32"'):
        to_onnx(model, "serving_default")


def test_placeholder_outside_the_signature_is_a_clear_error():
    model = perturbed_model(load_spec(MODELS / "linear_regression.yaml"))
    sig = model.signatures["serving_default"]
    sig.inputs = {}
    with pytest.raises(ExportError, match="needs placeholder 'x' but does not take it as an input"):
        to_onnx(model, "serving_default")


def test_corrupt_onnx_file_is_a_clear_error(tmp_path):
    path = tmp_path / MODEL_FILE
    path.write_bytes(b"\x08\x07garbage")
    with pytest.raises(ExportError, match="onnxruntime cannot run the model"):
        run_onnx(path, {})
