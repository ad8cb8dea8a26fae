r"""Within-group musical homogeneity of attributed groups (paper §3.4, Eqs. g_d, z_c, summary).

Pipeline for one score matrix ``S_track`` (N tracks × T queries) — the original or its rank-1
residual, the functions do not care which:

1. :func:`top_k_groups` — ``A_K(q)``, the ``K_max`` highest-scoring tracks per query, best
   first, streamed over row chunks (``S_track`` need not fit in memory). Ties go to the lower
   row index, so the result is deterministic. Because ``A_K(q)`` is the first ``K`` entries of
   that list, the groups of all ``K`` are nested.
2. :func:`null_distribution` — for every ``K`` and feature ``d``, ``B`` random groups of size
   ``K`` drawn uniformly without replacement from the pool give :math:`\mu_d^{null}(K)`,
   :math:`\sigma_d^{null}(K)`; the channel null :math:`\mu_c, \sigma_c` is
   :math:`\tilde g_c` of the same ``B`` groups. It depends only on the pool, ``K`` and the
   features, so it is computed once and reused across queries, methods and variants
   (:meth:`NullDistribution.save` / :meth:`NullDistribution.load`).
3. :func:`homogeneity` — per query, feature and ``K``

   .. math:: g_d(q) = \binom{K}{2}^{-1} \sum_{\{x, x'\} \subseteq A_K(q)} \mathrm{sim}_d(x, x'),
      \qquad
      z_c(q) = \frac{\tilde g_c(q) - \mu_c^{null}}{\sigma_c^{null}}, \quad
      \tilde g_c(q) = \frac{1}{|F_c|} \sum_{d \in F_c} \frac{g_d(q) - \mu_d^{null}}{\sigma_d^{null}}

   for every ``K`` of the sweep from **one** pass: with ``c_j = Σ_{i<j} sim(x_i, x_j)``
   over the ``K_max`` group in rank order, the pair sum of ``A_K(q)`` is the prefix sum
   ``Σ_{j<K} c_j``.
4. :func:`summarize` / :meth:`HomogeneityResult.summary` — per channel
   :math:`\bar z_c`, :math:`\mathrm{Pos}_c = \frac1T\sum 1[z_c > 0]`,
   :math:`\mathrm{Sig}_c = \frac1T\sum 1[z_c > 1.96]` (Eq. summary) with percentile bootstrap
   confidence intervals over queries.

Conventions
-----------
- ``prepared``: ``dict[channel, list[PreparedFeature]]`` (see :mod:`aria_tda.similarity`), every
  feature indexed by the **rows of S_track** (use :meth:`PreparedFeature.take` to reorder a
  store-wide feature to S_track's rows; the corpus scale is kept).
- The *pool* is the set of rows eligible for groups — by default the tracks that have every
  feature (:func:`feature_pool`). Groups and the null are drawn from the same pool.
- Features whose null SD is zero (the same ``g_d`` for every random group) carry no
  information at that ``K``: they are left out of their channel's mean, with a warning.
- Degenerate queries: a query whose score column is constant over the pool ranks nothing
  (its "top K" would be the first ``K`` rows by the tie rule). :func:`constant_queries` finds
  them; :func:`homogeneity` (``constant=``) and :func:`run_homogeneity` exclude them, with one
  warning: their :math:`z` is NaN, the summaries count only the other queries
  (``n_queries``) and record how many were left out (``n_constant_excluded``).
- Per-query evidence: for ``K_e`` (default 300 if swept, else the largest ``K``) the pairs
  of ``A_{K_e}(q)`` with the largest contribution to :math:`\tilde g_c` are returned, where a
  pair's contribution is :math:`\frac{1}{|F_c|}\sum_d (\mathrm{sim}_d(x,x') - \mu_d)/\sigma_d`
  (its mean over the group's pairs is exactly :math:`\tilde g_c(q)`).

Modules (lowest first): :mod:`~aria_tda.homogeneity.groups` (top-K groups, the pool),
:mod:`~aria_tda.homogeneity.sweep` (pair sums at every ``K`` from one pass, evidence pairs),
:mod:`~aria_tda.homogeneity.null` (:class:`NullDistribution`), :mod:`~aria_tda.homogeneity.core`
(:func:`homogeneity`, :class:`HomogeneityResult`, :func:`run_homogeneity`) and
:mod:`~aria_tda.homogeneity.summary` (:func:`summarize`). Every name is re-exported here.
Exact references (for tests): ``top_k_groups_reference``, ``null_distribution_reference``,
``homogeneity_reference`` and ``sweep.group_sums_reference``.
"""

from __future__ import annotations

from aria_tda.homogeneity.core import (
    HomogeneityResult,
    homogeneity,
    run_homogeneity,
)
from aria_tda.homogeneity.core import (
    homogeneity_reference as homogeneity_reference,
)
from aria_tda.homogeneity.distinctive import DistinctiveReading, distinctive_reading
from aria_tda.homogeneity.groups import constant_queries, feature_pool, top_k_groups
from aria_tda.homogeneity.groups import (
    constant_queries_reference as constant_queries_reference,
)
from aria_tda.homogeneity.groups import top_k_groups_reference as top_k_groups_reference
from aria_tda.homogeneity.null import NullDistribution, null_distribution
from aria_tda.homogeneity.null import null_distribution_reference as null_distribution_reference
from aria_tda.homogeneity.summary import SIG_THRESHOLD as SIG_THRESHOLD
from aria_tda.homogeneity.summary import summarize
from aria_tda.homogeneity.sweep import DEFAULT_KS

__all__ = [
    "DEFAULT_KS",
    "DistinctiveReading",
    "HomogeneityResult",
    "NullDistribution",
    "constant_queries",
    "distinctive_reading",
    "feature_pool",
    "homogeneity",
    "null_distribution",
    "run_homogeneity",
    "summarize",
    "top_k_groups",
]
