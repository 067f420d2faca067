"""Identity sync: watch the workspace's identity files and agent.yaml.

A change to an identity file (AGENTS.md, SOUL.md, IDENTITY.md, USER.md, MEMORY.md, or an
agent's own copy under ``agents/``) regenerates every installed harness's instruction file
once things are quiet for ``hooks.regenerate_debounce_s`` (2 s). When the workspace is a
git repository, changed files are committed once quiet for ``hooks.commit_debounce_s``
(5 s), with the message ``YYYY-MM-DDTHH-MM-SS_auto_<filename>``. A change to agent.yaml is
also told to ``on_config`` (after :data:`CONFIG_DEBOUNCE_S`): the runtime reloads what can
change while running (the pipeline's LLM provider and budgets).

Debouncing is a deadline that each event pushes back; one thread waits for file events
(watchfiles) and one fires what is due, so a burst of saves makes one regeneration and
one commit.

Only what can matter is watched: the workspace root's own files (not recursively) and
``agents/`` (recursively, from when it exists). A recursive watch of the root also
watched ``memory/``, whose database and WAL change on every write: each remember cost
the inotify thread and the Python filter some CPU for nothing (about 7% of a core during
a burst of remembers; docs/benchmarks.md, latency).
"""

from __future__ import annotations

import logging
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from signet.config import HooksSettings
from signet.harnesses import install as harness_install
from signet.harnesses.merge import HarnessConfigError
from signet.hooks.identity import IDENTITY_FILES

log = logging.getLogger(__name__)

WATCHED_ROOT_FILES = frozenset({*IDENTITY_FILES, "agent.yaml"})
CONFIG_DEBOUNCE_S = 0.5
"""An editor's save is often several writes: agent.yaml is read again once they are over."""


def relevant(root: Path, path: Path) -> tuple[bool, bool]:
    """(commit it, regenerate harness files for it)."""
    try:
        rel = path.relative_to(root)
    except ValueError:
        return False, False
    parts = rel.parts
    if len(parts) == 1 and parts[0] in WATCHED_ROOT_FILES:
        return True, parts[0] in IDENTITY_FILES
    if len(parts) >= 3 and parts[0] == "agents" and parts[-1].endswith(".md") and "workspace" not in parts:
        return True, True
    return False, False


def commit_message(filename: str, when: datetime | None = None) -> str:
    return f"{(when or datetime.now()).strftime('%Y-%m-%dT%H-%M-%S')}_auto_{filename}"


