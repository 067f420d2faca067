"""Bad sources are refused: URLs that are not http(s), addresses on loopback, private and
link-local ranges (SSRF) unless allowed, paths outside the allowed folders or through a
symlink that leaves them, and paths from callers who are not local admins."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from signet.config import DocumentsSettings
from signet.daemon.app import create_app
from signet.documents.errors import DocumentFailed
from signet.documents.fetch import fetch
from signet.runtime import Runtime
from signet.workspace import Workspace
from tests.auth.conftest import bearer, configure, token_for
from tests.conftest import start_runtime
from tests.documents.conftest import ingest
from tests.documents.site import Site

App = Callable[..., tuple[Runtime, TestClient]]

REFUSED = [
    ("http://127.0.0.1:9/x", "127.0.0.1 is a loopback address"),
    ("http://localhost:9/x", "is a loopback address"),
    ("http://[::1]:9/x", "::1 is a loopback address"),
    ("http://10.1.2.3/x", "10.1.2.3 is a private address"),
    ("http://192.168.0.10/x", "192.168.0.10 is a private address"),
    ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local address"),
    ("http://[::ffff:127.0.0.1]/x", "::ffff:7f00:1 is a loopback address"),
    ("http://100.64.0.1/x", "100.64.0.1 is not a public address"),
    ("file:///etc/passwd", "only http and https URLs can be fetched, not 'file'"),
    ("ftp://example.com/x", "only http and https URLs can be fetched, not 'ftp'"),
    ("gopher://127.0.0.1:25/", "only http and https URLs can be fetched"),
]


@pytest.mark.parametrize(("url", "why"), REFUSED)
def test_unsafe_urls_are_refused_by_default(
    make_workspace: Callable[..., Workspace],
    open_app: Callable[[Workspace], tuple[Runtime, TestClient]],
    url: str,
    why: str,
) -> None:
    rt, api = open_app(make_workspace("none"))
    r = api.post("/api/documents", json={"url": url})
    assert r.status_code == 400, r.text
    assert why in r.json()["error"]
    assert api.get("/api/documents").json()["total"] == 0
    assert rt.db.read(lambda c: c.execute("SELECT COUNT(*) FROM memory_jobs").fetchone()[0]) == 0


def test_every_hop_is_checked(site: Site) -> None:
    """The worker checks the address again, before connecting, and every redirect hop again: a
    redirect to ``file://`` is refused even where loopback is allowed, and the same loopback
    site that is fetched when allowed is refused, without a request reaching it, when not."""
    allowed = DocumentsSettings(allow_private_networks=True, fetch_timeout_s=2)
    assert fetch(site.url("/redirect"), allowed).url == site.url("/guide.html")
    with pytest.raises(DocumentFailed, match="only http and https URLs can be fetched, not 'file'"):
        fetch(site.url("/to-file"), allowed)
    before = dict(site.hits)
    with pytest.raises(DocumentFailed, match=r"127\.0\.0\.1 is a loopback address") as err:
        fetch(site.url("/redirect"), DocumentsSettings(fetch_timeout_s=2))
    assert err.value.permanent
    assert site.hits == before


def test_path_rules(docs_app: App, files: Path, tmp_path: Path) -> None:
    _rt, api = docs_app()
    outside = tmp_path / "outside.md"
    outside.write_text("# Private\n\nnot for documents\n")
    (files / "escape.md").symlink_to(outside)
    (files / "loop-a").symlink_to(files / "loop-b")
    (files / "loop-b").symlink_to(files / "loop-a")
    (files / "sub").mkdir()
    cases = {
        str(outside): "is outside the folders documents may be read from",
        str(files / "escape.md"): f"(it resolves to {outside}) is outside the folders",
        str(files / "loop-a"): "is a symlink loop",
        str(files / "nope.md"): "no such file",
        str(files / "sub"): "is not a regular file",
        "relative/notes.md": "give an absolute path",
        str(files / ".." / "outside.md"): "is outside the folders",
        str(files / "a\x00b.md"): "a path cannot contain a NUL character",
        "~no-such-user-here/notes.md": "no such user's home",
    }
    for path, why in cases.items():
        r = api.post("/api/documents", json={"path": path})
        assert r.status_code == 400, (path, r.text)
        assert why in r.json()["error"], (path, r.json())
    assert api.get("/api/documents").json()["total"] == 0


def test_bad_files_fail_readably(docs_app: App, files: Path) -> None:
    _rt, api = docs_app()
    (files / "blob.bin").write_bytes(b"\x00\x01\x02binary\x00")
    (files / "latin.txt").write_bytes("caf\xe9 cr\xe8me".encode("latin-1"))
    (files / "big.txt").write_text("y" * 200_001)
    assert ingest(api, path=str(files / "blob.bin"))["error"] == f"{files / 'blob.bin'} is not text (it has NUL bytes)"
    assert ingest(api, path=str(files / "latin.txt"))["error"] == (
        f"{files / 'latin.txt'} is not valid utf-8 text (byte 3 cannot be decoded)"
    )
    assert "over the limit of 200000 bytes" in ingest(api, path=str(files / "big.txt"))["error"]


def test_a_file_that_vanished_fails_the_document(docs_app: App, files: Path) -> None:
    rt, api = docs_app()
    note = files / "note.md"
    note.write_text("# Note\n\nThe build cache lives on the NAS.\n")
    doc = ingest(api, path=str(note))
    assert doc["status"] == "done" and doc["title"] == "Note"
    assert doc["source_url"] == str(note.resolve())
    note.unlink()
    again = api.post("/api/documents", json={"path": str(note)})  # refused up front: it is gone
    assert again.status_code == 400 and "no such file" in again.json()["error"]
    # Gone between the request and the worker: the document fails, its chunks stay as they were.
    note.write_text("# Note\n\nThe build cache moved to S3.\n")
    rt.document_worker.stop()
    queued = api.post("/api/documents", json={"path": str(note)}).json()
    note.unlink()
    rt.document_worker.start()
    failed = ingest_wait(api, queued["document"]["id"])
    assert failed["status"] == "failed" and failed["error"] == f"no such file: {note.resolve()}"
    parts = api.get(f"/api/documents/{doc['id']}/chunks").json()["chunks"]
    assert len(parts) == 1 and "NAS" in parts[0]["content"]


def ingest_wait(api: TestClient, doc_id: str) -> dict[str, object]:
    from tests.documents.conftest import wait_final

    return wait_final(api, doc_id)


def test_paths_only_from_local_admins(make_workspace: Callable[..., Workspace], files: Path) -> None:
    note = files / "n.md"
    note.write_text("# N\n\ntext\n")
    ws = configure(
        make_workspace("none", documents={"allowed_paths": [str(files)], "poll_interval_ms": 50}),
        "hybrid",
        allowedHosts=["testserver"],
    )
    rt = start_runtime(ws)
    try:
        app = create_app(rt, manage_runtime=False)
        agent = bearer(token_for(ws, "agent"))
        admin = bearer(token_for(ws, "admin"))
        with TestClient(app, client=("198.51.100.7", 4000)) as remote:
            r = remote.post("/api/documents", json={"path": str(note)}, headers=admin)
            assert r.status_code == 403 and "local callers only" in r.json()["error"]
            assert (
                remote.post("/api/documents", json={"content": "x y z", "title": "T"}, headers=agent).status_code == 202
            )
        with TestClient(app) as local:
            r = local.post("/api/documents", json={"path": str(note)}, headers=agent)
            assert r.status_code == 403  # a loopback caller with an agent token is not an admin
            relayed = {**admin, "X-Forwarded-For": "203.0.113.9"}
            r = local.post("/api/documents", json={"path": str(note)}, headers=relayed)
            assert r.status_code == 403 and "local callers only" in r.json()["error"]  # via a proxy: not local
            assert local.post("/api/documents", json={"path": str(note)}).status_code == 202  # hybrid, no token
            assert local.post("/api/documents", json={"path": str(note)}, headers=admin).status_code == 202
    finally:
        rt.stop()


def test_request_shape_errors_are_4xx(docs_app: App) -> None:
    _rt, api = docs_app()
    for body in (
        {},
        {"url": "http://a.example", "content": "x", "title": "t"},
        {"content": "no title"},
        {"url": "http://a.example", "content_type": "html"},
        {"url": "http://a.example", "colour": "red"},
        {"content": "   ", "title": "blank"},
    ):
        r = api.post("/api/documents", json=body)
        assert r.status_code == 422, (body, r.text)
    assert api.delete("/api/documents/unknown").status_code == 404
    assert api.get("/api/documents/unknown/chunks").status_code == 404


def test_symlinked_allowed_folder_is_resolved(docs_app: App, files: Path, tmp_path: Path) -> None:
    """A path through a symlink that stays inside the allowed folder is fine: what counts is
    where it resolves."""
    _rt, api = docs_app()
    real = files / "real.md"
    real.write_text("# Real\n\nkept inside\n")
    (files / "alias.md").symlink_to(real)
    doc = ingest(api, path=str(files / "alias.md"))
    assert doc["status"] == "done" and doc["source_url"] == str(real.resolve())
