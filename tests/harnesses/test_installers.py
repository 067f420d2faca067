"""Installers for every harness, on a home that already has the user's own config."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from signet.harnesses import install as ops
from signet.workspace import Workspace

# What a user already has before installing Signet (hooks, servers, rules of their own).
USER_FILES = {
    ".claude/settings.json": json.dumps(
        {
            "model": "sonnet",
            "permissions": {"allow": ["Bash(npm test:*)"]},
            "hooks": {
                "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/guard.sh"}]}],
                "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo hello"}]}],
            },
        },
        indent=4,
    )
    + "\n",
    ".claude.json": json.dumps({"numStartups": 12, "mcpServers": {"github": {"command": "gh-mcp"}}}),
    ".claude/CLAUDE.md": "# My global rules\n\n- Use British spelling.\n",
    ".codex/config.toml": 'model = "o3"\napproval_policy = "on-request"\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n'
    'args = ["--port", "9"]\n',
    ".codex/hooks.json": json.dumps({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify"}]}]}}),
    ".codex/AGENTS.md": "Codex: keep diffs small.",
    ".config/opencode/opencode.json": json.dumps(
        {
            "$schema": "https://opencode.ai/config.json",
            "theme": "tokyonight",
            "mcp": {"jira": {"type": "remote", "url": "https://j"}},
        },
        indent=2,
    ),
    ".openclaw/openclaw.json": json.dumps(
        {
            "agents": {"defaults": {"model": "x"}},
            "hooks": {"internal": {"enabled": True, "entries": {"session-memory": {"enabled": True}}}},
        }
    ),
    ".openclaw/workspace/AGENTS.md": "# OpenClaw agent\n",
    ".cursor/mcp.json": json.dumps({"mcpServers": {"pg": {"command": "pg-mcp"}}}),
    ".codeium/windsurf/memories/global_rules.md": "Always answer in English.\n",
    ".codeium/windsurf/mcp_config.json": '{"mcpServers": {}}',
}

HARNESSES = ["claude-code", "codex", "opencode", "openclaw", "cursor", "windsurf"]


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    for rel, text in USER_FILES.items():
        p = h / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return h


@pytest.mark.parametrize("name", HARNESSES)
def test_install_twice_then_uninstall_is_byte_for_byte(workspace: Workspace, home: Path, name: str) -> None:
    before = snapshot(home)
    harness = ops.get_harness(name)
    ctx = ops.make_context(workspace.root, home=home)
    first = ops.install(harness, ctx)
    assert any(c.action in ("created", "updated") for c in first)
    after_first = snapshot(home)
    second = ops.install(harness, ctx)
    assert all(c.action == "unchanged" for c in second), second
    assert snapshot(home) == after_first
    st = ops.status(harness, workspace.root)
    assert st["installed"] and st["complete"], st
    ops.uninstall(harness, workspace.root)
    assert snapshot(home) == before
    assert not ops.status(harness, workspace.root)["installed"]


def test_all_harnesses_together_and_their_content(workspace: Workspace, home: Path) -> None:
    before = snapshot(home)
    ctx = ops.make_context(workspace.root, home=home)
    for name in HARNESSES:
        ops.install(ops.get_harness(name), ctx)
    settings = json.loads((home / ".claude/settings.json").read_text())
    assert settings["model"] == "sonnet" and settings["permissions"] == {"allow": ["Bash(npm test:*)"]}
    assert settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"] == "~/bin/guard.sh"
    starts = settings["hooks"]["SessionStart"]
    assert starts[0]["hooks"][0]["command"] == "echo hello"
    ours = starts[1]["hooks"][0]
    assert ours["command"].endswith("hook session-start --harness claude-code")
    assert ours["timeout"] == 15, "Claude Code timeouts are seconds"
    mine = [h for ev in settings["hooks"].values() for g in ev for h in g["hooks"] if "signet" in h["command"]]
    assert len(mine) == 4 and all(isinstance(h["timeout"], int) and 5 <= h["timeout"] <= 60 for h in mine)
    assert set(settings["hooks"]) == {"PreToolUse", "SessionStart", "UserPromptSubmit", "SessionEnd", "PreCompact"}
    claude_json = json.loads((home / ".claude.json").read_text())
    assert claude_json["numStartups"] == 12 and claude_json["mcpServers"]["github"] == {"command": "gh-mcp"}
    assert claude_json["mcpServers"]["signet"]["args"][-1] == "mcp"
    claude_md = (home / ".claude/CLAUDE.md").read_text()
    assert claude_md.startswith("# My global rules") and "<!-- signet:begin -->" in claude_md
    assert "You are a coding agent" in claude_md  # from the workspace's AGENTS.md
    codex_cfg = tomllib.loads((home / ".codex/config.toml").read_text())
    assert codex_cfg["model"] == "o3" and codex_cfg["mcp_servers"]["docs"]["command"] == "docs-mcp"
    assert codex_cfg["mcp_servers"]["signet"]["args"] == ["mcp"]
    codex_hooks = json.loads((home / ".codex/hooks.json").read_text())["hooks"]
    assert codex_hooks["Stop"][0]["hooks"][0]["command"] == "notify"
    assert codex_hooks["Stop"][1]["hooks"][0]["command"].endswith("hook session-end --harness codex")
    oc = json.loads((home / ".config/opencode/opencode.json").read_text())
    assert oc["theme"] == "tokyonight" and oc["mcp"]["jira"]["type"] == "remote"
    assert oc["mcp"]["signet"]["type"] == "local" and oc["mcp"]["signet"]["command"][-1] == "mcp"
    claw = json.loads((home / ".openclaw/openclaw.json").read_text())
    assert claw["hooks"]["internal"]["entries"] == {
        "session-memory": {"enabled": True},
        "signet-memory": {"enabled": True},
    }
    assert (home / ".openclaw/hooks/signet-memory/HOOK.md").read_text().startswith("---\nname: signet-memory")
    rule = (home / ".cursor/rules/signet.mdc").read_text()
    assert rule.startswith("---\ndescription:") and "alwaysApply: true" in rule
    rules = (home / ".codeium/windsurf/memories/global_rules.md").read_text()
    assert rules.startswith("Always answer in English.") and len(rules) <= 6000
    for name in reversed(HARNESSES):
        ops.uninstall(ops.get_harness(name), workspace.root)
    assert snapshot(home) == before


def test_project_rules_for_cursor_and_windsurf(workspace: Workspace, tmp_path: Path) -> None:
    home, project = tmp_path / "h", tmp_path / "proj"
    project.mkdir()
    for name, rel in (("cursor", ".cursor/rules/signet.mdc"), ("windsurf", ".windsurf/rules/signet.md")):
        ops.install(ops.get_harness(name), ops.make_context(workspace.root, home=home, project=project))
        assert (project / rel).is_file()
        ops.uninstall(ops.get_harness(name), workspace.root)
        assert not (project / rel).exists() and not (project / rel.split("/")[0]).exists()


def test_plugin_and_hook_handler_are_valid_javascript(workspace: Workspace, tmp_path: Path) -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    home = tmp_path / "h"
    ctx = ops.make_context(workspace.root, home=home)
    ops.install(ops.get_harness("opencode"), ctx)
    ops.install(ops.get_harness("openclaw"), ctx)
    for src in (home / ".config/opencode/plugins/signet.js", home / ".openclaw/hooks/signet-memory/handler.js"):
        mjs = tmp_path / (src.stem + ".mjs")
        mjs.write_text(src.read_text())
        res = subprocess.run([node, "--check", str(mjs)], capture_output=True, text=True)
        assert res.returncode == 0, res.stderr


def run_cli(*args: str, home: Path, ws: Workspace) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home), "SIGNET_WORKSPACE": str(ws.root)}
    return subprocess.run(
        [sys.executable, "-m", "signet.cli.entry", *args], capture_output=True, text=True, env=env, timeout=60
    )


def test_cli_install_uninstall_status_and_errors(workspace: Workspace, home: Path) -> None:
    before = snapshot(home)
    out = run_cli("install", "claude-code", home=home, ws=workspace)
    assert out.returncode == 0 and "installed" in out.stdout, out.stderr
    again = run_cli("install", "claude-code", home=home, ws=workspace)
    assert "already installed, nothing changed" in again.stdout
    status = json.loads(run_cli("harnesses", "--json", home=home, ws=workspace).stdout)
    assert {r["name"]: r["complete"] for r in status}["claude-code"] is True
    assert run_cli("uninstall", "claude-code", home=home, ws=workspace).returncode == 0
    assert snapshot(home) == before
    bad = run_cli("install", "notepad", home=home, ws=workspace)
    assert bad.returncode == 1 and "unknown harness 'notepad'" in bad.stderr
    missing = run_cli("uninstall", "codex", home=home, ws=workspace)
    assert missing.returncode == 1 and "not installed" in missing.stderr
    (home / ".cursor/mcp.json").write_text("{ broken")
    broken = run_cli("install", "cursor", home=home, ws=workspace)
    assert broken.returncode == 1 and "not valid JSON" in broken.stderr
    assert (home / ".cursor/mcp.json").read_text() == "{ broken"
    assert not (home / ".cursor/rules").exists()


def test_setup_installs_the_named_harnesses(tmp_path: Path, home: Path) -> None:
    ws = Workspace(tmp_path / "fresh")
    out = run_cli("setup", "--non-interactive", "--harness", "claude-code", "--harness", "codex", home=home, ws=ws)
    assert out.returncode == 0, out.stderr
    assert "Claude Code: installed" in out.stdout
    status = {r["name"]: r["complete"] for r in json.loads(run_cli("harnesses", "--json", home=home, ws=ws).stdout)}
    assert status["claude-code"] and status["codex"] and not status["cursor"]
    again = run_cli("setup", "--non-interactive", "--harness", "claude-code", home=home, ws=ws)
    assert again.returncode == 0 and "Claude Code: already installed" in again.stdout
    bad = run_cli("setup", "--non-interactive", "--harness", "notepad", home=home, ws=ws)
    assert bad.returncode != 0 and "unknown harness 'notepad'" in bad.stderr
    (home / ".cursor").mkdir(exist_ok=True)
    (home / ".cursor/mcp.json").write_text("{ broken")
    broken = run_cli("setup", "--non-interactive", "--harness", "cursor", home=home, ws=ws)
    assert broken.returncode == 1 and "not valid JSON" in broken.stderr
    assert (home / ".cursor/mcp.json").read_text() == "{ broken"
    skipped = run_cli("setup", "--non-interactive", "--harness", "cursor", "--no-install", home=home, ws=ws)
    assert skipped.returncode == 0, skipped.stderr
