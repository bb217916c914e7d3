"""How a command's failure reaches the user: one line per problem on stderr and exit code 1,
never a traceback. Kept apart from ``cli.py`` (the commands)."""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import sys
from collections.abc import Callable

import typer
from rich.console import Console
from typer.exceptions import TyperException

from specflow.errors import SpecError, SpecflowError

# emoji=False: a name such as "x:abc:" must print as written, not as rich's emoji for ":abc:".
err = Console(stderr=True, highlight=False, emoji=False)
DEBUG_ENV = "SPECFLOW_DEBUG"  # set: an unexpected exception propagates with its traceback


def handle_errors(fn: Callable) -> Callable:
    """Turn SpecflowErrors into one line per problem on stderr and exit code 1. An exception no
    check foresaw (a bug) is one line too, naming its type, with exit code 1: a user never sees
    a traceback (``SPECFLOW_DEBUG=1`` shows it)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except SpecflowError as e:
            note = getattr(e, "cli_note", "")  # the flags that changed the spec (see _load)
            for line in e.format().splitlines():
                line = f"{line} {note}" if note and "--set" not in line else line
                err.print(f"[red]error:[/red] {_escape(line)}", soft_wrap=True)
            raise typer.Exit(1) from None
        except BrokenPipeError:  # `specflow inspect ... | head`: the reader left; say nothing, as `yes | head`
            with contextlib.suppress(OSError, ValueError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the exit's flush must not fail again
            raise typer.Exit(128 + signal.SIGPIPE) from None
        except OSError as e:  # a path the commands' own checks did not foresee: still one line
            where = f"{e.filename}: " if e.filename else ""
            err.print(f"[red]error:[/red] {_escape(where + (e.strerror or str(e)))}", soft_wrap=True)
            raise typer.Exit(1) from None
        except KeyboardInterrupt:
            err.print("interrupted")
            raise typer.Exit(130) from None
        except (typer.Exit, typer.Abort, SystemExit, TyperException):  # usage errors: exit code 2
            raise
        except Exception as e:
            if os.environ.get(DEBUG_ENV):
                raise
            text = " ".join(str(e).split()) or "(no message)"
            err.print(f"[red]error:[/red] internal error, {type(e).__name__}: {_escape(text)} (a specflow bug; "
                      f"{DEBUG_ENV}=1 shows where)", soft_wrap=True)
            raise typer.Exit(1) from None

    return wrapper


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


@contextlib.contextmanager
def noting_flags(overrides, run=None, kind: type[SpecflowError] = SpecError):
    """An error of ``kind`` raised inside names the flags that changed the spec (handle_errors
    appends ``cli_note`` to its line): the --set flags, or for ``run`` (a RunConfig) the run's
    remembered --seed/--set. A shape mismatch after ``--set nodes.hidden.units=7`` is the --set's
    doing, and so is a batch size the data cannot fill."""
    try:
        yield
    except kind as e:
        if not getattr(e, "cli_note", ""):
            if run is not None:
                if run.set or run.seed is not None:
                    e.cli_note = f"(with the run's {run.flags()})"
            elif overrides:
                e.cli_note = "(after " + " ".join(f"--set {o}" for o in overrides) + ")"
        raise
