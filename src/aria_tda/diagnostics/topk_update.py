r"""Per-query running top-K rows over row blocks, in NumPy: the kernel of the top-K measures.

Conventions
-----------
A block ``(rows, T)`` holds rows ``row0 .. row0 + rows - 1`` of ``S``; blocks arrive in
increasing row order. Per column the state keeps the ``K`` best ``(score, row)`` pairs, best
first — larger score first, equal scores to the lower row (so a later row enters only with a
strictly larger score) — in ``values`` ``(T, K)`` (float64) and ``rows`` ``(T, K)`` (int64);
unfilled slots, at the end, hold ``-inf`` and row ``-1``; ``count`` ``(T,)`` says how many are
filled. NaN scores are left out and counted per column in ``nan_count``. ``-inf`` is a score
like any other.

How it is computed
------------------
The block is taken in slabs of :data:`SLAB_ROWS` rows, each compared at once with each
column's threshold — the worst kept score once the column holds ``K``, none while it fills —
so the common case, a score that does not beat it, costs one vectorised comparison (in the
block's dtype, against the threshold rounded down to it: the same outcome as in float64). The
few scores that do are merged with the kept pairs of their columns by one sort (column, score
descending, row), and the next slab meets the thresholds that left. A slab with many
candidates (the first, while the columns fill, or rows in increasing order of score) is first
narrowed to its own ``K`` best per column (:func:`numpy.partition`; equal scores to the lower
row), so a column never merges more than ``(1 + _NARROW) K`` entries (columns are merged in
groups of about :data:`MERGE_ENTRIES` entries). The result is
exactly the column-by-column sweep's, whatever the block and slab boundaries: the ``K`` best
pairs under the order above. Memory besides the state does not grow with the block:
:func:`work_bytes`.
"""

from __future__ import annotations

import numpy as np

__all__ = ["MERGE_ENTRIES", "SLAB_ROWS", "merge_entries", "topk_update", "work_bytes"]

#: Rows compared at once.
SLAB_ROWS = 64
#: A slab with more candidates than this many ``K`` per column is narrowed to its own best.
_NARROW = 2
#: Bytes per score of a narrowed slab: a copy and its partition (at most float64 each), the
#: comparison, two masks, and the ranks of tied scores.
_SLAB_BYTES_PER_SCORE = 2 * 8 + 8
#: Bytes per merged entry: score, row, column, their order, rank and mask.
_MERGE_ENTRY = 56
#: Entries merged at once at most (a group of columns; one column's at least), and at most a
#: quarter of the slab's scores (:func:`merge_entries`).
MERGE_ENTRIES = 1024
#: Bytes per candidate of a slab: its position, row, column, order and score.
_CANDIDATE = 48


