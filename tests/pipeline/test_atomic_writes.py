"""A pipeline update or delete and its history row are one transaction.

Each case arms a kill point (a SQLite trigger that aborts the statement, as a crash would
stop the write there) in the real database, lets the real worker apply an LLM's decisions
(fake Ollama server on loopback), and checks that every target memory is either changed
with its full history event (carrying the decision) or not changed at all.
"""

from __future__ import annotations

import pytest

from tests.pipeline.conftest import rows, wait_idle
from tests.pipeline.fake_llm import FakeLLM
from tests.pipeline.test_pipeline import Make, _seed_update_delete, history, remember

pytestmark = pytest.mark.sqlite_only("arms its kill points with SQLite triggers (RAISE(ABORT), a Python function)")

KILL_POINTS = {
    "the history insert": "BEFORE INSERT ON memory_history WHEN NEW.changed_by = 'pipeline-v2'"
    " AND NEW.event IN ('modified', 'deleted')",
    "a history rewrite": "BEFORE UPDATE ON memory_history WHEN NEW.changed_by = 'pipeline-v2'",
    "the memory write": "BEFORE UPDATE ON memories WHEN NEW.updated_by = 'pipeline-v2' AND NEW.version > OLD.version",
}


@pytest.mark.parametrize("kill", sorted(KILL_POINTS))
def test_a_killed_update_leaves_both_or_neither(pipeline_rt: Make, fake_llm: FakeLLM, kill: str) -> None:
    rt, api = pipeline_rt("ollama", embedding="none", allowUpdateDelete=True, maxAttempts=1)
    staging, deploys, _ = _seed_update_delete(api, fake_llm)
    wait_idle(rt)
    rt.db.write(
        lambda c: c.execute(
            f"CREATE TRIGGER kill_point {KILL_POINTS[kill]} BEGIN SELECT RAISE(ABORT, 'killed here'); END"
        )
    )
    remember(api, "We moved staging to host beta-3 and deploys to Tuesdays; on-call is fortnightly")
    wait_idle(rt)
    changed = 0
    for mid, event in ((staging, "modified"), (deploys, "deleted")):
        version, is_deleted = rows(rt, "SELECT version, is_deleted FROM memories WHERE id = ?", mid)[0]
        events = [e for e in history(api, mid) if e["event"] == event]
        assert (version == 2) == bool(events), (kill, mid, version, events)
        if events:  # applied: the event is whole, with the decision that caused it
            meta = events[0]["metadata"]
            assert meta["applied"] is True and meta["proposedAction"] in ("update", "delete")
            assert bool(is_deleted) == (event == "deleted")
            changed += 1
        else:
            assert version == 1 and not is_deleted
    # Only a kill on the write path itself stops the changes; a history rewrite never happens.
    assert changed == (2 if kill == "a history rewrite" else 0)


CHILD = """
import os, sys, time
from pathlib import Path
from signet.models import RememberRequest
from signet.runtime import Runtime
from signet.workspace import Workspace

rt = Runtime(Workspace(Path(sys.argv[1]))).start()

def arm(conn):
    # Dies on the spot, inside the transaction, when the pipeline's history event is written.
    conn.create_function("die_now", 0, lambda: os._exit(9))
    conn.execute("CREATE TEMP TRIGGER die_here BEFORE INSERT ON main.memory_history"
                 " WHEN NEW.changed_by = 'pipeline-v2' AND NEW.event IN ('modified', 'deleted')"
                 " BEGIN SELECT die_now(); END")

rt.db.write(arm)
rt.service.remember(RememberRequest(content=sys.argv[2]))
time.sleep(60)
sys.exit(3)  # the kill point was never reached
"""


def test_a_process_killed_between_the_memory_write_and_its_history_leaves_neither(
    pipeline_rt: Make, fake_llm: FakeLLM
) -> None:
    import subprocess
    import sys

    from signet.runtime import Runtime

    rt, api = pipeline_rt("ollama", embedding="none", allowUpdateDelete=True, maxAttempts=1)
    staging, deploys, _ = _seed_update_delete(api, fake_llm)
    wait_idle(rt)
    root = rt.workspace.root
    rt.stop()
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            CHILD,
            str(root),
            "We moved staging to host beta-3 and deploys to Tuesdays; on-call is fortnightly",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 9, proc.stderr[-2000:]
    with Runtime(rt.workspace) as again:
        state = again.db.read(
            lambda c: [
                (
                    tuple(c.execute("SELECT version, is_deleted FROM memories WHERE id = ?", (mid,)).fetchone()),
                    c.execute(
                        "SELECT event FROM memory_history WHERE memory_id = ? AND changed_by = 'pipeline-v2'"
                        " AND event IN ('modified', 'deleted')",
                        (mid,),
                    ).fetchall(),
                )
                for mid in (staging, deploys)
            ]
        )
        assert state == [((1, 0), []), ((1, 0), [])]
