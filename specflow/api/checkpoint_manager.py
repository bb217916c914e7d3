"""sf.train.CheckpointManager: TensorFlow 2's ``tf.train.CheckpointManager`` over io/checkpoint's
CheckpointManager (atomic bundle and state-file writes, the keep policy), for an
sf.train.Checkpoint.

``save()`` adds one to the checkpoint's ``save_counter`` and writes ``<directory>/<checkpoint_name>-N``
(N: ``checkpoint_number``, default the counter), lists it in the directory's ``checkpoint`` state
file (with timestamps, as TF's manager), then deletes the managed checkpoints beyond
``max_to_keep`` (None keeps all; ``keep_checkpoint_every_n_hours`` preserves one that long after
the last preserved). A new manager on the same directory takes over the state file's list, as
TF's does.

Deletion is narrower than TF's: only ``<checkpoint_name>-N.index`` / ``.data-*`` files directly in
the directory that the state file lists (or this manager wrote); a listed checkpoint of another
name falls out of the list but stays on disk, unlisted bundles are never touched (io's manager,
which owns a training logdir, would sweep them as leftovers of a killed save), and a state file
listing a path outside the directory is refused.
"""

from __future__ import annotations

import contextlib
import os
import sys

import numpy as np

from specflow.errors import CheckpointError
from specflow.io import checkpoint as io_checkpoint
from specflow.io.tensor_bundle import TEMP_MARKER


class _ManagedDirectory(io_checkpoint.CheckpointManager):
    """io's manager, except that it never adopts or deletes bundles the state file does not list."""

    def _found_on_disk(self) -> list:
        return []  # TF reads the state file only

    def _remove_leftovers(self) -> None:
        for entry in os.listdir(self.directory):
            mine = self._file_re.match(entry) and TEMP_MARKER in entry  # a killed save's temp files
            if mine or entry.startswith(io_checkpoint.STATE_FILENAME + ".tmp"):
                with contextlib.suppress(FileNotFoundError):
                    os.remove(os.path.join(self.directory, entry))

    def recent(self) -> list[str]:
        """The managed (not preserved) checkpoints' names, oldest first."""
        return [name for name, _ in self._recent]


class CheckpointManager:
    def __init__(self, checkpoint, directory, max_to_keep, keep_checkpoint_every_n_hours=None,
                 checkpoint_name: str = "ckpt", step_counter=None, checkpoint_interval=None, init_fn=None,
                 last_checkpoint_step=None):
        from specflow.api.checkpoint import Checkpoint

        if not isinstance(checkpoint, Checkpoint):
            raise CheckpointError(f"CheckpointManager: expected an sf.train.Checkpoint, got a {type(checkpoint).__name__}")
        if max_to_keep is not None and int(max_to_keep) <= 0:
            raise CheckpointError(f"Expected a positive integer or `None` for `max_to_keep`, got {max_to_keep}.")
        if checkpoint_interval is not None and step_counter is None:
            raise CheckpointError("`step_counter` should be passed if `checkpoint_interval` is not None.")
        if not checkpoint_name or os.sep in checkpoint_name or checkpoint_name in (".", ".."):
            raise CheckpointError(f"CheckpointManager: checkpoint_name must be a file name, got {checkpoint_name!r}")
        self._checkpoint = checkpoint
        self._directory = os.fspath(directory)
        self._max_to_keep = max_to_keep
        self._checkpoint_name = checkpoint_name
        self._step_counter = step_counter
        self._checkpoint_interval = checkpoint_interval
        self._last_checkpoint_step = last_checkpoint_step
        self._init_fn = init_fn
        self._dir = _ManagedDirectory(self._directory, keep=sys.maxsize if max_to_keep is None else int(max_to_keep),
                                      keep_every_hours=keep_checkpoint_every_n_hours, prefix=checkpoint_name)

    @property
    def directory(self) -> str:
        return self._directory

    @property
    def checkpoint(self):
        return self._checkpoint

    @property
    def checkpoint_interval(self):
        return self._checkpoint_interval

    def _path(self, absolute: str) -> str:
        """A checkpoint path as TF gives it: the directory as given, joined to its name."""
        return os.path.join(self._directory, os.path.relpath(absolute, self._dir.directory))

    @property
    def latest_checkpoint(self) -> str | None:
        """The newest checkpoint's path (None if none): what ``sf.train.latest_checkpoint``
        of the directory returns, for ``checkpoint.restore``."""
        latest = self._dir.latest()
        return None if latest is None else self._path(latest)

    @property
    def checkpoints(self) -> list[str]:
        """The managed checkpoints' paths, oldest first (not those kept for good by
        ``keep_checkpoint_every_n_hours``)."""
        return [os.path.join(self._directory, name) for name in self._dir.recent()]

    def save(self, checkpoint_number=None, check_interval: bool = True, options=None) -> str | None:
        """Write a checkpoint numbered ``checkpoint_number`` (an int or an integer variable or
        tensor; default the checkpoint's ``save_counter``, which goes up by one either way), then
        sweep. Returns its path; None when ``checkpoint_interval`` steps have not passed."""
        if self._checkpoint_interval is not None:
            step = _int(self._step_counter)
            if self._last_checkpoint_step is not None:
                if step == self._last_checkpoint_step:
                    return None
                if check_interval and step < self._last_checkpoint_step + self._checkpoint_interval:
                    return None
            self._last_checkpoint_step = step
        counter = self._checkpoint.save_counter
        counter.assign_add(np.int64(1))
        number = _int(counter if checkpoint_number is None else checkpoint_number)
        return self._path(self._dir.save(self._checkpoint._bundle(), number))

    def restore_or_initialize(self) -> str | None:
        """Restore the latest checkpoint and return its path; without one, call ``init_fn``
        (when given) and return None."""
        latest = self.latest_checkpoint
        if latest is not None:
            self._checkpoint.restore(latest)
            if self._checkpoint_interval is not None:
                self._last_checkpoint_step = _int(self._step_counter)
            return latest
        if self._init_fn is not None:
            self._init_fn()
        return None

    def sync(self) -> None:
        """Wait for pending saves (none: saves are synchronous)."""


def _int(value) -> int:
    if hasattr(value, "numpy"):
        value = value.numpy()
    return int(np.asarray(value))
