"""`signet install` through the real CLI on config files shaped like the harnesses' own:
OpenClaw's JSON5 keeps its comments and layout, JSON files keep their formatting, Codex's
install names the trust step, and Cursor/Windsurf say where their rules went."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import json5
import pytest

from signet.workspace import Workspace

# ~/.openclaw/openclaw.json as OpenClaw's docs write it (docs.openclaw.ai/gateway/configuration
# and configuration-examples: JSON5 with comments, unquoted keys, trailing commas), with the
# bundled session-memory hook enabled (docs.openclaw.ai/automation/hooks).
OPENCLAW = """// ~/.openclaw/openclaw.json
{
  agents: {
    defaults: {
      workspace: "~/.openclaw/workspace",
      model: { primary: "anthropic/claude-sonnet-4-6" }, // fallbacks below
    },
    list: [
      {
        id: "main",
        identity: { name: "Clawd", theme: "helpful assistant", emoji: "🦞" },
      },
    ],
  },
  channels: {
    whatsapp: {
      allowFrom: ["+15555550123"],
      groups: { "*": { requireMention: true } },
    },
  },
  /* Hooks: event-driven automations for /new, /reset and gateway start. */
  hooks: {
    internal: {
      enabled: true,
      entries: {
        "session-memory": { enabled: true }, // notes on /new
      },
    },
  },
}
"""

# The smallest config of the docs: no hooks section yet.
OPENCLAW_MINIMAL = """// ~/.openclaw/openclaw.json
{
  agents: { defaults: { workspace: "~/.openclaw/workspace" } },
  channels: { whatsapp: { allowFrom: ["+15555550123"] } },
}
"""

# ~/.codex/hooks.json and ~/.codex/config.toml in the shapes of Codex's docs
# (developers.openai.com/codex/hooks, codex docs/config.md).
CODEX_HOOKS = """{
\t"hooks": {
\t\t"SessionStart": [
\t\t\t{
\t\t\t\t"matcher": "startup|resume",
\t\t\t\t"hooks": [
\t\t\t\t\t{
\t\t\t\t\t\t"type": "command",
\t\t\t\t\t\t"command": "python3 ~/.codex/hooks/session_start.py",
\t\t\t\t\t\t"statusMessage": "Loading session notes"
\t\t\t\t\t}
\t\t\t\t]
\t\t\t}
\t\t],
\t\t"Stop": [{"hooks": [{"type": "command", "command": "notify-send done", "timeout": 30}]}]
\t}
}
"""
CODEX_CONFIG = """# ~/.codex/config.toml
model = "gpt-5-codex"
approval_policy = "on-request"  # ask before running commands

[features]
hooks = true

[projects."/home/me/webshop"]
trust_level = "trusted"

