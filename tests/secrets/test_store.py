"""The encrypted store on real files: no plaintext on disk, private modes, atomic and
locked writes, values bound to their names, the key in a keyring or a key file."""

from __future__ import annotations

import base64
import json
import stat
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import keyring
import pytest
from keyring.backend import KeyringBackend
from keyring.backends import fail

from signet.errors import InvalidRequest, NotFound
from signet.secrets.keys import KEYRING_SERVICE, KeyUnavailable
from signet.secrets.store import SecretStore, StoreDamaged
from tests.secrets.conftest import VALUE, assert_hidden


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_nothing_is_created_until_a_value_is_stored(tmp_path: Path) -> None:
    store = SecretStore(tmp_path / ".secrets")
    assert store.entries() == [] and store.key_kind() is None and not store.has("TOKEN")
    assert not (tmp_path / ".secrets").exists()


def test_values_round_trip_and_the_files_hold_no_plaintext(tmp_path: Path) -> None:
    store = SecretStore(tmp_path / ".secrets", "file")
    assert store.put("TOKEN", VALUE) is True
    assert store.put("OTHER", "second value with spaces ü") is True
    assert store.put("TOKEN", VALUE) is False  # replaced, not added
    assert [e.name for e in store.entries()] == ["OTHER", "TOKEN"]
    assert store.values(["TOKEN", "OTHER"]) == {"TOKEN": VALUE, "OTHER": "second value with spaces ü"}
    assert store.key_kind() == "file"

    text = (tmp_path / ".secrets" / "store.json").read_text()
    assert_hidden(text, "the store file")
    assert "second value" not in text
    assert set(json.loads(text)["secrets"]) == {"TOKEN", "OTHER"}
    assert_hidden((tmp_path / ".secrets" / "key").read_text(), "the key file")
    assert mode(tmp_path / ".secrets") == 0o700
    for name in ("store.json", "key", "lock"):
        assert mode(tmp_path / ".secrets" / name) == 0o600, name
    # no temp file is left behind by the atomic writes
    assert sorted(p.name for p in (tmp_path / ".secrets").iterdir()) == ["key", "lock", "store.json"]


def test_each_value_has_its_own_nonce(tmp_path: Path) -> None:
    store = SecretStore(tmp_path / ".secrets", "file")
    store.put("A_ONE", "same value")
    store.put("A_TWO", "same value")
    data = json.loads(store.path.read_text())["secrets"]
    assert data["A_ONE"]["nonce"] != data["A_TWO"]["nonce"]
    assert data["A_ONE"]["ciphertext"] != data["A_TWO"]["ciphertext"]


def test_a_ciphertext_moved_to_another_name_does_not_decrypt(tmp_path: Path) -> None:
    store = SecretStore(tmp_path / ".secrets", "file")
    store.put("ADMIN_TOKEN", VALUE)
    store.put("HARMLESS", "x" * 10)
    data = json.loads(store.path.read_text())
    data["secrets"]["HARMLESS"] = data["secrets"]["ADMIN_TOKEN"]
    store.path.write_text(json.dumps(data))
    with pytest.raises(StoreDamaged, match="HARMLESS cannot be decrypted") as caught:
        store.values(["HARMLESS"])
    assert VALUE not in caught.value.message
    assert store.values(["ADMIN_TOKEN"]) == {"ADMIN_TOKEN": VALUE}


def test_a_damaged_store_or_key_is_one_clear_error(tmp_path: Path) -> None:
    store = SecretStore(tmp_path / ".secrets", "file")
    store.put("TOKEN", VALUE)
    store.key_file.write_text("not base64 at all")
    with pytest.raises(KeyUnavailable, match="damaged"):
        store.values(["TOKEN"])
    store.key_file.unlink()
    with pytest.raises(KeyUnavailable, match="missing"):
        store.values(["TOKEN"])
    store.path.write_text("{not json")
    with pytest.raises(StoreDamaged, match="damaged"):
        store.entries()


def test_a_loosened_key_file_is_tightened(tmp_path: Path) -> None:
    store = SecretStore(tmp_path / ".secrets", "file")
    store.put("TOKEN", VALUE)
    store.key_file.chmod(0o644)
    assert store.values(["TOKEN"]) == {"TOKEN": VALUE}
    assert mode(store.key_file) == 0o600


