r"""Does the top-K depend on the query? Hubs, and the overlap of unlike queries.

A *collapse* is a top-K that does not depend on the query: every query, whatever it is,
retrieves the same training items. A *hub* is something else: a training item influential for
many queries (a class prototype, an outlier, a mislabelled example) — a finding about the data,
well known in nearest-neighbour retrieval and in attribution, not a failure of the method. A
matrix whose queries fall into classes rightly gives same-class queries overlapping top-K
sets, and a few hubs; a collapsed one gives the same top-K to queries that are *not* alike.
This module measures both, from each query's top-K rows (the
:class:`~aria_tda.diagnostics.concentration.TopKAccumulator` of the diagnostics pass) and a
small sample of the score matrix taken in the same pass.

Conventions
-----------
``S`` is ``(M, T)``, rows training items, columns queries; :math:`A_K(j)` the top-K rows of
query ``j`` (ties to the lower row), :math:`c_r` the number of queries with row ``r`` in their
top-K.

**Hubs.** Under top-K sets drawn independently at random, :math:`c_r \sim
\mathrm{Binomial}(T, K/M)`. A row is a *hub* when :math:`c_r \ge 3` and
:math:`P(X \ge c_r) \le 0.01/M` (Bonferroni over the ``M`` rows). Each hub is reported with its
share of queries :math:`c_r/T` and how many times chance that is, :math:`(c_r/T)/(K/M)`; at
most :data:`MAX_HUBS`, the largest first.

**Unlike-query overlap** (the verdict's measure). For a sample of at most
:data:`SAMPLE_QUERIES` queries and :data:`SAMPLE_ROWS` rows (drawn once, seeded, before the
pass), let :math:`R` be the Pearson correlation of the sampled columns, and :math:`R'` the
correlation left after its leading component, :math:`R - \lambda_1 e_1 e_1^\top` rescaled to
unit diagonal. :math:`R'_{jj'}` says how alike two queries are beyond the one axis every query
may share — a dominant axis whose sign follows the query's class makes all queries of a class
alike in :math:`R` and tells nothing about which of them are alike. The pairs of sampled
queries are split at the median of :math:`R'`; with :math:`o_{jj'} = |A_K(j) \cap A_K(j')|/K`,

.. math::

    o_{\mathrm{unlike}} = \operatorname{mean}_{R'_{jj'} \le \operatorname{med} R'} o_{jj'},
    \qquad
    e_{\mathrm{unlike}} = \frac{o_{\mathrm{unlike}} - K/M}{1 - K/M},

0 when unlike queries share no more than random sets do, 1 when they share their whole top-K.
A class-structured matrix shares top-K items between alike queries only; a collapsed one
between all. :math:`o_{\mathrm{alike}}` (the other half) and the Spearman correlation of
:math:`o_{jj'}` with :math:`R'_{jj'}` over the pairs (``follows_similarity``: positive when
the overlap goes with how alike the queries are) are reported beside it.

**Findings beside it**, never deciding the verdict: ``kappa_signed``, the mean *signed*
off-diagonal :math:`R` of the sample (κ averages :math:`|R|`, so two opposite camps of queries
give a large κ and a signed mean near 0); ``offset_rho``, the median over sampled queries of the
Spearman correlation between the query's scores and the rows' mean score over the sampled
queries (near 1: the ranking is one per-item offset — a gradient norm, a self-influence —
the same for every query).

How it is computed
------------------
The sample is ``S[rows, cols]`` at most ``256 x 128``, kept in float32 (128 KiB), kept by the
accumulator as its blocks pass; the overlaps come from a one-hot of the sampled queries' top-K
(:math:`O(Q^2 U)` for ``U`` distinct rows, at most ``Q K``). :func:`query_dependence_reference`
is the exact in-memory twin (full sorts, explicit set intersections, ``np.corrcoef``,
``scipy.stats.spearmanr``) on the same sampled indices.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from aria_tda._checks import check_int
from aria_tda.errors import ParameterError, expected

__all__ = [
    "MAX_HUBS",
    "SAMPLE_QUERIES",
    "SAMPLE_ROWS",
    "Hub",
    "QueryDependence",
    "dependence_from_top",
    "dependence_k",
    "find_hubs",
    "largest_excess",
    "query_dependence",
    "sample_indices",
    "sample_scores",
]

#: Rows of the score sample (the query similarity's rows).
SAMPLE_ROWS = 256
#: Queries of the score sample (pairs: at most 8,128).
SAMPLE_QUERIES = 128
#: Hubs reported at most.
MAX_HUBS = 10
#: Family-wise level of the hub test (Bonferroni over the rows).
HUB_ALPHA = 0.01
#: The ``K`` the measures prefer (the measured K closest to it, at most ``M/2``).
PREFERRED_K = 10
_SEED = 20_251_129


@dataclass(frozen=True)
class Hub:
    """A training row in far more queries' top-K than chance (see the module docstring).

    Attributes
    ----------
    row : int or str
        The row (a track id at the track level).
    count : int
        Queries with it in their top-K.
    share : float
        ``count / T``.
    times_chance : float
        ``share / (K / M)``.
    """

    row: int | str
    count: int
    share: float
    times_chance: float

    def to_dict(self) -> dict[str, Any]:
        return {"row": self.row, "count": int(self.count), "share": float(self.share),
                "times_chance": float(self.times_chance)}


def row_name(x: Any) -> int | str:
    """A row's name as a plain ``int`` or ``str`` (NumPy scalars unwrapped)."""
    x = x.item() if hasattr(x, "item") else x
    return int(x) if isinstance(x, int | np.integer) else str(x)


