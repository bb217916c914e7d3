"""The README's commands, in the README's order, twice on one checkout (issue 17): every one
succeeds both times, as the set-up line and .ci/run must on a checkout that already ran them.

The commands are read from the README itself (its ```bash blocks), so README and test cannot
drift apart. Step counts are divided by 100 (``--steps 500`` -> 5, ``--checkpoint 500`` -> 5, and
a new run checkpoints every 2 steps, not every 200 or 250), and a ``train`` without ``--steps``
gets ``--steps 3``, to keep the walk fast; everything else runs as written. The one command that
may not succeed the second time is an ``export`` without ``--overwrite`` into the directory the
first walk wrote: it must refuse with its one-line error (replacing an export takes --overwrite). Commands of other tools (tensorboard, saved_model_cli, ray start) are left out. Runs in-process
(Typer's CliRunner) in a copy of models/: a subprocess per command would cost seconds of imports.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from specflow.cli import app

ROOT = Path(__file__).resolve().parents[2]
SCALE = 100


def readme_commands() -> list[list[str]]:
    """Each shell command of the README's ```bash blocks (continuations joined, comments cut)."""
    text = (ROOT / "README.md").read_text()
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            line = line.split("  #", 1)[0].strip()
            if line and not line.startswith("#"):
                for part in line.split(" && "):
                    commands.append(shlex.split(part))
    return commands


def _scaled(argv: list[str]) -> list[str]:
    argv = list(argv)
    for flag in ("--steps", "--checkpoint"):
        if flag in argv:
            i = argv.index(flag) + 1
            if argv[i].isdigit():
                argv[i] = str(max(1, int(argv[i]) // SCALE))
    if argv[0] == "train" and "--steps" not in argv:
        argv += ["--steps", "3"]
    if argv[0] == "train" and "--resume" not in argv:  # a resumed run keeps its own --set
        argv += ["--set", "train.checkpoints.every_steps=2"]
    return argv


def walk(checkout: Path, again: bool = False) -> list[tuple[list[str], str]]:
    runner = CliRunner()
    done = []
    for cmd in readme_commands():
        if cmd[:2] == ["pip", "install"] or cmd[0] in ("tensorboard", "saved_model_cli", "ray"):
            continue
        if cmd[:3] == ["python", "-m", "pytest"]:
            continue  # the suite itself
        if "--address" in cmd:
            continue  # attaches to the `ray start` cluster, which the walk does not start
        if cmd[0] == "python":
            r = subprocess.run([sys.executable, *cmd[1:]], cwd=checkout, capture_output=True, text=True, timeout=60)
            assert r.returncode == 0, (cmd, r.stderr)
            continue
        if "|" in cmd:
            cmd = cmd[: cmd.index("|")]
        assert cmd[0] == "specflow", cmd
        argv = _scaled(cmd[1:])
        r = runner.invoke(app, argv, env={"COLUMNS": "200"})
        assert "Traceback" not in r.output
        if again and argv[0] == "export" and "--overwrite" not in argv:
            assert r.exit_code == 1 and r.output.count("error:") == 1, (argv, r.output)
            assert "already exists (pass --overwrite to replace it)" in r.output
        else:
            assert r.exit_code == 0, (argv, r.output)
        done.append((argv, r.output))
    return done


def test_the_readme_walks_twice_on_one_checkout(tmp_path, monkeypatch):
    shutil.copytree(ROOT / "models", tmp_path / "models")
    monkeypatch.chdir(tmp_path)
    first = walk(tmp_path)
    assert any(a[0] == "train" for a, _ in first) and any(a[0] == "export" for a, _ in first)
    second = walk(tmp_path, again=True)
    assert [a for a, _ in first] == [a for a, _ in second]
    by_cmd = {" ".join(a): out for a, out in second}
    # The set-up line's training, run again, finds its run finished instead of failing.
    setup = "train models/digits_mlp.yaml --steps 3 --set train.checkpoints.every_steps=2"
    assert "already at step 3; nothing to do" in by_cmd[setup]
    resumed = next(out for a, out in second if a[0] == "train" and "--resume" in a)
    assert "already at step 10; nothing to do" in resumed


def test_the_readme_has_the_commands_the_walk_expects():
    cmds = [c for c in readme_commands() if c and c[0] == "specflow"]
    assert len(cmds) >= 20
    assert ["specflow", "train", "models/digits_mlp.yaml"] in cmds  # the set-up line
    # every command the CLI has is shown at least once
    shown = {c[1] for c in cmds}
    assert {"validate", "inspect", "run", "train", "eval", "export", "predict", "ops", "schema"} <= shown


@pytest.mark.parametrize("argv", [["--steps", "500"], ["--checkpoint", "250"]])
def test_scaling_keeps_flags_in_place(argv):
    assert _scaled(["eval", *argv])[1] == argv[0]
