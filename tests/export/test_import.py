"""``specflow import`` (specflow/export/importer.py): TensorFlow-written models become op-level specs
that validate, keep TF's names, keep variables in a checkpoint and large constants in .npy files
beside them, and reproduce TensorFlow's recorded outputs when the spec itself is run."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from specflow.cli import app
from specflow.errors import ExportError, SpecflowError
from specflow.export.importer import INLINE_LIMIT, import_model, verify_import
from specflow.runtime.session import Session
from specflow.schema.loader import load_spec

DATA = Path(__file__).resolve().parents[1] / "io" / "data"
TF2, KERAS = DATA / "tf2", DATA / "keras"
MODELS = Path(__file__).resolve().parents[2] / "models"


def run_spec(path: Path, signature: str, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The spec's signature run the way `specflow run` runs a spec: init op, then the outputs."""
    spec = load_spec(str(path))
    sig = spec.signatures[signature]
    aliases = list(sig["outputs"])
    with Session(spec.graph_def) as s:
        if spec.variables:
            s.run([], targets=[spec.lowered.init_op])
        values = s.run([sig["outputs"][a][0] for a in aliases], {sig["inputs"][a][0]: v for a, v in feeds.items()})
    return dict(zip(aliases, values))


def recorded(path: Path):
    saved = np.load(path)
    return ({k[3:]: saved[k] for k in saved.files if k.startswith("in_")},
            {k[4:]: saved[k] for k in saved.files if k.startswith("out_")})


def test_a_keras_savedmodel_imports_to_a_spec_with_a_checkpoint(tmp_path):
    """conv_swish: variables (to conv_swish.ckpt), captured constants (inline), swish's IdentityN."""
    out = tmp_path / "conv_swish.yaml"
    result = import_model(TF2 / "conv_swish", out)
    ckpt = tmp_path / "conv_swish_checkpoint" / "model.ckpt-0"  # as training writes one
    assert result.checkpoint == ckpt and Path(f"{ckpt}.index").is_file()
    assert sorted(result.variables) == ["sequential_2.conv2d.bias", "sequential_2.conv2d.kernel",
                                        "sequential_2.dense_2.bias", "sequential_2.dense_2.kernel"]
    tree = yaml.safe_load(out.read_text())
    assert tree["variables"]["sequential_2.conv2d.kernel"] == {
        "shape": [3, 3, 2, 4], "dtype": "float32", "initializer": {"checkpoint": "conv_swish_checkpoint/model.ckpt-0"},
        "trainable": True}
    assert tree["inputs"] == {"serving_default_inputs": {"dtype": "float32", "shape": [None, 6, 6, 2]}}
    conv = tree["nodes"]["sequential_2_1.conv2d_1.convolution"]  # the name inside the serving function
    assert conv["op"] == "Conv2D" and conv["padding"] == "SAME" and "T" not in conv  # T is inferred again
    inputs, want = recorded(TF2 / "conv_swish.npz")
    got = run_spec(out, "serving_default", inputs)
    np.testing.assert_allclose(got["output_0"], want["output_0"], rtol=0, atol=1e-4)
    assert max(verify_import(TF2 / "conv_swish", result).values()) <= 1e-5


@pytest.mark.parametrize("file", ["frozen_cnn.pb", "frozen_cnn.pbtxt"])
def test_a_frozen_graph_imports_with_large_constants_in_npy_files(file, tmp_path):
    out = tmp_path / "cnn.yaml"
    result = import_model(TF2 / file, out)
    assert result.checkpoint is None and not result.variables
    tree = yaml.safe_load(out.read_text())
    files = [n["value"]["npy"] for n in tree["nodes"].values() if n["op"] == "Const" and isinstance(n["value"], dict)]
    assert files == ["cnn_constants/sequential_3_1.conv2d_1_1.convolution.ReadVariableOp.resource.npy"]
    kernel = np.load(tmp_path / files[0])
    assert kernel.shape == (3, 3, 2, 4) and kernel.dtype == np.float32 and kernel.size > INLINE_LIMIT
    small = tree["nodes"]["sequential_3_1.standardize_1_1.mul.y"]
    assert small == {"op": "Const", "dtype": "float32", "value": [0.5, 1.5]}  # float32 written shortest
    inputs, want = recorded(TF2 / "frozen_cnn.npz")
    got = run_spec(out, "serving_default", {"x": inputs["x:0"]})
    np.testing.assert_allclose(got["Identity"], want["Identity:0"], rtol=0, atol=1e-4)


