"""Token budgets for injected context: estimate, trim, and assemble sections.

Stdlib only (the hook CLI imports it). Token counts are estimates: the larger of
``chars / 4`` and ``words * 1.3`` (agenr's heuristic), rounded up, so prose and code both
err on the side of fewer tokens than the budget, never more.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

TRUNCATED = "\n…[truncated]"


def estimate_tokens(text: str) -> int:
    if not text:
        return 0
    return max(math.ceil(len(text) / 4), math.ceil(len(text.split()) * 1.3))


def fit_text(text: str, max_tokens: int) -> str:
    """The longest prefix of ``text`` (cut at a line or word boundary) within ``max_tokens``.

    A cut text ends with a visible ``…[truncated]`` marker, counted inside the budget.
    """
    if max_tokens <= 0:
        return ""
    if estimate_tokens(text) <= max_tokens:
        return text
    marker_cost = estimate_tokens(TRUNCATED)
    if max_tokens <= marker_cost:
        return ""
    lo, hi = 0, len(text)
    # Binary search the longest prefix whose estimate (with the marker) fits.
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if estimate_tokens(text[:mid]) + marker_cost <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    cut = text[:lo]
    boundary = max(cut.rfind("\n"), cut.rfind(" "))
    if boundary > lo // 2:
        cut = cut[:boundary]
    cut = cut.rstrip()
    return cut + TRUNCATED if cut else ""


@dataclass
class Section:
    """One titled block of injected context. ``share`` caps it at a fraction of the budget."""

    name: str
    title: str
    body: str
    share: float = 1.0


@dataclass
class Assembled:
    text: str
    tokens: int
    budget: int
    sections: list[dict[str, object]] = field(default_factory=list)


SEPARATOR = "\n\n"


def assemble(sections: list[Section], budget: int, *, header: str = "") -> Assembled:
    """Join sections in priority order without ever exceeding ``budget`` tokens.

    Each section may take at most ``share * budget`` tokens, and never more than what is
    left; what a short section leaves unused flows to the ones after it. A section that
    cannot fit its title plus a line of body is dropped whole. The estimate of the joined
    text is re-checked at the end, so the promise holds for the text as delivered.
    """
    parts: list[str] = []
    report: list[dict[str, object]] = []
    if header and estimate_tokens(header) <= budget:
        parts.append(header)
    for sec in sections:
        body = sec.body.strip()
        if not body:
            continue
        used = estimate_tokens(SEPARATOR.join(parts))
        remaining = budget - used - (estimate_tokens(SEPARATOR) if parts else 0)
        cap = min(remaining, math.floor(budget * sec.share))
        title = f"## {sec.title}\n"
        room = cap - estimate_tokens(title)
        if room < 8:
            report.append({"name": sec.name, "tokens": 0, "truncated": True, "dropped": True})
            continue
        fitted = fit_text(body, room)
        if not fitted:
            report.append({"name": sec.name, "tokens": 0, "truncated": True, "dropped": True})
            continue
        block = title + fitted
        # Joining can merge word boundaries differently; shave until the whole text fits.
        while fitted and estimate_tokens(SEPARATOR.join([*parts, block])) > budget:
            room -= 4
            fitted = fit_text(body, room)
            block = title + fitted
        if not fitted:
            report.append({"name": sec.name, "tokens": 0, "truncated": True, "dropped": True})
            continue
        parts.append(block)
        report.append(
            {
                "name": sec.name,
                "tokens": estimate_tokens(block),
                "truncated": fitted != body,
                "dropped": False,
            }
        )
    text = SEPARATOR.join(parts)
    return Assembled(text=text, tokens=estimate_tokens(text), budget=budget, sections=report)
