"""What a secret may be called, and what a value may hold.

A name is injected as an environment variable of the same name, so it is spelled like one
(upper case, digits, underscores; ``^[A-Z_][A-Z0-9_]{0,63}$``). Names that would change how
the command itself is found or loaded (``PATH``, ``LD_PRELOAD``…) are refused: a secret is
data for the command, never a way to run a different one.
"""

from __future__ import annotations

import re

from signet.errors import InvalidRequest

NAME_PATTERN = r"^[A-Z_][A-Z0-9_]{0,63}$"
_NAME = re.compile(NAME_PATTERN)

RESERVED = frozenset(
    ("PATH", "HOME", "SHELL", "USER", "LOGNAME", "PWD", "TMPDIR", "LANG", "IFS", "ENV", "BASH_ENV", "PYTHONPATH")
)
RESERVED_PREFIXES = ("LD_", "DYLD_", "SIGNET_")

MAX_VALUE_CHARS = 65_536
"""A value longer than this is refused (tokens, keys and passwords are far shorter)."""


def check_name(name: str) -> str:
    """``name`` if it may name a secret; :class:`InvalidRequest` saying why otherwise."""
    if not _NAME.fullmatch(name):
        raise InvalidRequest(
            f"invalid secret name {name[:80]!r}: use upper-case letters, digits and underscores "
            "(an environment variable name, at most 64 characters, not starting with a digit)",
            code="invalid_secret_name",
        )
    if name in RESERVED or name.startswith(RESERVED_PREFIXES):
        raise InvalidRequest(
            f"the secret name {name!r} is reserved: it would change how commands are found or run", code="reserved_name"
        )
    return name


def check_value(value: str) -> str:
    """``value`` if it can be stored and passed in an environment; the error never quotes it."""
    if not value:
        raise InvalidRequest("a secret value cannot be empty", code="invalid_secret_value")
    if len(value) > MAX_VALUE_CHARS:
        raise InvalidRequest(f"a secret value is at most {MAX_VALUE_CHARS} characters", code="invalid_secret_value")
    if "\x00" in value:
        raise InvalidRequest("a secret value cannot contain NUL characters", code="invalid_secret_value")
    if not encodable(value):
        raise InvalidRequest(
            "a secret value must be valid Unicode text (no lone surrogates)", code="invalid_secret_value"
        )
    return value


def encodable(text: str) -> bool:
    """True when ``text`` can be written as UTF-8 (JSON lets a lone surrogate through)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
