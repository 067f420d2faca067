"""A thin HTTP client for CLI commands: httpx only, nothing heavy imported.

Where the daemon lives is decided by :mod:`signet.address`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import httpx

from signet.address import base_url
from signet.errors import DaemonUnavailable, WrongWorkspace, error_from_payload
from signet.instance import workspace_header, wrong_workspace_message
from signet.workspace import default_workspace_path


class DaemonClient:
    """``workspace``: the caller's workspace (default: ``$SIGNET_WORKSPACE`` or ~/.agents). On
    loopback it is sent as ``X-Signet-Workspace``, so a daemon serving another workspace
    refuses instead of storing this workspace's memories (signet.instance)."""

    def __init__(
        self, url: str | None = None, *, timeout: float = 30.0, token: str | None = None, workspace: Path | None = None
    ) -> None:
        self.url = url or base_url()
        self.workspace = workspace or default_workspace_path()
        url_ = httpx.URL(self.url)
        self.port = url_.port or 80
        headers = {"X-Signet-Actor": "cli", **workspace_header(url_.host, self.workspace)}
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
        if resp.status_code == 409 and isinstance(data, dict) and data.get("code") == "wrong_workspace":
            served = data.get("workspace") if isinstance(data.get("workspace"), str) else None
            raise WrongWorkspace(wrong_workspace_message(self.port, served, self.workspace), workspace=served)
        if resp.status_code >= 400:
            raise error_from_payload(resp.status_code, data if isinstance(data, dict) else {"error": str(data)})
        return data

    def get(self, path: str, **kw: Any) -> Any:
        return self.request("GET", path, **kw)

    def post(self, path: str, body: Any = None, **kw: Any) -> Any:
        return self.request("POST", path, json=body, **kw)

    def close(self) -> None:
        self._http.close()
