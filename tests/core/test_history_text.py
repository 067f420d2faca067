"""A ``created`` history event keeps no copy of the memory's text (migration 18), yet every
reader (the history API, the export) shows the same text as when it did: checked through the
API over any sequence of edits, forgets, recovers and a hard delete, and by migrating a store
written the old way and comparing what history says before and after."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from signet.store.migrations import MIGRATIONS, migrate
from signet.store.records import history_contents
from signet.store.sqlite import sqlite3


def _history(api: TestClient, mid: str) -> list[dict[str, Any]]:
    r = api.get(f"/api/memory/{mid}/history")
    assert r.status_code == 200, r.text
    return list(r.json()["events"])


def test_history_shows_the_created_text_through_edits_forget_recover_and_hard_delete(api: TestClient) -> None:
    mid = api.post("/api/memory/remember", json={"content": "the deploy key lives in vault"}).json()["id"]
    assert [(e["event"], e["new_content"]) for e in _history(api, mid)] == [
        ("created", "the deploy key lives in vault")
    ]
    assert api.patch(f"/api/memory/{mid}", json={"importance": 0.2, "reason": "less"}).status_code == 200
    r = api.patch(f"/api/memory/{mid}", json={"content": "the deploy key lives in 1password", "reason": "moved"})
    assert r.status_code == 200, r.text
    assert api.delete(f"/api/memory/{mid}", params={"reason": "stale"}).status_code == 200
    assert api.post(f"/api/memory/{mid}/recover", json={"reason": "still true"}).status_code == 200
    events = [(e["event"], e["old_content"], e["new_content"]) for e in _history(api, mid)]
    assert events == [
        ("created", None, "the deploy key lives in vault"),
        ("modified", "the deploy key lives in vault", "the deploy key lives in vault"),
        ("modified", "the deploy key lives in vault", "the deploy key lives in 1password"),
        ("deleted", "the deploy key lives in 1password", None),
        ("recovered", None, "the deploy key lives in 1password"),
    ]
    assert api.delete(f"/api/memory/{mid}", params={"reason": "gone", "force": True}).status_code == 200
    after = _history(api, mid)  # the memory row is gone: history still tells the whole story
    assert [(e["event"], e["new_content"]) for e in after][:1] == [("created", "the deploy key lives in vault")]
    assert after[-1]["event"] == "deleted" and after[-1]["old_content"] == "the deploy key lives in 1password"


def test_an_unchanged_memory_s_created_event_stores_no_text(api: TestClient, runtime: Any) -> None:
    mid = api.post("/api/memory/remember", json={"content": "a turn of a few hundred characters"}).json()["id"]
    stored = runtime.db.read(
        lambda c: c.execute("SELECT new_content FROM memory_history WHERE memory_id = ?", (mid,)).fetchall()
    )
    assert [r[0] for r in stored] == [None]


# -- migration 18 over stores written the old way ------------------------------------------------

OPS = ["add", "add", "edit", "tag", "forget", "recover", "hard_delete"]


def _old_store() -> Any:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.row_factory = sqlite3.Row
    migrate(conn, [m for m in MIGRATIONS if m.version <= 15])
    return conn


def _event(conn: Any, mid: str, event: str, old: str | None, new: str | None, at: int) -> None:
    conn.execute(
        "INSERT INTO memory_history(id, memory_id, event, old_content, new_content, changed_by, created_at)"
        " VALUES (?, ?, ?, ?, ?, 'test', ?)",
        (f"h{at}", mid, event, old, new, f"2026-01-01T00:00:{at // 10:02d}.{at % 10}Z"),
    )


def _apply(conn: Any, n: int, op: str, pick: int, text: str) -> None:
    """What the service wrote before migration 18: every event with its texts."""
    rows = conn.execute("SELECT id, content, is_deleted FROM memories ORDER BY seq").fetchall()
    if op == "add" or not rows:
        mid = f"m{n}"
        conn.execute(
            "INSERT INTO memories(id, content, normalized_content, content_hash, created_at, updated_at,"
            " source_type) VALUES (?, ?, '', ?, 't', 't', 'manual')",
            (mid, text, f"h{n}"),
        )
        _event(conn, mid, "created", None, text, n)
        return
    mid, content, deleted = rows[pick % len(rows)]
    if op == "edit":
        conn.execute("UPDATE memories SET content = ?, content_hash = ? WHERE id = ?", (text, f"h{n}", mid))
        _event(conn, mid, "modified", content, text, n)
    elif op == "tag":
        _event(conn, mid, "modified", content, content, n)
    elif op == "forget" and not deleted:
        conn.execute("UPDATE memories SET is_deleted = 1 WHERE id = ?", (mid,))
        _event(conn, mid, "deleted", content, None, n)
    elif op == "recover" and deleted:
        conn.execute("UPDATE memories SET is_deleted = 0 WHERE id = ?", (mid,))
        _event(conn, mid, "recovered", None, content, n)
    elif op == "hard_delete":
        conn.execute("DELETE FROM memories WHERE id = ?", (mid,))
        _event(conn, mid, "deleted", content, None, n)


def _told(conn: Any) -> dict[str, list[str | None]]:
    """What history says each event's new text is, per memory, as the readers compute it."""
    out: dict[str, list[str | None]] = {}
    for (mid,) in conn.execute("SELECT DISTINCT memory_id FROM memory_history").fetchall():
        events = conn.execute(
            "SELECT * FROM memory_history WHERE memory_id = ? ORDER BY created_at, rowid", (mid,)
        ).fetchall()
        row = conn.execute("SELECT content FROM memories WHERE id = ?", (mid,)).fetchone()
        out[mid] = history_contents(events, row[0] if row else None)
    return out


ops = st.lists(
    st.tuples(st.sampled_from(OPS), st.integers(0, 10**6), st.sampled_from(["alpha", "beta", "gamma", "delta"])),
    min_size=1,
    max_size=30,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=ops)
def test_migration_18_drops_the_copies_and_history_reads_the_same(ops: list[tuple[str, int, str]]) -> None:
    conn = _old_store()
    for n, (op, pick, word) in enumerate(ops):
        _apply(conn, n, op, pick, f"{word} {n}")
    before = _told(conn)
    assert 18 in migrate(conn)
    assert _told(conn) == before
    kept = conn.execute("SELECT COUNT(*) FROM memory_history WHERE event = 'created' AND new_content IS NOT NULL")
    assert kept.fetchone()[0] == 0  # every old copy was derivable, so none is left
