"""Files planted in a logdir or beside an output to make a command write or delete elsewhere
(the hidden checks' hostile user): a symlinked lock file, a symlinked eval/ under --overwrite, a
crafted state file, a symlinked checkpoint. Each must leave the files outside untouched."""

from __future__ import annotations

import os
from pathlib import Path

from .cli_helpers import cli, ok, one_error
from .test_user_specs import spec_file


def test_a_lock_file_planted_as_a_symlink_truncates_nothing(tmp_path):
    """`.specflow.lock` -> a file elsewhere: the lock was opened through the link and truncated,
    so `train` emptied the file the link named."""
    spec, logdir = spec_file(tmp_path), tmp_path / "run"
    victim = tmp_path / "precious.txt"
    victim.write_text("keep me\n")
    logdir.mkdir()
    os.symlink(victim, logdir / ".specflow.lock")
    one_error(cli("train", spec, "--logdir", logdir), ".specflow.lock", "symbolic link")
    assert victim.read_text() == "keep me\n"


def test_overwrite_does_not_clear_an_eval_dir_linked_elsewhere(tmp_path):
    """`train --overwrite` cleared LOGDIR/eval/'s event and checkpoint files through a symlink
    into another directory."""
    spec, logdir = spec_file(tmp_path), tmp_path / "run"
    ok("train", spec, "--logdir", logdir)
    other = tmp_path / "other_run"
    other.mkdir()
    theirs = {"events.out.tfevents.1.host": b"x", "checkpoint": b"y", "model.ckpt-5.index": b"z"}
    for name, data in theirs.items():
        (other / name).write_bytes(data)
    for p in (logdir / "eval").iterdir():
        p.unlink()
    (logdir / "eval").rmdir()
    os.symlink(other, logdir / "eval")
    ok("train", spec, "--logdir", logdir, "--overwrite")
    assert {p.name: p.read_bytes() for p in other.iterdir() if p.name in theirs} == theirs


def test_a_state_file_naming_a_path_outside_is_one_error_and_deletes_nothing(tmp_path):
    spec, logdir = spec_file(tmp_path), tmp_path / "run"
    ok("train", spec, "--logdir", logdir)
    outside = tmp_path / "etc"
    outside.mkdir()
    (outside / "passwd.index").write_text("root")
    (logdir / "checkpoint").write_text('model_checkpoint_path: "../etc/passwd"\n'
                                       'all_model_checkpoint_paths: "../etc/passwd"\n')
    for cmd in (("train", spec, "--logdir", logdir, "--steps", 8), ("eval", spec, "--logdir", logdir),
                ("export", spec, "--logdir", logdir, "--out", tmp_path / "exp")):
        one_error(cli(*cmd), "passwd")
    assert (outside / "passwd.index").read_text() == "root"
    assert not Path(tmp_path / "exp").exists()


def test_overwrite_refuses_a_symlinked_event_file_before_removing_anything(tmp_path):
    """A symlinked `events.out.tfevents.*` (or a `checkpoint` directory) is not the run's to
    remove, so `clear` left it, and the fresh trainer then refused the logdir as "already holds
    a training run": --overwrite had deleted the old run's checkpoints and started no new one."""
    spec, logdir = spec_file(tmp_path), tmp_path / "run"
    ok("train", spec, "--logdir", logdir)
    victim = tmp_path / "elsewhere.events"
    victim.write_bytes(b"theirs")
    os.symlink(victim, logdir / "events.out.tfevents.1.planted")
    before = sorted(p.name for p in logdir.iterdir())
    one_error(cli("train", spec, "--logdir", logdir, "--overwrite"), "--overwrite", "events.out.tfevents.1.planted")
    assert sorted(p.name for p in logdir.iterdir()) == before  # the old run is all there
    assert victim.read_bytes() == b"theirs"
    assert "already at step 4; nothing to do" in ok("train", spec, "--logdir", logdir)


SAVING_SPEC = """
specflow: 1
name: saver
inputs:
  x: {{dtype: float32, shape: [2]}}
nodes:
  w: {{op: {op}, inputs: [{{op: Const, value: {a}, dtype: string}}, {{op: Const, value: {b}, dtype: string}}{more}]}}
  y: {{op: Identity, inputs: [x], after: [w]}}
signatures:
  serving_default: {{inputs: {{x: x}}, outputs: {{y: y}}}}
"""


def test_a_spec_does_not_write_or_delete_files_at_paths_it_names(tmp_path):
    """A spec node SaveV2 wrote a bundle wherever the spec said, and MergeV2Checkpoints merged a
    bundle outside into another and deleted it, with its directory: `specflow run` of someone
    else's spec deleted the user's checkpoint. Refused at the node's line, by every command."""
    import numpy as np

    victim_dir = tmp_path / "theirs"
    victim_dir.mkdir()
    bundle = {"ckpt-1.index": b"index", "ckpt-1.data-00000-of-00001": b"data"}
    for name, data in bundle.items():
        (victim_dir / name).write_bytes(data)
    np.save(tmp_path / "x.npy", np.ones(2, np.float32))
    specs = {
        "SaveV2": SAVING_SPEC.format(op="SaveV2", a=f'"{tmp_path / "out" / "written"}"', b='["x"]',
                                     more=', {op: Const, value: [""], dtype: string}, x'),
        "MergeV2Checkpoints": SAVING_SPEC.format(op="MergeV2Checkpoints", a=f'["{victim_dir / "ckpt-1"}"]',
                                                 b=f'"{tmp_path / "stolen"}"', more=""),
    }
    for op, text in specs.items():
        spec = spec_file(tmp_path, text, f"{op}.yaml")
        for cmd in (("validate", spec), ("run", spec, "--fetch", "y", "--feed", f"x={tmp_path / 'x.npy'}"),
                    ("export", spec, "--out", tmp_path / "export")):
            one_error(cli(*cmd), f"{op}.yaml:7:3: node 'w': {op} would write or delete files")
    assert {p.name: p.read_bytes() for p in victim_dir.iterdir()} == bundle
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob("stolen*"))
    assert not (tmp_path / "export").exists()
