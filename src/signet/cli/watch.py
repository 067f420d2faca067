"""``signet watch``: follow harness session files in the foreground, without the daemon.

The same follower the daemon runs with ``capture.harnesses`` (signet.capture), over the
workspace's database opened here: turns land exactly once even beside a running daemon that
follows the same files (each batch moves its file's cursor with a compare-and-set). Extraction
jobs are queued in the database; the daemon's pipeline runs them when it is up.
"""

from __future__ import annotations

import time
from typing import Annotated

import typer
from rich.console import Console

from signet.capture import cursors
from signet.capture.follow import LiveCapture
from signet.capture.harnesses import HARNESSES
from signet.cli.app import app
from signet.secrets.store import reader as secret_reader
from signet.store.choose import build_store
from signet.store.database import Database
from signet.workspace import Workspace


@app.command()
def watch(
    harness: Annotated[
        list[str] | None,
        typer.Option(
            "--harness",
            help="Follow this harness (claude-code, codex, openclaw); repeat for several. "
            "Default: capture.harnesses, or all three when that is empty.",
        ),
    ] = None,
    once: Annotated[
        bool, typer.Option("--once", help="Read what is new once, queue its extraction, and exit.")
    ] = False,
    every_file: Annotated[
        bool, typer.Option("--all", help="Read files of any age from their start (default: capture.backfillHours).")
    ] = False,
    status: Annotated[
        bool, typer.Option("--status", help="List the followed files and how far each was read.")
    ] = False,
) -> None:
    """Follow Claude Code, Codex and OpenClaw session files as they grow and store each new
    turn once (Ctrl-C stops; a later run resumes where this one stopped)."""
    names = harness or []
    unknown = [n for n in names if n not in HARNESSES]
    if unknown:
        raise typer.BadParameter(
            f"unknown harness {unknown[0]!r}; followed harnesses: {', '.join(HARNESSES)}", param_hint="--harness"
        )
    ws = Workspace.from_env()
    settings = ws.settings()
    console = Console()
    with build_store(ws, settings, secret_reader(ws.secrets_dir, settings.secrets.key_store)) as db:
        if status:
            _print_status(console, db)
            return
        capture_settings = settings.capture.model_copy(update={"backfill_hours": -1.0} if every_file else {})
        chosen = names or list(settings.capture.harnesses) or list(HARNESSES)
        pipeline = settings.memory.pipeline
        capture = LiveCapture(
            db,
            capture_settings,
            harnesses=chosen,
            enqueue=pipeline.enabled,
            max_attempts=pipeline.max_attempts,
            on_stored=lambda path, n: console.print(f"[green]stored[/] {n} turn(s) from {path}"),
        )
        roots = capture.roots()
        if not roots:
            wanted = ", ".join(chosen)
            console.print(
                f"[yellow]no session folder of {wanted} exists yet[/]; set capture.roots in agent.yaml "
                "if the harness keeps its sessions elsewhere"
            )
        for spec, root in roots:
            console.print(f"following {spec.name} sessions under {root}")
        if once:
            capture.scan_once()
            jobs = capture.queue_due(now=True)
            console.print(
                f"stored {capture.stats.turns} turn(s) from {capture.stats.files} new file(s); "
                f"queued {jobs} extraction job(s); refused {capture.stats.refused} file(s)"
            )
            return
        capture.start()
        try:
            with console.status("watching for new turns (Ctrl-C stops)"):
                while True:
                    time.sleep(0.5)
        except KeyboardInterrupt:
            console.print("stopping")
        finally:
            capture.stop()
            jobs = capture.queue_due(now=True)
            console.print(f"stored {capture.stats.turns} turn(s) in all; queued {jobs} extraction job(s)")


def _print_status(console: Console, db: Database) -> None:
    """One line per followed file (whole paths: a table would cut them at the terminal's width)."""
    rows = db.read(cursors.all_cursors)
    if not rows:
        console.print("no session file followed yet; run `signet watch` or set capture.harnesses")
        return
    for r in rows:
        state = r["status"] + (f" ({r['error']})" if r["error"] else "")
        skipped = f", {r['skipped_lines']} unreadable line(s) skipped" if r["skipped_lines"] else ""
        typer.echo(
            f"{r['harness']}  {r['session_key'] or '-'}  {r['turns']} turn(s), {r['offset']} bytes read{skipped}"
            f"  {state}  {r['path']}"
        )
