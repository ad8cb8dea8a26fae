r"""The leading singular triple of ``S`` and the rank-1 residual (paper §4.4).

With :math:`S = \sum_i \sigma_i u_i v_i^\top`, the right singular vectors are eigenvectors of
the Gram matrix :math:`S^\top S = V \Sigma^2 V^\top`, so one streaming pass (the Gram, see
:mod:`aria_tda.scores.stats`) gives :math:`\sigma_1` and :math:`v_1`; a second pass gives
:math:`u_1 = S v_1 / \sigma_1`. The sign is fixed so that :math:`\sum_j v_{1j} \ge 0` (ties:
the first non-zero entry of :math:`v_1` is positive).

The residual :math:`S - \sigma_1 u_1 v_1^\top` is a lazy :class:`~aria_tda.scores.ScoreSource`:
each row block is formed on the fly, so it streams into normalisation and aggregation like
any stored matrix.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from aria_tda._checks import check_int
from aria_tda.errors import DataError, ParameterError, expected
from aria_tda.scores.readers import ScoreSource, as_source
from aria_tda.scores.stats import BlockStats, blas_threads, free_cpus, stream_matvec, stream_stats

__all__ = ["LANCZOS_MIN_T", "Rank1", "ResidualSource", "fix_sign", "rank1",
           "rank1_from_gram", "rank1_from_stats", "residual", "top_eigenpairs"]


def fix_sign(v: np.ndarray) -> float:
    """The sign (+1/-1) that makes ``sum(v) >= 0`` (ties: first non-zero entry positive).

    Parameters
    ----------
    v : numpy.ndarray
        A singular vector.
    """
    total = float(np.sum(v))
    if total > 0:
        return 1.0
    if total < 0:
        return -1.0
    nz = np.flatnonzero(v)
    return 1.0 if nz.size == 0 or v[nz[0]] > 0 else -1.0


#: From this many columns on, the top eigenpairs come from Lanczos iterations (ARPACK) on the
#: Gram instead of LAPACK's dense solver, whose tridiagonal reduction is :math:`O(T^3)` and
#: memory-bound: at T = 7,148 the ten largest took 35 s against 5 s (the top one 55 s against
#: 0.6 s), equal to 2e-15 of :math:`\sigma_1^2`.
LANCZOS_MIN_T = 1024


def _lanczos(gram: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The ``k`` largest eigenpairs (descending) by ARPACK to full precision, or ``None`` when
    it does not converge (the dense solver is then used)."""
    import scipy.sparse.linalg as sla

    t = gram.shape[0]
    v0 = np.random.default_rng(0).standard_normal(t)  # a fixed start: the same result each run
    try:
        w, v = sla.eigsh(gram, k=k, which="LA", tol=0.0, v0=v0)
    except (sla.ArpackNoConvergence, sla.ArpackError):
        return None
    order = np.argsort(w)[::-1]
    return w[order], v[:, order]


