"""The knowledge graph recall reads (signet.knowledge, signet.search.traversal): the deterministic
extractor, the tables migration 23 adds, traversal through the real recall path, its merge rules,
agent isolation, and its degradation to flat results."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest

from signet.config import TraversalSettings
from signet.knowledge import read
from signet.knowledge.extract import extract
from signet.models import RecallRequest, RememberRequest
from signet.runtime import Runtime
from signet.search import traversal
from signet.store.filters import MemoryFilter
from signet.store.records import now_iso
from signet.store.scope import ReadScope
from signet.workspace import Workspace
from tests.conftest import start_runtime


def _kinds(text: str, who: str | None = None) -> dict[str, str]:
    return {m.canonical: m.kind for m in extract(text, who)}


def test_extract_names_places_and_speaker() -> None:
    got = _kinds("Yesterday Caroline went to the support group in New York City. It was great!", who="Melanie")
    assert got == {"melanie": "person", "caroline": "name", "new york city": "name"}


def test_extract_leaves_sentence_openers_and_calendar_words() -> None:
    got = _kinds("Thanks for that. Fix the bug on Monday. Running late, see you in May.")
    assert got == {}
    # Nor a single word opening a sentence, addressed or not ("Yep, Mel", "What's"), but a name
    # inside the sentence is, and so is a run of capitalised words after a common opener.
    assert _kinds("Yep, Mel! What's up? Did you see The Lord of the Rings?") == {
        "mel": "name",
        "lord of the rings": "name",
    }
    assert _kinds("Bye, Caroline\u2019s friend. Later Quinn Avery called.") == {
        "caroline": "name",
        "quinn avery": "name",
    }


def test_extract_leaves_markdown_items_labels_and_common_words() -> None:
    """An assistant's Markdown answer: list items and bold words open items ("**Use** a tripod"),
    headings and bold labels are titles, a capitalised word the text also writes in lower case
    is a common word, and "e.g." is no code; the names in it stay."""
    answer = (
        "## Ease of Use\n\n**Additional Tips:**\n\n1. **Use** a tripod, as Ansel Adams did.\n"
        "* Consider the light in Yosemite, e.g. at dawn.\n- Keep it simple: Tips beat gear, and tips"
        " from Dorothea help."
    )
    assert _kinds(answer) == {"ansel adams": "name", "yosemite": "name", "dorothea": "name"}


def test_the_inline_linker_matches_names_not_lowercase_words() -> None:
    from signet.search.names import candidate_names, linkable_names

    text = "I'd like to help you with Python and recall_terms in src/a.py, said Kate from New York."
    linked = set(linkable_names(text))
    assert {"python", "kate", "new york", "recall_terms", "a.py"} <= linked
    assert not {"like", "help you", "help", "with"} & linked
    assert {"like", "help you", "python"} <= set(candidate_names(text))  # a query's runs: all of them


def test_extract_code_paths_urls_emails_dates() -> None:
    got = _kinds(
        "See https://example.org/a/b and mail ops@example.org; recall_terms in src/signet/search/recall.py "
        "calls keywordMirror.start() since 2023-05-08 (moved on 8 May 2023, or May 9)."
    )
    assert got["https://example.org/a/b"] == "url"
    assert got["ops@example.org"] == "email"
    assert got["src/signet/search/recall.py"] == "path"
    assert got["recall_terms"] == "code"
    assert got["keywordmirror"] == "code"
    assert got["2023-05-08"] == "date"
    assert got["8 may 2023"] == "date"
    assert got["9 may"] == "date"
    assert "example.org" not in got  # the URL and address took their host


def test_extract_is_bounded() -> None:
    text = " ".join(f"Name{i} met Person{i}, then" for i in range(200))
    assert len(extract(text)) <= 24
    assert extract("") == []


@pytest.fixture
def rt(make_workspace: Callable[..., Workspace]) -> Iterator[Runtime]:
    # Traversal is off by default (docs/benchmarks.md); these tests are about what it does when on.
    runtime = start_runtime(make_workspace(embedding="none", memory={"pipelineV2": {"traversal": {"enabled": True}}}))
    try:
        yield runtime
    finally:
        runtime.stop()


def _remember(rt: Runtime, content: str, **kw: object) -> str:
    return rt.service.remember(RememberRequest(content=content, **kw)).id


def test_remember_builds_entities_aspects_and_links(rt: Runtime) -> None:
    first = _remember(rt, "Yesterday Caroline moved to Sweden.", who="Melanie")
    second = _remember(rt, "Sweden is cold in winter, Caroline says.", who="Melanie")
    rows = rt.db.read(
        lambda c: {
            r["canonical_name"]: (r["entity_type"], r["mentions"])
            for r in c.execute("SELECT * FROM entities WHERE agent_id = 'default'")
        }
    )
    assert rows["caroline"] == ("name", 2)
    # "Sweden" opens the second text: not extracted there (an opener is rarely a name), but the
    # linker still ties the memory to the entity it already knows.
    assert rows["sweden"] == ("name", 1)
    assert rows["melanie"] == ("person", 2)
    # Each entity has one aspect by its kind, read from its type (no row is stored for it).
    assert rt.db.read(lambda c: c.execute("SELECT COUNT(*) FROM entity_aspects").fetchone()[0]) == 0
    ids = rt.db.read(lambda c: dict(c.execute("SELECT canonical_name, id FROM entities").fetchall()))

    def aspects(entity_id: str) -> list[tuple[str, str]]:
        detail = rt.db.read(lambda c: read.get_entity(c, "default", entity_id))
        return [(a.name, a.id) for a in detail.aspects]

    kinds = {name: aspects(eid) for name, eid in ids.items()}
    assert kinds == {
        "caroline": [("named thing", f"kind:{ids['caroline']}")],
        "sweden": [("named thing", f"kind:{ids['sweden']}")],
        "melanie": [("person", f"kind:{ids['melanie']}")],
    }
    linked = rt.db.read(
        lambda c: {
            (r[0], r[1])
            for r in c.execute(
                "SELECT mm.memory_id, e.canonical_name FROM memory_entity_mentions mm JOIN entities e"
                " ON e.id = mm.entity_id"
            )
        }
    )
    assert {(first, "sweden"), (second, "sweden"), (first, "melanie"), (second, "caroline")} <= linked
    confidence = rt.db.read(
        lambda c: {
            (r[0], r[1]): r[2]
            for r in c.execute(
                "SELECT mm.memory_id, e.canonical_name, mm.confidence FROM memory_entity_mentions mm"
                " JOIN entities e ON e.id = mm.entity_id"
            )
        }
    )
    # The extractor's links keep its confidence; the inline linker's (a known name the extractor
    # left: "Sweden" opening the second text) have the linker's.
    assert confidence[(second, "caroline")] == 0.6 and confidence[(second, "sweden")] == 1.0


def test_graph_disabled_writes_and_reads_nothing(make_workspace: Callable[..., Workspace]) -> None:
    ws = make_workspace(embedding="none", memory={"pipelineV2": {"graph": {"enabled": False}}})
    rt = start_runtime(ws)
    try:
        _remember(rt, "Caroline moved to Sweden.")
        assert rt.db.read(lambda c: c.execute("SELECT COUNT(*) FROM entities").fetchone()[0]) == 0
        res = rt.service.recall(RecallRequest(query="Caroline", track_access=False))
        assert res.graph is None
    finally:
        rt.stop()


def test_traversal_is_off_by_default(rt: Runtime, make_workspace: Callable[..., Workspace]) -> None:
    other = start_runtime(make_workspace(embedding="none"))
    try:
        _remember(other, "At the lake Caroline swam.", who="Melanie")
        assert other.service.recall(RecallRequest(query="Caroline", track_access=False)).graph is None
        assert other.db.read(lambda c: c.execute("SELECT COUNT(*) FROM entities").fetchone()[0]) == 2  # still written
    finally:
        other.stop()


def _attribute(rt: Runtime, entity: str, aspect: str, value: str, memory_id: str, status: str = "active") -> None:
    def write(c: object) -> None:
        conn = c  # a write connection
        now = now_iso()
        eid = conn.execute(  # type: ignore[attr-defined]
            "INSERT INTO entities(id, name, canonical_name, mentions, agent_id, created_at, updated_at)"
            " VALUES (?, ?, ?, 1, 'default', ?, ?) ON CONFLICT(agent_id, canonical_name) DO UPDATE"
            " SET mentions = mentions RETURNING id",
            (str(uuid.uuid4()), entity, entity.lower(), now, now),
        ).fetchone()[0]
        aid = str(uuid.uuid4())
        conn.execute(  # type: ignore[attr-defined]
            "INSERT INTO entity_aspects(id, entity_id, agent_id, aspect_name, canonical_name, created_at, updated_at)"
            " VALUES (?, ?, 'default', ?, ?, ?, ?) ON CONFLICT(entity_id, canonical_name) DO NOTHING",
            (aid, eid, aspect, aspect, now, now),
        )
        aid = conn.execute(  # type: ignore[attr-defined]
            "SELECT id FROM entity_aspects WHERE entity_id = ? AND canonical_name = ?", (eid, aspect)
        ).fetchone()[0]
        conn.execute(  # type: ignore[attr-defined]
            "INSERT INTO entity_attributes(id, aspect_id, entity_id, agent_id, attribute_key, attribute_value,"
            " status, source_memory_id, created_at, updated_at) VALUES (?, ?, ?, 'default', ?, ?, ?, ?, ?, ?)",
            (str(uuid.uuid4()), aid, eid, aspect, value, status, memory_id, now, now),
        )

    rt.db.write(write)


def test_traversal_reaches_a_memory_that_shares_no_word_with_the_query(rt: Runtime) -> None:
    pet = _remember(rt, "She adopted a greyhound called Pixel.")
    old = _remember(rt, "She had a goldfish once.")
    _remember(rt, "The weather was lovely on the coast.")
    _attribute(rt, "Kate", "pets", "greyhound Pixel", pet)
    _attribute(rt, "Kate", "pets", "goldfish", old, status="superseded")
    res = rt.service.recall(RecallRequest(query="Tell me about Kate", track_access=False))
    assert res.graph is not None and res.graph.mode == "traversal"
    assert res.graph.focal_entities == ["Kate"]
    ids = [r.id for r in res.results]
    assert pet in ids and old not in ids  # a superseded attribute is not walked
    assert next(r for r in res.results if r.id == pet).source == "graph"

    rt.settings.memory.pipeline.traversal.enabled = False
    try:
        flat = rt.service.recall(RecallRequest(query="Tell me about Kate", track_access=False))
    finally:
        rt.settings.memory.pipeline.traversal.enabled = True
    assert flat.graph is None and pet not in [r.id for r in flat.results]


def test_agents_never_see_each_others_entities(rt: Runtime) -> None:
    a = _remember(rt, "At the climbing gym Caroline lent me a rope.", agent_id="alpha")
    b = _remember(rt, "My sister is called Caroline.", agent_id="beta")
    ents = rt.db.read(
        lambda c: sorted(
            (r[0], r[1]) for r in c.execute("SELECT agent_id, canonical_name FROM entities WHERE name = 'Caroline'")
        )
    )
    assert ents == [("alpha", "caroline"), ("beta", "caroline")]
    for policy in ("isolated", "shared", "group", "all"):
        scope = ReadScope(agent_id="beta", policy=policy)
        flt = MemoryFilter(scope=scope)
        where, params = flt.sql(0.0)
        out = rt.db.read(
            lambda c, where=where, params=params: traversal.traverse(  # type: ignore[misc]
                c,
                "who is Caroline",
                agent_id="beta",
                where=where,
                params=params,
                settings=TraversalSettings(),
                cosines=None,
            )
        )
        assert set(out.reached) == {b}, policy
        res = rt.service.recall(RecallRequest(query="Caroline rope", track_access=False), scope=scope)
        assert res.graph is not None and res.graph.mode == "traversal"
        if policy == "isolated":
            assert a not in [r.id for r in res.results]


def test_hub_entity_is_not_walked(rt: Runtime) -> None:
    rt.settings.memory.pipeline.traversal.max_branching = 3
    try:
        for i in range(5):
            _remember(rt, f"Note {i} about the garden.", who="Dana")
        res = rt.service.recall(RecallRequest(query="What did Dana plant?", track_access=False))
        assert res.graph is not None and res.graph.focal_entities == ["Dana"] and res.graph.reached == 0
    finally:
        rt.settings.memory.pipeline.traversal.max_branching = 100


def test_a_graph_read_error_degrades_to_flat_results(rt: Runtime) -> None:
    mid = _remember(rt, "Caroline likes pottery.")
    rt.db.write(lambda c: c.execute("DROP TABLE entity_aliases"))
    res = rt.service.recall(RecallRequest(query="Caroline pottery", track_access=False))
    assert [r.id for r in res.results] == [mid]
    assert res.graph is not None and res.graph.degraded is not None and "flat results only" in res.graph.degraded


def test_time_budget_degrades_and_says_so(rt: Runtime) -> None:
    for i in range(40):
        _remember(rt, f"Robin and Sam talked about topic {i} at the Harbour Cafe.", who="Robin")
    cfg = rt.settings.memory.pipeline.traversal
    cfg.timeout_ms, cfg.max_focal = 1, 50
    flt = MemoryFilter()
    where, params = flt.sql(0.0)
    slow = 0
    for _ in range(5):

        def cosines(ids: list[str]) -> dict[str, float]:
            import time

            time.sleep(0.005)  # a vector read that takes longer than the whole budget
            return dict.fromkeys(ids, 0.5)

        out = rt.db.read(
            lambda c, cosines=cosines: traversal.traverse(  # type: ignore[misc]
                c,
                "Robin Sam Harbour Cafe",
                agent_id="default",
                where=where,
                params=params,
                settings=cfg,
                cosines=cosines,
            )
        )
        slow += out.degraded is not None and "budget" in out.degraded and not out.reached
    assert slow == 5


def test_shape_caps_traversal_only_and_keeps_flat_slots() -> None:
    cfg = TraversalSettings()
    flat = {f"f{i}" for i in range(10)}
    scores = {f"f{i}": 0.5 - i * 0.01 for i in range(10)} | {f"t{i}": 0.99 for i in range(10)}
    out = traversal.Outcome(mode="traversal", reached={f"t{i}": 0.99 for i in range(10)} | {"f3": 0.8})
    shaped = traversal.shape(scores, flat, out, cfg, limit=10)
    top = sorted(shaped, key=lambda m: shaped[m], reverse=True)[:10]
    assert sum(m.startswith("t") for m in top) == 6  # at most 60 % traversal-only
    assert max(shaped[f"t{i}"] for i in range(10)) <= shaped["f3"]  # capped below the best anchored
    assert shaped["f3"] == pytest.approx(0.47 * (1 + cfg.boost))
    assert shaped["f0"] == 0.5  # anchored, not reached: untouched
