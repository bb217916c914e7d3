"""Runs remember their configuration (issue 17): ``train --resume`` and ``eval`` use the run's
--seed/--set from LOGDIR/run.json, differing flags are errors naming both values (warnings with
--force), training again into the same run continues it or does nothing, a different run is
refused unless --overwrite, and a run that never saved a checkpoint simply starts again."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from specflow.io.checkpoint import CheckpointManager

from .cli_helpers import cli, ok, one_error

SPEC = """
specflow: 1
name: tiny
seed: 0
inputs:
  images: {dtype: float32, shape: [null, 64]}
  labels: {dtype: int64, shape: [null]}
nodes:
  hidden: {layer: dense, inputs: [images], units: 8, activation: relu}
  logits: {layer: dense, inputs: [hidden], units: 10}
  xent: {op: SparseSoftmaxCrossEntropyWithLogits, inputs: [logits, labels]}
  loss: {op: Mean, inputs: ["xent:0"]}
  correct: {op: Equal, inputs: [{op: ArgMax, inputs: [logits], axis: 1, output_type: int64}, labels]}
  accuracy: {op: Mean, inputs: [{op: Cast, inputs: [correct], DstT: float32}]}
signatures:
  serving_default: {inputs: {images: images}, outputs: {logits: logits}}
train:
  loss: loss
  optimizer: {adam: {learning_rate: 0.01}}
  data: {source: {builtin: digits}, feeds: {images: x, labels: y}, batch_size: 16, shuffle: true,
         split: {test: 0.2}, seed: 5}
  steps: 6
  checkpoints: {every_steps: 2, keep: 10}
  summaries: {every_steps: 100, scalars: [loss]}
  eval: {every_steps: 1000, metrics: [accuracy, loss]}
