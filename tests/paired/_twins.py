"""Reference twins of :mod:`aria_tda.paired`: paired bootstrap, rank correlations, exact p-values,
diagnostics under a query resample.

Permutation invariance: relabelling the queries (rows of ``values`` with the columns of
``counts``; columns of ``scores`` with those of ``counts``) leaves every replicate unchanged;
reordering the methods of a rank correlation (the same permutation of ``x`` and ``y``) too.
"""

from __future__ import annotations

import numpy as np

from aria_tda.paired import (
    bootstrap_counts,
    diagnostics_bootstrap,
    exact_rank_pvalue,
    kendall_rows,
    paired_mean_differences,
    spearman_rows,
)
from aria_tda.paired.bootstrap import paired_mean_differences_reference
from aria_tda.paired.diagnostics import diagnostics_bootstrap_reference
from aria_tda.paired.rank import (
    exact_rank_pvalue_reference,
    kendall_rows_reference,
    spearman_rows_reference,
)
from twinlib import Twin


def _values_inputs(rng: np.random.Generator):
    t, m = 30, 4
    values = rng.normal(size=(t, 1)) + rng.normal(size=(t, m)) + np.arange(m) * 0.2
    values[rng.integers(0, t, 3), rng.integers(0, m, 3)] = np.nan
    counts = bootstrap_counts(t, 40, int(rng.integers(0, 1000)))
    return (values, counts), {}


def _permute_queries(rng: np.random.Generator, args, kwargs):
    values, counts = args
    order = rng.permutation(values.shape[0])
    return (values[order], counts[:, order]), kwargs, lambda result: result


def _rank_inputs(rng: np.random.Generator):
    x = rng.normal(size=(25, 6))
    y = x + rng.normal(size=(25, 6))
    x[:5] = rng.integers(0, 3, size=(5, 6))  # ties
    y[3] = 1.0  # a constant row: undefined
    return (x, y), {}


def _permute_methods(rng: np.random.Generator, args, kwargs):
    x, y = args
    order = rng.permutation(x.shape[1])
    return (x[:, order], y[:, order]), kwargs, lambda result: result


def _exact_inputs(rng: np.random.Generator):
    n = int(rng.integers(3, 7))
    x = rng.normal(size=n)
    y = x + rng.normal(size=n)
    if n > 3:
        y[0] = y[1]  # a tie
    stat = ("spearman", "kendall")[int(rng.integers(0, 2))]
    alt = ("greater", "less", "two-sided")[int(rng.integers(0, 3))]
    return (x, y), {"statistic": stat, "alternative": alt}


def _permute_exact(rng: np.random.Generator, args, kwargs):
    x, y = args
    order = rng.permutation(x.size)
    return (x[order], y[order]), kwargs, lambda result: result


def _diag_inputs(rng: np.random.Generator):
    m, t = 40, 9
    scores = rng.normal(size=(m, 1)) * 0.5 + rng.normal(size=(m, t))
    scores[:, 2] = 3.0  # a constant column: out of kappa
    counts = bootstrap_counts(t, 12, int(rng.integers(0, 1000)))
    return (scores, counts), {}


def _permute_diag(rng: np.random.Generator, args, kwargs):
    scores, counts = args
    order = rng.permutation(scores.shape[1])
    return (scores[:, order], counts[:, order]), kwargs, lambda result: result


TWINS = [
    Twin(name="paired.paired_mean_differences", fast=paired_mean_differences,
         reference=paired_mean_differences_reference, make=_values_inputs,
         chunk=("block", (1, 2, 5)), permute=_permute_queries),
    Twin(name="paired.spearman_rows", fast=spearman_rows, reference=spearman_rows_reference,
         make=_rank_inputs, permute=_permute_methods),
    Twin(name="paired.kendall_rows", fast=kendall_rows, reference=kendall_rows_reference,
         make=_rank_inputs, permute=_permute_methods),
    Twin(name="paired.exact_rank_pvalue", fast=exact_rank_pvalue,
         reference=exact_rank_pvalue_reference, make=_exact_inputs, permute=_permute_exact),
    Twin(name="paired.diagnostics_bootstrap", fast=diagnostics_bootstrap,
         reference=diagnostics_bootstrap_reference, make=_diag_inputs,
         chunk=("chunk_rows", (7, 40)), permute=_permute_diag, rtol=1e-9, atol=1e-12),
]
