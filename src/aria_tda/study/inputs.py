"""The study's inputs: everything checked before hours of work, and matching tracks to features.

- :func:`check_inputs` — files exist, score matrices have the rows the segment map or the store
  says and are not transposed, the map resolves to the rows (:func:`check_setting_rows`), the
  default K sweep is fitted to the pool and K fits it, one queries file fits every setting,
  the confound columns exist;
- :func:`read_queries` — the per-query metadata table;
- :func:`open_setting_scores` — a setting's score matrix, as the study file says to read it;
- :func:`embedding_scores` — the cosine matrix of a setting's embedding stores, computed into
  the results folder's cache (or reused when neither store changed);
- :func:`track_ids_of` / :func:`align_tracks` — which feature-store row each S_track row is.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from aria_tda._fingerprint import content_digest
from aria_tda._io import read_json, remove_path, write_json
from aria_tda._paths import input_path
from aria_tda.errors import (
    AriaError,
    AriaWarning,
    DataError,
    FileFormatError,
    ParameterError,
    expected,
    library_message,
)
from aria_tda.study.config import SettingSpec, StudySpec

__all__ = [
    "CheckedInputs",
    "align_tracks",
    "check_inputs",
    "check_setting_files",
    "check_setting_rows",
    "embedding_scores",
    "open_setting_scores",
    "read_queries",
    "segments_of",
    "track_ids_of",
]


def open_setting_scores(setting: SettingSpec) -> Any:
    """The score matrix of ``setting`` as a :class:`~aria_tda.scores.ScoreSource`.

    Parameters
    ----------
    setting : SettingSpec
        Its ``scores``, ``key`` and ``transpose`` say what to read and how.
    """
    from aria_tda.scores import open_scores

    if setting.scores is None:  # an embedding setting before embedding_scores() made its matrix
        raise ParameterError(
            f"setting {setting.name!r}: its cosine scores are made by the study run "
            "(aria_tda.study.inputs.embedding_scores) before they can be read"
        )
    return open_scores(setting.scores, key=setting.key, transpose=setting.transpose)


def segments_of(setting: SettingSpec, src: Any, store: Any) -> Any:
    """The segment map of ``setting``: its file, else the store's track ids matched by position.

    Parameters
    ----------
    setting : SettingSpec
        The setting.
    src : ScoreSource
        Its score matrix, opened (its rows and row ids).
    store : FeatureStore
        The study's feature store.

    Raises
    ------
    DataError
        No segment map, no row ids, and not one row per store track.
    """
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


def check_setting_files(setting: SettingSpec) -> None:
    """Raise :class:`~aria_tda.errors.FileFormatError` when a file of ``setting`` is missing.

    Parameters
    ----------
    setting : SettingSpec
        The setting whose score matrix and segment map (or embedding stores) must exist.
    """
    if setting.is_embedding:
        for key in ("train_embeddings", "query_embeddings"):
            input_path(getattr(setting, key), f"setting {setting.name!r}: {key}", kind="dir",
                       missing="no such embedding store")
        return
    input_path(setting.scores, f"setting {setting.name!r}: scores", missing="no such file")
    if setting.segments is not None:
        input_path(setting.segments, f"setting {setting.name!r}: segments", kind="file",
                   missing="no such file")


def _embedding_infos(setting: SettingSpec) -> tuple[dict[str, Any], dict[str, Any]]:
    """The two stores' :func:`~aria_tda.embed.store.embedding_info`, checked comparable."""
    from aria_tda.embed.store import check_comparable, embedding_info

    where = f"setting {setting.name!r}"
    train = embedding_info(str(setting.train_embeddings), name=f"{where}: train_embeddings")
    queries = embedding_info(str(setting.query_embeddings), name=f"{where}: query_embeddings")
    try:
        check_comparable(train, queries)
    except DataError as exc:
        raise DataError(f"{where}: {exc}") from None
    if train["segment_seconds"] is not None:
        raise DataError(
            f"{where}: train_embeddings holds one embedding per {train['segment_seconds']} s "
            "segment; a study needs one per training track (aria-tda embed without "
            "--segment-seconds)"
        )
    return train, queries


