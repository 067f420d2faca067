"""Which extraction LLM this machine can run: the default ``signet setup`` offers.

The order is a choice, made once here for the wizard and ``--llm auto`` alike:

1. A harness CLI on ``PATH`` (``claude``, then ``codex``, then ``opencode``). It is already
   signed in and paid for, it is a strong model, and the transcripts it would extract from
   were written through that very CLI, so no new party sees them.
2. A local Ollama answering ``GET /api/tags``. Private and free, but answering says nothing
   about the extraction model being pulled, and a small local model extracts less well.
3. ``none``: memories are stored and searched; extraction waits until a provider is set.

``--llm auto`` (what ``--non-interactive`` takes) stops short of step 1: nobody sees that
choice, and a harness CLI runs on the user's subscription after every session, so an
unattended setup (or a test suite on a developer's machine) must not pick one unasked. It
takes :attr:`Detected.local` and says which CLI it could have used.

Nothing is downloaded: Ollama gets one short request with a timeout.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx

from signet.config import HARNESS_CLIS

DEFAULT_OLLAMA_URL = "http://127.0.0.1:11434"
PROBE_TIMEOUT_S = 0.5


class BadURL(ValueError):
    """An Ollama URL that cannot be probed; the message says why, in one line."""


def check_ollama_url(text: str) -> str:
    """An ``http(s)://host[:port]`` base URL, without a trailing slash, query or credentials."""
    url = text.strip().rstrip("/")
    if not url.isprintable() or " " in url:
        raise BadURL(f"{text!r}: a URL cannot contain spaces or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port  # raises on a port that is not a number in range
    except ValueError as exc:
        raise BadURL(f"{text!r} is not a URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BadURL(f"{text!r} is not an http(s)://host[:port] URL")
    if parts.username or parts.password or parts.query or parts.fragment:
        raise BadURL(f"{text!r}: give the server's base URL only (no credentials, query or fragment)")
    del port
    return url


@dataclass(frozen=True)
class Detected:
    provider: str
    """What to offer: a provider name agent.yaml accepts (``none`` when nothing was found)."""
    said: str
    """What was found, in words, for the question and the setup output."""
    local: str
    """The choice without the harness CLIs: ``ollama`` or ``none`` (``--llm auto``)."""


def ollama_answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/api/tags", timeout=PROBE_TIMEOUT_S).status_code == 200
    except httpx.HTTPError:
        return False


def detect(ollama_url: str = DEFAULT_OLLAMA_URL, path: str | None = None) -> Detected:
    """The first usable provider in the order above, and everything that was found."""
    clis = [
        (provider, where) for provider, binary in HARNESS_CLIS.items() if (where := shutil.which(binary, path=path))
    ]
    ollama = ollama_answers(ollama_url)
    found = [f"{provider} ({where})" for provider, where in clis]
    if ollama:
        found.append(f"ollama (answering at {ollama_url})")
    elif shutil.which("ollama", path=path):
        found.append(f"ollama installed but not answering at {ollama_url} (run `ollama serve`)")
    if clis:
        provider = clis[0][0]
    elif ollama:
        provider = "ollama"
    else:
        provider = "none"
    said = "found " + "; ".join(found) if found else f"no claude, codex or opencode on PATH, no Ollama at {ollama_url}"
    return Detected(provider, said, "ollama" if ollama else "none")
