r"""Ground-truth validation across methods: paired LDS differences and agreement with CIs.

The demos validate ARIA's reliability diagnostics against LDS: does a diagnostic order the
attribution methods as LDS does? Point values alone cannot say — two methods whose LDS differ
by less than its noise are not ordered at all. :func:`compare_methods` therefore draws one
bootstrap that every method shares:

- the **queries** are resampled (:func:`aria_tda.paired.bootstrap_counts`, seed ``seed``) and the
  **LDS subsets** too (seed ``seed + 1``): each replicate's LDS of every method is recomputed
  on the same resampled queries and subsets (:func:`aria_tda.attribution.lds.lds_bootstrap`), a
  paired two-way bootstrap;
- each method's diagnostics (:math:`r_1, r_{2:5}, p, \kappa`) are recomputed on the *same*
  resampled queries (:func:`aria_tda.paired.diagnostics_bootstrap`) — the diagnostics do not
  depend on the subsets. A query drawn twice duplicates a column of ``S``, which adds
  rank-one energy: :math:`r_1` and :math:`r_{2:5}` of a resample are biased upwards (on the
  quick demo by about 1-2 bootstrap SDs, by a different amount per method; :math:`p` and
  :math:`\kappa`, which leaves same-query pairs out, are not). Each method's diagnostic
  replicates are therefore recentred on its full-data value (minus the bootstrap bias
  estimate) before intervals and rankings are taken from them.

From the shared replicates: :meth:`MethodComparison.paired_rows` gives every method-vs-method
difference (of LDS and of each diagnostic) with its percentile interval, ``separated`` only
where it excludes 0 (the ``lds_paired`` table); :func:`agreement_table` gives the rank
agreement of each diagnostic with LDS (Spearman, Kendall) with a percentile interval from the
same replicates and the exact one-sided permutation p-value over the :math:`n!` orderings of
``n`` methods (:func:`aria_tda.paired.exact_rank_pvalue`; the smallest p-value ``n`` methods can
give is :math:`1/n!`: 0.042 for 4, 0.0014 for 6).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from aria_tda._checks import check_int

__all__ = ["DIAGNOSTICS", "PAPER_METHODS", "MethodComparison", "agreement_table",
           "compare_methods", "paired_contrast"]

#: The four methods of the paper's Table 1.
PAPER_METHODS: tuple[str, ...] = ("TRAK", "TracIn", "GradCos", "GradDot")
#: Reliability diagnostics compared with LDS (lower = more reliable).
DIAGNOSTICS: tuple[str, ...] = ("r1", "r2_5", "p", "kappa")


@dataclass(frozen=True)
class MethodComparison:
    """LDS and diagnostics of several methods with shared bootstrap replicates.

    Attributes
    ----------
    methods : tuple of str
        Method names, the column order of every array.
    lds : np.ndarray [shape=(m,)]
        Mean LDS per method.
    lds_replicates : np.ndarray [shape=(B, m)]
        Mean LDS per replicate (resampled queries and subsets).
    diagnostics : dict[str, np.ndarray]
        Diagnostic name -> ``(m,)`` values on the full data.
    diagnostic_replicates : dict[str, np.ndarray]
        Diagnostic name -> ``(B, m)`` values on the resampled queries, bias-corrected: each
        method's column is shifted by its bootstrap bias (see :attr:`diagnostic_bias`).
    diagnostic_bias : dict[str, np.ndarray]
        Diagnostic name -> ``(m,)`` bootstrap bias (mean replicate - full-data value) removed
        from the replicates.
    n_queries, n_subsets, n_boot, seed : int
    level : float
        Confidence level of the intervals.
    resampled : str
        What the LDS replicates resample (``"queries+subsets"`` or ``"queries"``).
    """

    methods: tuple[str, ...]
    lds: np.ndarray
    lds_replicates: np.ndarray
    diagnostics: dict[str, np.ndarray] = field(default_factory=dict)
    diagnostic_replicates: dict[str, np.ndarray] = field(default_factory=dict)
    diagnostic_bias: dict[str, np.ndarray] = field(default_factory=dict)
    n_queries: int = 0
    n_subsets: int = 0
    n_boot: int = 0
    seed: int = 0
    level: float = 0.95
    resampled: str = "queries+subsets"

    def index(self, methods: Sequence[str]) -> list[int]:
        """Column positions of ``methods``.

        Parameters
        ----------
        methods : sequence of str
            Names among :attr:`methods`.
        """
        return [self.methods.index(m) for m in methods]

    def paired_rows(self) -> list[dict[str, Any]]:
        """Every method-vs-method difference of LDS and of each diagnostic, with its interval.

        Returns
        -------
        list of dict
            Rows of the ``lds_paired`` table: ``quantity`` (``lds`` or a diagnostic),
            ``setting_a, setting_b, value_a, value_b, diff, diff_lo, diff_hi, separated,
            n_boot, n_queries, n_subsets, resampled, level``.
        """
        from aria_tda.paired import paired_differences

        rows: list[dict[str, Any]] = []
        blocks = [("lds", self.lds, self.lds_replicates, self.resampled)]
        blocks += [(d, self.diagnostics[d], self.diagnostic_replicates[d],
                    "queries (bias-corrected)") for d in self.diagnostics]
        for quantity, point, reps, resampled in blocks:
            for r in paired_differences(point, reps, self.methods, level=self.level):
                rows.append({"quantity": quantity, **r, "n_queries": self.n_queries,
                             "n_subsets": self.n_subsets if quantity == "lds" else 0,
                             "resampled": resampled, "level": self.level})
        return rows

    def versus_best(self) -> dict[str, dict[str, Any]]:
        """Each method's LDS difference to the best method (highest mean LDS), with interval.

        Returns
        -------
        dict[str, dict]
            Method -> ``best, diff, diff_lo, diff_hi, separated`` (``diff`` = method - best,
            so ``<= 0``; the best method maps to ``diff = 0`` and NaN bounds).
        """
        from aria_tda.paired import percentile_interval

        best = int(np.nanargmax(self.lds))
        out: dict[str, dict[str, Any]] = {}
        for i, m in enumerate(self.methods):
            if i == best:
                out[m] = {"best": self.methods[best], "diff": 0.0, "diff_lo": np.nan,
                          "diff_hi": np.nan, "separated": False}
                continue
            d = self.lds_replicates[:, i] - self.lds_replicates[:, best]
            lo, hi = percentile_interval(d[:, None], self.level)
            out[m] = {"best": self.methods[best], "diff": float(self.lds[i] - self.lds[best]),
                      "diff_lo": float(lo[0]), "diff_hi": float(hi[0]),
                      "separated": bool(lo[0] > 0 or hi[0] < 0)}
        return out


def compare_methods(
    scores: Mapping[str, Any],
    subsets: Any,
    outputs: Any,
    *,
    diagnostics: Mapping[str, Mapping[str, float]] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    resample_subsets: bool = True,
) -> MethodComparison:
    """LDS and diagnostics of every method under one shared bootstrap (see the module).

    Parameters
    ----------
    scores : Mapping[str, array or path]
        Method -> raw score matrix ``(n_train, T)``, all on the same queries and training rows.
    subsets : int array [shape=(S, m)]
        LDS subsets (training rows of each retrained model).
    outputs : array [shape=(S, T)]
        Query log-probabilities under each retrained model.
    diagnostics : Mapping[str, Mapping[str, float]], optional
        Method -> ``r1, r2_5, p, kappa`` on the full data (e.g. the study's reliability
        table); default: computed here (they are equal).
    n_boot : int
        Bootstrap replicates ``B`` (0: no intervals).
    seed : int
        Seed of the query resample (the subsets use ``seed + 1``).
    level : float
        Confidence level.
    resample_subsets : bool
        Resample the LDS subsets too (default); ``False`` resamples the queries only.

    Returns
    -------
    MethodComparison
    """
    from aria_tda.attribution.lds import lds, lds_bootstrap
    from aria_tda.paired import bootstrap_counts, diagnostics_bootstrap
    from aria_tda.scores import open_scores

    n_boot = check_int("n_boot", n_boot, min_value=0)
    seed = check_int("seed", seed, min_value=0)
    names = tuple(scores)
    y = np.asarray(outputs, dtype=np.float64)
    n_sub, t = y.shape
    qc = bootstrap_counts(t, n_boot, seed)
    sc = bootstrap_counts(n_sub, n_boot, seed + 1) if resample_subsets else None
    point = np.empty(len(names))
    reps = np.empty((n_boot, len(names)))
    diag_pt = {d: np.empty(len(names)) for d in DIAGNOSTICS}
    diag_reps = {d: np.empty((n_boot, len(names))) for d in DIAGNOSTICS}
    diag_bias = {d: np.zeros(len(names)) for d in DIAGNOSTICS}
    ones = np.ones((1, t), dtype=np.int64)
    for i, m in enumerate(names):
        s = open_scores(scores[m]).to_numpy() if not isinstance(scores[m], np.ndarray) \
            else scores[m]
        point[i] = lds(s, subsets, y).mean
        reps[:, i] = lds_bootstrap(s, subsets, y, qc, sc)
        boot = diagnostics_bootstrap(s, np.concatenate([ones, qc]))
        for d in DIAGNOSTICS:
            given = (diagnostics or {}).get(m, {}).get(d)
            diag_pt[d][i] = float(given) if given is not None else boot[d][0]
            # recentred on the full-data value: a query drawn twice is a duplicated column,
            # which adds rank-one energy, so r1 and r2:5 of a resample are biased upwards
            # (by about one to two bootstrap SDs on the quick demo, differently per method)
            bias = float(np.nanmean(boot[d][1:]) - boot[d][0]) if n_boot else 0.0
            diag_reps[d][:, i] = boot[d][1:] - bias
            diag_bias[d][i] = bias
    return MethodComparison(
        methods=names, lds=point, lds_replicates=reps, diagnostics=diag_pt,
        diagnostic_replicates=diag_reps, diagnostic_bias=diag_bias, n_queries=t,
        n_subsets=n_sub, n_boot=n_boot,
        seed=seed, level=level, resampled="queries+subsets" if resample_subsets else "queries",
    )


#: Diagnostics are compared at this many decimals: closer values are ties (rank by noise).
TIE_DECIMALS = 12


def agreement_table(
    lds: Mapping[str, float],
    diagnostics: Mapping[str, Mapping[str, float]],
    comparison: MethodComparison | None = None,
    *,
    names: Sequence[str] = DIAGNOSTICS,
) -> Any:
    r"""Rank agreement between each reliability diagnostic and LDS across methods.

    For diagnostic :math:`d` (lower = more reliable) and LDS (higher = better), ``spearman``
    and ``kendall`` are the rank correlations of :math:`-d` with LDS over the methods: +1
    means the diagnostic orders the methods exactly as LDS does, -1 the reverse. Rows are
    given for all methods and for the paper's four (TRAK, TracIn, GradCos, GradDot).

    Parameters
    ----------
    lds : dict[str, float]
        Mean LDS per method.
    diagnostics : dict[str, dict[str, float]]
        Per method, the diagnostics ``r1``, ``r2_5``, ``p``, ``kappa``.
    comparison : MethodComparison, optional
        Shared bootstrap replicates (:func:`compare_methods`): adds the percentile intervals
        ``spearman_lo, spearman_hi, kendall_lo, kendall_hi`` (NaN without it). The exact
        one-sided permutation p-values ``spearman_p_exact, kendall_p_exact`` (H1: the
        diagnostic orders the methods as LDS does) need no replicates.
    names : sequence of str
        The diagnostics to rank (default :data:`DIAGNOSTICS`; any key of ``diagnostics``,
        lower = more reliable, e.g. the verdict's ``topk_excess``). Intervals need
        ``comparison`` replicates of the diagnostic. Values are compared at
        :data:`TIE_DECIMALS` decimals: a diagnostic that is the same for every method to
        rounding (``p`` of column-centred matrices) gets NaN, not a ranking of noise.

    Returns
    -------
    pandas.DataFrame
        Columns ``diagnostic, spearman, spearman_lo, spearman_hi, spearman_p_exact, kendall,
        kendall_lo, kendall_hi, kendall_p_exact, n_methods, n_boot, methods, order``.
    """
    import pandas as pd

    from aria_tda.paired import rank_agreement

    rows = []
    groups = {"all": [m for m in lds if m in diagnostics]}
    paper = [m for m in PAPER_METHODS if m in lds and m in diagnostics]
    if len(paper) >= 3 and paper != groups["all"]:
        groups["paper"] = paper
    for label, methods in groups.items():
        y = np.array([lds[m] for m in methods], dtype=np.float64)
        idx = comparison.index(methods) if comparison is not None else None
        for d in names:
            # values that differ only in rounding are ties (every diagnostic lies in [-1, 1]):
            # a column-centred matrix has p = 0 to ~1e-33, whose order is noise
            x = -np.round(np.array([diagnostics[m][d] for m in methods], dtype=np.float64),
                          TIE_DECIMALS)
            row: dict[str, Any] = {"diagnostic": d}
            n_boot = 0
            for stat in ("spearman", "kendall"):
                xr = yr = None
                if (comparison is not None and idx is not None and comparison.n_boot
                        and d in comparison.diagnostic_replicates):
                    xr = -comparison.diagnostic_replicates[d][:, idx]
                    yr = comparison.lds_replicates[:, idx]
                if len(methods) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
                    a = {"value": np.nan, "lo": np.nan, "hi": np.nan, "p_exact": np.nan,
                         "n_boot": 0}
                else:
                    a = rank_agreement(x, y, xr, yr, statistic=stat,
                                       level=comparison.level if comparison else 0.95)
                row.update({stat: a["value"], f"{stat}_lo": a["lo"], f"{stat}_hi": a["hi"],
                            f"{stat}_p_exact": a["p_exact"]})
                n_boot = max(n_boot, int(a["n_boot"]))
            row.update({"n_methods": len(methods), "n_boot": n_boot, "methods": label,
                        "order": ", ".join(methods)})
            rows.append(row)
    return pd.DataFrame(rows)


def paired_contrast(paired: Any, a: str, b: str, quantity: str = "lds") -> dict[str, Any]:
    """``a − b`` with its interval, read from an ``lds_paired`` table in either pair order.

    Parameters
    ----------
    paired : pandas.DataFrame
        The ``lds_paired`` table (:meth:`MethodComparison.paired_rows`).
    a, b : str
        The two settings.
    quantity : str
        ``"lds"`` or a diagnostic.

    Returns
    -------
    dict
        ``a, b, diff, lo, hi, separated`` (``diff = a − b``; ``lo <= hi``).
    """
    from aria_tda.errors import DataError, expected

    rows = paired[(paired["quantity"] == quantity)
                  & (((paired.setting_a == a) & (paired.setting_b == b))
                     | ((paired.setting_a == b) & (paired.setting_b == a)))]
    if rows.empty:
        names = sorted(set(paired.setting_a) | set(paired.setting_b))
        raise DataError(expected("paired", f"a {quantity} row for {a} vs {b}",
                                 f"settings {names}"))
    row = rows.iloc[0]
    sign = 1.0 if row.setting_a == a else -1.0
    lo, hi = sorted((sign * float(row.diff_lo), sign * float(row.diff_hi)))
    return {"a": a, "b": b, "diff": sign * float(row["diff"]), "lo": lo, "hi": hi,
            "separated": bool(row.separated)}