def embedding_scores(
    setting: SettingSpec,
    target: Path,
    *,
    progress: bool | None = None,
    log: Callable[[str], None] | None = None,
) -> SettingSpec:
    """The setting with ``scores`` = the cosine matrix of its embedding stores, made if needed.

    The matrix goes to ``target``, in the results folder's cache, never to a path of the
    user's (a setting naming both ``scores`` and embedding stores is refused when the study
    is read). It is reused when its manifest records the digests of the
    two stores as they are now; otherwise it is (re)computed with
    :func:`aria_tda.embed.retrieval.write_cosine_scores` (streamed, training tracks × queries,
    the training track ids as row ids). A setting without embedding stores is returned as is.

    Parameters
    ----------
    setting : SettingSpec
        The setting.
    target : Path
        Default location of the matrix (``.npy``).
    progress : bool, optional
        Progress bar.
    log : callable, optional
        Called with one log line.
    """
    from aria_tda.embed.retrieval import write_cosine_scores
    from aria_tda.manifest import read_manifest

    if not setting.is_embedding:
        return setting
    train, queries = _embedding_infos(setting)
    path = Path(target)
    record = path.with_name(path.name + ".digest.json")  # the matrix's digest when written
    damage = None
    try:
        man = read_manifest(path) if path.exists() else None
    except AriaError as exc:
        man, damage = None, str(exc)
    fresh = (
        man is not None
        and (man.get("train_embeddings") or {}).get("digest") == train["digest"]
        and (man.get("query_embeddings") or {}).get("digest") == queries["digest"]
        and (man.get("parameters") or {}).get("encoder") == train["encoder"]
    )
    recorded = _recorded_digest(record) if fresh else None
    if recorded is None:  # made before digests were recorded: made again, without a word
        fresh = False
    elif recorded != content_digest(path):
        fresh, damage = False, f"{path} differs from the matrix written there"
    if damage is not None:
        warnings.warn(f"setting {setting.name!r}: damaged cache entry, recomputed: {damage}",
                      AriaWarning, stacklevel=2)
    if fresh:
        if log is not None:
            log(f"{setting.name}: reusing the cosine scores of its embedding stores ({path})")
    else:
        if log is not None:
            log(f"{setting.name}: cosine scores of {train['n_tracks']} training tracks x "
                f"{queries['n_tracks']} queries ({train['label']})")
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_path(record)
        write_cosine_scores(str(setting.train_embeddings), str(setting.query_embeddings), path,
                            progress=progress, method=setting.method)
        write_json(record, {"digest": content_digest(path)})
    return dataclasses.replace(setting, scores=path, scores_from_embeddings=True)


def _recorded_digest(record: Path) -> str | None:
    try:
        data = read_json(record)
    except (OSError, ValueError, RecursionError):
        return None
    return data.get("digest") if isinstance(data, dict) else None


def _setting_shape(setting: SettingSpec, store: Any, *, max_missing: float) -> tuple[int, int]:
    """``(n_queries, pool)`` of a setting, its rows checked: the pool is the number of its
    tracks that have features in the store."""
    if setting.is_embedding:
        train, queries = _embedding_infos(setting)
        return int(queries["n_tracks"]), min(int(train["n_tracks"]), len(store))
    src = open_setting_scores(setting)
    try:
        track_ids = check_setting_rows(setting, src, store)
        n_queries = int(src.shape[1])
    finally:
        src.close()
    with warnings.catch_warnings():  # the run warns about a few missing tracks, once
        warnings.simplefilter("ignore", AriaWarning)
        _, present = align_tracks(track_ids, store, max_missing=max_missing,
                                  setting=str(setting.name))
    return n_queries, int(present.sum())


