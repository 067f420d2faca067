"""The Signet MCP server: memory tools and identity resources, for either transport.

Every tool is a thin call through :class:`~signet.sdk.AsyncSignetClient` to the daemon's
HTTP API, so MCP, the SDK, the CLI and plain HTTP share one recall path, one single writer
and one set of checks (auth, scope, rate limits). The transports differ only in the client
they hand the tools: stdio (``signet mcp``) reaches the daemon over the network, the
daemon's own ``/mcp`` endpoint calls its app in-process with the caller's headers.

Tool input schemas are built from fields of the HTTP API's request models
(:mod:`signet.models`), so a constraint changed there changes the tool too; the daemon
validates again with the full model. Output schemas are the API's response models. A
failure (bad argument, unknown id, version conflict, daemon down) comes back as an MCP tool
error (``isError``) with one readable line; the server keeps serving.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError, UnexpectedToolError
from mcp.server.mcpserver.resources import FunctionResource
from mcp_types import CallToolResult, InputRequiredResult, ToolAnnotations
from pydantic import BaseModel, Field, ValidationError
from pydantic_core import PydanticUndefined

from signet import __version__
from signet.errors import InvalidRequest, NotFound, RateLimited, SignetError
from signet.hooks.models import IdentityName
from signet.knowledge.community_read import CommunityList
from signet.knowledge.facts import AttributeList, ClaimList, Status
from signet.knowledge.read import EntityDetail, EntityList, Expansion
from signet.memory.feedback import FeedbackRequest, FeedbackResponse
from signet.models import (
    ForgetRequest,
    ForgetResponse,
    HistoryResponse,
    ListQuery,
    Memory,
    MemoryList,
    MemoryPatchFields,
    ModifyPatch,
    ModifyResult,
    PatchMemoryRequest,
    RecallRequest,
    RecallResponse,
    RecoverRequest,
    RecoverResponse,
    RememberRequest,
    RememberResponse,
)
from signet.sdk import AsyncSignetClient
from signet.sdk._core import validation_message
from signet.secrets.models import ExecRequest, ExecRun, SecretList

ClientFactory = Callable[[Context], AbstractAsyncContextManager[AsyncSignetClient]]
Run = Callable[[AsyncSignetClient, dict[str, Any]], Awaitable[Any]]

IDENTITY_FILES: tuple[IdentityName, ...] = ("AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md", "MEMORY.md")

INSTRUCTIONS = (
    "Signet is your long-term memory across sessions and tools. Search it (memory_search) before answering "
    "questions about the user, their projects, decisions and preferences; store durable facts, decisions and "
    "preferences (memory_store) when you learn them; correct wrong memories with memory_modify instead of "
    "storing contradictions; rate recalled memories with memory_feedback."
)


def fields_of(model: type[BaseModel], *names: str, required: Sequence[str] = ()) -> list[inspect.Parameter]:
    """Keyword parameters copied from ``model``'s fields: type, constraints, default, description."""
    params = []
    for name in names:
        info = model.model_fields[name]
        ann: Any = info.annotation
        extra = [Field(description=info.description)] if info.description else []
        if info.metadata or extra:
            ann = Annotated[(ann, *info.metadata, *extra)]
        default: Any = inspect.Parameter.empty
        if name not in required and info.default is not PydanticUndefined:
            default = info.default
        elif name not in required and info.default_factory is not None:
            default = info.default_factory()  # type: ignore[call-arg]
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=ann))
    return params


def param(name: str, annotation: Any, default: Any = inspect.Parameter.empty) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


def describe(exc: SignetError) -> str:
    """One line an agent can act on: the message, the stable code, and when to retry."""
    text = f"{exc.message} [{exc.code}]"
    if isinstance(exc, RateLimited):
        text += f"; retry after {exc.retry_after} s"
    return text


def given(args: dict[str, Any], *names: str) -> dict[str, Any]:
    """The arguments the agent actually passed (None means "not given" for every optional field)."""
    return {k: args[k] for k in names if args.get(k) is not None}


