"""Reading a growing JSONL file: complete lines only, from a byte offset, and noticing a
truncated or replaced file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from signet.capture import reader
from signet.capture.reader import head_hash, read_chunk, replaced


def _read(path: Path, start: int) -> reader.Chunk:
    with path.open("rb") as fh:
        return read_chunk(fh, start, path.stat().st_size)


def test_a_half_written_last_line_waits_and_a_complete_one_without_newline_is_taken(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    a, b = json.dumps({"n": 1}) + "\n", json.dumps({"n": 2, "text": "two"})
    f.write_text(a + b[:7])
    first = _read(f, 0)
    assert [r["n"] for r in first.records] == [1] and first.end == len(a)
    assert _read(f, first.end).end == first.end  # the half line: nothing to take yet
    f.write_text(a + b)  # its end written, still no newline: a whole object, taken
    second = _read(f, first.end)
    assert [r["n"] for r in second.records] == [2] and second.end == len(a) + len(b)
    with f.open("a") as fh:  # the newline arrives later: a blank line, nothing read twice
        fh.write("\n" + json.dumps({"n": 3}) + "\n")
    third = _read(f, second.end)
    assert [r["n"] for r in third.records] == [3] and third.end == f.stat().st_size


def test_lines_that_are_not_json_objects_are_counted_and_passed_over(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    f.write_text('{"n": 1}\nnot json at all\n[1, 2]\n\n{"n": 2}\n')
    chunk = _read(f, 0)
    assert [r["n"] for r in chunk.records] == [1, 2] and chunk.skipped == 2 and chunk.end == f.stat().st_size


def test_a_huge_backlog_is_read_in_bounded_batches_ending_on_line_boundaries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    f = tmp_path / "s.jsonl"
    lines = [json.dumps({"n": i, "pad": "x" * 500}) + "\n" for i in range(30)]
    f.write_text("".join(lines))
    monkeypatch.setattr(reader, "BATCH_BYTES", 2000)  # a small batch: several reads
    seen: list[int] = []
    pos = reads = 0
    while True:
        chunk = _read(f, pos)
        if chunk.end == pos:
            break
        reads += 1
        assert f.read_bytes()[chunk.end - 1 : chunk.end] == b"\n"
        seen += [r["n"] for r in chunk.records]
        pos = chunk.end
    assert seen == list(range(30)) and reads > 5


def test_a_line_longer_than_the_limit_is_skipped_once_its_end_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    f = tmp_path / "s.jsonl"
    monkeypatch.setattr(reader, "BATCH_BYTES", 1000)
    monkeypatch.setattr(reader, "MAX_LINE_BYTES", 3000)
    f.write_text('{"n": 1}\n' + '{"pad": "' + "y" * 5000)
    first = _read(f, 0)
    assert [r["n"] for r in first.records] == [1]
    assert _read(f, first.end).end == first.end  # its end is not written: wait
    with f.open("a") as fh:
        fh.write('"}\n{"n": 2}\n')
    skipped = _read(f, first.end)
    assert skipped.skipped == 1 and skipped.records == []
    after = _read(f, skipped.end)
    assert [r["n"] for r in after.records] == [2]


def test_truncation_replacement_and_rewrite_are_noticed(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    f.write_text('{"n": 1}\n{"n": 2}\n')
    st = f.stat()
    with f.open("rb") as fh:
        head = head_hash(fh, st.st_size)
        assert not replaced(fh, st, offset=st.st_size, device=st.st_dev, inode=st.st_ino, head=head)
    f.write_text('{"n": 1}\n')  # truncated in place
    with f.open("rb") as fh:
        assert replaced(fh, f.stat(), offset=st.st_size, device=st.st_dev, inode=st.st_ino, head=head)
    f.write_text('{"n": 9}\n{"n": 2}\n{"n": 3}\n')  # rewritten in place, longer
    with f.open("rb") as fh:
        assert replaced(fh, f.stat(), offset=st.st_size, device=st.st_dev, inode=st.st_ino, head=head)
    other = tmp_path / "new.jsonl"
    other.write_text('{"n": 1}\n{"n": 2}\n{"n": 3}\n')
    other.replace(f)  # rotated: same first bytes, another inode
    with f.open("rb") as fh:
        st2 = f.stat()
        assert st2.st_ino != st.st_ino
        assert replaced(fh, st2, offset=st.st_size, device=st.st_dev, inode=st.st_ino, head=head)
