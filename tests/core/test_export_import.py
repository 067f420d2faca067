"""Export and import: a lossless, byte-identical round trip through real daemons and the real
CLI; idempotent imports; hostile files refused whole, with the line named; other tools'
memory files as memories."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from signet.daemon.app import create_app
from signet.ingest.memory_files import chunk_markdown, detect_kind
from signet.memory.export_format import MAX_LINE_BYTES, MEMORY_COLUMNS
from signet.models import RememberRequest
from signet.store import entity_links
from signet.store.sqlite import Connection
from signet.workspace import Workspace
from tests.conftest import DaemonProcess, start_runtime

NOW = "2025-02-03T04:05:06.000007+00:00"


def signet(d: DaemonProcess, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    env = {
        **os.environ,
        "SIGNET_WORKSPACE": str(d.workspace.root),
        "SIGNET_PORT": str(d.port),
        "SIGNET_HOST": "127.0.0.1",
    }
    return subprocess.run(
        [sys.executable, "-m", "signet.cli.entry", *args], capture_output=True, env=env, timeout=300, input=stdin
    )


def ok(r: subprocess.CompletedProcess[bytes]) -> str:
    assert r.returncode == 0, r.stderr.decode()
    return r.stdout.decode()


def one_line_error(r: subprocess.CompletedProcess[bytes]) -> str:
    assert r.returncode == 1, (r.stdout, r.stderr)
    lines = r.stderr.decode().strip().splitlines()
    assert len(lines) == 1, r.stderr.decode()
    return lines[0]


def add_graph(conn: Connection, memory_ids: list[str]) -> None:
    """Entities, a relation and mentions, as the pipeline's graph writer leaves them."""
    # Exactly this graph, not the one the write-time extractor built (signet.knowledge).
    conn.execute("DELETE FROM entities")
    for eid, name, kind in (("e-alice", "Alice", "person"), ("e-hermes", "hermes", "system")):
        conn.execute(
            "INSERT INTO entities(id, name, entity_type, description, canonical_name, mentions, agent_id,"
            " created_at, updated_at) VALUES (?, ?, ?, NULL, ?, 1, 'default', ?, ?)",
            (eid, name, kind, name.lower(), NOW, NOW),
        )
    conn.execute(
        "INSERT INTO relations(id, source_entity_id, target_entity_id, relation_type, strength, mentions, confidence,"
        " metadata, created_at, updated_at) VALUES ('r-1', 'e-alice', 'e-hermes', 'administers', 0.75, 2, 0.9,"
        ' \'{"from": "test"}\', ?, ?)',
        (NOW, NOW),
    )
    for mid, eid in ((memory_ids[0], "e-alice"), (memory_ids[1], "e-hermes"), (memory_ids[1], "e-alice")):
        assert entity_links.link(conn, mid, eid, eid[2:], 0.8, NOW) == 1


def populate(ws: Workspace) -> None:
    """A store with what an export must carry: tags, a pin, projects and agents, an edit
    (history), a forgotten memory (tombstone), graph rows and vectors."""
    rt = start_runtime(ws)
    try:
        with TestClient(create_app(rt, manage_runtime=False)) as c:
            ids = []
            for body in (
                {"content": "Alice prefers tabs over spaces", "who": "alice", "tags": ["style", "editor"]},
                {"content": "[infra,ops]: the staging server hermes is run by Alice", "project": "web"},
                {"content": "critical: never force-push to main", "agent_id": "reviewer"},
                {"content": "we tried MongoDB once and dropped it", "created_at": "2023-05-01T10:00:00Z"},
                {"content": "déjà vu: the café's wifi is “slow” ☕", "importance": 0.3},
            ):
                r = c.post("/api/memory/remember", json=body)
                assert r.status_code == 200, r.text
                ids.append(r.json()["id"])
            assert rt.embeddings.wait_idle(120), "embeddings still pending"  # so the forgotten one has a vector
            r = c.patch(
                f"/api/memory/{ids[0]}", json={"content": "Alice prefers tabs, width 4", "reason": "more exact"}
            )
            assert r.status_code == 200, r.text
            assert c.delete(f"/api/memory/{ids[3]}", params={"reason": "wrong"}).status_code == 200
        rt.db.write(lambda conn: add_graph(conn, ids))
        assert rt.embeddings.wait_idle(120), "embeddings still pending"
    finally:
        rt.stop()


