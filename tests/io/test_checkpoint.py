"""CheckpointManager: state file, keep policy, crash safety (simulated and a real SIGKILL)."""

from __future__ import annotations

import builtins
import io
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from specflow.errors import CheckpointError
from specflow.io.checkpoint import CheckpointManager
from specflow.io.tensor_bundle import data_filename, index_filename, write_bundle

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class FakeClock:
    def __init__(self, start: float = 1_000_000.0):
        self.now = start

    def __call__(self) -> float:
        return self.now


def _tensors(step: int) -> dict[str, np.ndarray]:
    return {"dense/kernel": np.full((4, 3), step, np.float32), "global_step": np.array(step, np.int64)}


def _steps(paths) -> list[int]:
    return [int(p.rsplit("-", 1)[1]) for p in paths]


def _bundles_on_disk(directory) -> list[int]:
    return sorted(
        int(n[len("model.ckpt-") : -len(".index")]) for n in os.listdir(directory) if n.endswith(".index")
    )


def test_save_restore_and_state_file(tmp_path):
    manager = CheckpointManager(str(tmp_path), keep=5, clock=FakeClock())
    assert manager.latest() is None and manager.all() == []
    with pytest.raises(CheckpointError, match="no checkpoint to restore"):
        manager.restore()
    path = manager.save(_tensors(10), step=10)
    assert path == manager.path_for_step(10) == str(tmp_path / "model.ckpt-10")
    assert manager.path_for_step(11) is None
    manager.save(_tensors(20), step=20)
    assert manager.latest() == str(tmp_path / "model.ckpt-20")
    assert manager.all() == [str(tmp_path / "model.ckpt-10"), str(tmp_path / "model.ckpt-20")]
    assert manager.restore()["global_step"] == 20
    assert manager.restore(path)["dense/kernel"][0, 0] == 10
    assert manager.restore("model.ckpt-10")["global_step"] == 10  # relative to the directory

    text = (tmp_path / "checkpoint").read_text()
    lines = text.splitlines()
    assert lines[:3] == [
        'model_checkpoint_path: "model.ckpt-20"',
        'all_model_checkpoint_paths: "model.ckpt-10"',
        'all_model_checkpoint_paths: "model.ckpt-20"',
    ]
    assert "all_model_checkpoint_timestamps: 1000000" in text and "last_preserved_timestamp:" in text
    # A fresh manager (a restarted process) reads the same state back.
    again = CheckpointManager(str(tmp_path))
    assert again.all() == manager.all() and again.latest() == manager.latest()


def test_keep_last_n(tmp_path):
    clock = FakeClock()
    manager = CheckpointManager(str(tmp_path), keep=3, clock=clock)
    for step in range(1, 9):
        clock.now += 60
        manager.save(_tensors(step), step)
    assert _steps(manager.all()) == [6, 7, 8]
    assert _bundles_on_disk(tmp_path) == [6, 7, 8]
    assert sorted(os.listdir(tmp_path))[0] == "checkpoint"
    assert len(os.listdir(tmp_path)) == 1 + 3 * 2


def test_keep_every_n_hours(tmp_path):
    clock = FakeClock(0.0)
    manager = CheckpointManager(str(tmp_path), keep=2, keep_every_hours=1, clock=clock)
    for step in range(1, 11):  # one save every half hour
        clock.now += 1800
        manager.save(_tensors(step), step)
    # Leaving the window, a checkpoint is kept if it is >= 1 hour after the last one kept so.
    assert _steps(manager.all()) == [2, 4, 6, 8, 9, 10]
    assert _bundles_on_disk(tmp_path) == [2, 4, 6, 8, 9, 10]

    # A restarted manager keeps the preserved ones and carries on with the same rhythm.
    manager = CheckpointManager(str(tmp_path), keep=2, keep_every_hours=1, clock=clock)
    for step in range(11, 14):
        clock.now += 1800
        manager.save(_tensors(step), step)
    assert _steps(manager.all()) == [2, 4, 6, 8, 10, 12, 13]
    assert _bundles_on_disk(tmp_path) == [2, 4, 6, 8, 10, 12, 13]


def test_smaller_keep_after_restart_sweeps_the_excess(tmp_path):
    clock = FakeClock()
    manager = CheckpointManager(str(tmp_path), keep=5, clock=clock)
    for step in range(1, 6):
        clock.now += 1
        manager.save(_tensors(step), step)
    manager = CheckpointManager(str(tmp_path), keep=2, clock=clock)
    clock.now += 1
    manager.save(_tensors(6), 6)
    assert _steps(manager.all()) == [5, 6] and _bundles_on_disk(tmp_path) == [5, 6]


