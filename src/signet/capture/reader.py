"""Reading a growing JSONL file from a byte offset: complete lines only.

A harness appends one JSON object per line and may be caught mid-write, so only bytes up to
the last newline are taken; the half-written tail waits for the next read. A last line
without its newline is taken only when it already parses as a whole JSON object (a JSON
object cannot be a prefix of a longer one), so a session whose writer died before the final
newline is not lost. The offset returned always ends where a read stopped, never inside a
line, so the next read starts at the next line.

Whether the file is still the one the cursor describes is decided by :func:`replaced`: a
different device or inode (rotated, replaced by a rename), a file shorter than the offset
(truncated), or different first bytes (rewritten in place).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from typing import Any, BinaryIO

HEAD_BYTES = 1024
"""How much of the file's start is hashed to recognise it."""
BATCH_BYTES = 4 * 1024 * 1024
"""Read at most this much per step: a huge backlog is stored in bounded transactions."""
MAX_LINE_BYTES = 32 * 1024 * 1024
"""A single line longer than this (a runaway tool result) is skipped, not held in memory."""


@dataclass
class Chunk:
    """The complete lines read from ``start`` to ``end`` (exclusive)."""

    start: int
    end: int
    records: list[dict[str, Any]] = field(default_factory=list)
    skipped: int = 0
    """Lines that were not JSON objects (or too long): counted, passed over."""


def head_hash(fh: BinaryIO, upto: int) -> str:
    """sha256 of the file's first ``min(upto, HEAD_BYTES)`` bytes."""
    fh.seek(0)
    return hashlib.sha256(fh.read(min(upto, HEAD_BYTES))).hexdigest()


def replaced(
    fh: BinaryIO, st: os.stat_result, *, offset: int, device: int | None, inode: int | None, head: str | None
) -> bool:
    """True when the open file is not the file a cursor at ``offset`` was taken on."""
    if offset == 0:
        return False
    if device is not None and inode is not None and (st.st_dev, st.st_ino) != (device, inode):
        return True
    if st.st_size < offset:
        return True
    return head is not None and head_hash(fh, offset) != head


def _object(line: bytes) -> dict[str, Any] | None:
    try:
        val = json.loads(line.decode("utf-8", "replace"))
    except ValueError:
        return None
    return val if isinstance(val, dict) else None


def read_chunk(fh: BinaryIO, start: int, size: int) -> Chunk:
    """The next complete lines after ``start`` in a file of ``size`` bytes (at most about
    :data:`BATCH_BYTES`); ``end == start`` when there is nothing complete to take yet."""
    out = Chunk(start, start)
    if start >= size:
        return out
    fh.seek(start)
    data = fh.read(min(size - start, BATCH_BYTES))
    cut = data.rfind(b"\n")
    while cut < 0 and start + len(data) < size:
        if len(data) >= MAX_LINE_BYTES:
            return _skip_long_line(fh, start, size)
        more = fh.read(min(size - start - len(data), BATCH_BYTES))
        if not more:
            break
        idx = more.rfind(b"\n")
        cut = len(data) + idx if idx >= 0 else -1
        data += more
    body, tail = (data[: cut + 1], data[cut + 1 :]) if cut >= 0 else (b"", data)
    for line in body.split(b"\n"):
        if not line.strip():
            continue
        obj = _object(line)
        if obj is None:
            out.skipped += 1
        else:
            out.records.append(obj)
    out.end = start + len(body)
    if tail.strip() and start + len(data) >= size:
        last = _object(tail)
        if last is not None:  # complete object, newline not (yet) written
            out.records.append(last)
            out.end = size
    return out


def _skip_long_line(fh: BinaryIO, start: int, size: int) -> Chunk:
    """Pass over one line longer than :data:`MAX_LINE_BYTES` once its newline is written."""
    pos = start
    fh.seek(start)
    while pos < size:
        block = fh.read(min(size - pos, BATCH_BYTES))
        if not block:
            break
        idx = block.find(b"\n")
        if idx >= 0:
            return Chunk(start, pos + idx + 1, skipped=1)
        pos += len(block)
    return Chunk(start, start)  # its end is not written yet
