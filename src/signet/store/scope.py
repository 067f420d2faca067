"""Who is calling: the agent and read policy every read path filters by, and the owners a
scoped token may write as.

Single-agent installs use :data:`UNSCOPED` and see everything. Auth (team / hybrid modes)
and multi-agent rosters build narrower scopes; the rules that apply them live here, once,
so recall, list, get, similar, export, hooks and MCP cannot disagree on reads, and every
write path (remember, modify, forget, recover, hooks, ingest) asks the same two questions
before it writes: :meth:`ReadScope.owner` for the owner a new or moved row gets, and
:meth:`ReadScope.writable` for the rows the caller may change. A scoped token therefore
stays in its project and agent whatever the request body looks like.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from signet.errors import Forbidden

ReadPolicy = Literal["isolated", "shared", "group", "all"]


@dataclass(frozen=True)
class ReadScope:
    agent_id: str = "default"
    policy: ReadPolicy = "all"
    group: tuple[str, ...] = field(default_factory=tuple)
    project: str | None = None
    """A token scoped to a project sees, writes and moves memories only in that project."""
    write_agent: str | None = None
    """An agent-scoped token: every memory it creates, changes, deletes or recovers is this
    agent's. Reads still follow ``policy`` (an agent may read others' global memories)."""

    def owner(self, agent_id: str | None, project: str | None) -> tuple[str | None, str | None]:
        """The owner a new row gets: the fields the caller named, else the scope's own.

        Raises :class:`Forbidden` when a named owner lies outside a scoped token's reach.
        ``agent_id`` stays ``None`` (the store's ``default``) for an unscoped caller.
        """
        agent = agent_id
        if agent is None and (self.write_agent is not None or self.policy != "all"):
            agent = self.agent_id
        proj = project if project is not None else self.project
        self.check_agent(agent)
        self.check_project(proj)
        return agent, proj

    def check_agent(self, agent_id: str | None) -> None:
        if self.write_agent is not None and (agent_id or "default") != self.write_agent:
            raise Forbidden(
                f"the token's scope does not cover agent '{agent_id or 'default'}'", reason="scope_mismatch"
            )

    def check_project(self, project: str | None) -> None:
        if self.project is not None and project != self.project:
            raise Forbidden(f"the token's scope does not cover project '{project}'", reason="scope_mismatch")

    def writable(self) -> ReadScope:
        """The rows this caller may change: its readable rows narrowed to its own agent when
        the token is agent-scoped (reading another agent's global memory is not owning it)."""
        if self.write_agent is None:
            return self
        return ReadScope(
            agent_id=self.write_agent, policy="isolated", project=self.project, write_agent=self.write_agent
        )

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
