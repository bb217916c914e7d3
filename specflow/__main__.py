"""``python -m specflow`` and the ``specflow`` console script.

The CLI's modules (typer, rich, numpy, the op library) take a moment to import; a Ctrl-C in that
moment must end like one during a command, with "interrupted" and exit code 130, not a traceback.
So the entry point is this small module, which imports the CLI inside the handler."""

from __future__ import annotations

import sys


def main() -> None:
    try:
        from specflow.cli import main as cli_main

        cli_main()
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.exit(130)


if __name__ == "__main__":
    main()
