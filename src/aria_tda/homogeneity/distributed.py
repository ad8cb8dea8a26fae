r"""Top-K groups, the null and homogeneity as Dask tasks (``client=`` of the public functions).

- :func:`top_k_dask` — :func:`~aria_tda.homogeneity.top_k_groups` (and, in the same pass,
  :func:`~aria_tda.homogeneity.constant_queries`) with one task per block of query columns: each
  task streams the rows of ``S_track`` (re-opening a file by path, or reading the in-memory
  matrix scattered once) and keeps the running top-``K`` heaps of its columns only. Columns
  are independent, so the groups, tie order included, are those of the single-machine path.
- :func:`evaluate_groups_dask` — the group evaluator behind
  :func:`~aria_tda.homogeneity.homogeneity`
  and :func:`~aria_tda.homogeneity.null_distribution` with one task per block of groups; the
  prepared features are scattered once per pass. Groups are evaluated independently of each
  other, so the pair sums (and evidence pairs) equal the single-machine ones.

What stays on the client is cheap: drawing the null's random groups (one seeded generator, so
the groups do not depend on the cluster), the unique groups of the queries, and the
standardisation of the gathered :math:`g_d` against the null (``O(n_K n_features T)``). The
null is computed once per call of :func:`~aria_tda.homogeneity.run_homogeneity` (pass ``null=``
to share it between calls); its ``mu``/``sigma`` never go to the workers — only the evidence
weights derived from them, a few numbers per feature.

All tasks run through :func:`aria_tda.scores.distributed.run_ordered` (results merged in task
order; a killed worker costs a rerun of its tasks).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import aria_tda._simkernels as _k
from aria_tda.homogeneity.scan_checks import (
    constant_from_range,
    raise_if_nan,
    topk_args,
)
from aria_tda.homogeneity.sweep import EvidenceRequest, evaluate_groups
from aria_tda.scores.distributed import n_parts, open_part, run_ordered, source_args
from aria_tda.scores.source import ArraySource, ScoreSource
from aria_tda.similarity import PreparedFeature

__all__ = ["evaluate_groups_dask", "groups_and_constant_dask", "top_k_dask"]


# ----------------------------------------------------------------------------------------
# top-K groups per block of query columns
# ----------------------------------------------------------------------------------------
def _topk_part(
    path: str | None, key: str | None, transposed: bool, c0: int, c1: int, k_max: int,
    rows: int, *, mask: np.ndarray, array: Any = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, str]:
    """Top-``k_max`` rows of columns ``c0:c1`` (+ NaN counts and the pool's min/max)."""
    src = open_part(path, key, transposed, array)
    w = c1 - c0
    hv = np.full((w, k_max), -np.inf)
    hi = np.full((w, k_max), -1, dtype=np.int64)
    count = np.zeros(w, dtype=np.int64)
    nan_count = np.zeros(w, dtype=np.int64)
    lo_v = np.full(w, np.inf)
    hi_v = np.full(w, -np.inf)
    dtype = np.dtype(np.float64)
    try:
        for start, full in src.iter_chunks(rows, prefetch=False, reuse_buffers=True):
            block = np.ascontiguousarray(full[:, c0:c1])
            dtype = block.dtype
            sub = block[mask[start : start + block.shape[0]]]
            if sub.shape[0]:
                np.fmin(lo_v, np.nanmin(sub, axis=0, initial=np.inf), out=lo_v)
                np.fmax(hi_v, np.nanmax(sub, axis=0, initial=-np.inf), out=hi_v)
            if block.dtype.kind != "f":
                block = block.astype(np.float64)
            _k.topk_stream_update(block, start, mask, hv, hi, count, nan_count)
    finally:
        src.close()
    order = np.lexsort((hi, -hv), axis=1)
    return (np.take_along_axis(hi, order, axis=1), np.take_along_axis(hv, order, axis=1),
            nan_count, lo_v, hi_v, dtype.str)


def _task_source(src: Any) -> tuple[tuple[str | None, str | None, bool], Any, int]:
    """``((path, key, transposed), array or None, rows per chunk)`` of an ``S_track``."""
    if isinstance(src, ScoreSource):
        path, key, transposed, array = source_args(src)
        return (path, key, transposed), array, src.chunk_rows(None)
    blocks = [np.asarray(b) for _, b in src.iter_chunks(None)]
    arr = np.concatenate(blocks, axis=0)
    return (None, None, False), arr, ArraySource(arr).chunk_rows(None)


def top_k_dask(
    src: Any,
    k_max: int,
    mask: np.ndarray,
    client: Any,
    *,
    chunk_rows: int | None = None,
    n_partitions: int | None = None,
    progress: bool | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Top-``k_max`` groups, their scores and the constant-query mask, per column block.

    Parameters
    ----------
    src : ScoreSource or object with ``iter_chunks``
        ``S_track`` ``(N, T)`` as :func:`~aria_tda.homogeneity.top_k_groups` opened it (a file is
        re-opened by path in the workers; anything else is read here and scattered once).
    k_max : int
        Group size (checked by the caller against the pool).
    mask : numpy.ndarray [shape=(N,), dtype=bool]
        The pool.
    client : dask.distributed.Client
        The cluster.
    chunk_rows : int, optional
        Rows per chunk inside a task.
    n_partitions : int, optional
        Column blocks (default: twice the cluster's threads, at most ``T``).
    progress : bool, optional
        Progress bar over the tasks.

    Returns
    -------
    groups : numpy.ndarray [shape=(T, k_max), dtype=int64]
        As :func:`~aria_tda.homogeneity.top_k_groups`.
    scores : numpy.ndarray [shape=(T, k_max)]
    constant : numpy.ndarray [shape=(T,), dtype=bool]
        As :func:`~aria_tda.homogeneity.constant_queries` with the same pool.
    """
    file, array, rows = _task_source(src)
    if chunk_rows is not None:
        rows = int(chunk_rows)
    t = int(src.shape[1])
    parts = min(t, n_parts(client, n_partitions))
    width = -(-t // parts)
    blocks = [(c, min(c + width, t)) for c in range(0, t, width)]
    groups = np.empty((t, k_max), dtype=np.int64)
    scores = np.empty((t, k_max))
    nan_count = np.zeros(t, dtype=np.int64)
    lo = np.empty(t)
    hi = np.empty(t)
    dtypes: list[str] = []

    def put(i: int, part: tuple[Any, ...]) -> None:
        c0, c1 = blocks[i]
        groups[c0:c1], scores[c0:c1], nan_count[c0:c1], lo[c0:c1], hi[c0:c1] = part[:5]
        dtypes.append(part[5])

    shared: dict[str, Any] = {"mask": np.asarray(mask, dtype=bool)}
    if array is not None:
        shared["array"] = array
    run_ordered(client, _topk_part, [(*file, c0, c1, k_max, rows) for c0, c1 in blocks], put,
                shared=shared, progress=progress, desc="top-K groups")
    raise_if_nan(nan_count)
    return groups, scores, constant_from_range(lo, hi, np.dtype(dtypes[-1]))


def groups_and_constant_dask(
    s_track: Any,
    k_max: int,
    pool: Any,
    client: Any,
    *,
    chunk_rows: int | None = None,
    progress: bool | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`~aria_tda.homogeneity.top_k_groups` and :func:`~aria_tda.homogeneity.constant_queries`
    of one ``S_track`` in one distributed pass (what :func:`~aria_tda.homogeneity.run_homogeneity`
    needs).

    Parameters
    ----------
    s_track : np.ndarray [shape=(N, T)] | ScoreSource | path
        Track-level scores.
    k_max : int
        Group size.
    pool : bool mask or int rows
        Eligible rows.
    client : dask.distributed.Client
        The cluster.
    chunk_rows : int, optional
        Rows per chunk inside a task.
    progress : bool, optional
        Progress bar over the tasks.

    Returns
    -------
    groups : numpy.ndarray [shape=(T, k_max), dtype=int64]
    constant : numpy.ndarray [shape=(T,), dtype=bool]
    """
    k_max, chunk_rows, _, _, src, mask = topk_args(s_track, k_max, pool, chunk_rows)
    groups, _, constant = top_k_dask(src, k_max, mask, client, chunk_rows=chunk_rows,
                                     progress=progress)
    return groups, constant


# ----------------------------------------------------------------------------------------
# group evaluation per block of groups
# ----------------------------------------------------------------------------------------
def _groups_part(
    groups: np.ndarray, ks: np.ndarray, chan: np.ndarray, evidence: EvidenceRequest | None, *,
    feats: list[PreparedFeature],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return evaluate_groups(feats, chan, groups, ks, n_jobs=1, evidence=evidence,
                           progress=False)


def evaluate_groups_dask(
    client: Any,
    feats: list[PreparedFeature],
    chan: np.ndarray,
    jobs: list[tuple[np.ndarray, np.ndarray]],
    *,
    evidence: EvidenceRequest | None = None,
    n_partitions: int | None = None,
    progress: bool | None = None,
    desc: str = "groups",
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The group evaluator (:mod:`aria_tda.homogeneity.sweep`) over blocks of groups as tasks.

    Parameters
    ----------
    client : dask.distributed.Client
        The cluster.
    feats : list of PreparedFeature
        The features (scattered once for the whole call).
    chan : numpy.ndarray [shape=(n_features,), dtype=int64]
        Channel of every feature.
    jobs : list of (groups, ks)
        Groups ``(G, k)`` in rank order and the prefix sizes to sum, per job (all jobs'
        blocks are submitted at once).
    evidence : EvidenceRequest, optional
        Keep each channel's top contributing pairs.
    n_partitions : int, optional
        Tasks to aim for over all jobs (default: twice the cluster's threads).
    progress : bool, optional
        Progress bar over the tasks.
    desc : str
        Label of the progress bar.

    Returns
    -------
    list of (sums, pair_rows, pair_values)
        Per job, as ``evaluate_groups``: ``(G, nF, nK)``, ``(G, nC, n_pairs, 2)``,
        ``(G, nC, n_pairs)``.
    """
    total = sum(int(g.shape[0]) for g, _ in jobs)
    step = max(1, -(-total // n_parts(client, n_partitions)))
    calls: list[tuple[Any, ...]] = []
    owner: list[int] = []
    for j, (grp, ks) in enumerate(jobs):
        ks_arr = np.asarray(ks, dtype=np.int64)
        for s in range(0, grp.shape[0], step):
            calls.append((np.ascontiguousarray(grp[s : s + step], dtype=np.int64), ks_arr,
                          np.asarray(chan), evidence))
            owner.append(j)
    parts: list[list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = [[] for _ in jobs]
    run_ordered(client, _groups_part, calls, lambda i, r: parts[owner[i]].append(r),
                shared={"feats": list(feats)}, progress=progress,
                desc=desc)
    out = []
    for (grp, ks), got in zip(jobs, parts, strict=True):
        if not got:  # no groups: the evaluator's empty shapes
            got = [evaluate_groups(list(feats), np.asarray(chan), grp, np.asarray(ks),
                                   n_jobs=1, evidence=evidence, progress=False)]
        out.append(tuple(np.concatenate([p[i] for p in got], axis=0) for i in range(3)))
    return out  # type: ignore[return-value]