@dataclass(frozen=True)
class QueryDependence:
    """Whether the top-K follows the query (see the module docstring).

    Attributes
    ----------
    k : int
        The ``K`` measured.
    n_rows : int
        ``M``.
    n_queries : int
        ``T``.
    hubs : tuple of Hub
        The hubs, most queries first (at most :data:`MAX_HUBS`).
    n_hubs : int
        How many rows pass the hub test (may exceed ``len(hubs)``).
    sample_queries, sample_rows : int
        The sample's size.
    n_pairs : int
        Pairs of sampled, non-constant queries.
    ks : tuple of int
        The ``K`` of the overlaps (the measured ``K`` at most ``M/2``).
    overlap_unlike, overlap_alike : tuple of float
        Per ``ks``: mean top-K overlap of the less and the more alike half of the pairs (NaN
        without pairs).
    unlike_excess : tuple of float
        Per ``ks``: chance-corrected ``overlap_unlike``; the verdict reads the largest.
    follows_similarity : float
        Spearman correlation of the pairs' top-``k`` overlap with their residual correlation.
    kappa_signed : float
        Mean signed correlation of the sampled queries.
    offset_rho : float
        Median Spearman correlation of a query's scores with the rows' mean score.
    """

    k: int
    n_rows: int
    n_queries: int
    hubs: tuple[Hub, ...]
    n_hubs: int
    sample_queries: int
    sample_rows: int
    n_pairs: int
    ks: tuple[int, ...]
    overlap_unlike: tuple[float, ...]
    overlap_alike: tuple[float, ...]
    unlike_excess: tuple[float, ...]
    follows_similarity: float
    kappa_signed: float
    offset_rho: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping (NaN becomes ``None``)."""

        def num(x: float) -> float | None:
            return None if not math.isfinite(float(x)) else float(x)

        return {
            "k": int(self.k), "n_rows": int(self.n_rows), "n_queries": int(self.n_queries),
            "hubs": [h.to_dict() for h in self.hubs], "n_hubs": int(self.n_hubs),
            "sample_queries": int(self.sample_queries), "sample_rows": int(self.sample_rows),
            "n_pairs": int(self.n_pairs), "ks": [int(k) for k in self.ks],
            "overlap_unlike": [num(x) for x in self.overlap_unlike],
            "overlap_alike": [num(x) for x in self.overlap_alike],
            "unlike_excess": [num(x) for x in self.unlike_excess],
            "follows_similarity": num(self.follows_similarity),
            "kappa_signed": num(self.kappa_signed), "offset_rho": num(self.offset_rho),
        }


def largest_excess(view: Any) -> tuple[float, int, float, float] | None:
    """``(excess, K, overlap_unlike, overlap_alike)`` at the ``K`` whose chance-corrected
    unlike-query overlap is largest (ties: the smaller K); ``None`` when none is finite.

    Parameters
    ----------
    view : QueryDependence or mapping
        The measures, or their :meth:`QueryDependence.to_dict`.
    """
    d = view.to_dict() if hasattr(view, "to_dict") else view
    best = None
    for k, e, ou, oa in zip(d["ks"], d["unlike_excess"], d["overlap_unlike"],
                            d["overlap_alike"], strict=True):
        if e is None or not math.isfinite(float(e)):
            continue
        if best is None or float(e) > best[0]:
            best = (float(e), int(k), float(ou), float("nan") if oa is None else float(oa))
    return best


def sample_indices(n: int, cap: int, *, salt: int = 0) -> np.ndarray:
    """Sorted indices of a seeded sample of ``min(n, cap)`` of ``range(n)`` (all when n <= cap).

    Parameters
    ----------
    n : int
        Population size.
    cap : int
        Sample size at most.
    salt : int
        Separates the row sample from the query sample.
    """
    n = check_int("n", n, min_value=0)
    cap = check_int("cap", cap, min_value=1)
    if n <= cap:
        return np.arange(n, dtype=np.int64)
    rng = np.random.default_rng([_SEED, salt, n])
    return np.sort(rng.choice(n, size=cap, replace=False)).astype(np.int64)


def sample_scores(scores: Any, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """``scores[rows][:, cols]`` through float32 (as the pass keeps it), from an array or a
    row-block source.

    Parameters
    ----------
    scores : array-like or ScoreSource
        ``(N, T)``.
    rows, cols : np.ndarray of int
        Sorted rows and the query columns.
    """
    if isinstance(scores, np.ndarray):
        return scores[np.ix_(rows, cols)].astype(np.float32).astype(np.float64)
    from aria_tda.scores.readers import as_source

    src = as_source(scores)
    out = np.empty((rows.size, cols.size), dtype=np.float32)
    stop = int(rows[-1]) + 1 if rows.size else 0
    for row0, block in src.iter_chunks(start=int(rows[0]) if rows.size else 0, stop=stop):
        lo, hi = np.searchsorted(rows, [row0, row0 + block.shape[0]])
        if hi > lo:
            out[lo:hi] = np.asarray(block)[rows[lo:hi] - row0][:, cols]
    return out.astype(np.float64)


def dependence_k(ks: Any, n_rows: int) -> int | None:
    """The measured ``K`` the measures use: closest to :data:`PREFERRED_K` among those at most
    ``M/2`` (ties: the smaller); ``None`` when none is.

    Parameters
    ----------
    ks : sequence of int
        The measured ``K``.
    n_rows : int
        ``M``.
    """
    ok = [int(k) for k in ks if int(k) <= n_rows / 2]
    if not ok:
        return None
    return min(ok, key=lambda k: (abs(k - PREFERRED_K), k))


def find_hubs(ranked: np.ndarray, k: int, n_rows: int,
              ids: np.ndarray | None = None) -> tuple[tuple[Hub, ...], int]:
    """The hubs of the top-``k`` sets ``ranked[:, :k]`` and how many rows pass the test.

    Parameters
    ----------
    ranked : np.ndarray [shape=(T, >= k), dtype=int]
        Each query's rows, best first.
    k : int
        Group size.
    n_rows : int
        ``M``.
    ids : np.ndarray, optional
        Names of the rows (track ids) to report instead of their index.
    """
    t = ranked.shape[0]
    rows, counts = np.unique(ranked[:, :k], return_counts=True)
    c = min(1.0, k / n_rows)
    if c >= 1.0 or t < 3:
        return (), 0
    hit = (counts >= 3) & binomial_tail_below(counts, t, c, HUB_ALPHA / n_rows)
    idx = np.flatnonzero(hit)
    order = idx[np.lexsort((rows[idx], -counts[idx]))][:MAX_HUBS]
    hubs = tuple(
        Hub(row=row_name(ids[rows[i]]) if ids is not None else int(rows[i]), count=int(counts[i]),
            share=float(counts[i] / t), times_chance=float(counts[i] / t / c))
        for i in order
    )
    return hubs, int(idx.size)


def binomial_tail_below(counts: np.ndarray, n: int, p: float, level: float) -> np.ndarray:
    r"""Whether :math:`P(X \ge c) \le` ``level`` for each ``c`` of ``counts``,
    :math:`X \sim \mathrm{Binomial}(n, p)`.

    For ``c`` above the mean the tail is summed from ``c`` up (the terms fall from there on;
    the first from :func:`math.lgamma`, the next by the ratio of successive terms) until they
    no longer change it; ``c`` at most the mean has a tail of at least 1/2 (the binomial
    median is :math:`\lfloor np \rfloor` or :math:`\lceil np \rceil`), above any
    ``level < 1/2``. The same decisions as SciPy's regularised incomplete beta
    :math:`I_p(c, n - c + 1)`, without loading SciPy's special functions for it.

    Parameters
    ----------
    counts : np.ndarray of int
        The ``c``.
    n : int
        Trials.
    p : float
        Success probability, ``0 < p < 1``.
    level : float
        The level, ``< 1/2``.
    """
    counts = np.asarray(counts, dtype=np.int64)
    out = np.zeros(counts.shape, dtype=bool)
    lp, lq, ratio = math.log(p), math.log1p(-p), p / (1.0 - p)
    for c in np.unique(counts):
        c = int(c)
        if c <= n * p or c > n:
            out[counts == c] = c > n  # P(X > n) = 0
            continue
        term = math.exp(math.lgamma(n + 1) - math.lgamma(c + 1) - math.lgamma(n - c + 1)
                        + c * lp + (n - c) * lq)
        tail, x = term, c
        while x < n and term > tail * 1e-17:
            term *= (n - x) / (x + 1) * ratio
            tail += term
            x += 1
        out[counts == c] = tail <= level
    return out


def _average_ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n of ``x``, ties given their average rank."""
    order = np.argsort(x, kind="stable")
    xs = x[order]
    starts = np.flatnonzero(np.r_[True, xs[1:] != xs[:-1]])
    ends = np.r_[starts[1:], xs.size]
    avg = (starts + ends + 1) / 2.0  # mean of the 1-based positions start+1 .. end
    ranks = np.empty(x.size)
    ranks[order] = np.repeat(avg, ends - starts)
    return ranks


