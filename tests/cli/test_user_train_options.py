"""What a Keras/Ludwig user met with the train section's options and data: each a regression
test (held-out splits, their errors at the spec's line)."""

from __future__ import annotations

import numpy as np

from .cli_helpers import cli, ok, one_error
from .test_user_specs import SPEC, spec_file


def test_split_errors_name_the_spec_line(tmp_path):
    """A stratify field the source lacks, or a test fraction leaving no training data, was
    `error: train.data.split.stratify: ...` with no file or line."""
    spec = spec_file(tmp_path, SPEC.replace("split: {test: 0.2}", "split: {test: 0.2, stratify: label}"))
    one_error(cli("validate", spec), "tiny.yaml:17:", "train.data.split.stratify: cannot stratify by 'label'")
    one_error(cli("train", spec, "--logdir", tmp_path / "run"), "tiny.yaml:17:", "cannot stratify by 'label'")
    np.savez(tmp_path / "d.npz", x=np.zeros((3, 64), np.float32), y=np.arange(3))
    spec = spec_file(tmp_path, SPEC.replace("{builtin: digits}", "{npz: d.npz}").replace("test: 0.2", "test: 0.9"))
    one_error(cli("validate", spec), "tiny.yaml:17:", "train.data.split.test: a test fraction of 0.9 leaves no training")


def test_stratifying_by_a_continuous_target_is_refused(tmp_path):
    """`stratify: y` on a real-valued target made every value its own class: the held-out split
    was the smallest targets, not a random draw. scikit-learn refuses a class of one member."""
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "d.npz", x=rng.random((50, 64), np.float32), y=rng.integers(0, 10, 50), t=rng.random(50))
    spec = spec_file(tmp_path, SPEC.replace("{builtin: digits}", "{npz: d.npz}")
                     .replace("split: {test: 0.2}", "split: {test: 0.2, stratify: t}"))
    one_error(cli("validate", spec), "tiny.yaml:17:", "train.data.split.stratify: cannot stratify by 't'",
              "50 classes", "only 1 member")


def test_eval_without_a_split_names_the_data_line(tmp_path):
    """`eval` of a run whose data has no split said `tiny.yaml: train.data has no split`: no line."""
    spec = spec_file(tmp_path, SPEC.replace(", split: {test: 0.2}", ""))
    ok("train", spec, "--logdir", tmp_path / "run")
    one_error(cli("eval", spec, "--logdir", tmp_path / "run"), "tiny.yaml:17:", "train.data: there is no held-out",
              "add split: {test: 0.2}")


def test_a_string_field_feeding_an_integer_input_reads_as_one_sentence(tmp_path):
    """String labels in an npz fed to an int64 input said "... but source field 'y' is <U3 [?]
    must be int64, got <U3": two sentences run together, numpy's type code for the dtype."""
    np.savez(tmp_path / "d.npz", x=np.zeros((20, 64), np.float32), y=np.array(["cat", "dog"] * 10))
    spec = spec_file(tmp_path, SPEC.replace("{builtin: digits}", "{npz: d.npz}"))
    line = one_error(cli("validate", spec), "tiny.yaml:17:", "train.data.feeds.labels: input 'labels' is int64 [?] but "
                     "source field 'y' is string [?]: the data must be int64, got <U3")
    assert "[?] must" not in line


def test_arrays_the_feeds_do_not_use_may_be_of_any_shape(tmp_path):
    """An npz holding, besides the examples, a scalar or a class-name list (`classes`) was
    refused: "field 'n' is a scalar; every field needs one row per example", though no feed
    reads them. The fields fed (and the stratify field) are still checked."""
    x, y = np.random.default_rng(0).random((40, 64), np.float32), np.arange(40) % 4
    np.savez(tmp_path / "d.npz", x=x, y=y, n=np.array(40), classes=np.array(["a", "b", "c", "d"]))
    spec = spec_file(tmp_path, SPEC.replace("{builtin: digits}", "{npz: d.npz}"))
    ok("validate", spec)
    ok("train", spec, "--logdir", tmp_path / "run", "--steps", 2)
    ok("eval", spec, "--logdir", tmp_path / "run")
    np.savez(tmp_path / "d.npz", x=x, y=y[:30], n=np.array(40))
    one_error(cli("validate", spec), "tiny.yaml:17:", "'x' has 40, 'y' has 30")
    np.savez(tmp_path / "d.npz", x=x, y=y, c=np.arange(30))
    spec = spec_file(tmp_path, SPEC.replace("{builtin: digits}", "{npz: d.npz}").replace("test: 0.2", "test: 0.2, stratify: c"))
    one_error(cli("validate", spec), "tiny.yaml:17:", "'c' has 30")


