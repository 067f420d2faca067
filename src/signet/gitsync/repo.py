"""The workspace as a git repository: created at setup, with a ``.gitignore`` that keeps the
secret store, the database, its backups and the daemon's state out of every commit.

An existing repository is kept; its ``.gitignore`` gets the lines it lacks, and a file it
already tracks that must not be committed (a database committed before) is untracked with
``git rm --cached``: the file stays on disk, only git forgets it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from signet.errors import InvalidRequest
from signet.gitsync.urls import last_line, run_git

IGNORED = (
    ".secrets/",
    ".daemon/",
    "harnesses/",
    "memory/*.db",
    "memory/*.db-*",
    "memory/backups/",
    "memory/*/transcripts/",
    "*.db-wal",
    "*.db-shm",
    "*.db-journal",
    "skills/.staging-*",
)
"""Never committed: secrets (``.secrets/``), the daemon's pid and logs, harness ledgers (they
hold copies of the user's harness config files, which may carry API keys), the database with
its WAL and backups, session transcripts (whole conversations, with whatever was pasted into
them), and half-done skill installs."""
HEADER = "# Written by Signet (docs/git.md): never committed."
FALLBACK_IDENTITY = ("-c", "user.name=Signet", "-c", "user.email=signet@localhost")


@dataclass
class InitReport:
    created: bool
    gitignore: list[str] = field(default_factory=list)
    """Lines added to .gitignore."""
    untracked: list[str] = field(default_factory=list)
    """Files git stopped tracking (they stay on disk)."""
    committed: bool = False


def is_repository(root: Path) -> bool:
    return (root / ".git").exists()


def identity(root: Path) -> tuple[str, ...]:
    """``-c user.name/email`` for git when the user configured none (a commit would fail)."""
    res = run_git(["config", "user.email"], cwd=root, timeout=30)
    return () if res.stdout.strip() else FALLBACK_IDENTITY


def write_gitignore(root: Path) -> list[str]:
    """Add to ``.gitignore`` each of :data:`IGNORED` it lacks; the lines added."""
    path = root / ".gitignore"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    have = {line.strip() for line in text.splitlines()}
    missing = [line for line in IGNORED if line not in have]
    if missing:
        lead = "" if not text or text.endswith("\n") else "\n"
        block = ([HEADER] if HEADER not in have else []) + missing
        with path.open("a", encoding="utf-8") as fh:
            fh.write(lead + "\n".join(block) + "\n")
    return missing


def commit_all(root: Path, message: str, *, timeout: float = 120.0) -> bool:
    """Stage every change (.gitignore applies) and commit; False when there was nothing."""
    run_git(["add", "-A"], cwd=root, timeout=timeout, check=True)
    return commit_index(root, message, timeout=timeout)


def commit_index(root: Path, message: str, *, timeout: float = 120.0) -> bool:
    """Commit what is staged; False when nothing is."""
    if run_git(["diff", "--cached", "--quiet"], cwd=root, timeout=timeout).returncode == 0:
        return False
    res = run_git([*identity(root), "commit", "-q", "--no-verify", "-m", message], cwd=root, timeout=timeout)
    if res.returncode != 0:
        raise InvalidRequest(f"git commit failed: {last_line(res)}")
    return True


def init(root: Path, *, timeout: float = 120.0) -> InitReport:
    """Make ``root`` a git repository (idempotent). A new one gets everything committed; an
    existing one only the ``.gitignore`` lines added and the files untracked."""
    created = not is_repository(root)
    if created:
        res = run_git(["init", "-q", "-b", "main"], cwd=root, timeout=timeout)
        if res.returncode != 0:  # git before 2.28 has no -b
            run_git(["init", "-q"], cwd=root, timeout=timeout, check=True)
            run_git(["symbolic-ref", "HEAD", "refs/heads/main"], cwd=root, timeout=timeout, check=True)
    report = InitReport(created=created, gitignore=write_gitignore(root))
    tracked = run_git(["ls-files", "-ci", "--exclude-standard", "-z"], cwd=root, timeout=timeout, check=True)
    report.untracked = [p for p in tracked.stdout.split("\0") if p]
    if report.untracked:
        run_git(["rm", "-q", "--cached", "--", *report.untracked], cwd=root, timeout=timeout, check=True)
    if created:
        report.committed = commit_all(root, "signet: workspace created", timeout=timeout)
    elif report.gitignore or report.untracked:  # only Signet's own change: the user's edits stay theirs to commit
        run_git(["add", "--", ".gitignore"], cwd=root, timeout=timeout, check=True)
        report.committed = commit_index(root, "signet: keep secrets and the database out of git", timeout=timeout)
    return report
