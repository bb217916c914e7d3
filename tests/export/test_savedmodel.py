"""SavedModel export -> load round trips for every exportable model in models/, the written
protobuf checked against what TensorFlow's loaders need, and a TensorFlow-written SavedModel
loaded through the same loader."""

from __future__ import annotations

import numpy as np
import pytest
from tensorboard.compat.proto import meta_graph_pb2

from specflow.errors import ExportError
from specflow.export.exporter import export_model
from specflow.export.loader import load_saved_model, read_saved_model
from specflow.export.savedmodel import check_tf_ops
from specflow.export.serving import serving_model
from specflow.export.verify import sample_inputs, source_outputs
from specflow.graph.graph_def import GraphDef, NodeDef
from specflow.io.checkpoint import CheckpointManager
from tests.export.conftest import DATA_DIR, exportable_models

MODELS = exportable_models()
# Ops only training needs: none may survive pruning into a serving graph.
TRAINING_ONLY = {"SparseSoftmaxCrossEntropyWithLogits", "RandomUniform", "RandomStandardNormal",
                 "AssignSubVariableOp", "AssignVariableOp", "ArgMax", "Equal"}


def test_the_example_models_are_covered():
    assert {"digits_mlp", "mnist_cnn", "linear_regression", "residual_mlp"} <= set(MODELS)


@pytest.mark.parametrize("name", MODELS)
def test_export_then_load_gives_the_spec_outputs(name, trained, tmp_path):
    spec, logdir = trained(name)
    out = tmp_path / "export"
    result = export_model(spec, logdir, out)
    assert set(result.max_diff) == set(spec.signatures)
    assert all(d <= 1e-5 for d in result.max_diff.values())

    model = serving_model(spec, logdir)
    with load_saved_model(out) as loaded:
        assert loaded.tags == ["serve"]
        assert set(loaded.signatures) == set(spec.signatures)
        for sig_name, sig in model.signatures.items():
            assert {a: s for a, (_, s) in loaded.signatures[sig_name].inputs.items()} == \
                {a: s for a, (_, s) in sig.inputs.items()}
            feeds = sample_inputs(spec, sig)
            got = loaded.run(sig_name, feeds)
            want = source_outputs(spec, model, sig_name, feeds)
            for alias in want:
                np.testing.assert_allclose(got[alias], want[alias], rtol=1e-5, atol=1e-6)
        # Only serving nodes were exported: the saver aside, nothing training-only is left.
        ops = {n.op for n in loaded.graph_def.nodes if not n.name.startswith("save/")}
        assert not ops & TRAINING_ONLY, ops & TRAINING_ONLY
        assert not any(n.op == "Placeholder" and n.name == "labels" for n in loaded.graph_def.nodes)


def test_checkpoint_values_are_exported_and_the_training_flag_is_folded(trained):
    spec, logdir = trained("mnist_cnn")
    model = serving_model(spec, logdir)
    tensors = CheckpointManager(logdir).restore()
    assert set(model.variables) == {v.name for v in spec.variables}  # no optimizer slots, no step
    for name, value in model.variables.items():
        np.testing.assert_array_equal(value, tensors[name])
    nodes = model.graph_def.node_map()
    # Every Select on the flag became its inference branch, so the flag itself is pruned too.
    assert nodes["drop"].op == "Identity" and nodes["drop"].inputs == ["flat"]
    assert nodes["bn2/mean"].op == "Identity" and nodes["bn2/mean"].inputs == ["bn2/moving_mean/Read/ReadVariableOp"]
    assert "training" not in nodes and "drop/RandomUniform" not in nodes and "bn2/moments/mean" not in nodes


