"""An in-memory vector index over numpy: cosine top-k, no SQLite extension needed.

Brute force over a contiguous float32 matrix is ~8 ms for 100k x 384 here, faster than
sqlite-vec, and it always works. It is bound by memory bandwidth (the whole matrix is read
per query), which this machine shares with its neighbours: the same product measured 6 to
22 ms. So from :data:`COARSE_MIN_ROWS` rows on, a search first scores every row on a
*coarse* copy - the vectors projected on their top principal directions, a third of the
bytes - and re-scores the best :data:`COARSE_MIN_CANDIDATES` (or ``8 k``) exactly. Sentence
embeddings are strongly anisotropic (128 of MiniLM's 384 directions hold 95% of the energy
at 100,000 memories), so the exact top 50 survives: measured on the latency benchmark's
100,000 vectors, 200 questions, every one of the exact top 10 and top 50 was returned.
The projection is used only when it captures :data:`COARSE_ENERGY` of the energy in at most
a third of the dimensions; otherwise every search stays exact.

Rows are keyed by memory id; each row also carries a project code so the common "this
project only" filter is applied before the top-k, not after (a post-filter would starve
small projects), and its memory's creation time, so a recall whose query names a time can
take the best rows of that period the same way (signet.search.recall).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
import numpy.typing as npt

from signet.embedding.base import Vectors
from signet.search.inverted import InvertedLists
from signet.search.projects import NO_PROJECT, ProjectCodes

COARSE_MIN_ROWS = 20_000
"""Below this many rows every search is exact (and cheap: under 2 ms)."""
COARSE_ENERGY = 0.95
"""Share of the vectors' energy the coarse projection must keep to be used."""
COARSE_MIN_CANDIDATES = 400
"""At least this many coarse winners are re-scored exactly (and at least 8 per result asked)."""
LISTS_MIN_ROWS = 100_000
"""From this many rows on the rows are also held in inverted lists (signet.search.inverted), no
coarse projection is kept, and a search reads only the cells near its query. At 102,884 real
conversation turns they answer in 2.8 ms (p50) what reading every row answers in 13.4, with
99.3 % of its exact top 10 (docs/benchmarks.md, "The vector leg from 100,000 rows")."""
LISTS_EXACT_BELOW = 20_000
"""With inverted lists, a filter keeping at most this many rows is searched exactly over those
rows (a gather of their vectors costs less than probing most cells)."""


def limit_blas_threads(threads: int) -> None:
    """Cap the threads numpy's BLAS uses for the vector leg's product (process-wide; 0: leave it).

    A recall runs three CPU-heavy steps at once: the keyword leg on a pool thread, the query
    embedding, then this product. With OpenBLAS's default of one thread per core, on two
    cores its threads fight the keyword leg for the CPU and the whole recall waits for the
    slowest: at 100,000 memories over HTTP recall p95 was 61-68 ms with the default and 44-52
    ms with one thread, p50 39-44 against 31-37 (docs/benchmarks.md, latency). Only the BLAS
    libraries already loaded are affected (numpy's, imported with this module); torch's own
    pool is ``embedding.threads``.
    """
    if threads <= 0:
        return
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=threads, user_api="blas")


def epoch(created_at: str | None) -> float:
    """A stored ISO-8601 ``created_at`` as POSIX seconds; NaN when absent or unreadable
    (such a row is simply never inside a time window)."""
    if not created_at:
        return math.nan
    try:
        when = datetime.fromisoformat(created_at)
    except ValueError:
        return math.nan
    return (when if when.tzinfo is not None else when.replace(tzinfo=UTC)).timestamp()


@dataclass(frozen=True)
class VectorHit:
    memory_id: str
    score: float


