r"""The statistics of the attribution sanity checks, from score matrices alone (no model).

:mod:`aria_tda.attribution.sanity` runs the methods and explains both checks and why their
rules are what they are; this module turns its score matrices into the numbers and the flags:

- :func:`summarize_randomization` — per query, Spearman's :math:`\rho` between the method's
  scores with the trained and with the re-initialised checkpoints; the mean over queries and
  its percentile bootstrap interval over queries (:func:`bootstrap_mean`). **Flagged when the
  interval's lower end is** :math:`\ge` :data:`RANDOMIZATION_THRESHOLD` (0.5).
- :func:`summarize_norm_bias` — per query, Spearman's :math:`\rho` between its scores and a
  per-training-window term that does not depend on the query (the gradient norms); the median
  over queries and the share of queries with :math:`\rho \ge 0.5`. **Flagged when the median
  is** :math:`\ge` :data:`BIAS_THRESHOLD` (0.5).

Spearman's :math:`\rho` is :func:`aria_tda.paired.spearman_rows` (average ranks; its exact
twin runs ``scipy.stats.spearmanr`` per row). A query whose column (or the norm vector) is
constant has no correlation: NaN, left out of the summaries and counted in ``n_undefined``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from aria_tda._checks import check_float
from aria_tda._options import Options, option
from aria_tda.errors import DataError, expected
from aria_tda.paired.bootstrap import bootstrap_counts, percentile_interval
from aria_tda.paired.rank import spearman_rows

# bootstrap_mean_reference (the exact twin of bootstrap_mean) is importable but not exported.
__all__ = [
    "BIAS_RULE",
    "BIAS_THRESHOLD",
    "RANDOMIZATION_RULE",
    "RANDOMIZATION_THRESHOLD",
    "BiasResult",
    "RandomizationResult",
    "SanityArgs",
    "bootstrap_mean",
    "check_matrix",
    "summarize_norm_bias",
    "summarize_randomization",
]

#: Randomisation flag: the lower end of the mean per-query Spearman's interval is at least this.
RANDOMIZATION_THRESHOLD = 0.5
#: Bias flag: the median per-query Spearman with the gradient norms is at least this.
BIAS_THRESHOLD = 0.5

#: The randomisation rule in words (recorded with every result).
RANDOMIZATION_RULE = (
    f"flagged when the lower end of the bootstrap interval of the mean per-query Spearman "
    f"(trained vs re-initialised model) is >= {RANDOMIZATION_THRESHOLD}"
)
#: The bias rule in words (recorded with every result).
BIAS_RULE = (
    f"flagged when the median per-query Spearman between the scores and the training "
    f"windows' gradient norms is >= {BIAS_THRESHOLD}"
)


def _check_level(name: str, value: Any) -> float:
    return check_float(name, value, min_value=0.0, max_value=1.0, min_inclusive=False,
                       max_inclusive=False)


@dataclass(frozen=True)
class SanityArgs(Options):
    """Arguments of the sanity checks (recorded with their results).

    Attributes
    ----------
    seed : int, >= 0
        Seed of the re-initialisation (checkpoint ``i`` of a list: ``seed + i``; ``final``:
        ``seed``) and of the bootstrap over queries (default 0).
    n_boot : int, >= 1
        Bootstrap replicates of the randomisation test's interval (default 1000).
    level : float, in (0, 1)
        Confidence level of that interval (default 0.95).
    """

    seed: int = option(0, min_value=0,
                       help="seed of the re-initialisation (checkpoint i of a list: seed + i) "
                            "and of the bootstrap over queries")
    n_boot: int = option(1000, min_value=1, help="bootstrap replicates over queries")
    level: float = option(0.95, check=_check_level,
                          help="confidence level of the randomisation interval")


# ------------------------------------------------------------------------------------------
# results and the pure summaries
# ------------------------------------------------------------------------------------------


def _num(value: float) -> float | None:
    """A float for JSON: NaN becomes None."""
    return None if not math.isfinite(value) else float(value)


@dataclass(frozen=True)
class RandomizationResult:
    """The model-randomisation test of one method.

    Attributes
    ----------
    method : str
        The method's name.
    per_query : np.ndarray [shape=(n_test,)], float64
        Spearman's ρ of each query's scores, trained vs re-initialised; NaN where undefined.
    mean, lo, hi : float
        Mean over the defined queries and its percentile bootstrap interval.
    level : float
        Confidence level of the interval.
    n_boot, seed : int
        Bootstrap replicates; seed of the re-initialisation and the bootstrap.
    n_undefined : int
        Queries with NaN ρ.
    flagged : bool
        ``lo >= RANDOMIZATION_THRESHOLD`` (:mod:`aria_tda.attribution.sanity` says why).
    """

    method: str
    per_query: np.ndarray
    mean: float
    lo: float
    hi: float
    level: float
    n_boot: int
    seed: int
    n_undefined: int
    flagged: bool

    def to_dict(self) -> dict[str, Any]:
        """The summary as a JSON-able dict (NaN as ``None``; no per-query values)."""
        return {
            "statistic": "mean per-query Spearman, trained vs re-initialised model",
            "mean": _num(self.mean), "lo": _num(self.lo), "hi": _num(self.hi),
            "level": self.level, "n_boot": self.n_boot, "seed": self.seed,
            "n_queries": int(self.per_query.size), "n_undefined": self.n_undefined,
            "threshold": RANDOMIZATION_THRESHOLD, "rule": RANDOMIZATION_RULE,
            "flagged": self.flagged,
        }


@dataclass(frozen=True)
class BiasResult:
    """The gradient-norm bias of one method.

    Attributes
    ----------
    method : str
        The method's name.
    per_query : np.ndarray [shape=(n_test,)], float64
        Spearman's ρ of each query's scores with the training gradient norms; NaN where
        undefined.
    median : float
        Median over the defined queries.
    share_above : float
        Share of the defined queries with ``ρ >= BIAS_THRESHOLD``.
    median_magnitude : float
        Median over queries of Spearman's ρ between the *absolute* scores and the norms:
        whether the norm sets how far from zero a window scores, at either end of the ranking
        (a high-norm window can head the list of opponents instead). Reported, not flagged.
    n_undefined : int
        Queries with NaN ρ.
    checkpoint : str
        Where the norms were taken (``"final"``, ``"trajectory[-1]"``, ``"ensemble[0]"``,
        ``"given"``).
    loss : str
        The training-window loss whose gradient norms were taken.
    flagged : bool
        ``median >= BIAS_THRESHOLD`` (:mod:`aria_tda.attribution.sanity` says why).
    """

    method: str
    per_query: np.ndarray
    median: float
    share_above: float
    median_magnitude: float
    n_undefined: int
    checkpoint: str
    loss: str
    flagged: bool

    def to_dict(self) -> dict[str, Any]:
        """The summary as a JSON-able dict (NaN as ``None``; no per-query values)."""
        return {
            "statistic": "per-query Spearman between scores and training gradient norms",
            "median": _num(self.median), "share_above": _num(self.share_above),
            "median_magnitude": _num(self.median_magnitude),
            "n_queries": int(self.per_query.size), "n_undefined": self.n_undefined,
            "checkpoint": self.checkpoint, "loss": self.loss,
            "threshold": BIAS_THRESHOLD, "rule": BIAS_RULE, "flagged": self.flagged,
        }


def _check_values(values: Any) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 1:
        raise DataError(expected("values", "a 1-D array (one value per query)", v.shape))
    if np.isinf(v).any():
        raise DataError(expected("values", "finite values or NaN", "inf"))
    return v


def bootstrap_mean(
    values: Any, *, n_boot: int = 1000, level: float = 0.95, seed: int = 0
) -> tuple[float, float, float]:
    r"""Mean of the finite ``values`` and its percentile bootstrap interval.

    Replicate ``b`` draws the finite values with replacement
    (:func:`~aria_tda.paired.bootstrap_counts`, seed ``seed``); its statistic is the
    count-weighted mean :math:`\sum_i c_{bi} v_i / n`; the interval is the
    :math:`(1 \pm level)/2` quantiles of the replicates.

    Parameters
    ----------
    values : array [shape=(n,)]
        One value per query; NaN values are left out.
    n_boot : int, >= 1
        Replicates.
    level : float, in (0, 1)
        Confidence level.
    seed : int, >= 0
        Seed of the resampling.

    Returns
    -------
    (mean, lo, hi) : tuple of float
        All NaN when no value is finite.
    """
    v = _check_values(values)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return (math.nan, math.nan, math.nan)
    counts = bootstrap_counts(v.size, n_boot, seed).astype(np.float64)
    reps = counts @ v / v.size
    lo, hi = percentile_interval(reps, level)
    return (float(v.mean()), float(lo), float(hi))


def bootstrap_mean_reference(
    values: Any, *, n_boot: int = 1000, level: float = 0.95, seed: int = 0
) -> tuple[float, float, float]:
    """Exact reference of :func:`bootstrap_mean`: each replicate's explicit resample.

    Parameters
    ----------
    values : array [shape=(n,)]
        One value per query; NaN values are left out.
    n_boot : int, >= 1
        Replicates.
    level : float, in (0, 1)
        Confidence level.
    seed : int, >= 0
        Seed of the resampling.
    """
    v = _check_values(values)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return (math.nan, math.nan, math.nan)
    counts = bootstrap_counts(v.size, n_boot, seed)
    reps = np.array([np.repeat(v, row).mean() for row in counts])
    alpha = (1.0 - _check_level("level", level)) / 2.0
    return (float(np.mean(v)), float(np.quantile(reps, alpha)),
            float(np.quantile(reps, 1.0 - alpha)))


def check_matrix(name: str, scores: Any, shape: tuple[int, int] | None = None) -> np.ndarray:
    """``scores`` as a finite float64 ``(n_train, n_test)`` matrix with at least 3 rows.

    Parameters
    ----------
    name : str
        How to name ``scores`` in an error message.
    scores : array [shape=(n_train, n_test)]
        The matrix.
    shape : (int, int), optional
        The shape it must have.
    """
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 2:
        raise DataError(expected(name, "a 2-D (n_train, n_test) matrix", s.shape))
    if shape is not None and s.shape != shape:
        raise DataError(expected(name, f"shape (n_train, n_test) = {shape}", s.shape))
    if s.shape[0] < 3:
        raise DataError(expected(name, "at least 3 training rows (a rank correlation)",
                                 s.shape[0]))
    if not np.isfinite(s).all():
        raise DataError(expected(name, "finite values", f"{int((~np.isfinite(s)).sum())} "
                                 "non-finite"))
    return s


def summarize_randomization(
    scores: Any,
    randomized: Any,
    *,
    method: str = "",
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> RandomizationResult:
    r"""The randomisation test from the two score matrices (no model needed).

    :math:`\rho_q` = Spearman of ``scores[:, q]`` with ``randomized[:, q]``
    (:func:`aria_tda.paired.spearman_rows`), its mean over queries with
    :func:`bootstrap_mean`; flagged when the interval's lower end is
    :math:`\ge` :data:`RANDOMIZATION_THRESHOLD` (:mod:`aria_tda.attribution.sanity` says why).

    Parameters
    ----------
    scores : array [shape=(n_train, n_test)]
        The method's scores with the trained checkpoints.
    randomized : array [shape=(n_train, n_test)]
        Its scores with the re-initialised checkpoints.
    method : str
        The method's name (recorded).
    n_boot : int, >= 1
        Bootstrap replicates over queries.
    level : float, in (0, 1)
        Confidence level.
    seed : int, >= 0
        Seed of the bootstrap (recorded as the randomisation seed too).

    Returns
    -------
    RandomizationResult
    """
    s = check_matrix("scores", scores)
    r = check_matrix("randomized", randomized, s.shape)
    args = SanityArgs(seed=seed, n_boot=n_boot, level=level)
    per_query = spearman_rows(s.T, r.T)
    mean, lo, hi = bootstrap_mean(per_query, n_boot=args.n_boot, level=args.level,
                                  seed=args.seed)
    return RandomizationResult(
        method=str(method), per_query=per_query, mean=mean, lo=lo, hi=hi, level=args.level,
        n_boot=args.n_boot, seed=args.seed, n_undefined=int(np.isnan(per_query).sum()),
        flagged=bool(lo >= RANDOMIZATION_THRESHOLD),
    )


def summarize_norm_bias(
    scores: Any,
    norms: Any,
    *,
    method: str = "",
    checkpoint: str = "given",
    loss: str = "",
) -> BiasResult:
    r"""The gradient-norm bias from a score matrix and the training gradient norms.

    :math:`\rho_q` = Spearman of ``scores[:, q]`` with ``norms``
    (:func:`aria_tda.paired.spearman_rows`); flagged when the median over queries is
    :math:`\ge` :data:`BIAS_THRESHOLD` (:mod:`aria_tda.attribution.sanity` says why).

    Parameters
    ----------
    scores : array [shape=(n_train, n_test)]
        The method's scores.
    norms : array [shape=(n_train,)]
        A per-training-window term that does not depend on the query (the gradient norms,
        :func:`~aria_tda.attribution.sanity.training_gradient_norms`); finite, non-negative.
    method : str
        The method's name (recorded).
    checkpoint : str
        Where the norms were taken (recorded).
    loss : str
        The loss whose gradients were taken (recorded).

    Returns
    -------
    BiasResult
    """
    s = check_matrix("scores", scores)
    g = np.asarray(norms, dtype=np.float64)
    if g.shape != (s.shape[0],):
        raise DataError(expected("norms", f"shape (n_train,) = ({s.shape[0]},)", g.shape))
    if not np.isfinite(g).all() or (g < 0).any():
        raise DataError(expected("norms", "finite, non-negative values", "others"))
    norm_rows = np.broadcast_to(g, (s.shape[1], s.shape[0]))
    per_query = spearman_rows(s.T, norm_rows)
    ok = per_query[np.isfinite(per_query)]
    median = float(np.median(ok)) if ok.size else math.nan
    share = float((ok >= BIAS_THRESHOLD).mean()) if ok.size else math.nan
    magnitude = spearman_rows(np.abs(s.T), norm_rows)
    magnitude = magnitude[np.isfinite(magnitude)]
    return BiasResult(
        method=str(method), per_query=per_query, median=median, share_above=share,
        median_magnitude=float(np.median(magnitude)) if magnitude.size else math.nan,
        n_undefined=int(per_query.size - ok.size), checkpoint=str(checkpoint), loss=str(loss),
        flagged=bool(median >= BIAS_THRESHOLD),
    )
