"""Remote URLs git may be given, and how git is run.

A URL comes from a user or an API caller and ends up on git's command line, so it is checked
first: nothing that starts with ``-`` (git would read ``--upload-pack=…`` as an option), no
``<transport>::<address>`` form (``ext::sh -c …`` runs a command), no control characters. Git
itself is run with every protocol off except https, ssh, git and file
(``protocol.allow=never`` then one ``protocol.<name>.allow=always`` each), without a terminal
prompt for credentials (a push waiting for a password would hang the daemon) and with the
caller's ``--`` before the URL.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from signet.errors import InvalidRequest

ALLOWED_SCHEMES = ("https", "http", "ssh", "git", "file")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_SCP = re.compile(r"^[A-Za-z0-9._~-]+@[A-Za-z0-9.-]+:[^:]")  # git@github.com:owner/repo.git
MAX_URL = 2048

PROTOCOL_CONFIG = (
    "-c",
    "protocol.allow=never",
    *(arg for name in ("https", "http", "ssh", "git", "file") for arg in ("-c", f"protocol.{name}.allow=always")),
)
"""``git`` options that switch off every transport but these (ext::, fd:: and helpers' own)."""


def check_url(url: str) -> str:
    """``url`` if git may be pointed at it: an https, http, ssh, git or file URL, an scp-like
    ``user@host:path``, or an absolute local path; :class:`InvalidRequest` otherwise."""
    if not url or len(url) > MAX_URL:
        raise InvalidRequest("a git URL must be 1-2048 characters")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in url) or url != url.strip():
        raise InvalidRequest("a git URL has no spaces at its ends and no control characters")
    if url.startswith("-"):
        raise InvalidRequest(f"{url[:80]!r} starts with '-': git would read it as an option; refused")
    if "::" in url.split("/", 1)[0] or re.match(r"^[A-Za-z][A-Za-z0-9+.-]*::", url):
        raise InvalidRequest(f"{url[:80]!r}: the <transport>::<address> form (ext::, fd::) is refused")
    m = _SCHEME.match(url)
    if m:
        if m.group(1).lower() not in ALLOWED_SCHEMES:
            raise InvalidRequest(
                f"{url[:80]!r}: the {m.group(1)!r} scheme is refused (use {', '.join(ALLOWED_SCHEMES)})"
            )
        authority = url[m.end() :].split("/", 1)[0]
        if any(part.startswith("-") for part in re.split(r"[@:]", authority)):
            # ssh://-oProxyCommand=…/x: ssh would read the host as an option
            raise InvalidRequest(f"{url[:80]!r}: a host or user starting with '-' is refused")
        return url
    if _SCP.match(url) or Path(url).is_absolute():
        return url
    raise InvalidRequest(f"{url[:80]!r} is not a git URL (https://…, ssh://…, user@host:path, file://… or /abs/path)")


REPOSITORY_VARS = frozenset(
    {
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_COMMON_DIR",
        "GIT_NAMESPACE",
        "GIT_CEILING_DIRECTORIES",
        "GIT_PREFIX",
        "GIT_CONFIG_PARAMETERS",
        "GIT_CONFIG_COUNT",
    }
)
"""Set when Signet itself runs inside a git hook: they would point git at another repository."""


def git_env() -> dict[str, str]:
    """The environment git runs in: the caller's (its ssh command and proxies kept), without
    what points git at another repository, and with no password prompt on a terminal or
    through an askpass program."""
    env = {k: v for k, v in os.environ.items() if k not in REPOSITORY_VARS and not k.startswith("GIT_CONFIG_KEY_")}
    env = {k: v for k, v in env.items() if not k.startswith("GIT_CONFIG_VALUE_")}
    env.update(GIT_TERMINAL_PROMPT="0", GIT_ASKPASS="true", SSH_ASKPASS="true", GCM_INTERACTIVE="never")
    env.setdefault("GIT_SSH_COMMAND", "ssh -oBatchMode=yes")
    env["LC_ALL"] = "C"  # messages parsed below are git's English ones
    return env


def run_git(
    args: list[str], *, cwd: Path | None = None, timeout: float = 120.0, check: bool = False
) -> subprocess.CompletedProcess[str]:
    """``git`` with :data:`PROTOCOL_CONFIG`; a missing ``git`` or a timeout is an
    :class:`InvalidRequest` naming it."""
    try:
        res = subprocess.run(
            ["git", *PROTOCOL_CONFIG, *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=git_env(),
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        raise InvalidRequest("git is not installed (no `git` on PATH)") from None
    except subprocess.TimeoutExpired:
        raise InvalidRequest(f"git {args[0]} did not finish within {timeout:g} s") from None
    if check and res.returncode != 0:
        raise InvalidRequest(f"git {args[0]} failed: {last_line(res)}")
    return res


def last_line(res: subprocess.CompletedProcess[str]) -> str:
    """git's own last words on a failure, on one line."""
    text = (res.stderr or res.stdout or "").strip().splitlines()
    return text[-1][:300] if text else f"exit status {res.returncode}"
