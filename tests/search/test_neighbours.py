"""Thread context for the vector leg (signet.search.neighbours)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from fastapi.testclient import TestClient

from signet.runtime import Runtime
from signet.search.neighbours import NEXT_WEIGHT, VECTOR_CONTEXT_WEIGHT, context_cosines, thread_neighbours
from signet.search.vectors import VectorIndex


def unit(*xs: float) -> Any:
    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_context_cosine_blends_the_neighbours_and_leaves_threadless_memories_alone() -> None:
    index = VectorIndex(4)
    index.upsert_many(
        ["own", "prev", "next", "alone"],
        np.stack([unit(1, 0, 0, 0), unit(0, 1, 0, 0), unit(0, 0, 1, 0), unit(1, 0, 0, 0)]),
        [None] * 4,
        [None] * 4,
    )
    q = unit(0, 1, 0, 0)
    cos = {"own": 0.0, "alone": 0.0}
    out = context_cosines(q, cos, {"own": ("prev", "next")}, index)
    ctx = 1.0 / math.sqrt(1 + 1 + NEXT_WEIGHT**2)  # q . (e1 + e2 + w e3) / |...|
    assert math.isclose(out["own"], VECTOR_CONTEXT_WEIGHT * ctx, rel_tol=1e-6)
    assert out["alone"] == 0.0
    # A neighbour without a vector (not embedded yet) is left out; with none left, the cosine stays.
    assert context_cosines(q, {"own": 0.3}, {"own": ("missing", None)}, index) == {"own": 0.3}


def _remember(api: TestClient, content: str, **kw: Any) -> str:
    r = api.post("/api/memory/remember", json={"content": content, **kw})
    assert r.status_code == 200, r.text
    return str(r.json()["id"])


def test_thread_neighbours_follow_the_thread_and_skip_deleted_memories(api: TestClient, runtime: Runtime) -> None:
    t = {"source_type": "session", "source_id": "s1"}
    a = _remember(api, "first line of the session", **t)
    b = _remember(api, "second line of the session", **t)
    other = _remember(api, "a line of another session", source_type="session", source_id="s2")
    c = _remember(api, "third line of the session", **t)
    fact = _remember(api, "a hand-written fact with no thread")
    got = runtime.db.read(lambda conn: thread_neighbours(conn, [a, b, c, other, fact]))
    assert got == {a: (None, b), b: (a, c), c: (b, None)}
    assert api.delete(f"/api/memory/{b}", params={"reason": "test"}).status_code == 200
    got = runtime.db.read(lambda conn: thread_neighbours(conn, [a, c]))
    assert got == {a: (None, c), c: (a, None)}


def test_an_answer_is_found_by_the_question_before_it(api: TestClient, runtime: Runtime) -> None:
    """Vector leg only (alpha 1): the reply says nothing about the trip, the turn before it does."""
    t = {"source_type": "session", "source_id": "chat-1"}
    _remember(api, "Melanie: How was the road trip through the Rocky Mountains with your kids?", **t)
    reply = _remember(api, "Caroline: Amazing, the kids loved every minute of it.", **t)
    _remember(api, "Melanie: Did you see the new bakery downtown? Their bread is great.", **t)
    # Alone, this line is closer to the question than the reply (cosine 0.614 against 0.600, same
    # length and speaker); with the turn before it the reply gets 0.634.
    distractor = _remember(api, "Caroline: I like long drives when I need to think.")
    assert runtime.embeddings.wait_idle(60)
    r = api.post(
        "/api/memory/recall", json={"query": "How did Caroline like her road trip?", "alpha": 1.0, "limit": 10}
    )
    assert r.status_code == 200, r.text
    ranked = [x["id"] for x in r.json()["results"]]
    assert ranked.index(reply) < ranked.index(distractor)
