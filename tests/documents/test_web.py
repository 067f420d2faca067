"""Documents fetched from a real HTTP server on 127.0.0.1: each ends done with the right
chunks, or failed with an error a person can act on, and a failure never holds up the queue."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from fastapi.testclient import TestClient

from signet.runtime import Runtime
from tests.documents.conftest import add, ingest, job_of, wait_final
from tests.documents.site import Site

App = Callable[..., tuple[Runtime, TestClient]]


def chunks(api: TestClient, doc_id: str) -> list[dict[str, object]]:
    data = api.get(f"/api/documents/{doc_id}/chunks").json()
    out: list[dict[str, object]] = data["chunks"]
    return out


def test_html_page_becomes_heading_chunks(docs_app: App, site: Site) -> None:
    rt, api = docs_app()
    doc = ingest(api, url=site.url("/guide.html"))
    assert doc["status"] == "done", doc
    assert doc["title"] == "Deploy Guide"
    assert doc["content_type"] == "text/html"
    assert doc["chunk_count"] == 3 and doc["memory_count"] == 3
    parts = chunks(api, doc["id"])
    assert [c["heading_path"] for c in parts] == [["Deploying"], ["Deploying", "Rollback"], ["Deploying", "Secrets"]]
    rollback = str(parts[1]["content"])
    assert rollback.startswith("Deploy Guide \u203a Deploying \u203a Rollback: ")
    assert "helm rollback" in rollback
    text = " ".join(str(c["content"]) for c in parts)
    for boilerplate in ("Pricing", "Copyright", "trackEverything", "color: red"):
        assert boilerplate not in text
    mem = api.get(f"/api/memory/{parts[1]['memory_id']}").json()
    assert mem["type"] == "document_chunk" and mem["importance"] == 0.3
    assert mem["source_type"] == "document" and mem["source_id"] == doc["id"]
    # Document chunks are stored as written: no LLM extraction job is queued for them.
    extract_jobs = rt.db.read(lambda c: c.execute("SELECT COUNT(*) FROM memory_jobs WHERE job_type = 'extract'"))
    assert extract_jobs.fetchone()[0] == 0


def test_pdf_text_and_title(docs_app: App, site: Site) -> None:
    _rt, api = docs_app()
    doc = ingest(api, url=site.url("/report.pdf"))
    assert doc["status"] == "done", doc
    assert doc["title"] == "Payments Q3 Report" and doc["content_type"] == "application/pdf"
    (only,) = chunks(api, doc["id"])
    assert "Revenue grew by twelve percent" in str(only["content"])


def test_plain_text_is_cut_into_overlapping_windows(docs_app: App, site: Site) -> None:
    _rt, api = docs_app()
    doc = ingest(api, url=site.url("/plain.txt"))
    assert doc["status"] == "done", doc
    parts = chunks(api, doc["id"])
    assert len(parts) == doc["chunk_count"] > 3  # 1,470 characters in windows of 400
    assert all(c["heading_path"] == [] for c in parts)
    assert all("lentil soup" in str(c["content"]) for c in parts)


def test_redirect_is_followed(docs_app: App, site: Site) -> None:
    _rt, api = docs_app()
    doc = ingest(api, url=site.url("/redirect"))
    assert doc["status"] == "done", doc
    assert doc["title"] == "Deploy Guide" and doc["chunk_count"] == 3
    assert site.hits["/redirect"] == 1 and site.hits["/guide.html"] == 1


def test_redirect_loop_fails_after_the_limit(docs_app: App, site: Site) -> None:
    rt, api = docs_app()
    doc = ingest(api, url=site.url("/loop"))
    assert doc["status"] == "failed"
    assert doc["error"].startswith("more than 3 redirects")
    assert site.hits["/loop"] == 4
    assert job_of(rt, doc["id"])["status"] == "dead"


def test_404_fails_at_once(docs_app: App, site: Site) -> None:
    rt, api = docs_app()
    doc = ingest(api, url=site.url("/gone"))
    assert doc["status"] == "failed"
    assert "answered HTTP 404 Not Found" in doc["error"]
    job = job_of(rt, doc["id"])
    assert (job["status"], job["attempts"]) == ("dead", 1)  # a 404 is not retried
    assert chunks(api, doc["id"]) == []


def test_server_error_is_retried_then_dead(docs_app: App, site: Site) -> None:
    rt, api = docs_app()
    doc = ingest(api, url=site.url("/broken"))
    assert doc["status"] == "failed" and "HTTP 500" in doc["error"]
    job = job_of(rt, doc["id"])
    assert (job["status"], job["attempts"]) == ("dead", 2)
    assert site.hits["/broken"] == 2


def test_slow_page_times_out(docs_app: App, site: Site) -> None:
    rt, api = docs_app()
    doc = ingest(api, url=site.url("/slow"))
    assert doc["status"] == "failed"
    assert doc["error"] == f"fetching {site.url('/slow')} timed out after 1s"
    assert job_of(rt, doc["id"])["attempts"] == 2


def test_oversize_body_is_refused(docs_app: App, site: Site) -> None:
    _rt, api = docs_app()
    doc = ingest(api, url=site.url("/huge"))
    assert doc["status"] == "failed"
    assert doc["error"] == f"{site.url('/huge')} is over the limit of 200000 bytes (documents.max_bytes)"
    assert doc["chunk_count"] == 0


def test_binary_content_is_refused(docs_app: App, site: Site) -> None:
    _rt, api = docs_app()
    doc = ingest(api, url=site.url("/image.png"))
    assert doc["status"] == "failed"
    assert doc["error"].startswith("unsupported content type 'image/png'")


def test_a_failing_document_does_not_hold_up_the_queue(docs_app: App, site: Site) -> None:
    rt, api = docs_app()
    slow = add(api, url=site.url("/slow"))["document"]["id"]
    good = add(api, url=site.url("/guide.html"))["document"]["id"]
    assert wait_final(api, good)["status"] == "done"
    assert wait_final(api, slow)["status"] == "failed"
    result = json.loads(job_of(rt, good)["result"])
    assert result["chunks"] == 3 and result["added"] == 3


def test_status_filter_and_listing(docs_app: App, site: Site) -> None:
    _rt, api = docs_app()
    ok = ingest(api, url=site.url("/guide.html"))
    bad = ingest(api, url=site.url("/gone"))
    assert [d["id"] for d in api.get("/api/documents", params={"status": "failed"}).json()["items"]] == [bad["id"]]
    listed = api.get("/api/documents").json()
    assert listed["total"] == 2 and {d["id"] for d in listed["items"]} == {ok["id"], bad["id"]}
    assert api.get(f"/api/documents/{ok['id'][:8]}").json()["id"] == ok["id"]  # a unique prefix will do
    missing = api.get("/api/documents/no-such-document")
    assert missing.status_code == 404 and missing.json()["code"] == "not_found"


def test_a_document_whose_job_died_mid_way_is_failed(docs_app: App, site: Site) -> None:
    """A worker that crashed on the job's last attempt leaves the document mid-way; the reaper
    makes the job dead, and the worker's reconcile marks the document failed with that reason."""
    rt, api = docs_app()
    rt.document_worker.stop()
    doc_id = add(api, url=site.url("/guide.html"))["document"]["id"]

    def crash(conn: Any) -> None:  # what a crash on the last attempt followed by the reaper leaves
        conn.execute("UPDATE documents SET status = 'embedding' WHERE id = ?", (doc_id,))
        conn.execute(
            "UPDATE memory_jobs SET status = 'dead', attempts = max_attempts, error = 'lease expired on the last attempt'"
            " WHERE document_id = ?",
            (doc_id,),
        )

    rt.db.write(crash)
    assert rt.document_worker.reconcile() == 1
    doc = api.get(f"/api/documents/{doc_id}").json()
    assert (doc["status"], doc["error"]) == ("failed", "lease expired on the last attempt")
    assert rt.document_worker.reconcile() == 0
    rt.document_worker.start()
    done = ingest(api, url=site.url("/guide.html"))  # adding it again queues a fresh job
    assert done["id"] == doc_id and done["status"] == "done" and done["error"] is None
