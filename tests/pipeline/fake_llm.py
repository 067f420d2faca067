"""A fake LLM server on 127.0.0.1 speaking the real wire protocols, with scripted replies.

- Ollama: ``POST /api/chat`` (non-streaming: ``{"message": {"role", "content"}, "done": true}``), ``GET /api/tags``
- OpenAI-compatible: ``POST /v1/chat/completions`` (``choices[0].message.content``), ``GET /v1/models``
- Anthropic: ``POST /v1/messages`` (``content: [{"type": "text", "text"}]``), ``GET /v1/models``

Every answer reports 100 input and 20 output tokens in its protocol's usage fields (the
budgets count them). Tests script the model with two callables: ``extract(text) -> Reply |
str`` for extraction prompts and ``decide(fact, candidates) -> Reply | str`` for decision prompts (candidates is a
list of (id, content) parsed from the prompt), and ``knowledge(text, known) -> Reply | str`` for the
knowledge builder's prompts (known: its "Known" lines; the default answers no entities), and
``hints(text)`` for the hints job's prompts (the default answers no questions). A :class:`Reply` can be slow (timeouts), an
HTTP error, or a raw body (malformed JSON). Every request is recorded.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    text: str = ""
    status: int = 200
    delay: float = 0.0
    raw: bytes | None = None


def as_json(obj: Any) -> str:
    return json.dumps(obj)


def parse_decision_prompt(prompt: str) -> tuple[str, list[tuple[str, str]]]:
    fact = prompt.split("New fact:\n", 1)[1].split("\n", 1)[0]
    block = prompt.split("Existing memories (id: content):\n", 1)[1].split("\n\nChoose exactly one action", 1)[0]
    cands = []
    for line in block.splitlines():
        m = re.match(r"^([0-9a-f-]{36}): (.*)$", line)
        if m:
            cands.append((m.group(1), m.group(2)))
    return re.sub(r"^\[\w+\] ", "", fact), cands


def parse_consolidation_prompt(prompt: str) -> list[tuple[str, str]]:
    """The (id, content) pairs a consolidation prompt lists."""
    block = prompt.split("oldest first:\n", 1)[1].split("\n\n", 1)[0]
    return [(m.group(1), m.group(2)) for m in re.finditer(r"^([0-9a-f-]{36}): (.*)$", block, re.MULTILINE)]


def parse_knowledge_prompt(prompt: str) -> tuple[str, list[str]]:
    """The text and the "Known" lines (``entity | aspect | key = value``) of a knowledge prompt."""
    block = prompt.split("current value):\n", 1)[1].split("\n\nText:\n", 1)[0]
    known = [line for line in block.splitlines() if line and line != "(none)"]
    return extraction_text(prompt), known


def extraction_text(prompt: str) -> str:
    return prompt.split("Text:\n<<<\n", 1)[1].rsplit("\n>>>", 1)[0]


class FakeLLM:
    def __init__(self, port: int = 0) -> None:
        self.requests: list[dict[str, Any]] = []
        self.extract: Callable[[str], Reply | str] = lambda text: as_json({"facts": [], "entities": []})
        self.decide: Callable[[str, list[tuple[str, str]]], Reply | str] = lambda fact, c: as_json(
            {"action": "none", "targetId": c[0][0], "confidence": 0.9, "reason": "covered"}
        )
        self.knowledge: Callable[[str, list[str]], Reply | str] = lambda text, known: as_json({"entities": []})
        self.hints: Callable[[str], Reply | str] = lambda text: as_json({"questions": []})
        self.summarize: Callable[[str], Reply | str] = lambda text: "- worked on things"
        self.synthesize: Callable[[str], Reply | str] = lambda text: "## Now\n- working memory from the fake model"
        self.consolidate: Callable[[list[tuple[str, str]]], Reply | str] = lambda mems: as_json(
            {"merge": False, "content": "", "reason": "different things"}
        )
        self.lock = threading.Lock()
        self._port = port
        self.server: ThreadingHTTPServer | None = None

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> FakeLLM:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body in separate writes: no 40 ms delayed-ACK stall
            wbufsize = 1 << 16

            def log_message(self, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                if self.path == "/api/tags":
                    self._send(200, json.dumps({"models": [{"name": "qwen3:4b"}]}).encode())
                elif self.path == "/v1/models":
                    self._send(200, json.dumps({"object": "list", "data": [{"id": "fake"}]}).encode())
                else:
                    self._send(404, b'{"error": "not found"}')

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                if self.path == "/api/chat":
                    proto = "ollama"
                    prompt = body["messages"][-1]["content"]
                elif self.path == "/v1/chat/completions":
                    proto = "openai"
                    prompt = body["messages"][-1]["content"]
                elif self.path == "/v1/messages":
                    proto = "anthropic"
                    if self.headers.get("x-api-key") != "test-key" or not self.headers.get("anthropic-version"):
                        self._send(401, b'{"type": "error", "error": {"type": "authentication_error"}}')
                        return
                    prompt = body["messages"][-1]["content"]
                else:
                    self._send(404, b'{"error": "not found"}')
                    return
                with outer.lock:
                    outer.requests.append(
                        {"protocol": proto, "path": self.path, "body": body, "headers": dict(self.headers)}
                    )
                reply = outer.answer(prompt)
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.raw is not None:
                    self._send(reply.status, reply.raw)
                    return
                if reply.status != 200:
                    self._send(reply.status, json.dumps({"error": "scripted failure"}).encode())
                    return
                self._send(200, json.dumps(outer.envelope(proto, body.get("model", "m"), reply.text)).encode())

            def _send(self, code: int, data: bytes) -> None:
                try:
                    self.send_response(code)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                    return

        self.server = ThreadingHTTPServer(("127.0.0.1", self._port), Handler)
        self.server.daemon_threads = True
        self._port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        """Take the server down: connections are refused until :meth:`start` again."""
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    @property
    def port(self) -> int:
        return self._port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    # -- behaviour ------------------------------------------------------------------------
    def answer(self, prompt: str) -> Reply:
        if "You build a knowledge graph" in prompt:
            text, known = parse_knowledge_prompt(prompt)
            out = self.knowledge(text, known)
        elif "You write the questions a memory would answer" in prompt:
            out = self.hints(extraction_text(prompt))
        elif "You extract durable knowledge" in prompt:
            out = self.extract(extraction_text(prompt))
        elif "You maintain a memory store" in prompt:
            fact, cands = parse_decision_prompt(prompt)
            out = self.decide(fact, cands)
        elif "Summarize this coding-agent session" in prompt:
            out = self.summarize(prompt)
        elif "Write the working memory of an AI coding agent" in prompt:
            out = self.synthesize(prompt)
        elif "You consolidate memories" in prompt:
            out = self.consolidate(parse_consolidation_prompt(prompt))
        else:
            out = Reply(status=400)
        return out if isinstance(out, Reply) else Reply(text=out)

    @staticmethod
    def envelope(proto: str, model: str, text: str) -> dict[str, Any]:
        if proto == "ollama":
            return {
                "model": model,
                "created_at": "2026-11-22T00:00:00Z",
                "message": {"role": "assistant", "content": text},
                "done": True,
                "done_reason": "stop",
                "prompt_eval_count": 100,
                "eval_count": 20,
            }
        if proto == "openai":
            return {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
            }
        return {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 100, "output_tokens": 20},
        }

    def calls(self, kind: str) -> int:
        marker = {
            "extract": "You extract durable knowledge",
            "decide": "You maintain a memory store",
            "knowledge": "You build a knowledge graph",
        }[kind]
        with self.lock:
            return sum(1 for r in self.requests if marker in str(r["body"]))
