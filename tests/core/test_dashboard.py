"""The dashboard is served by the daemon from packaged files, and talks only to its own API."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from signet.daemon.app import iter_routes
from signet.dashboard import STATIC_DIR


def test_dashboard_page_and_assets(api: TestClient) -> None:
    r = api.get("/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert "frame-ancestors 'none'" in r.headers["content-security-policy"] and r.headers["x-frame-options"] == "DENY"
    page = r.text
    for src in re.findall(r'(?:src|href)="([^"#][^"]*)"', page):
        if src == "data:,":  # the empty favicon (no request for /favicon.ico)
            continue
        assert src.startswith("/dashboard/"), f"external or unknown asset {src}"
        assert api.get(src).status_code == 200
    modules = sorted(STATIC_DIR.glob("*.js"))
    assert {m.name for m in modules} >= {
        "app.js",
        "api.js",
        "memories.js",
        "memory.js",
        "map.js",
        "health.js",
        "knowledge.js",
        "documents.js",
        "agents.js",
    }
    routes = {path for _, path, _ in iter_routes(api.app.routes)}  # type: ignore[attr-defined]
    for module in modules:
        r = api.get(f"/dashboard/{module.name}")
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/javascript"), module.name
        # The SVG namespace is an XML name that is never fetched (document.createElementNS).
        js = r.text.replace('"http://www.w3.org/2000/svg"', '"svg-ns"')
        assert "http://" not in js and "https://" not in js, f"{module.name} names a remote URL"
        for imported in re.findall(r'from "\./([a-z-]+\.js)"', js):
            assert (STATIC_DIR / imported).is_file(), f"{module.name} imports a missing {imported}"
        # every API path a module calls exists in the app
        for p in set(re.findall(r'"(/(?:api|memory)/[a-z/-]+)', js)):
            assert any(rt.startswith(p.rstrip("/")) for rt in routes), f"{module.name}: {p}"


def test_assets_outside_the_folder_are_not_served(api: TestClient) -> None:
    for name in ("nope.js", "..%2f__init__.py", "%2e%2e", ".hidden.js", "__init__.py", "APP.JS", "app.js%00.html"):
        r = api.get(f"/dashboard/{name}")
        assert r.status_code == 404 and r.json()["code"] == "not_found", (name, r.text)
    assert api.get("/dashboard/../pyproject.toml").status_code == 404