def test_meta_graph_has_saver_def_signatures_and_tf_versions(trained, tmp_path):
    spec, logdir = trained("digits_mlp")
    export_model(spec, logdir, tmp_path / "m")
    proto = read_saved_model(str(tmp_path / "m"))
    assert proto.saved_model_schema_version == 1 and len(proto.meta_graphs) == 1
    mg = meta_graph_pb2.MetaGraphDef()
    mg.ParseFromString(proto.meta_graphs[0].SerializeToString())
    assert list(mg.meta_info_def.tags) == ["serve"]
    assert mg.graph_def.versions.producer >= 1000  # a TF 2.x producer, not specflow's 1
    sd = mg.saver_def
    assert (sd.filename_tensor_name, sd.save_tensor_name, sd.restore_op_name) == \
        ("save/Const:0", "save/control_dependency:0", "save/restore_all")
    nodes = {n.name: n for n in mg.graph_def.node}
    restore = nodes["save/RestoreV2"]
    assert restore.op == "RestoreV2" and restore.input[0] == "save/Const"
    assert [t for t in restore.attr["dtypes"].list.type] == [1, 1, 1, 1]  # DT_FLOAT x 4 variables
    names = nodes["save/RestoreV2/tensor_names"].attr["value"].tensor.string_val
    # TF2 checkpoint keys (the object graph's paths): TF1 and TF2 loaders restore the same entries
    assert list(names) == [f"{v}/.ATTRIBUTES/VARIABLE_VALUE".encode()
                           for v in ("hidden/bias", "hidden/kernel", "logits/bias", "logits/kernel")]
    assert sorted(i.lstrip("^") for i in nodes["save/restore_all"].input) == \
        ["save/AssignVariableOp", "save/AssignVariableOp_1", "save/AssignVariableOp_2", "save/AssignVariableOp_3"]
    sig = mg.signature_def["serving_default"]
    assert sig.method_name == "tensorflow/serving/predict"
    assert sig.inputs["images"].name == "images:0" and sig.inputs["images"].dtype == 1
    assert [d.size for d in sig.inputs["images"].tensor_shape.dim] == [-1, 64]
    assert sig.outputs["probabilities"].name == "probs:0"
    assert [d.size for d in sig.outputs["probabilities"].tensor_shape.dim] == [-1, 10]


def test_signature_selection_and_checkpoint_choice(trained, tmp_path):
    spec, logdir = trained("digits_mlp")
    with pytest.raises(ExportError, match="no signature 'nope'.*serving_default"):
        export_model(spec, logdir, tmp_path / "a", signatures=["nope"])
    with pytest.raises(ExportError, match="no checkpoint for step 999"):
        export_model(spec, logdir, tmp_path / "b", step=999)
    result = export_model(spec, logdir, tmp_path / "c", step=3)
    assert result.checkpoint.endswith("model.ckpt-3")
    with pytest.raises(ExportError, match="has no checkpoint"):
        export_model(spec, tmp_path, tmp_path / "d")
    assert not (tmp_path / "a").exists() and not (tmp_path / "d").exists()


def test_an_op_without_a_tensorflow_equivalent_stops_the_export():
    graph = GraphDef([NodeDef("x", "Placeholder"), NodeDef("_retval_x_0_0", "_Retval", ["x"])])
    with pytest.raises(ExportError, match="node '_retval_x_0_0': op _Retval has no TensorFlow equivalent"):
        check_tf_ops(graph)


def test_every_exportable_op_is_a_tensorflow_op_with_tensorflow_attrs():
    """tf_ops.json lists TensorFlow 2.21's ops and their attrs (see data/README.md)."""
    import json

    from specflow.export.savedmodel import NOT_IN_TENSORFLOW
    from specflow.ops import all_ops, get_op

    tf_ops = json.loads((DATA_DIR / "tf_ops.json").read_text())["ops"]
    for name in all_ops():
        if name.startswith("_") or name in NOT_IN_TENSORFLOW:
            continue
        assert name in tf_ops, f"{name} is not a TensorFlow op: add it to NOT_IN_TENSORFLOW"
        extra = set(get_op(name).attrs) - set(tf_ops[name])
        assert not extra, f"{name} has attrs TensorFlow lacks: {sorted(extra)}"


def test_loads_a_savedmodel_written_by_tensorflow():
    """data/tf_v1_dense: TensorFlow's own SavedModelBuilder output (Saver graph, resource variables)."""
    expected = np.load(DATA_DIR / "tf_v1_dense_expected.npz")
    with load_saved_model(DATA_DIR / "tf_v1_dense") as model:
        assert list(model.signatures) == ["serving_default"]
        got = model.run("serving_default", {"x": expected["x"]})
        np.testing.assert_allclose(got["y"], expected["y"], rtol=1e-5, atol=1e-6)
        kernel, bias = model.session.run(["dense/kernel/Read/ReadVariableOp:0", "dense/bias/Read/ReadVariableOp:0"])
    np.testing.assert_array_equal(kernel, expected["kernel"])
    np.testing.assert_array_equal(bias, expected["bias"])
