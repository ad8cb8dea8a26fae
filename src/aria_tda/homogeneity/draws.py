r"""How the null's reference groups are drawn (:mod:`aria_tda.homogeneity.null`).

- **uniform** — ``K`` distinct pool rows, uniformly (the paper's null; one ``rng.choice``
  per group);
- **segment-matched** — the top ``K`` of one simulated random track-score column, normalised
  and averaged per track as the setting does (``zscore``: i.i.d. :math:`N(0, 1/n_i)` track
  means; ``rank``: a uniformly random ranking of every segment, averaged per track), so that
  random attribution reads as :math:`z_c \approx 0` whatever the segment counts.

:func:`sampling_of` says which a segment map calls for, :func:`draw_groups` draws the groups of
a null, :func:`reference_groups` draws groups the same way for other uses (the distinctive
reading's threshold).
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from aria_tda._checks import check_int
from aria_tda.errors import ParameterError, expected

__all__ = ["describe_sampling", "draw_groups", "reference_groups", "sampling_of"]

#: per-query normalisations the segment-matched null simulates (``auto`` is resolved before)
_MATCHED_NORMALIZATIONS = ("zscore", "rank")
#: numbers simulated per block when drawing segment-matched groups
_MATCHED_BLOCK = 2**22


def sampling_of(segment_counts: Any, normalize: Any, mask: np.ndarray
              ) -> tuple[str, str | None, str | None, np.ndarray | None]:
    """``(sampling, segments_digest, normalize, counts)`` of the null for this segment map:
    uniform (``None`` for the last three) without counts or with equal counts over the pool.

    Parameters
    ----------
    segment_counts : int array [shape=(n_rows,)] or None
        Segments per row of S_track.
    normalize : str
        The normalisation S_track was aggregated with.
    mask : np.ndarray [shape=(n_rows,), dtype=bool]
        The pool.
    """
    n = mask.size
    if segment_counts is None:
        return "uniform", None, None, None
    arr = np.asarray(segment_counts)
    if arr.shape != (n,) or (arr.size and arr.dtype.kind not in "iu"):
        raise ParameterError(expected(
            "segment_counts", f"{n} integers, the segments of each row of S_track",
            f"shape {arr.shape}, dtype {arr.dtype}"))
    if arr.size and arr.min() < 1:
        raise ParameterError(expected("segment_counts", "counts >= 1", int(arr.min())))
    counts = arr.astype(np.int64)
    in_pool = counts[mask]
    if in_pool.size == 0 or bool(np.all(in_pool == in_pool[0])):
        return "uniform", None, None, None
    if normalize not in _MATCHED_NORMALIZATIONS:
        raise ParameterError(expected(
            "normalize", "'zscore' or 'rank', the normalisation S_track was aggregated with "
            "('auto' resolved)", normalize))
    h = hashlib.blake2b(digest_size=16)
    h.update(str(n).encode())
    h.update(counts.astype("<i8").tobytes())
    return "segment-matched", h.hexdigest(), str(normalize), counts


def describe_sampling(sampling: str, digest: str | None, normalize: str | None) -> str:
    """How a null's groups were drawn, in words (for messages).

    Parameters
    ----------
    sampling : {"uniform", "segment-matched"}
    digest : str or None
        The segment counts' digest.
    normalize : str or None
        The normalisation simulated.
    """
    if sampling == "uniform":
        return "uniform"
    return f"segment-matched (normalize={normalize!r}, segment counts {str(digest)[:12]})"


def _top_k_rows(x: np.ndarray, k: int) -> np.ndarray:
    """Column indices of the ``k`` largest entries of each row of ``x`` ``(r, n)``, best first,
    ties to the lower index (the order of :func:`~aria_tda.homogeneity.top_k_groups`)."""
    r, n = x.shape
    kth = np.partition(x, n - k, axis=1)[:, n - k, None]  # the k-th largest value
    above = x > kth
    tied = x == kth
    take = above | (tied & (np.cumsum(tied, axis=1) <= k - above.sum(axis=1, keepdims=True)))
    idx = np.nonzero(take)[1].reshape(r, k)
    vals = np.take_along_axis(x, idx, axis=1)
    return np.take_along_axis(idx, np.lexsort((idx, -vals), axis=1), axis=1)


def _matched_groups(rng: np.random.Generator, rows: np.ndarray, counts: np.ndarray, k: int,
                    b: int, normalize: str) -> np.ndarray:
    """``b`` segment-matched reference groups of size ``k`` (see
    :func:`aria_tda.homogeneity.null.null_distribution`)."""
    n_seg = counts[rows]
    m = int(counts.sum())
    width = m if normalize == "rank" else rows.size
    step = max(1, _MATCHED_BLOCK // width)  # simulated columns per block
    out = np.empty((b, k), dtype=np.int64)
    if normalize == "rank":
        ranks = np.arange(1, m + 1, dtype=np.int64)
        starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    else:
        scale = 1.0 / np.sqrt(n_seg)
    for s in range(0, b, step):
        r = min(step, b - s)
        if normalize == "rank":  # segments of row i are columns starts[i] .. + counts[i]
            perm = rng.permuted(np.broadcast_to(ranks, (r, m)), axis=1)
            x = np.add.reduceat(perm, starts, axis=1)[:, rows] / n_seg
        else:
            x = rng.standard_normal((r, rows.size)) * scale
        out[s : s + r] = rows[_top_k_rows(x, k)]
    return out


def draw_groups(rng: np.random.Generator, rows: np.ndarray, ks: np.ndarray, B: int,
                 counts: np.ndarray | None, normalize: str | None) -> list[np.ndarray]:
    """The reference groups of every ``K``, ``(B, K)`` each, in the documented order
    (uniform without ``counts``, segment-matched with them; see
    :func:`aria_tda.homogeneity.null.null_distribution`).

    Parameters
    ----------
    rng : numpy.random.Generator
        The generator (its calls are part of the null's definition).
    rows : np.ndarray [shape=(P,), dtype=int]
        The pool's rows.
    ks : np.ndarray [shape=(n_K,), dtype=int]
        Group sizes.
    B : int
        Groups per ``K``.
    counts : np.ndarray [shape=(n_rows,)] or None
        Segments per row (``None``: uniform).
    normalize : str or None
        The normalisation the segment-matched groups simulate.
    """
    if counts is None:
        return [np.stack([rng.choice(rows, int(k), replace=False) for _ in range(B)])
                .astype(np.int64) for k in ks]
    return [_matched_groups(rng, rows, counts, int(k), B, str(normalize)) for k in ks]


def reference_groups(k: int, n_groups: int, *, pool_rows: Any, seed: int,
                     segment_counts: Any = None, normalize: str = "zscore") -> np.ndarray:
    """``n_groups`` random reference groups of size ``k`` drawn as the null draws them: uniform
    from the pool, or segment-matched when ``segment_counts`` differ over it
    (:func:`aria_tda.homogeneity.null.null_distribution`), seeded by
    ``numpy.random.default_rng([seed, k, 271828])``.

    Parameters
    ----------
    k : int
        Group size.
    n_groups : int
        How many groups.
    pool_rows : np.ndarray [shape=(P,), dtype=int]
        The pool's rows.
    seed : int
        Seed.
    segment_counts : int array [shape=(n_rows,)], optional
        Segments per row.
    normalize : {"zscore", "rank"}
        The normalisation the segment-matched groups simulate.

    Returns
    -------
    np.ndarray [shape=(n_groups, k), dtype=int64]
    """
    rows = np.asarray(pool_rows, dtype=np.int64)
    k = check_int("k", k, min_value=1, max_value=int(rows.size))
    n_groups = check_int("n_groups", n_groups, min_value=0)
    counts = None
    if segment_counts is not None:
        c = np.asarray(segment_counts, dtype=np.int64)
        if np.unique(c[rows]).size > 1:
            counts = c
    rng = np.random.default_rng([check_int("seed", seed, min_value=0), k, 271828])
    if n_groups == 0:
        return np.zeros((0, k), dtype=np.int64)
    return draw_groups(rng, rows, np.array([k]), n_groups, counts, normalize)[0]
