"""signet.bench.extractor_scale counts what the write path would: an entity's later mentions
written like a name are links, a lower-case word is not."""

from __future__ import annotations

from signet.bench.extractor_scale import measure


def test_links_count_names_not_lower_case_words() -> None:
    got = measure(
        [
            ("We met Caroline at the Lakeside Cafe.", "mel"),
            ("Caroline said the lakeside cafe was closed; I will use it later.", None),
            ("**Use** a tripod, e.g. for Caroline's portrait.", None),
        ]
    )
    assert got["memories"] == 3
    assert got["entities"] == 3  # mel, caroline, lakeside cafe: no "use", no "e.g"
    # Turn 2 links "caroline" (capitalised there) but not "lakeside cafe" (lower case); turn 3
    # links "caroline" again and nothing for "use" or "e.g".
    assert got["inline_links_per_memory"] == round(2 / 3, 2)
    assert [name for name, _ in got["most_linked"]] == ["caroline"]
