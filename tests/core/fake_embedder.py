"""A fake embedding server on 127.0.0.1 speaking the real Ollama and OpenAI wire protocols.

Vectors are deterministic bags of hashed words (so similar texts are similar); the server
counts the texts it embedded and can be told to fail, hang or answer garbage.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DIMS = 32


def fake_vector(text: str, dims: int = DIMS) -> list[float]:
    v = [0.0] * dims
    for word in text.lower().split():
        h = int(hashlib.md5(word.encode()).hexdigest(), 16)
        v[h % dims] += 1.0
    return v


class FakeEmbeddingServer:
    def __init__(self, dims: int = DIMS) -> None:
        self.dims = dims
        self.embedded: list[str] = []
        self.requests = 0  # every POST, answered or not
        self.mode = "ok"  # ok | down500 | garbage | hang
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
                outer.requests += 1
                if outer.mode == "hang":
                    time.sleep(3)
                if outer.mode == "down500":
                    self._send(500, b'{"error": "model not loaded"}')
                    return
                if outer.mode == "garbage":
                    self._send(200, b"{not json")
                    return
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                outer.embedded.extend(texts)
                vecs = [fake_vector(t, outer.dims) for t in texts]
                if self.path == "/api/embed":
                    payload = {"model": body["model"], "embeddings": vecs}
                elif self.path == "/v1/embeddings":
                    payload = {
                        "object": "list",
                        "model": body["model"],
                        "data": [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vecs)],
                    }
                else:
                    self._send(404, b'{"error": "not found"}')
                    return
                self._send(200, json.dumps(payload).encode())

            def _send(self, code: int, data: bytes) -> None:
                self.send_response(code)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> FakeEmbeddingServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
