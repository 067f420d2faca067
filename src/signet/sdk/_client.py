"""The two thin drivers: :class:`SignetClient` (sync) and :class:`AsyncSignetClient`.

Each operation of :mod:`signet.sdk._ops` is attached once, to a shared mixin, through the
:class:`Op` descriptor. Looked up on a sync client it runs ``_execute`` and returns the
model; on an async client it returns a coroutine. The drivers differ only in how one
:class:`~signet.sdk._core.Call` travels over httpx, so there is no second copy of any
operation to drift (and mypy sees the real signature and return type of both).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Generic, ParamSpec, TypeVar, overload

import httpx

from signet.errors import DaemonUnavailable
from signet.instance import workspace_header
from signet.sdk import _ops, _ops_admin, _ops_content, _ops_lifecycle, _ops_upkeep
from signet.sdk._core import Call, read_response

P = ParamSpec("P")
T = TypeVar("T")

DEFAULT_TIMEOUT = 30.0

# A keep-alive connection the daemon closed after answering (uvicorn does after a 500) fails
# the next request before the daemon reads it (disconnected, reset, broken pipe): that one is
# retried once, on a fresh connection. Refused connections and timeouts are not retried.
STALE_CONNECTION = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)


def _default_url() -> str:
    from signet.address import base_url  # SIGNET_HOST/SIGNET_PORT, then agent.yaml, then 127.0.0.1:3850

    return base_url()


def _workspace_header(url: str) -> dict[str, str]:
    """``X-Signet-Workspace`` for a daemon on this machine when the caller names its workspace
    (``SIGNET_WORKSPACE``): a daemon serving another workspace then refuses with 409
    ``wrong_workspace`` (signet.instance). Remote (team) daemons serve other workspaces by design."""
    root = os.environ.get("SIGNET_WORKSPACE")
    return workspace_header(httpx.URL(url).host, Path(root)) if root else {}


def _headers(token: str | None, actor: str | None, extra: Mapping[str, str] | None, url: str) -> dict[str, str]:
    headers = {"X-Signet-Actor": actor or "sdk", **_workspace_header(url)}
    token = token if token is not None else os.environ.get("SIGNET_TOKEN")
    if token:
        headers["Authorization"] = f"Bearer {token}"
    headers.update(extra or {})
    return headers


def _unreachable(url: str, exc: httpx.TransportError) -> DaemonUnavailable:
    if isinstance(exc, STALE_CONNECTION):
        return DaemonUnavailable(f"the Signet daemon at {url} closed the connection without answering", url=url)
    if isinstance(exc, httpx.TimeoutException):
        return DaemonUnavailable(f"the Signet daemon at {url} did not answer in time", url=url)
    return DaemonUnavailable(f"the Signet daemon is not running at {url}; start it with `signet start`", url=url)


class SyncDriver:
    """Sends one call with ``httpx.Client``."""

    def __init__(
        self,
        url: str | None = None,
        *,
        token: str | None = None,
        actor: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        headers: Mapping[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = (url or _default_url()).rstrip("/")
        # With an explicit transport, proxy variables from the environment must not reroute calls.
        self._http = httpx.Client(
            base_url=self.url,
            timeout=timeout,
            headers=_headers(token, actor, headers, self.url),
            transport=transport,
            trust_env=transport is None,
        )

    def _execute(self, call: Call[T]) -> T:
        for attempt in range(2):
            try:
                resp = self._http.request(call.method, call.path, json=call.json, params=dict(call.params) or None)
                break
            except STALE_CONNECTION as exc:
                if attempt:
                    raise _unreachable(self.url, exc) from None
            except httpx.TransportError as exc:
                raise _unreachable(self.url, exc) from None
        return read_response(call, resp.status_code, resp.headers, resp.content)

    def close(self) -> None:
        self._http.close()

    def __enter__(self: _S) -> _S:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class AsyncDriver:
    """Sends one call with ``httpx.AsyncClient``."""

    def __init__(
        self,
        url: str | None = None,
        *,
        token: str | None = None,
        actor: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        headers: Mapping[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.url = (url or _default_url()).rstrip("/")
        self._http = httpx.AsyncClient(
            base_url=self.url,
            timeout=timeout,
            headers=_headers(token, actor, headers, self.url),
            transport=transport,
            trust_env=transport is None,
        )

    async def _execute(self, call: Call[T]) -> T:
        for attempt in range(2):
            try:
                resp = await self._http.request(
                    call.method, call.path, json=call.json, params=dict(call.params) or None
                )
                break
            except STALE_CONNECTION as exc:
                if attempt:
                    raise _unreachable(self.url, exc) from None
            except httpx.TransportError as exc:
                raise _unreachable(self.url, exc) from None
        return read_response(call, resp.status_code, resp.headers, resp.content)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self: _A) -> _A:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


_S = TypeVar("_S", bound=SyncDriver)
_A = TypeVar("_A", bound=AsyncDriver)
D = TypeVar("D", SyncDriver, AsyncDriver)


class Group(Generic[D]):
    """A namespace of related operations on a client (``client.documents.add(...)``): its
    :class:`Op` methods run on the client's driver, sync or async like the client."""

    def __init__(self, driver: D) -> None:
        self._driver: D = driver


