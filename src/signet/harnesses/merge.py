"""Editing a user's harness config without disturbing it, and undoing that exactly.

Every installer change is an :class:`Edit` on one file: a JSON (or JSON5) merge, written
into the user's text in place so their layout and comments stay (:mod:`signet.harnesses.jsontext`),
a marked block in a Markdown or TOML file, or a whole file Signet owns. :func:`apply_edits` writes only what
changes and keeps, per file, the original bytes in the install ledger; :func:`revert` puts
those bytes back when the file still holds exactly what Signet wrote, and otherwise removes
only Signet's own entries (the user changed the file since; their change is kept).

A file that does not parse is reported with :class:`HarnessConfigError` and never written.
Stdlib only: harness modules import this and the hook command imports harness modules.
"""

from __future__ import annotations

import abc
import base64
import copy
import hashlib
import json
import os
import re
import tempfile
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from signet.harnesses.jsontext import LayoutError, describe_changes, edit_text, parse_json5

JsonObj = dict[str, Any]


class HarnessConfigError(Exception):
    """A harness config file Signet cannot safely edit (names the file and the problem)."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"{path}: {problem}; left untouched")
        self.path = path
        self.problem = problem


def sha256(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


# -- edits -----------------------------------------------------------------------------------


@dataclass
class Edit(abc.ABC):
    """One file Signet changes. ``apply`` and ``remove`` are pure: bytes in, bytes out
    (``None`` means "no file")."""

    path: Path
    kind: str
    description: str

    @abc.abstractmethod
    def apply(self, current: bytes | None) -> bytes | None:
        """The file's new bytes given its current bytes."""

    @abc.abstractmethod
    def remove(self, current: bytes) -> bytes | None:
        """The file without Signet's part."""

    def present(self, current: bytes | None) -> bool:
        """Whether Signet's part is in ``current`` (for ``signet harnesses``)."""
        if current is None:
            return False
        try:
            return self.apply(current) == current
        except HarnessConfigError:
            return False


def load_json(path: Path, data: bytes, *, json5: bool = False) -> JsonObj:
    """The object in a JSON file (``json5``: a JSON5 file, such as OpenClaw's config)."""
    try:
        text = data.decode("utf-8")
        obj = (parse_json5(text) if json5 else json.loads(text)) if data.strip() else {}
    except UnicodeDecodeError as exc:
        raise HarnessConfigError(path, f"not UTF-8 text: {exc}") from None
    except json.JSONDecodeError as exc:
        raise HarnessConfigError(path, f"not valid JSON (line {exc.lineno}, column {exc.colno}): {exc}") from None
    except ValueError as exc:  # the json5 package's parse errors
        raise HarnessConfigError(path, f"not valid JSON5: {exc}") from None
    if not isinstance(obj, dict):
        raise HarnessConfigError(path, f"the top level is a {type(obj).__name__}, expected an object")
    return obj


