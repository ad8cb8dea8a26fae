"""The entry point :func:`diagnose`, the one dispatcher of its passes, and its exact reference
(see :mod:`aria_tda.diagnostics`).

:func:`diagnose` resolves its options into one :class:`~aria_tda.diagnostics.args.DiagnoseArgs`,
opens the matrix once and hands it to :func:`run_passes`, which picks the backend — the
exact in-memory Gram (NumPy, or torch on ``device``), the tiled Gram, the approximate passes,
or the Dask tasks — and calls it as ``backend(src, args, acc)`` (the Dask one also gets its
``client``), ``acc`` the top-K accumulator the pass feeds.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from aria_tda._memory import default_budget, flag_size, headroom, out_of_memory
from aria_tda.diagnostics.args import DiagnoseArgs, resolve_diagnose_args
from aria_tda.diagnostics.concentration import (
    TopKAccumulator,
    topk_concentration_reference,
)
from aria_tda.diagnostics.kappa import kappa_from_sum, warn_constant
from aria_tda.diagnostics.modes import choose_mode, diagnose_approx, diagnose_tiled
from aria_tda.diagnostics.result import (
    Diagnostics,
    check_dims,
    diagnostics_from_stats,
)
from aria_tda.errors import AriaWarning, DataError, ParameterError
from aria_tda.scores.lowrank import fix_sign
from aria_tda.scores.readers import as_source
from aria_tda.scores.source import transpose_advice
from aria_tda.scores.stats import stream_matvec, stream_stats

__all__ = ["diagnose", "run_passes"]


def diagnose(
    scores: Any, args: DiagnoseArgs | None = None, *, client: Any = None, **options: Any
) -> Diagnostics:
    r"""Reliability diagnostics κ, r_i, p of a score matrix in one streaming pass.

    Parameters
    ----------
    scores : array-like, torch.Tensor, ScoreSource or path
        The segment-level score matrix ``(M, T)`` (``.npy``/TRAK ``.mmap``, ``.npz``,
        ``.pt``/``.pth``, Kronfluence ``.safetensors`` or zarr on disk; float16/32/64,
        see :mod:`aria_tda.scores.formats`), never loaded whole.
    args : DiagnoseArgs, optional
        Every option at once (:class:`~aria_tda.diagnostics.args.DiagnoseArgs`, checked when
        built); or give them as keywords (``**options``), not both.
    client : dask.distributed.Client, optional
        Run the passes as Dask tasks over row ranges (:mod:`aria_tda.diagnostics.distributed`):
        the exact in-memory Gram only (``mode`` ``"auto"`` or ``"exact"``). A resource, not an
        option: the same options give the same numbers with or without it.
    **options : Any
        The fields of :class:`~aria_tda.diagnostics.args.DiagnoseArgs` as keywords:

        ``chunk_rows`` (rows per streamed block; default about 64 MB, or a sixteenth of a
        smaller matrix; results do not depend on it beyond rounding), ``n_energy`` (how many
        energy ratios :math:`r_1..r_n`, default 10), ``with_u1`` (also
        :math:`u_1 = S v_1 / \sigma_1`, a second pass), ``key`` (array of an
        ``.npz``/torch dict/zarr group), ``compute_dtype`` (``None``, ``"float32"`` or
        ``"float64"``: precision of the block products; accumulation is always float64),
        ``device`` (torch device of the kernel, e.g. ``"cuda"``), ``n_threads`` (BLAS threads
        during the pass), ``progress`` (draw progress; default when stderr is a terminal and
        ``ARIA_PROGRESS`` is not ``0``), ``transpose`` (``scores`` is stored queries x
        training segments — captum TracInCP, LogIX: diagnose its transpose), ``mode``
        (``"exact"``: the in-memory Gram; ``"exact-tiled"``: column panels within ``memory``,
        spilled to disk; ``"approx"``: a few passes, intervals reported; ``"auto"``, the
        default: ``"exact"`` while its ``T x T`` arrays fit ``memory``, else
        ``"exact-tiled"``, :func:`choose_mode`), ``memory`` (budget, ``"8GB"``; default half
        the physical memory, or half of what an address-space limit leaves,
        :func:`aria_tda._memory.default_budget`; when given, or under a limit, the row blocks
        fit it too), ``spill_dir`` (where ``"exact-tiled"`` spills its tiles, default
        ``$ARIA_CACHE_DIR/tiles``; removed afterwards), ``seed`` (of the approximate mode's
        random start and column sample), ``approx`` (:class:`ApproxOptions` of
        ``"approx"``), ``topk`` (also measure how much the queries' top-K sets coincide at
        these ``K``, :mod:`aria_tda.diagnostics.concentration`, in the same pass: every mode,
        the GPU and the Dask path; default ``(1, 10)``; ``None`` or ``()``: not measured).

    Returns
    -------
    Diagnostics

    Raises
    ------
    ParameterError
        An option out of range or unknown; both ``args`` and option keywords.
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
    >>> from aria_tda.diagnostics import DiagnoseArgs
    >>> diagnose(S, DiagnoseArgs(n_energy=3, topk=None)).energy_ratios == d.energy_ratios[:3]
    True
    """
    a = resolve_diagnose_args(args, options)
    if client is not None and a.mode in ("exact-tiled", "approx"):
        raise ParameterError(f"mode: expected 'exact' or 'auto' with a Dask client, got {a.mode!r}")
    room = headroom()
    if client is not None and type(scores).__module__.startswith("dask"):
        src: Any = scores.T if a.transpose else scores  # a dask array: reduced block by block
    else:
        with out_of_memory("opening the score matrix", "raise the limit"):
            src = as_source(scores, key=a.key, transpose=a.transpose)
    check_dims(*src.shape)
    _warn_orientation(*src.shape, transposed=a.transpose, fmt=getattr(src, "format", None))
    return run_passes(src, a, client=client, room=room)


def run_passes(src: Any, args: DiagnoseArgs, *, client: Any = None,
               room: int | None = None) -> Diagnostics:
    """Pick the backend of :func:`diagnose` for an opened matrix and run it.

    The one dispatcher: with a Dask ``client``, the Dask tasks; else the mode
    :func:`choose_mode` picks — ``"exact"`` (NumPy, or torch on ``args.device``),
    ``"exact-tiled"`` or ``"approx"``. Each backend is called as ``backend(src, args, acc)``
    (the Dask one with its ``client`` too), ``acc`` the
    :class:`~aria_tda.diagnostics.concentration.TopKAccumulator` of ``args.topk`` (``None``
    when off) that its first pass feeds. For the exact and approximate passes under a memory
    budget (``args.memory``, or an address-space limit) ``args.chunk_rows`` is set to rows
    that fit it first.

    Parameters
    ----------
    src : ScoreSource or dask.array.Array
        The opened matrix ``(M, T)`` (a dask array only with ``client``).
    args : DiagnoseArgs
        The options.
    client : dask.distributed.Client, optional
        Run the Dask backend on it.
    room : int, optional
        The headroom under an address-space limit when the call began
        (:func:`aria_tda._memory.headroom`; ``None``: no limit).

    Returns
    -------
    Diagnostics
    """
    if client is not None:
        acc = TopKAccumulator(src.shape[1], args.topk, n_rows=src.shape[0]) if args.topk else None
        return _diagnose_dask(src, args, acc, client)
    mode, _ = choose_mode(src.n_cols, mode=args.mode, memory=args.memory)
    with out_of_memory(f"the {mode} pass over {src.n_rows} x {src.n_cols} scores",
                       _smaller(mode, room)):
        acc = TopKAccumulator(src.n_cols, args.topk, n_rows=src.n_rows) if args.topk else None
        if (mode != "exact-tiled" and args.chunk_rows is None
                and (args.memory is not None or room is not None)):
            args = args.replace(
                chunk_rows=_budget_rows(src, mode, args.memory, args.compute_dtype, acc))
        return _BACKENDS[mode](src, args, acc)


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


def _diagnose_exact(src: Any, args: DiagnoseArgs, acc: TopKAccumulator | None) -> Diagnostics:
    """:func:`diagnose` in mode ``"exact"``: one pass summing the in-memory Gram (NumPy, or
    torch on ``args.device``), which also feeds ``acc``."""
    stats = stream_stats(
        src,
        chunk_rows=args.chunk_rows,
        compute_dtype=args.compute_dtype,
        device=args.device,
        n_threads=args.n_threads,
        progress=args.progress,
        observers=() if acc is None else (acc,),
    )
    d = diagnostics_from_stats(stats, n_energy=args.n_energy, device=args.device)
    if acc is not None:
        d = replace(d, concentration=acc.result())
    if args.with_u1:
        u1 = stream_matvec(src, d.v1, chunk_rows=args.chunk_rows, device=args.device,
                           progress=args.progress)
        d = replace(d, u1=u1 / d.sigma1)
    return d


def _diagnose_dask(
    src: Any, args: DiagnoseArgs, acc: TopKAccumulator | None, client: Any
) -> Diagnostics:
    """:func:`diagnose` with its passes run as Dask tasks on ``client``
    (:mod:`aria_tda.diagnostics.distributed`); the tasks' top-K, merged, go into ``acc``."""
    from aria_tda.diagnostics.distributed import matvec_dask, stats_topk_dask

    stats, parts = stats_topk_dask(
        src, client=client, chunk_rows=args.chunk_rows, key=args.key,
        compute_dtype=args.compute_dtype, topk=args.topk,
    )
    d = diagnostics_from_stats(stats, n_energy=args.n_energy)
    if acc is not None and parts is not None:
        d = replace(d, concentration=acc.merge(parts).result())
    if args.with_u1:
        u = matvec_dask(src, d.v1, client=client, chunk_rows=args.chunk_rows, key=args.key)
        d = replace(d, u1=u / d.sigma1)
    return d


