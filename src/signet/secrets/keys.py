"""The store's 256-bit key: in the OS keyring when a usable backend exists, else a key file.

Where a store's key lives is decided once, when the store is created, and recorded in the
store file (``"key": "keyring"`` or ``"file"``): a keyring that appears or disappears later
never strands the values. The keyring entry is named by the store's random id, not by the
workspace path, so a moved workspace still finds its key. The key file is ``.secrets/key``,
0600 in a 0700 directory, a separate file from the values (``store.json``).
"""

from __future__ import annotations

import base64
import binascii
import os
import secrets
from pathlib import Path
from typing import Literal

from signet.errors import SignetError
from signet.secrets.files import write_private

KeyKind = Literal["keyring", "file"]
KEYRING_SERVICE = "signet-secrets"
KEY_BYTES = 32


class KeyUnavailable(SignetError):
    """The store exists but its key cannot be read: nothing can be decrypted or added."""

    code = "secret_key_unavailable"
    status = 503


def keyring_usable() -> bool:
    """True when ``keyring`` is installed and its backend can store (not the ``fail`` one)."""
    try:
        import keyring
        from keyring.backends import fail
    except ImportError:
        return False
    backend = keyring.get_keyring()
    return not isinstance(backend, fail.Keyring) and float(getattr(backend, "priority", 0) or 0) > 0


def choose(preference: Literal["auto", "keyring", "file"]) -> KeyKind:
    """Where a new store keeps its key (``secrets.keyStore``)."""
    if preference == "file":
        return "file"
    if keyring_usable():
        return "keyring"
    if preference == "keyring":
        raise KeyUnavailable(
            "secrets.keyStore is 'keyring' but no usable OS keyring backend was found; set it to 'auto' or 'file'"
        )
    return "file"


def _encode(key: bytes) -> str:
    return base64.b64encode(key).decode("ascii")


def _decode(text: str, where: str) -> bytes:
    try:
        key = base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError):
        key = b""
    if len(key) != KEY_BYTES:
        raise KeyUnavailable(f"the secret store key in {where} is damaged (not {KEY_BYTES} base64 bytes)")
    return key


def create(kind: KeyKind, store_id: str, key_file: Path) -> bytes:
    """Make a new key and save it where ``kind`` says."""
    key = secrets.token_bytes(KEY_BYTES)
    if kind == "keyring":
        import keyring
        from keyring.errors import KeyringError

        try:
            keyring.set_password(KEYRING_SERVICE, store_id, _encode(key))
        except KeyringError as exc:
            raise KeyUnavailable(f"the OS keyring refused the secret store key: {type(exc).__name__}") from None
    else:
        write_private(key_file, (_encode(key) + "\n").encode("ascii"))
    return key


def load(kind: KeyKind, store_id: str, key_file: Path) -> bytes:
    """The key of an existing store."""
    if kind == "keyring":
        import keyring
        from keyring.errors import KeyringError

        try:
            text = keyring.get_password(KEYRING_SERVICE, store_id)
        except KeyringError as exc:
            raise KeyUnavailable(f"the OS keyring could not be read: {type(exc).__name__}") from None
        if text is None:
            raise KeyUnavailable(
                f"the secret store's key is not in the OS keyring (service {KEYRING_SERVICE!r}, entry {store_id!r})"
            )
        return _decode(text, "the OS keyring")
    try:
        text = key_file.read_text(encoding="ascii")
    except FileNotFoundError:
        raise KeyUnavailable(f"the secret store's key file {key_file} is missing") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise KeyUnavailable(f"the secret store's key file {key_file} cannot be read: {type(exc).__name__}") from None
    if os.name == "posix" and key_file.stat().st_mode & 0o077:
        key_file.chmod(0o600)  # tighten a key file someone loosened
    return _decode(text, str(key_file))
