"""A tiny third-party Signet plugin, installed by tests/plugins/test_plugin_seam.py through a
``signet`` entry point: one embedder, one LLM provider, one harness, one transcript adapter.
Nothing in ``src/`` names it."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from signet.harnesses.base import Harness, InstallContext
from signet.harnesses.merge import Edit, OwnedFile
from signet.hookspecs import hookimpl
from signet.ingest.base import Transcript
from signet.transcript import Turn


class ToyEmbedder:
    """Bag of hashed words in 64 dimensions: deterministic, instant, and enough to rank."""

    provider = "toy"
    default_model = "toy-hash-64"

    def __init__(self, model: str) -> None:
        self.model = model

    @classmethod
    def from_settings(cls, settings: Any) -> ToyEmbedder:
        return cls(settings.model)

    @property
    def dimensions(self) -> int:
        return 64

    def load(self) -> None:
        return None

    def embed(self, texts: list[str]) -> Any:
        out = np.zeros((len(texts), 64), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                out[i, int(hashlib.md5(word.encode()).hexdigest(), 16) % 64] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return out / norms


class ToyLlm:
    name = "toyllm"
    default_model = "toy-1"

    @classmethod
    def from_settings(cls, settings: Any) -> ToyLlm:
        return cls()

    def complete(self, prompt: str, *, system: str | None = None, timeout: float | None = None) -> str:
        return json.dumps({"facts": [], "entities": []})

    def health(self) -> tuple[bool, str | None]:
        return True, None


class ToyHarness(Harness):
    name = "toyharness"
    display_name = "Toy"

    def edits(self, ctx: InstallContext) -> list[Edit]:
        return [
            OwnedFile(
                ctx.home / ".toy" / "signet.md", "owned", "toy rules", content="# signet toy\n", marker="signet toy"
            )
        ]


class ToyAdapter:
    """``*.toy`` files: one ``role: text`` turn per line."""

    name = "toytx"
    priority = 50

    def can_handle(self, path: Path, first_line: str | None) -> bool:
        return path.suffix == ".toy"

    def parse(self, path: Path) -> Transcript:
        turns = [Turn(*line.split(": ", 1)) for line in path.read_text().splitlines() if ": " in line]
        return Transcript(adapter="toytx", turns=turns, session_id=path.stem)


@hookimpl
def register_embedders(register: Callable[[str, Any], None]) -> None:
    register("toy", ToyEmbedder)


@hookimpl
def register_llm_providers(register: Callable[[str, Any], None]) -> None:
    register("toyllm", ToyLlm)


@hookimpl
def register_harnesses(register: Callable[[str, Any], None]) -> None:
    register("toyharness", ToyHarness())


@hookimpl
def register_transcript_adapters(register: Callable[[str, Any], None]) -> None:
    register("toytx", ToyAdapter())
