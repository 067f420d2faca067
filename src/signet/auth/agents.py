"""The agent roster (``agents.roster`` in agent.yaml) and the caller -> ReadScope rule."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from signet.config import Settings
from signet.store.database import Database
from signet.store.scope import UNSCOPED, ReadScope
from signet.store.sqlite import Connection

DEFAULT_AGENT = "default"


def resolve_agent_id(session_key: str | None) -> str | None:
    """``agent:{id}:{rest}`` (OpenClaw session keys) -> ``id``; anything else -> None."""
    if not session_key or not session_key.startswith("agent:"):
        return None
    parts = session_key.split(":", 2)
    if len(parts) < 3 or not parts[1]:
        return None
    return parts[1]


class Roster:
    """The roster as configured; a name not on it reads with the ``shared`` policy."""

    def __init__(self, settings: Settings) -> None:
        self.entries = {e.name: e for e in settings.agents.roster}

    def scope_for(self, agent: str | None, project: str | None = None) -> ReadScope:
        if agent is None:
            return UNSCOPED if project is None else ReadScope(project=project)
        entry = self.entries.get(agent)
        if entry is None:
            return ReadScope(agent_id=agent, policy="shared", project=project)
        return ReadScope(agent_id=agent, policy=entry.read_policy, group=tuple(entry.group), project=project)

    def sync(self, db: Database) -> None:
        """Upsert the roster into the ``agents`` table; an agent removed from it is deleted and
        its memories become ``archived`` (the spec: soft-deleted with their owner; only the
        owner's own ``isolated``/``shared`` reads, or an unscoped caller, still see them)."""
        now = datetime.now(UTC).isoformat()
        rows = [(e.name, e.read_policy, json.dumps(e.group), now) for e in self.entries.values()]

        def write(conn: Connection) -> None:
            for name, policy, group, ts in rows:
                conn.execute(
                    "INSERT INTO agents(name, read_policy, agent_group, created_at, updated_at) VALUES (?,?,?,?,?) "
                    "ON CONFLICT(name) DO UPDATE SET read_policy=excluded.read_policy, "
                    "agent_group=excluded.agent_group, updated_at=excluded.updated_at",
                    (name, policy, group, ts, ts),
                )
            keep = {r[0] for r in rows}
            gone = [r[0] for r in conn.execute("SELECT name FROM agents") if r[0] not in keep]
            for name in gone:
                conn.execute("UPDATE memories SET visibility='archived' WHERE agent_id=?", (name,))
                conn.execute("DELETE FROM agents WHERE name=?", (name,))

        db.write(write)
