"""Prospective hints (spec 001, hints worker; migration 38): template hints written with the
memory, the hint channel of recall (a hint-only match capped at 0.75 of the best flat result),
forgotten and out-of-scope memories' hints never matching, hostile hint text kept as words."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from signet.config import HintsSettings
from signet.knowledge import hints as stored_hints
from signet.knowledge.extract import extract
from signet.pipeline.hint_fill import cursor, fill_once
from signet.runtime import Runtime
from signet.store.database import connect
from signet.store.migrations import MIGRATIONS, migrate
from signet.workspace import Workspace

App = Callable[[Workspace], tuple[Runtime, TestClient]]
NOW = "2026-01-01T00:00:00+00:00"
HINTS_ON = {"pipelineV2": {"hints": {"enabled": True}}}


def _app(make_workspace: Callable[..., Workspace], open_app: App, **memory: Any) -> tuple[Runtime, TestClient]:
    return open_app(make_workspace(embedding="none", memory={"pipelineV2": {"hints": memory}}))


def _seq(rt: Runtime, mid: str) -> int:
    return int(rt.db.read(lambda c: c.execute("SELECT seq FROM memories WHERE id = ?", (mid,)).fetchone()[0]))


def _hint(rt: Runtime, mid: str, *texts: str) -> None:
    seq = _seq(rt, mid)
    rt.db.write(lambda c: stored_hints.write(c, seq, list(texts), "llm"))


def _recall(api: TestClient, query: str, **body: Any) -> list[dict[str, Any]]:
    r = api.post("/api/memory/recall", json={"query": query, "track_access": False, **body})
    assert r.status_code == 200, r.text
    return list(r.json()["results"])


def test_template_hints_for_a_person_and_a_date() -> None:
    text = "Caroline: Yeah, I went to a LGBTQ support group on 7 May 2023, it was so powerful."
    got = stored_hints.templates(text, "Caroline", extract(text, "Caroline"))
    assert got[0] == "When did Caroline go to a LGBTQ support group on 7 May 2023?"
    place = "Joanna: I visited Woodhaven with my friend Nate last week."
    hints = stored_hints.templates(place, "Joanna", extract(place, "Joanna"))
    assert "Where did Joanna go, travel, visit or live? Woodhaven" in hints
    assert "Who is Nate?" in hints
    assert stored_hints.templates("ok", None, []) == []  # nothing to ask about: no hint
    long = "Bob: " + " ".join(f"I met Person{i} Smith{i} in Town{i}." for i in range(20))
    assert len(stored_hints.templates(long, "Bob", extract(long, "Bob"), limit=5)) == 5


def test_remember_writes_template_hints_visible_on_get(make_workspace: Callable[..., Workspace], open_app: App) -> None:
    _rt, api = _app(make_workspace, open_app, enabled=True)
    text = "Caroline: I went to a LGBTQ support group yesterday and it was so powerful."
    mid = api.post("/api/memory/remember", json={"content": text, "who": "Caroline"}).json()["id"]
    body = api.get(f"/api/memory/{mid}/hints").json()
    assert body["enabled"] is True and body["memory_id"] == mid
    assert body["hints"][0]["hint"] == "When did Caroline go to a LGBTQ support group yesterday?"
    assert {h["source"] for h in body["hints"]} == {"template"}
    assert api.get("/api/memory/no-such-id/hints").status_code == 404


def test_the_filler_writes_what_remember_did_not_and_follows_edits(
    make_workspace: Callable[..., Workspace], open_app: App
) -> None:
    """Memories stored while hints were off (or imported, or edited) get the template's hints
    from the background filler, which resumes from its durable cursor."""
    rt, api = _app(make_workspace, open_app, enabled=False)  # the filler thread does not run
    text = "Caroline: I went to a LGBTQ support group yesterday and it was so powerful."
    mid = api.post("/api/memory/remember", json={"content": text, "who": "Caroline"}).json()["id"]
    plain = api.post("/api/memory/remember", json={"content": "ok"}).json()["id"]
    gone = api.post("/api/memory/remember", json={"content": "Bob: I met Alice in Paris yesterday.", "who": "Bob"})
    api.request("DELETE", f"/api/memory/{gone.json()['id']}", params={"reason": "x"})
    assert api.get(f"/api/memory/{mid}/hints").json()["hints"] == []
    on = HintsSettings(enabled=True)
    assert fill_once(rt.db, on, size=2) == 2 and rt.db.read(cursor) == 2  # one batch, the cursor stored
    assert fill_once(rt.db, on, size=2) == 1 and rt.db.read(cursor) == 3
    assert fill_once(rt.db, on) == 0  # caught up
    hints = api.get(f"/api/memory/{mid}/hints").json()["hints"]
    assert hints[0]["hint"] == "When did Caroline go to a LGBTQ support group yesterday?"
    assert api.get(f"/api/memory/{plain}/hints").json()["hints"] == []
    assert api.get(f"/api/memory/{gone.json()['id']}/hints").json()["hints"] == []  # forgotten: none written
    # An edit drops the hints about the old text and moves the cursor back: the next pass writes the new ones.
    edit = {"content": "Caroline: I moved to Berlin last month.", "reason": "fix"}
    assert api.patch(f"/api/memory/{mid}", json=edit).status_code == 200
    assert api.get(f"/api/memory/{mid}/hints").json()["hints"] == [] and rt.db.read(cursor) == 0
    assert fill_once(rt.db, on) == 3
    hints = api.get(f"/api/memory/{mid}/hints").json()["hints"]
    assert [h["hint"] for h in hints] == [
        "When did Caroline move to Berlin last month?",
        "Where did Caroline go, travel, visit or live? Berlin",
    ]


def test_hints_off_writes_none_and_recall_ignores_them(make_workspace: Callable[..., Workspace], open_app: App) -> None:
    rt, api = _app(make_workspace, open_app, enabled=False)
    flat = api.post("/api/memory/remember", json={"content": "The Woodhaven trip was in spring."}).json()["id"]
    only = api.post("/api/memory/remember", json={"content": "Joanna drove north with Nate."}).json()["id"]
    assert api.get(f"/api/memory/{flat}/hints").json() == {"memory_id": flat, "enabled": False, "hints": []}
    _hint(rt, only, "Which trip did Joanna take to Woodhaven?")
    assert [r["id"] for r in _recall(api, "Woodhaven trip")] == [flat]


def test_a_hint_only_match_is_capped_at_three_quarters_of_the_best_flat(
    make_workspace: Callable[..., Workspace], open_app: App
) -> None:
    rt, api = _app(make_workspace, open_app, enabled=True)
    flat = api.post("/api/memory/remember", json={"content": "The Woodhaven trip was in spring."}).json()["id"]
    only = api.post("/api/memory/remember", json={"content": "Joanna drove north with Nate."}).json()["id"]
    both = api.post("/api/memory/remember", json={"content": "Another Woodhaven trip, to the lake this time."}).json()[
        "id"
    ]
    _hint(rt, only, "Which trip did Joanna take to Woodhaven?")
    _hint(rt, both, "Where was the trip?")
    results = _recall(api, "Woodhaven trip")
    by_id = {r["id"]: r for r in results}
    assert set(by_id) == {flat, only, both}
    assert by_id[only]["source"] == "hint" and by_id[only]["fts_score"] is None
    best_flat = max(r["score"] for r in results if r["source"] != "hint")
    assert by_id[only]["score"] <= 0.75 * best_flat + 1e-6
    assert by_id[only]["score"] > 0
    assert results[0]["id"] == flat  # a hint never outranks the direct match
    # found both ways: at most x1.05 of what the same query gives with the channel off
    _off_rt, off_api = _app(make_workspace, open_app, enabled=False)
    for text in (
        "The Woodhaven trip was in spring.",
        "Joanna drove north with Nate.",
        "Another Woodhaven trip, to the lake this time.",
    ):
        off_api.post("/api/memory/remember", json={"content": text})
    plain = {r["content"]: r["score"] for r in _recall(off_api, "Woodhaven trip")}
    lake = by_id[both]["score"] / plain["Another Woodhaven trip, to the lake this time."]
    assert 1.0 < lake <= 1.05 + 1e-6
    # its own template hint ("Who is Woodhaven?") may match too: on PostgreSQL's tsquery it does
    assert 1.0 <= by_id[flat]["score"] / plain["The Woodhaven trip was in spring."] <= 1.05 + 1e-6


def test_a_forgotten_memorys_hints_never_match_and_a_purge_removes_them(
    make_workspace: Callable[..., Workspace], open_app: App
) -> None:
    rt, api = _app(make_workspace, open_app, enabled=True)
    keep = api.post("/api/memory/remember", json={"content": "Notes about the garden."}).json()["id"]
    gone = api.post("/api/memory/remember", json={"content": "Joanna drove north with Nate."}).json()["id"]
    _hint(rt, keep, "What grows in the greenhouse?")
    _hint(rt, gone, "Which greenhouse did Joanna visit?")
    assert {r["id"] for r in _recall(api, "greenhouse")} == {keep, gone}
    assert api.request("DELETE", f"/api/memory/{gone}", params={"reason": "wrong"}).status_code == 200
    assert [r["id"] for r in _recall(api, "greenhouse")] == [keep]
    seq = _seq(rt, gone)
    assert api.request("DELETE", f"/api/memory/{gone}", params={"reason": "purge", "force": "true"}).status_code == 200
    left = rt.db.read(lambda c: c.execute("SELECT COUNT(*) FROM memory_hints WHERE memory_seq = ?", (seq,)).fetchone())
    assert left[0] == 0
    fts = rt.db.read(
        lambda c: c.execute(
            "SELECT COUNT(*) FROM memory_hints_fts WHERE memory_hints_fts MATCH ?", ("joanna",)
        ).fetchone()
    )
    assert fts[0] == 0  # the index followed the cascade


def test_another_project_or_agents_hints_never_surface(make_workspace: Callable[..., Workspace], open_app: App) -> None:
    rt, api = _app(make_workspace, open_app, enabled=True)
    mine = api.post("/api/memory/remember", json={"content": "Budget notes.", "project": "a"}).json()["id"]
    other = api.post("/api/memory/remember", json={"content": "Budget notes too.", "project": "b"}).json()["id"]
    private = api.post(
        "/api/memory/remember",
        json={"content": "A private plan.", "project": "a", "agent_id": "spy", "visibility": "private"},
    ).json()["id"]
    for mid in (mine, other, private):
        _hint(rt, mid, "How much was the quarterly forecast?")
    assert [r["id"] for r in _recall(api, "quarterly forecast", project="a", agent_id="default")] == [mine]
    assert {r["id"] for r in _recall(api, "quarterly forecast", project="b")} == {other}


def test_hostile_hint_text_is_words_not_syntax(make_workspace: Callable[..., Workspace], open_app: App) -> None:
    rt, api = _app(make_workspace, open_app, enabled=True)
    mid = api.post("/api/memory/remember", json={"content": "Unrelated text."}).json()["id"]
    hostile = 'x" OR memory_seq:* NEAR("a" "b") AND NOT hint: ) ( ^ * -- ; DROP TABLE memories;'
    _hint(rt, mid, hostile)
    for query in ('" OR *', "hint: NEAR(", "memory_seq:*", "DROP TABLE", 'x" OR 1=1 --'):
        results = _recall(api, query)
        assert all(r["id"] == mid for r in results), query
    assert [r["id"] for r in _recall(api, "DROP TABLE")] == [mid]
    assert api.get(f"/api/memory/{mid}/hints").json()["hints"][0]["hint"] == hostile
    assert rt.db.read(lambda c: c.execute("SELECT COUNT(*) FROM memories").fetchone()[0]) == 1


def test_migration_38_on_a_v37_store_and_its_cascade(tmp_path: Path) -> None:
    conn = connect(tmp_path / "m.db")
    conn.execute("PRAGMA foreign_keys = ON")
    assert migrate(conn, [m for m in MIGRATIONS if m.version <= 37])[-1] == 37
    conn.execute(
        "INSERT INTO memories(id, content, content_hash, normalized_content, created_at, updated_at)"
        " VALUES ('m1', 'old text', 'h1', '', ?, ?)",
        (NOW, NOW),
    )
    assert migrate(conn, [m for m in MIGRATIONS if m.version <= 38]) == [38]
    conn.execute("BEGIN")
    stored_hints.write(conn, 1, ["When was the old text written?", "When was the old text written?"], "template")
    conn.execute("COMMIT")
    assert conn.execute("SELECT COUNT(*) FROM memory_hints").fetchone()[0] == 1  # kept once
    match = conn.execute("SELECT memory_seq FROM memory_hints_fts WHERE memory_hints_fts MATCH 'written'").fetchall()
    assert [r[0] for r in match] == [1]
    conn.execute("DELETE FROM memories WHERE id = 'm1'")
    assert conn.execute("SELECT COUNT(*) FROM memory_hints").fetchone()[0] == 0
    assert (
        conn.execute("SELECT COUNT(*) FROM memory_hints_fts WHERE memory_hints_fts MATCH 'written'").fetchone()[0] == 0
    )
    assert migrate(conn, [m for m in MIGRATIONS if m.version <= 38]) == []
    conn.close()


def test_migration_38_from_the_oldest_schema(tmp_path: Path) -> None:
    """A store made by migration 1 alone, with a memory, migrates through every later one: its
    memory can take hints and be found by them."""
    conn = connect(tmp_path / "old.db")
    conn.execute("PRAGMA foreign_keys = ON")
    assert migrate(conn, [m for m in MIGRATIONS if m.version == 1]) == [1]
    conn.execute(
        "INSERT INTO memories(id, content, content_hash, normalized_content, created_at, updated_at)"
        " VALUES ('m1', 'Joanna: I visited Woodhaven.', 'h1', '', ?, ?)",
        (NOW, NOW),
    )
    applied = migrate(conn)
    assert 38 in applied and applied == sorted(m.version for m in MIGRATIONS if m.version != 1)
    conn.execute("BEGIN")
    stored_hints.write(conn, 1, ["Where did Joanna travel?"], "template")
    conn.execute("COMMIT")
    from signet.search.hints import hint_matches

    assert [mid for mid, _ in hint_matches(conn, '"travel"', "m.is_deleted = 0", [], 5)] == ["m1"]
    conn.close()
