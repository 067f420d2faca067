"""Change a JSON or JSON5 file's data with the smallest text edits, keeping the user's layout.

Installers used to parse a config file, change the data and dump it again: the user's indent,
spacing, single-line objects and (for JSON5) comments, unquoted keys and trailing commas were
lost. Here the change is made on the text instead. A small scanner finds where each member
and element sits; :func:`edit_text` then makes one local edit at a time (insert a member
after the last one, remove one, append to an array, replace one value) written in the style
the surrounding text already uses, scans again, and stops when the text parses to the
intended data. Everything it does not touch stays byte-for-byte.

The result is always checked by parsing it with the real parser (``json`` or the ``json5``
package) and comparing with the intended data; :class:`LayoutError` is raised when they
differ, so a caller can leave the file alone and tell the user what to add instead
(:func:`describe_changes`).

Stdlib only at import time (this package is imported by ``signet hook`` on every prompt);
``json5`` is imported when a JSON5 file is read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Parse = Callable[[str], Any]
_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*\Z")
_MAX_STEPS = 500


class LayoutError(ValueError):
    """The text could not be changed in place to hold the intended data."""


def parse_json5(text: str) -> Any:
    """JSON5 (comments, trailing commas, unquoted keys, single quotes), via the ``json5`` package."""
    import json5

    return json5.loads(text)


# -- the scanner ------------------------------------------------------------------------------


@dataclass
class Node:
    """A value's place in the text: ``[start, end)``; containers also know their entries."""

    start: int
    end: int
    kind: str  # "object", "array" or "scalar"
    entries: list[Entry] = field(default_factory=list)

    @property
    def close(self) -> int:
        """Index of the closing bracket of a container."""
        return self.end - 1


@dataclass
class Entry:
    """One object member or array element: where it starts (its key, for members), its
    value, and the comma after it, if any."""

    start: int
    key: str | None
    value: Node
    comma: int | None
    quoted_key: bool = True
    colon: int | None = None

    @property
    def end(self) -> int:
        return self.value.end


class _Scanner:
    def __init__(self, text: str, decode_string: Parse) -> None:
        self.text = text
        self.decode_string = decode_string

    def fail(self, i: int, what: str) -> LayoutError:
        return LayoutError(f"unexpected text at offset {i}: {what}")

    def skip(self, i: int) -> int:
        """Skip whitespace and comments."""
        t = self.text
        while i < len(t):
            c = t[i]
            if c.isspace() or c == "\ufeff":
                i += 1
            elif t.startswith("//", i):
                nl = t.find("\n", i)
                i = len(t) if nl < 0 else nl + 1
            elif t.startswith("/*", i):
                end = t.find("*/", i + 2)
                if end < 0:
                    raise self.fail(i, "unterminated comment")
                i = end + 2
            else:
                break
        return i

    def string_end(self, i: int) -> int:
        t, quote = self.text, self.text[i]
        j = i + 1
        while j < len(t):
            if t[j] == "\\":
                j += 2
                continue
            if t[j] == quote:
                return j + 1
            j += 1
        raise self.fail(i, "unterminated string")

    def value(self, i: int) -> Node:
        t = self.text
        if i >= len(t):
            raise self.fail(i, "end of text")
        c = t[i]
        if c == "{":
            return self.container(i, "}", "object")
        if c == "[":
            return self.container(i, "]", "array")
        if c in "\"'":
            return Node(i, self.string_end(i), "scalar")
        j = i
        while j < len(t) and not t[j].isspace() and t[j] not in ",]}:" and not t.startswith("/", j):
            j += 1
        if j == i:
            raise self.fail(i, repr(c))
        return Node(i, j, "scalar")

    def key(self, i: int) -> tuple[str, int, bool]:
        t = self.text
        if t[i] in "\"'":
            end = self.string_end(i)
            decoded = self.decode_string(t[i:end])
            if not isinstance(decoded, str):
                raise self.fail(i, "a key that is not a string")
            return decoded, end, True
        j = i
        while j < len(t) and (t[j].isalnum() or t[j] in "_$" or ord(t[j]) > 127):
            j += 1
        if j == i:
            raise self.fail(i, "a key was expected")
        return t[i:j], j, False

    def container(self, i: int, closer: str, kind: str) -> Node:
        t = self.text
        node = Node(i, -1, kind)
        j = self.skip(i + 1)
        while True:
            if j >= len(t):
                raise self.fail(i, "unclosed bracket")
            if t[j] == closer:
                node.end = j + 1
                return node
            start = j
            key: str | None = None
            quoted = True
            colon = None
            if kind == "object":
                key, j, quoted = self.key(j)
                j = self.skip(j)
                if j >= len(t) or t[j] != ":":
                    raise self.fail(j, "':' was expected")
                colon = j
                j = self.skip(j + 1)
            value = self.value(j)
            j = self.skip(value.end)
            comma = None
            if j < len(t) and t[j] == ",":
                comma = j
                j = self.skip(j + 1)
            elif j < len(t) and t[j] != closer:
                raise self.fail(j, "',' was expected")
            node.entries.append(Entry(start, key, value, comma, quoted, colon))


