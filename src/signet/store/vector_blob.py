"""How a memory's vector is stored: half-precision floats, read back as float32.

Why: on conversation turns the embeddings table was the second largest part of a store. A
384-dimension vector in 4-byte floats is 1,536 bytes, and with the row's keys (content hash,
ids, model, time: about 190 bytes) only two rows fit a 4 KiB page: 20.5 MB for 15.4 MB of
vectors at 10,000 memories. In 2-byte floats a row is about 960 bytes and four fit a page:
the table takes a third of what it took. Half precision keeps 11 significant bits; a unit
vector's cosine with a query moves by about 1e-4, far below the gaps recall ranks by (the
yardsticks are unchanged, docs/benchmarks.md). Everything that computes with vectors (the
in-memory index, deduplication, consolidation, projections) gets float32 from :func:`decode`.

Vectors written before this change are float32 and are read as they are: a blob's length
against the row's ``dimensions`` says which (a 384-value float32 blob and a 768-value float16
one have the same length, so the dimensions are always needed). Exports keep float32 (their
documented format, signet.memory.export_format)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]

STORED = np.dtype("<f2")
"""The stored element type: little-endian IEEE half precision."""

LEGACY = np.dtype("<f4")
"""The element type of vectors stored before half precision (still read)."""


def encode(vector: Any) -> bytes:
    """A vector as stored: little-endian float16 bytes. Values beyond float16's range (65,504)
    would become infinities: a model's output never holds them, and a unit vector cannot."""
    return np.asarray(vector, dtype=np.float32).astype(STORED).tobytes()


def as_stored(vectors: Any) -> Vectors:
    """Vectors as they read back once stored (float32 of their float16 values): what the
    in-memory index takes at write time, so recall ranks the same before and after a restart."""
    return np.asarray(vectors, dtype=np.float32).astype(STORED).astype(np.float32)


def decode(blob: bytes | bytearray | memoryview, dimensions: int) -> Vectors:
    """A stored vector of ``dimensions`` values as float32 (half or, from before, single precision).

    Raises ValueError for a blob of any other length (a damaged row)."""
    data = bytes(blob)
    if len(data) == dimensions * STORED.itemsize:
        return np.frombuffer(data, dtype=STORED).astype(np.float32)
    if len(data) == dimensions * LEGACY.itemsize:
        return np.frombuffer(data, dtype=LEGACY).astype(np.float32)
    raise ValueError(f"a stored vector of {len(data)} bytes cannot hold {dimensions} values")


def float32_bytes(blob: bytes | bytearray | memoryview, dimensions: int) -> bytes:
    """A stored vector as little-endian float32 bytes (the export format). A blob of neither
    layout (a damaged row) is returned as it is: the import refuses it, naming its line."""
    try:
        return decode(blob, dimensions).astype(LEGACY).tobytes()
    except ValueError:
        return bytes(blob)


def decode_many(
    blobs: Sequence[bytes | bytearray | memoryview], dimensions: Sequence[int]
) -> tuple[Vectors, list[int]]:
    """The stored vectors of several rows as one float32 matrix of the most common dimension,
    and the positions of the rows it holds (a model change in flight leaves rows of another
    dimension, and a damaged row fits none: both are left out, as before).

    One conversion for the whole matrix when every row has the same layout (the usual case:
    loading a million vectors row by row would take seconds)."""
    if not blobs:
        return np.zeros((0, 0), dtype=np.float32), []
    dims = Counter(dimensions).most_common(1)[0][0]  # one pass, whatever the number of sizes
    for dtype in (STORED, LEGACY):
        size = dims * dtype.itemsize
        if all(d == dims and len(b) == size for b, d in zip(blobs, dimensions, strict=True)):
            joined = b"".join(bytes(b) for b in blobs)
            return np.frombuffer(joined, dtype=dtype).reshape(len(blobs), dims).astype(np.float32), list(
                range(len(blobs))
            )
    kept: list[int] = []
    rows: list[Vectors] = []
    for i, (b, d) in enumerate(zip(blobs, dimensions, strict=True)):
        if d != dims:
            continue
        try:
            rows.append(decode(b, d))
        except ValueError:
            continue
        kept.append(i)
    matrix = np.stack(rows) if rows else np.zeros((0, dims), dtype=np.float32)
    return matrix, kept
