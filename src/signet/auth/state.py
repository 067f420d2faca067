"""Per-runtime auth state: mode, secret, roster, limiter and the revocation list."""

from __future__ import annotations

import functools
import ipaddress
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from signet.auth.agents import Roster
from signet.auth.bind import LOOPBACK_NAMES, Mode, effective_mode, host_name
from signet.auth.ratelimit import HitCounter, RateLimiter, SharedRateLimiter
from signet.auth.tokens import Claims, load_secret, token_id, verify
from signet.config import Settings
from signet.errors import InvalidRequest, Unauthorized
from signet.store.database import Database

log = logging.getLogger(__name__)


@functools.lru_cache(maxsize=256)
def is_loopback(host: str | None) -> bool:
    """Whether a peer address is loopback (cached: every request asks, about a handful of peers)."""
    if not host:
        return False
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass
class AuthContext:
    """What the middleware decided about one request (``request.state.auth``)."""

    mode: Mode
    local: bool
    claims: Claims | None = None

    @property
    def authenticated(self) -> bool:
        return self.claims is not None


class AuthState:
    def __init__(self, settings: Settings, workspace_root: Any, db: Database, bind_host: str | None = None) -> None:
        self.settings = settings
        self.mode: Mode = effective_mode(settings)
        self.root = workspace_root
        self.db = db
        self.roster = Roster(settings)
        self.limiter: RateLimiter | SharedRateLimiter = (
            SharedRateLimiter(settings.auth.rate_limits, db)  # every daemon of the store counts together
            if isinstance(db, HitCounter)  # PostgreSQL's store: SQLite's has one daemon
            else RateLimiter(settings.auth.rate_limits)
        )
        self._secret: bytes | None = None
        # Seconds since the epoch, for token expiry: a test moves this clock past a token's
        # expiry instead of sleeping through it (a sleep loses the race on a loaded machine).
        self.clock: Callable[[], float] = time.time
        self.roster_synced = False
        hosts = set(LOOPBACK_NAMES)
        hosts.add(settings.daemon.host.lower())
        if bind_host:  # the address the daemon listens on (signet daemon --host)
            hosts.add(bind_host.lower())
        hosts.update(h.lower() for h in settings.auth.allowed_hosts)
        self.allowed_hosts = frozenset(hosts)
        self.allowed_origins = frozenset(o.rstrip("/") for o in settings.auth.cors_origins)

    def sync_roster(self) -> None:
        """Write the roster to the ``agents`` table once the database is open (at start, or on
        the first request to an app whose runtime was started before it was built)."""
        try:
            self.roster.sync(self.db)
        except RuntimeError as exc:  # the runtime has not opened the database yet: retried later
            log.debug("agent roster not synced yet: %s", exc)
            return
        self.roster_synced = True

    def synced(self) -> AuthState:
        """This state, its agent roster written to the database (a runtime started before its
        app was built syncs on the first request)."""
        if not self.roster_synced:
            self.sync_roster()
        return self

    @property
    def secret(self) -> bytes:
        if self._secret is None:
            if self.db.dialect == "postgres":  # one secret for every daemon of the store
                from signet.auth.shared_secret import shared_secret

                self._secret = shared_secret(self.db, self.root)
            else:
                self._secret = load_secret(self.root)
        return self._secret

    def host_allowed(self, host_header: str | None, peer: str | None) -> bool:
        """Only our own names, so a page on another site reaching us by DNS rebinding is refused."""
        if host_header is None:
            return True  # HTTP/1.0 without Host: no browser sends this
        name = host_name(host_header)
        if name in self.allowed_hosts:
            return True
        # Starlette's TestClient: host "testserver" from the peer "testclient", which no real
        # socket can produce (uvicorn always reports an IP address).
        return name == "testserver" and peer == "testclient"

    def authenticate(self, token: str) -> Claims:
        claims = verify(token, self.secret, now=self.clock())
        tid = token_id(token)
        revoked = self.db.read(
            lambda c: c.execute("SELECT 1 FROM auth_revocations WHERE token_id=?", (tid,)).fetchone()
        )
        if revoked is not None:
            raise Unauthorized("invalid or expired token")
        return claims


def revoke(db: Database, token: str, secret: bytes, reason: str | None = None) -> Claims:
    """Add a (validly signed) token to the persistent revocation list."""
    try:
        claims = verify(token, secret, now=0)  # an already-expired token may still be revoked
    except Unauthorized:
        raise InvalidRequest("not a token signed by this workspace's secret") from None
    tid = token_id(token)
    db.write(
        lambda c: c.execute(
            "INSERT OR IGNORE INTO auth_revocations(token_id, sub, expires_at, revoked_at, reason) VALUES (?,?,?,?,?)",
            (tid, claims.sub, claims.exp, int(time.time()), reason),
        )
    )
    return claims
