"""A thin HTTP client for CLI commands: httpx only, nothing heavy imported.

Where the daemon lives is decided by :mod:`signet.address`.
"""

from __future__ import annotations

import os
from typing import Any

import httpx

from signet.address import base_url
from signet.errors import DaemonUnavailable, error_from_payload


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
