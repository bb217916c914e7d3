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
