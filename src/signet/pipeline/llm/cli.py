"""The LLMs a user already has: the harness CLIs as providers.

``claude-code`` runs ``claude -p --output-format json`` (one JSON result object), ``codex``
runs ``codex exec --json -`` (JSONL events; the answer is the last ``agent_message`` item) and
``opencode`` runs ``opencode run --format json`` (JSONL events; the answer is the text parts of
the last message). Each is a subprocess with no shell: the argv is a list, and the prompt
goes in on stdin, so nothing in a prompt (a memory's text, a transcript) is ever parsed as a
flag or a shell word. A call that overruns its timeout has its whole process group killed.

The subprocess runs in a private empty directory (no project instructions, settings or hooks
of whatever folder the daemon started in are loaded), without session persistence where the
CLI offers it (``--no-session-persistence``, ``--ephemeral``: a memory pipeline's calls are not
sessions to resume or to capture), and with ``SIGNET_LLM_CALL=1`` in its environment, which
makes ``signet hook`` a no-op: the harness's own Signet hooks must not turn an extraction
call into a new session to extract from.

A missing executable is :class:`LlmUnavailable` (jobs wait for it); a non-zero exit, an error
result or output that is not the documented format is :class:`LlmError` naming what came back.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

from signet.config import ExtractionSettings
from signet.pipeline.llm.base import LlmError, LlmTimeout, LlmUnavailable, Usage

MAX_OUTPUT = 16 * 1024 * 1024
"""Output past this is not an answer to a memory prompt: the call fails instead of parsing it."""
NO_HOOKS_ENV = "SIGNET_LLM_CALL"


def _tail(text: str, n: int = 300) -> str:
    text = text.strip()
    return text if len(text) <= n else "…" + text[-n:]


class CliProvider(ABC):
    """One harness CLI run per call. Subclasses give the argv and parse the output."""

    name = "cli"
    binary = ""
    default_model = ""
    """Empty: the CLI's own configured model (no ``--model`` flag is passed)."""
    install_hint = ""

    def __init__(self, settings: ExtractionSettings) -> None:
        self.settings = settings
        self.model = settings.model or self.default_model
        self.command = settings.command or self.binary
        self._cwd: str | None = None

    @classmethod
    def from_settings(cls, settings: ExtractionSettings) -> CliProvider:
        return cls(settings)

    # -- what subclasses say -----------------------------------------------------------------
    @abstractmethod
    def argv(self, exe: str, system: str | None) -> list[str]:
        """The command line that runs ``exe`` for one call (with ``system`` when it has a flag)."""

    def stdin(self, prompt: str, system: str | None) -> str:
        """What goes in on stdin: the prompt, after the system text when the CLI has no flag for it."""
        return f"{system}\n\n{prompt}" if system else prompt

    @abstractmethod
    def parse(self, out: str) -> tuple[str, Usage | None]:
        """The answer and its token usage (when the CLI reports it) from the CLI's stdout."""

    # -- the call ----------------------------------------------------------------------------
    def executable(self) -> str:
        found = shutil.which(self.command)
        if found is None:
            raise LlmUnavailable(
                f"{self.name}: `{self.command}` was not found on the daemon's PATH; {self.install_hint} or set "
                "memory.pipelineV2.extraction.command to its absolute path"
            )
        return found

    def workdir(self) -> str:
        if self._cwd is None or not Path(self._cwd).is_dir():
            self._cwd = tempfile.mkdtemp(prefix="signet-llm-")
        return self._cwd

    def complete_with_usage(
        self, prompt: str, *, system: str | None = None, timeout: float | None = None
    ) -> tuple[str, Usage | None]:
        exe = self.executable()
        limit = timeout if timeout is not None else self.settings.timeout
        env = {**os.environ, NO_HOOKS_ENV: "1"}
        try:
            proc = subprocess.Popen(
                self.argv(exe, system),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=self.workdir(),
                env=env,
                start_new_session=True,  # its own process group: a timeout kills what it started too
                text=True,
                encoding="utf-8",
                errors="replace",
            )
        except OSError as exc:
            raise LlmUnavailable(f"{self.name}: could not run {exe}: {exc.strerror or exc}") from None
        try:
            out, err = proc.communicate(self.stdin(prompt, system), timeout=limit)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            proc.communicate()
            raise LlmTimeout(f"{self.name} did not answer within {limit:g}s (killed)") from None
        if proc.returncode != 0:
            said = _tail(err) or _tail(out) or "no output"
            raise LlmError(f"{self.name} exited with status {proc.returncode}: {said}")
        if len(out) > MAX_OUTPUT:
            raise LlmError(f"{self.name} printed {len(out):,} characters, more than an answer can be")
        return self.parse(out)

    def complete(self, prompt: str, *, system: str | None = None, timeout: float | None = None) -> str:
        return self.complete_with_usage(prompt, system=system, timeout=timeout)[0]

    def health(self) -> tuple[bool, str | None]:
        """Installed or not: a lookup on PATH, never a generation (a probe call would cost money)."""
        try:
            self.executable()
        except LlmUnavailable as exc:
            return False, exc.message
        return True, None

    def close(self) -> None:
        if self._cwd is not None:
            shutil.rmtree(self._cwd, ignore_errors=True)
            self._cwd = None