def check_setting_rows(setting: SettingSpec, src: Any, store: Any) -> np.ndarray:
    """Check that the score matrix's rows are what the segment map or the store says.

    With a segment map, it must have one entry per row, and its rows must resolve to score
    rows by the rules of :mod:`aria_tda.scores.aggregation` (a ``row`` column, else segment ids
    matched to the matrix's row ids, else the map's own order): the ids' types, repeated or
    missing rows and missing track ids are all checked here, by
    :func:`aria_tda.scores.segment_codes`, the function the aggregation itself calls. Without
    one (and without row ids), the matrix must have one row per feature-store track. Checked
    before any pass over the scores. A matrix whose *columns* match instead looks transposed:
    the error says so and what to do — set ``transpose = true`` for the setting
    (``--transpose``), or drop it when it was given (a Kronfluence ``.safetensors`` is read
    transposed already).

    Parameters
    ----------
    setting : SettingSpec
        The setting (its ``segments``, ``normalize`` and ``transpose``).
    src : ScoreSource
        Its score matrix as read.
    store : FeatureStore
        The study's feature store.

    Returns
    -------
    numpy.ndarray [shape=(n_tracks,)] of str
        The track ids of the setting's S_track rows, each once.

    Raises
    ------
    DataError
        The matrix looks transposed, its rows match neither, or the segment map does not
        resolve to the matrix's rows.
    ParameterError
        ``normalize = "none"`` with a segment map (nothing is aggregated then).
    """
    from aria_tda.scores import segment_codes
    from aria_tda.scores.segment_map import read_segment_table
    from aria_tda.scores.source import transpose_advice

    rows, cols = (int(x) for x in src.shape)
    where = f"setting {setting.name!r}"
    table = None
    if setting.segments is not None:
        if setting.normalize == "none":
            raise ParameterError(
                f"{where}: normalize='none' needs one segment per track (no segment map); "
                "choose zscore, rank or auto"
            )
        table = read_segment_table(setting.segments)
        n = len(table)
        why = f"the segment map {str(setting.segments)!r} has {n} entries"
        wrong = (
            f"{where}: segments: expected one entry per score row ({rows}), got {n} entries "
            f"in {str(setting.segments)!r}"
        )
    elif src.row_ids is None:
        n = len(store)
        why = f"the feature store has {n} tracks (and no segment map was given)"
        wrong = (
            f"{where}: the score matrix has {rows} rows and no row ids, and no segment map was "
            f"given; the feature store has {n} tracks. Give segments = a segment -> track map "
            "(--segments), or save the scores with row ids"
        )
    else:
        return np.unique(np.asarray(src.row_ids).astype(str))
    if rows != n and cols == n:
        advice = transpose_advice(bool(setting.transpose), src.format)
        raise DataError(
            f"{where}: scores: looks transposed ({rows} × {cols}); {advice}: {why}, the "
            "matrix's column count, not its row count (ARIA reads training segments x queries)"
        )
    if rows != n:
        raise DataError(wrong)
    if table is None:
        return np.asarray(store.track_ids).astype(str)
    try:
        _, track_ids = segment_codes(table, n_rows=rows, row_ids=src.row_ids, n_cols=cols,
                                     transpose=bool(setting.transpose))
    except DataError as exc:
        raise DataError(f"{where}: {exc} (in {str(setting.segments)!r})") from None
    return np.asarray(track_ids).astype(str)


