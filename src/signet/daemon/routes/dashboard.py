"""The dashboard: ``/`` serves the page, ``/dashboard/*`` its assets (packaged, no CDN).

Assets are plain ES modules and one stylesheet (docs/dashboard.md): no build step. Every
answer forbids framing and loading anything from another origin (Content-Security-Policy),
so a page elsewhere can neither embed the dashboard nor make it fetch from outside.
"""

from __future__ import annotations

import re

from fastapi import APIRouter
from fastapi.responses import FileResponse

from signet.dashboard import STATIC_DIR
from signet.errors import NotFound

router = APIRouter(tags=["dashboard"], include_in_schema=False)

MEDIA = {".js": "text/javascript", ".css": "text/css", ".html": "text/html"}
ASSET_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,60}\.(?:js|css|html)$")
HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
        "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


@router.get("/")
def index() -> FileResponse:
    return FileResponse(STATIC_DIR / "index.html", media_type="text/html", headers=HEADERS)


@router.get("/dashboard/{asset}")
def asset(asset: str) -> FileResponse:
    """One file of the dashboard's folder: a plain name only (no path, no dot-files)."""
    path = STATIC_DIR / asset
    if not ASSET_NAME.match(asset) or not path.is_file():
        raise NotFound(f"no dashboard asset '{asset}'")
    return FileResponse(path, media_type=MEDIA[path.suffix], headers=HEADERS)
