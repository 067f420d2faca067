"""``signet dashboard``: open the running daemon's dashboard in the browser.

The URL is the one this workspace's daemon published (``.daemon/daemon.json``), so it follows
``--port``/``SIGNET_PORT``/``daemon.port`` as the daemon was started. The browser is Python's
:mod:`webbrowser`, which honours ``$BROWSER``; ``--print`` only prints the URL.
"""

from __future__ import annotations

import webbrowser
from typing import Annotated

import typer

from signet import instance
from signet.address import base_url
from signet.cli.app import app
from signet.errors import SignetError
from signet.workspace import Workspace

_ANY_ADDRESS = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}


def dashboard_url(ws: Workspace) -> str:
    """This workspace's running daemon's dashboard, or a :class:`SignetError` saying to start it."""
    inst = instance.running(ws.daemon_dir)
    if inst is None:
        raise SignetError(f"the daemon is not running for {ws.root}; run `signet start`")
    host = _ANY_ADDRESS.get(inst.host, inst.host)  # a daemon bound to every address: open it on loopback
    return base_url(host, inst.port) + "/"


@app.command("dashboard")
def dashboard(
    print_only: Annotated[
        bool, typer.Option("--print", help="Print the dashboard's URL instead of opening a browser.")
    ] = False,
) -> None:
    """Open the daemon's dashboard in the browser ($BROWSER if set)."""
    url = dashboard_url(Workspace.from_env())
    if print_only:
        typer.echo(url)
        return
    if not webbrowser.open(url):
        raise SignetError(f"no browser could be opened; visit {url} (set $BROWSER to choose one)")
    typer.echo(f"opened {url}")
