"""ONNX Runtime backend for the bundled model: export once, then embed without torch.

A query embedding through ONNX Runtime takes about half the time of torch +
sentence-transformers on this model, and a process that only loads the exported file starts
in well under a second instead of importing torch for 5-12 s. The vectors are the same (max
abs difference ~2e-7).

- :func:`export` traces the model once with torch (mean pooling and L2 normalisation are part
  of the graph), checks the ONNX output against sentence-transformers on fixed texts and only
  then publishes the file, atomically, into :func:`cache_dir`. A failed check leaves a
  ``.rejected`` note beside it, so later starts go straight to torch instead of exporting again.
- :func:`load` returns an :class:`OnnxModel` for a model directory, exporting first when the
  cache has no file for it. It imports onnxruntime and tokenizers only; a cached file that
  onnxruntime cannot open is deleted and exported again, once.

The cached file is named by the model and a fingerprint of its files' contents and of
:data:`EXPORT_VERSION`, so an upgraded model package never reuses an old export, and two
installations of the same package share one.
Every failure is an :class:`~signet.embedding.base.EmbeddingError`; the local embedder falls
back to torch on it when ``embedding.backend`` is ``auto``.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import os
import re
import tempfile
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from signet.embedding.base import EmbeddingError, Vectors, normalize_rows

log = logging.getLogger(__name__)

EXPORT_VERSION = 1
"""Bump when the exported graph changes (wrapper, opset, exporter options): old files are then ignored."""

OPSET = 17
VERIFY_TOLERANCE = 1e-4
"""Largest absolute difference to sentence-transformers' vectors an export may show to be published."""

VERIFY_TEXTS = (
    "",
    "hi",
    "When did Caroline go to the LGBTQ support group?",
    "Ünïcödé, emoji 🚀 and 日本語のテキスト mixed into one sentence.",
    "Melanie: I painted a sunrise over the lake last weekend, it was so calming. " * 30,  # > 256 tokens
    "We deploy the billing service on Thursdays after the load test passes.",
)

INSTALL_HINT = "pip install onnxruntime tokenizers (both are in 'signet-memory[local]')"
EXPORT_HINT = "pip install torch==2.13.0 && pip install 'signet-memory[local,torch]'"

# The files whose change must invalidate an export (weights, architecture, tokenizer, pooling).
_FINGERPRINTED = (
    "model.safetensors",
    "pytorch_model.bin",
    "config.json",
    "tokenizer.json",
    "sentence_bert_config.json",
    "modules.json",
    "1_Pooling/config.json",
)


