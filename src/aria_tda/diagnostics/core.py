"""The entry point :func:`diagnose` and its exact reference (see :mod:`aria_tda.diagnostics`)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from aria_tda._checks import check_choice, check_int, check_int_list
from aria_tda._memory import default_budget, flag_size, headroom, out_of_memory
from aria_tda.diagnostics.concentration import (
    TopKAccumulator,
    topk_concentration_reference,
)
from aria_tda.diagnostics.kappa import _warn_constant, kappa_from_sum
from aria_tda.diagnostics.modes import _diagnose_approx, _diagnose_tiled, choose_mode
from aria_tda.diagnostics.result import (
    MODES,
    ApproxOptions,
    Diagnostics,
    _check_dims,
    diagnostics_from_stats,
)
from aria_tda.errors import AriaWarning, DataError, ParameterError
from aria_tda.scores.lowrank import fix_sign
from aria_tda.scores.readers import as_source
from aria_tda.scores.source import expected_text, transpose_advice
from aria_tda.scores.stats import stream_matvec, stream_stats

__all__ = ["diagnose"]


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
    topk: Sequence[int] | None = (1, 10),
) -> Diagnostics:
    r"""Reliability diagnostics κ, r_i, p of a score matrix in one streaming pass.

    Parameters
    ----------
    scores : array-like, torch.Tensor, ScoreSource or path
        The segment-level score matrix ``(M, T)`` (``.npy``/TRAK ``.mmap``, ``.npz``,
        ``.pt``/``.pth``, Kronfluence ``.safetensors`` or zarr on disk; float16/32/64,
        see :mod:`aria_tda.scores.formats`), never loaded whole.
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
        Run the passes as Dask tasks over row ranges (:mod:`aria_tda.diagnostics.distributed`).
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
        Memory budget (``"8GB"``; default: half the physical memory, or half of what an
        address-space limit leaves, :func:`aria_tda._memory.default_budget`). When given, or
        under a limit, the row blocks fit it too.
    spill_dir : path, optional
        Where ``"exact-tiled"`` spills its tiles (default ``$ARIA_CACHE_DIR/tiles``);
        removed afterwards.
    seed : int
        Seed of the approximate mode's random start and column sample.
    approx : ApproxOptions, optional
        Settings of ``"approx"``.
    topk : sequence of int, optional
        Also measure how much the queries' top-K sets coincide at these ``K``
        (:mod:`aria_tda.diagnostics.concentration`, in the same pass: every mode, the GPU and
        the Dask path); ``None`` or ``()``: not measured.

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
    MemoryLimitError
        an allocation did not fit in the memory the process may use (the message names the
        limit and a smaller ``memory`` or ``mode="approx"``).

    Warns
    -----
    AriaWarning
        constant columns (left out of κ), or κ undefined; fewer rows than columns (rows must
        be training segments: the matrix may be stored the other way round).

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
    ks = _check_topk(topk)
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
            topk=ks,
        )
    room = headroom()
    with out_of_memory("opening the score matrix", "raise the limit"):
        src = as_source(scores, key=key, transpose=transpose)
    _check_dims(*src.shape)
    _warn_orientation(*src.shape, transposed=transpose, fmt=getattr(src, "format", None))
    mode, _ = choose_mode(src.n_cols, mode=mode, memory=memory)
    with out_of_memory(f"the {mode} pass over {src.n_rows} x {src.n_cols} scores",
                       _smaller(mode, room)):
        acc = TopKAccumulator(src.n_cols, ks, n_rows=src.n_rows) if ks else None
        if mode == "exact-tiled":
            return _diagnose_tiled(
                src, n_energy, with_u1, chunk_rows, compute_dtype, n_threads, progress,
                memory, spill_dir, seed, acc,
            )
        if chunk_rows is None and (memory is not None or room is not None):
            chunk_rows = _budget_rows(src, mode, memory, compute_dtype, acc)
        if mode == "approx":
            opts = approx if approx is not None else ApproxOptions()
            return _diagnose_approx(
                src, n_energy, with_u1, chunk_rows, compute_dtype, n_threads, progress, seed,
                opts, acc,
            )
        return _diagnose_exact(src, n_energy, with_u1, chunk_rows, compute_dtype, device,
                               n_threads, progress, acc)


