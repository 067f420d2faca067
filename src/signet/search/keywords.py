"""An in-memory copy of the keyword index's postings, scored with FTS5's own BM25.

Why: recall's keyword leg is an OR of a question's content words as stem prefixes over
``memories_ctx_fts``. FTS5 answers it by walking every posting of every term, twice (once to
count documents for the IDF, once to score), through its b-trees and its auxiliary-function
API: 10-20 ms at 100,000 memories on this machine, and 40 ms at p95 when the machine is
slow, which alone spent the recall's latency budget (docs/benchmarks.md). Here the same
postings sit in numpy arrays, and the same query is a few slices, one ``bincount`` and a
partial sort: about a millisecond.

It is a *mirror*, not a second index with its own rules: rows, tokens (signet.search.tokens)
and the BM25 formula are FTS5's (``bm25()`` of ``fts5_aux.c``: k1 1.2, b 0.75, IDF
``log((N - n + 0.5) / (n + 0.5))`` floored at 1e-6, column weights, the row's length over
all columns against the table's average), so the scores are FTS5's to the last bits and the
ranking is the same. signet.search.keyword_mirror keeps it in step with the table.

Layout: a *base* in CSR form (every term's rows and weighted term frequencies, built in
bulk) plus a *delta* of rows indexed since (per term, plain lists). A row that changes is
re-indexed into the delta under a new generation; its base postings are then *stale* and
skipped, as are delta postings of an older generation. When the delta grows large it is
merged into a new base, built outside the lock so searches do not wait for it.
"""

from __future__ import annotations

import math
import threading
from array import array
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import repeat
from typing import Any

import numpy as np
import numpy.typing as npt
from sortedcontainers import SortedList

from signet.search.projects import ProjectCodes
from signet.search.tokens import tokens
from signet.search.vectors import epoch

K1 = 1.2
B = 0.75
IDF_FLOOR = 1e-6
"""FTS5's BM25 constants (``fts5_aux.c``)."""

MERGE_MIN = 200_000
"""The delta is merged into the base once it holds this many postings (or a quarter of the base)."""


Ints = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Phrase:
    """One query term as FTS5 reads ``"token"`` or ``"token"*`` (a single-token phrase)."""

    token: str
    prefix: bool


@dataclass
class RowData:
    """One row of the mirrored table: its key, its two columns' token counts and its metadata."""

    seq: int
    content: Counter[str]
    context: Counter[str]
    project: str | None
    created_at: str | None


@dataclass
class WindowRow:
    """One row of the mirrored table by reference (:meth:`KeywordIndex.load_windows`): a live
    memory's context is the text of the memories in ``window``; a forgotten one's is ``frozen``."""

    seq: int
    frozen: str | None
    window: list[int]
    project: str | None
    created_at: str | None


_Delta = tuple["array[int]", "array[float]", "array[int]"]
"""A term's postings added since the last merge: rows, weighted tfs (float32, as in the base:
sums of ones and halves, exact) and the row generation each was written at. Typed arrays, 12
bytes a posting; Python lists of ints and floats took ~100 (RSS grew with every remember)."""


def _new_delta() -> _Delta:
    return array("i"), array("f"), array("i")


@dataclass
class _Base:
    offsets: npt.NDArray[np.int64]  # term id -> [offsets[t], offsets[t + 1]) in rows/tf
    rows: npt.NDArray[np.int32]
    tf: npt.NDArray[np.float32]  # weighted term frequency: content count * w0 + context count * w1


def _empty_base() -> _Base:
    return _Base(np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32))


