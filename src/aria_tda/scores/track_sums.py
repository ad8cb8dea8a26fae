r"""S_track from the sums of one pass: what the track aggregation needs, read beside another pass.

The z-score aggregation (:func:`aria_tda.scores.aggregation.aggregate`) is affine in the scores,
so its two inputs — the column moments and the per-track sums — can be summed in *any* pass
over the rows, for example the diagnostics' Gram pass:

.. math::

    S^{\mathrm{track}}_{tj} = \Bigl(\tfrac{1}{n_t} \textstyle\sum_{i \in t} (S_{ij} - c_j)
        + c_j - \mu_j\Bigr) / \sigma_j

with any shift :math:`c` (the first block's column means: the sums stay small, so nothing is
lost to cancellation). :class:`TrackSums` is an observer (``update(block, row0)``, as
:func:`aria_tda.scores.stats.stream_stats` and :func:`aria_tda.diagnostics.modes.observe_first_pass`
call it) that adds each block to both, in float64.

The rank-1 residual :math:`R = S - \sigma_1 u_1 v_1^\top` needs :math:`v_1` — the whole Gram —
before :math:`u_1 = S v_1 / \sigma_1` and the column moments of :math:`R` can be summed, so it
takes one more pass (:func:`residual_pass`), which reads each block once and forms
:math:`u_1` and :math:`R` from it. Its track sums need no pass at all:
:math:`\sum_{i \in t} R_{ij} = \sum_{i \in t} S_{ij} - \sigma_1 (\sum_{i \in t} u_{1i}) v_{1j}`.
:func:`finish_track_scores` turns the sums into both ``S_track`` matrices, one row block at a
time. (The residual's moments could be had from the Gram alone — :math:`\sum_i R_{ij}^2 =
\sum_i S_{ij}^2 - 2 v_{1j} (G v_1)_j + v_{1j}^2\, v_1^\top G v_1` — but that subtracts sums that
agree to the digits of :math:`r_1`, from a Gram summed with float32 products: a near-collapsed
matrix, the case that matters, would lose its residual's scale.)

:func:`aria_tda.scores.aggregation.aggregate` is the reference these are tested against.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from aria_tda.errors import DataError, ParameterError, expected
from aria_tda.scores.blockstats import BlockStats
from aria_tda.scores.lowrank import Rank1
from aria_tda.scores.normalization import ColumnMoments, warn_constant_zscore
from aria_tda.scores.source import ScoreSource
from aria_tda.scores.stats import locate_nonfinite

__all__ = ["ResidualRead", "TrackSums", "finish_track_scores", "residual_pass"]

#: Bytes of one row block of the finishing pass over ``S_track`` (float64).
FINISH_BLOCK_BYTES = 64 * 2**20


def _host(block: Any) -> np.ndarray:
    """A NumPy view (or copy) of a block: torch tensors on a GPU come to the host."""
    if hasattr(block, "detach") and hasattr(block, "cpu"):
        return np.asarray(block.detach().cpu().numpy())
    return np.asarray(block)


def _moment_sums(acc: BlockStats, y: np.ndarray) -> None:
    """Add the centred block ``y`` (float64) to the power sums of ``acc``."""
    acc.s1 += np.add.reduce(y, axis=0)
    acc.s2 += np.einsum("ij,ij->j", y, y)
    if acc.s3 is not None and acc.s4 is not None:
        y2 = y * y
        acc.s3 += np.einsum("ij,ij->j", y2, y)
        acc.s4 += np.einsum("ij,ij->j", y2, y2)
    acc.n += y.shape[0]


def _add_by_track(target: np.ndarray, y: np.ndarray, codes: np.ndarray) -> None:
    """``target[codes[i]] += y[i]`` for every row (segments of a track summed first)."""
    from scipy import sparse

    u, inv = np.unique(codes, return_inverse=True)
    n = codes.size
    ind = sparse.csr_matrix((np.ones(n), (inv, np.arange(n))), shape=(u.size, n))
    target[u] += ind @ y


class TrackSums:
    r"""Per-track sums of :math:`S - c` and the column power sums, from the blocks of a pass.

    An observer: call :meth:`update` with every row block of one pass over the rows
    ``start .. start + len(codes)`` (in any order, each once). Everything is float64.

    Parameters
    ----------
    target : numpy.ndarray [shape=(N, T)], float64
        Zeros; receives :math:`\sum_{i \in t} (S_{ij} - c_j)` in row ``t`` (a writer's memory
        map, so the sums are never held twice).
    codes : numpy.ndarray [shape=(rows,)] of int
        Row of ``target`` (track) of every row read; ``None``: row ``i`` is track ``i``.
    moments : {2, 4}
        Power sums to keep (4: also the third and fourth, for the ``auto`` rule's kurtosis).
    shift : numpy.ndarray [shape=(T,)], optional
        The shift :math:`c` (shared by the tasks of a distributed pass); default: the column
        means of the first block seen.
    start : int
        First row of the pass (the row of ``codes[0]``).
    """

    def __init__(self, target: np.ndarray, codes: np.ndarray | None, *, moments: int = 2,
                 shift: np.ndarray | None = None, start: int = 0) -> None:
        if moments not in (2, 4):
            raise ParameterError(expected("moments", "2 or 4", moments))
        if target.ndim != 2 or target.dtype != np.float64:
            raise ParameterError(expected("target", "a float64 (N, T) array",
                                          f"{target.dtype} of shape {target.shape}"))
        self.target = target
        self.codes = None if codes is None else np.asarray(codes, dtype=np.int64)
        self.moments = moments
        self.start = start
        self.stats: BlockStats | None = None
        if shift is not None:
            self.stats = BlockStats.zeros(np.asarray(shift, dtype=np.float64), gram=False,
                                          moments=moments)
        self._work: np.ndarray | None = None

    @property
    def n_rows(self) -> int:
        """Rows summed so far."""
        return 0 if self.stats is None else self.stats.n

    def update(self, block: Any, row0: int) -> None:
        """Add rows ``row0 .. row0 + len(block)`` (finite, as the pass checked them).

        Parameters
        ----------
        block : numpy.ndarray or torch.Tensor [shape=(rows, T)]
            The rows as read (the buffer may be reused after this returns).
        row0 : int
            Row index of the block's first row.
        """
        x = _host(block)
        n, t = x.shape
        if self.stats is None:
            with np.errstate(all="ignore"):
                c = x.mean(axis=0, dtype=np.float64)
            if not np.isfinite(c).all():
                raise locate_nonfinite(x, row0)
            self.stats = BlockStats.zeros(c, gram=False, moments=self.moments)
        if self._work is None or self._work.shape[0] < n or self._work.shape[1] != t:
            self._work = np.empty((n, t))
        y = self._work[:n]
        np.subtract(x, self.stats.shift, out=y)
        _moment_sums(self.stats, y)
        a = row0 - self.start
        if self.codes is None:
            self.target[a : a + n] = y
        else:
            _add_by_track(self.target, y, self.codes[a : a + n])

    def merge(self, stats: BlockStats) -> None:
        """Add the power sums of other rows (a distributed pass's part, same shift).

        Parameters
        ----------
        stats : BlockStats
            :attr:`stats` of another :class:`TrackSums` over other rows.
        """
        self.stats = stats if self.stats is None else self.stats.merge(stats)

    def column_moments(self) -> ColumnMoments:
        """The column moments of every row summed (:class:`ColumnMoments`)."""
        if self.stats is None or self.stats.n == 0:
            raise DataError(expected("scores", "at least one row", "none were read"))
        return ColumnMoments.from_stats(self.stats)


@dataclass(frozen=True, eq=False)
class ResidualRead:
    r"""What the residual pass gives: :math:`(\sigma_1, u_1, v_1)` and the moments of ``R``.

    Attributes
    ----------
    rank1 : Rank1
        The leading triple, :math:`u_1 = S v_1 / \sigma_1`.
    stats : BlockStats
        Power sums of the columns of :math:`R = S - \sigma_1 u_1 v_1^\top` (float64).
    """

    rank1: Rank1
    stats: BlockStats

    def column_moments(self) -> ColumnMoments:
        """The column moments of the residual."""
        return ColumnMoments.from_stats(self.stats)


def residual_rows(x: np.ndarray, sigma1: float, v1: np.ndarray,
                  out: np.ndarray) -> np.ndarray:
    r""":math:`u = x v_1 / \sigma_1` of a block, and its residual rows written to ``out``.

    Parameters
    ----------
    x : numpy.ndarray [shape=(rows, T)]
        Score rows.
    sigma1 : float
        :math:`\sigma_1`.
    v1 : numpy.ndarray [shape=(T,)]
        :math:`v_1`.
    out : numpy.ndarray [shape=(rows, T)], float64
        Receives :math:`x - \sigma_1 u v_1^\top`, as
        :class:`~aria_tda.scores.lowrank.ResidualSource` forms it.
    """
    u = (x @ v1) / sigma1
    np.subtract(x, np.multiply.outer(sigma1 * u, v1), out=out)
    return u


def residual_pass(
    src: ScoreSource,
    sigma1: float,
    v1: np.ndarray,
    *,
    chunk_rows: int | None = None,
    start: int = 0,
    stop: int | None = None,
    shift: np.ndarray | None = None,
    out: np.ndarray | None = None,
    progress: bool | None = None,
) -> ResidualRead:
    r"""One pass: :math:`u_1 = S v_1 / \sigma_1` and the column power sums of the residual.

    Parameters
    ----------
    src : ScoreSource
        The matrix ``S``.
    sigma1 : float
        :math:`\sigma_1 > 0` (the diagnostics' Gram).
    v1 : numpy.ndarray [shape=(T,)]
        :math:`v_1`, sign-fixed (:func:`aria_tda.scores.lowrank.fix_sign`).
    chunk_rows : int, optional
        Rows per block.
    start, stop : int
        Row range (a distributed pass's part); ``u1`` then covers it alone.
    shift : numpy.ndarray [shape=(T,)], optional
        The residual's shift (shared by the parts); default: its first block's column means.
    out : numpy.ndarray [shape=(rows, T)], float64, optional
        Also write the residual rows here (``normalize = "none"``: the residual is the output).
    progress : bool, optional
        Draw a progress bar.
    """
    if not sigma1 > 0.0:
        raise DataError("scores: expected a matrix with non-zero entries, got an all-zero matrix")
    v = np.asarray(v1, dtype=np.float64)
    stop = src.n_rows if stop is None else stop
    u1 = np.empty(stop - start)
    acc: BlockStats | None = None
    if shift is not None:
        acc = BlockStats.zeros(np.asarray(shift, dtype=np.float64), gram=False, moments=2)
    work: np.ndarray | None = None
    for s, block in src.iter_chunks(chunk_rows, start=start, stop=stop, reuse_buffers=True,
                                    progress=progress, desc="residual pass"):
        n = block.shape[0]
        if work is None or work.shape[0] < n:
            work = np.empty((n, src.n_cols))
        r = work[:n]
        u1[s - start : s - start + n] = residual_rows(block, sigma1, v, r)
        if not np.isfinite(r).all():
            raise locate_nonfinite(block, s)
        if out is not None:
            out[s - start : s - start + n] = r
        if acc is None:
            acc = BlockStats.zeros(r.mean(axis=0), gram=False, moments=2)
        r -= acc.shift
        _moment_sums(acc, r)
    if acc is None:
        raise DataError(expected("scores", "at least one row", f"rows {start}:{stop}"))
    return ResidualRead(Rank1(sigma1=float(sigma1), u1=u1, v1=v), acc)


def finish_track_scores(
    sums: np.ndarray,
    counts: np.ndarray,
    moments: ColumnMoments,
    shift: np.ndarray,
    *,
    residual: tuple[np.ndarray, ResidualRead, np.ndarray | None] | None = None,
    gram: np.ndarray | None = None,
    gram_dtype: Any = np.float64,
) -> None:
    r"""Turn the track sums into the z-scored ``S_track`` in place (and its residual's).

    Parameters
    ----------
    sums : numpy.ndarray [shape=(N, T)], float64
        :math:`\sum_{i \in t} (S_{ij} - c_j)` (:class:`TrackSums`); overwritten with ``S_track``.
    counts : numpy.ndarray [shape=(N,)]
        Segments per track (all ones without aggregation).
    moments : ColumnMoments
        Column moments of ``S`` (:meth:`TrackSums.column_moments`).
    shift : numpy.ndarray [shape=(T,)]
        The shift :math:`c` the sums were taken about.
    residual : (out, ResidualRead, codes), optional
        Also write the residual's ``S_track`` into ``out`` ``(N, T)`` float64, from the
        residual pass and the track of every segment (``codes``; ``None``: the identity).
    gram : numpy.ndarray [shape=(T, T)], float64, optional
        Zeros; receives :math:`S_{\mathrm{track}}^\top S_{\mathrm{track}}` of the z-scored
        ``S_track`` (summed in float64), so its leading singular triple (the alignment's
        :math:`u_1`) needs no pass of its own over it.
    gram_dtype : numpy dtype
        Precision of the Gram's block products: float32 for scores stored in float32 or less
        (the precision of the scores themselves, as the diagnostics' Gram), float64 otherwise.
    """
    warn_constant_zscore(moments.constant)
    n_tracks, t = sums.shape
    counts = np.asarray(counts, dtype=np.float64)
    scale = np.where(moments.constant, 0.0, 1.0 / np.where(moments.constant, 1.0, moments.std))
    offset = np.asarray(shift, dtype=np.float64) - moments.mean
    res = None
    if residual is not None:
        out, read, codes = residual
        rm = read.column_moments()
        warn_constant_zscore(rm.constant)
        r_scale = np.where(rm.constant, 0.0, 1.0 / np.where(rm.constant, 1.0, rm.std))
        r_offset = np.asarray(shift, dtype=np.float64) - rm.mean
        u1 = read.rank1.u1
        au = u1 if codes is None else np.bincount(codes, weights=u1, minlength=n_tracks)
        au = au / counts
        sv = read.rank1.sigma1 * read.rank1.v1
        res = (out, r_scale, r_offset, au, sv)
    step = max(1, FINISH_BLOCK_BYTES // (8 * max(1, t)))
    work = np.empty((min(step, n_tracks), t))
    for a in range(0, n_tracks, step):
        b = min(a + step, n_tracks)
        mean = work[: b - a]
        np.divide(sums[a:b], counts[a:b, None], out=mean)  # mean of S - c over the track
        if res is not None:
            out, r_scale, r_offset, au, sv = res
            block = mean - np.multiply.outer(au[a:b], sv)
            block += r_offset
            block *= r_scale
            out[a:b] = block
        mean += offset
        mean *= scale
        sums[a:b] = mean
        if gram is not None:
            y = mean if np.dtype(gram_dtype) == np.float64 else mean.astype(gram_dtype)
            gram += y.T @ y