def top_eigenpairs(
    gram: np.ndarray, k: int, *, device: Any = None, overwrite: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    r"""The ``k`` largest eigenvalues (descending, clipped at 0) and eigenvectors of ``gram``.

    Parameters
    ----------
    gram : numpy.ndarray [shape=(T, T)]
        Symmetric positive semi-definite (:math:`S^\top S`).
    k : int
        ``1 <= k``; values beyond ``T`` are returned as zeros (no vectors).
    device : str, optional
        Run ``torch.linalg.eigh`` on this device (a GPU) instead of LAPACK on the CPU.
    overwrite : bool
        Let LAPACK destroy ``gram`` (saves one ``T x T`` copy).

    Returns
    -------
    values : numpy.ndarray [shape=(k,)]
    vectors : numpy.ndarray [shape=(T, min(k, T))]
        Column ``i`` belongs to ``values[i]``; column 0 is sign-fixed (:func:`fix_sign`).
    """
    t = gram.shape[0]
    kk = min(k, t)
    if device is not None and str(device) != "cpu":
        import torch

        w_t, v_t = torch.linalg.eigh(torch.as_tensor(gram, device=device))
        w, v = w_t.cpu().numpy()[::-1][:kk], v_t.cpu().numpy()[:, ::-1][:, :kk]
    elif t >= LANCZOS_MIN_T and kk <= t // 8 and (w_v := _lanczos(gram, kk)) is not None:
        w, v = w_v
    else:
        import scipy.linalg

        # the tridiagonal reduction is memory-bound BLAS-2: a few threads at most (on a busy
        # 2-core machine two spinning OpenBLAS threads made it 15x slower than one)
        with blas_threads(min(4, max(1, free_cpus() // 2))):
            if kk == t:
                w, v = scipy.linalg.eigh(gram, check_finite=False, overwrite_a=overwrite)
            else:
                w, v = scipy.linalg.eigh(
                    gram,
                    subset_by_index=[t - kk, t - 1],
                    driver="evr",
                    check_finite=False,
                    overwrite_a=overwrite,
                )
        w, v = w[::-1], v[:, ::-1]
    values = np.zeros(k)
    values[:kk] = np.maximum(w, 0.0)
    vectors = np.ascontiguousarray(v)
    vectors[:, 0] *= fix_sign(vectors[:, 0])
    return values, vectors


@dataclass(frozen=True, eq=False)
class Rank1:
    r"""The leading singular triple :math:`(\sigma_1, u_1, v_1)` of ``S``.

    Attributes
    ----------
    sigma1 : float
        :math:`\sigma_1 = \lVert S v_1 \rVert_2`.
    u1 : numpy.ndarray [shape=(M,)]
        Unit train-side (segment-indexed) vector, :math:`u_1 = S v_1 / \sigma_1`.
    v1 : numpy.ndarray [shape=(T,)]
        Unit test-side (query-indexed) vector, :math:`\sum_j v_{1j} \ge 0`.
    """

    sigma1: float
    u1: np.ndarray
    v1: np.ndarray

    def rows(self, start: int, stop: int) -> np.ndarray:
        r"""Rows ``start:stop`` of :math:`\sigma_1 u_1 v_1^\top` ``(stop-start, T)``.

        Parameters
        ----------
        start, stop : int
            Row range.
        """
        return np.multiply.outer(self.sigma1 * self.u1[start:stop], self.v1)


def rank1_from_stats(
    src: ScoreSource,
    stats: BlockStats,
    *,
    chunk_rows: int | None = None,
    device: Any = None,
    progress: bool | None = None,
) -> Rank1:
    """:class:`Rank1` from a finished Gram pass plus the second pass for ``u1``.

    Parameters
    ----------
    src : ScoreSource
        The matrix ``S``.
    stats : BlockStats
        Its Gram pass (:func:`aria_tda.scores.stats.stream_stats`).
    chunk_rows : int, optional
        Rows per block of the ``S v_1`` pass.
    device : str, optional
        Torch device of the eigensolver and the pass.
    progress : bool, optional
        Draw a progress bar.
    """
    return rank1_from_gram(src, stats.raw_gram(), chunk_rows=chunk_rows, device=device,
                           progress=progress)


def rank1_from_gram(src: ScoreSource, gram: np.ndarray, *, chunk_rows: int | None = None,
                    device: Any = None, progress: bool | None = None) -> Rank1:
    r""":class:`Rank1` of ``src`` from its raw Gram :math:`S^\top S` (summed elsewhere) and
    one ``S v_1`` pass.

    Parameters
    ----------
    src : ScoreSource
        The matrix ``S``.
    gram : numpy.ndarray [shape=(T, T)], float64
        :math:`S^\top S` (destroyed).
    chunk_rows : int, optional
        Rows per block of the ``S v_1`` pass.
    device : str, optional
        Torch device of the eigensolver and the pass.
    progress : bool, optional
        Draw a progress bar.
    """
    values, vectors = top_eigenpairs(gram, 1, device=device, overwrite=True)
    sigma1 = float(np.sqrt(values[0]))
    if sigma1 == 0.0:
        raise DataError("scores: expected a matrix with non-zero entries, got an all-zero matrix")
    v1 = vectors[:, 0]
    u1 = stream_matvec(src, v1, chunk_rows=chunk_rows, device=device, progress=progress) / sigma1
    return Rank1(sigma1=sigma1, u1=u1, v1=v1)


def rank1(
    scores: Any,
    *,
    chunk_rows: int | None = None,
    key: str | None = None,
    device: Any = None,
    progress: bool | None = None,
) -> Rank1:
    r"""The leading singular triple of ``S`` in two streaming passes.

    Parameters
    ----------
    scores : array-like, torch.Tensor, ScoreSource or path
        The score matrix ``(M, T)``.
    chunk_rows : int, optional
        Rows per streamed block.
    key : str, optional
        Array to read from an ``.npz``/torch dict/zarr group.
    device : str, optional
        Torch device for the kernel (``"cuda"``).
    progress : bool, optional

    Returns
    -------
    Rank1
        ``sigma1``, ``u1 (M,)``, ``v1 (T,)`` with ``sum(v1) >= 0``.
    """
    src = as_source(scores, key=key)
    stats = stream_stats(src, chunk_rows=chunk_rows, device=device, progress=progress)
    return rank1_from_stats(src, stats, chunk_rows=chunk_rows, device=device, progress=progress)


_rank1 = rank1


class ResidualSource(ScoreSource):
    r"""Lazy :math:`S - \sigma_1 u_1 v_1^\top`, formed one row block at a time (float64)."""

    def __init__(self, base: ScoreSource, r1: Rank1) -> None:
        if r1.u1.shape != (base.n_rows,) or r1.v1.shape != (base.n_cols,):
            raise ParameterError(
                expected(
                    "rank1",
                    f"vectors of shapes ({base.n_rows},) and ({base.n_cols},)",
                    f"{r1.u1.shape} and {r1.v1.shape}",
                )
            )
        super().__init__(base.shape, np.float64, row_ids=base.row_ids, manifest=None)
        self.base = base
        self.rank1 = r1
        self.io_bound = base.io_bound or not base.zero_copy

    def _raw_rows(self, start: int, stop: int) -> np.ndarray:
        return self._read_into(start, stop, np.empty((stop - start, self.n_cols)))

    def _read_into(self, start: int, stop: int, out: np.ndarray) -> np.ndarray:
        rows = self.base.read_rows(start, stop)
        np.subtract(rows, self.rank1.rows(start, stop), out=out)
        return out

    def describe(self) -> str:
        return f"residual of {self.base.describe()} (sigma1={self.rank1.sigma1:.6g})"


def residual(
    scores: Any,
    *,
    rank1: Rank1 | None = None,
    chunk_rows: int | None = None,
    key: str | None = None,
    device: Any = None,
    progress: bool | None = None,
) -> ResidualSource:
    r"""The rank-1 residual :math:`S - \sigma_1 u_1 v_1^\top` as a lazy, streamed source.

    Parameters
    ----------
    scores : array-like, torch.Tensor, ScoreSource or path
    rank1 : Rank1, optional
        A precomputed leading triple (e.g. ``diagnose(..., with_u1=True)``); computed with
        two streaming passes when omitted.
    chunk_rows, key, device, progress
        As in :func:`rank1`.

    Returns
    -------
    ResidualSource
        float64 blocks; ``row_ids`` of the input.
    """
    src = as_source(scores, key=key)
    if rank1 is None:
        rank1 = _rank1(src, chunk_rows=chunk_rows, device=device, progress=progress)
    elif not isinstance(rank1, Rank1):
        raise ParameterError(
            expected("rank1", "a Rank1 (from aria_tda.scores.rank1())", type(rank1).__name__)
        )
    if chunk_rows is not None:
        check_int("chunk_rows", chunk_rows, min_value=1)
    return ResidualSource(src, rank1)
