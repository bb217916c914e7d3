"""Regressions found by scripts/spec_mutation_fuzz.py (mutated model specs through validate,
inspect, train and export): one test per class of fault, each failing before its fix."""

from __future__ import annotations

from .cli_helpers import cli, ok, one_error
from .test_user_specs import SPEC, spec_file


def test_validate_refuses_a_batch_the_training_split_cannot_fill(tmp_path):
    """passes-then-fails: `validate` said ok to `split: {test: 0.999}` (1 training example) and
    to a batch_size over the data; `train` then failed at once. The --set is named too."""
    spec = spec_file(tmp_path)
    for s, n in (("train.data.split.test=0.999", 1), ("train.data.batch_size=100000", 1437)):
        line = one_error(cli("validate", spec, "--set", s), "train.data.batch_size", f"({n} examples after the split)")
        assert f"--set {s}" in line, line
    line = one_error(cli("train", spec, "--logdir", tmp_path / "run", "--set", "train.data.split.test=0.999"))
    assert "larger than the training data" in line and "(with the run's --set train.data.split.test=0.999)" in line
    line = one_error(cli("validate", spec_file(tmp_path, name="b.yaml", text=spec.read_text().replace(
        "batch_size: 16", "batch_size: 1500"))), "larger than the training data")
    assert "b.yaml:" in line, line


def test_validate_refuses_a_loss_no_gradient_reaches(tmp_path):
    """passes-then-fails: a loss reading the model only through ArgMax/Equal/Cast (an accuracy)
    passed validate's structural check ('depends on a variable'); train then failed building
    the gradients. validate now walks the edges a gradient can take."""
    spec = spec_file(tmp_path, SPEC.replace(
        "  loss: {op: Mean, inputs: [{op: SparseSoftmaxCrossEntropyWithLogits, inputs: [logits, labels]}]}",
        "  loss: {op: Mean, inputs: [{op: Cast, DstT: float32, inputs: [{op: Equal, inputs: [\n"
        "    {op: ArgMax, inputs: [logits], axis: 1, output_type: int64}, labels]}]}]}"))
    for cmd in (("validate", spec), ("train", spec, "--logdir", tmp_path / "run")):
        one_error(cli(*cmd), "tiny.yaml:16:9: train.loss: the loss 'loss' does not depend on any trainable variable")
    ok("validate", spec_file(tmp_path, SPEC, name="fine.yaml"))  # the cross-entropy loss trains


def test_train_on_a_billion_laughs_spec_stops_at_the_alias_limit(tmp_path):
    """hang: `train` hashed the spec for run.json with PyYAML's unbounded safe_load before the
    spec loader's alias limit could refuse it; validate and inspect stopped at once."""
    import subprocess
    import sys

    bomb = 'a: &a ["x","x","x","x","x","x","x","x","x"]\n' + "".join(
        f"{c}: &{c} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]\n" for p, c in zip("abcdefgh", "bcdefghi"))
    spec = spec_file(tmp_path, bomb + SPEC)
    r = subprocess.run([sys.executable, "-m", "specflow.cli", "train", str(spec), "--logdir", str(tmp_path / "run")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "too many YAML nodes" in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_a_signature_without_outputs_is_refused_at_its_line(tmp_path):
    """passes-then-fails, no-location: `outputs: {}` validated, trained, then `export` failed
    with `signature 'serving_default' has no outputs` and no file:line."""
    spec = spec_file(tmp_path, SPEC.replace("outputs: {logits: logits}", "outputs: {}"))
    one_error(cli("validate", spec), "tiny.yaml:13:", "signatures.serving_default.outputs: the mapping should have "
              "at least 1 item")
