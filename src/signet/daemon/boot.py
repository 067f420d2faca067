"""The boot shell: the ASGI app uvicorn serves from its first instant, while the real app is built.

Why: importing FastAPI, the API's pydantic models, the routes and the runtime, and FastAPI
building the app's routes take ~2 s on a small machine, almost all of it fixed cost. A daemon
that listened only after them left every client (``signet start``, a hook, the MCP server's
first call, a service manager's probe) unable to tell "starting" from "absent" for that long.
The shell listens at once and builds the app in a background thread; it never claims to be
ready before the app is:

* ``GET /health`` while starting answers 200 ``{"status": "starting"}`` itself, with the proof
  for a ``?challenge=`` (validated as the real route does), so a client knows this workspace's
  daemon is up and busy. Only what the real app would answer the same way is answered here (a
  loopback or bind-address Host, no Origin, no or this workspace's ``X-Signet-Workspace``);
  anything else waits for the app.
* Every other request waits for the app and is then served by it (never a 404 for a route the
  app will have).
* A build or start-up that fails is logged, answers 503 with the error's one line, and makes
  uvicorn exit; :func:`signet.daemon.server.serve` then raises the error, so the process exits
  non-zero printing that line, as when these checks ran before the daemon listened.
* A stop during the build waits for it (an import or a migration cannot be interrupted), does
  not start the runtime, and cleans up (lock, ``daemon.json``, pid file) as the runtime's stop
  would.

It imports only the standard library and what the daemon needs to listen anyway: it is loaded
before the daemon listens, and each import here delays that.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import threading
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar
from urllib.parse import parse_qsl

from signet.auth.bind import host_name
from signet.errors import SignetError
from signet.instance import CHALLENGE_MAX, WORKSPACE_HEADER, proof

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("signet")

T = TypeVar("T")

BOOT_DELAY_ENV = "SIGNET_TEST_BOOT_DELAY"
"""Test-only: seconds the build waits before it begins, so a test can act "during the build"
deterministically (the build of a test workspace otherwise takes about a second). Unset in use."""

FILE_ONLY = "_signet_file_only"
"""A log record with this attribute set (``extra={FILE_ONLY: True}``) is kept out of stderr by
:class:`StderrGate`: the failure the CLI prints in one line is not printed twice."""

_HEX = re.compile(r"[0-9a-fA-F]+")
_WORKSPACE = WORKSPACE_HEADER.lower().encode("latin-1")


@dataclass
class Built:
    """What the build hands the shell: the app, and what to run once its lifespan started."""

    app: ASGIApp
    started: Callable[[], None]
    """Run on the event loop once the app's lifespan has started (the runtime's index loaders,
    ``Runtime.defer_loaders``)."""


class Exits(Protocol):
    """What the shell needs of uvicorn's server: the flag that ends its main loop."""

    should_exit: bool


class StderrGate(logging.Filter):
    """The daemon's stderr while it starts: informational lines are held until the start is
    decided.

    A start that fails must print its one line, as when its checks ran before the daemon
    listened, not uvicorn's "Application startup complete" and "Uvicorn running on ..." with
    the failure after them; a start that succeeds prints what was held, in order. Warnings and
    errors pass at once (a long migration's notice must not wait for its end); records marked
    :data:`FILE_ONLY` never pass. The workspace log gets everything as it happens."""

    def __init__(self) -> None:
        super().__init__()
        self.handler: logging.Handler | None = None
        self._lock = threading.RLock()
        self._held: list[logging.LogRecord] = []
        self._state = "holding"  # then "open" (started) or "shut" (failed)

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, FILE_ONLY, False):
            return False
        if record.levelno >= logging.WARNING:
            return True
        with self._lock:
            if self._state == "holding":
                self._held.append(record)
                return False
            return self._state == "open"

    def open(self) -> None:
        """The daemon started: print what was held, then pass everything."""
        with self._lock:  # held while replaying, so a new line cannot overtake an older one
            held, self._held, self._state = self._held, [], "open"
            for record in held:
                if self.handler is not None:
                    self.handler.handle(record)

    def shut(self) -> None:
        """The start failed: drop what was held and what follows below warning."""
        with self._lock:
            self._held, self._state = [], "shut"


