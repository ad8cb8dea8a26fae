"""Means with bootstrap intervals: the learned and counterfactual effects of a plant.

Both start from per-item loss differences (nats/token), model trained without the marked set
minus the model trained with it: for the *learned* check on held-out items that begin a plant,
for the *counterfactual* effect on the plant's queries. Removing training items or swapping
the model moves every item's loss a little (and a query is always likelier under the model that
generated it), so each effect is the plant items' mean difference *minus* the control items'
under the same models — :func:`mean_difference_interval`, a two-sample percentile bootstrap
(each group resampled on its own). :func:`mean_interval` is the one-sample version. Both draw
:func:`aria_tda.paired.bootstrap_counts`, the resampling every ARIA interval uses; the
``*_reference`` functions are their loop twins.
"""

from __future__ import annotations

import numpy as np

from aria_tda._checks import check_int
from aria_tda.errors import DataError, expected
from aria_tda.paired.bootstrap import bootstrap_counts, percentile_interval

__all__ = ["mean_difference_interval", "mean_interval"]


def _values(x: object) -> np.ndarray:
    v = np.asarray(x, dtype=np.float64).ravel()
    if v.size == 0:
        raise DataError(expected("values", "at least one per-item value", "none"))
    if not np.isfinite(v).all():
        raise DataError(expected("values", "finite per-item values",
                                 f"{int((~np.isfinite(v)).sum())} non-finite"))
    return v


def mean_interval(values: object, *, n_boot: int = 1000, level: float = 0.95,
                  seed: int = 0) -> tuple[float, float, float]:
    """Mean of ``values`` and its percentile bootstrap interval (items resampled).

    Parameters
    ----------
    values : array-like [shape=(n,)]
        One finite value per item (query, held-out window).
    n_boot : int
        Bootstrap replicates (0: the interval is NaN).
    level : float
        Confidence level.
    seed : int
        Seed of the resampling.

    Returns
    -------
    (mean, lo, hi) : tuple of float
    """
    v = _values(values)
    n_boot = check_int("n_boot", n_boot, min_value=0)
    counts = bootstrap_counts(v.size, n_boot, seed)
    reps = counts @ v / v.size
    lo, hi = percentile_interval(reps, level)
    return float(v.mean()), float(lo), float(hi)


def mean_interval_reference(values: object, *, n_boot: int = 1000, level: float = 0.95,
                            seed: int = 0) -> tuple[float, float, float]:
    """Loop twin of :func:`mean_interval` (same counts, one replicate at a time).

    Parameters
    ----------
    values : array-like [shape=(n,)]
    n_boot : int
    level : float
    seed : int
    """
    v = _values(values)
    counts = bootstrap_counts(v.size, n_boot, seed)
    reps = []
    for b in range(counts.shape[0]):
        total = 0.0
        for i in range(v.size):
            total += counts[b, i] * v[i]
        reps.append(total / v.size)
    if not reps:
        return float(v.mean()), float("nan"), float("nan")
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(np.asarray(reps), [alpha, 1.0 - alpha])
    return float(v.mean()), float(lo), float(hi)


def mean_difference_interval(values: object, control: object, *, n_boot: int = 1000,
                             level: float = 0.95, seed: int = 0) -> tuple[float, float, float]:
    """``mean(values) - mean(control)`` and its two-sample percentile bootstrap interval.

    Parameters
    ----------
    values : array-like [shape=(n,)]
        Per-item values of the plant's items.
    control : array-like [shape=(m,)]
        Per-item values of the control items (resampled on their own, seed ``seed + 1``).
    n_boot : int
        Bootstrap replicates (0: the interval is NaN).
    level : float
        Confidence level.
    seed : int
        Seed of the resampling.

    Returns
    -------
    (difference, lo, hi) : tuple of float
    """
    v, c = _values(values), _values(control)
    n_boot = check_int("n_boot", n_boot, min_value=0)
    reps = (bootstrap_counts(v.size, n_boot, seed) @ v / v.size
            - bootstrap_counts(c.size, n_boot, seed + 1) @ c / c.size)
    lo, hi = percentile_interval(reps, level)
    return float(v.mean() - c.mean()), float(lo), float(hi)


def mean_difference_interval_reference(values: object, control: object, *, n_boot: int = 1000,
                                       level: float = 0.95,
                                       seed: int = 0) -> tuple[float, float, float]:
    """Loop twin of :func:`mean_difference_interval`.

    Parameters
    ----------
    values, control : array-like
    n_boot : int
    level : float
    seed : int
    """
    v, c = _values(values), _values(control)
    cv, cc = bootstrap_counts(v.size, n_boot, seed), bootstrap_counts(c.size, n_boot, seed + 1)
    reps = []
    for b in range(n_boot):
        mv = sum(cv[b, i] * v[i] for i in range(v.size)) / v.size
        mc = sum(cc[b, i] * c[i] for i in range(c.size)) / c.size
        reps.append(mv - mc)
    if not reps:
        return float(v.mean() - c.mean()), float("nan"), float("nan")
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(np.asarray(reps), [alpha, 1.0 - alpha])
    return float(v.mean() - c.mean()), float(lo), float(hi)
