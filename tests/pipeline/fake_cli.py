"""Fake harness CLIs (``claude``, ``codex``, ``opencode``) that a test writes into a folder it
puts on PATH. Each is a small Python program printing what the real CLI prints:

- ``claude -p --output-format json``: one result object (``type``, ``subtype``, ``is_error``,
  ``result``, ``session_id``, ``total_cost_usd``, ``usage``);
- ``codex exec --json -``: JSONL events ``thread.started``, ``turn.started``,
  ``item.completed`` (an ``agent_message`` item), ``turn.completed`` (with ``usage``);
- ``opencode run --format json``: JSONL events ``step_start``, ``text`` (a text part),
  ``step_finish`` (with ``tokens``).

The test steers it through files beside it: ``<name>.mode`` (``ok``, ``garbage``, ``exit``,
``slow``, ``error``; default ``ok``) and ``<name>.answer`` (the model's text; default an empty
extraction). Every run appends one JSON line to ``<name>.log``: its argv, its stdin, its
working directory and whether ``SIGNET_LLM_CALL`` was set, so a test can check that the prompt
went in on stdin and never on the command line. ``slow`` starts a child that sleeps too and
writes its pid to ``<name>.child``: a timeout must kill the whole process group.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

PROGRAM = r"""
import json, os, subprocess, sys, time
from pathlib import Path

NAME = __NAME__
here = Path(__file__).resolve().parent
prompt = sys.stdin.read()
with open(here / f"{NAME}.log", "a", encoding="utf-8") as fh:
    fh.write(json.dumps({"argv": sys.argv[1:], "stdin": prompt, "cwd": os.getcwd(),
                         "no_hooks": os.environ.get("SIGNET_LLM_CALL")}) + "\n")
mode_file, answer_file = here / f"{NAME}.mode", here / f"{NAME}.answer"
mode = mode_file.read_text().strip() if mode_file.exists() else "ok"
answer = answer_file.read_text() if answer_file.exists() else json.dumps({"facts": [], "entities": []})

if mode == "garbage":
    print("Welcome! <html>this is not what you asked for</html>")
    sys.exit(0)
if mode == "exit":
    sys.stderr.write("Error: not logged in. Run `%s login`.\n" % NAME)
    sys.exit(3)
if mode == "slow":
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    (here / f"{NAME}.child").write_text(str(child.pid))
    time.sleep(60)

def line(obj):
    print(json.dumps(obj), flush=True)

if NAME == "claude":
    if mode == "error":
        line({"type": "result", "subtype": "success", "is_error": True, "duration_ms": 120, "num_turns": 1,
              "result": "Credit balance is too low", "session_id": "3f1c", "total_cost_usd": 0})
    else:
        print(json.dumps({"type": "result", "subtype": "success", "is_error": False, "duration_ms": 2150,
                          "duration_api_ms": 2010, "num_turns": 1, "result": answer,
                          "session_id": "8a4e2f1c-2b7d-4f7e-9c1a-0d6b7e5f3a21", "total_cost_usd": 0.0042,
                          "usage": {"input_tokens": 900, "cache_creation_input_tokens": 0,
                                    "cache_read_input_tokens": 100, "output_tokens": 50,
                                    "service_tier": "standard"}}, indent=2))
elif NAME == "codex":
    line({"type": "thread.started", "thread_id": "0199a213-81c0-7800-8aa1-bbab2a035a53"})
    line({"type": "turn.started"})
    if mode == "error":
        line({"type": "turn.failed", "error": {"message": "stream disconnected before completion"}})
        sys.exit(1 if os.environ.get("FAKE_CODEX_EXIT") else 0)
    line({"type": "item.completed", "item": {"id": "item_0", "type": "reasoning", "text": "**Thinking**"}})
    line({"type": "item.completed", "item": {"id": "item_1", "type": "agent_message", "text": answer}})
    line({"type": "turn.completed", "usage": {"input_tokens": 700, "cached_input_tokens": 200, "output_tokens": 40}})
else:
    sid = "ses_494719016ffe85dkDMj0FPRbHK"
    ts = int(time.time() * 1000)
    line({"type": "step_start", "timestamp": ts, "sessionID": sid,
          "part": {"id": "prt_1", "sessionID": sid, "messageID": "msg_1", "type": "step-start"}})
    if mode == "error":
        line({"type": "error", "timestamp": ts, "sessionID": sid,
              "error": {"name": "ProviderAuthError", "data": {"message": "no API key for provider"}}})
        sys.exit(0)
    line({"type": "text", "timestamp": ts, "sessionID": sid,
          "part": {"id": "prt_2", "sessionID": sid, "messageID": "msg_1", "type": "text", "text": answer,
                   "time": {"start": ts, "end": ts}}})
    line({"type": "step_finish", "timestamp": ts, "sessionID": sid,
          "part": {"id": "prt_3", "sessionID": sid, "messageID": "msg_1", "type": "step-finish", "reason": "stop",
                   "cost": 0, "tokens": {"input": 600, "output": 30, "reasoning": 10,
                                         "cache": {"read": 0, "write": 0}}}})
"""


class FakeCli:
    """One fake executable named ``name`` in ``folder``."""

    def __init__(self, folder: Path, name: str) -> None:
        self.folder = folder
        self.name = name
        self.path = folder / name
        folder.mkdir(parents=True, exist_ok=True)
        self.path.write_text(f"#!{sys.executable}\n" + PROGRAM.replace("__NAME__", repr(name)), encoding="utf-8")
        self.path.chmod(0o755)

    def mode(self, mode: str) -> None:
        (self.folder / f"{self.name}.mode").write_text(mode)

    def answer(self, text: str) -> None:
        (self.folder / f"{self.name}.answer").write_text(text)

    def runs(self) -> list[dict[str, Any]]:
        log = self.folder / f"{self.name}.log"
        if not log.exists():
            return []
        return [json.loads(x) for x in log.read_text().splitlines() if x.strip()]

    def child_pid(self) -> int | None:
        f = self.folder / f"{self.name}.child"
        return int(f.read_text()) if f.exists() else None
