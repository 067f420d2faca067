"""The installed version, and the newest release on a PyPI JSON API index.

``GET <index>/<package>/json`` answers ``{"info": {"version": …}, "releases": {version:
[files…]}}``. The newest release is the highest valid version with at least one file not
yanked (pre-releases only when asked); ``info.version`` when the index lists no releases.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as dist_version
from typing import Any

import httpx
from packaging.version import InvalidVersion, Version

from signet.errors import InvalidRequest

MAX_INDEX_BYTES = 32 * 1024 * 1024


def installed_version(package: str) -> str | None:
    try:
        return dist_version(package)
    except PackageNotFoundError:
        return None


def newest(data: Any, *, prereleases: bool) -> str | None:
    """The newest release in an index answer (see the module docstring); None if it has none."""
    if not isinstance(data, dict):
        raise InvalidRequest("the package index answered with something other than a JSON object")
    releases = data.get("releases")
    found: list[Version] = []
    if isinstance(releases, dict):
        for raw, files in releases.items():
            try:
                v = Version(str(raw))
            except InvalidVersion:
                continue
            if v.is_prerelease and not prereleases:
                continue
            if isinstance(files, list) and files and all(isinstance(f, dict) and f.get("yanked") for f in files):
                continue
            if isinstance(files, list) and files:
                found.append(v)
    if found:
        return str(max(found))
    info = data.get("info")
    latest = info.get("version") if isinstance(info, dict) else None
    return latest if isinstance(latest, str) and latest else None


def is_newer(candidate: str | None, current: str | None) -> bool:
    if candidate is None:
        return False
    if current is None:
        return True
    try:
        return Version(candidate) > Version(current)
    except InvalidVersion:
        return False


def fetch_index(index_url: str, package: str, timeout: float) -> Any:
    """The index's JSON for ``package``; :class:`InvalidRequest` saying what went wrong."""
    url = f"{index_url.rstrip('/')}/{package}/json"
    try:
        with httpx.stream("GET", url, timeout=timeout, follow_redirects=True) as res:
            if res.status_code == 404:
                raise InvalidRequest(f"the package index at {index_url} has no package {package!r}")
            if res.status_code != 200:
                raise InvalidRequest(f"the package index answered HTTP {res.status_code} for {url}")
            body = b""
            for chunk in res.iter_bytes():
                body += chunk
                if len(body) > MAX_INDEX_BYTES:
                    raise InvalidRequest(f"the package index's answer for {package} is larger than 32 MiB")
    except httpx.HTTPError as exc:
        raise InvalidRequest(f"the package index at {index_url} is unreachable: {exc}") from None
    try:
        return httpx.Response(200, content=body).json()
    except ValueError:
        raise InvalidRequest(f"the package index's answer for {package} is not JSON") from None


def pip_index(index_url: str, pip_index_url: str | None) -> str:
    """pip's ``--index-url``: configured, or the JSON base with its ``/pypi`` made ``/simple``."""
    if pip_index_url:
        return pip_index_url
    base = index_url.rstrip("/")
    return (base[: -len("/pypi")] if base.endswith("/pypi") else base) + "/simple"
