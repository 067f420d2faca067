"""Deterministic synthetic memories and questions for the latency benchmark.

The texts look like what agents store: conversational and technical sentences naming people,
projects, tools, places, numbers and tags. Every memory comes with a question about it that
is *not* a copy of it (other words, a subset of its facts), so a recall has to do real work
on both legs: the keyword leg sees a handful of shared rare words, the vector leg a paraphrase.

The same ``seed`` always gives the same memories and questions, so runs are comparable.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

NAMES = [
    "Priya",
    "Alice",
    "Bruno",
    "Chen",
    "Dmitri",
    "Elena",
    "Farah",
    "Gustavo",
    "Hana",
    "Ibrahim",
    "Jonas",
    "Kenji",
    "Lena",
    "Mateo",
    "Nadia",
    "Oskar",
    "Paula",
    "Quentin",
    "Rosa",
    "Samir",
    "Tomas",
    "Uma",
    "Viktor",
    "Wen",
    "Ximena",
    "Yusuf",
    "Zofia",
    "Amara",
    "Bjorn",
    "Carmen",
    "Diego",
    "Esme",
    "Felix",
    "Greta",
    "Hugo",
    "Ines",
    "Jasper",
    "Kira",
    "Luca",
    "Mira",
    "Nikolai",
    "Olga",
    "Pedro",
    "Ravi",
    "Sofia",
    "Theo",
    "Ursula",
    "Vera",
    "Wanda",
    "Yara",
    "Zane",
    "Aiko",
    "Bashir",
    "Clara",
    "Dario",
    "Emil",
    "Freya",
    "Goran",
    "Helga",
    "Ilya",
    "Juno",
    "Kofi",
    "Leila",
    "Marco",
    "Noor",
    "Omar",
    "Petra",
    "Rafael",
    "Selin",
    "Tariq",
]
PROJECTS = [
    "Atlas",
    "Borealis",
    "Cobalt",
    "Drift",
    "Ember",
    "Falcon",
    "Granite",
    "Harbor",
    "Ion",
    "Juniper",
    "Kestrel",
    "Lumen",
    "Monsoon",
    "Nimbus",
    "Onyx",
    "Pylon",
    "Quasar",
    "Raven",
    "Sierra",
    "Tundra",
    "Umbra",
    "Vortex",
    "Willow",
    "Xenon",
    "Yonder",
    "Zephyr",
    "Aurora",
    "Basalt",
    "Cinder",
    "Delta",
    "Echo",
    "Fjord",
    "Gale",
    "Helix",
    "Iris",
    "Jade",
    "Krypton",
    "Lotus",
    "Meridian",
    "Nova",
]
TOOLS = [
    "Postgres",
    "Redis",
    "Kafka",
    "Kubernetes",
    "Terraform",
    "Grafana",
    "Prometheus",
    "nginx",
    "SQLite",
    "FastAPI",
    "React",
    "Svelte",
    "Rust",
    "Django",
    "Flask",
    "Celery",
    "RabbitMQ",
    "Elasticsearch",
    "ClickHouse",
    "DuckDB",
    "Airflow",
    "Spark",
    "pandas",
    "numpy",
    "PyTorch",
    "Docker",
    "Podman",
    "Ansible",
    "Vault",
    "Consul",
    "Envoy",
    "Istio",
    "gRPC",
    "GraphQL",
    "Webpack",
    "Vite",
    "esbuild",
    "Jenkins",
    "GitHub",
    "Sentry",
    "Datadog",
]
PLACES = [
    "Lisbon",
    "Berlin",
    "Osaka",
    "Nairobi",
    "Montreal",
    "Oslo",
    "Lima",
    "Hanoi",
    "Krakow",
    "Tbilisi",
    "Porto",
    "Seville",
    "Denver",
    "Austin",
    "Dublin",
    "Helsinki",
    "Reykjavik",
    "Marrakesh",
    "Valparaiso",
    "Ljubljana",
    "Tallinn",
    "Bergen",
    "Kyoto",
    "Busan",
    "Cusco",
    "Quito",
    "Accra",
    "Dakar",
]
TOPICS = [
    "latency budget",
    "memory leak",
    "flaky test",
    "schema migration",
    "rate limiter",
    "cache eviction",
    "login flow",
    "billing export",
    "search ranking",
    "onboarding email",
    "dark mode",
    "retry policy",
    "backup rotation",
    "disk quota",
    "TLS renewal",
    "feature flag",
    "audit log",
    "CSV import",
    "webhook signing",
    "session timeout",
    "pagination bug",
    "timezone handling",
    "unicode filenames",
    "connection pool",
    "cold start",
    "index bloat",
    "deadlock",
    "query planner",
    "log rotation",
    "API versioning",
    "accessibility review",
    "load balancer",
    "DNS failover",
    "GPU quota",
    "vector index",
    "token refresh",
]
HOBBIES = [
    "bouldering",
    "sourdough baking",
    "trail running",
    "pottery",
    "chess",
    "birdwatching",
    "salsa dancing",
    "woodworking",
    "film photography",
    "sailing",
    "beekeeping",
    "urban sketching",
    "cold water swimming",
    "kayaking",
    "gardening",
    "piano",
    "rock climbing",
    "knitting",
    "astronomy",
    "cycling",
    "calligraphy",
    "origami",
    "fly fishing",
    "board games",
]
FOODS = [
    "ramen",
    "tacos al pastor",
    "pad thai",
    "shakshuka",
    "pierogi",
    "jollof rice",
    "pho",
    "bibimbap",
    "falafel",
    "paella",
    "dumplings",
    "khachapuri",
    "ceviche",
    "tagine",
    "laksa",
    "poutine",
    "arepas",
    "okonomiyaki",
    "moussaka",
    "injera",
]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
TAGS = [
    "infra",
    "backend",
    "frontend",
    "ops",
    "perf",
    "security",
    "data",
    "ml",
    "personal",
    "travel",
    "family",
    "health",
    "team",
    "release",
]


@dataclass(frozen=True)
class Sample:
    """One memory's text and a question whose answer is that memory."""

    content: str
    question: str
    project: str
    who: str
    tags: tuple[str, ...]
    source_id: str | None = None
    """The thread (session) the memory belongs to; synthetic memories have none."""


