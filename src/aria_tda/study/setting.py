r"""One setting of a study: diagnostics, S_track, homogeneity, alignment — cached as a step.

:func:`run_setting` computes every table of one setting (original and, unless disabled, the
rank-1 residual) into ``OUTPUT/.cache/<slot>/`` (a :class:`aria_tda._steps.Step`; the slot is
:func:`slot_name`, unique per setting name), or reads them back when the score matrix, segment
map, feature store (their content digests) and study parameters are those it was computed
from. A setting that fails leaves no step behind (neither half-written tables nor a record
marked "running"): the next run computes it from scratch.

The step's record holds the digest of every file it wrote; a cached entry whose files are
missing, damaged or of another shape, or whose record is not readable, is recomputed with one
:class:`~aria_tda.errors.AriaWarning` naming it (:func:`aria_tda.study.cache.load_cached`),
never a traceback. The step's key (:func:`setting_step`) names what the tables depend on; how a
step is found, checked and read back is :mod:`aria_tda.study.cache`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda._io import atomic_path, remove_path, write_json
from aria_tda._steps import Step, file_fingerprint
from aria_tda.study.aspects import (
    aspect_tables,
    aspects_key,
    item_table,
    query_feature_values,
    query_sets,
)
from aria_tda.study.cache import TABLES, file_digests, load_cached, slot_name
from aria_tda.study.config import SettingSpec, StudySpec
from aria_tda.study.inputs import (
    align_tracks,
    check_setting_files,
    open_setting_scores,
    read_queries,
    segments_of,
    track_ids_of,
)
from aria_tda.study.stage_read import read_stage

__all__ = [
    "N_PAIRS",
    "compute_step",
    "planned_rows",
    "prepared_for",
    "rows_key",
    "run_setting",
    "setting_step",
    "shared_null",
]

#: Contributing track pairs kept per query, channel and variant (the report's evidence).
N_PAIRS = 10


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


def _track_segments(setting: SettingSpec, src: Any,
                    segments: Any) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Track ids of the S_track rows and the segments averaged into each, from the segment map
    alone (``src``: the setting's score matrix, opened, not read); ``(None, None)`` when
    nothing is aggregated (``normalize = "none"``)."""
    from aria_tda.scores import segment_codes

    if setting.normalize == "none":
        return None, None
    codes, ids = segment_codes(segments, n_rows=src.n_rows, row_ids=src.row_ids,
                               n_cols=src.n_cols)
    return np.asarray(ids).astype(str), np.bincount(codes, minlength=len(ids))


def _null_for(nulls: dict[str, Any], prepared: dict[str, list[Any]], pool: np.ndarray,
              rows: np.ndarray, spec: StudySpec, progress: bool | None,
              n_queries: int = 1, client: Any = None, segment_counts: Any = None,
              normalize: str = "zscore") -> Any:
    """The null of this track pool, feature order and segment map, computed once per study run
    (counts equal over the pool: the uniform null, keyed by the pool alone)."""
    from aria_tda.homogeneity import null_distribution

    parts = np.packbits(pool).tobytes() + np.ascontiguousarray(rows).tobytes()
    if segment_counts is not None and np.unique(np.asarray(segment_counts)[pool]).size > 1:
        parts += np.asarray(segment_counts, dtype=np.int64).tobytes() + normalize.encode()
    key = hashlib.sha256(parts).hexdigest()
    if key not in nulls:
        # B = "auto": compare with the query SE of z-bar for unit-variance z, 1/sqrt(T)
        query_se = 1.0 / np.sqrt(n_queries) if spec.B == "auto" else None
        nulls[key] = null_distribution(prepared, ks=list(spec.K), pool=pool, B=spec.B,
                                       seed=spec.seed, progress=progress, query_se=query_se,
                                       client=client, segment_counts=segment_counts,
                                       normalize=normalize)
    return nulls[key]