def dump_json(obj: JsonObj) -> bytes:
    return (json.dumps(obj, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


@dataclass
class JsonEdit(Edit):
    """Merge into a JSON object file: ``add`` and ``strip`` mutate a copy of the parsed object.

    An unchanged object means unchanged bytes (installing twice writes nothing). A changed
    one is written into the existing text with minimal edits in the file's own style
    (indent, spacing, key quoting, trailing commas; comments kept). When that cannot be
    done the file is left alone and the error says what to change by hand.
    """

    add: Callable[[JsonObj], None] = field(default=lambda obj: None)
    strip: Callable[[JsonObj], None] = field(default=lambda obj: None)
    json5: bool = False

    def apply(self, current: bytes | None) -> bytes | None:
        obj = load_json(self.path, current, json5=self.json5) if current is not None else {}
        new = copy.deepcopy(obj)
        try:
            self.add(new)
        except TypeError as exc:  # a key Signet needs holds a value of another shape
            raise HarnessConfigError(self.path, f"unexpected structure: {exc}") from None
        if current is None:
            return dump_json(new)
        if new == obj:
            return current
        return self._rewrite(current, obj, new)

    def remove(self, current: bytes) -> bytes | None:
        obj = load_json(self.path, current, json5=self.json5)
        new = copy.deepcopy(obj)
        self.strip(new)
        return current if new == obj else self._rewrite(current, obj, new)

    def _rewrite(self, current: bytes, obj: JsonObj, new: JsonObj) -> bytes:
        text = current.decode("utf-8")  # load_json decoded it already
        if not text.strip():
            return dump_json(new)
        try:
            return edit_text(text, new, json5=self.json5).encode("utf-8")
        except LayoutError as exc:
            todo = "; ".join(describe_changes(obj, new))
            raise HarnessConfigError(
                self.path, f"cannot change it in place without rewriting its layout ({exc}); change by hand: {todo}"
            ) from None

    def present(self, current: bytes | None) -> bool:
        if current is None:
            return False
        try:
            obj = load_json(self.path, current, json5=self.json5)
        except HarnessConfigError:
            return False
        new = copy.deepcopy(obj)
        try:
            self.add(new)
        except TypeError:
            return False
        return new == obj


@dataclass
class BlockEdit(Edit):
    """A marked block appended to a text file (Markdown or TOML), replaced in place later."""

    begin: str = ""
    end: str = ""
    body: str = ""
    validate: Callable[[Path, str], None] | None = None

    def _pattern(self) -> re.Pattern[str]:
        return re.compile(r"(?:\n)?" + re.escape(self.begin) + r".*?" + re.escape(self.end) + r"\n?", re.DOTALL)

    def block(self) -> str:
        return f"{self.begin}\n{self.body.rstrip()}\n{self.end}\n"

    def _decode(self, current: bytes) -> str:
        try:
            return current.decode("utf-8")
        except UnicodeDecodeError:
            raise HarnessConfigError(self.path, "not UTF-8 text") from None

    def apply(self, current: bytes | None) -> bytes | None:
        text = "" if current is None else self._decode(current)
        if self.validate is not None and current is not None:
            self.validate(self.path, text)
        pat = self._pattern()
        m = pat.search(text)
        if m is not None:
            lead = "\n" if m.group(0).startswith("\n") else ""
            new = text[: m.start()] + lead + self.block() + text[m.end() :]
        elif not text:
            new = self.block()
        else:
            new = text + ("" if text.endswith("\n") else "\n") + "\n" + self.block()
        if self.validate is not None:
            self.validate(self.path, new)
        data = new.encode("utf-8")
        return current if current == data else data

    def remove(self, current: bytes) -> bytes | None:
        text = self._decode(current)
        new = self._pattern().sub("", text, count=1)
        if new == text:
            return current
        return new.encode("utf-8") if new.strip() else None


@dataclass
class OwnedFile(Edit):
    """A whole file that only Signet writes (a plugin, a rules file). Refuses to replace a
    file of the same name that Signet did not write."""

    content: str = ""
    marker: str = "signet"

    def apply(self, current: bytes | None) -> bytes | None:
        data = self.content.encode("utf-8")
        if current is not None and current != data and self.marker.encode() not in current:
            raise HarnessConfigError(self.path, "exists and was not written by Signet")
        return data

    def remove(self, current: bytes) -> bytes | None:
        return None if self.marker.encode() in current else current


def toml_validator(path: Path, text: str) -> None:
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise HarnessConfigError(path, f"not valid TOML: {exc}") from None


# -- the ledger ------------------------------------------------------------------------------


@dataclass
class FileRecord:
    existed: bool
    original_b64: str | None
    written_sha256: str | None
    kind: str

    @property
    def original(self) -> bytes | None:
        return None if self.original_b64 is None else base64.b64decode(self.original_b64)


@dataclass
class Ledger:
    """What one harness install changed: per file, the bytes before and the hash after."""

    harness: str
    installed_at: str
    files: dict[str, FileRecord] = field(default_factory=dict)
    created_dirs: list[str] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)

    @staticmethod
    def path_for(state_dir: Path, harness: str) -> Path:
        return state_dir / f"{harness}.json"

    @classmethod
    def load(cls, state_dir: Path, harness: str) -> Ledger | None:
        p = cls.path_for(state_dir, harness)
        try:
            raw = json.loads(p.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        return cls(
            harness=raw["harness"],
            installed_at=raw["installed_at"],
            files={k: FileRecord(**v) for k, v in raw.get("files", {}).items()},
            created_dirs=list(raw.get("created_dirs", [])),
            options=dict(raw.get("options", {})),
        )

    def save(self, state_dir: Path) -> None:
        state_dir.mkdir(parents=True, exist_ok=True)
        ignore = state_dir / ".gitignore"
        if not ignore.exists():
            # Copies of config files can hold tokens (~/.claude.json): keep them out of a
            # workspace that is a git repository.
            ignore.write_text("*\n", encoding="utf-8")
        data = {
            "harness": self.harness,
            "installed_at": self.installed_at,
            "files": {k: vars(v) for k, v in self.files.items()},
            "created_dirs": self.created_dirs,
            "options": self.options,
        }
        # The ledger holds copies of the user's config files: keep it private.
        write_atomic(self.path_for(state_dir, self.harness), dump_json(data), mode=0o600)

    def delete(self, state_dir: Path) -> None:
        self.path_for(state_dir, self.harness).unlink(missing_ok=True)


def read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def write_atomic(path: Path, data: bytes, *, mode: int | None = None, durable: bool = False) -> None:
    """Replace ``path`` in one rename, keeping the old file's permission bits (or ``mode``).

    The temporary file is created 0600 and only then given ``mode``, so a private file is never
    readable by others on the way. ``durable``: the data and the rename are on disk when this
    returns (fsync of the file and of its directory), for files that cannot be rebuilt."""
    if mode is None:
        try:
            mode = path.stat().st_mode & 0o777
        except FileNotFoundError:
            mode = 0o644
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".signet-tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        Path(tmp).chmod(mode)
        Path(tmp).replace(path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if durable and os.name == "posix":
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def _make_parents(path: Path, ledger: Ledger) -> None:
    missing: list[Path] = []
    p = path.parent
    while not p.exists():
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        d.mkdir()
        ledger.created_dirs.append(str(d))


@dataclass
class Change:
    path: Path
    action: str  # "created", "updated", "unchanged", "restored", "removed", "stripped", "skipped"
    description: str


def apply_edits(edits: list[Edit], ledger: Ledger) -> list[Change]:
    """Apply every edit; all files are checked before any is written, so a broken config
    file stops the install with nothing changed."""
    planned: list[tuple[Edit, bytes | None, bytes | None]] = []
    for e in edits:
        current = read_bytes(e.path)
        planned.append((e, current, e.apply(current)))
    changes: list[Change] = []
    for e, current, new in planned:
        key = str(e.path)
        if key not in ledger.files:
            ledger.files[key] = FileRecord(
                existed=current is not None,
                original_b64=None if current is None else base64.b64encode(current).decode("ascii"),
                written_sha256=sha256(current),
                kind=e.kind,
            )
        if new == current:
            changes.append(Change(e.path, "unchanged", e.description))
            continue
        if new is None:
            e.path.unlink(missing_ok=True)
            changes.append(Change(e.path, "removed", e.description))
        else:
            _make_parents(e.path, ledger)
            write_atomic(e.path, new)
            changes.append(Change(e.path, "created" if current is None else "updated", e.description))
        ledger.files[key].written_sha256 = sha256(new)
    return changes


def revert(edits: list[Edit], ledger: Ledger) -> list[Change]:
    """Undo an install: exact original bytes where the file is as Signet left it, else strip
    only Signet's parts. Directories Signet created are removed when left empty."""
    by_path = {str(e.path): e for e in edits}
    changes: list[Change] = []
    for key, rec in ledger.files.items():
        path = Path(key)
        current = read_bytes(path)
        edit = by_path.get(key)
        desc = edit.description if edit is not None else rec.kind
        if sha256(current) == rec.written_sha256:
            original = rec.original
            if original == current:
                changes.append(Change(path, "unchanged", desc))
            elif original is None:
                path.unlink(missing_ok=True)
                changes.append(Change(path, "removed", desc))
            else:
                write_atomic(path, original)
                changes.append(Change(path, "restored", desc))
            continue
        if current is None or edit is None:
            changes.append(Change(path, "skipped", f"{desc} (changed since install; nothing of Signet's to remove)"))
            continue
        try:
            new = edit.remove(current)
        except HarnessConfigError as exc:
            changes.append(Change(path, "skipped", f"{desc}: {exc.problem}"))
            continue
        if new == current:
            changes.append(Change(path, "unchanged", desc))
        elif new is None and not rec.existed:
            path.unlink(missing_ok=True)
            changes.append(Change(path, "removed", desc))
        else:
            write_atomic(path, new if new is not None else b"")
            changes.append(Change(path, "stripped", f"{desc} (file changed since install: removed Signet's part only)"))
    for d in sorted(ledger.created_dirs, key=len, reverse=True):
        try:
            Path(d).rmdir()
        except OSError:
            continue  # not empty (the user put something there) or already gone
    return changes


def now_iso() -> str:
    """Now, or ``$SOURCE_DATE_EPOCH`` when set (as signet.workspace.setup_time: reproducible setups)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if epoch.isdigit():
        return datetime.fromtimestamp(int(epoch), UTC).isoformat(timespec="seconds")
    return datetime.now(UTC).isoformat(timespec="seconds")
