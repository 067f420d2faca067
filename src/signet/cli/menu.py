"""``signet`` with no arguments on a terminal: a menu of the everyday commands.

Each entry runs the real command (``signet status``…) as a process on this terminal, then the
menu comes back. Piped or redirected, bare ``signet`` prints the help instead
(signet.cli.main), so scripts never wait on a menu.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass

from signet.cli.ask import Cancelled, Invalid, ask, console, one_of
from signet.harnesses.base import signet_argv


def _text(what: str) -> Callable[[str], str]:
    def check(answer: str) -> str:
        if not answer:
            raise Invalid(f"type the {what} (Ctrl+C goes back to the menu)")
        return answer

    return check


@dataclass(frozen=True)
class Entry:
    key: str
    label: str
    argv: Callable[[], list[str]]


ENTRIES = (
    Entry("status", "daemon status", lambda: ["status"]),
    Entry("remember", "store a memory", lambda: ["remember", ask("Memory to store", _text("memory"))]),
    Entry("recall", "search memories", lambda: ["recall", ask("Search for", _text("query"))]),
    Entry("start", "start the daemon", lambda: ["start"]),
    Entry("stop", "stop the daemon", lambda: ["stop"]),
    Entry("harnesses", "connected harnesses", lambda: ["harnesses"]),
    Entry("doctor", "check the daemon's health", lambda: ["doctor"]),
    Entry("logs", "the newest log entries", lambda: ["logs", "-n", "20"]),
    Entry("dashboard", "open the dashboard", lambda: ["dashboard"]),
    Entry("config", "edit agent.yaml", lambda: ["config", "edit"]),
    Entry("setup", "the setup wizard", lambda: ["setup"]),
    Entry("quit", "leave", lambda: []),
)


def run_command(argv: list[str]) -> int:
    """Run ``signet ARGV`` as its own process on this terminal, and return its exit status.

    A process of its own, as if typed: the command's exit, its errors and a setup that names
    another workspace leave the menu as it was. Ctrl+C reaches the command (same terminal) and
    brings the menu back."""
    proc = subprocess.Popen([*signet_argv(), *argv])
    while True:
        try:
            return proc.wait()
        except KeyboardInterrupt:
            continue  # the command got the same Ctrl+C; wait for it to end


def main() -> int:
    """Show the menu until ``quit``, Ctrl+C or end of input; the exit status."""
    keys = [e.key for e in ENTRIES]
    pick = one_of(keys, "choice")
    while True:
        console.print("\n[bold]Signet[/]")
        for i, e in enumerate(ENTRIES, 1):
            console.print(f"  {i:>2}. {e.key:<10} [dim]{e.label}[/]")
        try:
            key = ask("Choose", pick, default="status", hint="number or name")
        except Cancelled as exc:
            return 130 if exc.interrupted else 0
        if key == "quit":
            return 0
        entry = ENTRIES[keys.index(key)]
        try:
            argv = entry.argv()
        except Cancelled:
            continue
        code = run_command(argv)
        if code:
            console.print(f"[dim]`signet {argv[0]}` exited with {code}[/]")