@pytest.mark.parametrize(
    "name", ["lower", "1STARTS_WITH_DIGIT", "HAS-DASH", "", "A" * 65, "PATH", "LD_PRELOAD", "SIGNET_TOKEN", "HOME"]
)
def test_invalid_and_reserved_names_are_refused(tmp_path: Path, name: str) -> None:
    store = SecretStore(tmp_path / ".secrets", "file")
    with pytest.raises(InvalidRequest):
        store.put(name, VALUE)
    assert not store.path.exists()


@pytest.mark.parametrize("value", ["", "with\x00nul", "x" * 65_537])
def test_invalid_values_are_refused_without_quoting_them(tmp_path: Path, value: str) -> None:
    store = SecretStore(tmp_path / ".secrets", "file")
    with pytest.raises(InvalidRequest) as caught:
        store.put("TOKEN", value)
    assert value == "" or value not in caught.value.message


def test_missing_names_are_named(tmp_path: Path) -> None:
    store = SecretStore(tmp_path / ".secrets", "file")
    store.put("TOKEN", VALUE)
    with pytest.raises(NotFound, match="NOPE"):
        store.values(["TOKEN", "NOPE"])
    with pytest.raises(NotFound):
        store.delete("NOPE")
    store.delete("TOKEN")
    assert store.entries() == []


def test_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    """Two stores on one directory (the daemon and the CLI) writing at once: the lock keeps
    every write."""
    directory = tmp_path / ".secrets"
    SecretStore(directory, "file").put("SEED", "seed value")

    def writer(prefix: str) -> None:
        store = SecretStore(directory, "file")
        for i in range(25):
            store.put(f"{prefix}_{i}", f"value {prefix} {i}")

    with ThreadPoolExecutor(2) as pool:
        for done in [pool.submit(writer, "LEFT"), pool.submit(writer, "RIGHT")]:
            done.result()  # a writer's failure fails the test here
    store = SecretStore(directory, "file")
    assert len(store.entries()) == 51
    assert store.values(["LEFT_24", "RIGHT_0"]) == {"LEFT_24": "value LEFT 24", "RIGHT_0": "value RIGHT 0"}


class MemoryKeyring(KeyringBackend):
    """A keyring backend that keeps entries in a dict: the protocol ``keyring`` speaks to the OS
    one, for a machine (this one) that has no OS keyring service."""

    priority = 1

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.entries: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.entries.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.entries[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        del self.entries[(service, username)]


@pytest.fixture
def memory_keyring() -> Iterator[MemoryKeyring]:
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    try:
        yield backend
    finally:
        keyring.set_keyring(fail.Keyring())  # type: ignore[no-untyped-call]


def test_the_key_goes_to_a_usable_keyring(tmp_path: Path, memory_keyring: MemoryKeyring) -> None:
    store = SecretStore(tmp_path / ".secrets")
    store.put("TOKEN", VALUE)
    assert store.key_kind() == "keyring"
    assert not store.key_file.exists()
    store_id = json.loads(store.path.read_text())["id"]
    assert len(base64.b64decode(memory_keyring.entries[(KEYRING_SERVICE, store_id)])) == 32
    # a moved workspace finds its key: the entry is named by the store's id, not its path
    moved = tmp_path / "moved"
    (tmp_path / ".secrets").rename(moved)
    assert SecretStore(moved).values(["TOKEN"]) == {"TOKEN": VALUE}
    memory_keyring.entries.clear()
    with pytest.raises(KeyUnavailable, match="not in the OS keyring"):
        SecretStore(moved).values(["TOKEN"])


def test_a_store_keeps_the_key_where_it_was_made(tmp_path: Path, memory_keyring: MemoryKeyring) -> None:
    """A keyring that appears after the store was made with a key file changes nothing."""
    keyring.set_keyring(fail.Keyring())  # type: ignore[no-untyped-call]
    store = SecretStore(tmp_path / ".secrets")
    store.put("TOKEN", VALUE)
    assert store.key_kind() == "file"
    keyring.set_keyring(memory_keyring)
    store.put("LATER", "another value")
    assert store.key_kind() == "file" and memory_keyring.entries == {}
    assert store.values(["TOKEN", "LATER"]) == {"TOKEN": VALUE, "LATER": "another value"}


def test_key_store_keyring_without_a_keyring_is_refused(tmp_path: Path) -> None:
    store = SecretStore(tmp_path / ".secrets", "keyring")
    with pytest.raises(KeyUnavailable, match="no usable OS keyring"):
        store.put("TOKEN", VALUE)
    assert not store.path.exists()
