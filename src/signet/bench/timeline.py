"""The time bench: a store where facts were stated, restated, updated and recalled over a
simulated year, asked what is true *now* (issue 22).

LoCoMo and LongMemEval ask about what was said; neither asks which of two statements of the
same thing is the current one, so neither can show what recall's life stage
(signet.search.lifescore) is for. This bench generates that case, deterministically from a
seed: people with attributes (employer, city, car, editor, team, gym), each attribute stated
at some day, restated in other words, later changed to a new value (half the time in plain
words, with nothing saying it is a change, half the time as an explicit switch) and perhaps
restated again; the old statements were recalled often back then (access counts and times set
as if they had been), so use pulls the wrong way. Every memory carries its simulated date.

Each question ("Where does Maya work now?") is asked with every scoring variant in the same
store: off, on, and on with one factor removed, so the report says what each factor is worth.
A question is answered when the first of the subject's statements in the ranking states the
current value (another person's or attribute's memory ranking above them is a retrieval miss,
reported apart as ``subject_found`` and ``top1_current``).
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

from signet.bench.harness import Progress, bench_runtime, no_progress, wait_vectors
from signet.models import RecallRequest, RememberRequest
from signet.runtime import Runtime

PEOPLE = (
    "Maya Okafor",
    "Liam Brenner",
    "Sofia Lindqvist",
    "Arjun Mehta",
    "Chloe Dubois",
    "Mateo Alvarez",
    "Hana Sato",
    "Noah Fischer",
    "Amara Nwosu",
    "Elias Novak",
    "Priya Raman",
    "Jonas Weber",
    "Leila Haddad",
    "Oscar Nilsen",
    "Yuki Tanaka",
    "Ines Carvalho",
    "Tomasz Kowal",
    "Freya Larsen",
    "Dario Conti",
    "Nadia Petrova",
    "Kofi Mensah",
    "Elena Rossi",
    "Samir Khalil",
    "Greta Holm",
    "Rafael Ortega",
    "Mina Park",
    "Victor Lemaire",
    "Zara Ahmed",
    "Felix Hartmann",
    "Anya Volkova",
)


@dataclass(frozen=True)
class Attribute:
    name: str
    values: tuple[str, ...]
    says: tuple[str, ...]
    """Ways to state it: ``{p}`` the person's first name, ``{v}`` the value."""
    switch: tuple[str, ...]
    """Ways to state a change: ``{old}`` the previous value too."""
    question: str


ATTRIBUTES = (
    Attribute(
        "employer",
        (
            "Acme Robotics",
            "Northwind Labs",
            "Globex",
            "Initech",
            "Umbrella Health",
            "Stark Logistics",
            "Vandelay Foods",
        ),
        ("{p} works at {v}.", "{p} has a job at {v}.", "{p} is an engineer at {v}.", "{p}'s employer is {v}."),
        ("{p} left {old} and joined {v}.", "{p} switched jobs from {old} to {v}."),
        "Where does {p} work now?",
    ),
    Attribute(
        "city",
        ("Lisbon", "Toronto", "Osaka", "Berlin", "Nairobi", "Melbourne", "Denver", "Krakow"),
        ("{p} lives in {v}.", "{p}'s home is in {v}.", "{p} is based in {v}.", "{p} rents a flat in {v}."),
        ("{p} moved from {old} to {v}.", "{p} relocated to {v}, leaving {old}."),
        "Which city does {p} live in now?",
    ),
    Attribute(
        "car",
        ("Volvo estate", "Tesla Model 3", "Honda Civic", "Subaru Outback", "Fiat 500", "Ford Ranger"),
        ("{p} drives a {v}.", "{p}'s car is a {v}.", "{p} commutes in a {v}."),
        ("{p} sold the {old} and bought a {v}.", "{p} traded in the {old} for a {v}."),
        "What car does {p} drive now?",
    ),
    Attribute(
        "editor",
        ("Neovim", "VS Code", "Emacs", "IntelliJ IDEA", "Helix", "Zed"),
        ("{p} writes code in {v}.", "{p}'s editor is {v}.", "{p} does all their programming in {v}."),
        ("{p} gave up {old} and uses {v} instead.", "{p} switched editors from {old} to {v}."),
        "Which editor does {p} use now?",
    ),
    Attribute(
        "team",
        ("payments", "search", "infrastructure", "mobile", "data platform", "security"),
        ("{p} is on the {v} team.", "{p} works in the {v} group.", "{p} belongs to the {v} team."),
        ("{p} transferred from the {old} team to the {v} team.", "{p} moved over from {old} to the {v} team."),
        "Which team is {p} on now?",
    ),
    Attribute(
        "gym",
        ("climbing gym", "swimming pool", "boxing club", "yoga studio", "running club", "rowing club"),
        ("{p} trains at the {v}.", "{p} goes to the {v} twice a week.", "{p}'s exercise is the {v}."),
        ("{p} quit the {old} and joined the {v}.", "{p} swapped the {old} for the {v}."),
        "Where does {p} exercise now?",
    ),
)

VARIANTS: dict[str, dict[str, Any]] = {
    "off": {"enabled": False},
    "on": {},
    "no_currentness": {"supersede_weight": 0.0},
    "no_recency": {"recency_weight": 0.0, "now_recency_weight": 0.0},
    "no_strength": {"strength_weight": 0.0},
}
"""Scoring variants asked in the same store: settings of ``search.scoring`` changed from the
run's configuration (``on`` is the configuration itself)."""


