"""A client killed with SIGKILL takes its Ray processes with it (reaper.py): Ray's agents
otherwise outlived it by 60 s."""

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

# A stand-in client: two children whose command lines name Ray (as Ray's agents' do) and one
# that does not, then the watcher over them; it prints the pids and waits to be killed.
CLIENT = r"""
import subprocess, sys, time
from specflow.distributed.reaper import start_watcher
sleep = "import time; time.sleep(60)"
ray_like = [subprocess.Popen([sys.executable, "-c", sleep, "ray::DashboardAgent"]) for _ in range(2)]
other = subprocess.Popen([sys.executable, "-c", sleep, "not-it"], start_new_session=True)
watcher = start_watcher()
print(*(p.pid for p in ray_like), other.pid, watcher.pid, flush=True)
time.sleep(60)
"""


def test_the_ray_processes_of_a_killed_client_go_with_it():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    client = subprocess.Popen([sys.executable, "-c", CLIENT], stdout=subprocess.PIPE, text=True, env=env)
    *ray_like, other, watcher = map(int, client.stdout.readline().split())
    try:
        assert all(alive(p) for p in [*ray_like, other, watcher])
        os.kill(client.pid, signal.SIGKILL)
        client.wait()
        deadline = time.monotonic() + 10
        while any(alive(p) for p in ray_like) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(alive(p) for p in ray_like)  # within about GRACE_S
        assert alive(other)  # only Ray's processes are the watcher's business
    finally:
        for p in [*ray_like, other]:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