class SignetTools:
    """Registers the memory tools on an :class:`MCPServer`, all bound to one client factory."""

    def __init__(self, server: MCPServer[Any], client: ClientFactory) -> None:
        self.server = server
        self.client = client

    def add(
        self,
        name: str,
        description: str,
        params: list[inspect.Parameter],
        returns: type[BaseModel],
        run: Run,
        *,
        read_only: bool = False,
        destructive: bool = False,
    ) -> None:
        factory = self.client

        async def tool(ctx: Context, **kwargs: Any) -> Any:
            try:
                async with factory(ctx) as client:
                    return await run(client, kwargs)
            except SignetError as exc:
                raise ToolError(describe(exc)) from exc

        ctx_param = inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context)
        tool.__signature__ = inspect.Signature([ctx_param, *params], return_annotation=returns)  # type: ignore[attr-defined]
        tool.__annotations__ = {"ctx": Context, **{p.name: p.annotation for p in params}, "return": returns}
        tool.__name__ = name
        self.server.add_tool(
            tool,
            name=name,
            description=description,
            structured_output=True,
            annotations=ToolAnnotations(
                read_only_hint=read_only, destructive_hint=destructive, idempotent_hint=read_only, open_world_hint=False
            ),
        )


MEMORY_ID = fields_of(ModifyPatch, "id")


async def _search(c: AsyncSignetClient, a: dict[str, Any]) -> RecallResponse:
    return await c.recall(
        a["query"], **given(a, "limit", "type", "tags", "project", "min_score", "since", "until", "expand")
    )


async def _store(c: AsyncSignetClient, a: dict[str, Any]) -> RememberResponse:
    return await c.remember(a["content"], **given(a, "type", "importance", "tags", "project", "pinned", "who", "why"))


async def _get(c: AsyncSignetClient, a: dict[str, Any]) -> Memory:
    return await c.get(a["id"])


async def _list(c: AsyncSignetClient, a: dict[str, Any]) -> MemoryList:
    return await c.list(**given(a, "limit", "offset", "type", "project", "tags", "pinned", "since", "until"))


async def _modify(c: AsyncSignetClient, a: dict[str, Any]) -> ModifyResult:
    fields: MemoryPatchFields = a["fields"]
    changes = fields.model_dump(exclude_unset=True)
    if not changes:
        raise InvalidRequest("nothing to change: give at least one field in 'fields'")
    return await c.modify(a["id"], reason=a["reason"], **given(a, "if_version"), **changes)


async def _forget(c: AsyncSignetClient, a: dict[str, Any]) -> ForgetResponse:
    selection = given(a, "ids", "query", "type", "tags", "project")
    single = a.get("id")
    if single is not None and selection:
        raise InvalidRequest("give either 'id' (one memory) or a selection (ids, query, filters), not both")
    if single is None and not selection:
        raise InvalidRequest("say what to forget: 'id', or 'ids' / 'query' / type / tags / project")
    if single is not None:
        # One memory the agent named: no preview round trip, but a reason is still required.
        if not a.get("reason"):
            raise InvalidRequest("forgetting a memory needs a 'reason'")
        done = await c.forget(ids=[single], reason=a["reason"], **given(a, "persist"))
        if not done.deleted:
            raise NotFound(f"memory '{single}' not found (or already forgotten)")
        return done
    token = a.get("confirm_token")
    if token is None:
        return await c.forget_preview(**selection)
    if not a.get("reason"):
        raise InvalidRequest("executing a forget needs a 'reason'")
    return await c.forget(**selection, reason=a["reason"], confirm_token=token, **given(a, "persist"))


async def _recover(c: AsyncSignetClient, a: dict[str, Any]) -> RecoverResponse:
    return await c.recover(a["id"], reason=a["reason"], **given(a, "if_version"))


async def _history(c: AsyncSignetClient, a: dict[str, Any]) -> HistoryResponse:
    return await c.history(a["id"])


async def _feedback(c: AsyncSignetClient, a: dict[str, Any]) -> FeedbackResponse:
    return await c.feedback(a["session_id"], ratings=a["ratings"])


async def _entities(c: AsyncSignetClient, a: dict[str, Any]) -> EntityList:
    return await c.knowledge_entities(**given(a, "q", "kind", "limit"))


async def _entity(c: AsyncSignetClient, a: dict[str, Any]) -> EntityDetail:
    return await c.knowledge_entity(a["entity_id"])


async def _expand(c: AsyncSignetClient, a: dict[str, Any]) -> Expansion:
    return await c.knowledge_expand(a["entity_id"], **given(a, "limit"))


async def _attributes(c: AsyncSignetClient, a: dict[str, Any]) -> AttributeList:
    return await c.knowledge_attributes(**given(a, "entity_id", "aspect", "claim_key", "status", "q", "limit"))


async def _claims(c: AsyncSignetClient, a: dict[str, Any]) -> ClaimList:
    return await c.knowledge_claims(**given(a, "entity_id", "claim_key", "changed", "limit"))