def test_batch_norm_and_dropout_model_round_trips(tmp_path):
    result = import_model(KERAS / "cnn_extras", tmp_path / "extras.yaml")
    variables = yaml.safe_load(result.spec.read_text())["variables"]
    frozen = sorted(k for k, v in variables.items() if not v["trainable"])  # from the object graph
    assert frozen == ["sequential_2.batch_normalization.moving_mean", "sequential_2.batch_normalization.moving_variance"]
    inputs, want = recorded(KERAS / "cnn_extras.npz")
    got = run_spec(result.spec, "serving_default", inputs)
    np.testing.assert_allclose(got["output_0"], want["output_0"], rtol=0, atol=1e-4)


@pytest.mark.parametrize("name", ["lstm", "gru"])
def test_keras_rnns_import_with_their_loops_as_while_nodes(name, tmp_path):
    """A lowered TF2 While becomes a spec `while:` node (TensorList vars included); the variables the
    loop reads are the spec's variables, read inside the body."""
    out = tmp_path / f"{name}.yaml"
    result = import_model(TF2 / name, out)
    tree = yaml.safe_load(out.read_text())
    loops = {k: v["while"] for k, v in tree["nodes"].items() if "while" in v}
    assert len(loops) == {"lstm": 2, "gru": 1}[name]
    for loop in loops.values():
        assert set(loop) >= {"vars", "cond", "body", "next"} and all(v in loop["next"] for v in loop["vars"])
        assert not any(isinstance(v, dict) and v.get("op") in ("Enter", "Merge", "Switch", "NextIteration")
                       for v in loop["body"].values())
    inputs, want = recorded(TF2 / f"{name}.npz")
    got = run_spec(out, "serving_default", inputs)
    np.testing.assert_allclose(got["output_0"], want["output_0"], rtol=0, atol=1e-4)
    assert result.variables


@pytest.mark.parametrize("flag", [True, False])
def test_an_if_imports_as_a_cond_node_with_its_loop_inside(flag, tmp_path):
    """cond_loop: If(flag, then: a While, else: another If) -> cond: / while: nodes nested as in TF;
    the variable the branches read stays a spec variable (not a cond input)."""
    out = tmp_path / "cl.yaml"
    import_model(TF2 / "cond_loop", out)
    cond = yaml.safe_load(out.read_text())["nodes"]["cond"]["cond"]
    assert cond["pred"] == "serving_default_flag" and cond["inputs"] == {"in1": "serving_default_x"}
    assert any("while" in n for n in cond["then"]["nodes"].values())
    assert any("cond" in n for n in cond["else"]["nodes"].values())
    saved = np.load(TF2 / "cond_loop.npz")
    got = run_spec(out, "serving_default", {"x": saved["in_x"], "flag": np.array(flag)})
    np.testing.assert_allclose(got["y"], saved[f"out_y_{flag}"], rtol=0, atol=1e-4)


def test_what_import_refuses_is_one_clear_error(tmp_path):
    # Switches on two predicates merged into one value: neither a loop nor a conditional.
    (tmp_path / "odd.pbtxt").write_text("\n".join(
        [f'node {{ name: "{n}" op: "Placeholder" attr {{ key: "dtype" value {{ type: {t} }} }} }}'
         for n, t in (("x", "DT_FLOAT"), ("p", "DT_BOOL"), ("q", "DT_BOOL"))]
        + [f'node {{ name: "{n}" op: "Switch" input: "x" input: "{pred}" attr {{ key: "T" value {{ type: DT_FLOAT }} }} }}'
           for n, pred in (("s1", "p"), ("s2", "q"))]
        + ['node { name: "m" op: "Merge" input: "s1:1" input: "s2" attr { key: "T" value { type: DT_FLOAT } }'
           ' attr { key: "N" value { i: 2 } } }']))
    with pytest.raises(ExportError, match=r"node 's1' \(Switch\) is control flow specflow import cannot write "
                                          "as a spec: it is part of no while loop or conditional"):
        import_model(tmp_path / "odd.pbtxt", tmp_path / "c.yaml")
    with pytest.raises(ExportError, match=r"must be a \.yaml file"):
        import_model(TF2 / "gru", tmp_path / "gru.json")
    (tmp_path / "taken.yaml").write_text("x")
    with pytest.raises(ExportError, match="exists; pass --overwrite"):
        import_model(TF2 / "frozen_cnn.pb", tmp_path / "taken.yaml")


