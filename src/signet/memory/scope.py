"""Who is reading: the agent and read policy that every read path filters by.

Single-agent installs use :data:`UNSCOPED` and see everything. Auth (team / hybrid modes)
and multi-agent rosters build narrower scopes; the SQL that applies them lives here, once,
so recall, list, get, similar, export, hooks and MCP cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

ReadPolicy = Literal["isolated", "shared", "group", "all"]


@dataclass(frozen=True)
class ReadScope:
    agent_id: str = "default"
    policy: ReadPolicy = "all"
    group: tuple[str, ...] = field(default_factory=tuple)
    project: str | None = None
    """A token scoped to a project sees only that project's memories."""

    def sql(self, alias: str = "m") -> tuple[str, list[Any]]:
        """A WHERE fragment (always valid, ``1=1`` when unrestricted) and its parameters."""
        clauses: list[str] = []
        params: list[Any] = []
        a = f"{alias}." if alias else ""
        if self.policy == "isolated":
            clauses.append(f"{a}agent_id = ?")
            params.append(self.agent_id)
        elif self.policy == "shared":
            clauses.append(f"({a}visibility = 'global' OR {a}agent_id = ?)")
            params.append(self.agent_id)
        elif self.policy == "group":
            marks = ",".join("?" for _ in self.group) or "NULL"
            clauses.append(f"(({a}visibility = 'global' AND {a}agent_id IN ({marks})) OR {a}agent_id = ?)")
            params.extend(self.group)
            params.append(self.agent_id)
        if self.project is not None:
            clauses.append(f"{a}project = ?")
            params.append(self.project)
        return (" AND ".join(clauses) or "1=1"), params

    def allows(self, row: Any) -> bool:
        """The same rule as :meth:`sql`, for one already-fetched row."""
        agent = row["agent_id"]
        vis = row["visibility"]
        if self.project is not None and row["project"] != self.project:
            return False
        if self.policy == "isolated":
            return bool(agent == self.agent_id)
        if self.policy == "shared":
            return bool(vis == "global" or agent == self.agent_id)
        if self.policy == "group":
            return bool((vis == "global" and agent in self.group) or agent == self.agent_id)
        return True


UNSCOPED = ReadScope()
