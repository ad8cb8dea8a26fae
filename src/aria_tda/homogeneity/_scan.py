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


def _row_source(s_track: Any) -> tuple[int, int, Any]:
    """``(n_rows, n_cols, source)``: anything with ``shape`` and ``iter_chunks`` as is,
    everything else through :func:`aria_tda.scores.as_source`."""
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


def _pool_mask(pool: Any, n: int) -> np.ndarray:
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


def _topk_args(s_track: Any, k_max: Any, pool: Any, chunk_rows: Any
               ) -> tuple[int, int | None, int, int, Any, np.ndarray]:
    """Checked ``k_max``/``chunk_rows``, the matrix's size and row source, and the pool mask."""
    k_max = check_int("k_max", k_max, min_value=1)
    if chunk_rows is not None:
        chunk_rows = check_int("chunk_rows", chunk_rows, min_value=1)
    n, t, src = _row_source(s_track)
    mask = _pool_mask(pool, n)
    n_pool = int(mask.sum())
    if k_max > n_pool:
        raise ParameterError(expected(
            "k_max", f"at most the pool size {n_pool} (of {n} tracks)", k_max))
    return k_max, chunk_rows, n, t, src, mask


def _raise_nan(nan_count: np.ndarray) -> None:
    if nan_count.any():
        bad = np.flatnonzero(nan_count)
        raise DataError(expected(
            "s_track", "finite scores",
            f"{int(nan_count.sum())} NaN score(s) in {bad.size} query column(s), "
            f"e.g. column {int(bad[0])}"))


#: relative spread (in units of the score dtype's machine epsilon) below which a column is
#: constant: aggregation may leave a few ulps of rounding noise on a constant column
CONSTANT_ULPS = 16


def _constant_from_range(lo: np.ndarray, hi: np.ndarray, dtype: Any) -> np.ndarray:
    eps = np.finfo(np.dtype(dtype) if np.dtype(dtype).kind == "f" else np.float64).eps
    scale = np.maximum(np.abs(lo), np.abs(hi))
    with np.errstate(invalid="ignore"):
        return np.isfinite(lo) & np.isfinite(hi) & ((hi - lo) <= CONSTANT_ULPS * eps * scale)
