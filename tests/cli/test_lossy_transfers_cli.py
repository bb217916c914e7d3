"""16-bit transfers from the spec and the CLI: ``--lossy-transfers``, the spec's top-level
``transfer: bfloat16`` and a node's ``transfer:`` (which wins), shown by ``inspect --placed``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from specflow.cli import app
from specflow.runtime.session import Session, SessionConfig
from specflow.schema.loader import load_spec_text

ROOT = Path(__file__).resolve().parents[2]
TWO = ROOT / "models" / "two_tower.yaml"
RIGHT = "units: 64, activation: tanh, device: /cpu:1}"
runner = CliRunner()


def run(*args):
    return runner.invoke(app, [str(a) for a in args])


def transfers(*args) -> dict:
    r = run("inspect", *args, "--placed", "--devices", "cpu:2", "--batch-size", "8", "--format", "json")
    assert r.exit_code == 0, r.output
    return {t["tensor"]: t for t in json.loads(r.output)["transfers"]}


def test_inspect_lossy_transfers_halves_the_float32_bytes():
    full, half = transfers(TWO), transfers(TWO, "--lossy-transfers")
    assert half["right:0"]["bytes_per_step"] == 8 * 64 * 2 == full["right:0"]["bytes_per_step"] // 2
    assert half["right:0"]["lossy"] and not full["right:0"]["lossy"]
    r = run("inspect", TWO, "--placed", "--devices", "cpu:2", "--lossy-transfers")
    assert r.exit_code == 0 and "as bfloat16" in r.output and "_TruncateToBfloat16" in r.output


def test_the_specs_transfer_and_a_nodes_own(tmp_path):
    """``transfer: bfloat16`` at the top makes every session lossy; ``transfer: float32`` on the
    right tower keeps its output whole (through the optimizer's fusion too)."""
    text = TWO.read_text()
    spec = tmp_path / "t.yaml"
    spec.write_text(text + "transfer: bfloat16\n")
    assert all(t["lossy"] for t in transfers(spec).values() if t["dtype"] == "float32")
    spec.write_text(text.replace(RIGHT, RIGHT[:-1] + ", transfer: float32}") + "transfer: bfloat16\n")
    got = transfers(spec)
    assert not got["right:0"]["lossy"] and got["gate/ConcatV2:0"]["lossy"]
    s = load_spec_text(spec.read_text())
    with Session(s.graph_def, SessionConfig(devices="cpu:2", lossy_transfers=True)) as sess:
        sess.run([], targets=[s.lowered.init_op])
        sess.run("out", {"x": np.ones((2, 32), np.float32)})
        plan = sess.plan_for("out", ["x"])
    cpu1 = {n.name: n for g in plan.partitions.values() for n in g.nodes}
    assert cpu1["right/_send_0_to_CPU_0"].attrs["T"].name == "float32"


def test_a_bad_transfer_value_names_the_line(tmp_path):
    spec = tmp_path / "t.yaml"
    text = TWO.read_text()
    spec.write_text(text.replace(RIGHT, RIGHT[:-1] + ", transfer: fp16}"))
    line = text[: text.index(RIGHT)].count("\n") + 1
    r = run("validate", spec)
    assert r.exit_code != 0 and "Traceback" not in r.output
    assert f"t.yaml:{line}:" in r.output and "transfer" in r.output and "bfloat16" in r.output


def test_run_with_lossy_transfers_is_close_not_equal(tmp_path):
    x = np.random.default_rng(0).standard_normal((4, 32)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    outs = []
    for flag in ([], ["--lossy-transfers"]):
        out = tmp_path / f"out{len(flag)}.npz"
        r = run("run", TWO, "--fetch", "out", "--feed", f"x={tmp_path / 'x.npy'}", "--devices", "cpu:2",
                "--seed", "1", "--out", out, *flag)  # fmt: skip
        assert r.exit_code == 0, r.output
        outs.append(np.load(out)["out"])
    assert not np.array_equal(outs[0], outs[1])
    np.testing.assert_allclose(outs[1], outs[0], atol=0.05 * np.abs(outs[0]).max())
