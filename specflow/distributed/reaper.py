"""The Ray processes a client started go when it goes, even by ``kill -9``.

A private Ray (``train --cluster local:...``) is a tree of processes under the client: the GCS,
the raylet, Ray's dashboard and runtime-env agents, the task actors. Ray's own reaper takes the
GCS and the raylet with a killed client, and the actors follow their raylet, but the two agents,
seeing their raylet gone, first try to report it to the GCS that is gone too, and wait 60 s for
it (Ray hard-codes that timeout): a user who reran the command found them still there.

So before a private ``ray.init`` the client starts this small watcher (stdlib only, its own
session so a Ctrl-C on the terminal does not reach it) and keeps a pipe to it open; while
``ray.init`` runs, the client's environment holds a mark unique to it, which every process Ray
starts then inherits, and the processes those start in turn (the raylet's workers). Once
``ray.init`` returns, the client also sends the watcher the Ray processes under it, each with its
start time (a pid reused meanwhile is left alone): a process that set its title over its
environment (Ray's agents do) no longer shows the mark. When the pipe closes (the client exited,
however it died, even inside ``ray.init``, or shut Ray down), the watcher gives Ray's own shutdown
a moment and then kills those processes and whichever carry the mark. The mark is read from
``/proc/PID/environ``, the environment a process was started with: the client's own never has it,
nor does anything it starts after ``ray.init`` returns.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator

GRACE_S = 1.0
MARK = "SPECFLOW_RAY_OWNER"

# Until the client's "done" line (ray.init returned) the watcher also records, every 50 ms, the
# marked processes and every process under them, by pid and start time: a process that sets its
# title over its environment (Ray's agents do) no longer shows the mark, but its parent (the
# raylet) does. With "done" come the client's own "pid:start" lines, the Ray processes under it
# then. At the end it kills those recorded that still run (the same start time: a pid reused
# meanwhile is left alone) and whichever carry the mark, in a few rounds (a process killed in one
# may have started another: a raylet its worker).
_WATCHER = r"""
import os, select, signal, sys, time
mark = sys.argv[2].encode()
me = os.getpid()
def table():
    out = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                out[int(name)] = (int(fields[1]), int(fields[19]))
            except (OSError, ValueError, IndexError):
                pass
    return out
def is_marked(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return mark in f.read().split(b"\0")
    except OSError:
        return False
recorded = {}
def record():
    procs = table()
    for pid, (ppid, start) in procs.items():
        if pid not in recorded and pid != me and is_marked(pid):
            recorded[pid] = start
    grew = True
    while grew:
        grew = False
        for pid, (ppid, start) in procs.items():
            if pid not in recorded and pid != me and recorded.get(ppid) == procs.get(ppid, (0, -1))[1]:
                recorded[pid], grew = start, True
fd, buf, done = sys.stdin.fileno(), b"", False
while True:
    if done or select.select([fd], [], [], 0.05)[0]:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        buf += chunk
        *lines, buf = buf.split(b"\n")
        for line in lines:
            if line == b"done":
                done = True
            elif line.strip():
                pid, start = map(int, line.split(b":"))
                recorded[pid] = start
    if not done:
        record()
if not done:
    record()
time.sleep(float(sys.argv[1]))
for _ in range(5):
    procs = table()
    found = [pid for pid, start in recorded.items() if procs.get(pid, (0, None))[1] == start and pid != me]
    found += [pid for pid in procs if pid != me and pid not in recorded and is_marked(pid)]
    recorded = {}
    if not found:
        break
    for pid in found:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    time.sleep(0.05)
"""


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


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            stat = _stat(int(name))
            if stat is not None:
                kids.setdefault(int(stat[1]), []).append(int(name))
    return kids


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


@contextlib.contextmanager
def reaped() -> Iterator[subprocess.Popen | None]:
    """Processes started inside the block, and all they start, are killed when this process is
    gone or ``release`` is called on the watcher it yields (None where there is no /proc). Left
    by an exception, the block releases the watcher itself: what it had started goes now."""
    if not os.path.isdir("/proc"):
        yield None
        return
    entry = f"{MARK}={os.getpid()}-{uuid.uuid4().hex}"
    watcher = subprocess.Popen([sys.executable, "-c", _WATCHER, str(GRACE_S), entry], stdin=subprocess.PIPE,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                               close_fds=True)  # fmt: skip
    before = os.environ.get(MARK)
    os.environ[MARK] = entry.split("=", 1)[1]
    try:
        yield watcher
    except BaseException:
        release(watcher)
        raise
    finally:
        if before is None:
            os.environ.pop(MARK, None)
        else:  # this process was itself started by a marked one: its mark stays its own
            os.environ[MARK] = before
    try:  # what runs now by its pid and start time, titles and all
        listed = [p for p in ray_descendants(os.getpid()) if p[0] != watcher.pid]  # its argv names the mark
        watcher.stdin.write(b"".join(b"%d:%d\n" % p for p in listed) + b"done\n")
        watcher.stdin.flush()
    except OSError:  # the watcher is gone: nothing to tell
        pass


def release(watcher: subprocess.Popen | None) -> None:
    """Ray was shut down: the watcher reaps what is left of it now, not at the client's exit."""
    if watcher is not None and watcher.stdin is not None:
        try:
            watcher.stdin.close()
        except OSError:
            pass