class Op(Generic[P, T]):
    """An operation as a method: returns ``T`` on a sync client, ``Awaitable[T]`` on an async one."""

    def __init__(self, build: Callable[P, Call[T]]) -> None:
        self.build = build
        self.__doc__ = build.__doc__

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> Op[P, T]: ...

    @overload
    def __get__(self, obj: AsyncDriver | Group[AsyncDriver], owner: type[Any]) -> Callable[P, Awaitable[T]]: ...

    @overload
    def __get__(self, obj: SyncDriver | Group[SyncDriver], owner: type[Any]) -> Callable[P, T]: ...

    def __get__(self, obj: object, owner: type[Any]) -> Any:
        if obj is None:
            return self
        if isinstance(obj, Group):
            obj = obj._driver
        build = self.build
        if isinstance(obj, AsyncDriver):
            driver = obj

            async def run_async(*args: P.args, **kwargs: P.kwargs) -> T:
                return await driver._execute(build(*args, **kwargs))

            return functools.wraps(build)(run_async)
        if isinstance(obj, SyncDriver):
            sync_driver = obj

            def run(*args: P.args, **kwargs: P.kwargs) -> T:
                return sync_driver._execute(build(*args, **kwargs))

            return functools.wraps(build)(run)
        raise TypeError(f"{type(obj).__name__} is not a Signet client")


class _Operations:
    """The SDK's surface, shared by both clients. See :mod:`signet.sdk._ops` for each method."""

    remember = Op(_ops.remember)
    remember_batch = Op(_ops.remember_batch)
    recall = Op(_ops.recall)
    get = Op(_ops.get)
    list = Op(_ops.list_memories)
    modify = Op(_ops.modify)
    modify_batch = Op(_ops.modify_batch)
    delete = Op(_ops.delete)
    forget_preview = Op(_ops.forget_preview)
    forget = Op(_ops.forget)
    recover = Op(_ops.recover)
    history = Op(_ops.history)
    feedback = Op(_ops.feedback)
    list_feedback = Op(_ops.list_feedback)
    knowledge_entities = Op(_ops.knowledge_entities)
    knowledge_entity = Op(_ops.knowledge_entity)
    knowledge_expand = Op(_ops.knowledge_expand)
    knowledge_attributes = Op(_ops.knowledge_attributes)
    knowledge_claims = Op(_ops.knowledge_claims)
    knowledge_communities = Op(_ops.knowledge_communities)
    knowledge_community = Op(_ops.knowledge_community)
    refresh_communities = Op(_ops.refresh_communities)
    status = Op(_ops.status)
    health = Op(_ops.health)
    session_start = Op(_ops.session_start)
    prompt_submit = Op(_ops.prompt_submit)
    session_end = Op(_ops.session_end)
    hook_remember = Op(_ops.hook_remember)
    hook_recall = Op(_ops.hook_recall)
    pre_compaction = Op(_ops.pre_compaction)
    compaction_complete = Op(_ops.compaction_complete)
    secrets = Op(_ops.secrets)
    secret_exec = Op(_ops.secret_exec)
    secret_run = Op(_ops.secret_run)
    # lifecycle (history, recover and feedback are above)
    split = Op(_ops_lifecycle.split)
    unretire = Op(_ops_lifecycle.unretire)
    retirements = Op(_ops_lifecycle.retirements)
    sources = Op(_ops_lifecycle.sources)
    signals = Op(_ops_lifecycle.signals)
    ack_signals = Op(_ops_lifecycle.ack_signals)
    # daemon health and data
    diagnostics = Op(_ops_upkeep.diagnostics)
    diagnostics_domain = Op(_ops_upkeep.diagnostics_domain)
    embeddings_status = Op(_ops_upkeep.embeddings_status)
    backups = Op(_ops_admin.backups)
    backup = Op(_ops_admin.backup)
    export = Op(_ops_admin.export)
    import_lines = Op(_ops_admin.import_lines)


