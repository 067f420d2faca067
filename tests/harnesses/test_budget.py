"""The budget promise: assembled context never exceeds its token budget, whatever the input."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from signet.hooks.budget import TRUNCATED, Section, assemble, estimate_tokens, fit_text

texts = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=3000) | st.builds(
    lambda w, n: " ".join([w] * n), st.sampled_from(["a", "word", "x" * 40, "日本語", "\n"]), st.integers(0, 800)
)


@settings(max_examples=300, deadline=None)
@given(
    bodies=st.lists(st.tuples(texts, st.floats(0.05, 1.0)), max_size=6),
    budget=st.integers(0, 2500),
    header=st.sampled_from(["", "# Signet memory\nContext."]),
)
def test_assemble_never_exceeds_budget(bodies: list[tuple[str, float]], budget: int, header: str) -> None:
    sections = [Section(f"s{i}", f"Section {i}", body, share) for i, (body, share) in enumerate(bodies)]
    out = assemble(sections, budget, header=header)
    assert out.tokens == estimate_tokens(out.text) <= budget
    for rep, sec in zip(out.sections, [s for s in sections if s.body.strip()], strict=True):
        assert rep["name"] == sec.name
        if not rep["dropped"]:
            assert int(rep["tokens"]) <= max(int(budget * sec.share), 0)


@settings(max_examples=300, deadline=None)
@given(text=texts, limit=st.integers(-5, 1500))
def test_fit_text_is_a_marked_prefix_within_the_limit(text: str, limit: int) -> None:
    out = fit_text(text, limit)
    assert estimate_tokens(out) <= max(limit, 0)
    if out == text:
        return
    if out:
        assert out.endswith(TRUNCATED)
        assert text.startswith(out[: -len(TRUNCATED)])


def test_sections_share_and_order() -> None:
    big = "lorem ipsum " * 2000
    out = assemble([Section("a", "A", big, 0.25), Section("b", "B", "short and sweet"), Section("c", "C", big)], 1000)
    names = [s["name"] for s in out.sections if not s["dropped"]]
    assert names == ["a", "b", "c"]
    assert out.text.index("## A") < out.text.index("## B") < out.text.index("## C")
    a = next(s for s in out.sections if s["name"] == "a")
    assert a["truncated"] and int(a["tokens"]) <= 250
