"""Redaction of output that arrives in pieces (a scheduled task's live output).

A value can be cut across two reads, so the last :attr:`Redactor.margin` bytes are held back
until more output comes (or the stream ends), and so is a masked run that reaches into them:
what is let through has been matched against every form of every value, with enough of what
follows to see a form that starts in it. The masking itself is the secrets exec path's
(:class:`signet.secrets.redact.Redactor`), so a task and ``secret exec`` hide the same forms.
"""

from __future__ import annotations

from signet.secrets.redact import Redactor


class StreamRedactor:
    """``feed`` each chunk, then ``flush`` at the end; both return what is safe to show."""

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor
        self.pending = bytearray()
        self.masked = 0
        """Runs masked so far."""

    def feed(self, chunk: bytes) -> bytes:
        self.pending += chunk
        cut = len(self.pending) - self.redactor.margin
        if cut <= 0:
            return b""
        data = bytes(self.pending)
        for start, end, _ in self.redactor.spans(data):
            if start >= cut:
                break
            if end > cut:  # a masked run that may still grow: hold it back whole
                cut = start
                break
        return self._release(data, cut)

    def flush(self) -> bytes:
        return self._release(bytes(self.pending), len(self.pending))

    def _release(self, data: bytes, cut: int) -> bytes:
        if cut <= 0:
            return b""
        out, masked = self.redactor.bytes(data[:cut])
        self.masked += masked
        del self.pending[:cut]
        return out
