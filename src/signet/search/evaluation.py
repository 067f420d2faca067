"""``signet eval`` (docs/lifecycle.md, Eval): did recall get better or worse on *my* data?

A user's own queries, each with what it should find (memory ids or id prefixes, or content
substrings), scored against the live store through the daemon's recall API three ways: as
configured (``live``), keyword only (``alpha`` 0: the vector leg is skipped) and vector only
(``alpha`` 1: the keyword score weighs nothing). Per query the rank of the first expected
memory; over all, recall@k (the share of expectations found in the top ``k``) and MRR (the mean
of 1/rank of the first one, 0 when it is not in the top ``depth``).

The case file is small YAML or JSON, validated whole before anything is asked: a mistake is one
line naming the case and the field. This module parses and scores; the CLI does the HTTP.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from signet.errors import InvalidRequest

MODES: dict[str, float | None] = {"live": None, "keyword": 0.0, "vector": 1.0}
"""Each mode's ``alpha`` for ``POST /api/memory/recall`` (None: the configured one)."""

MAX_CASES = 1000
MAX_FILE_BYTES = 2_000_000


class Case(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=2000)
    expect: list[str] = Field(default_factory=list, description="content substrings (case-insensitive)")
    expect_ids: list[str] = Field(default_factory=list, description="memory ids or unique prefixes")
    project: str | None = None
    agent_id: str | None = None

    @model_validator(mode="after")
    def _something_expected(self) -> Case:
        if not any(s.strip() for s in [*self.expect, *self.expect_ids]):
            raise ValueError("give `expect` (content substrings) or `expect_ids` (memory ids)")
        return self


class CaseFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    k: int = Field(5, ge=1, le=100, description="the cut-off of recall@k")
    depth: int = Field(20, ge=1, le=200, description="results asked per query (ranks beyond are 'not found')")
    cases: list[Case] = Field(min_length=1, max_length=MAX_CASES)

    @model_validator(mode="after")
    def _depth_covers_k(self) -> CaseFile:
        if self.depth < self.k:
            raise ValueError(f"depth ({self.depth}) must be at least k ({self.k})")
        return self


def _where(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "file"


def parse_cases(text: str, name: str = "eval file") -> CaseFile:
    """The case file (YAML or JSON: JSON is YAML), or :class:`InvalidRequest` in one line."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        raise InvalidRequest(f"{name}: not valid YAML or JSON{at}") from None
    if isinstance(data, list):  # a bare list of cases
        data = {"cases": data}
    if not isinstance(data, dict):
        raise InvalidRequest(f"{name}: expected a mapping with `cases:` (or a list of cases)")
    try:
        return CaseFile.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise InvalidRequest(f"{name}: {_where(tuple(err['loc']))}: {err['msg']}{more}") from None


def load_cases(path: Path) -> CaseFile:
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise InvalidRequest(f"{path}: {size} bytes is too large for an eval file (at most {MAX_FILE_BYTES})")
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InvalidRequest(f"{path}: no such file (write one like docs/eval-sample.yaml)") from None
    except IsADirectoryError:
        raise InvalidRequest(f"{path}: is a directory, not an eval file") from None
    except UnicodeDecodeError:
        raise InvalidRequest(f"{path}: not UTF-8 text") from None
    return parse_cases(text, str(path))


def first_rank(case: Case, results: Iterable[Mapping[str, Any]]) -> int | None:
    """The 1-based rank of the first result meeting any of the case's expectations, or None."""
    for rank, r in enumerate(results, 1):
        if matches(case, r):
            return rank
    return None


def matches(case: Case, result: Mapping[str, Any]) -> bool:
    rid = str(result.get("id", ""))
    content = str(result.get("content", "")).casefold()
    return any(rid.startswith(i.strip()) for i in case.expect_ids if i.strip()) or any(
        s.strip().casefold() in content for s in case.expect if s.strip()
    )


def found_within(case: Case, results: list[Mapping[str, Any]], k: int) -> float:
    """The share of the case's expectations met by some result in the top ``k``."""
    top = results[:k]
    wanted = [("id", i.strip()) for i in case.expect_ids if i.strip()] + [
        ("text", s.strip().casefold()) for s in case.expect if s.strip()
    ]
    hit = 0
    for kind, want in wanted:
        if kind == "id":
            hit += any(str(r.get("id", "")).startswith(want) for r in top)
        else:
            hit += any(want in str(r.get("content", "")).casefold() for r in top)
    return hit / len(wanted)


@dataclass
class ModeScore:
    ranks: list[int | None] = field(default_factory=list)
    recall: list[float] = field(default_factory=list)

    def summary(self, k: int) -> dict[str, float]:
        n = len(self.ranks)
        return {
            f"recall@{k}": round(sum(self.recall) / n, 4) if n else 0.0,
            "mrr": round(sum(1.0 / r for r in self.ranks if r) / n, 4) if n else 0.0,
            "found": sum(1 for r in self.ranks if r),
        }


@dataclass
class Report:
    k: int
    depth: int
    cases: list[Case]
    modes: dict[str, ModeScore] = field(default_factory=lambda: {m: ModeScore() for m in MODES})
    notes: list[str] = field(default_factory=list)

    def add(self, mode: str, case: Case, results: list[Mapping[str, Any]]) -> None:
        self.modes[mode].ranks.append(first_rank(case, results))
        self.modes[mode].recall.append(found_within(case, results, self.k))

    def as_dict(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "depth": self.depth,
            "summary": {m: s.summary(self.k) for m, s in self.modes.items()},
            "queries": [
                {"query": c.query, "ranks": {m: s.ranks[i] for m, s in self.modes.items()}}
                for i, c in enumerate(self.cases)
            ],
            "notes": self.notes,
        }

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), indent=2)


def captured_cases(
    feedback: Sequence[Mapping[str, Any]], searches: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Cases from ratings: each memory rated ``positive`` becomes an expectation of the latest
    logged recall (the QA ledger) that returned it before the rating; one case per query."""
    by_query: dict[str, dict[str, Any]] = {}
    ordered = sorted(searches, key=lambda s: str(s.get("created_at", "")), reverse=True)
    for fb in feedback:
        if fb.get("feedback") != "positive":
            continue
        mid, at = str(fb.get("memory_id", "")), str(fb.get("created_at", ""))
        for s in ordered:
            if str(s.get("created_at", "")) <= at and any(r.get("id") == mid for r in s.get("results") or []):
                case = by_query.setdefault(str(s["query"]), {"query": str(s["query"]), "expect_ids": []})
                if s.get("project"):
                    case["project"] = s["project"]
                if mid not in case["expect_ids"]:
                    case["expect_ids"].append(mid)
                break
    return list(by_query.values())
