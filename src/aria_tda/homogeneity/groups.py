r"""Attributed groups and the pool they are drawn from (paper §3.4, :math:`A_K(q)`).

- :func:`top_k_groups` — ``A_K(q)``, the ``K_max`` highest-scoring tracks per query, best
  first, streamed over row chunks of ``S_track`` (any :class:`aria_tda.scores.ScoreSource`, path,
  tensor or array, through :func:`aria_tda.scores.as_source`). Ties go to the lower row index, so
  the result is deterministic and the groups of all ``K`` are nested.
- :func:`constant_queries` — query columns whose scores are constant over the pool: they
  rank nothing (their "top K" would be the first ``K`` rows by the tie rule), so
  :func:`aria_tda.homogeneity.homogeneity` excludes them.
- :func:`feature_pool` — the rows eligible for groups and the null: the tracks that have
  every feature.

:func:`top_k_groups_reference` is the exact reference of :func:`top_k_groups` (a full stable
sort per column), :func:`constant_queries_reference` that of :func:`constant_queries`.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

import aria_tda._simkernels as _k
from aria_tda._checks import check_float, check_int, check_int_list
from aria_tda._progress import progress as _progress
from aria_tda.errors import AriaWarning, DataError, ParameterError, expected
from aria_tda.homogeneity.scan_checks import (
    constant_from_range,
    pool_mask,
    raise_if_nan,
    row_source,
    topk_args,
)
from aria_tda.similarity import PreparedFeature

__all__ = [
    "check_ks", "check_pool_valid", "constant_queries", "digest_pool", "feature_pool",
    "flatten_prepared", "top_k_groups",
]


def top_k_groups(
    s_track: Any,
    k_max: int,
    *,
    pool: Any = None,
    chunk_rows: int | None = None,
    return_scores: bool = False,
    progress: bool | None = None,
    client: Any = None,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    r"""Attributed groups :math:`A_{K_{max}}(q)`: the top ``k_max`` rows of every column.

    Streams ``S_track`` in row chunks, keeping a running top-``k_max`` min-heap per column
    (memory ``O(T k_max)``, not ``O(N T)``).

    Parameters
    ----------
    s_track : np.ndarray [shape=(N, T)] | ScoreSource | path
        Track-level scores, rows = tracks, columns = queries; higher = more influential.
    k_max : int
        Group size (the largest ``K`` of the sweep); at most the pool size.
    pool : np.ndarray [shape=(N,), dtype=bool] | np.ndarray [int], optional
        Rows eligible for groups (default all; usually :func:`feature_pool`).
    chunk_rows : int, optional
        Rows per chunk (default: about 64 MiB per chunk).
    return_scores : bool
        Also return the scores of the selected rows.
    progress : bool, optional
        Draw a progress bar (``None``: decided by the environment).
    client : dask.distributed.Client, optional
        Run as Dask tasks over blocks of query columns
        (:func:`aria_tda.homogeneity.distributed.top_k_dask`): a file-backed ``s_track`` is
        re-opened by path in the workers, anything else read here and scattered once. The
        groups (tie order included) are those of the single-machine path.

    Returns
    -------
    groups : np.ndarray [shape=(T, k_max), dtype=int64]
        Row indices, best first: decreasing score, ties broken by the lower row index.
        ``groups[q, :K]`` is :math:`A_K(q)` for every ``K <= k_max``.
    scores : np.ndarray [shape=(T, k_max), dtype=float64]
        Only with ``return_scores``.

    Raises
    ------
    ParameterError
        ``k_max`` < 1 or larger than the pool.
    DataError
        NaN scores in an eligible row.
    """
    k_max, chunk_rows, n, t, src, mask = topk_args(s_track, k_max, pool, chunk_rows)
    if client is not None:
        from aria_tda.homogeneity.distributed import top_k_dask

        groups, scores, _ = top_k_dask(src, k_max, mask, client, chunk_rows=chunk_rows,
                                       progress=progress)
        return (groups, scores) if return_scores else groups
    hv = np.full((t, k_max), -np.inf)
    hi = np.full((t, k_max), -1, dtype=np.int64)
    count = np.zeros(t, dtype=np.int64)
    nan_count = np.zeros(t, dtype=np.int64)
    expect = 0
    with _progress(total=n, desc="top-K groups", unit="row", enabled=progress) as bar:
        for start, block in src.iter_chunks(chunk_rows):
            block = np.asarray(block)
            if start != expect or block.ndim != 2 or block.shape[1] != t:
                raise DataError(expected(
                    "s_track chunks", f"consecutive row blocks (start {expect}, {t} columns)",
                    f"start {start}, shape {block.shape}"))
            if block.dtype.kind not in "f":
                block = block.astype(np.float64)
            _k.topk_stream_update(np.ascontiguousarray(block), start, mask, hv, hi, count,
                                  nan_count)
            expect = start + block.shape[0]
            bar.update(block.shape[0])
    if expect != n:
        raise DataError(expected("s_track chunks", f"{n} rows in total", expect))
    raise_if_nan(nan_count)
    order = np.lexsort((hi, -hv), axis=1)
    groups = np.take_along_axis(hi, order, axis=1)
    if return_scores:
        return groups, np.take_along_axis(hv, order, axis=1)
    return groups


def top_k_groups_reference(
    s_track: Any,
    k_max: int,
    *,
    pool: Any = None,
    chunk_rows: int | None = None,
    return_scores: bool = False,
    progress: bool | None = None,
    client: Any = None,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Exact reference of :func:`top_k_groups`: the whole matrix in memory, one stable sort
    per column (decreasing score, then increasing row index). ``chunk_rows`` and
    ``progress`` are ignored.

    Parameters
    ----------
    s_track : np.ndarray [shape=(N, T)] | ScoreSource | path
        Track-level scores.
    k_max : int
        Group size.
    pool : np.ndarray [shape=(N,), dtype=bool] | np.ndarray [int], optional
        Rows eligible for groups (default all).
    chunk_rows : int, optional
        Ignored.
    return_scores : bool
        Also return the scores of the selected rows.
    progress : bool, optional
        Ignored.
    client : dask.distributed.Client, optional
        Ignored.
    """
    n, t, src = row_source(s_track)
    s = np.asarray(src.to_numpy() if hasattr(src, "to_numpy") else src, dtype=np.float64)
    mask = pool_mask(pool, n)
    rows = np.flatnonzero(mask)
    k_max = check_int("k_max", k_max, min_value=1, max_value=rows.size)
    raise_if_nan(np.isnan(s[rows]).sum(axis=0))
    groups = np.empty((t, k_max), dtype=np.int64)
    for q in range(t):
        order = np.lexsort((rows, -s[rows, q]))
        groups[q] = rows[order[:k_max]]
    if return_scores:
        return groups, np.take_along_axis(s.T, groups, axis=1)
    return groups


