"""The merge-with-markers and exact-restore mechanism every installer uses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from signet.harnesses.base import add_command_hooks, del_key, set_key, strip_command_hooks
from signet.harnesses.merge import (
    BlockEdit,
    HarnessConfigError,
    JsonEdit,
    Ledger,
    OwnedFile,
    apply_edits,
    revert,
    toml_validator,
)


def json_edit(path: Path) -> JsonEdit:
    hooks = {"SessionStart": ("/bin/signet hook session-start --harness claude-code", 15, None)}

    def add(obj: dict[str, Any]) -> None:
        add_command_hooks(obj, hooks, "claude-code")
        set_key(obj, ("mcpServers", "signet"), {"command": "/bin/signet", "args": ["mcp"]})

    def strip(obj: dict[str, Any]) -> None:
        strip_command_hooks(obj, "claude-code")
        del_key(obj, ("mcpServers", "signet"))

    return JsonEdit(path, "json", "test", add=add, strip=strip)


def roundtrip(edits: list[Any]) -> tuple[Ledger, list[Any]]:
    ledger = Ledger(harness="t", installed_at="now")
    return ledger, apply_edits(edits, ledger)


USER_SETTINGS = b"""{
    "model": "opus",
    "hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "echo mine"}]}]},
    "mcpServers": {"other": {"command": "x"}}
}"""


def test_json_install_keeps_user_entries_and_uninstall_restores_bytes(tmp_path: Path) -> None:
    p = tmp_path / "settings.json"
    p.write_bytes(USER_SETTINGS)
    ledger, changes = roundtrip([json_edit(p)])
    assert changes[0].action == "updated"
    obj = json.loads(p.read_text())
    assert obj["model"] == "opus" and obj["mcpServers"]["other"] == {"command": "x"}
    assert [g["hooks"][0]["command"] for g in obj["hooks"]["SessionStart"]] == [
        "echo mine",
        "/bin/signet hook session-start --harness claude-code",
    ]
    # Installing again changes nothing.
    before = p.read_bytes()
    assert apply_edits([json_edit(p)], ledger)[0].action == "unchanged"
    assert p.read_bytes() == before
    revert([json_edit(p)], ledger)
    assert p.read_bytes() == USER_SETTINGS


def test_missing_file_and_parent_dirs_are_removed_again(tmp_path: Path) -> None:
    p = tmp_path / "a" / "b" / "settings.json"
    ledger, _ = roundtrip([json_edit(p)])
    assert p.is_file()
    revert([json_edit(p)], ledger)
    assert not (tmp_path / "a").exists()


def test_user_change_after_install_is_kept_and_only_signet_removed(tmp_path: Path) -> None:
    p = tmp_path / "settings.json"
    p.write_bytes(USER_SETTINGS)
    ledger, _ = roundtrip([json_edit(p)])
    obj = json.loads(p.read_text())
    obj["theme"] = "dark"
    p.write_text(json.dumps(obj))
    changes = revert([json_edit(p)], ledger)
    assert changes[0].action == "stripped"
    assert json.loads(p.read_text()) == {**json.loads(USER_SETTINGS), "theme": "dark"}


@pytest.mark.parametrize("content", [b"{ not json", b"[1, 2]", b'{"hooks": []}', b"\xff\xfe"])
def test_broken_config_is_reported_never_overwritten(tmp_path: Path, content: bytes) -> None:
    p = tmp_path / "settings.json"
    p.write_bytes(content)
    other = tmp_path / "CLAUDE.md"
    with pytest.raises(HarnessConfigError) as err:
        roundtrip([BlockEdit(other, "markdown", "t", begin="<!-- b -->", end="<!-- e -->", body="x"), json_edit(p)])
    assert str(p) in str(err.value)
    assert p.read_bytes() == content
    assert not other.exists(), "nothing is written when any file of the install is broken"


def test_markdown_block_appends_replaces_and_removes(tmp_path: Path) -> None:
    p = tmp_path / "CLAUDE.md"
    original = b"# Mine\n\nKeep this.\n"
    p.write_bytes(original)

    def edit(body: str) -> BlockEdit:
        return BlockEdit(p, "markdown", "t", begin="<!-- signet:begin -->", end="<!-- signet:end -->", body=body)

    ledger, _ = roundtrip([edit("version one")])
    assert p.read_text() == "# Mine\n\nKeep this.\n\n<!-- signet:begin -->\nversion one\n<!-- signet:end -->\n"
    apply_edits([edit("version two")], ledger)
    text = p.read_text()
    assert "version two" in text and "version one" not in text and text.count("signet:begin") == 1
    revert([edit("version two")], ledger)
    assert p.read_bytes() == original
    # Edited by the user since: only the block goes.
    ledger, _ = roundtrip([edit("v3")])
    p.write_text(p.read_text().replace("Keep this.", "Keep this, edited."))
    revert([edit("v3")], ledger)
    assert p.read_text() == "# Mine\n\nKeep this, edited.\n"


def test_toml_block_is_validated(tmp_path: Path) -> None:
    p = tmp_path / "config.toml"
    p.write_text('model = "o3"\n[mcp_servers.signet]\ncommand = "theirs"\n')
    edit = BlockEdit(
        p,
        "toml",
        "t",
        begin="# >>> s >>>",
        end="# <<< s <<<",
        body='[mcp_servers.signet]\ncommand = "signet"',
        validate=toml_validator,
    )
    with pytest.raises(HarnessConfigError, match="not valid TOML"):
        roundtrip([edit])
    p.write_text('model = "o3\n')
    with pytest.raises(HarnessConfigError):
        roundtrip([edit])


def test_owned_file_never_replaces_a_foreign_file(tmp_path: Path) -> None:
    p = tmp_path / "signet.js"
    p.write_text("// somebody else's plugin\n")
    with pytest.raises(HarnessConfigError, match="not written by Signet"):
        roundtrip([OwnedFile(p, "owned", "t", content="// signet plugin", marker="signet plugin")])


def test_ledger_is_private_and_survives_reload(tmp_path: Path) -> None:
    p = tmp_path / "s.json"
    p.write_bytes(USER_SETTINGS)
    ledger, _ = roundtrip([json_edit(p)])
    ledger.save(tmp_path / "state")
    path = Ledger.path_for(tmp_path / "state", "t")
    assert path.stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "state" / ".gitignore").read_text() == "*\n"
    again = Ledger.load(tmp_path / "state", "t")
    assert again is not None and again.files[str(p)].original == USER_SETTINGS


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=6), kids, max_size=3),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    obj=st.dictionaries(
        st.sampled_from(["model", "env", "permissions", "x", "mcpServers", "hooks"]) | st.text(max_size=5),
        json_values,
        max_size=5,
    ),
    indent=st.sampled_from([None, 2, 4]),
)
def test_any_json_object_round_trips_byte_for_byte(tmp_path: Path, obj: dict[str, Any], indent: int | None) -> None:
    p = tmp_path / "settings.json"
    original = json.dumps(obj, indent=indent).encode()
    p.write_bytes(original)
    try:
        ledger, _ = roundtrip([json_edit(p)])
    except HarnessConfigError:
        assert p.read_bytes() == original  # a shape Signet cannot merge into: reported, untouched
        return
    assert apply_edits([json_edit(p)], ledger)[0].action == "unchanged"
    revert([json_edit(p)], ledger)
    assert p.read_bytes() == original
