"""Checkpoints: numbered tensor bundles in a directory, a ``checkpoint`` state file, a keep policy.

A save writes ``DIR/model.ckpt-STEP.{data-00000-of-00001,index}`` (see ``tensor_bundle``), then
replaces the state file, then deletes checkpoints that left the keep window. Each step is
atomic (temp file, fsync, rename), so a crash at any point leaves a state file that names only
complete bundles: ``latest()`` is always readable. The state file is TensorFlow's text-format
``CheckpointState`` with paths relative to the directory, so TensorFlow tools read it too::

    model_checkpoint_path: "model.ckpt-300"
    all_model_checkpoint_paths: "model.ckpt-100"
    ...
    all_model_checkpoint_timestamps: 1700000000.5
    last_preserved_timestamp: 1699990000.0

Keep policy (TensorFlow's Saver): the newest ``keep`` checkpoints are kept; one falling out of
that window is kept for good if it is at least ``keep_every_hours`` newer than the last one so
preserved. Preserved checkpoints stay listed (oldest first) in ``all()``.

A state file that lists no checkpoint (missing, emptied) while complete bundles sit in the
directory is rebuilt from them (by step), so they are restored and kept rather than swept away
as leftovers of a killed save.

The state file is input, not trusted: every path it lists must resolve (symlinks followed) to
inside the directory, else the manager refuses to start, naming the path. The keep policy deletes
only files the manager names itself, ``PREFIX-STEP.index`` and ``PREFIX-STEP.data-NNNNN-of-NNNNN``
directly in the directory; a listed checkpoint of any other name falls out of the list but
stays on disk.
"""

from __future__ import annotations

import os
import re
import secrets
import time
from collections.abc import Callable, Mapping

import numpy as np
from google.protobuf import text_format

from specflow.errors import CheckpointError, Location
from specflow.io.extra_protos import CheckpointState
from specflow.io.tensor_bundle import (
    TEMP_MARKER,
    fsync_dir,
    index_filename,
    read_bundle,
    write_bundle,
    write_synced,
)
from specflow.io.tensor_slices import SliceSpec

STATE_FILENAME = "checkpoint"
_STATE_TEMP = STATE_FILENAME + ".tmp"


