"""The dashboard in a real browser (chromium through Playwright) against a real daemon with
seeded memories: search → open → edit → history; forget → recover; the embedding map; the
config editor's inline validation and Ctrl+S; the live log tail; team-mode login and a
readonly token's view (and the API's refusal)."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from signet.workspace import Workspace, setup_workspace
from tests.conftest import DaemonProcess, launch_daemon, write_config
from tests.dashboard.conftest import axe_violations, shot, token

pytestmark = pytest.mark.slow

XSS = 'A hostile note <img src=x onerror="window.__pwned=1"> in the markup'
SEED: list[dict[str, Any]] = [
    {"content": "We use PostgreSQL 16 for every new service", "type": "decision", "project": "infra", "tags": ["db"]},
    {"content": "Deploys happen on Thursdays after the standup", "type": "rule", "project": "web"},
    {"content": "The user prefers dark mode in every editor", "type": "preference"},
    {"content": "Redis is only a cache here, never the source of truth", "type": "fact", "project": "infra"},
    {"content": "Billing emails go out on the first of the month", "type": "fact", "project": "billing"},
    {"content": "Run the migrations before restarting the API servers", "type": "procedural", "project": "infra"},
    {"content": "The mobile app is written in Kotlin and Swift", "type": "fact", "project": "mobile"},
    {"content": "Alice owns the payments service", "type": "fact", "project": "billing", "who": "alice"},
    {"content": "A flaky test in the checkout suite failed twice this week", "type": "issue", "project": "web"},
    {"content": "Use ruff for linting Python code", "type": "preference", "project": "web"},
    {"content": "Backups are copied to the NAS every night at 2am", "type": "procedural", "project": "infra"},
    {"content": "The design review is on Tuesdays at 10", "type": "episodic"},
    {"content": XSS, "type": "fact", "project": "<b>web</b>", "tags": ["<script>window.__pwned=2</script>"]},
]


def _workspace(root: Path, **sections: Any) -> Workspace:
    ws = Workspace(root)
    setup_workspace(ws, agent_name="test-agent", user_name="Tester", embedding_provider="local")
    write_config(ws, memory={"pipelineV2": {"extraction": {"provider": "none"}}}, **sections)
    return ws


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    """A daemon with seeded, embedded memories and one scheduled task (echo is allowed)."""
    ws = _workspace(tmp_path_factory.mktemp("dash") / "ws", tasks={"allow": ["echo"], "enabled": False})
    d = launch_daemon(ws)
    try:
        with d.client() as c:
            for item in SEED:
                assert c.post("/api/memory/remember", json=item).status_code == 200
            task = {"name": "greet", "schedule": "@daily", "command": ["echo", "hello from a task"]}
            assert c.post("/api/tasks", json=task).status_code == 201
        d.wait_embedder()
        yield d
    finally:
        d.stop()


def memory_id(d: DaemonProcess, text: str) -> str:
    with d.client() as c:
        items = c.get("/api/memories", params={"limit": 200, "include_deleted": True}).json()["items"]
    return str(next(m["id"] for m in items if text in m["content"]))


def test_search_open_edit_and_the_history_shows_the_edit(daemon: DaemonProcess, page: Any) -> None:
    page.goto(f"{daemon.url}/#/memories")
    page.get_by_label("Search", exact=True).fill("which database do we use")
    page.get_by_role("button", name="Search").click()
    hit = page.locator("#results li", has_text="PostgreSQL 16")
    hit.wait_for()
    assert re.search(r"\d\.\d{3} · (hybrid|fts|vector)", hit.locator(".score").inner_text())
    assert "results" in page.locator("#list-meta").inner_text()
    shot(page, "memories-search")

    hit.get_by_role("link").click()
    page.locator("#memory-content", has_text="PostgreSQL 16").wait_for()
    page.get_by_label("Content").fill("We use PostgreSQL 17 for every new service")
    page.get_by_label("Importance").fill("0.9")
    page.get_by_label("Reason (kept in the history)").fill("upgraded in November")
    page.get_by_role("button", name="Save changes").click()
    page.locator("#notice", has_text="Saved as version 2").wait_for()
    page.locator("#memory-content", has_text="PostgreSQL 17").wait_for()
    edit = page.locator("#history li", has_text="upgraded in November")
    assert edit.locator("ins").inner_text().strip() == "17" and edit.locator("del").inner_text().strip() == "16"
    page.locator("#similar li a").first.wait_for()
    shot(page, "memory-page")

    with daemon.client() as c:
        m = c.get(f"/api/memory/{memory_id(daemon, 'PostgreSQL 17')}").json()
    assert m["version"] == 2 and m["importance"] == 0.9 and m["updated_by"] == "dashboard"


def test_memory_text_is_shown_as_text_never_run_as_markup(daemon: DaemonProcess, page: Any) -> None:
    page.goto(f"{daemon.url}/#/memories")
    row = page.locator("#results li", has_text="A hostile note")
    row.wait_for()
    assert XSS in row.inner_text() and "<script>window.__pwned=2</script>" in row.inner_text()
    row.get_by_role("link").click()
    page.locator("#memory-content", has_text="A hostile note").wait_for()
    page.locator("#history li").first.wait_for()
    assert page.locator("#memory-content").inner_text() == XSS
    assert page.locator("main img, main script, main b").count() == 0
    assert page.evaluate("() => window.__pwned") is None


def test_forget_with_preview_and_confirm_then_recover(daemon: DaemonProcess, page: Any) -> None:
    mid = memory_id(daemon, "Kotlin and Swift")
    page.goto(f"{daemon.url}/#/memory/{mid}")
    page.get_by_role("button", name="Forget…").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_text("Forget 1 memory?").wait_for()
    assert "Kotlin and Swift" in dialog.inner_text()
    shot(page, "memory-forget-preview")
    dialog.get_by_label("Reason").fill("moved to the mobile team's notes")
    dialog.get_by_role("button", name="Forget", exact=True).click()
    page.locator("h2 .tag", has_text="forgotten").wait_for()
    with daemon.client() as c:
        assert c.get(f"/api/memory/{mid}").json()["is_deleted"] is True
    # the list finds it again with "Include forgotten" (where you go to recover one)
    page.goto(f"{daemon.url}/#/memories")
    page.get_by_label("Include forgotten").check()
    page.get_by_role("button", name="Search").click()
    page.locator("#results li", has_text="Kotlin and Swift").locator(".tag", has_text="forgotten").wait_for()
    page.locator("#results li", has_text="Kotlin and Swift").get_by_role("link").click()
    page.get_by_role("button", name="Recover").click()
    page.locator("#notice", has_text="Recovered.").wait_for()
    assert page.locator("h2 .tag", has_text="forgotten").count() == 0
    assert page.locator("#history li", has_text="moved to the mobile team's notes").count() == 1
    with daemon.client() as c:
        assert c.get(f"/api/memory/{mid}").json()["is_deleted"] is False


def test_bulk_tag_from_the_list(daemon: DaemonProcess, page: Any) -> None:
    page.goto(f"{daemon.url}/#/memories")
    for text in ("Redis is only a cache", "Backups are copied"):
        page.locator("#results li", has_text=text).get_by_role("checkbox").check()
    page.get_by_label("Tag to add to the selected memories").fill("ops")
    page.get_by_role("button", name="Add tag").click()
    page.locator("#notice", has_text="2 of 2 updated").wait_for()
    with daemon.client() as c:
        tagged = c.get("/api/memories", params={"tag": "ops"}).json()["items"]
    assert sorted(m["content"][:5] for m in tagged) == ["Backu", "Redis"]


def test_the_map_renders_points_and_a_click_opens_the_memory(daemon: DaemonProcess, page: Any) -> None:
    page.goto(f"{daemon.url}/#/map")
    canvas = page.locator("canvas#map[data-points]")
    canvas.wait_for(timeout=30_000)  # 202 while the projection is computed, then drawn
    with daemon.client() as c:
        proj = c.get("/api/embeddings/projection").json()
    assert int(canvas.get_attribute("data-points") or 0) == proj["returned"] == len(SEED)
    shot(page, "map")
    # the pixels: points in the palette's colours on the dark background
    colours = page.evaluate(
        """() => { const c = document.getElementById('map'); const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        const seen = new Set(); for (let i = 0; i < d.length; i += 4) seen.add(`${d[i]},${d[i+1]},${d[i+2]}`); return seen.size; }"""
    )
    assert colours > 3, "nothing but the background was drawn"
    point = proj["points"][3]
    box = canvas.bounding_box()
    assert box is not None
    x = box["x"] + 16 + (point["xyz"][0] + 210) / 420 * (box["width"] - 32)
    y = box["y"] + 16 + (210 - point["xyz"][1]) / 420 * (box["height"] - 32)
    page.mouse.move(x, y)
    page.locator("#map-tip").wait_for()
    page.mouse.click(x, y)
    page.wait_for_url(re.compile(r"#/memory/"))
    shown = page.locator("#memory-content").inner_text()
    with daemon.client() as c:
        clicked = c.get(f"/api/memory/{page.url.rsplit('/', 1)[1]}").json()
    assert shown == clicked["content"]
    # Shift + drag a box over the whole map: the selection opens in the memory browser
    page.go_back()
    canvas.wait_for()
    box = canvas.bounding_box()
    assert box is not None
    page.keyboard.down("Shift")
    page.mouse.move(box["x"] + 2, box["y"] + 2)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] - 2, box["y"] + box["height"] - 2, steps=8)
    page.mouse.up()
    page.keyboard.up("Shift")
    pick = page.get_by_role("button", name=f"Show the {len(SEED)} selected in the memory browser")
    pick.click()
    page.locator("#list-meta", has_text=f"{len(SEED)} memories selected on the map").wait_for()
    assert page.locator("#results li").count() == len(SEED)
    page.go_back()
    # and without a mouse: the arrow keys step through the points, Enter opens the one shown
    page.locator("canvas#map[data-points]").focus()
    page.keyboard.press("ArrowRight")
    assert "Enter opens it" in page.locator("#map-tip").inner_text()
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"#/memory/"))
    page.locator("#memory-content").wait_for()


def test_config_editor_refuses_invalid_agent_yaml_inline_and_saves_a_valid_one(
    daemon: DaemonProcess, page: Any
) -> None:
    path = daemon.workspace.config_path
    before = path.read_text()
    page.goto(f"{daemon.url}/#/workspace")
    editor = page.locator("#cfg-text")
    editor.wait_for()
    assert editor.input_value() == before
    editor.fill(before + "search:\n  alpha: 7\n")
    page.locator("#cfg-error", has_text="search.alpha").wait_for()  # before any save
    assert editor.get_attribute("aria-invalid") == "true"
    editor.press("Control+s")
    page.locator("#cfg-state", has_text="Not saved").wait_for()
    assert path.read_text() == before
    shot(page, "workspace-invalid-config")

    data = yaml.safe_load(before)
    data.setdefault("search", {})["alpha"] = 0.6
    valid = yaml.safe_dump(data, sort_keys=False)
    editor.fill(valid)
    page.wait_for_function("() => document.getElementById('cfg-error').textContent === ''")
    editor.press("Control+s")
    page.locator("#cfg-state", has_text="Saved agent.yaml").wait_for()
    assert path.read_text() == valid
    shot(page, "workspace")


def test_a_task_runs_with_live_output_and_secrets_show_names_only(daemon: DaemonProcess, page: Any) -> None:
    page.goto(f"{daemon.url}/#/workspace")
    page.get_by_role("button", name="Run greet now").click()
    page.locator("#task-output", has_text="[done, exit 0]").wait_for()
    assert "hello from a task" in page.locator("#task-output").inner_text()
    page.locator("#task-runs td", has_text="manual").wait_for()

    page.get_by_label("Name", exact=True).fill("DEPLOY_KEY")
    page.get_by_label("Value", exact=True).fill("s3cret-value-never-shown")
    page.get_by_role("button", name="Store").click()
    page.locator("section[aria-label=Secrets] td", has_text="DEPLOY_KEY").wait_for()
    assert "s3cret-value-never-shown" not in page.content()
    with daemon.client() as c:
        assert [s["name"] for s in c.get("/api/secrets").json()["secrets"]] == ["DEPLOY_KEY"]
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Delete secret DEPLOY_KEY").click()
    page.locator("section[aria-label=Secrets]", has_text="None stored.").wait_for()
    shot(page, "workspace-task-run")


@pytest.mark.parametrize("route", ["#/memories", "#/memory/", "#/map", "#/health", "#/workspace"])
def test_every_page_passes_axe_wcag_aa_checks(daemon: DaemonProcess, page: Any, route: str) -> None:
    """axe-core (Deque's engine) on each page: labels, names, contrast, landmarks, ARIA use."""
    if route == "#/memory/":
        route += memory_id(daemon, "Alice owns")
    page.goto(f"{daemon.url}/{route}")
    ready = {"#/memories": "#results li", "#/map": "canvas#map[data-points]", "#/health": "#log-state >> text=live"}
    page.locator(ready.get(route, "#history li" if route.startswith("#/memory/") else "#cfg-text")).first.wait_for(
        timeout=30_000
    )
    page.wait_for_timeout(300)  # the page's other cards
    found = axe_violations(page)
    assert found == [], "\n".join(found)


# --- team mode ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    """Team mode, no embedder (fast), and tombstones the retention sweep purges at once (the log test)."""
    ws = _workspace(tmp_path_factory.mktemp("team") / "ws", auth={"mode": "team"}, retention={"tombstone_days": 0})
    write_config(ws, embedding={"provider": "none"})
    d = launch_daemon(ws)
    try:
        with httpx.Client(base_url=d.url, headers={"Authorization": f"Bearer {token(d, 'admin')}"}) as c:
            assert c.post("/api/memory/remember", json={"content": "Team notes live in the wiki"}).status_code == 200
        yield d
    finally:
        d.stop()


def test_team_mode_without_a_token_shows_the_login(team: DaemonProcess, page: Any) -> None:
    page.goto(f"{team.url}/")
    page.get_by_role("heading", name="Sign in").wait_for()
    assert page.locator("#main").is_hidden() and page.locator("header nav").is_hidden()
    page.get_by_label("Token").fill("not-a-token")
    page.get_by_role("button", name="Sign in").click()
    page.locator("#login-error", has_text="refused").wait_for()
    shot(page, "team-login")
    found = axe_violations(page)
    assert found == [], "\n".join(found)


def test_a_readonly_token_sees_no_write_actions_and_the_api_refuses_them(team: DaemonProcess, page: Any) -> None:
    readonly = token(team, "readonly")
    page.goto(f"{team.url}/")
    page.get_by_label("Token").fill(readonly)
    page.get_by_role("button", name="Sign in").click()
    row = page.locator("#results li", has_text="Team notes live in the wiki")
    row.wait_for()
    assert page.locator("#who").inner_text() == "readonly-user · readonly"
    assert row.get_by_role("checkbox").count() == 0
    assert page.evaluate("() => sessionStorage.getItem('signet.token')") == readonly
    row.get_by_role("link").click()
    page.locator("#memory-content").wait_for()
    page.locator("#history li").first.wait_for()
    for name in ("Save changes", "Forget…", "Recover"):
        assert page.get_by_role("button", name=name).count() == 0, name
    assert page.locator("form#edit").count() == 0
    shot(page, "team-readonly-memory")
    mid = page.url.rsplit("/", 1)[1]
    # the API refuses the write anyway, from this very page with its token
    status = page.evaluate(
        """async ([id, tok]) => (await fetch(`/api/memory/${id}`, {method: 'PATCH',
        headers: {'content-type': 'application/json', Authorization: `Bearer ${tok}`},
        body: JSON.stringify({content: 'changed', reason: 'x'})})).status""",
        [mid, readonly],
    )
    assert status == 403
    page.goto(f"{team.url}/#/workspace")
    page.get_by_text("need an admin token").wait_for()


def test_the_log_tail_shows_a_line_written_after_the_page_opened(team: DaemonProcess, page: Any) -> None:
    """In team mode with an admin token: the stream is read with fetch, carrying the bearer."""
    admin = token(team, "admin")
    page.goto(f"{team.url}/#/health")
    page.get_by_label("Token").fill(admin)
    page.get_by_role("button", name="Sign in").click()
    page.locator("#log-state", has_text="live").wait_for()
    page.locator(".card h3", has_text="Diagnostics").wait_for()
    assert page.locator("#log-tail li", has_text="retention sweep:").count() == 0
    with httpx.Client(base_url=team.url, headers={"Authorization": f"Bearer {admin}"}) as c:
        # a real action that logs at INFO: purge a forgotten memory (tombstone_days: 0)
        mid = c.post("/api/memory/remember", json={"content": f"a note to sweep away {time.time()}"}).json()["id"]
        assert c.delete(f"/api/memory/{mid}", params={"reason": "log test"}).status_code == 200
        assert c.post("/api/repair/retention-sweep").json()["tombstones"] == 1
    page.locator("#log-tail li", has_text="retention sweep:").wait_for()
    assert "Pipeline queue" in page.locator("main").inner_text()
    charts = page.locator("section[aria-label=Analytics]")
    charts.get_by_text("Busiest endpoints").wait_for()
    assert charts.locator("td", has_text="GET /api/auth/whoami").count() == 1  # what this very page called
    shot(page, "health")