@pytest.mark.sqlite_only(
    "reads the schema with PRAGMA table_info; PostgreSQL's columns are SQLite's (tests/pg/test_schema.py)"
)
def test_every_memory_column_is_exported(make_workspace: Callable[..., Workspace]) -> None:
    runtime = start_runtime(make_workspace(embedding="none"))

    def columns(table: str) -> set[str]:
        return set(runtime.db.read(lambda c: [str(r[1]) for r in c.execute(f"PRAGMA table_info({table})")]))

    # A new column must be added to the export format (signet.memory.export_format), or it is lost.
    assert set(MEMORY_COLUMNS) == columns("memories") - {"seq", "normalized_content"}
    from signet.memory import export_format as f

    assert set(f.EntityLine.model_fields) - {"kind"} == columns("entities") - {"rowid"}  # the links' key
    assert set(f.RelationLine.model_fields) - {"kind"} == columns("relations")
    assert set(f.HistoryRow.model_fields) == columns("memory_history") - {"memory_id"}
    assert set(f.MentionRow.model_fields) == columns("memory_entity_mentions") - {"memory_id"}
    assert set(f.RetirementLine.model_fields) - {"kind"} == columns("memory_retirements")
    runtime.stop()


@pytest.mark.slow
def test_export_import_export_is_byte_identical(
    make_workspace: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess], tmp_path: Path
) -> None:
    src_ws = make_workspace()
    populate(src_ws)
    a = start_daemon(src_ws)
    first, again = tmp_path / "a.jsonl", tmp_path / "a-again.jsonl"
    said = signet(a, "export", "--vectors", str(first))
    assert said.returncode == 0, said.stderr.decode()
    assert "exported 5 memories" in said.stderr.decode()  # the summary goes to stderr, with progress
    ok(signet(a, "export", "--vectors", str(again)))
    assert first.read_bytes() == again.read_bytes()  # deterministic: same store, same bytes
    stdout_copy = signet(a, "export", "--vectors", "-")
    assert stdout_copy.returncode == 0 and stdout_copy.stdout == first.read_bytes()

    lines = [json.loads(x) for x in first.read_bytes().splitlines()]
    header, mems = lines[0], [x for x in lines if x["kind"] == "memory"]
    assert header["counts"] == {
        "entities": 2,
        "relations": 1,
        "memories": 5,
        "history": 7,
        "mentions": 3,
        "vectors": 5,
        "retirements": 0,
    }
    assert [x["kind"] for x in lines[1:4]] == ["entity", "entity", "relation"]
    edited = next(m for m in mems if m["memory"]["content"] == "Alice prefers tabs, width 4")
    assert [h["event"] for h in edited["history"]] == ["created", "modified"] and edited["memory"]["version"] == 2
    assert edited["memory"]["tags"] == ["style", "editor"] and edited["mentions"][0]["entity_id"] == "e-alice"
    assert any(m["memory"]["is_deleted"] for m in mems)  # tombstones are exported by default
    assert all(m["vector"]["dimensions"] == 384 for m in mems)  # the forgotten memory's too

    b = start_daemon(make_workspace())
    out = ok(signet(b, "import", str(first)))
    assert "imported 5 memories (7 history rows, 3 mentions, 5 vectors), 2 entities and 1 relations" in out, out
    round_trip = tmp_path / "b.jsonl"
    ok(signet(b, "export", "--vectors", str(round_trip)))
    assert round_trip.read_bytes() == first.read_bytes()

    # The same file again adds nothing, and the store is byte for byte what it was.
    out = ok(signet(b, "import", str(first)))
    assert out.startswith("imported 0 memories (0 history rows, 0 mentions, 0 vectors), 0 entities and 0 relations")
    assert "already stored: 5 memories by id" in out and "2 entities, 1 relations" in out
    ok(signet(b, "export", "--vectors", "--force", str(round_trip)))
    assert round_trip.read_bytes() == first.read_bytes()
    b.wait_embedder()  # the model loads in the background after start (a loaded machine: seconds)
    with b.client() as c:  # and recall works on what was imported (the vectors were indexed)
        found = c.post("/api/memory/recall", json={"query": "who runs the staging server?"}).json()
        assert found["vector_search"]["available"] and "hermes" in found["results"][0]["content"]
    b.stop()

    # Without vectors: the importing daemon embeds the memories itself; the file still round-trips.
    plain = tmp_path / "plain.jsonl"
    ok(signet(a, "export", str(plain)))
    plain_mems = [json.loads(x) for x in plain.read_bytes().splitlines()][4:]
    assert plain_mems and all("vector" not in m and "embedding_model" not in m["memory"] for m in plain_mems)
    c_daemon = start_daemon(make_workspace())
    out = ok(signet(c_daemon, "import", "-", stdin=plain.read_bytes()))  # from stdin too
    assert "imported 5 memories" in out and "4 queued for embedding" in out, out
    c_daemon.wait_embedder()
    with c_daemon.client() as c:
        st = c.get("/api/status").json()
    assert st["embedding"]["embedded"] == st["memories"]["active"] == 4 and st["embedding"]["pending"] == 0
    again_plain = tmp_path / "c.jsonl"
    ok(signet(c_daemon, "export", str(again_plain)))
    assert again_plain.read_bytes() == plain.read_bytes()


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def _edit(line: bytes, fn: Callable[[dict[str, Any]], None]) -> bytes:
    obj = json.loads(line)
    fn(obj)
    return (json.dumps(obj) + "\n").encode()


