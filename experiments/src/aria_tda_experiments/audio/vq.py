"""k-means and residual vector quantisation kernels of the audio tokenizers (numpy, float64).

Nearest-centroid assignment (:func:`assign`, chunked ``‖c‖² − 2x·c`` ranking, with its exact
row-by-row twin :func:`assign_reference`), seeded k-means++ / Lloyd (:func:`kmeans`) and a
residual VQ whose every level is a k-means codebook fitted on the previous level's residual
(:func:`rvq_fit`, :func:`rvq_encode`, :func:`rvq_decode`). BLAS runs on one thread inside
the kernels: faster for these shapes on a busy 2-core machine, and results that do not depend
on the machine's thread count.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from aria_tda._checks import check_int
from aria_tda.errors import DataError, expected

__all__ = [
    "as_points",
    "assign",
    "kmeans",
    "one_blas_thread",
    "rvq_decode",
    "rvq_encode",
    "rvq_fit",
]

# ------------------------------------------------------------------------------------------
# k-means and residual VQ (numpy, float64)
# ------------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _controller() -> Any:
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def one_blas_thread() -> Any:
    """BLAS on one thread: faster for these shapes on a busy 2-core machine (tracks run in
    parallel instead), and float results that do not depend on the machine's thread count."""
    return _controller().limit(limits=1, user_api="blas")


def as_points(name: str, x: Any) -> np.ndarray:
    """Points as a finite float64 ``(points, dims)`` array.

    Parameters
    ----------
    name : str
        Their name, for the message.
    x : array_like
        The points.

    Returns
    -------
    numpy.ndarray

    Raises
    ------
    DataError
        Not 2-D, or not finite.
    """
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 2 or not np.isfinite(a).all():
        raise DataError(expected(name, "a finite 2-D array (points, dims)", f"shape {a.shape}"))
    return a


def assign(
    x: np.ndarray, centroids: np.ndarray, *, chunk_rows: int = 4096
) -> tuple[np.ndarray, np.ndarray]:
    """Nearest centroid of every row of ``x`` and its squared distance.

    Ranks by ``‖c‖² − 2x·c`` (one matrix product per chunk of rows); the distance returned is
    ``‖x‖² + ‖c‖² − 2x·c`` (clipped at 0; equal to ``Σ (x − c)²`` to rounding). Ties go to the
    lowest index.

    Parameters
    ----------
    x : ndarray, shape (n, d)
        Points.
    centroids : ndarray, shape (k, d)
        Codebook.
    chunk_rows : int
        Rows per matrix product (memory ``chunk_rows × k``; results do not depend on it).

    Returns
    -------
    (labels, d2) : (ndarray of int64 (n,), ndarray of float64 (n,))
    """
    x, c = as_points("x", x), as_points("centroids", centroids)
    chunk_rows = check_int("chunk_rows", chunk_rows, min_value=1)
    c2 = np.einsum("kd,kd->k", c, c)
    labels = np.empty(len(x), dtype=np.int64)
    d2 = np.einsum("nd,nd->n", x, x)
    with one_blas_thread():
        for s in range(0, len(x), chunk_rows):
            d = x[s : s + chunk_rows] @ c.T
            d *= -2.0
            d += c2
            j = np.argmin(d, axis=1)
            labels[s : s + chunk_rows] = j
            d2[s : s + chunk_rows] += d[np.arange(len(j)), j]
    return labels, np.maximum(d2, 0.0, out=d2)


def assign_reference(
    x: np.ndarray, centroids: np.ndarray, *, chunk_rows: int = 4096
) -> tuple[np.ndarray, np.ndarray]:
    """Reference of :func:`assign`: one row at a time, exact squared distances.

    Parameters
    ----------
    x : ndarray, shape (n, d)
        Points.
    centroids : ndarray, shape (k, d)
        Codebook.
    chunk_rows : int
        Ignored (performance only).
    """
    x, c = as_points("x", x), as_points("centroids", centroids)
    labels = np.empty(len(x), dtype=np.int64)
    d2 = np.empty(len(x))
    for i, row in enumerate(x):
        dist = np.square(row - c).sum(axis=1)
        labels[i] = int(np.argmin(dist))
        d2[i] = dist[labels[i]]
    return labels, d2


def kmeans(
    x: np.ndarray, k: int, *, n_iter: int = 25, seed: int | Sequence[int] = 0,
    chunk_rows: int = 4096,
) -> np.ndarray:
    """k-means (k-means++ init, Lloyd iterations); returns the ``(k, d)`` centroids.

    Empty clusters move to the points farthest from their centroids. With fewer distinct
    points than ``k`` the remaining centroids repeat the first (never chosen by :func:`assign`).
    Every centroid is the mean of its last assignment, so the fit never does worse than the
    zero codebook (what makes :func:`rvq_fit`'s error fall with each level).

    Parameters
    ----------
    x : ndarray, shape (n, d)
        Points (n >= 1).
    k : int
        Centroids.
    n_iter : int
        Lloyd iterations at most (stops early when the assignment no longer changes).
    seed : int or sequence of int
        Seed of the init (``numpy.random.default_rng(seed)``).
    chunk_rows : int
        Passed to :func:`assign`.
    """
    x = as_points("x", x)
    k, n_iter = check_int("k", k, min_value=1), check_int("n_iter", n_iter, min_value=1)
    if len(x) == 0:
        raise DataError(expected("x", "at least one point", "none"))
    with one_blas_thread():
        return _lloyd(x, _kmeanspp(x, k, np.random.default_rng(seed)), n_iter, chunk_rows)


