"""A memory's later life (docs/lifecycle.md): split a reinforcement out, un-retire, signals."""

from __future__ import annotations

from typing import Annotated

import typer

from signet.cli.app import app
from signet.cli.client import DaemonClient
from signet.models import SignalAckResponse, SignalsResponse, SplitResponse, UnretireResponse


@app.command()
def split(
    memory_id: Annotated[str, typer.Argument(help="The reinforced memory (id or unique prefix).")],
    event_id: Annotated[str, typer.Argument(help="Its `reinforced` history event (`signet history` lists them).")],
    reason: Annotated[str, typer.Option(help="Why the wording is a fact of its own.")],
) -> None:
    """Undo a reinforcement: the wording it recorded becomes a memory of its own."""
    raw = DaemonClient().post_json(f"/api/memory/{memory_id}/split", {"event_id": event_id, "reason": reason})
    done = SplitResponse.model_validate(raw)
    typer.echo(f"split {done.new_id} out of {done.id} ({done.confirmations} confirmations left)")


@app.command()
def unretire(
    memory_id: Annotated[str, typer.Argument(help="A memory forgotten with --persist (id or unique prefix).")],
    reason: Annotated[str, typer.Option(help="Why the text may come back.")],
) -> None:
    """Take a retired memory's text out of the ledger: later writes of it are stored again."""
    raw = DaemonClient().post_json(f"/api/memory/{memory_id}/unretire", {"reason": reason})
    done = UnretireResponse.model_validate(raw)
    typer.echo(f"unretired {done.id}")


@app.command()
def signals(
    consumer: Annotated[str, typer.Argument(help="Who reads them: any stable name (a harness session uses its key).")],
    ack: Annotated[bool, typer.Option("--ack", help="Mark them delivered: they are not shown to it again.")] = False,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, max=200)] = 20,
) -> None:
    """Important new memories this consumer has not been given yet."""
    client = DaemonClient()
    got = SignalsResponse.model_validate(client.get_json("/api/signals", consumer=consumer, limit=limit))
    for s in got.signals:
        typer.echo(f"  {s.id[:8]}  [{s.type}, {s.importance:.2f}] {s.content[:100]}")
    if not got.signals:
        typer.echo("no new signals")
    elif ack:
        done = SignalAckResponse.model_validate(
            client.post_json("/api/signals/ack", {"consumer": consumer, "cursor": got.cursor})
        )
        typer.echo(f"acknowledged up to {done.watermark}")
