"""``signet config get|set|edit|validate`` on a real workspace's agent.yaml, and ``signet
dashboard`` against a real daemon with ``$BROWSER`` pointing at a script that records its
argument."""

from __future__ import annotations

import re
import stat
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from typer.testing import CliRunner, Result

import signet.cli.main  # noqa: F401  (registers every command on the app)
from signet.cli.app import app
from signet.config import load_settings
from signet.workspace import Workspace, setup_workspace
from tests.core.test_cli_manners import make_home, one_line_error

runner = CliRunner()


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    w = Workspace(tmp_path / "ws")
    setup_workspace(w, embedding_provider="none")
    # A key another tool keeps in agent.yaml, and a snake_case spelling Signet accepts.
    data = yaml.safe_load(w.config_path.read_text())
    data["othertool"] = {"theme": "dark"}
    data["auth"] = {"default_ttl_s": 3600}
    w.config_path.write_text(yaml.safe_dump(data, sort_keys=False))
    monkeypatch.setenv("SIGNET_WORKSPACE", str(w.root))
    monkeypatch.delenv("VISUAL", raising=False)
    return w


def cli(*args: str, env: dict[str, str] | None = None) -> Result:
    return runner.invoke(app, list(args), env=env)


def error_line(r: Result) -> str:
    assert r.exit_code != 0, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1, r.output
    return lines[0]


def raw(ws: Workspace) -> dict[str, Any]:
    data = yaml.safe_load(ws.config_path.read_text())
    assert isinstance(data, dict)
    return data


def test_get_prints_set_values_and_defaults(ws: Workspace) -> None:
    assert cli("config", "get", "search.alpha").output == "0.7\n"  # a default
    assert cli("config", "get", "auth.defaultTtlSeconds").output == "3600\n"  # written snake_case
    assert cli("config", "get", "auth.default_ttl_s").output == "3600\n"
    assert cli("config", "get", "search.top_k").output == "50\n"
    assert cli("config", "get", "embedding.provider").output == "none\n"
    assert cli("config", "get", "memory.pipelineV2.extraction.provider").output == "none\n"
    assert cli("config", "get", "othertool.theme").output == "dark\n"
    section = yaml.safe_load(cli("config", "get", "daemon").output)
    assert section["port"] == 3850


def test_get_an_unknown_key_is_one_line_with_a_suggestion(ws: Workspace) -> None:
    line = error_line(cli("config", "get", "search.alpah"))
    assert "search.alpah" in line and "did you mean search.alpha?" in line
    assert "did you mean auth?" in error_line(cli("config", "get", "atuh.mode"))


def test_set_validates_writes_and_keeps_the_rest(ws: Workspace) -> None:
    before = raw(ws)
    r = cli("config", "set", "search.alpha", "0.4")
    assert r.exit_code == 0, r.output
    after = raw(ws)
    assert after["search"] == {**before["search"], "alpha": 0.4}
    assert after["othertool"] == {"theme": "dark"}
    assert list(after) == list(before)  # order of the top-level keys kept
    assert load_settings(ws.config_path).search.alpha == 0.4

    assert cli("config", "set", "auth.defaultTtlSeconds", "7200").exit_code == 0
    assert raw(ws)["auth"] == {"default_ttl_s": 7200}  # the file's own spelling, not a second key
    assert load_settings(ws.config_path).auth.default_ttl_s == 7200

    assert cli("config", "set", "memory.pipelineV2.extraction.provider", "ollama").exit_code == 0
    assert load_settings(ws.config_path).memory.pipeline.extraction.provider == "ollama"
    assert cli("config", "set", "agent.name", "123").exit_code == 0  # a text key keeps the text
    assert load_settings(ws.config_path).agent.name == "123"
    assert cli("config", "set", "auth.allowedHosts", "[a.example, b.example]").exit_code == 0
    assert load_settings(ws.config_path).auth.allowed_hosts == ["a.example", "b.example"]
    assert raw(ws)["auth"] == {"default_ttl_s": 7200, "allowedHosts": ["a.example", "b.example"]}


def test_set_keeps_comments_and_layout(ws: Workspace) -> None:
    ws.config_path.write_text(
        "# my agent\nagent:\n  name: bob   # the name\nsearch:\n    alpha: 0.7  # balance\n\n    top_k: 50\n"
        "auth:\n  allowedHosts:\n    - a.example\n  # about auth\nothertool: {theme: dark}\n"
    )
    for key, value in [
        ("search.alpha", "0.4"),
        ("search.min_score", "0.2"),
        ("auth.allowedHosts", "[x.example]"),
        ("agent.name", "it's: me # not a comment"),
        ("memory.pipelineV2.extraction.provider", "ollama"),
    ]:
        r = cli("config", "set", key, value)
        assert r.exit_code == 0, r.output
    assert ws.config_path.read_text() == (
        "# my agent\nagent:\n  name: 'it''s: me # not a comment'   # the name\nsearch:\n    alpha: 0.4  # balance\n\n"
        "    top_k: 50\n    min_score: 0.2\nauth:\n  allowedHosts: [x.example]\n  # about auth\n"
        "othertool: {theme: dark}\nmemory:\n  pipelineV2:\n    extraction:\n      provider: ollama\n"
    )
    assert load_settings(ws.config_path).agent.name == "it's: me # not a comment"

    assert cli("config", "set", "othertool.theme", "light").exit_code != 0  # not Signet's key: use edit
    ws.config_path.write_text("search: {alpha: 0.7}  # flow style\n")
    assert cli("config", "set", "search.topK", "7").exit_code != 0  # search.top_k has no camelCase spelling
    assert cli("config", "set", "search.top_k", "7").exit_code == 0  # rewritten whole: keys kept
    assert yaml.safe_load(ws.config_path.read_text()) == {"search": {"alpha": 0.7, "top_k": 7}}


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("search.alpha", "5", "search.alpha"),
        ("daemon.port", "abc", "daemon.port"),
        ("memory.pipelineV2.extraction.provider", "nosuch", "unknown LLM provider 'nosuch'"),
        ("search.alpah", "0.5", "did you mean search.alpha?"),
        ("auth.mdoe", "team", "did you mean auth.mode?"),
    ],
)
def test_set_refuses_a_bad_key_or_value_and_leaves_the_file(ws: Workspace, key: str, value: str, said: str) -> None:
    before = ws.config_path.read_bytes()
    line = error_line(cli("config", "set", key, value))
    assert line.startswith("error: ") and said in line, line
    assert ws.config_path.read_bytes() == before


