"""Entity names as the graph keys them: the canonical form of a name and the names a text
could mention. Shared by the pipeline's graph writes, the knowledge extractor and recall's
traversal (engines below the services that write the graph), so it lives here, once."""

from __future__ import annotations

import re

_WORD = re.compile(r"[\w][\w.+#-]*", re.UNICODE)
MAX_NGRAM = 4
LINKER_CHARS = 4000


def canonical(name: str) -> str:
    return " ".join(name.lower().split()).strip(" .,:;!?\"'")


def candidate_names(content: str) -> list[str]:
    """The names a text could mention: its 1..4-word runs (first 4,000 characters), lower-cased.

    Pure and transaction-free, so the remember path computes it on the request thread
    (MemoryService.prepare_hooks) instead of on the writer thread, its one serial step.
    """
    words = [w.lower().strip(".,:;!?") for w in _WORD.findall(content[:LINKER_CHARS])]
    grams: set[str] = set()
    for n in range(1, MAX_NGRAM + 1):
        for i in range(len(words) - n + 1):
            g = " ".join(words[i : i + n])
            if len(g) >= 2:
                grams.add(g)
    return sorted(grams)


_MARK = re.compile(r"[\d_./@#+-]")


def linkable_names(content: str) -> list[str]:
    """The :func:`candidate_names` of a stored text that are written like a name or an
    identifier: with a capital letter, or a character no plain word has (a digit, ``_ . / @ #
    + -``). The inline linker (signet.pipeline.graph.inline_link) links a new memory to every
    existing entity whose name it contains, so a word in ordinary lower case ("like", "help
    you", "us") must not meet an entity that happens to carry it: on real conversation turns
    such words made most of the 28 links per memory the linker wrote (docs/benchmarks.md,
    "The deterministic extractor at scale"). A query is matched with all its runs
    (:func:`candidate_names`): people type names in lower case."""
    words = [w.strip(".,:;!?") for w in _WORD.findall(content[:LINKER_CHARS])]
    # A run is written like a name when one of its words is (a capital letter changes under
    # lower(), a mark is a mark wherever it stands), so only the runs around such words are
    # joined: most words of a turn are plain lower case, and building every run first was a
    # third of a remember's request-thread time on real turns (docs/benchmarks.md).
    lowered = [w.lower() for w in words]
    marked = [0]
    for w, low in zip(words, lowered, strict=True):
        marked.append(marked[-1] + (low != w or _MARK.search(w) is not None))
    grams: set[str] = set()
    for n in range(1, MAX_NGRAM + 1):
        for i in range(len(words) - n + 1):
            if marked[i + n] != marked[i] and (n > 1 or len(words[i]) >= 2):  # longer runs are >= 3
                grams.add(" ".join(lowered[i : i + n]))
    return sorted(grams)
