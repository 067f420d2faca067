"""``signet config get|set|edit|validate``: read and change the workspace's agent.yaml.

Keys are dotted paths as written in agent.yaml (``search.alpha``,
``memory.pipelineV2.extraction.provider``); each part may be given in the spec's camelCase or
in snake_case (``memory.pipeline_v2`` is not a spelling: the snake_case one is the Python
name, ``memory.pipeline``). ``set`` and ``edit`` validate the whole resulting file with the
same :class:`~signet.config.Settings` model the daemon loads, and only then replace agent.yaml
(in one rename): an invalid value never reaches the file. ``set`` changes only the key's line
(or adds the missing keys at the end of their section), so other keys, comments and layout
stay; the edited text must parse to exactly the intended data, else (flow-style sections, say)
the whole file is written again from the data: every key kept, comments not.
"""

from __future__ import annotations

import difflib
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml
from pydantic import BaseModel

from signet import instance
from signet.cli.app import app
from signet.config import Settings, load_settings, parse_settings, top_level_near_miss, unknown_top_level_keys
from signet.errors import ConfigError, SignetError
from signet.harnesses.merge import write_atomic
from signet.workspace import Workspace

config_app = typer.Typer(
    help="Read and change agent.yaml: get, set, edit, validate (each change validated before it is written).",
    no_args_is_help=True,
)
app.add_typer(config_app, name="config")


