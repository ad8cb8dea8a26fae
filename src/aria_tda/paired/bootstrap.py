"""Paired bootstrap: shared resample counts, percentile intervals, method-vs-method differences.

See :mod:`aria_tda.paired` for how the pieces fit together.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from aria_tda._checks import check_float, check_int
from aria_tda.errors import DataError, expected

__all__ = ["bootstrap_counts", "paired_differences", "paired_mean_differences",
           "percentile_interval"]


def bootstrap_counts(n: int, n_boot: int, seed: int = 0) -> np.ndarray:
    """Multinomial bootstrap counts: row ``b`` says how often replicate ``b`` draws each unit.

    Parameters
    ----------
    n : int
        Units (queries, LDS subsets) resampled with replacement, ``n`` draws per replicate.
    n_boot : int
        Replicates ``B`` (0 gives an empty ``(0, n)`` array).
    seed : int
        Seed of the draw; the same ``(n, n_boot, seed)`` gives the same counts.

    Returns
    -------
    np.ndarray [shape=(n_boot, n)], int64
        Each row sums to ``n``.
    """
    n = check_int("n", n, min_value=1)
    n_boot = check_int("n_boot", n_boot, min_value=0)
    rng = np.random.default_rng(check_int("seed", seed, min_value=0))
    if n_boot == 0:
        return np.zeros((0, n), dtype=np.int64)
    return rng.multinomial(n, np.full(n, 1.0 / n), size=n_boot).astype(np.int64)


def _level(level: float) -> float:
    return check_float("level", level, min_value=0, max_value=1, min_inclusive=False,
                       max_inclusive=False)


def percentile_interval(replicates: Any, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap interval along axis 0, NaN replicates left out.

    Parameters
    ----------
    replicates : array [shape=(B, ...)]
        One statistic per replicate (NaN where a replicate leaves it undefined).
    level : float
        Confidence level (0.95: the 2.5 % and 97.5 % quantiles).

    Returns
    -------
    (lo, hi) : tuple of np.ndarray [shape=(...)]
        NaN where no replicate is finite (or ``B`` is 0).
    """
    r = np.asarray(replicates, dtype=np.float64)
    alpha = (1.0 - _level(level)) / 2.0
    if r.shape[0] == 0:
        nan = np.full(r.shape[1:], np.nan)
        return nan, nan.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        lo, hi = np.nanquantile(r, [alpha, 1.0 - alpha], axis=0)
    return np.asarray(lo), np.asarray(hi)


def _separated(lo: Any, hi: Any) -> np.ndarray:
    lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    return (lo > 0) | (hi < 0)


def _pairs(m: int, pairs: Sequence[tuple[int, int]] | None) -> list[tuple[int, int]]:
    if pairs is None:
        return list(itertools.combinations(range(m), 2))
    out = []
    for a, b in pairs:
        a = check_int("pairs[][0]", a, min_value=0, max_value=m - 1)
        b = check_int("pairs[][1]", b, min_value=0, max_value=m - 1)
        out.append((a, b))
    return out


def paired_differences(
    point: Any,
    replicates: Any,
    names: Sequence[str],
    *,
    pairs: Sequence[tuple[int, int]] | None = None,
    level: float = 0.95,
) -> list[dict[str, Any]]:
    """Method-vs-method differences with percentile intervals from shared replicates.

    Parameters
    ----------
    point : array [shape=(m,)]
        The statistic of each method on the full data (e.g. mean LDS).
    replicates : array [shape=(B, m)]
        The statistic of each method in each bootstrap replicate; column ``a`` and column ``b``
        of a row must come from the *same* resample (that is what makes the comparison paired).
    names : sequence of str
        Method (setting) names, ``m`` of them.
    pairs : sequence of (int, int), optional
        Index pairs ``(a, b)`` to compare (default: every ``a < b``).
    level : float
        Confidence level of the intervals.

    Returns
    -------
    list of dict
        Per pair: ``setting_a, setting_b, value_a, value_b, diff`` (``value_a - value_b``),
        ``diff_lo, diff_hi, separated`` (the interval excludes 0) and ``n_boot`` (finite
        replicates of the difference).
    """
    p = np.asarray(point, dtype=np.float64)
    r = np.asarray(replicates, dtype=np.float64)
    if p.ndim != 1 or len(names) != p.size:
        raise DataError(expected("point", f"a vector of {len(names)} values (one per name)",
                                 f"shape {p.shape}"))
    if r.ndim != 2 or r.shape[1] != p.size:
        raise DataError(expected("replicates", f"an array (B, {p.size})", f"shape {r.shape}"))
    rows = []
    for a, b in _pairs(p.size, pairs):
        d = r[:, a] - r[:, b]
        lo, hi = percentile_interval(d[:, None], level)
        rows.append({
            "setting_a": str(names[a]), "setting_b": str(names[b]),
            "value_a": float(p[a]), "value_b": float(p[b]), "diff": float(p[a] - p[b]),
            "diff_lo": float(lo[0]), "diff_hi": float(hi[0]),
            "separated": bool(_separated(lo[0], hi[0])), "n_boot": int(np.isfinite(d).sum()),
        })
    return rows


