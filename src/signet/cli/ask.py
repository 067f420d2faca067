"""Questions on a terminal, for the setup wizard and the ``signet`` menu.

Rich's prompt reads with the terminal's own line editing (``input``), so it works on any
pseudo-terminal, a test's included. Each question shows its default (Enter takes it) and is
checked by a function that returns the value or raises :class:`Invalid` with a one-line
reason; the question is asked again after the reason. Ctrl+C and end of input raise
:class:`Cancelled`, so a caller can stop before anything is written.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TypeVar

from rich.console import Console
from rich.markup import escape

T = TypeVar("T")

console = Console(highlight=False)
errors = Console(stderr=True, highlight=False)


class Invalid(ValueError):
    """An answer that cannot be used; the message says why, in one line."""


class Cancelled(Exception):
    """The user pressed Ctrl+C (``interrupted``) or closed the input."""

    def __init__(self, interrupted: bool) -> None:
        super().__init__("interrupted" if interrupted else "end of input")
        self.interrupted = interrupted


def interactive() -> bool:
    """Both ends are a terminal: there is someone to ask and to show the answers to."""
    return sys.stdin.isatty() and sys.stdout.isatty()


def ask(question: str, check: Callable[[str], T], *, default: str = "", hint: str = "") -> T:
    """Ask until ``check`` accepts the answer (the stripped text; Enter gives ``default``)."""
    shown = f" [bold cyan]({escape(default)})[/]" if default else ""
    note = f" [dim]{escape(hint)}[/]" if hint else ""
    while True:
        try:
            answer = console.input(f"[bold]?[/] {escape(question)}{note}{shown}: ").strip()
        except (KeyboardInterrupt, EOFError) as exc:
            console.print()
            raise Cancelled(isinstance(exc, KeyboardInterrupt)) from None
        try:
            return check(answer or default)
        except Invalid as exc:
            console.print(f"  [red]✗ {escape(str(exc))}[/]")


def yes_no(default: bool) -> Callable[[str], bool]:
    def check(answer: str) -> bool:
        word = answer.lower()
        if word in ("y", "yes"):
            return True
        if word in ("n", "no"):
            return False
        if not word:
            return default
        raise Invalid(f"{answer!r} is not an answer here: type y or n (Enter: {'y' if default else 'n'})")

    return check


def confirm(question: str, *, default: bool) -> bool:
    return ask(question, yes_no(default), default="y" if default else "n", hint="y/n")


def one_of(choices: list[str], what: str) -> Callable[[str], str]:
    """A check that takes one of ``choices`` by name or by its number in the list shown."""

    def check(answer: str) -> str:
        if answer.isdigit() and 1 <= int(answer) <= len(choices):
            return choices[int(answer) - 1]
        if answer in choices:
            return answer
        raise Invalid(f"unknown {what} {answer!r}: choose one of {', '.join(choices)} (or its number)")

    return check
