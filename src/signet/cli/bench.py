"""``signet bench``: retrieval quality (LoCoMo, LongMemEval) and latency benchmarks.

Heavy imports (torch via the embedder) happen only when a benchmark runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from signet.cli.app import app

bench_app = typer.Typer(help="Benchmarks: retrieval quality and latency.", no_args_is_help=True)
app.add_typer(bench_app, name="bench")


def _print(report: dict[str, Any], as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(report, indent=2))
        return
    for key, value in report.items():
        if isinstance(value, dict):
            typer.echo(f"{key}:")
            for k2, v2 in value.items():
                typer.echo(f"  {k2}: {json.dumps(v2)}")
        else:
            typer.echo(f"{key}: {value}")


@bench_app.command("locomo")
def locomo_cmd(
    path: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="locomo10.json")],
    embedding: Annotated[str, typer.Option(help="Embedding provider (local, none, ...).")] = "local",
    conversations: Annotated[int | None, typer.Option(help="Only the first N conversations.")] = None,
    questions: Annotated[int | None, typer.Option(help="Only the first N questions per conversation.")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """LoCoMo: recall@5/10, hit, all, MRR per category, recall latency and ingest time."""
    from signet.bench import locomo

    rep = locomo.run(path, embedding=embedding, limit_conversations=conversations, limit_questions=questions)
    _print(rep.as_dict(), as_json)


@bench_app.command("longmemeval")
def longmemeval_cmd(
    path: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="LongMemEval JSON (list of questions)")],
    embedding: Annotated[str, typer.Option()] = "local",
    limit: Annotated[int | None, typer.Option(help="Only the first N questions.")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """LongMemEval: session-level recall_all@k, recall_any@k and NDCG@k."""
    from signet.bench import longmemeval

    rep = longmemeval.run(path, embedding=embedding, limit=limit)
    _print(rep, as_json)
