"""A thin HTTP client for CLI commands: httpx only, nothing heavy imported.

Where the daemon lives: ``--host/--port`` flags, then ``SIGNET_HOST``/``SIGNET_PORT``,
then the ``daemon`` section of agent.yaml, then 127.0.0.1:3850.
"""

from __future__ import annotations

import os
from typing import Any

import httpx

from signet.errors import ConfigError, DaemonUnavailable, error_from_payload

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
        except (ConfigError, OSError):  # a broken agent.yaml must not stop a client reaching a daemon
            h, p = h or DEFAULT_HOST, p if p is not None else DEFAULT_PORT
    return h, p


def base_url(host: str | None = None, port: int | None = None) -> str:
    h, p = resolve_address(host, port)
    if ":" in h and not h.startswith("["):
        h = f"[{h}]"
    return f"http://{h}:{p}"


class DaemonClient:
    def __init__(self, url: str | None = None, *, timeout: float = 30.0, token: str | None = None) -> None:
        self.url = url or base_url()
        headers = {"X-Signet-Actor": "cli"}
        token = token or os.environ.get("SIGNET_TOKEN")
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self._http = httpx.Client(base_url=self.url, timeout=timeout, headers=headers)

    def request(self, method: str, path: str, **kw: Any) -> Any:
        try:
            resp = self._http.request(method, path, **kw)
        except httpx.ConnectError:
            raise DaemonUnavailable(
                f"the Signet daemon is not running at {self.url}; start it with `signet start`"
            ) from None
        except httpx.TimeoutException:
            raise DaemonUnavailable(f"the Signet daemon at {self.url} did not answer in time") from None
        try:
            data = resp.json()
        except ValueError:
            data = {"error": resp.text[:200] or f"HTTP {resp.status_code}"}
        if resp.status_code >= 400:
            raise error_from_payload(resp.status_code, data if isinstance(data, dict) else {"error": str(data)})
        return data

    def get(self, path: str, **kw: Any) -> Any:
        return self.request("GET", path, **kw)

    def post(self, path: str, body: Any = None, **kw: Any) -> Any:
        return self.request("POST", path, json=body, **kw)

    def close(self) -> None:
        self._http.close()