def test_saving_a_listed_step_again_overwrites_it(tmp_path):
    manager = CheckpointManager(str(tmp_path), keep=3, clock=FakeClock())
    manager.save(_tensors(1), 1)
    manager.save(_tensors(2), 2)
    manager.save({"dense/kernel": np.zeros((4, 3), np.float32), "global_step": np.array(-1)}, 1)
    assert _steps(manager.all()) == [2, 1]
    assert manager.restore()["global_step"] == -1


def test_leftovers_are_ignored_then_cleaned(tmp_path):
    manager = CheckpointManager(str(tmp_path), keep=3, clock=FakeClock())
    manager.save(_tensors(1), 1)
    # What killed saves leave: temp bundle files, a temp state file, a complete but unlisted bundle.
    junk = [
        "model.ckpt-2.data-00000-of-00001.tempstate1f2e",
        "model.ckpt-2.index.tempstate99",
        "checkpoint.tmp3a4b",
    ]
    for name in junk:
        (tmp_path / name).write_bytes(b"partial")
    write_bundle(str(tmp_path / "model.ckpt-3"), _tensors(3))
    (tmp_path / "notes.txt").write_text("not ours")

    restarted = CheckpointManager(str(tmp_path), keep=3, clock=FakeClock())
    assert restarted.latest() == str(tmp_path / "model.ckpt-1")
    assert restarted.restore()["global_step"] == 1
    restarted.save(_tensors(4), 4)
    assert sorted(os.listdir(tmp_path)) == sorted(
        ["checkpoint", "notes.txt"]
        + [f"model.ckpt-{s}.{ext}" for s in (1, 4) for ext in ("index", "data-00000-of-00001")]
    )


def test_latest_skips_a_checkpoint_whose_files_vanished(tmp_path):
    manager = CheckpointManager(str(tmp_path), keep=3, clock=FakeClock())
    manager.save(_tensors(1), 1)
    manager.save(_tensors(2), 2)
    os.remove(index_filename(str(tmp_path / "model.ckpt-2")))
    assert manager.latest() == manager.path_for_step(1) == str(tmp_path / "model.ckpt-1")
    assert manager.path_for_step(2) is None
    os.remove(data_filename(str(tmp_path / "model.ckpt-1")))
    assert manager.latest() is None


def test_state_file_with_absolute_paths(tmp_path):
    """TensorFlow may write absolute paths; they are managed like relative ones."""
    for step in (1, 2):
        write_bundle(str(tmp_path / f"model.ckpt-{step}"), _tensors(step))
    (tmp_path / "checkpoint").write_text(
        f'model_checkpoint_path: "{tmp_path}/model.ckpt-2"\n'
        f'all_model_checkpoint_paths: "{tmp_path}/model.ckpt-1"\n'
        f'all_model_checkpoint_paths: "{tmp_path}/model.ckpt-2"\n'
    )
    manager = CheckpointManager(str(tmp_path), keep=2, clock=FakeClock())
    assert manager.all() == [str(tmp_path / "model.ckpt-1"), str(tmp_path / "model.ckpt-2")]
    manager.save(_tensors(3), 3)
    assert _bundles_on_disk(tmp_path) == [2, 3]
    assert 'all_model_checkpoint_paths: "model.ckpt-2"' in (tmp_path / "checkpoint").read_text()


def test_malformed_state_file(tmp_path):
    (tmp_path / "checkpoint").write_text("model_checkpoint_path: [oops\n")
    with pytest.raises(CheckpointError, match="malformed checkpoint state") as err:
        CheckpointManager(str(tmp_path))
    assert str(tmp_path / "checkpoint") in str(err.value)


def test_invalid_keep(tmp_path):
    with pytest.raises(CheckpointError, match="keep must be at least 1"):
        CheckpointManager(str(tmp_path), keep=0)


# -- crash safety -----------------------------------------------------------------------------------


class Killed(BaseException):
    """Stands for SIGKILL: raised at the n-th file-system step; once dead, every later step fails
    too, so cleanup code cannot run (as in a real kill)."""


