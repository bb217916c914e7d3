"""Kill -9 chaos for ``specflow train --cluster``: real CLI runs, SIGKILLed at random moments.

Each scenario starts ``specflow train models/digits_mlp.yaml --cluster local:ps=1,worker=2
--logdir D --steps N`` (async or sync), kills something with SIGKILL, then checks:

- client killed (during startup, mid-run, or as a checkpoint is written): within a few seconds
  no process of the killed run's Ray is left; the logdir is sound (the ``checkpoint`` state file
  names only checkpoints whose files exist; ``run.json`` parses); the same command again
  continues from the latest checkpoint and ends at step N with ``model.ckpt-N``;
- a task killed (a ps or a worker, at random; during the first steps, or as the last checkpoint
  is written): the run itself recovers and ends at step N with ``model.ckpt-N``.

    python -m scripts.cluster_chaos --runs 20 --seed 0        # prints one line per scenario

Only processes this script started (and their descendants) are ever signalled.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from specflow.distributed.reaper import alive

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "models" / "digits_mlp.yaml"


def _ppid_map() -> dict[int, int]:
    out = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = Path(f"/proc/{d}/stat").read_text()
                out[int(d)] = int(stat.rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    return out


def descendants(pid: int) -> list[int]:
    ppid = _ppid_map()
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in ppid.items() if pp == p]
        found += kids
        todo += kids
    return found


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def task_pids(client: int) -> list[int]:
    """The Ray actor processes of the cluster's tasks under the client (``ray::TaskWorker``; which
    job each is does not show: the run's own "lost /job:..." line says which was killed)."""
    return sorted(p for p in descendants(client) if "TaskWorker" in _cmdline(p))


def logdir_sound(logdir: Path) -> str | None:
    """None when the checkpoint state file names only complete checkpoints and run.json parses."""
    state = logdir / "checkpoint"
    if state.exists():
        for name in re.findall(r'"([^"]+)"', state.read_text()):
            if not (logdir / f"{name}.index").exists():
                return f"checkpoint names {name}, whose index is missing"
            if not list(logdir.glob(f"{name}.data-*")):
                return f"checkpoint names {name}, whose data is missing"
    run = logdir / "run.json"
    if run.exists():
        try:
            json.loads(run.read_text())
        except ValueError as e:
            return f"run.json does not parse: {e}"
    return None


def _command(logdir: Path, steps: int, mode: str) -> list[str]:
    cmd = [sys.executable, "-m", "specflow", "train", str(SPEC), "--cluster", "local:ps=1,worker=2",
           "--logdir", str(logdir), "--steps", str(steps), "--set", "train.checkpoints.every_steps=50"]
    if mode == "sync":
        cmd += ["--set", "train.distributed.mode=sync"]
    return cmd


def _wait_for(pred, timeout: float, poll: float = 0.02) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(poll)
    return False


def _saving(logdir: Path) -> bool:
    return any("_temp_" in p.name for p in logdir.iterdir()) if logdir.exists() else False


def scenario(kind: str, mode: str, steps: int, rng: random.Random, base: Path) -> dict:
    logdir = base / f"{kind}-{mode}-{rng.randrange(10**6)}"
    env = dict(os.environ, COLUMNS="200")
    t0 = time.monotonic()
    proc = subprocess.Popen(_command(logdir, steps, mode), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env=env, cwd=ROOT, start_new_session=True)  # fmt: skip
    out = {"kind": kind, "mode": mode}
    what = ""
    if kind == "client-startup":
        time.sleep(rng.uniform(0.5, 4.0))
        what = "client"
    elif kind == "client-midrun":
        _wait_for(lambda: (logdir / "checkpoint").exists(), 120)
        time.sleep(rng.uniform(0.0, 2.0))
        what = "client"
    elif kind == "client-saving":
        out["trigger_met"] = _wait_for(lambda: _saving(logdir), 120, poll=0.002)
        what = "client"
    elif kind == "task-first-step":
        _wait_for(lambda: len(task_pids(proc.pid)) >= 3, 120)
        time.sleep(rng.uniform(0.0, 1.0))
        what = "task"
    elif kind == "task-last-save":  # as the final checkpoint's parts are written

        def last_save() -> bool:
            return logdir.exists() and any(p.name.startswith(f"model.ckpt-{steps}_temp_") for p in logdir.iterdir())

        out["trigger_met"] = _wait_for(last_save, 300, poll=0.001)
        what = "task"
    tree = [proc.pid, *descendants(proc.pid)]
    if what == "client":
        out["killed_at_s"] = round(time.monotonic() - t0, 2)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        gone = _wait_for(lambda: not any(alive(p) for p in tree[1:]), 15, poll=0.1)
        out["orphans_gone_s"] = round(time.monotonic() - t0 - out["killed_at_s"], 2) if gone else None
        left = [p for p in tree[1:] if alive(p)]
        for p in left:  # the reaper failed: clean up what this script started, and report it
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        out["orphans"] = len(left)
        out["corrupt"] = logdir_sound(logdir) if logdir.exists() else None
        t1 = time.monotonic()
        again = subprocess.run(_command(logdir, steps, mode), capture_output=True, text=True, env=env, cwd=ROOT,
                               timeout=600)  # fmt: skip
        out["rerun_s"] = round(time.monotonic() - t1, 1)
        out["rc"] = again.returncode
        text = again.stdout + again.stderr
    else:
        pids = task_pids(proc.pid)
        out["killed_at_s"] = round(time.monotonic() - t0, 2)
        if pids:
            os.kill(rng.choice(pids), signal.SIGKILL)
        out["task_killed"] = bool(pids)
        stdout, _ = proc.communicate(timeout=600)
        out["rc"] = proc.returncode
        out["run_s"] = round(time.monotonic() - t0, 1)
        text = stdout.decode(errors="replace")
        out["corrupt"] = logdir_sound(logdir)
        out["lost_lines"] = [line.strip() for line in text.splitlines() if line.strip().startswith("lost ")]
    ckpt = (logdir / "checkpoint").read_text() if (logdir / "checkpoint").exists() else ""
    out["final"] = (re.findall(r'model_checkpoint_path: "([^"]+)"', ckpt) or [None])[0]
    out["ok"] = (out["rc"] == 0 and out["final"] == f"model.ckpt-{steps}" and not out.get("orphans")
                 and not out.get("corrupt"))  # fmt: skip
    if not out["ok"]:
        out["tail"] = text.strip().splitlines()[-3:]
    shutil.rmtree(logdir, ignore_errors=True)
    return out


KINDS = ("client-startup", "client-midrun", "client-saving", "task-first-step", "task-last-save")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--kinds", default=",".join(KINDS))
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    kinds = args.kinds.split(",")
    base = Path(tempfile.mkdtemp(prefix="cluster_chaos_"))
    failed = 0
    try:
        for i in range(args.runs):
            kind = kinds[i % len(kinds)]
            mode = rng.choice(("async", "sync"))
            r = scenario(kind, mode, args.steps, rng, base)
            failed += not r["ok"]
            print(json.dumps(r), flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(f"{args.runs - failed} of {args.runs} scenarios ok", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
