"""Bearer tokens: ``base64url(payload).base64url(HMAC-SHA256(secret, payload))``.

The payload is JSON ``{sub, scope: {project?, agent?, user?}, role, iat, exp}``. The secret
is 32 random bytes created on first use at ``$SIGNET_WORKSPACE/.daemon/auth.secret`` with
mode 0600. Verification compares signatures in constant time and raises one
:class:`~signet.errors.Unauthorized` message for every failure (no detail leak).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from signet.errors import InvalidRequest, Unauthorized

Role = Literal["admin", "operator", "agent", "readonly"]
ROLES: tuple[Role, ...] = ("admin", "operator", "agent", "readonly")
SECRET_BYTES = 32
INVALID = "invalid or expired token"


@dataclass(frozen=True)
class TokenScope:
    project: str | None = None
    agent: str | None = None
    user: str | None = None

    def is_empty(self) -> bool:
        return self.project is None and self.agent is None and self.user is None

    def to_dict(self) -> dict[str, str]:
        return {k: v for k, v in (("project", self.project), ("agent", self.agent), ("user", self.user)) if v}


@dataclass(frozen=True)
class Claims:
    sub: str
    role: Role
    iat: int
    exp: int
    scope: TokenScope = field(default_factory=TokenScope)

    def to_dict(self) -> dict[str, Any]:
        return {"sub": self.sub, "scope": self.scope.to_dict(), "role": self.role, "iat": self.iat, "exp": self.exp}

    def token_id(self, token: str) -> str:
        return token_id(token)


def token_id(token: str) -> str:
    """The revocation key: a hash of the whole token (the token itself is never stored)."""
    return hashlib.sha256(token.encode("ascii", "replace")).hexdigest()


def _b64e(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _b64d(text: str) -> bytes:
    if not text or any(c not in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_" for c in text):
        raise ValueError("not base64url")
    data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if _b64e(data) != text:  # non-canonical (padding bits set): a changed token is a different token
        raise ValueError("not canonical base64url")
    return data


def secret_path(workspace_root: Path) -> Path:
    return workspace_root / ".daemon" / "auth.secret"


def load_secret(workspace_root: Path) -> bytes:
    """The signing secret, created atomically with 0600 on first use."""
    path = secret_path(workspace_root)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".auth.secret.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, secrets.token_bytes(SECRET_BYTES))
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)  # first writer wins; a concurrent creator reads the winner's secret
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
        data = path.read_bytes()
    if len(data) != SECRET_BYTES:
        raise InvalidRequest(f"{path} is not a {SECRET_BYTES}-byte secret; delete it to create a new one")
    return data


def sign(claims: Claims, secret: bytes) -> str:
    payload = _b64e(json.dumps(claims.to_dict(), separators=(",", ":"), sort_keys=True).encode())
    mac = hmac.new(secret, payload.encode("ascii"), hashlib.sha256).digest()
    return f"{payload}.{_b64e(mac)}"


def issue(
    secret: bytes,
    *,
    sub: str,
    role: Role,
    ttl_s: int,
    project: str | None = None,
    agent: str | None = None,
    user: str | None = None,
    now: float | None = None,
) -> tuple[str, Claims]:
    if role not in ROLES:
        raise InvalidRequest(f"unknown role {role!r}; one of {', '.join(ROLES)}")
    if not sub or len(sub) > 200:
        raise InvalidRequest("sub must be 1-200 characters")
    if ttl_s <= 0:
        raise InvalidRequest("ttl must be positive")
    iat = int(now if now is not None else time.time())
    claims = Claims(sub=sub, role=role, iat=iat, exp=iat + ttl_s, scope=TokenScope(project, agent, user))
    return sign(claims, secret), claims


def verify(token: str, secret: bytes, *, now: float | None = None) -> Claims:
    """Claims of a valid, unexpired token; :class:`Unauthorized` (one message) otherwise."""
    try:
        payload_b64, sig_b64 = token.split(".")
        expected = hmac.new(secret, payload_b64.encode("ascii"), hashlib.sha256).digest()
        if not hmac.compare_digest(expected, _b64d(sig_b64)):
            raise ValueError("bad signature")
        raw = json.loads(_b64d(payload_b64))
        scope = raw.get("scope") or {}
        claims = Claims(
            sub=_str(raw["sub"]),
            role=raw["role"],
            iat=int(raw["iat"]),
            exp=int(raw["exp"]),
            scope=TokenScope(_opt(scope.get("project")), _opt(scope.get("agent")), _opt(scope.get("user"))),
        )
        if claims.role not in ROLES:
            raise ValueError("bad role")
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeError):
        raise Unauthorized(INVALID) from None
    if claims.exp <= (now if now is not None else time.time()):
        raise Unauthorized(INVALID)
    return claims


def _str(v: Any) -> str:
    if not isinstance(v, str) or not v:
        raise ValueError("not a string")
    return v


def _opt(v: Any) -> str | None:
    return None if v is None else _str(v)


def parse_ttl(text: str) -> int:
    """``3600``, ``90s``, ``30m``, ``12h``, ``7d`` -> seconds."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    t = text.strip().lower()
    try:
        n = int(t[:-1]) * units[t[-1]] if t and t[-1] in units else int(t)
    except ValueError:
        raise InvalidRequest(f"invalid ttl {text!r}: use seconds or 30m, 12h, 7d") from None
    if n <= 0:
        raise InvalidRequest("ttl must be positive")
    return n