def _spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman correlation (average ranks for ties); NaN when either is constant."""
    rankdata = _average_ranks
    if x.size < 3:
        return float("nan")
    rx, ry = rankdata(x), rankdata(y)
    rx -= rx.mean()
    ry -= ry.mean()
    den = math.sqrt(float(rx @ rx) * float(ry @ ry))
    return float(rx @ ry) / den if den > 0 else float("nan")


def _residual_similarity(z: np.ndarray) -> tuple[np.ndarray, float]:
    """``(R', kappa_signed)`` from standardised columns ``z`` ``(R, Q)``."""
    r = (z.T @ z) / z.shape[0]
    q = r.shape[0]
    signed = float((r.sum() - np.trace(r)) / (q * (q - 1))) if q > 1 else float("nan")
    from aria_tda.scores.lowrank import top_eigenpairs

    w, v = top_eigenpairs(r, 1)  # the leading pair only (its sign does not matter here)
    e1 = v[:, 0]
    r -= w[0] * np.outer(e1, e1)  # in place: the residual
    d = np.sqrt(np.clip(np.diag(r), 0.0, None))
    ok = d > 1e-9
    d_safe = np.where(ok, d, 1.0)
    r /= d_safe[:, None]
    r /= d_safe[None, :]
    r[~ok, :] = 0.0
    r[:, ~ok] = 0.0
    return r, signed


def dependence_from_top(ranked: np.ndarray, sample: np.ndarray, cols: np.ndarray, k: int,
                     n_rows: int, ids: np.ndarray | None = None,
                     ks: Any = None) -> QueryDependence:
    """The measures from every query's top rows and the score sample.

    Parameters
    ----------
    ranked : np.ndarray [shape=(T, >= k), dtype=int]
        Each query's rows, best first (ties to the lower row).
    sample : np.ndarray [shape=(R, Q)]
        ``S[rows, cols]`` for the sampled rows and the sampled queries ``cols``.
    cols : np.ndarray [shape=(Q,), dtype=int]
        The sampled queries.
    k : int
        Group size of the hubs and of ``follows_similarity`` (at most ``ranked.shape[1]``).
    n_rows : int
        ``M``.
    ids : np.ndarray, optional
        Names of the rows for the hubs.
    ks : sequence of int, optional
        The ``K`` of the unlike-query overlap (default ``(k,)``; those above ``M/2`` are
        skipped).

    Returns
    -------
    QueryDependence
    """
    t = ranked.shape[0]
    if k > ranked.shape[1]:
        raise ParameterError(expected("k", f"at most the rows kept per query {ranked.shape[1]}",
                                      k))
    hubs, n_hubs = find_hubs(ranked, k, n_rows, ids)
    x = np.asarray(sample, dtype=np.float64)
    sd = x.std(axis=0)
    keep = np.flatnonzero(sd > 0)
    nan = float("nan")
    common: dict[str, Any] = dict(
        k=int(k), n_rows=int(n_rows), n_queries=int(t), hubs=hubs, n_hubs=n_hubs,
        sample_queries=int(cols.size), sample_rows=int(x.shape[0]))
    ks_ = tuple(sorted({int(q) for q in (ks if ks is not None else (k,))
                        if int(q) <= n_rows / 2 and int(q) <= ranked.shape[1]}))
    common["ks"] = ks_
    if keep.size < 2 or x.shape[0] < 3:
        nans = tuple(nan for _ in ks_)
        return QueryDependence(**common, n_pairs=0, overlap_unlike=nans, overlap_alike=nans,
                               unlike_excess=nans, follows_similarity=nan, kappa_signed=nan,
                               offset_rho=nan)
    z = (x[:, keep] - x[:, keep].mean(axis=0)) / sd[keep]
    res, signed = _residual_similarity(z)
    iu = np.triu_indices(keep.size, 1)
    sim = res[iu]
    unlike = sim <= np.median(sim)
    o_un, o_al, excess = [], [], []
    o_k = None
    for kk in ks_:
        o = _pair_overlaps(ranked[cols[keep], :kk], n_rows)[iu]
        if kk == k:
            o_k = o
        un = float(o[unlike].mean())
        o_un.append(un)
        o_al.append(float(o[~unlike].mean()) if (~unlike).any() else nan)
        c = min(1.0, kk / n_rows)
        excess.append((un - c) / (1.0 - c) if c < 1.0 else nan)
    if o_k is None:
        o_k = _pair_overlaps(ranked[cols[keep], :k], n_rows)[iu]
    row_mean = x[:, keep].mean(axis=1)
    rhos = [_spearman(x[:, j], row_mean) for j in keep]
    finite = [r for r in rhos if math.isfinite(r)]
    return QueryDependence(
        **common, n_pairs=int(sim.size), overlap_unlike=tuple(o_un), overlap_alike=tuple(o_al),
        unlike_excess=tuple(excess), follows_similarity=_spearman(sim, o_k),
        kappa_signed=signed, offset_rho=float(np.median(finite)) if finite else nan,
    )


def _pair_overlaps(top: np.ndarray, n_rows: int) -> np.ndarray:
    """``|A(j) & A(j')| / K`` for every pair of the rows' top-K sets ``top`` ``(Q, K)``
    (a one-hot product over the distinct rows, in slices of columns: exact counts)."""
    q, k = top.shape
    distinct, codes = np.unique(top.ravel(), return_inverse=True)
    codes = codes.reshape(q, k)
    counts = np.zeros((q, q))
    step = max(1, 2**16 // max(1, q))  # a (Q, step) one-hot slice at a time
    for lo in range(0, distinct.size, step):
        onehot = np.zeros((q, min(step, distinct.size - lo)))
        j, i = np.nonzero((codes >= lo) & (codes < lo + step))
        onehot[j, codes[j, i] - lo] = 1.0  # a row appears once in a top-K set
        counts += onehot @ onehot.T
    return counts / k


def query_dependence(scores: Any, k: int, *, ids: np.ndarray | None = None,
                        rows: np.ndarray | None = None, ks: Any = None) -> QueryDependence:
    """The measures of an in-memory matrix, ranked by the diagnostics pass's top-K kernel
    (twin: :func:`query_dependence_reference`).

    Parameters
    ----------
    scores : array-like [shape=(M, T)]
        The score matrix.
    k : int
        Group size of the hubs.
    ids : np.ndarray, optional
        Names of the rows for the hubs.
    rows : np.ndarray, optional
        The rows ranked (a pool); default all.
    ks : sequence of int, optional
        The ``K`` of the unlike-query overlap (default ``(k,)``).
    """
    from aria_tda.diagnostics.topk_update import topk_update

    s = np.asarray(scores, dtype=np.float64)
    pool = np.arange(s.shape[0]) if rows is None else np.asarray(rows, dtype=np.int64)
    t = s.shape[1]
    k_max = min(max(int(k), *(int(q) for q in (ks if ks is not None else (k,)))), pool.size)
    hv, hi = np.full((t, k_max), -np.inf), np.full((t, k_max), -1, dtype=np.int64)
    topk_update(s[pool], 0, hv, hi, np.zeros(t, dtype=np.int64), np.zeros(t, dtype=np.int64))
    ranked = pool[np.take_along_axis(hi, np.lexsort((hi, -hv, hi < 0), axis=1), axis=1)]
    cols = sample_indices(t, SAMPLE_QUERIES, salt=1)
    sample = sample_scores(s, pool[sample_indices(pool.size, SAMPLE_ROWS, salt=0)], cols)
    return dependence_from_top(ranked, sample, cols, int(k), pool.size, ids,
                            ks=ks if ks is not None else (k,))


def query_dependence_reference(scores: Any, k: int, *, ids: np.ndarray | None = None,
                               rows: np.ndarray | None = None,
                               ks: Any = None) -> QueryDependence:
    """Exact in-memory twin of the streamed measures on the same sampled indices.

    Parameters
    ----------
    scores : array-like [shape=(M, T)]
        The score matrix.
    k : int
        Group size.
    ids : np.ndarray, optional
        Names of the rows for the hubs.
    rows : np.ndarray, optional
        The rows ranked (a pool); default all. The sample is drawn from them as
        :func:`sample_indices` draws it.
    ks : sequence of int, optional
        The ``K`` of the unlike-query overlap (default ``(k,)``).
    """
    from scipy.stats import binom, spearmanr

    s = np.asarray(scores, dtype=np.float64)
    pool = np.arange(s.shape[0]) if rows is None else np.asarray(rows, dtype=np.int64)
    m, t = pool.size, s.shape[1]
    sub = s[pool]
    ks_ = tuple(sorted({int(q) for q in (ks if ks is not None else (k,)) if int(q) <= m / 2}))
    # top rows per query: a stable sort of the negated scores (ties to the lower row)
    full = pool[np.argsort(-sub, axis=0, kind="stable").T]
    ranked = full[:, :k]
    counts: dict[int, int] = {}
    for j in range(t):
        for r in ranked[j]:
            counts[int(r)] = counts.get(int(r), 0) + 1
    c = min(1.0, k / m)
    hits = sorted(((n, r) for r, n in counts.items()
                   if t >= 3 and c < 1.0 and n >= 3 and binom.sf(n - 1, t, c) <= HUB_ALPHA / m),
                  key=lambda nr: (-nr[0], nr[1]))
    hubs = tuple(Hub(row=row_name(ids[r]) if ids is not None else r, count=n, share=n / t,
                     times_chance=n / t / c) for n, r in hits[:MAX_HUBS])
    cols = sample_indices(t, SAMPLE_QUERIES, salt=1)
    srows = pool[sample_indices(m, SAMPLE_ROWS, salt=0)]
    x = s[np.ix_(srows, cols)].astype(np.float32).astype(np.float64)  # the pass keeps float32
    keep = [i for i in range(cols.size) if x[:, i].std() > 0]
    nan = float("nan")
    common: dict[str, Any] = dict(
        k=k, n_rows=m, n_queries=t, hubs=hubs, n_hubs=len(hits),
        sample_queries=int(cols.size), sample_rows=int(srows.size))
    common["ks"] = ks_
    if len(keep) < 2 or srows.size < 3:
        nans = tuple(nan for _ in ks_)
        return QueryDependence(**common, n_pairs=0, overlap_unlike=nans, overlap_alike=nans,
                               unlike_excess=nans, follows_similarity=nan, kappa_signed=nan,
                               offset_rho=nan)
    r = np.corrcoef(x[:, keep], rowvar=False)
    q = len(keep)
    signed = float(np.mean([r[a, b] for a in range(q) for b in range(q) if a != b]))
    w, v = np.linalg.eigh(r)
    res = r - w[-1] * np.outer(v[:, -1], v[:, -1])
    def overlaps(kk: int) -> np.ndarray:
        out = []
        for a in range(q):
            for b in range(a + 1, q):
                sa = set(full[cols[keep[a]], :kk].tolist())
                sb = set(full[cols[keep[b]], :kk].tolist())
                out.append(len(sa & sb) / kk)
        return np.array(out)

    sims = []
    for a in range(q):
        for b in range(a + 1, q):
            da, db = res[a, a], res[b, b]
            sims.append(res[a, b] / math.sqrt(da * db) if da > 1e-18 and db > 1e-18 else 0.0)
    sim_a = np.array(sims)
    unlike = sim_a <= np.median(sim_a)
    o_un, o_al, excess = [], [], []
    for kk in ks_:
        ov = overlaps(kk)
        un = float(ov[unlike].mean())
        ck = min(1.0, kk / m)
        o_un.append(un)
        o_al.append(float(ov[~unlike].mean()) if (~unlike).any() else nan)
        excess.append((un - ck) / (1.0 - ck) if ck < 1.0 else nan)
    row_mean = x[:, keep].mean(axis=1)
    rhos = [spearmanr(x[:, j], row_mean).statistic for j in keep]
    finite = [float(v_) for v_ in rhos if np.isfinite(v_)]
    fol = spearmanr(sim_a, overlaps(k)).statistic if sim_a.size >= 3 else nan
    return QueryDependence(
        **common, n_pairs=int(sim_a.size), overlap_unlike=tuple(o_un),
        overlap_alike=tuple(o_al), unlike_excess=tuple(excess),
        follows_similarity=float(fol) if np.isfinite(fol) else nan, kappa_signed=signed,
        offset_rho=float(np.median(finite)) if finite else nan,
    )