def read_queries(path: Path | None, n_queries: int) -> Any:
    """Per-query metadata as a DataFrame indexed 0..T-1 (column ``query``), or ``None``.

    Parameters
    ----------
    path : Path or None
        CSV or Parquet file; without a ``query`` column its rows are queries 0, 1, ...
    n_queries : int
        Number of query columns of the score matrices; every index must be below it.
    """
    import pandas as pd

    if path is None:
        return None
    input_path(path, "queries", kind="file", missing="no such file")
    try:
        df = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    except Exception as exc:
        raise FileFormatError(
            f"queries: cannot read {str(path)!r}: {library_message(exc)}"
        ) from None
    if "query" not in df.columns:
        df = df.reset_index(drop=True)
        df.insert(0, "query", np.arange(len(df)))
    q = pd.to_numeric(df["query"], errors="coerce")
    bad = q.isna() | (q != q.round())
    if bad.any():
        first = df["query"][bad].iloc[0]
        raise DataError(
            expected("queries.query", f"integer query indices in [0, {n_queries})", first)
        )
    out = (q < 0) | (q >= n_queries)
    if out.any():
        raise DataError(
            f"queries: index {int(q[out].iloc[0])} out of range for {n_queries} queries"
        )
    df = df.assign(query=q.astype(int))
    df = _one_row_per_query(df, path)
    return df.set_index("query", drop=False).sort_index()


def _one_row_per_query(df: Any, path: Path) -> Any:
    """``df`` with one row per query: identical repeats dropped with a warning, others refused.

    Two rows for one query that hold the same values are a harmless repeat (kept once, with
    an :class:`~aria_tda.errors.AriaWarning` naming the file and the queries); two that differ
    cannot both describe the query, and which one is right is not ARIA's to guess
    (:class:`~aria_tda.errors.DataError` naming the file, the queries and their rows).
    """
    dup = df["query"].duplicated(keep=False)
    if not dup.any():
        return df
    repeated = df[dup]
    conflicting = [int(qid) for qid, rows in repeated.groupby("query", sort=True)
                   if len(rows.astype(str).drop_duplicates()) > 1]
    if path.suffix == ".parquet":
        where, line = "rows", df.index.to_numpy()  # 0-based rows of the table
    else:
        where, line = "lines", df.index.to_numpy() + 2  # the file's lines (header: line 1)
    if conflicting:
        shown = conflicting[:10]
        rows = {qid: [int(x) for x in line[(df["query"] == qid).to_numpy()]] for qid in shown}
        more = f" and {len(conflicting) - 10} more" if len(conflicting) > 10 else ""
        raise DataError(
            f"queries: {str(path)!r} holds different rows for the same query: query "
            + "; ".join(f"{qid} ({where} {', '.join(map(str, r))})" for qid, r in rows.items())
            + f"{more}; keep one row per query"
        )
    ids = sorted({int(x) for x in repeated["query"]})
    shown_ids = ", ".join(map(str, ids[:10])) + (f" and {len(ids) - 10} more" if len(ids) > 10
                                                 else "")
    warnings.warn(
        f"queries: {str(path)!r} repeats identical rows for query {shown_ids}; each is used "
        "once",
        AriaWarning,
        stacklevel=4,
    )
    return df.drop_duplicates("query")


def align_tracks(
    track_ids: np.ndarray, store: Any, *, max_missing: float, setting: str
) -> tuple[np.ndarray, np.ndarray]:
    """Store rows for each S_track row (-1 = no features) and the mask of rows that have them.

    Parameters
    ----------
    track_ids : numpy.ndarray
        Track id of each S_track row.
    store : FeatureStore
        The study's feature store.
    max_missing : float
        Error when more than this fraction of tracks have no features (else a warning).
    setting : str
        The setting's name, for the messages.
    """
    index = {t: i for i, t in enumerate(store.track_ids.tolist())}
    rows = np.array([index.get(str(t), -1) for t in track_ids], dtype=np.int64)
    present = rows >= 0
    n_missing = int((~present).sum())
    if n_missing:
        frac = n_missing / rows.size
        example = str(track_ids[np.flatnonzero(~present)[0]])
        if frac > max_missing:
            raise DataError(
                f"setting {setting!r}: {n_missing} of {rows.size} tracks ({frac:.0%}) have no "
                f"features in the store (e.g. {example!r}); more than "
                f"max_missing_fraction={max_missing}: do the score matrix, segment map and "
                "feature store use the same track ids?"
            )
        warnings.warn(
            f"setting {setting!r}: {n_missing} of {rows.size} tracks have no features in the "
            f"store (e.g. {example!r}); they are left out of the attributed groups",
            AriaWarning,
            stacklevel=3,
        )
    return rows, present


