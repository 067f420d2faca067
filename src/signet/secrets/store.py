"""The encrypted secret store: ``.secrets/store.json`` beside its key.

Each value is encrypted on its own with AES-256-GCM and a fresh 96-bit nonce; the associated
data binds it to this store and its name, so a ciphertext copied under another name (or from
another store) fails to decrypt instead of being injected as the wrong secret. The file holds
names, timestamps, nonces and ciphertexts, never a value in the clear. Every change rewrites
the file atomically under an exclusive lock (``.secrets/lock``), so the daemon and the CLI can
change the store at the same time without losing each other's writes. Nothing is created
until the first value is stored; values are read from the file each time (no cache), so a
value put by the CLI is what the daemon's next run injects.
"""

from __future__ import annotations

import base64
import binascii
import fcntl
import json
import os
import secrets as random
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, cast

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from signet.errors import NotFound, SignetError
from signet.secrets import keys
from signet.secrets.files import private_dir, write_private
from signet.secrets.names import check_name, check_value

FORMAT = 1
STORE_FILE = "store.json"
KEY_FILE = "key"
LOCK_FILE = "lock"


class StoreDamaged(SignetError):
    code = "secret_store_damaged"
    status = 503


@dataclass(frozen=True)
class SecretEntry:
    name: str
    created_at: str
    updated_at: str


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


class SecretStore:
    """The store in ``directory`` (the workspace's ``.secrets/``)."""

    def __init__(self, directory: Path, key_store: Literal["auto", "keyring", "file"] = "auto") -> None:
        self.directory = directory
        self.key_store = key_store
        self.path = directory / STORE_FILE
        self.key_file = directory / KEY_FILE

    # --- reading ---------------------------------------------------------------------------

    def _load(self) -> dict[str, Any] | None:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return None
        try:
            data = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            data = None
        if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("secrets"), dict):
            raise StoreDamaged(f"the secret store {self.path} is damaged or of an unknown format")
        if data.get("key") not in ("keyring", "file") or not isinstance(data.get("id"), str):
            raise StoreDamaged(f"the secret store {self.path} does not say where its key is")
        return data

    def key_kind(self) -> keys.KeyKind | None:
        """Where this store's key lives, or None before the first value is stored."""
        data = self._load()
        return None if data is None else cast(keys.KeyKind, data["key"])

    def entries(self) -> list[SecretEntry]:
        """Every secret's name and times, by name. Reads no key and decrypts nothing."""
        data = self._load()
        if data is None:
            return []
        out = []
        for name, item in sorted(data["secrets"].items()):
            if isinstance(item, dict):
                out.append(SecretEntry(name, str(item.get("created_at", "")), str(item.get("updated_at", ""))))
        return out

    def has(self, name: str) -> bool:
        data = self._load()
        return data is not None and check_name(name) in data["secrets"]

    def values(self, names: Sequence[str]) -> dict[str, str]:
        """The plaintext of ``names`` (for injecting into a command); NotFound names the missing."""
        data = self._load()
        stored: Mapping[str, Any] = data["secrets"] if data is not None else {}
        missing = [n for n in names if n not in stored]
        if missing:
            raise NotFound(f"no secret named {', '.join(missing)}; `signet secret list` shows the names")
        if data is None or not names:
            return {}
        aead = AESGCM(keys.load(data["key"], data["id"], self.key_file))
        return {name: self._decrypt(aead, data["id"], name, stored[name]) for name in names}

    def _decrypt(self, aead: AESGCM, store_id: str, name: str, item: Any) -> str:
        try:
            nonce = base64.b64decode(item["nonce"], validate=True)
            ciphertext = base64.b64decode(item["ciphertext"], validate=True)
            return aead.decrypt(nonce, ciphertext, _aad(store_id, name)).decode("utf-8")
        except (KeyError, TypeError, binascii.Error, ValueError, InvalidTag):
            raise StoreDamaged(
                f"the secret {name} cannot be decrypted (damaged, moved from another store, or the key changed)"
            ) from None

    # --- changing --------------------------------------------------------------------------

    @contextmanager
    def _locked(self) -> Iterator[None]:
        private_dir(self.directory)
        fd = os.open(self.directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        with os.fdopen(fd, "r+b") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def put(self, name: str, value: str) -> bool:
        """Store ``value`` under ``name``; True when the name is new, False when it was replaced."""
        check_name(name)
        check_value(value)
        with self._locked():
            data = self._load()
            if data is None:
                store_id = random.token_hex(16)
                kind = keys.choose(self.key_store)
                key = keys.create(kind, store_id, self.key_file)
                data = {"format": FORMAT, "id": store_id, "key": kind, "secrets": {}}
            else:
                key = keys.load(data["key"], data["id"], self.key_file)
            nonce = random.token_bytes(12)
            ciphertext = AESGCM(key).encrypt(nonce, value.encode("utf-8"), _aad(data["id"], name))
            now = _now()
            old = data["secrets"].get(name)
            created = old.get("created_at", now) if isinstance(old, dict) else now
            data["secrets"][name] = {
                "nonce": _b64(nonce),
                "ciphertext": _b64(ciphertext),
                "created_at": created,
                "updated_at": now,
            }
            self._save(data)
            return old is None

    def delete(self, name: str) -> None:
        """Remove ``name``; NotFound when there is no such secret."""
        check_name(name)
        with self._locked():
            data = self._load()
            if data is None or name not in data["secrets"]:
                raise NotFound(f"no secret named {name}")
            del data["secrets"][name]
            self._save(data)

    def _save(self, data: dict[str, Any]) -> None:
        write_private(self.path, (json.dumps(data, indent=1, sort_keys=True) + "\n").encode("utf-8"))


def _aad(store_id: str, name: str) -> bytes:
    return f"signet-secret/v1/{store_id}/{name}".encode()


def reader(directory: Path, key_store: Literal["auto", "keyring", "file"]) -> Callable[[str], str | None]:
    """A function reading one secret of the store in ``directory`` by name, None when absent:
    what the store layer takes to resolve ``storage.password: secret:NAME``
    (signet.store.choose.build_store), which it cannot import from here."""

    def read(name: str) -> str | None:
        try:
            return SecretStore(directory, key_store).values([name]).get(name)
        except NotFound:  # pg_url.resolve says which secret to put
            return None

    return read
