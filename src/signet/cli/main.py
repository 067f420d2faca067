"""The whole ``signet`` CLI: importing this module registers every command on the app.

The console script does not import it for a known command (:mod:`signet.cli.entry` loads only
that command's module, :mod:`signet.cli.commands`); help, a bare ``signet`` and tests do.
"""

from __future__ import annotations

import importlib

from signet.cli.app import app
from signet.cli.commands import MODULES

for _name in MODULES:
    importlib.import_module(f"signet.cli.{_name}")


def run() -> None:
    import sys

    from signet.cli.ask import interactive

    if len(sys.argv) == 1 and interactive():  # bare `signet` on a terminal: the menu; piped: the help
        from signet.cli.menu import main

        raise SystemExit(main())
    app()


if __name__ == "__main__":
    run()
