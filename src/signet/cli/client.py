"""The CLI's client of the daemon: the SDK's :class:`~signet.sdk.SignetClient`, with what a
command line needs on top.

Every request goes through the SDK's driver (one transport, one retry rule, one mapping of
answers to typed errors), typed operations where the SDK has them (``client.remember(...)``)
and :meth:`DaemonClient.get_json`/:meth:`DaemonClient.post_json` for the operator routes that return
plain JSON. On top: the caller's workspace is always sent on loopback (the SDK sends it only
when ``SIGNET_WORKSPACE`` is set), and a daemon of another workspace is reported in the words
a user can act on (the port, both paths). Nothing heavy is imported: httpx and pydantic.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, TypeVar

import httpx

from signet.address import base_url
from signet.errors import WrongWorkspace
from signet.instance import workspace_header, wrong_workspace_message
from signet.sdk import SignetClient
from signet.sdk._core import Call
from signet.workspace import default_workspace_path

T = TypeVar("T")


def _as_is(data: Any) -> Any:
    return data


class DaemonClient(SignetClient):
    """``workspace``: the caller's workspace (default: ``$SIGNET_WORKSPACE`` or ~/.agents). On
    loopback it is sent as ``X-Signet-Workspace``, so a daemon serving another workspace
    refuses instead of storing this workspace's memories (signet.instance)."""

    def __init__(
        self, url: str | None = None, *, timeout: float = 30.0, token: str | None = None, workspace: Path | None = None
    ) -> None:
        url = url or base_url()
        self.workspace = workspace or default_workspace_path()
        self.port = httpx.URL(url).port or 80
        super().__init__(
            url,
            token=token,
            actor="cli",
            timeout=timeout,
            headers=workspace_header(httpx.URL(url).host, self.workspace),
        )

    def _execute(self, call: Call[T]) -> T:
        try:
            return super()._execute(call)
        except WrongWorkspace as exc:
            served = exc.details.get("workspace")
            served = served if isinstance(served, str) else None
            raise WrongWorkspace(wrong_workspace_message(self.port, served, self.workspace), workspace=served) from None

    def get_json(self, path: str, **params: Any) -> Any:
        """``GET path`` with query ``params``; the JSON answer as it is."""
        return self._execute(Call("GET", path, _as_is, params={k: v for k, v in params.items() if v is not None}))

    def post_json(self, path: str, body: Any = None) -> Any:
        """``POST path`` with a JSON ``body``; the JSON answer as it is."""
        return self._execute(Call("POST", path, _as_is, json=body))

    def delete_json(self, path: str) -> Any:
        """``DELETE path``; the JSON answer as it is."""
        return self._execute(Call("DELETE", path, _as_is))

    def stream(self, path: str, *, read_timeout: float, **params: Any) -> AbstractContextManager[httpx.Response]:
        """``GET path`` as a stream (server-sent events): the response with its body unread. A
        read waits at most ``read_timeout`` seconds (the server's heartbeat keeps it alive)."""
        return self._http.stream(
            "GET",
            path,
            params={k: v for k, v in params.items() if v is not None},
            timeout=httpx.Timeout(10.0, read=read_timeout),
        )