def _kill_group(proc: subprocess.Popen[str]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def _json_lines(out: str, name: str) -> list[dict[str, Any]]:
    """The JSON objects of a JSONL stream; lines that are not JSON objects are skipped (a CLI
    may print a notice), but a stream with none at all is malformed."""
    events = []
    for line in out.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            events.append(obj)
    if not events:
        raise LlmError(f"{name}: expected JSON lines, got {_tail(out, 200)!r}")
    return events


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


class ClaudeCodeProvider(CliProvider):
    """``claude -p --output-format json``: one result object (``type: result``, ``subtype``,
    ``is_error``, ``result``, ``usage``)."""

    name = "claude-code"
    binary = "claude"
    install_hint = "install Claude Code (npm install -g @anthropic-ai/claude-code) and log in"

    def argv(self, exe: str, system: str | None) -> list[str]:
        argv = [exe, "-p", "--output-format", "json", "--max-turns", "1", "--no-session-persistence"]
        if self.model:
            argv += ["--model", self.model]
        if system:
            argv += ["--system-prompt", system]
        return argv

    def stdin(self, prompt: str, system: str | None) -> str:
        return prompt  # the system text goes in --system-prompt

    def parse(self, out: str) -> tuple[str, Usage | None]:
        try:
            data = json.loads(out)
        except ValueError:
            raise LlmError(f"claude-code: not the JSON of --output-format json: {_tail(out, 200)!r}") from None
        if isinstance(data, list):  # --verbose prints every message; the result is the last
            data = next((m for m in reversed(data) if isinstance(m, dict) and m.get("type") == "result"), None)
        if not isinstance(data, dict) or data.get("type") != "result":
            raise LlmError(f"claude-code: no result object in its output: {_tail(out, 200)!r}")
        text = data.get("result")
        if data.get("is_error") or data.get("subtype") != "success":
            raise LlmError(f"claude-code: {data.get('subtype') or 'error'}: {_tail(str(text or ''), 300)}")
        if not isinstance(text, str):
            raise LlmError("claude-code: the result object has no text")
        usage = data.get("usage")
        tokens = None
        if isinstance(usage, dict):
            tokens = Usage(
                _int(usage.get("input_tokens"))
                + _int(usage.get("cache_creation_input_tokens"))
                + _int(usage.get("cache_read_input_tokens")),
                _int(usage.get("output_tokens")),
            )
        return text, tokens


class CodexProvider(CliProvider):
    """``codex exec --json -``: JSONL events; the answer is the last completed ``agent_message``
    item, the usage is ``turn.completed``'s, ``turn.failed`` / ``error`` are failures."""

    name = "codex"
    binary = "codex"
    install_hint = "install Codex (npm install -g @openai/codex) and log in"

    def argv(self, exe: str, system: str | None) -> list[str]:
        argv = [exe, "exec", "--json", "--skip-git-repo-check", "--ephemeral", "--sandbox", "read-only"]
        if self.model:
            argv += ["--model", self.model]
        return [*argv, "-"]  # "-": the prompt is read from stdin

    def parse(self, out: str) -> tuple[str, Usage | None]:
        text: str | None = None
        usage: Usage | None = None
        for ev in _json_lines(out, "codex"):
            kind = ev.get("type")
            if kind == "item.completed":
                item = ev.get("item")
                if isinstance(item, dict) and item.get("type") == "agent_message" and isinstance(item.get("text"), str):
                    text = item["text"]
            elif kind == "turn.completed" and isinstance(ev.get("usage"), dict):
                u = ev["usage"]
                usage = Usage(_int(u.get("input_tokens")), _int(u.get("output_tokens")))
            elif kind in ("turn.failed", "error"):
                err = ev.get("error") if kind == "turn.failed" else ev
                msg = err.get("message") if isinstance(err, dict) else None
                raise LlmError(f"codex: {kind}: {msg or 'no message'}")
        if text is None:
            raise LlmError("codex: the event stream has no agent_message item")
        return text, usage


class OpenCodeProvider(CliProvider):
    """``opencode run --format json``: JSONL events; the answer is the ``text`` parts of the
    last message, the usage is the ``step_finish`` parts' tokens, ``error`` is a failure."""

    name = "opencode"
    binary = "opencode"
    install_hint = "install OpenCode (npm install -g opencode-ai) and configure a model"

    def argv(self, exe: str, system: str | None) -> list[str]:
        argv = [exe, "run", "--format", "json"]
        if self.model:
            argv += ["--model", self.model]  # provider/model
        return argv

    def parse(self, out: str) -> tuple[str, Usage | None]:
        texts: dict[str, list[str]] = {}
        last: str | None = None
        tokens_in = tokens_out = 0
        seen_usage = False
        for ev in _json_lines(out, "opencode"):
            kind = ev.get("type")
            raw = ev.get("part")
            part: dict[str, Any] = raw if isinstance(raw, dict) else {}
            if kind == "text" and isinstance(part.get("text"), str):
                mid = str(part.get("messageID") or "")
                texts.setdefault(mid, []).append(part["text"])
                last = mid
            elif kind == "step_finish" and isinstance(part.get("tokens"), dict):
                t = part["tokens"]
                tokens_in += _int(t.get("input"))
                tokens_out += _int(t.get("output")) + _int(t.get("reasoning"))
                seen_usage = True
            elif kind == "error":
                err = ev.get("error")
                data = err.get("data") if isinstance(err, dict) else None
                msg = (data.get("message") if isinstance(data, dict) else None) or (
                    err.get("name") if isinstance(err, dict) else None
                )
                raise LlmError(f"opencode: error: {msg or 'no message'}")
        if last is None:
            raise LlmError("opencode: the event stream has no text part")
        return "".join(texts[last]), Usage(tokens_in, tokens_out) if seen_usage else None