class KeywordIndex:
    """Postings of a two-column FTS5 table, searchable with its BM25 (module docstring)."""

    def __init__(self, weights: tuple[float, float]) -> None:
        self.weights = weights
        self._lock = threading.RLock()
        self._term_id: dict[str, int] = {}
        # Every term, sorted, for prefix ranges. A sorted *list* cost a memmove of the whole
        # vocabulary per new term (hundreds of thousands on real turns: a tenth of the CPU of
        # following the writes); a SortedList inserts in O(log n).
        self._vocab: SortedList = SortedList()
        self._row_of: dict[int, int] = {}
        self._seq = np.zeros(0, dtype=np.int64)
        self._length = np.zeros(0, dtype=np.int64)
        self._project = np.zeros(0, dtype=np.int32)
        self._created = np.zeros(0, dtype=np.float64)
        self._live = np.zeros(0, dtype=bool)
        self._stale = np.zeros(0, dtype=bool)
        self._gen = np.zeros(0, dtype=np.int64)
        self._rows = 0
        self._count = 0  # live rows (FTS5's row count)
        self._total = 0  # tokens in all live rows (FTS5's total size)
        self._project_codes = ProjectCodes()
        self._base = _empty_base()
        self._delta: dict[int, _Delta] = {}
        self._delta_size = 0
        self._merging = False

    # -- size ------------------------------------------------------------------------------
    def __len__(self) -> int:
        with self._lock:
            return self._count

    def stats(self) -> tuple[int, int]:
        """(rows, tokens in all of them): what FTS5 keeps in its averages record."""
        with self._lock:
            return self._count, self._total

    @property
    def postings(self) -> int:
        """Postings held (base and delta, stale ones included): what the memory use follows."""
        with self._lock:
            return int(self._base.rows.size) + self._delta_size

    def nbytes(self) -> int:
        """Approximate bytes held by the arrays (rows, postings); Python objects not counted."""
        with self._lock:
            b = self._base
            per_row = (
                self._seq.itemsize
                + self._length.itemsize
                + self._project.itemsize
                + self._created.itemsize
                + 2
                + self._gen.itemsize
            )
            return int(
                b.rows.nbytes + b.tf.nbytes + b.offsets.nbytes + self._seq.size * per_row + self._delta_size * 12
            )

    # -- writes ----------------------------------------------------------------------------
    def _term(self, token: str) -> int:
        tid = self._term_id.get(token)
        if tid is None:
            tid = len(self._term_id)
            self._term_id[token] = tid
            self._vocab.add(token)
        return tid

    def _grow(self, need: int) -> None:
        cap = self._seq.size
        if need <= cap:
            return
        new = max(need, cap * 2, 1024)

        def grown(a: Any, fill: Any = 0) -> Any:
            out = np.full(new, fill, dtype=a.dtype)
            out[:cap] = a
            return out

        self._seq, self._length, self._project = grown(self._seq), grown(self._length), grown(self._project)
        self._created = grown(self._created, math.nan)
        self._live, self._stale, self._gen = grown(self._live, False), grown(self._stale, False), grown(self._gen)

    def _row(self, seq: int) -> int:
        row = self._row_of.get(seq)
        if row is None:
            row = self._new_row(seq)
            self._stale[row] = True  # no base postings: nothing of it in the base is valid
        return row

    def _drop(self, row: int) -> None:
        """Forget a row's current postings and its share of the table statistics."""
        if self._live[row]:
            self._count -= 1
            self._total -= int(self._length[row])
            self._live[row] = False
        self._stale[row] = True
        self._gen[row] += 1

    def _weighted(self, r: RowData) -> tuple[dict[str, float], int]:
        """A row's weighted term frequencies (content count x w0 + context count x w1: sums of
        1s and halves, exact in floating point whatever the order) and its length in tokens."""
        w0, w1 = self.weights
        tf = {t: n * w0 for t, n in r.content.items()}
        for t, n in r.context.items():
            tf[t] = tf.get(t, 0.0) + n * w1
        return tf, r.content.total() + r.context.total()

    def _set_meta(self, row: int, project: str | None, created_at: str | None, length: int) -> None:
        self._length[row] = length
        self._project[row] = self._project_codes.code(project)
        self._created[row] = epoch(created_at)
        self._live[row] = True
        self._count += 1
        self._total += length

    def apply(self, upserts: list[RowData], removed: list[int]) -> None:
        """Rows (re)indexed with their current text; ``removed`` seqs are no longer in the table."""
        with self._lock:
            for seq in removed:
                row = self._row_of.get(seq)
                if row is not None:
                    self._drop(row)
            for r in upserts:
                row = self._row(r.seq)
                self._drop(row)
                gen = int(self._gen[row])
                tf, length = self._weighted(r)
                self._set_meta(row, r.project, r.created_at, length)
                delta = self._delta
                for token, f in tf.items():
                    tid = self._term(token)
                    lists = delta.get(tid)
                    if lists is None:
                        lists = delta[tid] = _new_delta()
                    lists[0].append(row)
                    lists[1].append(f)
                    lists[2].append(gen)
                self._delta_size += len(tf)

    def load(self, rows: Iterable[RowData]) -> None:
        """Fill an empty index straight into its base (startup: no delta, no merge).

        Postings are gathered in typed arrays (a Python list of ints costs ~36 bytes an
        entry: a few hundred MB transient at 100,000 memories with thread context)."""
        t_arr, r_arr, f_arr = array("q"), array("i"), array("f")
        with self._lock:
            if self._rows:
                raise RuntimeError("load() needs an empty index")
            term = self._term_id
            for r in rows:
                row = self._new_row(r.seq)
                tf, length = self._weighted(r)
                self._set_meta(row, r.project, r.created_at, length)
                for token in tf:
                    if token not in term:
                        term[token] = len(term)
                t_arr.extend([term[t] for t in tf])
                r_arr.extend(repeat(row, len(tf)))
                f_arr.extend(tf.values())
            self._install_base(t_arr, r_arr, f_arr)

    def load_windows(self, contents: Iterable[tuple[int, str]], windows: Iterable[WindowRow]) -> None:
        """Fill an empty index from every memory's ``contents`` (seq, text) and each row's
        context as a window of other memories' seqs (or a forgotten row's frozen text): the
        same postings as :meth:`load` over the rows' texts, bit for bit, ~3x faster.

        :meth:`load` tokenizes every memory once for itself and once more inside each of the
        ~5 contexts it belongs to (a thread's 3 earlier and 2 later turns), then merges two
        dicts of counts per row in Python. Here each memory's tokens become term ids once
        (``contents``), a row's context is its window's id arrays joined, and one numpy
        ``unique`` per row counts both columns; the weighted frequency is ``content count *
        w0 + context count * w1``, the same float operations as :meth:`_weighted`."""
        w0, w1 = self.weights
        t_arr, r_arr, f_arr = array("q"), array("i"), array("f")
        with self._lock:
            if self._rows:
                raise RuntimeError("load_windows() needs an empty index")
            term: defaultdict[str, int] = defaultdict(lambda: len(term))
            ids_of = term.__getitem__
            own = {seq: array("i", map(ids_of, tokens(text or ""))) for seq, text in contents}
            for w in windows:
                content = own[w.seq]
                if w.frozen is not None:
                    context = array("i", map(ids_of, tokens(w.frozen)))
                else:
                    context = array("i")
                    for seq in w.window:
                        context.extend(own[seq])
                n = len(content)
                both = np.frombuffer(content + context, dtype=np.int32)
                tids, at = np.unique(both, return_inverse=True)
                tf = np.bincount(at[:n], minlength=tids.size) * w0 + np.bincount(at[n:], minlength=tids.size) * w1
                row = self._new_row(w.seq)
                self._set_meta(row, w.project, w.created_at, n + len(context))
                t_arr.frombytes(tids.astype(np.int64).tobytes())
                r_arr.frombytes(np.full(tids.size, row, dtype=np.int32).tobytes())
                f_arr.frombytes(tf.astype(np.float32).tobytes())
            self._term_id = dict(term)
            self._install_base(t_arr, r_arr, f_arr)

    def _new_row(self, seq: int) -> int:
        """A new row for memory ``seq`` (with no postings yet), growing the per-row arrays."""
        row = self._rows
        self._grow(row + 1)
        self._rows += 1
        self._row_of[seq] = row
        self._seq[row] = seq
        return row

    def _install_base(self, t_arr: array[int], r_arr: array[int], f_arr: array[float]) -> None:
        """The base in CSR form from (term id, row, weighted tf) postings in row order."""
        term = self._term_id
        self._vocab = SortedList(term)
        t_all = np.frombuffer(t_arr, dtype=np.int64) if t_arr else np.zeros(0, dtype=np.int64)
        order = np.argsort(t_all, kind="stable")
        offsets = np.zeros(len(term) + 1, dtype=np.int64)
        np.cumsum(np.bincount(t_all, minlength=len(term)), out=offsets[1:])
        rows_all = np.frombuffer(r_arr, dtype=np.int32) if r_arr else np.zeros(0, dtype=np.int32)
        tf_all = np.frombuffer(f_arr, dtype=np.float32) if f_arr else np.zeros(0, dtype=np.float32)
        self._base = _Base(offsets, rows_all[order], tf_all[order])

    def needs_merge(self) -> bool:
        with self._lock:
            return not self._merging and self._delta_size >= max(MERGE_MIN, self._base.rows.size // 4)

    def merge(self) -> None:
        """Fold the delta into a new base. The build runs outside the lock: rows changed
        meanwhile keep their new postings in the delta and are marked stale in the new base."""
        with self._lock:
            if self._merging:
                return
            self._merging = True
            base, stale, gen = self._base, self._stale[: self._rows].copy(), self._gen[: self._rows].copy()
            taken = {t: len(lists[0]) for t, lists in self._delta.items()}
            delta = {
                t: (
                    np.frombuffer(lists[0], dtype=np.int32, count=taken[t]).astype(np.int64),
                    np.frombuffer(lists[1], dtype=np.float32, count=taken[t]).copy(),
                    np.frombuffer(lists[2], dtype=np.int32, count=taken[t]).astype(np.int64),
                )
                for t, lists in self._delta.items()
            }
            terms = len(self._term_id)
        try:
            new_base = _build(base, stale, gen, delta, terms)
            with self._lock:
                self._swap_in(new_base, gen, taken)
        finally:
            with self._lock:
                self._merging = False

    def _swap_in(self, new_base: _Base, gen: Ints, taken: dict[int, int]) -> None:
        """Install a merged base built from the delta's first ``taken`` entries per term at
        generations ``gen`` (call with the lock)."""
        changed = np.flatnonzero(self._gen[: gen.size] != gen)
        rest: dict[int, _Delta] = {}
        size = 0
        for t, lists in self._delta.items():
            n = taken.get(t, 0)
            if len(lists[0]) > n:
                rest[t] = (lists[0][n:], lists[1][n:], lists[2][n:])
                size += len(lists[0]) - n
        self._base, self._delta, self._delta_size = new_base, rest, size
        self._stale[: self._rows] = False
        self._stale[changed] = True
        self._stale[gen.size : self._rows] = True  # rows first seen during the build
        self._stale[: gen.size] |= ~self._live[: gen.size]

    # -- search ----------------------------------------------------------------------------
    def _term_ids(self, phrase: Phrase) -> list[int]:
        if not phrase.prefix:
            tid = self._term_id.get(phrase.token)
            return [] if tid is None else [tid]
        term = self._term_id
        return [term[t] for t in self._vocab.irange(phrase.token, phrase.token + "\U0010ffff", inclusive=(True, False))]

    def _postings(self, tids: list[int]) -> tuple[Ints, Floats]:
        """Valid (row, weighted tf) postings of the terms, summed per row."""
        base = self._base
        parts_r: list[Any] = []
        parts_f: list[Any] = []
        for t in tids:
            if t + 1 < base.offsets.size:
                lo, hi = int(base.offsets[t]), int(base.offsets[t + 1])
                if hi > lo:
                    r = base.rows[lo:hi]
                    keep = ~self._stale[r]
                    parts_r.append(r[keep])
                    parts_f.append(base.tf[lo:hi][keep])
            lists = self._delta.get(t)
            if lists is not None:
                # Copies (astype), not views: a live view would stop the arrays from growing.
                r = np.frombuffer(lists[0], dtype=np.int32).astype(np.int64)
                keep = self._gen[r] == np.frombuffer(lists[2], dtype=np.int32)
                parts_r.append(r[keep])
                parts_f.append(np.frombuffer(lists[1], dtype=np.float32)[keep].astype(np.float64))
        if not parts_r:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        rows = np.concatenate(parts_r).astype(np.int64, copy=False)
        tf = np.concatenate(parts_f).astype(np.float64, copy=False)
        if len(tids) > 1 and rows.size:
            rows, tf = _sum_by_row(rows, tf, self._rows)
        return rows, tf

    def search(
        self,
        phrases: list[Phrase],
        k: int,
        *,
        project: str | None = None,
        created_between: tuple[float, float] | None = None,
    ) -> list[tuple[int, float]]:
        """The best ``k`` rows matching any phrase, as (seq, FTS5 ``bm25()`` value: negative,
        lower is better), best first; ties by seq. ``project`` and ``created_between`` (POSIX
        seconds, half-open) restrict the rows before the top k is taken, as a filtered FTS5
        query would.

        Only the rarest phrases' postings are scored in full (:meth:`_essential`); the common
        ones are looked up at the rows those found (:meth:`_tf_at`), MaxScore's split: a row
        none of the rare phrases matches scores less than the common phrases' bound, which is
        below the k-th best, so it cannot be in the answer. The answer is the full one's, to
        the bit: every row's terms are added in the phrases' order, as FTS5 adds them."""
        with self._lock:
            n, total = self._count, self._total
            if n == 0 or not phrases or k <= 0:
                return []
            avgdl = total / n
            terms = [self._term_ids(p) for p in phrases]
            df = [self._df(t) for t in terms]
            live = [i for i in range(len(phrases)) if df[i] > 0]
            if not live:
                return []
            idf = {i: _idf(n, df[i]) for i in live}
            full, cand = self._essential(
                sorted(live, key=lambda i: (df[i], i)), terms, idf, avgdl, k, project, created_between
            )
            if cand.size == 0:
                return []
            scores = self._scores(live, terms, idf, full, cand, avgdl)
            return self._top(cand, scores, k)

    def _df(self, tids: list[int]) -> int:
        """How many rows the terms' valid postings cover: FTS5's document count of the phrase."""
        base, stale = self._base, self._stale
        if len(tids) == 1:
            t, count = tids[0], 0
            if t + 1 < base.offsets.size:
                lo, hi = int(base.offsets[t]), int(base.offsets[t + 1])
                count += hi - lo - int(np.count_nonzero(stale[base.rows[lo:hi]]))
            lists = self._delta.get(t)
            if lists is not None:
                r = np.frombuffer(lists[0], dtype=np.int32)
                count += int(np.count_nonzero(self._gen[r] == np.frombuffer(lists[2], dtype=np.int32)))
            return count
        seen = np.zeros(self._rows, dtype=bool)
        for t in tids:
            if t + 1 < base.offsets.size:
                seen[base.rows[base.offsets[t] : base.offsets[t + 1]]] = True
        seen &= ~stale[: self._rows]  # a stale row's base postings are not its postings
        for t in tids:
            lists = self._delta.get(t)
            if lists is not None:
                r = np.frombuffer(lists[0], dtype=np.int32)
                seen[r[self._gen[r] == np.frombuffer(lists[2], dtype=np.int32)]] = True
        return int(np.count_nonzero(seen))

    def _essential(
        self,
        order: list[int],
        terms: list[list[int]],
        idf: dict[int, float],
        avgdl: float,
        k: int,
        project: str | None,
        created_between: tuple[float, float] | None,
    ) -> tuple[dict[int, tuple[Ints, Floats]], Ints]:
        """Score phrases in full, rarest first (``order``), until the rows found hold ``k``
        whose partial scores already beat what the remaining phrases could add to a row none
        of them matched (a phrase adds less than ``idf * (K1 + 1)``): those rows are the
        candidates. Returns each fully scored phrase's (rows, BM25 terms) and the candidates
        the filters allow."""
        full: dict[int, tuple[Ints, Floats]] = {}
        partial = np.zeros(self._rows, dtype=np.float64)
        seen = np.zeros(self._rows, dtype=bool)
        found: list[Ints] = []
        for m, i in enumerate(order, 1):
            rows, tf = self._postings(terms[i])
            contrib = _bm25(idf[i], tf, self._length[rows], avgdl)
            full[i] = rows, contrib
            found.append(self._allowed(rows[~seen[rows]], project, created_between))
            seen[rows] = True
            if m == len(order):
                break
            partial[rows] += contrib
            if sum(f.size for f in found) < k:
                continue
            found = [np.concatenate(found)]
            cut = np.partition(partial[found[0]], found[0].size - k)[found[0].size - k]
            if sum(idf[j] for j in order[m:]) * (K1 + 1.0) * (1.0 + BOUND_MARGIN) < cut:
                break
        return full, np.concatenate(found) if len(found) > 1 else found[0]

    def _allowed(self, rows: Ints, project: str | None, created_between: tuple[float, float] | None) -> Ints:
        if project is not None:
            code = self._project_codes.known(project)
            rows = rows[self._project[rows] == code] if code is not None else rows[:0]
        if created_between is not None:
            when = self._created[rows]
            rows = rows[(when >= created_between[0]) & (when < created_between[1])]
        return rows

    def _scores(
        self,
        live: list[int],
        terms: list[list[int]],
        idf: dict[int, float],
        full: dict[int, tuple[Ints, Floats]],
        cand: Ints,
        avgdl: float,
    ) -> Floats:
        """The candidates' BM25, each phrase added in the query's order (FTS5's sum, to the bit)."""
        is_cand = np.zeros(self._rows, dtype=bool)
        is_cand[cand] = True
        at = np.empty(self._rows, dtype=np.int32)  # row -> its place in cand (valid where is_cand)
        at[cand] = np.arange(cand.size, dtype=np.int32)
        scores = np.zeros(cand.size, dtype=np.float64)
        for i in live:
            if i in full:
                rows, contrib = full[i]
                keep = is_cand[rows]
                scores[at[rows[keep]]] += contrib[keep]
            else:
                tf = self._tf_at(terms[i], is_cand, at, cand.size)
                hit = np.flatnonzero(tf > 0.0)
                scores[hit] += _bm25(idf[i], tf[hit], self._length[cand[hit]], avgdl)
        return scores

    def _tf_at(self, tids: list[int], is_cand: npt.NDArray[np.bool_], at: npt.NDArray[np.int32], size: int) -> Floats:
        """The terms' weighted frequency in each candidate, summed in the order
        :meth:`_postings` sums them (a row's valid postings are all in the base or all in the
        delta, one per term)."""
        base, stale = self._base, self._stale
        out = np.zeros(size, dtype=np.float64)
        for t in tids:
            if t + 1 < base.offsets.size:
                lo, hi = int(base.offsets[t]), int(base.offsets[t + 1])
                r = base.rows[lo:hi]
                hit = np.flatnonzero(is_cand[r])
                hit = hit[~stale[r[hit]]]
                out[at[r[hit]]] += base.tf[lo:hi][hit]
            lists = self._delta.get(t)
            if lists is not None:
                r = np.frombuffer(lists[0], dtype=np.int32)
                keep = is_cand[r] & (self._gen[r] == np.frombuffer(lists[2], dtype=np.int32))
                out[at[r[keep]]] += np.frombuffer(lists[1], dtype=np.float32)[keep]
        return out

    def _top(self, cand: Ints, best: Floats, k: int) -> list[tuple[int, float]]:
        """The k best candidates, and of the rows tied at the cut the lowest seqs, as FTS5's
        ORDER BY bm25 LIMIT k keeps them (a plain argpartition keeps any of them)."""
        seqs = self._seq[cand]
        if cand.size > k:
            cut = np.partition(best, cand.size - k)[cand.size - k]
            above = np.flatnonzero(best > cut)
            tied = np.flatnonzero(best == cut)
            tied = tied[np.argsort(seqs[tied], kind="stable")[: k - above.size]]
            keep = np.concatenate([above, tied])
            best, seqs = best[keep], seqs[keep]
        order = np.lexsort((seqs, -best))
        return [(int(seqs[i]), -float(best[i])) for i in order]


BOUND_MARGIN = 1e-9
"""Headroom on the bound of what the common phrases can add (their scores are sums of floats)."""


def _idf(n: int, df: int) -> float:
    idf = math.log((n - df + 0.5) / (df + 0.5))
    return idf if idf > 0.0 else IDF_FLOOR


def _bm25(idf: float, tf: Floats, length: Ints, avgdl: float) -> Floats:
    """One phrase's BM25 term in FTS5's order of operations, to the bit."""
    return idf * ((tf * (K1 + 1.0)) / (tf + K1 * (1.0 - B + B * length / avgdl)))


DENSE_FROM = 16
"""Postings are merged over a dense array of every row once they number at least 1/16 of the
rows; below that, by sorting (``np.unique``). A dense pass costs the rows' count, a sort the
postings' n log n: at 878,918 memories ``np.unique`` over a common prefix term's postings took
68 % of recall (docs/benchmarks.md); the cut-off is where the two cost the same here."""


def _sum_by_row(rows: Ints, weights: Floats, n: int) -> tuple[Ints, Floats]:
    """The distinct ``rows`` (ascending, each < ``n``) and the sum of ``weights`` for each.

    Both ways add a row's weights in the order they come (``np.bincount``), so the sums, and
    with them the scores, are the same to the bit."""
    if rows.size * DENSE_FROM >= n:
        sums = np.bincount(rows, weights=weights, minlength=n)
        seen = np.zeros(n, dtype=bool)
        seen[rows] = True
        distinct = np.flatnonzero(seen).astype(np.int64, copy=False)
        return distinct, sums[distinct].astype(np.float64, copy=False)
    distinct, inverse = np.unique(rows, return_inverse=True)
    return distinct, np.bincount(inverse, weights=weights, minlength=distinct.size).astype(np.float64)


def _build(
    base: _Base,
    stale: npt.NDArray[np.bool_],
    gen: Ints,
    delta: dict[int, tuple[Ints, npt.NDArray[np.float32], Ints]],
    terms: int,
) -> _Base:
    """A new base from the valid postings of ``base`` and ``delta``, grouped by term."""
    counts = np.diff(base.offsets)
    term_of = np.repeat(np.arange(counts.size, dtype=np.int64), counts)
    keep = ~stale[base.rows] if base.rows.size else np.zeros(0, dtype=bool)
    t_parts = [term_of[keep]]
    r_parts = [base.rows[keep].astype(np.int64)]
    f_parts = [base.tf[keep]]
    for t, (rows, tfs, gens) in delta.items():
        ok = gen[rows] == gens
        t_parts.append(np.full(int(ok.sum()), t, dtype=np.int64))
        r_parts.append(rows[ok])
        f_parts.append(tfs[ok])
    t_all = np.concatenate(t_parts)
    order = np.argsort(t_all, kind="stable")
    offsets = np.zeros(terms + 1, dtype=np.int64)
    np.cumsum(np.bincount(t_all, minlength=terms), out=offsets[1:])
    return _Base(
        offsets, np.concatenate(r_parts)[order].astype(np.int32), np.concatenate(f_parts)[order].astype(np.float32)
    )