def merge_entries(slab_scores: int) -> int:
    """Entries merged at once for a slab of ``slab_scores`` scores (one column's at least).

    Parameters
    ----------
    slab_scores : int
        Rows times columns of the slab.
    """
    return max(1, min(MERGE_ENTRIES, int(slab_scores) // 4))


def work_bytes(n_cols: int, k: int, rows: int) -> int:
    """Peak bytes :func:`topk_update` allocates beside its state, for blocks of ``rows`` rows.

    The larger of a narrowed slab's work and a slab's comparison, its candidates (at most
    ``_NARROW K`` per column) and one merge (:func:`merge_entries`, or one column's).

    Parameters
    ----------
    n_cols : int
        ``T``.
    k : int
        The ``K`` kept per column.
    rows : int
        Rows per block.
    """
    t, k, slab = int(n_cols), int(k), min(int(rows), SLAB_ROWS)
    candidates = _CANDIDATE * min(slab * t, _NARROW * k * t)
    merge = _MERGE_ENTRY * (merge_entries(slab * t) + k + slab)
    return max(_SLAB_BYTES_PER_SCORE * slab * t, slab * t + candidates + merge)


def topk_update(
    block: np.ndarray,
    row0: int,
    values: np.ndarray,
    rows: np.ndarray,
    count: np.ndarray,
    nan_count: np.ndarray,
) -> None:
    """Merge a row block into the per-column top-K state, in place (see the module docstring).

    Parameters
    ----------
    block : numpy.ndarray [shape=(n, T)], float32 or float64
        Rows ``row0 .. row0 + n - 1``.
    row0 : int
        The row of ``S`` the block starts at (not before the rows already merged).
    values : numpy.ndarray [shape=(T, K)], float64
        Kept scores, best first (``-inf`` where unfilled).
    rows : numpy.ndarray [shape=(T, K)], int64
        Their rows (``-1`` where unfilled).
    count : numpy.ndarray [shape=(T,)], int64
        Filled slots per column.
    nan_count : numpy.ndarray [shape=(T,)], int64
        NaN scores seen per column.
    """
    n, t = block.shape
    k = values.shape[1]
    if n == 0:
        return
    if k == 0:
        nan_count += np.isnan(block).sum(axis=0)
        return
    for a in range(0, n, SLAB_ROWS):
        slab = block[a : a + SLAB_ROWS]
        cand = _beats(slab, values, count)
        n_cand = int(np.count_nonzero(cand))
        if n_cand > _NARROW * k * t and slab.shape[0] > k:
            _keep_slab_best(slab, cand, k, nan_count)
        if n_cand:
            _merge(slab, cand, row0 + a, values, rows, count, nan_count)


def _beats(x: np.ndarray, values: np.ndarray, count: np.ndarray) -> np.ndarray:
    """Where ``x`` beats its column's threshold, fills a column, or is NaN (the candidates)."""
    k = values.shape[1]
    thr = np.where(count >= k, values[:, k - 1], np.nan)
    if x.dtype != thr.dtype:  # the threshold rounded down to x's dtype: the same comparisons
        with np.errstate(over="ignore", invalid="ignore"):
            low = thr.astype(x.dtype)
            up = low > thr
            low[up] = np.nextafter(low[up], x.dtype.type(-np.inf))
        thr = low
    with np.errstate(invalid="ignore"):
        cand = np.less_equal(x, thr)
    return np.logical_not(cand, out=cand)


def _merge(x: np.ndarray, cand: np.ndarray, row0: int, values: np.ndarray, rows: np.ndarray,
           count: np.ndarray, nan_count: np.ndarray) -> None:
    """Merge the candidates ``cand`` of rows ``x`` (NaNs counted and dropped) into the state,
    a group of columns at a time (at most about :data:`MERGE_ENTRIES` entries)."""
    r, c = np.divmod(np.flatnonzero(cand), cand.shape[1])  # (2-D nonzero is much slower)
    by_col = np.argsort(c, kind="stable")  # rows stay in increasing order within a column
    r = r[by_col]
    c = c[by_col]
    del by_col
    v = x[r, c].astype(np.float64)
    bad = np.isnan(v)
    if bad.any():
        np.add.at(nan_count, c[bad], 1)
        good = ~bad
        r, c, v = r[good], c[good], v[good]
    if not r.size:
        return
    r += np.int64(row0)
    bounds = np.flatnonzero(np.r_[True, c[1:] != c[:-1], True])  # each column's run
    cols = c[bounds[:-1]]
    ends = np.cumsum(count[cols] + np.diff(bounds))  # entries merged up to each column
    cap = merge_entries(x.shape[0] * x.shape[1])
    g0 = 0
    while g0 < cols.size:
        start = ends[g0 - 1] if g0 else 0
        g1 = max(g0 + 1, int(np.searchsorted(ends, start + cap, side="right")))
        a, b = bounds[g0], bounds[g1]
        _merge_sorted(values, rows, count, v[a:b], r[a:b], c[a:b])
        g0 = g1


def _keep_slab_best(slab: np.ndarray, cand: np.ndarray, k: int, nan_count: np.ndarray) -> None:
    """Narrow ``cand`` to at most the ``k`` best scores of ``slab`` per column (equal scores
    to the lower row), counting the slab's NaNs (which it drops) in ``nan_count``."""
    nan = np.isnan(slab)
    x = slab
    if nan.any():
        nan_count += nan.sum(axis=0)
        x = np.where(nan, -np.inf, slab)  # NaN would sort as the largest
        cand &= ~nan
    n = x.shape[0]
    kth = np.partition(x, n - k, axis=0)[n - k]  # each column's k-th largest
    cand &= x >= kth
    over = np.flatnonzero(np.count_nonzero(cand, axis=0) > k)  # ties at the k-th score
    if over.size:
        sub, at = cand[:, over], x[:, over] == kth[over]
        room = k - np.count_nonzero(sub & ~at, axis=0)
        tie = sub & at
        cand[:, over] = (sub & ~at) | (tie & (np.cumsum(tie, axis=0, dtype=np.int32) <= room))


def _merge_sorted(values: np.ndarray, rows: np.ndarray, count: np.ndarray, v: np.ndarray,
                  r: np.ndarray, c: np.ndarray) -> None:
    """Merge candidates (score ``v``, row ``r``, column ``c``) into the kept pairs."""
    k = values.shape[1]
    touched = np.unique(c)
    kept_n = count[touched]
    kv = values[touched]
    kr = rows[touched]
    filled = np.arange(k)[None, :] < kept_n[:, None]
    all_c = np.concatenate([np.repeat(touched, kept_n), c])
    all_v = np.concatenate([kv[filled], v])
    all_r = np.concatenate([kr[filled], r.astype(np.int64)])
    order = np.lexsort((all_r, -all_v, all_c))
    all_c, all_v, all_r = all_c[order], all_v[order], all_r[order]
    first = np.flatnonzero(np.r_[True, all_c[1:] != all_c[:-1]])
    sizes = np.diff(np.r_[first, all_c.size])
    rank = np.arange(all_c.size) - np.repeat(first, sizes)
    keep = rank < k
    values[touched] = -np.inf
    rows[touched] = -1
    values[all_c[keep], rank[keep]] = all_v[keep]
    rows[all_c[keep], rank[keep]] = all_r[keep]
    count[touched] = np.minimum(sizes, k)