def scan(text: str, decode_string: Parse = json.loads) -> Node:
    """Where every value of ``text`` sits. ``decode_string`` turns a quoted key into text."""
    s = _Scanner(text, decode_string)
    node = s.value(s.skip(0))
    if s.skip(node.end) != len(text):
        raise s.fail(node.end, "text after the top-level value")
    return node


# -- style ---------------------------------------------------------------------------------------


@dataclass
class Style:
    """How the file writes things, so new text looks like the old."""

    unit: str = "  "
    newline: str = "\n"
    colon: str = ": "
    inline_sep: str = ", "
    bare_keys: bool = False
    trailing_commas: bool = False
    json5: bool = False
    multiline: bool = True
    pad: str = ""
    """Space inside the brackets of single-line containers (``{ a: 1 }``)."""


def detect_style(text: str, root: Node, *, json5: bool) -> Style:
    st = Style(json5=json5, newline="\r\n" if "\r\n" in text else "\n")
    st.multiline = "\n" in text.strip()
    indents = [m.group(1) for m in re.finditer(r"\n([ \t]+)\S", text)]
    if indents:
        if any(i.startswith("\t") for i in indents):
            st.unit = "\t"
        else:
            st.unit = " " * min(len(i) for i in indents)
    members: list[Entry] = []
    trailing: list[bool] = []
    seps: list[str] = []
    pads: list[str] = []

    def walk(n: Node) -> None:
        if n.kind == "object":
            members.extend(n.entries)
        if n.entries and "\n" in text[n.start : n.end]:
            trailing.append(n.entries[-1].comma is not None)
        elif n.entries:
            pads.append(text[n.start + 1 : n.entries[0].start])
            if len(n.entries) >= 2 and n.entries[0].comma is not None:
                seps.append(text[n.entries[0].comma : n.entries[1].start])
        for e in n.entries:
            walk(e.value)

    walk(root)
    if members:
        first = members[0]
        assert first.colon is not None  # object members always have one
        between = text[first.colon + 1 : first.value.start]
        st.colon = ":" + (" " if between.startswith((" ", "\t")) else "")
        if json5:
            bare = sum(1 for m in members if not m.quoted_key)
            st.bare_keys = bare * 2 > len(members)
    if json5 and trailing:
        st.trailing_commas = sum(trailing) * 2 > len(trailing)
    plain = [s for s in seps if s[1:].strip() == ""]
    st.inline_sep = plain[0] if plain else ("," + st.colon[1:])
    st.pad = " " if pads and sum(p == " " for p in pads) * 2 > len(pads) else ""
    return st


def _line_start(text: str, i: int) -> int:
    return text.rfind("\n", 0, i) + 1


def _line_end(text: str, i: int) -> int:
    nl = text.find("\n", i)
    return len(text) if nl < 0 else nl


def _indent_of_line(text: str, i: int) -> str:
    ls = _line_start(text, i)
    m = re.match(r"[ \t]*", text[ls:])
    return m.group(0) if m else ""


def _key_text(key: str, st: Style, bare_here: bool) -> str:
    if st.json5 and bare_here and _IDENT.match(key):
        return key
    return json.dumps(key, ensure_ascii=False)


def render(value: Any, indent: str, st: Style, *, multiline: bool, bare: bool | None = None) -> str:
    """``value`` as text in the file's style; continuation lines start with ``indent``."""
    bare_here = st.bare_keys if bare is None else bare
    if isinstance(value, dict) and value:
        items = [
            f"{_key_text(str(k), st, bare_here)}{st.colon}{render(v, indent + st.unit, st, multiline=multiline)}"
            for k, v in value.items()
        ]
        return _wrap("{", "}", items, indent, st, multiline)
    if isinstance(value, list) and value:
        items = [render(v, indent + st.unit, st, multiline=multiline) for v in value]
        return _wrap("[", "]", items, indent, st, multiline)
    if isinstance(value, dict):
        return "{}"
    if isinstance(value, list):
        return "[]"
    return json.dumps(value, ensure_ascii=False)


