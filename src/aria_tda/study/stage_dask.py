r"""The stage read (:mod:`aria_tda.study.stage_read`) as Dask tasks over row ranges.

Each task re-opens the score file (or reads the scattered in-memory matrix) and streams its
row range once, as the single-machine pass does: the Gram sums and column sums about one shared
shift, the queries' top-K rows and — through the observers' :meth:`part` — the per-track sums
and moments of the rows it read. The client merges the parts in row-range order (so the result
does not depend on which task finished first), adds the track sums into ``S_track``'s file and
finishes the diagnostics from the merged Gram, as
:func:`aria_tda.diagnostics.diagnose` does with a client.

The residual pass is the same over row ranges: each task forms
:math:`u_1 = S v_1 / \sigma_1` and the residual's column sums for its rows.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from aria_tda.scores.blockstats import BlockStats
from aria_tda.scores.distributed import n_parts, open_part, row_ranges, run_ordered, source_args
from aria_tda.scores.stats import locate_nonfinite

__all__ = ["dask_residual_pass", "dask_stage_pass"]


def _stage_part(
    path: str | None, key: str | None, transposed: bool, start: int, stop: int, rows: int,
    codes: np.ndarray | None, *, shift: np.ndarray, topk: tuple[int, ...], n_rows: int,
    sums: bool, moments: int, array: Any = None,
) -> tuple[BlockStats, Any, tuple[np.ndarray | None, np.ndarray, BlockStats] | None]:
    """Gram sums, top-K and (``sums``) track sums of rows ``start:stop``."""
    from aria_tda.diagnostics.concentration import TopKAccumulator
    from aria_tda.scores.stats import stream_stats
    from aria_tda.scores.track_sums import TrackSums

    src = open_part(path, key, transposed, array)
    try:
        acc = TopKAccumulator(src.n_cols, topk, n_rows=n_rows) if topk else None
        observers: list[Any] = [] if acc is None else [acc]
        ts = tracks = None
        if sums:
            if codes is None:  # each row its own track: the centred rows themselves
                target = np.zeros((stop - start, src.n_cols))
                ts = TrackSums(target, None, moments=moments, shift=shift, start=start)
            else:
                tracks, local = np.unique(codes, return_inverse=True)
                target = np.zeros((tracks.size, src.n_cols))
                ts = TrackSums(target, local, moments=moments, shift=shift, start=start)
            observers.append(ts)
        st = stream_stats(src, chunk_rows=rows, shift=shift, start=start, stop=stop,
                          prefetch=False, progress=False, observers=observers)
    finally:
        src.close()
    part = None
    if ts is not None:
        assert ts.stats is not None
        part = (tracks, ts.target, ts.stats)
    return st, acc, part


def _first_rows(src: Any, rows: int) -> np.ndarray:
    first = src.read_rows(0, min(rows, src.n_rows))
    if not np.isfinite(first).all():
        raise locate_nonfinite(first, 0)
    return np.asarray(first)


def dask_stage_pass(src: Any, observers: list[Any], topk: tuple[int, ...], *, client: Any,
                    chunk_rows: int | None, progress: bool | None, n_energy: int) -> Any:
    """The stage pass as Dask tasks; feeds ``observers`` (one :class:`TrackSums` at most).

    Parameters
    ----------
    src : ScoreSource
        The stage's matrix.
    observers : list
        Empty, or one :class:`aria_tda.scores.track_sums.TrackSums` (its ``codes`` cover every
        row) that receives the merged sums.
    topk : tuple of int
        ``K`` of the top-K concentration.
    client : dask.distributed.Client
        The cluster.
    chunk_rows : int, optional
        Rows per block inside a task.
    progress : bool, optional
        A progress bar over the tasks.
    n_energy : int
        Energy ratios to report.

    Returns
    -------
    Diagnostics
    """
    from aria_tda.diagnostics import diagnostics_from_stats

    if len(observers) > 1:
        raise ValueError("dask_stage_pass feeds one TrackSums at most")
    ts = observers[0] if observers else None
    rows = src.chunk_rows(chunk_rows)
    path, key, transposed, array = source_args(src)
    shared: dict[str, Any] = {} if array is None else {"array": array}
    shift = _first_rows(src, rows).mean(axis=0, dtype=np.float64)
    ranges = row_ranges(src.n_rows, n_parts(client, None), rows)
    codes = None if ts is None else ts.codes
    merged: dict[str, Any] = {}

    def add(i: int, part: Any) -> None:
        st, acc, sums = part
        merged["st"] = st if "st" not in merged else merged["st"].merge(st)
        if acc is not None:
            merged["acc"] = acc if "acc" not in merged else merged["acc"].merge(acc)
        if sums is not None and ts is not None:
            tracks, block, stats = sums
            a, b = ranges[i]
            if tracks is None:
                ts.target[a:b] = block
            else:
                ts.target[tracks] += block
            ts.merge(stats)

    calls = [(path, key, transposed, a, b, rows, None if codes is None else codes[a:b])
             for a, b in ranges]
    run_ordered(client, _stage_part, calls, add,
                shared={**shared, "shift": shift, "topk": tuple(topk), "n_rows": src.n_rows,
                        "sums": ts is not None, "moments": 2 if ts is None else ts.moments},
                progress=progress, desc="stage pass")
    d = diagnostics_from_stats(merged["st"], n_energy=n_energy)
    if "acc" in merged:
        d = replace(d, concentration=merged["acc"].result())
    return d


def _residual_part(
    path: str | None, key: str | None, transposed: bool, start: int, stop: int, rows: int, *,
    sigma1: float, v1: np.ndarray, shift: np.ndarray, array: Any = None,
) -> tuple[np.ndarray, BlockStats]:
    """``u1`` and the residual's column sums of rows ``start:stop``."""
    from aria_tda.scores.track_sums import residual_pass

    src = open_part(path, key, transposed, array)
    try:
        read = residual_pass(src, sigma1, v1, chunk_rows=rows, start=start, stop=stop,
                             shift=shift)
    finally:
        src.close()
    return read.rank1.u1, read.stats


