"""A workspace whose knowledge graph is built the real way: the pipeline against the fake LLM
server, which answers extraction and knowledge prompts from a table of claims (a keyword in the
memory's text -> the entity, aspect, key, value and confidence the model "finds")."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from signet.daemon.app import create_app
from signet.runtime import Runtime
from signet.workspace import Workspace, setup_workspace
from tests.conftest import TEST_STORAGE, pg_storage_section, start_runtime, write_config
from tests.pipeline.conftest import pipeline_config, wait_idle
from tests.pipeline.fake_llm import FakeLLM, as_json

ClaimTable = Mapping[str, tuple[str, str, str, str, float]]
Env = tuple[Workspace, Runtime, dict[str, str]]


def _claim(claims: ClaimTable, text: str) -> tuple[str, str, str, str, float] | None:
    return next((c for k, c in claims.items() if k in text), None)


def answer_from(fake: FakeLLM, claims: ClaimTable) -> None:
    """Make ``fake`` extract one fact and one attribute claim per memory naming a keyword of ``claims``."""

    def extract(text: str) -> str:
        claim = _claim(claims, text)
        if claim is None:
            return as_json({"facts": [], "entities": []})
        fact = {"content": f"{claim[0]} {claim[2]}: {claim[3]}.", "type": "fact", "confidence": 0.9}
        return as_json({"facts": [fact], "entities": []})

    def knowledge(text: str, known: list[str]) -> str:
        claim = _claim(claims, text)
        if claim is None:
            return as_json({"entities": []})
        entity, aspect, key, value, confidence = claim
        attr = {"key": key, "value": value, "kind": "state", "confidence": confidence}
        return as_json(
            {"entities": [{"name": entity, "type": "person", "aspects": [{"name": aspect, "attributes": [attr]}]}]}
        )

    fake.extract = extract
    fake.knowledge = knowledge


@contextmanager
def knowledge_env(claims: ClaimTable, memories: Mapping[str, dict[str, Any]], **config: Any) -> Iterator[Env]:
    """A running runtime (no embedder) whose pipeline read ``memories`` (key -> remember body, in
    order, each one's jobs finished before the next) with ``claims``; yields (workspace, runtime,
    key -> memory id). ``config``: more agent.yaml sections (auth, agents...)."""
    fake = FakeLLM().start()
    answer_from(fake, claims)
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace(Path(tmp) / "ws")
        setup_workspace(ws, agent_name="t", user_name="T", embedding_provider="none")
        write_config(ws, memory=pipeline_config(fake), **config)
        if TEST_STORAGE == "postgres":
            write_config(ws, storage=pg_storage_section())
        rt = start_runtime(ws)
        try:
            ids: dict[str, str] = {}
            with TestClient(create_app(rt, manage_runtime=False), base_url="http://127.0.0.1:3850") as c:
                for key, body in memories.items():
                    r = c.post("/api/memory/remember", json=body)
                    assert r.status_code == 200, r.text
                    ids[key] = r.json()["id"]
                    wait_idle(rt)
            yield ws, rt, ids
        finally:
            rt.stop()
            fake.stop()
