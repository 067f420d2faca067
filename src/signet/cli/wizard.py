"""The questions of ``signet setup`` on a terminal, and the checks its flags share.

The wizard only gathers :class:`Choices`; it writes nothing. ``signet setup`` then applies
the choices exactly as it applies flags given with ``--non-interactive``, so the same
answers make the same workspace either way. A question whose flag was given is not asked.
Provider names come from the plugin registry, the same source agent.yaml's validation uses,
so a provider added there (or by a plugin) is offered here without a change.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, fields
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from signet import plugins
from signet.cli import llm_detect
from signet.cli.ask import Invalid, ask, confirm, console, one_of
from signet.daemon import unit
from signet.harnesses import detect
from signet.harnesses.install import all_harnesses

MAX_NAME = 100


@dataclass
class Choices:
    """Everything ``signet setup`` needs to know; None: not decided yet (ask, or default)."""

    workspace: Path | None = None
    agent_name: str | None = None
    description: str | None = None
    user_name: str | None = None
    harnesses: list[str] | None = None
    embedding: str | None = None
    llm: str | None = None
    search_alpha: float | None = None
    git: bool | None = None
    service: bool | None = None
    start: bool | None = None
    open_dashboard: bool | None = None
    notes: list[str] = field(default_factory=list)


# --- checks (the wizard's answers and the flags alike) ---------------------------------------


def check_workspace(text: str) -> Path:
    """An absolute directory that exists or can be created here (relative: from the current
    directory; ``~`` expanded)."""
    if not text:
        raise Invalid("give a directory")
    if "\x00" in text:
        raise Invalid("a path cannot contain NUL characters")
    path = Path(text).expanduser().resolve()
    if path.exists() and not path.is_dir():
        raise Invalid(f"{path} exists and is not a directory")
    parent = path
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise Invalid(f"{parent} is not a directory, so {path} cannot be created")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise Invalid(f"{parent} is not writable by you")
    return path


def check_agent_name(text: str) -> str:
    if not text:
        raise Invalid("give a name (Enter takes the default)")
    if len(text) > MAX_NAME or not text.isprintable():
        raise Invalid(f"a name is at most {MAX_NAME} printable characters on one line")
    return text


MAX_DESCRIPTION = 300


def check_description(text: str) -> str | None:
    """One printable line (it goes into agent.yaml and IDENTITY.md); empty: none."""
    if len(text) > MAX_DESCRIPTION or not text.isprintable():
        raise Invalid(f"a description is at most {MAX_DESCRIPTION} printable characters on one line")
    return text or None


def check_search_alpha(text: str) -> float:
    """search.alpha: a number from 0 (keywords only) to 1 (meaning only)."""
    try:
        value = float(text)
    except ValueError:
        raise Invalid(f"{text!r} is not a number: give one from 0 to 1 (e.g. 0.7)") from None
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise Invalid(f"{text} is out of range: give a number from 0 to 1 (e.g. 0.7)")
    return value


def check_user_name(text: str) -> str | None:
    if len(text) > MAX_NAME or not text.isprintable():
        raise Invalid(f"a name is at most {MAX_NAME} printable characters on one line")
    return text or None


def check_harnesses(text: str) -> list[str]:
    """Comma- or space-separated names or numbers of the list shown; ``none`` for none."""
    known = list(all_harnesses())
    words = [w for w in text.replace(",", " ").split() if w]
    if words in ([], ["none"]):
        return []
    pick = one_of(known, "harness")
    return list(dict.fromkeys(pick(w) for w in words))


def provider_names(kind: str) -> list[str]:
    """The embedding or LLM providers installed (built-ins and plugins): what agent.yaml accepts."""
    return sorted(plugins.embedders() if kind == "embedding" else plugins.llm_providers())


# --- the questions ---------------------------------------------------------------------------


def _ask_harnesses() -> list[str]:
    found = detect.detect()
    console.print("\n[bold]Harnesses[/] (the agents Signet connects to):")
    for i, d in enumerate(found, 1):
        where = f"[green]found[/] [dim]{escape(d.found)}[/]" if d.found else "[dim]not found[/]"
        console.print(f"  {i}. {d.name:<12} {escape(d.display_name):<14} {where}")
    detected = [d.name for d in found if d.found]
    return ask(
        "Harnesses to connect",
        check_harnesses,
        default=",".join(detected) or "none",
        hint="numbers or names, comma-separated; none",
    )


def _ask_provider(kind: str, default: str, hint: str = "") -> str:
    names = provider_names(kind)
    console.print(f"\n[bold]{'Embedding' if kind == 'embedding' else 'Extraction LLM'} provider[/]:")
    console.print("  " + "  ".join(f"{i}. {n}" for i, n in enumerate(names, 1)))
    question = "Embedding provider" if kind == "embedding" else "Extraction (LLM) provider"
    return ask(question, one_of(names, f"{kind} provider"), default=default, hint=hint)


def run(given: Choices, default_workspace: Path, ollama_url: str = llm_detect.DEFAULT_OLLAMA_URL) -> Choices:
    """Ask every question ``given`` leaves open; raises :class:`~signet.cli.ask.Cancelled`.
    ``ollama_url``: where to look for a local Ollama (the extraction question's default)."""
    c = Choices(**{f.name: getattr(given, f.name) for f in fields(given)})
    console.print("[bold]Signet setup[/]: Enter takes the answer in brackets; Ctrl+C stops without writing.\n")
    if c.workspace is None:
        c.workspace = ask("Workspace directory", check_workspace, default=str(default_workspace))
    if (c.workspace / "agent.yaml").exists():
        note = f"{c.workspace} is already a workspace: its files (agent.yaml too) are kept as they are"
        console.print(f"  [yellow]{escape(note)}[/]")
        c.notes.append(note)
    if c.agent_name is None:
        c.agent_name = ask("Agent name", check_agent_name, default="signet")
    if c.description is None:
        c.description = ask("Agent description", check_description, hint="one line, for IDENTITY.md; Enter skips")
    if c.user_name is None:
        c.user_name = ask("Your name", check_user_name, hint="for USER.md; Enter skips")
    if c.harnesses is None:
        c.harnesses = _ask_harnesses()
    if c.embedding is None:
        c.embedding = _ask_provider("embedding", "local", "local: offline, bundled")
    if c.llm is None:
        found = llm_detect.detect(ollama_url)
        console.print(f"  [dim]{escape(found.said)}[/]")
        c.llm = _ask_provider("LLM", found.provider, "none: memories are stored, not extracted")
    if c.search_alpha is None:
        console.print(
            "\n[bold]Search balance[/]: how recall weighs meaning (vector similarity) against exact "
            "words (keyword/BM25); 1 is meaning only, 0 is words only."
        )
        c.search_alpha = ask("Search balance (0-1)", check_search_alpha, default="0.7")
    console.print()
    if c.git is None:
        c.git = confirm("Make the workspace a git repository", default=True)
    if c.service is None:
        plat = unit.detect_platform()
        if plat is None:
            c.service = False
        else:
            c.service = confirm(f"Start the daemon at login ({plat} service)", default=False)
    if c.start is None:
        c.start = confirm("Start the daemon now", default=True)
    if c.open_dashboard is None:
        # the dashboard is the daemon's page: without a daemon there is nothing to open
        c.open_dashboard = confirm("Open the dashboard in your browser", default=True) if c.start else False
    return c


def summary(c: Choices) -> Table:
    table = Table(title="Setup", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    rows = (
        ("workspace", str(c.workspace)),
        ("agent name", c.agent_name or "signet"),
        ("description", c.description or "-"),
        ("your name", c.user_name or "-"),
        ("harnesses", ", ".join(c.harnesses or []) or "none"),
        ("embedding", c.embedding or "local"),
        ("extraction LLM", c.llm or "none"),
        ("search balance", f"{0.7 if c.search_alpha is None else c.search_alpha:g} (1: meaning only, 0: words only)"),
        ("git repository", "yes" if c.git else "no"),
        ("service at login", "yes" if c.service else "no"),
        ("start the daemon", "yes" if c.start else "no"),
        ("open the dashboard", "yes" if c.open_dashboard else "no"),
    )
    for key, value in rows:
        table.add_row(key, escape(value))
    for note in c.notes:
        table.add_row("note", escape(note))
    return table
