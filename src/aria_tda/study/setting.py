r"""One setting of a study: diagnostics, S_track, homogeneity, alignment — cached as a step.

:func:`run_setting` computes every table of one setting (original and, unless disabled, the
rank-1 residual) into ``OUTPUT/.cache/<slot>/`` (a :class:`aria_tda._steps.Step`; the slot is
:func:`slot_name`, unique per setting name), or reads them back when the score matrix, segment
map, feature store (their content digests) and study parameters are those it was computed
from. A setting that fails leaves no step behind (neither half-written tables nor a record
marked "running"): the next run computes it from scratch.

The step's record holds the digest of every file it wrote; a cached entry whose files are
missing, damaged or of another shape, or whose record is not readable, is recomputed with one
:class:`~aria_tda.errors.AriaWarning` naming it (:func:`load_cached`), never a traceback.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda._fingerprint import content_digest
from aria_tda._io import atomic_path, read_json, remove_path, write_json
from aria_tda._steps import Step, file_fingerprint
from aria_tda.errors import AriaWarning, DataError, ParameterError
from aria_tda.study.config import SettingSpec, StudySpec
from aria_tda.study.inputs import (
    align_tracks,
    check_setting_files,
    open_setting_scores,
    track_ids_of,
)

__all__ = [
    "N_PAIRS",
    "TABLES",
    "compute_step",
    "load_cached",
    "planned_rows",
    "prepared_for",
    "read_cached",
    "rows_key",
    "run_setting",
    "setting_step",
    "shared_null",
    "slot_name",
    "slug",
]

#: Contributing track pairs kept per query, channel and variant (the report's evidence).
N_PAIRS = 10
#: The per-setting tables (Parquet files of the cached step).
TABLES = ("homogeneity", "query_z", "pairs", "topk", "null")


def slug(name: str) -> str:
    """A file-system-safe folder name for a setting name.

    Parameters
    ----------
    name : str
        The setting's name.
    """
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "setting"


def slot_name(name: str) -> str:
    """The cache folder of a setting: its readable :func:`slug` and a hash of the exact name.

    Two names that slug alike (``TRAK/fine``, ``TRAK_fine``) get distinct slots, so they never
    evict each other's cached results: ``TRAK_fine-1c0e3a5b``.

    Parameters
    ----------
    name : str
        The setting's name.
    """
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{slug(name)[:80]}-{digest}"


def _segments_of(setting: SettingSpec, src: Any, store: Any) -> Any:
    """The segment map of ``setting`` (its file, else the store's ids matched by position)."""
    segments: Any = setting.segments
    if segments is None and src.row_ids is None:
        if src.shape[0] != len(store):
            raise DataError(
                f"setting {setting.name!r}: the score matrix has {src.shape[0]} rows and no row "
                f"ids, and no segment map was given; the feature store has {len(store)} tracks. "
                "Give segments = a segment -> track map, or save the scores with row ids"
            )
        segments = np.asarray(store.track_ids).astype(str)
    return segments


def _s_track(setting: SettingSpec, store: Any, *, normalize: str, residual: bool, out: Path,
             chunk_rows: int | None, progress: bool | None, client: Any = None) -> Any:
    """S_track (original or residual) written under ``out``; returns its ScoreSource.

    ``normalize`` is the method actually applied (``auto`` is resolved once on the original and
    the same method is used for the residual, so the two differ only by the rank-1 part).
    Without a segment map, a score matrix that carries no row ids is matched to the feature
    store by position (it must have one row per store track).
    """
    from aria_tda.scores import aggregate, open_scores, save_scores
    from aria_tda.scores import residual as residual_source

    src = open_setting_scores(setting)
    segments = _segments_of(setting, src, store)
    if normalize == "none":
        if setting.segments is not None:
            raise ParameterError(
                f"setting {setting.name!r}: normalize='none' needs one segment per track (no "
                "segment map); choose zscore, rank or auto"
            )
        if not residual:
            return src
        res = residual_source(src, chunk_rows=chunk_rows)
        save_scores(res, out, method=setting.method, stage=setting.stage,
                    parameters={"variant": "residual", "normalize": "none"},
                    row_ids=src.row_ids)
        return open_scores(out)
    return aggregate(src, segments=segments, normalize=normalize, residual=residual, out=out,
                     chunk_rows=chunk_rows, progress=progress, client=client)


def _gram_fits(scores: Any) -> bool:
    """Whether the exact Dask diagnostics pass fits: its T x T float64 Gram under 2 GB.

    The distributed pass (:func:`aria_tda.diagnostics.diagnose` with a client) is exact-mode only;
    a wider matrix keeps the single-machine pass, which picks a tiled/approximate mode itself.
    """
    t = int(scores.shape[1])
    return 8 * t * t <= 2 * 1024**3


def _topk_frame(groups: np.ndarray, scores: np.ndarray, track_ids: np.ndarray, k: int) -> Any:
    import pandas as pd

    t = groups.shape[0]
    k = min(k, groups.shape[1])
    return pd.DataFrame({
        "query": np.repeat(np.arange(t), k),
        "rank": np.tile(np.arange(1, k + 1), t),
        "track_id": track_ids[groups[:, :k].reshape(-1)],
        "score": scores[:, :k].reshape(-1),
    })


def _null_for(nulls: dict[str, Any], prepared: dict[str, list[Any]], pool: np.ndarray,
              rows: np.ndarray, spec: StudySpec, progress: bool | None,
              n_queries: int = 1, client: Any = None) -> Any:
    """The null of this track pool and feature order, computed once per study run."""
    from aria_tda.homogeneity import null_distribution

    key = hashlib.sha256(
        np.packbits(pool).tobytes() + np.ascontiguousarray(rows).tobytes()
    ).hexdigest()
    if key not in nulls:
        # B = "auto": compare with the query SE of z-bar for unit-variance z, 1/sqrt(T)
        query_se = 1.0 / np.sqrt(n_queries) if spec.B == "auto" else None
        nulls[key] = null_distribution(prepared, ks=list(spec.K), pool=pool, B=spec.B,
                                       seed=spec.seed, progress=progress, query_se=query_se,
                                       client=client)
    return nulls[key]


def planned_rows(setting: SettingSpec, spec: StudySpec,
                 store: Any) -> tuple[np.ndarray, np.ndarray, int]:
    """Store rows and presence mask of the setting's S_track rows, and its query count.

    What :func:`_compute` finds after writing S_track (its track ids matched to the store),
    found here from the segment map alone, without a pass over the scores: a study run on a
    cluster uses it to compute each null (and the prepared features) once, before the
    settings' tasks start. The residual has the rows of the original.

    Parameters
    ----------
    setting : SettingSpec
        The setting (its score matrix already made, for an embedding setting).
    spec : StudySpec
        The study (``max_missing_fraction``).
    store : FeatureStore
        The study's feature store.
    """
    from aria_tda.scores import segment_codes

    src = open_setting_scores(setting)
    segments = _segments_of(setting, src, store)
    if setting.normalize == "none":
        track_ids = track_ids_of(src, store, setting.name)
    else:
        _, ids = segment_codes(segments, n_rows=src.n_rows, row_ids=src.row_ids,
                               n_cols=src.n_cols)
        track_ids = np.asarray(ids).astype(str)
    rows, present = align_tracks(track_ids, store, max_missing=spec.max_missing_fraction,
                                 setting=setting.name)
    return rows, present, int(src.n_cols)


def rows_key(rows: np.ndarray, present: np.ndarray) -> bytes:
    """The key of :func:`prepared_for`'s cache: the store row of each S_track row (-1: none).

    Parameters
    ----------
    rows : numpy.ndarray
        Store row of each S_track row (:func:`aria_tda.study.inputs.align_tracks`).
    present : numpy.ndarray
        Which rows have features.
    """
    return np.where(present, rows, -1).tobytes()


def prepared_for(prepared_cache: dict[bytes, Any], store: Any, rows: np.ndarray,
                 present: np.ndarray, spec: StudySpec) -> tuple[dict[str, list[Any]], np.ndarray]:
    """The features re-indexed to these rows (prepared once per run) and the track pool.

    Parameters
    ----------
    prepared_cache : dict
        Prepared features computed so far in this run, by :func:`rows_key` (filled in here).
    store : FeatureStore
        The study's feature store.
    rows, present : numpy.ndarray
        Store row of each S_track row and which rows have features.
    spec : StudySpec
        The study (``channels``, ``max_missing_fraction``).
    """
    from aria_tda.homogeneity import feature_pool
    from aria_tda.similarity import prepare_channels

    key = rows_key(rows, present)
    if key not in prepared_cache:
        channels = list(spec.channels) if spec.channels else None
        prepared_cache[key] = prepare_channels(store, rows=np.where(present, rows, 0),
                                               channels=channels)
    prepared = prepared_cache[key]
    pool = feature_pool(prepared, max_missing_fraction=spec.max_missing_fraction) & present
    return prepared, pool


def shared_null(store: Any, rows: np.ndarray, present: np.ndarray, spec: StudySpec,
                n_queries: int) -> tuple[dict[bytes, Any], dict[str, Any]]:
    """The prepared features and the null of one track pool, as :func:`_compute` makes them.

    Returns the ``prepared_cache`` and ``nulls`` entries (one each) that a setting with these
    rows finds instead of computing them (:func:`run_setting`'s dictionaries).

    Parameters
    ----------
    store : FeatureStore
        The study's feature store.
    rows, present : numpy.ndarray
        From :func:`planned_rows`.
    spec : StudySpec
        The study (K, B, seed, channels).
    n_queries : int
        Query count of the first setting that uses this null (for ``B = "auto"``).
    """
    prepared_cache: dict[bytes, Any] = {}
    nulls: dict[str, Any] = {}
    prepared, pool = prepared_for(prepared_cache, store, rows, present, spec)
    _null_for(nulls, prepared, pool, rows, spec, False, n_queries)
    return prepared_cache, nulls


def _variant_tables(
    s_track: Any,
    prepared: dict[str, list[Any]],
    null: Any,
    pool: np.ndarray,
    track_ids: np.ndarray,
    spec: StudySpec,
    progress: bool | None,
    constant: np.ndarray,
    client: Any = None,
) -> dict[str, Any]:
    from aria_tda.diagnostics.concentration import concentration_from_groups
    from aria_tda.homogeneity import homogeneity, top_k_groups

    groups, scores = top_k_groups(s_track, max(spec.K), pool=pool, chunk_rows=spec.chunk_rows,
                                  return_scores=True, progress=progress, client=client)
    # the track-level top-K concentration from the same groups (the pool's tracks are ranked)
    conc = concentration_from_groups(groups, (1, *spec.K), n_rows=int(np.count_nonzero(pool)),
                                     level="track")
    res = homogeneity(groups, prepared, null, ks=list(spec.K), evidence_k=spec.K_report,
                      n_pairs=N_PAIRS, progress=progress, constant=constant, client=client)
    summary = res.summary(n_boot=spec.n_bootstrap, seed=spec.seed)
    return {
        "homogeneity": summary,
        "query_z": res.query_frame(),
        "pairs": res.pairs_frame(track_ids=track_ids),
        "topk": _topk_frame(groups, scores, track_ids, spec.K_report),
        "concentration": conc,
    }


def _alignment_rows(s_track: Any, store: Any, rows: np.ndarray, present: np.ndarray,
                    channels: list[str], chunk_rows: int | None) -> list[dict[str, Any]]:
    from aria_tda.alignment import channel_alignment, sequence_histogram
    from aria_tda.features.registry import channels as registry_channels
    from aria_tda.scores import rank1

    u1 = rank1(s_track, chunk_rows=chunk_rows).u1[present]
    store_rows = rows[present]
    by_channel: dict[str, dict[str, np.ndarray]] = {}
    for channel, specs in registry_channels(store.modality).items():
        if channel not in channels:
            continue
        groups = {}
        for s in specs:
            if s.name not in store.feature_names:
                continue
            if s.kind == "vector":
                groups[s.name] = store.vectors(s.name)[store_rows]
            else:
                seqs = store.sequences(s.name)
                groups[s.name] = sequence_histogram([
                    np.asarray(seqs[i] if seqs[i] is not None else [], dtype=np.int64)
                    for i in store_rows
                ])
        if groups:
            by_channel[channel] = groups
    out = []
    for channel, res in channel_alignment(u1, by_channel).items():
        out.append({"channel": channel, **res.to_dict()})
    return out


#: Files of a complete step besides its record.
STEP_FILES = ("diagnostics.json", "alignment.json", *(f"{name}.parquet" for name in TABLES))
#: Keys every cached ``diagnostics.json`` holds (what the tables are built from).
_DIAGNOSTICS_KEYS = ("kappa", "r1", "r2_5", "p", "n_train", "n_queries")


class DamagedCache(Exception):
    """A cached step that cannot be used as it is (its message says which file and why)."""


def _file_digests(work: Path) -> dict[str, str]:
    return {name: content_digest(work / name) for name in STEP_FILES}


def read_cached(step: Step) -> dict[str, Any]:
    """The tables of a complete step, as :func:`run_setting` returns them.

    Every file is checked against the digest its record holds and read with its expected
    shape (the tables' required columns, the setting's name).

    Parameters
    ----------
    step : Step
        A complete step (:meth:`~aria_tda._steps.Step.is_complete`).

    Raises
    ------
    DamagedCache
        A file is missing, altered since the step finished, unreadable or of another shape.
    """
    import pandas as pd

    from aria_tda.results import TABLES as SCHEMA

    summary = step.summary()
    recorded = summary.get("files")
    if not isinstance(recorded, dict):
        raise DamagedCache(f"{step.record_path} lists none of its files")
    for name in STEP_FILES:
        f = step.path / name
        if not f.is_file():
            raise DamagedCache(f"{f} is missing")
        if content_digest(f) != recorded.get(name):
            raise DamagedCache(f"{f} differs from what the finished step wrote")
    try:
        diagnostics = read_json(step.path / "diagnostics.json")
        alignment = read_json(step.path / "alignment.json")
    except (OSError, ValueError) as exc:
        raise DamagedCache(f"{step.path}: a JSON file is unreadable ({exc})") from None
    if not isinstance(diagnostics, dict) or any(k not in diagnostics for k in _DIAGNOSTICS_KEYS):
        raise DamagedCache(f"{step.path / 'diagnostics.json'} is not a diagnostics record")
    if not isinstance(alignment, list):
        raise DamagedCache(f"{step.path / 'alignment.json'} is not a list of alignment rows")
    timings = summary.get("timings")
    out = {"diagnostics": diagnostics, "alignment": alignment,
           "timings": timings if isinstance(timings, dict) else {}}
    setting = (step.params.get("setting") or {}).get("name")
    for name in TABLES:
        f = step.path / f"{name}.parquet"
        try:
            df = pd.read_parquet(f)
        except Exception as exc:  # pyarrow raises many types for a damaged file
            raise DamagedCache(f"{f} is unreadable ({type(exc).__name__})") from None
        lacking = [c for c in ("setting", "variant", *SCHEMA[name].columns)
                   if c not in df.columns]
        if lacking:
            raise DamagedCache(f"{f} lacks column(s) {lacking}")
        if setting is not None and len(df) and not (df["setting"] == setting).all():
            raise DamagedCache(f"{f} holds another setting's rows")
        out[name] = df
    return out


def load_cached(step: Step, setting: str, log: Callable[[str], None]) -> dict[str, Any] | None:
    """The cached tables of ``step`` when they can be reused, else ``None`` (to recompute).

    Logs why a stale step is recomputed; a damaged one (unreadable record, a file missing,
    altered, truncated or of another schema) gives one
    :class:`~aria_tda.errors.AriaWarning` naming the file.

    Parameters
    ----------
    step : Step
        The setting's step (:func:`setting_step`).
    setting : str
        The setting's name, for the messages.
    log : callable
        Called with each log line.
    """
    damage = step.damage()
    if damage is None and step.is_complete():
        try:
            result = read_cached(step)
        except DamagedCache as exc:
            damage = str(exc)
        else:
            log(f"{setting}: reusing cached results ({step.path})")
            return result
    if damage is not None:
        warnings.warn(
            f"setting {setting!r}: damaged cache entry, recomputed: {damage}",
            AriaWarning,
            stacklevel=3,
        )
        return None
    reason = step.stale_reason()
    if reason:
        log(f"{setting}: recomputing ({reason})")
    return None


def run_setting(
    setting: SettingSpec,
    spec: StudySpec,
    store: Any,
    store_fp: dict[str, Any],
    cache_root: Path,
    nulls: dict[str, Any],
    prepared_cache: dict[bytes, Any],
    *,
    progress: bool | None,
    log: Callable[[str], None],
) -> dict[str, Any]:
    """All tables of one setting, from the cache when inputs and parameters are unchanged.

    Parameters
    ----------
    setting : SettingSpec
        The setting to analyse.
    spec : StudySpec
        The study (K, B, seed, bootstrap, residual, channels, chunk size).
    store : FeatureStore
        The study's feature store.
    store_fp : dict
        Fingerprint of the feature store (part of the cache key).
    cache_root : Path
        ``OUTPUT/.cache``; the setting's step is a folder in it.
    nulls : dict
        Nulls computed so far in this run, by track pool (filled in here).
    prepared_cache : dict
        Prepared features computed so far in this run, by row order (filled in here).
    progress : bool or None
        Progress bars.
    log : callable
        Called with each log line.

    Returns
    -------
    dict
        ``diagnostics`` and ``alignment`` (JSON-able), ``timings`` and one DataFrame per name
        in :data:`TABLES`.
    """
    step = setting_step(setting, spec, store_fp, cache_root)
    cached = load_cached(step, setting.name, log)
    if cached is not None:
        return cached
    return compute_step(step, setting, spec, store, nulls, prepared_cache, progress=progress,
                        log=log)


def setting_step(setting: SettingSpec, spec: StudySpec, store_fp: dict[str, Any],
                 cache_root: Path) -> Step:
    """The cache step of a setting: its folder and the parameters it must have been made with.

    The parameters are the setting, the content fingerprints of its files
    (:func:`aria_tda._steps.file_fingerprint`: a rewritten file is never taken for the old one,
    whatever its mtime) and of the feature store, and the study's recorded parameters; where
    the study runs (``scheduler``) is not one of them, so a setting computed on one machine is
    reused on a cluster and the other way round. The folder is :func:`slot_name`.

    Parameters
    ----------
    setting : SettingSpec
        The setting.
    spec : StudySpec
        The study.
    store_fp : dict
        Fingerprint of the feature store.
    cache_root : Path
        ``OUTPUT/.cache``.
    """
    check_setting_files(setting)
    params = {
        "setting": dataclasses.asdict(setting) | {
            "scores": file_fingerprint(str(setting.scores)),
            "segments": None if setting.segments is None else file_fingerprint(setting.segments),
        },
        "store": store_fp,
        "study": {k: v for k, v in spec.params().items()
                  if k not in {"name", "confound", "queries"}},
        "n_pairs": N_PAIRS,
        "concentration": 1,  # steps cached before the top-K concentration are recomputed
        "cache": 2,  # content fingerprints and file digests (older steps are recomputed)
    }
    return Step(cache_root, slot_name(setting.name), params)


def compute_step(
    step: Step,
    setting: SettingSpec,
    spec: StudySpec,
    store: Any,
    nulls: dict[str, Any],
    prepared_cache: dict[bytes, Any],
    *,
    progress: bool | None,
    log: Callable[[str], None],
    client: Any = None,
) -> dict[str, Any]:
    """Compute a setting into its (cleared) step and mark it complete; see :func:`run_setting`.

    A failure (Ctrl-C and a full disk included) removes the step (never left "running",
    :meth:`~aria_tda._steps.Step.running`); the S_track files are removed either way. The
    record keeps the digest of every file written (checked by :func:`read_cached`).

    Parameters
    ----------
    step : Step
        From :func:`setting_step`.
    setting, spec, store, nulls, prepared_cache, progress, log
        As for :func:`run_setting`.
    client : dask.distributed.Client, optional
        Run the setting's passes (diagnostics, S_track, null, top-K, homogeneity) as Dask
        tasks over row ranges / query blocks (:mod:`aria_tda.study.cluster` does this for a study
        with a single setting to compute); the tables are the same.
    """
    with step.running() as work:  # a failed step is not left "running": the next run redoes it
        try:
            result = _compute(setting, spec, store, work, nulls, prepared_cache,
                              progress=progress, log=log, client=client)
        finally:  # S_track files are N x T float64: never leave them behind
            for f in work.glob("s_track_*"):
                remove_path(f)
            for f in work.glob(".s_track_*"):  # their temporaries
                remove_path(f)
        step.complete(timings=result["timings"], files=_file_digests(work))
    return result


def _compute(
    setting: SettingSpec,
    spec: StudySpec,
    store: Any,
    work: Path,
    nulls: dict[str, Any],
    prepared_cache: dict[bytes, Any],
    *,
    progress: bool | None,
    log: Callable[[str], None],
    client: Any = None,
) -> dict[str, Any]:
    """The body of :func:`run_setting`: compute and write every table into ``work``."""
    import pandas as pd

    from aria_tda.diagnostics import diagnose
    from aria_tda.homogeneity import constant_queries

    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    log(f"{setting.name}: reliability diagnostics")
    scores = open_setting_scores(setting)
    topk = (1, *spec.K)  # the study's K list (and the top-1), measured in the same pass
    if client is not None and _gram_fits(scores):
        diag = diagnose(scores, chunk_rows=spec.chunk_rows, client=client, topk=topk)
    else:
        diag = diagnose(scores, chunk_rows=spec.chunk_rows, progress=progress, topk=topk)
    d = diag.to_dict() if hasattr(diag, "to_dict") else dataclasses.asdict(diag)
    d = {k: v for k, v in d.items() if k not in {"v1", "u1", "constant_indices"}}
    d["v1_constancy"] = float(diag.v1_constancy)
    timings["diagnostics"] = time.perf_counter() - t0

    tables: dict[str, list[Any]] = {name: [] for name in TABLES}
    alignment: list[dict[str, Any]] = []
    variants = ("original", "residual") if spec.residual else ("original",)
    normalize_used: str = setting.normalize
    d["normalize_used"] = normalize_used
    n_nulls = len(nulls)
    degenerate: np.ndarray | None = None
    for variant in variants:
        t0 = time.perf_counter()
        log(f"{setting.name}: S_track ({variant})")
        src = _s_track(setting, store, normalize=normalize_used, residual=variant == "residual",
                       out=work / f"s_track_{variant}.npy", chunk_rows=spec.chunk_rows,
                       progress=progress, client=client)
        if variant == "original" and normalize_used == "auto":
            params = (src.manifest or {}).get("parameters") or {}
            normalize_used = str(params.get("normalize", "auto"))
            d["normalize_used"] = normalize_used
        track_ids = track_ids_of(src, store, setting.name)
        rows, present = align_tracks(track_ids, store, max_missing=spec.max_missing_fraction,
                                     setting=setting.name)
        prepared, pool = prepared_for(prepared_cache, store, rows, present, spec)
        timings[f"s_track_{variant}"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        log(f"{setting.name}: homogeneity ({variant}, K = {list(spec.K)}, B = {spec.B})")
        null = _null_for(nulls, prepared, pool, rows, spec, progress, int(src.shape[1]),
                         client=client)
        # a query that is degenerate on the original matrix stays excluded on its residual
        # (the residual of a constant column is not constant, but it ranks nothing real)
        constant = constant_queries(src, pool=pool, chunk_rows=spec.chunk_rows)
        if degenerate is not None and degenerate.shape == constant.shape:
            constant = constant | degenerate
        degenerate = constant
        vt = _variant_tables(src, prepared, null, pool, track_ids, spec, progress, constant,
                             client=client)
        conc = vt.pop("concentration")
        if variant == "original":
            d["concentration_track"] = conc.to_dict()
        vt["null"] = null.to_frame()
        for name, df in vt.items():
            df.insert(0, "variant", variant)
            df.insert(0, "setting", setting.name)
            tables[name].append(df)
        timings[f"homogeneity_{variant}"] = time.perf_counter() - t0
        if variant == "original":
            t0 = time.perf_counter()
            alignment = _alignment_rows(src, store, rows, present, list(prepared),
                                        spec.chunk_rows)
            timings["alignment"] = time.perf_counter() - t0

    result: dict[str, Any] = {"diagnostics": d, "alignment": alignment, "timings": timings,
                              "nulls_computed": len(nulls) - n_nulls}
    write_json(work / "diagnostics.json", d)
    write_json(work / "alignment.json", alignment)
    for name, parts in tables.items():
        df = pd.concat(parts, ignore_index=True)
        with atomic_path(work / f"{name}.parquet") as tmp:
            df.to_parquet(tmp, index=False)
        result[name] = df
    return result
