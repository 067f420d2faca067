"""Measure the MCP server: ``python -m signet.bench.mcp [COMMAND…] [--runs N] [--latency URL]``.

Start-up (default): each run spawns the stdio server the way a harness does and times
spawn → ``initialize`` → ``tools/list`` with the official client. The command defaults to
the ``signet`` script beside this interpreter; no daemon is needed (listing tools does not
call it).

``--latency URL``: against a running daemon, the same search through ``POST
/api/memory/recall`` and through the ``memory_search`` tool on ``URL/mcp``, so the
difference is what the MCP layer costs per call.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

import httpx
from mcp import Client
from mcp.client.stdio import StdioServerParameters

QUERY = "deploys and databases"


def _summary(label: str, times: list[float]) -> str:
    ms = sorted(t * 1000 for t in times)
    p95 = ms[min(len(ms) - 1, int(len(ms) * 0.95))]
    return f"{label}: p50 {statistics.median(ms):.1f} ms, p95 {p95:.1f} ms, min {ms[0]:.1f} ms over {len(ms)} calls"


async def _startup_once(command: list[str]) -> float:
    started = time.perf_counter()
    async with Client(StdioServerParameters(command=command[0], args=[*command[1:], "mcp"])) as client:
        await client.list_tools()
    return time.perf_counter() - started


async def _mcp_search_times(url: str, runs: int) -> list[float]:
    times = []
    async with Client(f"{url}/mcp") as client:
        for i in range(runs + 10):
            started = time.perf_counter()
            result = await client.call_tool("memory_search", {"query": QUERY})
            if result.is_error:
                raise SystemExit(f"memory_search failed: {result.content}")
            if i >= 10:  # the first calls warm up
                times.append(time.perf_counter() - started)
    return times


def latency(url: str, runs: int) -> None:
    times = []
    with httpx.Client(base_url=url, timeout=30) as http:
        for i in range(runs + 10):
            started = time.perf_counter()
            http.post("/api/memory/recall", json={"query": QUERY}).raise_for_status()
            if i >= 10:
                times.append(time.perf_counter() - started)
    print(_summary("POST /api/memory/recall", times))
    print(_summary("memory_search on /mcp  ", asyncio.run(_mcp_search_times(url, runs))))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", nargs="*", default=[str(Path(sys.executable).with_name("signet"))])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--latency", metavar="URL", help="daemon URL, e.g. http://127.0.0.1:3850")
    args = parser.parse_args(argv)
    if args.latency:
        latency(args.latency.rstrip("/"), args.runs)
        return 0
    times = [asyncio.run(_startup_once(args.command)) for _ in range(args.runs)]
    print(_summary("signet mcp, spawn -> initialize -> tools/list", times))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
