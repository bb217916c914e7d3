"""The user's path (issue 17), each defect as a regression test: every command given unwritable,
missing and directory-instead-of-file paths fails with one line and exit 1 and leaves nothing
behind; --out DIR; dot labels that render; received tensors' shapes; --fetch/--feed of any spec
reference; errors naming the --set that caused them; one feed-casting rule; --version; flags
shown as flags; every flag in the README; honest extras."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

from specflow.cli import app

from .cli_helpers import cli, one_error

ROOT = Path(__file__).resolve().parents[2]
MLP = ROOT / "models" / "digits_mlp.yaml"
README = (ROOT / "README.md").read_text()




@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A short digits run and its SavedModel export."""
    d = tmp_path_factory.mktemp("trained")
    logdir, export = d / "run", d / "export"
    assert cli("train", MLP, "--logdir", logdir, "--steps", 2).exit_code == 0
    assert cli("export", MLP, "--logdir", logdir, "--out", export).exit_code == 0
    return logdir, export


def _listing(d: Path) -> list[str]:
    return sorted(str(p.relative_to(d)) for p in d.rglob("*"))


def _bad_paths(tmp: Path, logdir: Path, export: Path) -> list[tuple[list, str]]:
    x, a_dir, missing = tmp / "x.npy", tmp / "adir", tmp / "missing" / "deeper"
    feed = ["--feed", f"images={x}"]
    run = ["run", MLP, "--fetch", "probs", *feed]
    pred = ["predict", export, "--input", f"images={x}"]
    return [
        (["validate", missing], "no such file"),
        (["validate", a_dir], "is a directory"),
        (["inspect", missing], "no such file"),
        ([*run, "--out", "/proc/x.npz"], "cannot write the output"),
        ([*run, "--out", missing / "o.npz"], "does not exist: create it"),
        ([*run, "--trace", "/proc/t.json"], "cannot write the output"),
        ([*run, "--trace", tmp / "t.json", "--out", missing / "o.npz"], "does not exist"),  # no trace left
        ([*run, "--out", x / "o"], "a part of the path is a file"),
        ([*run, "--trace", missing / "t.json"], "does not exist"),
        (["run", MLP, "--fetch", "probs", "--feed", f"images={a_dir}"], "not a readable .npy file"),
        (["run", MLP, "--fetch", "probs", "--feed", f"images={missing}"], "no such file"),
        (["train", MLP, "--logdir", "/proc/nope", "--steps", 1], "cannot create the logdir"),
        (["train", MLP, "--logdir", x, "--steps", 1], "not a directory"),
        (["train", missing, "--logdir", tmp / "l"], "no such file"),
        (["eval", MLP, "--logdir", missing], "no such directory"),
        (["eval", MLP, "--logdir", x], "not a directory"),
        (["export", MLP, "--logdir", logdir, "--out", "/proc/e"], "cannot write the export"),
        (["export", MLP, "--logdir", missing, "--out", tmp / "e"], "no such directory"),
        (["export", MLP, "--logdir", logdir, "--out", "/proc/e.onnx", "--format", "onnx"], "cannot write"),
        ([*pred, "--out", "/proc/p.npz"], "cannot write the output"),
        (["predict", missing, "--input", f"images={x}"], "no such directory"),
        (["predict", MLP, "--input", f"images={x}"], "is a file; predict runs a SavedModel directory"),
        (["predict", export, "--input", f"images={a_dir}"], "not a readable .npy file"),
        (["schema", "--out", "/proc/s.json"], "cannot write the output"),
        (["schema", "--out", missing / "s.json"], "does not exist"),
        (["ops", "--missing-from", a_dir], ""),
    ]


def test_every_command_with_a_bad_path_is_one_line_and_leaves_nothing(tmp_path, trained):
    logdir, export = trained
    np.save(tmp_path / "x.npy", np.zeros((2, 64), np.float32))
    (tmp_path / "adir").mkdir()
    before = _listing(tmp_path)
    for args, fragment in _bad_paths(tmp_path, logdir, export):
        one_error(cli(*args), fragment)
        assert _listing(tmp_path) == before, args


