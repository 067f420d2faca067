"""What a consolidation run would do (docs/lifecycle.md, Consolidation): the plan, as data.

Tier 1 are rules, no model involved:

- **duplicate**: live memories of one owner (agent, project), one visibility and one type whose
  stored vectors are at or above ``memory.consolidation.duplicate_threshold`` (an identical text
  is similarity 1): the survivor is chosen as ``signet.ops.dedup`` does (pinned, important,
  used, old) and the others are retired into it;
- **expired**: an episodic or issue memory (the *temporary* expiry class of the ranking) not
  created, changed or recalled for ``temporary_days``;
- **stale_todo**: a todo (type ``todo`` or the tag ``todo``) not changed or recalled for
  ``todo_days``.

Tier 2 runs only when an LLM provider is configured: what is left is clustered at the lower
``merge_threshold`` (same owner, visibility and type) and the model is asked, per cluster,
for one memory that replaces them; its answer becomes a **merge** action.

A pinned memory is never retired by any rule (it may survive a duplicate cluster), and
nothing is ever compared across agents, projects or visibilities. Every action records the
``version`` of each memory it touches: applying a plan refuses if one changed meanwhile, so
what is applied is exactly what was planned.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from signet.config import ConsolidationSettings
from signet.memory.content import parse_content
from signet.ops import dedup
from signet.ops.consolidation_models import Action, Kind, Plan
from signet.pipeline.extraction import parse_json_object, render
from signet.pipeline.llm.base import LlmError, LlmTimeout, LlmUnavailable, RecordingLlm
from signet.search.lifescore import TEMPORARY_TYPES
from signet.store.records import load_tags, to_iso
from signet.store.scope import ReadScope
from signet.store.sqlite import Connection

MAX_MERGED_CHARS = 4000
"""A merged memory longer than this is refused (the model rambled): the cluster stays as it is."""

PREVIEW = 160


@dataclass(frozen=True)
class Llm:
    """The model tier 2 asks, or why there is none (then tier 2 is skipped and says so)."""

    client: RecordingLlm | None
    unavailable: str | None = None


def _preview(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= PREVIEW else text[: PREVIEW - 1] + "…"


def _latest(row: Any) -> str:
    """The last time a memory was said, edited or recalled (ISO strings compare in order).
    ``updated_at`` counts only after an edit (version > 1): an import sets it to the import time."""
    edited = str(row["updated_at"] or "") if int(row["version"]) > 1 else ""
    return max(str(row["created_at"]), edited, str(row["last_accessed"] or ""))


def live_rows(conn: Connection, model: str, scope: ReadScope, limit: int) -> list[Any]:
    """The newest ``limit`` live memories the scope may change, with their stored vector of the
    current model when there is one (``vector`` is NULL otherwise)."""
    where, params = scope.writable().sql("m")
    return list(
        conn.execute(
            "SELECT m.id, m.agent_id, m.project, m.visibility, m.type, m.pinned, m.importance, m.access_count,"
            " m.created_at, m.updated_at, m.last_accessed, m.seq, m.version, m.content, m.content_hash, m.tags,"
            " e.vector, e.dimensions FROM memories m LEFT JOIN embeddings e ON e.content_hash = m.content_hash"
            " AND e.model = ?"
            f" WHERE m.is_deleted = 0 AND m.type != 'document_chunk' AND {where} ORDER BY m.seq DESC LIMIT ?",
            (model, *params, limit),
        )
    )


def _groups(rows: Iterable[Any]) -> dict[tuple[str, str | None, str, str], list[Any]]:
    """Rows by what may be consolidated together: owner, project, visibility and type."""
    out: dict[tuple[str, str | None, str, str], list[Any]] = {}
    for r in rows:
        out.setdefault((r["agent_id"], r["project"], r["visibility"], r["type"]), []).append(r)
    return out


def _action(kind: Kind, tier: Literal[1, 2], key: tuple[str, str | None, str, str], **kw: Any) -> Action:
    agent, project, visibility, mtype = key
    return Action(kind=kind, tier=tier, agent_id=agent, project=project, visibility=visibility, type=mtype, **kw)


def _duplicates(rows: list[Any], threshold: float) -> list[Action]:
    actions: list[Action] = []
    by_id = {r["id"]: r for r in rows}
    for key, members in _groups(rows).items():
        # An identical text (one content hash) is a duplicate with or without a vector.
        with_vec = [r for r in members if r["vector"] is not None]
        clusters = dedup.cluster(with_vec, threshold, key[0], key[1]) if len(with_vec) > 1 else []
        seen = {m.id for c in clusters for m in c.members} | {c.survivor for c in clusters}
        by_hash: dict[str, list[Any]] = {}
        for r in members:
            if r["id"] not in seen:
                by_hash.setdefault(r["content_hash"], []).append(r)
        for same in by_hash.values():
            if len(same) > 1:
                same.sort(key=dedup.rank)
                clusters.append(
                    dedup.Cluster(
                        same[0]["id"],
                        "",
                        key[0],
                        key[1],
                        [dedup.Member(r["id"], 1.0, bool(r["pinned"]), "") for r in same[1:]],
                    )
                )
        for c in clusters:
            # A chain A~B~C does not retire C into A; a pinned memory is never retired.
            gone = [m for m in c.members if m.similarity >= threshold and not m.pinned]
            if not gone:
                continue
            ids = [m.id for m in gone]
            actions.append(
                _action(
                    "duplicate",
                    1,
                    key,
                    keep=c.survivor,
                    retire=ids,
                    similarity=round(min(m.similarity for m in gone), 4),
                    reason=f"{len(ids)} near duplicate(s) of {c.survivor} (cosine >= {threshold:g})",
                    versions={i: int(by_id[i]["version"]) for i in [c.survivor, *ids]},
                    previews={i: _preview(by_id[i]["content"]) for i in [c.survivor, *ids]},
                )
            )
    return actions


def _aged(rows: list[Any], cfg: ConsolidationSettings, now: datetime, taken: set[str]) -> list[Action]:
    temp_cut = to_iso(now - timedelta(days=cfg.temporary_days))
    todo_cut = to_iso(now - timedelta(days=cfg.todo_days))
    actions: list[Action] = []
    for r in rows:
        if r["pinned"] or r["id"] in taken:
            continue
        key = (r["agent_id"], r["project"], r["visibility"], r["type"])
        last = _latest(r)
        is_todo = r["type"] == "todo" or "todo" in load_tags(r["tags"])
        if is_todo and last < todo_cut:
            kind: Kind = "stale_todo"
            why = f"a todo untouched since {last[:10]} (more than {cfg.todo_days:g} days)"
        elif r["type"] in TEMPORARY_TYPES and last < temp_cut:
            kind = "expired"
            why = (
                f"a temporary ({r['type']}) memory untouched since {last[:10]} (more than {cfg.temporary_days:g} days)"
            )
        else:
            continue
        actions.append(
            _action(
                kind,
                1,
                key,
                retire=[r["id"]],
                reason=why,
                versions={r["id"]: int(r["version"])},
                previews={r["id"]: _preview(r["content"])},
            )
        )
    return actions


def tier1(rows: list[Any], cfg: ConsolidationSettings, now: datetime | None = None) -> list[Action]:
    """The rule-based actions over ``rows`` (:func:`live_rows`)."""
    dup = _duplicates(rows, cfg.duplicate_threshold)
    taken = {i for a in dup for i in [*a.retire, *([a.keep] if a.keep else [])]}
    return dup + _aged(rows, cfg, now or datetime.now(UTC), taken)


def merge_clusters(rows: list[Any], cfg: ConsolidationSettings, taken: set[str]) -> list[list[Any]]:
    """Tier 2's candidate clusters: unpinned, untouched memories with a vector, at or above
    ``merge_threshold`` of their cluster's head, largest clusters first, at most
    ``max_clusters`` of at most ``max_cluster_size`` (oldest first, as the prompt lists them)."""
    eligible = [r for r in rows if not r["pinned"] and r["id"] not in taken and r["vector"] is not None]
    by_id = {r["id"]: r for r in eligible}
    out: list[list[Any]] = []
    for key, members in _groups(eligible).items():
        if len(members) < 2:
            continue
        for c in dedup.cluster(members, cfg.merge_threshold, key[0], key[1]):
            close = [m.id for m in c.members if m.similarity >= cfg.merge_threshold]
            if close:
                picked = [by_id[c.survivor], *(by_id[i] for i in close)][: cfg.max_cluster_size]
                out.append(sorted(picked, key=lambda r: (str(r["created_at"]), int(r["seq"]))))
    out.sort(key=lambda c: (-len(c), c[0]["id"]))
    return out[: cfg.max_clusters]


def ask_merge(llm: RecordingLlm, cluster: list[Any]) -> tuple[str | None, str]:
    """The model's merged text for a cluster (None: it declined), and its reason.
    Raises :class:`ValueError` on an answer that is not the asked-for JSON, and
    :class:`LlmError` when the call fails."""
    listing = "\n".join(f"{r['id']}: {' '.join(str(r['content']).split())}" for r in cluster)
    answer = parse_json_object(llm.complete(render("consolidate", memories=listing), purpose="consolidate"))
    reason = str(answer.get("reason") or "").strip()[:300]
    if answer.get("merge") is not True:
        return None, reason or "the model kept them apart"
    content = answer.get("content")
    if not isinstance(content, str) or not content.strip():
        raise ValueError("the model said merge but gave no content")
    if len(content) > MAX_MERGED_CHARS:
        raise ValueError(f"the merged text is {len(content)} characters (more than {MAX_MERGED_CHARS})")
    return content.strip(), reason or "merged by the model"


def tier2(
    rows: list[Any], cfg: ConsolidationSettings, llm: Llm, taken: set[str]
) -> tuple[list[Action], str, list[str]]:
    """The merge actions the model agreed to, tier 2's state and the notes on clusters left alone."""
    if llm.client is None:
        return [], f"skipped: {llm.unavailable or 'no LLM provider configured'}", []
    if cfg.max_clusters == 0:
        return [], "skipped: memory.consolidation.max_clusters is 0", []
    actions: list[Action] = []
    notes: list[str] = []
    clusters = merge_clusters(rows, cfg, taken)
    in_clusters = {r["id"] for c in clusters for r in c}
    taken_hashes: dict[tuple[str, str | None], set[str]] = {}  # texts a merge may not repeat (the dedupe index)
    for r in rows:
        if r["id"] not in in_clusters:
            taken_hashes.setdefault((r["agent_id"], r["project"]), set()).add(r["content_hash"])
    for n, cluster in enumerate(clusters):
        ids = [r["id"] for r in cluster]
        try:
            content, reason = ask_merge(llm.client, cluster)
        except (LlmError, ValueError) as exc:
            notes.append(f"cluster {', '.join(i[:8] for i in ids)} not merged: {exc}")
            if isinstance(exc, LlmTimeout | LlmUnavailable) and n + 1 < len(clusters):
                # a model that is not answering is not asked again: one timeout, not max_clusters
                notes.append(f"{len(clusters) - n - 1} more cluster(s) not asked: the model is not answering")
                break
            continue
        if content is None:
            notes.append(f"cluster {', '.join(i[:8] for i in ids)} kept apart: {reason}")
            continue
        if parse_content(content).hash in taken_hashes.get((cluster[0]["agent_id"], cluster[0]["project"]), set()):
            notes.append(f"cluster {', '.join(i[:8] for i in ids)} not merged: the merged text is another memory's")
            continue
        tags = list(dict.fromkeys(t for r in cluster for t in load_tags(r["tags"])))
        head = cluster[0]
        actions.append(
            _action(
                "merge",
                2,
                (head["agent_id"], head["project"], head["visibility"], head["type"]),
                retire=ids,
                content=content,
                importance=max(float(r["importance"]) for r in cluster),
                tags=tags,
                reason=reason,
                versions={r["id"]: int(r["version"]) for r in cluster},
                previews={r["id"]: _preview(r["content"]) for r in cluster},
            )
        )
    return actions, "ran", notes


def plan(
    conn_rows: list[Any], cfg: ConsolidationSettings, llm: Llm, *, with_tier2: bool = True, now: datetime | None = None
) -> Plan:
    """The whole plan over the rows :func:`live_rows` read (the model is called here, outside
    any transaction)."""
    actions = tier1(conn_rows, cfg, now)
    taken = {i for a in actions for i in [*a.retire, *([a.keep] if a.keep else [])]}
    if with_tier2:
        merges, state, notes = tier2(conn_rows, cfg, llm, taken)
    else:
        merges, state, notes = [], "skipped: not asked for (tier2: false)", []
    return Plan(actions=actions + merges, scanned=len(conn_rows), tier2=state, notes=notes)


def plan_json(p: Plan) -> str:
    """The stored form of a plan: the same data every time it is read back."""
    return json.dumps(p.model_dump(mode="json"), sort_keys=True)
