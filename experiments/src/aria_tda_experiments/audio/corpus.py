"""The embedded audio corpus: music21 works rendered as several *versions* to 30 s WAV tracks.

Pipeline
--------
1. **Works.** For each collection (a music21 corpus folder) the files are taken in a seeded
   order and converted to MIDI through the symbolic benchmark's work cache
   (:func:`aria_tda_experiments.corpus.convert_cached`; ``work_id`` = ``"<collection>/<file>"``,
   plus ``"#<i>"`` for the i-th tune of an opus) until ``works_per_collection`` works converted. A
   file that fails to convert, or a work without notes, is recorded in ``failures`` (stage
   ``"convert"``) and skipped.
2. **Split by work** (:func:`~.versions.plan_versions`), stratified by collection: a seeded
   ``round(test_fraction * n)`` of each collection's works (at least one and at most ``n - 1``;
   none when a collection has a single work) are *test* works. ``planted_works`` training works
   (seeded, taken round-robin over the collections) get one extra held-out version, split
   ``"planted"``: the version is not in training, its work is (clipped to the number of
   training works).
3. **Versions.** Work ``w``'s versions come from ``default_rng([seed, 2, crc32(w)])``: a
   permutation of the ``INSTRUMENT_FAMILIES`` (so the versions of a work have *distinct* GM
   families), one program of each family, a tempo scale uniform in ``[tempo_min, tempo_max]``
   (3 decimals) and a transposition in ``[-max_transpose, max_transpose]`` semitones. Version
   ``k`` uses draw ``k`` whatever the other settings are, so adding works or versions never
   changes an existing version. Train and test works get versions ``0..versions_per_work-1``; a
   planted work's extra version is ``versions_per_work``.
4. **Render** (:func:`~.versions.make_version_midi`, then
   :func:`aria_tda.features.audio.render.render_midi` with FluidSynth and the GM soundfont of
   :func:`~aria_tda.features.audio.render.find_soundfont`): every part gets its own MIDI
   channel (music21 puts all parts on one, so unisons cut each other) and the version's
   program; times are divided by ``tempo_scale``; notes are transposed (a note pushed outside
   0-127 is dropped). A work shorter than ``track_seconds`` is
   **looped** (repeated after its last note-off plus ``LOOP_GAP`` seconds); a longer one is
   **cut** at ``track_seconds`` (its opening is kept). The mono float32 audio at ``sr`` is
   loudness-normalised to an RMS of ``TARGET_RMS`` (-20 dBFS; FluidSynth's level varies ten-fold
   between a solo reed and a four-part organ), lowered where that would take its peak above
   ``PEAK_LIMIT`` (no clipping), and written as 16-bit PCM WAV. A silent rendering or any
   error is recorded (stage ``"render"``) and that track is skipped; a planted track whose work
   kept no training track is dropped.

Columns of ``tracks`` (``TRACK_COLUMNS``): ``track_id`` (``"<work_id>~v<k>"``), ``work_id``,
``version``, ``split`` (``train``/``test``/``planted``), ``genre`` (``GENRES``, else the
collection name), ``collection``, ``instrument_family``, ``program`` (GM 0-127),
``tempo_scale``, ``transpose``, ``path`` (WAV relative to ``out_dir``), ``duration`` (s).

On disk (``out_dir``; every file written atomically; manifest kind
``"aria_tda_experiments.audio.corpus"`` written last)::

    audio/<track id>-<render digest>.wav   tracks.csv   failures.csv   aria-manifest.json

Caching: a directory whose manifest records the same config, soundfont and render version is
loaded as it is. Otherwise each track is rendered unless ``audio/`` already holds its WAV: the
file name carries a digest of everything the audio depends on (source MIDI, program, tempo
scale, transposition, sr, length, soundfont), so an interrupted or re-configured build renders
only what is new; WAVs no longer referenced are removed at the end.

Parallelism: ``n_jobs > 1`` converts and renders in ``spawn`` worker processes (never fork:
the caller may hold threads whose locks a forked child would inherit held); each render
creates and deletes its own FluidSynth synthesiser, so nothing of FluidSynth is shared.
Rendering takes 0.4-0.6 s per 30 s track on one core of the 2-core dev machine, over half of it
loading the 141 MB soundfont; converting a work into a cold work cache 0.2-2 s (bach and
ryansMammoth fastest, palestrina / monteverdi / trecento 1-2 s).

Modules: the configuration, the split and the versions (steps 2-3 and each version's MIDI in
step 4) are :mod:`aria_tda_experiments.audio.versions` — deterministic, no music21 or FluidSynth;
this module converts the works, renders the versions, caches them and writes and loads the
corpus (one pipeline with one manifest; the tests patch ``_convert_file`` / ``_render_track``
here to inject failures into it).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from aria_tda._checks import check_int
from aria_tda._io import atomic_path, remove_path
from aria_tda._optional import require
from aria_tda._progress import progress
from aria_tda.errors import (
    DataError,
    FileFormatError,
    ManifestMismatchError,
    ParameterError,
    expected,
)
from aria_tda.features.audio.render import find_soundfont, render_midi
from aria_tda.manifest import check_manifest, make_manifest, read_manifest, write_manifest
from aria_tda_experiments import corpus as symbolic
from aria_tda_experiments.audio.versions import (
    TRACK_COLUMNS,
    AudioCorpusConfig,
    make_version_midi,
    plan_versions,
    version_rng,
)

__all__ = [
    "AudioCorpus",
    "build_audio_corpus",
    "collect_works",
    "load_audio_corpus",
    "pool_map",
    "soundfont_id",
    "wav_ok",
    "worker_pool",
]

KIND = "aria_tda_experiments.audio.corpus"
RENDER_VERSION = 2  # bump when the rendering of a version changes
TARGET_RMS = 0.1  # loudness normalisation: -20 dBFS RMS ...
PEAK_LIMIT = 0.99  # ... unless that takes the peak above this
FAILURE_COLUMNS = ("work_id", "track_id", "stage", "error")
_INT_COLS = ("version", "program", "transpose")
_FLOAT_COLS = ("tempo_scale", "duration")


@dataclass
class AudioCorpus:
    """A built audio corpus (see the module docstring); load with :func:`load_audio_corpus`.

    Attributes
    ----------
    root : pathlib.Path
        The corpus directory (``tracks.path`` is relative to it).
    config : AudioCorpusConfig
    tracks : pandas.DataFrame
        One row per rendered track, columns ``TRACK_COLUMNS``, sorted by work and version.
    failures : pandas.DataFrame
        One row per failure: ``work_id, track_id, stage, error`` (``stage`` is ``"convert"``,
        with an empty ``track_id``, or ``"render"``).
    stats : dict
        Build statistics from the manifest (tracks rendered / reused, render seconds).
    """

    root: Path
    config: AudioCorpusConfig
    tracks: pd.DataFrame
    failures: pd.DataFrame
    stats: dict[str, Any] = field(default_factory=dict)

    def _split(self, split: str) -> pd.DataFrame:
        return self.tracks[self.tracks["split"] == split].reset_index(drop=True)

    @property
    def train(self) -> pd.DataFrame:
        """Training tracks."""
        return self._split("train")

    @property
    def test(self) -> pd.DataFrame:
        """Tracks of the held-out works."""
        return self._split("test")

    @property
    def planted(self) -> pd.DataFrame:
        """Held-out versions of training works."""
        return self._split("planted")

    @property
    def n_failed(self) -> int:
        """Failures recorded: works that did not convert plus tracks that did not render."""
        return len(self.failures)

    def path(self, track_id: str) -> Path:
        """The WAV file of a track.

        Parameters
        ----------
        track_id : str
            A ``track_id`` of ``tracks``.
        """
        hit = self.tracks.loc[self.tracks["track_id"] == track_id, "path"]
        if hit.empty:
            raise ParameterError(expected("track_id", "a track of this corpus", track_id))
        return self.root / str(hit.iloc[0])

    def paths(self, split: str | None = None) -> list[Path]:
        """WAV files of one split (or of all tracks), in ``tracks`` order.

        Parameters
        ----------
        split : {"train", "test", "planted"}, optional
            Which split (default: every track).
        """
        rows = self.tracks if split is None else self._split(split)
        return [self.root / str(p) for p in rows["path"]]

    def summary(self) -> dict[str, Any]:
        """Counts for logs and manifests."""
        t = self.tracks
        return {
            "n_tracks": len(t),
            **{f"n_{s}": int((t["split"] == s).sum()) for s in ("train", "test", "planted")},
            "n_works": int(t["work_id"].nunique()),
            "genres": sorted(t["genre"].unique().tolist()),
            "n_failed": self.n_failed,
        }


# --------------------------------------------------------------------------------------------
# Works and rendering (the _convert_file / _render_track hooks run in worker processes)
# --------------------------------------------------------------------------------------------


def _convert_file(args: tuple[str, str]) -> list[dict[str, Any]]:
    path, cache = args
    return symbolic.convert_cached(path, cache=cache)


def _render_track(job: dict[str, Any]) -> float:
    """Render one version to ``job["out"]``; return the seconds it took."""
    import soundfile as sf

    start = time.perf_counter()
    mid = make_version_midi(job["midi"], program=job["program"], tempo_scale=job["tempo_scale"],
                            transpose=job["transpose"], seconds=job["seconds"])
    y = render_midi(mid, sr=job["sr"], duration=job["seconds"], soundfont=job["soundfont"])
    rms = float(np.sqrt(np.mean(np.square(y, dtype=np.float64)))) if y.size else 0.0
    if not rms > 1e-5:
        raise DataError(f"silent rendering (rms {rms:.2g})")
    gain = min(TARGET_RMS / rms, PEAK_LIMIT / float(np.max(np.abs(y))))
    y = (y * gain).astype(np.float32)
    with atomic_path(job["out"]) as tmp:
        sf.write(os.fspath(tmp), y, job["sr"], format="WAV", subtype="PCM_16")
    return time.perf_counter() - start


def _render_safe(job: dict[str, Any]) -> tuple[float, str]:
    try:
        return _render_track(job), ""
    except Exception as exc:  # any failure of one track is recorded, the build goes on
        return 0.0, f"{type(exc).__name__}: {exc}".replace("\n", " ")[:300]


def worker_pool(n_jobs: int) -> Any:
    """A spawn-based process pool of ``n_jobs`` workers (``None`` for one: work in process).

    Parameters
    ----------
    n_jobs : int
        Worker processes.

    Returns
    -------
    concurrent.futures.ProcessPoolExecutor or None
    """
    if n_jobs <= 1:
        return None
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    # spawn, never fork: the caller may hold threads (torch, numba, FluidSynth) whose locks a
    # forked child inherits held — a fork-based pool deadlocked under pytest here
    return ProcessPoolExecutor(n_jobs, mp_context=mp.get_context("spawn"))


def pool_map(pool: Any, fn: Any, items: Sequence[Any]) -> Any:
    """``fn`` over ``items`` in order, on ``pool`` when there is one (:func:`worker_pool`).

    Parameters
    ----------
    pool : ProcessPoolExecutor or None
        The pool.
    fn : callable
        A picklable function of one item.
    items : sequence
        The items.

    Returns
    -------
    iterator
        The results, in item order.
    """
    return pool.map(fn, items) if pool is not None else map(fn, items)


def collect_works(cfg: AudioCorpusConfig, cache: Path, pool: Any, n_jobs: int
                   ) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """Convert works collection by collection until each has ``works_per_collection``.

    Parameters
    ----------
    cfg : AudioCorpusConfig
        The corpus settings (collections, works per collection, seed).
    cache : pathlib.Path
        Where converted MIDI files are cached.
    pool : ProcessPoolExecutor or None
        Workers (:func:`worker_pool`).
    n_jobs : int
        Files converted per round (at least).

    Returns
    -------
    tuple of (list of dict, list of dict)
        The works (``work_id``, ``collection``, ``midi`` bytes) and the failures
        (``work_id``, ``track_id``, ``stage``, ``error``).
    """
    root = symbolic.corpus_root()
    works: list[dict[str, Any]] = []
    failures: list[dict[str, str]] = []
    for coll in cfg.collections:
        files = symbolic.list_work_files([coll])
        order = version_rng(cfg.seed, 0, coll).permutation(len(files))
        n_ok, pos = 0, 0
        while n_ok < cfg.works_per_collection and pos < len(files):
            batch = [files[i] for i in order[pos : pos + max(n_jobs, cfg.works_per_collection
                                                               - n_ok)]]
            pos += len(batch)
            results = pool_map(pool, _convert_file, [(str(f), str(cache)) for f in batch])
            for f, res in zip(batch, results, strict=True):
                rel = f.relative_to(root).as_posix()
                for w in res:
                    if n_ok >= cfg.works_per_collection:
                        break
                    wid = rel + (f"#{w['index']}" if len(res) > 1 else "")
                    if w["status"] != "ok" or not w.get("midi_file"):
                        error = w["error"] or f"no notes (status {w['status']})"
                        failures.append({"work_id": wid, "track_id": "", "stage": "convert",
                                         "error": error})
                        continue
                    works.append({"work_id": wid, "collection": coll,
                                  "midi": (cache / w["midi_file"]).read_bytes()})
                    n_ok += 1
    return works, failures


def soundfont_id(path: Path) -> str:
    """A soundfont's identity for the rendering's cache key: its name and size.

    Parameters
    ----------
    path : pathlib.Path
        The ``.sf2`` file.

    Returns
    -------
    str
    """
    return f"{path.name}:{path.stat().st_size}"


def _wav_name(row: dict[str, Any], midi_digest: str, cfg: AudioCorpusConfig, sf_id: str) -> str:
    spec = [RENDER_VERSION, midi_digest, row["program"], row["tempo_scale"], row["transpose"],
            cfg.sr, cfg.n_samples, sf_id]
    digest = hashlib.sha256(json.dumps(spec).encode()).hexdigest()[:10]
    safe = "".join(c if c.isalnum() or c in "-._~" else "_" for c in row["track_id"])
    return f"audio/{safe}-{digest}.wav"


def wav_ok(path: Path, cfg: AudioCorpusConfig) -> bool:
    """True when ``path`` is a readable mono WAV of the corpus's rate and length.

    Parameters
    ----------
    path : pathlib.Path
        A rendered track.
    cfg : AudioCorpusConfig
        The corpus settings (``sr``, ``n_samples``).

    Returns
    -------
    bool
    """
    import soundfile as sf

    try:
        info = sf.info(os.fspath(path))
    except Exception:  # unreadable: render again
        return False
    return bool(info.samplerate == cfg.sr and info.frames == cfg.n_samples
                and info.channels == 1)


def build_audio_corpus(
    out_dir: str | os.PathLike[str],
    *,
    config: AudioCorpusConfig | None = None,
    work_cache: str | os.PathLike[str] | None = None,
    n_jobs: int = 1,
    progress_bar: bool | None = None,
    soundfont: str | os.PathLike[str] | None = None,
    **config_fields: Any,
) -> AudioCorpus:
    """Build (or reuse) the audio corpus described by ``config`` in ``out_dir``.

    Parameters
    ----------
    out_dir : path
        Corpus directory; loaded as it is when its manifest records the same configuration
        and soundfont, else completed (existing WAVs of the same versions are kept).
    config : AudioCorpusConfig, optional
        Or pass its fields as keywords (``works_per_collection=4, ...``), not both.
    work_cache : path, optional
        Cache of converted works (default :func:`aria_tda_experiments.corpus.default_work_cache`,
        shared with the symbolic corpus).
    n_jobs : int
        Worker processes converting works and rendering tracks.
    progress_bar : bool, optional
        Force the progress bar on/off.
    soundfont : path, optional
        GM soundfont (default :func:`~aria_tda.features.audio.render.find_soundfont`).
    **config_fields : Any
        The fields of :class:`AudioCorpusConfig`, instead of ``config``.

    Returns
    -------
    AudioCorpus

    Raises
    ------
    DataError
        if the split leaves no training or no test work, or every track of a split failed.
    MissingDependencyError
        if music21, FluidSynth or a soundfont is missing.
    """
    if config is not None and config_fields:
        raise ParameterError("build_audio_corpus: pass either config= or its fields as "
                             "keywords, not both")
    cfg = config if config is not None else AudioCorpusConfig(**config_fields)
    if not isinstance(cfg, AudioCorpusConfig):
        raise ParameterError(expected("config", "an AudioCorpusConfig", type(cfg).__name__))
    n_jobs = check_int("n_jobs", n_jobs, min_value=1)
    out = Path(out_dir)
    sf_path = find_soundfont(soundfont)
    sf_id = soundfont_id(sf_path)
    try:
        man = read_manifest(out)
    except FileFormatError:
        man = {"kind": KIND}  # damaged: rebuild
    if man is not None and man.get("kind") != KIND:
        raise FileFormatError(f"audio corpus: {str(out)!r} holds another artefact "
                              f"({man.get('kind')!r}); choose an empty or audio corpus folder")
    if man is not None:
        try:
            found = load_audio_corpus(out, config=cfg, soundfont=sf_path)
            if all(p.is_file() for p in found.paths()):
                return found
        except (ManifestMismatchError, FileFormatError, OSError, KeyError, ValueError):
            pass  # other settings or damaged: rebuild (reusing matching WAVs)
        remove_path(out / "aria-manifest.json")
    cache = Path(work_cache) if work_cache is not None else symbolic.default_work_cache()
    cache.mkdir(parents=True, exist_ok=True)
    pool = worker_pool(n_jobs)
    try:
        works, failures = collect_works(cfg, cache, pool, n_jobs)
        if not works:
            raise DataError(f"audio corpus: no work of {list(cfg.collections)} converted")
        plan = plan_versions(pd.DataFrame(works), config=cfg)
        midi_of = {w["work_id"]: w["midi"] for w in works}
        digest_of = {w: hashlib.sha256(m).hexdigest()[:16] for w, m in midi_of.items()}
        rows = plan.to_dict("records")
        todo: list[dict[str, Any]] = []
        for row in rows:
            row["path"] = _wav_name(row, digest_of[row["work_id"]], cfg, sf_id)
            row["duration"] = cfg.n_samples / cfg.sr
            if not wav_ok(out / row["path"], cfg):
                todo.append({**{k: row[k] for k in ("track_id", "work_id", "split", "program",
                                                    "tempo_scale", "transpose")},
                             "midi": midi_of[row["work_id"]], "seconds": cfg.track_seconds,
                             "sr": cfg.sr, "soundfont": str(sf_path),
                             "out": str(out / row["path"])})
        bar = progress(total=len(todo), desc="audio corpus: rendering", unit="track",
                       enabled=progress_bar)
        times: list[float] = []
        failed: set[str] = set()
        try:
            for job, (secs, error) in zip(todo, pool_map(pool, _render_safe, todo), strict=True):
                if error:
                    failed.add(job["track_id"])
                    failures.append({"work_id": job["work_id"], "track_id": job["track_id"],
                                     "stage": "render", "error": error})
                else:
                    times.append(secs)
                bar.update(1)
        finally:
            bar.close()
    finally:
        if pool is not None:
            pool.shutdown()
    kept = [r for r in rows if r["track_id"] not in failed]
    with_train = {r["work_id"] for r in kept if r["split"] == "train"}
    kept = [r for r in kept if r["split"] != "planted" or r["work_id"] in with_train]
    tracks = pd.DataFrame(kept, columns=list(TRACK_COLUMNS))
    for s in ("train", "test"):
        if not (tracks["split"] == s).any():
            raise DataError(f"audio corpus: every {s} track failed to render (see the errors: "
                            f"{[f['error'] for f in failures][:3]})")
    stats = {"n_rendered": len(times), "n_reused": len(rows) - len(todo),
             "render_seconds_total": round(float(sum(times)), 3),
             "render_seconds_per_track": round(float(np.mean(times)), 4) if times else None,
             "n_jobs": n_jobs}
    corpus = AudioCorpus(root=out, config=cfg, tracks=tracks,
                         failures=pd.DataFrame(failures, columns=list(FAILURE_COLUMNS)),
                         stats=stats)
    _write(corpus, sf_id)
    return corpus


def _write(corpus: AudioCorpus, sf_id: str) -> None:
    out, cfg = corpus.root, corpus.config
    with atomic_path(out / "tracks.csv") as tmp:
        corpus.tracks.to_csv(tmp, index=False)
    with atomic_path(out / "failures.csv") as tmp:
        corpus.failures.to_csv(tmp, index=False)
    keep = {out / p for p in corpus.tracks["path"]}
    for wav in (out / "audio").glob("*.wav"):
        if wav not in keep:
            remove_path(wav)
    write_manifest(out, make_manifest(
        KIND, config=cfg.to_dict(), config_digest=cfg.digest(), soundfont=sf_id,
        render_version=RENDER_VERSION,
        music21_version=require("music21", "attribution").__version__,
        stats=corpus.stats, **corpus.summary(),
    ))


def load_audio_corpus(
    out_dir: str | os.PathLike[str],
    *,
    config: AudioCorpusConfig | None = None,
    soundfont: str | os.PathLike[str] | None = None,
) -> AudioCorpus:
    """Load a corpus written by :func:`build_audio_corpus`.

    Parameters
    ----------
    out_dir : path
        The corpus directory.
    config : AudioCorpusConfig, optional
        The configuration it must have been built with.
    soundfont : path, optional
        The soundfont it must have been rendered with (checked by name and size).

    Raises
    ------
    FileFormatError
        if ``out_dir`` holds no audio corpus.
    ManifestMismatchError
        if it was built with another configuration or soundfont.
    """
    root = Path(out_dir)
    man = read_manifest(root)
    if man is None or man.get("kind") != KIND:
        raise FileFormatError(f"audio corpus: {str(root)!r} is not an audio corpus directory "
                              f"(no manifest of kind {KIND!r})")
    wanted: dict[str, Any] = {"render_version": RENDER_VERSION}
    if config is not None:
        wanted["config"] = config.to_dict()
    if soundfont is not None:
        wanted["soundfont"] = soundfont_id(Path(soundfont))
    check_manifest(root, wanted)
    cfg = AudioCorpusConfig.from_mapping(man["config"], what="audio corpus manifest")
    tracks = pd.read_csv(root / "tracks.csv", dtype=str, keep_default_na=False)
    tracks = tracks.astype({**{c: int for c in _INT_COLS}, **{c: float for c in _FLOAT_COLS}})
    failures = pd.read_csv(root / "failures.csv", dtype=str, keep_default_na=False)
    return AudioCorpus(root=root, config=cfg, tracks=tracks[list(TRACK_COLUMNS)],
                       failures=failures, stats=dict(man.get("stats", {})))
