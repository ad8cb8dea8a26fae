r"""The diagnostics' Gram and matvec passes on a Dask cluster (``pip install 'aria-tda[scale]'``).

:func:`stats_dask` and :func:`matvec_dask` are the kernels; :func:`aria_tda.diagnostics.diagnose`
with ``client=`` assembles the diagnostics from them. The row ranges and the re-opening of a
file inside a task are those of the other distributed passes (:mod:`aria_tda.scores.distributed`).

The same kernel as the single-machine path (:func:`aria_tda.scores.stats.block_stats`, streamed by
:func:`~aria_tda.scores.stats.stream_stats`) runs as one ``dask.delayed`` task per row range; each
task re-opens the file-backed matrix itself (nothing large crosses the network), returns its
float64 :class:`~aria_tda.scores.blockstats.BlockStats`, and the partial sums are merged in
float64 in a tree (``split_every`` at a time). All tasks share one shift vector (the first
block's column means, read on the client), so the merge is exact addition. Dask arrays (and
in-memory arrays) are reduced block by block in the same way.

Why not ``x.T @ x`` on a dask array: it accumulates in the input precision and keeps several
``T x T`` partials per worker (gigabytes at ``T ~ 7000``).

A :class:`~dask.distributed.LocalCluster` with worker *processes* must be created under
``if __name__ == "__main__":`` (workers are spawned and re-import the main module)::

    from dask.distributed import Client, LocalCluster
    from aria_tda.diagnostics import diagnose

    if __name__ == "__main__":
        with LocalCluster(n_workers=4, threads_per_worker=1) as cluster, Client(cluster) as client:
            d = diagnose("scores.zarr", client=client)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from aria_tda._checks import check_int
from aria_tda._optional import require
from aria_tda.diagnostics.concentration import TopKAccumulator
from aria_tda.errors import ParameterError, expected
from aria_tda.scores.blockstats import BlockStats
from aria_tda.scores.distributed import n_parts, reopen, row_ranges
from aria_tda.scores.readers import as_source
from aria_tda.scores.source import (
    ArraySource,
    ScoreSource,
    block_dtype_for,
    check_matrix_shape,
    resolve_chunk_rows,
)
from aria_tda.scores.stats import block_stats, locate_nonfinite, stream_matvec, stream_stats

__all__ = ["matvec_dask", "stats_dask", "stats_topk_dask"]


def _partition_stats(
    path: str,
    key: str | None,
    transposed: bool,
    start: int,
    stop: int,
    shift: np.ndarray,
    chunk_rows: int,
    gram: bool,
    moments: int,
    compute_dtype: str | None,
    topk: tuple[int, ...] = (),
) -> tuple[BlockStats, TopKAccumulator | None]:
    src = reopen(path, key, transposed)
    acc = TopKAccumulator(src.n_cols, topk, n_rows=src.n_rows) if topk else None
    try:
        st = stream_stats(
            src,
            chunk_rows=chunk_rows,
            gram=gram,
            moments=moments,
            shift=shift,
            start=start,
            stop=stop,
            compute_dtype=compute_dtype,
            prefetch=False,
            progress=False,
            observers=() if acc is None else (acc,),
        )
    finally:
        src.close()
    return st, acc


def _array_block_stats(
    block: Any, start: int, shift: np.ndarray, gram: bool, moments: int, compute_dtype: str | None,
    topk: tuple[int, ...] = (), n_rows: int | None = None,
) -> tuple[BlockStats, TopKAccumulator | None]:
    arr = np.asarray(block)
    if arr.dtype.kind != "f":
        arr = arr.astype(np.float64)
    elif arr.dtype.itemsize < 4:
        arr = arr.astype(np.float32)
    with np.errstate(all="ignore"):
        st = block_stats(arr, shift=shift, gram=gram, moments=moments, compute_dtype=compute_dtype)
    if not (np.isfinite(st.s1).all() and np.isfinite(st.s2).all()):
        raise locate_nonfinite(arr, start)
    acc = None
    if topk:
        acc = TopKAccumulator(arr.shape[1], topk, n_rows=n_rows)
        acc.update(arr, start)
    return st, acc


def _merge(
    *parts: tuple[BlockStats, TopKAccumulator | None],
) -> tuple[BlockStats, TopKAccumulator | None]:
    st, acc = parts[0]
    for p_st, p_acc in parts[1:]:
        st = st.merge(p_st)
        if acc is not None and p_acc is not None:
            acc = acc.merge(p_acc)
    return st, acc


def _tree_merge(parts: list[Any], split_every: int) -> Any:
    import dask

    merge = dask.delayed(_merge, pure=True)
    while len(parts) > 1:
        parts = [merge(*parts[i : i + split_every]) for i in range(0, len(parts), split_every)]
    return parts[0]


def _compute(obj: Any, client: Any) -> Any:
    import dask

    if client is not None:
        return client.gather(client.compute(obj))
    return dask.compute(obj)[0]


def _dask_array(scores: Any) -> Any | None:
    """The input as a dask array when it is one (or an in-memory array), else None."""
    mod = type(scores).__module__
    if mod.startswith("dask"):
        return scores
    if isinstance(scores, ArraySource):
        return scores.array
    if isinstance(scores, np.ndarray):
        return scores
    return None


def stats_dask(
    scores: Any,
    *,
    client: Any = None,
    chunk_rows: int | None = None,
    n_partitions: int | None = None,
    gram: bool = True,
    moments: int = 2,
    key: str | None = None,
    compute_dtype: str | None = None,
    split_every: int = 4,
) -> BlockStats:
    r"""One Gram/moment pass as Dask tasks; same result as
    :func:`~aria_tda.scores.stats.stream_stats`.

    Parameters
    ----------
    scores : path, file-backed ScoreSource, dask.array.Array or numpy.ndarray
        ``(M, T)``. Files are re-opened inside each task (workers need the same path).
    client : dask.distributed.Client, optional
        Default: the current Dask scheduler.
    chunk_rows : int, optional
        Rows per block inside a task (and the alignment of the row ranges).
    n_partitions : int, optional
        Number of row-range tasks (default: twice the cluster's threads).
    gram : bool
        Also sum the Gram matrix (as :func:`~aria_tda.scores.stats.block_stats`).
    moments : {2, 4}
        Power sums to keep (as :func:`~aria_tda.scores.stats.block_stats`).
    key : str, optional
        Array of an ``.npz``/torch dict/zarr group/safetensors file.
    compute_dtype : {None, "float32", "float64"}
        Precision of the block products (as :func:`~aria_tda.scores.stats.block_stats`).
    split_every : int
        Fan-in of the float64 merge tree.

    Returns
    -------
    BlockStats
    """
    return stats_topk_dask(
        scores, client=client, chunk_rows=chunk_rows, n_partitions=n_partitions, gram=gram,
        moments=moments, key=key, compute_dtype=compute_dtype, split_every=split_every,
    )[0]


def stats_topk_dask(
    scores: Any,
    *,
    client: Any = None,
    chunk_rows: int | None = None,
    n_partitions: int | None = None,
    gram: bool = True,
    moments: int = 2,
    key: str | None = None,
    compute_dtype: str | None = None,
    split_every: int = 4,
    topk: Sequence[int] = (),
) -> tuple[BlockStats, TopKAccumulator | None]:
    r""":func:`stats_dask` and, in the same tasks, the queries' top-K rows.

    Each row-range task also feeds a
    :class:`~aria_tda.diagnostics.concentration.TopKAccumulator`; the tree merges them with the
    sums (:meth:`~aria_tda.diagnostics.concentration.TopKAccumulator.merge`).

    Parameters
    ----------
    scores, client, chunk_rows, n_partitions, gram, moments, key, compute_dtype, split_every
        As :func:`stats_dask`.
    topk : sequence of int
        The ``K`` to measure; empty: none (the accumulator is ``None``).

    Returns
    -------
    stats : BlockStats
    accumulator : TopKAccumulator or None
        Call its ``result()`` for the :class:`~aria_tda.diagnostics.concentration.Concentration`.
    """
    require("dask", "scale", purpose="running the score passes on a Dask cluster")
    import dask

    ks = tuple(topk)

    split_every = check_int("split_every", split_every, min_value=2)
    arr = _dask_array(scores)
    if arr is not None:
        x = _as_dask_rows(arr, chunk_rows)
        first = np.asarray(x.blocks[0, 0].compute(), dtype=np.float64)
        if not np.isfinite(first).all():
            raise locate_nonfinite(first, 0)
        shift = first.mean(axis=0)
        starts = np.concatenate([[0], np.cumsum(x.chunks[0])[:-1]])
        task = dask.delayed(_array_block_stats, pure=True)
        parts = [
            task(blk, int(s), shift, gram, moments, compute_dtype, ks, int(x.shape[0]))
            for blk, s in zip(x.to_delayed()[:, 0], starts, strict=True)
        ]
        return _compute(_tree_merge(parts, split_every), client)
    src = as_source(scores, key=key)
    if src.path is None:
        raise ParameterError(
            expected(
                "scores",
                "a file-backed matrix, a dask array or a numpy array for the Dask path",
                src.describe(),
            )
        )
    rows = src.chunk_rows(chunk_rows)
    first = src.read_rows(0, min(rows, src.n_rows))
    if not np.isfinite(first).all():
        raise locate_nonfinite(first, 0)
    shift = first.mean(axis=0, dtype=np.float64)
    task = dask.delayed(_partition_stats, pure=True)
    parts = [
        task(
            str(src.path), src.key, src.transposed, a, b, shift, rows, gram, moments,
            compute_dtype, ks,
        )
        for a, b in row_ranges(src.n_rows, n_parts(client, n_partitions), rows)
    ]
    return _compute(_tree_merge(parts, split_every), client)


def _as_dask_rows(arr: Any, chunk_rows: int | None) -> Any:
    """A dask array of ``arr`` in row blocks spanning all columns."""
    import dask.array as da

    is_dask = type(arr).__module__.startswith("dask")
    if not is_dask:
        arr = np.asarray(arr)
    m, t = check_matrix_shape(arr.shape)
    block_dtype_for(arr.dtype)
    rows = resolve_chunk_rows(chunk_rows, (m, t), arr.dtype)
    if not is_dask:
        return da.from_array(arr, chunks=(rows, t))
    if chunk_rows is not None:
        return arr.rechunk({0: rows, 1: -1})
    return arr if arr.chunks[1] == (t,) else arr.rechunk({1: -1})


def _partition_matvec(
    path: str, key: str | None, transposed: bool, start: int, stop: int, v: np.ndarray, rows: int
) -> np.ndarray:
    src = reopen(path, key, transposed)
    try:
        return stream_matvec(src, v, chunk_rows=rows, start=start, stop=stop, progress=False)
    finally:
        src.close()


def matvec_dask(
    scores: Any,
    v: np.ndarray,
    *,
    client: Any = None,
    chunk_rows: int | None = None,
    n_partitions: int | None = None,
    key: str | None = None,
) -> np.ndarray:
    r""":math:`S v` ``(M,)`` in float64 as Dask tasks over row ranges (or dask-array blocks).

    Parameters
    ----------
    scores : path, file-backed ScoreSource, dask.array.Array or numpy.ndarray
        ``(M, T)``.
    v : numpy.ndarray [shape=(T,)]
        The vector.
    client : dask.distributed.Client, optional
        Default: the current Dask scheduler.
    chunk_rows : int, optional
        Rows per block inside a task.
    n_partitions : int, optional
        Number of row-range tasks.
    key : str, optional
        Array of an ``.npz``/torch dict/zarr group/safetensors file.
    """
    require("dask", "scale", purpose="running the score passes on a Dask cluster")
    import dask

    arr = _dask_array(scores)
    vec = np.asarray(v, dtype=np.float64)
    if arr is not None:
        x = _as_dask_rows(arr, chunk_rows)
        return np.asarray(_compute(x.astype(np.float64) @ vec, client))
    src: ScoreSource = as_source(scores, key=key)
    rows = src.chunk_rows(chunk_rows)
    task = dask.delayed(_partition_matvec, pure=True)
    parts = [
        task(str(src.path), src.key, src.transposed, a, b, vec, rows)
        for a, b in row_ranges(src.n_rows, n_parts(client, n_partitions), rows)
    ]
    return np.concatenate(_compute(parts, client))