@pytest.mark.slow
def test_hostile_files_are_refused_whole_with_the_line_named(
    make_workspace: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess], tmp_path: Path
) -> None:
    src = start_daemon(make_workspace(embedding="none"))
    with src.client() as c:
        for i in range(4):
            c.post("/api/memory/remember", json={"content": f"memory {i} of the source store"})
    good = tmp_path / "good.jsonl"
    ok(signet(src, "export", str(good)))
    lines = _lines(good)
    assert len(lines) == 5  # header + 4 memories (no graph)

    def memory(obj: dict[str, Any], **fields: Any) -> None:
        obj["memory"].update(fields)

    def mention(obj: dict[str, Any]) -> None:
        obj["mentions"] = [{"entity_id": "e-nowhere", "mention_text": None, "confidence": None, "created_at": NOW}]

    def header(obj: dict[str, Any], **fields: Any) -> None:
        obj.update(fields)

    huge = _edit(lines[4], lambda o: memory(o, content="x" * (MAX_LINE_BYTES + 10)))
    cases: dict[str, tuple[list[bytes], str]] = {
        "bad JSON": ([*lines[:3], b'{"kind": "memory", "memory": {\n', lines[4]], "line 4: not valid JSON"),
        "wrong type": (
            [*lines[:4], _edit(lines[4], lambda o: memory(o, importance="high"))],
            "line 5: memory.importance: Input should be a valid number",
        ),
        "string where a bool goes": (
            [*lines[:4], _edit(lines[4], lambda o: memory(o, pinned="yes"))],
            "line 5: memory.pinned: Input should be a valid boolean",
        ),
        "id with path characters": (
            [*lines[:4], _edit(lines[4], lambda o: memory(o, id="../../etc/passwd"))],
            "line 5: memory.id: String should match pattern",
        ),
        "time not in UTC": (
            [*lines[:4], _edit(lines[4], lambda o: memory(o, created_at="2024-01-01T10:00:00+02:00"))],
            "line 5: memory.created_at: String should match pattern",
        ),
        "no such day": (
            [*lines[:4], _edit(lines[4], lambda o: memory(o, updated_at="2024-02-30T10:00:00+00:00"))],
            "line 5: memory.updated_at: Value error, not a real date and time",
        ),
        "unknown memory type": (
            [*lines[:4], _edit(lines[4], lambda o: memory(o, type="gossip"))],
            "line 5: memory.type: Value error, not a memory type",
        ),
        "unknown field": (
            [*lines[:4], _edit(lines[4], lambda o: memory(o, evil=1))],
            "line 5: memory.evil: Extra inputs are not permitted",
        ),
        "huge line": ([*lines[:4], huge], "line 5: over the 6 MiB a line may have"),
        "mention of no entity": ([*lines[:4], _edit(lines[4], mention)], "line 5: a mention names entity e-nowhere"),
        "cut short": (lines[:4], "the file does not match its header (memories 4 said, 3 found"),
        "second header": ([*lines[:4], lines[0]], "line 5: a second header line"),
        "empty line": ([*lines[:4], b"\n", lines[4]], "line 5: empty line"),
        "not an export": (
            [b'{"hello": "world"}\n', *lines[1:]],
            "line 1: the first line is not a Signet export header",
        ),
        "newer format": (
            [_edit(lines[0], lambda o: header(o, version=99)), *lines[1:]],
            "line 1: the file is format version 99, made by a newer Signet",
        ),
        "unknown kind": (
            [*lines[:4], _edit(lines[4], lambda o: header(o, kind="secret"))],
            "line 5: Input tag 'secret' found using 'kind' does not match any of the expected tags",
        ),
    }
    dst = start_daemon(make_workspace(embedding="none"))
    with dst.client() as c:
        empty = c.get("/api/export").content
        assert empty.count(b"\n") == 1  # the header alone
        for name, (content, expected) in cases.items():
            bad = tmp_path / f"{name.replace(' ', '-')}.jsonl"
            bad.write_bytes(b"".join(content))
            line = one_line_error(signet(dst, "import", str(bad)))
            assert expected in line, (name, line)
            assert c.get("/api/export").content == empty, f"{name}: the store changed"
    # The same lines, undamaged, do import (what was refused above was the damage).
    assert "imported 4 memories" in ok(signet(dst, "import", str(good)))