def test_checkpoint_initializer_names_a_missing_key(tmp_path):
    import_model(KERAS / "mlp", tmp_path / "mlp.yaml")
    text = (tmp_path / "mlp.yaml").read_text().replace(
        "{checkpoint: mlp_checkpoint/model.ckpt-0}", "{checkpoint: {prefix: mlp_checkpoint/model.ckpt-0, key: nope}}", 1)
    (tmp_path / "bad.yaml").write_text(text)
    with pytest.raises(SpecflowError, match="checkpoint .*model.ckpt-0 has no tensor .nope."):
        load_spec(str(tmp_path / "bad.yaml"))


def test_cli_import_then_run_the_spec(tmp_path):
    r = CliRunner().invoke(app, ["import", str(TF2 / "frozen_cnn.pb"), "--out", str(tmp_path / "m.yaml")])
    assert r.exit_code == 0, r.output
    assert "the spec reproduces the model" in r.output
    inputs, want = recorded(TF2 / "frozen_cnn.npz")
    np.save(tmp_path / "x.npy", inputs["x:0"])
    r = CliRunner().invoke(app, ["run", str(tmp_path / "m.yaml"), "--fetch", "Identity", "--feed",
                                 f"x={tmp_path / 'x.npy'}", "-o", str(tmp_path / "o.npz")])
    assert r.exit_code == 0, r.output
    np.testing.assert_allclose(np.load(tmp_path / "o.npz")["Identity"], want["Identity:0"], rtol=0, atol=1e-4)
    r = CliRunner().invoke(app, ["validate", str(tmp_path / "m.yaml")])
    assert r.exit_code == 0 and "ok" in r.output


def test_an_imported_spec_exports_again(tmp_path):
    """TF SavedModel -> spec -> `specflow export --logdir <stem>_checkpoint` -> a SavedModel that
    computes TensorFlow's recorded outputs (TensorFlow itself loads it too: checked by hand)."""
    import_model(TF2 / "lstm", tmp_path / "lstm.yaml")
    r = CliRunner().invoke(app, ["export", str(tmp_path / "lstm.yaml"), "--logdir", str(tmp_path / "lstm_checkpoint"),
                                 "--out", str(tmp_path / "export")])
    assert r.exit_code == 0, r.output
    from specflow.export.loader import load_model

    inputs, want = recorded(TF2 / "lstm.npz")
    with load_model(tmp_path / "export") as model:
        (alias,) = model.signatures["serving_default"].inputs
        got = model.run("serving_default", {alias: inputs["inputs"]})
    np.testing.assert_allclose(got["output_0"], want["output_0"], rtol=0, atol=1e-4)


EDGE = """
specflow: 1
name: edge
inputs:
  x: {dtype: float32, shape: [null, 3]}
nodes:
  c: {op: Const, dtype: complex64, value: {npy: c.npy}}
  empty: {op: Const, dtype: int32, value: []}
  shp: {op: ConcatV2, inputs: [{op: Shape, inputs: [x]}, empty], axis: 0}
  same: {op: Reshape, inputs: [x, shp]}
  y: {op: Real, inputs: [{op: Mul, inputs: [{op: Complex, inputs: [same, same]}, c]}]}
signatures:
  serving_default: {inputs: {x: x}, outputs: {y: y}}
"""


