"""The many-query modes of :func:`~aria_tda.diagnostics.diagnose`: ``exact-tiled`` and ``approx``.

See :mod:`aria_tda.diagnostics` ("Many queries"): :func:`choose_mode` picks the mode from the
memory budget; the tiled and approximate passes live in :mod:`aria_tda.diagnostics.tiled` and
:mod:`aria_tda.diagnostics.sketch` (κ: :mod:`aria_tda.diagnostics.kappa`), and are finished here
into a :class:`Diagnostics`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from aria_tda._checks import check_choice
from aria_tda._memory import HEADROOM_SHARE, headroom, limit_error, size_text
from aria_tda.diagnostics.kappa import kappa_from_sum, nan_kappa, warn_constant
from aria_tda.diagnostics.result import CONST_ULPS, MODES, ApproxOptions, Diagnostics

if TYPE_CHECKING:
    from aria_tda.diagnostics.args import DiagnoseArgs
from aria_tda.errors import DataError, ParameterError
from aria_tda.scores.blockstats import BlockStats
from aria_tda.scores.source import ScoreSource, expected_text
from aria_tda.scores.stats import stream_matvec

__all__ = ["choose_mode"]


def _default_memory() -> int:
    """Half the physical memory (or the control group's limit), within the process's address
    space limit (:func:`aria_tda._memory.default_budget`)."""
    from aria_tda._memory import default_budget

    return default_budget()


def choose_mode(t: int, *, mode: str = "auto", memory: Any = None) -> tuple[str, str]:
    """The mode :func:`diagnose` uses for ``T`` columns, and why (one line).

    Parameters
    ----------
    t : int
        ``T``, the number of queries.
    mode : {"auto", "exact", "exact-tiled", "approx"}
        The mode asked for.
    memory : str or int, optional
        Memory budget (default: half the physical memory; under an address-space limit,
        ``ulimit -v``, half of what the process may still map).

    Returns
    -------
    mode : str
        ``"exact"``, ``"exact-tiled"`` or ``"approx"``.
    reason : str
    """
    from aria_tda.diagnostics.tiled import gram_bytes, parse_memory

    check_choice("mode", mode, MODES)
    budget = _default_memory() if memory is None else parse_memory(memory)
    need = gram_bytes(t)

    def size(x: float) -> str:
        return f"{x / 2**30:.1f} GB" if x >= 2**30 else f"{x / 2**20:.1f} MB"
    if mode == "approx":
        return mode, "approx: asked for (r_i with guaranteed intervals, kappa sampled, p exact)"
    if mode == "exact-tiled":
        return mode, f"exact-tiled: asked for (memory budget {size(budget)})"
    if mode == "exact":
        return mode, "exact: asked for (in-memory T x T Gram)"
    if need <= budget:
        return "exact", (
            f"exact: the in-memory Gram ({size(need)} for T={t:,}) fits the "
            f"{size(budget)} budget"
        )
    return "exact-tiled", (
        f"exact-tiled: the in-memory Gram needs {size(need)} for T={t:,}, over the "
        f"{size(budget)} budget; tiling it over column blocks (--approx for a few "
        "passes instead)"
    )


#: Bytes per basis column (of ``T`` float64) the block Krylov solver holds at its peak: the
#: basis, its products, the Ritz vectors, their products and residuals, the restart copies
#: and the Gram read's temporaries (measured 10.7 plus the read's, rounded up).
KRYLOV_BYTES_PER_COLUMN = 14 * 8


def krylov_plan(t: int, n_energy: int, memory: int) -> tuple[int, int]:
    """Block size and largest basis of the block Krylov solver within ``memory`` bytes.

    The default block (``max(n_energy + 6, 16)``) shrinks, down to ``n_energy + 1``, when
    the basis it needs (``n_energy + 2 * block`` columns) does not fit. (Smaller blocks
    were measured not to converge within the solver's 400 reads of the Gram.)

    Parameters
    ----------
    t : int
        Order of the Gram.
    n_energy : int
        Eigenvalues wanted.
    memory : int
        Bytes for the solver.

    Returns
    -------
    tuple of int
        ``(block, max_dim)``.

    Raises
    ------
    ParameterError
        When even the smallest block does not fit (the message gives the least budget).
    """
    fit = max(0, int(memory)) // (KRYLOV_BYTES_PER_COLUMN * t)
    blk = max(n_energy + 6, 16)
    while blk > n_energy + 1 and n_energy + 2 * blk > fit:
        blk -= 1
    if n_energy + 2 * blk > min(fit, t) and fit < t:
        need = KRYLOV_BYTES_PER_COLUMN * t * (n_energy + 2 * blk)
        raise ParameterError(expected_text(
            "memory", f"at least {need / 2**20:.2f} MB more for the eigenvalues of the "
            f"{t}-column Gram", f"{max(0, int(memory)) / 2**20:.2f} MB left for them"))
    return blk, max(n_energy + 2 * blk, min(12 * blk, fit))


def _tiled_budget(
    src: Any, n_energy: int, total: int, acc: Any, compute_dtype: str | None,
    chunk_rows: int | None,
) -> tuple[int, int | None, int, int] | None:
    """``(tiles, chunk_rows, block, max_dim)`` of the tiled pass within ``total`` bytes, or
    ``None`` when it does not fit (see :func:`diagnose_tiled`)."""
    from aria_tda.diagnostics.tiled import gram_read_bytes, pass_rows

    t = src.n_cols
    tiles, heaps = total, 0
    if acc is not None:
        heaps = acc.memory_bytes(1)
        rows = pass_rows(src, max(1, total - heaps), compute_dtype=compute_dtype,
                         chunk_rows=chunk_rows)
        # the top-K heaps and the kernel's per-block buckets share the budget with the tiles
        tiles = total - acc.memory_bytes(rows)
        if tiles <= 0:
            return None
        chunk_rows = rows
    fixed = 8 * 8 * t + min(2**20, tiles // 16)
    try:
        blk, dim = krylov_plan(t, n_energy, total - heaps - fixed - gram_read_bytes(t, tiles))
    except ParameterError:
        return None
    return tiles, chunk_rows, blk, dim


def diagnose_tiled(src: Any, args: DiagnoseArgs, acc: Any = None) -> Diagnostics:
    """:func:`diagnose` with the Gram in column panels spilled to disk (exact); ``acc`` (a
    :class:`~aria_tda.diagnostics.concentration.TopKAccumulator`) sees the first panel's pass.

    The budget is shared: the top-K heaps and their per-block buffers come off it first,
    the passes take the rest; the block Krylov solver then takes what the heaps, the
    per-column sums and the Gram read leave (:func:`krylov_plan`), checked before any pass.
    """
    from aria_tda.diagnostics.krylov import block_krylov_eigs
    from aria_tda.diagnostics.tiled import parse_memory, tiled_gram

    t, n_energy, memory, compute_dtype = src.n_cols, args.n_energy, args.memory, args.compute_dtype
    total = parse_memory(_default_memory() if memory is None else memory)
    if acc is not None:
        src = observe_first_pass(src, (acc,))
    plan = _tiled_budget(src, n_energy, total, acc, compute_dtype, args.chunk_rows)
    if plan is None:
        least = total
        while plan is None and least < 2**50:
            least = int(least * 1.05) + 1
            plan = _tiled_budget(src, n_energy, least, acc, compute_dtype, args.chunk_rows)
        if memory is None and headroom() is not None:  # the default budget, under a limit
            raise limit_error(int(least / HEADROOM_SHARE), what=(
                f"the exact-tiled pass of {t} columns (a budget of {size_text(least)} for the "
                "eigensolver's basis, the top-K heaps and one row block)"),
                advice="raise the limit or use mode='approx' (--approx)")
        raise ParameterError(expected_text(
            "memory", f"at least {least / 2**20:.2f} MB for the exact-tiled pass of {t} "
            "columns (the eigensolver's basis, the top-K heaps and one row block)",
            f"{total / 2**20:.2f} MB"))
    tiles, chunk_rows, blk, dim = plan
    with tiled_gram(
        src, memory=tiles, spill_dir=args.spill_dir, chunk_rows=chunk_rows,
        compute_dtype=compute_dtype, n_threads=args.n_threads, progress=args.progress,
        ulps=CONST_ULPS,
    ) as tg:
        st = tg.stats
        frob2 = float(st.sum_squares.sum())
        if not frob2 > 0.0:
            raise DataError(
                "scores: expected a matrix with non-zero entries, got an all-zero matrix"
            )
        const_idx = np.flatnonzero(tg.constant)
        warn_constant(const_idx, t)
        k = t - int(const_idx.size)
        kappa = kappa_from_sum(tg.abs_corr_sum, k) if k >= 2 else nan_kappa(k, t)
        ritz = block_krylov_eigs(
            tg.matmat, t, n_energy, trace=frob2, block=blk, max_products=400, seed=args.seed,
            max_dim=dim,
            stop=lambda r: bool(np.all(r.residuals <= 1e-11 * max(r.values[0], 1e-300))),
        )
        details = {"passes": tg.passes, "panels": len(tg.panels), "gram_reads": ritz.n_products,
                   "spill_bytes": tg.meta["spill_bytes"], "chunk_rows": tg.meta["chunk_rows"],
                   "max_residual": float(ritz.residuals.max() / max(ritz.values[0], 1e-300))}
    sources = {"kappa": "exact (tiled Gram)", "r": "exact (block Krylov on the tiled Gram)",
               "p": "exact", "v1": "exact (block Krylov on the tiled Gram)"}
    d = _finish(src, args.replace(chunk_rows=chunk_rows), st, kappa, ritz.values,
                ritz.vectors[:, 0], const_idx, mode="exact-tiled", sources=sources,
                details=details)
    return _with_concentration(d, src, acc)


def _with_concentration(d: Diagnostics, src: Any, acc: Any) -> Diagnostics:
    """``d`` with the concentration of ``acc`` (fed by the observed first pass of ``src``)."""
    if acc is None:
        return d
    if not getattr(src, "complete", False):
        raise DataError("scores: the top-K pass did not see every row")  # pragma: no cover
    return replace(d, concentration=acc.result())


def _finish(
    src: Any, args: DiagnoseArgs, st: BlockStats, kappa: float, values: np.ndarray,
    v1: np.ndarray, const_idx: np.ndarray, **extra: Any,
) -> Diagnostics:
    """A :class:`Diagnostics` from column sums, κ and the top eigenvalues (non-default modes);
    the second pass for :math:`u_1` in blocks of ``args.chunk_rows`` when ``args.with_u1``."""
    m, t = src.shape
    sumsq = st.sum_squares
    frob2 = float(sumsq.sum())
    total = max(frob2, float(values.sum()))
    ratios = np.clip(values / total, 0.0, 1.0)
    sigma1 = float(np.sqrt(values[0]))
    colsum = st.column_sums
    nz = sumsq > 0
    p = float(np.mean(np.clip(colsum[nz] ** 2 / (m * sumsq[nz]), 0.0, 1.0)))
    u1 = None
    if args.with_u1:
        u1 = stream_matvec(src, v1, chunk_rows=args.chunk_rows, progress=args.progress) / sigma1
    return Diagnostics(
        n_train=m, n_queries=t, kappa=kappa, r1=float(ratios[0]),
        r2_5=float(ratios[1:5].sum()), p=p, energy_ratios=tuple(float(r) for r in ratios),
        sigma1=sigma1, frobenius=math.sqrt(frob2), v1=v1,
        v1_constancy=float(min(1.0, abs(v1.sum()) / math.sqrt(t))),
        constant_columns=int(const_idx.size), constant_indices=const_idx, u1=u1, **extra,
    )


def diagnose_approx(src: Any, args: DiagnoseArgs, acc: Any = None) -> Diagnostics:
    """:func:`diagnose` in a few passes: block Krylov r_i, sampled κ, exact p; ``acc`` sees
    the first pass."""
    from aria_tda.diagnostics.kappa import abs_correlations, kappa_estimate
    from aria_tda.diagnostics.sketch import sketch_passes

    t, seed = src.n_cols, args.seed
    opts = args.approx if args.approx is not None else ApproxOptions()
    if acc is not None:
        src = observe_first_pass(src, (acc,))
    sk = sketch_passes(
        src, n_energy=args.n_energy, max_passes=opts.max_passes, rtol=opts.rtol,
        block=opts.block or None, sample_columns=opts.sample_columns, seed=seed,
        chunk_rows=args.chunk_rows, compute_dtype=args.compute_dtype, n_threads=args.n_threads,
        progress=args.progress,
    )
    st, ritz = sk.stats, sk.ritz
    frob2 = float(st.sum_squares.sum())
    if not frob2 > 0.0:
        raise DataError("scores: expected a matrix with non-zero entries, got an all-zero matrix")
    constant = st.constant_mask(ulps=CONST_ULPS)
    const_idx = np.flatnonzero(constant)
    warn_constant(const_idx, t)
    population = t - int(const_idx.size)
    keep = ~sk.sample_stats.constant_mask(ulps=CONST_ULPS) & ~constant[sk.sample]
    est = None
    if population < 2 or int(keep.sum()) < 2:
        kappa = nan_kappa(population, t)
    else:
        est = kappa_estimate(abs_correlations(sk.sample_stats, keep), population, opts.level)
        kappa = est.kappa
    total = max(frob2, float(ritz.values.sum()))
    lo, hi = ritz.lower / total, np.minimum(ritz.upper / total, 1.0)
    exact_kappa = est is not None and est.n_sampled >= population
    sources = {
        "kappa": "exact (all columns)" if exact_kappa else (
            f"sampled ({0 if est is None else est.n_sampled} of {population} columns, "
            "U-statistic, jackknife CI)"),
        "r": "approx (block Krylov, guaranteed Ritz intervals)",
        "p": "exact (column sums)",
        "v1": "approx (leading Ritz vector)",
    }
    details = {
        "passes": sk.passes, "krylov_dim": ritz.dim, "seed": seed,
        "sample_columns": 0 if est is None else est.n_sampled,
        "r_certified": [bool(c) for c in ritz.certified],
        "residuals": [float(r / total) for r in ritz.residuals],
        "bound": "lower: Ritz values (interlacing); upper: Li-Li quadratic residual bound "
                 "with a trace-certified gap, else Weyl (deterministic)",
    }
    d = _finish(
        src, args, st, kappa, ritz.values, ritz.vectors[:, 0], const_idx,
        mode="approx", sources=sources, details=details,
        r1_interval=(float(lo[0]), float(hi[0])),
        r2_5_interval=(float(lo[1:5].sum()), float(min(1.0, hi[1:5].sum()))),
        energy_intervals=tuple((float(a), float(b)) for a, b in zip(lo, hi, strict=True)),
        kappa_ci=None if est is None else est.ci,
        kappa_se=None if est is None else est.se,
        kappa_level=opts.level,
    )
    return _with_concentration(d, src, acc)


def observe_first_pass(src: Any, observers: Sequence[Any]) -> Any:
    """``src`` wrapped so that ``observers`` see every row block of its first full pass.

    For the passes that take a :class:`~aria_tda.scores.ScoreSource` but no observers (the
    tiled Gram, the approximate passes); :attr:`complete` says whether a full pass was seen.

    Parameters
    ----------
    src : ScoreSource
        The matrix.
    observers : sequence
        Objects with ``update(block, row0)``.
    """
    return _ObservedSource(src, observers)


class _ObservedSource(ScoreSource):
    """Delegates to a source; the first full ``iter_chunks`` also feeds the observers."""

    def __init__(self, base: ScoreSource, observers: Sequence[Any]) -> None:
        super().__init__(base.shape, base.dtype, row_ids=base.row_ids, manifest=base.manifest)
        self.base = base
        self.block_dtype = base.block_dtype
        self.path, self.key, self.transposed = base.path, base.key, base.transposed
        self.zero_copy, self.io_bound = base.zero_copy, base.io_bound
        self._observers = list(observers)
        self._started = False
        self.complete = False

    def _raw_rows(self, start: int, stop: int) -> Any:
        return self.base._raw_rows(start, stop)

    def _read_into(self, start: int, stop: int, out: np.ndarray) -> np.ndarray:
        return self.base._read_into(start, stop, out)

    def _raw_columns(self, start: int, stop: int) -> Any:
        return self.base._raw_columns(start, stop)

    def chunk_rows(self, chunk_rows: int | None = None) -> int:
        """The wrapped source's rows per block.

        Parameters
        ----------
        chunk_rows : int, optional
            Rows per block asked for.
        """
        return self.base.chunk_rows(chunk_rows)

    def close(self) -> None:
        """Close the wrapped source."""
        self.base.close()

    def describe(self) -> str:
        """The wrapped source's description."""
        return self.base.describe()

    def iter_chunks(
        self, chunk_rows: int | None = None, *, start: int = 0, stop: int | None = None,
        **kw: Any,
    ) -> Iterator[tuple[int, np.ndarray]]:
        """:meth:`ScoreSource.iter_chunks` of the wrapped source (see the class).

        Parameters
        ----------
        chunk_rows : int, optional
            Rows per block.
        start, stop : int
            Row range.
        **kw
            Passed on.
        """
        watch = start == 0 and stop in (None, self.n_rows) and not self._started
        self._started = self._started or watch
        for s, block in self.base.iter_chunks(chunk_rows, start=start, stop=stop, **kw):
            if watch:
                for obs in self._observers:
                    obs.update(block, s)
            yield s, block
        if watch:
            self.complete = True
