"""``signet pipeline …``: the extraction pipeline's status, its jobs, requeue and lease release."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from signet.cli.app import app
from signet.cli.client import DaemonClient

pipeline_app = typer.Typer(help="The memory pipeline: status, jobs, requeue.", no_args_is_help=True)
app.add_typer(pipeline_app, name="pipeline")


def _echo_json(data: Any) -> None:
    typer.echo(json.dumps(data, indent=2))


@pipeline_app.command("status")
def status(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Queue depth, provider health, flags, and why the pipeline waits (if it does)."""
    st = DaemonClient().get_json("/api/pipeline/status")
    if as_json:
        _echo_json(st)
        return
    q = st["queue"]["by_status"]
    prov = st["provider"]
    health = "ok" if prov["healthy"] else f"not available ({prov['error']})"
    typer.echo(f"pipeline: {st['state']} ({st['mode']} mode)")
    if st["reason"]:
        typer.echo(f"  why: {st['reason']}")
    typer.echo(f"  provider: {prov['name']} {prov['model'] or '(its default model)'} - {health}")
    budget = prov.get("budget") or {}
    if budget.get("limited"):
        uses = [
            f"{k.replace('_', ' ')} {v['used']:,}/{v['limit']:,}"
            for k, v in budget.items()
            if isinstance(v, dict) and v.get("limit")
        ]
        typer.echo(
            "  budget: " + ", ".join(uses) + (f"; {budget['refused']} calls refused" if budget["refused"] else "")
        )
    typer.echo("  jobs: " + ", ".join(f"{k} {v}" for k, v in q.items()))
    if st["queue"]["oldest_pending_age_s"] is not None:
        typer.echo(f"  oldest pending: {st['queue']['oldest_pending_age_s']:.0f}s")
    if st["queue"]["last_error"]:
        typer.echo(f"  last error: {st['queue']['last_error']}")
    flags = ", ".join(f"{k}={v}" for k, v in st["flags"].items())
    typer.echo(f"  flags: {flags}")


@pipeline_app.command("jobs")
def jobs(
    status: Annotated[
        str | None,
        typer.Option(
            "--status", "-s", help="pending, leased, waiting_for_provider, waiting_for_budget, completed, failed, dead"
        ),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, max=500)] = 20,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """List jobs, newest first."""
    params: dict[str, Any] = {"limit": limit}
    if status:
        params["status"] = status
    data = DaemonClient().get_json("/api/pipeline/jobs", **params)
    if as_json:
        _echo_json(data)
        return
    for j in data["items"]:
        target = j["memory_id"] or (j["payload"] or {}).get("session_key") or "-"
        err = f"  error: {j['error']}" if j["error"] else ""
        typer.echo(
            f"{j['id']}  {j['job_type']:<15} {j['status']:<9} {j['attempts']}/{j['max_attempts']}  {target}{err}"
        )
    typer.echo(f"{len(data['items'])} of {data['total']} jobs")


@pipeline_app.command("requeue")
def requeue(
    job_id: Annotated[
        str | None, typer.Argument(help="One dead job (id or unique prefix); all dead jobs (up to --limit) if omitted.")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, max=1000)] = 50,
) -> None:
    """Put dead jobs (extraction and session-summary) back in their queue with a fresh budget of attempts."""
    body: dict[str, Any] = {"limit": limit}
    if job_id:
        body["job_id"] = job_id
    data = DaemonClient().post_json("/api/repair/requeue-dead", body)
    typer.echo(f"requeued {data['count']} dead job(s)")


@pipeline_app.command("release-leases")
def release_leases() -> None:
    """Release leases older than the lease timeout (a worker died mid-job)."""
    data = DaemonClient().post_json("/api/repair/release-leases")
    typer.echo(f"released {data['released']} stale lease(s)")
