"""How long do entity communities take on a real store? (signet.knowledge.communities)

Runs the community detection of one agent on a store **copy** (it writes the communities into
it) and times its phases: the graph read and build, Louvain, the one write transaction; then
the change test the maintenance worker runs (the signature read, a check after a "restart"
that adopts the stored communities or recomputes, a check with nothing changed).

    cp /work/stores/realistic-100000/ws/memory/memories.db /tmp/c/memories.db
    python bench/communities.py /tmp/c/memories.db --runs 3

The file is a measurement script, not a test: figures go in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from pathlib import Path

from signet.knowledge import communities as cm
from signet.knowledge.community_upkeep import CommunityService, signature
from signet.store.database import Database


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("db", type=Path, help="a COPY of a memories.db (it is written to)")
    ap.add_argument("--agent", default="default")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    db = Database(args.db).open()
    try:
        print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
        for run in range(args.runs):
            t0 = time.perf_counter()
            graph = db.read(lambda c: cm.build_graph(c, args.agent))
            t1 = time.perf_counter()
            found, modularity = cm.cluster(graph)
            t2 = time.perf_counter()
            at = cm.now_iso()
            members = db.write(lambda c, f=found, a=at: cm.replace(c, args.agent, f, a))
            t3 = time.perf_counter()
            hubs = [graph.nodes[k].name for k in graph.hubs]
            print(
                f"run {run}: {len(graph.nodes)} entities, {graph.memories} live memories, hubs {hubs}, "
                f"{len(graph.weights)} edges ({graph.dropped_edges} dropped): read+build {t1 - t0:.2f} s, "
                f"louvain {t2 - t1:.2f} s, write {t3 - t2:.2f} s, total {t3 - t0:.2f} s; "
                f"{len(found)} communities, {members} members, modularity {modularity or 0:.3f}, "
                f"largest {[len(c.members) for c in found[:5]]}"
            )
        service = CommunityService(db)
        t = time.perf_counter()
        db.read(lambda c: signature(c, args.agent))
        print(f"signature read {time.perf_counter() - t:.3f} s")
        t = time.perf_counter()
        outcome = service.refresh_changed()
        print(f"upkeep after a restart: {outcome} in {time.perf_counter() - t:.2f} s")
        t = time.perf_counter()
        outcome = service.refresh_changed()
        print(f"upkeep, nothing changed: {outcome} in {time.perf_counter() - t:.2f} s")
        print(f"max RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MiB")
    finally:
        db.close()


if __name__ == "__main__":
    main()
