"""CLI manners, against the real ``signet`` command and a real daemon in a temporary HOME:
``--version``, unique id prefixes wherever an id is taken, ``SIGNET_PORT`` honoured by every
command (``stop`` included), help without Python type metavars, docs/cli.md claiming only
commands and options that exist, and ``/docs`` served without any other host."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from importlib.metadata import version
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from typer.main import get_command
from typer.testing import CliRunner

import signet.cli.main  # noqa: F401  (registers every command on the app)
from signet import __version__
from signet.cli.app import app
from signet.daemon.app import create_app
from signet.workspace import Workspace, setup_workspace
from tests.auth.conftest import bearer, token_for
from tests.conftest import free_port, start_runtime, write_config

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Home:
    """A temporary HOME (the workspace is its ~/.agents) and a daemon port given only as
    ``SIGNET_PORT``: no ``SIGNET_WORKSPACE``, no ``--port``."""

    root: Path
    port: int
    env: dict[str, str]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def signet(self, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "signet.cli.entry", *args],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=120,
            input=input,
        )

    def start(self) -> None:
        setup = self.signet("setup", "-y", "--embedding", "none", "--llm", "none")
        assert setup.returncode == 0, setup.stderr
        started = self.signet("start", "--wait", "60")
        assert started.returncode == 0, started.stderr
        assert f"127.0.0.1:{self.port}" in started.stdout


def make_home(base: Path) -> Home:
    home, port = base / "home", free_port()
    assert port != 3850
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "SIGNET_")) and k != "HOME"}
    env.update(HOME=str(home), SIGNET_PORT=str(port), SIGNET_MODEL_CACHE=os.environ["SIGNET_MODEL_CACHE"])
    return Home(home, port, env)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Home]:
    h = make_home(tmp_path_factory.mktemp("manners"))
    h.start()
    try:
        yield h
    finally:
        assert h.signet("stop").returncode == 0


def one_line_error(r: subprocess.CompletedProcess[str]) -> str:
    assert r.returncode != 0, r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0]


# -- --version ------------------------------------------------------------------------------


def test_version_prints_the_installed_version(tmp_path: Path) -> None:
    h = make_home(tmp_path)
    r = h.signet("--version")
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"signet {__version__}\n"
    assert __version__ == version("signet-memory")  # the package's metadata, not a stale constant
    assert list(h.root.iterdir()) == []  # printing the version creates no workspace


# -- id prefixes ----------------------------------------------------------------------------


def fill(c: httpx.Client | TestClient, n: int, headers: dict[str, str] | None = None, **fields: Any) -> list[str]:
    """``n`` memories in batches; enough of them that two ids share their first 4 characters
    (with 2000 random UUIDs, the chance that none do is about e^-30)."""
    ids: list[str] = []
    for start in range(0, n, 1000):
        items = [
            {"content": f"filler memory number {i} {fields}", **fields} for i in range(start, min(n, start + 1000))
        ]
        r = c.post("/api/memory/remember/batch", json={"items": items}, headers=headers or {})
        assert r.status_code == 200, r.text
        ids.extend(x["id"] for x in r.json()["results"])
    return ids


def by_prefix(ids: list[str], n: int = 4) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = defaultdict(list)
    for i in ids:
        groups[i[:n]].append(i)
    return groups


def test_unique_prefixes_stand_for_ids_in_the_cli_and_the_api(home: Home) -> None:
    r = home.signet("remember", "prefix test: we ship on fridays", "--json")
    assert r.returncode == 0, r.stderr
    full = json.loads(r.stdout)["id"]
    short = full[:8]  # what `signet recall` shows
    with httpx.Client(base_url=home.url, timeout=30) as c:
        assert c.get(f"/api/memory/{short}").json()["id"] == full
        patched = c.patch(f"/api/memory/{short}", json={"importance": 0.9, "reason": "by prefix"})
        assert patched.status_code == 200 and patched.json()["id"] == full, patched.text
        batch = c.post("/api/memory/modify", json={"patches": [{"id": short, "tags": ["p"]}], "reason": "batch"})
        assert batch.json()["results"][0] == {**batch.json()["results"][0], "id": full, "status": "updated"}
        assert c.get("/memory/similar", params={"id": short}).status_code == 200

        hist = home.signet("history", short)
        assert hist.returncode == 0, hist.stderr
        assert [ln.split()[1] for ln in hist.stdout.splitlines()] == ["created", "modified", "modified"]

        forgot = home.signet("forget", short, "--reason", "prefix test", "--yes")
        assert forgot.returncode == 0, forgot.stderr
        assert "forgot 1 memories" in forgot.stdout
        assert c.get(f"/api/memory/{full}").json()["is_deleted"] is True
        rec = c.post(f"/api/memory/{short}/recover", json={"reason": "by prefix"})
        assert rec.status_code == 200 and rec.json()["id"] == full, rec.text
        gone = c.delete(f"/api/memory/{short}", params={"reason": "by prefix"})
        assert gone.status_code == 200 and gone.json()["id"] == full, gone.text

        # Shorter than 4 characters is never a prefix, only a (missing) id.
        assert c.get(f"/api/memory/{full[:3]}").status_code == 404


def test_an_ambiguous_prefix_is_a_4xx_naming_candidates(home: Home) -> None:
    with httpx.Client(base_url=home.url, timeout=60) as c:
        ids = fill(c, 2000)
        prefix, shared = next((p, g) for p, g in by_prefix(ids).items() if len(g) > 1)
        for method, path in (("GET", f"/api/memory/{prefix}"), ("GET", f"/api/memory/{prefix}/history")):
            r = c.request(method, path)
            assert r.status_code == 400, r.text
            body = r.json()
            assert body["code"] == "ambiguous_id" and set(shared) <= set(body["candidates"]), body
            assert prefix in body["error"] and shared[0] in body["error"]
        r = c.post("/api/memory/modify", json={"patches": [{"id": prefix, "pinned": True}], "reason": "x"})
        assert r.status_code == 400 and r.json()["code"] == "ambiguous_id"
        assert not any(c.get(f"/api/memory/{i}").json()["pinned"] for i in shared)  # nothing landed
        # One character more than the shared part picks one of them.
        longer = shared[0][: next(n for n in range(5, 37) if len(by_prefix(ids, n)[shared[0][:n]]) == 1)]
        assert c.get(f"/api/memory/{longer}").json()["id"] == shared[0]

    line = one_line_error(home.signet("history", prefix))
    assert "ambiguous" in line and shared[0] in line, line
    line = one_line_error(home.signet("forget", prefix, "--reason", "x", "--yes"))
    assert "ambiguous" in line, line


def test_job_ids_take_prefixes_too(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "ws")
    setup_workspace(ws, agent_name="t", user_name="T", embedding_provider="none")
    write_config(ws, memory={"pipelineV2": {"extraction": {"provider": "none"}}})
    rt = start_runtime(ws)
    try:
        from signet.pipeline import queue

        jid, _ = rt.db.write(lambda conn: queue.enqueue(conn, "extract", payload={"session_key": "s"}))
        with TestClient(create_app(rt, manage_runtime=False)) as c:
            r = c.get(f"/api/pipeline/jobs/{jid[:8]}")
            assert r.status_code == 200 and r.json()["id"] == jid, r.text
            assert c.get("/api/pipeline/jobs/zzzzzzzz").status_code == 404
    finally:
        rt.stop()


def test_a_scoped_token_resolves_prefixes_only_in_its_project(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "ws")
    setup_workspace(ws, agent_name="t", user_name="T", embedding_provider="none")
    write_config(
        ws, memory={"pipelineV2": {"enabled": False, "extraction": {"provider": "none"}}}, auth={"mode": "team"}
    )
    rt = start_runtime(ws)
    try:
        admin = bearer(token_for(ws, "admin"))
        mine = bearer(token_for(ws, "agent", project="alpha"))
        with TestClient(create_app(rt, manage_runtime=False), base_url="http://127.0.0.1:3850") as c:
            alpha = fill(c, 1500, admin, project="alpha")
            beta = fill(c, 1000, admin, project="beta")
            in_alpha, in_beta = by_prefix(alpha), by_prefix(beta)
            # A prefix one alpha memory and some beta memories share: alpha's token gets its own.
            shared = next(p for p, g in in_alpha.items() if len(g) == 1 and p in in_beta)
            r = c.get(f"/api/memory/{shared}", headers=mine)
            assert r.status_code == 200 and r.json()["id"] == in_alpha[shared][0], r.text
            # A prefix several alpha memories share: ambiguous, naming alpha's memories only.
            amb = next(p for p, g in in_alpha.items() if len(g) > 1)
            r = c.get(f"/api/memory/{amb}", headers=mine)
            assert r.status_code == 400 and set(r.json()["candidates"]) == set(in_alpha[amb]), r.text
            assert not any(i in r.text for i in in_beta.get(amb, []))
            # A prefix only a beta memory has: not found, as if it did not exist.
            only_beta = next(i for i in beta if i[:4] not in in_alpha)[:8]
            for method, path, body in (
                ("GET", f"/api/memory/{only_beta}", None),
                ("GET", f"/api/memory/{only_beta}/history", None),
                ("PATCH", f"/api/memory/{only_beta}", {"importance": 0.1, "reason": "x"}),
                ("POST", f"/api/memory/{only_beta}/recover", {"reason": "x"}),
            ):
                r = c.request(method, path, json=body, headers=mine)
                assert r.status_code == 404 and only_beta not in json.dumps(r.json().get("candidates", [])), r.text
            r = c.post("/api/memory/forget", json={"ids": [only_beta], "mode": "preview"}, headers=mine)
            assert r.status_code == 200 and r.json()["count"] == 0, r.text
            assert c.get(f"/api/memory/{only_beta}", headers=admin).status_code == 200
    finally:
        rt.stop()


# -- SIGNET_PORT ----------------------------------------------------------------------------


def test_signet_port_reaches_every_command_and_stop(tmp_path: Path) -> None:
    h = make_home(tmp_path)
    h.start()
    try:
        st = h.signet("status", "--json")
        assert st.returncode == 0, st.stderr
        assert json.loads(st.stdout)["workspace"] == str(h.root / ".agents")
        assert h.signet("remember", "the staging database is called heron").returncode == 0
        assert "heron" in h.signet("recall", "staging database").stdout
        assert h.signet("pipeline", "status").returncode == 0
        notes = h.root / "notes.md"
        notes.write_text("# Notes\n\nThe release train leaves on Tuesdays.\n", encoding="utf-8")
        ingested = h.signet("ingest", str(notes))
        assert ingested.returncode == 0, ingested.stderr
        assert h.signet("doctor", "--json").stdout.strip().startswith("{")
        hook = h.signet(
            "hook", "session-start", "--harness", "claude-code", input=json.dumps({"session_id": "s1", "cwd": "/"})
        )
        assert hook.returncode == 0 and "heron" in hook.stdout, hook.stdout + hook.stderr
        restarted = h.signet("restart")
        assert restarted.returncode == 0 and f"127.0.0.1:{h.port}" in restarted.stdout, restarted.stderr
    finally:
        stopped = h.signet("stop")
    assert stopped.returncode == 0 and "stopped" in stopped.stdout, stopped.stderr
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{h.url}/health", timeout=2)
    line = one_line_error(h.signet("status"))
    assert f"127.0.0.1:{h.port}" in line and "not running" in line, line


# -- help -----------------------------------------------------------------------------------

TYPE_LABEL = re.compile(r"<[a-z][a-z |\[\],]*>|\{[a-z_]+\}")
"""Typer's Python type labels (``<bool>``, ``<float range>``, ``<list[str]>``) and its
lower-case argument placeholders (``{content}``)."""


def command_paths() -> list[list[str]]:
    paths: list[list[str]] = [[]]

    def walk(cmd: Any, prefix: list[str]) -> None:
        for name, sub in getattr(cmd, "commands", {}).items():
            paths.append([*prefix, name])
            walk(sub, [*prefix, name])

    walk(get_command(app), [])
    return paths


def test_no_help_shows_type_metavars_or_names_a_missing_command() -> None:
    runner = CliRunner()
    paths = command_paths()
    assert ["bench", "embed"] in paths and ["pipeline", "requeue"] in paths
    names = {" ".join(p) for p in paths if p}
    for path in paths:
        if path == ["hook"]:
            continue  # `signet hook` is argparse's (signet.cli.hook); its help is checked below
        r = runner.invoke(app, [*path, "--help"])
        assert r.exit_code == 0, (path, r.output)
        assert not TYPE_LABEL.search(r.output), (path, TYPE_LABEL.findall(r.output), r.output)
        for named in re.findall(r"`signet ([a-z-]+(?: [a-z-]+)?)", r.output):
            assert named in names or named.split()[0] in names, (path, named)
    remember = runner.invoke(app, ["remember", "--help"]).output
    assert "--importance IMPORTANCE" in remember and "[a,b]:" in remember  # literal brackets survive
    assert "--version" in runner.invoke(app, ["--help"]).output


def test_help_through_the_real_command(tmp_path: Path) -> None:
    h = make_home(tmp_path)
    for args in (["bench", "--help"], ["--help"], ["hook", "--help"], ["pipeline", "requeue", "--help"]):
        r = h.signet(*args)
        assert r.returncode == 0, r.stderr
        assert "<bool>" not in r.stdout and "<str>" not in r.stdout, r.stdout
    assert "--help  Show this message and exit." in h.signet("bench", "--help").stdout


def test_usage_errors_are_one_line(tmp_path: Path) -> None:
    h = make_home(tmp_path)
    for args, says in (
        (["remember"], "Missing argument 'CONTENT'"),
        (["recall", "x", "--limit", "many"], "--limit"),
        (["no-such-command"], "No such command"),
        (["--no-such-option"], "No such option"),
        (["pipeline", "jobs", "--status"], "--status"),
    ):
        line = one_line_error(h.signet(*args))
        assert line.startswith("error: ") and says in line and "--help" in line, (args, line)


# -- docs/cli.md ----------------------------------------------------------------------------


def documented_rows() -> list[tuple[list[list[str]], str]]:
    """Each command row of docs/cli.md: the commands its first cell names (as word lists,
    each with the words that follow it) and the whole row."""
    rows = []
    for line in (ROOT / "docs" / "cli.md").read_text(encoding="utf-8").splitlines():
        if not line.startswith("| `signet"):
            continue
        first = line.split(" | ")[0]
        cmds: list[list[str]] = []
        group: list[str] = []
        for code in re.findall(r"`([^`]+)`", first):
            words = code.split()
            if words[0] == "signet":
                words = words[1:]
                group = words[:1]
            else:  # `jobs` after `signet pipeline status`: the same group
                words = group + words
            cmds.append(words)
        rows.append((cmds, line))
    return rows


def test_docs_cli_claims_only_commands_and_options_that_exist() -> None:
    root: Any = get_command(app)

    def find(words: list[str]) -> tuple[Any, list[str]]:
        cmd = root
        rest = list(words)
        while rest and rest[0] in getattr(cmd, "commands", {}):
            cmd = cmd.commands[rest.pop(0)]
        return cmd, rest

    documented: set[str] = set()
    rows = documented_rows()
    assert len(rows) > 15
    for cmds, line in rows:
        options: set[str] = set()
        for words in cmds:
            cmd, rest = find(words)
            # bare `signet` (the menu) and `signet --version` are the root itself
            assert cmd is not root or words in (["--version"], []), f"docs/cli.md names a missing command: {words}"
            if cmd is root:
                continue
            documented.add(cmd.name if cmd in root.commands.values() else " ".join(words[: len(words) - len(rest)]))
            for p in cmd.params:
                options.update(o for o in (*p.opts, *p.secondary_opts) if o.startswith("-"))
            options.add("--help")
            if cmd.name == "hook":  # handed to argparse (signet.cli.hook): its options are in its help
                hook_help = subprocess.run(
                    [sys.executable, "-m", "signet.cli.entry", "hook", "--help"], capture_output=True, text=True
                )
                options.update(re.findall(r"--[a-z-]+", hook_help.stdout))
        if cmds == [["--version"]]:
            options = {"--version"}
        claimed = set(re.findall(r"(?<![\w-])(--?[a-z][a-z-]*)", line.split(" | ")[0]))
        assert claimed <= options, f"{line[:60]}…: no such option {sorted(claimed - options)}"
    for path in command_paths():
        if path and not getattr(find(path)[0], "commands", None):
            assert any(" ".join(path).startswith(d) for d in documented), f"docs/cli.md lacks `signet {' '.join(path)}`"


# -- /docs offline --------------------------------------------------------------------------


class Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.urls.extend(v for k, v in attrs if k in ("src", "href") and v)


def test_docs_pages_load_only_assets_the_daemon_serves(home: Home) -> None:
    with httpx.Client(base_url=home.url, timeout=30) as c:
        for page, kinds in (("/docs", {"javascript", "css", "png"}), ("/redoc", {"javascript", "png"})):
            r = c.get(page)
            assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
            assert "http://" not in r.text and "https://" not in r.text and "//" + "cdn" not in r.text, r.text
            parser = Links()
            parser.feed(r.text)
            scripts = re.findall(r"(?:url|openapi_url|spec-url)\s*[:=]\s*['\"]([^'\"]+)['\"]", r.text)
            urls = parser.urls + scripts
            assert urls and all(u.startswith("/") and not u.startswith("//") for u in urls), urls
            seen = set()
            for u in parser.urls:
                got = c.get(u)
                assert got.status_code == 200 and len(got.content) > 1000, (u, got.status_code)
                seen.add(got.headers["content-type"].split(";")[0].split("/")[-1])
            assert seen == kinds, (page, seen)
            if page == "/docs":
                assert '"validatorUrl": null' in r.text  # Swagger UI's validator badge calls validator.swagger.io
        assert c.get("/openapi.json").status_code == 200
        missing = c.get("/docs/assets/../../etc/passwd")
        assert missing.status_code == 404
        nope = c.get("/docs/assets/no-such.js")
        assert nope.status_code == 404 and nope.json()["code"] == "not_found"
