"""The root Typer app and its error handling (one readable line, non-zero exit)."""

from __future__ import annotations

from typing import Any

import typer
from typer import _click
from typer.core import TyperGroup

from signet.errors import SignetError


class SignetGroup(TyperGroup):
    """Turns any :class:`SignetError` (or a file error) raised by a command into one line on
    stderr and exit 1."""

    def invoke(self, ctx: _click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except SignetError as exc:
            typer.secho(f"error: {exc.message}", err=True, fg="red")
            raise typer.Exit(1) from None
        except OSError as exc:  # a file the command needs: say which, and why, in one line
            where = f": {exc.filename}" if exc.filename else ""
            typer.secho(f"error: {exc.strerror or exc}{where}", err=True, fg="red")
            raise typer.Exit(1) from None


app = typer.Typer(
    cls=SignetGroup,
    name="signet",
    help="Signet: local-first memory for AI agents.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
