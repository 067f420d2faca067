"""Markdown: a chat transcript when speakers are marked (``## User``, ``**Assistant:**``,
``User:``), otherwise notes split at headings (h1-h3), each section one ``note`` turn.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

from signet.ingest.base import Transcript, clean_turns, require_text
from signet.ingest.text import speaker_turns
from signet.transcript import Turn

NAME = "markdown"
HEADING = re.compile(r"^(#{1,3})\s+(.+?)\s*$", re.MULTILINE)


def sections(text: str) -> list[str]:
    """Split at h1-h3 headings, each section keeping its heading."""
    starts = [m.start() for m in HEADING.finditer(text)]
    if not starts or starts[0] != 0:
        starts = [0, *starts]
    bounds = [*starts, len(text)]
    return [text[a:b].strip() for a, b in itertools.pairwise(bounds) if text[a:b].strip()]


class MarkdownAdapter:
    name = NAME
    priority = 20

    def can_handle(self, path: Path, first_line: str | None) -> bool:
        return path.suffix.lower() in (".md", ".markdown", ".mdx")

    def parse(self, path: Path) -> Transcript:
        text = require_text(path, path.read_bytes())
        turns = speaker_turns(text, markdown=True)
        if not turns:
            turns = [Turn("note", s) for s in sections(text)]
        return Transcript(adapter=NAME, turns=clean_turns(turns))


ADAPTER = MarkdownAdapter()