[mcp_servers.docs]
command = "docs-mcp"
args = ["--port", "9"]
"""


def cli(*args: str, home: Path, ws: Workspace) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home), "SIGNET_WORKSPACE": str(ws.root)}
    return subprocess.run(
        [sys.executable, "-m", "signet.cli.entry", *args], capture_output=True, text=True, env=env, timeout=60
    )


def write(home: Path, rel: str, text: str) -> Path:
    p = home / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


def test_openclaw_json5_keeps_comments_and_layout(workspace: Workspace, tmp_path: Path) -> None:
    home = tmp_path / "home"
    cfg = write(home, ".openclaw/openclaw.json", OPENCLAW)
    res = cli("install", "openclaw", home=home, ws=workspace)
    assert res.returncode == 0, res.stderr
    ours = '        "signet-memory": { enabled: true },\n'
    anchor = '        "session-memory": { enabled: true }, // notes on /new\n'
    assert cfg.read_text() == OPENCLAW.replace(anchor, anchor + ours)  # one line added, nothing else
    data = json5.loads(cfg.read_text())
    assert data["hooks"]["internal"]["entries"] == {
        "session-memory": {"enabled": True},
        "signet-memory": {"enabled": True},
    }

    again = cli("install", "openclaw", home=home, ws=workspace)
    assert "already installed, nothing changed" in again.stdout
    # The user edits the file after installing: uninstall removes only Signet's line.
    edited = cfg.read_text().replace("  channels: {\n", "  // WhatsApp only for now\n  channels: {\n")
    cfg.write_text(edited)
    assert cli("uninstall", "openclaw", home=home, ws=workspace).returncode == 0
    assert cfg.read_text() == edited.replace(ours, "")


def test_openclaw_json5_without_hooks_section(workspace: Workspace, tmp_path: Path) -> None:
    home = tmp_path / "home"
    cfg = write(home, ".openclaw/openclaw.json", OPENCLAW_MINIMAL)
    res = cli("install", "openclaw", home=home, ws=workspace)
    assert res.returncode == 0, res.stderr
    text = cfg.read_text()
    # The new member follows the file's own style: unquoted keys, one line like its siblings,
    # and the trailing comma the other members have.
    added = '  hooks: { internal: { enabled: true, entries: { "signet-memory": { enabled: true } } } },\n'
    assert text == OPENCLAW_MINIMAL.removesuffix("}\n") + added + "}\n"
    assert json5.loads(text)["hooks"]["internal"]["entries"]["signet-memory"] == {"enabled": True}
    assert cli("uninstall", "openclaw", home=home, ws=workspace).returncode == 0
    assert cfg.read_text() == OPENCLAW_MINIMAL


def test_json5_that_cannot_be_edited_in_place_is_left_alone(workspace: Workspace, tmp_path: Path) -> None:
    r"""A key spelled with a JSON5 escape (``\u0068ooks`` is ``hooks``) defeats the in-place
    edit: nothing is written and the error says exactly what to add by hand."""
    home = tmp_path / "home"
    text = OPENCLAW.replace("  hooks: {\n", "  \\u0068ooks: {\n")
    assert json5.loads(text)["hooks"]["internal"]["enabled"] is True
    cfg = write(home, ".openclaw/openclaw.json", text)
    res = cli("install", "openclaw", home=home, ws=workspace)
    assert res.returncode == 1
    assert 'add hooks.internal.entries["signet-memory"] = {"enabled": true}' in res.stderr, res.stderr
    assert cfg.read_text() == text
    assert not (home / ".openclaw/hooks").exists()


def test_json_files_keep_their_formatting(workspace: Workspace, tmp_path: Path) -> None:
    home = tmp_path / "home"
    settings_text = (
        json.dumps(
            {
                "model": "sonnet",
                "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh"}]}]},
            },
            indent=4,
        )
        + "\n"
    )
    settings = write(home, ".claude/settings.json", settings_text)
    claude_json = write(home, ".claude.json", '{"numStartups":12,"mcpServers":{"github":{"command":"gh-mcp"}}}')
    cursor = write(home, ".cursor/mcp.json", '{\n  "mcpServers": {\n    "pg": { "command": "pg-mcp" }\n  }\n}\n')
    for name in ("claude-code", "cursor"):
        res = cli("install", name, home=home, ws=workspace)
        assert res.returncode == 0, res.stderr

    new = settings.read_text()
    user_part = settings_text[: settings_text.rindex("\n    }\n}")]
    assert new.startswith(user_part)  # the user's lines, byte for byte
    indents = {len(line) - len(line.lstrip(" ")) for line in new.splitlines()}
    assert indents <= {0, 4, 8, 12, 16, 20, 24}, indents  # Signet's lines use the file's 4 spaces
    assert "SessionStart" in json.loads(new)["hooks"]

    compact = claude_json.read_text()
    assert "\n" not in compact and compact.startswith('{"numStartups":12,"mcpServers":{"github":{"command":"gh-mcp"},')
    assert json.loads(compact)["mcpServers"]["signet"]["args"][-1] == "mcp"

    lines = cursor.read_text().splitlines()
    assert lines[:3] == ["{", '  "mcpServers": {', '    "pg": { "command": "pg-mcp" },']
    assert lines[3].startswith('    "signet": { "command": ') and lines[4:] == ["  }", "}"]

    for name in ("claude-code", "cursor"):
        assert cli("uninstall", name, home=home, ws=workspace).returncode == 0
    assert settings.read_text() == settings_text


def test_codex_install_names_the_trust_step_and_ignores_project(workspace: Workspace, tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "webshop"
    project.mkdir()
    hooks = write(home, ".codex/hooks.json", CODEX_HOOKS)
    config = write(home, ".codex/config.toml", CODEX_CONFIG)
    res = cli("install", "codex", "--project", str(project), home=home, ws=workspace)
    assert res.returncode == 0, res.stderr
    assert "Codex skips new hooks until you trust them" in res.stdout and "/hooks" in res.stdout
    assert "--project is ignored" in res.stdout
    assert list(project.iterdir()) == []

    text = hooks.read_text()
    assert text.startswith(CODEX_HOOKS[: CODEX_HOOKS.index('\n\t\t],\n\t\t"Stop"')])  # tabs and all, untouched
    # Signet's groups follow in the file's tabs.
    assert '\t\t\t},\n\t\t\t{\n\t\t\t\t"hooks": [\n\t\t\t\t\t{\n\t\t\t\t\t\t"type": "command",\n' in text
    assert (
        '\t\t"Stop": [{"hooks": [{"type": "command", "command": "notify-send done", "timeout": 30}]}, {"hooks": '
        in text
    )
    events = json.loads(text)["hooks"]
    assert [g["hooks"][0]["command"].split()[-3:] for g in events["UserPromptSubmit"]] == [
        ["user-prompt-submit", "--harness", "codex"]
    ]
    cfg_text = config.read_text()
    assert cfg_text.startswith(CODEX_CONFIG)  # comments and tables kept; Signet's block follows
    cfg = tomllib.loads(cfg_text)
    assert cfg["projects"] == {"/home/me/webshop": {"trust_level": "trusted"}}
    assert cfg["mcp_servers"]["signet"]["args"][-1] == "mcp"

    # Still said on a second install: Signet cannot tell whether the user has trusted them.
    again = cli("install", "codex", home=home, ws=workspace)
    assert "already installed" in again.stdout and "trust them" in again.stdout
    assert "--project is ignored" not in again.stdout


@pytest.mark.parametrize(
    ("name", "user_rule", "project_rule"),
    [
        ("cursor", ".cursor/rules/signet.mdc", ".cursor/rules/signet.mdc"),
        ("windsurf", ".codeium/windsurf/memories/global_rules.md", ".windsurf/rules/signet.md"),
    ],
)
def test_cursor_and_windsurf_say_where_the_rules_went(
    workspace: Workspace, tmp_path: Path, name: str, user_rule: str, project_rule: str
) -> None:
    home, project = tmp_path / "home", tmp_path / "webshop"
    project.mkdir()
    res = cli("install", name, home=home, ws=workspace)
    assert res.returncode == 0, res.stderr
    line = next(x for x in res.stdout.splitlines() if str(home / user_rule) in x)
    assert "every" in line and "--project DIR" in line, line
    assert cli("uninstall", name, home=home, ws=workspace).returncode == 0
    res = cli("install", name, "--project", str(project), home=home, ws=workspace)
    assert res.returncode == 0, res.stderr
    line = next(x for x in res.stdout.splitlines() if str(project / project_rule) in x)
    assert "for this" in line, line
