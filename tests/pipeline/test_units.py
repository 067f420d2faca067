"""Pure parts of the pipeline: input caps, validation limits, contradiction rules, decision
parsing, and the providers' handling of bad answers (against the fake server)."""

from __future__ import annotations

import itertools
import json

import pytest

from signet.config import ExtractionSettings
from signet.pipeline import contradiction
from signet.pipeline.decision import Candidate, parse_decision
from signet.pipeline.extraction import (
    MAX_INPUT,
    Fact,
    cap_input,
    extraction_prompt,
    parse_extraction,
    prompt,
    strip_think,
)
from signet.pipeline.llm.base import LlmError, LlmTimeout, LlmUnavailable, RecordingLlm
from signet.pipeline.llm.http import AnthropicProvider, NoProvider, OllamaProvider, OpenAIProvider
from tests.pipeline.fake_llm import FakeLLM, Reply


def test_input_cap_and_prompt_files() -> None:
    text = "word " * 5000
    capped = cap_input(text)
    assert len(capped) == MAX_INPUT and capped.endswith("\n[truncated]")
    assert cap_input("short") == "short"
    p = extraction_prompt(text)
    assert "[truncated]" in p and "Return ONLY a JSON object" in p and "{text}" not in p
    assert "targetId" in prompt("decision")


def test_output_caps_and_think_stripping() -> None:
    facts = [
        {"content": f"Fact number {i} about the billing system", "type": "fact", "confidence": 0.9} for i in range(25)
    ]
    ents = [{"source": f"e{i}", "relationship": "r", "target": "t", "confidence": 0.5} for i in range(60)]
    ex = parse_extraction(json.dumps({"facts": facts, "entities": ents}))
    assert len(ex.facts) == 20 and len(ex.entities) == 50
    assert any("more than 20 facts" in w for w in ex.warnings) and any("more than 50" in w for w in ex.warnings)
    assert strip_think("<think>a</think>x<THINK>b</THINK>y<think>unclosed") == "xy"
    ex = parse_extraction('<think>{"facts": 1}</think>{"facts": "nope", "entities": [true]}')
    assert ex.facts == [] and "'facts' is not a list; ignored" in ex.warnings
    assert parse_extraction("[1, 2]").warnings == ["expected a JSON object, got list"]
    long = {"content": "x" * 2001, "type": "fact", "confidence": 0.5}
    assert "outside 10-2000" in parse_extraction(json.dumps({"facts": [long]})).warnings[0]
    assert (
        parse_extraction(json.dumps({"facts": [{"content": "ten chars!", "type": "fact", "confidence": True}]})).facts
        == []
    )


@pytest.mark.parametrize(
    ("new", "old", "risk", "why"),
    [
        (
            "Dark mode is disabled in the dashboard",
            "Dark mode is enabled in the dashboard",
            True,
            "antonyms enabled/disabled",
        ),
        ("The API does not require tokens", "The API requires tokens", True, "negation asymmetry"),
        ("Bob can't deploy on Fridays", "Bob can deploy on Fridays", True, "negation asymmetry"),  # can't -> cant
        ("We never deploy on Fridays", "We always deploy on Fridays", True, "negation asymmetry"),
        ("Logging is on for billing", "Logging is off for billing", True, "antonyms on/off"),
        ("Cats are not dogs", "Weather today is fine", False, None),  # fewer than two shared tokens
        ("The staging host is beta-3", "The staging host is alpha-7", False, None),
    ],
)
def test_contradiction_rules(new: str, old: str, risk: bool, why: str | None) -> None:
    c = contradiction.detect(new, old)
    assert (c.risk, c.reason) == (risk, why)


def test_decision_parsing() -> None:
    fact = Fact("The staging server runs on beta-3", "fact", 0.9)
    cands = [Candidate("a" * 36, "The staging server runs on alpha-7", 0.8, False)]
    ok = parse_decision(
        '{"action": "update", "targetId": "' + "a" * 36 + '", "confidence": 0.8, "reason": "moved"}', fact, cands
    )
    assert (ok.action, ok.target_id, ok.rejected) == ("update", "a" * 36, False)
    add = parse_decision(
        '<think>x</think>{"action": "add", "targetId": null, "confidence": 1, "reason": "new"}', fact, cands
    )
    assert add.action == "add" and add.target_id is None and not add.rejected
    for raw, msg in [
        ('{"action": "merge", "confidence": 0.5, "reason": "x"}', "invalid action"),
        ('{"action": "delete", "confidence": 0.5, "reason": "x"}', "needs a targetId"),
        ('{"action": "none", "targetId": "zzz", "confidence": 0.5, "reason": "x"}', "not one of the candidates"),
        ('{"action": "add", "confidence": 1.5, "reason": "x"}', "'confidence' must be a number"),
        ("nothing here", "no JSON object"),
    ]:
        p = parse_decision(raw, fact, cands)
        assert p.rejected and msg in p.warnings[0], (raw, p.warnings)


