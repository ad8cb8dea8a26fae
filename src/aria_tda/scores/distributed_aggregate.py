r"""S_track aggregation (:func:`aria_tda.scores.aggregation.aggregate`) as Dask tasks.

``aggregate(..., client=client)`` runs the same passes as the single-machine path, each as
tasks (:func:`aria_tda.scores.distributed.run_ordered`) that re-open the score file themselves:

1. with ``residual=True``, the Gram pass (float64 partial sums per row range, merged in row
   order about one shared shift) and the ``S v_1`` pass give :math:`(\sigma_1, u_1, v_1)`;
   the rank-1 part is scattered once and every later task subtracts it block by block;
2. the column moments give the z-score's mean and scale and the ``"auto"`` rule's kurtosis:
   every task returns its float64 column sums *per streamed chunk*, and the client folds them
   in row order — the very additions of the single-machine pass, so the moments, and with
   them the z-scores and ``S_track`` (see 3), are bit-identical to it;
3. z-score: every row range returns its partial per-track sums (only the tracks it touches,
   ``(n, T)`` float64); they are added into ``S_track`` in row-range order and divided by the
   segment counts once. The additions are those of the single-machine path (per chunk into
   the track's running sum, chunks in row order), so without ``residual`` ``S_track`` is
   bit-identical and exact ties rank alike. With ``residual``, the Gram is merged per row
   range rather than per chunk, so :math:`v_1` and the residual ``S_track`` may differ in
   the last bits (the tests' small float32 matrices come out bit-identical; at the paper's
   fine stage the top-K scores differed by <= 2e-15 with identical top-K lists): only two
   residual values that tie exactly could then swap places. Rank: ranks need whole
   columns, so every task reads one block of query columns (the whole height of the
   matrix), ranks it and averages the ranks per track.

An in-memory matrix is scattered once; files are opened by path in the workers (which must see
the same path). The segment map, counts and moments are computed on the client, as on one
machine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from aria_tda._checks import check_choice
from aria_tda.errors import DataError
from aria_tda.scores.blockstats import BlockStats
from aria_tda.scores.distributed import n_parts, open_part, row_ranges, run_ordered, source_args
from aria_tda.scores.lowrank import Rank1, ResidualSource, top_eigenpairs
from aria_tda.scores.normalization import (
    COLUMN_BLOCK_BYTES,
    NORMALIZATIONS,
    ColumnMoments,
    ZScoreSource,
    check_finite_columns,
    rank_block,
    resolve_with_moments,
    warn_constant_zscore,
)
from aria_tda.scores.source import ScoreSource
from aria_tda.scores.stats import stream_matvec, stream_stats

__all__ = ["DaskAggregation"]


def _open(
    path: str | None, key: str | None, transposed: bool, array: Any, rank1: Rank1 | None
) -> ScoreSource:
    src = open_part(path, key, transposed, array)
    return src if rank1 is None else ResidualSource(src, rank1)


def _gram_part(
    path: str | None, key: str | None, transposed: bool, start: int, stop: int,
    shift: np.ndarray, rows: int, *, array: Any = None,
) -> BlockStats:
    """Gram and column sums of rows ``start:stop`` (the residual's pass, on the raw scores)."""
    src = open_part(path, key, transposed, array)
    try:
        return stream_stats(src, chunk_rows=rows, gram=True, moments=2, shift=shift,
                            start=start, stop=stop, prefetch=False, progress=False)
    finally:
        src.close()


def _chunk_stats_part(
    path: str | None, key: str | None, transposed: bool, start: int, stop: int,
    shift: np.ndarray, rows: int, moments: int, *, array: Any = None,
    rank1: Rank1 | None = None,
) -> list[BlockStats]:
    """Column sums of rows ``start:stop``, one :class:`BlockStats` per ``rows``-row chunk.

    Folded on the client in chunk order, they add up in exactly the order of the streamed
    single-machine pass, so the column moments (and the z-scores) are bit-identical.
    """
    src = _open(path, key, transposed, array, rank1)
    try:
        return [stream_stats(src, chunk_rows=rows, gram=False, moments=moments, shift=shift,
                             start=s, stop=min(s + rows, stop), prefetch=False, progress=False)
                for s in range(start, stop, rows)]
    finally:
        src.close()


def _matvec_part(
    path: str | None, key: str | None, transposed: bool, start: int, stop: int, rows: int,
    *, v: np.ndarray, array: Any = None,
) -> np.ndarray:
    src = open_part(path, key, transposed, array)
    try:
        return stream_matvec(src, v, chunk_rows=rows, start=start, stop=stop, progress=False)
    finally:
        src.close()


def _zscore_part(
    path: str | None, key: str | None, transposed: bool, start: int, stop: int, rows: int,
    codes: np.ndarray | None, *, moments: ColumnMoments, array: Any = None,
    rank1: Rank1 | None = None,
) -> tuple[np.ndarray | None, np.ndarray]:
    """``(tracks, partial sums)`` of rows ``start:stop`` (``tracks=None``: the z-scored rows)."""
    from scipy import sparse

    src = _open(path, key, transposed, array, rank1)
    try:
        z = ZScoreSource(src, moments)
        if codes is None:
            return None, z.read_rows(start, stop)
        tracks = np.unique(codes)
        out = np.zeros((tracks.size, src.n_cols))
        for s, block in z.iter_chunks(rows, start=start, stop=stop, prefetch=False,
                                      reuse_buffers=True):
            e = s + block.shape[0]
            u, inv = np.unique(codes[s - start : e - start], return_inverse=True)
            ind = sparse.csr_matrix(
                (np.ones(e - s), (inv, np.arange(e - s))), shape=(u.size, e - s)
            )
            out[np.searchsorted(tracks, u)] += ind @ block
        return tracks, out
    finally:
        src.close()


def _rank_part(
    path: str | None, key: str | None, transposed: bool, c0: int, c1: int, rows: int,
    *, counts: np.ndarray, codes: np.ndarray | None = None, array: Any = None,
    rank1: Rank1 | None = None,
) -> np.ndarray:
    """Columns ``c0:c1`` ranked and averaged per track ``(N, c1 - c0)``."""
    from scipy import sparse

    src = _open(path, key, transposed, array, rank1)
    try:
        bt = np.ascontiguousarray(src.read_columns(slice(c0, c1), chunk_rows=rows).T)
    finally:
        src.close()
    check_finite_columns(bt, c0)
    ranks = rank_block(bt)
    if codes is None:
        return np.ascontiguousarray(ranks.T)
    m = codes.size
    avg = sparse.csr_matrix((1.0 / counts[codes], (np.arange(m), codes)), shape=(m, counts.size))
    return np.asarray(avg.T @ ranks.T)


@dataclass
class DaskAggregation:
    """The distributed passes of one :func:`~aria_tda.scores.aggregation.aggregate` call.

    Construct it, call :meth:`resolve` (residual and normalisation), then :meth:`fill`.

    Attributes
    ----------
    src : ScoreSource
        The segment-level matrix as opened on the client.
    client : dask.distributed.Client
        The cluster.
    chunk_rows : int or None
        Rows per streamed block inside a task (also the alignment of the row ranges).
    progress : bool or None
        Progress bars over the tasks.
    """

    src: ScoreSource
    client: Any
    chunk_rows: int | None = None
    progress: bool | None = None

    def __post_init__(self) -> None:
        self.rows = self.src.chunk_rows(self.chunk_rows)
        self.n_parts = n_parts(self.client, None)
        path, key, transposed, array = source_args(self.src)
        self.file = (path, key, transposed)
        self.shared: dict[str, Any] = {} if array is None else {"array": array}
        self.rank1: Rank1 | None = None

    # -- passes ------------------------------------------------------------------------
    def _ranges(self) -> list[tuple[int, int]]:
        return row_ranges(self.src.n_rows, self.n_parts, self.rows)

    def _gram(self, shift: np.ndarray) -> BlockStats:
        """The Gram pass: per-range partial sums merged in row-range order."""
        acc: list[BlockStats] = []

        def add(_: int, part: BlockStats) -> None:
            acc[:] = [part] if not acc else [acc[0].merge(part)]

        calls = [(*self.file, a, b, shift, self.rows) for a, b in self._ranges()]
        run_ordered(self.client, _gram_part, calls, add, shared=self.shared,
                    progress=self.progress, desc="Gram pass")
        return acc[0]

    def _moments(self, *, moments: int, shift: np.ndarray) -> BlockStats:
        """Column sums folded chunk by chunk in row order (as the streamed local pass)."""
        acc = [BlockStats.zeros(shift, gram=False, moments=moments)]

        def add(_: int, parts: list[BlockStats]) -> None:
            for part in parts:
                acc[0] = acc[0].merge(part)

        shared = dict(self.shared)
        if self.rank1 is not None:
            shared["rank1"] = self.rank1
        calls = [(*self.file, a, b, shift, self.rows, moments) for a, b in self._ranges()]
        run_ordered(self.client, _chunk_stats_part, calls, add, shared=shared,
                    progress=self.progress, desc="column moments")
        return acc[0]

    def _first_block_mean(self) -> np.ndarray:
        """The default shift of :func:`~aria_tda.scores.stats.stream_stats`: first block's means."""
        src: ScoreSource = self.src
        if self.rank1 is not None:
            src = ResidualSource(src, self.rank1)
        first = src.read_rows(0, min(self.rows, src.n_rows))
        with np.errstate(all="ignore"):
            c = first.mean(axis=0, dtype=np.float64)
        if not np.isfinite(c).all():
            from aria_tda.scores.stats import locate_nonfinite

            raise locate_nonfinite(first, 0)
        return np.asarray(c)

    def residual(self) -> Rank1:
        r""":math:`(\sigma_1, u_1, v_1)` from a distributed Gram pass and ``S v_1`` pass."""
        stats = self._gram(self._first_block_mean())
        values, vectors = top_eigenpairs(stats.raw_gram(), 1, overwrite=True)
        sigma1 = float(np.sqrt(values[0]))
        if sigma1 == 0.0:
            raise DataError(
                "scores: expected a matrix with non-zero entries, got an all-zero matrix")
        v1 = vectors[:, 0]
        parts: list[np.ndarray] = []
        calls = [(*self.file, a, b, self.rows) for a, b in self._ranges()]
        run_ordered(self.client, _matvec_part, calls, lambda _, p: parts.append(p),
                    shared={**self.shared, "v": v1}, progress=self.progress, desc="S v1")
        u1 = np.concatenate(parts) / sigma1
        self.rank1 = Rank1(sigma1=sigma1, u1=u1, v1=v1)
        return self.rank1

    def resolve(
        self, method: str, *, residual: bool, kurtosis_threshold: float
    ) -> tuple[str, ColumnMoments | None, dict[str, Any]]:
        """As :func:`aria_tda.scores.normalization.resolve_method`, after the residual if asked.

        Parameters
        ----------
        method : {"zscore", "rank", "auto"}
            Normalisation asked for.
        residual : bool
            Aggregate the rank-1 residual.
        kurtosis_threshold : float
            :math:`\\tau` of the ``auto`` rule.
        """
        check_choice("normalize", method, NORMALIZATIONS)
        if residual and self.rank1 is None:
            self.residual()
        return resolve_with_moments(
            method, kurtosis_threshold,
            lambda kurtosis: ColumnMoments.from_stats(self._moments(
                moments=4 if kurtosis else 2, shift=self._first_block_mean())),
        )

    def fill(
        self, target: np.ndarray, method: str, moments: ColumnMoments | None,
        codes: np.ndarray, counts: np.ndarray, identity: bool,
    ) -> None:
        """Write ``S_track`` into the zero-initialised ``target`` ``(N, T)``.

        Parameters
        ----------
        target : numpy.ndarray [shape=(N, T)]
            Zeros (a writer's array or memory).
        method : {"zscore", "rank"}
            The resolved normalisation.
        moments : ColumnMoments or None
            The z-score's moments.
        codes : numpy.ndarray [shape=(M,)] of int64
            Track of every row.
        counts : numpy.ndarray [shape=(N,)]
            Segments per track.
        identity : bool
            Each row is its own track.
        """
        shared = dict(self.shared)
        if self.rank1 is not None:
            shared["rank1"] = self.rank1
        if method == "zscore":
            assert moments is not None
            warn_constant_zscore(moments.constant)
            ranges = self._ranges()

            def add(i: int, part: tuple[np.ndarray | None, np.ndarray]) -> None:
                tracks, block = part
                if tracks is None:
                    a, b = ranges[i]
                    target[a:b] = block
                else:
                    target[tracks] += block

            calls = [(*self.file, a, b, self.rows, None if identity else codes[a:b])
                     for a, b in ranges]
            run_ordered(self.client, _zscore_part, calls, add,
                        shared={**shared, "moments": moments}, progress=self.progress,
                        desc="aggregate")
            if not identity:
                step = max(1, (64 * 2**20) // (8 * target.shape[1]))
                for r in range(0, target.shape[0], step):
                    target[r : r + step] /= counts[r : r + step, None]
            return
        m, t = self.src.shape
        width = max(1, min(COLUMN_BLOCK_BYTES // (8 * m), -(-t // self.n_parts)))
        blocks = [(c, min(c + width, t)) for c in range(0, t, width)]

        def put(i: int, block: np.ndarray) -> None:
            c0, c1 = blocks[i]
            target[:, c0:c1] = block

        shared["counts"] = counts
        if not identity:
            shared["codes"] = codes
        cols: list[tuple[Any, ...]] = [(*self.file, c0, c1, self.rows) for c0, c1 in blocks]
        run_ordered(self.client, _rank_part, cols, put, shared=shared, progress=self.progress,
                    desc="aggregate (rank)")
