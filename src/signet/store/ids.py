"""Short ids: a unique prefix of an id stands for the whole id, as git's short hashes do.

The CLI shows memories by the first 8 characters of their id (``signet recall``,
``signet forget``'s preview), so every place that takes an id takes such a prefix too.
Resolution runs under the caller's read scope: a prefix never resolves to, and an ambiguity
never names, a row the caller could not read, so a scoped token learns nothing about ids
outside its project.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from signet.errors import AmbiguousId
from signet.store.sqlite import Connection

MIN_PREFIX = 4
"""Shorter text is only ever taken as a whole id."""

SHOWN = 3
"""Candidates named in an ambiguity's message (``candidates`` in the answer lists up to 10)."""

IdTable = Literal["memories", "memory_jobs", "summary_jobs", "documents"]


def complete_id(
    conn: Connection,
    table: IdTable,
    given: str,
    *,
    where: str = "1=1",
    params: Sequence[Any] = (),
    noun: str = "memory",
) -> str:
    """The id in ``table`` that ``given`` names: ``given`` itself when a row has that id or
    when no row starts with it (the caller's lookup then answers its usual not-found), else
    the one id that starts with it.

    ``where``/``params`` narrow the candidates (a SQL fragment over alias ``m``, such as
    :meth:`signet.store.scope.ReadScope.sql`). Raises :class:`AmbiguousId` when several
    ids start with ``given``.
    """
    if len(given) < MIN_PREFIX:
        return given
    # A range over the id's unique index, not LIKE: '%' and '_' in the text mean themselves,
    # and ids are ASCII, so every id that starts with `given` sorts below given + U+10FFFF.
    rows = conn.execute(
        f"SELECT m.id FROM {table} m WHERE m.id >= ? AND m.id < ? AND ({where}) ORDER BY m.id LIMIT 11",
        (given, given + "\U0010ffff", *params),
    ).fetchall()
    ids = [str(r[0]) for r in rows]
    if not ids or given in ids:
        return given
    if len(ids) == 1:
        return ids[0]
    more = "10 or more" if len(ids) > 10 else str(len(ids))
    shown = ", ".join(ids[:SHOWN]) + (", …" if len(ids) > SHOWN else "")
    raise AmbiguousId(
        f"{noun} id '{given}' is ambiguous: {more} ids start with it ({shown}); give more characters",
        id=given,
        candidates=ids[:10],
    )
