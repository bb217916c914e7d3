"""The CLI tests' shared way to call ``specflow`` in-process and read its one-line errors."""

from __future__ import annotations

from typer.testing import CliRunner

from specflow.cli import app

runner = CliRunner()


def cli(*args):
    """``specflow ARGS``: never a traceback, and nothing but a clean exit may escape."""
    r = runner.invoke(app, [str(a) for a in args], env={"COLUMNS": "200"})
    assert "Traceback" not in r.output, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    return r


def ok(*args) -> str:
    r = cli(*args)
    assert r.exit_code == 0, r.output
    return r.output


def one_error(r, *fragments) -> str:
    """The result's single ``error:`` line (exit code 1), holding each of ``fragments``."""
    assert r.exit_code == 1, r.output
    lines = [ln for ln in r.output.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1, r.output
    for f in fragments:
        assert f in lines[0], lines[0]
    return lines[0]
