"""A crafted ``checkpoint`` state file (issue 15, item 2): paths it lists are confined to the
directory, and the keep policy deletes only the manager's own ``PREFIX-STEP`` files."""

from __future__ import annotations

import os

import numpy as np
import pytest

from specflow.errors import CheckpointError
from specflow.io.checkpoint import CheckpointManager
from specflow.io.tensor_bundle import write_bundle


def _victims(directory) -> list[str]:
    """Files a hostile state file points at: a bundle-looking pair and a plain file."""
    os.makedirs(directory, exist_ok=True)
    write_bundle(os.path.join(directory, "precious"), {"a": np.zeros(3, np.float32)})
    with open(os.path.join(directory, "notes.txt"), "w") as f:
        f.write("keep me")
    return sorted(os.listdir(directory))


@pytest.mark.parametrize("listed", ["{outside}/precious", "../outside/precious", "sub/../../outside/precious",
                                    "link/precious", "{outside}/notes.txt", "..", ""])
def test_a_state_file_pointing_outside_is_refused_and_nothing_is_deleted(tmp_path, listed):
    outside, logdir = tmp_path / "outside", tmp_path / "logdir"
    before = _victims(outside)
    logdir.mkdir()
    os.symlink(outside, logdir / "link")
    listed = listed.format(outside=outside)
    (logdir / "checkpoint").write_text(
        f'model_checkpoint_path: "{listed}"\n' + f'all_model_checkpoint_paths: "{listed}"\n' * 3
    )
    with pytest.raises(CheckpointError, match="outside|the directory itself") as err:
        CheckpointManager(str(logdir), keep=1)
    assert repr(listed) in err.value.format() and str(logdir / "checkpoint") in err.value.format()
    assert "\n" not in err.value.format()
    assert sorted(os.listdir(outside)) == before


def test_listed_names_the_manager_did_not_write_are_unlisted_but_never_deleted(tmp_path):
    """In the directory, but not PREFIX-STEP: the keep policy may drop them from the list, but
    never deletes their files."""
    logdir = str(tmp_path)
    before = _victims(logdir)
    (tmp_path / "checkpoint").write_text(  # timestamps after last_preserved: up for deletion
        'all_model_checkpoint_paths: "precious"\nall_model_checkpoint_paths: "notes.txt"\n'
        'all_model_checkpoint_paths: "./sub/model.ckpt-7"\n' + "all_model_checkpoint_timestamps: 2e9\n" * 3
        + "last_preserved_timestamp: 1e9\n"
    )
    os.makedirs(tmp_path / "sub")
    write_bundle(str(tmp_path / "sub" / "model.ckpt-7"), {"a": np.zeros(1, np.float32)})
    manager = CheckpointManager(logdir, keep=1)
    for step in (1, 2, 3):
        manager.save({"a": np.full(2, step, np.float32)}, step)
    assert manager.all() == [str(tmp_path / "model.ckpt-3")]
    assert set(before) <= set(os.listdir(logdir))  # precious.index, .data, notes.txt survive
    assert sorted(os.listdir(tmp_path / "sub")) == ["model.ckpt-7.data-00000-of-00001", "model.ckpt-7.index"]
    assert not os.path.exists(tmp_path / "model.ckpt-1.index")  # its own old checkpoints do go


def test_the_state_files_own_checkpoints_inside_are_still_managed(tmp_path):
    """Absolute or ``./`` paths that resolve inside the directory are as good as relative ones."""
    for step in (1, 2):
        write_bundle(str(tmp_path / f"model.ckpt-{step}"), {"a": np.full(1, step, np.float32)})
    (tmp_path / "checkpoint").write_text(
        f'all_model_checkpoint_paths: "{tmp_path}/model.ckpt-1"\nall_model_checkpoint_paths: "./model.ckpt-2"\n'
    )
    manager = CheckpointManager(str(tmp_path), keep=2)
    assert manager.restore()["a"][0] == 2
    manager.save({"a": np.full(1, 3, np.float32)}, 3)
    assert not os.path.exists(tmp_path / "model.ckpt-1.index")
    assert os.path.exists(tmp_path / "model.ckpt-2.index")


def test_train_resume_with_a_crafted_state_file_deletes_nothing_outside(tmp_path):
    """The issue's exploit end to end: `train --resume` on a logdir whose state file lists
    files elsewhere used to garbage-collect them as old checkpoints."""
    from specflow.schema.loader import load_spec_text
    from specflow.train.loop import Trainer, TrainOptions
    from tests.train.test_loop import DROPOUT_SPEC

    spec = load_spec_text(DROPOUT_SPEC, str(tmp_path / "m.yaml"))
    logdir, outside = tmp_path / "run", tmp_path / "outside"
    Trainer(spec, TrainOptions(logdir=logdir, steps=10)).run()
    before = _victims(outside)
    state = (logdir / "checkpoint").read_text()
    crafted = "".join(f'all_model_checkpoint_paths: "{outside}/precious"\n' for _ in range(5))
    (logdir / "checkpoint").write_text(crafted + state)
    with pytest.raises(CheckpointError, match="outside"):
        Trainer(spec, TrainOptions(logdir=logdir, steps=40, resume=True)).run()
    assert sorted(os.listdir(outside)) == before
