r"""Paired comparisons of attribution methods: differences and rank agreement that say how sure.

Two methods scored on the *same* queries are compared pairwise: every bootstrap replicate
resamples one set of query indices and applies it to both, so whatever the queries share
(hard queries, easy queries) cancels in the difference. The same replicate also drives the
rank agreement between a diagnostic and LDS across methods, so the agreement's interval carries
the uncertainty of both rankings at once.

Pieces (pure functions; the callers hold the data):

- :func:`bootstrap_counts` — ``(B, n)`` multinomial resample counts, one row per replicate
  (counts, not indices: a weighted mean over the counts *is* the mean over the resample). One
  draw is shared by every quantity compared on the same units.
- :func:`percentile_interval`, :func:`paired_differences` — percentile intervals of
  ``value_a - value_b`` from per-replicate values of each method; a difference is
  ``separated`` only where its interval excludes 0.
- :func:`paired_mean_differences` — the same for per-query means (e.g. :math:`\bar z` of one
  channel, per query ``z`` of two settings): the difference is taken over the queries both
  define.
- :func:`diagnostics_bootstrap` — the reliability diagnostics (:math:`r_1, r_{2:5}, p,
  \kappa`, paper §3.2) of ``S`` with its *query columns* resampled, from one Gram pass:
  :math:`r_i` are the eigenvalues of :math:`D^{1/2} G D^{1/2}` over
  :math:`\sum_j c_j G_{jj}` (``D`` = the counts: the Gram of the resampled columns has the
  same non-zero spectrum), ``p`` is the count-weighted mean of the per-column ratios, and
  :math:`\kappa` averages :math:`|C_{jj'}|` over pairs of resampled columns that come from
  *different* queries (a query drawn twice is not correlated with itself).
- :func:`spearman_rows`, :func:`kendall_rows` — rank correlations (average ranks; Kendall's
  :math:`\tau_b`) of many short vectors at once (one per replicate).
- :func:`exact_rank_pvalue` — the exact permutation p-value of a rank correlation over ``n``
  methods: the statistic of every one of the :math:`n!` orderings of one side (at most
  :data:`MAX_EXACT_N` methods). With ``n = 4`` the smallest possible p is
  :math:`1/24 \approx 0.042`; with ``n = 6`` it is :math:`1/720`.
- :func:`rank_agreement` — point rank correlation, its percentile interval from replicates
  and its exact p-value, in one row.

Each kernel has an exact ``*_reference`` twin (explicit resampling, ``scipy.stats`` per row).
"""

from __future__ import annotations

from aria_tda.paired.bootstrap import (
    bootstrap_counts,
    paired_differences,
    paired_mean_differences,
    percentile_interval,
)
from aria_tda.paired.diagnostics import diagnostics_bootstrap
from aria_tda.paired.rank import (
    MAX_EXACT_N,
    exact_rank_pvalue,
    kendall_rows,
    rank_agreement,
    spearman_rows,
)
from aria_tda.paired.tables import zbar_paired_table

__all__ = [
    "MAX_EXACT_N",
    "bootstrap_counts",
    "diagnostics_bootstrap",
    "exact_rank_pvalue",
    "kendall_rows",
    "paired_differences",
    "paired_mean_differences",
    "percentile_interval",
    "rank_agreement",
    "spearman_rows",
    "zbar_paired_table",
]
