"""The SDK's lifecycle and continuity operations against a real daemon: unretire and the
retirement ledger, split, provenance, signals, consolidation runs, checkpoints and synthesis;
and a readonly token refused for writes in team mode."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator

import pytest

from signet.continuity.models import CheckpointList, ContinuityStatus, SynthesisWritten
from signet.models import RetirementList, SignalAckResponse, SignalsResponse, UnretireResponse
from signet.ops.consolidation_models import ConsolidationRun, RunList, SourcesResponse
from signet.sdk import AsyncSignetClient, Conflict, Forbidden, InvalidRequest, NotFound, SignetClient
from signet.workspace import Workspace
from tests.auth.conftest import configure, token_for
from tests.conftest import DaemonProcess


@pytest.fixture
def client(sdk_daemon: DaemonProcess) -> Iterator[SignetClient]:
    with SignetClient(sdk_daemon.url) as c:
        yield c


def test_retirement_split_and_sources(client: SignetClient) -> None:
    text = f"The staging cluster is called {uuid.uuid4().hex[:8]}"
    mid = client.remember(text).id
    client.forget(ids=[mid], reason="wrong and stale", persist=True)
    ledger = client.retirements()
    assert isinstance(ledger, RetirementList) and ledger.total >= 1
    assert text in {r.content for r in ledger.items if r.memory_id == mid}
    back = client.unretire(mid[:8], reason="allowed again")
    assert isinstance(back, UnretireResponse) and back.status == "unretired" and back.entries == 1
    assert mid not in {r.memory_id for r in client.retirements().items}
    with pytest.raises(NotFound):
        client.unretire(mid, reason="twice")
    with pytest.raises(InvalidRequest):
        client.unretire(mid, reason="  ")

    with pytest.raises(NotFound):  # no such reinforcement event
        client.split(client.remember(f"split me {uuid.uuid4().hex}").id, "no-such-event", reason="test")
    with pytest.raises(NotFound):
        client.split("missing-memory", "ev", reason="test")
    with pytest.raises(InvalidRequest):
        client.split("m", "", reason="test")

    plain = client.remember(f"not merged {uuid.uuid4().hex}").id
    got = client.sources(plain)
    assert isinstance(got, SourcesResponse) and got.id == plain and got.sources == []
    with pytest.raises(NotFound):
        client.sources("missing-memory")


def test_signals_and_ack(client: SignetClient) -> None:
    consumer = f"sdk-{uuid.uuid4().hex[:6]}"
    first = client.signals(consumer)
    assert isinstance(first, SignalsResponse) and first.watermark is None
    client.ack_signals(consumer, first.cursor)
    decided = client.remember(f"Decision: ship on Fridays {uuid.uuid4().hex[:6]}", importance=0.95).id
    got = client.signals(consumer)
    assert decided in [s.id for s in got.signals]
    acked = client.ack_signals(consumer, got.cursor)
    assert isinstance(acked, SignalAckResponse) and acked.watermark == got.cursor
    assert client.signals(consumer).signals == []
    with pytest.raises(InvalidRequest):
        client.ack_signals(consumer, -1)
    with pytest.raises(InvalidRequest):
        client.signals("")


def test_consolidation_runs(client: SignetClient) -> None:
    planned = client.consolidation.plan(tier2=False)
    assert isinstance(planned, ConsolidationRun) and planned.status == "planned"
    assert client.consolidation.get(planned.id).id == planned.id
    applied = client.consolidation.apply(planned.id)
    assert applied.status == "applied" and applied.id == planned.id
    runs = client.consolidation.list(limit=10)
    assert isinstance(runs, RunList) and planned.id in {r.id for r in runs.items}
    undone = client.consolidation.undo(planned.id, reason="testing undo")
    assert undone.status == "undone"
    with pytest.raises(Conflict):
        client.consolidation.undo(planned.id)
    with pytest.raises(NotFound):
        client.consolidation.get("no-such-run")
    with pytest.raises(NotFound):
        client.consolidation.apply("no-such-plan")
    with pytest.raises(InvalidRequest):
        client.consolidation.list(limit=0)


def test_checkpoints_status_and_synthesis(client: SignetClient) -> None:
    session = f"sdk-{uuid.uuid4().hex[:8]}"
    client.session_end(
        session,
        harness="claude-code",
        project="acme",
        turns=[
            {"role": "user", "content": "The login test in acme is flaky, please fix it"},
            {"role": "assistant", "content": "Fixed the login test: the fixture raced the server"},
        ],
    )
    mine = client.continuity.session_checkpoints(f"claude-code:{session}")
    assert isinstance(mine, CheckpointList) and mine.count >= 1
    assert {c.trigger for c in mine.checkpoints} >= {"session_end"}
    assert all(c.session_key == f"claude-code:{session}" for c in mine.checkpoints)
    by_project = client.continuity.checkpoints(project="acme", limit=100)
    assert {c.id for c in mine.checkpoints} <= {c.id for c in by_project.checkpoints}
    assert client.continuity.checkpoints(project=f"elsewhere-{session}").count == 0
    with pytest.raises(NotFound):
        client.continuity.session_checkpoints("claude-code:never-ran")
    with pytest.raises(InvalidRequest):
        client.continuity.checkpoints(limit=0)

    status = client.continuity.status()
    assert isinstance(status, ContinuityStatus) and status.worker_alive and status.provider is None
    req = client.continuity.synthesis_request()
    assert req.agent_id == "default" and req.prompt
    written = client.continuity.write_synthesis("## Now\n- shipping the SDK")
    assert isinstance(written, SynthesisWritten) and written.source == "harness" and written.chars > 0
    assert client.continuity.synthesize().source == "deterministic"  # no LLM configured
    with pytest.raises(InvalidRequest):
        client.continuity.write_synthesis("")
    with pytest.raises(NotFound):
        client.continuity.remove_summaries("0123456789abcdef")
    with pytest.raises(NotFound):
        client.continuity.remove_summaries("../../etc")  # not a token: never a path

    async def scenario() -> None:
        async with AsyncSignetClient(client.url) as a:
            assert (await a.continuity.session_checkpoints(f"claude-code:{session}")).count == mine.count
            assert isinstance(await a.consolidation.list(), RunList)
            assert isinstance(await a.signals("async-consumer"), SignalsResponse)

    asyncio.run(scenario())


def test_readonly_token_is_refused_for_writes(
    make_workspace: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess]
) -> None:
    ws = configure(make_workspace(embedding="none", memory={"pipelineV2": {"enabled": False}}), "team")
    d = start_daemon(ws)
    with SignetClient(d.url, token=token_for(ws, "readonly", sub="r")) as ro:
        assert ro.list().items == []  # a read is allowed
        for write in (
            lambda: ro.documents.add(content="x", title="t"),
            lambda: ro.tasks.create(name="x", schedule="every 1h", command=["sh"]),
            lambda: ro.consolidation.plan(),
            lambda: ro.continuity.remove_summaries("0123456789abcdef"),
            lambda: ro.repair.run_maintenance(),
            lambda: ro.backup(),
        ):
            with pytest.raises(Forbidden):
                write()
