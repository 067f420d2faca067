"""``signet secret …`` as a user runs it: the real CLI in a subprocess, on a real workspace."""

from __future__ import annotations

import os
import pty
import select
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable

import pytest

from signet.workspace import Workspace
from tests.secrets.conftest import VALUE, assert_hidden, cli, workspace_text


def test_put_from_stdin_list_has_delete(secret_workspace: Callable[..., Workspace]) -> None:
    ws = secret_workspace()
    put = cli(ws, "secret", "put", "TOKEN", input=VALUE + "\n")
    assert put.returncode == 0 and put.stdout == "stored secret TOKEN\n", put.stderr
    assert cli(ws, "secret", "put", "TOKEN", input=VALUE + "\n").stdout == "replaced secret TOKEN\n"
    listed = cli(ws, "secret", "list")
    assert listed.returncode == 0 and listed.stdout.startswith("TOKEN\t")
    assert cli(ws, "secret", "list", "--json").stdout.count('"name": "TOKEN"') == 1
    assert cli(ws, "secret", "has", "TOKEN").returncode == 0
    missing = cli(ws, "secret", "has", "NOPE")
    assert missing.returncode == 1 and missing.stderr == "error: no secret named NOPE\n"
    # the trailing newline `echo` adds is not part of the value
    run = cli(ws, "secret", "exec", "-s", "TOKEN", "--", "sh", "-c", 'test "$TOKEN" = ' + VALUE + " && echo same")
    assert run.stdout == "same\n", run.stderr
    for out in (put, listed):
        assert_hidden(out.stdout + out.stderr, "the CLI's output")
    assert_hidden((ws.secrets_dir / "store.json").read_text(), "the store file")
    assert cli(ws, "secret", "delete", "TOKEN").stdout == "deleted secret TOKEN\n"
    gone = cli(ws, "secret", "delete", "TOKEN")
    assert gone.returncode == 1 and gone.stderr.count("\n") == 1


def test_values_on_the_command_line_are_refused(secret_workspace: Callable[..., Workspace]) -> None:
    ws = secret_workspace()
    for args in (("TOKEN", VALUE), ("TOKEN", "--value", VALUE), ("--value", VALUE, "TOKEN"), ("TOKEN", "--", VALUE)):
        r = cli(ws, "secret", "put", *args, input="from stdin\n")
        assert r.returncode != 0, args
        assert r.stderr.count("\n") == 1 and "never taken from the command line" in r.stderr, (args, r.stderr)
        assert_hidden(r.stdout + r.stderr, "the refusal")
    assert cli(ws, "secret", "has", "TOKEN").returncode == 1  # nothing was stored
    assert not (ws.secrets_dir / "store.json").exists()


def test_bad_names_and_empty_values_are_one_line_errors(secret_workspace: Callable[..., Workspace]) -> None:
    ws = secret_workspace()
    for args, stdin, words in (
        (("lower",), VALUE, "invalid secret name"),
        (("PATH",), VALUE, "reserved"),
        (("TOKEN",), "\n", "cannot be empty"),
    ):
        r = cli(ws, "secret", "put", *args, input=stdin)
        assert r.returncode == 1 and r.stderr.count("\n") == 1 and words in r.stderr, r.stderr


@pytest.mark.sqlite_only("reads the run records from the workspace's SQLite file")
def test_exec_prints_redacted_output_and_passes_the_status_on(secret_workspace: Callable[..., Workspace]) -> None:
    ws = secret_workspace(timeoutSeconds=2)
    cli(ws, "secret", "put", "TOKEN", input=VALUE)
    r = cli(
        ws, "secret", "exec", "--secret", "TOKEN", "--", "sh", "-c", "echo $TOKEN; echo $TOKEN | base64 >&2; exit 3"
    )
    assert r.returncode == 3
    assert r.stdout == "[REDACTED:TOKEN]\n" and r.stderr.startswith("[REDACTED:TOKEN]")
    assert_hidden(r.stdout + r.stderr, "exec's output")

    started = time.monotonic()
    hung = cli(ws, "secret", "exec", "-s", "TOKEN", "--", "sh", "-c", "echo waiting; sleep 60")
    assert hung.returncode == 124 and hung.stdout == "waiting\n" and "timeout" in hung.stderr
    assert time.monotonic() - started < 30

    refused = cli(ws, "secret", "exec", "-s", "TOKEN", "--", "python3", "-c", "print(1)")
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1 and "secrets.exec.allow" in refused.stderr

    db = sqlite3.connect(ws.database_path())
    try:
        rows = db.execute(
            "SELECT origin, status, actor, stdout, stderr FROM secret_exec_runs ORDER BY created_at"
        ).fetchall()
    finally:
        db.close()
    assert [(r[0], r[1]) for r in rows] == [("cli", "done"), ("cli", "timeout"), ("cli", "refused")]
    assert all(r[2].startswith("cli:") for r in rows)
    for name, text in workspace_text(ws.root).items():
        assert_hidden(text, name)


def test_put_prompts_without_echo_on_a_terminal(secret_workspace: Callable[..., Workspace]) -> None:
    """A value typed at the prompt is read twice, hidden (the terminal never echoes it)."""
    ws = secret_workspace()
    pid, fd = pty.fork()
    if pid == 0:  # the child: the real CLI on the pseudo-terminal
        os.environ["SIGNET_WORKSPACE"] = str(ws.root)
        os.execv(sys.executable, [sys.executable, "-m", "signet.cli.entry", "secret", "put", "TOKEN"])
    seen = b""

    def read_until(marker: bytes, timeout: float = 60) -> None:
        nonlocal seen
        deadline = time.monotonic() + timeout
        while marker not in seen and time.monotonic() < deadline:
            if select.select([fd], [], [], 0.1)[0]:
                try:
                    seen += os.read(fd, 1024)
                except OSError:
                    break
        assert marker in seen, seen

    read_until(b"Value (hidden): ")
    os.write(fd, VALUE.encode() + b"\n")
    read_until(b"Again: ")
    os.write(fd, VALUE.encode() + b"\n")
    read_until(b"stored secret TOKEN")
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 0
    assert VALUE.encode() not in seen  # not echoed
    check = subprocess.run(
        [
            sys.executable,
            "-m",
            "signet.cli.entry",
            "secret",
            "exec",
            "-s",
            "TOKEN",
            "--",
            "sh",
            "-c",
            f'[ "$TOKEN" = "{VALUE}" ]',
        ],
        env={**os.environ, "SIGNET_WORKSPACE": str(ws.root)},
        capture_output=True,
        timeout=60,
    )
    assert check.returncode == 0, check.stderr
