"""sf.train.Checkpoint: Python modules round trip; a `specflow train` checkpoint restores into
sf.load(spec), and a checkpoint saved from it resumes `specflow train` (the CLI through CliRunner)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import specflow as sf
from specflow.cli import app
from specflow.errors import CheckpointError
from specflow.io.checkpoint import CheckpointManager

SPEC = Path(__file__).resolve().parents[2] / "models" / "digits_mlp.yaml"


class Net(sf.Module):
    def __init__(self, seed):
        super().__init__()
        rng = np.random.default_rng(seed)
        self.layers = [sf.Variable(rng.normal(size=(2, 3)).astype(np.float32)), sf.Variable(np.float32(seed))]
        self.count = sf.Variable(np.int64(seed), trainable=False)


def test_python_module_round_trip(tmp_path):
    a, b = Net(1), Net(2)
    ckpt = sf.train.Checkpoint(model=a)
    prefix = ckpt.save(tmp_path)
    assert Path(prefix).name == "model.ckpt-1"
    assert sorted(CheckpointManager(str(tmp_path)).restore()) == ["model/count", "model/layers/0", "model/layers/1"]
    sf.train.Checkpoint(model=b).restore(tmp_path)
    for x, y in zip(a.variables, b.variables):
        np.testing.assert_array_equal(x.numpy(), y.numpy())
    with pytest.raises(CheckpointError, match="no value for 'other/count'"):
        sf.train.Checkpoint(other=Net(3)).restore(prefix)


def test_cli_checkpoints_restore_into_a_loaded_spec_and_back(tmp_path):
    logdir = tmp_path / "run"
    cmd = ["train", str(SPEC), "--logdir", str(logdir), "--steps", "3"]
    run = CliRunner().invoke(app, cmd)
    assert run.exit_code == 0, run.output
    m = sf.load(SPEC)
    sf.train.Checkpoint(model=m).restore(logdir)
    saved = CheckpointManager(str(logdir)).restore()
    named = m.named_variables()
    np.testing.assert_array_equal(named["hidden/kernel"].numpy(), saved["hidden/kernel"])
    assert int(named["global_step"].numpy()) == 3
    # Saved from Python with the spec's names, the CLI resumes from it.
    m.train_step(images=np.zeros((2, 64), np.float32), labels=np.zeros(2, np.int64))
    sf.train.Checkpoint(model=m).save(logdir, step=4)
    assert int(CheckpointManager(str(logdir)).restore()["global_step"]) == 4
    resumed = CliRunner().invoke(app, cmd[:-1] + ["5", "--resume"])
    assert resumed.exit_code == 0, resumed.output
    assert int(CheckpointManager(str(logdir)).restore()["global_step"]) == 5
