"""Inverted lists over the vector index's rows: a search reads the cells near its query.

Why: without them a search reads every row (signet.search.vectors: the whole matrix, or its
coarse projection where the vectors allow one). Real conversation turns allow none (95 % of
their energy needs more than a third of MiniLM's 384 dimensions), so at a million memories a
search reads 1.5 GB, about 150 ms on this machine: the vector leg alone spent the recall
budget the performance issue sets at that size (docs/benchmarks.md). faiss's
``IndexIVFScalarQuantizer`` groups the rows into k-means cells (about the square root of the
row count) and keeps each row as one byte a dimension; a query scores the centroids, reads only
the rows of the cells nearest it, and the vector index re-scores the best of those exactly from
its own float32 matrix. Filters (live rows, a project, a period) travel as a bitmap the lists
test row by row in C, and a narrower filter probes more cells in proportion, so a filtered
search still meets enough of its rows.

It is approximate: a row in a cell not probed, or ranked below the re-scored pool by its
one-byte copy, is missed. What that costs is measured on real conversation turns against the
exact search (bench/vector_lists_ab.py, docs/benchmarks.md); below ``search.vector_lists_min_rows``
every search reads every row.

faiss is imported when lists are first built, never by processes that stay small (hooks, the
CLI, a daemon under the threshold).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from signet.embedding.base import Vectors

Rows = npt.NDArray[np.int64]

TRAIN_PER_CELL = 40
"""k-means is trained on this many sampled rows per cell (faiss warns below 39)."""
PROBES = 64
"""Cells read by an unfiltered search; a filter keeping a share s of the rows reads PROBES / s."""
ADD_BLOCK = 65_536
"""Rows handed to faiss at once (each block is a copy)."""


def _faiss() -> Any:
    import faiss

    return faiss


class InvertedLists:
    """faiss inverted lists over rows of a float32 matrix, keyed by their row numbers."""

    def __init__(self, matrix: Vectors, rows: Rows, seed: int = 7) -> None:
        faiss = _faiss()
        dims = int(matrix.shape[1])
        self.cells = max(1, int(math.sqrt(len(rows))))
        self._quantizer = faiss.IndexFlatIP(dims)
        self._index = faiss.IndexIVFScalarQuantizer(
            self._quantizer, dims, self.cells, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
        )
        rng = np.random.default_rng(seed)
        take = min(len(rows), TRAIN_PER_CELL * self.cells)
        self._index.train(np.ascontiguousarray(matrix[np.sort(rng.choice(rows, take, replace=False))]))
        self.add(matrix, rows)

    def __len__(self) -> int:
        return int(self._index.ntotal)

    def add(self, matrix: Vectors, rows: Rows) -> None:
        """Add ``matrix``'s ``rows`` (not in the lists yet), a block at a time (no copy of the whole)."""
        for start in range(0, len(rows), ADD_BLOCK):
            block = np.ascontiguousarray(rows[start : start + ADD_BLOCK], dtype=np.int64)
            self._index.add_with_ids(np.ascontiguousarray(matrix[block], dtype=np.float32), block)

    def replace(self, matrix: Vectors, rows: Rows) -> None:
        """Rows whose vectors changed: their old entries out (a pass over the lists), the new in."""
        if len(rows):
            faiss = _faiss()
            ids = np.ascontiguousarray(rows, dtype=np.int64)
            self._index.remove_ids(faiss.IDSelectorBatch(len(ids), faiss.swig_ptr(ids)))
            self.add(matrix, ids)

    def search(self, query: Vectors, keep: int, allowed: npt.NDArray[np.bool_], share: float) -> Rows:
        """Up to ``keep`` rows nearest ``query`` among those ``allowed`` marks (a mask over row
        numbers), reading more cells the smaller the ``share`` of rows allowed."""
        faiss = _faiss()
        bits = np.packbits(allowed, bitorder="little")
        probes = min(self.cells, math.ceil(PROBES / max(share, 1e-9)))
        params = faiss.SearchParametersIVF(
            nprobe=probes, sel=faiss.IDSelectorBitmap(allowed.size, faiss.swig_ptr(bits))
        )
        _, found = self._index.search(np.ascontiguousarray(query.reshape(1, -1), dtype=np.float32), keep, params=params)
        hits: Rows = found[0]
        return hits[hits >= 0]