def planned_rows(setting: SettingSpec, spec: StudySpec, store: Any, *,
                 return_segments: bool = False) -> tuple[Any, ...]:
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
    return_segments : bool
        Also return what the null needs beyond the rows (:func:`shared_null`): the segments
        per S_track row (``None`` without aggregation) and the normalisation (``None`` for
        ``auto``, known only after the aggregation's moments pass).

    Returns
    -------
    rows, present, n_queries[, segment_counts, normalize]
    """
    src = open_setting_scores(setting)
    track_ids, counts = _track_segments(setting, src, segments_of(setting, src, store))
    if track_ids is None:
        track_ids = track_ids_of(src, store, setting.name)
    rows, present = align_tracks(track_ids, store, max_missing=spec.max_missing_fraction,
                                 setting=setting.name)
    if not return_segments:
        return rows, present, int(src.n_cols)
    normalize = None if setting.normalize == "auto" else setting.normalize
    return rows, present, int(src.n_cols), counts, normalize


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


def _anchor_cache() -> Any:
    """The query anchor's cache of one process: at most 1 GiB, or a quarter of the memory
    budget when that is less."""
    from aria_tda._memory import default_budget
    from aria_tda.homogeneity.anchor import AnchorCache

    return AnchorCache(max_bytes=min(1 << 30, default_budget() // 4))


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
                                               channels=channels,
                                               feature_set=spec.feature_set)
    prepared = prepared_cache[key]
    pool = feature_pool(prepared, max_missing_fraction=spec.max_missing_fraction) & present
    return prepared, pool


def shared_null(store: Any, rows: np.ndarray, present: np.ndarray, spec: StudySpec,
                n_queries: int, *, segment_counts: Any = None,
                normalize: str = "zscore") -> tuple[dict[bytes, Any], dict[str, Any]]:
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
    segment_counts : int array, optional
        Segments per S_track row (:func:`planned_rows` with ``return_segments``); unequal
        counts over the pool give the segment-matched null.
    normalize : {"zscore", "rank"}
        The setting's normalisation (for the segment-matched null).
    """
    prepared_cache: dict[bytes, Any] = {}
    nulls: dict[str, Any] = {}
    prepared, pool = prepared_for(prepared_cache, store, rows, present, spec)
    _null_for(nulls, prepared, pool, rows, spec, False, n_queries,
              segment_counts=segment_counts, normalize=normalize)
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
                                     level="track", scores=s_track, pool=pool, ids=track_ids)
    res = homogeneity(groups, prepared, null, ks=list(spec.K), evidence_k=spec.K_report,
                      n_pairs=N_PAIRS, progress=progress, constant=constant, client=client)
    summary = res.summary(n_boot=spec.n_bootstrap, seed=spec.seed)
    return {
        "homogeneity": summary,
        "query_z": res.query_frame(),
        "pairs": res.pairs_frame(track_ids=track_ids),
        "topk": _topk_frame(groups, scores, track_ids, spec.K_report),
        "concentration": conc,
        "groups": groups,
    }


