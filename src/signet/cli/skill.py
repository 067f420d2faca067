"""``signet skill list|show|install|uninstall|search|link``: the workspace's skills
(docs/skills.md).

These work on the workspace directly, like ``signet secret``: a skill is a folder under
``skills/`` and its links are in the harnesses' folders of this user, so they work with the
daemon down. The CLI may install from any source, git URLs included (the API only with
``skills.allowRemote``): whoever runs it is the user.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import typer

from signet.cli.app import app
from signet.secrets.store import reader as secret_reader
from signet.skills.models import LinkInfo
from signet.skills.service import SkillService
from signet.store.choose import build_store
from signet.workspace import Workspace

skill_app = typer.Typer(
    help="Skills shared by every harness: list, show, install, uninstall, search, link.", no_args_is_help=True
)
app.add_typer(skill_app, name="skill")

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]


@contextmanager
def _service() -> Iterator[SkillService]:
    ws = Workspace.from_env()
    settings = ws.settings()
    with build_store(ws, settings, secret_reader(ws.secrets_dir, settings.secrets.key_store)) as db:
        yield SkillService(ws.root, settings.skills, db)


def _dump(data: Any) -> None:
    typer.echo(json.dumps(data, indent=2))


def _say_links(changes: list[LinkInfo]) -> None:
    for c in changes:
        if c.action == "unchanged":
            continue
        line = f"{c.harness}: {c.action} {c.path}" + (f" ({c.note})" if c.note else "")
        typer.secho(line, err=c.action in ("kept", "failed"), fg="yellow" if c.action in ("kept", "failed") else None)


@skill_app.command("list")
def list_cmd(as_json: JsonOpt = False) -> None:
    """Installed skills: name, version, description, harnesses linked."""
    with _service() as skills:
        listed = skills.list_skills()
    if as_json:
        _dump(listed.model_dump())
        return
    if not listed.skills and not listed.problems:
        typer.echo("no skills (install one with `signet skill install SOURCE`)")
    for s in listed.skills:
        version = f" {s.version}" if s.version else ""
        linked = f"  [{', '.join(s.linked)}]" if s.linked else ""
        typer.echo(f"{s.name}{version}  {s.description}{linked}")
    for p in listed.problems:
        typer.secho(f"note: skills/{p.name} is not a valid skill: {p.error}", err=True, fg="yellow")


@skill_app.command("show")
def show(name: Annotated[str, typer.Argument(help="The skill's name.")], as_json: JsonOpt = False) -> None:
    """A skill's front matter, files and instructions."""
    with _service() as skills:
        detail = skills.show(name)
    if as_json:
        _dump(detail.model_dump())
        return
    typer.echo(f"{detail.name} {detail.version or ''}".rstrip())
    typer.echo(detail.description)
    typer.echo(f"path: {detail.path}")
    typer.echo(f"source: {detail.source or '-'}   uses: {detail.use_count}   linked: {', '.join(detail.linked) or '-'}")
    typer.echo("files: " + ", ".join(detail.files))
    typer.echo("")
    typer.echo(detail.body.strip())


@skill_app.command("install")
def install(
    source: Annotated[str, typer.Argument(help="A skill folder, a .tar.gz/.zip archive, or a git URL.")],
    force: Annotated[bool, typer.Option("--force", help="Replace an installed skill of the same name.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Install a skill into skills/NAME and link it into every installed harness."""
    with _service() as skills:
        done = skills.install(source, force=force)
    if as_json:
        _dump(done.model_dump())
        return
    verb = "replaced" if done.replaced else "installed"
    typer.echo(f"{verb} skill {done.skill.name} {done.skill.version or ''}".rstrip() + f" at {done.skill.path}")
    _say_links(done.links)


@skill_app.command("uninstall")
def uninstall(name: Annotated[str, typer.Argument(help="The skill's name.")]) -> None:
    """Remove a skill and its links in the harnesses' skills folders."""
    with _service() as skills:
        done = skills.uninstall(name)
    typer.echo(f"uninstalled skill {name}")
    _say_links(done.links)


@skill_app.command("search")
def search(
    query: Annotated[list[str], typer.Argument(help="Words to find in names and descriptions.")],
    limit: Annotated[int, typer.Option("--limit", min=1, max=100)] = 20,
    as_json: JsonOpt = False,
) -> None:
    """Search installed skills and the index file (skills.index)."""
    with _service() as skills:
        found = skills.search(" ".join(query), limit)
    if as_json:
        _dump(found.model_dump())
        return
    if not found.results:
        typer.echo(f"no skill matches {found.query!r}")
    for h in found.results:
        where = "installed" if h.installed else (h.source or "index")
        typer.echo(f"{h.name}  {h.description}  ({where})")


@skill_app.command("link")
def link() -> None:
    """Link every installed skill into every installed harness (after `signet install HARNESS`)."""
    with _service() as skills:
        changes = skills.link_all()
    _say_links(changes)
    typer.echo(f"{sum(c.action == 'linked' for c in changes)} links made")