"""
LR = "train.optimizer.adam.learning_rate=0.05"





def spec_file(tmp_path: Path) -> Path:
    p = tmp_path / "tiny.yaml"
    p.write_text(SPEC)
    return p


def variables(logdir: Path, step: int) -> dict[str, np.ndarray]:
    m = CheckpointManager(str(logdir), keep=10)
    return m.restore(m.path_for_step(step))


def test_resume_restores_seed_and_set_and_matches_an_unbroken_run(tmp_path):
    spec = spec_file(tmp_path)
    ok("train", spec, "--logdir", tmp_path / "a", "--steps", 2, "--seed", 7, "--set", LR)
    assert json.loads((tmp_path / "a" / "run.json").read_text())["set"] == [LR]
    ok("train", spec, "--logdir", tmp_path / "a", "--steps", 4, "--resume")  # no --seed/--set given again
    ok("train", spec, "--logdir", tmp_path / "b", "--steps", 4, "--seed", 7, "--set", LR)
    resumed, unbroken = variables(tmp_path / "a", 4), variables(tmp_path / "b", 4)
    for name in ("hidden/kernel", "logits/bias"):
        np.testing.assert_array_equal(resumed[name], unbroken[name])


def test_a_differing_flag_on_resume_names_both_values_and_force_warns(tmp_path):
    spec = spec_file(tmp_path)
    ok("train", spec, "--logdir", tmp_path / "r", "--steps", 2, "--seed", 7)
    one_error(cli("train", spec, "--logdir", tmp_path / "r", "--steps", 4, "--resume", "--seed", 8),
              "--seed 8 differs from the run's --seed 7", "--force")
    one_error(cli("train", spec, "--logdir", tmp_path / "r", "--steps", 4, "--resume", "--set", LR),
              f"--set {LR} differs from the run's --set (none)")
    out = ok("train", spec, "--logdir", tmp_path / "r", "--steps", 4, "--resume", "--seed", 8, "--force")
    assert "warning: --seed 8 differs from the run's --seed 7; resuming with the new value (--force)" in out
    assert json.loads((tmp_path / "r" / "run.json").read_text())["seed"] == 8


def test_training_again_continues_the_same_run_and_a_finished_one_does_nothing(tmp_path):
    spec = spec_file(tmp_path)
    logdir = tmp_path / "run"
    ok("train", spec, "--logdir", logdir, "--steps", 2, "--seed", 1)
    out = ok("train", spec, "--logdir", logdir, "--seed", 1)  # same spec and flags: continues to 6
    assert CheckpointManager(str(logdir), keep=10).latest().endswith("model.ckpt-6")
    out = ok("train", spec, "--logdir", logdir, "--seed", 1)
    assert f"{logdir}: already at step 6; nothing to do" in out
    assert "→" not in out  # no "6 → 6" summary of a run that did not run
    out = ok("train", spec, "--logdir", logdir, "--steps", 4, "--resume")
    assert "already at step 6; nothing to do" in out


def test_a_different_run_is_refused_naming_the_difference_unless_overwrite(tmp_path):
    spec = spec_file(tmp_path)
    logdir = tmp_path / "run"
    ok("train", spec, "--logdir", logdir, "--steps", 2)
    (logdir / "notes.txt").write_text("mine")
    one_error(cli("train", spec, "--logdir", logdir, "--steps", 2, "--seed", 3),
              "holds a run of another configuration", "--seed 3 differs from the run's --seed (none)",
              "--overwrite")
    spec.write_text(SPEC.replace("units: 8", "units: 9"))
    one_error(cli("train", spec, "--logdir", logdir, "--steps", 2), f"the spec {spec} has changed since the run")
    out = ok("train", spec, "--logdir", logdir, "--steps", 2, "--overwrite")
    assert "already at step" not in out
    assert variables(logdir, 2)["hidden/kernel"].shape == (64, 9)
    assert (logdir / "notes.txt").read_text() == "mine"  # --overwrite removes only the run's own files
    one_error(cli("train", spec, "--logdir", logdir, "--resume", "--overwrite"), "give one")
    one_error(cli("train", spec, "--logdir", logdir, "--force"), "--force applies to --resume")
    (logdir / "run.json").write_text("{not json")
    one_error(cli("train", spec, "--logdir", logdir, "--steps", 2), "run.json: unreadable run configuration")
    ok("train", spec, "--logdir", logdir, "--steps", 2, "--overwrite")


def test_a_run_that_never_checkpointed_starts_again(tmp_path):
    spec = spec_file(tmp_path)
    logdir = tmp_path / "run"
    ok("train", spec, "--logdir", logdir, "--steps", 2)
    for p in logdir.iterdir():  # as if the first step had failed: config and events, no checkpoint
        if p.name == "checkpoint" or p.name.startswith("model.ckpt"):
            p.unlink()
    ok("train", spec, "--logdir", logdir, "--steps", 2)
    assert CheckpointManager(str(logdir), keep=10).latest().endswith("model.ckpt-2")


def test_a_run_without_run_json_is_refused_without_resume(tmp_path):
    spec = spec_file(tmp_path)
    logdir = tmp_path / "run"
    ok("train", spec, "--logdir", logdir, "--steps", 2)
    (logdir / "run.json").unlink()  # a logdir from before runs remembered their configuration
    one_error(cli("train", spec, "--logdir", logdir, "--steps", 4), "--resume", "--overwrite")
    ok("train", spec, "--logdir", logdir, "--steps", 4, "--resume")
    one_error(cli("train", spec, "--logdir", tmp_path / "empty", "--resume"), "holds no run to resume")


def test_eval_uses_the_runs_seed_and_set_for_its_split(tmp_path):
    from specflow.schema.loader import load_spec
    from specflow.train.evaluate import evaluate_checkpoint

    spec = spec_file(tmp_path)
    logdir = tmp_path / "run"
    ok("train", spec, "--logdir", logdir, "--steps", 2, "--seed", 11, "--set", LR)
    got = json.loads(ok("eval", spec, "--logdir", logdir, "--format", "json"))
    s = load_spec(spec, [LR, "seed=11", "train.data.seed=11"])
    _, want = evaluate_checkpoint(s, logdir)
    assert got["metrics"] == want  # the run's held-out rows, not the spec's own seed's
    _, other = evaluate_checkpoint(load_spec(spec), logdir)
    assert other != want
    one_error(cli("eval", spec, "--logdir", logdir, "--set", "train.optimizer.adam.learning_rate=0.5"),
              "trained with other flags", "differs from the run's --set")


def test_run_checkpoint_and_export_read_the_run_with_its_flags(tmp_path):
    spec = spec_file(tmp_path)
    logdir = tmp_path / "run"
    ok("train", spec, "--logdir", logdir, "--steps", 2, "--set", "nodes.hidden.units=5")
    out = tmp_path / "v.npz"
    np.save(tmp_path / "x.npy", np.zeros((2, 64), np.float32))
    # The run's --set (5 units) is applied: without it the variables would not fit the checkpoint.
    ok("run", spec, "--fetch", "hidden/kernel", "--checkpoint", logdir, "--out", out)
    np.testing.assert_array_equal(np.load(out)["hidden/kernel"], variables(logdir, 2)["hidden/kernel"])
    one_error(cli("run", spec, "--fetch", "hidden/kernel", "--checkpoint", tmp_path / "nowhere"),
              "no such directory")
    # export reads the run the same way: its variables fit without the --set given again
    ok("export", spec, "--logdir", logdir, "--out", tmp_path / "export")
    r = cli("predict", tmp_path / "export", "--input", f"images={tmp_path / 'x.npy'}", "--format", "json")
    assert r.exit_code == 0, r.output


def test_an_error_after_a_remembered_set_names_it(tmp_path):
    spec = spec_file(tmp_path)
    logdir = tmp_path / "run"
    ok("train", spec, "--logdir", logdir, "--steps", 2, "--set", "nodes.hidden.units=5")
    spec.write_text(SPEC.replace("units: 8, activation: relu}", "units: 8, activation: relu}\n"
                                 "  extra: {op: AddV2, inputs: [hidden, bias8]}")
                    .replace("  labels: {", "  bias8: {dtype: float32, shape: [null, 8]}\n  labels: {"))
    err = one_error(cli("eval", spec, "--logdir", logdir))
    assert "(with the run's --set nodes.hidden.units=5)" in err
