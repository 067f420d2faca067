"""The dashboard is served by the daemon from packaged files, and talks only to its own API."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient


def test_dashboard_page_and_assets(api: TestClient) -> None:
    r = api.get("/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    page = r.text
    for src in re.findall(r'(?:src|href)="([^"]+)"', page):
        assert src.startswith("/dashboard/"), f"external or unknown asset {src}"
        assert api.get(src).status_code == 200
    js = api.get("/dashboard/app.js").text
    # every API path the dashboard calls exists in the app
    paths = set(re.findall(r'"(/(?:api|memory)/[a-z/-]+)', js))
    assert paths, "no API paths found in app.js"
    from signet.daemon.app import iter_routes

    routes = {path for _, path, _ in iter_routes(api.app.routes)}  # type: ignore[attr-defined]
    for p in paths:
        assert any(rt.startswith(p.rstrip("/")) for rt in routes), p
    assert "http://" not in js and "https://" not in js
    assert api.get("/dashboard/nope.js").status_code == 404
