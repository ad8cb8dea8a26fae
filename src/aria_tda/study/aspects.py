"""The study's distinctive reading of one setting (:mod:`aria_tda.homogeneity.distinctive`).

For every setting and variant the study reads, at ``K_aspects``, which channel explains each
query's attribution beyond what the method shows for every query (or none), the same for the
sets of queries that share a value of a ``confound`` column of the queries file, and the
method's baseline. The reading is anchored on the queries' own features when the study names a
``query_features`` store (features of the generated queries, extracted like the training
tracks') and on the attributed groups together, and on the groups alone otherwise.

Tables (one per setting step, long format; see :mod:`aria_tda.results`): ``aspects`` (per
channel: the baseline, the share of queries named), ``query_aspects`` (per query and channel:
z, Δ, the answer) and ``set_aspects`` (per set and channel: z, Δ, p, the answer).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda.errors import AriaWarning, DataError, expected
from aria_tda.study.config import StudySpec

__all__ = ["ASPECT_TABLES", "ITEM_COLUMNS", "N_ITEMS", "aspect_tables", "item_table",
           "query_feature_values", "query_sets"]

#: The per-setting tables of the distinctive reading.
ASPECT_TABLES = ("aspects", "query_aspects", "set_aspects")


def query_feature_values(spec: StudySpec, n_queries: int,
                         queries: Any) -> dict[str, Any] | None:
    """The queries' own features in query-column order, from ``spec.query_features``.

    The query store's track ids are matched to the query columns through the queries file's
    ``query_id`` column when it has one, else to the column indices (``"0"``, ``"1"``, ...).
    A query the store lacks has missing features (NaN / ``None``), with one warning.

    Parameters
    ----------
    spec : StudySpec
        The study (``query_features``, ``modality``).
    n_queries : int
        ``T``, the score matrices' query count.
    queries : pandas.DataFrame or None
        The queries file (:func:`aria_tda.study.inputs.read_queries`).

    Returns
    -------
    dict or None
        Feature name -> ``(T, d)`` array (vectors) or list of ``T`` sequences; ``None``
        without a query store.
    """
    if spec.query_features is None:
        return None
    from aria_tda.features.registry import feature_spec
    from aria_tda.features.store import FeatureStore

    store = FeatureStore.open(spec.query_features)
    store.check_modality(spec.modality, name="query_features")
    ids = np.asarray(store.track_ids).astype(str)
    if queries is not None and "query_id" in queries.columns:
        want = queries["query_id"].reindex(range(n_queries)).astype(object)
        wanted = [None if (isinstance(v, float) and v != v) else str(v) for v in want]
        how = "the queries file's query_id"
    else:
        wanted = [str(j) for j in range(n_queries)]
        how = "the query column index (no query_id column in a queries file)"
    pos = {s: i for i, s in enumerate(ids)}
    rows = np.asarray([pos.get(w, -1) if w is not None else -1 for w in wanted], dtype=np.int64)
    if not (rows >= 0).any():
        raise DataError(expected(
            "query_features", f"track ids matching {how}",
            f"none of {n_queries} queries found (store ids e.g. {ids[:3].tolist()}, "
            f"queries e.g. {wanted[:3]})"))
    lacking = int(np.count_nonzero(rows < 0))
    if lacking:
        warnings.warn(
            f"query_features: {lacking} of {n_queries} queries are not in "
            f"{str(spec.query_features)!r} (matched by {how}); they are left out of the "
            "distinctive reading (nothing to anchor it on)",
            AriaWarning, stacklevel=2)
    out: dict[str, Any] = {}
    for name in store.feature_names:
        try:
            fs = feature_spec(spec.modality, name)
        except Exception:  # a store may hold extra columns the registry does not know
            continue
        if fs.kind == "vector":
            v = np.asarray(store.vectors(name), dtype=np.float64)
            v = v.reshape(v.shape[0], -1)
            arr = np.full((n_queries, v.shape[1]), np.nan)
            arr[rows >= 0] = v[rows[rows >= 0]]
            out[name] = arr
        else:
            seqs = store.sequences(name)
            out[name] = [seqs[int(r)] if r >= 0 else None for r in rows]
    return out


def query_sets(spec: StudySpec, queries: Any) -> dict[tuple[str, str], np.ndarray] | None:
    """The sets of queries that share a value of each ``confound`` column (2 queries or more).

    Parameters
    ----------
    spec : StudySpec
        The study (``confound``).
    queries : pandas.DataFrame or None
        The queries file.
    """
    if queries is None or not spec.confound:
        return None
    out: dict[tuple[str, str], np.ndarray] = {}
    for column in spec.confound:
        labels = queries[column]
        for value, idx in labels.groupby(labels.astype(str)).groups.items():
            cols = np.asarray(queries.loc[idx, "query"], dtype=np.int64)
            if cols.size >= 2 and not (isinstance(value, float) and value != value):
                out[(str(column), str(value))] = np.sort(cols)
    return out or None


def aspect_tables(
    s_track: Any,
    prepared: dict[str, list[Any]],
    null: Any,
    pool: np.ndarray,
    spec: StudySpec,
    constant: np.ndarray,
    *,
    query_values: dict[str, Any] | None,
    sets: dict[tuple[str, str], np.ndarray] | None,
    segment_counts: Any = None,
    normalize: str = "zscore",
    progress: bool | None,
    client: Any = None,
    anchor_cache: Any = None,
) -> dict[str, Any]:
    """The distinctive reading of one setting and variant, as the study's three tables.

    Parameters
    ----------
    s_track : ScoreSource | np.ndarray [shape=(N, T)]
        The variant's track-level matrix.
    prepared : dict[str, list[PreparedFeature]]
        The features, indexed by its rows.
    null : NullDistribution
        The study's null (holding ``K_report``).
    pool : np.ndarray [shape=(N,), dtype=bool]
        The track pool.
    spec : StudySpec
        The study (``K_aspects``, ``alpha``, ``seed``, ``n_bootstrap``, ``chunk_rows``).
    constant : np.ndarray [shape=(T,), dtype=bool]
        Queries left out (constant columns).
    query_values : dict or None
        :func:`query_feature_values`.
    sets : dict or None
        :func:`query_sets`.
    segment_counts : int array, optional
        Segments per row of ``s_track`` (the null's reference groups follow them).
    normalize : {"zscore", "rank"}
        The setting's normalisation.
    progress : bool or None
        Progress bars.
    client : dask.distributed.Client, optional
        The study's cluster.
    anchor_cache : AnchorCache, optional
        The query anchor's scores, shared by the settings and variants a process reads.

    Returns
    -------
    dict of str to pandas.DataFrame
        :data:`ASPECT_TABLES`.
    """
    from aria_tda.homogeneity.distinctive import distinctive_reading

    exclude = np.asarray(constant, dtype=bool).copy()
    if query_values is not None:
        # a query without any of its features cannot be anchored: left out
        have = np.zeros(exclude.size, dtype=bool)
        for v in query_values.values():
            if isinstance(v, np.ndarray):
                have |= ~np.isnan(v).all(axis=1)
            else:
                have |= np.asarray([x is not None for x in v])
        exclude |= ~have
    reading = distinctive_reading(
        s_track, prepared, null, k=int(spec.K_aspects), pool=pool, query_values=query_values,
        sets=sets, exclude=exclude, segment_counts=segment_counts, normalize=normalize,
        alpha=float(spec.alpha), n_boot=int(spec.n_bootstrap),
        seed=int(spec.seed), chunk_rows=spec.chunk_rows, progress=progress, client=client,
        anchor_cache=anchor_cache)
    return {
        "aspects": reading.setting_frame(),
        "query_aspects": reading.query_frame(),
        "set_aspects": reading.set_frame(),
    }


def aspects_key(spec: StudySpec) -> dict[str, Any]:
    """What the reading depends on beyond the study's recorded parameters (a cache key part):
    the query store's and the queries file's content fingerprints and the confound columns.

    Parameters
    ----------
    spec : StudySpec
        The study.
    """
    from aria_tda._steps import file_fingerprint

    def fp(path: Path | None) -> Any:
        return None if path is None else file_fingerprint(str(path))

    return {"query_features": fp(spec.query_features), "queries": fp(spec.queries),
            "confound": list(spec.confound), "reading": 4}


#: Attributed tracks per query whose likeness to the query is recorded (``item_alignment``).
N_ITEMS = 20
#: Columns of the ``item_alignment`` table (after ``setting`` and ``variant``).
ITEM_COLUMNS = ("query", "rank", "track_id", "channel", "alignment", "percentile", "tied",
                "informative")


def item_table(groups: np.ndarray, prepared: dict[str, list[Any]], pool: np.ndarray,
               query_values: dict[str, Any] | None, track_ids: np.ndarray,
               exclude: np.ndarray, *, anchor_cache: Any = None) -> Any:
    """How like the query each of its top :data:`N_ITEMS` tracks is, per channel
    (:func:`aria_tda.homogeneity.item_alignment.item_alignment`): the ``item_alignment`` table.

    Parameters
    ----------
    groups : np.ndarray [shape=(T, K), dtype=int]
        Each query's top tracks (rows of the features), best first.
    prepared : dict[str, list[PreparedFeature]]
        The features.
    pool : np.ndarray [shape=(N,), dtype=bool]
        The track pool.
    query_values : dict or None
        :func:`query_feature_values`; ``None``: an empty table (nothing to compare with).
    track_ids : np.ndarray
        Track id of each row.
    exclude : np.ndarray [shape=(T,), dtype=bool]
        Queries left out (constant columns).
    anchor_cache : AnchorCache, optional
        The query anchor's scores (shared with the distinctive reading).

    Returns
    -------
    pandas.DataFrame
        :data:`ITEM_COLUMNS`, one row per (query, rank, channel).
    """
    import pandas as pd

    if query_values is None:
        return pd.DataFrame({c: pd.Series(dtype=t) for c, t in zip(
            ITEM_COLUMNS, ("int64", "int64", "object", "object", "float64", "float64",
                           "float64", "bool"), strict=True)})
    from aria_tda.homogeneity.item_alignment import item_alignment

    top = np.ascontiguousarray(groups[:, :N_ITEMS])
    ia = item_alignment(prepared, query_values, top, pool=pool, exclude=exclude,
                        cache=anchor_cache)
    n_c, t, n = ia.alignment.shape
    q, r, c = np.meshgrid(np.arange(t), np.arange(n), np.arange(n_c), indexing="ij")
    df = pd.DataFrame({
        "query": q.reshape(-1),
        "rank": r.reshape(-1) + 1,
        "track_id": np.asarray(track_ids)[top[q.reshape(-1), r.reshape(-1)]],
        "channel": np.asarray(ia.channels, dtype=object)[c.reshape(-1)],
        "alignment": ia.alignment.transpose(1, 2, 0).reshape(-1),
        "percentile": ia.percentile.transpose(1, 2, 0).reshape(-1),
        "tied": ia.tied.transpose(1, 2, 0).reshape(-1),
        "informative": ia.informative.transpose(1, 2, 0).reshape(-1),
    })
    return df[np.isfinite(df["alignment"].to_numpy())].reset_index(drop=True)
