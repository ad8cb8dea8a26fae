r"""How like the query each attributed track is, per channel, against the rest of the pool.

For a query :math:`q` with features of its own (the study's ``query_features``) and a pool
track :math:`x`, the channel score :math:`a_c(q, x)` of :mod:`aria_tda.homogeneity.anchor`
(each feature's similarity to the query standardised over the pool, averaged over the
channel's features) says how much more like the query :math:`x` is than the pool's average
track, in pool standard deviations. Its **percentile** is where :math:`x` stands among all pool
tracks for that query (mid-rank: ties count half),

.. math:: \mathrm{pct}_c(q, x) = 100 \cdot \frac{\#\{y : a_c(q, y) < a_c(q, x)\}
          + \tfrac12 \#\{y \ne x : a_c(q, y) = a_c(q, x)\}}{P - 1},

so 50 is a typical pool track, 100 the track most like the query. A channel **cannot
discriminate** for a query and track when the score is the same for every pool track (a
constant feature: SD 0), or when at least :data:`TIE_SHARE` of the pool ties with the track
(most tracks identical on that aspect: a high percentile would say nothing). These are the
numbers the dossier and the report print for each attributed item ("the study's numbers");
:func:`item_alignment_reference` is the exact reference (pair by pair, one query at a time).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from aria_tda._checks import check_int
from aria_tda.errors import ParameterError, expected
from aria_tda.homogeneity.anchor import AnchorCache, channel_scores
from aria_tda.homogeneity.groups import flatten_prepared
from aria_tda.homogeneity.scan_checks import pool_mask
from aria_tda.similarity.cross import cross_similarity, cross_similarity_reference

__all__ = ["TIE_SHARE", "ItemAlignment", "item_alignment"]

#: Share of the pool that ties with a track at or above which its channel cannot discriminate.
TIE_SHARE = 0.25
#: Two scores closer than this are a tie (they are means of standardised similarities).
_TIE_TOL = 1e-9


@dataclass(frozen=True, eq=False)
class ItemAlignment:
    """Channel scores of the attributed tracks of every query.

    Attributes
    ----------
    channels : tuple of str
    alignment : np.ndarray [shape=(n_channels, T, n)]
        :math:`a_c(q, x)` of each query's ``n`` listed tracks (NaN where the query or the
        track lacks the channel, or the query is excluded).
    percentile : np.ndarray [shape=(n_channels, T, n)]
        Its mid-rank percentile among the pool's tracks (0-100, NaN where ``alignment`` is).
    tied : np.ndarray [shape=(n_channels, T, n)]
        Share of the other pool tracks with the same score.
    informative : np.ndarray [shape=(n_channels, T, n), dtype=bool]
        The channel discriminates (pool SD > 0 and ``tied`` < :data:`TIE_SHARE`).
    """

    channels: tuple[str, ...]
    alignment: np.ndarray
    percentile: np.ndarray
    tied: np.ndarray
    informative: np.ndarray


def _check(prepared: Any, query_values: Any, groups: Any, pool: Any,
           exclude: Any) -> tuple[Any, ...]:
    channels, feats, chan = flatten_prepared(prepared)
    if not isinstance(query_values, Mapping):
        raise ParameterError(expected("query_values", "a mapping feature name -> values",
                                      type(query_values).__name__))
    g = np.asarray(groups)
    if g.ndim != 2 or not np.issubdtype(g.dtype, np.integer):
        raise ParameterError(expected("groups", "an integer array (T, n) of pool rows",
                                      f"{g.dtype} array of shape {g.shape}"))
    n = feats[0].n
    rows = np.flatnonzero(pool_mask(pool, n))
    pos = np.full(n, -1, dtype=np.int64)
    pos[rows] = np.arange(rows.size)
    if g.size and (g.min() < 0 or g.max() >= n or (pos[g] < 0).any()):
        raise ParameterError(expected("groups", "rows of the pool", g.reshape(-1)[:5].tolist()))
    t = g.shape[0]
    ex = np.zeros(t, dtype=bool) if exclude is None else np.asarray(exclude, dtype=bool)
    if ex.shape != (t,):
        raise ParameterError(expected("exclude", f"a boolean mask of {t} queries",
                                      f"shape {ex.shape}"))
    return channels, feats, chan, g.astype(np.int64), rows, pos, ex


def _rank(a: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mid-rank percentile and tie share of the pool positions ``at`` in the scores ``a`` (P,)."""
    p = a.size
    srt = np.sort(a)
    vals = a[at]
    below = np.searchsorted(srt, vals - _TIE_TOL, side="left")
    upto = np.searchsorted(srt, vals + _TIE_TOL, side="right")
    ties = upto - below - 1  # the others that tie with x
    denom = max(p - 1, 1)
    return 100.0 * (below + 0.5 * ties) / denom, ties / denom