def _wrap(open_: str, close: str, items: list[str], indent: str, st: Style, multiline: bool) -> str:
    if not multiline:
        return open_ + st.pad + st.inline_sep.join(items) + st.pad + close
    inner = indent + st.unit
    body = ("," + st.newline).join(inner + it for it in items)
    return open_ + st.newline + body + ("," if st.trailing_commas else "") + st.newline + indent + close


# -- one step ------------------------------------------------------------------------------------

Edit = tuple[int, int, str]


def _apply(text: str, edits: list[Edit]) -> str:
    for a, b, s in sorted(edits, key=lambda e: e[0], reverse=True):
        text = text[:a] + s + text[b:]
    return text


def _same_line(text: str, a: int, b: int) -> bool:
    return "\n" not in text[a:b]


def _after_same_line_comment(text: str, i: int) -> int:
    """Past a comment that ends the line at ``i`` (so an insertion lands below it)."""
    rest_end = _line_end(text, i)
    rest = text[i:rest_end].strip()
    if rest.startswith("//") or (rest.startswith("/*") and rest.endswith("*/")):
        return rest_end
    return i


def _insert(text: str, node: Node, key: str | None, value: Any, st: Style) -> list[Edit]:
    """Add a member (``key``) or element (``key`` None) at the end of ``node``."""
    multiline = "\n" in text[node.start : node.end]
    base = _indent_of_line(text, node.start)
    bare_here = all(not e.quoted_key for e in node.entries) if node.entries and node.kind == "object" else st.bare_keys
    if not node.entries:
        expand = st.multiline and text[node.close + 1 : _line_end(text, node.close)].strip() in ("", ",")
        indent = base + st.unit
        item = render(value, indent, st, multiline=expand)
        entry = item if key is None else f"{_key_text(key, st, bare_here)}{st.colon}{item}"
        interior = text[node.start + 1 : node.close]
        if interior.strip():  # only comments inside: put the entry below them
            ls = _line_start(text, node.close)
            if text[ls : node.close].strip() == "":
                tail = "," if st.trailing_commas else ""
                return [(ls, ls, f"{indent}{entry}{tail}{st.newline}")]
            return [(node.close, node.close, f"{st.newline}{indent}{entry}{st.newline}{base}")]
        if expand:
            tail = "," if st.trailing_commas else ""
            return [(node.start + 1, node.close, f"{st.newline}{indent}{entry}{tail}{st.newline}{base}")]
        return [(node.start + 1, node.close, entry)]
    last = node.entries[-1]
    if not multiline:
        item = render(value, base, st, multiline=False)
        entry = item if key is None else f"{_key_text(key, st, bare_here)}{st.colon}{item}"
        if last.comma is not None:
            return [(last.comma + 1, last.comma + 1, f" {entry},")]
        return [(last.end, last.end, st.inline_sep + entry)]
    own_line = text[_line_start(text, last.start) : last.start].strip() == ""
    indent = _indent_of_line(text, last.start) if own_line else base + st.unit
    # Beside a sibling written on one line ({ enabled: true }), write the new value likewise.
    inline = last.value.kind != "scalar" and "\n" not in text[last.value.start : last.value.end]
    item = render(value, indent, st, multiline=not inline)
    entry = item if key is None else f"{_key_text(key, st, bare_here)}{st.colon}{item}"
    if last.comma is not None:
        at = _after_same_line_comment(text, last.comma + 1)
        return [(at, at, f"{st.newline}{indent}{entry},")]
    at = _after_same_line_comment(text, last.end)
    if at == last.end:
        return [(last.end, last.end, f",{st.newline}{indent}{entry}")]
    return [(last.end, last.end, ","), (at, at, f"{st.newline}{indent}{entry}")]


