"""Session summaries as files, and ``memory_artifacts``: their index (spec 001).

A summary is canonical as a Markdown file under ``memory/`` with a YAML front matter; the
database row is derived from it, so :func:`rebuild` can drop every row and read the files
again (after a restore, a git pull, a hand copy). A file is immutable once written: it is
created under a temporary name and hard-linked into place, which fails rather than replace an
existing file.

Removing a session's summaries (privacy) deletes the files and rows and leaves a tombstone
keyed by ``(agent_id, session_token)``. A rebuild skips tombstoned sessions, so a copy of the
file coming back (a backup, a sync from another machine) never brings the history back.

File names never contain the harness's session id: the token is a hash of the agent and the
session key, so a hostile session id (``../../etc``) cannot steer where a file is written.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from signet.store.records import now_iso
from signet.store.sqlite import Connection

SUFFIX = "--summary.md"
FRONT = "---\n"


def session_token(agent_id: str, session_key: str) -> str:
    """A stable, path-safe name for one agent's session (16 hex digits)."""
    return hashlib.sha256(f"{agent_id}\0{session_key}".encode()).hexdigest()[:16]


def artifacts_dir(root: Path) -> Path:
    return root / "memory"


def summary_name(captured_at: str, token: str, n: int = 0) -> str:
    """``2026-11-25T20-11-18--<token>--summary.md`` (``-2``… before the suffix on a clash)."""
    stamp = captured_at[:19].replace(":", "-")
    return f"{stamp}--{token}{f'-{n + 1}' if n else ''}{SUFFIX}"


@dataclass(frozen=True)
class Artifact:
    path: Path
    meta: dict[str, Any]
    body: str


def render(meta: dict[str, Any], body: str) -> str:
    head = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, default_flow_style=False)
    return f"{FRONT}{head}{FRONT}\n{body.strip()}\n"


