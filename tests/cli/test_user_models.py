"""What a Keras user met writing twelve models of their own from the README (tabular embeddings,
a BiLSTM with attention pooling, a causal transformer tagger, dilated conv1d, a residual CNN,
autoencoder, multi-task, a siamese net sharing a function's variables, a while/cond RNN,
interrupted and resumed runs), each as a regression test through the CLI."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from .cli_helpers import cli, ok, one_error

MASKED_POOL = """
specflow: 1
name: masked_pool
seed: 0
inputs:
  x: {dtype: float32, shape: [null, 4, 3]}
  mask: {dtype: bool, shape: [null, 4]}
  y: {dtype: int64, shape: [null]}
nodes:
  score: {layer: dense, inputs: [x], units: 1, use_bias: false}
  masked: {op: SelectV2, inputs: [mask, {op: Squeeze, inputs: [score], squeeze_dims: [2]}], e: -1e9}
  weights: {op: Softmax, inputs: [masked]}
  pooled: {op: Sum, inputs: [{op: Mul, inputs: [x, {op: ExpandDims, inputs: [weights], axis: -1}]}], axis: 1}
  logits: {layer: dense, inputs: [pooled], units: 2}
  loss: {op: Mean, inputs: [{op: SparseSoftmaxCrossEntropyWithLogits, inputs: [logits, y]}]}
signatures:
  serving_default: {inputs: {x: x, mask: mask}, outputs: {weights: weights}}
train:
  loss: loss
  optimizer: {adam: {learning_rate: 1e-3, epsilon: 1e-7}}
  data: {source: {npz: data.npz}, feeds: {x: x, mask: mask, y: y}, batch_size: 8}
  steps: 2
"""


def write(tmp_path: Path, text: str, name: str = "m.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def masked_data(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    mask = np.ones((16, 4), bool)
    mask[:, 3] = False
    np.savez(tmp_path / "data.npz", x=rng.normal(size=(16, 4, 3)).astype(np.float32), mask=mask,
             y=rng.integers(0, 2, 16))


def test_scientific_notation_is_a_number_in_a_spec(tmp_path):
    """`e: -1e9` (a literal input) was read as the string '-1e9' and failed as 'names no node';
    `learning_rate: 1e-3` passed only because the schema coerced the string."""
    masked_data(tmp_path)
    spec = write(tmp_path, MASKED_POOL)
    ok("validate", spec)
    ok("train", spec, "--logdir", tmp_path / "run")
    x = np.zeros((1, 4, 3), np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "m.npy", np.array([[True, True, False, False]]))
    out = tmp_path / "w.npz"
    ok("run", spec, "--feed", f"x={tmp_path / 'x.npy'}", "--feed", f"mask={tmp_path / 'm.npy'}", "--fetch", "weights",
       "--out", out)
    np.testing.assert_allclose(np.load(out)["weights"], [[0.5, 0.5, 0.0, 0.0]])


def test_a_literal_in_inputs_says_to_give_it_under_the_inputs_name(tmp_path):
    """`inputs: [mask, score, -1e9]` said only that an input is a reference; as Keras's
    `tf.where(mask, score, -1e9)` it is what a user writes first."""
    masked_data(tmp_path)
    for literal in ("-1e9", "'-1e9'"):
        spec = write(tmp_path, MASKED_POOL.replace("squeeze_dims: [2]}], e: -1e9}", f"squeeze_dims: [2]}}, {literal}]}}"))
        one_error(cli("validate", spec), "m.yaml:11:", "nodes.masked.inputs.2", "under the input's name",
                  "e: -1", "SelectV2 takes condition, t, e")


def test_tfs_python_keyword_axis_for_squeeze_names_the_ops_attr(tmp_path):
    masked_data(tmp_path)
    spec = write(tmp_path, MASKED_POOL.replace("squeeze_dims: [2]", "axis: [2]"))
    one_error(cli("validate", spec), "m.yaml:11:", "unknown field 'axis' for op Squeeze", "'squeeze_dims'")


def test_an_out_path_ending_in_a_slash_is_a_directory_even_before_it_exists(tmp_path, monkeypatch):
    """`--out preds/` (a directory not made yet) wrote the file `preds.npz` beside it, and
    `schema --out s/` wrote `s.json`: pathlib drops the trailing slash."""
    masked_data(tmp_path)
    monkeypatch.chdir(tmp_path)
    spec = write(tmp_path, MASKED_POOL)
    np.save("x.npy", np.zeros((1, 4, 3), np.float32))
    np.save("m.npy", np.ones((1, 4), bool))
    feeds = ("--feed", "x=x.npy", "--feed", "mask=m.npy", "--fetch", "weights")
    one_error(cli("run", spec, *feeds, "--out", "preds/"), "preds/m.npz", "the directory", "does not exist")
    one_error(cli("run", spec, *feeds, "--trace", "traces/"), "traces/trace.json", "does not exist")
    one_error(cli("schema", "--out", "s/"), "s/specflow.schema.json", "does not exist")
    assert not list(tmp_path.glob("preds*")) and not list(tmp_path.glob("s.json")) and not list(tmp_path.glob("traces*"))
    Path("preds").mkdir()
    assert "preds/m.npz" in ok("run", spec, *feeds, "--out", "preds/")
    assert "s.json" in ok("schema", "--out", "s")


NOISY = """
specflow: 1
name: noisy
seed: 0
inputs:
  x: {dtype: float32, shape: [null, 8]}
  y: {dtype: int64, shape: [null]}
