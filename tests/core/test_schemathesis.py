"""Property-based fuzzing of every documented endpoint: no input may produce a 5xx, and every
answer conforms to the OpenAPI schema (documented status codes, content types, bodies and
headers)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from signet.daemon.app import create_app
from signet.models import RememberRequest
from signet.runtime import Runtime
from signet.workspace import Workspace, setup_workspace

# The schema is read from the app when the module is collected; the runtime behind the app
# is started (and its database created) only when the tests run.
_ROOT = Path(tempfile.mkdtemp(prefix="signet-fuzz-"))
_WS = Workspace(_ROOT / "ws")
setup_workspace(_WS, embedding_provider="local")
# The update routes read a package index: a closed local port, so fuzzing never reaches the
# network, let alone installs anything (and an update run must name the version a check found).
with _WS.config_path.open("a", encoding="utf-8") as _fh:
    _fh.write("update:\n  indexUrl: http://127.0.0.1:9/pypi\n  timeoutSeconds: 2\n")
_RUNTIME = Runtime(_WS)
_APP = create_app(_RUNTIME, manage_runtime=False)
schema = schemathesis.openapi.from_asgi("/openapi.json", _APP)


@pytest.fixture(scope="module", autouse=True)
def fuzz_runtime() -> Iterator[Runtime]:
    from tests.conftest import wait_embedder

    _RUNTIME.start()
    wait_embedder(_RUNTIME)
    for i in range(3):
        _RUNTIME.service.remember(RememberRequest(content=f"seed memory number {i} about tests"))
    try:
        yield _RUNTIME
    finally:
        _RUNTIME.stop()
        shutil.rmtree(_ROOT, ignore_errors=True)


@schema.parametrize()
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_server_errors(case: Any) -> None:
    response = case.call()
    # Every error is JSON with a readable message.
    if response.status_code >= 400:
        body = response.json()
        assert isinstance(body.get("error"), str) and body["error"], body
    case.validate_response(response, checks=CHECKS)


CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
]
