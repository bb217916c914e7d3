"""Training runs and signals (issue 15, items 4 and 5): one trainer per logdir (an OS lock the
kernel drops on exit), SIGTERM saves like Ctrl-C, a second signal exits at once, and a kill -9
loop never leaves a corrupt checkpoint or a stale lock."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from specflow.errors import TrainingError
from specflow.io.checkpoint import CheckpointManager
from specflow.train.logdir_lock import LogdirLock
from tests.train.test_loop import _cli, _long_spec, _spec, _train, _wait_for


def _latest_step(logdir) -> int:
    mgr = CheckpointManager(logdir, keep=3)
    return int(mgr.restore(mgr.latest())["global_step"])


def test_a_trainer_is_refused_while_another_holds_the_logdir(tmp_path):
    spec = _spec(tmp_path)
    with LogdirLock(tmp_path / "run"):
        with pytest.raises(TrainingError, match=f"logdir .*run in use by pid {os.getpid()} "):
            _train(spec, tmp_path / "run", steps=5)
    result, _ = _train(spec, tmp_path / "run", steps=5)  # released: the next one trains
    assert result.step == 5
    with pytest.raises(TrainingError, match="already holds a training run"):  # still refused without --resume
        _train(spec, tmp_path / "run", steps=10)
    os.remove(tmp_path / "run" / "checkpoint")
    for name in os.listdir(tmp_path / "run"):
        if name.startswith("events.out"):
            os.remove(tmp_path / "run" / name)
    _train(spec, tmp_path / "run", steps=1)  # the lock file alone is not a training run


def test_concurrent_trainers_then_sigterm_saves_and_frees_the_logdir(tmp_path):
    spec, logdir = _long_spec(tmp_path), tmp_path / "run"
    first = _cli("train", str(spec), "--logdir", str(logdir))
    _wait_for(logdir / "checkpoint", first)
    second = subprocess.run([sys.executable, "-m", "specflow.cli", "train", str(spec), "--logdir", str(logdir),
                             "--resume"], capture_output=True, text=True, timeout=60)
    assert second.returncode == 1
    assert f"in use by pid {first.pid}" in second.stderr and "Traceback" not in second.stderr
    first.send_signal(signal.SIGTERM)  # saves a final checkpoint at the step it stopped on
    out, err = first.communicate(timeout=60)
    assert first.returncode == 143, err
    stopped = int(re.search(r"steps\s+│?\s*0 → (\d+) \(interrupt\)", out).group(1))
    step = _latest_step(logdir)
    assert step == stopped and step >= 25
    with LogdirLock(logdir):  # the lock went with the process (the kill -9 loop below trains again)
        pass


_STUCK = textwrap.dedent(
    """
    import sys, time
    from specflow.cli import _stop_on_signals
    with _stop_on_signals(lambda: print("stopping", flush=True)):
        print("ready", flush=True)
        time.sleep(60)  # a step that never finishes
    """
)


@pytest.mark.parametrize("signals", [(signal.SIGTERM, signal.SIGTERM), (signal.SIGINT, signal.SIGTERM)])
def test_a_second_signal_exits_at_once(signals):
    proc = subprocess.Popen([sys.executable, "-c", _STUCK], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "ready\n"
    proc.send_signal(signals[0])
    assert proc.stdout.readline() == "stopping\n"
    t0 = time.monotonic()
    proc.send_signal(signals[1])
    out, err = proc.communicate(timeout=10)
    assert time.monotonic() - t0 < 5
    assert proc.returncode == 128 + signals[1]
    assert "again: exiting without saving" in err


_EXITING = textwrap.dedent(
    """
    import atexit, os, signal, time
    from specflow.cli import _stop_on_signals
    with _stop_on_signals(lambda: print("stopping", flush=True)):
        pass  # the run ended
    atexit.register(lambda: (print("exiting", flush=True), time.sleep(60)))  # a slow shutdown (Ray's)
    """
)


def test_a_signal_after_the_run_is_dropped_on_the_way_out_and_a_second_exits():
    """Ctrl-C just as a finished run exits gave a KeyboardInterrupt traceback from an atexit hook."""
    proc = subprocess.Popen([sys.executable, "-c", _EXITING], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "exiting\n"
    proc.send_signal(signal.SIGINT)
    time.sleep(0.5)
    assert proc.poll() is None  # dropped: no stop to ask for, no traceback
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=10)
    assert proc.returncode == 130 and "stopping" not in out and "Traceback" not in err, err


def test_kill_9_loop_during_training(tmp_path):
    """Killed at a different moment each round, resumed each time: the latest checkpoint always
    restores, and the kernel always releases the lock (the next round trains)."""
    spec, logdir = _long_spec(tmp_path), tmp_path / "run"
    last = 0
    for delay in (0.0, 0.3):
        args = ["train", str(spec), "--logdir", str(logdir)] + (["--resume"] if last else [])
        proc = _cli(*args)
        if last:
            deadline = time.monotonic() + 60
            while _latest_step(logdir) == last and time.monotonic() < deadline:
                assert proc.poll() is None, proc.communicate()
                time.sleep(0.05)
        else:
            _wait_for(logdir / "checkpoint", proc)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        step = _latest_step(logdir)
        assert step > last and step % 25 == 0
        last = step
    done = subprocess.run([sys.executable, "-m", "specflow.cli", "train", str(spec), "--logdir", str(logdir),
                           "--resume", "--steps", str(last + 1)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert _latest_step(logdir) == last + 1
    assert not [f for f in os.listdir(logdir) if "tmp" in f or "tempstate" in f]  # the last save cleaned up
