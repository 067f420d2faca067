"""``signet hook <event> --harness NAME [--project DIR]``: the command a harness runs.

It reads the harness's JSON on stdin, calls ``/api/hooks/<event>`` on the daemon, and
prints what that harness expects. It never blocks or fails the harness: every path exits 0,
and when the daemon is down it answers at once from the identity files (session start) or
with nothing (prompts). The one-line notice goes to stderr once per session (not before
every prompt) and never into the context the model reads.

Start-up cost matters (it runs before every prompt), so this module imports only the
standard library and Signet's stdlib-only modules: no Typer, httpx, pydantic or numpy.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import sys
from pathlib import Path
from typing import Any, TextIO

from signet.harnesses.base import EVENTS, Harness, HookInput
from signet.hooks.identity import static_context, workspace_root
from signet.hooks.texts import DAEMON_DOWN, PRE_COMPACTION
from signet.instance import workspace_header, wrong_workspace_message

# Seconds to wait for the daemon; each is below the timeout the installers give the harness.
TIMEOUTS = {"session-start": 8.0, "user-prompt-submit": 4.0, "session-end": 25.0}
DEFAULT_TIMEOUT = 8.0
DEFAULT_BUDGET = 2000
MAX_STDIN = 50 * 1024 * 1024
LLM_CALL_ENV = "SIGNET_LLM_CALL"
"""Set in the environment of a harness CLI Signet runs as its LLM: every hook does nothing."""
MAX_BODY = 7 * 1024 * 1024
"""Below the daemon's 8 MiB request limit (``signet.daemon.errors.MAX_BODY_BYTES``)."""


class DaemonDown(Exception):
    pass


class HookRejected(Exception):
    pass


class WrongDaemon(HookRejected):
    """The daemon at the address serves another workspace (signet.instance): nothing was sent
    to it; the message is the one line the user sees."""


def load_config(root: Path) -> dict[str, Any]:
    """agent.yaml as plain data (only read when the environment does not say it all)."""
    path = root / "agent.yaml"
    if not path.is_file():
        return {}
    import yaml  # lazily: ~25 ms, and most hook runs get the address from the environment

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError:
        return {}
    return data if isinstance(data, dict) else {}


def _section(cfg: dict[str, Any], name: str) -> dict[str, Any]:
    sec = cfg.get(name)
    return sec if isinstance(sec, dict) else {}


def daemon_address(cfg: dict[str, Any]) -> tuple[str, int]:
    d = _section(cfg, "daemon")
    host = os.environ.get("SIGNET_HOST") or str(d.get("host") or "127.0.0.1")
    port_s = os.environ.get("SIGNET_PORT") or str(d.get("port") or 3850)
    try:
        port = int(port_s)
    except ValueError:
        port = 3850
    return host, port


def post(
    host: str, port: int, path: str, body: dict[str, Any], *, timeout: float, actor: str, workspace: Path | None = None
) -> Any:
    headers = {"Content-Type": "application/json", "X-Signet-Actor": actor}
    if workspace is not None:
        headers.update(workspace_header(host, workspace))  # another workspace's daemon refuses
    token = os.environ.get("SIGNET_TOKEN")
    if token:
        headers["Authorization"] = f"Bearer {token}"
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("POST", path, body=json.dumps(body).encode("utf-8"), headers=headers)
        resp = conn.getresponse()
        data = resp.read()
    except (OSError, http.client.HTTPException) as exc:
        raise DaemonDown(str(exc) or type(exc).__name__) from None
    finally:
        conn.close()
    try:
        parsed = json.loads(data) if data else {}
    except ValueError:
        parsed = {"error": data[:200].decode("utf-8", "replace")}
    if resp.status == 409 and isinstance(parsed, dict) and parsed.get("code") == "wrong_workspace":
        assert workspace is not None
        served = parsed.get("workspace")
        raise WrongDaemon(wrong_workspace_message(port, served if isinstance(served, str) else None, workspace))
    if resp.status >= 400:
        msg = parsed.get("error") if isinstance(parsed, dict) else None
        raise HookRejected(f"daemon answered {resp.status}: {msg or parsed}")
    return parsed