def _check_values_counts(values: Any, counts: Any) -> tuple[np.ndarray, np.ndarray]:
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 2 or v.shape[0] < 1:
        raise DataError(expected("values", "an array (n_queries, n_methods)", f"shape {v.shape}"))
    c = np.asarray(counts)
    if c.ndim != 2 or c.shape[1] != v.shape[0] or c.dtype.kind not in "iu":
        what = f"integer bootstrap counts of shape (B, {v.shape[0]})"
        raise DataError(expected("counts", what, f"{c.dtype} {c.shape}"))
    return v, c.astype(np.float64)


def paired_mean_differences(
    values: Any,
    counts: Any,
    *,
    pairs: Sequence[tuple[int, int]] | None = None,
    level: float = 0.95,
    block: int = 4096,
) -> dict[str, np.ndarray]:
    """Paired differences of per-query means, over the queries both methods define.

    For the pair ``(a, b)`` let ``Q`` be the queries where both values are finite; the
    difference is :math:`\\frac{1}{|Q|}\\sum_{q\\in Q} (v_a(q) - v_b(q))` and replicate ``r``
    weights query ``q`` by ``counts[r, q]`` — the same resample for both methods.

    Parameters
    ----------
    values : array [shape=(T, m)]
        Per query (rows) and method (columns), e.g. ``z_c(q)`` of one channel; NaN = undefined.
    counts : int array [shape=(B, T)]
        Bootstrap counts (:func:`bootstrap_counts`), shared by every pair.
    pairs : sequence of (int, int), optional
        Column pairs ``(a, b)`` (default: every ``a < b``).
    level : float
        Confidence level of the percentile intervals.
    block : int
        Pairs processed per matrix product (memory ``B x block``; results do not depend on it).

    Returns
    -------
    dict[str, np.ndarray]
        ``a, b`` (column indices), ``diff, diff_lo, diff_hi, separated, n_queries``, one entry
        per pair.
    """
    v, c = _check_values_counts(values, counts)
    block = check_int("block", block, min_value=1)
    pl = _pairs(v.shape[1], pairs)
    a = np.array([p[0] for p in pl], dtype=np.int64)
    b = np.array([p[1] for p in pl], dtype=np.int64)
    diff = np.full(len(pl), np.nan)
    lo, hi = diff.copy(), diff.copy()
    n_q = np.zeros(len(pl), dtype=np.int64)
    for s in range(0, len(pl), block):
        sa, sb = a[s:s + block], b[s:s + block]
        ok = np.isfinite(v[:, sa]) & np.isfinite(v[:, sb])
        d = np.where(ok, v[:, sa] - v[:, sb], 0.0)
        w = ok.astype(np.float64)
        n_q[s:s + block] = ok.sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            diff[s:s + block] = d.sum(axis=0) / w.sum(axis=0)
            reps = (c @ d) / (c @ w)
        lo[s:s + block], hi[s:s + block] = percentile_interval(reps, level)
    return {"a": a, "b": b, "diff": diff, "diff_lo": lo, "diff_hi": hi,
            "separated": _separated(lo, hi), "n_queries": n_q}


def paired_mean_differences_reference(
    values: Any,
    counts: Any,
    *,
    pairs: Sequence[tuple[int, int]] | None = None,
    level: float = 0.95,
    block: int = 4096,
) -> dict[str, np.ndarray]:
    """Exact reference of :func:`paired_mean_differences`: explicit resampled index lists.

    Parameters
    ----------
    values : array [shape=(T, m)]
        Per query and method; NaN = undefined.
    counts : int array [shape=(B, T)]
        Bootstrap counts.
    pairs : sequence of (int, int), optional
        Column pairs (default: every ``a < b``).
    level : float
        Confidence level.
    block : int
        Ignored.
    """
    v, c = _check_values_counts(values, counts)
    pl = _pairs(v.shape[1], pairs)
    idx = [np.repeat(np.arange(v.shape[0]), row.astype(np.int64)) for row in c]
    out: dict[str, list[Any]] = {k: [] for k in ("a", "b", "diff", "diff_lo", "diff_hi",
                                                 "separated", "n_queries")}
    for a, b in pl:
        d = v[:, a] - v[:, b]
        ok = np.isfinite(d)
        reps = []
        for ix in idx:
            sel = d[ix][ok[ix]]
            reps.append(sel.mean() if sel.size else np.nan)
        lo, hi = percentile_interval(np.array(reps)[:, None], level)
        out["a"].append(a)
        out["b"].append(b)
        out["diff"].append(d[ok].mean() if ok.any() else np.nan)
        out["diff_lo"].append(lo[0])
        out["diff_hi"].append(hi[0])
        out["separated"].append(bool(lo[0] > 0 or hi[0] < 0))
        out["n_queries"].append(int(ok.sum()))
    return {k: np.asarray(x) for k, x in out.items()}