def parse(path: Path) -> Artifact | None:
    """The file's front matter and body; None for a file that is not a summary artifact."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if not text.startswith(FRONT):
        return None
    head, sep, body = text[len(FRONT) :].partition("\n" + FRONT)
    if not sep:
        return None
    try:
        meta = yaml.safe_load(head)
    except yaml.YAMLError:
        return None
    if not isinstance(meta, dict) or not isinstance(meta.get("session_token"), str):
        return None
    return Artifact(path, {str(k): v for k, v in meta.items()}, body.strip())


def write_summary(root: Path, meta: dict[str, Any], body: str) -> Path:
    """Create the summary file; never replaces an existing one.

    A run of the same job that already wrote its file (it crashed before its transaction
    committed) finds it by ``job_id`` and returns it instead of writing a second copy."""
    folder = artifacts_dir(root)
    folder.mkdir(parents=True, exist_ok=True)
    data = render(meta, body).encode("utf-8")
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".summary.", suffix=".signet-tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        for n in range(100):
            path = folder / summary_name(str(meta["captured_at"]), str(meta["session_token"]), n)
            try:
                os.link(tmp, path)
            except FileExistsError:
                same = parse(path)
                if same is not None and same.meta.get("job_id") == meta.get("job_id"):
                    return path
                continue
            return path
        raise OSError(f"no free summary file name in {folder} for session {meta['session_token']}")
    finally:
        Path(tmp).unlink(missing_ok=True)


def relative(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


def _first_sentence(body: str) -> str | None:
    for line in body.splitlines():
        line = line.strip().lstrip("-*• ").strip()
        if line and not line.startswith("#"):
            return line[:240]
    return None


def tombstoned(conn: Connection, agent_id: str, token: str) -> bool:
    row = conn.execute(
        "SELECT 1 FROM memory_artifact_tombstones WHERE agent_id = ? AND session_token = ?", (agent_id, token)
    ).fetchone()
    return row is not None


def index(conn: Connection, root: Path, art: Artifact) -> bool:
    """Upsert the row of one file; False (nothing written) when its session is tombstoned."""
    m = art.meta
    agent = str(m.get("agent_id") or "default")
    token = str(m["session_token"])
    if tombstoned(conn, agent, token):
        return False
    raw = art.path.read_bytes()

    def text(key: str) -> str | None:
        v = m.get(key)
        return None if v is None else str(v)

    conn.execute(
        "INSERT INTO memory_artifacts(agent_id, source_path, source_sha256, source_kind, session_id, session_key,"
        " session_token, project, harness, captured_at, started_at, ended_at, manifest_path, memory_sentence,"
        " memory_sentence_quality, content, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?, ?)"
        " ON CONFLICT(source_path) DO UPDATE SET source_sha256 = excluded.source_sha256,"
        " content = excluded.content, memory_sentence = excluded.memory_sentence, updated_at = excluded.updated_at",
        (
            agent,
            relative(root, art.path),
            hashlib.sha256(raw).hexdigest(),
            text("kind") or "summary",
            text("session_id"),
            text("session_key"),
            token,
            text("project"),
            text("harness"),
            text("captured_at"),
            text("started_at"),
            text("ended_at"),
            _first_sentence(art.body),
            text("quality") or "llm",
            art.body,
            now_iso(),
        ),
    )
    return True


def summary_files(root: Path) -> Iterator[Path]:
    folder = artifacts_dir(root)
    if folder.is_dir():
        yield from sorted(p for p in folder.glob(f"*{SUFFIX}") if p.is_file() and not p.is_symlink())


def rebuild(conn: Connection, root: Path) -> dict[str, int]:
    """Drop the index and read it back from the files, honouring tombstones."""
    conn.execute("DELETE FROM memory_artifacts")
    indexed = skipped = unreadable = 0
    for path in summary_files(root):
        art = parse(path)
        if art is None:
            unreadable += 1
        elif index(conn, root, art):
            indexed += 1
        else:
            skipped += 1
    return {"indexed": indexed, "tombstoned": skipped, "unreadable": unreadable}


def remove_session(conn: Connection, root: Path, agent_id: str, token: str, reason: str | None) -> list[str]:
    """Delete a session's summary files and rows and tombstone it; returns the removed paths.

    The tombstone is written in the caller's transaction before the files go, so a crash in
    between leaves files a rebuild will skip, never history that comes back."""
    rows = conn.execute(
        "SELECT source_path FROM memory_artifacts WHERE agent_id = ? AND session_token = ?", (agent_id, token)
    ).fetchall()
    paths = {str(r[0]) for r in rows}
    for path in summary_files(root):
        art = parse(path)
        mine = art is not None and str(art.meta.get("agent_id") or "default") == agent_id
        if mine and art is not None and art.meta.get("session_token") == token:
            paths.add(relative(root, path))
    conn.execute(
        "INSERT INTO memory_artifact_tombstones(agent_id, session_token, removed_at, reason, removed_paths)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT(agent_id, session_token) DO UPDATE SET removed_at = excluded.removed_at,"
        " reason = excluded.reason, removed_paths = excluded.removed_paths",
        (agent_id, token, now_iso(), reason, json.dumps(sorted(paths))),
    )
    conn.execute("DELETE FROM memory_artifacts WHERE agent_id = ? AND session_token = ?", (agent_id, token))
    for rel in paths:
        target = (root / rel).resolve()
        if target.is_relative_to(artifacts_dir(root).resolve()):
            target.unlink(missing_ok=True)
    return sorted(paths)


def recent(conn: Connection, agent_id: str, limit: int) -> list[dict[str, Any]]:
    """The newest summaries of an agent, for MEMORY.md synthesis."""
    if limit <= 0:
        return []
    rows = conn.execute(
        "SELECT source_path, session_key, project, harness, captured_at, memory_sentence, content"
        " FROM memory_artifacts WHERE agent_id = ? ORDER BY captured_at DESC, id DESC LIMIT ?",
        (agent_id, limit),
    ).fetchall()
    return [dict(r) for r in rows]