def load_harness(name: str) -> Harness:
    from signet.harnesses import BUILTIN

    if name in BUILTIN:
        import importlib

        harness: Harness = importlib.import_module(BUILTIN[name]).HARNESS
        return harness
    from signet.harnesses.install import UnknownHarness, get_harness

    try:
        return get_harness(name)
    except UnknownHarness:
        generic = Harness()
        generic.name = name
        return generic


def read_payload(stream: TextIO) -> dict[str, Any]:
    if stream.isatty():
        return {}
    raw = stream.read(MAX_STDIN)
    if not raw.strip():
        return {}
    try:
        obj = json.loads(raw)
    except ValueError:
        # A harness that sends plain text (a prompt, a note): keep it as the text field.
        return {"prompt": raw.strip(), "content": raw.strip(), "query": raw.strip()}
    return obj if isinstance(obj, dict) else {}


def transcript_turns(harness: Harness, req: HookInput) -> list[dict[str, Any]]:
    """The turns to keep: sent inline by the harness, or read from its transcript file."""
    if req.turns:
        return [
            {"role": t.get("role"), "content": t.get("content"), "timestamp": t.get("timestamp")}
            for t in req.turns
            if isinstance(t, dict) and t.get("role") in ("user", "assistant") and isinstance(t.get("content"), str)
        ]
    if not req.transcript_path:
        return []
    path = Path(req.transcript_path).expanduser()
    if not path.is_file():
        return []
    from signet.ingest.detect import detect, get_adapter

    adapter = get_adapter(harness.transcript_adapter) if harness.transcript_adapter else detect(path)
    parsed = adapter.parse(path)
    return [t.to_dict() for t in parsed.turns if t.role in ("user", "assistant")]


def fit_turns(turns: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """The most recent turns whose JSON fits in ``limit`` bytes."""
    kept: list[dict[str, Any]] = []
    size = 0
    for t in reversed(turns):
        size += len(json.dumps(t)) + 2
        if size > limit:
            break
        kept.append(t)
    return kept[::-1]


def save_offline(root: Path, harness: str, session_id: str, turns: list[dict[str, Any]], *, full: bool = False) -> Path:
    """Keep a session's transcript when the daemon is down (stored when it starts), or, with
    ``full``, the whole of one too long to send (``<session>.full.jsonl``)."""
    from signet.hooks.transcripts import transcript_file, write_transcript

    path = transcript_file(root, harness, session_id)
    if full:
        path = path.with_name(path.stem + ".full.jsonl")
    write_transcript(path, f"{harness}:{session_id}", turns)
    return path


def _save_compaction(
    host: str, port: int, body: dict[str, Any], summary: str, actor: str, stderr: TextIO, workspace: Path
) -> None:
    fields: dict[str, Any] = {k: body[k] for k in ("harness", "session_id", "project", "cwd", "agent_id") if k in body}
    try:
        post(
            host,
            port,
            "/api/hooks/compaction-complete",
            {**fields, "summary": summary[:100_000]},
            timeout=TIMEOUTS["session-start"] / 2,
            actor=actor,
            workspace=workspace,
        )
    except (DaemonDown, HookRejected) as exc:
        stderr.write(f"signet: compaction summary not saved: {exc}\n")


def format_recall(resp: dict[str, Any]) -> str:
    lines = [f"- ({r.get('score', 0):.2f}) {r.get('content', '')}" for r in resp.get("results", [])]
    return "\n".join(lines) if lines else "No matching memories."


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="signet hook", description="Run a Signet hook for a harness.")
    parser.add_argument("event", choices=EVENTS)
    parser.add_argument("--harness", default="generic", help="claude-code, codex, opencode, openclaw, cursor…")
    parser.add_argument("--project", default=None, help="project directory (default: the harness's cwd)")
    parser.add_argument("--budget", type=int, default=None, help="token budget for injected context")
    return parser.parse_args(argv)


