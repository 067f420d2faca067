"""The document worker: lease a ``document_ingest`` job, ingest its document, complete it.

Each stage is its own short transaction, so the document's status is always visible and no
write lock is held across a fetch, a PDF parse or an embedding call:

1. ``extracting``: fetch the URL (signet.documents.fetch) or read the file, and extract text;
2. ``chunking``: split it (signet.documents.chunking);
3. ``embedding``: embed the chunks whose text is new (outside any transaction);
4. ``indexing``: one transaction writes the chunk memories, their links, the document row
   (``done``, title, hash, counts) and the job's completion together (signet.documents.index).

So a document is never half-written: until step 4 commits, its previous chunks stand. A
failure marks the document ``failed`` with a readable error and the job follows the queue's
rules: a permanent failure (a 404, a refused address, a binary file) is dead at once, a
transient one (a timeout, a 5xx) goes back to ``pending`` while attempts remain. One bad
document never holds up the others: its job ends, the next is leased. A crash leaves the job
leased; the pipeline's reaper (or the next start) releases it and the document is ingested
again from the start.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import threading
import time
from typing import Any

from signet.config import Settings
from signet.documents import index
from signet.documents.chunking import chunk_document
from signet.documents.errors import DocumentFailed
from signet.documents.extract import MEDIA, Extracted, extract
from signet.documents.fetch import fetch
from signet.documents.paths import read_file
from signet.documents.service import JOB_TYPE
from signet.documents.source import source_for
from signet.embedding.base import EmbeddingError
from signet.errors import StorageError
from signet.memory.service import MemoryService
from signet.pipeline import queue
from signet.store.records import now_iso
from signet.store.sqlite import Connection

log = logging.getLogger(__name__)


RECONCILE_S = 10.0
"""How often an idle worker looks for documents a dead job left unfinished."""
STUCK_SQL = (
    "SELECT {what} FROM documents d WHERE d.status NOT IN ('done', 'failed') AND NOT EXISTS"
    " (SELECT 1 FROM memory_jobs j WHERE j.document_id = d.id AND j.status IN ('pending', 'leased'))"
)
LAST_ERROR_SQL = (
    "SELECT j.error FROM memory_jobs j WHERE j.document_id = d.id ORDER BY j.updated_at DESC, j.rowid DESC LIMIT 1"
)


class LeaseLost(Exception):
    """This run's lease expired and another run holds the job now: this run writes nothing."""