def dask_residual_pass(src: Any, sigma1: float, v1: np.ndarray, *, client: Any,
                       chunk_rows: int | None, progress: bool | None) -> Any:
    r"""The residual pass as Dask tasks: :math:`u_1` and the residual's moments.

    Parameters
    ----------
    src : ScoreSource
        The stage's matrix.
    sigma1, v1 : float, numpy.ndarray
        The leading singular value and right vector (the stage pass's diagnostics).
    client : dask.distributed.Client
        The cluster.
    chunk_rows : int, optional
        Rows per block inside a task.
    progress : bool, optional
        A progress bar over the tasks.

    Returns
    -------
    ResidualRead
    """
    from aria_tda.scores.lowrank import Rank1
    from aria_tda.scores.track_sums import ResidualRead, residual_rows

    rows = src.chunk_rows(chunk_rows)
    path, key, transposed, array = source_args(src)
    shared: dict[str, Any] = {} if array is None else {"array": array}
    v = np.asarray(v1, dtype=np.float64)
    first = _first_rows(src, rows)
    r = np.empty(first.shape)
    residual_rows(first, sigma1, v, r)
    shift = r.mean(axis=0)
    ranges = row_ranges(src.n_rows, n_parts(client, None), rows)
    u_parts: list[np.ndarray] = []
    merged: list[BlockStats] = []

    def add(_: int, part: tuple[np.ndarray, BlockStats]) -> None:
        u_parts.append(part[0])
        merged[:] = [part[1]] if not merged else [merged[0].merge(part[1])]

    calls = [(path, key, transposed, a, b, rows) for a, b in ranges]
    run_ordered(client, _residual_part, calls, add,
                shared={**shared, "sigma1": float(sigma1), "v1": v, "shift": shift},
                progress=progress, desc="residual pass")
    return ResidualRead(Rank1(sigma1=float(sigma1), u1=np.concatenate(u_parts), v1=v),
                        merged[0])
