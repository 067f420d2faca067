"""How soon the pipeline notices that its LLM came back: the real Ollama client probing a fake
Ollama on 127.0.0.1 that is down (nothing listens on its port), then up."""

from __future__ import annotations

import time

from signet.config import ExtractionSettings
from signet.pipeline import queue
from signet.pipeline.llm.supply import DOWN_FIRST_S, HEALTH_TTL, LlmSupply
from tests.conftest import free_port
from tests.pipeline.fake_llm import FakeLLM


def test_a_provider_that_comes_back_is_asked_again_within_a_second_then_less_often() -> None:
    fake = FakeLLM(port=free_port())  # configured, not listening yet: connection refused
    supply = LlmSupply(ExtractionSettings(provider="ollama", endpoint=fake.url, timeout=2), {}, None)
    waits = []
    for _ in range(6):
        blocked = supply.blocked()
        assert blocked is not None and blocked.status == queue.WAITING_FOR_PROVIDER
        assert "not reachable" in blocked.reason
        waits.append(blocked.retry_s)
        supply.mark_down("a call found it gone")  # what a failed call reports
    # the first failure is trusted for a second, each further one twice as long, up to the TTL
    assert waits[0] == DOWN_FIRST_S
    assert waits == sorted(waits) and waits[-1] == HEALTH_TTL

    supply = LlmSupply(ExtractionSettings(provider="ollama", endpoint=fake.url, timeout=2), {}, None)
    first = supply.blocked()
    assert first is not None and first.retry_s == DOWN_FIRST_S
    fake.start()
    try:
        assert supply.blocked() is not None  # within the second the failed probe stands
        time.sleep(first.retry_s + 0.1)
        assert supply.blocked() is None  # asked again: it answers, and is trusted for the TTL
        fake.stop()
        assert supply.blocked() is None
    finally:
        fake.stop()
