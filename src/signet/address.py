"""Where the daemon lives, for every client (CLI, SDK, MCP server).

``--host/--port`` flags, then ``SIGNET_HOST``/``SIGNET_PORT``, then the ``daemon`` section of
agent.yaml, then 127.0.0.1:3850. Below every layer so the SDK and the CLI share one rule.
"""

from __future__ import annotations

import os

from signet.errors import ConfigError, DaemonUnavailable

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 3850


def resolve_address(host: str | None = None, port: int | None = None) -> tuple[str, int]:
    h = host or os.environ.get("SIGNET_HOST")
    p: int | None = port
    if p is None and os.environ.get("SIGNET_PORT"):
        try:
            p = int(os.environ["SIGNET_PORT"])
        except ValueError:
            raise DaemonUnavailable(f"SIGNET_PORT is not a number: {os.environ['SIGNET_PORT']!r}") from None
    if h is None or p is None:
        try:
            from signet.workspace import Workspace

            d = Workspace.from_env().settings().daemon
            h, p = h or d.host, p if p is not None else d.port
        except OSError:  # an unreadable workspace: the defaults
            h, p = h or DEFAULT_HOST, p if p is not None else DEFAULT_PORT
        except ConfigError as exc:
            # Not the default port in silence: the daemon may listen where agent.yaml says.
            raise ConfigError(
                f"{exc.message} (the daemon's address is read from it: fix it, or set SIGNET_HOST and SIGNET_PORT)",
                key=exc.details.get("key"),
            ) from None
    return h, p


def base_url(host: str | None = None, port: int | None = None) -> str:
    h, p = resolve_address(host, port)
    if ":" in h and not h.startswith("["):
        h = f"[{h}]"
    return f"http://{h}:{p}"
