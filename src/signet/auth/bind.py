"""Where the daemon may listen, and the names it answers to: decided before it listens.

Apart from :mod:`signet.auth.state` (tokens, the agent roster, rate limits: it imports the
store) because the daemon checks its bind address, and its boot shell needs the names a
``/health`` may be asked under, before it listens (signet.daemon.boot): every import made before
listening delays the first ``/health``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from signet.errors import ConfigError
from signet.instance import is_loopback

if TYPE_CHECKING:
    from signet.config import Settings

Mode = Literal["local", "team", "hybrid"]
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
"""Host names a daemon always answers to (signet.auth.state adds the configured ones)."""


def effective_mode(settings: Settings) -> Mode:
    """``authMode`` (the spec's top-level spelling) wins over ``auth.mode``."""
    return settings.auth_mode or settings.auth.mode


def check_bind(host: str, settings: Settings) -> None:
    """Local mode has no tokens, so it may only listen on loopback."""
    if effective_mode(settings) == "local" and not is_loopback(host):
        raise ConfigError(
            f"refusing to listen on {host}: authMode is 'local' (no tokens), which is only safe on "
            "loopback. Set `auth: {mode: team}` (or hybrid) in agent.yaml and create tokens with "
            "`signet token create`, or bind 127.0.0.1. See docs/security.md."
        )


def host_name(host_header: str) -> str:
    """The name in a Host header, lower-cased and without its port (``[::1]:3850`` -> ``[::1]``)."""
    name = host_header.strip().lower()
    if name.startswith("["):
        return name[: name.find("]") + 1]
    if name.count(":") == 1:
        return name.split(":", 1)[0]
    return name
