"""Recall's keyword leg matches word forms (plural, tense) and stays injection-safe."""

from __future__ import annotations

from signet.search.fts import prefix_term, recall_match_expression


def test_prefix_terms() -> None:
    assert prefix_term("hiking") == '"hiking"*' and prefix_term("climbing") == '"climb"*'
    assert prefix_term("dogs") == '"dogs"*'
    assert prefix_term("paintings") == '"painting"*'
    assert prefix_term("art") == '"art"' and prefix_term("2023") == '"2023"'
    assert recall_match_expression('foo" OR NEAR(x') == '"foo" OR "near"*'
    assert recall_match_expression("") is None