async def _communities(c: AsyncSignetClient, a: dict[str, Any]) -> CommunityList:
    return await c.knowledge_communities(**given(a, "limit", "offset", "members"))


ENTITY_ID = [param("entity_id", Annotated[str, Field(min_length=1, max_length=200, description="an entity id")])]


async def _secret_list(c: AsyncSignetClient, a: dict[str, Any]) -> SecretList:
    return await c.secrets()


async def _secret_exec(c: AsyncSignetClient, a: dict[str, Any]) -> ExecRun:
    return await c.secret_exec(a["command"], secrets=a["secrets"], wait=True, **given(a, "timeout_s"))


def register_tools(server: MCPServer[Any], client: ClientFactory) -> None:
    t = SignetTools(server, client)
    t.add(
        "memory_search",
        "Search long-term memory (hybrid keyword + semantic). Returns the best matches with scores; "
        "filter by type, tags, project or time. Use before answering about past work, people, preferences. "
        "A result marked `superseded` states an older value: `superseded_by` is the memory with the current one. "
        "`expand: true` attaches to the best results the conversation turns they were extracted from (`excerpt`).",
        fields_of(RecallRequest, "query", "limit", "type", "tags", "project", "min_score", "since", "until", "expand"),
        RecallResponse,
        _search,
        read_only=True,
    )
    t.add(
        "memory_store",
        "Save one durable memory (a fact, decision, preference, rule…). Identical content is deduplicated. "
        "Prefix `critical:` pins it.",
        fields_of(RememberRequest, "content", "type", "importance", "tags", "project", "pinned", "who", "why"),
        RememberResponse,
        _store,
    )
    t.add(
        "memory_get",
        "Read one memory by id, with its version (for memory_modify's if_version).",
        MEMORY_ID,
        Memory,
        _get,
        read_only=True,
    )
    t.add(
        "memory_list",
        "List memories, newest first, with filters and pagination.",
        fields_of(ListQuery, "limit", "offset", "type", "project", "tags", "pinned", "since", "until"),
        MemoryList,
        _list,
        read_only=True,
    )
    t.add(
        "memory_modify",
        "Correct or update a memory: `fields` holds the new values, `reason` says why (kept in its history). "
        "Pass `if_version` (from memory_get) to refuse the change if someone edited it meanwhile.",
        [
            *MEMORY_ID,
            *fields_of(PatchMemoryRequest, "reason", required=["reason"]),
            param("fields", Annotated[MemoryPatchFields, Field(description="The fields to change.")]),
            *fields_of(PatchMemoryRequest, "if_version"),
        ],
        ModifyResult,
        _modify,
    )
    t.add(
        "memory_forget",
        "Forget memories (recoverable soft delete). One memory: pass `id` and `reason`. Several: pass ids, "
        "query or filters WITHOUT confirm_token to preview the matches, then call again with the same selection, "
        "a `reason` and the preview's `confirm_token` to forget exactly those. `persist: true` retires them for "
        "good: re-ingesting the same transcript or document never brings the text back.",
        [
            param(
                "id",
                Annotated[str | None, Field(min_length=1, max_length=200, description="One memory to forget.")],
                None,
            ),
            *fields_of(ForgetRequest, "ids", "query", "type", "tags", "project", "reason", "confirm_token", "persist"),
        ],
        ForgetResponse,
        _forget,
        destructive=True,
    )
    t.add(
        "memory_recover",
        "Undo a forget (within the retention window); `reason` is required.",
        [*MEMORY_ID, *fields_of(RecoverRequest, "reason", "if_version")],
        RecoverResponse,
        _recover,
    )
    t.add(
        "memory_history",
        "Every change to a memory (created, updated, deleted, recovered), oldest first.",
        MEMORY_ID,
        HistoryResponse,
        _history,
        read_only=True,
    )
    t.add(
        "memory_feedback",
        "Rate memories recalled in this session: positive (helped), negative (wrong or useless), or correction "
        "(with the corrected text). Stored for ranking and repair.",
        fields_of(FeedbackRequest, "session_id", "ratings"),
        FeedbackResponse,
        _feedback,
    )
    t.add(
        "knowledge_list_entities",
        "The people, places, projects, code and other entities your memories name, most mentioned first; "
        "`q` filters by name or alias.",
        [
            param("q", Annotated[str | None, Field(max_length=200, description="part of a name or alias")], None),
            param("kind", Annotated[str | None, Field(max_length=40, description="person, name, code, ...")], None),
            param("limit", Annotated[int | None, Field(ge=1, le=500)], None),
        ],
        EntityList,
        _entities,
        read_only=True,
    )
    t.add(
        "knowledge_get_entity",
        "One entity: its aspects and their attributes (current and superseded facts) and related entities.",
        ENTITY_ID,
        EntityDetail,
        _entity,
        read_only=True,
    )
    t.add(
        "knowledge_expand",
        "The memories an entity leads to (through its current facts and the memories naming it), newest first, "
        "and its related entities.",
        [*ENTITY_ID, param("limit", Annotated[int | None, Field(ge=1, le=200)], None)],
        Expansion,
        _expand,
        read_only=True,
    )
    t.add(
        "knowledge_list_attributes",
        "Facts about your entities across all of them (newest first): filter by entity, aspect, claim key or "
        "text; `status` active (default), superseded or all.",
        [
            param("entity_id", Annotated[str | None, Field(min_length=1, max_length=200)], None),
            param(
                "aspect", Annotated[str | None, Field(min_length=1, max_length=200, description="aspect name")], None
            ),
            param("claim_key", Annotated[str | None, Field(min_length=1, max_length=500)], None),
            param("status", Annotated[Status | None, Field(description="active, superseded or all")], None),
            param("q", Annotated[str | None, Field(max_length=200, description="part of the key or value")], None),
            param("limit", Annotated[int | None, Field(ge=1, le=500)], None),
        ],
        AttributeList,
        _attributes,
        read_only=True,
    )
    t.add(
        "knowledge_claims",
        "What is true now and what it replaced: each claim (an entity's fact that a newer value supersedes) with "
        "its current value and its history, most recently changed first; `changed` keeps the ones that changed.",
        [
            param("entity_id", Annotated[str | None, Field(min_length=1, max_length=200)], None),
            param("claim_key", Annotated[str | None, Field(min_length=1, max_length=500)], None),
            param("changed", Annotated[bool | None, Field(description="only claims with a superseded value")], None),
            param("limit", Annotated[int | None, Field(ge=1, le=200)], None),
        ],
        ClaimList,
        _claims,
        read_only=True,
    )
    t.add(
        "knowledge_list_communities",
        "Groups of entities your memories keep naming together (people, places, projects, code), largest first, "
        "each named by its most mentioned members; `members` sets how many member names each shows.",
        [
            param("limit", Annotated[int | None, Field(ge=1, le=200)], None),
            param("offset", Annotated[int | None, Field(ge=0, le=1_000_000)], None),
            param("members", Annotated[int | None, Field(ge=0, le=50, description="member names per community")], None),
        ],
        CommunityList,
        _communities,
        read_only=True,
    )
    t.add(
        "secret_list",
        "Names of the secrets stored in Signet (API keys, tokens) that secret_exec can inject; never their values. "
        "Needs an admin caller.",
        [],
        SecretList,
        _secret_list,
        read_only=True,
    )
    t.add(
        "secret_exec",
        "Run an allowed command (agent.yaml secrets.exec.allow) with the named secrets as environment variables of "
        "the same name, e.g. command ['gh', 'api', 'user'] with secrets ['GH_TOKEN']. Waits for it to finish; any "
        "secret value in its output is redacted. No shell unless a shell is allowed. Needs an admin caller.",
        fields_of(ExecRequest, "command", "secrets", "timeout_s", required=["command", "secrets"]),
        ExecRun,
        _secret_exec,
    )


def register_identity(server: MCPServer[Any], root: Path) -> None:
    """The workspace's identity files as ``signet://identity/<FILE>`` resources."""
    for name in IDENTITY_FILES:
        path = root / name

        def read(path: Path = path) -> str:
            try:
                return path.read_text(encoding="utf-8")
            except FileNotFoundError:
                raise ResourceError(f"{path.name} does not exist in the workspace {path.parent}") from None

        server.add_resource(
            FunctionResource(
                uri=f"signet://identity/{name}",
                name=name,
                title=f"Identity: {name}",
                mime_type="text/markdown",
                description=f"The agent's {name} from the Signet workspace.",
                fn=read,
            )
        )


class SignetServer(MCPServer[Any]):
    """MCPServer whose argument errors read like the API's: one line, the field, the rule."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError) and not isinstance(exc, UnexpectedToolError):
                raise ToolError(f"{name}: {validation_message(cause)} [invalid_request]") from cause
            raise


def build_server(client: ClientFactory, workspace_root: Path | None) -> MCPServer[Any]:
    server = SignetServer(
        "signet", title="Signet memory", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING"
    )
    register_tools(server, client)
    if workspace_root is not None:
        register_identity(server, workspace_root)
    return server
