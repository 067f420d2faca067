"""The filesystem connector: a folder's files as documents, kept in step by cursor (mtime +
content hash), .gitignore and globs respected, links out of the root refused, errors said."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from signet.runtime import Runtime
from tests.documents.conftest import wait_final

App = Callable[..., tuple[Runtime, TestClient]]
BUSY = ("queued", "extracting", "chunking", "embedding", "indexing")


def note(i: int, version: int = 1) -> str:
    return (
        f"# Note {i}\n\n## Facts\n\nFact number {i}: the service {i} listens on port {8000 + i}.\n\n"
        f"## Owner\n\nService {i} is owned by team {i % 17} (revision {version}).\n"
    )


def connect(api: TestClient, root: Path, **config: Any) -> dict[str, Any]:
    r = api.post("/api/connectors", json={"config": {"root": str(root), "watch": False, **config}})
    assert r.status_code == 201, r.text
    out: dict[str, Any] = r.json()
    return out


def sync(api: TestClient, cid: str, *, full: bool = False) -> dict[str, Any]:
    r = api.post(f"/api/connectors/{cid}/sync" + ("/full" if full else ""))
    assert r.status_code == 200, r.text
    out: dict[str, Any] = r.json()
    return out


def settle(api: TestClient, cid: str, timeout: float = 600.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        h: dict[str, Any] = api.get(f"/api/connectors/{cid}/health").json()
        if not any(h["documents"].get(s) for s in BUSY):
            return h
        assert time.monotonic() < deadline, h
        time.sleep(0.2)


def stored(rt: Runtime, cid: str) -> dict[str, list[str]]:
    """real path -> the contents of its document's live chunk memories, in chunk order."""
    rows = rt.db.read(
        lambda c: c.execute(
            "SELECT d.source_url, m.content FROM documents d JOIN document_memories dm ON dm.document_id = d.id"
            " JOIN memories m ON m.id = dm.memory_id WHERE d.connector_id = ? AND m.is_deleted = 0"
            " ORDER BY d.source_url, dm.chunk_index",
            (cid,),
        ).fetchall()
    )
    out: dict[str, list[str]] = {}
    for path, content in rows:
        out.setdefault(path, []).append(content)
    return out


def expected(folder: Path) -> dict[str, list[str]]:
    """What the files say the chunks must be."""
    out = {}
    for f in sorted(folder.glob("*.md")):
        text = f.read_text()
        title = text.splitlines()[0][2:]
        facts = text.split("## Facts\n\n")[1].split("\n\n## Owner")[0].strip()
        owner = text.split("## Owner\n\n")[1].strip()
        out[str(f.resolve())] = [f"{title} \u203a Facts: {facts}", f"{title} \u203a Owner: {owner}"]
    return out