def test_a_batch_the_store_refuses_rolls_back_whole(make_workspace: Callable[..., Workspace]) -> None:
    src = start_runtime(make_workspace(embedding="none"))
    dst = start_runtime(make_workspace(embedding="none"))
    try:
        for text in ("Alice runs hermes", "Bob runs zeus"):
            src.service.remember(RememberRequest(content=text))
        with TestClient(create_app(src, manage_runtime=False)) as c:
            lines = [json.loads(x) for x in c.get("/api/export").content.splitlines()]
        dst.db.write(
            lambda conn: conn.execute(
                "INSERT INTO entities(id, name, canonical_name, agent_id, created_at, updated_at)"
                " VALUES ('stored-alice', 'Alice', 'alice', 'default', ?, ?)",
                (NOW, NOW),
            )
        )
        entity = {
            "kind": "entity",
            "id": "file-alice",
            "name": "Alice",
            "entity_type": "person",
            "description": None,
            "canonical_name": "alice",
            "mentions": 1,
            "embedding": None,
            "agent_id": "default",
            "created_at": NOW,
            "updated_at": NOW,
        }
        first, second = lines[1], lines[2]
        first["mentions"] = [{"entity_id": "file-alice", "mention_text": "Alice", "confidence": 1.0, "created_at": NOW}]
        second["mentions"] = [{"entity_id": "e-nowhere", "mention_text": None, "confidence": None, "created_at": NOW}]
        with TestClient(create_app(dst, manage_runtime=False)) as c:
            r = c.post("/api/import", json={"first_line": 2, "lines": [entity, first, second]})
            assert r.status_code == 400, r.text
            assert r.json()["code"] == "invalid_request"
            assert r.json()["error"].startswith("line 4: a mention names entity e-nowhere")
            assert c.get("/api/memories").json()["total"] == 0  # line 3's memory rolled back with line 4

            # The file's Alice is the store's Alice: the mention lands on the stored entity, and
            # the answer maps the ids for batches still to come.
            r = c.post("/api/import", json={"first_line": 2, "lines": [entity, first]})
            assert r.status_code == 200, r.text
            assert r.json()["entity_map"] == {"file-alice": "stored-alice"}
            assert r.json()["entities_present"] == 1 and r.json()["mentions_added"] == 1
            second["mentions"][0]["entity_id"] = "file-alice"
            later = {"first_line": 4, "lines": [second], "entity_map": {"file-alice": "stored-alice"}}
            r = c.post("/api/import", json=later)
            assert r.status_code == 200 and r.json()["mentions_added"] == 1, r.text
            rows = dst.db.read(lambda conn: list(conn.execute("SELECT entity_id FROM memory_entity_mentions")))
            assert [x[0] for x in rows] == ["stored-alice", "stored-alice"]
            # Same text for the same agent and project under another id: one memory, not two.
            twin = json.loads(json.dumps(lines[1]))
            twin["memory"]["id"] = "another-id"
            twin["mentions"] = []
            r = c.post("/api/import", json={"lines": [twin]})
            assert r.json()["memories_duplicate"] == 1 and r.json()["memories_added"] == 0
    finally:
        src.stop()
        dst.stop()


