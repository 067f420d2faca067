"""The dashboard: ``/`` serves the page, ``/dashboard/*`` its assets (packaged, no CDN)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import FileResponse

from signet.dashboard import STATIC_DIR
from signet.errors import NotFound

router = APIRouter(tags=["dashboard"], include_in_schema=False)

ASSETS = {"app.js": "text/javascript", "style.css": "text/css", "index.html": "text/html"}


@router.get("/")
def index() -> FileResponse:
    return FileResponse(STATIC_DIR / "index.html", media_type="text/html")


@router.get("/dashboard/{asset}")
def asset(asset: str) -> FileResponse:
    media = ASSETS.get(asset)
    if media is None:
        raise NotFound(f"no dashboard asset '{asset}'")
    return FileResponse(STATIC_DIR / asset, media_type=media)