def test_a_bad_path_in_a_real_process_is_one_line_on_stderr(tmp_path):
    r = subprocess.run([sys.executable, "-m", "specflow.cli", "schema", "--out", "/proc/s.json"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and r.stderr.startswith("error: /proc/s.json"), r.stderr


def test_out_dir_means_a_file_inside_it_and_a_suffix_only_for_a_file_name(tmp_path, trained):
    _, export = trained
    x = tmp_path / "x.npy"
    np.save(x, np.zeros((2, 64), np.float32))
    d = tmp_path / "outs"
    d.mkdir()
    assert "digits_mlp.npz" in cli("run", MLP, "--fetch", "probs", "--feed", f"images={x}", "--out", d).output
    assert "trace.json" in cli("run", MLP, "--fetch", "probs", "--feed", f"images={x}", "--trace", d).output
    assert cli("predict", export, "--input", f"images={x}", "--out", d).exit_code == 0
    assert cli("schema", "--out", d).exit_code == 0
    assert sorted(p.name for p in d.iterdir()) == ["digits_mlp.npz", "predictions.npz", "specflow.schema.json",
                                                  "trace.json"]
    assert not (tmp_path / "outs.npz").exists()
    assert cli("run", MLP, "--fetch", "probs", "--feed", f"images={x}", "--out", tmp_path / "o").exit_code == 0
    assert list(np.load(tmp_path / "o.npz")) == ["probs"]


def _dot_labels(dot: str) -> list[str]:
    """Each label as Graphviz reads it: ``\\n`` a line break, ``\\"`` a quote, ``\\\\`` a backslash."""
    raw = re.findall(r'label="((?:[^"\\]|\\.)*)"', dot)
    return [re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), s) for s in raw]