def request_body(args: argparse.Namespace, harness: Harness, req: HookInput, synced: frozenset[str]) -> dict[str, Any]:
    """The normalized ``/api/hooks/<event>`` body (without the turns of a session end)."""
    body = dict(req.body)
    body["harness"] = harness.name
    cwd = body.get("cwd") or str(Path.cwd())
    body["cwd"] = cwd
    project = (Path(args.project).expanduser() if args.project else Path(cwd)).resolve().name
    if project:
        body["project"] = project
    if args.budget is not None and args.event in ("session-start", "user-prompt-submit"):
        body["budget_tokens"] = args.budget
    if args.event == "session-start":
        body["skip_files"] = sorted(synced)
    return body


def add_turns(
    body: dict[str, Any], turns: list[dict[str, Any]], root: Path, harness: str, transcript: str | None, stderr: TextIO
) -> None:
    """Put a session's turns in the body, within the daemon's request limit."""
    body["turns"] = turns
    body.setdefault("session_id", Path(transcript).stem if transcript else "unknown")
    if len(json.dumps(body)) > MAX_BODY:
        # Past the daemon's body limit: keep the whole transcript on disk, send the latest turns.
        saved = save_offline(root, harness, str(body["session_id"]), turns, full=True)
        body["turns"] = fit_turns(turns, MAX_BODY - len(json.dumps({**body, "turns": []})))
        stderr.write(
            f"signet: long session: full transcript kept at {saved}, the last {len(body['turns'])} turns sent\n"
        )


NOTICES = Path(".daemon") / "hook-notices"
"""Under the workspace: one empty file per session already told that the daemon is down."""
NOTICE_DAYS = 7


def _notice_file(root: Path, harness: str, session: str | None, kind: str) -> Path:
    # Without a session id, the harness process that runs the hooks stands for the session.
    key = f"{harness}-{session or f'pid{os.getppid()}'}-{kind}"
    return root / NOTICES / "".join(c if c.isalnum() or c in "-_." else "_" for c in key)[:200]


def first_notice(root: Path, harness: str, session: str | None, kind: str) -> bool:
    """True the first time a session hits a failure of this ``kind`` (until the daemon
    answers again): a harness shows a hook's stderr, and one notice per session says it all.
    When the mark cannot be kept (no workspace), the notice is shown every time."""
    path = _notice_file(root, harness, session, kind)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        return False
    except OSError:
        return True
    cutoff = path.stat().st_mtime - NOTICE_DAYS * 86400
    for old in path.parent.iterdir():  # marks of sessions long over
        with contextlib.suppress(OSError):
            if old.stat().st_mtime < cutoff:
                old.unlink()
    return True


def forget_notices(root: Path, harness: str, session: str | None) -> None:
    """The daemon answered: a later outage in this session is worth a notice again."""
    folder = root / NOTICES
    if not folder.is_dir():  # the usual case: one stat, nothing else
        return
    prefix = _notice_file(root, harness, session, "").name
    for mark in folder.iterdir():
        if mark.name.startswith(prefix):
            with contextlib.suppress(OSError):
                mark.unlink()


def offline_text(
    event: str,
    exc: Exception,
    *,
    root: Path,
    address: str,
    budget: int,
    body: dict[str, Any],
    turns: list[dict[str, Any]],
    synced: frozenset[str],
    stderr: TextIO,
) -> str:
    """What to answer when the daemon cannot: identity files, fixed instructions, or nothing."""
    notice = DAEMON_DOWN.format(address=address)
    if isinstance(exc, WrongDaemon):
        notice = str(exc)
    elif isinstance(exc, HookRejected):
        notice = f"Signet could not answer this hook ({exc}); only the identity files are loaded."
    session = body.get("session_id")
    if first_notice(root, str(body["harness"]), session if isinstance(session, str) else None, type(exc).__name__):
        stderr.write(f"signet: {notice}\n")
    if event == "session-start":  # the notice is for the user, not the model: not in its context
        return static_context(root, budget, agent_id=body.get("agent_id"), skip=synced).text
    if event == "pre-compaction":
        return PRE_COMPACTION
    if event == "session-end" and turns and isinstance(exc, (DaemonDown, WrongDaemon)):
        saved = save_offline(root, str(body["harness"]), str(body["session_id"]), turns)
        stderr.write(f"signet: transcript kept at {saved}; it is stored when the daemon starts\n")
    return ""


