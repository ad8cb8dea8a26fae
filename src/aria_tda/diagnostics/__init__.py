r"""Score-matrix reliability diagnostics (paper §3.2): κ, r_i, p, from one streaming pass.

Conventions
-----------
``S`` is the segment-level score matrix ``(M, T)`` = ``(n_train_segments, n_queries)``, used
raw: the diagnostics are taken *before* per-query normalisation and track aggregation.

- **Mean absolute inter-query correlation** (Eq. kappa). With :math:`C` the Pearson
  correlation matrix of the columns of ``S``,
  :math:`\kappa = \frac{1}{T(T-1)} \sum_{j \ne j'} |C_{jj'}| \in [0, 1]`.
  A constant column has no correlation; such columns are left out (with an
  :class:`~aria_tda.errors.AriaWarning`) and counted in ``constant_columns``; ``T`` then counts
  the remaining columns. Fewer than two remaining columns make κ undefined (NaN, warned).
- **Singular value energy ratios** (Eq. ri). :math:`r_i = \sigma_i^2 / \lVert S \rVert_F^2`,
  reported for :math:`i = 1..10` (zeros beyond the rank); :math:`r_{2:5} = \sum_{i=2}^5 r_i`.
- **Mean concentration ratio** (Eq. p). :math:`p = \frac{1}{T} \sum_j M \mu_j^2 /
  \lVert S_{\cdot j} \rVert_2^2` with :math:`\mu_j` the column mean; all-zero columns (0/0)
  are left out of the average.
- The collapse reading of the paper needs :math:`r_1 \approx 1` *and* a near-constant
  :math:`v_1`; ``v1_constancy`` :math:`= |\sum_j v_{1j}| / \sqrt{T} \in [0, 1]` is 1 exactly
  when :math:`v_1 \propto (1, \dots, 1)`.
- **Top-K concentration** (:mod:`~aria_tda.diagnostics.concentration`): how much the queries'
  top-K sets coincide — the share of queries whose top-1 is the most frequent top-1 row, the
  mean pairwise overlap of top-K sets, the distinct-rows ratio of their union (quanda's top-K
  cardinality) — the paper's own definition of collapse ("retrieves nearly the same tracks for
  every query"), measured in the same pass (``topk=(1, 10)``) and read by
  :func:`aria_tda.verdict.classify`.

Every number is invariant to multiplying ``S`` by a positive factor (κ, p and the
constant-column rule also to scaling one column): the kernel scales each column by a power of
two before its float32 products (:func:`aria_tda.scores.blockstats.column_scale`), so tiny
influence scores (1e-20) neither underflow nor get counted constant. A column is constant when
its centred energy is rounding noise relative to its own energy.

How it is computed
------------------
One pass over row blocks accumulates the Gram :math:`S^\top S` (``T x T``, float64), column
sums and sums of squares (:func:`aria_tda.scores.stats.stream_stats`). The Pearson matrix is the
scatter matrix scaled by the column standard deviations; the eigenvalues of the Gram are the
:math:`\sigma_i^2`; its top eigenvector is :math:`v_1`. A second pass gives
:math:`u_1 = S v_1 / \sigma_1` when asked. Memory is bounded by the block size and
:math:`T^2`, never by ``M``. With a Dask ``client`` the same sums come from the distributed
kernels (:func:`aria_tda.diagnostics.distributed.stats_dask`,
:func:`~aria_tda.diagnostics.distributed.matvec_dask`) and are finished here.
:func:`diagnose_reference` is the small in-memory reference (``np.corrcoef`` and
``np.linalg.svd``, the same signature as :func:`diagnose`) the streaming path is tested against.

Options
-------
Every option of :func:`diagnose` is a field of :class:`DiagnoseArgs`
(:mod:`~aria_tda.diagnostics.args`), a frozen dataclass checked when built:
``diagnose(S, DiagnoseArgs(n_energy=6))`` and ``diagnose(S, n_energy=6)`` are the same call
(not both at once). A Dask ``client`` is passed beside them: a resource, not a setting.

Layout
------
:mod:`~aria_tda.diagnostics.args` (:class:`DiagnoseArgs`),
:mod:`~aria_tda.diagnostics.result` (the :class:`Diagnostics` record, the finish from Gram
sums), :mod:`~aria_tda.diagnostics.core` (:func:`diagnose` and
:func:`~aria_tda.diagnostics.core.run_passes`, the one dispatcher of the local, GPU, tiled,
approximate and Dask passes),
:mod:`~aria_tda.diagnostics.kappa` (κ: the one formula every mode uses, and its sampled
estimate), :mod:`~aria_tda.diagnostics.modes` (``exact-tiled`` and ``approx``),
:mod:`~aria_tda.diagnostics.tiled`, :mod:`~aria_tda.diagnostics.sketch`,
:mod:`~aria_tda.diagnostics.krylov` (their passes) and :mod:`~aria_tda.diagnostics.distributed`
(the Dask kernels), :mod:`~aria_tda.diagnostics.concentration` (the top-K concentration;
its kernel :mod:`~aria_tda.diagnostics.topk_update`).

Many queries
------------
The in-memory finish holds three ``T x T`` float64 arrays
(:func:`aria_tda.diagnostics.tiled.gram_bytes`). ``mode="auto"`` (the default) keeps that path
while they fit ``memory`` (default: half the physical memory, or half of what an address-space
limit leaves: :func:`aria_tda._memory.default_budget`) and otherwise switches to
``"exact-tiled"`` (:mod:`aria_tda.diagnostics.tiled`: the Gram in column panels within the
budget, spilled to disk, top eigenpairs by block Krylov on the spilled Gram, converged to
``1e-11`` of :math:`\sigma_1^2`). ``mode="approx"`` (:mod:`aria_tda.diagnostics.sketch`) needs a
few passes of :math:`O(M T b)`: r_i from randomised block Krylov with guaranteed intervals
(:func:`aria_tda.diagnostics.krylov.ritz_bounds`), κ from sampled columns with a confidence
interval, p exact. :attr:`Diagnostics.mode` and :attr:`Diagnostics.sources` say which method
produced each number; the intervals are in :attr:`Diagnostics.r1_interval` and the fields after
it. The row blocks of every mode fit the budget too, when one is given or a limit is set; an
allocation that still does not fit is a one-line :class:`~aria_tda.errors.MemoryLimitError`
naming the limit and a budget (or mode) that needs less.
"""


from __future__ import annotations

from aria_tda.diagnostics.args import DiagnoseArgs
from aria_tda.diagnostics.concentration import Concentration, topk_concentration
from aria_tda.diagnostics.core import diagnose, diagnose_reference  # noqa: F401 (the twin)
from aria_tda.diagnostics.modes import choose_mode
from aria_tda.diagnostics.result import (
    CONST_ULPS,
    MODES,
    ApproxOptions,
    Diagnostics,
    diagnostics_from_stats,
)

__all__ = ["CONST_ULPS", "MODES", "ApproxOptions", "Concentration", "DiagnoseArgs", "Diagnostics",
           "choose_mode", "diagnose", "diagnostics_from_stats", "topk_concentration"]