@dataclass
class Statement:
    content: str
    day: int
    current: bool
    accesses: int = 0
    accessed_day: int | None = None


@dataclass
class Subject:
    question: str
    statements: list[Statement] = field(default_factory=list)


def generate(seed: int = 7, people: int = 30, days: int = 360) -> list[Subject]:
    """The subjects of one bench store, deterministic in ``seed``."""
    rng = random.Random(seed)
    out: list[Subject] = []
    for full in PEOPLE[:people]:
        first = full.split()[0]
        for attr in ATTRIBUTES:
            old, new = rng.sample(attr.values, 2)
            says = list(attr.says)
            subject = Subject(attr.question.format(p=first))
            d0 = rng.randint(0, days // 3)
            d1 = rng.randint(d0 + 45, days - 20)
            recalled = rng.random() < 0.5
            subject.statements.append(Statement(rng.choice(says).format(p=first, v=old), d0, False))
            for _ in range(rng.randint(0, 2)):
                subject.statements.append(
                    Statement(rng.choice(says).format(p=first, v=old), rng.randint(d0 + 1, d1 - 1), False)
                )
            if recalled:  # the old value was looked up a lot while it was true
                for s in subject.statements:
                    s.accesses = rng.randint(5, 20)
                    s.accessed_day = rng.randint(s.day, d1 - 1)
            template = rng.choice(attr.switch) if rng.random() < 0.5 else rng.choice(says)
            subject.statements.append(Statement(template.format(p=first, v=new, old=old), d1, True))
            for _ in range(rng.randint(0, 1)):
                subject.statements.append(
                    Statement(rng.choice(says).format(p=first, v=new), rng.randint(d1 + 1, days - 2), True)
                )
            out.append(subject)
    return out


def _set_access(conn: Any, rows: list[tuple[int, str, str]]) -> None:
    conn.executemany("UPDATE memories SET access_count = ?, last_accessed = ? WHERE id = ?", rows)


def ingest(rt: Runtime, subjects: list[Subject], start: datetime) -> list[list[tuple[str, bool]]]:
    """Store every statement at its simulated date and set its simulated accesses; returns
    per subject its ``(memory id, states the current value)``."""
    owned: list[list[tuple[str, bool]]] = []
    for subject in subjects:
        reqs = [
            RememberRequest(content=s.content, project="timeline", created_at=start + timedelta(days=s.day))
            for s in subject.statements
        ]
        results = rt.service.remember_batch(reqs, changed_by="bench")
        owned.append([(r.id, s.current) for r, s in zip(results, subject.statements, strict=True)])
        accessed = [
            (s.accesses, (start + timedelta(days=s.accessed_day)).isoformat(), r.id)
            for r, s in zip(results, subject.statements, strict=True)
            if s.accessed_day is not None
        ]
        if accessed:
            rt.db.write(partial(_set_access, rows=accessed))
    return owned


def run(
    *,
    seed: int = 7,
    people: int = 30,
    embedding: str = "local",
    settings: Mapping[str, Any] | None = None,
    progress: Progress = no_progress,
) -> dict[str, Any]:
    """Build the store, ask every question under every variant; the report per variant:
    ``current_first``: share of questions where the best-ranked of the subject's statements (in
    the top 10) states the current value — what is true now comes before what was true then;
    ``stale_first``: where it states an old value; ``subject_found``: where any statement of the
    subject is in the top 10 at all (retrieval, not time); ``top1_current``: where the very first
    result states the current value (both together)."""
    subjects = generate(seed, people)
    now = datetime.now(UTC)
    start = now - timedelta(days=362)
    with bench_runtime(embedding, settings=settings) as rt:
        started = time.perf_counter()
        owned = ingest(rt, subjects, start)
        wait_vectors(rt, progress=progress)
        ingest_s = time.perf_counter() - started
        scoring = rt.settings.search.scoring
        base = scoring.model_dump()
        report: dict[str, Any] = {
            "seed": seed,
            "subjects": len(subjects),
            "memories": sum(len(o) for o in owned),
            "ingest_s": round(ingest_s, 2),
            "variants": {},
        }
        for n, (variant, change) in enumerate(VARIANTS.items()):
            for key, value in {**base, **change}.items():
                setattr(scoring, key, value)
            first = top1 = stale = found = 0
            for subject, ids in zip(subjects, owned, strict=True):
                current = {mid for mid, is_current in ids if is_current}
                res = rt.service.recall(RecallRequest(query=subject.question, limit=10, track_access=False))
                ranked = [r.id for r in res.results]
                own = [mid for mid in ranked if mid in dict(ids)]  # the subject's statements, in rank order
                found += bool(own)
                first += bool(own) and own[0] in current
                stale += bool(own) and own[0] not in current
                top1 += bool(ranked) and ranked[0] in current
            total = len(subjects)
            report["variants"][variant] = {
                "current_first": round(first / total, 4),
                "stale_first": round(stale / total, 4),
                "subject_found": round(found / total, 4),
                "top1_current": round(top1 / total, 4),
            }
            progress("variants", n + 1, len(VARIANTS))
        for key, value in base.items():
            setattr(scoring, key, value)
    return report
