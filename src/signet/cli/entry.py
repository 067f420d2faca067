"""The ``signet`` console script.

``signet hook …`` is dispatched before the Typer app is imported: harnesses run it before
every prompt, and the app with all its command modules takes ~300 ms to import, while the
hook needs only the standard library (see ``signet.cli.hook``).
"""

from __future__ import annotations

import sys


def run() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "hook":
        from signet.cli.hook import main

        raise SystemExit(main(sys.argv[2:]))
    from signet.cli.main import run as run_app

    run_app()