class CheckpointManager:
    """Saves numbered checkpoints into ``directory`` and restores the latest (or a given) one.

    One manager (one process) writes a directory at a time. ``clock`` returns seconds since the
    epoch; tests inject it to exercise ``keep_every_hours``.
    """

    def __init__(
        self,
        directory: str,
        keep: int = 5,
        keep_every_hours: float | None = None,
        prefix: str = "model.ckpt",
        clock: Callable[[], float] = time.time,
    ):
        if keep < 1:
            raise CheckpointError(f"keep must be at least 1, got {keep}")
        self.directory = os.path.abspath(directory)
        self.keep = keep
        self.keep_every_hours = keep_every_hours
        self.prefix = prefix
        self.clock = clock
        # Our own files: PREFIX-STEP.index / .data-*, possibly with a temp suffix.
        self._file_re = re.compile(
            rf"^{re.escape(prefix)}-(\d+)\.(?:index|data-\d{{5}}-of-\d{{5}})(?:{re.escape(TEMP_MARKER)}\w*)?$"
        )
        # The names the keep policy may delete: a step's prefix, its data files.
        self._own_re = re.compile(rf"{re.escape(prefix)}-\d+")
        self._data_re = re.compile(r"\.data-\d{5}-of-\d{5}")
        state = self._read_state()
        stamps = list(state.all_model_checkpoint_timestamps)
        if len(stamps) != len(state.all_model_checkpoint_paths):  # written without timestamps
            stamps = [clock()] * len(state.all_model_checkpoint_paths)
        # Paths are kept relative to the directory (TensorFlow may have written absolute ones).
        paths = [self._confined(p) for p in state.all_model_checkpoint_paths]
        entries = list(zip(paths, stamps)) or self._found_on_disk()
        self._last_preserved = state.last_preserved_timestamp or clock()
        # (relative prefix, timestamp), oldest first. Older than the recent window means preserved
        # by an earlier sweep; a later stamp means a previous manager had a larger `keep`, so
        # those are still up for deletion.
        older = entries[: max(len(entries) - keep, 0)]
        self._preserved = [e for e in older if e[1] <= self._last_preserved]
        self._recent = [e for e in entries if e not in self._preserved]

    def _found_on_disk(self) -> list[tuple[str, float]]:
        """The complete bundles in the directory, oldest step first, when the state file lists
        none (missing, emptied, or naming no kept checkpoint): they are the run's checkpoints, not
        leftovers, and the next save must not delete them."""
        try:
            names = os.listdir(self.directory)
        except OSError:
            return []
        steps = sorted({int(m.group(1)) for m in map(self._file_re.match, names)
                        if m and TEMP_MARKER not in m.group(0)})  # fmt: skip
        found = []
        for step in steps:
            path = self._prefix_for_step(step)
            if _complete(path):
                found.append((os.path.basename(path), os.path.getmtime(index_filename(path))))
        return found

    # -- paths --------------------------------------------------------------------------------

    def path_for_step(self, step: int) -> str | None:
        """The kept checkpoint saved at ``step`` (its files present), or None."""
        path = self._prefix_for_step(step)
        return path if path in self.all() and _complete(path) else None

    def _prefix_for_step(self, step: int) -> str:
        return os.path.join(self.directory, f"{self.prefix}-{int(step)}")

    def _abs(self, path: str) -> str:
        return path if os.path.isabs(path) else os.path.join(self.directory, path)

    def _confined(self, path: str) -> str:
        """A path read from the state file, relative to the directory; CheckpointError if it
        resolves (``..``, an absolute path, a symlinked directory) to anywhere outside it."""
        root = os.path.realpath(self.directory)
        resolved = os.path.realpath(self._abs(path))
        if not path or os.path.commonpath([root, resolved]) != root or resolved == root:
            where = "the directory itself" if resolved == root else f"outside {self.directory}"
            raise CheckpointError(f"the checkpoint state lists {path!r}, which is {where}; refusing to use it",
                                  location=Location(self._state_path()))
        return os.path.relpath(resolved, root)

    def all(self) -> list[str]:
        """Every kept checkpoint prefix (absolute), oldest first."""
        return [self._abs(p) for p, _ in self._preserved + self._recent]

    def latest(self) -> str | None:
        """The newest kept checkpoint whose files are all present, or None."""
        return next((path for path in reversed(self.all()) if _complete(path)), None)

    # -- save / restore -----------------------------------------------------------------------

    def save(self, tensors: Mapping[str, np.ndarray], step: int, write: Callable[[str], None] | None = None,
             slices: Mapping[str, SliceSpec] | None = None) -> str:  # fmt: skip
        """Write ``tensors`` as checkpoint ``step``; returns its prefix. A write failure (a full
        disk) is a CheckpointError and leaves the previous checkpoints and state as they were.
        ``slices``: the tensors that are slices of a larger one (``write_bundle``).
        ``write(prefix)``, when given, writes the bundle instead (a sharded save: each ps task
        its own data file); it must rename the index into place last, as ``write_bundle`` does."""
        try:
            return self._save(tensors, step, write, slices)
        except OSError as e:
            raise CheckpointError(f"cannot write checkpoint {step}: {e.strerror or e}",
                                  location=Location(self.directory)) from None

    def _save(self, tensors: Mapping[str, np.ndarray], step: int, write=None, slices=None) -> str:
        os.makedirs(self.directory, exist_ok=True)
        self._remove_leftovers()
        path = self._prefix_for_step(step)
        name = os.path.basename(path)
        if name in self._names():
            # Overwriting a listed checkpoint: unlist it first, so a crash mid-write never leaves
            # the state file naming a half-replaced bundle.
            self._preserved = [e for e in self._preserved if e[0] != name]
            self._recent = [e for e in self._recent if e[0] != name]
            self._write_state()
        if write is not None:
            write(path)
        else:
            write_bundle(path, tensors, slices)
        self._recent.append((name, self.clock()))
        doomed = self._sweep()
        self._write_state()
        for old in doomed:
            self._delete(old)
        return path

    def restore(self, path: str | None = None) -> dict[str, np.ndarray]:
        """The tensors of checkpoint ``path`` (default: the latest)."""
        if path is None:
            path = self.latest()
            if path is None:
                raise CheckpointError("no checkpoint to restore", location=Location(self.directory))
        return read_bundle(self._abs(path))

    # -- keep policy --------------------------------------------------------------------------

    def _sweep(self) -> list[str]:
        """Move checkpoints out of the recent window: preserve or doom each; returns the doomed."""
        doomed = []
        while len(self._recent) > self.keep:
            name, stamp = self._recent.pop(0)
            hours = self.keep_every_hours
            if hours is not None and stamp - hours * 3600.0 >= self._last_preserved:
                self._last_preserved = stamp
                self._preserved.append((name, stamp))
            else:
                doomed.append(name)
        return doomed

    def _names(self) -> set[str]:
        return {p for p, _ in self._preserved + self._recent}

    # -- files --------------------------------------------------------------------------------

    def _state_path(self) -> str:
        return os.path.join(self.directory, STATE_FILENAME)

    def _read_state(self):
        state = CheckpointState()
        path = self._state_path()
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except FileNotFoundError:
            return state
        except (OSError, UnicodeDecodeError) as e:
            raise CheckpointError(f"cannot read checkpoint state: {e}", location=Location(path)) from None
        try:
            text_format.Parse(text, state)
        except text_format.ParseError as e:
            raise CheckpointError(f"malformed checkpoint state: {e}", location=Location(path)) from None
        return state

    def _write_state(self) -> None:
        kept = self._preserved + self._recent
        state = CheckpointState(
            all_model_checkpoint_paths=[p for p, _ in kept],
            all_model_checkpoint_timestamps=[t for _, t in kept],
            last_preserved_timestamp=self._last_preserved,
        )
        if kept:
            state.model_checkpoint_path = kept[-1][0]
        tmp = os.path.join(self.directory, _STATE_TEMP + secrets.token_hex(8))
        try:
            write_synced(tmp, [text_format.MessageToString(state).encode("utf-8")])
            os.replace(tmp, self._state_path())
        except OSError:
            _remove(tmp)
            raise
        fsync_dir(self.directory)

    def _delete(self, name: str) -> None:
        """Delete checkpoint ``name``'s files, if it is one of ours (``PREFIX-STEP``, directly
        in the directory): a name only the state file gave is unlisted, never deleted."""
        if not self._own_re.fullmatch(name):
            return
        # The index goes first: without it the bundle no longer looks complete to anyone.
        prefix = os.path.join(self.directory, name)
        _remove(index_filename(prefix))
        for entry in os.listdir(self.directory):
            if entry.startswith(name) and self._data_re.fullmatch(entry[len(name):]):
                _remove(os.path.join(self.directory, entry))

    def _remove_leftovers(self) -> None:
        """Delete what a killed save left: temp files, and bundles the state file never listed."""
        listed = self._names()
        for entry in os.listdir(self.directory):
            match = self._file_re.match(entry)
            leftover = match and (TEMP_MARKER in entry or f"{self.prefix}-{match.group(1)}" not in listed)
            if leftover or entry.startswith(_STATE_TEMP):
                _remove(os.path.join(self.directory, entry))


def _complete(prefix: str) -> bool:
    """Both files of the bundle are present (a save renames the index last)."""
    directory, base = os.path.split(prefix)
    if not os.path.exists(index_filename(prefix)):
        return False
    return any(e.startswith(base + ".data-") and TEMP_MARKER not in e for e in os.listdir(directory))


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass
