r"""Score-matrix reliability diagnostics (paper §3.2): κ, r_i, p, from one streaming pass.

Conventions
-----------
``S`` is the segment-level score matrix ``(M, T)`` = ``(n_train_segments, n_queries)``, used
raw: the diagnostics are taken *before* per-query normalisation and track aggregation.

- **Mean absolute inter-query correlation** (Eq. kappa). With :math:`C` the Pearson
  correlation matrix of the columns of ``S``,
  :math:`\kappa = \frac{1}{T(T-1)} \sum_{j \ne j'} |C_{jj'}| \in [0, 1]`.
  A constant column has no correlation; such columns are left out (with an
  :class:`~aria.errors.AriaWarning`) and counted in ``constant_columns``; ``T`` then counts
  the remaining columns. Fewer than two remaining columns make κ undefined (NaN, warned).
- **Singular value energy ratios** (Eq. ri). :math:`r_i = \sigma_i^2 / \lVert S \rVert_F^2`,
  reported for :math:`i = 1..10` (zeros beyond the rank); :math:`r_{2:5} = \sum_{i=2}^5 r_i`.
- **Mean concentration ratio** (Eq. p). :math:`p = \frac{1}{T} \sum_j M \mu_j^2 /
  \lVert S_{\cdot j} \rVert_2^2` with :math:`\mu_j` the column mean; all-zero columns (0/0)
  are left out of the average.
- The collapse reading of the paper needs :math:`r_1 \approx 1` *and* a near-constant
  :math:`v_1`; ``v1_constancy`` :math:`= |\sum_j v_{1j}| / \sqrt{T} \in [0, 1]` is 1 exactly
  when :math:`v_1 \propto (1, \dots, 1)`.

How it is computed
------------------
One pass over row blocks accumulates the Gram :math:`S^\top S` (``T x T``, float64), column
sums and sums of squares (:func:`aria.scores.stats.stream_stats`). The Pearson matrix is the
scatter matrix scaled by the column standard deviations; the eigenvalues of the Gram are the
:math:`\sigma_i^2`; its top eigenvector is :math:`v_1`. A second pass gives
:math:`u_1 = S v_1 / \sigma_1` when asked. Memory is bounded by the block size and
:math:`T^2`, never by ``M``. With a Dask ``client`` the same sums come from the distributed
kernels (:func:`aria.scores.distributed.stats_dask`, :func:`~aria.scores.distributed.matvec_dask`)
and are finished here. :func:`diagnose_reference` is the small in-memory reference
(``np.corrcoef`` and ``np.linalg.svd``, the same signature as :func:`diagnose`) the streaming
path is tested against.

Many queries
------------
The in-memory finish holds three ``T x T`` float64 arrays (:func:`aria.scores.tiled.gram_bytes`).
``mode="auto"`` (the default) keeps that path while they fit ``memory`` (default: half the
physical memory) and otherwise switches to ``"exact-tiled"``
(:mod:`aria.scores.tiled`: the Gram in column panels within the budget, spilled to disk,
top eigenpairs by block Krylov on the spilled Gram, converged to ``1e-11`` of
:math:`\sigma_1^2`). ``mode="approx"`` (:mod:`aria.scores.sketch`) needs a few passes of
:math:`O(M T b)`: r_i from randomised block Krylov with guaranteed intervals
(:func:`aria.scores.krylov.ritz_bounds`), κ from sampled columns with a confidence interval,
p exact. :attr:`Diagnostics.mode` and :attr:`Diagnostics.sources` say which method produced
each number; the intervals are in :attr:`Diagnostics.r1_interval` and the fields after it.
"""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from aria._checks import check_choice, check_int
from aria._options import Options, option
from aria.errors import AriaWarning, DataError, ParameterError
from aria.scores.blockstats import BlockStats
from aria.scores.lowrank import fix_sign, top_eigenpairs
from aria.scores.readers import as_source
from aria.scores.source import expected_text
from aria.scores.stats import stream_matvec, stream_stats

__all__ = ["ApproxOptions", "Diagnostics", "choose_mode", "diagnose", "diagnostics_from_stats"]

MODES = ("auto", "exact", "exact-tiled", "approx")


@dataclass(frozen=True)
class ApproxOptions(Options):
    """Settings of ``mode="approx"`` (:func:`aria.scores.sketch.sketch_passes`)."""

    max_passes: int = option(8, help="most streaming passes for r_1..r_10", min_value=1)
    rtol: float = option(
        1e-3, help="stop when the r1 interval is this narrow (relative)", min_value=0.0
    )
    sample_columns: int = option(1000, help="columns sampled for kappa", min_value=3)
    level: float = option(
        0.95, help="confidence level of the kappa interval", min_value=0.5, max_value=0.9999
    )
    block: int = option(0, help="Krylov block size (0: n_energy + 10)", min_value=0)


#: Constant-column rule: centred energy <= (CONST_ULPS * eps)^2 * raw energy of the column,
#: eps the machine epsilon of the products (float32 or float64).
CONST_ULPS = 64.0


@dataclass(frozen=True, eq=False)
class Diagnostics:
    r"""Reliability diagnostics of one score matrix (paper §3.2).

    Attributes
    ----------
    n_train, n_queries : int
        ``M`` and ``T``.
    kappa : float
        Mean absolute inter-query correlation κ ∈ [0, 1] (Eq. kappa); NaN when fewer than
        two columns vary.
    r1, r2_5 : float
        :math:`r_1` and :math:`r_{2:5} = r_2 + \dots + r_5` (Eq. ri).
    p : float
        Mean concentration ratio ∈ [0, 1] (Eq. p).
    energy_ratios : tuple of float
        :math:`(r_1, \dots, r_{n})`, ``n = n_energy`` (10 by default).
    sigma1 : float
        Largest singular value.
    frobenius : float
        :math:`\lVert S \rVert_F`.
    v1 : numpy.ndarray [shape=(T,)]
        Leading right (query-side) singular vector, :math:`\sum_j v_{1j} \ge 0`.
    v1_constancy : float
        :math:`|\sum_j v_{1j}| / \sqrt{T} \in [0, 1]`; 1 means :math:`v_1` is constant.
    constant_columns : int
        Columns left out of κ because they are constant (and, if all-zero, out of p).
    constant_indices : numpy.ndarray [shape=(constant_columns,)] of int
    u1 : numpy.ndarray [shape=(M,)] or None
        Leading left (segment-side) singular vector :math:`S v_1 / \sigma_1` (``with_u1``).
    mode : str
        ``"exact"`` (in-memory Gram), ``"exact-tiled"`` or ``"approx"``.
    sources : dict or None
        Method behind each number (``kappa``, ``r``, ``p``, ``v1``) when ``mode`` is not
        ``"exact"``.
    r1_interval, r2_5_interval : tuple of float or None
        Guaranteed intervals for :math:`r_1`, :math:`r_{2:5}` (approx mode).
    energy_intervals : tuple of (float, float) or None
        Guaranteed interval of each energy ratio (approx mode).
    kappa_ci : tuple of float or None
        Confidence interval of κ at ``kappa_level`` (approx mode, sampled columns).
    kappa_se : float or None
        Standard error of κ (approx mode).
    kappa_level : float or None
        Confidence level of ``kappa_ci``.
    details : dict or None
        Passes, sample size, Krylov basis and the like (``mode`` not ``"exact"``).
    """

    n_train: int
    n_queries: int
    kappa: float
    r1: float
    r2_5: float
    p: float
    energy_ratios: tuple[float, ...]
    sigma1: float
    frobenius: float
    v1: np.ndarray
    v1_constancy: float
    constant_columns: int
    constant_indices: np.ndarray
    u1: np.ndarray | None = None
    mode: str = "exact"
    sources: dict[str, str] | None = None
    r1_interval: tuple[float, float] | None = None
    r2_5_interval: tuple[float, float] | None = None
    energy_intervals: tuple[tuple[float, float], ...] | None = None
    kappa_ci: tuple[float, float] | None = None
    kappa_se: float | None = None
    kappa_level: float | None = None
    details: dict[str, Any] | None = None

    def to_dict(self, *, vectors: bool = False) -> dict[str, Any]:
        """JSON-ready mapping (NaN becomes ``None``).

        Parameters
        ----------
        vectors : bool
            Also include ``v1``, ``u1`` and ``constant_indices``.
        """

        def num(x: float) -> float | None:
            return None if not math.isfinite(x) else float(x)

        out: dict[str, Any] = {
            "n_train": self.n_train,
            "n_queries": self.n_queries,
            "kappa": num(self.kappa),
            "r1": num(self.r1),
            "r2_5": num(self.r2_5),
            "p": num(self.p),
            "energy_ratios": [float(r) for r in self.energy_ratios],
            "sigma1": float(self.sigma1),
            "frobenius": float(self.frobenius),
            "v1_constancy": float(self.v1_constancy),
            "constant_columns": self.constant_columns,
        }
        if self.mode != "exact":  # the in-memory record keeps its historical keys
            out["mode"] = self.mode
            out["sources"] = dict(self.sources or {})
            for name in ("r1_interval", "r2_5_interval", "kappa_ci"):
                iv = getattr(self, name)
                out[name] = None if iv is None else [float(iv[0]), float(iv[1])]
            out["energy_intervals"] = (
                None
                if self.energy_intervals is None
                else [[float(a), float(b)] for a, b in self.energy_intervals]
            )
            out["kappa_se"] = None if self.kappa_se is None else num(self.kappa_se)
            out["kappa_level"] = self.kappa_level
            out["details"] = dict(self.details or {})
        if vectors:
            out["v1"] = self.v1.tolist()
            out["u1"] = None if self.u1 is None else self.u1.tolist()
            out["constant_indices"] = self.constant_indices.tolist()
        return out

    def collapsed(self, *, r1_min: float = 0.9, constancy_min: float = 0.9) -> bool:
        """The paper's collapse reading: ``r1 >= r1_min`` and ``v1_constancy >= constancy_min``.

        :func:`aria.verdict.classify` gives the full verdict (collapsed / suspect / ok).

        Parameters
        ----------
        r1_min : float
            Least :math:`r_1`.
        constancy_min : float
            Least ``v1_constancy``.
        """
        return self.r1 >= r1_min and self.v1_constancy >= constancy_min


def _check_dims(m: int, t: int) -> None:
    if t < 2:
        raise DataError(
            expected_text("scores", "at least 2 queries (columns) for κ", f"{t} column(s)")
        )
    if m < 2:
        raise DataError(expected_text("scores", "at least 2 training rows", f"{m} row(s)"))


def _warn_constant(idx: np.ndarray, t: int) -> None:
    if idx.size:
        first = ", ".join(str(int(i)) for i in idx[:5]) + (", ..." if idx.size > 5 else "")
        warnings.warn(
            f"{idx.size} of {t} score columns are constant (columns {first}); their "
            "correlation is undefined, so they are left out of kappa (and all-zero ones out of p)",
            AriaWarning,
            stacklevel=3,
        )


def _kappa_from_corr(corr_abs_sum: float, k: int) -> float:
    return float(min(1.0, max(0.0, corr_abs_sum / (k * (k - 1)))))


def diagnostics_from_stats(
    stats: BlockStats, *, n_energy: int = 10, device: Any = None, u1: np.ndarray | None = None
) -> Diagnostics:
    r"""Finish the diagnostics from the sums of a Gram pass (:class:`BlockStats`).

    Used by :func:`diagnose` for the streaming and the Dask pass, which produce the same sums.

    Parameters
    ----------
    stats : BlockStats
        Sums with the Gram matrix (``gram=True``) over all rows of ``S``.
    n_energy : int
        How many energy ratios to report.
    device : str, optional
        Torch device for the eigendecomposition.
    u1 : numpy.ndarray [shape=(M,)], optional
        :math:`u_1`, when already computed.
    """
    n_energy = check_int("n_energy", n_energy, min_value=1)
    m, t = stats.n, stats.n_cols
    _check_dims(m, t)
    if stats.gram is None:
        raise ValueError("diagnostics need BlockStats with the Gram matrix")
    sumsq = stats.sum_squares
    frob2 = float(sumsq.sum())
    if not frob2 > 0.0:
        raise DataError("scores: expected a matrix with non-zero entries, got an all-zero matrix")

    # κ (Eq. kappa): Pearson correlations of the non-constant columns
    css = stats.centered_ss
    constant = stats.constant_mask(ulps=CONST_ULPS)
    const_idx = np.flatnonzero(constant)
    _warn_constant(const_idx, t)
    keep = ~constant
    k = int(keep.sum())
    if k < 2:
        warnings.warn(
            f"only {k} of {t} score columns vary: kappa is undefined (NaN)",
            AriaWarning,
            stacklevel=2,
        )
        kappa = float("nan")
    else:
        corr = stats.centered_gram()
        if const_idx.size:
            corr = corr[np.ix_(keep, keep)]
        sd = np.sqrt(css[keep])
        corr /= sd[:, None]
        corr /= sd[None, :]
        np.abs(corr, out=corr)
        np.minimum(corr, 1.0, out=corr)
        kappa = _kappa_from_corr(float(corr.sum() - np.trace(corr)), k)
        del corr

    # r_i (Eq. ri): eigenvalues of the Gram are sigma_i^2
    values, vectors = top_eigenpairs(stats.raw_gram(), n_energy, device=device, overwrite=True)
    total = max(frob2, float(values.sum()))
    ratios = np.clip(values / total, 0.0, 1.0)
    v1 = vectors[:, 0].copy()
    sigma1 = float(np.sqrt(values[0]))

    # p (Eq. p): mean over columns of M mu_j^2 / ||S_.j||^2 (all-zero columns left out)
    colsum = stats.column_sums
    nz = sumsq > 0
    p = float(np.mean(np.clip(colsum[nz] ** 2 / (m * sumsq[nz]), 0.0, 1.0)))

    return Diagnostics(
        n_train=m,
        n_queries=t,
        kappa=kappa,
        r1=float(ratios[0]),
        r2_5=float(ratios[1:5].sum()),
        p=p,
        energy_ratios=tuple(float(r) for r in ratios),
        sigma1=sigma1,
        frobenius=math.sqrt(frob2),
        v1=v1,
        v1_constancy=float(min(1.0, abs(v1.sum()) / math.sqrt(t))),
        constant_columns=int(const_idx.size),
        constant_indices=const_idx,
        u1=u1,
    )


