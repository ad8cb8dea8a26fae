"""The track pool of a setting, and what is computed once per pool: prepared features, null.

A setting's ``S_track`` rows are matched to the feature store (:func:`planned_rows`, from the
segment map alone, before any pass over the scores); the features re-indexed to those rows
(:func:`prepared_for`) and the null of that pool (:func:`null_for`) are computed once per run and
shared by every setting and variant with the same rows (:func:`rows_key`), on one machine or,
through :func:`shared_null`, by a cluster run's tasks.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from aria_tda.study.config import SettingSpec, StudySpec
from aria_tda.study.inputs import align_tracks, open_setting_scores, segments_of, track_ids_of

__all__ = ["anchor_cache", "null_for", "planned_rows", "prepared_for", "rows_key",
           "shared_null", "track_segments"]


def track_segments(setting: SettingSpec, src: Any,
                   segments: Any) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Track ids of the S_track rows and the segments averaged into each, from the map alone.

    ``(None, None)`` when nothing is aggregated (``normalize = "none"``).

    Parameters
    ----------
    setting : SettingSpec
        The setting (its normalisation).
    src : ScoreSource
        Its score matrix, opened, not read (rows, row ids).
    segments : path, array-like or None
        Its segment map (:func:`aria_tda.study.inputs.segments_of`).
    """
    from aria_tda.scores import segment_codes

    if setting.normalize == "none":
        return None, None
    codes, ids = segment_codes(segments, n_rows=src.n_rows, row_ids=src.row_ids,
                               n_cols=src.n_cols)
    return np.asarray(ids).astype(str), np.bincount(codes, minlength=len(ids))


def null_for(nulls: dict[str, Any], prepared: dict[str, list[Any]], pool: np.ndarray,
             rows: np.ndarray, spec: StudySpec, progress: bool | None,
             n_queries: int = 1, client: Any = None, segment_counts: Any = None,
             normalize: str = "zscore") -> Any:
    """The null of this track pool, feature order and segment map, computed once per run.

    Counts equal over the pool give the uniform null, keyed by the pool alone; unequal counts
    the segment-matched null (:func:`aria_tda.homogeneity.null_distribution`).

    Parameters
    ----------
    nulls : dict
        The run's nulls by key (filled in here).
    prepared : dict
        The channels' prepared features (:func:`prepared_for`).
    pool, rows : numpy.ndarray
        The track pool (mask) and the store row of each S_track row.
    spec : StudySpec
        The study (K, B, seed).
    progress : bool or None
        Progress bars.
    n_queries : int
        Queries of the setting (for ``B = "auto"``).
    client : dask.distributed.Client, optional
        Compute the null as Dask tasks.
    segment_counts : int array, optional
        Segments per S_track row.
    normalize : {"zscore", "rank"}
        The setting's normalisation (for the segment-matched null).
    """
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

    What :func:`aria_tda.study.setting.compute_tables` finds after writing S_track (its track
    ids matched to the store), found here from the segment map alone, without a pass over the
    scores: a study run on a cluster uses it to compute each null (and the prepared features)
    once, before the settings' tasks start. The residual has the rows of the original.

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
    track_ids, counts = track_segments(setting, src, segments_of(setting, src, store))
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


def anchor_cache() -> Any:
    """A new query-anchor cache for one process: at most 1 GiB, or a quarter of the memory
    budget when that is less (:class:`aria_tda.homogeneity.anchor.AnchorCache`)."""
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
    """The prepared features and the null of one track pool, as the setting's pipeline
    (:func:`aria_tda.study.setting.compute_tables`) makes them.

    Returns the ``prepared_cache`` and ``nulls`` entries (one each) that a setting with these
    rows finds instead of computing them (the dictionaries of
    :func:`aria_tda.study.setting.run_setting`).

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
    null_for(nulls, prepared, pool, rows, spec, False, n_queries,
              segment_counts=segment_counts, normalize=normalize)
    return prepared_cache, nulls
