"""LoCoMo retrieval benchmark: one memory per turn, one project per conversation.

Metric (see /work/shared/bench-data/README.md and docs/benchmarks.md): for every question of
categories 1-4, recall the top k memories of its conversation with the question as query and
score recall@k / hit@k / all@k / MRR against the evidence turns.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from signet.bench.harness import Progress, bench_runtime, no_progress, wait_vectors
from signet.bench.metrics import all_at, hit_at, mrr, percentile, recall_at
from signet.models import RecallRequest, RememberRequest
from signet.runtime import Runtime

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
KS = (5, 10)
_SESSION_KEY = re.compile(r"^session_(\d+)$")


@dataclass
class Turn:
    dia_id: str
    content: str
    speaker: str
    when: datetime | None


@dataclass
class Question:
    question: str
    category: int
    evidence: list[str]


@dataclass
class Conversation:
    sample_id: str
    turns: list[Turn]
    questions: list[Question]
    last_date: datetime | None = None


@dataclass
class Report:
    questions: int = 0
    skipped_no_evidence: int = 0
    conversations: int = 0
    turns: int = 0
    ingest_s: float = 0.0
    embed_s: float = 0.0
    overall: dict[str, float] = field(default_factory=dict)
    per_category: dict[str, dict[str, float]] = field(default_factory=dict)
    latency_ms: dict[str, float] = field(default_factory=dict)
    keyword_index: dict[str, int] = field(default_factory=dict)
    """Keyword searches the in-memory index answered, and those FTS5 answered, while asking."""

    def as_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


def parse_date(text: str) -> datetime | None:
    """LoCoMo's "1:56 pm on 8 May, 2023"; None when the format is unexpected."""
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y"):
        try:
            return datetime.strptime(text.strip(), fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


def turn_text(turn: dict[str, Any]) -> str:
    text = f"{turn.get('speaker', '')}: {turn.get('text', '')}".strip()
    caption = turn.get("blip_caption")
    if caption:
        text += f" [shared a photo: {caption}]"
    return text


def load(
    path: Path, *, limit_conversations: int | None = None, limit_questions: int | None = None
) -> list[Conversation]:
    data = json.loads(path.read_text())
    out: list[Conversation] = []
    for sample in data[:limit_conversations]:
        conv = sample["conversation"]
        sessions = sorted(
            (int(m.group(1)), key) for key in conv if (m := _SESSION_KEY.match(key)) and isinstance(conv[key], list)
        )
        turns: list[Turn] = []
        last: datetime | None = None
        for n, key in sessions:
            when = parse_date(str(conv.get(f"session_{n}_date_time", "")))
            last = when or last
            for t in conv[key]:
                turns.append(Turn(str(t["dia_id"]), turn_text(t), str(t.get("speaker", "")), when))
        questions = [
            Question(str(q["question"]), int(q["category"]), [str(e) for e in q.get("evidence", [])])
            for q in sample.get("qa", [])
            if int(q.get("category", 0)) in CATEGORIES
        ][:limit_questions]
        out.append(Conversation(str(sample.get("sample_id", len(out))), turns, questions, last))
    return out


def ingest(rt: Runtime, conv: Conversation, project: str) -> dict[str, str]:
    """Store every turn; returns memory id -> dia_id (identical turns share one memory)."""
    reqs = [
        # source_id = the session, as the harness hooks record a session's memories.
        RememberRequest(
            content=t.content,
            who=t.speaker or None,
            project=project,
            created_at=t.when,
            source_type="bench",
            source_id=f"{project}:{t.dia_id.split(':')[0]}",
        )
        for t in conv.turns
    ]
    owner: dict[str, str] = {}
    for i in range(0, len(reqs), 500):
        for t, res in zip(
            conv.turns[i : i + 500], rt.service.remember_batch(reqs[i : i + 500], changed_by="bench"), strict=True
        ):
            owner.setdefault(res.id, t.dia_id)
    return owner


def evaluate(
    conversations: list[Conversation], rt: Runtime, *, limit: int = 10, progress: Progress = no_progress
) -> Report:
    rep = Report(conversations=len(conversations))
    owners: list[dict[str, str]] = []
    started = time.perf_counter()
    for i, conv in enumerate(conversations):
        owners.append(ingest(rt, conv, f"locomo-{i}"))
        rep.turns += len(conv.turns)
        progress("store conversations", i + 1, len(conversations))
    rep.ingest_s = round(time.perf_counter() - started, 3)
    started = time.perf_counter()
    wait_vectors(rt, progress=progress)
    rep.embed_s = round(time.perf_counter() - started, 3)

    sums: dict[str, dict[str, float]] = {}
    counts: dict[str, int] = {}
    took: list[float] = []
    n_questions = sum(len(c.questions) for c in conversations)
    asked = 0
    mirror = rt.keywords
    answered, fallbacks = (mirror.answered, mirror.fallbacks) if mirror is not None else (0, 0)
    for i, conv in enumerate(conversations):
        for q in conv.questions:
            asked += 1
            progress("questions", asked, n_questions)
            gold = set(q.evidence)
            if not gold:
                rep.skipped_no_evidence += 1
                continue
            t0 = time.perf_counter()
            res = rt.service.recall(
                RecallRequest(
                    query=q.question,
                    limit=limit,
                    project=f"locomo-{i}",
                    track_access=False,
                )
            )
            took.append((time.perf_counter() - t0) * 1000)
            ranked = [owners[i].get(r.id, "") for r in res.results]
            scores = {"mrr": mrr(ranked, gold)}
            for k in KS:
                scores[f"recall@{k}"] = recall_at(ranked, gold, k)
                scores[f"hit@{k}"] = hit_at(ranked, gold, k)
                scores[f"all@{k}"] = all_at(ranked, gold, k)
            for bucket in ("overall", CATEGORIES[q.category]):
                acc = sums.setdefault(bucket, {})
                for name, v in scores.items():
                    acc[name] = acc.get(name, 0.0) + v
                counts[bucket] = counts.get(bucket, 0) + 1
            rep.questions += 1
    for bucket, acc in sums.items():
        avg = {name: round(v / counts[bucket], 4) for name, v in acc.items()}
        avg["n"] = counts[bucket]
        if bucket == "overall":
            rep.overall = avg
        else:
            rep.per_category[bucket] = avg
    rep.latency_ms = {
        "p50": round(percentile(took, 50), 2),
        "p95": round(percentile(took, 95), 2),
        "mean": round(sum(took) / len(took), 2) if took else 0.0,
    }
    if mirror is not None:
        rep.keyword_index = {"answered": mirror.answered - answered, "fallbacks": mirror.fallbacks - fallbacks}
    return rep


def run(
    path: Path,
    *,
    embedding: str = "local",
    model: str | None = None,
    limit_conversations: int | None = None,
    limit_questions: int | None = None,
    progress: Progress = no_progress,
    vector_cache: Path | None = None,
    settings: Mapping[str, Any] | None = None,
    storage: str = "sqlite",
    pg_url: str | None = None,
) -> Report:
    conversations = load(path, limit_conversations=limit_conversations, limit_questions=limit_questions)
    with bench_runtime(
        embedding, model=model, vector_cache=vector_cache, settings=settings, storage=storage, pg_url=pg_url
    ) as rt:
        return evaluate(conversations, rt, progress=progress)