#: The local backends of :func:`run_passes`, by mode.
_BACKENDS: dict[str, Callable[[Any, DiagnoseArgs, TopKAccumulator | None], Diagnostics]] = {
    "exact": _diagnose_exact,
    "exact-tiled": diagnose_tiled,
    "approx": diagnose_approx,
}


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
    scores: Any, args: DiagnoseArgs | None = None, *, client: Any = None, **options: Any
) -> Diagnostics:
    r"""In-memory reference of :func:`diagnose`: ``np.corrcoef`` for κ, ``np.linalg.svd`` for r_i.

    Loads the whole matrix (``(M, T)``) and computes in float64 from the definitions, whatever
    the stored dtype. Constant columns are those with ``np.ptp == 0``. Used to test
    :func:`diagnose` and as the naive route in the benchmark.

    Parameters
    ----------
    scores : array-like, torch.Tensor, ScoreSource or path
        ``(M, T)``, read whole.
    args : DiagnoseArgs, optional
        The options (or give them as keywords, not both). Of them ``n_energy``, ``with_u1``
        (:math:`u_1` from the SVD), ``key``, ``transpose`` and ``topk`` (from
        :func:`~aria_tda.diagnostics.concentration.topk_concentration_reference`) are used;
        the others only say how :func:`diagnose` computes (no streaming, always exact).
    client : dask.distributed.Client, optional
        Ignored.
    **options : Any
        The fields of :class:`~aria_tda.diagnostics.args.DiagnoseArgs` as keywords.
    """
    a = resolve_diagnose_args(args, options)
    n_energy, ks = a.n_energy, a.topk
    s = np.asarray(as_source(scores, key=a.key, transpose=a.transpose).to_numpy(),
                   dtype=np.float64)
    m, t = s.shape
    check_dims(m, t)
    if not np.isfinite(s).all():
        i, j = np.argwhere(~np.isfinite(s))[0]
        raise DataError(f"scores: expected finite scores, got {s[i, j]} at row {i}, column {j}")
    constant = np.ptp(s, axis=0) == 0
    const_idx = np.flatnonzero(constant)
    warn_constant(const_idx, t)
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
        u1=(u[:, 0].astype(np.float64) * sign) if a.with_u1 else None,
        concentration=topk_concentration_reference(s, ks) if ks else None,
    )
