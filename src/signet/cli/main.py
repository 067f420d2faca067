"""Entry point of the ``signet`` command. Each noun group registers itself on import."""

from __future__ import annotations

import importlib

from signet.cli.app import app

# One module per noun group, one line each (add yours on its own line).
COMMAND_MODULES = [
    "setup",
    "daemon",
    "memory",
    "lifecycle",
    "consolidate",
    "evaluate",
    "doctor",
    "ingest",
    "watch",
    "install",
    "bench",
    "pipeline",
    "mcp_server",
    "token",
    "repair",
    "backup",
    "transfer",
    "logs",
    "documents",
    "connectors",
    "secret",
    "task",
    "skill",
    "git",
    "service",
    "update",
    "config",
    "dashboard",
    "continuity",
    "migrate_storage",
]

for _name in COMMAND_MODULES:
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
