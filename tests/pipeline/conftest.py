"""Pipeline fixtures: a fake LLM server and runtimes whose pipeline points at it."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from signet.runtime import Runtime
from signet.workspace import Workspace
from tests.pipeline.fake_llm import FakeLLM


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    f = FakeLLM().start()
    yield f
    f.stop()


def pipeline_config(fake: FakeLLM, provider: str = "ollama", **flags: Any) -> dict[str, Any]:
    endpoint = {"ollama": fake.url, "openai": fake.url + "/v1", "anthropic": fake.url}.get(provider, fake.url)
    extraction = {
        "provider": provider,
        "model": "qwen3:4b" if provider == "ollama" else "fake-model",
        "endpoint": endpoint,
        "timeout": 5,
        "api_key": "test-key" if provider == "anthropic" else None,
    }
    extraction.update(flags.pop("extraction", {}))
    return {
        "pipelineV2": {
            "pollIntervalMs": 50,
            "backoffBaseMs": 50,
            "backoffMaxMs": 400,
            "reaperIntervalMs": 500,
            "extraction": extraction,
            **flags,
        }
    }


@pytest.fixture
def pipeline_rt(
    make_workspace: Callable[..., Workspace],
    fake_llm: FakeLLM,
    open_app: Callable[[Workspace], tuple[Runtime, TestClient]],
) -> Callable[..., tuple[Runtime, TestClient]]:
    """Factory: ``pipeline_rt(provider="ollama", embedding="local", shadowMode=True, …)``."""

    def make(provider: str = "ollama", embedding: str = "local", **flags: Any) -> tuple[Runtime, TestClient]:
        return open_app(make_workspace(embedding=embedding, memory=pipeline_config(fake_llm, provider, **flags)))

    return make


def wait_idle(rt: Runtime, timeout: float = 20.0) -> dict[str, int]:
    """Wait until no job is pending or leased; returns the counts by status."""
    deadline = time.monotonic() + timeout
    while True:
        counts = dict(
            rt.db.read(lambda c: c.execute("SELECT status, COUNT(*) FROM memory_jobs GROUP BY status").fetchall())
        )
        if not counts.get("pending") and not counts.get("leased"):
            rt.db.write(lambda c: None)  # flush fire-and-forget writes (call outcomes)
            return counts
        if time.monotonic() > deadline:
            raise AssertionError(f"jobs still open after {timeout}s: {counts}")
        time.sleep(0.05)


def rows(rt: Runtime, sql: str, *params: Any) -> list[Any]:
    return rt.db.read(lambda c: c.execute(sql, params).fetchall())
