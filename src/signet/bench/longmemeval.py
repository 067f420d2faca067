"""LongMemEval retrieval benchmark (session level), through the real remember/recall path.

Each question gets its own haystack: its sessions are stored (one memory per turn) in an
opaque project, the question is recalled there, memories map back to their sessions, and
distinct sessions in rank order are scored. Session ids never reach the store (some contain
the word "answer"). After a question its memories are deleted: haystacks of different
questions share sessions, and memories are deduplicated by content, so leaving them would
hand one question's memory to another's project. Re-stored text reuses its stored vector.
"""

from __future__ import annotations

import gzip
import json
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from signet.bench.harness import Progress, bench_runtime, no_progress, wait_vectors
from signet.bench.metrics import dedupe, ndcg_at, percentile
from signet.models import RecallRequest, RememberRequest
from signet.runtime import Runtime

KS = (5, 10)
RECALL_DEPTH = 50


def parse_date(text: str | None) -> datetime | None:
    """LongMemEval's "2023/05/20 (Sat) 02:21"."""
    if not text:
        return None
    parts = text.split()
    try:
        day = datetime.strptime(parts[0], "%Y/%m/%d")
        if len(parts) >= 3:
            hh, mm = parts[-1].split(":")
            day = day.replace(hour=int(hh), minute=int(mm))
        return day.replace(tzinfo=UTC)
    except ValueError:
        return None


def _one(rt: Runtime, n: int, item: dict[str, Any]) -> tuple[list[str], set[str], float]:
    project = f"lme-{n}"
    reqs: list[RememberRequest] = []
    session_of: list[str] = []
    dates = item.get("haystack_dates") or []
    for s_idx, (sid, turns) in enumerate(zip(item["haystack_session_ids"], item["haystack_sessions"], strict=True)):
        when = parse_date(dates[s_idx] if s_idx < len(dates) else None)
        for turn in turns:
            content = str(turn.get("content", "")).strip()
            if not content:
                continue
            # source_id: an opaque per-session id (the real session ids never reach the store).
            reqs.append(
                RememberRequest(
                    content=f"{turn.get('role', 'user')}: {content}"[:20000],
                    project=project,
                    created_at=when,
                    source_type="bench",
                    source_id=f"{project}:s{s_idx}",
                )
            )
            session_of.append(str(sid))
    owner: dict[str, str] = {}
    ids: list[str] = []
    for i in range(0, len(reqs), 500):
        stored = rt.service.remember_batch(reqs[i : i + 500], changed_by="bench")
        for sid, mem in zip(session_of[i : i + 500], stored, strict=True):
            owner.setdefault(mem.id, sid)
            ids.append(mem.id)
    wait_vectors(rt)
    t0 = time.perf_counter()
    # Asked at its own date: nothing stored after the question may answer it.
    res = rt.service.recall(
        RecallRequest(
            query=str(item["question"]),
            limit=RECALL_DEPTH,
            project=project,
            until=parse_date(item.get("question_date")),
            track_access=False,
        )
    )
    took = (time.perf_counter() - t0) * 1000
    ranked = dedupe([owner[r.id] for r in res.results if r.id in owner])
    for mid in dict.fromkeys(ids):
        rt.service.delete(mid, reason="bench cleanup", changed_by="bench")
    return ranked, {str(s) for s in item.get("answer_session_ids", [])}, took


def evaluate(
    items: list[dict[str, Any]],
    rt: Runtime,
    *,
    progress: Progress = no_progress,
    rankings: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Score every non-abstention question; with ``rankings``, append each question's ranked sessions."""
    sums: dict[str, float] = {}
    per_type: dict[str, dict[str, float]] = {}
    took: list[float] = []
    skipped = 0
    n_scored = 0
    started = time.perf_counter()
    for n, item in enumerate(items):
        progress("questions", n + 1, len(items))
        if str(item.get("question_id", "")).endswith("_abs"):
            skipped += 1
            continue
        ranked, gold, ms = _one(rt, n, item)
        if rankings is not None:
            rankings.append(
                {
                    "question_id": str(item.get("question_id", n)),
                    "question_type": str(item.get("question_type", "unknown")),
                    "ranked_session_ids": ranked,
                }
            )
        if not gold:
            skipped += 1
            continue
        took.append(ms)
        scores: dict[str, float] = {}
        for k in KS:
            top = set(ranked[:k])
            scores[f"recall_all@{k}"] = 1.0 if gold <= top else 0.0
            scores[f"recall_any@{k}"] = 1.0 if gold & top else 0.0
            scores[f"ndcg@{k}"] = ndcg_at(ranked, gold, k)
        qtype = str(item.get("question_type", "unknown"))
        bucket = per_type.setdefault(qtype, {"n": 0.0})
        bucket["n"] += 1
        for name, v in scores.items():
            sums[name] = sums.get(name, 0.0) + v
            bucket[name] = bucket.get(name, 0.0) + v
        n_scored += 1
    overall = {k: round(v / n_scored, 4) for k, v in sums.items()} if n_scored else {}
    types = {t: {k: (round(v / b["n"], 4) if k != "n" else int(v)) for k, v in b.items()} for t, b in per_type.items()}
    return {
        "questions": n_scored,
        "skipped": skipped,
        "overall": overall,
        "per_type": types,
        "latency_ms": {"p50": round(percentile(took, 50), 2), "p95": round(percentile(took, 95), 2)},
        "total_s": round(time.perf_counter() - started, 2),
    }


def read_text(path: Path) -> str:
    """The file's text, gunzipped when it is gzip (the dev split ships as ``.json.gz``)."""
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return raw.decode("utf-8")


def run(
    path: Path,
    *,
    embedding: str = "local",
    model: str | None = None,
    limit: int | None = None,
    out: Path | None = None,
    progress: Progress = no_progress,
    vector_cache: Path | None = None,
    settings: Mapping[str, Any] | None = None,
    storage: str = "sqlite",
    pg_url: str | None = None,
) -> dict[str, Any]:
    """Run the benchmark; ``out`` gets one JSON line per scored question (see write_rankings)."""
    items = json.loads(read_text(path))
    if not isinstance(items, list):
        raise ValueError("a LongMemEval file is a JSON list of questions")
    rankings: list[dict[str, Any]] = []
    with bench_runtime(
        embedding, model=model, vector_cache=vector_cache, settings=settings, storage=storage, pg_url=pg_url
    ) as rt:
        report = evaluate(items[:limit], rt, progress=progress, rankings=rankings)
    if out is not None:
        write_rankings(out, rankings)
    return report


def write_rankings(path: Path, rankings: list[dict[str, Any]]) -> None:
    """JSON Lines: ``{"question_id", "question_type", "ranked_session_ids"}`` per question.

    ``ranked_session_ids`` are the original (distinct) session ids in rank order, up to the
    recall depth, so every metric can be recomputed from this file and the data set alone.
    """
    with path.open("w", encoding="utf-8") as fh:
        for row in rankings:
            fh.write(json.dumps(row) + "\n")