class BootShell:
    """An ASGI app that answers while ``build`` runs in a thread, then hands every request to
    the app it built (see the module's docstring)."""

    def __init__(
        self,
        build: Callable[[], Built],
        *,
        secret: str,
        workspace_digest: str,
        hosts: Iterable[str],
        cleanup: Callable[[], None],
        gate: StderrGate | None = None,
    ) -> None:
        self._build = build
        self._secret = secret
        self._digest = workspace_digest
        self._hosts = frozenset(h.lower() for h in hosts)
        self._cleanup = cleanup
        self._gate = gate
        self.server: Exits | None = None
        """uvicorn's server, set once it exists: a failed start ends it, a stop is seen in it."""
        self.error: BaseException | None = None
        """Why the start failed (None while it runs, when it succeeded or was stopped)."""
        self._refusal: dict[str, str] | None = None
        self._app: ASGIApp | None = None
        self._lifespan: _AppLifespan | None = None
        self._settled: asyncio.Event | None = None
        self._boot: asyncio.Task[None] | None = None
        self._closing = False
        self._state: dict[str, Any] = {}

    # -- ASGI ------------------------------------------------------------------------------
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        app = self._app
        if app is not None:  # built and started: the shell is out of the way
            await app(scope, receive, send)
            return
        if scope["type"] == "lifespan":
            await self._run_lifespan(scope, receive, send)
            return
        if self._answers_health(scope):
            await self._health(scope, send)
            return
        if self._settled is not None:
            await self._settled.wait()
        app = self._app
        if app is not None:
            await app(scope, receive, send)
        elif scope["type"] == "http":
            await _send_json(send, 503, self._refusal or _STOPPING)
        # a websocket that arrives after a failed start: the server closes it unanswered

    async def _run_lifespan(self, scope: Scope, receive: Receive, send: Send) -> None:
        state = scope.get("state")
        if isinstance(state, dict):  # uvicorn's lifespan state: copied into every request's scope
            self._state = state
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self._settled = asyncio.Event()
                self._boot = asyncio.create_task(self._start(), name="signet-boot")
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self._stop()
                await send({"type": "lifespan.shutdown.complete"})
                return

    # -- the build -------------------------------------------------------------------------
    async def _start(self) -> None:
        began = time.monotonic()
        assert self._settled is not None
        try:
            built = await _in_thread(self._delayed_build, "signet-build")
            if self._stopping():
                log.info("signet daemon stopping: its app is built, the runtime is not started")
                self._refusal = _STOPPING
                return
            lifespan = _AppLifespan(built.app, self._state)
            await lifespan.startup()
            self._lifespan = lifespan  # started: from now on a stop goes through its shutdown
            built.started()
            self._app = built.app
        except Exception as exc:  # noqa: BLE001 - any failure is the start's: logged, 503, raised by serve()
            self._fail(exc)
            return
        finally:
            self._settled.set()  # the requests that waited go on: to the app, or a 503
        log.info("signet daemon ready: its app was built and started in %.2f s", time.monotonic() - began)
        if self._gate is not None:
            self._gate.open()

    def _delayed_build(self) -> Built:
        delay = os.environ.get(BOOT_DELAY_ENV)
        if delay:
            try:
                seconds = float(delay)
            except ValueError:
                raise SignetError(f"{BOOT_DELAY_ENV} must be a number of seconds, not {delay!r}") from None
            time.sleep(seconds)
        return self._build()

    def _stopping(self) -> bool:
        return self._closing or (self.server is not None and self.server.should_exit)

    def _fail(self, exc: Exception) -> None:
        line = one_line(exc)
        self.error = exc
        self._refusal = {"error": line, "code": exc.code if isinstance(exc, SignetError) else "start_failed"}
        if self._gate is not None:
            self._gate.shut()
        if isinstance(exc, SignetError | OSError):
            log.error("the daemon could not start: %s", line, extra={FILE_ONLY: True})
        else:  # a bug: its traceback goes to the log, and to stderr when serve() raises it again
            log.error("the daemon could not start: %s", line, exc_info=exc, extra={FILE_ONLY: True})
        if self.server is not None:
            self.server.should_exit = True

    async def _stop(self) -> None:
        """Shutdown: let the build finish, then stop the app if it started, else clean up."""
        self._closing = True
        boot = self._boot
        if boot is not None and not boot.done():
            log.info("signet daemon stopping: waiting for its app's build to finish")
            await asyncio.wait({boot})
        lifespan, self._lifespan = self._lifespan, None
        if lifespan is not None:
            await lifespan.shutdown()  # the runtime stops; its after_stop releases the lock
        else:
            self._cleanup()

    # -- /health while starting ------------------------------------------------------------
    def _answers_health(self, scope: Scope) -> bool:
        """Whether the real app would answer this request as the shell does: ``GET /health``
        from a name the daemon accepts, without an Origin, for this workspace (or none)."""
        if scope["type"] != "http" or scope.get("method") != "GET" or scope.get("path") != "/health":
            return False
        host: str | None = None
        for name, value in scope.get("headers", []):
            if name == b"origin":
                return False
            if name == _WORKSPACE and value.decode("latin-1") != self._digest:
                return False
            if name == b"host" and host is None:
                host = value.decode("latin-1")
        return host is None or host_name(host) in self._hosts

    async def _health(self, scope: Scope, send: Send) -> None:
        """``starting`` (200), or after a failed or stopped start its 503: with the proof either
        way, so `signet start` knows its own daemon failed rather than another program."""
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True))
        challenge = query.get("challenge")
        status, body = (200, {"status": "starting"}) if self._refusal is None else (503, dict(self._refusal))
        if challenge is not None:
            problem = _challenge_problem(challenge)
            if problem is not None:
                await _send_json(send, 422, _invalid("query.challenge", problem))
                return
            body["proof"] = proof(self._secret, challenge)
        await _send_json(send, status, body)


