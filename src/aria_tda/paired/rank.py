"""Rank correlations of many short rankings at once, and their exact permutation p-values.

See :mod:`aria_tda.paired` for how the pieces fit together.
"""

from __future__ import annotations

import itertools
import math
import warnings
from typing import Any

import numpy as np

from aria_tda._checks import check_choice
from aria_tda.errors import DataError, ParameterError, expected
from aria_tda.paired.bootstrap import percentile_interval

__all__ = ["MAX_EXACT_N", "exact_rank_pvalue", "kendall_rows", "rank_agreement",
           "spearman_rows"]

#: Most methods :func:`exact_rank_pvalue` enumerates (10! = 3,628,800 orderings).
MAX_EXACT_N = 10
STATISTICS = ("spearman", "kendall")
ALTERNATIVES = ("greater", "less", "two-sided")
#: Tolerance when comparing a permuted statistic with the observed one (ties in the statistic).
_TOL = 1e-12


def _rows(x: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    xa = np.atleast_2d(np.asarray(x, dtype=np.float64))
    ya = np.atleast_2d(np.asarray(y, dtype=np.float64))
    if xa.shape != ya.shape or xa.ndim != 2:
        raise DataError(expected("y", f"the shape of x {xa.shape}", f"shape {ya.shape}"))
    return xa, ya


def spearman_rows(x: Any, y: Any) -> np.ndarray:
    """Spearman's ρ of ``x[r]`` with ``y[r]`` for every row ``r`` (average ranks for ties).

    Parameters
    ----------
    x, y : array [shape=(R, n)]
        Paired rows (a 1-D pair is one row). A row with NaN, or constant on either side,
        gives NaN.

    Returns
    -------
    np.ndarray [shape=(R,)]
    """
    from scipy.stats import rankdata

    xa, ya = _rows(x, y)
    bad = ~(np.isfinite(xa).all(axis=1) & np.isfinite(ya).all(axis=1))
    rx = rankdata(np.where(np.isfinite(xa), xa, 0.0), axis=1)
    ry = rankdata(np.where(np.isfinite(ya), ya, 0.0), axis=1)
    rx -= rx.mean(axis=1, keepdims=True)
    ry -= ry.mean(axis=1, keepdims=True)
    den = np.sqrt((rx * rx).sum(axis=1) * (ry * ry).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = np.where(den > 0, (rx * ry).sum(axis=1) / np.where(den > 0, den, 1.0), np.nan)
    rho[bad] = np.nan
    return np.clip(rho, -1.0, 1.0)


def spearman_rows_reference(x: Any, y: Any) -> np.ndarray:
    """Exact reference of :func:`spearman_rows`: one ``scipy.stats.spearmanr`` per row.

    Parameters
    ----------
    x, y : array [shape=(R, n)]
        Paired rows.
    """
    from scipy.stats import spearmanr

    xa, ya = _rows(x, y)
    out = np.full(xa.shape[0], np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for r in range(xa.shape[0]):
            if np.isfinite(xa[r]).all() and np.isfinite(ya[r]).all():
                out[r] = spearmanr(xa[r], ya[r]).statistic
    return out


def kendall_rows(x: Any, y: Any) -> np.ndarray:
    r"""Kendall's :math:`\tau_b` of ``x[r]`` with ``y[r]`` for every row ``r``.

    :math:`\tau_b = \sum_{i<j} \mathrm{sgn}(x_i-x_j)\,\mathrm{sgn}(y_i-y_j) /
    \sqrt{(n_0-n_x)(n_0-n_y)}` with :math:`n_0 = n(n-1)/2` and :math:`n_x, n_y` the tied pairs.

    Parameters
    ----------
    x, y : array [shape=(R, n)]
        Paired rows (a 1-D pair is one row). NaN or a constant side gives NaN.

    Returns
    -------
    np.ndarray [shape=(R,)]
    """
    xa, ya = _rows(x, y)
    n = xa.shape[1]
    i, j = np.triu_indices(n, k=1)
    dx = np.sign(xa[:, i] - xa[:, j])
    dy = np.sign(ya[:, i] - ya[:, j])
    n0 = i.size
    den = np.sqrt((n0 - (dx == 0).sum(axis=1)) * (n0 - (dy == 0).sum(axis=1)).astype(float))
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = np.where(den > 0, (dx * dy).sum(axis=1) / np.where(den > 0, den, 1.0), np.nan)
    return np.clip(tau, -1.0, 1.0)


def kendall_rows_reference(x: Any, y: Any) -> np.ndarray:
    """Exact reference of :func:`kendall_rows`: one ``scipy.stats.kendalltau`` (τ-b) per row.

    Parameters
    ----------
    x, y : array [shape=(R, n)]
        Paired rows.
    """
    from scipy.stats import kendalltau

    xa, ya = _rows(x, y)
    out = np.full(xa.shape[0], np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for r in range(xa.shape[0]):
            if np.isfinite(xa[r]).all() and np.isfinite(ya[r]).all():
                out[r] = kendalltau(xa[r], ya[r]).statistic
    return out


_ROW_STAT = {"spearman": spearman_rows, "kendall": kendall_rows}


def _exact_args(x: Any, y: Any, statistic: str, alternative: str) -> tuple[np.ndarray, ...]:
    check_choice("statistic", statistic, STATISTICS)
    check_choice("alternative", alternative, ALTERNATIVES)
    xa, ya = (np.asarray(v, dtype=np.float64).ravel() for v in (x, y))
    if xa.size != ya.size:
        raise DataError(expected("y", f"{xa.size} values (as many as x)", ya.size))
    if not 2 <= xa.size <= MAX_EXACT_N:
        raise ParameterError(expected("x", f"2 to {MAX_EXACT_N} methods for the exact test",
                                      xa.size))
    return xa, ya


def _tail(perm: np.ndarray, obs: float, alternative: str) -> int:
    if alternative == "greater":
        return int((perm >= obs - _TOL).sum())
    if alternative == "less":
        return int((perm <= obs + _TOL).sum())
    return int((np.abs(perm) >= abs(obs) - _TOL).sum())


def exact_rank_pvalue(
    x: Any, y: Any, *, statistic: str = "spearman", alternative: str = "greater"
) -> float:
    """Exact permutation p-value of a rank correlation over all ``n!`` orderings.

    Under the null of no association every ordering of ``y`` against ``x`` is equally likely;
    the p-value is the fraction of the ``n!`` orderings whose statistic is at least as
    extreme as the observed one (ties in ``x`` or ``y`` kept as they are).

    Parameters
    ----------
    x, y : array [shape=(n,)]
        The two method rankings' values (e.g. ``-diagnostic`` and LDS), ``2 <= n <=``
        :data:`MAX_EXACT_N`.
    statistic : {"spearman", "kendall"}
        Spearman's ρ or Kendall's τ-b.
    alternative : {"greater", "less", "two-sided"}
        ``"greater"`` (default) asks whether ``x`` orders the methods *as* ``y`` does
        (positive association); ``"two-sided"`` compares ``|statistic|``.

    Returns
    -------
    float
        In ``[1/n!, 1]``; NaN when the observed statistic is undefined (a constant side).
    """
    xa, ya = _exact_args(x, y, statistic, alternative)
    obs = float(_ROW_STAT[statistic](xa, ya)[0])
    if not math.isfinite(obs):
        return float("nan")
    # the statistic of y reordered by a permutation, from quantities computed once: ranks (and
    # the tie counts in the denominators) move with the values
    n = xa.size
    i, j = np.triu_indices(n, k=1)
    if statistic == "spearman":
        from scipy.stats import rankdata

        rx, ry = rankdata(xa) - (n + 1) / 2.0, rankdata(ya) - (n + 1) / 2.0
        den = math.sqrt(float(rx @ rx) * float(ry @ ry))
    else:
        dx = np.sign(xa[i] - xa[j])
        sy = np.sign(ya[:, None] - ya[None, :])
        n0 = i.size
        den = math.sqrt(float(n0 - (dx == 0).sum()) * float(n0 - (sy[i, j] == 0).sum()))
    perms = _permutations(n)
    hits = 0
    step = max(1, 2**21 // (n * n))
    for s in range(0, perms.shape[0], step):
        pb = perms[s:s + step]
        if statistic == "spearman":
            vals = (ry[pb] @ rx) / den
        else:
            vals = (sy[pb[:, i], pb[:, j]] @ dx) / den
        hits += _tail(np.clip(vals, -1.0, 1.0), obs, alternative)
    return hits / perms.shape[0]


def _permutations(n: int) -> np.ndarray:
    """All ``n!`` permutations of ``range(n)`` as rows (int8), built by insertion."""
    p = np.zeros((1, 0), dtype=np.int8)
    for k in range(n):
        m = p.shape[0]
        out = np.empty((m * (k + 1), k + 1), dtype=np.int8)
        for pos in range(k + 1):
            blk = out[pos * m:(pos + 1) * m]
            blk[:, :pos] = p[:, :pos]
            blk[:, pos] = k
            blk[:, pos + 1:] = p[:, pos:]
        p = out
    return p


def exact_rank_pvalue_reference(
    x: Any, y: Any, *, statistic: str = "spearman", alternative: str = "greater"
) -> float:
    """Exact reference of :func:`exact_rank_pvalue`: ``scipy.stats`` on every permutation.

    Parameters
    ----------
    x, y : array [shape=(n,)]
        The two rankings' values.
    statistic : {"spearman", "kendall"}
        Which rank correlation.
    alternative : {"greater", "less", "two-sided"}
        Which tail.
    """
    from scipy.stats import kendalltau, spearmanr

    xa, ya = _exact_args(x, y, statistic, alternative)
    fn = spearmanr if statistic == "spearman" else kendalltau
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        obs = float(fn(xa, ya).statistic)
        if not math.isfinite(obs):
            return float("nan")
        vals = np.array([fn(xa, ya[list(p)]).statistic
                         for p in itertools.permutations(range(xa.size))])
    return _tail(vals, obs, alternative) / vals.size


def rank_agreement(
    x: Any,
    y: Any,
    x_replicates: Any = None,
    y_replicates: Any = None,
    *,
    statistic: str = "spearman",
    level: float = 0.95,
    alternative: str = "greater",
) -> dict[str, float]:
    """Rank agreement of two method rankings, its bootstrap interval and exact p-value.

    Parameters
    ----------
    x, y : array [shape=(n,)]
        Per method, e.g. ``-diagnostic`` (higher = judged better) and LDS.
    x_replicates, y_replicates : array [shape=(B, n)], optional
        The same quantities in each bootstrap replicate (row ``b`` of both from the same
        resample). Without them the interval is NaN.
    statistic : {"spearman", "kendall"}
        The rank correlation.
    level : float
        Confidence level of the percentile interval.
    alternative : {"greater", "less", "two-sided"}
        Tail of the exact p-value (:func:`exact_rank_pvalue`).

    Returns
    -------
    dict
        ``value, lo, hi, p_exact`` (NaN for more than :data:`MAX_EXACT_N` methods or an
        undefined statistic), ``n_methods`` and ``n_boot`` (replicates where it is defined).
    """
    check_choice("statistic", statistic, STATISTICS)
    fn = _ROW_STAT[statistic]
    xa, ya = (np.asarray(v, dtype=np.float64).ravel() for v in (x, y))
    value = float(fn(xa, ya)[0]) if xa.size >= 2 else float("nan")
    lo = hi = float("nan")
    n_boot = 0
    if x_replicates is not None and y_replicates is not None:
        reps = fn(x_replicates, y_replicates)
        n_boot = int(np.isfinite(reps).sum())
        lo_a, hi_a = percentile_interval(reps[:, None], level)
        lo, hi = float(lo_a[0]), float(hi_a[0])
    p = float("nan")
    if 2 <= xa.size <= MAX_EXACT_N and math.isfinite(value):
        p = exact_rank_pvalue(xa, ya, statistic=statistic, alternative=alternative)
    return {"value": value, "lo": lo, "hi": hi, "p_exact": p, "n_methods": int(xa.size),
            "n_boot": n_boot}
