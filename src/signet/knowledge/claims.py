"""The structured knowledge one text yields: entities, their aspects and attribute claims.

Plain data shared by the builder that proposes it (signet.pipeline.knowledge, the LLM) and the
writer that stores it (signet.knowledge.attributes); kept here so neither imports the other's
package (the knowledge package sits below the pipeline in no particular order: they are siblings).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Claim:
    """One attribute: ``key`` = ``value``; ``kind`` ``state`` (replaced by a newer value of the
    same claim) or ``event`` (happened once, never replaced)."""

    key: str
    value: str
    kind: str
    confidence: float


@dataclass
class AspectFacts:
    name: str
    attributes: list[Claim] = field(default_factory=list)


@dataclass
class EntityFacts:
    name: str
    type: str
    aliases: list[str] = field(default_factory=list)
    aspects: list[AspectFacts] = field(default_factory=list)


@dataclass
class Knowledge:
    entities: list[EntityFacts] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def attributes(self) -> int:
        return sum(len(a.attributes) for e in self.entities for a in e.aspects)
