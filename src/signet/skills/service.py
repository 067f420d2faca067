"""The skills service: what the routes and the CLI call.

The folders under ``$SIGNET_WORKSPACE/skills/`` are the truth for which skills exist (a skill
copied there by hand counts); ``skill_meta`` keeps the rest. An install stages the source in
``skills/.staging-*`` on the same file system, checks it (tree, SKILL.md, name), then moves it
into place in one rename, so a failed install leaves nothing behind and a reader never sees a
half-copied skill. ``db`` is None where no database is at hand: then no metadata is read or
written.
"""

from __future__ import annotations

import itertools
import re
import shutil
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from signet.config import SkillsSettings
from signet.errors import Conflict, InvalidRequest, NotFound
from signet.skills import links, manifest, meta, sources
from signet.skills.archive import Limits
from signet.skills.models import (
    LinkInfo,
    Skill,
    SkillDetail,
    SkillInstalled,
    SkillList,
    SkillProblem,
    SkillRemoved,
    SkillSearchHit,
    SkillSearchResult,
    SkillUsed,
)
from signet.store.database import Database

MAX_INDEX_BYTES = 4 * 1024 * 1024
MAX_LISTED_FILES = 1000


@dataclass(frozen=True)
class IndexEntry:
    name: str
    description: str
    version: str | None
    source: str | None


def _links(changes: list[links.LinkChange]) -> list[LinkInfo]:
    return [LinkInfo(harness=c.harness, path=c.path, action=c.action, note=c.note) for c in changes]


