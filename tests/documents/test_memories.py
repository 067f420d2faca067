"""Document chunks as memories: recall finds them by meaning and says where they came from;
re-ingesting a changed document replaces only its changed chunks; deleting removes its chunks
but not memories someone else still holds."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from signet.runtime import Runtime
from tests.documents.conftest import ingest, job_of, wait_final
from tests.documents.site import Site

App = Callable[..., tuple[Runtime, TestClient]]

HANDBOOK = """# Team handbook

## On-call

The on-call engineer carries the pager for one week and hands over on Monday mornings.

## Expenses

Travel and meals are reimbursed within thirty days when the receipt is uploaded.

## Holidays

Everyone takes twenty-five days of paid leave a year, booked in the HR portal.
"""


def memory_ids(api: TestClient, doc_id: str) -> dict[tuple[str, ...], str]:
    parts = api.get(f"/api/documents/{doc_id}/chunks").json()["chunks"]
    return {tuple(c["heading_path"]): c["memory_id"] for c in parts}


def rows(rt: Runtime, sql: str, *args: Any) -> list[Any]:
    return rt.db.read(lambda c: c.execute(sql, args).fetchall())


def test_recall_finds_a_chunk_by_meaning_and_names_its_document(docs_app: App, site: Site) -> None:
    rt, api = docs_app("local")
    doc = ingest(api, url=site.url("/guide.html"))
    assert doc["status"] == "done", doc
    assert rt.embeddings.wait_idle(60)
    found = api.post("/api/memory/recall", json={"query": "how do I undo a bad release?", "limit": 3}).json()
    assert found["vector_search"]["available"]
    top = found["results"][0]
    assert top["content"].startswith("Deploy Guide \u203a Deploying \u203a Rollback: ")
    assert top["type"] == "document_chunk"
    assert (top["source_type"], top["source_id"]) == ("document", doc["id"])
    # Chunks written by the worker carry their vector already (embedded before the write).
    model = rt.embeddings.model_key
    assert (
        rows(rt, "SELECT COUNT(*) FROM memories WHERE type = 'document_chunk' AND embedding_model = ?", model)[0][0]
        == 3
    )


def test_reingest_replaces_only_changed_chunks(docs_app: App) -> None:
    rt, api = docs_app("local")
    first = ingest(api, content=HANDBOOK, title="Handbook")
    assert first["status"] == "done" and first["chunk_count"] == 3
    assert json.loads(job_of(rt, first["id"])["result"])["embedded"] == 3
    before = memory_ids(api, first["id"])
    changed = HANDBOOK.replace("twenty-five days", "thirty days")
    again = api.post("/api/documents", json={"content": changed, "title": "Handbook"})
    assert again.status_code == 202 and again.json()["created"] is False
    second = wait_final(api, again.json()["document"]["id"])
    assert second["id"] == first["id"] and second["status"] == "done"
    assert second["content_hash"] != first["content_hash"]
    result = json.loads(job_of(rt, first["id"])["result"])
    assert {k: result[k] for k in ("kept", "added", "removed", "embedded")} == {
        "kept": 2,
        "added": 1,
        "removed": 1,
        "embedded": 1,
    }
    after = memory_ids(api, first["id"])
    hb = ("Team handbook",)
    assert after[(*hb, "On-call")] == before[(*hb, "On-call")]
    assert after[(*hb, "Expenses")] == before[(*hb, "Expenses")]
    assert after[(*hb, "Holidays")] != before[(*hb, "Holidays")]
    # The replaced chunk's memory is gone for good (not a tombstone), its vector with it.
    old = before[(*hb, "Holidays")]
    assert rows(rt, "SELECT COUNT(*) FROM memories WHERE id = ?", old)[0][0] == 0
    live = rows(rt, "SELECT content FROM memories WHERE type = 'document_chunk' AND is_deleted = 0")
    assert len(live) == 3 and any("thirty days of paid leave" in r[0] for r in live)
    assert not any("twenty-five" in r[0] for r in live)


def test_reingesting_an_unchanged_document_changes_nothing(docs_app: App) -> None:
    rt, api = docs_app()
    first = ingest(api, content=HANDBOOK, title="Handbook")
    before = memory_ids(api, first["id"])
    ingest(api, content=HANDBOOK, title="Handbook")
    result = json.loads(job_of(rt, first["id"])["result"])
    assert (result["kept"], result["added"], result["removed"]) == (3, 0, 0)
    assert memory_ids(api, first["id"]) == before


def test_delete_keeps_memories_another_document_holds(docs_app: App, files: Path) -> None:
    rt, api = docs_app()
    (files / "handbook.md").write_text(HANDBOOK)
    a = ingest(api, content=HANDBOOK, title="Handbook")
    b = ingest(api, path=str(files / "handbook.md"), title="Handbook")
    assert a["id"] != b["id"] and a["status"] == b["status"] == "done"
    assert memory_ids(api, a["id"]) == memory_ids(api, b["id"])  # the same three memories, linked twice
    assert b["memory_count"] == 3
    other = ingest(api, content=HANDBOOK, title="Handbook", project="other")  # another owner: its own memories
    assert set(memory_ids(api, other["id"]).values()).isdisjoint(memory_ids(api, a["id"]).values())
    gone = api.delete(f"/api/documents/{a['id']}").json()
    assert gone == {"id": a["id"], "status": "deleted", "memories_deleted": 0}
    assert api.get(f"/api/documents/{a['id']}").status_code == 404
    assert rows(rt, "SELECT COUNT(*) FROM document_memories WHERE document_id = ?", a["id"])[0][0] == 0
    parts = api.get(f"/api/documents/{b['id']}/chunks").json()["chunks"]
    assert len(parts) == 3 and not any(c["deleted"] for c in parts)
    assert api.delete(f"/api/documents/{b['id'][:8]}").json()["memories_deleted"] == 3
    left = rows(rt, "SELECT project FROM memories WHERE type = 'document_chunk'")
    assert [r[0] for r in left] == ["other"] * 3


def test_user_memory_with_a_chunks_text_survives_the_document(docs_app: App) -> None:
    rt, api = docs_app()
    text = "Handbook \u203a Team handbook \u203a On-call: The on-call engineer carries the pager for one week and hands over on Monday mornings."
    mine = api.post("/api/memory/remember", json={"content": text}).json()
    doc = ingest(api, content=HANDBOOK, title="Handbook")
    ids = memory_ids(api, doc["id"])
    assert ids[("Team handbook", "On-call")] == mine["id"]  # the chunk is linked to the user's memory
    assert api.delete(f"/api/documents/{doc['id']}").json()["memories_deleted"] == 2
    assert api.get(f"/api/memory/{mine['id']}").status_code == 200
    assert rows(rt, "SELECT type FROM memories WHERE id = ?", mine["id"])[0][0] != "document_chunk"


def test_a_deleted_documents_queued_job_does_nothing(docs_app: App) -> None:
    rt, api = docs_app()
    rt.document_worker.stop()
    queued = api.post("/api/documents", json={"content": HANDBOOK, "title": "Handbook"}).json()
    assert api.delete(f"/api/documents/{queued['document']['id']}").status_code == 200
    rt.document_worker.start()
    deadline = time.monotonic() + 30
    while job_of(rt, queued["document"]["id"])["status"] != "completed":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert json.loads(job_of(rt, queued["document"]["id"])["result"]) == {"skipped": "the document was deleted"}
    assert rows(rt, "SELECT COUNT(*) FROM memories")[0][0] == 0


def test_a_retired_chunk_does_not_come_back_when_its_document_is_added_again(docs_app: App) -> None:
    """Forgetting a chunk with ``persist`` retires its text (docs/lifecycle.md): deleting the
    document and adding it again brings back every chunk but that one."""
    rt, api = docs_app("none")
    doc = ingest(api, content=HANDBOOK, title="Team handbook")
    assert doc["status"] == "done", doc
    hb = ("Team handbook",)
    expenses = memory_ids(api, doc["id"])[(*hb, "Expenses")]
    preview = api.post("/api/memory/forget", json={"ids": [expenses]}).json()
    r = api.post(
        "/api/memory/forget",
        json={
            "ids": [expenses],
            "mode": "execute",
            "persist": True,
            "reason": "wrong",
            "confirm_token": preview["confirm_token"],
        },
    )
    assert r.status_code == 200, r.text
    assert api.delete(f"/api/documents/{doc['id']}").status_code == 200
    again = ingest(api, content=HANDBOOK, title="Team handbook")
    assert again["status"] == "done", again
    assert set(memory_ids(api, again["id"])) == {(*hb, "On-call"), (*hb, "Holidays")}
    assert json.loads(job_of(rt, again["id"])["result"])["retired"] == 1
    live = rows(rt, "SELECT COUNT(*) FROM memories WHERE type = 'document_chunk' AND is_deleted = 0")[0][0]
    assert live == 2
