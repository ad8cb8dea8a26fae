r"""Approximate diagnostics in a few streaming passes: block Krylov for r_i, sampled κ.

The exact κ and r_i need the ``T x T`` Gram, :math:`O(M T^2)` work. :func:`sketch_passes`
needs a few passes of :math:`O(M T b)` each (``b`` about 20):

- **r_1..r_k** — randomised block Krylov on :math:`G = S^\top S`
  (:mod:`aria_tda.diagnostics.krylov`): each pass multiplies one block, :math:`S^\top (S V)`,
  in float64. The intervals are the
  deterministic Ritz bounds of :func:`aria_tda.diagnostics.krylov.ritz_bounds` with
  :math:`F = \lVert S \rVert_F^2` from the same passes. Passes stop when the r_1 interval is
  narrower than ``rtol`` (relative) and the first ``k`` Ritz residuals are below
  ``rtol`` :math:`\sigma_1^2`, or after ``max_passes``.
- **p, the constant columns, F** — exact: per-column sums and sums of squares are
  :math:`O(M T)` and come with the first pass.
- **κ** — the first pass also accumulates the Gram of ``n`` columns drawn uniformly without
  replacement (``seed``); :func:`aria_tda.diagnostics.kappa.abs_correlations` and
  :func:`~aria_tda.diagnostics.kappa.kappa_estimate` turn it into the U-statistic
  :math:`\hat\kappa` (the mean of :math:`|C_{jj'}|` over the sampled pairs, an unbiased
  estimate of κ) with a jackknife standard error and a confidence interval.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from aria_tda._checks import check_float, check_int
from aria_tda.diagnostics.krylov import RitzResult, block_krylov_eigs
from aria_tda.errors import DataError
from aria_tda.scores.blockstats import BlockStats
from aria_tda.scores.readers import as_source
from aria_tda.scores.source import ScoreSource
from aria_tda.scores.stats import blas_threads, block_stats, locate_nonfinite

__all__ = ["SketchResult", "sketch_passes"]


@dataclass(frozen=True, eq=False)
class SketchResult:
    """What the approximate passes leave behind.

    Attributes
    ----------
    stats : BlockStats
        Per-column sums and sums of squares of every column (no Gram).
    sample : numpy.ndarray [shape=(n,)] of int
        The sampled columns (sorted).
    sample_stats : BlockStats
        Sums with the Gram of the sampled columns.
    ritz : RitzResult
        Ritz values, vectors and intervals of :math:`S^\\top S`.
    passes : int
        Streaming passes made.
    """

    stats: BlockStats
    sample: np.ndarray
    sample_stats: BlockStats
    ritz: RitzResult
    passes: int


class _Passes:
    """The product :math:`S^\\top (S V)`; the first call also gathers the moments and sample."""

    def __init__(
        self, src: ScoreSource, sample: np.ndarray, rows: int, compute_dtype: str | None,
        progress: bool | None,
    ) -> None:
        self.src, self.sample, self.rows = src, sample, rows
        self.compute_dtype, self.progress = compute_dtype, progress
        self.stats: BlockStats | None = None
        self.sample_stats: BlockStats | None = None
        self.passes = 0

    def trace(self) -> float:
        assert self.stats is not None
        return float(self.stats.sum_squares.sum())

    def __call__(self, v: np.ndarray) -> np.ndarray:
        first = self.passes == 0
        self.passes += 1
        t = self.src.n_cols
        out = np.zeros((t, v.shape[1]))
        x64 = np.empty((self.rows, t))
        for s, block in self.src.iter_chunks(
            self.rows, reuse_buffers=True, progress=self.progress,
            desc=f"approx pass {self.passes}",
        ):
            n = block.shape[0]
            if first:
                self._gather(s, block)
            x = x64[:n]
            np.copyto(x, block, casting="unsafe")
            out += x.T @ (x @ v)
        if not np.isfinite(out).all():
            raise DataError("scores: values too large: products overflow float64; rescale")
        return out

    def _gather(self, s: int, block: np.ndarray) -> None:
        if self.stats is None:
            with np.errstate(all="ignore"):
                c = block.mean(axis=0, dtype=np.float64)
            if not np.isfinite(c).all():
                raise locate_nonfinite(block, s)
            self.stats = BlockStats.zeros(c, gram=False)
            self.sample_stats = BlockStats.zeros(c[self.sample], gram=True)
        assert self.sample_stats is not None
        with np.errstate(all="ignore"):
            part = block_stats(block, shift=self.stats.shift, gram=False, compute_dtype="float64")
            sub = block_stats(
                np.ascontiguousarray(block[:, self.sample]),
                shift=self.sample_stats.shift,
                gram=True,
                compute_dtype=self.compute_dtype,
            )
        self.stats = self.stats.merge(part)
        self.sample_stats = self.sample_stats.merge(sub)
        if not (np.isfinite(self.stats.s1).all() and np.isfinite(self.stats.s2).all()):
            raise locate_nonfinite(block, s)


def sketch_passes(
    scores: Any,
    *,
    n_energy: int = 10,
    max_passes: int = 8,
    rtol: float = 1e-3,
    block: int | None = None,
    sample_columns: int = 1000,
    seed: int = 0,
    chunk_rows: int | None = None,
    compute_dtype: str | None = None,
    n_threads: int | None = None,
    progress: bool | None = None,
    callback: Callable[[RitzResult], Any] | None = None,
) -> SketchResult:
    r"""The approximate passes: block Krylov products, per-column sums, a column sample's Gram.

    Parameters
    ----------
    scores : array-like, ScoreSource or path
        ``(M, T)``.
    n_energy : int
        How many eigenvalues (energy ratios) to bound.
    max_passes : int
        Most streaming passes (each one block product).
    rtol : float
        Stop when the r_1 interval's relative width and the first ``n_energy`` Ritz residuals
        (relative to :math:`\sigma_1^2`) are below it.
    block : int, optional
        Krylov block size (default ``n_energy + 10``).
    sample_columns : int
        Columns sampled for κ (all columns when ``T`` is not larger).
    seed : int
        Seed of the Krylov start block and of the column sample.
    chunk_rows : int, optional
        Rows per streamed block.
    compute_dtype : {None, "float32", "float64"}
        Precision of the sampled columns' Gram products (the Krylov products are float64).
    n_threads : int, optional
        BLAS threads during the passes.
    progress : bool, optional
        Draw progress bars.
    callback : callable, optional
        Called with the Ritz result after each pass.

    Returns
    -------
    SketchResult
    """
    src = as_source(scores)
    m, t = src.shape
    n_energy = check_int("n_energy", n_energy, min_value=1)
    max_passes = check_int("max_passes", max_passes, min_value=1)
    rtol = check_float("rtol", rtol, min_value=0.0)
    sample_columns = check_int("sample_columns", sample_columns, min_value=3)
    rng = np.random.default_rng([seed, 1])
    sample = np.sort(rng.choice(t, size=min(t, sample_columns), replace=False))
    rows = src.chunk_rows(chunk_rows)
    if chunk_rows is None:  # float64 copy of a block: keep it near 64 MB
        rows = max(1, min(rows, (64 * 2**20) // (8 * t) + 1))
    op = _Passes(src, sample, rows, compute_dtype, progress)

    def stop(r: RitzResult) -> bool:
        if r.n_products < 2 or r.values[0] <= 0:
            return r.values[0] <= 0 and r.n_products >= 1
        width = (r.upper[0] - r.lower[0]) / r.values[0]
        k = int(np.count_nonzero(r.values))
        return bool(width <= rtol and np.all(r.residuals[:k] <= rtol * r.values[0]))

    with blas_threads(n_threads):
        ritz = block_krylov_eigs(
            op, t, n_energy, trace=op.trace, block=block, max_products=max_passes, stop=stop,
            seed=seed, callback=callback,
        )
    assert op.stats is not None and op.sample_stats is not None
    if op.stats.n != m:
        raise DataError(f"scores: expected {m} rows, read {op.stats.n}")
    return SketchResult(op.stats, sample, op.sample_stats, ritz, op.passes)