def _smaller(mode: str, room: int | None) -> str:
    """What needs less memory than ``mode`` did (``room``: the headroom when it started)."""
    if mode == "approx":
        return ("raise the limit or sample fewer columns "
                "(approx.sample_columns, --sample-columns)")
    size = flag_size(max(16 * 2**20, (room or 0) // 4)) if room is not None else None
    budget = f"memory='{size}' (--memory {size})" if size else "a smaller memory (--memory)"
    return (f"use a smaller budget, {budget}, which the row blocks (and the exact Gram, tiled "
            "when it does not fit) keep to, or mode='approx' (--approx)")


def _budget_rows(src: Any, mode: str, memory: Any, compute_dtype: str | None,
                 acc: Any) -> int:
    """Rows per block of the exact or approximate pass within the memory budget.

    The budget (``memory``, else :func:`aria_tda._memory.default_budget`, which honours an
    address-space limit) less the in-memory Gram and the top-K heaps; blocks take an eighth of
    the rest (:func:`aria_tda.diagnostics.tiled.pass_rows`).
    """
    from aria_tda.diagnostics.tiled import gram_bytes, parse_memory, pass_rows

    total = default_budget() if memory is None else parse_memory(memory)
    rest = total - (gram_bytes(src.n_cols) if mode == "exact" else 0)
    if acc is not None:
        rest -= acc.memory_bytes(256)
    return pass_rows(src, max(2**20, rest), compute_dtype=compute_dtype)


def _diagnose_exact(
    src: Any, n_energy: int, with_u1: bool, chunk_rows: int | None, compute_dtype: str | None,
    device: Any, n_threads: int | None, progress: bool | None, acc: Any,
) -> Diagnostics:
    """:func:`diagnose` in mode ``"exact"``: one pass summing the in-memory Gram."""
    stats = stream_stats(
        src,
        chunk_rows=chunk_rows,
        compute_dtype=compute_dtype,
        device=device,
        n_threads=n_threads,
        progress=progress,
        observers=() if acc is None else (acc,),
    )
    d = diagnostics_from_stats(stats, n_energy=n_energy, device=device)
    if acc is not None:
        d = replace(d, concentration=acc.result())
    if with_u1:
        u1 = stream_matvec(src, d.v1, chunk_rows=chunk_rows, device=device, progress=progress)
        d = replace(d, u1=u1 / d.sigma1)
    return d



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
    topk: tuple[int, ...] = (),
) -> Diagnostics:
    """:func:`diagnose` with its passes run by the Dask kernels
    (:mod:`aria_tda.diagnostics.distributed`)."""
    from aria_tda.diagnostics.distributed import matvec_dask, stats_topk_dask

    if type(scores).__module__.startswith("dask"):
        data: Any = scores.T if transpose else scores
    else:
        data = as_source(scores, key=key, transpose=transpose)
    _check_dims(*data.shape)
    _warn_orientation(*data.shape, transposed=transpose, fmt=getattr(data, "format", None))
    stats, acc = stats_topk_dask(
        data, client=client, chunk_rows=chunk_rows, key=key, compute_dtype=compute_dtype,
        topk=topk,
    )
    d = diagnostics_from_stats(stats, n_energy=n_energy)
    if acc is not None:
        d = replace(d, concentration=acc.result())
    if with_u1:
        u = matvec_dask(data, d.v1, client=client, chunk_rows=chunk_rows, key=key)
        d = replace(d, u1=u / d.sigma1)
    return d


def _check_topk(topk: Any) -> tuple[int, ...]:
    """The validated ``topk`` of :func:`diagnose` (``()`` when off)."""
    if topk is None:
        return ()
    if isinstance(topk, int | np.integer) and not isinstance(topk, bool):
        topk = (topk,)
    try:
        items = list(topk)
    except TypeError:
        raise ParameterError(expected_text("topk", "a sequence of positive K", topk)) from None
    if not items:
        return ()
    return tuple(check_int_list("topk", items, min_value=1))


def _warn_orientation(m: int, t: int, *, transposed: bool, fmt: str | None = None) -> None:
    """Warn when the matrix has fewer rows (training segments) than columns (queries)."""
    if m >= t:
        return
    if transposed:
        msg = (f"scores: the transposed matrix has fewer rows than columns ({m} x {t}): the "
               f"file as stored has {t} rows and {m} columns, so it may already be training "
               f"segments x queries; check its orientation and {transpose_advice(True, fmt)}")
    else:
        msg = (f"scores: fewer rows than columns ({m} x {t}): rows must be training segments "
               "and columns queries; if the file is stored queries x training (captum, LogIX, "
               f"quanda), {transpose_advice(False, fmt)}")
    warnings.warn(msg, AriaWarning, stacklevel=3)


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
    topk: Sequence[int] | None = (1, 10),
) -> Diagnostics:
    r"""In-memory reference of :func:`diagnose`: ``np.corrcoef`` for κ, ``np.linalg.svd`` for r_i.

    Loads the whole matrix (``(M, T)``) and computes in float64 from the definitions, whatever
    the stored dtype. Constant columns are those with ``np.ptp == 0``. Used to test
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
    topk : sequence of int, optional
        The top-K concentration, from
        :func:`~aria_tda.diagnostics.concentration.topk_concentration_reference`.
    """
    n_energy = check_int("n_energy", n_energy, min_value=1)
    ks = _check_topk(topk)
    s = np.asarray(as_source(scores, key=key, transpose=transpose).to_numpy(), dtype=np.float64)
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
        kappa = kappa_from_sum(float(np.abs(c).sum() - np.trace(np.abs(c))), k)
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
        concentration=topk_concentration_reference(s, ks) if ks else None,
    )
