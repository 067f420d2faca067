"""The daemon's log: JSON Lines files that stay bounded, and a live broker for queries and streams.

Three parts, all stdlib (the CLI imports this module to read the files when the daemon is down):

* **Records as entries.** Every record becomes one JSON object, ``{ts, level, logger, message,
  exc?, extra?}``: ``ts`` ISO-8601 UTC with milliseconds (so entries sort as strings), ``exc``
  the formatted traceback, ``extra`` the structured fields given with ``extra={...}``. Bearer
  tokens, API keys in URLs and ``sk-`` keys are masked before anything is written or served:
  a log is read by operators and shipped to support, a secret must never be in it.
* **Files** (:class:`WorkspaceLogHandler`): ``.daemon/logs/daemon-YYYY-MM-DD.log`` (UTC day),
  one entry per line, rotated by size (``daemon-DAY.log.1`` …) and at midnight, with at most
  ``files`` files in all, oldest removed first: the disk the log can take is bounded by
  ``files * max_bytes`` however long the daemon runs. Lines in the older plain-text format
  (``2025-01-01 12:00:00,123 INFO name: message``) are still read, as entries; anything else
  that is not an entry is skipped.
* **The broker** (:data:`BROKER`, a logging handler the daemon attaches to the root logger):
  a ring of the most recent entries (``GET /api/logs`` reads it before the files) and live
  subscribers (``GET /api/logs/stream``). Logging happens on any thread, streams are served
  on the event loop: each subscriber is a bounded buffer filled under a lock and woken with
  ``loop.call_soon_threadsafe``, so logging never waits for a client; a client that does not
  keep up loses records and is told how many.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from logging.handlers import RotatingFileHandler
from pathlib import Path
from typing import Any

from signet.errors import SignetError

Entry = dict[str, Any]

LEVELS: dict[str, int] = {
    "DEBUG": logging.DEBUG,
    "INFO": logging.INFO,
    "WARNING": logging.WARNING,
    "ERROR": logging.ERROR,
    "CRITICAL": logging.CRITICAL,
}
_ALIASES = {"WARN": "WARNING", "FATAL": "CRITICAL"}

RING_SIZE = 2000
"""Entries the broker keeps in memory (older ones are read from the files)."""
SUBSCRIBER_BUFFER = 1000
"""Entries a live subscriber may have waiting; beyond this, new ones are dropped for it."""
MAX_SUBSCRIBERS = 32
"""Live streams at once: each holds a buffer and a connection."""
MAX_MESSAGE = 16_000
MAX_EXC = 32_000
MAX_EXTRA = 4_000

_STANDARD_ATTRS = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "taskName",
    "color_message",  # uvicorn's coloured copy of the message
}
_CACHE = "_signet_entry"

_SECRETS = (
    (re.compile(r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]{8,}"), r"\1[redacted]"),
    (
        re.compile(r"(?i)([?&](?:api[_-]?key|key|token|access_token|secret|password)=)[^&\s\"'<>]+"),
        r"\1[redacted]",
    ),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"), "sk-[redacted]"),
)


def redact(text: str) -> str:
    """``text`` with bearer tokens, key-like URL parameters and ``sk-`` API keys masked."""
    for rx, repl in _SECRETS:
        text = rx.sub(repl, text)
    return text


def iso(dt: datetime) -> str:
    """``2025-01-01T12:00:00.123Z``: fixed width, so entries compare as strings (any year)."""
    dt = dt.astimezone(UTC)
    return (
        f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d}T{dt.hour:02d}:{dt.minute:02d}:{dt.second:02d}"
        f".{dt.microsecond // 1000:03d}Z"
    )


def now_iso() -> str:
    return iso(datetime.now(UTC))


def _cap(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit} characters cut]"


def _safe(value: Any) -> Any:
    """A structured field as JSON can carry it: scalars as they are, the rest as bounded JSON."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return _cap(redact(value), MAX_EXTRA)
    try:
        text = json.dumps(value, default=str, ensure_ascii=False)
    except (TypeError, ValueError):
        return _cap(redact(str(value)), MAX_EXTRA)
    masked = redact(text)
    if masked != text or len(text) > MAX_EXTRA:
        return _cap(masked, MAX_EXTRA)
    return json.loads(text)


