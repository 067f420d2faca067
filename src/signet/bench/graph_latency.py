"""``signet bench latency --graph``: recall with the knowledge graph's reads off and on, in the
same run, on the same store and the same questions.

No LLM runs in a benchmark, so the graph an LLM would build (signet.pipeline.knowledge) is
seeded here, shaped like one and at the store's scale: every memory names one entity (its
speaker, else its project: a few dozen entities, each a hub of hundreds of memories, the
traversal's worst case) and states one ``state`` claim about it; the claims of an entity cycle
through a handful of keys, so each new memory supersedes the previous value of its key (nearly
every claim superseded: the worst case for recall's currentness reads, signet.search.supersession).
Then three daemons answer the same questions over HTTP: ``graph.enabled: false`` (no graph read
at all), the defaults (``graph.enabled``: currentness read for the best candidates; traversal
off), and ``traversal.enabled`` too (focal entities walked).
"""

from __future__ import annotations

import contextlib
import sqlite3
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from signet.workspace import Workspace

KEYS = ("status", "plan", "tool", "place", "mood", "goal")
"""The claim keys an entity's memories cycle through."""


def seed_knowledge(db_path: Path, agent_id: str = "default") -> dict[str, int]:
    """Write the LLM-shaped graph for every memory in ``db_path``; returns the row counts."""
    now = "2026-11-22T00:00:00+00:00"
    conn = sqlite3.connect(db_path)
    try:
        rows = conn.execute(
            "SELECT id, COALESCE(NULLIF(who, ''), project, 'store'), content, created_at FROM memories"
            " WHERE is_deleted = 0 ORDER BY created_at, id"
        ).fetchall()
        entities: dict[str, str] = {}
        aspects: dict[str, str] = {}
        current: dict[tuple[str, str], str] = {}
        seen: dict[str, int] = {}
        superseded = 0
        with conn:
            for mid, name, content, created in rows:
                canon = " ".join(str(name).lower().split())
                eid = entities.get(canon)
                if eid is None:
                    found = conn.execute(
                        "SELECT id FROM entities WHERE agent_id = ? AND canonical_name = ?", (agent_id, canon)
                    ).fetchone()
                    eid = str(found[0]) if found else str(uuid.uuid4())
                    if not found:
                        conn.execute(
                            "INSERT INTO entities(id, name, entity_type, canonical_name, mentions, agent_id,"
                            " created_at, updated_at) VALUES (?, ?, 'person', ?, 0, ?, ?, ?)",
                            (eid, name, canon, agent_id, now, now),
                        )
                    entities[canon] = eid
                    aspects[canon] = str(uuid.uuid4())
                    conn.execute(
                        "INSERT INTO entity_aspects(id, entity_id, agent_id, aspect_name, canonical_name, confidence,"
                        " created_at, updated_at) VALUES (?, ?, ?, 'profile', 'profile', 0.8, ?, ?)",
                        (aspects[canon], eid, agent_id, now, now),
                    )
                conn.execute("UPDATE entities SET mentions = mentions + 1 WHERE id = ?", (eid,))
                conn.execute(
                    "INSERT OR IGNORE INTO memory_entity_links(memory_seq, entity_rowid, mention_text, confidence,"
                    " created_at) SELECT m.seq, e.rowid, ?, 1.0, ? FROM memories m, entities e"
                    " WHERE m.id = ? AND e.id = ?",
                    (name, now, mid, eid),
                )
                n = seen.get(canon, 0)
                seen[canon] = n + 1
                key = KEYS[n % len(KEYS)]
                aid = str(uuid.uuid4())
                value = " ".join(str(content).split()[:4])
                conn.execute(
                    "INSERT INTO entity_attributes(id, aspect_id, entity_id, agent_id, attribute_key, attribute_value,"
                    " claim_key, group_key, kind, claim_type, status, confidence, source_memory_id, created_at,"
                    " updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'fact', 'state', 'active', 0.8, ?, ?, ?)",
                    (
                        aid,
                        aspects[canon],
                        eid,
                        agent_id,
                        key,
                        value,
                        f"{canon}|{key}",
                        f"{canon}|profile",
                        mid,
                        created,
                        created,
                    ),
                )
                prev = current.get((canon, key))
                if prev is not None:
                    conn.execute(
                        "UPDATE entity_attributes SET status = 'superseded', superseded_by = ?, superseded_at = ?"
                        " WHERE id = ?",
                        (aid, created, prev),
                    )
                    superseded += 1
                current[(canon, key)] = aid
        return {"entities": len(entities), "attributes": len(rows), "superseded": superseded}
    finally:
        conn.close()


def set_graph(config_path: Path, *, graph: bool, traversal: bool) -> None:
    """Switch the graph's reads in the workspace's agent.yaml: ``graph.enabled`` (currentness
    from the graph, signet.search.supersession) and ``traversal.enabled`` (the walk)."""
    import yaml

    data = yaml.safe_load(config_path.read_text()) or {}
    pipe = data.setdefault("memory", {}).setdefault("pipelineV2", {})
    pipe["graph"] = {"enabled": graph}
    pipe["traversal"] = {**(pipe.get("traversal") or {}), "enabled": traversal}
    config_path.write_text(yaml.safe_dump(data, sort_keys=False))


def compare(
    root: Path,
    db_path: Path,
    measure: Callable[[str, str], dict[str, Any]],
    run_daemon: Callable[[Path], contextlib.AbstractContextManager[Any]],
) -> dict[str, Any]:
    """Seed the graph, then ``measure(url, task)`` recall with the graph's reads off, with the
    defaults (currentness on, traversal off), and all on (traversal too)."""
    out: dict[str, Any] = {"seeded": seed_knowledge(db_path)}
    for label, graph, walk in (("off", False, False), ("default", True, False), ("on", True, True)):
        set_graph(Workspace(root).config_path, graph=graph, traversal=walk)
        with run_daemon(root) as daemon:
            out[label] = measure(daemon.url, f"recall, graph {label}")
    off, on_ = out["off"], out["on"]
    out["on_over_off"] = {p: round(on_[p] / off[p], 3) if off[p] else None for p in ("p50", "p95", "p99")}
    out["default_over_off"] = {
        p: round(out["default"][p] / off[p], 3) if off[p] else None for p in ("p50", "p95", "p99")
    }
    return out