def cache_dir() -> Path:
    """Where exports live: ``$SIGNET_MODEL_CACHE``, else ``$XDG_CACHE_HOME/signet/models``
    (``~/.cache/signet/models``). Not created here."""
    explicit = os.environ.get("SIGNET_MODEL_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "signet" / "models"


def fingerprint(model_dir: Path) -> str:
    """A short digest of the model's files' contents and the exporter version.

    By content, not by path or modification time: two installations of the same package
    (a virtualenv and a pipx install, CI and a checkout) share one export instead of each
    exporting its own (15 s, and torch) and deleting the other's as stale. Hashing the 90 MB
    of weights takes ~0.25 s, once per process, on the background loader.
    """
    stats = tuple((name, *_stat(model_dir / name)) for name in _FINGERPRINTED)
    return _content_digest(str(model_dir), stats)


def _stat(f: Path) -> tuple[int, int]:
    try:
        st = f.stat()
    except OSError:
        return (-1, -1)
    return (st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _content_digest(model_dir: str, stats: tuple[tuple[str, int, int], ...]) -> str:
    """``stats`` (name, size, mtime) is the cache key: a changed file is hashed again."""
    h = hashlib.sha256(f"signet-onnx-export:{EXPORT_VERSION}:opset{OPSET}".encode())
    for name, size, _mtime in stats:
        if size < 0:
            continue
        h.update(f"{name}:{size}:".encode())
        with (Path(model_dir) / name).open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()[:16]


def export_path(model_name: str, model_dir: Path) -> Path:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(model_name).name) or "model"
    return cache_dir() / f"{slug}-{fingerprint(model_dir)}.onnx"


def max_seq_length(model_dir: Path) -> int:
    """Tokens per text, as sentence-transformers truncates (``sentence_bert_config.json``)."""
    for name, key in (("sentence_bert_config.json", "max_seq_length"), ("config.json", "max_position_embeddings")):
        f = model_dir / name
        if f.is_file():
            value = json.loads(f.read_text()).get(key)
            if isinstance(value, int) and value > 0:
                return value
    raise EmbeddingError(f"cannot tell the maximum sequence length of the model in {model_dir}")


def import_runtime() -> None:
    """Import onnxruntime and tokenizers, or say what to install."""
    try:
        import onnxruntime  # noqa: F401
        import tokenizers  # noqa: F401
    except ImportError as exc:
        raise EmbeddingError(f"the ONNX backend needs onnxruntime and tokenizers ({exc}): {INSTALL_HINT}") from exc


class UnloadableExport(EmbeddingError):
    """onnxruntime refused the exported file (truncated, corrupt, from an incompatible exporter)."""


RUN_TEXTS = 8
"""Texts per onnxruntime run at most. Measured on real turns (2 cores, the int8 export, one
thread; docs/benchmarks.md): runs of 8 embed 19.5 LongMemEval turns/s against 13.6-16.4 with
32, and 74-100 LoCoMo turns/s against 54-60, and the arena's peak for long turns is 660 MB
instead of 1.58 GB (attention's buffers grow with the run's texts times its length squared)."""


@functools.cache
def _shrink_options() -> Any:
    """RunOptions that free the arena's unused buffers at the end of the run."""
    import onnxruntime as ort

    options = ort.RunOptions()
    options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    return options


@functools.cache
def _runtime_errors() -> tuple[type[BaseException], ...]:
    """What onnxruntime raises when a model cannot be loaded or run (its own classes derive
    from Exception, not RuntimeError), plus the built-ins it uses."""
    from onnxruntime.capi import onnxruntime_pybind11_state as state

    names = (
        "Fail",
        "InvalidArgument",
        "NoSuchFile",
        "NoModel",
        "EngineError",
        "RuntimeException",
        "InvalidProtobuf",
        "ModelLoaded",
        "NotImplemented",
        "InvalidGraph",
        "EPFail",
    )
    found = tuple(c for c in (getattr(state, n, None) for n in names) if isinstance(c, type))
    return (*found, RuntimeError, ValueError, MemoryError)


class OnnxModel:
    """An exported model in an onnxruntime session with its tokenizer; thread-safe ``embed``."""

    def __init__(self, session: Any, tokenizer: Any, path: Path) -> None:
        self.session = session
        self.tokenizer = tokenizer
        self.path = path
        self._inputs = {i.name for i in session.get_inputs()}
        outputs = [o.name for o in session.get_outputs()]
        # Our own exports end in "embedding" (pooled and normalised inside the graph); a
        # prebuilt transformer graph ends in "last_hidden_state", mean-pooled here.
        self._output = "embedding" if "embedding" in outputs else outputs[0]
        self._pool = self._output != "embedding"
        dims = session.get_outputs()[0].shape[-1]
        self.dimensions: int = dims if isinstance(dims, int) else int(self._run(["dimensions"]).shape[1])

    @classmethod
    def open(cls, path: Path, model_dir: Path, threads: int) -> OnnxModel:
        """A session on ``path`` with ``threads`` intra/inter-op threads (0: onnxruntime's default)."""
        import_runtime()
        import onnxruntime as ort
        from tokenizers import Tokenizer

        ort.disable_telemetry_events()  # before the first session (ORT_DISABLE_TELEMETRY: signet.embedding)

        if not (model_dir / "tokenizer.json").is_file():
            raise EmbeddingError(f"the ONNX backend needs {model_dir / 'tokenizer.json'} (a fast tokenizer)")
        tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        tokenizer.enable_truncation(max_length=max_seq_length(model_dir))
        pad = "[PAD]"
        cfg = model_dir / "tokenizer_config.json"
        if cfg.is_file():
            pad = str(json.loads(cfg.read_text()).get("pad_token") or pad)
        pad_id = tokenizer.token_to_id(pad)
        tokenizer.enable_padding(pad_id=pad_id if pad_id is not None else 0, pad_token=pad)

        options = ort.SessionOptions()
        options.intra_op_num_threads = max(threads, 0)
        options.inter_op_num_threads = max(threads, 0)
        options.log_severity_level = 3
        try:
            session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        except _runtime_errors() as exc:
            raise UnloadableExport(f"onnxruntime cannot load {path}: {type(exc).__name__}: {exc}") from exc
        return cls(session, tokenizer, path)

    def embed(self, texts: list[str], batch_size: int = RUN_TEXTS) -> Vectors:
        """L2-normalised float32 rows, in runs of at most ``batch_size`` (and
        :data:`RUN_TEXTS`) texts of similar length."""
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        # Longest first, as sentence-transformers does: batches of similar length pad less.
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        parts: list[Vectors] = []
        step = max(min(batch_size, RUN_TEXTS), 1)
        for start in range(0, len(order), step):
            parts.append(self._run([texts[i] for i in order[start : start + step]]))
        stacked = np.concatenate(parts)
        out = np.empty_like(stacked)
        out[order] = stacked
        return normalize_rows(out)

    def release_memory(self) -> None:
        """Give the memory onnxruntime's arena took for the largest runs back to the system.

        The arena keeps every buffer it ever grew to (a batch of long turns: hundreds of MB)
        and reuses it, which is what makes it fast; once the background embedder has nothing
        left to do, one tiny run with arena shrinkage frees what no run is using."""
        ids = np.zeros((1, 1), dtype=np.int64)
        self._session_run(ids, np.ones_like(ids), _shrink_options())

    def _session_run(self, ids: Any, mask: Any, options: Any = None) -> Any:
        """The graph's output for token ids and their attention mask; onnxruntime's errors as
        :class:`EmbeddingError`."""
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        try:
            (out,) = self.session.run([self._output], {k: v for k, v in feed.items() if k in self._inputs}, options)
        except _runtime_errors() as exc:
            raise EmbeddingError(f"local embedding failed (onnxruntime): {type(exc).__name__}: {exc}") from exc
        return out

    def _run(self, texts: list[str]) -> Vectors:
        encodings = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        hidden = np.asarray(self._session_run(ids, mask), dtype=np.float32)
        if not self._pool:
            return hidden
        # Mean over the real tokens, as sentence-transformers' pooling does (padding excluded).
        weights = mask[..., None].astype(np.float32)
        pooled: Vectors = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return pooled


def load(model_name: str, model_dir: Path, threads: int) -> OnnxModel:
    """The exported model for ``model_dir``, exporting it first if the cache has none.

    A cached file onnxruntime cannot open is deleted and exported again, once; a second
    failure is raised, so a broken exporter never loops.
    """
    import_runtime()
    path = export_path(model_name, model_dir)
    if not path.is_file():
        export(model_dir, path)
    _mark_used(path)
    try:
        return OnnxModel.open(path, model_dir, threads)
    except UnloadableExport as exc:
        log.warning("cached ONNX export %s is unusable (%s); deleting it and exporting again", path, exc)
    try:
        path.unlink(missing_ok=True)
    except OSError as exc:
        raise EmbeddingError(f"cannot delete the unusable ONNX export {path}: {exc}") from exc
    export(model_dir, path)
    return OnnxModel.open(path, model_dir, threads)


@contextlib.contextmanager
def _export_lock(path: Path) -> Iterator[None]:
    """One exporter at a time per file across processes (others wait, then find the file)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: concurrent exports are still safe (atomic publish), only wasteful
        yield
        return
    with path.with_suffix(".lock").open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def export(model_dir: Path, path: Path) -> None:
    """Export ``model_dir`` to ``path``: trace with torch, verify, publish atomically.

    Needs torch, transformers, onnx and sentence-transformers (the reference for the check).
    Raises :class:`EmbeddingError` when one is missing, the export fails, or the exported
    model's vectors differ from sentence-transformers' by more than :data:`VERIFY_TOLERANCE`
    (then nothing is published and a ``.rejected`` note keeps later starts from retrying).
    """
    rejected = path.with_suffix(".rejected")
    if rejected.is_file():
        raise EmbeddingError(
            f"the ONNX export of {model_dir} was rejected earlier ({rejected.read_text().strip()}); "
            f"delete {rejected} to try again"
        )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with _export_lock(path):
            _export_locked(model_dir, path, rejected)
    except OSError as exc:  # a read-only or full cache: the caller falls back to torch
        raise EmbeddingError(f"ONNX export into {path.parent} failed: {type(exc).__name__}: {exc}") from exc


def _export_locked(model_dir: Path, path: Path, rejected: Path) -> None:
    if path.is_file():  # another process exported it while we waited
        return
    # Temp files of an exporter that died mid-way (we hold the lock: nobody is writing them).
    for leftover in path.parent.glob(f".{path.stem}-*.onnx.tmp"):
        leftover.unlink(missing_ok=True)
    started = time.perf_counter()
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.stem}-", suffix=".onnx.tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        _trace(model_dir, tmp)
        diff = _verify(model_dir, tmp)
        if not diff <= VERIFY_TOLERANCE:
            reason = f"max abs difference to sentence-transformers {diff:.3g} > {VERIFY_TOLERANCE:g}"
            rejected.write_text(reason + "\n")
            raise EmbeddingError(f"ONNX export of {model_dir} not published: {reason}")
        tmp.chmod(0o644)  # mkstemp makes it 0600; the cache may be shared like ~/.cache
        tmp.replace(path)  # atomic: readers see the old state or the whole file
    finally:
        tmp.unlink(missing_ok=True)
    _remove_stale(path)
    log.info("exported %s to %s in %.1fs (max abs diff %.2g)", model_dir, path, time.perf_counter() - started, diff)


def _trace(model_dir: Path, dest: Path) -> None:
    """``torch.onnx.export`` of the transformer with mean pooling and L2 normalisation on top."""
    try:
        import onnx  # noqa: F401  (the exporter needs it)
        import torch
        from transformers import AutoModel
    except ImportError as exc:
        raise EmbeddingError(
            f"exporting the model to ONNX needs torch, transformers and onnx ({exc}): {EXPORT_HINT}"
        ) from exc

    class Pooled(torch.nn.Module):
        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            hidden = self.model(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2, dim=1)

    try:
        # Eager attention: the SDPA path traces a branch on the mask that does not generalise.
        model = AutoModel.from_pretrained(str(model_dir), attn_implementation="eager")
        model.eval()
        sample = torch.ones(2, 8, dtype=torch.long)
        dynamic = {name: {0: "batch", 1: "tokens"} for name in ("input_ids", "attention_mask", "token_type_ids")}
        # The tracer warns about shape checks in transformers' mask code that are constant for
        # this model; the verification below is what says whether the graph generalises.
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                Pooled(model),
                (sample, sample, torch.zeros_like(sample)),
                str(dest),
                input_names=["input_ids", "attention_mask", "token_type_ids"],
                output_names=["embedding"],
                dynamic_axes={**dynamic, "embedding": {0: "batch"}},
                opset_version=OPSET,
                dynamo=False,
            )
    except (RuntimeError, ValueError, TypeError, OSError) as exc:
        raise EmbeddingError(f"exporting {model_dir} to ONNX failed: {type(exc).__name__}: {exc}") from exc


def _verify(model_dir: Path, candidate: Path) -> float:
    """Max abs difference between the candidate's vectors and sentence-transformers' (batch and one by one)."""
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise EmbeddingError(f"verifying the ONNX export needs sentence-transformers: {EXPORT_HINT}") from exc
    texts = list(VERIFY_TEXTS)
    reference = SentenceTransformer(str(model_dir), device="cpu").encode(
        texts, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
    )
    onnx_model = OnnxModel.open(candidate, model_dir, threads=0)
    batch = onnx_model.embed(texts, batch_size=len(texts))  # one padded batch
    single = np.concatenate([onnx_model.embed([t]) for t in texts])
    return float(max(np.abs(batch - reference).max(), np.abs(single - reference).max()))


STALE_AFTER_S = 30 * 86400
"""An export of another fingerprint unused this long is deleted when a new one is made."""


def _mark_used(path: Path) -> None:
    """Touch ``<export>.used``: how :func:`_remove_stale` tells a live export from an old one
    (the export's own mtime is its creation time; access times are often not kept)."""
    try:
        path.with_suffix(".used").touch()
    except OSError as exc:  # a read-only cache: the export still works, it just looks old
        log.debug("could not mark %s as used: %s", path, exc)


def _last_used(path: Path) -> float:
    times = [f.stat().st_mtime for f in (path, path.with_suffix(".used")) if f.is_file()]
    return max(times, default=0.0)


def _remove_stale(current: Path, now: float | None = None) -> None:
    """Delete exports of the same model with another fingerprint (an upgraded package) that
    no installation has loaded for :data:`STALE_AFTER_S`; a recently used one may belong to
    another installation that is still running."""
    prefix = current.name.rsplit("-", 1)[0] + "-"
    cutoff = (time.time() if now is None else now) - STALE_AFTER_S
    for old in current.parent.glob(f"{prefix}*.onnx"):
        if old == current or not re.fullmatch(re.escape(prefix) + r"[0-9a-f]{16}\.onnx", old.name):
            continue
        if _last_used(old) > cutoff:
            continue
        try:
            old.unlink()
            old.with_suffix(".used").unlink(missing_ok=True)
        except OSError as exc:  # another process may still be using it; harmless to keep
            log.warning("could not remove stale ONNX export %s: %s", old, exc)
        else:
            log.info("removed stale ONNX export %s (unused for %d days)", old, STALE_AFTER_S // 86400)
