"""Cursor (and VS Code fork) chat stores: ``state.vscdb``, a SQLite key-value file.

Cursor keeps its chats in ``~/.config/Cursor/User/globalStorage/state.vscdb`` (Linux;
``~/Library/Application Support/Cursor/User/...`` on macOS, ``%APPDATA%/Cursor/User/...`` on
Windows), table ``cursorDiskKV``:

- ``composerData:<composerId>``: one conversation, ``{"composerId", "name", "createdAt",
  "lastUpdatedAt", ...}`` with either the bubbles inline in ``conversation`` (older versions)
  or only ``fullConversationHeadersOnly: [{"bubbleId", "type"}]`` (newer ones);
- ``bubbleId:<composerId>:<bubbleId>``: one message, ``{"type": 1 | 2, "text", ...}`` (1: the
  user, 2: the assistant; tool calls and code blocks are other fields, left out).

Older Cursor versions kept chats per workspace (``workspaceStorage/<id>/state.vscdb``), in
``ItemTable`` under ``workbench.panel.aichat.view.aichat.chatdata``: ``{"tabs": [{"tabId",
"chatTitle", "bubbles": [{"type": "user" | "ai", "text" | "rawText"}]}]}``; those are read too.

One file holds many conversations, so this adapter has :meth:`CursorAdapter.parse_many` (one
transcript per conversation); ``signet ingest`` stores each under ``cursor:<composerId>``.
The database is opened read-only and read by key (a store can be many gigabytes: no scan of
the bubbles, whose keys are looked up one conversation at a time). The format is Cursor's
private one, reverse-engineered by its users, and may change; unknown shapes are skipped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from signet.ingest.base import Transcript, TranscriptError, clean_turns, normalize_time
from signet.transcript import Turn

if TYPE_CHECKING:
    import sqlite3

NAME = "cursor"
OLD_CHAT_KEY = "workbench.panel.aichat.view.aichat.chatdata"
MAX_CONVERSATIONS = 100_000


def _json(value: Any) -> Any:
    if isinstance(value, bytes | bytearray | memoryview):
        value = bytes(value).decode("utf-8", "replace")
    if not isinstance(value, str):
        return None
    try:
        return json.loads(value)
    except ValueError:
        return None


def _bubble_turn(bubble: Any, fallback_time: str | None) -> Turn | None:
    if not isinstance(bubble, dict):
        return None
    kind = bubble.get("type")
    role = (
        {1: "user", 2: "assistant", "user": "user", "ai": "assistant"}.get(kind)
        if isinstance(kind, int | str)
        else None
    )
    text = bubble.get("text") or bubble.get("rawText")
    if role is None or not isinstance(text, str) or not text.strip():
        return None
    return Turn(role, text.strip(), normalize_time(bubble.get("createdAt")) or fallback_time)


class CursorAdapter:
    name = NAME
    priority = 30
    binary = True
    """The file is SQLite, not text: ``signet ingest`` does not refuse it as binary."""

    def can_handle(self, path: Path, first_line: str | None) -> bool:
        return path.suffix == ".vscdb"

    def parse(self, path: Path) -> Transcript:
        """The most recently updated conversation (``parse_many`` gives all of them)."""
        many = self.parse_many(path)
        if not many:
            return Transcript(NAME, [], harness=NAME)
        return max(many, key=lambda t: str(t.metadata.get("updated") or ""))

    def parse_many(self, path: Path) -> list[Transcript]:
        import sqlite3  # here, not at the top: the hook command loads every adapter and stays light

        try:
            conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5)
        except sqlite3.Error as exc:
            raise TranscriptError(f"{path}: cannot be opened as a SQLite database ({exc})") from None
        try:
            try:
                tables = {str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            except sqlite3.DatabaseError as exc:
                raise TranscriptError(f"{path}: not a SQLite database ({exc})") from None
            out: list[Transcript] = []
            if "cursorDiskKV" in tables:
                out.extend(_composers(conn))
            if "ItemTable" in tables:
                out.extend(_old_tabs(conn))
            return out
        except sqlite3.DatabaseError as exc:
            raise TranscriptError(f"{path}: unreadable Cursor store ({exc})") from None
        finally:
            conn.close()


def _composers(conn: sqlite3.Connection) -> list[Transcript]:
    out: list[Transcript] = []
    rows = conn.execute(
        "SELECT key, value FROM cursorDiskKV WHERE key >= 'composerData:' AND key < 'composerData;' LIMIT ?",
        (MAX_CONVERSATIONS,),
    ).fetchall()
    for key, value in rows:
        data = _json(value)
        if not isinstance(data, dict):
            continue
        cid = str(data.get("composerId") or str(key).split(":", 1)[1])
        updated = normalize_time(data.get("lastUpdatedAt")) or normalize_time(data.get("createdAt"))
        inline = data.get("conversation")
        bubbles: list[Any] = list(inline) if isinstance(inline, list) and inline else []
        if not bubbles:
            for head in data.get("fullConversationHeadersOnly") or []:
                if not isinstance(head, dict) or not isinstance(head.get("bubbleId"), str):
                    continue
                row = conn.execute(
                    "SELECT value FROM cursorDiskKV WHERE key = ?", (f"bubbleId:{cid}:{head['bubbleId']}",)
                ).fetchone()
                if row is not None:
                    bubbles.append(_json(row[0]))
        turns = [t for b in bubbles if (t := _bubble_turn(b, updated)) is not None]
        name = data.get("name") if isinstance(data.get("name"), str) else None
        out.append(
            Transcript(
                NAME, clean_turns(turns), session_id=cid, harness=NAME, metadata={"name": name, "updated": updated}
            )
        )
    return out


def _old_tabs(conn: sqlite3.Connection) -> list[Transcript]:
    row = conn.execute("SELECT value FROM ItemTable WHERE key = ?", (OLD_CHAT_KEY,)).fetchone()
    data = _json(row[0]) if row is not None else None
    tabs = data.get("tabs") if isinstance(data, dict) else None
    out: list[Transcript] = []
    for tab in tabs if isinstance(tabs, list) else []:
        if not isinstance(tab, dict) or not isinstance(tab.get("tabId"), str):
            continue
        updated = normalize_time(tab.get("lastSendTime"))
        turns = [t for b in tab.get("bubbles") or [] if (t := _bubble_turn(b, updated)) is not None]
        title = tab.get("chatTitle") if isinstance(tab.get("chatTitle"), str) else None
        out.append(
            Transcript(
                NAME,
                clean_turns(turns),
                session_id=tab["tabId"],
                harness=NAME,
                metadata={"name": title, "updated": updated},
            )
        )
    return out


ADAPTER = CursorAdapter()
