r"""κ, the mean absolute inter-query correlation (Eq. kappa): the one formula of every path.

With :math:`C` the Pearson correlation matrix of the ``k`` non-constant columns of ``S``,
:math:`\kappa = \frac{1}{k(k-1)} \sum_{j \ne j'} |C_{jj'}| \in [0, 1]`.

Every mode of :func:`~aria_tda.diagnostics.diagnose` turns sums of the centred Gram into κ with
the same two functions:

- :func:`abs_corr_block` — :math:`|C|` of a block of the centred Gram (scatter matrix) given the
  column standard deviations, each entry capped at 1 (in place);
- :func:`kappa_from_sum` — κ from :math:`\sum_{j \ne j'} |C_{jj'}|` and ``k``, clipped to
  [0, 1].

``"exact"`` and the Dask pass use them on the whole Gram (:func:`abs_correlations`,
:func:`kappa_from_stats`); ``"exact-tiled"`` on one column panel at a time
(:mod:`aria_tda.diagnostics.tiled`); ``"approx"`` on the Gram of the sampled columns
(:func:`kappa_estimate`: the U-statistic :math:`\hat\kappa`, an unbiased estimate of κ, with a
jackknife standard error times the finite-population correction :math:`1 - n/N` and a
normal-approximation confidence interval); the in-memory reference
(:func:`~aria_tda.diagnostics.core.diagnose_reference`) on ``np.corrcoef``.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from aria_tda._checks import check_float, check_int
from aria_tda.errors import AriaWarning
from aria_tda.scores.blockstats import BlockStats

__all__ = [
    "KappaEstimate",
    "abs_corr_block",
    "abs_correlations",
    "kappa_estimate",
    "kappa_from_stats",
    "kappa_from_sum",
]


def abs_corr_block(centered: np.ndarray, sd_rows: np.ndarray, sd_cols: np.ndarray) -> np.ndarray:
    r""":math:`|C|` of a block of the centred Gram, each entry capped at 1, computed in place.

    Parameters
    ----------
    centered : numpy.ndarray [shape=(a, b)]
        A block of the scatter matrix :math:`\sum_i (x_i - \mu)(x_i - \mu)^\top` (float64);
        overwritten.
    sd_rows : numpy.ndarray [shape=(a,)]
        Root centred sums of squares of the block's row columns.
    sd_cols : numpy.ndarray [shape=(b,)]
        Root centred sums of squares of the block's columns.

    Returns
    -------
    numpy.ndarray [shape=(a, b)]
        ``centered``, now :math:`\min(|C|, 1)`.
    """
    centered /= sd_rows[:, None]
    centered /= sd_cols[None, :]
    np.abs(centered, out=centered)
    np.minimum(centered, 1.0, out=centered)
    return centered


def kappa_from_sum(abs_sum: float, k: int, *, clip: bool = True) -> float:
    r"""κ from :math:`\sum_{j \ne j'} |C_{jj'}|` over ``k`` columns: the mean over the pairs.

    Parameters
    ----------
    abs_sum : float
        :math:`\sum_{j \ne j'} |C_{jj'}|` (each ordered pair once).
    k : int
        Columns (at least 2).
    clip : bool
        Clip the mean to [0, 1] (rounding can leave it just outside).
    """
    mean = abs_sum / (k * (k - 1))
    return float(min(1.0, max(0.0, mean))) if clip else float(mean)


def abs_correlations(
    stats: BlockStats, keep: np.ndarray, *, zero_diagonal: bool = True
) -> np.ndarray:
    r""":math:`|C|` of the kept columns from Gram sums (each entry capped at 1).

    Parameters
    ----------
    stats : BlockStats
        Sums with the Gram (``gram=True``) of the columns.
    keep : numpy.ndarray [shape=(T,)] of bool
        Non-constant columns.
    zero_diagonal : bool
        Set the diagonal to 0.

    Returns
    -------
    numpy.ndarray [shape=(k, k)]
    """
    corr = stats.centered_gram()
    if not keep.all():
        corr = corr[np.ix_(keep, keep)]
    sd = np.sqrt(stats.centered_ss[keep])
    abs_corr_block(corr, sd, sd)
    if zero_diagonal:
        np.fill_diagonal(corr, 0.0)
    return corr


def kappa_from_stats(stats: BlockStats, keep: np.ndarray) -> float:
    """Exact κ of the kept columns from the sums of a Gram pass.

    Parameters
    ----------
    stats : BlockStats
        Sums with the Gram (``gram=True``) over all rows of ``S``.
    keep : numpy.ndarray [shape=(T,)] of bool
        Non-constant columns (at least 2).
    """
    corr = abs_correlations(stats, keep, zero_diagonal=False)
    return kappa_from_sum(float(corr.sum() - np.trace(corr)), int(keep.sum()))


@dataclass(frozen=True)
class KappaEstimate:
    """κ from sampled columns, with its standard error and confidence interval.

    Attributes
    ----------
    kappa : float
        The U-statistic (mean :math:`|C|` over sampled pairs); the exact κ when every
        column was sampled.
    se : float
        Jackknife standard error with the finite-population correction.
    ci : tuple of float
        ``(low, high)`` at ``level``, clipped to [0, 1].
    level : float
        Confidence level.
    n_sampled, n_population : int
        Sampled and total non-constant columns.
    """

    kappa: float
    se: float
    ci: tuple[float, float]
    level: float
    n_sampled: int
    n_population: int


def kappa_estimate(abs_corr: np.ndarray, n_population: int, level: float = 0.95) -> KappaEstimate:
    r"""The U-statistic κ̂ of sampled columns with a jackknife confidence interval.

    Parameters
    ----------
    abs_corr : numpy.ndarray [shape=(n, n)]
        :math:`|C|` among the ``n >= 3`` sampled columns (diagonal ignored).
    n_population : int
        ``N``, non-constant columns in all (``n <= N``).
    level : float
        Confidence level of the interval.

    Returns
    -------
    KappaEstimate
    """
    a = np.array(abs_corr, dtype=np.float64)
    n = a.shape[0]
    n_population = check_int("n_population", n_population, min_value=n)
    level = check_float("level", level, min_value=0.0, max_value=1.0)
    np.fill_diagonal(a, 0.0)
    total = float(a.sum())
    u = kappa_from_sum(total, n, clip=False)
    if n >= n_population or n < 3:
        se = 0.0 if n >= n_population else float("nan")
    else:
        loo = (total - 2.0 * a.sum(axis=1)) / ((n - 1) * (n - 2))
        var = (n - 1) / n * float(((loo - loo.mean()) ** 2).sum())
        se = math.sqrt(max(var, 0.0) * (1.0 - n / n_population))
    from scipy.stats import norm  # here: scipy.stats costs 0.4 s to import

    z = float(norm.ppf(0.5 + level / 2.0))
    lo, hi = (u - z * se, u + z * se) if math.isfinite(se) else (0.0, 1.0)
    return KappaEstimate(
        kappa=kappa_from_sum(total, n),
        se=se,
        ci=(float(max(0.0, lo)), float(min(1.0, hi))),
        level=level,
        n_sampled=n,
        n_population=n_population,
    )


def kappa_estimate_reference(
    abs_corr: np.ndarray, n_population: int, level: float = 0.95
) -> KappaEstimate:
    """Loop reference of :func:`kappa_estimate`: leave each column out and recompute the mean.

    Parameters
    ----------
    abs_corr : numpy.ndarray [shape=(n, n)]
        :math:`|C|` among the sampled columns.
    n_population : int
        Non-constant columns in all.
    level : float
        Confidence level.
    """
    a = np.array(abs_corr, dtype=np.float64)
    n = a.shape[0]

    def mean_offdiag(idx: list[int]) -> float:
        vals = [a[i, j] for i in idx for j in idx if i != j]
        return float(np.mean(vals))

    u = mean_offdiag(list(range(n)))
    if n >= n_population:
        se = 0.0
    else:
        loo = np.array([mean_offdiag([j for j in range(n) if j != i]) for i in range(n)])
        var = (n - 1) / n * float(np.sum((loo - loo.mean()) ** 2))
        se = math.sqrt(var * (1 - n / n_population))
    from scipy.stats import norm

    z = float(norm.ppf(0.5 + level / 2))
    return KappaEstimate(
        kappa=u,
        se=se,
        ci=(max(0.0, u - z * se), min(1.0, u + z * se)),
        level=level,
        n_sampled=n,
        n_population=n_population,
    )


def warn_constant(idx: np.ndarray, t: int) -> None:
    """Warn that the constant columns ``idx`` (of ``t``) are left out of κ."""
    if idx.size:
        first = ", ".join(str(int(i)) for i in idx[:5]) + (", ..." if idx.size > 5 else "")
        warnings.warn(
            f"{idx.size} of {t} score columns are constant (columns {first}); their "
            "correlation is undefined, so they are left out of kappa (and all-zero ones out of p)",
            AriaWarning,
            stacklevel=3,
        )


def nan_kappa(k: int, t: int, *, stacklevel: int = 4) -> float:
    """NaN, with the warning that only ``k < 2`` of ``t`` columns vary."""
    warnings.warn(
        f"only {k} of {t} score columns vary: kappa is undefined (NaN)",
        AriaWarning,
        stacklevel=stacklevel,
    )
    return float("nan")
