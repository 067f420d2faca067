"""``signet consolidate``: plan, apply, list and undo consolidation runs through the daemon
(signet.ops.consolidation, docs/lifecycle.md). Plain JSON over HTTP: no store code imported."""

from __future__ import annotations

import json
import sys
from contextlib import nullcontext
from typing import Annotated, Any

import typer

from signet.cli.app import app
from signet.cli.client import DaemonClient
from signet.errors import InvalidRequest


def _print_run(run: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    out = Console()
    plan = run["plan"]
    if plan["actions"]:
        t = Table("#", "kind", "retires", "keeps / writes", "why", title=f"consolidation run {run['id']}")
        for n, a in enumerate(plan["actions"]):
            keeps = (a["keep"] or "")[:8]
            if a["kind"] == "merge":
                made = run["created"].get(str(n))
                keeps = (f"{made[:8]}: " if made else "new: ") + str(a["content"])[:80]
            t.add_row(str(n), a["kind"], " ".join(i[:8] for i in a["retire"]), keeps, a["reason"][:80])
        out.print(t)
    else:
        out.print(f"consolidation run {run['id']}: nothing to consolidate ({plan['scanned']} memories looked at)")
    out.print(f"tier 2 (LLM merge): {plan['tier2']}")
    for note in plan["notes"]:
        out.print(f"[yellow]{note}[/]")
    c = run["counts"]
    what = f"{c['duplicate']} duplicate, {c['expired']} expired, {c['stale_todo']} stale todo, {c['merge']} merge"
    if run["status"] == "planned":
        out.print(f"planned: {what}; {c['retired']} memories would be retired. Apply exactly this plan with")
        out.print(f"  signet consolidate --apply {run['id']}")
    elif run["status"] == "applied":
        out.print(f"applied: {what}; {c['retired']} memories retired. Undo with")
        out.print(f"  signet consolidate --undo {run['id']}")
    else:
        out.print(f"undone: {c['retired']} memories restored, {len(run['created'])} merged memories removed")


@app.command()
def consolidate(
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Plan and show; change nothing (the plan is kept).")
    ] = False,
    apply: Annotated[str | None, typer.Option("--apply", help="Apply a dry-run's plan, exactly (by run id).")] = None,
    undo: Annotated[str | None, typer.Option("--undo", help="Undo an applied run (by run id).")] = None,
    list_runs: Annotated[bool, typer.Option("--list", help="List the runs, newest first.")] = False,
    no_llm: Annotated[bool, typer.Option("--no-llm", help="Tier 1 rules only: do not ask the LLM to merge.")] = False,
    reason: Annotated[str | None, typer.Option(help="With --undo: why.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Consolidate memories: near duplicates, expired temporaries, stale todos, and LLM merges."""
    if sum(bool(x) for x in (dry_run, apply, undo, list_runs)) > 1:
        raise InvalidRequest("choose one of --dry-run, --apply, --undo and --list")
    client = DaemonClient(timeout=600.0)  # tier 2 asks the model once per cluster
    if list_runs:
        runs = client.get_json("/api/consolidations")
        if as_json:
            typer.echo(json.dumps(runs, indent=2))
            return
        for r in runs["items"]:
            typer.echo(
                f"{r['id']}  {r['status']:<8} {r['created_at'][:19]}  {r['actions']} actions, "
                f"{r['retired']} retired  ({r['trigger']}, {r['actor']})"
            )
        if not runs["items"]:
            typer.echo("no consolidation runs yet")
        return
    if undo:
        run = client.post_json(f"/api/consolidations/{undo}/undo", {"reason": reason} if reason else {})
    else:
        body: dict[str, Any] = {"plan_id": apply} if apply else {"dry_run": dry_run, "tier2": not no_llm}
        from rich.console import Console

        with Console(stderr=True).status("consolidating…", spinner="dots") if sys.stderr.isatty() else nullcontext():
            run = client.post_json("/api/memory/consolidate", body)
    if as_json:
        typer.echo(json.dumps(run, indent=2))
    else:
        _print_run(run)