def test_a_model_without_variables_exports_and_imports_with_empty_and_complex_constants(tmp_path):
    """No --logdir for a spec without variables; an empty int Const (``[]``, numpy's float64)
    and a complex one (.npy: YAML has no complex numbers) survive export -> import -> run."""
    np.save(tmp_path / "c.npy", np.array(2 + 1j, np.complex64))
    (tmp_path / "edge.yaml").write_text(EDGE)
    r = CliRunner().invoke(app, ["export", str(tmp_path / "edge.yaml"), "--out", str(tmp_path / "sm")])
    assert r.exit_code == 0, r.output
    assert "none (the spec has no variables)" in r.output
    r = CliRunner().invoke(app, ["import", str(tmp_path / "sm"), "--out", str(tmp_path / "back.yaml")])
    assert r.exit_code == 0, r.output
    back = yaml.safe_load((tmp_path / "back.yaml").read_text())["nodes"]
    assert back["empty"]["value"] == [] and back["c"]["value"] == {"npy": "back_constants/c.npy"}
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(run_spec(tmp_path / "back.yaml", "serving_default", {"x": x})["y"], 2 * x - x)
    r = CliRunner().invoke(app, ["export", str(MODELS / "digits_mlp.yaml"), "--out", str(tmp_path / "d")])
    assert r.exit_code == 1 and "has 4 variable(s): give --logdir" in r.output


def test_an_input_with_a_default_imports_as_an_input_with_that_default(tmp_path):
    (tmp_path / "d.yaml").write_text(
        "specflow: 1\nname: d\ninputs:\n  x: {dtype: float32, shape: [null, 2]}\n"
        "  s: {dtype: float32, shape: [], default: 2.5}\n  flag: {dtype: bool, shape: [], default: true}\n"
        "nodes:\n  y: {op: SelectV2, inputs: [flag, {op: Mul, inputs: [x, s]}, x]}\n"
        "signatures:\n  serving_default: {inputs: {x: x, s: s, flag: flag}, outputs: {y: y}}\n")
    assert CliRunner().invoke(app, ["export", str(tmp_path / "d.yaml"), "--out", str(tmp_path / "sm")]).exit_code == 0
    r = CliRunner().invoke(app, ["import", str(tmp_path / "sm"), "--out", str(tmp_path / "back.yaml")])
    assert r.exit_code == 0, r.output
    back = yaml.safe_load((tmp_path / "back.yaml").read_text())
    assert back["inputs"]["s"] == {"dtype": "float32", "shape": [], "default": 2.5}
    assert back["inputs"]["flag"]["default"] is True and "s.input" not in back["nodes"]
    x = np.ones((1, 2), np.float32)
    np.testing.assert_array_equal(run_spec(tmp_path / "back.yaml", "serving_default", {"x": x})["y"], [[2.5, 2.5]])


def test_a_tf1_metagraphs_trainable_collection_says_which_variables_train():
    """TF1 SavedModels have no object graph: their `trainable_variables` collection says it (a
    batch-norm's moving statistics sit only in `variables`); TF's own tf_v1_dense lists both."""
    from tensorboard.compat.proto import meta_graph_pb2
    from tensorboard.compat.proto.variable_pb2 import VariableDef

    from specflow.export.importer import _trainable
    from specflow.export.loader import load_model

    with load_model(str(Path(__file__).parent / "data" / "tf_v1_dense")) as m:
        assert _trainable(m.meta_graph, m.graph_def) == {"dense/kernel": True, "dense/bias": True}
    mg = meta_graph_pb2.MetaGraphDef()
    for key, names in (("variables", ["bn/gamma", "bn/moving_mean"]), ("trainable_variables", ["bn/gamma"])):
        for name in names:
            mg.collection_def[key].bytes_list.value.append(VariableDef(variable_name=f"{name}:0").SerializeToString())
    assert _trainable(mg) == {"bn/gamma": True, "bn/moving_mean": False}
    assert _trainable(meta_graph_pb2.MetaGraphDef()) == {}  # neither: the importer's default (trainable)


def test_our_exports_keep_which_variables_train(trained, tmp_path):
    """An export lists TF1's variable collections (TensorFlow's loaders read them too), so a
    re-imported model trains what the spec trained: batch norm's moving statistics stay frozen."""
    from specflow.export.exporter import export_model
    from specflow.export.importer import _trainable
    from specflow.export.loader import load_model

    spec, logdir = trained("mnist_cnn")
    export_model(spec, logdir, tmp_path / "export")
    want = {v.name: v.trainable for v in spec.variables}
    assert not all(want.values())  # the moving statistics
    with load_model(str(tmp_path / "export")) as m:
        assert _trainable(m.meta_graph, m.graph_def) == want
    import_model(tmp_path / "export", tmp_path / "back.yaml")
    assert {v.name: v.trainable for v in load_spec(tmp_path / "back.yaml").variables} == {
        k.replace("/", "."): v for k, v in want.items()}