Template = Callable[[random.Random], tuple[str, str, str, str]]


def _pick(rng: random.Random, seq: tuple[str, ...] | list[str]) -> str:
    return seq[rng.randrange(len(seq))]


def _t_blocked(r: random.Random) -> tuple[str, str, str, str]:
    who, proj, tool, topic = _pick(r, NAMES), _pick(r, PROJECTS), _pick(r, TOOLS), _pick(r, TOPICS)
    weeks = r.randint(1, 9)
    return (
        f"{who} said the {proj} upgrade to {tool} {r.randint(2, 17)}.{r.randint(0, 9)} is blocked on the {topic}; "
        f"the new estimate is {weeks} weeks.",
        f"what is holding up the {tool} upgrade on {proj}?",
        proj,
        who,
    )


def _t_decision(r: random.Random) -> tuple[str, str, str, str]:
    proj, tool, alt, who = _pick(r, PROJECTS), _pick(r, TOOLS), _pick(r, TOOLS), _pick(r, NAMES)
    return (
        f"We decided to use {tool} instead of {alt} for {proj} after {who} benchmarked both at "
        f"{r.randint(2, 40) * 100} requests per second.",
        f"why did {proj} pick {tool} over {alt}?",
        proj,
        who,
    )


def _t_bug(r: random.Random) -> tuple[str, str, str, str]:
    proj, topic, who = _pick(r, PROJECTS), _pick(r, TOPICS), _pick(r, NAMES)
    return (
        f"Bug in {proj}: the {topic} breaks when more than {r.randint(2, 500)} users hit it at once, "
        f"{who} is looking at it (ticket {proj[:3].upper()}-{r.randint(100, 9999)}).",
        f"who is investigating the {topic} problem in {proj}?",
        proj,
        who,
    )


def _t_preference(r: random.Random) -> tuple[str, str, str, str]:
    who, tool, alt = _pick(r, NAMES), _pick(r, TOOLS), _pick(r, TOOLS)
    proj = _pick(r, PROJECTS)
    return (
        f"{who} prefers {tool} over {alt} for anything touching {proj}, and wants reviews before {_pick(r, WEEKDAYS)} noon.",
        f"which tool does {who} like for {proj} work?",
        proj,
        who,
    )


def _t_trip(r: random.Random) -> tuple[str, str, str, str]:
    who, place, hobby = _pick(r, NAMES), _pick(r, PLACES), _pick(r, HOBBIES)
    return (
        f"{who} is flying to {place} on {r.randint(1, 28)} {_pick(r, MONTHS)} for a week of {hobby} "
        f"with {_pick(r, NAMES)}.",
        f"where is {who} travelling and what will they do there?",
        "personal",
        who,
    )