def _remove(text: str, node: Node, i: int) -> list[Edit]:
    entries = node.entries
    e = entries[i]
    is_last = i == len(entries) - 1
    if is_last and e.comma is None and i > 0:
        prev = entries[i - 1]
        assert prev.comma is not None  # every entry but the last has one
        if _same_line(text, prev.comma, e.start):
            return [(prev.end, e.end, "")]
        a, b = _line_start(text, e.start), e.end
        if text[a : e.start].strip() == "" and text[b : _line_end(text, b)].strip() == "":
            return [(prev.comma, prev.comma + 1, ""), (a - 1, _line_end(text, b), "")]
        return [(prev.comma, prev.comma + 1, ""), (e.start, e.end, "")]
    a, b = e.start, (e.comma + 1 if e.comma is not None else e.end)
    ls, le = _line_start(text, a), _line_end(text, b)
    if text[ls:a].strip() == "" and text[b:le].strip() == "" and not _same_line(text, node.start, a):
        return [(ls, min(le + 1, len(text)), "")]
    if not is_last:
        return [(a, entries[i + 1].start, "")]
    return [(a, b, "")]


def _step(text: str, node: Node, old: Any, new: Any, st: Style) -> list[Edit]:
    """The first edit that brings ``old`` (the value at ``node``) closer to ``new``."""
    if isinstance(old, dict) and isinstance(new, dict) and node.kind == "object":
        by_key = {e.key: idx for idx, e in enumerate(node.entries)}  # the last duplicate wins, as in parsers
        for k in old:
            if k not in new:
                return _remove(text, node, by_key[k])
        for k in old:
            if old[k] != new[k]:
                return _step(text, node.entries[by_key[k]].value, old[k], new[k], st)
        for k in new:
            if k not in old:
                return _insert(text, node, k, new[k], st)
        return []
    if isinstance(old, list) and isinstance(new, list) and node.kind == "array" and len(node.entries) == len(old):
        n = min(len(old), len(new))
        first = next((i for i in range(n) if old[i] != new[i]), n)
        if len(old) > len(new) and (first == n or old[first + 1 :] == new[first:]):
            return _remove(text, node, first)
        if first < n:
            return _step(text, node.entries[first].value, old[first], new[first], st)
        return _insert(text, node, None, new[len(old)], st)
    multiline = "\n" in text[node.start : node.end] or (st.multiline and node.kind == "scalar")
    return [(node.start, node.end, render(new, _indent_of_line(text, node.start), st, multiline=multiline))]


def edit_text(text: str, new: Any, *, json5: bool = False) -> str:
    """``text`` changed to hold ``new``, keeping everything else as written.

    Raises :class:`LayoutError` when that cannot be done (the caller should then change
    nothing and say what to add, see :func:`describe_changes`).
    """
    parse: Parse = parse_json5 if json5 else json.loads
    old = parse(text)
    if isinstance(old, dict | list) and not old and text.strip() in ("{}", "[]"):
        # Nothing of the user's to keep: write it out readably.
        return json.dumps(new, indent=2, ensure_ascii=False) + "\n"
    try:
        for _ in range(_MAX_STEPS):
            if old == new:
                return text
            root = scan(text, parse)
            edits = _step(text, root, old, new, detect_style(text, root, json5=json5))
            if not edits:
                break
            text = _apply(text, edits)
            old = parse(text)
    except LayoutError:
        raise
    except ValueError as exc:  # an edit made text the parser refuses
        raise LayoutError(f"an in-place edit produced invalid text ({exc})") from None
    raise LayoutError("the edited text does not hold the intended data")


# -- saying what to change by hand ----------------------------------------------------------


def _path(parts: list[str]) -> str:
    out = ""
    for p in parts:
        out += f".{p}" if _IDENT.match(p) else f"[{json.dumps(p, ensure_ascii=False)}]"
    return out.lstrip(".") or "(top level)"


def describe_changes(old: Any, new: Any, path: list[str] | None = None) -> list[str]:
    """What turns ``old`` into ``new``, one line per change, for a person to make by hand."""
    path = path or []
    if isinstance(old, dict) and isinstance(new, dict):
        lines: list[str] = []
        for k in old:
            if k not in new:
                lines.append(f"remove {_path([*path, str(k)])}")
        for k in new:
            if k not in old:
                lines.append(f"add {_path([*path, str(k)])} = {json.dumps(new[k], ensure_ascii=False)}")
            elif old[k] != new[k]:
                lines.extend(describe_changes(old[k], new[k], [*path, str(k)]))
        return lines
    if isinstance(old, list) and isinstance(new, list) and new[: len(old)] == old:
        return [f"append to {_path(path)}: {json.dumps(v, ensure_ascii=False)}" for v in new[len(old) :]]
    return [f"set {_path(path)} = {json.dumps(new, ensure_ascii=False)}"]
