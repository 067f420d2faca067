"""The root Typer app: its error handling (one readable line, non-zero exit), ``--version``,
and help that names what to type.

Help is Click's plain layout with metavars named after the option (``--type TYPE``), not
Typer's Python type labels (``--pinned <bool>``, ``content <str>``): those name the
implementation, not what a user types. The plain layout also prints help texts as written,
where Rich markup would swallow a ``[a,b]`` that is meant literally.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from typer import _click
from typer.core import TyperArgument, TyperGroup, TyperOption

from signet import __version__
from signet.errors import SignetError


class _NamedArgument(TyperArgument):
    """An argument shown by its upper-case name alone (``CONTENT``), without a type label."""

    def display_type_rich(self, ctx: _click.Context) -> str | None:
        return None


def _plain_help(cmd: _click.Command) -> None:
    """Give every parameter of ``cmd`` and its subcommands a metavar a user can read, and turn
    Rich markup off, so ``--help`` shows ``--limit LIMIT`` and ``QUERY``, never ``<int>``."""
    if hasattr(cmd, "rich_markup_mode"):
        cmd.rich_markup_mode = None
    for param in cmd.params:
        if isinstance(param, TyperArgument):
            # Typer builds its parameters itself; the class is the one hook for the type column.
            param.__class__ = _NamedArgument
            param.metavar = param.metavar or (param.name or "value").upper()
        elif isinstance(param, TyperOption) and not (param.is_flag or param.count) and param.metavar is None:
            desc = param.type_descriptor
            choices = [str(getattr(c, "value", c)) for c in desc.choices or ()] if desc.is_choice else []
            param.metavar = "[" + "|".join(choices) + "]" if choices else (param.name or "value").upper()
    for sub in getattr(cmd, "commands", {}).values():
        if sub.short_help is None and sub.help:  # the whole first paragraph, not cut at 45 characters
            sub.short_help = " ".join(sub.help.split("\n\n")[0].split())
        _plain_help(sub)


def _usage_error(exc: _click.exceptions.ClickException, around: _click.Context | None = None) -> typer.Exit:
    """A usage error (missing argument, bad value, unknown command) as one line on stderr,
    with the help to read (the command's, else that of ``around``), instead of a usage block
    and a boxed message."""
    ctx = getattr(exc, "ctx", None) or around
    see = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
    typer.secho(f"error: {exc.format_message()}{see}", err=True, fg="red")
    return typer.Exit(exc.exit_code)


class SignetGroup(TyperGroup):
    """Turns any :class:`SignetError` (or a file error) raised by a command into one line on
    stderr and exit 1, and a usage error into one line and exit 2."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _plain_help(self)  # the whole tree exists here: Typer builds subcommands first

    def make_context(
        self, info_name: str | None, args: list[str], parent: _click.Context | None = None, **extra: Any
    ) -> _click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except _click.exceptions.NoArgsIsHelpError:  # bare `signet`: the help, as Click shows it
            raise
        except _click.exceptions.ClickException as exc:  # an unknown root option
            raise _usage_error(exc) from None

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
        except _click.exceptions.NoArgsIsHelpError:  # bare `signet pipeline`: its help
            raise
        except _click.exceptions.ClickException as exc:  # a subcommand's usage error
            raise _usage_error(exc, ctx) from None


app = typer.Typer(
    cls=SignetGroup,
    name="signet",
    help="Signet: local-first memory for AI agents.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"signet {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Signet: local-first memory for AI agents."""
