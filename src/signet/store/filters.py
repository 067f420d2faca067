"""Filters -> one SQL WHERE fragment, shared by recall, list and forget."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from signet.store.records import to_iso
from signet.store.scope import UNSCOPED, ReadScope


@dataclass
class MemoryFilter:
    type: str | None = None
    tags: list[str] | None = None
    who: str | None = None
    pinned: bool | None = None
    importance_min: float | None = None
    since: datetime | None = None
    until: datetime | None = None
    project: str | None = None
    agent_id: str | None = None
    source_type: str | None = None
    include_deleted: bool = False
    scope: ReadScope = field(default_factory=lambda: UNSCOPED)

    def is_narrowing(self) -> bool:
        """True when anything beyond the scope narrows the set (forget refuses "everything")."""
        return any(
            v is not None
            for v in (
                self.type,
                self.tags or None,
                self.who,
                self.pinned,
                self.importance_min,
                self.since,
                self.until,
                self.project,
                self.agent_id,
                self.source_type,
            )
        )

    def sql(self, decay_rate: float, alias: str = "m") -> tuple[str, list[Any]]:
        a = f"{alias}."
        clauses: list[str] = []
        params: list[Any] = []
        if not self.include_deleted:
            clauses.append(f"{a}is_deleted = 0")
        scope_sql, scope_params = self.scope.sql(alias)
        clauses.append(scope_sql)
        params.extend(scope_params)
        for col, val in (
            ("type", self.type),
            ("who", self.who),
            ("project", self.project),
            ("agent_id", self.agent_id),
            ("source_type", self.source_type),
        ):
            if val is not None:
                clauses.append(f"{a}{col} = ?")
                params.append(val)
        if self.pinned is not None:
            clauses.append(f"{a}pinned = ?")
            params.append(1 if self.pinned else 0)
        if self.since is not None:
            clauses.append(f"{a}created_at >= ?")
            params.append(to_iso(self.since))
        if self.until is not None:
            clauses.append(f"{a}created_at <= ?")
            params.append(to_iso(self.until))
        for tag in self.tags or []:
            clauses.append(f"EXISTS (SELECT 1 FROM json_each({a}tags) WHERE json_each.value = ?)")
            params.append(tag)
        if self.importance_min is not None:
            clauses.append(f"signet_decay({a}importance, {a}pinned, COALESCE({a}last_accessed, {a}created_at), ?) >= ?")
            params.extend([decay_rate, self.importance_min])
        return " AND ".join(clauses), params
