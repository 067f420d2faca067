"""A workspace's lease owner (signet.store.choose.lease_owner): the name its daemon's workers
write on the job queues' leases, kept across restarts so a restarted daemon knows its own."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path

import pytest

from signet.pipeline import queue
from signet.store.choose import build_store, lease_owner
from signet.workspace import Workspace


def test_stable_per_workspace_and_distinct_between_them(make_workspace: Callable[..., Workspace]) -> None:
    a, b = make_workspace(), make_workspace()
    first = lease_owner(a)
    assert first == lease_owner(a)
    assert first.startswith(socket.gethostname()[:64] + "/")
    assert first != lease_owner(b)
    assert (a.daemon_dir / "lease-owner").read_text().strip() == first.split("/", 1)[1]


def test_a_damaged_file_is_replaced(make_workspace: Callable[..., Workspace]) -> None:
    ws = make_workspace()
    ws.daemon_dir.mkdir(parents=True, exist_ok=True)
    (ws.daemon_dir / "lease-owner").write_text("../../etc/passwd\n")
    owner = lease_owner(ws)
    assert "passwd" not in owner and len(owner.split("/", 1)[1]) == 32
    assert lease_owner(ws) == owner


def test_an_unusable_folder_gives_a_name_for_this_process_only(tmp_path: Path) -> None:
    unreadable = Workspace(tmp_path / "a")
    unreadable.root.mkdir()
    unreadable.daemon_dir.write_text("a file where the folder should be")  # reading fails
    unwritable = Workspace(tmp_path / "b")
    (unwritable.daemon_dir / "lease-owner.tmp").mkdir(parents=True)  # writing fails, even as root
    for ws in (unreadable, unwritable):
        one, two = lease_owner(ws), lease_owner(ws)
        assert one != two  # nothing kept: the leases of a crashed run wait for their timeout


@pytest.mark.sqlite_only(
    "SQLite's rule: every lease is the one daemon's (PostgreSQL: tests/pg/test_several_daemons.py)"
)
def test_leases_carry_the_owner_and_sqlite_releases_all_at_start(make_workspace: Callable[..., Workspace]) -> None:
    ws = make_workspace()
    with build_store(ws, ws.settings()) as db:
        assert db.lease_owner == lease_owner(ws)
        ids = db.write(lambda c: [queue.enqueue(c, "extract", memory_id=f"m{i}")[0] for i in range(2)])
        db.write(lambda c: queue.lease(c, ("extract",), "someone-else"))
        db.write(lambda c: queue.lease(c, ("extract",), db.lease_owner))
        owners = db.read(lambda c: sorted(str(r[0]) for r in c.execute("SELECT leased_by FROM memory_jobs")))
        assert owners == sorted(["someone-else", db.lease_owner])
        # SQLite: the only daemon, so every lease it finds at start is its previous run's.
        assert db.write(lambda c: queue.release_at_start(c, 300_000, db.lease_owner)) == 2
        status = db.read(
            lambda c: {str(r[0]) for r in c.execute("SELECT status FROM memory_jobs WHERE id IN (?, ?)", ids)}
        )
        assert status == {"pending"}
