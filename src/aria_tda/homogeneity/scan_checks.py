"""What the single-machine and the Dask top-K scans share (:mod:`~aria_tda.homogeneity.groups`,
:mod:`~aria_tda.homogeneity.distributed`): the checked arguments — ``S_track`` as a row source,
the pool as a mask, ``k_max`` and ``chunk_rows`` —, the NaN-score check and the rule that calls
a query column constant (:data:`CONSTANT_ULPS`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aria_tda._checks import check_int
from aria_tda.errors import DataError, ParameterError, expected

__all__ = [
    "CONSTANT_ULPS", "constant_from_range", "pool_mask", "raise_if_nan", "row_source",
    "topk_args",
]


def row_source(s_track: Any) -> tuple[int, int, Any]:
    """``(n_rows, n_cols, source)``: anything with ``shape`` and ``iter_chunks`` as is,
    everything else through :func:`aria_tda.scores.as_source`.

    Parameters
    ----------
    s_track : array_like or score source
        The ``(n_tracks, n_queries)`` score matrix.

    Returns
    -------
    tuple of (int, int, score source)

    Raises
    ------
    ParameterError
        Not 2-D, or not numeric.
    """
    from aria_tda.scores import as_source

    src = s_track
    if not hasattr(src, "iter_chunks"):
        if isinstance(src, np.ndarray) and src.ndim != 2:
            raise ParameterError(expected(
                "s_track", "a 2-D score matrix (n_tracks, n_queries)", f"shape {src.shape}"))
        if isinstance(src, np.ndarray) and src.dtype.kind not in "fiu":
            raise ParameterError(expected(
                "s_track", "a numeric score matrix", f"dtype {src.dtype}"))
        src = as_source(src)
    shape = tuple(getattr(src, "shape", ()))
    if len(shape) != 2:
        raise ParameterError(expected(
            "s_track", "a 2-D score matrix (n_tracks, n_queries)", f"shape {shape}"))
    return int(shape[0]), int(shape[1]), src


def pool_mask(pool: Any, n: int) -> np.ndarray:
    """The track pool as a boolean mask of the ``n`` rows.

    Parameters
    ----------
    pool : array_like or None
        A boolean mask of length ``n``, 1-D integer row indices, or ``None`` (every row).
    n : int
        The number of rows.

    Returns
    -------
    numpy.ndarray
        A new boolean array of length ``n``.

    Raises
    ------
    ParameterError
        A mask of another length, indices out of ``[0, n)``, or another kind of array.
    """
    if pool is None:
        return np.ones(n, dtype=bool)
    arr = np.asarray(pool)
    if arr.dtype == bool:
        if arr.shape != (n,):
            raise ParameterError(expected(
                "pool", f"a boolean mask of length {n}", f"shape {arr.shape}"))
        return arr.copy()
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise ParameterError(expected(
            "pool", "a boolean mask or 1-D integer row indices",
            f"shape {arr.shape}, dtype {arr.dtype}"))
    if arr.size and (arr.min() < 0 or arr.max() >= n):
        raise ParameterError(expected(
            "pool", f"row indices in [0, {n})", f"range [{arr.min()}, {arr.max()}]"))
    mask = np.zeros(n, dtype=bool)
    mask[arr.astype(np.int64)] = True
    return mask


def topk_args(s_track: Any, k_max: Any, pool: Any, chunk_rows: Any
               ) -> tuple[int, int | None, int, int, Any, np.ndarray]:
    """Checked ``k_max``/``chunk_rows``, the matrix's size and row source, and the pool mask.

    Parameters
    ----------
    s_track : array_like or score source
        The ``(n_tracks, n_queries)`` score matrix (:func:`row_source`).
    k_max : int
        The largest group size: at least 1, at most the pool's size.
    pool : array_like or None
        The pool (:func:`pool_mask`).
    chunk_rows : int or None
        Rows per chunk (at least 1), or ``None``.

    Returns
    -------
    tuple
        ``(k_max, chunk_rows, n_rows, n_cols, source, mask)``.
    """
    k_max = check_int("k_max", k_max, min_value=1)
    if chunk_rows is not None:
        chunk_rows = check_int("chunk_rows", chunk_rows, min_value=1)
    n, t, src = row_source(s_track)
    mask = pool_mask(pool, n)
    n_pool = int(mask.sum())
    if k_max > n_pool:
        raise ParameterError(expected(
            "k_max", f"at most the pool size {n_pool} (of {n} tracks)", k_max))
    return k_max, chunk_rows, n, t, src, mask


def raise_if_nan(nan_count: np.ndarray) -> None:
    """Refuse a score matrix with NaN scores, naming how many and the first column.

    Parameters
    ----------
    nan_count : numpy.ndarray
        NaN scores per query column.

    Raises
    ------
    DataError
        Any column has a NaN score.
    """
    if nan_count.any():
        bad = np.flatnonzero(nan_count)
        raise DataError(expected(
            "s_track", "finite scores",
            f"{int(nan_count.sum())} NaN score(s) in {bad.size} query column(s), "
            f"e.g. column {int(bad[0])}"))


#: relative spread (in units of the score dtype's machine epsilon) below which a column is
#: constant: aggregation may leave a few ulps of rounding noise on a constant column
CONSTANT_ULPS = 16


def constant_from_range(lo: np.ndarray, hi: np.ndarray, dtype: Any) -> np.ndarray:
    """Which query columns are constant, from their minimum and maximum.

    A column is constant when its spread is at most :data:`CONSTANT_ULPS` machine epsilons of
    the score dtype (float64 for integer scores), relative to its largest magnitude.

    Parameters
    ----------
    lo, hi : numpy.ndarray
        Each column's minimum and maximum score.
    dtype : numpy dtype or type
        The scores' dtype.

    Returns
    -------
    numpy.ndarray
        Boolean, per column (a non-finite bound: not constant).
    """
    eps = np.finfo(np.dtype(dtype) if np.dtype(dtype).kind == "f" else np.float64).eps
    scale = np.maximum(np.abs(lo), np.abs(hi))
    with np.errstate(invalid="ignore"):
        return np.isfinite(lo) & np.isfinite(hi) & ((hi - lo) <= CONSTANT_ULPS * eps * scale)
