"""The ``signet`` console script (also ``python -m signet.cli.entry``, how Signet spawns itself).

``signet hook …`` is dispatched before the Typer app is imported: harnesses run it before
every prompt, and the hook needs only the standard library (see ``signet.cli.hook``). Any other
known command imports the Typer app and the one module that registers it
(:mod:`signet.cli.commands`): the whole CLI takes ~0.7 s to import, and ``signet start``'s
daemon, ``signet recall`` or ``signet status`` need a fraction of it. Help, a bare ``signet``
and unknown names load every command (:mod:`signet.cli.main`).
"""

from __future__ import annotations

import sys


def run() -> None:
    name = sys.argv[1] if len(sys.argv) > 1 else ""
    if name == "hook":
        from signet.cli.hook import main

        raise SystemExit(main(sys.argv[2:]))
    from signet.cli.commands import COMMANDS

    module = COMMANDS.get(name)
    if module is None:
        from signet.cli.main import run as run_app

        run_app()
        return
    import importlib

    from signet.cli.app import app

    importlib.import_module(f"signet.cli.{module}")
    app()


if __name__ == "__main__":
    run()
