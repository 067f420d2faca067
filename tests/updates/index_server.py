"""A package index on 127.0.0.1 speaking PyPI's JSON API (``/pypi/<name>/json``) and the
simple API pip reads (``/simple/<name>/``), serving wheels built here."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def build_wheel(name: str, version: str) -> tuple[str, bytes]:
    """A minimal, valid pure-Python wheel: (file name, bytes)."""
    mod = name.replace("-", "_")
    dist = f"{mod}-{version}.dist-info"
    files = {
        f"{mod}/__init__.py": b"",
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: signet-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{dist}/RECORD,,")
    files[f"{dist}/RECORD"] = ("\n".join(record) + "\n").encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for path, data in files.items():
            zf.writestr(path, data)
    return f"{mod}-{version}-py3-none-any.whl", buf.getvalue()


@dataclass
class Index:
    url: str
    releases: dict[str, dict[str, list[dict[str, Any]]]] = field(default_factory=dict)
    """package -> version -> files (``{"filename", "yanked"}``) for the JSON API."""
    wheels: dict[str, bytes] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)

    @property
    def json_url(self) -> str:
        return self.url + "/pypi"

    def publish(self, package: str, version: str, *, yanked: bool = False, wheel: bool = False) -> None:
        filename = f"{package.replace('-', '_')}-{version}-py3-none-any.whl"
        if wheel:
            filename, data = build_wheel(package, version)
            self.wheels[filename] = data
        self.releases.setdefault(package, {})[version] = [{"filename": filename, "yanked": yanked}]


@contextmanager
def serve_index() -> Iterator[Index]:
    index = Index(url="")

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, body: bytes, ctype: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            index.requests.append(self.path)
            parts = [p for p in self.path.split("/") if p]
            if len(parts) == 3 and parts[0] == "pypi" and parts[2] == "json" and parts[1] in index.releases:
                versions = index.releases[parts[1]]
                body = {"info": {"name": parts[1], "version": max(versions)}, "releases": versions}
                self._send(200, json.dumps(body).encode(), "application/json")
            elif len(parts) == 2 and parts[0] == "simple" and parts[1] in index.releases:
                links = "".join(
                    f'<a href="/files/{f}#sha256={hashlib.sha256(d).hexdigest()}">{f}</a>\n'
                    for f, d in index.wheels.items()
                )
                self._send(200, f"<html><body>{links}</body></html>".encode(), "text/html")
            elif len(parts) == 2 and parts[0] == "files" and parts[1] in index.wheels:
                self._send(200, index.wheels[parts[1]], "application/octet-stream")
            else:
                self._send(404, b"not found", "text/plain")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    index.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield index
    finally:
        server.shutdown()
        server.server_close()
