"""``signet eval``: score recall on a user's own queries against keyword-only and vector-only
baselines, through the running daemon (signet.search.evaluation, docs/lifecycle.md)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from signet.cli.app import app
from signet.cli.client import DaemonClient
from signet.errors import InvalidRequest
from signet.search.evaluation import MODES, Report, captured_cases, load_cases

LEDGER_PAGE = 500
LEDGER_PAGES = 20


def _capture(client: DaemonClient, path: Path, force: bool) -> int:
    """Write ``path`` from positive ratings and the recall QA ledger; the number of cases."""
    if path.exists() and not force:
        raise InvalidRequest(f"{path} exists: pass --force to overwrite it with captured cases")
    feedback = client.get_json("/api/feedback", limit=1000)["items"]
    searches: list[dict[str, Any]] = []
    for page in range(LEDGER_PAGES):
        got = client.get_json("/api/telemetry/memory-search", limit=LEDGER_PAGE, offset=page * LEDGER_PAGE)
        if not got["enabled"] and not got["items"]:
            raise InvalidRequest(
                "the recall QA ledger is off, so rated memories have no query to pair with: set "
                "memory.pipelineV2.telemetry.memorySearchQaEnabled: true, use recall, rate with memory_feedback"
            )
        searches.extend(got["items"])
        if len(got["items"]) < LEDGER_PAGE:
            break
    cases = captured_cases(feedback, searches)
    if not cases:
        raise InvalidRequest("no positive rating matches a logged recall yet: nothing to capture")
    path.write_text(yaml.safe_dump({"k": 5, "cases": cases}, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return len(cases)


def _rank(r: int | None) -> str:
    return str(r) if r is not None else "-"


@app.command("eval")
def evaluate(
    file: Annotated[
        Path, typer.Argument(help="Queries with expected memories (YAML or JSON; see docs/eval-sample.yaml).")
    ],
    k: Annotated[
        int | None, typer.Option("--k", min=1, max=100, help="The cut-off of recall@k (default: the file's, else 5).")
    ] = None,
    capture: Annotated[
        bool,
        typer.Option("--capture", help="First write FILE from positive memory_feedback ratings (needs the QA ledger)."),
    ] = False,
    force: Annotated[bool, typer.Option("--force", help="With --capture: overwrite FILE.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Score recall on your own queries, as configured and against keyword-only and vector-only baselines."""
    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table

    client = DaemonClient()
    err = Console(stderr=True)
    if capture:
        n = _capture(client, file, force)
        err.print(f"captured {n} cases into {file}")
    spec = load_cases(file)
    report = Report(k=k or spec.k, depth=max(spec.depth, k or 0), cases=spec.cases)
    with Progress(console=err, transient=True, disable=as_json or not sys.stderr.isatty()) as bar:
        task = bar.add_task("recalling", total=len(spec.cases) * len(MODES))
        for case in spec.cases:
            for mode, alpha in MODES.items():
                body: dict[str, Any] = {"query": case.query, "limit": report.depth, "track_access": False}
                for key, val in (("alpha", alpha), ("project", case.project), ("agent_id", case.agent_id)):
                    if val is not None:
                        body[key] = val
                got = client.post_json("/api/memory/recall", body)
                vs = got.get("vector_search") or {}
                if mode == "vector" and not vs.get("available", True) and not report.notes:
                    report.notes.append(
                        f"vector search is unavailable ({vs.get('reason')}): the vector baseline is keyword results"
                    )
                report.add(mode, case, got["results"])
                bar.advance(task)
    if as_json:
        typer.echo(report.to_json())
        return
    out = Console()
    per = Table("#", "query", *MODES, title=f"rank of the first expected memory (- : not in the top {report.depth})")
    for i, case in enumerate(spec.cases, 1):
        per.add_row(str(i), case.query[:70], *(_rank(report.modes[m].ranks[i - 1]) for m in MODES))
    out.print(per)
    summary = {m: s.summary(report.k) for m, s in report.modes.items()}
    cmp = Table("mode", f"recall@{report.k}", "MRR", "found", title="compared with the baselines")
    labels = {"live": "live (as configured)", "keyword": "keyword only", "vector": "vector only"}
    for m in MODES:
        s = summary[m]
        cmp.add_row(
            labels[m], f"{s[f'recall@{report.k}']:.3f}", f"{s['mrr']:.3f}", f"{int(s['found'])}/{len(spec.cases)}"
        )
    out.print(cmp)
    for note in report.notes:
        out.print(f"[yellow]{note}[/]")
