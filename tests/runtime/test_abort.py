"""Stopping a running step (issue 15, item 6; runtime/abort.py): an infinite ``while`` ends within
a second of its timeout, of ``Session.abort`` from another thread, or of Ctrl-C, and its loop
really stops (no kernel runs after), on every executor path."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

from specflow.errors import RuntimeFailure, StepAborted
from specflow.ops import registry
from specflow.ops.inference import unchanged_shape
from specflow.ops.registry import kernel, register_op
from specflow.runtime.session import Session, SessionConfig
from specflow.schema.loader import load_spec_text

TICKS = [0]

FOREVER = """
specflow: 1
name: forever
inputs:
  n: {dtype: int32, shape: []}
nodes:
  loop:
    while:
      vars: {i: 0}
      cond: {op: GreaterEqual, inputs: [i], y: 0}
      body:
        i: {op: OP, inputs: [i]}
  out: {op: Identity, inputs: ["loop:0"]}
"""


def register_tick():
    register_op("TestTick", inputs=["x: T"], outputs=["y: T"], attrs=["T: type"], shape=unchanged_shape,
                stateful=True, doc="Test op: counts its runs, returns x.")

    @kernel("TestTick")
    def _tick(ctx, x):
        TICKS[0] += 1
        return x


@pytest.fixture(scope="module", autouse=True)
def tick_op():
    register_tick()
    yield
    registry._OPS.pop("TestTick", None)
    registry._KERNELS.pop("TestTick", None)


def _forever(op="TestTick"):
    return load_spec_text(FOREVER.replace("OP", op), "forever.yaml").graph_def


def _assert_stopped():
    """No kernel of the loop runs any more (once the one in flight, if any, has finished)."""
    time.sleep(0.3)
    before = TICKS[0]
    time.sleep(0.2)
    assert TICKS[0] == before, "the loop still runs after the step ended"


@pytest.mark.parametrize("devices", [None, "cpu:2"])
def test_a_timeout_stops_an_infinite_loop(devices):
    with Session(_forever(), SessionConfig(devices=devices)) as sess:
        t0 = time.monotonic()
        with pytest.raises(StepAborted, match="step timed out after 0.3s"):
            sess.run("out:0", {"n:0": np.int32(0)}, timeout_s=0.3)
        assert time.monotonic() - t0 < 1.3
        assert TICKS[0] > 0
        _assert_stopped()
        assert sess.run("n:0", {"n:0": np.int32(4)}) == 4  # the session goes on


@pytest.mark.parametrize("timeout_s", [None, 60.0])  # the caller runs the loop / waits for the pool
def test_session_abort_from_another_thread_stops_an_infinite_loop(timeout_s):
    """How a failure elsewhere (another task, another process) stops this one's steps."""
    with Session(_forever()) as sess:
        cause = RuntimeFailure("task 3 failed")
        threading.Timer(0.3, sess.abort, [cause]).start()
        t0 = time.monotonic()
        with pytest.raises(RuntimeFailure, match="task 3 failed"):
            sess.run("out:0", {"n:0": np.int32(0)}, timeout_s=timeout_s)
        assert time.monotonic() - t0 < 1.3
        _assert_stopped()
        sess.abort()  # nothing running: a no-op, and later steps are unaffected
        assert sess.run("n:0", {"n:0": np.int32(2)}) == 2


_CTRL_C = textwrap.dedent(
    """
    import os, signal, sys, threading, time
    import numpy as np
    from tests.runtime import test_abort
    from specflow.runtime.session import Session
    test_abort.register_tick()
    with Session(test_abort._forever()) as sess:
        for timeout_s in (None, 60.0):
            sent = []
            threading.Timer(0.3, lambda: (sent.append(time.monotonic()), os.kill(os.getpid(), signal.SIGINT))).start()
            try:
                sess.run("out:0", {"n:0": np.int32(0)}, timeout_s=timeout_s)
            except KeyboardInterrupt:
                took = time.monotonic() - sent[0]
            ticks = test_abort.TICKS[0]
            time.sleep(0.2)
            print(f"{took:.3f} {test_abort.TICKS[0] - ticks}", flush=True)
    """
)


def test_ctrl_c_stops_an_infinite_loop_within_a_second():
    r = subprocess.run([sys.executable, "-c", _CTRL_C], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.split()
    assert len(lines) == 4, r.stdout
    for took, ticks_after in zip(lines[::2], lines[1::2]):
        assert float(took) < 1.0 and int(ticks_after) == 0, r.stdout


def test_ctrl_c_on_the_cli_run_command(tmp_path):
    spec = tmp_path / "forever.yaml"
    spec.write_text(FOREVER.replace("OP", "Identity"))
    np.save(tmp_path / "n.npy", np.int32(0))
    # -m specflow: the console script's entry, which also turns a Ctrl-C during start-up into exit 130
    proc = subprocess.Popen([sys.executable, "-m", "specflow", "run", str(spec), "--fetch", "out",
                             "--feed", f"n={tmp_path / 'n.npy'}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    # Loaded and looping: a Ctrl-C while Python still imports specflow ends it by the signal (-2),
    # before any handler of ours exists, so a loaded machine waits longer for the imports.
    time.sleep(1.5 + 0.5 * min(os.getloadavg()[0], 4.0))
    assert proc.poll() is None
    t0 = time.monotonic()
    proc.send_signal(2)
    _, err = proc.communicate(timeout=10)
    assert time.monotonic() - t0 < 2.0
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err


def test_an_interrupted_command_exits_even_when_the_way_out_hangs():
    # A thread the interrupt did not stop (a kernel in a device's pool, a library's teardown) held
    # the interpreter's exit: the entry point ends the process within EXIT_GRACE_S anyway.
    code = ("import threading, time\n"
            "import specflow.cli\n"
            "def stuck_command():\n"
            "    threading.Thread(target=time.sleep, args=(60,)).start()\n"
            "    raise KeyboardInterrupt\n"
            "specflow.cli.main = stuck_command\n"
            "from specflow.__main__ import main\n"
            "main()\n")  # fmt: skip
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    took = time.monotonic() - t0
    assert r.returncode == 130 and r.stderr.strip().endswith("interrupted") and "Traceback" not in r.stderr
    assert took < 20, took  # the sleeping thread alone would hold it 60 s
