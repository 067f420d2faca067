"""Migration 20 (``skill_meta``) and the decay of a skill's relevance."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from signet.skills import meta
from signet.store.database import connect
from signet.store.migrations import MIGRATIONS, migrate


def test_migration_20_on_a_blank_database_and_after_the_others(tmp_path: Path) -> None:
    conn = connect(tmp_path / "m.db")
    assert 20 not in migrate(conn, [m for m in MIGRATIONS if m.version != 20])
    assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'skill_meta'").fetchone() is None
    assert migrate(conn) == [20]
    assert migrate(conn) == []
    meta.installed(conn, "lint", "/src/lint", "/ws/skills/lint")
    assert meta.used(conn, "lint", "/ws/skills/lint") == 1
    assert meta.used(conn, "lint", "/ws/skills/lint") == 2
    meta.installed(conn, "lint", "https://example.com/lint.git", "/ws/skills/lint")  # a reinstall keeps the count
    meta.ensure(conn, {"lint": "/elsewhere", "handmade": "/ws/skills/handmade"})
    rows = meta.all_meta(conn)
    assert rows["lint"].use_count == 2 and rows["lint"].source == "https://example.com/lint.git"
    assert rows["handmade"].use_count == 0 and rows["handmade"].source is None
    meta.removed(conn, "lint")
    assert set(meta.all_meta(conn)) == {"handmade"}
    fresh = connect(tmp_path / "blank.db")
    assert 20 in migrate(fresh)


def test_relevance_decays_with_the_days_since_the_last_use() -> None:
    now = datetime(2026, 6, 1, tzinfo=UTC)
    recent = meta.Meta(None, "2026-01-01T00:00:00+00:00", 4, (now - timedelta(days=1)).isoformat(), 0.99)
    stale = meta.Meta(None, "2026-01-01T00:00:00+00:00", 10, (now - timedelta(days=200)).isoformat(), 0.99)
    assert round(recent.relevance(now), 3) == round(4 * 0.99, 3)
    assert stale.relevance(now) < recent.relevance(now) < 4
    never = meta.Meta(None, now.isoformat(), 0, None, 0.99)
    assert never.relevance(now) == 0.0