def diagnose(
    scores: Any,
    *,
    chunk_rows: int | None = None,
    n_energy: int = 10,
    with_u1: bool = False,
    key: str | None = None,
    compute_dtype: str | None = None,
    device: Any = None,
    n_threads: int | None = None,
    client: Any = None,
    progress: bool | None = None,
    transpose: bool = False,
    mode: str = "auto",
    memory: Any = None,
    spill_dir: Any = None,
    seed: int = 0,
    approx: ApproxOptions | None = None,
) -> Diagnostics:
    r"""Reliability diagnostics κ, r_i, p of a score matrix in one streaming pass.

    Parameters
    ----------
    scores : array-like, torch.Tensor, ScoreSource or path
        The segment-level score matrix ``(M, T)`` (``.npy``/TRAK ``.mmap``, ``.npz``,
        ``.pt``/``.pth``, Kronfluence ``.safetensors`` or zarr on disk; float16/32/64,
        see :mod:`aria.scores.formats`), never loaded whole.
    chunk_rows : int, optional
        Rows per streamed block (default: about 64 MB). Results do not depend on it beyond
        rounding.
    n_energy : int
        How many energy ratios :math:`r_1..r_n` to report (default 10).
    with_u1 : bool
        Also compute :math:`u_1 = S v_1 / \sigma_1` (a second pass).
    key : str, optional
        Array to read from an ``.npz``/torch dict/zarr group.
    compute_dtype : {None, "float32", "float64"}
        Precision of the block products (default: float32 for float32/float16 input,
        float64 for float64 input); accumulation is always float64.
    device : str, optional
        Torch device for the kernel (e.g. ``"cuda"``); default NumPy on the CPU.
    n_threads : int, optional
        Limit BLAS threads during the pass (default: the BLAS library's setting).
    client : dask.distributed.Client, optional
        Run the passes as Dask tasks over row ranges (:mod:`aria.scores.distributed`).
    progress : bool, optional
        Draw progress bars (default: when stderr is a terminal and ``ARIA_PROGRESS`` is
        not ``0``).
    transpose : bool
        ``scores`` is stored queries x training segments (captum TracInCP, LogIX; the
        other way round from its format's convention): diagnose its transpose.
    mode : {"auto", "exact", "exact-tiled", "approx"}
        ``"exact"``: the in-memory Gram; ``"exact-tiled"``: column panels within ``memory``,
        spilled to disk; ``"approx"``: a few passes, intervals reported; ``"auto"``:
        ``"exact"`` while its ``T x T`` arrays fit ``memory``, else ``"exact-tiled"``
        (:func:`choose_mode`).
    memory : str or int, optional
        Memory budget (``"8GB"``; default: half the physical memory).
    spill_dir : path, optional
        Where ``"exact-tiled"`` spills its tiles (default ``$ARIA_CACHE_DIR/tiles``);
        removed afterwards.
    seed : int
        Seed of the approximate mode's random start and column sample.
    approx : ApproxOptions, optional
        Settings of ``"approx"``.

    Returns
    -------
    Diagnostics

    Raises
    ------
    DataError
        NaN/inf (naming the first bad row and column), fewer than 2 columns or rows,
        an all-zero matrix.
    FileFormatError
        missing, truncated or unreadable files.

    Warns
    -----
    AriaWarning
        constant columns (left out of κ), or κ undefined.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> S = np.outer(rng.random(500) + 1, np.ones(8)) + 1e-3 * rng.standard_normal((500, 8))
    >>> d = diagnose(S)
    >>> round(d.r1, 3), round(d.kappa, 2), round(d.v1_constancy, 3)
    (1.0, 1.0, 1.0)
    """
    n_energy = check_int("n_energy", n_energy, min_value=1)
    check_choice("mode", mode, MODES)
    if client is not None and mode in ("exact-tiled", "approx"):
        raise ParameterError(f"mode: expected 'exact' or 'auto' with a Dask client, got {mode!r}")
    if client is not None:
        return _diagnose_dask(
            scores,
            client=client,
            chunk_rows=chunk_rows,
            n_energy=n_energy,
            with_u1=with_u1,
            key=key,
            compute_dtype=compute_dtype,
            transpose=transpose,
        )
    src = as_source(scores, key=key, transpose=transpose)
    _check_dims(*src.shape)
    mode, _ = choose_mode(src.n_cols, mode=mode, memory=memory)
    if mode == "exact-tiled":
        return _diagnose_tiled(
            src, n_energy, with_u1, chunk_rows, compute_dtype, n_threads, progress,
            memory, spill_dir, seed,
        )
    if mode == "approx":
        opts = approx if approx is not None else ApproxOptions()
        return _diagnose_approx(
            src, n_energy, with_u1, chunk_rows, compute_dtype, n_threads, progress, seed, opts
        )
    stats = stream_stats(
        src,
        chunk_rows=chunk_rows,
        compute_dtype=compute_dtype,
        device=device,
        n_threads=n_threads,
        progress=progress,
    )
    d = diagnostics_from_stats(stats, n_energy=n_energy, device=device)
    if with_u1:
        u1 = stream_matvec(src, d.v1, chunk_rows=chunk_rows, device=device, progress=progress)
        d = replace(d, u1=u1 / d.sigma1)
    return d