def _alignment_rows(s_track: Any, store: Any, rows: np.ndarray, present: np.ndarray,
                    channels: list[str], chunk_rows: int | None,
                    feature_set: str) -> list[dict[str, Any]]:
    from aria_tda.alignment import channel_alignment, sequence_histogram
    from aria_tda.features.registry import channels as registry_channels
    from aria_tda.scores import rank1

    u1 = rank1(s_track, chunk_rows=chunk_rows).u1[present]
    store_rows = rows[present]
    by_channel: dict[str, dict[str, np.ndarray]] = {}
    for channel, specs in registry_channels(store.modality, feature_set=feature_set).items():
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
        "aspects": aspects_key(spec),  # the distinctive reading's inputs
        # 3: the segment-matched null and the distinctive reading (older steps are recomputed)
        "cache": 3,
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
        step.complete(timings=result["timings"], passes=result["passes"],
                      files=file_digests(work))
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

    from aria_tda.homogeneity import constant_queries

    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    log(f"{setting.name}: reading the scores (diagnostics, top-K, S_track"
        f"{' and its rank-1 residual' if spec.residual else ''})")
    scores = open_setting_scores(setting)
    # the study's K list (and the top-1) measured in the same pass
    stage = read_stage(setting, store, work=work, topk=(1, *spec.K), residual=spec.residual,
                       chunk_rows=spec.chunk_rows, progress=progress, client=client)
    diag = stage.diagnostics
    d = diag.to_dict() if hasattr(diag, "to_dict") else dataclasses.asdict(diag)
    # the study gives its own verdict (track level, reliability.csv), not the segment level one
    d = {k: v for k, v in d.items() if k not in {"v1", "u1", "constant_indices", "verdict"}}
    d["v1_constancy"] = float(diag.v1_constancy)
    timings["read_scores"] = time.perf_counter() - t0
    for rec in stage.passes:
        log(f"{setting.name}:   {rec['pass']}: {rec['seconds']:.1f} s, "
            f"peak {rec['peak_rss_mb']:.0f} MB")

    tables: dict[str, list[Any]] = {name: [] for name in TABLES}
    alignment: list[dict[str, Any]] = []
    # what the distinctive reading reads beside the scores: the queries' own features (its
    # anchor, when the study names them) and the sets of queries sharing a confound value
    queries = read_queries(spec.queries, int(scores.shape[1]))
    # read once per process: the anchor's scores are then computed once for every setting
    # and variant over the same features and pool (AnchorCache keys on these objects)
    qv_key = b"aspects:query-values:%d" % int(scores.shape[1])
    if qv_key not in prepared_cache:
        prepared_cache[qv_key] = query_feature_values(spec, int(scores.shape[1]), queries)
    query_values = prepared_cache[qv_key]
    anchor_cache = prepared_cache.setdefault(b"aspects:anchor-cache", _anchor_cache())
    sets = query_sets(spec, queries)
    variants = ("original", "residual") if spec.residual else ("original",)
    normalize_used: str = stage.normalize
    d["normalize_used"] = normalize_used
    n_nulls = len(nulls)
    degenerate: np.ndarray | None = None
    for variant in variants:
        t0 = time.perf_counter()
        src = stage.original if variant == "original" else stage.residual
        track_ids = track_ids_of(src, store, setting.name)
        rows, present = align_tracks(track_ids, store, max_missing=spec.max_missing_fraction,
                                     setting=setting.name)
        prepared, pool = prepared_for(prepared_cache, store, rows, present, spec)
        timings[f"pool_{variant}"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        log(f"{setting.name}: homogeneity ({variant}, K = {list(spec.K)}, B = {spec.B})")
        if variant == "original":  # the segments per S_track row, from the map alone
            counts = _track_segments(setting, scores, segments_of(setting, scores, store))[1]
        null = _null_for(nulls, prepared, pool, rows, spec, progress, int(src.shape[1]),
                         client=client, segment_counts=counts, normalize=normalize_used)
        # a query that is degenerate on the original matrix stays excluded on its residual
        # (the residual of a constant column is not constant, but it ranks nothing real)
        constant = constant_queries(src, pool=pool, chunk_rows=spec.chunk_rows)
        if degenerate is not None and degenerate.shape == constant.shape:
            constant = constant | degenerate
        degenerate = constant
        vt = _variant_tables(src, prepared, null, pool, track_ids, spec, progress, constant,
                             client=client)
        conc = vt.pop("concentration")
        groups = vt.pop("groups")
        if variant == "original":
            d["concentration_track"] = conc.to_dict()
        vt["null"] = null.to_frame()
        for name, df in vt.items():
            df.insert(0, "variant", variant)
            df.insert(0, "setting", setting.name)
            tables[name].append(df)
        timings[f"homogeneity_{variant}"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        log(f"{setting.name}: distinctive reading ({variant}, K = {spec.K_aspects}, "
            f"anchored on the {'query and ' if query_values is not None else ''}group)")
        for name, df in aspect_tables(src, prepared, null, pool, spec, constant,
                                      query_values=query_values, sets=sets,
                                      segment_counts=counts, normalize=normalize_used,
                                      progress=progress, client=client,
                                      anchor_cache=anchor_cache).items():
            df.insert(0, "variant", variant)
            df.insert(0, "setting", setting.name)
            tables[name].append(df)
        items = item_table(groups, prepared, pool, query_values, track_ids, constant,
                           anchor_cache=anchor_cache)
        items.insert(0, "variant", variant)
        items.insert(0, "setting", setting.name)
        tables["item_alignment"].append(items)
        timings[f"aspects_{variant}"] = time.perf_counter() - t0
        if variant == "original":
            t0 = time.perf_counter()
            alignment = _alignment_rows(src, store, rows, present, list(prepared),
                                        spec.chunk_rows, spec.feature_set)
            timings["alignment"] = time.perf_counter() - t0

    result: dict[str, Any] = {"diagnostics": d, "alignment": alignment, "timings": timings,
                              "passes": list(stage.passes),
                              "nulls_computed": len(nulls) - n_nulls}
    write_json(work / "diagnostics.json", d)
    write_json(work / "alignment.json", alignment)
    for name, parts in tables.items():
        df = pd.concat(parts, ignore_index=True)
        with atomic_path(work / f"{name}.parquet") as tmp:
            df.to_parquet(tmp, index=False)
        result[name] = df
    return result