def online_text(event: str, resp: dict[str, Any]) -> str:
    if event in ("session-start", "user-prompt-submit"):
        return str(resp.get("context") or "")
    if event == "pre-compaction":
        return str(resp.get("instructions") or "")
    if event == "recall":
        return format_recall(resp)
    if event == "remember":
        return f"Remembered ({resp.get('id')})" + (" (already known)" if resp.get("deduped") else "")
    return ""


def run(argv: list[str], stdin: TextIO, stdout: TextIO, stderr: TextIO) -> int:
    args = parse_args(argv)
    if os.environ.get(LLM_CALL_ENV):
        # Signet itself runs this harness as its LLM (signet.pipeline.llm.cli): that call is not a
        # session; recording it would queue extraction of the extraction prompt, and so on.
        return 0
    root = workspace_root()
    harness = load_harness(args.harness)
    req = harness.parse(args.event, read_payload(stdin))
    # The harness loads Signet's instruction file itself only when Signet installed one.
    synced = harness.synced_identity if (root / "harnesses" / f"{harness.name}.json").is_file() else frozenset()
    body = request_body(args, harness, req, synced)
    turns: list[dict[str, Any]] = []
    if args.event == "session-end":
        turns = transcript_turns(harness, req)
        add_turns(body, turns, root, harness.name, req.transcript_path, stderr)

    # agent.yaml is read only when needed: for the address, or for the offline session-start budget.
    need_config = not (os.environ.get("SIGNET_HOST") and os.environ.get("SIGNET_PORT")) or args.event == "session-start"
    cfg = load_config(root) if need_config else {}
    host, port = daemon_address(cfg)
    actor = f"hook:{harness.name}"
    if args.event == "session-start":
        summary = harness.compaction_summary(req)
        if summary:
            _save_compaction(host, port, body, summary, actor, stderr, root)
    try:
        resp = post(
            host,
            port,
            f"/api/hooks/{args.event}",
            body,
            timeout=TIMEOUTS.get(args.event, DEFAULT_TIMEOUT),
            actor=actor,
            workspace=root,
        )
    except (DaemonDown, HookRejected) as exc:
        configured = _section(cfg, "memory").get("session_budget")
        budget = (
            args.budget
            if args.budget is not None
            else (configured if isinstance(configured, int) and configured >= 0 else DEFAULT_BUDGET)
        )
        text = offline_text(
            args.event,
            exc,
            root=root,
            address=f"{host}:{port}",
            budget=budget,
            body=body,
            turns=turns,
            synced=synced,
            stderr=stderr,
        )
    else:
        session = body.get("session_id")
        forget_notices(root, harness.name, session if isinstance(session, str) else None)
        text = online_text(args.event, resp if isinstance(resp, dict) else {})
    out = text if args.event in ("recall", "remember") else harness.render(args.event, text)
    if out:
        stdout.write(out + ("\n" if not out.endswith("\n") else ""))
    return 0


def main(argv: list[str] | None = None) -> int:
    try:
        return run(sys.argv[1:] if argv is None else argv, sys.stdin, sys.stdout, sys.stderr)
    except SystemExit as exc:
        # argparse: --help exits 0; a usage error exits 1, which harnesses treat as non-blocking
        # (never 2: Claude Code reads 2 as "block this prompt").
        return 0 if exc.code in (0, None) else 1
    except Exception as exc:  # noqa: BLE001 - a hook must never break the user's session: report, answer empty
        sys.stderr.write(f"signet hook: {type(exc).__name__}: {exc}\n")
        return 0