def to_entry(record: logging.LogRecord) -> Entry:
    """The record as an entry (made once per record, whichever handler asks first)."""
    cached = record.__dict__.get(_CACHE)
    if cached is not None:
        return dict(cached)
    entry: Entry = {
        "ts": iso(datetime.fromtimestamp(record.created, UTC)),
        "level": record.levelname,
        "logger": record.name,
        "message": _cap(redact(record.getMessage()), MAX_MESSAGE),
    }
    exc = record.exc_text
    if record.exc_info and not exc:
        exc = logging.Formatter().formatException(record.exc_info)
    if record.stack_info:
        exc = f"{exc}\n{record.stack_info}" if exc else record.stack_info
    if exc:
        entry["exc"] = _cap(redact(exc), MAX_EXC)
    extra = {k: _safe(v) for k, v in vars(record).items() if k not in _STANDARD_ATTRS and not k.startswith("_")}
    if extra:
        entry["extra"] = extra
    record.__dict__[_CACHE] = entry
    return dict(entry)


def render(entry: Entry) -> str:
    """One entry as a person reads it (stderr, ``signet logs``)."""
    line = f"{entry.get('ts', '')} {entry.get('level', '')} {entry.get('logger', '')}: {entry.get('message', '')}"
    extra = entry.get("extra")
    if isinstance(extra, dict) and extra and extra.get("format") != "text":
        line += " " + " ".join(f"{k}={json.dumps(v, ensure_ascii=False, default=str)}" for k, v in extra.items())
    exc = entry.get("exc")
    if exc:
        line += "\n" + str(exc).rstrip("\n")
    return line


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line."""

    def format(self, record: logging.LogRecord) -> str:
        return json.dumps(to_entry(record), ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    """The same entry, as a person reads it (the daemon's stderr)."""

    def format(self, record: logging.LogRecord) -> str:
        return render(to_entry(record))


# -- files ---------------------------------------------------------------------------------

_FILE = re.compile(r"^daemon-(\d{4}-\d{2}-\d{2})\.log(?:\.(\d+))?$")


def log_files(logs_dir: Path) -> list[Path]:
    """The log files, oldest first: by day, and within a day ``.log.N`` (older) before ``.log``."""
    found: list[tuple[str, int, Path]] = []
    try:
        paths = list(logs_dir.iterdir())
    except OSError:
        return []
    for path in paths:
        m = _FILE.match(path.name)
        if m:
            found.append((m.group(1), -int(m.group(2) or 0), path))
    return [p for _, _, p in sorted(found)]


def _day_end(created: float) -> float:
    day = datetime.fromtimestamp(created, UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return (day + timedelta(days=1)).timestamp()


class WorkspaceLogHandler(RotatingFileHandler):
    """JSON Lines into ``daemon-DAY.log``: a new file each UTC day and when one reaches
    ``max_bytes``; at most ``files`` files in all (this one included), the oldest removed."""

    def __init__(self, logs_dir: Path, *, max_bytes: int, files: int, now: float | None = None) -> None:
        if files < 2:
            raise ValueError("at least 2 log files (the current one and one rotated)")
        self.logs_dir = logs_dir
        self.files = files
        self._new_day: float | None = None
        created = datetime.now(UTC).timestamp() if now is None else now
        self._day_ends = _day_end(created)
        logs_dir.mkdir(parents=True, exist_ok=True)
        super().__init__(
            self._path_for(created), maxBytes=max_bytes, backupCount=files - 1, encoding="utf-8", delay=True
        )
        self.setFormatter(JsonFormatter())
        self.prune()

    def _path_for(self, created: float) -> Path:
        return self.logs_dir / f"daemon-{datetime.fromtimestamp(created, UTC):%Y-%m-%d}.log"

    def shouldRollover(self, record: logging.LogRecord) -> int:
        if record.created >= self._day_ends:
            self._new_day = record.created
            return 1
        return 1 if super().shouldRollover(record) else 0

    def doRollover(self) -> None:
        new_day = self._new_day
        if new_day is not None:
            self._new_day = None
            if self.stream:
                self.stream.close()
                self.stream = None
            self.baseFilename = str(self._path_for(new_day).absolute())
            self._day_ends = _day_end(new_day)
        else:
            super().doRollover()
        self.prune()

    def prune(self) -> None:
        """Remove the oldest files beyond ``files`` (never the one being written)."""
        current = Path(self.baseFilename).absolute()
        existing = [p for p in log_files(self.logs_dir) if p.absolute() != current]
        for old in existing[: max(len(existing) - (self.files - 1), 0)]:
            try:
                old.unlink()
            except OSError:
                continue


_LEGACY = re.compile(
    r"^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2}),(\d{3}) (DEBUG|INFO|WARNING|ERROR|CRITICAL) (\S+?): (.*)$"
)


def _legacy(line: str) -> Entry | None:
    m = _LEGACY.match(line)
    if m is None:
        return None
    try:
        local = datetime.fromisoformat(f"{m.group(1)}T{m.group(2)}.{m.group(3)}")
        ts = iso(local.astimezone())  # the old format wrote local time without a zone
    except (ValueError, OverflowError):
        return None
    return {
        "ts": ts,
        "level": m.group(4),
        "logger": m.group(5),
        "message": m.group(6),
        "extra": {"format": "text"},
    }


def parse_line(line: str) -> Entry | None:
    """An entry from one line of a log file: JSON, or the older plain-text format; else None."""
    line = line.rstrip("\r\n")
    if line.startswith("{"):
        try:
            data = json.loads(line)
        except ValueError:
            return None
        if not (
            isinstance(data, dict)
            and isinstance(data.get("ts"), str)
            and isinstance(data.get("level"), str)
            and isinstance(data.get("message"), str)
        ):
            return None
        entry: Entry = {"ts": data["ts"], "level": data["level"], "logger": str(data.get("logger") or "")}
        entry["message"] = data["message"]
        if data.get("exc"):
            entry["exc"] = str(data["exc"])
        if isinstance(data.get("extra"), dict) and data["extra"]:
            entry["extra"] = data["extra"]
        return entry
    return _legacy(line)


def read_file(path: Path) -> list[Entry]:
    """Every entry of one file, in order. A plain-text traceback line continues the entry
    above it; any other line that is not an entry (a torn last line) is skipped."""
    out: list[Entry] = []
    last_legacy = False
    try:
        fh = path.open(encoding="utf-8", errors="replace")
    except OSError:
        return out
    with fh:
        for line in fh:
            entry = parse_line(line)
            if entry is not None:
                out.append(entry)
                last_legacy = entry.get("extra") == {"format": "text"}
            elif last_legacy and line.strip() and not line.startswith("{"):
                prev = out[-1]
                prev["exc"] = (prev.get("exc", "") + line.rstrip("\r\n") + "\n")[:MAX_EXC]
    return out


# -- queries -------------------------------------------------------------------------------

_RELATIVE = re.compile(r"^(\d{1,9})\s*(s|m|h|d|w)$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
MAX_LOOKBACK_S = 100 * 365 * 86400


def parse_level(value: str | None) -> int:
    """The minimum level a name asks for (``warning``, ``WARN``, ``error`` …); 0 for none."""
    if value is None or not value.strip():
        return 0
    name = value.strip().upper()
    name = _ALIASES.get(name, name)
    if name not in LEVELS:
        raise ValueError(f"unknown log level {value!r}: use one of {', '.join(n.lower() for n in LEVELS)}")
    return LEVELS[name]


def parse_since(value: str | None, now: datetime | None = None) -> str | None:
    """``since`` as an entry timestamp: an ISO-8601 time (UTC when it names no zone) or a
    duration back from now (``30s``, ``10m``, ``2h``, ``7d``, ``1w``)."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    now = now or datetime.now(UTC)
    m = _RELATIVE.match(text.lower())
    if m:
        seconds = int(m.group(1)) * _UNIT_S[m.group(2)]
        if seconds > MAX_LOOKBACK_S:
            raise ValueError(f"since {value!r} reaches back more than 100 years")
        return iso(now - timedelta(seconds=seconds))
    try:
        dt = datetime.fromisoformat(text[:-1] + "+00:00" if text[-1:] in ("Z", "z") else text)
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=UTC)
        return iso(dt)
    except (ValueError, OverflowError):
        raise ValueError(
            f"since {value!r} is neither an ISO-8601 time (2025-01-31T12:00:00Z) nor a duration such as 10m, 2h or 7d"
        ) from None


@dataclass(frozen=True)
class LogQuery:
    """Which entries a caller wants: a minimum level, a start time, a logger name prefix and a
    case-insensitive substring of the message or traceback."""

    min_level: int = 0
    since: str | None = None
    logger: str | None = None
    text: str | None = None

    @classmethod
    def parse(
        cls, *, level: str | None = None, since: str | None = None, logger: str | None = None, text: str | None = None
    ) -> LogQuery:
        """From what a user typed; :class:`ValueError` with a readable message when it is wrong."""
        return cls(
            min_level=parse_level(level),
            since=parse_since(since),
            logger=logger or None,
            text=text.lower() if text else None,
        )

    def matches(self, entry: Entry) -> bool:
        if self.min_level and LEVELS.get(str(entry.get("level")), 0) < self.min_level:
            return False
        if self.since is not None and str(entry.get("ts", "")) < self.since:
            return False
        if self.logger is not None and not str(entry.get("logger", "")).startswith(self.logger):
            return False
        if self.text is not None:
            hay = str(entry.get("message", ""))
            exc = entry.get("exc")
            if exc:
                hay = f"{hay}\n{exc}"
            if self.text not in hay.lower():
                return False
        return True


@dataclass
class QueryResult:
    entries: list[Entry]
    more: bool
    """Older entries match too (beyond ``limit``)."""
    sources: list[str]
    last_seq: int | None


def _from_files(logs_dir: Path, query: LogQuery, before: str | None, want: int) -> tuple[list[Entry], bool]:
    """The newest ``want`` matching entries older than ``before``, from the files, oldest first,
    and whether older ones match too. Reads newest files first and stops as soon as it can."""
    chunks: list[list[Entry]] = []
    have = 0
    more = False
    for path in reversed(log_files(logs_dir)):
        entries = read_file(path)
        hits = [e for e in entries if (before is None or str(e["ts"]) < before) and query.matches(e)]
        if have + len(hits) > want:
            more = True
            hits = hits[len(hits) - (want - have) :] if want > have else []
        chunks.append(hits)
        have += len(hits)
        if more or (query.since is not None and entries and str(entries[0]["ts"]) < query.since):
            break
    out: list[Entry] = []
    for chunk in reversed(chunks):
        out.extend(chunk)
    return out, more


def query_logs(broker: LogBroker | None, logs_dir: Path, query: LogQuery, limit: int) -> QueryResult:
    """The newest ``limit`` entries that match, oldest first: from the broker's ring while it
    covers them, then from the files (older entries, or every entry when no broker runs here)."""
    if broker is None:
        entries, more = _from_files(logs_dir, query, None, limit)
        return QueryResult(entries, more, ["files"], None)
    ring, covered_from, last_seq = broker.snapshot(query)
    sources = ["memory"]
    older_possible = query.since is None or query.since < covered_from
    more = len(ring) > limit or (len(ring) == limit and older_possible)
    ring = ring[-limit:]
    if len(ring) < limit and older_possible:
        older, more = _from_files(logs_dir, query, covered_from, limit - len(ring))
        if older:
            sources.insert(0, "files")
        ring = older + ring
    return QueryResult(ring, more, sources, last_seq)


def iter_since(broker: LogBroker | None, logs_dir: Path, since: str) -> Iterator[Entry]:
    """Every entry from ``since`` on, oldest first (the files for what the ring does not hold)."""
    query = LogQuery(since=since)
    if broker is None:
        for path in log_files(logs_dir):
            yield from (e for e in read_file(path) if query.matches(e))
        return
    ring, covered_from, _ = broker.snapshot(query)
    if since < covered_from:
        for path in log_files(logs_dir):
            yield from (e for e in read_file(path) if query.matches(e) and str(e["ts"]) < covered_from)
    yield from ring


def summarize(entries: Iterable[Entry], *, errors: int) -> dict[str, Any]:
    """Counts by level and by logger, and the newest ``errors`` entries at ERROR or above."""
    by_level: dict[str, int] = {}
    by_logger: dict[str, int] = {}
    latest: deque[Entry] = deque(maxlen=errors)
    total = 0
    for e in entries:
        total += 1
        level = str(e.get("level", ""))
        by_level[level] = by_level.get(level, 0) + 1
        name = str(e.get("logger", ""))
        by_logger[name] = by_logger.get(name, 0) + 1
        if errors and LEVELS.get(level, 0) >= logging.ERROR:
            latest.append(e)
    return {
        "total": total,
        "by_level": by_level,
        "by_logger": dict(sorted(by_logger.items(), key=lambda kv: (-kv[1], kv[0]))[:50]),
        "latest_errors": list(reversed(latest)),
    }


# -- the live broker -----------------------------------------------------------------------


class TooManyStreams(SignetError):
    code = "too_many_streams"
    status = 503


class Subscription:
    """One live reader: a bounded buffer filled from any thread, drained on its event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop, query: LogQuery, capacity: int = SUBSCRIBER_BUFFER) -> None:
        self.loop = loop
        self.query = query
        self.capacity = capacity
        self._items: deque[Entry] = deque()
        self._lock = threading.Lock()
        self._dropped = 0
        self._closed = False
        self._wake_pending = False
        self._event = asyncio.Event()

    def offer(self, entry: Entry) -> None:
        """Called by the broker on the logging thread: never blocks, never raises."""
        if not self.query.matches(entry):
            return
        with self._lock:
            if self._closed:
                return
            if len(self._items) >= self.capacity:
                self._dropped += 1
                return
            self._items.append(entry)
            wake = not self._wake_pending
            self._wake_pending = True
        if wake:
            self._notify()

    def close(self) -> None:
        """End the stream (from any thread): what is buffered is still delivered, then nothing."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._notify()

    @property
    def closed(self) -> bool:
        return self._closed

    def _notify(self) -> None:
        try:
            self.loop.call_soon_threadsafe(self._wake)
        except RuntimeError:  # the loop is closed: nobody reads this any more
            with self._lock:
                self._closed = True

    def _wake(self) -> None:
        with self._lock:
            self._wake_pending = False
        self._event.set()

    async def next(self) -> tuple[list[Entry], int, bool]:
        """Wait for entries: (entries, how many were dropped since the last call, closed)."""
        while True:
            with self._lock:
                if self._items or self._dropped or self._closed:
                    items = list(self._items)
                    self._items.clear()
                    dropped, self._dropped = self._dropped, 0
                    return items, dropped, self._closed
            await self._event.wait()
            self._event.clear()


class LogBroker(logging.Handler):
    """The recent entries and the live readers of this process's log."""

    def __init__(self, capacity: int = RING_SIZE, max_subscribers: int = MAX_SUBSCRIBERS) -> None:
        super().__init__(logging.NOTSET)
        self._lock = threading.RLock()
        self._ring: deque[Entry] = deque(maxlen=capacity)
        self._subs: list[Subscription] = []
        self._seq = 0
        self.evicted = 0
        self.max_subscribers = max_subscribers
        self.since = now_iso()
        """When this broker started collecting: the ring covers everything logged since."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            entry = to_entry(record)
        except Exception:  # noqa: BLE001 (a record that cannot be formatted: logging's own error path)
            self.handleError(record)
            return
        with self._lock:  # seq order, ring order and delivery order agree
            self._seq += 1
            entry["seq"] = self._seq
            if len(self._ring) == self._ring.maxlen:
                self.evicted += 1
            self._ring.append(entry)
            for sub in self._subs:
                sub.offer(entry)

    def covered_from(self) -> str:
        """The ring holds every entry from this time on."""
        with self._lock:
            return self._covered_from()

    def _covered_from(self) -> str:
        if self.evicted and self._ring:
            return str(self._ring[0]["ts"])
        return self.since

    def snapshot(self, query: LogQuery, after: int | None = None) -> tuple[list[Entry], str, int | None]:
        """(matching ring entries oldest first, the time the ring covers from, the last seq)."""
        with self._lock:
            hits = [e for e in self._ring if (after is None or e["seq"] > after) and query.matches(e)]
            return hits, self._covered_from(), (self._seq or None)

    def subscribe(
        self, loop: asyncio.AbstractEventLoop, query: LogQuery, *, after: int | None = None, replay: bool = False
    ) -> tuple[Subscription, list[Entry], int]:
        """A new live reader, with (when ``after`` or ``replay`` asks) the ring's matching
        entries to send first, and how many entries after ``after`` the ring no longer holds.
        Atomic with logging: nothing falls between the replay and the live entries."""
        with self._lock:
            self._subs = [s for s in self._subs if not s.closed]
            if len(self._subs) >= self.max_subscribers:
                raise TooManyStreams(
                    f"{len(self._subs)} log streams are open, the most this daemon serves at once; "
                    "close one or use GET /api/logs"
                )
            sub = Subscription(loop, query)
            first = int(self._ring[0]["seq"]) if self._ring else self._seq + 1
            gap = max(first - after - 1, 0) if after is not None and after < self._seq else 0
            if after is not None and after >= self._seq:
                after = self._seq  # from another run (seqs restart): live entries only
            pending = (
                [e for e in self._ring if (after is None or e["seq"] > after) and query.matches(e)]
                if after is not None or replay
                else []
            )
            self._subs.append(sub)
            return sub, pending, gap

    def unsubscribe(self, sub: Subscription) -> None:
        sub.close()
        with self._lock:
            self._subs = [s for s in self._subs if s is not sub and not s.closed]

    def close_all(self) -> None:
        """End every live stream (the daemon is stopping)."""
        with self._lock:
            subs, self._subs = self._subs, []
        for sub in subs:
            sub.close()

    @property
    def subscribers(self) -> int:
        with self._lock:
            return sum(1 for s in self._subs if not s.closed)


BROKER = LogBroker()
"""This process's broker; the daemon attaches it to the root logger (signet.daemon.server)."""


def live_broker() -> LogBroker | None:
    """The broker when it collects this process's log (the daemon), else None (the CLI, an
    in-process app in tests: nothing here to stream, the files are what there is)."""
    return BROKER if BROKER in logging.getLogger().handlers else None
