r"""The score-matrix passes on a Dask cluster (``pip install 'aria-tda[scale]'``): the kernels.

Only the distributed *kernels* live here (:func:`stats_dask`, :func:`matvec_dask`);
:func:`aria_tda.diagnostics.diagnose` with ``client=`` assembles the diagnostics from them.
:func:`run_ordered` is the task runner of the other distributed passes (S_track aggregation,
:mod:`aria_tda.scores.distributed_aggregate`; top-K groups and homogeneity,
:mod:`aria_tda.homogeneity.distributed`): large shared inputs are scattered once, results are
consumed in task order (so merges are deterministic), and a worker that dies mid-task only
costs a rerun — Dask reschedules its tasks, and when the only copy of a scattered input was on
it, the input is scattered again and the unfinished tasks resubmitted.

The same kernel as the single-machine path (:func:`aria_tda.scores.stats.block_stats`, streamed by
:func:`~aria_tda.scores.stats.stream_stats`) runs as one ``dask.delayed`` task per row range; each
task re-opens the file-backed matrix itself (nothing large crosses the network), returns its
float64 :class:`~aria_tda.scores.stats.BlockStats`, and the partial sums are merged in float64 in
a tree (``split_every`` at a time). All tasks share one shift vector (the first block's column
means, read on the client), so the merge is exact addition. Dask arrays (and in-memory
arrays) are reduced block by block in the same way.

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

import concurrent.futures
import itertools
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda._checks import check_int
from aria_tda._optional import require
from aria_tda._progress import progress as _progress
from aria_tda.errors import ParameterError, expected
from aria_tda.scores.blockstats import BlockStats
from aria_tda.scores.formats import FORMATS, sniff_format
from aria_tda.scores.readers import as_source, open_scores
from aria_tda.scores.source import (
    ArraySource,
    ScoreSource,
    _resolve_chunk_rows,
    block_dtype_for,
    check_matrix_shape,
)
from aria_tda.scores.stats import block_stats, locate_nonfinite, stream_matvec, stream_stats

__all__ = ["matvec_dask", "open_part", "row_ranges", "run_ordered", "source_args",
           "stats_dask"]

#: Test-only hook: seconds every :func:`run_ordered` task sleeps before it runs (read in
#: the worker), so a test can kill a worker while tasks are in flight.
TASK_DELAY_ENV = "ARIA_TEST_TASK_DELAY"
#: How often :func:`run_ordered` re-scatters lost shared inputs before giving up.
SCATTER_RETRIES = 5


def row_ranges(n_rows: int, n_parts: int, align: int) -> list[tuple[int, int]]:
    """Split ``0..n_rows`` into at most ``n_parts`` ranges starting at multiples of ``align``.

    Parameters
    ----------
    n_rows : int
        Rows to cover.
    n_parts : int
        Most ranges to make.
    align : int
        Every range but the last starts and ends on a multiple of it.
    """
    n_blocks = -(-n_rows // align)
    n_parts = max(1, min(n_parts, n_blocks))
    edges = [min(n_rows, (n_blocks * i // n_parts) * align) for i in range(n_parts + 1)]
    return [(a, b) for a, b in itertools.pairwise(edges) if b > a]


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
) -> BlockStats:
    src = _reopen(path, key, transposed)
    try:
        return stream_stats(
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
        )
    finally:
        src.close()


def _reopen(path: str, key: str | None, transposed: bool) -> ScoreSource:
    """Open ``path`` in a worker the way the client opened it."""
    native = FORMATS[sniff_format(Path(path))].queries_first
    return open_scores(path, key=key, transpose=transposed != native)


def _array_block_stats(
    block: Any, start: int, shift: np.ndarray, gram: bool, moments: int, compute_dtype: str | None
) -> BlockStats:
    arr = np.asarray(block)
    if arr.dtype.kind != "f":
        arr = arr.astype(np.float64)
    elif arr.dtype.itemsize < 4:
        arr = arr.astype(np.float32)
    with np.errstate(all="ignore"):
        st = block_stats(arr, shift=shift, gram=gram, moments=moments, compute_dtype=compute_dtype)
    if not (np.isfinite(st.s1).all() and np.isfinite(st.s2).all()):
        raise locate_nonfinite(arr, start)
    return st


def _merge(*parts: BlockStats) -> BlockStats:
    out = parts[0]
    for p in parts[1:]:
        out = out.merge(p)
    return out


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


def _n_parts(client: Any, n_partitions: int | None) -> int:
    if n_partitions is not None:
        return check_int("n_partitions", n_partitions, min_value=1)
    if client is not None:
        try:
            return max(1, 2 * sum(client.nthreads().values()))
        except Exception:  # pragma: no cover - exotic clients
            return 4
    return 4


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
    require("dask", "scale", purpose="running the score passes on a Dask cluster")
    import dask

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
            task(blk, int(s), shift, gram, moments, compute_dtype)
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
            str(src.path), src.key, src.transposed, a, b, shift, rows, gram, moments, compute_dtype
        )
        for a, b in row_ranges(src.n_rows, _n_parts(client, n_partitions), rows)
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
    rows = _resolve_chunk_rows(chunk_rows, (m, t), arr.dtype)
    if not is_dask:
        return da.from_array(arr, chunks=(rows, t))
    if chunk_rows is not None:
        return arr.rechunk({0: rows, 1: -1})
    return arr if arr.chunks[1] == (t,) else arr.rechunk({1: -1})


def _partition_matvec(
    path: str, key: str | None, transposed: bool, start: int, stop: int, v: np.ndarray, rows: int
) -> np.ndarray:
    src = _reopen(path, key, transposed)
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
        for a, b in row_ranges(src.n_rows, _n_parts(client, n_partitions), rows)
    ]
    return np.concatenate(_compute(parts, client))


# ----------------------------------------------------------------------------------------
# the task runner of the other distributed passes
# ----------------------------------------------------------------------------------------
def source_args(src: ScoreSource) -> tuple[str | None, str | None, bool, np.ndarray | None]:
    """``(path, key, transposed, array)``: how a task re-opens ``src`` (:func:`open_part`).

    A file-backed source is re-opened from its path inside each task (nothing large crosses
    the network); anything else is read into memory here and handed over as ``array`` (pass
    it through ``shared=`` of :func:`run_ordered`, so it is scattered once).

    Parameters
    ----------
    src : ScoreSource
        The matrix, as opened on the client.
    """
    if src.path is not None:
        return str(src.path), src.key, bool(src.transposed), None
    arr = src.array if isinstance(src, ArraySource) else src.to_numpy()
    return None, None, False, np.asarray(arr)


def open_part(
    path: str | None, key: str | None, transposed: bool, array: np.ndarray | None
) -> ScoreSource:
    """Open, inside a task, the matrix described by :func:`source_args`.

    Parameters
    ----------
    path, key, transposed : str or None, str or None, bool
        The file (``path=None``: ``array`` is the matrix).
    array : numpy.ndarray or None
        The matrix in memory.
    """
    if path is None:
        if array is None:
            raise ParameterError(expected("array", "the matrix when there is no path", None))
        return ArraySource(array)
    return _reopen(path, key, transposed)


def _task_delay() -> None:
    """Sleep ``$ARIA_TEST_TASK_DELAY`` seconds (test hook; unset: no delay)."""
    value = os.environ.get(TASK_DELAY_ENV, "").strip()
    if value:
        time.sleep(float(value))


def _call_task(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    _task_delay()
    return func(*args, **kwargs)


def run_ordered(
    client: Any,
    func: Callable[..., Any],
    calls: Sequence[tuple[Any, ...]],
    consume: Callable[[int, Any], None],
    *,
    shared: dict[str, Any] | None = None,
    progress: bool | None = None,
    desc: str = "tasks",
) -> None:
    """Run ``func(*calls[i], **shared)`` as Dask tasks; hand each result to ``consume`` in order.

    ``shared`` holds the large inputs every task reads (an in-memory matrix, features, a
    segment map): each is scattered once (``broadcast=False``) and the tasks get futures of
    it, so Dask copies it to a worker at most once. Results are consumed in the order of
    ``calls`` (a merge is then deterministic) and released as they are consumed. A worker
    that dies mid-task costs a rerun: Dask reschedules its tasks on the others, and if it held
    the only copy of a shared input (the tasks are then cancelled, "lost dependencies"), the
    shared inputs are scattered again and the calls not yet consumed resubmitted (at most
    :data:`SCATTER_RETRIES` times).

    Parameters
    ----------
    client : dask.distributed.Client
        The cluster.
    func : callable
        A module-level function (workers import it by name).
    calls : sequence of tuple
        The positional arguments of every task.
    consume : callable
        ``consume(i, result)``, called on this machine in the order of ``calls``.
    shared : dict, optional
        Keyword arguments common to every task, scattered once.
    progress : bool, optional
        Draw a progress bar over the tasks.
    desc : str
        Label of the progress bar.
    """
    shared = dict(shared or {})
    n = len(calls)
    retries = 0

    def submit(first: int) -> list[Any]:
        nonlocal retries
        while True:
            try:
                refs = {k: client.scatter(v, broadcast=False, hash=False)
                        for k, v in shared.items()}
            except OSError:  # the worker chosen to receive them went away meanwhile
                if retries >= SCATTER_RETRIES:
                    raise
                retries += 1
                time.sleep(0.5 * retries)
                continue
            return [
                client.submit(_call_task, func, *calls[i], pure=False, **refs)
                for i in range(first, n)
            ]

    futures = submit(0)
    base = 0
    with _progress(total=n, desc=desc, unit="task", enabled=progress) as bar:
        i = 0
        while i < n:
            try:
                result = futures[i - base].result()
            except concurrent.futures.CancelledError:
                if retries >= SCATTER_RETRIES:
                    raise
                retries += 1
                for f in futures[i - base :]:
                    f.release()
                futures, base = submit(i), i
                continue
            futures[i - base] = None
            consume(i, result)
            bar.update(1)
            i += 1