def track_ids_of(src: Any, store: Any, setting: str) -> np.ndarray:
    """Track id of each row of an S_track source (its row ids, else the store's by position).

    Parameters
    ----------
    src : ScoreSource
        S_track (original or residual).
    store : FeatureStore
        The study's feature store.
    setting : str
        The setting's name, for the message.
    """
    if src.row_ids is not None:
        return np.asarray(src.row_ids).astype(str)
    if src.shape[0] == len(store):
        return np.asarray(store.track_ids).astype(str)
    raise DataError(
        f"setting {setting!r}: S_track has {src.shape[0]} rows without track ids and the "
        f"feature store has {len(store)} tracks; give a segment map (segments = ...) or a "
        "store with one track per row"
    )


class CheckedInputs(NamedTuple):
    """What :func:`check_inputs` found: the study fitted to its pool, the queries, the pool."""

    spec: StudySpec
    queries: Any
    pool: int


def check_inputs(spec: StudySpec, store: Any) -> CheckedInputs:
    """Everything that can be checked before hours of work: files, shapes, K, queries, confounds.

    Each setting's score matrix and segment map are checked against each other and the store
    (:func:`check_setting_rows`: row counts, how the map's rows resolve to score rows, id
    types, tracks without features beyond ``max_missing_fraction``). The pool — the tracks
    with features and scores, the smallest over settings — fits the default K sweep
    (:meth:`~aria_tda.study.config.StudySpec.for_pool`) and bounds a K that was given.
    Embedding settings: both stores exist, come from the same encoder, and the training store
    holds one embedding per track.

    Parameters
    ----------
    spec : StudySpec
        The study.
    store : FeatureStore
        Its feature store (already opened).

    Returns
    -------
    CheckedInputs
        ``spec``: the study, its default K sweep fitted to the pool; ``queries``: the per-query
        metadata (:func:`read_queries`), ``None`` without a queries file; ``pool``: the pool's
        size.
    """
    n_queries, pools = {}, {}
    for setting in spec.settings:
        check_setting_files(setting)
        n_queries[setting.name], pools[setting.name] = _setting_shape(
            setting, store, max_missing=spec.max_missing_fraction)
    pool = min(pools.values())
    spec = spec.for_pool(pool)
    if max(spec.K) > pool:
        raise ParameterError(
            expected("K", f"group sizes up to the {pool} tracks that have features and scores "
                     f"(feature store: {len(store)} tracks)", max(spec.K))
        )
    if spec.confound and spec.queries is None:
        raise ParameterError("confound: needs a queries file (queries = ...) holding those columns")
    if spec.queries is None:
        _check_query_features(spec, n_queries, None)
        return CheckedInputs(spec, None, pool)
    if len(set(n_queries.values())) > 1:
        raise DataError(
            "queries: one queries file needs settings with the same number of queries, got "
            f"{n_queries}"
        )
    queries = read_queries(spec.queries, next(iter(n_queries.values())))
    missing = [c for c in spec.confound if c not in queries.columns]
    if missing:
        raise DataError(
            expected("confound", f"columns of the queries file {list(queries.columns)}", missing)
        )
    _check_query_features(spec, n_queries, queries)
    return CheckedInputs(spec, queries, pool)


def _check_query_features(spec: StudySpec, n_queries: dict[str, int], queries: Any) -> None:
    """The query feature store opens, is of the study's modality and names the queries."""
    if spec.query_features is None:
        return
    from aria_tda.study.aspects import query_feature_values

    for t in sorted(set(n_queries.values())):
        query_feature_values(spec, t, queries)
