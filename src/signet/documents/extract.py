"""Bytes to text: HTML to markdown, PDF to text, markdown and plain text as they are.

The kind comes from the declared media type when there is one, else from the name's suffix,
else from the bytes themselves (``%PDF-``, an HTML tag). Text must decode (UTF-8 unless a
charset is declared) and hold no NUL byte; anything else (images, archives, executables) is
refused with the reason, never stored as garbage.
"""

from __future__ import annotations

import io
import logging
import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from urllib.parse import unquote, urlsplit

from signet.documents.errors import DocumentFailed

KINDS = ("markdown", "text", "html", "pdf")
MEDIA = {"markdown": "text/markdown", "text": "text/plain", "html": "text/html", "pdf": "application/pdf"}
_SUFFIX = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdx": "markdown",
    ".txt": "text",
    ".text": "text",
    ".rst": "text",
    ".log": "text",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".pdf": "pdf",
}
_TEXT_MEDIA = {
    "text/markdown": "markdown",
    "text/x-markdown": "markdown",
    "text/html": "html",
    "application/xhtml+xml": "html",
    "application/pdf": "pdf",
}
_NOISE = "script, style, noscript, template, svg, canvas, iframe, form, nav, header, footer, aside, button"
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")

# pypdf reports recoverable damage (a bad xref table it works around) through logging.
logging.getLogger("pypdf").setLevel(logging.ERROR)


@dataclass(frozen=True)
class Extracted:
    kind: str
    """``markdown``, ``text``, ``html`` or ``pdf``: how the source was read."""
    title: str | None
    text: str
    """Markdown for markdown and HTML sources, plain text for text and PDF."""

    @property
    def markdown(self) -> bool:
        return self.kind in ("markdown", "html")


def detect_kind(media_type: str, name: str, body: bytes) -> str:
    """The kind of ``body`` from its media type, its name, or its first bytes."""
    if media_type in _TEXT_MEDIA:
        return _TEXT_MEDIA[media_type]
    suffix = PurePosixPath(name).suffix.lower()
    if body.startswith(b"%PDF-"):
        return "pdf"
    if media_type.startswith("text/") and media_type != "text/plain":
        return "text"
    if suffix in _SUFFIX and (media_type in ("", "text/plain", "application/octet-stream") or suffix == ".pdf"):
        return _SUFFIX[suffix]
    head = body[:1024].lstrip().lower()
    if head.startswith((b"<!doctype html", b"<html")) or b"<body" in head:
        return "html"
    if media_type in ("", "text/plain"):
        return "text"
    if media_type.endswith(("+json", "/json", "+xml", "/xml")):
        return "text"
    raise DocumentFailed(f"unsupported content type {media_type!r}: only HTML, PDF, markdown and text are read")


def decode_text(body: bytes, charset: str | None, what: str) -> str:
    """The text of ``body``, or :class:`DocumentFailed` for binary or undecodable bytes."""
    if b"\x00" in body[:65536]:
        raise DocumentFailed(f"{what} is not text (it has NUL bytes)")
    encoding = charset or "utf-8"
    try:
        text = body.decode("utf-8-sig" if encoding.lower() in ("utf-8", "utf8") else encoding)
    except LookupError:
        raise DocumentFailed(f"{what} declares an unknown charset {charset!r}") from None
    except UnicodeDecodeError as exc:
        raise DocumentFailed(f"{what} is not valid {encoding} text (byte {exc.start} cannot be decoded)") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def html_to_markdown(html: str) -> tuple[str | None, str]:
    """(title, markdown of the main content) of an HTML page, boilerplate removed."""
    # Imported here: the parsers cost a tenth of a second at import, paid by every daemon
    # start (before /health answers) though most stores never ingest a page.
    from markdownify import markdownify
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(html)
    title = None
    node = tree.css_first("title")
    if node is not None:
        title = node.text(strip=True) or None
    if title is None:
        meta = tree.css_first('meta[property="og:title"]')
        title = (meta.attributes.get("content") or None) if meta is not None else None
    for junk in tree.css(_NOISE):
        junk.decompose()
    main = tree.css_first("main") or tree.css_first("article") or tree.body
    if main is None:
        return title, ""
    text = markdownify(main.html or "", heading_style="ATX", bullets="-", strip=["a", "img"])
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    if title is None:
        title = first_heading(text)
    return title, text


def pdf_to_text(body: bytes, what: str) -> tuple[str | None, str]:
    from pypdf import PdfReader  # imported here, as the HTML parsers are
    from pypdf.errors import PdfReadError, PyPdfError

    try:
        reader = PdfReader(io.BytesIO(body))
        if reader.is_encrypted:
            raise DocumentFailed(f"{what} is an encrypted PDF")
        pages = [(page.extract_text() or "").strip() for page in reader.pages]
        meta = reader.metadata
        title = str(meta.title).strip() if meta is not None and meta.title else None
    except (PdfReadError, PyPdfError, ValueError, KeyError, TypeError) as exc:
        raise DocumentFailed(f"{what} is not a readable PDF: {exc}") from None
    text = "\n\n".join(p for p in pages if p)
    if not text.strip():
        raise DocumentFailed(f"{what} has no extractable text (a scanned PDF needs OCR first)")
    return title or None, text


def first_heading(markdown: str) -> str | None:
    for line in markdown.splitlines():
        m = _HEADING.match(line.strip())
        if m:
            return m.group(1).strip() or None
    return None


def name_title(name: str) -> str | None:
    """A title from a URL's or a file's last path segment (``deploy-guide.md`` -> ``deploy-guide``)."""
    path = urlsplit(name).path if "://" in name else name
    stem = PurePosixPath(unquote(path.rstrip("/"))).stem
    return stem or (urlsplit(name).hostname if "://" in name else None)


def extract(body: bytes, *, media_type: str, charset: str | None, name: str, kind: str | None = None) -> Extracted:
    """Read ``body`` (named ``name`` in errors and for a fallback title) as a document."""
    what = name or "the document"
    kind = kind or detect_kind(media_type, name, body)
    if kind == "pdf":
        title, text = pdf_to_text(body, what)
    else:
        raw = decode_text(body, charset, what)
        if kind == "html":
            title, text = html_to_markdown(raw)
        else:
            text = raw.strip()
            title = first_heading(text) if kind == "markdown" else None
    if not text.strip():
        raise DocumentFailed(f"{what} has no text")
    return Extracted(kind, title or name_title(name), text)
