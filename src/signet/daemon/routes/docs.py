"""``/docs`` (Swagger UI) and ``/redoc``, with their scripts and styles served by the daemon.

FastAPI's own pages load Swagger UI and ReDoc from a CDN, so offline they are blank, and
online every visit tells a third party that a Signet daemon runs here. The assets come from
the ``fastapi-offline`` package instead (a copy of swagger-ui-dist and redoc, kept current),
under ``/docs/assets/``; Swagger UI's validator badge, which would send the schema to
validator.swagger.io, is turned off.
"""

from __future__ import annotations

from importlib.resources import files

from fastapi import APIRouter, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import FileResponse, HTMLResponse

from signet.errors import NotFound

router = APIRouter(tags=["docs"], include_in_schema=False)

ASSETS_URL = "/docs/assets"
ASSETS = {
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui.css": "text/css",
    "redoc.standalone.js": "text/javascript",
    "favicon.png": "image/png",
}
"""Every asset the two pages load, with its content type; nothing else is served."""


def _root(request: Request) -> str:
    return str(request.scope.get("root_path") or "")


@router.get("/docs")
def swagger_ui(request: Request) -> HTMLResponse:
    root = _root(request)
    return get_swagger_ui_html(
        openapi_url=f"{root}{request.app.openapi_url}",
        title=f"{request.app.title} - Swagger UI",
        oauth2_redirect_url=f"{root}/docs/oauth2-redirect",
        swagger_js_url=f"{root}{ASSETS_URL}/swagger-ui-bundle.js",
        swagger_css_url=f"{root}{ASSETS_URL}/swagger-ui.css",
        swagger_favicon_url=f"{root}{ASSETS_URL}/favicon.png",
        swagger_ui_parameters={"validatorUrl": None},
    )


@router.get("/docs/oauth2-redirect")
def swagger_ui_redirect() -> HTMLResponse:
    return get_swagger_ui_oauth2_redirect_html()


@router.get("/redoc")
def redoc(request: Request) -> HTMLResponse:
    root = _root(request)
    return get_redoc_html(
        openapi_url=f"{root}{request.app.openapi_url}",
        title=f"{request.app.title} - ReDoc",
        redoc_js_url=f"{root}{ASSETS_URL}/redoc.standalone.js",
        redoc_favicon_url=f"{root}{ASSETS_URL}/favicon.png",
        with_google_fonts=False,
    )


@router.get(ASSETS_URL + "/{asset}")
def asset(asset: str) -> FileResponse:
    media = ASSETS.get(asset)
    if media is None:
        raise NotFound(f"no docs asset '{asset}'")
    return FileResponse(str(files("fastapi_offline") / "static" / asset), media_type=media)
