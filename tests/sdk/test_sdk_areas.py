"""The SDK's namespaces against one real daemon: documents, connectors, tasks, skills, git,
backups, export/import, analytics, the pipeline, diagnostics, repairs and maintenance; each
with its typed answer and its typed errors (NotFound, InvalidRequest, Conflict), sync and async."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from signet.gitsync.models import GitStatus
from signet.models import ConnectorHealth, Document, DocumentList, DocumentQueued, SyncResult
from signet.ops.analytics_report import ErrorsReport, UsageReport
from signet.ops.diagnostics_report import DiagnosticsReport, DomainReport
from signet.sdk import AsyncSignetClient, Conflict, InvalidRequest, NotFound, SignetClient
from signet.skills.models import SkillDetail, SkillInstalled
from signet.tasks.models import Task, TaskRunList
from signet.workspace import Workspace, setup_workspace
from tests.conftest import DaemonProcess, launch_daemon, write_config
from tests.skills.conftest import write_skill


@pytest.fixture(scope="module")
def area_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DaemonProcess, Path]]:
    base = tmp_path_factory.mktemp("sdk-areas")
    allowed = base / "allowed"
    allowed.mkdir()
    ws = Workspace(base / "ws")
    setup_workspace(ws, agent_name="test-agent", user_name="Tester", embedding_provider="none")
    write_config(
        ws,
        memory={"pipelineV2": {"pollIntervalMs": 50}},
        documents={"allowed_paths": [str(allowed)], "poll_interval_ms": 50},
        tasks={"allow": ["sh"]},
    )
    d = launch_daemon(ws, env={"HOME": str(base / "home")})
    yield d, allowed
    d.stop()


@pytest.fixture
def client(area_daemon: tuple[DaemonProcess, Path]) -> Iterator[SignetClient]:
    with SignetClient(area_daemon[0].url) as c:
        yield c


def wait(check: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


def test_documents(client: SignetClient) -> None:
    title = f"runbook-{uuid.uuid4().hex[:6]}"
    queued = client.documents.add(content="# Deploys\n\nDeploys go out on Thursdays.", title=title)
    assert isinstance(queued, DocumentQueued) and queued.created and queued.document.title == title
    doc_id = queued.document.id
    wait(lambda: client.documents.get(doc_id).status in ("done", "failed"))
    doc = client.documents.get(doc_id[:8])  # a unique prefix will do
    assert isinstance(doc, Document) and doc.status == "done", doc.error
    listed = client.documents.list(status="done")
    assert isinstance(listed, DocumentList) and doc_id in {d.id for d in listed.items}
    chunks = client.documents.chunks(doc_id)
    assert chunks.count >= 1 and "Thursdays" in " ".join(c.content for c in chunks.chunks)
    gone = client.documents.delete(doc_id)
    assert gone.status == "deleted" and gone.memories_deleted >= 1
    with pytest.raises(NotFound):
        client.documents.get(doc_id)
    with pytest.raises(NotFound):
        client.documents.chunks("nonexistent-doc")
    with pytest.raises(NotFound):
        client.documents.delete(doc_id)
    with pytest.raises(InvalidRequest, match="title"):  # content without a title: refused before any I/O
        client.documents.add(content="no title")
    with pytest.raises(InvalidRequest):  # two sources
        client.documents.add(url="https://example.com", content="x", title="t")
    with pytest.raises(InvalidRequest):
        client.documents.list(status="bogus")  # type: ignore[arg-type]
    with pytest.raises(InvalidRequest, match="document id is required"):
        client.documents.get(" ")


def test_connectors(client: SignetClient, area_daemon: tuple[DaemonProcess, Path]) -> None:
    root = area_daemon[1] / f"notes-{uuid.uuid4().hex[:6]}"
    root.mkdir()
    (root / "a.md").write_text("# Alpha\n\nThe alpha service runs on port 7001.\n")
    conn = client.connectors.create(config={"root": str(root), "watch": False}, name="notes")
    assert conn.name == "notes" and client.connectors.get(conn.id[:8]).id == conn.id
    assert conn.id in {c.id for c in client.connectors.list().items}
    synced = client.connectors.sync(conn.id)
    assert isinstance(synced, SyncResult) and synced.queued == 1 and not synced.full
    assert client.connectors.sync(conn.id, full=True).full is True
    health = client.connectors.health(conn.id)
    assert isinstance(health, ConnectorHealth) and health.files == 1
    assert client.connectors.delete(conn.id).status == "deleted"
    with pytest.raises(NotFound):
        client.connectors.health(conn.id)
    with pytest.raises(NotFound):
        client.connectors.sync("no-such-connector")
    with pytest.raises(NotFound):
        client.connectors.get(conn.id)
    with pytest.raises(NotFound):
        client.connectors.delete(conn.id)
    with pytest.raises(InvalidRequest):
        client.connectors.create(config={"root": "relative/path"}, provider="bad provider!")


def test_tasks(client: SignetClient) -> None:
    task = client.tasks.create(name="echo", schedule="every 1h", command=["sh", "-c", "echo hi"])
    assert isinstance(task, Task) and task.enabled
    assert task.id in {t.id for t in client.tasks.list().tasks}
    assert client.tasks.get(task.id).name == "echo"
    assert client.tasks.update(task.id, enabled=False, name="echo2").name == "echo2"
    run = client.tasks.run(task.id)
    assert run.task_id == task.id and run.trigger == "manual"
    wait(lambda: client.tasks.runs(task.id).items[0].status != "running")
    runs = client.tasks.runs(task.id, limit=5)
    assert isinstance(runs, TaskRunList) and runs.total == 1 and runs.items[0].status == "done"
    assert client.tasks.delete(task.id).deleted is True
    with pytest.raises(NotFound):
        client.tasks.get(task.id)
    with pytest.raises(NotFound):
        client.tasks.run("missing-task")
    with pytest.raises(NotFound):
        client.tasks.update("missing-task", enabled=True)
    with pytest.raises(NotFound):
        client.tasks.delete("missing-task")
    with pytest.raises(NotFound):
        client.tasks.runs("missing-task")
    with pytest.raises(InvalidRequest):  # a field tasks do not have, refused before any I/O
        client.tasks.update(task.id, colour="blue")
    with pytest.raises(InvalidRequest):  # neither a command nor a harness
        client.tasks.create(name="x", schedule="every 1h")
    with pytest.raises(InvalidRequest):
        client.tasks.create(name="x", schedule="not a schedule", command=["sh"])


def test_skills(client: SignetClient, tmp_path: Path) -> None:
    src = write_skill(tmp_path / "triage", "triage", description="Triage incoming issues")
    installed = client.skills.install(str(src))
    assert isinstance(installed, SkillInstalled) and installed.skill.name == "triage" and not installed.replaced
    with pytest.raises(Conflict):
        client.skills.install(str(src))
    assert client.skills.install(str(src), force=True).replaced is True
    shown = client.skills.get("triage")
    assert isinstance(shown, SkillDetail) and "Tag it" in shown.body
    assert client.skills.use("triage").use_count == 1
    assert [s.name for s in client.skills.list().skills] == ["triage"]
    assert client.skills.search("issues").results[0].name == "triage"
    assert client.skills.remove("triage").name == "triage"
    with pytest.raises(NotFound):
        client.skills.get("triage")
    with pytest.raises(NotFound):
        client.skills.remove("triage")
    with pytest.raises(NotFound):
        client.skills.use("triage")
    with pytest.raises(InvalidRequest):
        client.skills.search("")
    with pytest.raises(InvalidRequest):
        client.skills.install("")


def test_git_backup_export_import_analytics(client: SignetClient) -> None:
    status = client.git.status()
    assert isinstance(status, GitStatus)
    with pytest.raises(InvalidRequest):
        client.git.set_remote("ext::sh -c touch% /tmp/pwned")
    assert client.git.config().url is None
    for no_remote in (client.git.pull, client.git.push, client.git.sync):
        with pytest.raises(InvalidRequest):
            no_remote()  # no remote configured: one readable refusal
    made = client.backup("sdk-test")
    assert made["backup"]["reason"] == "sdk-test"
    assert made["backup"]["name"] in {b["name"] for b in client.backups()["backups"]}
    with pytest.raises(InvalidRequest):
        client.backup("../escape")

    t = f"t{uuid.uuid4().hex[:6]}"
    saved = client.remember(f"{t}: exported and imported", tags=[t])
    text = client.export()
    header, *data = [json.loads(line) for line in text.splitlines() if line]
    assert header["kind"] == "header"
    assert saved.id in {d["memory"]["id"] for d in data if d["kind"] == "memory"}
    again = client.import_lines(data)
    assert again["memories_added"] == 0 and again["memories_present"] >= 1  # idempotent
    with pytest.raises(InvalidRequest):
        client.import_lines([{"kind": "memory", "nonsense": True}])
    with pytest.raises(InvalidRequest):
        client.import_lines([])

    usage = client.analytics.usage()
    assert isinstance(usage, UsageReport) and usage.uptime_s > 0 and usage.endpoints["GET /api/export"]["calls"] == 1
    assert client.analytics.latency().unit == "ms"
    errs = client.analytics.errors(limit=5)
    assert isinstance(errs, ErrorsReport) and len(errs.errors) <= 5 and errs.summary.total >= 0
    with pytest.raises(InvalidRequest):
        client.analytics.errors(limit=0)


def test_pipeline_diagnostics_repairs(client: SignetClient) -> None:
    assert "queue" in client.pipeline.status()
    jobs = client.pipeline.jobs(limit=5)
    assert "items" in jobs and "total" in jobs
    with pytest.raises(NotFound):
        client.pipeline.job("no-such-job")
    with pytest.raises(NotFound):
        client.pipeline.requeue_dead(job_id="no-such-job")
    with pytest.raises(InvalidRequest):
        client.pipeline.jobs(status="bogus")
    requeued = client.pipeline.requeue_dead()  # whatever died earlier in this daemon (a summary job too)
    assert requeued["count"] == len(requeued["requeued"])
    assert "released" in client.pipeline.release_leases()

    report = client.diagnostics()
    assert isinstance(report, DiagnosticsReport) and "queue" in report.domains and 0 <= report.score <= 1
    queue = client.diagnostics_domain("queue")
    assert isinstance(queue, DomainReport) and queue.weight == report.domains["queue"].weight
    with pytest.raises(NotFound, match="no diagnostics domain"):
        client.diagnostics_domain("nope")
    with pytest.raises(InvalidRequest):
        client.diagnostics_domain("")
    assert "coverage" in client.embeddings_status()

    fts = client.repair.check_fts()
    assert fts["consistent"] is True and fts["rebuilt"] is False
    assert "pending" in client.repair.embedding_gaps()
    assert client.repair.clean_orphans(dry_run=True)["dry_run"] is True
    sweep = client.repair.retention_sweep()
    assert {"tombstones", "history", "embeddings"} <= set(sweep) and all(isinstance(v, int) for v in sweep.values())
    assert "clusters" in client.repair.dedup_stats()
    assert client.repair.deduplicate(dry_run=True)["dry_run"] is True
    assert "items" in client.repair.audit(limit=5)
    assert "enabled" in client.repair.maintenance()
    assert "mode" in client.repair.run_maintenance("observe")
    with pytest.raises(InvalidRequest):
        client.repair.run_maintenance("destroy")  # type: ignore[arg-type]
    with pytest.raises(InvalidRequest):
        client.repair.dedup_stats(threshold=0.1)


def test_async_namespaces(area_daemon: tuple[DaemonProcess, Path]) -> None:
    async def scenario() -> None:
        async with AsyncSignetClient(area_daemon[0].url) as a:
            queued = await a.documents.add(content="# Async\n\nFrom the async client.", title="async doc")
            assert isinstance(queued, DocumentQueued)
            assert (await a.documents.get(queued.document.id)).id == queued.document.id
            assert isinstance((await a.git.status()), GitStatus)
            assert "queue" in await a.pipeline.status()
            with pytest.raises(NotFound):
                await a.tasks.get("missing")
            assert (await a.documents.delete(queued.document.id)).status == "deleted"

    asyncio.run(scenario())