@pytest.mark.parametrize("args", [[MLP], [ROOT / "models" / "two_tower.yaml", "--placed", "--devices", "cpu:2"]])
def test_dot_labels_render(args):
    dot = cli("inspect", *args, "--format", "dot").output
    labels = _dot_labels(dot)
    assert any(lbl.startswith("hidden/MatMul\nMatMul\n") or "\n_Recv\n" in lbl for lbl in labels), labels[:5]
    assert not [lbl for lbl in labels if "\\" in lbl], "a literal backslash would show in the drawing"
    if shutil.which("dot"):
        r = subprocess.run(["dot", "-Tsvg"], input=dot, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and "\\n" not in r.stdout, r.stderr


def test_placed_shows_the_shapes_of_received_tensors():
    out = cli("inspect", ROOT / "models" / "two_tower.yaml", "--placed", "--devices", "cpu:2", "--batch-size", "8").output
    recv_rows = [ln for ln in out.splitlines() if "│ _Recv " in ln]
    assert recv_rows and all("float32[8, " in r for r in recv_rows), recv_rows
    assert "<unknown>" not in out


CONTROL = """
specflow: 1
name: refs
inputs:
  x: {dtype: float32, shape: [2]}
  n: {dtype: int32, shape: []}
  flag: {dtype: bool, shape: []}
functions:
  twice:
    inputs: {v: {dtype: float32, shape: [2]}}
    nodes:
      y: {op: Mul, inputs: [v], y: 2.0}
    outputs: {y: y}
nodes:
  block1: {call: twice, inputs: [x]}
  loop:
    while:
      vars: {i: 0, acc: x}
      cond: {op: Less, inputs: [i, n]}
      body:
        i: {op: AddV2, inputs: [i], y: 1}
        acc: {op: AddV2, inputs: [acc, x]}
  choose:
    cond: {pred: flag, inputs: [x], then: twice, else: {op: Neg, inputs: [x]}}
  post: {op: Neg, inputs: [block1]}
"""


def test_fetch_and_feed_take_every_spec_reference(tmp_path):
    spec = tmp_path / "refs.yaml"
    spec.write_text(CONTROL)
    for name, value in (("x", np.array([1.0, 2.0], np.float32)), ("n", np.array(3, np.int32)),
                        ("flag", np.array(True))):
        np.save(tmp_path / f"{name}.npy", value)
    feeds = [a for n in ("x", "n", "flag") for a in ("--feed", f"{n}={tmp_path / (n + '.npy')}")]
    out = tmp_path / "o.npz"
    r = cli("run", spec, *feeds, "--fetch", "block1", "--fetch", "loop:1", "--fetch", "loop:0", "--fetch", "choose",
            "--out", out)
    assert r.exit_code == 0, r.output
    got = np.load(out)
    np.testing.assert_array_equal(got["block1"], [2.0, 4.0])
    np.testing.assert_array_equal(got["loop:1"], [4.0, 8.0])  # acc = x + 3 x
    assert int(got["loop:0"]) == 3
    np.testing.assert_array_equal(got["choose"], [2.0, 4.0])
    # --feed a function call's output: what follows sees the fed value
    np.save(tmp_path / "b.npy", np.array([5.0, 6.0], np.float32))
    r = cli("run", spec, "--feed", f"block1={tmp_path / 'b.npy'}", "--fetch", "post", "--out", out)
    assert r.exit_code == 0, r.output
    np.testing.assert_array_equal(np.load(out)["post"], [-5.0, -6.0])
    r = cli("inspect", spec, "--placed", "--fetch", "block1", "--fetch", "loop:1", "--fetch", "choose",
            "--feed", "block1", "--format", "json")
    assert r.exit_code == 0, r.output


def test_fetch_takes_a_layers_other_outputs(tmp_path):
    """A layer's output op carries its node's name, so `r:1` is the spec's reading (an LSTM's
    h), not output 1 of that op; an output past the layer's is its error, not the graph's."""
    spec = tmp_path / "lstm.yaml"
    spec.write_text("specflow: 1\nname: l\ninputs: {seq: {dtype: float32, shape: [null, 5, 3]}}\n"
                    "nodes: {r: {layer: lstm, inputs: [seq], units: 4, return_state: true}}\n")
    np.save(tmp_path / "s.npy", np.random.default_rng(0).standard_normal((2, 5, 3)).astype(np.float32))
    out = tmp_path / "o.npz"
    r = cli("run", spec, "--feed", f"seq={tmp_path / 's.npy'}", "--fetch", "r", "--fetch", "r:1", "--fetch", "r:2",
            "--fetch", "r/while/h", "--out", out)
    assert r.exit_code == 0, r.output
    got = np.load(out)
    np.testing.assert_array_equal(got["r"], got["r:1"])  # the last output is the final h
    np.testing.assert_array_equal(got["r:1"], got["r/while/h"])
    assert got["r:2"].shape == (2, 4) and not np.array_equal(got["r:2"], got["r:1"])
    r = cli("run", spec, "--feed", f"seq={tmp_path / 's.npy'}", "--fetch", "r:5")
    assert r.exit_code == 1 and "'r' has 3 output(s); 'r:5' does not exist" in one_error(r)


def test_an_error_after_a_set_names_the_set():
    err = one_error(cli("validate", MLP, "--set", "inputs.images.shape=[null, 7]"))
    assert "(after --set inputs.images.shape=[null, 7])" in err
    r = cli("validate", ROOT / "models" / "residual_mlp.yaml", "--set", "nodes.hidden.units=7")
    assert r.exit_code == 1
    assert "incompatible shapes [?, 7] and [?, 64]" in r.output and "(after --set nodes.hidden.units=7)" in r.output


def test_one_feed_casting_rule_for_run_and_predict(tmp_path, trained):
    _, export = trained
    exact = tmp_path / "exact.npy"
    np.save(exact, np.arange(128, dtype=np.int64).reshape(2, 64))  # every value is a float32
    lossy = tmp_path / "lossy.npy"
    np.save(lossy, np.full((2, 64), 0.1, np.float64))  # 0.1 is not
    run = ["run", MLP, "--fetch", "probs", "--feed"]
    assert cli(*run, f"images={exact}").exit_code == 0
    assert cli("predict", export, "--input", f"images={exact}").exit_code == 0
    lost = "must be float32, got float64, and casting would change 128 of 128 value(s) (e.g. 0.1 -> 0.10000000149011612)"
    one_error(cli(*run, f"images={lossy}"), "--feed images " + lost)
    one_error(cli("predict", export, "--input", f"images={lossy}"), "input 'images' " + lost)
    # run on a SavedModel feeds its placeholders by the same rule
    assert cli("run", export, "--fetch", "probs", "--feed", f"images={exact}").exit_code == 0
    one_error(cli("run", export, "--fetch", "probs", "--feed", f"images={lossy}"), "--feed images " + lost)
    for command in ("run", "predict"):
        assert "only when no value changes" in cli(command, "--help").output


def test_run_on_a_savedmodel_reads_a_fetched_variable(tmp_path, trained):
    """As `run SPEC --fetch hidden/kernel`: the variable's value, not its resource handle (whose
    .npz needed pickle to load)."""
    logdir, export = trained
    out = tmp_path / "k.npz"
    r = cli("run", export, "--fetch", "hidden/kernel", "--fetch", "hidden/bias", "--out", out)
    assert r.exit_code == 0, r.output
    with np.load(out) as got:  # allow_pickle is off by default
        assert got["hidden/kernel"].shape == (64, 128) and got["hidden/bias"].dtype == np.float32
    r = cli("run", MLP, "--checkpoint", logdir, "--fetch", "hidden/kernel", "--out", tmp_path / "s.npz")
    assert r.exit_code == 0, r.output  # the spec's reading of the same checkpoint
    np.testing.assert_array_equal(np.load(tmp_path / "s.npz")["hidden/kernel"], np.load(out)["hidden/kernel"])


def test_version_and_flags_shown_as_flags():
    from specflow import __version__

    r = cli("--version")
    assert r.exit_code == 0 and r.output.strip() == f"specflow {__version__}"
    help_text = cli("train", "--help").output
    assert re.search(r"--resume\s+Continue", help_text), help_text
    assert not [ln for ln in help_text.splitlines() if "<bool>" in ln and "--help" not in ln], help_text


def _all_flags() -> dict[str, set[str]]:
    import typer.main

    group = typer.main.get_command(app)
    return {name: {o for p in cmd.params for o in p.opts if o.startswith("--") and o != "--help"}
            for name, cmd in group.commands.items()}


def test_every_flag_is_in_the_readmes_reference():
    ref = README[README.index("## Command reference"):]
    missing = []
    for name, flags in _all_flags().items():
        section = re.search(rf"^\| `{name}` \|(.*)$", ref, re.M)
        assert section, f"no row for `{name}` in the README's command reference"
        missing += [f"{name} {f}" for f in flags if f"`{f}" not in section.group(1)]
    assert not missing, missing
    assert "{csv: f.csv, label_column: label, header: true}" in README  # the csv source is documented


def test_extras_declare_what_was_tested_and_the_name_is_not_a_strangers():
    from importlib.metadata import version

    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert meta["name"] != "specflow"  # PyPI's specflow is an unrelated project
    assert meta["scripts"] == {"specflow": "specflow.__main__:main"}
    assert f"pip install {meta['name']}" in README
    onnx_extra = {re.split("[<>=]", r)[0]: r for r in meta["optional-dependencies"]["onnx"]}
    assert set(onnx_extra) == {"onnx", "onnxruntime"}
    for pkg, req in onnx_extra.items():
        minimum = tuple(int(p) for p in req.split(">=")[1].split("."))
        installed = tuple(int(p) for p in version(pkg).split(".")[: len(minimum)])
        assert installed >= minimum, (pkg, req)


def test_unverified_onnx_export_says_so(tmp_path, trained, monkeypatch):
    from specflow.export import exporter

    logdir, _ = trained
    monkeypatch.setattr(exporter, "_has_onnxruntime", lambda: False)
    r = cli("export", MLP, "--logdir", logdir, "--out", tmp_path / "m.onnx", "--format", "onnx")
    assert r.exit_code == 0, r.output
    assert "was NOT verified: onnxruntime is not installed" in r.output


def test_the_readmes_python_api_matches_the_code():
    from dataclasses import fields

    from specflow.runtime.session import SessionConfig

    named = set(re.findall(r"(\w+)=", README[README.index("`Session(graph_def, SessionConfig("):][:400]))
    named -= {"options", "timeout_s", "run_metadata"}  # Session.run's keywords in the same sentence
    assert named == {f.name for f in fields(SessionConfig)}, named
    imports = re.findall(r"from (specflow[\w.]*) import (\w+)", README)
    assert ("specflow.runtime.step_stats", "StepStats") in imports
    for module, name in imports:
        assert hasattr(__import__(module, fromlist=[name]), name), (module, name)
    block = re.search(r"```python\n(import numpy as np\nimport specflow\n.*?)```", README, re.S).group(1)
    exec(compile(block.replace('"models/', f'"{ROOT}/models/'), "README", "exec"), {})


def test_names_print_as_written_and_odd_files_are_one_line(tmp_path):
    x = tmp_path / "x.npy"
    np.save(x, np.zeros((1, 64), np.float32))
    one_error(cli("run", MLP, "--feed", f"images={x}", "--fetch", "nope:abc"), "'nope:abc:0'")  # not an emoji
    binary = tmp_path / "ops.bin"
    binary.write_bytes(b"\xd0\xff\x00")
    one_error(cli("ops", "--missing-from", binary), "not a text file of op names")
    assert cli("inspect", MLP, "--placed", "--batch-size", "-1").exit_code == 2
