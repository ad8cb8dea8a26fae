"""Embedded symbolic corpus: music21's bundled scores → MIDI → event tokens → fixed windows.

Conventions
-----------
- A *collection* is a folder of ``music21``'s corpus (``"bach"``, ``"palestrina"``,
  ``"monteverdi"``, ``"essenFolksong"``, ...). Files with suffix ``.mxl .xml .musicxml .krn
  .abc .mid`` are works (``.rntxt`` analyses are not music and are skipped); an ``Opus`` file
  (many tunes in one ``.abc``) yields one work per score.
- ``work_id`` = ``"<collection>/<file name>"`` (plus ``"#<i>"`` for the i-th score of an opus).
  ``composer`` is the score's metadata composer; where a score states none, the composer most
  often stated in its collection (else the collection name). Work labels for confound
  analyses (``WORK_LABELS``): ``key`` and ``mode`` estimated by music21 (Krumhansl-Schmuckler),
  the first ``meter``, ``n_parts``; blank where music21 cannot tell.
- Each work goes music21 → MIDI (``music21.midi.translate``) → notes
  (:func:`aria_tda_experiments.tokenizer.read_midi`) → tokens
  (:func:`aria_tda_experiments.tokenizer.encode`). Repeats are expanded; a score whose repeats
  music21 cannot expand (``ExpanderException``, common in the string quartets) is written once
  through, without its repeat marks. Conversions are cached per source file in a *work cache*
  (default ``$ARIA_CACHE_DIR/music21-works-<music21 version>-t<tokenizer version>``, else
  ``~/.cache/aria/...``) together with each work's MIDI, so later corpora reuse them.
  A work that fails to convert is skipped and counted (``Corpus.n_failed``) with its error.
- The split is **by work**: a seeded permutation of the converted works puts
  ``round(test_fraction * n_works)`` of them (at least one) in the test split. Each work is then
  cut into windows of ``window`` tokens starting every ``hop`` tokens; a trailing partial window
  is dropped (a work shorter than one window gives none and is counted as ``too_short``).
  ``max_train_segments`` / ``max_test_segments`` keep a seeded random subset of windows.
- Segment order: by work (sorted ``work_id``), then by position. Train row ``i`` is training
  example ``i`` (score-matrix row ``i``); ``segment_id`` = ``"<work_id>@<start_token>"``.

On disk (``out_dir``, written atomically, manifest kind ``"aria_tda_experiments.corpus"``)::

    train_tokens.npy (M, L) int64      test_tokens.npy (M_test, L) int64
    train_segments.csv / test_segments.csv   one row per window (see ``SEGMENT_COLUMNS``)
    works.csv                           one row per work seen (status ok/failed/empty/too_short)
    work_tokens.npz                     full token stream of every converted work

Size: a little over 600 lines, kept as one module on purpose — conversion, the work cache,
windowing, the split and the on-disk format are one pipeline with one manifest, and the tests
patch ``convert_work_file`` here to inject failures into that pipeline.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from aria_tda._checks import check_float, check_int
from aria_tda._io import atomic_path, read_json, write_json
from aria_tda._optional import require
from aria_tda._progress import progress
from aria_tda.errors import (
    DataError,
    FileFormatError,
    ManifestMismatchError,
    ParameterError,
    expected,
)
from aria_tda.manifest import check_manifest, make_manifest, read_manifest, write_manifest
from aria_tda_experiments import tokenizer as tk

__all__ = [
    "SEGMENT_COLUMNS",
    "Corpus",
    "CorpusConfig",
    "build_corpus",
    "convert_cached",
    "convert_work_file",
    "list_work_files",
    "load_corpus",
    "segment_tokens",
]

CORPUS_KIND = "aria_tda_experiments.corpus"
TOKENIZER_VERSION = 1
WORK_CACHE_VERSION = 3  # bump when convert_work_file's output changes
SUFFIXES = (".mxl", ".xml", ".musicxml", ".krn", ".abc", ".mid", ".midi")
WORK_LABELS = ("key", "mode", "meter", "n_parts")
SEGMENT_COLUMNS = (
    "segment_id", "work_id", "collection", "composer", "title", "key", "mode", "meter", "n_parts",
    "start_token", "start_time", "end_time", "start_velocity", "n_note_on",
)


@dataclass(frozen=True)
class CorpusConfig:
    """What corpus to build (every field is part of the cache key).

    Parameters
    ----------
    collections : tuple of str
        music21 corpus folders to draw works from.
    max_works : int or None
        Stop after this many converted works (files taken in a seeded random order); ``None`` = all.
    window : int
        Tokens per segment (the model's context ``L``).
    hop : int or None
        Stride between window starts (``None`` = ``window``: non-overlapping).
    test_fraction : float
        Fraction of works held out (queries are prompted from them).
    max_train_segments, max_test_segments : int or None
        Keep a seeded random subset of this many windows.
    seed : int
        Seeds work order, split and subsampling.
    """

    collections: tuple[str, ...] = ("bach",)
    max_works: int | None = None
    window: int = 64
    hop: int | None = None
    test_fraction: float = 0.2
    max_train_segments: int | None = None
    max_test_segments: int | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.collections, str) or not self.collections:
            what = "a non-empty tuple of folder names"
            raise ParameterError(expected("collections", what, self.collections))
        object.__setattr__(self, "collections", tuple(str(c) for c in self.collections))
        if self.max_works is not None:
            check_int("max_works", self.max_works, min_value=2)
        check_int("window", self.window, min_value=2)
        if self.hop is not None:
            check_int("hop", self.hop, min_value=1)
        check_float("test_fraction", self.test_fraction, min_value=0.0, max_value=1.0,
                    min_inclusive=False, max_inclusive=False)
        for name in ("max_train_segments", "max_test_segments"):
            if getattr(self, name) is not None:
                check_int(name, getattr(self, name), min_value=1)
        check_int("seed", self.seed, min_value=0)

    @property
    def stride(self) -> int:
        return self.hop or self.window

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["collections"] = list(self.collections)
        return d


@dataclass
class Corpus:
    """A built corpus (see module docstring). Load with :func:`load_corpus`.

    Attributes
    ----------
    train_tokens : np.ndarray [shape=(M, L)], int64
    test_tokens : np.ndarray [shape=(M_test, L)], int64
    train_meta, test_meta : pandas.DataFrame
        One row per segment, columns ``SEGMENT_COLUMNS``, row order = token row order.
    works : pandas.DataFrame
        One row per work seen: ``work_id, collection, composer, title, source, status, error,
        split, n_notes, n_tokens``; ``status`` in ``ok, failed, empty, too_short``.
    """

    path: Path
    config: CorpusConfig
    train_tokens: np.ndarray
    test_tokens: np.ndarray
    train_meta: pd.DataFrame
    test_meta: pd.DataFrame
    works: pd.DataFrame
    _work_tokens: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    @property
    def n_failed(self) -> int:
        """Works skipped because conversion failed."""
        return int((self.works["status"] == "failed").sum())

    @property
    def train_ids(self) -> np.ndarray:
        """Segment ids of the training rows (track ids of the feature store)."""
        return self.train_meta["segment_id"].to_numpy(dtype=str)

    def work_ids(self, split: str) -> list[str]:
        """Converted works of ``split``, sorted.

        Parameters
        ----------
        split : {"train", "test"}
            Which split.
        """
        return sorted(self.works.loc[self.works["split"] == split, "work_id"])

    def work_tokens(self, work_id: str) -> np.ndarray:
        """The full token stream of a converted work.

        Parameters
        ----------
        work_id : str
            A converted work of this corpus.
        """
        if not self._work_tokens:
            with np.load(self.path / "work_tokens.npz") as z:
                ids = json.loads(str(z["__ids__"]))
                self._work_tokens = {w: z[f"w{i}"] for i, w in enumerate(ids)}
        if work_id not in self._work_tokens:
            raise ParameterError(expected("work_id", "a converted work of this corpus", work_id))
        return self._work_tokens[work_id]

    def summary(self) -> dict[str, Any]:
        """Counts for logs and manifests."""
        st = self.works["status"].value_counts()
        return {
            "n_train_segments": int(self.train_tokens.shape[0]),
            "n_test_segments": int(self.test_tokens.shape[0]),
            "window": int(self.config.window),
            "n_works": int(st.get("ok", 0)),
            "n_train_works": int((self.works["split"] == "train").sum()),
            "n_test_works": int((self.works["split"] == "test").sum()),
            "n_failed": int(st.get("failed", 0)),
            "n_empty": int(st.get("empty", 0)),
            "n_too_short": int(st.get("too_short", 0)),
        }


# --------------------------------------------------------------------------------------------
# Work conversion (cached per source file)
# --------------------------------------------------------------------------------------------


def _music21() -> Any:
    return require("music21", "attribution", purpose="building the embedded symbolic corpus")


def corpus_root() -> Path:
    """The folder of music21's bundled corpus."""
    m21 = _music21()
    return Path(m21.__file__).parent / "corpus"


def list_work_files(collections: Sequence[str]) -> list[Path]:
    """Music files (``SUFFIXES``) of the given music21 corpus folders, sorted, recursively.

    Parameters
    ----------
    collections : sequence of str
        music21 corpus folder names (``"bach"``, ``"haydn"``, ...).
    """
    root = corpus_root()
    out: list[Path] = []
    for c in collections:
        folder = root / c
        if not folder.is_dir():
            known = sorted(p.name for p in root.iterdir()
                           if p.is_dir() and not p.name.startswith("_"))
            what = f"music21 corpus folders ({', '.join(known)})"
            raise ParameterError(expected("collections", what, c))
        out.extend(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in SUFFIXES)
    return sorted(out)


def default_work_cache() -> Path:
    """The per-work conversion cache folder.

    ``$ARIA_CACHE_DIR`` (or ``~/.cache/aria``) / ``music21-works-<music21>-t<tokenizer>-c<cache>``.
    """
    m21 = _music21()
    base = Path(os.environ.get("ARIA_CACHE_DIR") or Path.home() / ".cache" / "aria")
    return base / f"music21-works-{m21.__version__}-t{TOKENIZER_VERSION}-c{WORK_CACHE_VERSION}"


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def convert_work_file(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Convert one corpus file to MIDI + tokens; never raises for bad music.

    Parameters
    ----------
    path : path
        A music file music21 can parse.

    Returns
    -------
    list of dict
        One per work (several for an opus): ``index, title, composer, status`` (``ok`` /
        ``failed`` / ``empty``), ``error``, ``midi`` (bytes or None), ``tokens`` (int64 array or
        None), ``n_notes``.
    """
    m21 = _music21()

    p = Path(path)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            parsed = m21.converter.parse(str(p))
    except Exception as exc:  # music21 raises many exception types for bad files
        return [_failed(0, p.stem, exc)]
    scores = list(parsed.scores) if isinstance(parsed, m21.stream.Opus) else [parsed]
    out = []
    for i, score in enumerate(scores):
        meta = getattr(score, "metadata", None)
        title = _text(getattr(meta, "title", None) or getattr(meta, "movementName", None)) or p.stem
        composer = _text(getattr(meta, "composer", None))
        try:
            data = _to_midi(score)
            notes = tk.read_midi(data)
        except Exception as exc:
            out.append(_failed(i, title, exc, composer))
            continue
        tokens = tk.encode(notes)
        status = "ok" if notes else "empty"
        out.append({"index": i, "title": title, "composer": composer, "status": status,
                    "error": "", "midi": data, "tokens": tokens, "n_notes": len(notes),
                    **_labels(score)})
    return out


def _to_midi(score: Any) -> bytes:
    """MIDI bytes of ``score``, repeats expanded; malformed repeats are dropped and it is retried.

    music21 expands repeats when it writes MIDI and raises ``ExpanderException`` on repeat
    barlines or brackets it cannot pair (common in the string quartets). Such a score is written
    once through instead: repeat barlines become plain ones, repeat brackets and Da capo / Segno
    / Coda expressions are removed (the score is changed in place).
    """
    from music21 import midi as m21midi
    from music21.repeat import ExpanderException

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return bytes(m21midi.translate.music21ObjectToMidiFile(score).writestr())
        except ExpanderException:
            _strip_repeats(score)
            return bytes(m21midi.translate.music21ObjectToMidiFile(score).writestr())


def _strip_repeats(score: Any) -> None:
    """Remove repeat barlines, repeat brackets and repeat expressions from ``score`` in place."""
    from music21 import bar, repeat, spanner, stream

    for measure in score.recurse().getElementsByClass(stream.Measure):
        if isinstance(measure.leftBarline, bar.Repeat):
            measure.leftBarline = None
        if isinstance(measure.rightBarline, bar.Repeat):
            measure.rightBarline = bar.Barline("regular")
    marks = (repeat.RepeatExpression, spanner.RepeatBracket)
    for el in list(score.recurse().getElementsByClass(marks)):
        for site in list(el.sites.get()):
            if isinstance(site, stream.Stream) and el in site:
                site.remove(el)


def _labels(score: Any) -> dict[str, Any]:
    """Work-level labels for confound analyses: estimated key and mode, first meter, parts."""
    out: dict[str, Any] = {"key": "", "mode": "", "meter": "", "n_parts": 0}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            key = score.analyze("key")  # Krumhansl-Schmuckler estimate
            out["key"], out["mode"] = f"{key.tonic.name} {key.mode}", str(key.mode)
            ts = score.recurse().getElementsByClass("TimeSignature").first()
            out["meter"] = ts.ratioString if ts is not None else ""
            out["n_parts"] = len(getattr(score, "parts", []))
    except Exception:  # labels are optional; a score music21 cannot analyse keeps blanks
        pass
    return out


def _failed(i: int, title: str, exc: BaseException, composer: str = "") -> dict[str, Any]:
    msg = f"{type(exc).__name__}: {exc}".replace("\n", " ")[:300]
    return {"index": i, "title": title, "composer": composer, "status": "failed", "error": msg,
            "midi": None, "tokens": None, "n_notes": 0, "key": "", "mode": "", "meter": "",
            "n_parts": 0}


def _cache_name(rel: Path) -> str:
    return str(rel).replace(os.sep, "__")


def _cached_convert(path: Path, rel: Path, cache: Path) -> list[dict[str, Any]]:
    """Convert ``path`` unless ``cache`` already holds it; return the works (MIDI not loaded)."""
    entry = cache / (_cache_name(rel) + ".json")
    if entry.is_file():
        try:
            works = read_json(entry)
            for w in works:
                w["tokens"] = (np.load(cache / w["tokens_file"]) if w.get("tokens_file") else None)
            return list(works)
        except (OSError, ValueError, KeyError):
            pass  # unreadable cache entry: convert again
    works = convert_work_file(path)
    stored = []
    for w in works:
        rec = {k: v for k, v in w.items() if k not in ("midi", "tokens")}
        rec["tokens_file"] = rec["midi_file"] = None
        if w["tokens"] is not None:
            stem = f"{_cache_name(rel)}.{w['index']}"
            rec["tokens_file"], rec["midi_file"] = stem + ".npy", stem + ".mid"
            with atomic_path(cache / rec["tokens_file"]) as tmp, open(tmp, "wb") as fh:
                np.save(fh, w["tokens"])
            with atomic_path(cache / rec["midi_file"]) as tmp:
                tmp.write_bytes(w["midi"])
        stored.append(rec)
    write_json(entry, stored)
    for rec, w in zip(stored, works, strict=True):
        rec["tokens"] = w["tokens"]
    return stored


def convert_cached(
    path: str | os.PathLike[str], *, cache: str | os.PathLike[str] | None = None
) -> list[dict[str, Any]]:
    """:func:`convert_work_file` through the work cache (converts only what is not cached).

    Parameters
    ----------
    path : path
        A music file inside music21's corpus folder (:func:`corpus_root`).
    cache : path, optional
        The work cache (default :func:`default_work_cache`).

    Returns
    -------
    list of dict
        As :func:`convert_work_file` but without ``midi``: ``midi_file`` names the work's MIDI
        file inside ``cache`` (``None`` for a failed work).
    """
    p = Path(path)
    folder = Path(cache) if cache is not None else default_work_cache()
    folder.mkdir(parents=True, exist_ok=True)
    return _cached_convert(p, p.relative_to(corpus_root()), folder)


def _convert_job(args: tuple[str, str, str]) -> list[dict[str, Any]]:
    path, rel, cache = args
    return _cached_convert(Path(path), Path(rel), Path(cache))


# --------------------------------------------------------------------------------------------
# Segmenting and assembly
# --------------------------------------------------------------------------------------------


def segment_tokens(tokens: np.ndarray, *, window: int, hop: int | None = None) -> np.ndarray:
    """Start offsets of the full windows: ``0, hop, 2 hop, ...`` with ``start + window <= n``.

    Parameters
    ----------
    tokens : np.ndarray [shape=(n,)]
        A work's token stream.
    window : int
        Window length in tokens.
    hop : int, optional
        Step between window starts (default ``window``: no overlap).
    """
    window = check_int("window", window, min_value=1)
    hop = check_int("hop", hop if hop is not None else window, min_value=1)
    n = int(np.asarray(tokens).shape[0])
    return np.arange(0, max(n - window + 1, 0), hop, dtype=np.int64)


def _window_state(tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Elapsed seconds and velocity bin (-1 = none yet) *before* each token."""
    shift = np.where((tokens >= tk.TIME_SHIFT) & (tokens < tk.SET_VELOCITY),
                     tokens - tk.TIME_SHIFT + 1, 0)
    steps = np.concatenate([[0], np.cumsum(shift)])
    vel = np.where((tokens >= tk.SET_VELOCITY) & (tokens < tk.PAD), tokens - tk.SET_VELOCITY, -1)
    last = np.maximum.accumulate(np.where(vel >= 0, np.arange(vel.size), -1)) if vel.size else vel
    vel_before = np.concatenate([[-1], np.where(last >= 0, vel[np.maximum(last, 0)], -1)])
    return steps / tk.STEPS_PER_SECOND, vel_before


def _segments(works: list[dict[str, Any]], cfg: CorpusConfig) -> tuple[np.ndarray, pd.DataFrame]:
    rows, windows = [], []
    for w in works:
        toks = w["tokens"]
        times, vel_before = _window_state(toks)
        for s in segment_tokens(toks, window=cfg.window, hop=cfg.stride):
            win = toks[s : s + cfg.window]
            vb = int(vel_before[s])
            windows.append(win)
            rows.append({
                "segment_id": f"{w['work_id']}@{s:05d}", "work_id": w["work_id"],
                "collection": w["collection"], "composer": w["composer"], "title": w["title"],
                **{k: w.get(k, "") for k in WORK_LABELS},
                "start_token": int(s), "start_time": float(times[s]),
                "end_time": float(times[s + cfg.window]),
                "start_velocity": tk.DEFAULT_VELOCITY if vb < 0 else 4 * vb + 2,
                "n_note_on": int((win < tk.NOTE_OFF).sum()),
            })
    tokens = np.stack(windows).astype(np.int64) if windows else np.zeros((0, cfg.window), np.int64)
    return tokens, pd.DataFrame(rows, columns=list(SEGMENT_COLUMNS))


def _subsample(tokens: np.ndarray, meta: pd.DataFrame, n: int | None, rng: np.random.Generator
               ) -> tuple[np.ndarray, pd.DataFrame]:
    if n is None or n >= len(meta):
        return tokens, meta
    keep = np.sort(rng.choice(len(meta), size=n, replace=False))
    return tokens[keep], meta.iloc[keep].reset_index(drop=True)


def _config_digest(cfg: CorpusConfig) -> str:
    return hashlib.sha256(json.dumps(cfg.to_dict(), sort_keys=True).encode()).hexdigest()[:12]


def build_corpus(
    out_dir: str | os.PathLike[str],
    *,
    config: CorpusConfig | None = None,
    work_cache: str | os.PathLike[str] | None = None,
    n_jobs: int = 1,
    progress_bar: bool | None = None,
    **config_fields: Any,
) -> Corpus:
    """Build (or reuse) the corpus described by ``config`` in ``out_dir``.

    Parameters
    ----------
    out_dir : path
        Corpus directory; reused when its manifest records the same configuration.
    config : CorpusConfig, optional
        Or pass its fields as keywords (``window=64, max_works=80, ...``), not both.
    work_cache : path, optional
        Cache of converted works (default :func:`default_work_cache`).
    n_jobs : int
        Worker processes converting works (conversion is the slow part, ~0.2 s per chorale).
    progress_bar : bool, optional
        Force the progress bar on/off.
    **config_fields : Any
        The fields of :class:`CorpusConfig`, instead of ``config``.

    Returns
    -------
    Corpus

    Raises
    ------
    DataError
        if fewer than two works convert, or a split ends up with no window.
    """
    if config is not None and config_fields:
        raise ParameterError("build_corpus: pass either config= or its fields as keywords, "
                             "not both")
    cfg = config or CorpusConfig(**config_fields)
    n_jobs = check_int("n_jobs", n_jobs, min_value=1)
    out = Path(out_dir)
    if (out / "aria-manifest.json").is_file():
        try:
            return load_corpus(out, config=cfg)
        except (ManifestMismatchError, FileFormatError, OSError):
            pass  # other settings or damaged: rebuild
    cache = Path(work_cache) if work_cache is not None else default_work_cache()
    cache.mkdir(parents=True, exist_ok=True)
    root = corpus_root()
    files = list_work_files(cfg.collections)
    order = np.random.default_rng([cfg.seed, 0]).permutation(len(files))
    works: list[dict[str, Any]] = []
    n_ok = 0
    bar = progress(total=cfg.max_works or len(files), desc="corpus: converting works", unit="work",
                   enabled=progress_bar)
    chunk = max(1, 4 * n_jobs)
    pool = None
    if n_jobs > 1:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        # fork (where available) needs no __main__ guard in the caller and no re-import
        method = "fork" if "fork" in mp.get_all_start_methods() else "spawn"
        pool = ProcessPoolExecutor(n_jobs, mp_context=mp.get_context(method))
    try:
        for start in range(0, len(files), chunk):
            if cfg.max_works is not None and n_ok >= cfg.max_works:
                break
            batch = [files[i] for i in order[start : start + chunk]]
            jobs = [(str(f), str(f.relative_to(root)), str(cache)) for f in batch]
            results = (list(pool.map(_convert_job, jobs)) if pool
                       else [_convert_job(j) for j in jobs])
            for f, res in zip(batch, results, strict=True):
                rel = f.relative_to(root)
                for w in res:
                    if cfg.max_works is not None and n_ok >= cfg.max_works:
                        break
                    wid = rel.as_posix() + (f"#{w['index']}" if len(res) > 1 else "")
                    works.append({**w, "work_id": wid, "collection": rel.parts[0],
                                  "source": rel.as_posix()})
                    n_ok += w["status"] == "ok"
                    bar.update(int(w["status"] == "ok") if cfg.max_works else 0)
                if not cfg.max_works:
                    bar.update(1)
    finally:
        bar.close()
        if pool is not None:
            pool.shutdown()
    return _assemble(out, cfg, works)


def _fill_composers(works: list[dict[str, Any]]) -> None:
    """Missing composers → the collection's most frequent stated composer (else its name)."""
    stated: dict[str, dict[str, int]] = {}
    for w in works:
        if w["composer"]:
            counts = stated.setdefault(w["collection"], {})
            counts[w["composer"]] = counts.get(w["composer"], 0) + 1
    for w in works:
        if not w["composer"]:
            found = stated.get(w["collection"])
            w["composer"] = max(sorted(found), key=found.__getitem__) if found else w["collection"]


def _assemble(out: Path, cfg: CorpusConfig, works: list[dict[str, Any]]) -> Corpus:
    _fill_composers(works)
    ok = sorted((w for w in works if w["status"] == "ok"), key=lambda w: w["work_id"])
    for w in ok:
        if w["tokens"].size < cfg.window:
            w["status"] = "too_short"
    usable = [w for w in ok if w["status"] == "ok"]
    if len(usable) < 2:
        raise DataError(f"corpus: only {len(usable)} usable works in {list(cfg.collections)} "
                        f"(window={cfg.window}); need at least 2 to split by work")
    perm = np.random.default_rng([cfg.seed, 1]).permutation(len(usable))
    n_test = min(len(usable) - 1, max(1, round(cfg.test_fraction * len(usable))))
    test_ids = {usable[i]["work_id"] for i in perm[:n_test]}
    for w in works:
        in_test = w["work_id"] in test_ids
        w["split"] = ("test" if in_test else "train") if w["status"] == "ok" else ""
    train_tok, train_meta = _segments([w for w in usable if w["split"] == "train"], cfg)
    test_tok, test_meta = _segments([w for w in usable if w["split"] == "test"], cfg)
    rng = np.random.default_rng([cfg.seed, 2])
    train_tok, train_meta = _subsample(train_tok, train_meta, cfg.max_train_segments, rng)
    test_tok, test_meta = _subsample(test_tok, test_meta, cfg.max_test_segments, rng)
    if not len(train_meta) or not len(test_meta):
        raise DataError(f"corpus: no {'training' if not len(train_meta) else 'test'} windows of "
                        f"{cfg.window} tokens; use more works or a shorter window")
    works_df = pd.DataFrame([
        {"work_id": w["work_id"], "collection": w["collection"], "composer": w["composer"],
         "title": w["title"], "source": w["source"], "status": w["status"], "error": w["error"],
         **{k: w.get(k, "") for k in WORK_LABELS},
         "split": w["split"], "n_notes": int(w["n_notes"]),
         "n_tokens": int(w["tokens"].size) if w["tokens"] is not None else 0,
         "midi_file": w.get("midi_file") or ""}
        for w in sorted(works, key=lambda w: w["work_id"])
    ])
    corpus = Corpus(path=out, config=cfg, train_tokens=train_tok, test_tokens=test_tok,
                    train_meta=train_meta, test_meta=test_meta, works=works_df,
                    _work_tokens={w["work_id"]: w["tokens"] for w in usable})
    with atomic_path(out) as tmp:
        tmp.mkdir(parents=True)
        np.save(tmp / "train_tokens.npy", train_tok)
        np.save(tmp / "test_tokens.npy", test_tok)
        train_meta.to_csv(tmp / "train_segments.csv", index=False)
        test_meta.to_csv(tmp / "test_segments.csv", index=False)
        works_df.to_csv(tmp / "works.csv", index=False)
        ids = [w["work_id"] for w in usable]
        np.savez(tmp / "work_tokens.npz", __ids__=np.array(json.dumps(ids)),
                 **{f"w{i}": w["tokens"] for i, w in enumerate(usable)})
        write_manifest(tmp, make_manifest(
            CORPUS_KIND, config=cfg.to_dict(), config_digest=_config_digest(cfg),
            tokenizer={"version": TOKENIZER_VERSION, "vocab_size": tk.VOCAB_SIZE},
            music21_version=_music21().__version__, **corpus.summary(),
        ))
    return corpus


def load_corpus(path: str | os.PathLike[str], *, config: CorpusConfig | None = None) -> Corpus:
    """Load a corpus written by :func:`build_corpus` (checked against ``config`` if given).

    Parameters
    ----------
    path : path
        The corpus directory.
    config : CorpusConfig, optional
        The configuration it must have been built with.
    """
    p = Path(path)
    man = read_manifest(p)
    if man is None or man.get("kind") != CORPUS_KIND:
        raise FileFormatError(f"corpus: {str(p)!r} is not a corpus directory "
                              f"(no manifest of kind {CORPUS_KIND!r})")
    if config is not None:
        check_manifest(p, {"config": config.to_dict()})
    cfg_d = dict(man["config"])
    cfg_d["collections"] = tuple(cfg_d["collections"])
    str_cols = {c: str for c in ("segment_id", "work_id", "collection", "composer", "title", "key",
                                 "mode", "meter")}
    read = lambda name: pd.read_csv(p / name, dtype=str_cols, keep_default_na=False)  # noqa: E731
    return Corpus(
        path=p, config=CorpusConfig(**cfg_d),
        train_tokens=np.load(p / "train_tokens.npy"), test_tokens=np.load(p / "test_tokens.npy"),
        train_meta=read("train_segments.csv"), test_meta=read("test_segments.csv"),
        works=pd.read_csv(p / "works.csv", dtype=str, keep_default_na=False).astype(
            {"n_notes": int, "n_tokens": int, "n_parts": int}),
    )