def _section_type(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _section_type(arg)
        if found is not None:
            return found
    return None


def _resolve(key: str) -> list[tuple[str, str | None]]:
    """The parts of a dotted key, each as ``(canonical, python_name)``: the spelling agent.yaml
    uses (the alias where there is one) and the field's Python name (None below a free-form
    mapping). An unknown part is a :class:`SignetError` naming the closest known key."""
    parts = key.split(".")
    if not key or any(not p for p in parts):
        raise SignetError(f"'{key}' is not a key; write it dotted, e.g. search.alpha")
    model: type[BaseModel] | None = Settings
    out: list[tuple[str, str | None]] = []
    for i, part in enumerate(parts):
        prefix = ".".join(c for c, _ in out)
        if model is None:  # inside a free-form mapping (a list, a dict of names): taken as written
            out.append((part, None))
            continue
        fields = model.model_fields
        found = next(((n, f) for n, f in fields.items() if part in (n, f.alias)), None)
        if found is None:
            known = [f.alias or n for n, f in fields.items()]
            close = (
                top_level_near_miss(part)
                if model is Settings
                else next(iter(difflib.get_close_matches(part, known, n=1, cutoff=0.6)), None)
            )
            where = f"{prefix}.{part}" if prefix else part
            hint = (
                f"did you mean {prefix + '.' if prefix else ''}{close}?"
                if close
                else f"valid keys here: {', '.join(sorted(known))}"
            )
            raise SignetError(f"unknown config key '{where}'; {hint}")
        name, field = found
        out.append((field.alias or name, name))
        model = _section_type(field.annotation) if i < len(parts) - 1 else None
    return out


def _config_path() -> Path:
    return Workspace.from_env().config_path


def _read_raw(path: Path) -> dict[str, Any]:
    """agent.yaml as parsed YAML (no defaults filled in). It need not be valid yet: ``set`` may
    be what fixes it; only the result is validated."""
    if not path.exists():
        raise SignetError(f"no agent.yaml at {path}; run `signet setup` first")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError:
        load_settings(path)  # raises the one-line message naming the line and column
        raise
    if data is not None and not isinstance(data, dict):
        parse_settings(data, source=str(path))  # raises: the top level must be a mapping
    return data or {}


def _format(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (dict, list)):
        return yaml.safe_dump(value, sort_keys=False, allow_unicode=True, default_flow_style=False).rstrip("\n")
    return str(value)


LIVE_KEYS = ("memory.pipelineV2.extraction", "memory.pipelineV2.budgets")
"""Keys a running daemon applies on its own when agent.yaml changes (its identity watcher)."""


def _restart_note(key: str | None = None) -> None:
    ws = Workspace.from_env()
    if instance.running(ws.daemon_dir) is None:
        return
    if key is not None and key.startswith(LIVE_KEYS) and ws.settings().hooks.watch:
        typer.echo("the running daemon applies this change by itself (no restart needed)")
        return
    typer.secho("note: the daemon reads agent.yaml at start: `signet restart` to apply", err=True, fg="yellow")


@config_app.command("get")
def get(key: Annotated[str, typer.Argument(help="Dotted key, e.g. search.alpha or daemon.port.")]) -> None:
    """Print a key's value (its default when agent.yaml does not set it); a section prints as YAML."""
    path = _config_path()
    settings = load_settings(path)
    extra = settings.model_extra or {}
    walk: list[str]
    value: Any
    if key.split(".")[0] in extra:  # a top-level key another tool keeps in agent.yaml
        walk, value = key.split("."), extra
    else:
        walk, value = [c for c, _ in _resolve(key)], settings.model_dump(mode="json", by_alias=True)
    for i, part in enumerate(walk):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            raise SignetError(f"'{'.'.join(walk[: i + 1])}' is not set in {path}")
    typer.echo(_format(value))


def _parse_value(text: str) -> Any:
    try:
        return yaml.safe_load(text) if text.strip() else text
    except yaml.YAMLError:
        return text  # not YAML: the literal string


def _place(data: dict[str, Any], parts: list[tuple[str, str | None]], value: Any) -> tuple[dict[str, Any], list[str]]:
    """A copy of ``data`` with ``value`` at ``parts``, and the key spellings used: the file's own
    spelling of each key (snake_case or camelCase) where it has one."""
    root: dict[str, Any] = dict(data)
    node = root
    spellings: list[str] = []
    for i, (canonical, name) in enumerate(parts):
        spelling = next((k for k in node if k in (canonical, name)), canonical)
        spellings.append(spelling)
        if i == len(parts) - 1:
            node[spelling] = value
        else:
            child = node.get(spelling)
            node[spelling] = dict(child) if isinstance(child, dict) else {}
            node = node[spelling]
    return root, spellings


def _inline(value: Any) -> str:
    """``value`` as YAML on one line (flow style)."""
    return yaml.safe_dump([value], default_flow_style=True, allow_unicode=True, width=2**31).strip()[1:-1]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _is_content(line: str) -> bool:
    return bool(line.strip()) and not line.lstrip().startswith("#")


def _edit_text(text: str, spellings: list[str], value: Any, expected: dict[str, Any]) -> str | None:
    """``text`` with only the line of the key changed (or the missing keys added), so comments
    and layout survive; None when the file's layout is not one this can edit safely. The result
    is accepted only if it parses to exactly ``expected``."""
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    start, end, parent_indent = 0, len(lines), -1
    for depth, key in enumerate(spellings):
        pattern = re.compile(rf"(?:{re.escape(key)}|'{re.escape(key)}'|\"{re.escape(key)}\")\s*:(?=\s|$)")
        child_indent: int | None = None
        found: int | None = None
        block_end = end
        for i in range(start, end):
            if not _is_content(lines[i]):
                continue
            ind = _indent(lines[i])
            if ind <= parent_indent:
                block_end = i
                break
            child_indent = ind if child_indent is None else child_indent
            if ind == child_indent and pattern.match(lines[i].lstrip(" ")):
                found = i
                break
        if found is None:  # add the rest of the path at the end of the parent's block
            ind = child_indent if child_indent is not None else parent_indent + 2
            added = []
            for k in spellings[depth:-1]:
                added.append(" " * ind + _inline(k) + ":\n")
                ind += 2
            added.append(" " * ind + _inline(spellings[-1]) + ": " + _inline(value) + "\n")
            while block_end > start and not _is_content(lines[block_end - 1]):
                block_end -= 1
            candidate = [*lines[:block_end], *added, *lines[block_end:]]
            break
        ind = _indent(lines[found])
        stop = found + 1  # the key's own block (a nested value) ends at the next line not deeper
        while stop < end and (not _is_content(lines[stop]) or _indent(lines[stop]) > ind):
            stop += 1
        if depth < len(spellings) - 1:
            start, end, parent_indent = found + 1, stop, ind
            continue
        head = lines[found][: lines[found].index(":", ind + len(key)) + 1]
        comment = re.search(r"\s+#.*$", lines[found].rstrip("\n"))
        while stop > found + 1 and not _is_content(lines[stop - 1]):
            stop -= 1
        for keep_comment in (True, False):
            said = comment.group(0) if keep_comment and comment else ""
            candidate = [*lines[:found], f"{head} {_inline(value)}{said}\n", *lines[stop:]]
            if _parses_to("".join(candidate), expected):
                return "".join(candidate)
        return None
    else:
        return None
    result = "".join(candidate)
    return result if _parses_to(result, expected) else None


def _parses_to(text: str, expected: dict[str, Any]) -> bool:
    try:
        return bool(yaml.safe_load(text) == expected)
    except yaml.YAMLError:
        return False


@config_app.command("set")
def set_(
    key: Annotated[str, typer.Argument(help="Dotted key, e.g. search.alpha.")],
    value: Annotated[str, typer.Argument(help="The value, read as YAML: 0.7, true, [a, b], or text.")],
) -> None:
    """Set a key in agent.yaml: the whole resulting file is validated first, then written in one
    rename; other keys, comments and layout are kept (only the key's line changes)."""
    path = _config_path()
    data = _read_raw(path)
    parts = _resolve(key)
    parsed = _parse_value(value)
    candidates = [parsed] if parsed == value else [parsed, value]  # `123` for a text key: the text
    error: ConfigError | None = None
    for candidate in candidates:
        new, spellings = _place(data, parts, candidate)
        try:
            parse_settings(new, source=str(path))
        except ConfigError as exc:
            error = error or exc
            continue
        text = _edit_text(path.read_text(encoding="utf-8"), spellings, candidate, new)
        if text is None:  # a layout the line edit cannot follow: the whole file, without its comments
            text = yaml.safe_dump(new, sort_keys=False, allow_unicode=True, default_flow_style=False)
        write_atomic(path, text.encode("utf-8"))
        shown = ".".join(c for c, _ in parts)
        typer.echo(f"{shown} = {_inline(candidate) if isinstance(candidate, (dict, list)) else _format(candidate)}")
        _restart_note(shown)
        return
    assert error is not None
    raise SignetError(f"not set, agent.yaml unchanged: {error.message}")


@config_app.command("validate")
def validate() -> None:
    """Check agent.yaml against the settings model (exit 1 with the key at fault if it is invalid)."""
    path = _config_path()
    if not path.exists():
        raise SignetError(f"no agent.yaml at {path}; run `signet setup` first")
    settings = load_settings(path)
    for key in unknown_top_level_keys(settings):
        near = top_level_near_miss(key)
        said = f"; did you mean {near}?" if near else " (kept for other tools, not read by Signet)"
        typer.secho(f"note: unknown top-level key '{key}'{said}", err=True, fg="yellow")
    typer.echo(f"{path}: valid")


def _editor() -> list[str]:
    for var in ("VISUAL", "EDITOR"):
        cmd = os.environ.get(var, "").strip()
        if cmd:
            return shlex.split(cmd)
    for fallback in ("editor", "vi", "nano"):
        if shutil.which(fallback):
            return [fallback]
    raise SignetError("no editor: set $VISUAL or $EDITOR")


@config_app.command("edit")
def edit() -> None:
    """Open agent.yaml in $VISUAL or $EDITOR; the result replaces agent.yaml only if it is valid.

    You edit a copy: an invalid result leaves agent.yaml as it was, and your edit is kept in a
    file the error names, to fix and edit again."""
    path = _config_path()
    if not path.exists():
        raise SignetError(f"no agent.yaml at {path}; run `signet setup` first")
    original = path.read_bytes()
    scratch = Path(tempfile.mkdtemp(prefix="signet-config-")) / "agent.yaml"
    scratch.write_bytes(original)
    argv = [*_editor(), str(scratch)]
    try:
        done = subprocess.run(argv, check=False)
    except OSError as exc:
        raise SignetError(f"could not run the editor {argv[0]!r}: {exc.strerror or exc}") from None
    edited = scratch.read_bytes()
    if done.returncode != 0:
        kept = f" (your edit is kept at {scratch})" if edited != original else ""
        if not kept:
            shutil.rmtree(scratch.parent, ignore_errors=True)
        raise SignetError(f"the editor exited with {done.returncode}; agent.yaml unchanged{kept}")
    if edited == original:
        shutil.rmtree(scratch.parent, ignore_errors=True)
        typer.echo("no changes")
        return
    try:
        load_settings(scratch)
    except ConfigError as exc:
        raise SignetError(
            f"agent.yaml unchanged, the edit is invalid: {exc.message} (your edit is kept there)"
        ) from None
    if path.read_bytes() != original:
        raise SignetError(f"agent.yaml changed while you edited it; not overwritten, your edit is kept at {scratch}")
    write_atomic(path, edited)
    shutil.rmtree(scratch.parent, ignore_errors=True)
    typer.echo(f"{path}: saved")
    _restart_note()
