"""Measure ``signet mcp`` start-up: ``python -m signet.mcp.startup [COMMAND…] [--runs N]``.

Each run spawns the stdio server the way a harness does and times spawn → ``initialize`` →
``tools/list`` with the official client. The command defaults to the ``signet`` script
beside this interpreter; no daemon is needed (listing tools does not call it).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

from mcp import Client
from mcp.client.stdio import StdioServerParameters


async def _once(command: list[str]) -> float:
    started = time.perf_counter()
    async with Client(StdioServerParameters(command=command[0], args=[*command[1:], "mcp"])) as client:
        await client.list_tools()
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("command", nargs="*", default=[str(Path(sys.executable).with_name("signet"))])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args(argv)
    times = [asyncio.run(_once(args.command)) for _ in range(args.runs)]
    print(f"signet mcp, spawn -> initialize -> tools/list over {args.runs} runs: "
          f"median {statistics.median(times) * 1000:.0f} ms, min {min(times) * 1000:.0f} ms, "
          f"max {max(times) * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
