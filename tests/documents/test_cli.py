"""``signet documents add|list|show|rm`` against a real daemon, with the real CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from signet.workspace import Workspace
from tests.conftest import DaemonProcess
from tests.documents.conftest import doc_settings
from tests.documents.site import Site


def cli(d: DaemonProcess, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SIGNET_WORKSPACE": str(d.workspace.root), "SIGNET_PORT": str(d.port)}
    return subprocess.run(
        [sys.executable, "-m", "signet.cli.entry", "documents", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        input=input,
    )


def test_documents_commands(
    make_workspace: Callable[..., Workspace],
    start_daemon: Callable[..., DaemonProcess],
    files: Path,
    site: Site,
) -> None:
    d = start_daemon(make_workspace("none", documents=doc_settings(files)))
    note = files / "runbook.md"
    note.write_text("# Runbook\n\n## Restart\n\nRestart the queue with `systemctl restart q`.\n")

    added = cli(d, "add", str(note), "--wait")
    assert added.returncode == 0, added.stderr
    assert added.stdout.startswith("done ") and "1 chunks from Runbook" in added.stdout
    assert "extracting" in added.stderr or "done" in added.stderr  # progress, on stderr

    pasted = cli(d, "add", "-", "--title", "Standup", "--wait", input="Standups are at 9:30 in room 4.")
    assert pasted.returncode == 0 and "1 chunks from Standup" in pasted.stdout

    failed = cli(d, "add", site.url("/gone"), "--wait")
    assert failed.returncode == 1
    assert failed.stderr.strip().endswith("answered HTTP 404 Not Found")
    assert len(failed.stderr.strip().splitlines()[-1:]) == 1 and failed.stderr.count("error:") == 1

    listed = cli(d, "list")
    assert listed.returncode == 0 and "3 of 3 documents" in listed.stdout
    doc_id = next(line.split()[0] for line in listed.stdout.splitlines() if "Runbook" in line)

    shown = cli(d, "show", doc_id, "--chunks")
    assert shown.returncode == 0, shown.stderr
    assert "  title: Runbook" in shown.stdout
    assert "Runbook > Restart: Runbook \u203a Restart: Restart the queue" in shown.stdout  # title = top heading

    removed = cli(d, "rm", doc_id)
    assert removed.returncode == 0 and f"deleted {doc_id} and 1 chunk memories" in removed.stdout
    missing = cli(d, "show", doc_id)
    assert missing.returncode == 1 and missing.stderr.strip() == f"error: no document has id '{doc_id}'"

    refused = cli(d, "add", "file:///etc/passwd")
    assert refused.returncode == 1
    assert refused.stderr.strip() == "error: only http and https URLs can be fetched, not 'file'"
    no_title = cli(d, "add", "-", input="x")
    assert no_title.returncode == 1 and no_title.stderr.strip() == "error: text from stdin needs --title"


def connectors_cli(d: DaemonProcess, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SIGNET_WORKSPACE": str(d.workspace.root), "SIGNET_PORT": str(d.port)}
    return subprocess.run(
        [sys.executable, "-m", "signet.cli.entry", "connectors", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_connectors_commands(
    make_workspace: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess], files: Path
) -> None:
    d = start_daemon(make_workspace("none", documents=doc_settings(files)))
    root = files / "kb"
    root.mkdir()
    for i in range(3):
        (root / f"n{i}.md").write_text(f"# N{i}\n\nnote {i}\n")
    added = connectors_cli(d, "add", str(root), "--no-watch", "--wait")
    assert added.returncode == 0, added.stderr
    assert "scanned 3 files: 3 queued, 0 unchanged, 0 deleted" in added.stdout
    assert added.stderr.strip().splitlines()[-1] == "  3/3 documents processed"
    cid = added.stdout.split()[2]
    listed = connectors_cli(d, "list")
    assert listed.returncode == 0 and f"{cid}  idle         3 docs  kb" in listed.stdout
    (root / "n0.md").unlink()
    synced = connectors_cli(d, "sync", cid, "--wait")
    assert synced.returncode == 0 and "scanned 2 files: 0 queued, 2 unchanged, 1 deleted" in synced.stdout
    full = connectors_cli(d, "sync", cid, "--full")
    assert full.returncode == 0 and "2 queued" in full.stdout
    removed = connectors_cli(d, "rm", cid)
    assert removed.returncode == 0 and f"deleted connector {cid}, 2 documents" in removed.stdout
    missing = connectors_cli(d, "sync", cid)
    assert missing.returncode == 1 and missing.stderr.strip() == f"error: no connector has id '{cid}'"
    outside = connectors_cli(d, "add", "/")
    assert outside.returncode == 1 and "is outside the folders documents may be read from" in outside.stderr
    assert len(outside.stderr.strip().splitlines()) == 1
