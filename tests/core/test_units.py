"""Pure rules: normalization, hashing, prefixes, type inference, config, migrations, FTS queries."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from signet.config import load_settings, parse_settings
from signet.errors import ConfigError
from signet.memory.content import content_hash, infer_type, normalize_for_storage, parse_content
from signet.search.fts import match_expression
from signet.store.database import connect
from signet.store.migrations import MIGRATIONS, Migration, MigrationError, migrate


def test_normalization_spec_examples() -> None:
    assert normalize_for_storage("  a \n\t b  ") == "a b"
    assert content_hash("Hello world.") == content_hash("hello   WORLD!!")
    assert content_hash("hello world") != content_hash("hello world again")
    # empty normalized form falls back to the lowercased storage form
    assert content_hash("...") != content_hash("!!!")


@given(st.text(min_size=1, max_size=200))
def test_hash_ignores_whitespace_and_case(text: str) -> None:
    noisy = "  " + text.upper().replace(" ", "   ") + "  "
    if text.upper().lower() == text.lower():  # some characters change under upper()
        assert content_hash(normalize_for_storage(noisy)) == content_hash(normalize_for_storage(text))


def test_prefixes() -> None:
    p = parse_content("critical: [a, b]: keep this")
    assert (p.pinned, p.tags, p.content) == (True, ["a", "b"], "keep this")
    p = parse_content("[x]: critical: both orders")
    assert (p.pinned, p.tags, p.content) == (True, ["x"], "both orders")
    p = parse_content("critical:")
    assert (p.pinned, p.content) == (False, "critical:")
    assert parse_content("not critical: here").pinned is False


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("User prefers tabs", "preference"),
        ("We agreed to use uv", "decision"),
        ("Always run tests", "rule"),
        ("I learned that WAL helps", "learning"),
        ("There is a bug in login", "issue"),
        ("The sky is blue", "fact"),
    ],
)
def test_type_inference(text: str, kind: str) -> None:
    assert infer_type(text) == kind


def test_match_expression_quotes_everything() -> None:
    assert match_expression('foo" OR bar') == '"foo" OR "bar"'
    assert match_expression("NEAR(a b) content:x*") == '"near" OR "content"'
    assert match_expression("the of and") == '"the" OR "of" OR "and"'
    assert match_expression("") is None and match_expression("!!! ???") is None


def test_config_defaults_and_errors(tmp_path: Path) -> None:
    s = load_settings(tmp_path / "missing.yaml")
    assert s.search.alpha == 0.7 and s.memory.decay_rate == 0.95 and s.embedding.provider == "local"
    assert s.memory.pipeline.shadow_mode is False and s.retention.tombstone_days == 30
    s = parse_settings({"memory": {"pipelineV2": {"shadowMode": True}}, "unknown": {"kept": 1}})
    assert s.memory.pipeline.shadow_mode is True
    with pytest.raises(ConfigError, match=r"memory\.pipelineV2\.minFactConfidenceForWrite"):
        parse_settings({"memory": {"pipelineV2": {"minFactConfidenceForWrite": 2}}})
    with pytest.raises(ConfigError, match=r"embedding\.provider"):
        parse_settings({"embedding": {"provider": "cohere"}})
    bad = tmp_path / "agent.yaml"
    bad.write_text("search: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML at line"):
        load_settings(bad)
    bad.write_text("- a list\n")
    with pytest.raises(ConfigError, match="mapping"):
        load_settings(bad)


def test_migrations_blank_rerun_and_checksum(tmp_path: Path) -> None:
    conn = connect(tmp_path / "m.db")
    assert migrate(conn) == sorted(m.version for m in MIGRATIONS)
    assert migrate(conn) == []
    rows = conn.execute("SELECT version, checksum FROM schema_migrations ORDER BY version").fetchall()
    assert [r[1] for r in rows] == [m.checksum for m in sorted(MIGRATIONS, key=lambda m: m.version)]
    assert conn.execute("SELECT COUNT(*) FROM schema_migrations_audit").fetchone()[0] == len(MIGRATIONS)
    tampered = [Migration(m.version, m.name, m.sql + "\n-- edited") for m in MIGRATIONS]
    with pytest.raises(MigrationError, match="changed after it was applied"):
        migrate(conn, tampered)
    # a new migration appended later is applied on the next start, atomically
    extra = [*MIGRATIONS, Migration(999, "extra", "CREATE TABLE extra_t (x INTEGER);")]
    assert migrate(conn, extra) == [999]
    broken = [*extra, Migration(1000, "broken", "CREATE TABLE ok_t (x INTEGER);\nCREATE TABLE extra_t (y);")]
    with pytest.raises(Exception, match="already exists"):
        migrate(conn, broken)
    assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'ok_t'").fetchone() is None
    assert 1000 not in {r[0] for r in conn.execute("SELECT version FROM schema_migrations")}
    conn.close()


def test_retention_windows_are_bounded() -> None:
    # A window past what a datetime can subtract would crash every retention sweep.
    with pytest.raises(ConfigError, match=r"retention\.tombstone_days"):
        parse_settings({"retention": {"tombstone_days": 1_000_000}})
    assert parse_settings({"retention": {"history_days": 36500}}).retention.history_days == 36500