def _default_memory() -> int:
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")) // 2
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return 8 * 2**30


def choose_mode(t: int, *, mode: str = "auto", memory: Any = None) -> tuple[str, str]:
    """The mode :func:`diagnose` uses for ``T`` columns, and why (one line).

    Parameters
    ----------
    t : int
        ``T``, the number of queries.
    mode : {"auto", "exact", "exact-tiled", "approx"}
        The mode asked for.
    memory : str or int, optional
        Memory budget (default: half the physical memory).

    Returns
    -------
    mode : str
        ``"exact"``, ``"exact-tiled"`` or ``"approx"``.
    reason : str
    """
    from aria.scores.tiled import gram_bytes, parse_memory

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


def _diagnose_tiled(
    src: Any, n_energy: int, with_u1: bool, chunk_rows: int | None,
    compute_dtype: str | None, n_threads: int | None, progress: bool | None,
    memory: Any, spill_dir: Any, seed: int,
) -> Diagnostics:
    """:func:`diagnose` with the Gram in column panels spilled to disk (exact)."""
    from aria.scores.krylov import block_krylov_eigs
    from aria.scores.tiled import parse_memory, tiled_gram

    t = src.n_cols
    budget = _default_memory() if memory is None else memory
    with tiled_gram(
        src, memory=budget, spill_dir=spill_dir, chunk_rows=chunk_rows,
        compute_dtype=compute_dtype, n_threads=n_threads, progress=progress, ulps=CONST_ULPS,
    ) as tg:
        st = tg.stats
        frob2 = float(st.sum_squares.sum())
        if not frob2 > 0.0:
            raise DataError(
                "scores: expected a matrix with non-zero entries, got an all-zero matrix"
            )
        const_idx = np.flatnonzero(tg.constant)
        _warn_constant(const_idx, t)
        k = t - int(const_idx.size)
        kappa = _kappa_from_corr(tg.abs_corr_sum, k) if k >= 2 else _nan_kappa(k, t)
        blk = max(n_energy + 6, 16)
        # the basis, its products and the Rayleigh-Ritz copies (about 8 x T x dim float64)
        # take at most half the budget; the reads of the spilled Gram an eighth
        dim = max(blk + n_energy, min(12 * blk, parse_memory(budget) // (2 * 64 * t)) - blk)
        ritz = block_krylov_eigs(
            tg.matmat, t, n_energy, trace=frob2, block=blk, max_products=400, seed=seed,
            max_dim=dim,
            stop=lambda r: bool(np.all(r.residuals <= 1e-11 * max(r.values[0], 1e-300))),
        )
        details = {"passes": tg.passes, "panels": len(tg.panels), "gram_reads": ritz.n_products,
                   "spill_bytes": tg.meta["spill_bytes"], "chunk_rows": tg.meta["chunk_rows"],
                   "max_residual": float(ritz.residuals.max() / max(ritz.values[0], 1e-300))}
    sources = {"kappa": "exact (tiled Gram)", "r": "exact (block Krylov on the tiled Gram)",
               "p": "exact", "v1": "exact (block Krylov on the tiled Gram)"}
    return _finish(src, st, kappa, ritz.values, ritz.vectors[:, 0], const_idx, with_u1,
                   chunk_rows, progress, mode="exact-tiled", sources=sources, details=details)


def _nan_kappa(k: int, t: int) -> float:
    warnings.warn(
        f"only {k} of {t} score columns vary: kappa is undefined (NaN)", AriaWarning, stacklevel=4
    )
    return float("nan")


def _finish(
    src: Any, st: BlockStats, kappa: float, values: np.ndarray, v1: np.ndarray,
    const_idx: np.ndarray, with_u1: bool, chunk_rows: int | None, progress: bool | None,
    **extra: Any,
) -> Diagnostics:
    """A :class:`Diagnostics` from column sums, κ and the top eigenvalues (non-default modes)."""
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
    if with_u1:
        u1 = stream_matvec(src, v1, chunk_rows=chunk_rows, progress=progress) / sigma1
    return Diagnostics(
        n_train=m, n_queries=t, kappa=kappa, r1=float(ratios[0]),
        r2_5=float(ratios[1:5].sum()), p=p, energy_ratios=tuple(float(r) for r in ratios),
        sigma1=sigma1, frobenius=math.sqrt(frob2), v1=v1,
        v1_constancy=float(min(1.0, abs(v1.sum()) / math.sqrt(t))),
        constant_columns=int(const_idx.size), constant_indices=const_idx, u1=u1, **extra,
    )


def _diagnose_approx(
    src: Any, n_energy: int, with_u1: bool, chunk_rows: int | None,
    compute_dtype: str | None, n_threads: int | None, progress: bool | None, seed: int,
    opts: ApproxOptions,
) -> Diagnostics:
    """:func:`diagnose` in a few passes: block Krylov r_i, sampled κ, exact p."""
    from aria.scores.sketch import abs_correlations, kappa_estimate, sketch_passes

    t = src.n_cols
    sk = sketch_passes(
        src, n_energy=n_energy, max_passes=opts.max_passes, rtol=opts.rtol,
        block=opts.block or None, sample_columns=opts.sample_columns, seed=seed,
        chunk_rows=chunk_rows, compute_dtype=compute_dtype, n_threads=n_threads,
        progress=progress,
    )
    st, ritz = sk.stats, sk.ritz
    frob2 = float(st.sum_squares.sum())
    if not frob2 > 0.0:
        raise DataError("scores: expected a matrix with non-zero entries, got an all-zero matrix")
    constant = st.constant_mask(ulps=CONST_ULPS)
    const_idx = np.flatnonzero(constant)
    _warn_constant(const_idx, t)
    population = t - int(const_idx.size)
    keep = ~sk.sample_stats.constant_mask(ulps=CONST_ULPS) & ~constant[sk.sample]
    est = None
    if population < 2 or int(keep.sum()) < 2:
        kappa = _nan_kappa(population, t)
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
    return _finish(
        src, st, kappa, ritz.values, ritz.vectors[:, 0], const_idx, with_u1, chunk_rows,
        progress, mode="approx", sources=sources, details=details,
        r1_interval=(float(lo[0]), float(hi[0])),
        r2_5_interval=(float(lo[1:5].sum()), float(min(1.0, hi[1:5].sum()))),
        energy_intervals=tuple((float(a), float(b)) for a, b in zip(lo, hi, strict=True)),
        kappa_ci=None if est is None else est.ci,
        kappa_se=None if est is None else est.se,
        kappa_level=opts.level,
    )


def _diagnose_dask(
    scores: Any,
    *,
    client: Any,
    chunk_rows: int | None,
    n_energy: int,
    with_u1: bool,
    key: str | None,
    compute_dtype: str | None,
    transpose: bool,
) -> Diagnostics:
    """:func:`diagnose` with its passes run by the Dask kernels (:mod:`aria.scores.distributed`)."""
    from aria.scores.distributed import matvec_dask, stats_dask

    if type(scores).__module__.startswith("dask"):
        data: Any = scores.T if transpose else scores
    else:
        data = as_source(scores, key=key, transpose=transpose)
    _check_dims(*data.shape)
    stats = stats_dask(
        data, client=client, chunk_rows=chunk_rows, key=key, compute_dtype=compute_dtype
    )
    d = diagnostics_from_stats(stats, n_energy=n_energy)
    if with_u1:
        u = matvec_dask(data, d.v1, client=client, chunk_rows=chunk_rows, key=key)
        d = replace(d, u1=u / d.sigma1)
    return d


def diagnose_reference(
    scores: Any,
    *,
    chunk_rows: int | None = None,
    n_energy: int = 10,
    with_u1: bool = False,
    key: str | None = None,
    compute_dtype: str | None = None,
    device: Any = None,
    n_threads: int | None = None,
    client: Any = None,
    progress: bool | None = None,
    transpose: bool = False,
    mode: str = "auto",
    memory: Any = None,
    spill_dir: Any = None,
    seed: int = 0,
    approx: ApproxOptions | None = None,
) -> Diagnostics:
    r"""In-memory reference of :func:`diagnose`: ``np.corrcoef`` for κ, ``np.linalg.svd`` for r_i.

    Loads the whole matrix (``(M, T)``); the SVD runs in the block dtype (float32 input:
    float32 SVD). Constant columns are those with ``np.ptp == 0``. Used to test
    :func:`diagnose` and as the naive route in the benchmark.

    Parameters
    ----------
    scores : array-like, torch.Tensor, ScoreSource or path
        ``(M, T)``, read whole.
    chunk_rows : int, optional
        Ignored (no streaming).
    n_energy : int
        How many energy ratios to report.
    with_u1 : bool
        Also return :math:`u_1` (from the SVD).
    key : str, optional
        Array of a file with several.
    compute_dtype : str, optional
        Ignored.
    device : str, optional
        Ignored.
    n_threads : int, optional
        Ignored.
    client : dask.distributed.Client, optional
        Ignored.
    progress : bool, optional
        Ignored.
    transpose : bool
        Diagnose the transpose of ``scores``.
    mode : str
        Ignored (always exact).
    memory : str or int, optional
        Ignored.
    spill_dir : path, optional
        Ignored.
    seed : int
        Ignored.
    approx : ApproxOptions, optional
        Ignored.
    """
    n_energy = check_int("n_energy", n_energy, min_value=1)
    s = as_source(scores, key=key, transpose=transpose).to_numpy()
    m, t = s.shape
    _check_dims(m, t)
    if not np.isfinite(s).all():
        i, j = np.argwhere(~np.isfinite(s))[0]
        raise DataError(f"scores: expected finite scores, got {s[i, j]} at row {i}, column {j}")
    constant = np.ptp(s, axis=0) == 0
    const_idx = np.flatnonzero(constant)
    _warn_constant(const_idx, t)
    keep = ~constant
    k = int(keep.sum())
    if k >= 2:
        c = np.corrcoef(s[:, keep], rowvar=False)
        kappa = _kappa_from_corr(float(np.abs(c).sum() - np.trace(np.abs(c))), k)
    else:
        kappa = float("nan")
    u, sv, vt = np.linalg.svd(s, full_matrices=False, compute_uv=True)
    energy = sv.astype(np.float64) ** 2
    frob2 = float(energy.sum())
    if frob2 == 0.0:
        raise DataError("scores: expected a matrix with non-zero entries, got an all-zero matrix")
    ratios = np.zeros(n_energy)
    kk = min(n_energy, energy.size)
    ratios[:kk] = energy[:kk] / frob2
    v1 = vt[0].astype(np.float64)
    sign = fix_sign(v1)
    v1 *= sign
    colsum = s.sum(axis=0, dtype=np.float64)
    sumsq = np.einsum("ij,ij->j", s, s, dtype=np.float64)
    nz = sumsq > 0
    p = float(np.mean(colsum[nz] ** 2 / (m * sumsq[nz])))
    return Diagnostics(
        n_train=m,
        n_queries=t,
        kappa=kappa,
        r1=float(ratios[0]),
        r2_5=float(ratios[1:5].sum()),
        p=p,
        energy_ratios=tuple(float(r) for r in ratios),
        sigma1=float(sv[0]),
        frobenius=math.sqrt(frob2),
        v1=v1,
        v1_constancy=float(abs(v1.sum()) / math.sqrt(t)),
        constant_columns=int(const_idx.size),
        constant_indices=const_idx,
        u1=(u[:, 0].astype(np.float64) * sign) if with_u1 else None,
    )