def item_alignment(
    prepared: Any,
    query_values: Mapping[str, Any],
    groups: Any,
    *,
    pool: Any = None,
    exclude: Any = None,
    block: int = 32,
    cache: AnchorCache | None = None,
) -> ItemAlignment:
    """Channel scores and percentiles of each query's listed tracks (module docstring).

    Parameters
    ----------
    prepared : dict[str, list[PreparedFeature]]
        The corpus' features, indexed by the rows of S_track.
    query_values : mapping of str to values
        Per feature name, the queries' raw values in query-column order (as for
        :func:`~aria_tda.homogeneity.anchor.anchored_z`).
    groups : np.ndarray [shape=(T, n), dtype=int]
        The tracks to score for each query (pool rows; e.g. its top ``n``).
    pool : bool mask or int rows, optional
        The pool (default all rows).
    exclude : np.ndarray [shape=(T,), dtype=bool], optional
        Queries left out (their rows are NaN).
    block : int
        Queries per block (memory: ``block x P`` similarities per feature).
    cache : AnchorCache, optional
        The query scores of :func:`~aria_tda.homogeneity.anchor.anchored_z` over the same
        features, values and pool (reused, not recomputed).

    Returns
    -------
    ItemAlignment
    """
    channels, feats, chan, g, rows, pos, ex = _check(prepared, query_values, groups, pool,
                                                     exclude)
    block = check_int("block", block, min_value=1)
    n_c, (t, n) = len(channels), g.shape
    out = np.full((n_c, t, n), np.nan)
    pct = np.full((n_c, t, n), np.nan)
    tied = np.full((n_c, t, n), np.nan)
    sd = np.zeros((n_c, t))
    if cache is not None:
        cache._bind(prepared, query_values, rows)
    todo = np.flatnonzero(~ex)
    for s in range(0, todo.size, block):
        qidx = todo[s : s + block]

        def compute(qidx: np.ndarray = qidx) -> tuple[np.ndarray, np.ndarray]:
            a = channel_scores(feats, chan, n_c, query_values, qidx, rows, cross_similarity)
            return a, np.sqrt(a.var(axis=2))

        a, _scale = cache._scores(qidx, compute) if cache is not None else compute()
        for j, q in enumerate(qidx):
            at = pos[g[q]]
            for c in range(n_c):
                row = a[c, j]
                if not np.isfinite(row).all():
                    continue
                out[c, q] = row[at]
                pct[c, q], tied[c, q] = _rank(row, at)
                sd[c, q] = row.std()
    return _result(channels, out, pct, tied, sd)


def _result(channels: tuple[str, ...], a: np.ndarray, pct: np.ndarray, tied: np.ndarray,
            sd: np.ndarray) -> ItemAlignment:
    with np.errstate(invalid="ignore"):
        informative = (sd[:, :, None] > 0) & (tied < TIE_SHARE) & np.isfinite(a)
    return ItemAlignment(channels=channels, alignment=a, percentile=pct, tied=tied,
                         informative=informative)


def item_alignment_reference(
    prepared: Any,
    query_values: Mapping[str, Any],
    groups: Any,
    *,
    pool: Any = None,
    exclude: Any = None,
    block: int = 32,
    cache: AnchorCache | None = None,
) -> ItemAlignment:
    """Exact reference of :func:`item_alignment`: every similarity pair by pair, every rank by
    counting (``block`` and ``cache`` are ignored)."""
    channels, feats, chan, g, rows, pos, ex = _check(prepared, query_values, groups, pool,
                                                     exclude)
    n_c, (t, n), p = len(channels), g.shape, rows.size
    out = np.full((n_c, t, n), np.nan)
    pct = np.full((n_c, t, n), np.nan)
    tied = np.full((n_c, t, n), np.nan)
    sd = np.zeros((n_c, t))
    for q in range(t):
        if ex[q]:
            continue
        for c in range(n_c):
            parts = []
            for f, fc in zip(feats, chan, strict=True):
                if fc != c or f.name not in query_values:
                    continue
                v = query_values[f.name]
                one = v[q : q + 1] if isinstance(v, np.ndarray) else [v[q]]
                sim = cross_similarity_reference(f, one, rows=rows)[0]
                if not np.isfinite(sim).all():
                    continue
                m = sum(sim) / p
                s = float(np.sqrt(sum((x - m) ** 2 for x in sim) / p))
                parts.append([(x - m) / s if s > 0 else 0.0 for x in sim])
            if not parts:
                continue
            a = [sum(col) / len(parts) for col in zip(*parts, strict=True)]
            m = sum(a) / p
            sd[c, q] = float(np.sqrt(sum((x - m) ** 2 for x in a) / p))
            for i in range(n):
                me = int(pos[g[q, i]])
                v = a[me]
                lower = sum(1 for y in a if y < v - _TIE_TOL)
                same = sum(1 for k, y in enumerate(a) if k != me and abs(y - v) <= _TIE_TOL)
                out[c, q, i] = v
                pct[c, q, i] = 100.0 * (lower + 0.5 * same) / max(p - 1, 1)
                tied[c, q, i] = same / max(p - 1, 1)
    return _result(channels, out, pct, tied, sd)