def test_import_never_clobbers_a_directory_beside_the_spec_it_did_not_write(tmp_path):
    """`import M --out m.yaml` saved its variables into an existing `m_checkpoint/` training
    logdir: that run's latest became step 0 and the keep policy deleted its oldest checkpoint.
    Now a directory beside the spec that an import did not write is refused (--overwrite too),
    a previous import's needs --overwrite and is replaced whole (no stale constant stays)."""
    from specflow.io.checkpoint import CheckpointManager

    logdir = tmp_path / "mlp_checkpoint"
    run = CheckpointManager(str(logdir), keep=5)
    for step in (100, 200, 300, 400, 500):
        run.save({"w": np.full(2, step, np.float32)}, step)
    (logdir / "run.json").write_text("{}")
    before = {p.name: p.read_bytes() for p in logdir.iterdir()}
    for flags in ({}, {"overwrite": True}):
        with pytest.raises(ExportError, match=r"mlp_checkpoint holds '.*', which an import does not write"):
            import_model(KERAS / "mlp", tmp_path / "mlp.yaml", **flags)
    assert {p.name: p.read_bytes() for p in logdir.iterdir()} == before
    assert not (tmp_path / "mlp.yaml").exists()

    out = tmp_path / "cnn.yaml"
    import_model(TF2 / "frozen_cnn.pb", out)
    out.unlink()  # the spec gone, its constants still there: a previous import's, asks for --overwrite
    with pytest.raises(ExportError, match=r"cnn_constants exists \(a previous import's\); pass --overwrite"):
        import_model(TF2 / "frozen_cnn.pb", out)
    (tmp_path / "cnn_constants" / "stale.npy").write_bytes(b"")
    import_model(TF2 / "frozen_cnn.pb", out, overwrite=True)
    assert not (tmp_path / "cnn_constants" / "stale.npy").exists()
    (tmp_path / "cnn_constants" / "notes.txt").write_text("mine")
    with pytest.raises(ExportError, match="holds 'notes.txt'"):
        import_model(TF2 / "frozen_cnn.pb", out, overwrite=True)
    assert (tmp_path / "cnn_constants" / "notes.txt").read_text() == "mine"


def test_a_failed_import_leaves_the_previous_one_whole_and_nothing_new(tmp_path, monkeypatch):
    """The checkpoint written last failed (ENOSPC): a first import left an empty
    `m_checkpoint/` (and its constants) behind, and one with --overwrite had already deleted the
    previous import's checkpoint and constants, its spec left naming them."""
    import errno

    import specflow.export.importer as importer

    def tree():
        return {str(p.relative_to(tmp_path)): p.read_bytes() for p in sorted(tmp_path.rglob("*")) if p.is_file()}

    class FullDisk(importer.CheckpointManager):
        def save(self, *args, **kwargs):
            os.makedirs(self.directory, exist_ok=True)
            Path(self.directory, "model.ckpt-0.index").write_bytes(b"half")
            raise OSError(errno.ENOSPC, "No space left on device", str(Path(self.directory, "model.ckpt-0.index")))

    out = tmp_path / "cnn.yaml"
    with monkeypatch.context() as m:
        m.setattr(importer, "CheckpointManager", FullDisk)
        with pytest.raises(ExportError, match=r"cnn_checkpoint/model.ckpt-0.index: No space left on device"):
            import_model(KERAS / "mlp", out)
    assert tree() == {} and list(tmp_path.iterdir()) == []  # no staging directory left either
    import_model(KERAS / "mlp", out)
    before = tree()
    assert "cnn_checkpoint/model.ckpt-0.index" in before
    with monkeypatch.context() as m:
        m.setattr(importer, "CheckpointManager", FullDisk)
        with pytest.raises(ExportError, match="No space left on device") as info:
            import_model(KERAS / "mlp", out, overwrite=True)
    assert ".cnn.import-" not in info.value.format()  # named as the import's files, not the staging's
    assert tree() == before and sorted(p.name for p in tmp_path.iterdir()) == ["cnn.yaml", "cnn_checkpoint"]
    np.testing.assert_allclose(run_spec(out, "serving_default", recorded(KERAS / "mlp.npz")[0])["output_0"],
                               recorded(KERAS / "mlp.npz")[1]["output_0"], rtol=0, atol=1e-5)
