"""``skill_meta`` rows (migration 20, signet.store.schema_skills): a skill's source, use count,
last use and decay rate. Relevance decays with the days since the last use (or the install):
``use_count * decay_rate ** days``, so a skill used often long ago ranks below one used
recently."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from signet.store.sqlite import Connection

DEFAULT_DECAY = 0.99


@dataclass(frozen=True)
class Meta:
    source: str | None
    installed_at: str
    use_count: int
    last_used_at: str | None
    decay_rate: float

    def relevance(self, now: datetime | None = None) -> float:
        since = datetime.fromisoformat(self.last_used_at or self.installed_at)
        days = max(((now or datetime.now(UTC)) - since).total_seconds() / 86400, 0.0)
        return round(float(self.use_count * self.decay_rate**days), 6)


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def all_meta(conn: Connection) -> dict[str, Meta]:
    rows = conn.execute(
        "SELECT skill_name, source, installed_at, use_count, last_used_at, decay_rate FROM skill_meta"
    ).fetchall()
    return {r[0]: Meta(r[1], r[2], int(r[3]), r[4], float(r[5])) for r in rows}


def installed(conn: Connection, name: str, source: str | None, path: str) -> None:
    """A skill (re)installed: its source and path; a reinstall keeps its use count."""
    conn.execute(
        "INSERT INTO skill_meta(skill_name, source, installed_at, filesystem_path, decay_rate) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT(skill_name) DO UPDATE SET source = excluded.source, installed_at = excluded.installed_at, "
        "filesystem_path = excluded.filesystem_path",
        (name, source, now_iso(), path, DEFAULT_DECAY),
    )


def ensure(conn: Connection, names: dict[str, str]) -> None:
    """A row for each skill folder found (name -> path) that has none (put there by hand)."""
    conn.executemany(
        "INSERT OR IGNORE INTO skill_meta(skill_name, source, installed_at, filesystem_path, decay_rate) "
        "VALUES (?, NULL, ?, ?, ?)",
        [(n, now_iso(), p, DEFAULT_DECAY) for n, p in names.items()],
    )


def removed(conn: Connection, name: str) -> None:
    conn.execute("DELETE FROM skill_meta WHERE skill_name = ?", (name,))


def used(conn: Connection, name: str, path: str) -> int:
    """Count one use; the new count."""
    now = now_iso()
    conn.execute(
        "INSERT INTO skill_meta(skill_name, installed_at, filesystem_path, decay_rate, use_count, last_used_at) "
        "VALUES (?, ?, ?, ?, 1, ?) ON CONFLICT(skill_name) DO UPDATE SET use_count = use_count + 1, "
        "last_used_at = excluded.last_used_at",
        (name, now, path, DEFAULT_DECAY, now),
    )
    row = conn.execute("SELECT use_count FROM skill_meta WHERE skill_name = ?", (name,)).fetchone()
    return int(row[0])
