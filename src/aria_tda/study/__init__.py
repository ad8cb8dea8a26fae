r"""The study runner behind ``aria-tda run STUDY.toml``: every analysis of the paper, for every
setting.

For each setting (one segment-level score matrix :math:`S^{\mathrm{seg}}`) the runner computes

1. the reliability diagnostics :math:`\kappa, r_1, r_{2:5}, p` (one streaming pass) and the
   collapse verdict (:mod:`aria_tda.verdict`);
2. :math:`S^{\mathrm{track}}` — per-query normalisation and the mean over each track's
   segments (Eq. track-agg) — and the same on the rank-1 residual
   :math:`S - \sigma_1 u_1 v_1^\top` (§4.4);
3. within-group homogeneity for every ``K`` (one pass, nested groups), original and residual,
   against a null computed once per track pool and reused across settings;
4. the alignment of :math:`u_1` of :math:`S^{\mathrm{track}}` with each channel (Eq. alpha);
5. the confound breakdown of :math:`z_c` by each requested query metadata column;

then ranks the settings per channel, excluding collapsed ones, and writes a results folder
(:mod:`aria_tda.results`) and, unless disabled, the HTML report.

Layout
------
- :mod:`aria_tda.study.runner` — :func:`run_study` (inputs, settings, publishing, report);
- :mod:`aria_tda.study.inputs` — checks before any work, queries file, track ↔ feature matching;
- :mod:`aria_tda.study.setting` — one setting's tables, computed top to bottom;
- :mod:`aria_tda.study.stage_read` — one read of a setting's scores: diagnostics, top-K and
  both ``S_track`` (:mod:`aria_tda.study.stage_dask`: as Dask tasks);
- :mod:`aria_tda.study.pool` — the track pool, its prepared features and null (once per pool);
- :mod:`aria_tda.study.cache` — the cache steps: their key, slots, files, the protocol of
  computing into one and the checked read-back;
- :mod:`aria_tda.study.aspects` — one setting's distinctive reading (which aspect, or none);
- :mod:`aria_tda.study.tables` — the results folder's tables, published in one step.
- :mod:`aria_tda.study.cluster` — with a ``scheduler``: the uncached settings as parallel Dask
  tasks, each null computed once (results equal the single-machine run's).

The study file itself is :mod:`aria_tda.study.config`.

Resuming
--------
Per-setting work is cached under ``OUTPUT/.cache/<slot>/`` (one slot per setting name,
:func:`aria_tda.study.cache.slot_name`) with the parameters and input fingerprints (content
digests of the score matrix, segment map and feature store) it was computed from; a rerun with
the same inputs and parameters reuses it, anything else recomputes it, and a damaged entry is
recomputed with one warning. One run writes a results folder at a time (its writer lock), and
a killed run's leftovers are removed by the next (:mod:`aria_tda.study.runner`).
"""

from __future__ import annotations

from aria_tda.study.config import N_PAIRS
from aria_tda.study.runner import CACHE, run_study
from aria_tda.study.tables import RUN_TABLES

__all__ = ["CACHE", "N_PAIRS", "RUN_TABLES", "run_study"]
