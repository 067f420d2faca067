"""``search.vector_threads`` caps numpy's BLAS pool when the runtime starts (signet.search.vectors)."""

from __future__ import annotations

from collections.abc import Callable

from threadpoolctl import threadpool_info

from signet.workspace import Workspace
from tests.conftest import start_runtime


def blas_threads() -> set[int]:
    return {int(i["num_threads"]) for i in threadpool_info() if i["user_api"] == "blas"}


def test_runtime_start_sets_the_blas_threads(make_workspace: Callable[..., Workspace]) -> None:
    for wanted in (2, 1):  # ends on the default, which the rest of the session runs with
        ws = make_workspace(embedding="none", search={"vector_threads": wanted})
        rt = start_runtime(ws)
        try:
            assert blas_threads() == {wanted}
        finally:
            rt.stop()
