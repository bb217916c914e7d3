"""The Ray processes a client started go when it goes, even by ``kill -9``.

A private Ray (``train --cluster local:...``) is a tree of processes under the client: the GCS,
the raylet, Ray's dashboard and runtime-env agents, the task actors. Ray's own reaper takes the
GCS and the raylet with a killed client, and the actors follow their raylet, but the two agents,
seeing their raylet gone, first try to report it to the GCS that is gone too, and wait 60 s for
it (Ray hard-codes that timeout): a user who reran the command found them still there.

So after a private ``ray.init`` the client starts this small watcher (stdlib only, its own
session so a Ctrl-C on the terminal does not reach it) with the Ray processes it has then, each
with its start time (a pid reused meanwhile is left alone), and keeps a pipe to it open. When
the pipe closes (the client exited, however it died, or shut Ray down), the watcher gives Ray's
own shutdown a moment and then kills whichever of those processes remain.
"""

from __future__ import annotations

import os
import subprocess
import sys

GRACE_S = 1.0

_WATCHER = r"""
import os, signal, sys, time
procs = [tuple(map(int, p.split(":"))) for p in sys.argv[2:]]
def started(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None
while sys.stdin.buffer.read(65536):
    pass
time.sleep(float(sys.argv[1]))
for pid, start in procs:
    if started(pid) == start:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
"""


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            stat = _stat(int(name))
            if stat is not None:
                kids.setdefault(int(stat[1]), []).append(int(name))
    return kids


def _stat(pid: int) -> list[str] | None:
    """Fields of /proc/PID/stat after the command name (state, ppid, ...)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (read from /proc)."""
    stat = _stat(pid)
    return stat is not None and stat[0] != "Z"


def _is_ray(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"ray" in f.read().lower()
    except OSError:
        return False


def ray_descendants(root: int) -> list[tuple[int, int]]:
    """(pid, start time) of the Ray processes under ``root``."""
    kids, todo, out = _children(), [root], []
    while todo:
        for child in kids.get(todo.pop(), []):
            todo.append(child)
            stat = _stat(child)
            if stat is not None and _is_ray(child):
                out.append((child, int(stat[19])))
    return out


def start_watcher() -> subprocess.Popen | None:
    """The watcher over this process's Ray processes (None where there is no /proc to read)."""
    if not os.path.isdir("/proc"):
        return None
    procs = ray_descendants(os.getpid())
    if not procs:
        return None
    return subprocess.Popen([sys.executable, "-c", _WATCHER, str(GRACE_S), *(f"{p}:{s}" for p, s in procs)],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, close_fds=True)  # fmt: skip


def release(watcher: subprocess.Popen | None) -> None:
    """Ray was shut down: the watcher reaps what is left of it now, not at the client's exit."""
    if watcher is not None and watcher.stdin is not None:
        try:
            watcher.stdin.close()
        except OSError:
            pass
