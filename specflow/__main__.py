"""``python -m specflow`` and the ``specflow`` console script.

The CLI's modules (typer, rich, numpy, the op library) take a moment to import; a Ctrl-C in that
moment must end like one during a command, with "interrupted" and exit code 130, not a traceback.
So the entry point is this small module, which imports the CLI inside the handler."""

from __future__ import annotations

import sys

# After a Ctrl-C the way out may wait on things the interrupt did not stop: the interpreter joins
# non-daemon threads (a kernel still running in a device's pool) and runs atexit hooks (a GPU
# library's teardown, Ray's shutdown). It gets this long; then the process ends with 130 anyway
# (a private Ray's processes are reaped when this process is gone: distributed/reaper.py).
EXIT_GRACE_S = 1.0


def _exit_within(seconds: float, code: int) -> None:
    """End the process with ``code`` in ``seconds`` unless it has ended by then."""
    import os
    import threading

    def hard_exit() -> None:
        try:
            sys.stderr.flush()
        finally:
            os._exit(code)

    timer = threading.Timer(seconds, hard_exit)
    timer.daemon = True
    timer.start()


def main() -> None:
    try:
        from specflow.cli import main as cli_main

        cli_main()
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        _exit_within(EXIT_GRACE_S, 130)
        sys.exit(130)


if __name__ == "__main__":
    main()