def _t_food(r: random.Random) -> tuple[str, str, str, str]:
    who, food, place = _pick(r, NAMES), _pick(r, FOODS), _pick(r, PLACES)
    return (
        f"{who} mentioned the best {food} they ever had was at a tiny place in {place}, "
        f"about {r.randint(3, 30)} euros for two.",
        f"where did {who} eat great {food}?",
        "personal",
        who,
    )


def _t_incident(r: random.Random) -> tuple[str, str, str, str]:
    proj, tool, who = _pick(r, PROJECTS), _pick(r, TOOLS), _pick(r, NAMES)
    mins = r.randint(3, 180)
    return (
        f"Incident on {proj}: {tool} ran out of connections at {r.randint(0, 23):02d}:{r.randint(0, 59):02d} UTC, "
        f"{mins} minutes of errors; {who} raised the pool size to {r.choice([32, 64, 128, 256])}.",
        f"what caused the {proj} outage with {tool}?",
        proj,
        who,
    )


def _t_rule(r: random.Random) -> tuple[str, str, str, str]:
    proj, tool, who = _pick(r, PROJECTS), _pick(r, TOOLS), _pick(r, NAMES)
    return (
        f"Rule for {proj}: never deploy {tool} changes on a {_pick(r, WEEKDAYS)}, {who} has to sign off "
        f"and the canary must hold for {r.randint(5, 60)} minutes.",
        f"what are the deployment rules for {tool} in {proj}?",
        proj,
        who,
    )


def _t_learning(r: random.Random) -> tuple[str, str, str, str]:
    who, tool, topic = _pick(r, NAMES), _pick(r, TOOLS), _pick(r, TOPICS)
    proj = _pick(r, PROJECTS)
    return (
        f"{who} learned that {tool} caches the {topic} per worker, which explains the "
        f"{r.randint(2, 95)}% miss rate we saw on {proj}.",
        f"why is the miss rate so high on {proj}?",
        proj,
        who,
    )


def _t_meeting(r: random.Random) -> tuple[str, str, str, str]:
    who, other, proj = _pick(r, NAMES), _pick(r, NAMES), _pick(r, PROJECTS)
    topic = _pick(r, TOPICS)
    return (
        f"Met with {who} and {other} about the {proj} roadmap: the {topic} ships in Q{r.randint(1, 4)}, "
        f"budget {r.randint(5, 90)}k.",
        f"when does the {topic} ship for {proj} and what is the budget?",
        proj,
        who,
    )


def _t_family(r: random.Random) -> tuple[str, str, str, str]:
    who, hobby, place = _pick(r, NAMES), _pick(r, HOBBIES), _pick(r, PLACES)
    age = r.randint(4, 17)
    return (
        f"{who}'s daughter is {age} and just started {hobby} lessons near their flat in {place}.",
        f"what activity did {who}'s kid take up?",
        "personal",
        who,
    )


def _t_config(r: random.Random) -> tuple[str, str, str, str]:
    proj, tool = _pick(r, PROJECTS), _pick(r, TOOLS)
    port = r.randint(1024, 65000)
    return (
        f"{proj} runs {tool} on port {port} in staging, with {r.randint(1, 64)} replicas and a "
        f"{r.randint(1, 30)} second timeout.",
        f"which port does {tool} listen on for {proj} staging?",
        proj,
        _pick(r, NAMES),
    )


TEMPLATES: tuple[Template, ...] = (
    _t_blocked,
    _t_decision,
    _t_bug,
    _t_preference,
    _t_trip,
    _t_food,
    _t_incident,
    _t_rule,
    _t_learning,
    _t_meeting,
    _t_family,
    _t_config,
)


def generate(n: int, seed: int = 7) -> list[Sample]:
    """``n`` distinct memories (by normalized text) with their questions, deterministically."""
    rng = random.Random(seed)
    seen: set[str] = set()
    out: list[Sample] = []
    while len(out) < n:
        content, question, project, who = TEMPLATES[rng.randrange(len(TEMPLATES))](rng)
        key = content.lower()
        if key in seen:
            continue
        seen.add(key)
        tags = tuple(sorted({_pick(rng, TAGS) for _ in range(rng.randint(0, 2))}))
        out.append(Sample(content, question, project, who, tags))
    return out
