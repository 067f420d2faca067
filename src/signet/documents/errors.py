"""Why a document could not be ingested."""

from __future__ import annotations


class DocumentFailed(Exception):
    """A document that cannot be ingested now. ``permanent``: trying again cannot help (a 404,
    a binary file, a refused address), so its job goes dead at once; otherwise (a timeout, a
    5xx, a refused connection) the job is retried while attempts remain."""

    def __init__(self, message: str, *, permanent: bool = True) -> None:
        super().__init__(message)
        self.message = message
        self.permanent = permanent