class _TornWrite:
    """A file opened for writing whose ``write`` is a kill step: killed there, a part of the
    bytes reach the file first (so a file written in place, not temp + rename, is left torn)."""

    def __init__(self, f, step, part):
        self._f, self._step, self._part = f, step, part

    def write(self, data):
        if self._step():
            self._f.write(data[: self._part(len(data))])
            self._f.flush()
            raise Killed
        return self._f.write(data)

    def __getattr__(self, name):
        return getattr(self._f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._f.close()


def _kill_at(monkeypatch, n: int, part=lambda size: size // 2) -> None:
    calls = {"count": 0}

    def dies() -> bool:
        calls["count"] += 1
        return calls["count"] > n

    for name in ("replace", "remove", "fsync"):
        real = getattr(os, name)

        def step(*args, _real=real):
            if dies():
                raise Killed
            return _real(*args)

        monkeypatch.setattr(os, name, step)
    real_open = io.open

    def opened(file, mode="r", *args, **kwargs):
        if calls["count"] >= n + 1:  # dead already
            raise Killed
        f = real_open(file, mode, *args, **kwargs)
        return _TornWrite(f, dies, part) if any(c in mode for c in "wax+") else f

    monkeypatch.setattr(builtins, "open", opened)
    monkeypatch.setattr(io, "open", opened)


@pytest.mark.parametrize("part", [lambda size: 1, lambda size: size // 2], ids=["first-byte", "half"])
def test_a_save_killed_at_every_step_leaves_a_readable_latest(tmp_path, monkeypatch, part):
    """Kill the 3rd save (which also deletes checkpoint 1) at each of its file-system steps,
    writes included (each leaves its first byte, or half, of what it was writing)."""
    n = 0
    while True:
        directory = tmp_path / f"run{n}"
        manager = CheckpointManager(str(directory), keep=2, clock=FakeClock())
        manager.save(_tensors(1), 1)
        manager.save(_tensors(2), 2)
        with monkeypatch.context() as patch:
            _kill_at(patch, n, part)
            try:
                manager.save(_tensors(3), 3)
                finished = True
            except Killed:
                finished = False
        restarted = CheckpointManager(str(directory), keep=2, clock=FakeClock())
        latest = restarted.latest()
        step = int(latest.rsplit("-", 1)[1])
        assert step in (2, 3), n
        values = restarted.restore()
        assert values["global_step"] == step and np.all(values["dense/kernel"] == step)
        restarted.save(_tensors(4), 4)  # the next save cleans up after the killed one
        assert _bundles_on_disk(directory) == [step, 4]
        assert not [f for f in os.listdir(directory) if "tmp" in f or "tempstate" in f]
        if finished:
            break
        n += 1
    assert n >= 11  # every step of the save was hit: writes, fsyncs, renames, state, deletions


_SAVER = textwrap.dedent(
    """
    import sys
    import numpy as np
    from specflow.io.checkpoint import CheckpointManager

    manager = CheckpointManager(sys.argv[1], keep=2)
    step = int(sys.argv[2])
    while True:
        step += 1
        manager.save({"a": np.full(1_000_000, step, np.float64),
                      "b": np.full((1000, 1000), -step, np.float32)}, step)
        print(step, flush=True)
    """
)


@pytest.mark.parametrize("delay", [0.0, 0.013, 0.037])
def test_a_real_process_killed_while_saving(tmp_path, delay):
    directory = str(tmp_path)
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    last = 0
    for _ in range(2):  # a second round starts from what the first left behind
        child = subprocess.Popen(
            [sys.executable, "-c", _SAVER, directory, str(last)], stdout=subprocess.PIPE, env=env, text=True
        )
        try:
            child.stdout.readline()  # at least one save has finished
            time.sleep(delay)
            child.send_signal(signal.SIGKILL)
        finally:
            child.wait()
        manager = CheckpointManager(directory, keep=2)
        latest = manager.latest()
        last = int(latest.rsplit("-", 1)[1])
        values = manager.restore()
        assert np.all(values["a"] == last) and np.all(values["b"] == -last)
        assert values["a"].shape == (1_000_000,) and values["b"].shape == (1000, 1000)


@pytest.mark.parametrize("state", ["", "missing", 'model_checkpoint_path: "../../elsewhere"\n'])
def test_a_state_file_listing_nothing_is_rebuilt_from_the_bundles_not_swept(tmp_path, state):
    """An emptied or deleted state file next to complete bundles: they are the run's checkpoints
    (restored, kept), not a killed save's leftovers for the next save to delete."""
    manager = CheckpointManager(str(tmp_path), keep=3, clock=FakeClock())
    for step in (5, 10):
        manager.save(_tensors(step), step)
    (tmp_path / "model.ckpt-15.index.tempstate1").write_bytes(b"torn")  # a killed save's temp file
    if state == "missing":
        os.remove(tmp_path / "checkpoint")
    else:
        (tmp_path / "checkpoint").write_text(state)
    restarted = CheckpointManager(str(tmp_path), keep=3, clock=FakeClock())
    assert _steps(restarted.all()) == [5, 10]
    assert restarted.restore()["global_step"] == 10
    restarted.save(_tensors(15), 15)
    assert _bundles_on_disk(tmp_path) == [5, 10, 15]
    assert _steps(CheckpointManager(str(tmp_path), keep=3).all()) == [5, 10, 15]
