"""Fixtures for the document tests: the local web site, and workspaces whose documents
settings let the worker fetch from it (loopback allowed, short timeouts, small limits)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from signet.runtime import Runtime
from signet.workspace import Workspace
from tests.documents.site import Site

FINAL = ("done", "failed")


@pytest.fixture
def site() -> Iterator[Site]:
    s = Site().start()
    yield s
    s.stop()


@pytest.fixture
def files(tmp_path: Path) -> Path:
    """The one folder the test workspaces allow documents to be read from."""
    d = tmp_path / "allowed"
    d.mkdir()
    return d


def doc_settings(files: Path, **overrides: Any) -> dict[str, Any]:
    return {
        "allow_private_networks": True,
        "fetch_timeout_s": 1.0,
        "max_bytes": 200_000,
        "max_redirects": 3,
        "allowed_paths": [str(files)],
        "poll_interval_ms": 50,
        **overrides,
    }


@pytest.fixture
def docs_app(
    make_workspace: Callable[..., Workspace],
    open_app: Callable[[Workspace], tuple[Runtime, TestClient]],
    files: Path,
) -> Callable[..., tuple[Runtime, TestClient]]:
    """``docs_app(embedding="none", **documents settings)``: a runtime and client that may fetch
    from 127.0.0.1; jobs get two attempts."""

    def make(embedding: str = "none", **overrides: Any) -> tuple[Runtime, TestClient]:
        ws = make_workspace(
            embedding,
            documents=doc_settings(files, **overrides),
            memory={"pipelineV2": {"maxAttempts": 2, "documentChunkSize": 400, "documentChunkOverlap": 80}},
        )
        return open_app(ws)

    return make


def wait_final(api: TestClient, doc_id: str, timeout: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        doc: dict[str, Any] = api.get(f"/api/documents/{doc_id}").json()
        if doc["status"] in FINAL:
            return doc
        assert time.monotonic() < deadline, f"document still {doc['status']} after {timeout}s: {doc}"
        time.sleep(0.05)


def add(api: TestClient, **body: Any) -> dict[str, Any]:
    r = api.post("/api/documents", json=body)
    assert r.status_code == 202, r.text
    out: dict[str, Any] = r.json()
    return out


def ingest(api: TestClient, **body: Any) -> dict[str, Any]:
    """Add a document and wait until it is done or failed."""
    return wait_final(api, add(api, **body)["document"]["id"])


def job_of(rt: Runtime, doc_id: str) -> Any:
    return rt.db.read(
        lambda c: c.execute(
            "SELECT * FROM memory_jobs WHERE document_id = ? ORDER BY created_at DESC, rowid DESC LIMIT 1", (doc_id,)
        ).fetchone()
    )
