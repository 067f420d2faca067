"""The MCP server through the official ``mcp`` client, on both transports: ``signet mcp``
as a stdio subprocess and the daemon's ``/mcp`` (Streamable HTTP), against a real daemon."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
from mcp import Client

from signet.memory.feedback import FeedbackRequest
from signet.models import MemoryPatchFields, RecallRequest, RememberRequest
from tests.conftest import DaemonProcess
from tests.mcp.conftest import run

TOOLS = {
    "memory_search",
    "memory_store",
    "memory_get",
    "memory_list",
    "memory_modify",
    "memory_forget",
    "memory_recover",
    "memory_history",
    "memory_feedback",
    "knowledge_list_entities",
    "knowledge_get_entity",
    "knowledge_expand",
    "knowledge_list_attributes",
    "knowledge_claims",
    "knowledge_list_communities",
    "secret_list",
    "secret_exec",
}


async def ok(c: Client, name: str, **args: Any) -> dict[str, Any]:
    r = await c.call_tool(name, args)
    assert not r.is_error, f"{name}: {r.content}"
    assert r.structured_content is not None
    # the text block carries the same result for clients that ignore structured content
    assert json.loads(r.content[0].text) == r.structured_content  # type: ignore[union-attr]
    return r.structured_content


async def fails(c: Client, name: str, **args: Any) -> str:
    r = await c.call_tool(name, args)
    assert r.is_error, f"{name} should have failed: {r.structured_content}"
    text: str = r.content[0].text  # type: ignore[union-attr]
    assert "\n" not in text  # one line, never a traceback or a multi-line dump
    return text


def test_tools_schemas_and_resources(target: Any, mcp_daemon: DaemonProcess) -> None:
    async def scenario() -> None:
        async with Client(target) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            assert set(tools) == TOOLS
            search = tools["memory_search"].input_schema
            assert set(search["properties"]) == {
                "query",
                "limit",
                "type",
                "tags",
                "project",
                "min_score",
                "since",
                "until",
                "expand",
            }
            assert search["required"] == ["query"]
            # derived from the HTTP API's model: same constraints, same descriptions
            api = RecallRequest.model_json_schema()["properties"]
            for field in ("limit", "min_score", "query", "expand"):
                mine = {k: v for k, v in search["properties"][field].items() if k != "title"}
                theirs = {k: v for k, v in api[field].items() if k != "title"}
                assert mine == theirs, field
            store = tools["memory_store"].input_schema
            content_api = RememberRequest.model_json_schema()["properties"]["content"]
            assert store["properties"]["content"]["maxLength"] == content_api["maxLength"]
            assert store["properties"]["content"]["minLength"] == content_api["minLength"] == 1
            modify = tools["memory_modify"].input_schema
            assert set(modify["required"]) == {"id", "reason", "fields"}
            patch_fields = modify["$defs"]["MemoryPatchFields"]["properties"]
            assert set(patch_fields) == set(MemoryPatchFields.model_fields)
            forget = tools["memory_forget"].input_schema
            assert {"id", "ids", "query", "reason", "confirm_token"} <= set(forget["properties"])
            feedback = tools["memory_feedback"].input_schema
            assert set(feedback["required"]) == {"session_id", "ratings"}
            assert FeedbackRequest.model_fields["ratings"].is_required()
            # output schemas are the API's response models
            assert "results" in tools["memory_search"].output_schema["properties"]  # type: ignore[index]
            assert tools["memory_search"].annotations.read_only_hint is True  # type: ignore[union-attr]
            assert tools["memory_forget"].annotations.destructive_hint is True  # type: ignore[union-attr]

            uris = {str(r.uri) for r in (await c.list_resources()).resources}
            assert uris == {
                f"signet://identity/{n}" for n in ("AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md", "MEMORY.md")
            }
            agents = await c.read_resource("signet://identity/AGENTS.md")
            text = agents.contents[0].text  # type: ignore[union-attr]
            assert text == (mcp_daemon.workspace.root / "AGENTS.md").read_text(encoding="utf-8")

    run(scenario())


def test_every_tool_and_errors_keep_the_server_serving(target: Any, mcp_daemon: DaemonProcess) -> None:
    tag = f"t{uuid.uuid4().hex[:8]}"

    async def scenario() -> None:
        async with Client(target) as c:
            stored = await ok(
                c,
                "memory_store",
                content=f"The {tag} deploy script lives in ops/deploy.sh",
                tags=[tag],
                project="web",
                importance=0.6,
            )
            mid = stored["id"]
            assert stored["deduped"] is False and stored["tags"] == [tag]

            found = await ok(c, "memory_search", query=f"{tag} deploy script", tags=[tag], project="web")
            assert [r["id"] for r in found["results"]] == [mid]
            assert (await ok(c, "memory_search", query=f"{tag} deploy", project="elsewhere"))["results"] == []

            mem = await ok(c, "memory_get", id=mid)
            assert mem["version"] == 1 and mem["importance"] == 0.6
            listed = await ok(c, "memory_list", tags=[tag])
            assert [m["id"] for m in listed["items"]] == [mid] and listed["total"] == 1

            changed = await ok(
                c,
                "memory_modify",
                id=mid,
                reason="the script moved",
                if_version=1,
                fields={"content": f"The {tag} deploy script lives in ops/ship.sh", "importance": 0.9},
            )
            assert changed["status"] == "updated" and changed["new_version"] == 2
            assert "[version_conflict]" in await fails(
                c, "memory_modify", id=mid, reason="stale", if_version=1, fields={"pinned": True}
            )

            # bad arguments: tool errors, and the server keeps answering
            assert await fails(c, "memory_search", query="x", limit=0) == (
                "memory_search: invalid request: limit: Input should be greater than or equal to 1 [invalid_request]"
            )
            assert "content" in await fails(c, "memory_store", content="   ")
            assert "colour" in await fails(c, "memory_modify", id=mid, reason="r", fields={"colour": "red"})
            assert "nothing to change" in await fails(c, "memory_modify", id=mid, reason="r", fields={})
            assert "[not_found]" in await fails(c, "memory_get", id="no-such-memory")
            assert "say what to forget" in await fails(c, "memory_forget", reason="r")
            assert "reason" in await fails(c, "memory_forget", id=mid)
            r = await c.call_tool("no_such_tool", {})
            assert r.is_error
            assert (await ok(c, "memory_get", id=mid))["version"] == 2

            gone = await ok(c, "memory_forget", id=mid, reason="obsolete")
            assert gone["deleted"] == [mid] and gone["mode"] == "execute"
            assert (await ok(c, "memory_search", query=f"{tag} deploy script", tags=[tag]))["results"] == []
            assert "[not_found]" in await fails(c, "memory_forget", id=mid, reason="again")
            back = await ok(c, "memory_recover", id=mid, reason="still needed")
            assert back["status"] == "recovered"
            assert "[not_deleted]" in await fails(c, "memory_recover", id=mid, reason="twice")
            events = (await ok(c, "memory_history", id=mid))["events"]
            assert [e["event"] for e in events] == ["created", "modified", "deleted", "recovered"]
            assert {e["changed_by"] for e in events[1:]} == {"mcp"}

            # batch forget: preview first, then exactly the previewed set with its token
            batch = [
                (await ok(c, "memory_store", content=f"{tag} batch item {i}", tags=[f"{tag}-b"]))["id"]
                for i in range(3)
            ]
            preview = await ok(c, "memory_forget", tags=[f"{tag}-b"])
            assert preview["mode"] == "preview" and sorted(x["id"] for x in preview["candidates"]) == sorted(batch)
            assert (await ok(c, "memory_list", tags=[f"{tag}-b"]))["total"] == 3  # a preview deletes nothing
            assert "reason" in await fails(
                c, "memory_forget", tags=[f"{tag}-b"], confirm_token=preview["confirm_token"]
            )
            late = (await ok(c, "memory_store", content=f"{tag} batch item late", tags=[f"{tag}-b"]))["id"]
            assert "[confirm_token_mismatch]" in await fails(
                c, "memory_forget", tags=[f"{tag}-b"], reason="cleanup", confirm_token=preview["confirm_token"]
            )
            await ok(c, "memory_forget", id=late, reason="not part of the preview")
            done = await ok(
                c, "memory_forget", tags=[f"{tag}-b"], reason="cleanup", confirm_token=preview["confirm_token"]
            )
            assert sorted(done["deleted"]) == sorted(batch)

            rated = await ok(
                c,
                "memory_feedback",
                session_id=f"s-{tag}",
                ratings=[
                    {"memory_id": mid, "feedback": "positive"},
                    {"memory_id": mid, "feedback": "correction", "correction": "it is ops/ship.sh since May"},
                ],
            )
            assert rated["recorded"] == 2 and {i["actor"] for i in rated["items"]} == {"mcp"}
            assert "[not_found]" in await fails(
                c, "memory_feedback", session_id="s", ratings=[{"memory_id": "nope", "feedback": "negative"}]
            )
            assert "correction" in await fails(
                c, "memory_feedback", session_id="s", ratings=[{"memory_id": mid, "feedback": "correction"}]
            )

    run(scenario())
    stored = httpx.get(f"{mcp_daemon.url}/api/feedback", params={"session_id": f"s-{tag}"}).json()
    assert sorted(i["feedback"] for i in stored["items"]) == ["correction", "positive"]
