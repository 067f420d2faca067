"""The LLM hints job: a model writes the questions a memory would answer (spec 001, hints worker).

With ``memory.pipelineV2.hints.enabled`` (and ``hints.llm``) and an LLM provider, every
remembered memory the pipeline extracts also gets a ``hints`` job (signet.pipeline.runtime),
leased by the same workers as extraction, parked the same way while no provider answers, and
retried by the queue's rules. The model is asked for up to ``hints.max`` questions (prompt
``prompts/hints.txt``, purpose ``hints`` in ``llm_calls``).

Parsing is **strict**: the answer must be a JSON object whose ``questions`` is a list of
non-empty strings of at most :data:`MAX_QUESTION` characters. Anything else (no JSON, a
question that is not a string, one too long) raises :class:`HintsError`, an :class:`LlmError`:
the attempt fails before anything is written and the queue retries it, then marks it dead after
``maxAttempts``. Questions past ``max`` are dropped. The answer replaces the LLM hints the
memory had (a retried job writes once); its template hints stay (signet.knowledge.hints).
"""

from __future__ import annotations

from typing import Any

from signet.knowledge import hints as stored_hints
from signet.pipeline.extraction import cap_input, parse_json_object, render
from signet.pipeline.llm.base import LlmError, RecordingLlm
from signet.store.sqlite import Connection

MAX_QUESTION = stored_hints.MAX_HINT
MAX_INPUT = 4000
"""Characters of the memory the prompt carries (the questions are about its gist)."""


class HintsError(LlmError):
    """The model's hints answer is malformed: the job fails and is retried, nothing is written."""


def hints_prompt(text: str, limit: int) -> str:
    return render("hints", text=cap_input(text, MAX_INPUT), max=str(limit))


def parse_hints(raw: str, limit: int) -> list[str]:
    """The questions of a model answer, at most ``limit``, each once (:class:`HintsError` when
    the answer is not exactly what the prompt asked for)."""
    try:
        data = parse_json_object(raw)
    except ValueError as exc:
        raise HintsError(f"hints answer rejected: {exc}") from None
    questions: Any = data.get("questions")
    if not isinstance(questions, list):
        raise HintsError("hints answer rejected: 'questions' must be a list")
    out: list[str] = []
    for i, q in enumerate(questions):
        if not isinstance(q, str):
            raise HintsError(f"hints answer rejected: question {i} is not a string")
        text = " ".join(q.split())
        if not text:
            raise HintsError(f"hints answer rejected: question {i} is empty")
        if len(text) > MAX_QUESTION:
            raise HintsError(f"hints answer rejected: question {i} is longer than {MAX_QUESTION} characters")
        if text not in out:
            out.append(text)
    return out[:limit]


def generate(llm: RecordingLlm, text: str, limit: int, job_id: str) -> list[str]:
    """Ask the model (no transaction open) and parse its answer strictly."""
    return parse_hints(llm.complete(hints_prompt(text, limit), purpose="hints", job_id=job_id), limit)


def memory_text(conn: Connection, memory_id: str) -> str | None:
    """The live memory's text; None when it is gone or forgotten (the job then has nothing to do)."""
    row = conn.execute("SELECT content FROM memories WHERE id = ? AND is_deleted = 0", (memory_id,)).fetchone()
    return None if row is None else str(row[0])


def result(written: int, questions: list[str]) -> dict[str, Any]:
    """The job's stored result: how many hints were written, and which."""
    return {"hints": written, "questions": list(questions)}