class DocumentWorker:
    def __init__(self, service: MemoryService, settings: Settings) -> None:
        self.service = service
        self.db = service.db
        self.settings = settings
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._threads: list[threading.Thread] = []
        self._next_reconcile = 0.0

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        self._stop.clear()
        for i in range(self.settings.documents.workers):
            t = threading.Thread(target=self._loop, name=f"signet-documents-{i}", daemon=True)
            self._threads.append(t)
            t.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        for t in self._threads:
            t.join(timeout=5)  # one inside a fetch is abandoned; its job is released at the next start
        self._threads.clear()

    def notify(self) -> None:
        self._wake.set()

    def _loop(self) -> None:
        poll = self.settings.documents.poll_interval_ms / 1000
        while not self._stop.is_set():
            try:
                job = self.db.write(functools.partial(queue.lease, job_types=(JOB_TYPE,), owner=self.db.lease_owner))
            except RuntimeError:  # the database closed under us at shutdown
                return
            except StorageError as exc:  # a full disk, a PostgreSQL server restarting: wait, then again
                log.warning("document worker: %s", exc.message)
                self._stop.wait(poll)
                continue
            if job is None:
                if time.monotonic() >= self._next_reconcile:
                    self._next_reconcile = time.monotonic() + RECONCILE_S
                    try:
                        self.reconcile()
                    except RuntimeError:
                        return
                    except StorageError as exc:
                        log.warning("document worker: %s", exc.message)
                self._wake.clear()
                self._wake.wait(poll)
                continue
            self.run(job)

    def reconcile(self) -> int:
        """Fail documents left mid-way with no job to finish them (the reaper declared their
        job dead after a crash on its last attempt): a document never stays ``extracting`` for
        good. A read first, so an idle daemon does not write."""
        stuck = self.db.read(lambda c: c.execute(STUCK_SQL.format(what="d.id")).fetchall())
        if not stuck:
            return 0

        def write(conn: Connection) -> int:
            now = now_iso()
            rows = conn.execute(STUCK_SQL.format(what="d.id, (" + LAST_ERROR_SQL + ")")).fetchall()
            for doc_id, error in rows:
                conn.execute(
                    "UPDATE documents SET status = 'failed', error = ?, updated_at = ? WHERE id = ?",
                    (error or "its ingest job ended without finishing it", now, doc_id),
                )
            return len(rows)

        n = self.db.write(write)
        if n:
            log.warning("documents: %d documents left unfinished by a dead job marked failed", n)
        return int(n)

    # -- one job ---------------------------------------------------------------------------
    def run(self, job: queue.Job) -> dict[str, Any] | None:
        """Ingest the job's document and record the outcome; never raises for the document's sake."""
        try:
            result = self.process(job)
        except LeaseLost as exc:
            log.warning("documents: %s", exc)
            return None
        except DocumentFailed as exc:
            self._failed(job, exc.message, permanent=exc.permanent)
            return None
        except EmbeddingError as exc:
            self._failed(job, f"embedding failed: {exc}", permanent=False)
            return None
        except Exception as exc:  # a bug on one document must not stop the worker: the job records it
            log.exception("documents: job %s crashed", job.id)
            self._failed(job, f"{type(exc).__name__}: {exc}", permanent=False)
            return None
        return result

    def process(self, job: queue.Job) -> dict[str, Any]:
        doc_id = job.payload.get("document_id")
        if not isinstance(doc_id, str) or not doc_id:
            raise DocumentFailed("document_ingest job names no document (payload.document_id)")
        doc = self.db.read(lambda c: c.execute("SELECT * FROM documents WHERE id = ?", (doc_id,)).fetchone())
        if doc is None:
            return self.db.write(lambda c: self._complete(c, job, {"skipped": "the document was deleted"}))
        self._status(job, doc_id, "extracting")
        got = self._extract(doc)
        title = doc["title"] if _meta(doc).get("title_given") else got.title
        text_hash = hashlib.sha256(got.text.encode("utf-8")).hexdigest()
        self._status(job, doc_id, "chunking")
        p = self.settings.memory.pipeline
        pieces = chunk_document(
            got.text, markdown=got.markdown, size=p.document_chunk_size, overlap=p.document_chunk_overlap
        )
        chunks = index.prepare(pieces, title)
        if not chunks:
            raise DocumentFailed("the document has no text to chunk")
        self._status(job, doc_id, "embedding")
        vectors = self._embed(job, doc_id, chunks)
        self._status(job, doc_id, "indexing")

        def write(conn: Connection) -> dict[str, Any]:
            current = conn.execute("SELECT * FROM documents WHERE id = ?", (doc_id,)).fetchone()
            if current is None:
                return self._complete(conn, job, {"skipped": "the document was deleted"})
            counts = index.replace_chunks(conn, self.service, current, chunks, vectors)
            memories = conn.execute(
                "SELECT COUNT(*) FROM document_memories WHERE document_id = ?", (doc_id,)
            ).fetchone()[0]
            now = now_iso()
            conn.execute(
                "UPDATE documents SET status = 'done', error = NULL, title = ?, content_type = ?, content_hash = ?,"
                " chunk_count = ?, memory_count = ?, completed_at = ?, updated_at = ? WHERE id = ?",
                (title, MEDIA[got.kind], text_hash, len(chunks), int(memories), now, now, doc_id),
            )
            result = {"document_id": doc_id, "chunks": len(chunks), "embedded": len(vectors), **counts}
            return self._complete(conn, job, result)

        result = self.db.write(write)
        if result.get("added"):
            self.service.embeddings.notify()  # chunks written without a vector are embedded in the background
        return result

    def _extract(self, doc: Any) -> Extracted:
        cfg = self.settings.documents
        if doc["connector_id"] is not None:
            cid = doc["connector_id"]
            row = self.db.read(
                lambda c: c.execute("SELECT provider, config_json FROM connectors WHERE id = ?", (cid,)).fetchone()
            )
            if row is None:
                raise DocumentFailed(f"its connector {cid} was deleted")
            source = source_for(row["provider"], json.loads(row["config_json"]), cfg)
            return extract(source.read(doc["source_url"]), media_type="", charset=None, name=doc["source_url"])
        if doc["source_type"] == "url":
            page = fetch(doc["source_url"], cfg)
            return extract(page.body, media_type=page.content_type, charset=page.charset, name=page.url)
        if doc["source_type"] == "file":
            real, body = read_file(doc["source_url"], cfg.allowed_paths, cfg.max_bytes)
            return extract(body, media_type="", charset=None, name=str(real))
        raw = doc["raw_content"] or ""
        kind = _meta(doc).get("kind") or ("markdown" if _has_headings(raw) else "text")
        return extract(raw.encode("utf-8"), media_type="", charset="utf-8", name=doc["title"] or "", kind=kind)

    def _embed(self, job: queue.Job, doc_id: str, chunks: list[index.PreparedChunk]) -> dict[str, Any]:
        """Vectors for the chunks whose text has none yet (unchanged chunks keep theirs)."""
        emb = self.service.embeddings
        if not emb.ready:
            return {}

        def todo(conn: Connection) -> list[index.PreparedChunk]:
            have = set(index.linked(conn, doc_id))
            stored = {
                str(r[0])
                for r in conn.execute(
                    "SELECT content_hash FROM embeddings WHERE model = ? AND content_hash IN "
                    f"({','.join('?' for _ in chunks)})",
                    (emb.model_key, *(c.content_hash for c in chunks)),
                )
            }
            return [c for c in chunks if c.content_hash not in have and c.content_hash not in stored]

        missing = self.db.read(todo)
        vectors: dict[str, Any] = {}
        batch = max(self.settings.embedding.batch_size, 1)
        for start in range(0, len(missing), batch):
            part = missing[start : start + batch]
            # A long document takes a while to embed: keep the lease fresh so the reaper does
            # not hand the job to another worker mid-way.
            self.db.submit(functools.partial(queue.heartbeat, job_id=job.id))
            out = emb.embed_texts([c.content for c in part])
            if out is None:  # the embedder paused: the background embedder fills the rest in
                break
            for c, vec in zip(part, out, strict=True):
                vectors[c.content_hash] = vec
        return vectors

    # -- bookkeeping -----------------------------------------------------------------------
    def _status(self, job: queue.Job, doc_id: str, status: str) -> None:
        def write(conn: Connection) -> None:
            queue.heartbeat(conn, job.id)
            conn.execute("UPDATE documents SET status = ?, updated_at = ? WHERE id = ?", (status, now_iso(), doc_id))

        self.db.write(write)

    @staticmethod
    def _complete(conn: Connection, job: queue.Job, result: dict[str, Any]) -> dict[str, Any]:
        if not queue.complete(conn, job.id, result, attempt=job.attempts):
            raise LeaseLost(f"job {job.id} attempt {job.attempts}: the lease was taken over")
        return result

    def _failed(self, job: queue.Job, error: str, *, permanent: bool) -> None:
        doc_id = job.payload.get("document_id")

        def write(conn: Connection) -> str | None:
            status = queue.fail(conn, job.id, error, permanent=permanent, attempt=job.attempts)
            if status is None or not isinstance(doc_id, str):
                return status
            if status == "dead":
                doc_status, shown = "failed", error
            else:
                doc_status = "queued"
                shown = f"attempt {job.attempts} of {job.max_attempts} failed, retrying: {error}"
            conn.execute(
                "UPDATE documents SET status = ?, error = ?, updated_at = ? WHERE id = ?",
                (doc_status, shown[:2000], now_iso(), doc_id),
            )
            return status

        try:
            status = self.db.write(write)
        except RuntimeError:  # the database closed at shutdown: the job is released at the next start
            return
        log.warning(
            "documents: job %s failed (attempt %d/%d, now %s): %s",
            job.id,
            job.attempts,
            job.max_attempts,
            status,
            error,
        )


def _meta(doc: Any) -> dict[str, Any]:
    meta = json.loads(doc["metadata_json"] or "{}")
    return meta if isinstance(meta, dict) else {}


def _has_headings(text: str) -> bool:
    return any(line.startswith("#") and line.lstrip("#").startswith(" ") for line in text.splitlines())