def _kmeanspp(x: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    n = len(x)
    x2 = np.einsum("nd,nd->n", x, x)
    cent = np.empty((k, x.shape[1]))
    first = int(rng.integers(n))
    cent[:] = x[first]
    d2 = np.maximum(x2 - 2.0 * (x @ x[first]) + x2[first], 0.0)
    for i in range(1, k):
        cum = np.cumsum(d2)
        if cum[-1] <= 0.0:
            break  # fewer distinct points than k: the rest repeat the first
        j = min(int(np.searchsorted(cum, rng.random() * cum[-1], side="right")), n - 1)
        cent[i] = x[j]
        np.minimum(d2, np.maximum(x2 - 2.0 * (x @ x[j]) + x2[j], 0.0), out=d2)
    return cent


def _lloyd(x: np.ndarray, cent: np.ndarray, n_iter: int, chunk_rows: int) -> np.ndarray:
    k = len(cent)
    cols = np.ascontiguousarray(x.T)  # per-dimension bincounts below
    prev = None
    for _ in range(n_iter):
        labels, d2 = assign(x, cent, chunk_rows=chunk_rows)
        if prev is not None and np.array_equal(labels, prev):
            break
        counts = np.bincount(labels, minlength=k)
        sums = np.stack([np.bincount(labels, weights=col, minlength=k) for col in cols], axis=1)
        full = counts > 0
        cent[full] = sums[full] / counts[full, None]
        empty = np.flatnonzero(~full)
        if empty.size:
            worst = np.argsort(-d2, kind="stable")[: empty.size]
            cent[empty[: worst.size]] = x[worst]
        prev = labels
    return cent


def rvq_fit(
    x: np.ndarray, levels: int, k: int, *, n_iter: int = 25, seed: int | Sequence[int] = 0,
    chunk_rows: int = 4096,
) -> np.ndarray:
    """Residual VQ codebooks, shape ``(levels, k, d)``: level ``l`` is a k-means of the residual.

    Parameters
    ----------
    x : ndarray, shape (n, d)
        Training points.
    levels : int
        Codebooks.
    k : int
        Codewords per codebook.
    n_iter : int
        Lloyd iterations per level.
    seed : int or sequence of int
        Level ``l`` is seeded with ``[*seed, l]``.
    chunk_rows : int
        Passed to :func:`assign`.
    """
    r = as_points("x", x).copy()
    levels = check_int("levels", levels, min_value=1)
    books = np.empty((levels, k, r.shape[1]))
    base = [int(s) for s in np.atleast_1d(seed)]
    for lvl in range(levels):
        books[lvl] = kmeans(r, k, n_iter=n_iter, seed=[*base, lvl], chunk_rows=chunk_rows)
        labels, _ = assign(r, books[lvl], chunk_rows=chunk_rows)
        r -= books[lvl][labels]
    return books


def rvq_encode(x: np.ndarray, codebooks: np.ndarray, *, chunk_rows: int = 4096) -> np.ndarray:
    """Greedy residual codes of ``x``, shape ``(n, levels)`` int64.

    Parameters
    ----------
    x : ndarray, shape (n, d)
        Points.
    codebooks : ndarray, shape (levels, k, d)
        From :func:`rvq_fit`.
    chunk_rows : int
        Passed to :func:`assign`.
    """
    r = as_points("x", x).copy()
    codes = np.empty((len(r), len(codebooks)), dtype=np.int64)
    for lvl, book in enumerate(codebooks):
        codes[:, lvl], _ = assign(r, book, chunk_rows=chunk_rows)
        r -= book[codes[:, lvl]]
    return codes


def rvq_decode(codes: np.ndarray, codebooks: np.ndarray) -> np.ndarray:
    """Sum of the codewords of ``codes`` (n, L <= levels): the RVQ reconstruction, (n, d).

    Parameters
    ----------
    codes : ndarray of int, shape (n, L)
        Codes of the first ``L`` levels.
    codebooks : ndarray, shape (levels, k, d)
        From :func:`rvq_fit`.
    """
    c = np.asarray(codes)
    books = np.asarray(codebooks)
    if c.ndim != 2 or c.shape[1] > len(books) or c.dtype.kind not in "iu":
        raise DataError(expected("codes", f"an integer array (n, <= {len(books)})",
                                 f"{c.dtype} shape {c.shape}"))
    if c.size and (c.min() < 0 or c.max() >= books.shape[1]):
        raise DataError(expected("codes", f"values in [0, {books.shape[1]})",
                                 f"[{c.min()}, {c.max()}]"))
    out = np.zeros((len(c), books.shape[2]))
    for lvl in range(c.shape[1]):
        out += books[lvl][c[:, lvl]]
    return out