def test_a_declared_training_flag_without_default_is_fed_by_the_trainer(tmp_path):
    """`training: {dtype: bool, shape: []}` (no default) beside a dropout layer was refused:
    "input 'training' is needed by the loss 'loss' but is not fed", though training feeds it
    true and evaluation false, as the README says of the flag."""
    text = SPEC.replace("  labels: {dtype: int64, shape: [null]}\n",
                        "  labels: {dtype: int64, shape: [null]}\n  training: {dtype: bool, shape: []}\n")
    text = text.replace(
        "  logits: {layer: dense, inputs: [hidden], units: 10}",
        "  drop: {layer: dropout, inputs: [hidden], rate: 0.5}\n  logits: {layer: dense, inputs: [drop], units: 10}")
    spec = spec_file(tmp_path, text)
    ok("validate", spec)
    ok("train", spec, "--logdir", tmp_path / "run")
    ok("eval", spec, "--logdir", tmp_path / "run")


def test_a_loss_without_gradients_names_the_loss_line(tmp_path):
    """A loss through ArgMax (no gradient) failed `train` with "node 'loss': the loss 'loss'
    does not depend on any trainable variable": no file or line."""
    spec = spec_file(tmp_path, SPEC.replace(
        "  loss: {op: Mean, inputs: [{op: SparseSoftmaxCrossEntropyWithLogits, inputs: [logits, labels]}]}",
        "  loss: {op: Mean, inputs: [{op: Cast, inputs: [{op: ArgMax, inputs: [logits], axis: 1}], DstT: float32}]}"))
    one_error(cli("train", spec, "--logdir", tmp_path / "run"), "tiny.yaml:15:", "train.loss: the loss 'loss' does "
              "not depend on any trainable variable")


def test_bool_labels_feed_a_float_input(tmp_path):
    """Binary labels saved as bool (`y > 0`) feeding a float32 target were refused ("the data
    must be float32, got bool") though no value changes, the README's rule for converting data
    (Keras casts them too). A float field feeding a bool input is still refused."""
    rng = np.random.default_rng(0)
    x = rng.random((40, 64), np.float32)
    np.savez(tmp_path / "d.npz", x=x, y=x[:, 0] > 0.5)
    text = SPEC.replace("{builtin: digits}", "{npz: d.npz}").replace("labels: {dtype: int64", "labels: {dtype: float32")
    text = text.replace("  logits: {layer: dense, inputs: [hidden], units: 10}",
                        "  out: {layer: dense, inputs: [hidden], units: 1}\n"
                        "  logits: {op: Squeeze, inputs: [out], squeeze_dims: [1]}")
    text = text.replace("{op: SparseSoftmaxCrossEntropyWithLogits, inputs: [logits, labels]}",
                        "{op: Square, inputs: [{op: Sub, inputs: [logits, labels]}]}")
    spec = spec_file(tmp_path, text)
    ok("train", spec, "--logdir", tmp_path / "run")
    np.savez(tmp_path / "d.npz", x=x, y=x[:, 0])
    spec = spec_file(tmp_path, text.replace("labels: {dtype: float32", "labels: {dtype: bool").replace(
        "{op: Sub, inputs: [logits, labels]}", "{op: Sub, inputs: [logits, {op: Cast, inputs: [labels], DstT: float32}]}"))
    one_error(cli("validate", spec), "tiny.yaml:18:", "the data must be bool, got float32")


def test_a_negative_train_seed_is_a_usage_error_naming_seed(tmp_path):
    """`train --seed -1` said "error: --set train.data.seed=-1: train.data.seed: must be >= 0",
    naming a --set the user never gave."""
    for seed in ("-1", str(2**64)):  # the largest is an int64's, as a graph seed is
        r = cli("train", spec_file(tmp_path), "--logdir", tmp_path / "run", "--seed", seed)
        assert r.exit_code == 2 and "--seed" in r.output and "--set" not in r.output, r.output
    assert not (tmp_path / "run").exists()
