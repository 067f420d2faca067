"""Browser fixtures: Debian's chromium driven by Playwright against a real daemon.

One daemon (seeded through its API, embedder ready) and one browser per module keep each test
to a few seconds. Every test's page is screenshotted into ``test-artifacts/dashboard/``
(git-ignored) so a person can look at what the test saw.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from signet.auth.tokens import issue, load_secret
from tests.conftest import DaemonProcess

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = (
    Path(os.environ.get("SIGNET_TEST_ARTIFACTS", REPO / "test-artifacts"))
    / "dashboard"
    / os.environ.get("PYTEST_XDIST_WORKER", "")  # one folder per pytest-xdist worker: each clears its own
)


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


_cleared: list[bool] = []


def clear_artifacts_once() -> None:
    """This run's screenshots only: cleared by the first module to start a browser, not by each."""
    if not _cleared:
        shutil.rmtree(ARTIFACTS, ignore_errors=True)
        _cleared.append(True)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """A headless chromium, or a skip that says how to install it (the README's test command does)."""
    exe = chromium_path()
    if exe is None:
        pytest.skip("chromium is not installed: apt-get install -y chromium (the README's test command does it)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed: pip install -e '.[test]'")
    clear_artifacts_once()
    pw = sync_playwright().start()
    try:
        b = pw.chromium.launch(executable_path=exe, args=["--no-sandbox", "--disable-dev-shm-usage"])
        try:
            yield b
        finally:
            b.close()
    finally:
        pw.stop()


def shot(page: Any, name: str) -> Path:
    """Save a full-page screenshot as a test artifact and return its path."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', name)}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Keep each phase's report on the test item, so a fixture can screenshot a failure."""
    rep = yield
    setattr(item, f"rep_{rep.when}", rep)
    return rep


@pytest.fixture
def page(browser: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    ctx = browser.new_context(viewport={"width": 1280, "height": 860})
    p = ctx.new_page()
    errors: list[str] = []
    p.on("pageerror", lambda exc: errors.append(str(exc)))
    p.set_default_timeout(30_000)  # behaviour, not speed: a loaded CI machine is slow to paint
    try:
        yield p
        failed = getattr(request.node, "rep_call", None)
        if failed is not None and failed.failed:
            shot(p, f"FAILED-{request.node.name}")
        assert not errors, f"JavaScript errors on the page: {errors}"
    finally:
        ctx.close()


def axe_violations(page: Any) -> list[str]:
    """axe-core's WCAG 2.1 A and AA violations on the page, one line each."""
    from axe_playwright_python.sync_playwright import Axe  # type: ignore[import-untyped]

    results = Axe().run(page, options={"runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21aa"]}})
    return [
        f"{v['id']} ({v['impact']}): {v['help']} — {[n['target'] for n in v['nodes']][:3]}"
        for v in results.response["violations"]
    ]


def token(d: DaemonProcess, role: Any, sub: str | None = None) -> str:
    """A token of ``role`` signed with the daemon's own secret (a team-mode client's). Tokens
    are deterministic (subject, role, the second issued): a test that revokes one names its own
    ``sub``, or a test issuing the same role within that second would get the revoked token."""
    tok, _ = issue(load_secret(d.workspace.root), sub=sub or f"{role}-user", role=role, ttl_s=3600)
    return str(tok)
