r"""Per-query normalisation of a score matrix (paper §3.1 and Appendix "Per-query normalization").

Each column (query) of ``S`` ``(M, T)`` is rescaled on its own, so that queries with
high-variance scores do not dominate a later average over segments:

- ``"zscore"``: :math:`\tilde S_{ij} = (S_{ij} - \mu_j) / \sigma_j` with the column mean and
  population standard deviation (``ddof=0``). A constant column has no scale; it becomes 0
  (with an :class:`~aria_tda.errors.AriaWarning`).
- ``"rank"``: :math:`\tilde S_{ij}` = the rank of :math:`S_{ij}` within column ``j``,
  ``1..M`` ascending (higher score, higher rank), ties given their average rank — exact,
  as ``scipy.stats.rankdata(method="average")``. Outlier-resistant by construction.
- ``"auto"``: picks one of the two for the whole matrix by a heavy-tail rule (below).

The heavy-tail rule of ``"auto"``
---------------------------------
The paper picks by hand: z-score for TRAK and GradCos, whose columns are bounded and
near-symmetric, rank for LoGra and FactGraSS, whose columns are heavy-tailed with outliers
spanning orders of magnitude. Z-scoring fails exactly when a few segments carry much of a
column's squared deviation — which is what the excess kurtosis
:math:`\gamma_2 = m_4 / m_2^2 - 3` measures. ``auto`` therefore computes :math:`\gamma_2` of
every non-constant column (in the same single streaming pass that gives the means and standard
deviations) and chooses

.. math::

    \text{rank} \iff \operatorname{median}_j \gamma_{2,j} > \tau, \qquad \tau = 10
    \ (\text{``kurtosis_threshold``}),

else z-score. Reference values of :math:`\gamma_2`: uniform -1.2, Gaussian 0, logistic 1.2,
Laplace 3, Student-t(5) 6 — all z-scored; log-normal(σ=1) ≈ 111, Pareto, Student-t(≤4) and
Cauchy-like columns (infinite population kurtosis, sample values growing with ``M``) — ranked.
The median makes the choice robust to a few odd queries. The choice and the median
:math:`\gamma_2` are recorded in the output's manifest.

Rank needs whole columns. Matrices up to ``in_memory_bytes`` are ranked in memory; larger
ones are transposed once into a temporary column-major file (streamed, positional writes)
and ranked a few columns at a time, so memory stays bounded by ``M`` times a few columns.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda._checks import check_choice, check_float, check_int
from aria_tda._io import reserve_space, sweep_leftovers, temp_name
from aria_tda._progress import progress as _progress
from aria_tda.errors import AriaWarning, DataError
from aria_tda.scores.blockstats import BlockStats
from aria_tda.scores.readers import as_source, open_scores
from aria_tda.scores.source import ArraySource, ScoreSource
from aria_tda.scores.stats import stream_stats
from aria_tda.scores.writers import ScoreWriter

__all__ = [
    "IN_MEMORY_BYTES",
    "KURTOSIS_THRESHOLD",
    "NORMALIZATIONS",
    "ColumnMoments",
    "ZScoreSource",
    "check_finite_columns",
    "choose_normalization",
    "column_moments",
    "iter_column_blocks",
    "normalize",
    "rank_block",
    "resolve_method",
    "resolve_with_moments",
    "warn_constant_zscore",
]

NORMALIZATIONS = ("zscore", "rank", "auto")
#: Default threshold :math:`\tau` on the median excess kurtosis for ``normalize="auto"``.
KURTOSIS_THRESHOLD = 10.0
#: Matrices up to this size (as float64) are ranked in memory, larger ones via a transpose.
IN_MEMORY_BYTES = 256 * 2**20
#: Target bytes of one column block (as float64) in the rank path.
COLUMN_BLOCK_BYTES = 64 * 2**20


@dataclass(frozen=True, eq=False)
class ColumnMoments:
    r"""Per-column moments of ``S`` (population, ``ddof=0``).

    Attributes
    ----------
    n : int
        ``M``.
    mean, std : numpy.ndarray [shape=(T,)]
    excess_kurtosis : numpy.ndarray [shape=(T,)] or None
        :math:`m_4/m_2^2 - 3` (NaN for constant columns); ``None`` unless asked for.
    constant : numpy.ndarray [shape=(T,)] of bool
        Columns constant up to rounding (:meth:`BlockStats.constant_mask`).
    """

    n: int
    mean: np.ndarray
    std: np.ndarray
    excess_kurtosis: np.ndarray | None
    constant: np.ndarray

    @classmethod
    def from_stats(cls, stats: BlockStats) -> ColumnMoments:
        """The moments from the sums of a moments pass.

        Parameters
        ----------
        stats : BlockStats
            Sums over all rows (with ``moments=4`` for the kurtosis).
        """
        constant = stats.constant_mask()
        kurt = None
        if stats.s3 is not None:
            m2, _, m4 = stats.central_moments()
            with np.errstate(divide="ignore", invalid="ignore"):
                kurt = np.where(constant, np.nan, m4 / (m2 * m2) - 3.0)
        std = np.sqrt(stats.centered_ss / stats.n)
        return cls(n=stats.n, mean=stats.mean, std=std, excess_kurtosis=kurt, constant=constant)


def column_moments(
    scores: Any,
    *,
    kurtosis: bool = True,
    chunk_rows: int | None = None,
    key: str | None = None,
    progress: bool | None = None,
) -> ColumnMoments:
    """Column means, standard deviations and excess kurtosis in one streaming pass.

    Parameters
    ----------
    scores : array-like, torch.Tensor, ScoreSource or path
        ``(M, T)``.
    kurtosis : bool
        Also the excess kurtosis (third and fourth power sums).
    chunk_rows : int, optional
        Rows per streamed block.
    key : str, optional
        Array of a file with several.
    progress : bool, optional
        Draw a progress bar.
    """
    src = as_source(scores, key=key)
    stats = stream_stats(
        src,
        chunk_rows=chunk_rows,
        gram=False,
        moments=4 if kurtosis else 2,
        progress=progress,
        desc="column moments",
    )
    return ColumnMoments.from_stats(stats)


def choose_normalization(
    scores: Any, *, kurtosis_threshold: float = KURTOSIS_THRESHOLD, chunk_rows: int | None = None
) -> tuple[str, float]:
    r"""The heavy-tail rule of ``normalize="auto"`` (see the module docstring).

    Parameters
    ----------
    scores : ColumnMoments, array-like, ScoreSource or path
        The moments, or the matrix to take them from.
    kurtosis_threshold : float
        :math:`\tau`; rank when the median excess kurtosis of the non-constant columns
        exceeds it.
    chunk_rows : int, optional
        Rows per streamed block (when ``scores`` is a matrix).

    Returns
    -------
    method : {"zscore", "rank"}
    median_excess_kurtosis : float
        NaN when every column is constant (then ``"zscore"``, which maps them to 0).
    """
    tau = check_float("kurtosis_threshold", kurtosis_threshold)
    mom = (
        scores
        if isinstance(scores, ColumnMoments)
        else column_moments(scores, chunk_rows=chunk_rows)
    )
    if mom.excess_kurtosis is None:
        raise ValueError("choose_normalization needs ColumnMoments with kurtosis")
    k = mom.excess_kurtosis[~mom.constant]
    if k.size == 0:
        return "zscore", float("nan")
    med = float(np.median(k))
    return ("rank" if med > tau else "zscore"), med


# ----------------------------------------------------------------------------------------
# z-score: a lazy per-column affine map
# ----------------------------------------------------------------------------------------
class ZScoreSource(ScoreSource):
    r"""Lazy :math:`(S_{ij} - \mu_j)/\sigma_j` (float64); constant columns map to 0."""

    def __init__(self, base: ScoreSource, moments: ColumnMoments) -> None:
        super().__init__(base.shape, np.float64, row_ids=base.row_ids, manifest=None)
        self.base = base
        self.mean = moments.mean
        self.scale = np.where(
            moments.constant, 0.0, 1.0 / np.where(moments.constant, 1.0, moments.std)
        )
        self.io_bound = base.io_bound or not base.zero_copy

    def _raw_rows(self, start: int, stop: int) -> np.ndarray:
        return self._read_into(start, stop, np.empty((stop - start, self.n_cols)))

    def _read_into(self, start: int, stop: int, out: np.ndarray) -> np.ndarray:
        np.subtract(self.base.read_rows(start, stop), self.mean, out=out)
        out *= self.scale
        return out


def warn_constant_zscore(constant: np.ndarray) -> None:
    """Warn once that the z-score maps these constant columns to 0 (names the first few).

    Parameters
    ----------
    constant : numpy.ndarray [shape=(T,)] of bool
        :attr:`ColumnMoments.constant`.
    """
    if constant.any():
        idx = np.flatnonzero(constant)
        warnings.warn(
            f"{idx.size} of {constant.size} score columns are constant (first: {int(idx[0])}); "
            "z-score is undefined for them, so they are set to 0",
            AriaWarning,
            stacklevel=3,
        )


# ----------------------------------------------------------------------------------------
# rank: column blocks
# ----------------------------------------------------------------------------------------
def rank_block(block_t: np.ndarray) -> np.ndarray:
    """Average ranks (1..M, ties averaged) along axis 1 of ``block_t`` ``(w, M)`` (float64).

    Parameters
    ----------
    block_t : numpy.ndarray [shape=(w, M)]
        Columns of ``S``, transposed.
    """
    from scipy.stats import rankdata

    return np.asarray(rankdata(block_t, method="average", axis=1), dtype=np.float64)


def check_finite_columns(block_t: np.ndarray, c0: int) -> None:
    """Raise :class:`~aria_tda.errors.DataError` naming the first NaN/inf of a column block.

    Parameters
    ----------
    block_t : numpy.ndarray [shape=(w, M)]
        Columns ``c0 .. c0 + w`` of the matrix, transposed.
    c0 : int
        Index of the block's first column.
    """
    if not np.isfinite(block_t).all():
        bad = np.argwhere(~np.isfinite(block_t))
        order = np.lexsort((bad[:, 0], bad[:, 1]))  # first by row, then by column
        j, i = bad[order[0]]
        raise DataError(
            f"scores: expected finite scores, got {block_t[j, i]} at row {int(i)}, "
            f"column {c0 + int(j)}"
        )


def _pwrite_all(fd: int, view: memoryview, offset: int) -> None:
    done = 0
    while done < view.nbytes:
        done += os.pwrite(fd, view[done:], offset + done)


def iter_column_blocks(
    scores: Any,
    *,
    width: int | None = None,
    chunk_rows: int | None = None,
    tmp_dir: str | os.PathLike[str] | None = None,
    in_memory_bytes: int | None = None,
    progress: bool | None = None,
) -> Iterator[tuple[int, int, np.ndarray]]:
    r"""Yield ``(c0, c1, block_t)`` with ``block_t = S[:, c0:c1].T`` ``(w, M)``, C-contiguous.

    In-memory sources and matrices up to ``in_memory_bytes`` are sliced in memory; larger
    ones are first transposed into a temporary file in ``tmp_dir`` (one streaming pass of
    positional writes), which is removed afterwards. ``in_memory_bytes`` defaults to
    :data:`IN_MEMORY_BYTES`.

    Parameters
    ----------
    scores : array-like, torch.Tensor, ScoreSource or path
        ``(M, T)``.
    width : int, optional
        Columns per block (default: about 64 MB of float64).
    chunk_rows : int, optional
        Rows per streamed block of the transposing pass.
    tmp_dir : path-like, optional
        Where the temporary transpose goes.
    in_memory_bytes : int, optional
        Largest matrix sliced in memory.
    progress : bool, optional
        Draw a progress bar.
    """
    src = as_source(scores)
    m, t = src.shape
    if in_memory_bytes is None:
        in_memory_bytes = IN_MEMORY_BYTES
    if width is None:
        width = max(1, COLUMN_BLOCK_BYTES // (8 * m))
    width = min(check_int("width", width, min_value=1), t)
    steps = [(c, min(c + width, t)) for c in range(0, t, width)]
    bar = _progress(total=t, desc="columns", unit="col", enabled=progress)
    try:
        if isinstance(src, ArraySource) or m * t * 8 <= in_memory_bytes:
            full = src.array if isinstance(src, ArraySource) else src.to_numpy()
            for c0, c1 in steps:
                yield c0, c1, np.ascontiguousarray(full[:, c0:c1].T)
                bar.update(c1 - c0)
            return
        base = Path(tmp_dir) if tmp_dir is not None else Path(tempfile.gettempdir())
        base.mkdir(parents=True, exist_ok=True)
        sweep_leftovers(base)  # transposes of killed runs
        work = base / temp_name("aria-transpose")
        work.mkdir()
        try:
            path = work / "columns.bin"
            dtype = src.block_dtype
            itemsize = dtype.itemsize
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                reserve_space(fd, m * t * itemsize, path=path)
                for s, block in src.iter_chunks(
                    chunk_rows, progress=progress, desc="transpose", reuse_buffers=True
                ):
                    bt = np.ascontiguousarray(block.T)
                    for j in range(t):
                        _pwrite_all(fd, bt[j].data.cast("B"), (j * m + s) * itemsize)
                buf = np.empty((width, m), dtype=dtype)
                for c0, c1 in steps:
                    view = buf[: c1 - c0].data.cast("B")
                    done = 0
                    while done < view.nbytes:
                        done += os.preadv(fd, [view[done:]], c0 * m * itemsize + done)
                    yield c0, c1, buf[: c1 - c0]
                    bar.update(c1 - c0)
            finally:
                os.close(fd)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    finally:
        bar.close()


# ----------------------------------------------------------------------------------------
# public entry point
# ----------------------------------------------------------------------------------------
def resolve_method(
    src: ScoreSource,
    method: str,
    *,
    kurtosis_threshold: float,
    chunk_rows: int | None,
    progress: bool | None,
) -> tuple[str, ColumnMoments | None, dict[str, Any]]:
    """Resolve ``"auto"``; return (method, moments for z-score or None, manifest details).

    Parameters
    ----------
    src : ScoreSource
        The matrix (its column moments are taken for ``zscore`` and ``auto``).
    method : {"zscore", "rank", "auto"}
        Normalisation asked for.
    kurtosis_threshold : float
        :math:`\\tau` of the ``auto`` rule.
    chunk_rows : int, optional
        Rows per streamed block.
    progress : bool, optional
        Draw a progress bar.
    """
    return resolve_with_moments(
        method, kurtosis_threshold,
        lambda kurtosis: column_moments(src, kurtosis=kurtosis, chunk_rows=chunk_rows,
                                        progress=progress),
    )


def resolve_with_moments(
    method: str,
    kurtosis_threshold: float,
    moments_of: Callable[[bool], ColumnMoments],
) -> tuple[str, ColumnMoments | None, dict[str, Any]]:
    """:func:`resolve_method` with the column moments from ``moments_of(kurtosis)``.

    Parameters
    ----------
    method : {"zscore", "rank", "auto"}
        Normalisation asked for.
    kurtosis_threshold : float
        :math:`\\tau` of the ``auto`` rule.
    moments_of : callable
        Returns the column moments (with the fourth moment when called with ``True``); the
        single-machine stream or the Dask pass (:mod:`aria_tda.scores.distributed_aggregate`).
    """
    check_choice("normalize", method, NORMALIZATIONS)
    tau = check_float("kurtosis_threshold", kurtosis_threshold)
    details: dict[str, Any] = {"normalize_requested": method}
    moments = moments_of(method == "auto") if method in ("zscore", "auto") else None
    if method == "auto":
        assert moments is not None
        method, med = choose_normalization(moments, kurtosis_threshold=tau)
        details["median_excess_kurtosis"] = None if math.isnan(med) else med
        details["kurtosis_threshold"] = tau
    details["normalize"] = method
    return method, moments, details


def normalize(
    scores: Any,
    *,
    method: str = "zscore",
    out: str | os.PathLike[str] | None = None,
    chunk_rows: int | None = None,
    key: str | None = None,
    kurtosis_threshold: float = KURTOSIS_THRESHOLD,
    tmp_dir: str | os.PathLike[str] | None = None,
    progress: bool | None = None,
) -> ScoreSource:
    r"""Normalise each column (query) of ``S``: ``"zscore"``, ``"rank"`` or ``"auto"``.

    Parameters
    ----------
    scores : array-like, torch.Tensor, ScoreSource or path
        ``(M, T)``.
    method : {"zscore", "rank", "auto"}
        See the module docstring for the formulas and the ``auto`` rule.
    out : path-like, optional
        Write the result (``.npy``/``.zarr``, float64, with a manifest) and return it opened.
        Without it, z-score is returned lazily (computed per block when read) and rank in
        memory.
    chunk_rows : int, optional
    key : str, optional
    kurtosis_threshold : float
        :math:`\tau` of the ``auto`` rule.
    tmp_dir : path-like, optional
        Where the rank path may put its temporary transpose (default: beside ``out``, else
        the system temporary directory).
    progress : bool, optional

    Returns
    -------
    ScoreSource
        ``(M, T)`` float64; ``.manifest`` records ``normalize`` (the method used).
    """
    src = as_source(scores, key=key)
    chosen, moments, details = resolve_method(
        src, method, kurtosis_threshold=kurtosis_threshold, chunk_rows=chunk_rows, progress=progress
    )
    fields = {"kind": "normalized_scores", "parameters": details}
    if chosen == "zscore":
        assert moments is not None
        warn_constant_zscore(moments.constant)
        lazy = ZScoreSource(src, moments)
        if out is None:
            lazy.manifest = fields
            return lazy
        with ScoreWriter(
            out,
            shape=src.shape,
            dtype=np.float64,
            kind="normalized_scores",
            row_ids=src.row_ids,
            parameters=details,
        ) as w:
            for s, block in lazy.iter_chunks(
                chunk_rows, progress=progress, desc="z-score", reuse_buffers=True
            ):
                w.write_rows(s, block)
        return open_scores(out)
    if tmp_dir is None and out is not None:
        tmp_dir = Path(out).absolute().parent
    if out is None:
        result = np.empty(src.shape)
        for c0, c1, bt in iter_column_blocks(
            src, chunk_rows=chunk_rows, tmp_dir=tmp_dir, progress=progress
        ):
            check_finite_columns(bt, c0)
            result[:, c0:c1] = rank_block(bt).T
        return ArraySource(result, row_ids=src.row_ids, manifest=fields)
    with ScoreWriter(
        out,
        shape=src.shape,
        dtype=np.float64,
        kind="normalized_scores",
        row_ids=src.row_ids,
        parameters=details,
    ) as w:
        target = w.array
        for c0, c1, bt in iter_column_blocks(
            src, chunk_rows=chunk_rows, tmp_dir=tmp_dir, progress=progress
        ):
            check_finite_columns(bt, c0)
            target[:, c0:c1] = rank_block(bt).T
    return open_scores(out)


def normalize_reference(
    scores: Any,
    *,
    method: str = "zscore",
    out: str | os.PathLike[str] | None = None,
    chunk_rows: int | None = None,
    key: str | None = None,
    kurtosis_threshold: float = KURTOSIS_THRESHOLD,
    tmp_dir: str | os.PathLike[str] | None = None,
    progress: bool | None = None,
) -> ScoreSource:
    """In-memory reference of :func:`normalize`: ``scipy.stats`` per column.

    ``zscore``: ``scipy.stats.zscore`` (``ddof=0``; constant columns, ``np.ptp == 0``, map
    to 0); ``rank``: ``scipy.stats.rankdata(method="average")``; ``auto``: the median of
    ``scipy.stats.kurtosis`` (Fisher, biased) over non-constant columns against the threshold.

    Parameters
    ----------
    scores : array-like, torch.Tensor, ScoreSource or path
        ``(M, T)``, read whole.
    method : {"zscore", "rank", "auto"}
        The normalisation.
    out : path-like, optional
        Also write the result there (``.npy``/``.zarr``).
    chunk_rows : int, optional
        Ignored.
    key : str, optional
        Array of a file with several.
    kurtosis_threshold : float
        :math:`\tau` of the ``auto`` rule.
    tmp_dir : path-like, optional
        Ignored.
    progress : bool, optional
        Ignored.
    """
    from scipy import stats

    check_choice("normalize", method, NORMALIZATIONS)
    tau = check_float("kurtosis_threshold", kurtosis_threshold)
    src = as_source(scores, key=key)
    s = np.asarray(src.to_numpy(), dtype=np.float64)
    const = np.ptp(s, axis=0) == 0
    details: dict[str, Any] = {"normalize_requested": method}
    if method == "auto":
        k = stats.kurtosis(s[:, ~const], axis=0, fisher=True, bias=True)
        med = float(np.median(k)) if k.size else float("nan")
        method = "rank" if k.size and med > tau else "zscore"
        details["median_excess_kurtosis"] = None if math.isnan(med) else med
        details["kurtosis_threshold"] = tau
    details["normalize"] = method
    if method == "rank":
        result = np.asarray(stats.rankdata(s, method="average", axis=0), dtype=np.float64)
    else:
        result = np.zeros_like(s)
        result[:, ~const] = stats.zscore(s[:, ~const], axis=0, ddof=0)
    fields = {"kind": "normalized_scores", "parameters": details}
    if out is None:
        return ArraySource(result, row_ids=src.row_ids, manifest=fields)
    with ScoreWriter(
        out,
        shape=result.shape,
        dtype=np.float64,
        kind="normalized_scores",
        row_ids=src.row_ids,
        parameters=details,
    ) as w:
        w.write_rows(0, result)
    return open_scores(out)
