"""Status, pull, push and sync of the workspace repository with its remote.

Local changes are committed before a pull or a push, so nothing the user wrote is ever only
in the working tree while git moves it. A pull merges (never rebases, never resets); when the
same file changed on both sides the merge is aborted, which puts every file back as it was
committed here, and the conflict is reported (409, ``git_conflict``, the files named) for the
user to merge by hand. A push the remote refuses because it has commits this workspace lacks
is reported (409, ``git_behind``), never forced.
"""

from __future__ import annotations

import threading
from datetime import datetime
from pathlib import Path

from signet.config import GitSettings
from signet.errors import Conflict, InvalidRequest
from signet.gitsync import repo
from signet.gitsync.models import GitCommit, GitConfig, GitResult, GitStatus
from signet.gitsync.urls import check_url, last_line, run_git


class NotARepository(InvalidRequest):
    code = "not_a_repository"


class NoRemote(InvalidRequest):
    code = "no_remote"


class GitConflict(Conflict):
    code = "git_conflict"


class GitBehind(Conflict):
    code = "git_behind"


class GitSync:
    def __init__(self, root: Path, settings: GitSettings) -> None:
        self.root = root
        self.settings = settings
        self._lock = threading.Lock()  # one pull/push/sync at a time in this process

    def _git(self, *args: str, check: bool = False) -> str:
        res = run_git(list(args), cwd=self.root, timeout=self.settings.timeout_s)
        if check and res.returncode != 0:
            raise InvalidRequest(f"git {args[0]} failed: {last_line(res)}")
        return res.stdout.strip() if res.returncode == 0 else ""

    def _require_repo(self) -> None:
        if not repo.is_repository(self.root):
            raise NotARepository(f"the workspace {self.root} is not a git repository; run `signet git init`")

    def url(self) -> str | None:
        if not repo.is_repository(self.root):
            return None
        return self._git("remote", "get-url", self.settings.remote) or None

    def branch(self) -> str | None:
        return self.settings.branch or self._git("symbolic-ref", "--short", "-q", "HEAD") or None

    def _require_remote(self) -> tuple[str, str]:
        self._require_repo()
        if self.url() is None:
            raise NoRemote(f"no git remote {self.settings.remote!r} configured; run `signet git config --url URL`")
        branch = self.branch()
        if branch is None:
            raise InvalidRequest("the workspace is on no branch (a detached HEAD); check out a branch first")
        return self.settings.remote, branch

    # -- reading ------------------------------------------------------------------------------
    def config(self) -> GitConfig:
        return GitConfig(remote=self.settings.remote, url=self.url(), branch=self.branch() if self.url() else None)

    def status(self) -> GitStatus:
        if not repo.is_repository(self.root):
            return GitStatus(repository=False, remote=self.settings.remote)
        changed = [line[3:] for line in self._git("status", "--porcelain", "-uall").splitlines() if len(line) > 3]
        conflicts = self._git("diff", "--name-only", "--diff-filter=U").splitlines()
        branch = self.branch()
        ahead = behind = None
        tracking = f"refs/remotes/{self.settings.remote}/{branch}"
        if branch and self._git("rev-parse", "-q", "--verify", tracking):
            counts = self._git("rev-list", "--left-right", "--count", f"HEAD...{tracking}").split()
            if len(counts) == 2:
                ahead, behind = int(counts[0]), int(counts[1])
        last = None
        log = self._git("log", "-1", "--format=%H%x00%s%x00%cI")
        if log:
            sha, message, date = log.split("\0")
            last = GitCommit(sha=sha, message=message, date=date)
        return GitStatus(
            repository=True,
            branch=branch,
            remote=self.settings.remote,
            url=self.url(),
            changed=changed,
            ahead=ahead,
            behind=behind,
            conflicts=conflicts,
            last_commit=last,
        )

    # -- changing -----------------------------------------------------------------------------
    def set_url(self, url: str) -> GitConfig:
        """Point the remote (``git.remote``) at ``url``, adding it when missing."""
        self._require_repo()
        url = check_url(url)
        with self._lock:
            verb = "set-url" if self.url() is not None else "add"
            self._git("remote", verb, "--", self.settings.remote, url, check=True)
        return self.config()

    def _commit_pending(self) -> bool:
        stamp = datetime.now().strftime("%Y-%m-%dT%H-%M-%S")
        return repo.commit_all(self.root, f"{stamp}_sync", timeout=self.settings.timeout_s)

    def _head(self) -> str:
        return self._git("rev-parse", "HEAD")

    def _pull(self, remote: str, branch: str) -> bool:
        """Fetch and merge; True when anything was merged."""
        fetch = run_git(["fetch", "--quiet", "--", remote], cwd=self.root, timeout=self.settings.timeout_s)
        if fetch.returncode != 0:
            raise InvalidRequest(f"git fetch from {remote} failed: {last_line(fetch)}")
        tracking = f"refs/remotes/{remote}/{branch}"
        if not self._git("rev-parse", "-q", "--verify", tracking):
            return False  # the remote has no such branch yet (an empty repository): nothing to merge
        before = self._head()
        merge = run_git(
            [*repo.identity(self.root), "merge", "--no-edit", "--allow-unrelated-histories", tracking],
            cwd=self.root,
            timeout=self.settings.timeout_s,
        )
        if merge.returncode != 0:
            conflicts = self._git("diff", "--name-only", "--diff-filter=U").splitlines()
            self._git("merge", "--abort")  # back to this workspace's last commit: the user's files as they were
            if conflicts:
                shown = ", ".join(conflicts[:5]) + (f" and {len(conflicts) - 5} more" if len(conflicts) > 5 else "")
                raise GitConflict(
                    f"{shown} changed both here and on {remote}/{branch}; nothing was merged and your files are as "
                    f"they were; merge by hand: cd {self.root} && git pull {remote} {branch}",
                    conflicts=conflicts,
                )
            raise InvalidRequest(f"git merge failed: {last_line(merge)}")
        return self._head() != before

    def _push(self, remote: str, branch: str) -> bool:
        tracking = f"refs/remotes/{remote}/{branch}"
        if self._git("rev-parse", "-q", "--verify", tracking) == self._head():
            return False
        res = run_git(
            ["push", "--quiet", "--", remote, f"HEAD:refs/heads/{branch}"],
            cwd=self.root,
            timeout=self.settings.timeout_s,
        )
        if res.returncode != 0:
            said = res.stderr + res.stdout
            if "rejected" in said or "fetch first" in said or "non-fast-forward" in said:
                raise GitBehind(
                    f"{remote}/{branch} has commits this workspace does not; run `signet git pull` (or sync) first"
                )
            raise InvalidRequest(f"git push to {remote} failed: {last_line(res)}")
        self._git("fetch", "--quiet", "--", remote)  # the tracking ref now matches
        return True

    def pull(self) -> GitResult:
        remote, branch = self._require_remote()
        with self._lock:
            committed = self._commit_pending()
            pulled = self._pull(remote, branch)
        detail = f"merged {remote}/{branch}" if pulled else f"already up to date with {remote}/{branch}"
        return GitResult(action="pull", committed=committed, pulled=pulled, head=self._head(), detail=detail)

    def push(self) -> GitResult:
        remote, branch = self._require_remote()
        with self._lock:
            committed = self._commit_pending()
            pushed = self._push(remote, branch)
        detail = f"pushed to {remote}/{branch}" if pushed else f"{remote}/{branch} already has every commit"
        return GitResult(action="push", committed=committed, pushed=pushed, head=self._head(), detail=detail)

    def sync(self) -> GitResult:
        """Pull, then push: a conflict stops before anything is pushed."""
        remote, branch = self._require_remote()
        with self._lock:
            committed = self._commit_pending()
            pulled = self._pull(remote, branch)
            pushed = self._push(remote, branch)
        parts = [
            f"merged {remote}/{branch}" if pulled else "nothing to merge",
            "pushed" if pushed else "nothing to push",
        ]
        return GitResult(
            action="sync", committed=committed, pulled=pulled, pushed=pushed, head=self._head(), detail="; ".join(parts)
        )
