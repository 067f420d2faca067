"""Fetch a URL for a document, safely.

Only ``http`` and ``https``. Every host is resolved and *every* address it resolves to is
checked before a connection is made; unless ``documents.allow_private_networks`` is on, an
address that is not globally routable (loopback, private, link-local, CGNAT, multicast,
reserved) refuses the fetch (server-side request forgery). The connection then goes to the
checked address itself, with the name in the ``Host`` header and TLS SNI, so a second DNS answer
cannot swap in another address between the check and the connect (DNS rebinding). Redirects are
followed by hand, at most ``max_redirects``, each hop checked the same way. The body is read as
a stream and cut off past ``max_bytes``; the whole fetch is bounded by ``fetch_timeout_s``.
"""

from __future__ import annotations

import ipaddress
import socket
import time
from dataclasses import dataclass

import httpx

from signet import __version__
from signet.config import DocumentsSettings
from signet.documents.errors import DocumentFailed

REDIRECTS = (301, 302, 303, 307, 308)
USER_AGENT = f"signet/{__version__} (document ingest)"

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class Fetched:
    url: str
    """Where the body came from (after redirects)."""
    content_type: str
    """The media type without parameters, lower case ('' when the server sent none)."""
    charset: str | None
    body: bytes


def parse_url(raw: str) -> httpx.URL:
    """The URL, refused unless it is http(s) with a host (``file://``, ``ftp://``… never)."""
    try:
        url = httpx.URL(raw.strip())
    except (httpx.InvalidURL, ValueError) as exc:
        raise DocumentFailed(f"not a valid URL: {exc}") from None
    if url.scheme not in ("http", "https"):
        raise DocumentFailed(f"only http and https URLs can be fetched, not {url.scheme or 'a bare path'!r}")
    if not url.host:
        raise DocumentFailed("the URL has no host")
    return url.copy_with(fragment=None)


def address_refusal(ip: IPAddress) -> str | None:
    """Why a fetch may not connect to ``ip`` (None: it is a public address)."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return address_refusal(ip.ipv4_mapped)
    if ip.is_loopback:
        return "a loopback address"
    if ip.is_link_local:
        return "a link-local address"
    if ip.is_private:
        return "a private address"
    if ip.is_multicast or ip.is_unspecified or ip.is_reserved or not ip.is_global:
        return "not a public address"
    return None


def resolve(host: str, port: int) -> list[IPAddress]:
    """Every address ``host`` resolves to (an IP literal is itself)."""
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise DocumentFailed(f"cannot resolve host {host!r}: {exc}", permanent=False) from None
    out: list[IPAddress] = []
    for info in infos:
        ip = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
        if ip not in out:
            out.append(ip)
    if not out:
        raise DocumentFailed(f"host {host!r} has no address", permanent=False)
    return out


def checked_address(url: httpx.URL, allow_private: bool) -> IPAddress:
    """The address to connect to for ``url``, after checking every address its host has."""
    port = url.port or (443 if url.scheme == "https" else 80)
    addresses = resolve(url.host, port)
    if not allow_private:
        for ip in addresses:
            why = address_refusal(ip)
            if why is not None:
                raise DocumentFailed(
                    f"refused to fetch {url.host}: {ip} is {why} (set documents.allow_private_networks to allow it)"
                )
    return addresses[0]


def check_url(raw: str, settings: DocumentsSettings) -> httpx.URL:
    """What ``POST /api/documents`` checks before it queues a URL: the scheme, and the host's
    addresses when it resolves now (the worker checks again, on every hop)."""
    url = parse_url(raw)
    try:
        checked_address(url, settings.allow_private_networks)
    except DocumentFailed as exc:
        if exc.permanent:
            raise
    return url


def _media_type(header: str | None) -> tuple[str, str | None]:
    if not header:
        return "", None
    parts = [p.strip() for p in header.split(";")]
    charset = next((p.split("=", 1)[1].strip(" \"'") for p in parts[1:] if p.lower().startswith("charset=")), None)
    return parts[0].lower(), charset or None


def fetch(raw_url: str, settings: DocumentsSettings) -> Fetched:
    """GET ``raw_url``: redirects followed and re-checked, body limited, time bounded."""
    url = parse_url(raw_url)
    deadline = time.monotonic() + settings.fetch_timeout_s
    timeout = httpx.Timeout(settings.fetch_timeout_s)
    with httpx.Client(timeout=timeout, follow_redirects=False, trust_env=False) as client:
        for _hop in range(settings.max_redirects + 1):
            ip = checked_address(url, settings.allow_private_networks)
            request = client.build_request(
                "GET",
                url.copy_with(host=str(ip)),
                headers={"Host": url.netloc.decode("ascii"), "User-Agent": USER_AGENT, "Accept": "*/*"},
                extensions={"sni_hostname": url.host},
            )
            try:
                response = client.send(request, stream=True)
            except httpx.TimeoutException:
                raise DocumentFailed(
                    f"fetching {url} timed out after {settings.fetch_timeout_s:g}s", permanent=False
                ) from None
            except httpx.HTTPError as exc:
                raise DocumentFailed(f"fetching {url} failed: {exc or type(exc).__name__}", permanent=False) from None
            try:
                if response.status_code in REDIRECTS:
                    location = response.headers.get("location")
                    if not location:
                        raise DocumentFailed(f"{url} answered {response.status_code} without a Location")
                    url = parse_url(str(url.join(location)))
                    continue
                if response.status_code >= 400:
                    raise DocumentFailed(
                        f"{url} answered HTTP {response.status_code} {response.reason_phrase}".rstrip(),
                        permanent=response.status_code < 500 and response.status_code not in (408, 429),
                    )
                body = _read_limited(response, url, settings, deadline)
            finally:
                response.close()
            media, charset = _media_type(response.headers.get("content-type"))
            return Fetched(str(url), media, charset, body)
    raise DocumentFailed(f"more than {settings.max_redirects} redirects, the last to {url}")


def _read_limited(response: httpx.Response, url: httpx.URL, settings: DocumentsSettings, deadline: float) -> bytes:
    limit = settings.max_bytes
    declared = response.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise DocumentFailed(f"{url} is {int(declared)} bytes, over the limit of {limit} (documents.max_bytes)")
    chunks: list[bytes] = []
    size = 0
    try:
        for part in response.iter_bytes():
            size += len(part)
            if size > limit:
                raise DocumentFailed(f"{url} is over the limit of {limit} bytes (documents.max_bytes)")
            if time.monotonic() > deadline:
                raise DocumentFailed(f"fetching {url} timed out after {settings.fetch_timeout_s:g}s", permanent=False)
            chunks.append(part)
    except httpx.TimeoutException:
        raise DocumentFailed(f"fetching {url} timed out after {settings.fetch_timeout_s:g}s", permanent=False) from None
    except httpx.HTTPError as exc:
        raise DocumentFailed(f"reading {url} failed: {exc or type(exc).__name__}", permanent=False) from None
    return b"".join(chunks)