class Documents(Group[D]):
    """``client.documents``: web pages, files and texts chunked into memories (docs/documents.md)."""

    add = Op(_ops_content.add_document)
    list = Op(_ops_content.list_documents)
    get = Op(_ops_content.get_document)
    chunks = Op(_ops_content.document_chunks)
    delete = Op(_ops_content.delete_document)


class Connectors(Group[D]):
    """``client.connectors``: folders kept in sync as documents."""

    create = Op(_ops_content.create_connector)
    list = Op(_ops_content.list_connectors)
    get = Op(_ops_content.get_connector)
    health = Op(_ops_content.connector_health)
    sync = Op(_ops_content.sync_connector)
    delete = Op(_ops_content.delete_connector)


class Tasks(Group[D]):
    """``client.tasks``: scheduled commands and harness prompts (docs/tasks.md)."""

    list = Op(_ops_admin.list_tasks)
    create = Op(_ops_admin.create_task)
    get = Op(_ops_admin.get_task)
    update = Op(_ops_admin.update_task)
    delete = Op(_ops_admin.delete_task)
    run = Op(_ops_admin.run_task)
    runs = Op(_ops_admin.task_runs)


class Skills(Group[D]):
    """``client.skills``: installed skills and the skills index (docs/skills.md)."""

    list = Op(_ops_admin.list_skills)
    search = Op(_ops_admin.search_skills)
    get = Op(_ops_admin.get_skill)
    install = Op(_ops_admin.install_skill)
    remove = Op(_ops_admin.remove_skill)
    use = Op(_ops_admin.use_skill)


class Pipeline(Group[D]):
    """``client.pipeline``: the extraction queue (docs/pipeline.md)."""

    status = Op(_ops_upkeep.pipeline_status)
    jobs = Op(_ops_upkeep.pipeline_jobs)
    job = Op(_ops_upkeep.pipeline_job)
    requeue_dead = Op(_ops_upkeep.requeue_dead)
    release_leases = Op(_ops_upkeep.release_leases)


class Repair(Group[D]):
    """``client.repair``: the repair actions (through the daemon's repair gate) and the maintenance worker."""

    retention_sweep = Op(_ops_upkeep.retention_sweep)
    check_fts = Op(_ops_upkeep.check_fts)
    embedding_gaps = Op(_ops_upkeep.embedding_gaps)
    re_embed = Op(_ops_upkeep.re_embed)
    clean_orphans = Op(_ops_upkeep.clean_orphans)
    dedup_stats = Op(_ops_upkeep.dedup_stats)
    deduplicate = Op(_ops_upkeep.deduplicate)
    audit = Op(_ops_upkeep.repair_audit)
    maintenance = Op(_ops_upkeep.maintenance)
    run_maintenance = Op(_ops_upkeep.run_maintenance)


class Consolidation(Group[D]):
    """``client.consolidation``: plan, apply, list and undo consolidation runs (docs/lifecycle.md)."""

    plan = Op(_ops_lifecycle.consolidation_plan)
    apply = Op(_ops_lifecycle.consolidation_apply)
    list = Op(_ops_lifecycle.consolidation_runs)
    get = Op(_ops_lifecycle.consolidation_run)
    undo = Op(_ops_lifecycle.consolidation_undo)