@pytest.mark.slow
def test_a_thousand_files_then_edits_deletes_and_additions(docs_app: App, files: Path) -> None:
    rt, api = docs_app("local")
    folder = files / "notes"
    folder.mkdir()
    for i in range(1000):
        (folder / f"note-{i:04d}.md").write_text(note(i))
    cid = connect(api, folder)["id"]
    first = sync(api, cid)
    assert (first["scanned"], first["queued"], first["unchanged"], first["deleted"]) == (1000, 1000, 0, 0)
    health = settle(api, cid)
    assert health["documents"] == {"done": 1000, "total": 1000} and health["files"] == 1000
    assert stored(rt, cid) == expected(folder)
    chunk_ids = {
        r[0]: r[1]
        for r in rt.db.read(lambda c: c.execute("SELECT content, id FROM memories WHERE type = 'document_chunk'"))
    }
    assert len(chunk_ids) == 2000

    # A sync with nothing changed reads no file and queues nothing.
    assert sync(api, cid)["queued"] == 0

    for i in range(10):  # edit one section of ten files
        (folder / f"note-{i:04d}.md").write_text(note(i, version=2))
    for i in range(990, 995):
        (folder / f"note-{i:04d}.md").unlink()
    for i in range(1000, 1003):
        (folder / f"note-{i:04d}.md").write_text(note(i))
    touched = folder / "note-0500.md"  # rewritten with the same text: mtime changes, hash does not
    touched.write_text(touched.read_text())
    os.utime(touched, ns=(time.time_ns(), time.time_ns() + 10**9))
    jobs_before = rt.db.read(lambda c: c.execute("SELECT COUNT(*) FROM memory_jobs").fetchone()[0])

    second = sync(api, cid)
    assert (second["scanned"], second["queued"], second["unchanged"], second["deleted"]) == (998, 13, 985, 5)
    health = settle(api, cid)
    assert health["documents"] == {"done": 998, "total": 998}
    assert stored(rt, cid) == expected(folder)
    results = [
        json.loads(r[0])
        for r in rt.db.read(
            lambda c: c.execute(
                "SELECT result FROM memory_jobs ORDER BY created_at, rowid LIMIT -1 OFFSET ?", (jobs_before,)
            )
        )
    ]
    assert len(results) == 13
    # Only the changed chunks were embedded: one per edited file, two per new file.
    assert sum(r["embedded"] for r in results) == 10 + 3 * 2
    assert sum(r["kept"] for r in results) == 10 and sum(r["removed"] for r in results) == 10
    after = {
        r[0]: r[1]
        for r in rt.db.read(lambda c: c.execute("SELECT content, id FROM memories WHERE type = 'document_chunk'"))
    }
    assert len(after) == 1996
    unchanged = [content for content in after if content in chunk_ids]
    assert len(unchanged) == 2000 - 10 - 5 * 2
    assert all(after[c] == chunk_ids[c] for c in unchanged)  # the same memories, not copies
    model = rt.embeddings.model_key
    missing = rt.db.read(
        lambda c: c.execute(
            "SELECT COUNT(*) FROM memories m WHERE m.type = 'document_chunk' AND NOT EXISTS"
            " (SELECT 1 FROM embeddings e WHERE e.content_hash = m.content_hash AND e.model = ?)",
            (model,),
        ).fetchone()[0]
    )
    assert missing == 0


def test_globs_gitignore_and_links(docs_app: App, files: Path, tmp_path: Path) -> None:
    rt, api = docs_app()
    root = files / "wiki"
    (root / "build").mkdir(parents=True)
    (root / "private").mkdir()
    (root / "deep" / "er").mkdir(parents=True)
    (root / ".gitignore").write_text("build/\n*.draft.md\n")
    (root / "deep" / ".gitignore").write_text("skip-me.md\n")
    for rel in ("a.md", "b.txt", "deep/er/c.md", "build/out.md", "x.draft.md", "private/p.md", "deep/skip-me.md"):
        (root / rel).write_text(f"# {rel}\n\ncontent of {rel}\n")
    (root / "image.png").write_bytes(b"\x89PNG\r\n")
    outside = tmp_path / "secret.md"
    outside.write_text("# Secret\n\nnot for the wiki\n")
    (root / "escape.md").symlink_to(outside)
    (root / "inside.md").symlink_to(root / "a.md")
    cid = connect(api, root, exclude=["private/**"])["id"]
    result = sync(api, cid)
    assert result["skipped"] == 1 and result["skipped_examples"] == [f"escape.md: points outside the root ({outside})"]
    settle(api, cid)
    assert sorted(Path(p).relative_to(root).as_posix() for p in stored(rt, cid)) == ["a.md", "b.txt", "deep/er/c.md"]
    # The link inside the root is the file it points at: one document, not two.
    assert (result["scanned"], result["queued"]) == (3, 3)
    without = connect(api, root / "deep", gitignore=False)["id"]
    assert sync(api, without)["scanned"] == 2  # deep/skip-me.md is kept when .gitignore is not respected