class IdentityWatcher:
    def __init__(self, root: Path, settings: HooksSettings) -> None:
        self.root = root
        self.settings = settings
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._regen_due: float | None = None
        self._commit_due: float | None = None
        self._config_due: float | None = None
        self.on_config: list[Callable[[], object]] = []
        """Told (on the watcher's thread) when agent.yaml changed; must not raise."""
        self._changed: list[str] = []
        self._threads: list[threading.Thread] = []
        self._watching_agents = False
        self._agents = self.root / "agents"
        self.regenerations = 0
        self.commits = 0

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        if not self.settings.watch or self._threads or not self.root.is_dir():
            return
        self._stop.clear()
        for target, name in ((self._watch, "signet-watcher"), (self._fire, "signet-watcher-debounce")):
            t = threading.Thread(target=target, name=name, daemon=True)
            t.start()
            self._threads.append(t)

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        with self._lock:
            threads = list(self._threads)
        for t in threads:
            t.join(timeout=10)
        with self._lock:
            self._threads.clear()
            self._watching_agents = False

    # -- events ----------------------------------------------------------------------------
    def _watch(self) -> None:
        """The root's own files; starts the ``agents/`` watch now or when that folder appears."""
        self._watch_agents()
        for changes in self._changes(self.root, recursive=False, also=self._agents):
            if any(Path(p) == self._agents for _, p in changes):
                self._watch_agents()
            self.notify([Path(p) for _, p in changes])

    def _watch_agents(self) -> None:
        with self._lock:
            if self._watching_agents or self._stop.is_set() or not self._agents.is_dir():
                return
            self._watching_agents = True
            t = threading.Thread(
                target=self._watch_tree, args=(self._agents,), name="signet-watcher-agents", daemon=True
            )
            self._threads.append(t)
        t.start()

    def _watch_tree(self, path: Path) -> None:
        for changes in self._changes(path, recursive=True):
            self.notify([Path(p) for _, p in changes])
        with self._lock:  # the folder went away: a new one is watched again when it appears
            self._watching_agents = False

    def _changes(self, path: Path, *, recursive: bool, also: Path | None = None) -> Iterator[set[tuple[Any, str]]]:
        """Batches of relevant changes under ``path`` (plus the path ``also``) until stopped."""
        from watchfiles import watch

        def keep(_: object, changed: str) -> bool:
            p = Path(changed)
            return p == also or any(relevant(self.root, p))

        try:
            yield from watch(
                path,
                watch_filter=keep,
                debounce=200,
                step=50,
                stop_event=self._stop,
                raise_interrupt=False,
                recursive=recursive,
            )
        except OSError as exc:  # the folder vanished or cannot be watched: sync stops, the daemon goes on
            log.warning("identity watcher stopped watching %s: %s", path, exc)

    def notify(self, paths: list[Path]) -> None:
        """Record changed files and push the deadlines back (also the test entry point)."""
        now = time.monotonic()
        with self._lock:
            for p in paths:
                commit, regen = relevant(self.root, p)
                if regen:
                    self._regen_due = now + self.settings.regenerate_debounce_s
                if commit and p == self.root / "agent.yaml":
                    self._config_due = now + CONFIG_DEBOUNCE_S
                if commit:
                    rel = str(p.relative_to(self.root))
                    if rel not in self._changed:
                        self._changed.append(rel)
                    self._commit_due = now + self.settings.commit_debounce_s
        self._wake.set()

    def _fire(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                dues = [d for d in (self._regen_due, self._commit_due, self._config_due) if d is not None]
            timeout = max(min(dues) - time.monotonic(), 0.0) if dues else None
            self._wake.wait(timeout)
            self._wake.clear()
            if self._stop.is_set():
                return
            now = time.monotonic()
            regen = commit = config = False
            files: list[str] = []
            with self._lock:
                if self._config_due is not None and now >= self._config_due:
                    config, self._config_due = True, None
                if self._regen_due is not None and now >= self._regen_due:
                    regen, self._regen_due = True, None
                if self._commit_due is not None and now >= self._commit_due:
                    commit, self._commit_due = True, None
                    files, self._changed = self._changed, []
            if config:
                for fn in self.on_config:
                    fn()
            if regen:
                self.regenerate()
            if commit and files:
                self.commit(files)

    # -- actions ---------------------------------------------------------------------------
    def regenerate(self) -> None:
        for name in harness_install.installed(self.root):
            try:
                changes = harness_install.regenerate(self.root, [name])
            except (HarnessConfigError, OSError, LookupError) as exc:  # one broken harness: report, go on
                log.warning("identity sync: regenerating %s failed: %s", name, exc)
                continue
            for c in changes.get(name, []):
                if c.action != "unchanged":
                    log.info("identity sync: %s %s (%s)", c.action, c.path, name)
        self.regenerations += 1

    def commit(self, files: list[str]) -> bool:
        if not (self.root / ".git").exists():
            return False
        ident: list[str] = []
        if not self._git("config", "user.email", check=False).stdout.strip():
            ident = ["-c", "user.name=Signet", "-c", "user.email=signet@localhost"]
        self._git("add", "-A", "--", *files, check=False)
        msg = commit_message(Path(files[0]).name)
        res = self._git(*ident, "commit", "-q", "-m", msg, "--", *files, check=False)
        if res.returncode == 0:
            self.commits += 1
            log.info("identity sync: committed %s", msg)
            return True
        if "nothing" not in (res.stdout + res.stderr):
            log.warning("identity sync: git commit failed: %s", (res.stderr or res.stdout).strip()[:300])
        return False

    def _git(self, *args: str, check: bool) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["git", *args],
            cwd=self.root,
            capture_output=True,
            text=True,
            check=check,
            timeout=30,
        )
