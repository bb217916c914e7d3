"""A client killed with SIGKILL takes the Ray processes it started with it (reaper.py), even one
killed inside ``ray.init``: Ray's agents otherwise outlived it by 60 s."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from specflow.distributed.reaper import alive

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")

ROOT = Path(__file__).resolve().parents[2]

# A stand-in client: inside ``reaped`` (where ``ray.init`` runs) two children, one of which
# starts a grandchild of its own without the mark, and one named as Ray's agents are whose environment lacks the
# mark (an agent's title overwrites its environment); then one started after the block. It prints
# the pids and waits to be killed, after the block or, with "inside", still in it (a client
# killed in ``ray.init``).
CLIENT = r"""
import os, subprocess, sys, time
from specflow.distributed.reaper import MARK, reaped
sleep = "import time; time.sleep(60)"
# the grandchild without the mark, as Ray's agents lose it when they set their titles
parent = ("import os, subprocess, sys, time; env = dict(os.environ); del env[%r]; "
          "print(subprocess.Popen([sys.executable, '-c', %r], env=env).pid, flush=True); time.sleep(60)") % (MARK, sleep)
def main(inside):
    with reaped() as watcher:
        started = [subprocess.Popen([sys.executable, "-c", sleep])]
        started.append(subprocess.Popen([sys.executable, "-c", parent], stdout=subprocess.PIPE, text=True))
        grandchild = int(started[1].stdout.readline())
        unmarked = dict(os.environ)
        del unmarked[MARK]
        agent = subprocess.Popen([sys.executable, "-c", sleep, "ray::DashboardAgent"], env=unmarked)
        while b"ray::" not in open(f"/proc/{agent.pid}/cmdline", "rb").read():  # as Ray's, running
            time.sleep(0.01)
        time.sleep(0.3)  # the rest of ray.init
        if inside:
            print(*(p.pid for p in started), grandchild, agent.pid, 0, watcher.pid, flush=True)
            time.sleep(60)
    after = subprocess.Popen([sys.executable, "-c", sleep])
    print(*(p.pid for p in started), grandchild, agent.pid, after.pid, watcher.pid, flush=True)
    time.sleep(60)
main(sys.argv[1] == "inside")
"""


@pytest.mark.parametrize("where", ["after", "inside"])
def test_the_processes_a_killed_client_started_in_the_block_go_with_it(where):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    client = subprocess.Popen([sys.executable, "-c", CLIENT, where], stdout=subprocess.PIPE, text=True, env=env)
    *marked, agent, after, watcher = map(int, client.stdout.readline().split())
    others = [after] if after else []
    if where == "after":  # listed once the block ended, by its pid and start time
        marked.append(agent)
    try:
        assert all(alive(p) for p in [*marked, *others, watcher])
        os.kill(client.pid, signal.SIGKILL)
        client.wait()
        deadline = time.monotonic() + 10
        while any(alive(p) for p in marked) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(alive(p) for p in marked)  # within about GRACE_S
        assert all(alive(p) for p in others)  # started after the block: not the watcher's business
    finally:
        for p in [*marked, agent, *others]:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_the_mark_is_only_in_the_environment_inside_the_block():
    from specflow.distributed.reaper import MARK, reaped, release

    assert MARK not in os.environ
    with reaped() as watcher:
        assert os.environ[MARK].startswith(f"{os.getpid()}-")
    assert MARK not in os.environ
    release(watcher)
    assert watcher.wait(timeout=10) == 0