class _AppLifespan:
    """Runs an ASGI app's lifespan as a server does: startup now, shutdown later, both in one
    task (the app's lifespan context, and the task groups inside it, live in that task)."""

    def __init__(self, app: ASGIApp, state: dict[str, Any]) -> None:
        self._app = app
        self._state = state
        self._inbox: asyncio.Queue[Message] = asyncio.Queue()
        self._outbox: asyncio.Queue[Message] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None

    async def startup(self) -> None:
        scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}, "state": self._state}
        self._task = asyncio.create_task(self._run(scope), name="signet-app-lifespan")
        await self._inbox.put({"type": "lifespan.startup"})
        reply = await self._reply()
        if reply is not None and reply["type"] == "lifespan.startup.complete":
            return
        raise await self._why(reply, "start")

    async def shutdown(self) -> None:
        await self._inbox.put({"type": "lifespan.shutdown"})
        reply = await self._reply()
        if reply is None or reply["type"] != "lifespan.shutdown.complete":
            exc = await self._why(reply, "stop")
            log.error("the daemon's app did not stop cleanly: %s", one_line(exc), exc_info=exc)
        elif self._task is not None:
            await asyncio.wait({self._task})

    async def _run(self, scope: Scope) -> None:
        await self._app(scope, self._inbox.get, self._outbox.put)

    async def _reply(self) -> Message | None:
        """The app's next lifespan message; None when its lifespan ended without one."""
        assert self._task is not None
        getter = asyncio.ensure_future(self._outbox.get())
        await asyncio.wait({getter, self._task}, return_when=asyncio.FIRST_COMPLETED)
        if getter.done():
            return getter.result()
        getter.cancel()
        return None

    async def _why(self, reply: Message | None, what: str) -> Exception:
        """The exception the app's lifespan ended with (Starlette sends "failed", then raises)."""
        assert self._task is not None
        await asyncio.wait({self._task})
        exc = None if self._task.cancelled() else self._task.exception()
        if isinstance(exc, Exception):
            return exc
        detail = str(reply.get("message", "")).strip().splitlines() if reply is not None else []
        return RuntimeError(f"the app's lifespan did not {what}" + (f": {detail[-1]}" if detail else ""))


async def _in_thread(fn: Callable[[], T], name: str) -> T:
    """``fn()`` in a thread of its own (named, for py-spy and the log), awaited on the loop.
    Not a daemon thread: the interpreter never exits in the middle of a build (a migration)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()

    def run() -> None:
        try:
            result = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the awaiting task via its future
            _call_soon(loop, _set_exception, done, exc)
        else:
            _call_soon(loop, _set_result, done, result)

    threading.Thread(target=run, name=name).start()
    return await done


def _set_result(done: asyncio.Future[T], result: T) -> None:
    if not done.done():
        done.set_result(result)


def _set_exception(done: asyncio.Future[Any], exc: BaseException) -> None:
    if not done.done():
        done.set_exception(exc)


def _call_soon(loop: asyncio.AbstractEventLoop, fn: Callable[..., None], *args: Any) -> None:
    try:
        loop.call_soon_threadsafe(fn, *args)
    except RuntimeError:  # the loop is closed: the process is exiting and nobody waits
        log.warning("the daemon's build finished after its event loop closed")


def one_line(exc: BaseException) -> str:
    """What the CLI prints for ``exc`` (signet.cli.app): a SignetError's message, a file error's
    reason and file, anything else its type and text."""
    if isinstance(exc, SignetError):
        return exc.message
    if isinstance(exc, OSError):
        where = f": {exc.filename}" if exc.filename else ""
        return f"{exc.strerror or exc}{where}"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _challenge_problem(challenge: str) -> str | None:
    """Why the real route (FastAPI's validation of its ``challenge`` query) would refuse it."""
    if len(challenge) > CHALLENGE_MAX:
        return f"String should have at most {CHALLENGE_MAX} characters"
    if not _HEX.fullmatch(challenge):
        return "String should match pattern '^[0-9a-fA-F]+$'"
    return None


def _invalid(field: str, message: str) -> dict[str, Any]:
    """The body of the app's 422 (signet.daemon.errors), for one problem."""
    return {
        "error": f"invalid request: {field}: {message}",
        "code": "invalid_request",
        "problems": [{"field": field, "message": message}],
    }


_STOPPING = {"error": "the daemon is stopping; start it again with `signet start`", "code": "daemon_stopping"}


async def _send_json(send: Callable[[Message], Awaitable[None]], status: int, body: dict[str, Any]) -> None:
    data = json.dumps(body, separators=(",", ":")).encode("utf-8")
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode("ascii"))]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})
