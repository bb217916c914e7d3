"""sf.train.Checkpoint: Python modules round trip in TensorFlow's layout (``<prefix>-N`` files, the
``checkpoint`` state file, object-graph keys); a `specflow train` checkpoint restores into
sf.load(spec), and a checkpoint saved from it resumes `specflow train` (the CLI through CliRunner).
More of TF's API (write/read, load statuses, CheckpointManager): test_checkpoint_tf_api.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import specflow as sf
from specflow.cli import app
from specflow.io.checkpoint import CheckpointManager

SPEC = Path(__file__).resolve().parents[2] / "models" / "digits_mlp.yaml"


class Net(sf.Module):
    def __init__(self, seed):
        super().__init__()
        rng = np.random.default_rng(seed)
        self.layers = [sf.Variable(rng.normal(size=(2, 3)).astype(np.float32)), sf.Variable(np.float32(seed))]
        self.count = sf.Variable(np.int64(seed), trainable=False)


def test_python_module_round_trip(tmp_path):
    """TF's layout: save(prefix) writes <prefix>-N (N: save_counter) and the state file beside it
    (before: the prefix was taken for a directory, holding model.ckpt-N); variables under TF's
    object-graph keys, save_counter too. A missing value is not an error at restore (TF's), but
    assert_consumed() says so."""
    a, b = Net(1), Net(2)
    ckpt = sf.train.Checkpoint(model=a)
    prefix = ckpt.save(tmp_path / "ckpt")
    assert prefix == str(tmp_path / "ckpt-1") and int(ckpt.save_counter.numpy()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint", "ckpt-1.data-00000-of-00001", "ckpt-1.index"]
    assert sorted(CheckpointManager(str(tmp_path), prefix="ckpt").restore()) == [
        "_CHECKPOINTABLE_OBJECT_GRAPH", "model/count/.ATTRIBUTES/VARIABLE_VALUE",
        "model/layers/0/.ATTRIBUTES/VARIABLE_VALUE", "model/layers/1/.ATTRIBUTES/VARIABLE_VALUE",
        "save_counter/.ATTRIBUTES/VARIABLE_VALUE"]
    assert sf.train.latest_checkpoint(tmp_path) == prefix
    restored = sf.train.Checkpoint(model=b)
    restored.restore(sf.train.latest_checkpoint(tmp_path)).assert_consumed()
    for x, y in zip(a.variables, b.variables):
        np.testing.assert_array_equal(x.numpy(), y.numpy())
    assert int(restored.save_counter.numpy()) == 1  # numbering goes on from the checkpoint's
    assert restored.save(tmp_path / "ckpt") == str(tmp_path / "ckpt-2")
    status = sf.train.Checkpoint(other=Net(3)).restore(prefix)
    with pytest.raises(AssertionError, match="not bound to checkpointed values"):
        status.assert_consumed()


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
    manager = sf.train.CheckpointManager(sf.train.Checkpoint(model=m), logdir, max_to_keep=5,
                                         checkpoint_name="model.ckpt")
    assert manager.save(checkpoint_number=4) == str(logdir / "model.ckpt-4")
    saved = CheckpointManager(str(logdir)).restore()  # by the spec's names, no object graph
    assert set(saved) == {*named, "save_counter"}
    assert int(CheckpointManager(str(logdir)).restore()["global_step"]) == 4
    resumed = CliRunner().invoke(app, cmd[:-1] + ["5", "--resume"])
    assert resumed.exit_code == 0, resumed.output
    assert int(CheckpointManager(str(logdir)).restore()["global_step"]) == 5


def _adam_model():
    rng = np.random.default_rng(0)

    class Net(sf.Module):
        def __init__(self):
            super().__init__()
            self.w = sf.Variable(rng.normal(size=(3, 2)).astype(np.float32))
            self.b = sf.Variable(np.zeros(2, np.float32))

        def __call__(self, x):
            return sf.tanh(sf.matmul(x, self.w) + self.b)

    net, opt = Net(), sf.optimizers.Adam(0.1)

    @sf.function
    def step(x, y):
        with sf.GradientTape() as tape:
            loss = sf.reduce_mean(sf.square(net(x) - y))
        opt.apply_gradients(zip(tape.gradient(loss, net.trainable_variables), net.trainable_variables))
        return loss

    return net, opt, step


def test_a_fresh_model_and_optimizer_restored_continue_as_if_never_stopped(tmp_path):
    """The optimizer's slots are made on its first step, after the restore: they take the
    checkpoint's moments then (TF's deferred restoration). Before, they restarted from zero and
    the resumed curve drifted (0.0348 for 0.0384 at the second step)."""
    x = np.random.default_rng(1).normal(size=(8, 3)).astype(np.float32)
    y = np.full((8, 2), 0.5, np.float32)
    net, opt, step = _adam_model()
    for _ in range(3):
        step(x, y)
    sf.train.Checkpoint(model=net, optimizer=opt).save(tmp_path / "ckpt")
    uninterrupted = [float(step(x, y)) for _ in range(3)]
    net2, opt2, step2 = _adam_model()
    status = sf.train.Checkpoint(model=net2, optimizer=opt2).restore(sf.train.latest_checkpoint(tmp_path))
    assert int(opt2.iterations) == 3
    status.assert_existing_objects_matched()
    with pytest.raises(AssertionError, match="Unresolved object in checkpoint"):
        status.assert_consumed()  # the slots' values wait for the slots
    resumed = [float(step2(x, y)) for _ in range(3)]
    status.assert_consumed()
    assert resumed == uninterrupted
    np.testing.assert_array_equal(net2.w.numpy(), net.w.numpy())
    assert sf.train.latest_checkpoint(tmp_path / "none") is None
