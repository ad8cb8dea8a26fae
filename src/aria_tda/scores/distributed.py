r"""The task runner of the distributed passes on a Dask cluster (``pip install 'aria-tda[scale]'``).

:func:`run_ordered` runs the distributed passes (S_track aggregation,
:mod:`aria_tda.scores.distributed_aggregate`; top-K groups and homogeneity,
:mod:`aria_tda.homogeneity.distributed`; the diagnostics' Gram pass uses :func:`row_ranges` and
the re-opening here, :mod:`aria_tda.diagnostics.distributed`): large shared inputs are scattered
once, results are consumed in task order (so merges are deterministic), and a worker that dies
mid-task only costs a rerun — Dask reschedules its tasks, and when the only copy of a scattered
input was on it, the input is scattered again and the unfinished tasks resubmitted.

Each task re-opens a file-backed matrix itself (:func:`source_args`, :func:`open_part`), so
nothing large crosses the network.
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
from aria_tda._progress import progress as _progress
from aria_tda.errors import ParameterError, expected
from aria_tda.scores.formats import FORMATS, sniff_format
from aria_tda.scores.readers import open_scores
from aria_tda.scores.source import ArraySource, ScoreSource

__all__ = ["n_parts", "open_part", "row_ranges", "run_ordered", "source_args"]



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


def reopen(path: str, key: str | None, transposed: bool) -> ScoreSource:
    """Open ``path`` in a worker the way the client opened it."""
    native = FORMATS[sniff_format(Path(path))].queries_first
    return open_scores(path, key=key, transpose=transposed != native)


def n_parts(client: Any, n_partitions: int | None) -> int:
    """How many row ranges a distributed pass splits into.

    Parameters
    ----------
    client : dask.distributed.Client or None
        The cluster: twice its threads (default 4 without one).
    n_partitions : int, optional
        Asked for explicitly.
    """
    if n_partitions is not None:
        return check_int("n_partitions", n_partitions, min_value=1)
    if client is not None:
        try:
            return max(1, 2 * sum(client.nthreads().values()))
        except Exception:  # pragma: no cover - exotic clients
            return 4
    return 4


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
    return reopen(path, key, transposed)


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
