"""A connector is a plugin: a package registering a source through ``register_connectors`` gets
the same sync, cursor, documents and chunks as the built-in filesystem connector."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import pytest
from fastapi.testclient import TestClient
from pydantic import BaseModel, ConfigDict

from signet import plugins
from signet.config import DocumentsSettings
from signet.documents.errors import DocumentFailed
from signet.documents.source import Listing, SourceItem
from signet.hookspecs import hookimpl
from signet.runtime import Runtime
from tests.documents.test_connectors import settle

App = Callable[..., tuple[Runtime, TestClient]]

SHELF: dict[str, dict[str, str]] = {}
"""The plugin's "remote" store: shelf name -> {note key: markdown}."""


class ShelfConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    shelf: str


class ShelfSource:
    """Notes kept in :data:`SHELF`, fingerprinted by their text's length and first word."""

    config_model: ClassVar[type[BaseModel]] = ShelfConfig

    def __init__(self, config: BaseModel, settings: DocumentsSettings) -> None:
        assert isinstance(config, ShelfConfig)
        self.shelf = config.shelf

    def prepare(self) -> dict[str, Any]:
        if self.shelf not in SHELF:
            raise DocumentFailed(f"no shelf named {self.shelf!r}")
        return {"shelf": self.shelf}

    def scan(self) -> Listing:
        notes = SHELF.get(self.shelf)
        if notes is None:
            raise DocumentFailed(f"shelf {self.shelf!r} is gone")
        return Listing(items=[SourceItem(f"shelf://{self.shelf}/{k}", str(hash(v)), "text") for k, v in notes.items()])

    def read(self, key: str) -> bytes:
        note = SHELF.get(self.shelf, {}).get(key.rsplit("/", 1)[1])
        if note is None:
            raise DocumentFailed(f"{key} is gone")
        return note.encode()


class ShelfPlugin:
    @hookimpl
    def register_connectors(self, register: Callable[[str, Any], None]) -> None:
        register("shelf", ShelfSource)


@pytest.fixture
def shelf_plugin() -> Iterator[None]:
    pm = plugins.plugin_manager()
    plugin = ShelfPlugin()
    pm.register(plugin, name="test-shelf")
    SHELF.clear()
    try:
        yield
    finally:
        pm.unregister(plugin)
        SHELF.clear()


def test_a_plugin_connector_syncs_like_the_builtin(docs_app: App, shelf_plugin: None) -> None:
    rt, api = docs_app()
    SHELF["team"] = {"a.md": "# Alpha\n\nAlpha ships on Mondays.\n", "b.md": "# Beta\n\nBeta ships on Fridays.\n"}
    unknown = api.post("/api/connectors", json={"provider": "nope", "config": {}})
    assert unknown.status_code == 400
    assert unknown.json()["error"].startswith("unknown connector provider 'nope' (installed: filesystem, shelf")
    bad = api.post("/api/connectors", json={"provider": "shelf", "config": {"shelf": "team", "x": 1}})
    assert bad.status_code == 400 and bad.json()["error"].startswith("config.x: Extra inputs are not permitted")
    made = api.post("/api/connectors", json={"provider": "shelf", "name": "Team shelf", "config": {"shelf": "team"}})
    assert made.status_code == 201, made.text
    cid = made.json()["id"]
    first = api.post(f"/api/connectors/{cid}/sync").json()
    assert (first["scanned"], first["queued"]) == (2, 2)
    assert settle(api, cid)["documents"] == {"done": 2, "total": 2}
    docs = api.get("/api/documents").json()["items"]
    assert sorted((d["title"], d["source_type"], d["source_url"]) for d in docs) == [
        ("Alpha", "text", "shelf://team/a.md"),
        ("Beta", "text", "shelf://team/b.md"),
    ]
    SHELF["team"]["b.md"] = "# Beta\n\nBeta ships on Thursdays now.\n"
    del SHELF["team"]["a.md"]
    second = api.post(f"/api/connectors/{cid}/sync").json()
    assert (second["queued"], second["deleted"], second["unchanged"]) == (1, 1, 0)
    settle(api, cid)
    contents = [
        r[0] for r in rt.db.read(lambda c: c.execute("SELECT content FROM memories WHERE type = 'document_chunk'"))
    ]
    assert contents == ["Beta: Beta ships on Thursdays now."]
    del SHELF["team"]
    gone = api.post(f"/api/connectors/{cid}/sync")
    assert gone.status_code == 409 and gone.json()["error"] == "sync failed: shelf 'team' is gone"
    cursor = rt.db.read(lambda c: c.execute("SELECT cursor_json FROM connectors WHERE id = ?", (cid,)).fetchone()[0])
    assert list(json.loads(cursor)) == ["shelf://team/b.md"]
