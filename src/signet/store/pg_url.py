"""The PostgreSQL URL and its password: resolved for connecting, redacted everywhere else.

agent.yaml names the server (``storage.url``) and, separately, where the password comes from
(``storage.password``: ``env:NAME`` or ``secret:NAME``), so the file can be committed or shown
without the secret in it. A password written inline in the URL still works (libpq accepts it)
but is treated the same way: it is passed to the driver as a keyword, never kept in a string
that could reach a log line, ``signet status`` or an error message (:func:`redact`,
:func:`scrub`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

REDACTED = "***"


class PasswordUnavailable(RuntimeError):
    """``storage.password`` names a variable or secret that is not set."""


@dataclass(frozen=True)
class Target:
    """Where to connect: the conninfo without its password, and the password on its own."""

    conninfo: str
    password: str | None = field(default=None, repr=False)

    @property
    def shown(self) -> str:
        """The conninfo as it may be shown (it never holds the password)."""
        return self.conninfo


def redact(url: str) -> str:
    """``url`` with any password replaced by ``***`` (userinfo and ``password=`` parameters)."""
    out = re.sub(r"(://[^:/?#@]*:)[^@/?#]*@", rf"\g<1>{REDACTED}@", url)
    return re.sub(r"(?i)(password=)[^&\s]*", rf"\g<1>{REDACTED}", out)


def scrub(text: str, *secrets: str | None) -> str:
    """``text`` (an error message) with every known secret and URL password removed."""
    for s in secrets:
        if s:
            text = text.replace(s, REDACTED)
    return redact(text)


def resolve(
    url: str,
    password_ref: str,
    *,
    environ: Mapping[str, str] | None = None,
    secret: Callable[[str], str | None] | None = None,
) -> Target:
    """Split ``url`` into a conninfo without a password and the password to connect with.

    The URL's own password wins; else ``password_ref`` (``env:NAME`` / ``secret:NAME``) is
    read. An unset environment variable means no password (a server with trust or peer auth
    needs none: the default reference is ``env:SIGNET_PG_PASSWORD``); a named secret that is
    missing is an error, since naming one says a password is needed. ``secret`` looks a name
    up in the secret store (None when it holds no such entry)."""
    try:
        params = conninfo_to_dict(url)
    except psycopg.ProgrammingError:  # libpq's text quotes the URL around the fault, password included
        raise ValueError(
            "storage.url is not a valid PostgreSQL URL: percent-encode special characters (space, @, :, /, ?, #, %) "
            "in its user and password, or leave the password out of it and name it in storage.password"
        ) from None
    inline = params.pop("password", None)
    password = str(inline) if inline else None
    if password is None:
        kind, _, name = password_ref.partition(":")
        if kind == "env":
            password = (environ if environ is not None else os.environ).get(name) or None
        elif kind == "secret":
            if secret is None:
                raise PasswordUnavailable(f"storage.password names secret {name!r} but no secret store is open")
            password = secret(name)
            if password is None:
                raise PasswordUnavailable(
                    f"storage.password names secret {name!r}, which is not in the secret store: "
                    f"`signet secret put {name}`"
                )
        else:
            raise ValueError("storage.password must be env:NAME or secret:NAME")
    return Target(make_conninfo("", **{k: v for k, v in params.items() if v is not None}), password)