class VectorIndex:
    def __init__(self, dimensions: int | None = None) -> None:
        self.dimensions = dimensions
        self._lock = threading.RLock()
        self._matrix: Vectors = np.zeros((0, dimensions or 0), dtype=np.float32)
        self._projects: npt.NDArray[np.int32] = np.zeros(0, dtype=np.int32)
        self._live: npt.NDArray[np.bool_] = np.zeros(0, dtype=bool)
        self._created: npt.NDArray[np.float64] = np.zeros(0, dtype=np.float64)
        self._ids: list[str] = []
        self._row_of: dict[str, int] = {}
        self._project_codes = ProjectCodes()
        self._size = 0
        # The last query's product with the matrix, reused while the matrix is unchanged: one
        # recall searches more than once with the same query (a pool widened past rejecting
        # filters, the pool of a period the query names) and the product is the costly part.
        self._version = 0
        self._last_product: tuple[bytes, int, Vectors] | None = None
        # The coarse stage (module docstring): a projection basis (dims x d), the projected
        # rows, and the row count it was fitted at (it is refitted when the index doubles).
        self._basis: Vectors | None = None
        self._coarse: Vectors = np.zeros((0, 0), dtype=np.float32)
        self._fitted_at = 0
        self.coarse_min_rows = COARSE_MIN_ROWS
        # From lists_min_rows on, inverted lists take the place of the coarse stage.
        self._lists: InvertedLists | None = None
        self.lists_min_rows = LISTS_MIN_ROWS

    def __len__(self) -> int:
        with self._lock:
            return int(self._live[: self._size].sum())

    def __contains__(self, memory_id: object) -> bool:
        with self._lock:
            row = self._row_of.get(str(memory_id))
            return row is not None and bool(self._live[row])

    def _grow(self, need: int) -> None:
        cap = self._matrix.shape[0]
        if need <= cap:
            return
        new_cap = max(need, cap * 2, 1024)
        dims = self.dimensions or 0
        m = np.zeros((new_cap, dims), dtype=np.float32)
        m[: self._size] = self._matrix[: self._size]
        p = np.full(new_cap, NO_PROJECT, dtype=np.int32)
        p[: self._size] = self._projects[: self._size]
        live = np.zeros(new_cap, dtype=bool)
        live[: self._size] = self._live[: self._size]
        created = np.full(new_cap, math.nan, dtype=np.float64)
        created[: self._size] = self._created[: self._size]
        self._matrix, self._projects, self._live, self._created = m, p, live, created
        if self._basis is not None:
            coarse = np.zeros((new_cap, self._basis.shape[1]), dtype=np.float32)
            coarse[: self._size] = self._coarse[: self._size]
            self._coarse = coarse

    def _refit(self) -> None:
        """Fit (or refit) the coarse projection on the live rows; drop it when it would not pay.

        The basis is the top eigenvectors of the rows' (uncentred) Gram matrix, the directions
        that keep inner products best; d is the fewest multiple of 32 holding
        :data:`COARSE_ENERGY` of the energy. O(rows x dims^2): about 1 s at 100,000 rows,
        paid when the index passes :attr:`coarse_min_rows` and each time it doubles.
        """
        n = self._size
        self._fitted_at = n
        self._basis, self._coarse, self._lists = None, np.zeros((0, 0), dtype=np.float32), None
        live = np.flatnonzero(self._live[:n])
        if live.size and live.size >= self.lists_min_rows:
            self._lists = InvertedLists(self._matrix, live)
            return
        rows = self._matrix[live]
        dims = int(self._matrix.shape[1])
        if rows.shape[0] == 0:
            return
        eigval, eigvec = np.linalg.eigh((rows.T @ rows).astype(np.float64))
        eigval, eigvec = eigval[::-1], eigvec[:, ::-1]
        total = float(eigval.sum())
        if total <= 0:
            return
        share = np.cumsum(eigval) / total
        d = int(np.searchsorted(share, COARSE_ENERGY) + 1)
        d = min(dims, -(-d // 32) * 32)
        if d > dims // 3:
            return  # too isotropic to shrink by 3x: exact search only
        basis: Vectors = np.ascontiguousarray(eigvec[:, :d], dtype=np.float32)
        self._basis = basis
        coarse = np.zeros((self._matrix.shape[0], d), dtype=np.float32)
        coarse[:n] = self._matrix[:n] @ basis
        self._coarse = coarse

    def upsert_many(
        self, ids: list[str], vectors: Vectors, projects: Sequence[str | None], created: Sequence[str | None]
    ) -> None:
        """Index (or re-index) memories: their vectors, projects and stored ``created_at``."""
        if len(ids) == 0:
            return
        with self._lock:
            if self.dimensions is None or (self._size == 0 and self.dimensions != vectors.shape[1]):
                self.dimensions = int(vectors.shape[1])
                self._matrix = np.zeros((0, self.dimensions), dtype=np.float32)
                self._projects = np.zeros(0, dtype=np.int32)
                self._live = np.zeros(0, dtype=bool)
                self._created = np.zeros(0, dtype=np.float64)
                self._basis, self._coarse, self._fitted_at = None, np.zeros((0, 0), dtype=np.float32), 0
            if vectors.shape[1] != self.dimensions:
                raise ValueError(f"vector has {vectors.shape[1]} dimensions, index has {self.dimensions}")
            written: list[int] = []
            changed: list[int] = []  # rows that had a vector before (inverted lists replace them)
            for mid, vec, proj, when in zip(ids, vectors, projects, created, strict=True):
                row = self._row_of.get(mid)
                if row is None:
                    self._grow(self._size + 1)
                    row = self._size
                    self._size += 1
                    self._ids.append(mid)
                    self._row_of[mid] = row
                else:
                    changed.append(row)
                self._matrix[row] = vec
                self._version += 1
                self._projects[row] = self._project_codes.code(proj)
                self._created[row] = epoch(when)
                self._live[row] = True
                written.append(row)
            if self._size >= min(self.coarse_min_rows, self.lists_min_rows) and self._size >= 2 * self._fitted_at:
                self._refit()
            elif self._lists is not None:
                old = np.unique(np.asarray(changed, dtype=np.int64))
                self._lists.replace(self._matrix, old)
                self._lists.add(self._matrix, np.setdiff1d(np.asarray(written, dtype=np.int64), old))
            elif self._basis is not None:
                idx = np.asarray(written, dtype=np.int64)
                self._coarse[idx] = self._matrix[idx] @ self._basis

    def upsert(self, memory_id: str, vector: Vectors, project: str | None, created_at: str | None) -> None:
        self.upsert_many([memory_id], vector.reshape(1, -1), [project], [created_at])

    def remove(self, memory_id: str) -> None:
        with self._lock:
            row = self._row_of.get(memory_id)
            if row is not None:
                self._live[row] = False

    def memory_ids(self) -> list[str]:
        """The ids of the live rows (the PostgreSQL change feed drops what the store no longer has)."""
        with self._lock:
            return [mid for mid, row in self._row_of.items() if self._live[row]]

    def set_project(self, memory_id: str, project: str | None) -> None:
        with self._lock:
            row = self._row_of.get(memory_id)
            if row is not None:
                self._projects[row] = self._project_codes.code(project)

    def vector_of(self, memory_id: str) -> Vectors | None:
        with self._lock:
            row = self._row_of.get(memory_id)
            if row is None or not self._live[row]:
                return None
            vec: Vectors = self._matrix[row].copy()
            return vec

    def vectors_for(self, memory_ids: list[str]) -> dict[str, Vectors]:
        """The live vectors of these memories (copies; those without a vector are left out)."""
        with self._lock:
            present = [(mid, r) for mid in memory_ids if (r := self._row_of.get(mid)) is not None and self._live[r]]
            if not present:
                return {}
            block = self._matrix[np.fromiter((r for _, r in present), dtype=np.int64)]
            return {mid: block[i] for i, (mid, _) in enumerate(present)}

    def scores_for(self, query: Vectors, memory_ids: list[str]) -> dict[str, float]:
        """Cosine of the query against specific memories (those without a vector are left out)."""
        with self._lock:
            rows = [(mid, self._row_of.get(mid)) for mid in memory_ids]
            present = [(mid, r) for mid, r in rows if r is not None and self._live[r]]
            if not present:
                return {}
            idx = np.fromiter((r for _, r in present), dtype=np.int64)
            sims = self._matrix[idx] @ query
            return {mid: float(s) for (mid, _), s in zip(present, sims, strict=True)}

    @property
    def inverted_lists(self) -> int | None:
        """Cells of the inverted lists when searches use them, else None."""
        with self._lock:
            return None if self._lists is None else self._lists.cells

    @property
    def coarse_dims(self) -> int | None:
        """Dimensions of the coarse stage when searches use it, else None (every search exact)."""
        with self._lock:
            return None if self._basis is None else int(self._basis.shape[1])

    def _product(self, query: Vectors, n: int) -> tuple[Vectors, bool]:
        """(scores of rows ``:n``, coarse?): the coarse projection's when in use, else exact.

        Computed once per query and matrix state (call with the lock)."""
        key = query.tobytes()
        basis = self._basis  # fitted only once the index reached coarse_min_rows
        last = self._last_product
        if last is not None and last[0] == key and last[1] == self._version and last[2].shape[0] == n:
            return last[2], basis is not None
        sims: Vectors
        if basis is not None:
            projected: Vectors = (query @ basis).astype(np.float32)
            sims = self._coarse[:n] @ projected
        else:
            sims = self._matrix[:n] @ query
        self._last_product = (key, self._version, sims)
        return sims, basis is not None

    def search(
        self,
        query: Vectors,
        k: int,
        *,
        project: str | None = None,
        exclude: set[str] | None = None,
        created_between: tuple[float, float] | None = None,
    ) -> list[VectorHit]:
        """Top-k live rows by cosine similarity (vectors are unit length).

        ``created_between`` (POSIX seconds, ``[start, end)``) keeps only memories created then.
        """
        with self._lock:
            n = self._size
            if n == 0 or k <= 0 or self.dimensions is None or query.shape[-1] != self.dimensions:
                return []
            lists = self._lists
            # Without inverted lists: the product with every row (coarse or exact), before the
            # filters, as it is cached across one recall's searches.
            product = self._product(query, n) if lists is None else None
            mask = self._live[:n].copy()
            if project is not None:
                code = self._project_codes.known(project)
                if code is None:
                    return []
                mask &= self._projects[:n] == code
            if created_between is not None:
                start, end = created_between
                created = self._created[:n]
                mask &= (created >= start) & (created < end)  # NaN compares False: never inside
            if exclude:
                for mid in exclude:
                    r = self._row_of.get(mid)
                    if r is not None:
                        mask[r] = False
            candidates = np.flatnonzero(mask)
            if candidates.size == 0:
                return []
            keep = max(COARSE_MIN_CANDIDATES, 8 * k)
            if product is None:
                # Inverted lists: the rows of the cells near the query that the filters allow,
                # re-scored exactly; a filter keeping few rows is searched exactly over them.
                if lists is not None and candidates.size > max(keep, LISTS_EXACT_BELOW):
                    candidates = lists.search(query, keep, mask, candidates.size / max(len(lists), 1))
                    if candidates.size == 0:
                        return []
                sub = self._matrix[candidates] @ query
            elif product[1]:
                # The best coarse rows, re-scored exactly: the ranking and scores are exact
                # cosines; only a row outside the coarse winners could be missed.
                if candidates.size > keep:
                    candidates = candidates[np.argpartition(-product[0][candidates], keep - 1)[:keep]]
                sub = self._matrix[candidates] @ query
            else:
                sub = product[0][candidates]
            take = min(k, sub.size)
            top = np.argpartition(-sub, take - 1)[:take]
            top = top[np.argsort(-sub[top], kind="stable")]
            return [VectorHit(self._ids[int(candidates[i])], float(sub[i])) for i in top]