# -- other tools' memory files -------------------------------------------------------------------


def test_markdown_is_chunked_by_section_then_paragraph_with_the_heading_kept() -> None:
    long_para = " ".join(["word"] * 150)  # ~750 characters
    text = (
        "Intro line before any heading.\n\n"
        "# Project\n\nWe ship on Thursdays.\n\n"
        "## API notes\n\n" + "\n\n".join(f"{i}: {long_para}" for i in range(4)) + "\n\n"
        "```\n# not a heading inside a fence\n```\n"
        "### Small\n\ntiny\n"
    )
    chunks = chunk_markdown(text, max_tokens=256)  # ~1024 characters a chunk
    assert [c.level for c in chunks[:2]] == ["section", "section"]
    assert chunks[0].text == "Intro line before any heading." and chunks[0].header == ""
    assert chunks[1].text == "# Project\n\nWe ship on Thursdays."
    api = [c for c in chunks if c.header == "## API notes"]
    assert len(api) >= 3 and all(c.level == "paragraph" and c.text.startswith("## API notes\n\n") for c in api)
    assert all(c.tokens <= 256 for c in chunks)
    assert "# not a heading inside a fence" in api[-1].text  # the fence stayed with its section
    assert chunks[-1].text == "### Small\n\ntiny" and [c.index for c in chunks] == list(range(len(chunks)))


@pytest.mark.slow
def test_claude_code_and_openclaw_memory_files_become_memories(
    make_workspace: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess], tmp_path: Path
) -> None:
    claude = tmp_path / "home" / ".claude" / "projects" / "-home-me-web" / "memory" / "MEMORY.md"
    claude.parent.mkdir(parents=True)
    claude.write_text("# Web project\n\nUse pnpm, never npm.\n\n## Testing\n\nRun vitest with --run.\n")
    daily = tmp_path / "home" / ".agents" / "memory" / "2025-03-01.md"
    daily.parent.mkdir(parents=True)
    daily.write_text("## Standup\n\nDecided to move the cron job to 02:00 UTC.\n")
    assert detect_kind(claude) == "claude-code" and detect_kind(daily) == "openclaw-memory"

    d = start_daemon(make_workspace(embedding="none"))
    out = ok(signet(d, "import", str(tmp_path / "home" / ".claude" / "projects"), str(daily), "--project", "web"))
    assert "imported 2 memory file(s): 3 memories stored, 0 already stored" in out, out
    with d.client() as c:
        items = c.get("/api/memories", params={"limit": 10}).json()["items"]
    by_text = {m["content"]: (m["who"], m["project"], m["created_at"][:10]) for m in items}
    # Stored text is whitespace-normalized as every memory's is; a daily log keeps its day.
    assert by_text["# Web project Use pnpm, never npm."][:2] == ("claude-code", "web")
    assert by_text["## Testing Run vitest with --run."][:2] == ("claude-code", "web")
    assert by_text["## Standup Decided to move the cron job to 02:00 UTC."] == ("openclaw-memory", "web", "2025-03-01")
    assert all(m["source_type"] == "memory-file" for m in items)

    again = ok(signet(d, "import", str(claude), str(daily), "--project", "web"))
    assert "0 memories stored, 3 already stored" in again, again

    binary = tmp_path / "notes.md"
    binary.write_bytes(b"# x\x00\x01")
    r = signet(d, "import", str(binary))
    assert r.returncode == 1 and "not a text file" in r.stdout.decode() + r.stderr.decode()