class Continuity(Group[D]):
    """``client.continuity``: checkpoints, session summaries and MEMORY.md synthesis."""

    checkpoints = Op(_ops_lifecycle.checkpoints)
    session_checkpoints = Op(_ops_lifecycle.session_checkpoints)
    status = Op(_ops_lifecycle.continuity_status)
    synthesis_request = Op(_ops_lifecycle.synthesis_request)
    write_synthesis = Op(_ops_lifecycle.write_synthesis)
    synthesize = Op(_ops_lifecycle.synthesize)
    remove_summaries = Op(_ops_lifecycle.remove_summaries)


class Git(Group[D]):
    """``client.git``: the workspace repository's sync (docs/git.md)."""

    status = Op(_ops_admin.git_status)
    config = Op(_ops_admin.git_config)
    set_remote = Op(_ops_admin.git_set_remote)
    pull = Op(_ops_admin.git_pull)
    push = Op(_ops_admin.git_push)
    sync = Op(_ops_admin.git_sync)


class Analytics(Group[D]):
    """``client.analytics``: usage, latency and errors since the daemon started."""

    usage = Op(_ops_admin.analytics_usage)
    latency = Op(_ops_admin.analytics_latency)
    errors = Op(_ops_admin.analytics_errors)


class SignetClient(SyncDriver, _Operations):
    """Blocking client of the Signet daemon.

    ``url`` defaults to ``SIGNET_HOST``/``SIGNET_PORT``, then agent.yaml's ``daemon``
    section, then ``http://127.0.0.1:3850``; ``token`` to ``SIGNET_TOKEN`` (team mode).
    Memory operations are methods; the other areas are namespaces (``client.documents``,
    ``client.tasks``, …) with the same typing.
    """

    @functools.cached_property
    def documents(self) -> Documents[SyncDriver]:
        return Documents(self)

    @functools.cached_property
    def connectors(self) -> Connectors[SyncDriver]:
        return Connectors(self)

    @functools.cached_property
    def tasks(self) -> Tasks[SyncDriver]:
        return Tasks(self)

    @functools.cached_property
    def skills(self) -> Skills[SyncDriver]:
        return Skills(self)

    @functools.cached_property
    def pipeline(self) -> Pipeline[SyncDriver]:
        return Pipeline(self)

    @functools.cached_property
    def repair(self) -> Repair[SyncDriver]:
        return Repair(self)

    @functools.cached_property
    def consolidation(self) -> Consolidation[SyncDriver]:
        return Consolidation(self)

    @functools.cached_property
    def continuity(self) -> Continuity[SyncDriver]:
        return Continuity(self)

    @functools.cached_property
    def git(self) -> Git[SyncDriver]:
        return Git(self)

    @functools.cached_property
    def analytics(self) -> Analytics[SyncDriver]:
        return Analytics(self)


class AsyncSignetClient(AsyncDriver, _Operations):
    """The same client for asyncio: every method returns an awaitable of the same model."""

    @functools.cached_property
    def documents(self) -> Documents[AsyncDriver]:
        return Documents(self)

    @functools.cached_property
    def connectors(self) -> Connectors[AsyncDriver]:
        return Connectors(self)

    @functools.cached_property
    def tasks(self) -> Tasks[AsyncDriver]:
        return Tasks(self)

    @functools.cached_property
    def skills(self) -> Skills[AsyncDriver]:
        return Skills(self)

    @functools.cached_property
    def pipeline(self) -> Pipeline[AsyncDriver]:
        return Pipeline(self)

    @functools.cached_property
    def repair(self) -> Repair[AsyncDriver]:
        return Repair(self)

    @functools.cached_property
    def consolidation(self) -> Consolidation[AsyncDriver]:
        return Consolidation(self)

    @functools.cached_property
    def continuity(self) -> Continuity[AsyncDriver]:
        return Continuity(self)

    @functools.cached_property
    def git(self) -> Git[AsyncDriver]:
        return Git(self)

    @functools.cached_property
    def analytics(self) -> Analytics[AsyncDriver]:
        return Analytics(self)
