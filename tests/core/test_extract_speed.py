"""The remember path's name scanning, made cheaper, finds exactly what its plain definition does.

``linkable_names`` joins only the runs around a word written like a name, and ``extract`` skips
a pattern whose required character the text lacks (signet.knowledge.extract.NEEDS). Both are
checked against the plain definitions on hostile and random text (hypothesis) and on real
prose (the repository's documentation)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from signet.knowledge import extract as ex
from signet.search import names

DOCS = Path(__file__).resolve().parents[2] / "docs"

_PIECES = ["http", "://", "Σ", "İ", "ß", "٣", "May", "june", "2024-01-02", "foo_bar", "a.b()", "~/x/y", "C:\\a\\b"]
_ALPHABET = st.sampled_from([*"abcXYZ019 _./@#+-:\\`'\u2019,;!?\n", *_PIECES])
TEXT = st.lists(_ALPHABET, max_size=60).map("".join)


def plain_linkable_names(content: str) -> list[str]:
    """The definition: every 1..4-word run written with a capital letter or a mark."""
    words = [w.strip(".,:;!?") for w in names._WORD.findall(content[: names.LINKER_CHARS])]
    grams: set[str] = set()
    for n in range(1, names.MAX_NGRAM + 1):
        for i in range(len(words) - n + 1):
            g = " ".join(words[i : i + n])
            if len(g) >= 2 and (g.lower() != g or re.search(r"[\d_./@#+-]", g) is not None):
                grams.add(g.lower())
    return sorted(grams)


@settings(max_examples=400, deadline=None)
@given(TEXT)
def test_linkable_names_is_its_definition(text: str) -> None:
    assert names.linkable_names(text) == plain_linkable_names(text)


@settings(max_examples=400, deadline=None)
@given(TEXT)
def test_a_skipped_pattern_could_not_have_matched(text: str) -> None:
    for pattern, need in ex.NEEDS.items():
        if not need(text):
            assert pattern.search(text) is None, (pattern.pattern, text)


def test_the_same_on_real_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """Real prose with everything the patterns look for (paths, URLs, backticks, snake_case,
    dates, names): the paragraphs of this repository's own documentation."""
    paragraphs = [p for doc in sorted(DOCS.glob("*.md")) for p in doc.read_text().split("\n\n") if p.strip()]
    assert len(paragraphs) > 500
    found = [ex.extract(p) for p in paragraphs]
    assert sum(len(f) for f in found) > 1000  # the corpus does exercise the extractor
    assert [names.linkable_names(p) for p in paragraphs] == [plain_linkable_names(p) for p in paragraphs]
    monkeypatch.setattr(ex, "NEEDS", {})  # every pattern scanned, as before
    assert [ex.extract(p) for p in paragraphs] == found
