"""One training run per logdir: an exclusive OS file lock held for the life of the run.

Two trainers writing one logdir overwrite each other's checkpoints and state file. ``flock`` on
``LOGDIR/.specflow.lock`` is released by the kernel when the holder exits, however it exits
(kill -9 included), so a crashed run never leaves a stale lock; the file only records the
holder's pid for the message the next trainer gets.
"""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

from specflow.errors import Location, TrainingError

LOCK_FILENAME = ".specflow.lock"


class LogdirLock:
    """``with LogdirLock(logdir):`` holds the lock, or raises TrainingError naming the holder."""

    def __init__(self, logdir: Path | str):
        self.logdir = Path(logdir)
        self.path = self.logdir / LOCK_FILENAME
        self._fd: int | None = None

    def acquire(self) -> None:
        if self.logdir.exists() and not self.logdir.is_dir():
            raise TrainingError("not a directory (the logdir holds the run's checkpoints and summaries)",
                                location=Location(str(self.logdir)))
        try:
            self.logdir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise TrainingError(f"cannot create the logdir: {e.strerror} (choose a directory you can write to)",
                                location=Location(str(self.logdir))) from None
        try:  # O_NOFOLLOW: a lock file planted as a symlink must not truncate the file it names
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        except OSError as e:
            why = "it is a symbolic link (remove it)" if e.errno == errno.ELOOP else e.strerror
            raise TrainingError(f"cannot lock the logdir: {why}", location=Location(str(self.path))) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            holder = _read_pid(fd)
            os.close(fd)
            if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise TrainingError(f"cannot lock the logdir: {e.strerror}", location=Location(str(self.path))) from None
            who = f"pid {holder}" if holder else "another process"
            raise TrainingError(f"logdir {self.logdir} in use by {who} (one training run per logdir)") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the last descriptor drops the lock
            self._fd = None

    def __enter__(self) -> LogdirLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None