nodes:
  h: {layer: dense, inputs: [x], units: 64, activation: relu}
  logits: {layer: dense, inputs: [h], units: 2}
  xent_loss: {op: Mean, inputs: [{op: SparseSoftmaxCrossEntropyWithLogits, inputs: [logits, y]}]}
train:
  loss: xent_loss
  optimizer: {adam: {learning_rate: 0.05}}
  data: {source: {npz: noise.npz}, feeds: {x: x, y: y}, batch_size: 16, shuffle: true, split: {test: 0.5}, seed: 0}
  steps: 400
  checkpoints: {every_steps: 3, keep: 1000}
  eval: {every_steps: 5, metrics: [xent_loss]}
  early_stopping: {metric: xent_loss, patience: 2}
"""


def stopped_step(output: str) -> int:
    line = next(ln for ln in output.splitlines() if "(early stopping)" in ln)
    return int(line.split("→")[1].split("(")[0])


def test_early_stopping_stops_resumes_exactly_and_stays_stopped(tmp_path):
    """Keras's EarlyStopping had no counterpart: a model fitting noise trained all its steps.
    Labels of pure noise: the held-out loss rises once the net memorizes the training half."""
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "noise.npz", x=rng.normal(size=(64, 8)).astype(np.float32), y=rng.integers(0, 2, 64))
    spec = write(tmp_path, NOISY)
    out = ok("train", spec, "--logdir", tmp_path / "a")
    assert "training stopped early" in out and "best xent_loss" in out
    stop = stopped_step(out)
    assert 10 <= stop < 400 and stop % 5 == 0
    assert "nothing to do" in ok("train", spec, "--logdir", tmp_path / "a")
    assert "nothing to do" in ok("train", spec, "--logdir", tmp_path / "a", "--steps", 1000)
    # Stopped short of it (a crash after its checkpoint at step 3 of an eval at 5), then
    # continued: the same stop, from the evaluations kept up to the restored step.
    ok("train", spec, "--logdir", tmp_path / "b", "--steps", 6)
    ckpts = tmp_path / "b"
    for p in ckpts.glob("model.ckpt-6.*"):
        p.unlink()
    (ckpts / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-3"\nall_model_checkpoint_paths: "model.ckpt-3"\n')
    assert stopped_step(ok("train", spec, "--logdir", tmp_path / "b")) == stop


def test_early_stopping_names_what_is_wrong(tmp_path):
    spec = write(tmp_path, NOISY.replace("{metric: xent_loss,", "{metric: xent_los,"))
    one_error(cli("validate", spec), "m.yaml:19:", "train.early_stopping.metric", "not in train.eval.metrics (xent_loss)",
              "did you mean 'xent_loss'")
    spec = write(tmp_path, NOISY.replace("xent_loss", "objective"))
    one_error(cli("validate", spec), "train.early_stopping.mode", "mode: min or mode: max")
    spec = write(tmp_path, NOISY.replace("  eval: {every_steps: 5, metrics: [xent_loss]}\n", ""))
    one_error(cli("validate", spec), "train.early_stopping.metric", "add eval:")


TRAINING_COND = """
specflow: 1
name: noisy_features
seed: 0
inputs:
  x: {dtype: float32, shape: [null, 3]}
  y: {dtype: int64, shape: [null]}
  training: {dtype: bool, shape: [], default: false}
nodes:
  h: {layer: dense, inputs: [x], units: 4, activation: tanh}
  noisy:
    cond:
      pred: training
      inputs: {v: h}
      then: {op: AddV2, inputs: [v, {op: RandomStandardNormal, inputs: [{op: Shape, inputs: [v]}], dtype: float32}]}
      else: {op: Identity, inputs: [v]}
  logits: {layer: dense, inputs: [noisy], units: 2}
  loss: {op: Mean, inputs: [{op: SparseSoftmaxCrossEntropyWithLogits, inputs: [logits, y]}]}
signatures:
  serving_default: {inputs: {x: x}, outputs: {logits: logits}}
train:
  loss: loss
  optimizer: {sgd: {learning_rate: 0.1}}
  data: {source: {npz: data.npz}, feeds: {x: x, y: y}, batch_size: 4}
  steps: 2
"""


def test_a_cond_on_the_training_flag_exports_its_inference_branch_to_onnx(tmp_path):
    """A `cond:` on `training` (noise while training) stopped the ONNX export at its Merge,
    though the exported graph, training folded to false, never takes the other branch."""
    pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "data.npz", x=rng.normal(size=(8, 3)).astype(np.float32), y=rng.integers(0, 2, 8))
    spec = write(tmp_path, TRAINING_COND)
    ok("train", spec, "--logdir", tmp_path / "run")
    assert "match the spec" in ok("export", spec, "--logdir", tmp_path / "run", "--out", tmp_path / "m.onnx",
                                  "--format", "onnx")
    ok("export", spec, "--logdir", tmp_path / "run", "--out", tmp_path / "sm")
    listed = ok("inspect", tmp_path / "sm", "--format", "json")
    assert '"Switch"' not in listed and '"Merge"' not in listed and "RandomStandardNormal" not in listed


def test_a_reduction_without_axis_reduces_all_axes_of_an_unknown_rank(tmp_path):
    """`{op: Mean, inputs: [{op: Squeeze, inputs: [out]}]}` (tf.reduce_mean(tf.squeeze(out)))
    failed: a Squeeze of [?, 1] without squeeze_dims has an unknown rank, and the default axes
    needed it ("...give 'axis' explicitly); give it explicitly"). TF reduces range(rank(x))."""
    spec = write(tmp_path, """
specflow: 1
name: squeezed
inputs:
  x: {dtype: float32, shape: [null, 4]}
  y: {dtype: float32, shape: [null]}
nodes:
  out: {layer: dense, inputs: [x], units: 1, kernel_initializer: ones}
  loss: {op: Mean, inputs: [{op: Square, inputs: [{op: Sub, inputs: [{op: Squeeze, inputs: [out]}, y]}]}]}
  total: {op: Sum, inputs: [out], keep_dims: true}
""")
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", np.array([1.0, 2.0, 3.0], np.float32))
    out = tmp_path / "o.npz"
    ok("run", spec, "--feed", f"x={tmp_path / 'x.npy'}", "--feed", f"y={tmp_path / 'y.npy'}", "--fetch", "loss",
       "--fetch", "total", "--out", out)
    got = np.load(out)
    np.testing.assert_allclose(got["loss"], np.mean((x.sum(1) - [1.0, 2.0, 3.0]) ** 2), rtol=1e-6)
    np.testing.assert_allclose(got["total"], [[x.sum()]], rtol=1e-6)


def test_a_choice_in_tfs_case_or_pythons_none_gets_a_hint(tmp_path):
    """TF's 'SAME' and Keras's 'LSTM' got no 'did you mean' (difflib finds no close match when only
    the case differs); Keras's merge_mode=None written `None` is a string in YAML."""
    spec = write(tmp_path, """
specflow: 1
name: seqs
inputs:
  x: {dtype: float32, shape: [null, 6, 8, 3]}
  s: {dtype: float32, shape: [null, 5, 4]}
nodes:
  c: {layer: conv2d, inputs: [x], filters: 2, kernel_size: 3, padding: SAME}
  r: {layer: bidirectional, inputs: [s], rnn: {lstm: {units: 3}}, merge_mode: None}
""")
    r = cli("validate", spec)
    assert r.exit_code == 1
    assert "nodes.c.padding: expected one of 'valid' or 'same', got 'SAME' (did you mean 'same'?)" in r.output
    assert "nodes.r.merge_mode: expected one of 'concat', 'sum', 'mul' or 'ave', got 'None' (YAML writes None as null)" in r.output
    r = cli("validate", spec, "--set", "nodes.c.padding=same", "--set", "nodes.r.merge_mode=null", "--set",
            "nodes.r.rnn={LSTM: {units: 3}}")
    one_error(r, "nodes.r.rnn.LSTM", "(did you mean 'lstm'?)")


def test_global_avg_pool_averages_only_the_unmasked_steps(tmp_path):
    """Embedding(mask_zero) + GlobalAveragePooling1D, Keras's first text classifier: the layer
    took no mask (an error), so the padding's embeddings were averaged in."""
    spec = write(tmp_path, """
specflow: 1
name: pooled
inputs:
  x: {dtype: float32, shape: [null, 5, 4]}
  mask: {dtype: bool, shape: [null, 5]}
nodes:
  avg: {layer: global_avg_pool, inputs: {x: x, mask: mask}}
  kept: {layer: global_avg_pool, inputs: [x, mask], keepdims: true}
  plain: {layer: global_avg_pool, inputs: [x]}
""")
    x = np.random.default_rng(0).normal(size=(3, 5, 4)).astype(np.float32)
    mask = np.array([[1, 1, 1, 0, 0], [1, 0, 0, 0, 0], [1, 1, 1, 1, 1]], bool)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "m.npy", mask)
    out = tmp_path / "o.npz"
    ok("run", spec, "--feed", f"x={tmp_path / 'x.npy'}", "--feed", f"mask={tmp_path / 'm.npy'}",
       "--fetch", "avg", "--fetch", "kept", "--fetch", "plain", "--out", out)
    got = np.load(out)
    want = (x * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
    np.testing.assert_allclose(got["avg"], want, rtol=1e-6)
    # Keras 3's GlobalAveragePooling1D()(x, mask=mask)[0] on the same x (TF 2.21)
    np.testing.assert_allclose(got["avg"][0], [-0.3712248, -0.34531045, 0.44038275, 0.36443567], rtol=1e-6)
    np.testing.assert_allclose(got["kept"], want[:, None, :], rtol=1e-6)
    np.testing.assert_allclose(got["plain"], x.mean(1), rtol=1e-6)
    r = cli("validate", spec, "--set", "inputs.x.shape=[null, 5, 2, 4]")
    assert r.exit_code == 1 and "m.yaml:8:3: nodes.avg: global_avg_pool with a mask needs an input of rank 3" in r.output


def test_a_keras_regularizer_says_how_to_write_the_penalty(tmp_path):
    """`kernel_regularizer: {l2: 0.01}` said "did you mean 'kernel_initializer'?"."""
    spec = write(tmp_path, MASKED_POOL.replace("units: 2}", "units: 2, kernel_regularizer: {l2: 0.01}}"))
    line = one_error(cli("validate", spec), "nodes.logits.kernel_regularizer: unknown field; layers take no regularizers",
                     "weight_decay")
    assert "did you mean" not in line


def test_the_eval_table_keeps_a_long_checkpoint_path_on_one_line():
    """The title wrapped to the narrow table's width, splitting the path mid-name
    ("runs/t" / "abular/model.ckpt-600")."""
    from rich.console import Console

    from specflow.views.train_view import metrics_table

    path = "/work/scratch/some/long/runs/tabular/model.ckpt-600"
    console = Console(width=100, record=True)
    console.print(metrics_table({"accuracy": 0.87, "loss": 0.3}, path))
    assert f"evaluation of {path}" in console.export_text()


def test_keras_2s_lr_and_eps_point_to_learning_rate_and_epsilon(tmp_path):
    masked_data(tmp_path)
    spec = write(tmp_path, MASKED_POOL)
    one_error(cli("validate", spec, "--set", "train.optimizer.adam.lr=0.1"), "adam.lr: unknown field (did you mean 'learning_rate'?)")
    one_error(cli("validate", spec, "--set", "train.optimizer.adam.eps=1e-8"), "adam.eps: unknown field (did you mean 'epsilon'?)")


def test_a_bare_split_fraction_shows_the_mapping_to_write(tmp_path):
    """Keras's validation_split=0.2 written `split: 0.2` said only 'expected a mapping'."""
    masked_data(tmp_path)
    spec = write(tmp_path, MASKED_POOL)
    one_error(cli("validate", spec, "--set", "train.data.split=0.2"), "train.data.split: expected a mapping, got 0.2",
              "(write split: {test: 0.2})")