def test_providers_map_bad_answers_to_errors(fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    s = ExtractionSettings(provider="ollama", endpoint=fake_llm.url, timeout=0.5, api_key="test-key")
    providers = [
        OllamaProvider(s),
        OpenAIProvider(s.model_copy(update={"endpoint": fake_llm.url + "/v1"})),
        AnthropicProvider(s),
    ]
    prompt_text = "You extract durable knowledge\nText:\n<<<\nx\n>>>"
    for prov in providers:
        fake_llm.extract = lambda text: Reply(raw=b"{not json")
        with pytest.raises(LlmError, match="non-JSON"):
            prov.complete(prompt_text)
        fake_llm.extract = lambda text: Reply(raw=b'{"unexpected": 1}')
        with pytest.raises(LlmError, match=r"unexpected response shape|no text"):
            prov.complete(prompt_text)
        fake_llm.extract = lambda text: Reply(status=503)
        with pytest.raises(LlmError, match="HTTP 503"):
            prov.complete(prompt_text)
        fake_llm.extract = lambda text: Reply(text="{}", delay=1.0)
        with pytest.raises(LlmTimeout):
            prov.complete(prompt_text)
        fake_llm.extract = lambda text: '{"facts": []}'
        assert prov.complete(prompt_text) == '{"facts": []}'
        assert prov.health() == (True, None)
    assert AnthropicProvider(s.model_copy(update={"api_key": None})).health() == (
        False,
        "anthropic: no API key (memory.pipelineV2.extraction.api_key or ANTHROPIC_API_KEY)",
    )
    none = NoProvider(s)
    with pytest.raises(LlmUnavailable):
        none.complete("x")
    down = OllamaProvider(s.model_copy(update={"endpoint": "http://127.0.0.1:9"}))
    with pytest.raises(LlmUnavailable, match="unreachable"):
        down.complete("x")
    assert down.health()[0] is False

    rec = RecordingLlm(OllamaProvider(s), s)
    fake_llm.extract = lambda text: Reply(text="{}", delay=1.0)
    with pytest.raises(LlmTimeout):
        rec.complete(prompt_text, purpose="extraction")
    fake_llm.extract = lambda text: "{}"
    rec.complete(prompt_text, purpose="extraction")
    summary = rec.summary()
    assert summary["outcomes"] == {"timeout": 1, "success": 1} and summary["success_rate"] == 0.5
    assert summary["last_error"] and "did not answer within 0.5s" in summary["last_error"]


def test_transcript_chunking_keeps_turns_whole_and_covers_all_of_it() -> None:
    from signet.pipeline.extraction import chunk_transcript, merge

    turns = [f"{'user' if i % 2 == 0 else 'assistant'}: turn {i} " + "x" * 900 for i in range(40)]
    text = "\n".join(turns)
    chunks = chunk_transcript(text)
    assert len(chunks) == 4 and all(len(c) <= MAX_INPUT - 200 for c in chunks)
    assert "\n".join(chunks) == text  # nothing lost, every turn whole
    long = "\n".join(turns * 5)  # 200 turns: more than the 8 chunks an earlier version kept
    every = chunk_transcript(long, overlap=1900)
    assert len(every) > 8 and every[0].startswith(turns[0]) and every[-1].endswith(turns[-1])
    assert all(len(c) <= MAX_INPUT - 200 for c in every)
    for prev, nxt in itertools.pairwise(every):  # consecutive chunks share whole turns
        shared = prev.splitlines()[-2:]
        assert nxt.splitlines()[:2] == shared
    lines = [ln for c in every for ln in c.splitlines()]
    assert set(lines) == set(long.splitlines())  # no turn left out
    assert chunk_transcript("short") == ["short"]
    a = parse_extraction(
        json.dumps(
            {"facts": [{"content": "The exporter runs nightly", "type": "fact", "confidence": 0.9}], "entities": []}
        )
    )
    b = parse_extraction(
        json.dumps(
            {"facts": [{"content": "the exporter  runs NIGHTLY", "type": "fact", "confidence": 0.8}, {"bad": 1}]}
        )
    )
    m = merge([a, b])
    assert len(m.facts) == 1 and m.warnings[0].startswith("chunk 2: facts[1]")


def test_the_dedupe_pass_merges_rewordings_but_not_different_numbers_or_negations() -> None:
    from signet.pipeline.extraction import Extraction, Fact, merge

    def part(*facts: tuple[str, float]) -> Extraction:
        return Extraction(facts=[Fact(text, "fact", conf) for text, conf in facts])

    merged = merge(
        [
            part(("The API server listens on port 8080 in production", 0.7), ("The build uses remote caching", 0.9)),
            part(
                ("The API server listens on port 8080 in production now", 0.9),  # a rewording: one fact, the surer
                ("The API server listens on port 9090 in production", 0.9),  # another number: another fact
                ("The build does not use remote caching", 0.9),  # negated: another fact
                ("The build doesn't use remote caching", 0.8),  # the same negation reworded: merged
                ("Chunk 1 decision about the exporter", 0.9),
                ("Chunk 2 decision about the exporter", 0.9),
            ),
        ]
    )
    assert [f.content for f in merged.facts] == [
        "The API server listens on port 8080 in production now",
        "The build uses remote caching",
        "The API server listens on port 9090 in production",
        "The build does not use remote caching",
        "Chunk 1 decision about the exporter",
        "Chunk 2 decision about the exporter",
    ]
