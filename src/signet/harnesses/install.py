"""Install, uninstall, status and regeneration of harness integrations.

What each install changed is kept in ``$SIGNET_WORKSPACE/harnesses/<name>.json`` (the
ledger): the original bytes of every file it touched, and the home, project and Signet
command it was installed with, so uninstall and identity sync act on the same files.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from signet.harnesses import BUILTIN
from signet.harnesses.base import Harness, InstallContext, signet_argv
from signet.harnesses.merge import Change, Ledger, apply_edits, now_iso, read_bytes, revert


class UnknownHarness(LookupError):
    pass


class NotInstalled(LookupError):
    pass


def get_harness(name: str) -> Harness:
    """A harness by name: built-ins are imported directly (cheap), others via plugins."""
    module = BUILTIN.get(name)
    if module is not None:
        harness: Harness = importlib.import_module(module).HARNESS
        return harness
    from signet.plugins import harnesses

    found = harnesses().get(name)
    if found is None:
        raise UnknownHarness(f"unknown harness '{name}'; known: {', '.join(sorted(all_harnesses()))}")
    return found  # type: ignore[no-any-return]


def all_harnesses() -> dict[str, Harness]:
    from signet.plugins import harnesses

    return dict(sorted(harnesses().items()))


def state_dir(workspace: Path) -> Path:
    return workspace / "harnesses"


def make_context(workspace: Path, *, home: Path | None = None, project: Path | None = None) -> InstallContext:
    return InstallContext(
        home=home or Path.home(),
        workspace=workspace,
        signet=signet_argv(),
        project=project.resolve() if project is not None else None,
    )


def ledger_context(ledger: Ledger, workspace: Path) -> InstallContext:
    """The context an install was made with (same home, project and command)."""
    opts = ledger.options
    return InstallContext(
        home=Path(opts["home"]),
        workspace=workspace,
        signet=list(opts["signet"]),
        project=Path(opts["project"]) if opts.get("project") else None,
    )


def install(harness: Harness, ctx: InstallContext) -> list[Change]:
    sd = state_dir(ctx.workspace)
    ledger = Ledger.load(sd, harness.name) or Ledger(harness=harness.name, installed_at=now_iso())
    changes = apply_edits(harness.edits(ctx), ledger)
    ledger.options = {
        "home": str(ctx.home),
        "signet": ctx.signet,
        "project": str(ctx.project) if ctx.project else None,
    }
    ledger.save(sd)
    return changes


def uninstall(harness: Harness, workspace: Path) -> list[Change]:
    sd = state_dir(workspace)
    ledger = Ledger.load(sd, harness.name)
    if ledger is None:
        raise NotInstalled(f"{harness.display_name} is not installed (no record in {sd})")
    changes = revert(harness.edits(ledger_context(ledger, workspace)), ledger)
    ledger.delete(sd)
    return changes


def installed(workspace: Path) -> list[str]:
    sd = state_dir(workspace)
    if not sd.is_dir():
        return []
    return sorted(p.stem for p in sd.glob("*.json"))


@dataclass
class FileStatus:
    path: str
    description: str
    exists: bool
    present: bool


def status(harness: Harness, workspace: Path, *, home: Path | None = None) -> dict[str, Any]:
    ledger = Ledger.load(state_dir(workspace), harness.name)
    ctx = ledger_context(ledger, workspace) if ledger is not None else make_context(workspace, home=home)
    files = []
    for e in harness.edits(ctx):
        try:
            current = read_bytes(e.path)
        except OSError:  # unreadable (permissions, a directory in the way): report it as absent
            current = None
        files.append(FileStatus(str(e.path), e.description, current is not None, e.present(current)))
    return {
        "name": harness.name,
        "display_name": harness.display_name,
        "installed": ledger is not None,
        "installed_at": ledger.installed_at if ledger is not None else None,
        "complete": ledger is not None and all(f.present for f in files),
        "files": [vars(f) for f in files],
    }


def regenerate(workspace: Path, names: list[str] | None = None) -> dict[str, list[Change]]:
    """Rewrite the instruction files of installed harnesses from the identity files."""
    sd = state_dir(workspace)
    out: dict[str, list[Change]] = {}
    for name in names if names is not None else installed(workspace):
        ledger = Ledger.load(sd, name)
        if ledger is None:
            continue
        harness = get_harness(name)
        out[name] = apply_edits(harness.instruction_edits(ledger_context(ledger, workspace)), ledger)
        ledger.save(sd)
    return out
