"""A small web site the document tests fetch from: a real HTTP server on 127.0.0.1.

Pages: an HTML guide with headings (and boilerplate to strip), a plain text page, a PDF made
here byte by byte, a redirect to the guide, a redirect loop, a 404, a 500, a page slower than
the test timeout, a body over the test byte limit, and a PNG.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

GUIDE_HTML = """<!doctype html>
<html><head><title>Deploy Guide</title><style>body { color: red }</style></head>
<body>
<nav>Home | About | Pricing</nav>
<main>
<h1>Deploying</h1>
<p>Every service ships to the Kubernetes cluster through Helm charts on Thursdays.</p>
<h2>Rollback</h2>
<p>If a release misbehaves, run helm rollback with the previous revision number and watch the pods
come back.</p>
<h2>Secrets</h2>
<p>Database passwords live in the vault, never in the chart values.</p>
</main>
<footer>Copyright ACME Corp</footer>
<script>trackEverything()</script>
</body></html>
"""

PLAIN_TEXT = "The cafeteria serves lentil soup every Tuesday. " * 30

PDF_LINES = [
    "Quarterly report for the payments team.",
    "Revenue grew by twelve percent while refunds fell.",
]


def make_pdf(lines: list[str], title: str) -> bytes:
    """A one-page PDF with ``lines`` of Helvetica text and a ``/Title``: the smallest file a
    PDF reader accepts as real (catalog, page tree, page, content stream, font, xref)."""

    def esc(s: str) -> str:
        return s.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")

    stream = "BT /F1 12 Tf 72 720 Td 16 TL " + " ".join(f"({esc(line)}) Tj T*" for line in lines) + " ET"
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        " /Resources << /Font << /F1 5 0 R >> >> >>",
        f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        f"<< /Title ({esc(title)}) >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for n, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{n} 0 obj\n{body}\nendobj\n".encode("latin-1")
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for off in offsets:
        out += f"{off:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R /Info 6 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64

Route = Callable[[BaseHTTPRequestHandler], None]


def _send(h: BaseHTTPRequestHandler, status: int, ctype: str, body: bytes, **headers: str) -> None:
    h.send_response(status)
    h.send_header("Content-Type", ctype)
    h.send_header("Content-Length", str(len(body)))
    for k, v in headers.items():
        h.send_header(k.replace("_", "-"), v)
    h.end_headers()
    h.wfile.write(body)


class Site:
    def __init__(self, slow_s: float = 4.0, huge_bytes: int = 300_000) -> None:
        self.hits: dict[str, int] = {}
        self.slow_s = slow_s
        self.huge_bytes = huge_bytes
        self.pages: dict[str, tuple[str, bytes]] = {
            "/guide.html": ("text/html; charset=utf-8", GUIDE_HTML.encode()),
            "/plain.txt": ("text/plain", PLAIN_TEXT.encode()),
            "/report.pdf": ("application/pdf", make_pdf(PDF_LINES, "Payments Q3 Report")),
            "/image.png": ("image/png", PNG),
        }
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                return

            def do_GET(self) -> None:
                site.hits[self.path] = site.hits.get(self.path, 0) + 1
                try:
                    site.route(self)
                except (BrokenPipeError, ConnectionResetError):
                    return  # the fetcher gave up (a timeout, a body over its limit): expected here

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def url(self, path: str) -> str:
        return self.base + path

    def route(self, h: BaseHTTPRequestHandler) -> None:
        path = h.path
        if path in self.pages:
            ctype, body = self.pages[path]
            _send(h, 200, ctype, body)
        elif path == "/redirect":
            _send(h, 302, "text/plain", b"", Location="/guide.html")
        elif path == "/to-file":
            _send(h, 302, "text/plain", b"", Location="file:///etc/passwd")
        elif path == "/loop":
            _send(h, 302, "text/plain", b"", Location="/loop")
        elif path == "/slow":
            time.sleep(self.slow_s)
            _send(h, 200, "text/plain", b"finally")
        elif path == "/huge":
            # No Content-Length: the limit must hold on the stream itself.
            h.send_response(200)
            h.send_header("Content-Type", "text/plain")
            h.end_headers()
            chunk = b"x" * 8192
            sent = 0
            while sent < self.huge_bytes:
                h.wfile.write(chunk)
                sent += len(chunk)
        elif path == "/broken":
            _send(h, 500, "text/plain", b"oops")
        else:
            _send(h, 404, "text/plain", b"not here")

    def start(self) -> Site:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