def test_a_vanished_root_is_an_error_until_it_is_back(docs_app: App, files: Path) -> None:
    _rt, api = docs_app()
    root = files / "docs"
    root.mkdir()
    (root / "one.md").write_text("# One\n\nfirst\n")
    cid = connect(api, root)["id"]
    sync(api, cid)
    settle(api, cid)
    root.rename(files / "moved")
    r = api.post(f"/api/connectors/{cid}/sync")
    assert r.status_code == 409
    assert r.json()["error"].startswith(f"sync failed: the connector's root {root} cannot be read")
    h = api.get(f"/api/connectors/{cid}/health").json()
    assert h["status"] == "error" and not h["healthy"] and h["last_error_at"] is not None
    assert h["documents"] == {"done": 1, "total": 1}  # a failed sync deletes nothing
    diag = api.get("/api/diagnostics").json()["domains"]["connector"]
    assert diag["applicable"] and diag["score"] < 1 and diag["metrics"]["in_error"] == 1
    (files / "moved").rename(root)
    assert sync(api, cid)["unchanged"] == 1
    h = api.get(f"/api/connectors/{cid}/health").json()
    assert h["status"] == "idle" and h["last_error"] is None and h["healthy"]


def test_watch_syncs_changes(docs_app: App, files: Path) -> None:
    rt, api = docs_app()
    root = files / "live"
    root.mkdir()
    cid = connect(api, root, watch=True)["id"]
    assert api.get(f"/api/connectors/{cid}/health").json()["watching"]
    (root / "noise.log").write_text("a file the globs leave out")
    time.sleep(1.5)  # three debounce windows: a change that concerns no document syncs nothing
    assert api.get(f"/api/connectors/{cid}").json()["last_sync_at"] is None
    (root / "new.md").write_text("# Fresh\n\nwritten while watched\n")
    deadline = time.monotonic() + 30
    while not stored(rt, cid):
        assert time.monotonic() < deadline, api.get(f"/api/connectors/{cid}/health").json()
        time.sleep(0.1)
    (root / "new.md").unlink()
    while stored(rt, cid):
        assert time.monotonic() < deadline, api.get(f"/api/connectors/{cid}/health").json()
        time.sleep(0.1)


def test_connector_rules_and_delete(docs_app: App, files: Path, tmp_path: Path) -> None:
    rt, api = docs_app()
    root = files / "kb"
    root.mkdir()
    (root / "k.md").write_text("# K\n\nknowledge\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    r = api.post("/api/connectors", json={"config": {"root": str(elsewhere)}})
    assert r.status_code == 400 and "outside the folders documents may be read from" in r.json()["error"]
    r = api.post("/api/connectors", json={"config": {"root": str(root / "k.md")}})
    assert r.status_code == 400 and "is not a folder" in r.json()["error"]
    assert api.post("/api/connectors", json={"config": {"root": str(root)}, "colour": 1}).status_code == 422
    r = api.post("/api/connectors", json={"config": {"root": str(root), "exclude": ["!"]}})
    assert r.status_code == 400 and r.json()["error"] == "'!' is not a valid gitignore-style glob"
    cid = connect(api, root)["id"]
    dup = api.post("/api/connectors", json={"config": {"root": str(root)}})
    assert dup.status_code == 409 and cid in dup.json()["error"]
    sync(api, cid)
    settle(api, cid)
    doc_id = api.get("/api/documents").json()["items"][0]["id"]
    assert wait_final(api, doc_id)["status"] == "done"
    listed = api.get("/api/connectors").json()
    assert listed["total"] == 1 and listed["items"][0]["documents"] == 1
    gone = api.delete(f"/api/connectors/{cid[:8]}").json()
    assert gone == {"id": cid, "status": "deleted", "documents_deleted": 1, "memories_deleted": 1}
    assert api.get("/api/documents").json()["total"] == 0
    assert rt.db.read(lambda c: c.execute("SELECT COUNT(*) FROM memories").fetchone()[0]) == 0
    assert api.get(f"/api/connectors/{cid}").status_code == 404
    with TestClient(api.app, client=("198.51.100.7", 4000)) as remote:
        r = remote.post("/api/connectors", json={"config": {"root": str(root)}}, headers={"Host": "127.0.0.1"})
        assert r.status_code == 403 and "local callers only" in r.json()["error"], r.text
