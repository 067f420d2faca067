"""The embedding map and the embedder's state, for the dashboard: ``/api/embeddings/projection``
(202 while the projection is computed in the background, then the cached result) and
``/api/embeddings/status`` (signet.embedding.projection)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from signet.daemon.deps import RuntimeDep, ScopeDep
from signet.embedding.projection import sample, visible_ids
from signet.errors import SignetError
from signet.models import ErrorResponse


class ProjectionFailed(SignetError):
    """The background projection raised for the current data (a retry would fail the same way)."""

    code = "projection_failed"
    status = 503


router = APIRouter(tags=["embeddings"], responses={503: {"model": ErrorResponse}})


class ProjectionPoint(BaseModel):
    id: str
    type: str
    project: str | None
    source: str = Field(description="the memory's source_type, else who wrote it")
    xyz: list[float] = Field(description="coordinates in [-210, 210], 2 or 3 of them")


class Projection(BaseModel):
    status: Literal["ready"] = "ready"
    dimensions: int
    method: str = Field(description="pca (see docs/dashboard.md for why not UMAP)")
    embedding_count: int = Field(description="embedded live memories when computed (the cache key)")
    total: int = Field(description="points visible to this caller before down-sampling")
    returned: int
    took_ms: float
    cached_at: str
    points: list[ProjectionPoint]


class Computing(BaseModel):
    status: Literal["computing"] = "computing"
    dimensions: int
    embedding_count: int


class EmbeddingsOverview(BaseModel):
    provider: str
    model: str
    state: str = Field(description="loading, ready, failed or disabled")
    error: str | None
    memories: int = Field(description="live memories")
    embedded: int = Field(description="live memories embedded with the current model")
    pending: int
    coverage: float = Field(description="embedded / memories (1.0 when there are none)")
    projection: dict[str, Any] = Field(description="cached maps (dimensions, count, time), running and failed ones")


@router.get(
    "/api/embeddings/projection",
    response_model=Projection,
    responses={202: {"model": Computing, "description": "computing in the background: ask again"}},
)
def projection(
    runtime: RuntimeDep,
    scope: ScopeDep,
    dimensions: Annotated[int, Query(ge=2, le=3)] = 2,
    limit: Annotated[int, Query(ge=1, le=20_000, description="down-sample to at most this many points")] = 5000,
) -> Any:
    """Every embedded live memory projected to 2-D or 3-D. The first call (and the first after the
    number of embeddings changed) answers 202 and starts the computation; call again."""
    try:
        result = runtime.projections.get(dimensions)
    except RuntimeError as exc:
        raise ProjectionFailed(f"the projection failed: {exc}; see the daemon log") from None
    if result is None:
        computing = Computing(dimensions=dimensions, embedding_count=runtime.projections.embedded_count())
        return JSONResponse(computing.model_dump(), status_code=202)
    points: list[dict[str, Any]] = result["points"]
    allowed = visible_ids(runtime.db, scope, runtime.service.decay_rate)
    if allowed is not None:
        points = [p for p in points if p["id"] in allowed]
    shown = sample(points, limit)
    # Built by hand, not through the response model: 20k points validated one by one cost more
    # than the rest of the request (the schema above still documents the shape).
    return JSONResponse(
        {
            "status": "ready",
            "dimensions": result["dimensions"],
            "method": result["method"],
            "embedding_count": result["embedding_count"],
            "total": len(points),
            "returned": len(shown),
            "took_ms": result["took_ms"],
            "cached_at": result["cached_at"],
            "points": shown,
        }
    )


@router.get("/api/embeddings/status", response_model=EmbeddingsOverview)
def embedding_status(runtime: RuntimeDep) -> EmbeddingsOverview:
    """The embedder (provider, model, state), coverage of live memories and the map's cache."""
    emb = runtime.embeddings
    counts = runtime.service.counts()
    active, embedded = counts["active"], counts["embedded"]
    return EmbeddingsOverview(
        provider=runtime.settings.embedding.provider,
        model=runtime.settings.embedding.model,
        state=emb.state,
        error=emb.error,
        memories=active,
        embedded=embedded,
        pending=emb.pending_count(),
        coverage=round(embedded / active, 4) if active else 1.0,
        projection=runtime.projections.status(),
    )