def constant_queries(
    s_track: Any,
    *,
    pool: Any = None,
    chunk_rows: int | None = None,
    progress: bool | None = None,
) -> np.ndarray:
    """Query columns of ``S_track`` that are constant over the pool rows (degenerate queries).

    A column counts as constant when its spread over the pool is at most ``CONSTANT_ULPS``
    (16, :mod:`~aria_tda.homogeneity.scan_checks`) machine epsilons of the score dtype times its
    magnitude, so the rounding noise aggregation leaves on a constant column does not make it a
    ranking.

    Parameters
    ----------
    s_track : np.ndarray [shape=(N, T)] | ScoreSource | path
        Track-level scores.
    pool : np.ndarray [shape=(N,), dtype=bool] | np.ndarray [int], optional
        Rows eligible for groups (default all).
    chunk_rows : int, optional
        Rows per chunk (default: about 64 MiB per chunk).
    progress : bool, optional
        Draw a progress bar.

    Returns
    -------
    np.ndarray [shape=(T,), dtype=bool]
    """
    if chunk_rows is not None:
        chunk_rows = check_int("chunk_rows", chunk_rows, min_value=1)
    n, t, src = row_source(s_track)
    mask = pool_mask(pool, n)
    lo = np.full(t, np.inf)
    hi = np.full(t, -np.inf)
    dtype: Any = np.float64
    with _progress(total=n, desc="constant queries", unit="row", enabled=progress) as bar:
        for start, block in src.iter_chunks(chunk_rows):
            block = np.asarray(block)
            dtype = block.dtype
            sub = block[mask[start : start + block.shape[0]]]
            if sub.shape[0]:
                np.fmin(lo, np.nanmin(sub, axis=0, initial=np.inf), out=lo)
                np.fmax(hi, np.nanmax(sub, axis=0, initial=-np.inf), out=hi)
            bar.update(block.shape[0])
    return constant_from_range(lo, hi, dtype)


def constant_queries_reference(
    s_track: Any,
    *,
    pool: Any = None,
    chunk_rows: int | None = None,
    progress: bool | None = None,
) -> np.ndarray:
    """Exact reference of :func:`constant_queries`: the whole matrix in memory.

    Parameters
    ----------
    s_track : np.ndarray [shape=(N, T)] | ScoreSource | path
        Track-level scores.
    pool : np.ndarray [shape=(N,), dtype=bool] | np.ndarray [int], optional
        Rows eligible for groups (default all).
    chunk_rows : int, optional
        Ignored.
    progress : bool, optional
        Ignored.
    """
    n, t, src = row_source(s_track)
    s = src.to_numpy() if hasattr(src, "to_numpy") else np.asarray(src)
    rows = s[pool_mask(pool, n)]
    out = np.zeros(t, dtype=bool)
    for q in range(t):
        col = rows[:, q][~np.isnan(rows[:, q])]
        if col.size:
            out[q] = bool(constant_from_range(col.min(), col.max(), s.dtype))
    return out


