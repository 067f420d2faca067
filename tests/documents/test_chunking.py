"""Chunking: markdown by headings with the heading path kept, long sections by paragraph,
other text in overlapping windows; extraction of titles and kinds."""

from __future__ import annotations

import itertools

import pytest

from signet.documents.chunking import chunk_markdown, chunk_windows
from signet.documents.errors import DocumentFailed
from signet.documents.extract import extract
from signet.documents.index import memory_text, prepare
from tests.documents.site import make_pdf

DOC = """Intro line before any heading.

# Guide

Short guide intro.

## Install

```sh
# not a heading: a shell comment
pip install signet
```

### Linux

Use the system Python.

## Usage

""" + "\n\n".join(f"Paragraph {i} " + "word " * 30 for i in range(6))


def test_sections_carry_their_heading_path() -> None:
    chunks = chunk_markdown(DOC, size=400)
    paths = [c.heading_path for c in chunks]
    assert paths[:4] == [(), ("Guide",), ("Guide", "Install"), ("Guide", "Install", "Linux")]
    assert "# not a heading" in chunks[2].text  # a heading inside a fence is text
    usage = [c for c in chunks if c.heading_path == ("Guide", "Usage")]
    assert len(usage) > 1  # the long section split by paragraph, each piece under its path
    assert all(len(c.text) <= 400 for c in usage)
    assert " ".join(c.text for c in usage).count("Paragraph") == 6
    assert [c.index for c in chunks] == list(range(len(chunks)))


def test_a_section_that_fits_is_one_chunk() -> None:
    chunks = chunk_markdown("# A\n\none\n\ntwo\n\n# B\n\nthree", size=400)
    assert [(c.heading_path, c.text) for c in chunks] == [(("A",), "one\n\ntwo"), (("B",), "three")]


def test_one_huge_paragraph_is_cut_at_word_ends() -> None:
    chunks = chunk_markdown("# H\n\n" + "alpha " * 500, size=300)
    assert len(chunks) > 5 and all(len(c.text) <= 300 for c in chunks)
    assert all(set(c.text.split()) == {"alpha"} for c in chunks)


def test_windows_overlap() -> None:
    words = " ".join(f"w{i}" for i in range(400))
    chunks = chunk_windows(words, size=200, overlap=50)
    assert all(len(c.text) <= 200 for c in chunks)
    for a, b in itertools.pairwise(chunks):
        tail = a.text.split()[-3:]
        assert " ".join(tail) in b.text  # the next window starts inside the previous one
    assert chunks[-1].text.endswith("w399")
    assert {w for c in chunks for w in c.text.split()} == set(words.split())


def test_no_overlap_windows_cover_the_text_once() -> None:
    text = " ".join(f"w{i}" for i in range(300))
    chunks = chunk_windows(text, size=250, overlap=0)
    assert " ".join(c.text for c in chunks).split() == text.split()


def test_memory_text_never_pins_or_tags() -> None:
    assert memory_text("critical: outage notes", ("Now",), "x").startswith("Document critical: outage notes")
    assert memory_text("[a,b]", (), "x").startswith("Document [a,b]")
    assert memory_text(None, ("H",), "x") == "Untitled \u203a H: x"


def test_repeated_chunks_are_one() -> None:
    chunks = chunk_markdown("# A\n\nsame\n\n# A\n\nsame\n\n# B\n\nother", size=400)
    prepared = prepare(chunks, "T")
    assert [p.content for p in prepared] == ["T \u203a A: same", "T \u203a B: other"]
    assert [p.index for p in prepared] == [0, 1]


def test_extraction_kinds_and_titles() -> None:
    md = extract(b"# Notes\n\nhello", media_type="", charset=None, name="/x/notes.md")
    assert (md.kind, md.title) == ("markdown", "Notes")
    txt = extract(b"plain words", media_type="", charset=None, name="/x/readme.txt")
    assert (txt.kind, txt.title, txt.markdown) == ("text", "readme", False)
    pdf = extract(make_pdf(["Hello PDF"], "My PDF"), media_type="application/octet-stream", charset=None, name="f")
    assert (pdf.kind, pdf.title) == ("pdf", "My PDF") and "Hello PDF" in pdf.text
    html = extract(b"<html><body><h1>Hi</h1><p>there</p></body></html>", media_type="text/html", charset=None, name="u")
    assert (html.kind, html.title, html.text) == ("html", "Hi", "# Hi\n\nthere")
    latin = extract("caf\xe9".encode("latin-1"), media_type="text/plain", charset="iso-8859-1", name="l")
    assert latin.text == "caf\xe9"


@pytest.mark.parametrize(
    ("body", "media", "why"),
    [
        (b"%PDF-1.4 broken", "application/pdf", "is not a readable PDF"),
        (make_pdf([], "Empty"), "application/pdf", "has no extractable text"),
        (b"\x89PNG\r\n\x1a\n\x00\x00", "image/png", "unsupported content type 'image/png'"),
        (b"   \n\n ", "text/plain", "has no text"),
        (b"ok \xff\xfe", "text/plain", "is not valid utf-8 text"),
    ],
)
def test_unreadable_bodies_fail_with_the_reason(body: bytes, media: str, why: str) -> None:
    with pytest.raises(DocumentFailed, match=why):
        extract(body, media_type=media.split(";")[0], charset=None, name="doc")
