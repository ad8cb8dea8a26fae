"""Reference twins of :mod:`aria_tda.attribution`: the linear datamodeling score, and the
bootstrap mean of the sanity checks (:func:`~aria_tda.attribution.sanity_stats.bootstrap_mean`
against explicit resamples; their Spearman correlations are :mod:`aria_tda.paired`'s, whose
twin runs ``scipy.stats.spearmanr``).

:func:`~aria_tda.attribution.lds.lds` (ranks + one vectorised Pearson per query) against
:func:`~aria_tda.attribution.lds.lds_reference` (explicit subset sums + ``scipy.stats.spearmanr``
per query), with permutation invariance: reordering the subsets (rows of ``subsets`` and
``outputs`` together) and relabelling the training rows leave every per-query LDS unchanged.
"""

from __future__ import annotations

import numpy as np

from aria_tda.attribution.lds import lds, lds_bootstrap, lds_bootstrap_reference, lds_reference
from aria_tda.attribution.sanity_stats import bootstrap_mean, bootstrap_mean_reference
from twinlib import Twin


def _lds_inputs(rng: np.random.Generator):
    n, t, s = 30, 6, 12
    scores = rng.normal(size=(n, t))
    subsets = np.stack([np.sort(rng.choice(n, size=n // 2, replace=False)) for _ in range(s)])
    mask = np.zeros((s, n))
    np.put_along_axis(mask, subsets, 1.0, axis=1)
    outputs = mask @ scores + 0.5 * rng.normal(size=(s, t))
    return (scores, subsets, outputs), {}


def _permute_lds(rng: np.random.Generator, args, kwargs):
    """Reorder the subsets (rows of subsets and outputs) and relabel the training rows."""
    scores, subsets, outputs = args
    order = rng.permutation(subsets.shape[0])
    relabel = rng.permutation(scores.shape[0])  # new row of old training row i
    new_scores = np.empty_like(scores)
    new_scores[relabel] = scores
    new_subsets = np.sort(relabel[subsets[order]], axis=1)
    return (new_scores, new_subsets, outputs[order]), kwargs, lambda result: result


def _lds_boot_inputs(rng: np.random.Generator):
    (scores, subsets, outputs), _ = _lds_inputs(rng)
    from aria_tda.paired import bootstrap_counts

    seed = int(rng.integers(0, 1000))
    qc = bootstrap_counts(scores.shape[1], 10, seed)
    sc = bootstrap_counts(subsets.shape[0], 10, seed + 1)
    return (scores, subsets, outputs, qc, sc), {}


def _permute_lds_boot(rng: np.random.Generator, args, kwargs):
    """Relabel the queries (columns of scores and outputs with those of the query counts)."""
    scores, subsets, outputs, qc, sc = args
    order = rng.permutation(scores.shape[1])
    return (scores[:, order], subsets, outputs[:, order], qc[:, order], sc), kwargs, \
        lambda result: result


def _bootstrap_mean_inputs(rng: np.random.Generator):
    """Per-query values with a few undefined (NaN) ones, as the randomisation test has."""
    values = rng.normal(0.4, 0.3, size=int(rng.integers(5, 40)))
    values[rng.choice(values.size, size=2, replace=False)] = np.nan
    return (values,), {"n_boot": 200, "level": float(rng.uniform(0.8, 0.99)),
                       "seed": int(rng.integers(0, 1000))}


TWINS = [
    Twin(name="attribution.lds", fast=lds, reference=lds_reference, make=_lds_inputs,
         permute=_permute_lds),
    Twin(name="attribution.lds_bootstrap", fast=lds_bootstrap,
         reference=lds_bootstrap_reference, make=_lds_boot_inputs, chunk=("block", (1, 3)),
         permute=_permute_lds_boot),
    Twin(name="attribution.bootstrap_mean", fast=bootstrap_mean,
         reference=bootstrap_mean_reference, make=_bootstrap_mean_inputs),
]