class SkillService:
    def __init__(self, workspace: Path, settings: SkillsSettings, db: Database | None) -> None:
        self.workspace = workspace
        self.settings = settings
        self.db = db
        self.dir = workspace / "skills"
        self._lock = threading.Lock()  # one install or uninstall at a time in this process

    @property
    def limits(self) -> Limits:
        return Limits(max_bytes=self.settings.max_bytes, max_files=self.settings.max_files)

    # -- reading ------------------------------------------------------------------------------
    def _folders(self) -> list[Path]:
        return links.skill_folders(self.workspace)

    def _meta(self) -> dict[str, meta.Meta]:
        return self.db.read(meta.all_meta) if self.db is not None else {}

    def _skill(self, folder: Path, m: manifest.Manifest, info: meta.Meta | None) -> Skill:
        return Skill(
            name=m.name,
            description=m.description,
            version=m.version,
            path=str(folder),
            source=info.source if info else None,
            linked=links.linked(self.workspace, folder.name, folder),
            use_count=info.use_count if info else 0,
            last_used_at=info.last_used_at if info else None,
            relevance=info.relevance() if info else 0.0,
        )

    def _manifest(self, folder: Path) -> manifest.Manifest:
        m = manifest.read(folder)
        if m.name != folder.name:
            raise InvalidRequest(f"{folder.name}/SKILL.md names the skill {m.name!r}, not its folder's name")
        return m

    def list_skills(self) -> SkillList:
        """Every skill, by name; folders that are not valid skills under ``problems``."""
        found: list[tuple[Path, manifest.Manifest]] = []
        problems = []
        for folder in self._folders():
            try:
                found.append((folder, self._manifest(folder)))
            except InvalidRequest as exc:
                problems.append(SkillProblem(name=folder.name, error=exc.message))
        info = self._meta()
        missing = {m.name: str(f) for f, m in found if m.name not in info}
        if self.db is not None and missing:  # a folder put there by hand gets its row on first sight
            self.db.write(lambda c: meta.ensure(c, missing))
            info = self._meta()
        return SkillList(skills=[self._skill(f, m, info.get(m.name)) for f, m in found], problems=problems)

    def _folder(self, name: str) -> Path:
        folder = self.dir / manifest.check_name(name)
        if not folder.is_dir():
            raise NotFound(f"no skill named {name}")
        return folder

    def show(self, name: str) -> SkillDetail:
        folder = self._folder(name)
        m = self._manifest(folder)
        found = itertools.islice(folder.rglob("*"), MAX_LISTED_FILES)  # a hand-made folder may hold anything
        files = sorted(str(p.relative_to(folder)) for p in found if p.is_file() or p.is_symlink())
        base = self._skill(folder, m, self._meta().get(name))
        return SkillDetail(**base.model_dump(), body=m.body, files=files)

    # -- changing -----------------------------------------------------------------------------
    def install(self, source: str, *, force: bool = False, remote_allowed: bool = True) -> SkillInstalled:
        """Install the skill at ``source`` (a folder, an archive, a git URL), link it into every
        installed harness, record its source. ``force`` replaces a skill of the same name."""
        src = sources.classify(source)
        if src.kind == "git" and not remote_allowed:
            raise InvalidRequest("installing from a git URL over the API is off; set skills.allowRemote: true")
        self.dir.mkdir(parents=True, exist_ok=True)
        with self._lock, tempfile.TemporaryDirectory(prefix=".staging-", dir=self.dir) as staging:
            root = sources.fetch(src, Path(staging), self.limits, git_timeout=self.settings.git_timeout_s)
            m = manifest.read(root)
            dest = self.dir / m.name
            replaced = dest.exists() or dest.is_symlink()
            if replaced and not force:
                raise Conflict(f"a skill named {m.name} is installed; uninstall it first or use --force")
            try:
                if replaced:
                    dest.rename(Path(staging) / "old")  # removed with the staging folder, after the new one is in place
                root.rename(dest)
            except OSError as exc:  # another process put a skill of that name there meanwhile, or no permission
                raise Conflict(f"could not move the skill into {dest}: {exc.strerror or exc}") from None
        changes = links.link(self.workspace, m.name, dest)
        if self.db is not None:
            self.db.write(lambda c: meta.installed(c, m.name, src.location, str(dest)))
        info = self._meta().get(m.name)
        return SkillInstalled(skill=self._skill(dest, m, info), replaced=replaced, links=_links(changes))

    def uninstall(self, name: str) -> SkillRemoved:
        """Remove the skill's folder and its links in the harnesses' skills folders."""
        with self._lock:
            folder = self._folder(name)
            changes = links.unlink(self.workspace, name, folder)
            try:
                if folder.is_symlink():  # a skill the user linked in by hand: the link goes, its target stays
                    folder.unlink()
                else:
                    shutil.rmtree(folder)
            except OSError as exc:
                raise InvalidRequest(f"could not remove {folder}: {exc.strerror or exc}") from None
        if self.db is not None:
            self.db.write(lambda c: meta.removed(c, name))
        return SkillRemoved(name=name, removed=True, links=_links(changes))

    def link_all(self) -> list[LinkInfo]:
        """Link every installed skill into every installed harness (after a harness install)."""
        out: list[LinkInfo] = []
        for folder in self._folders():
            if (folder / manifest.SKILL_FILE).is_file():
                out.extend(_links(links.link(self.workspace, folder.name, folder)))
        return out

    def record_use(self, name: str) -> SkillUsed:
        if self.db is None:
            raise InvalidRequest("no database to record a skill's use in")
        folder = self._folder(name)
        count = self.db.write(lambda c: meta.used(c, name, str(folder)))
        return SkillUsed(name=name, use_count=count)

    # -- search -------------------------------------------------------------------------------
    def index_entries(self) -> list[IndexEntry]:
        """The configured index file's skills (``skills.index``): YAML or JSON, a list of
        entries or ``{skills: [...]}``, each with ``name``, ``description``, ``source``."""
        if not self.settings.index:
            return []
        path = Path(self.settings.index).expanduser()
        path = path if path.is_absolute() else self.workspace / path
        try:
            if path.stat().st_size > MAX_INDEX_BYTES:
                raise InvalidRequest(f"the skills index {path} is larger than 4 MiB")
            data: Any = yaml.safe_load(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise InvalidRequest(f"the skills index {path} does not exist (skills.index)") from None
        except (OSError, yaml.YAMLError) as exc:
            raise InvalidRequest(f"the skills index {path} cannot be read: {str(exc).splitlines()[0]}") from None
        items = data.get("skills") if isinstance(data, dict) else data
        if not isinstance(items, list):
            raise InvalidRequest(f"the skills index {path} is not a list of skills (or {{skills: [...]}})")
        out = []
        for item in items:
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                version = item.get("version")
                out.append(
                    IndexEntry(
                        name=item["name"],
                        description=str(item.get("description") or ""),
                        version=None if version is None else str(version),
                        source=str(item["source"]) if item.get("source") is not None else None,
                    )
                )
        return out

    def search(self, query: str, limit: int = 20) -> SkillSearchResult:
        """Installed skills and the index's, matched on every word of ``query`` in the name
        (counts double) and the description; an installed skill is listed once."""
        words = [w for w in re.split(r"\W+", query.lower()) if w]
        if not words:
            raise InvalidRequest("give at least one word to search for")
        hits: dict[str, SkillSearchHit] = {}
        for s in self.list_skills().skills:
            score = _score(words, s.name, s.description)
            if score:
                hits[s.name] = SkillSearchHit(
                    name=s.name,
                    description=s.description,
                    version=s.version,
                    installed=True,
                    source=s.source,
                    score=score,
                )
        for e in self.index_entries():
            score = _score(words, e.name, e.description)
            if score and e.name not in hits:
                hits[e.name] = SkillSearchHit(
                    name=e.name,
                    description=e.description,
                    version=e.version,
                    installed=False,
                    source=e.source,
                    score=score,
                )
        ranked = sorted(hits.values(), key=lambda h: (-h.score, not h.installed, h.name))
        return SkillSearchResult(query=query, results=ranked[:limit])


def _score(words: list[str], name: str, description: str) -> float:
    name_l, desc_l = name.lower(), description.lower()
    if not all(w in name_l or w in desc_l for w in words):
        return 0.0
    return float(sum(2 * (w in name_l) + (w in desc_l) for w in words))