# ======================================================================================
# features and pool
# ======================================================================================


def flatten_prepared(prepared: Any) -> tuple[tuple[str, ...], list[PreparedFeature], np.ndarray]:
    """``(channels, features, channel index per feature)`` with consistency checks.

    Parameters
    ----------
    prepared : dict
        Channel name to a list of :class:`~aria_tda.similarity.PreparedFeature` (or one),
        as :func:`aria_tda.prepare_channels` gives; every feature over the same tracks.

    Returns
    -------
    tuple of (tuple of str, list of PreparedFeature, numpy.ndarray)

    Raises
    ------
    ParameterError
        Not a non-empty mapping, a channel without features, an item that is not a prepared
        feature.
    """
    if not isinstance(prepared, Mapping) or not prepared:
        raise ParameterError(expected(
            "prepared", "a non-empty dict channel -> list of PreparedFeature",
            type(prepared).__name__))
    channels: list[str] = []
    feats: list[PreparedFeature] = []
    chan: list[int] = []
    for c, (name, items) in enumerate(prepared.items()):
        items = [items] if isinstance(items, PreparedFeature) else list(items)
        if not items:
            raise ParameterError(expected(
                f"prepared[{name!r}]", "at least one PreparedFeature", "an empty list"))
        for f in items:
            if not isinstance(f, PreparedFeature):
                raise ParameterError(expected(
                    f"prepared[{name!r}]",
                    "PreparedFeature items (aria_tda.similarity.prepare_feature)",
                    type(f).__name__))
            feats.append(f)
            chan.append(c)
        channels.append(str(name))
    n = feats[0].n
    for f in feats:
        if f.n != n:
            raise DataError(expected(
                f"prepared feature {f.name!r}", f"{n} rows like {feats[0].name!r}", f.n))
    return tuple(channels), feats, np.asarray(chan, dtype=np.int64)


def feature_pool(prepared: Any, *, max_missing_fraction: float = 0.5) -> np.ndarray:
    """Rows that have every feature: the pool for groups and the null.

    Parameters
    ----------
    prepared : dict[str, list[PreparedFeature]]
        The features, indexed by the rows of S_track.
    max_missing_fraction : float
        Error out when more than this fraction of tracks lacks a feature (usually a sign that
        ids of the score matrix and the feature store do not match).

    Returns
    -------
    np.ndarray [shape=(N,), dtype=bool]

    Warns
    -----
    AriaWarning
        when some tracks are excluded; says how many and which features they lack.
    """
    max_missing_fraction = check_float("max_missing_fraction", max_missing_fraction,
                                       min_value=0, max_value=1)
    _, feats, _ = flatten_prepared(prepared)
    valid = np.logical_and.reduce([f.valid for f in feats])
    n = valid.size
    missing = n - int(valid.sum())
    if missing:
        per = ", ".join(f"{f.name}: {f.n_missing}" for f in feats if f.n_missing)
        frac = missing / n
        msg = f"{missing} of {n} tracks ({frac:.1%}) lack at least one feature ({per})"
        if frac > max_missing_fraction:
            raise DataError(msg + f"; more than max_missing_fraction={max_missing_fraction} "
                            "— do the score-matrix and feature-store ids match?")
        warnings.warn(msg + "; they are excluded from attributed groups and the null pool",
                      AriaWarning, stacklevel=2)
    return valid


def digest_pool(mask: np.ndarray) -> str:
    """A fingerprint of a pool mask (a saved null records the pool it was drawn from).

    Parameters
    ----------
    mask : numpy.ndarray
        The boolean pool mask.

    Returns
    -------
    str
        32 hex digits.
    """
    h = hashlib.blake2b(digest_size=16)
    h.update(str(mask.size).encode())
    h.update(np.packbits(mask).tobytes())
    return h.hexdigest()


def check_pool_valid(feats: list[PreparedFeature], rows: np.ndarray, *, what: str) -> None:
    """Refuse pool rows that lack a feature.

    Parameters
    ----------
    feats : list of PreparedFeature
        The features.
    rows : numpy.ndarray
        The pool's rows.
    what : str
        What is being computed, for the message.

    Raises
    ------
    DataError
        A row without one of the features (the message suggests
        ``pool=feature_pool(prepared)``).
    """
    for f in feats:
        bad = rows[~f.valid[rows]]
        if bad.size:
            raise DataError(
                f"{what}: {bad.size} track(s) without feature {f.name!r} "
                f"(e.g. row {int(bad[0])}); "
                "restrict groups to tracks with every feature (pool=feature_pool(prepared))"
            )


def check_ks(ks: Any, *, name: str = "ks") -> np.ndarray:
    """Group sizes as an int64 array: integers of at least 2.

    Parameters
    ----------
    ks : int or sequence of int
        The sizes.
    name : str
        The parameter's name, for the message.

    Returns
    -------
    numpy.ndarray
    """
    return np.asarray(check_int_list(name, ks, min_value=2), dtype=np.int64)
