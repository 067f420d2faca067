"""The daemon gives memory back once per idle period (signet.daemon.idle), with the real
glibc ``malloc_trim``: not while requests arrive, once after they stop, again only after more."""

from __future__ import annotations

import time

from signet.daemon.idle import IdleTrim


def wait_for(cond: object, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():  # type: ignore[operator]
            return True
        time.sleep(0.02)
    return False


def test_trims_once_per_idle_period() -> None:
    work = [0]
    idle = IdleTrim(lambda: work[0], idle_s=0.2)
    idle.start()
    try:
        time.sleep(0.5)
        assert idle.trims == 0  # nothing happened yet: nothing to give back
        for _ in range(6):  # busy: requests keep arriving
            work[0] += 1
            time.sleep(0.1)
        assert idle.trims == 0
        assert wait_for(lambda: idle.trims == 1)
        time.sleep(0.6)
        assert idle.trims == 1  # still idle: not again
        work[0] += 1
        assert wait_for(lambda: idle.trims == 2)
    finally:
        idle.stop()
