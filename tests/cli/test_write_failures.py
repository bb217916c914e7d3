"""Write failures (issue 15, item 9), for real: the CLI runs under a file-size limit
(RLIMIT_FSIZE, with SIGXFSZ ignored, so a write past it fails with EFBIG as on a full disk).
Each command fails with one error line and leaves no truncated output behind (export: in
tests/export/test_export_safety.py)."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys

import numpy as np

from tests.train.test_loop import DROPOUT_SPEC

LIMIT = 64 * 1024  # bytes: more than a spec, less than the outputs below


def _cli(*args, limit=LIMIT):
    def limited():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run([sys.executable, "-m", "specflow.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=120, preexec_fn=limited)


def _one_error(r) -> str:
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and r.stderr.count("error:") == 1, r.stderr
    return r.stderr


def test_run_out_too_large_leaves_the_previous_file(tmp_path):
    spec = tmp_path / "m.yaml"
    spec.write_text("specflow: 1\nname: m\ninputs:\n  x: {dtype: float32, shape: [null]}\n"
                    "nodes:\n  y: {op: Neg, inputs: [x]}\n")
    np.save(tmp_path / "x.npy", np.ones(100_000, np.float32))  # 400 KB out
    (tmp_path / "out.npz").write_bytes(b"previous")
    err = _one_error(_cli("run", spec, "--fetch", "y", "--feed", f"x={tmp_path / 'x.npy'}", "--out",
                          tmp_path / "out.npz"))
    assert "cannot write the output: File too large" in err
    assert (tmp_path / "out.npz").read_bytes() == b"previous"
    assert sorted(os.listdir(tmp_path)) == ["m.yaml", "out.npz", "x.npy"]


def test_training_into_a_full_disk_is_one_line_and_leaves_no_torn_checkpoint(tmp_path):
    spec = tmp_path / "m.yaml"
    spec.write_text(DROPOUT_SPEC.replace("units: 32", "units: 256"))  # a checkpoint of ~0.4 MB
    err = _one_error(_cli("train", spec, "--logdir", tmp_path / "run", "--steps", "10"))
    assert "cannot write checkpoint 10: File too large" in err
    left = os.listdir(tmp_path / "run")
    assert not [n for n in left if "model.ckpt" in n or "tmp" in n or "tempstate" in n], left