def test_set_can_fix_an_invalid_file(ws: Workspace) -> None:
    data = raw(ws)
    data["search"] = {"alpha": 7}
    ws.config_path.write_text(yaml.safe_dump(data, sort_keys=False))
    assert "search.alpha" in error_line(cli("config", "validate"))
    assert cli("config", "set", "search.alpha", "0.6").exit_code == 0
    assert cli("config", "validate").exit_code == 0


def test_validate(ws: Workspace) -> None:
    r = cli("config", "validate")
    assert r.exit_code == 0 and "valid" in r.output
    ws.config_path.write_text("search: [unclosed\n")
    assert "not valid YAML" in error_line(cli("config", "validate"))
    ws.config_path.unlink()
    assert "signet setup" in error_line(cli("config", "validate"))


def editor(tmp_path: Path, body: str) -> str:
    script = tmp_path / "editor.py"
    script.write_text(f"import sys\nfrom pathlib import Path\np = Path(sys.argv[1])\n{body}\n")
    wrapper = tmp_path / "editor.sh"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{script}" "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return str(wrapper)


def test_edit_keeps_a_valid_edit_with_its_comments(ws: Workspace, tmp_path: Path) -> None:
    ed = editor(
        tmp_path, "p.write_text('# mine\\n' + p.read_text().replace('default_ttl_s: 3600', 'default_ttl_s: 60'))"
    )
    r = cli("config", "edit", env={"EDITOR": ed})
    assert r.exit_code == 0, r.output
    assert ws.config_path.read_text().startswith("# mine\n")
    assert load_settings(ws.config_path).auth.default_ttl_s == 60


def test_edit_refuses_an_invalid_result_and_restores_the_file(ws: Workspace, tmp_path: Path) -> None:
    before = ws.config_path.read_bytes()
    ed = editor(
        tmp_path, "p.write_text(p.read_text().replace('default_ttl_s: 3600', 'default_ttl_s: 3600\\n  mode: sideways'))"
    )
    line = error_line(cli("config", "edit", env={"VISUAL": ed, "EDITOR": "false"}))  # VISUAL first
    assert "auth.mode" in line and "unchanged" in line
    assert ws.config_path.read_bytes() == before
    kept = Path(re.findall(r"(/\S+/agent\.yaml):", line)[0])
    assert kept != ws.config_path
    assert "mode: sideways" in kept.read_text()  # the user's edit is not lost

    line = error_line(cli("config", "edit", env={"EDITOR": "false"}))
    assert "exited with 1" in line and ws.config_path.read_bytes() == before
    r = cli("config", "edit", env={"EDITOR": "true"})
    assert r.exit_code == 0 and "no changes" in r.output


# -- dashboard, through the real command ---------------------------------------------------


def test_dashboard_without_a_daemon_says_to_start_it(tmp_path: Path) -> None:
    h = make_home(tmp_path)
    assert h.signet("setup", "-y", "--embedding", "none", "--llm", "none").returncode == 0
    line = one_line_error(h.signet("dashboard"))
    assert "signet start" in line
    assert "signet start" in one_line_error(h.signet("dashboard", "--print"))


def test_dashboard_opens_the_daemons_url_in_browser(tmp_path: Path) -> None:
    h = make_home(tmp_path)
    record = tmp_path / "opened.txt"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\nprintf "%s\\n" "$1" >> "{record}"\n')
    browser.chmod(0o755)
    h.env["BROWSER"] = str(browser)
    h.start()
    try:
        printed = h.signet("dashboard", "--print")
        assert printed.returncode == 0, printed.stderr
        assert printed.stdout == f"{h.url}/\n"
        assert not record.exists()  # --print opens nothing

        opened = h.signet("dashboard")
        assert opened.returncode == 0, opened.stderr
        assert record.read_text() == f"{h.url}/\n"
        page = httpx.get(f"{h.url}/", timeout=10)
        assert page.status_code == 200 and "<html" in page.text.lower()  # the URL is the dashboard
    finally:
        assert h.signet("stop").returncode == 0
    assert "signet start" in one_line_error(h.signet("dashboard"))


def test_new_commands_have_help() -> None:
    for path in (["config"], ["config", "get"], ["config", "set"], ["config", "edit"], ["config", "validate"]):
        r = cli(*path, "--help")
        assert r.exit_code == 0 and "Usage" in r.output, (path, r.output)
    r = cli("dashboard", "--help")
    assert r.exit_code == 0 and "--print" in r.output
