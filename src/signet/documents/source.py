"""What a connector provider is: a plugin (``register_connectors``) whose source lists items
and reads them.

A source is built from its validated config and the documents settings. ``prepare`` checks
the config when a connector is registered (and returns it normalized, e.g. a folder's real
path); ``scan`` lists the items with a cheap *fingerprint* each (a folder: mtime and size), so a
sync reads only what changed; ``read`` returns one item's bytes, for the sync's content hash and
for the document worker. Refusals are :class:`~signet.documents.errors.DocumentFailed` with a
readable reason. The sync itself (cursor, queueing, deletions) is the same for every source
(signet.documents.connectors).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol

from pydantic import BaseModel, ValidationError

from signet import plugins
from signet.config import DocumentsSettings
from signet.documents.errors import DocumentFailed

MAX_SKIPPED = 50
"""Skipped items named in a sync's answer (the count is exact)."""


@dataclass(frozen=True)
class SourceItem:
    key: str
    """Unique within the connector; stored as the document's ``source_url``."""
    fingerprint: str
    """Changes whenever the content may have changed (a folder: mtime and size)."""
    source_type: Literal["url", "file", "text"] = "file"


@dataclass
class Listing:
    items: list[SourceItem] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    skipped_count: int = 0

    def skip(self, reason: str) -> None:
        self.skipped_count += 1
        if len(self.skipped) < MAX_SKIPPED:
            self.skipped.append(reason)


class ConnectorSource(Protocol):
    config_model: ClassVar[type[BaseModel]]

    def prepare(self) -> dict[str, Any]:
        """The config as stored, checked and normalized; :class:`DocumentFailed` to refuse it."""
        ...

    def scan(self) -> Listing:
        """Every item the source holds now; :class:`DocumentFailed` when it cannot be listed."""
        ...

    def read(self, key: str) -> bytes:
        """One item's bytes; :class:`DocumentFailed` when it is gone or may not be read."""
        ...


def providers() -> list[str]:
    return sorted(plugins.connectors())


def source_for(provider: str, config: dict[str, Any], settings: DocumentsSettings) -> ConnectorSource:
    """The source of a connector; :class:`DocumentFailed` for an unknown provider or a bad config."""
    found = plugins.connectors()
    if provider not in found:
        raise DocumentFailed(f"unknown connector provider {provider!r} (installed: {', '.join(sorted(found))})")
    cls = plugins.resolve(found[provider])
    try:
        parsed = cls.config_model.model_validate(config)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "config"
        raise DocumentFailed(f"config.{where}: {first['msg']}") from None
    source: ConnectorSource = cls(parsed, settings)
    return source


def config_key(config: dict[str, Any]) -> str:
    """A stable text of a normalized config: two connectors of one owner may not share it."""
    return json.dumps(config, sort_keys=True)
