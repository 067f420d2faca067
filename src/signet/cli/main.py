"""Entry point of the ``signet`` command. Each noun group registers itself on import."""

from __future__ import annotations

from signet.cli import daemon, ingest, install, memory, setup  # noqa: F401  (registers commands)
from signet.cli.app import app


def run() -> None:
    app()


if __name__ == "__main__":
    run()
