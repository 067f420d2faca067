"""Mask every form of a secret a command is likely to print.

For each value the forms are: the raw UTF-8 bytes; base64 in the standard and the URL-safe
alphabets, padded and unpadded; the part of a longer base64 text that encodes the value, at
each of the three byte alignments it can start at (what ``echo $TOKEN | base64`` prints: the
value followed by a newline, encoded together); percent-encoding (upper- and lower-case
escapes, ``+`` or ``%20`` for spaces); and hex in both cases. The aligned base64 parts are
exact: a character is included only when all six of its bits come from the value, so the
part appears in *any* base64 text that contains the value at that alignment, whatever comes
before or after it. Parts shorter than :data:`MIN_DERIVED` characters are left out (they
would mask unrelated text); the raw value is always masked, however short.

Masking is by intervals: every occurrence of every form (overlaps included) is found, the
intervals are merged and each merged run is replaced once, so one form can never hide part
of another and leave the rest readable.

What this cannot catch, and docs/secrets.md says so: a value the command transforms in any
other way (reversed, split, hashed, base64 wrapped across lines, another encoding).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from urllib.parse import quote, quote_plus

MIN_DERIVED = 6
"""Shortest derived form (base64 part, encoding) that is masked."""

_ESCAPE = re.compile(rb"%[0-9A-F]{2}")


def _aligned(value: bytes, offset: int, encode: Callable[[bytes], bytes]) -> bytes:
    """The base64 characters fully determined by ``value`` when it starts ``offset`` bytes
    (0, 1 or 2) into a 3-byte group."""
    encoded = encode(b"\0" * offset + value + b"\0\0")
    start_bit, end_bit = 8 * offset, 8 * (offset + len(value))
    return encoded[-(-start_bit // 6) : end_bit // 6]


def forms(value: str) -> set[bytes]:
    """Every byte string that gives ``value`` away."""
    raw = value.encode("utf-8")
    derived: set[bytes] = set()
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        full = encode(raw)
        derived.update((full, full.rstrip(b"=")))
        derived.update(_aligned(raw, k, encode) for k in range(3))
    for text in (quote(value, safe=""), quote(value), quote_plus(value), quote(value, safe="/:@")):
        escaped = text.encode("ascii")
        derived.update((escaped, _ESCAPE.sub(lambda m: m.group(0).lower(), escaped)))
    derived.update((raw.hex().encode("ascii"), raw.hex().upper().encode("ascii")))
    kept = {f for f in derived if len(f) >= MIN_DERIVED}
    kept.add(raw)
    return kept


@dataclass(frozen=True)
class Redactor:
    """Masks the values of named secrets: ``Redactor.of({"TOKEN": value}).bytes(output)``."""

    patterns: dict[bytes, frozenset[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, values: Mapping[str, str]) -> Redactor:
        patterns: dict[bytes, set[str]] = {}
        for name, value in values.items():
            if value:
                for form in forms(value):
                    patterns.setdefault(form, set()).add(name)
        return cls({p: frozenset(n) for p, n in patterns.items()})

    @property
    def margin(self) -> int:
        """How far a cut output must extend past its limit (see :meth:`bytes`): the longest form,
        three times over for the line breaks a wrapped form may carry."""
        return 3 * max((len(p) for p in self.patterns), default=0)

    def _occurrences(self, data: bytes) -> list[tuple[int, int, frozenset[str]]]:
        spans = []
        for pattern, names in self.patterns.items():
            at = data.find(pattern)
            while at != -1:
                spans.append((at, at + len(pattern), names))
                at = data.find(pattern, at + 1)
        return spans

    def spans(self, data: bytes) -> list[tuple[int, int, frozenset[str]]]:
        """The runs of ``data`` to mask, in order and disjoint: (start, end, secret names).

        Forms are found as they are and with line breaks anywhere inside them (``base64`` wraps
        its output every 76 characters; a masked run then takes the breaks with it)."""
        spans = self._occurrences(data)
        if b"\n" in data or b"\r" in data:
            unbroken = self._occurrences(data.translate(None, b"\r\n"))
            if unbroken:
                kept = [i for i, byte in enumerate(data) if byte not in (10, 13)]
                spans += [(kept[start], kept[end - 1] + 1, names) for start, end, names in unbroken]
        spans.sort(key=lambda s: s[0])
        merged: list[tuple[int, int, frozenset[str]]] = []
        for start, end, names in spans:
            if merged and start <= merged[-1][1]:
                last = merged[-1]
                merged[-1] = (last[0], max(last[1], end), last[2] | names)
            else:
                merged.append((start, end, names))
        return merged

    def bytes(self, data: bytes, *, limit: int | None = None) -> tuple[bytes, int]:
        """``data`` with every form masked as ``[REDACTED:NAME]`` (:meth:`spans`), and how many
        runs were masked.

        ``limit``: keep only what starts before this offset (a masked run that starts before it
        is kept whole, as its mask). ``data`` must then extend at least :attr:`margin` bytes
        past ``limit`` when the output was cut: a value cut off at the very end of ``data`` is
        then past ``limit`` and dropped, never shown in part."""
        merged = self.spans(data)
        end_at = len(data) if limit is None else min(limit, len(data))
        out = bytearray()
        pos = 0
        for start, end, names in merged:
            if start >= end_at:
                break
            out += data[pos:start]
            out += b"[REDACTED:" + ",".join(sorted(names)).encode("ascii") + b"]"
            pos = end
        if pos < end_at:
            out += data[pos:end_at]
        return bytes(out), len([m for m in merged if m[0] < end_at])

    def text(self, text: str) -> str:
        """A string with every form masked (a command line, an error message)."""
        masked, _ = self.bytes(text.encode("utf-8", errors="surrogatepass"))
        return masked.decode("utf-8", errors="replace")
