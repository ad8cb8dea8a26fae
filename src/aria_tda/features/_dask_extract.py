"""Per-file extraction on a Dask cluster: one task per file, results back in file order.

:func:`aria_tda.features.extract.extract_to_store` with ``client=`` (``aria-tda features
--scheduler``, ``aria-tda embed --scheduler``) hands its pending files to :func:`run_dask` instead
of the local process pool (:mod:`aria_tda.features.process_pool`). Everything else — which files are
pending (the store's resume logic), the reorder-and-flush loop, the store — is the engine's own, so
a cluster run writes the store a serial run writes.

How the work travels (:mod:`dask.distributed` does the scheduling; nothing here is a
scheduler):

- one task per pending file (``client.submit``, key ``aria-extract-<run>-<index>``) whose
  arguments are the file's path, track id, extraction parameters and the extractor's module
  name — never audio or feature arrays; workers read the files themselves (on a cluster the
  paths must be visible to every worker: a shared file system). At most ``window`` tasks are
  in flight beyond the first unwritten file, which bounds the reorder buffer;
- each worker process points numba's cache at ARIA's directory and runs the extractor's
  ``prepare_workers`` hook once, inside its first task (:func:`_setup`), as the engine does
  for its local workers;
- per-file failures (a corrupt, silent or empty file) come back as the extractor's error
  records, exactly as in the local path;
- a worker lost mid-task (killed, crashed, out of memory) makes Dask reschedule its tasks on
  the other workers; a task that was on more than ``distributed.scheduler.allowed-failures``
  lost workers ends in :class:`~distributed.KilledWorker` and is reported as :class:`Lost`
  (recorded in the store's errors table as ``worker died (KilledWorker)``, like a local
  :class:`~aria_tda.features.process_pool.Died`), and the run goes on. Dask counts *every* task that
  sat on a dying worker, so a file that shared workers with a crashing one can be recorded
  too; every recorded file is retried by the next run. After the first such loss one task
  re-runs the extractor's ``prepare_workers(params, force=True)`` on a worker (a corrupt JIT
  cache is detected and rebuilt there);
- a task that raises (rather than returning an error record) is recorded with its exception;
  a cancelled task (the cluster went away) stops the run: what was written stays, a rerun
  resumes.

Test hooks, read in the client when the run starts and handed to the tasks (so restarted
workers honour them too): ``ARIA_TEST_WORKER_DELAY=<seconds>`` sleeps that long before each
file; ``ARIA_TEST_WORKER_CRASH=<substring>`` makes the worker kill itself with SIGSEGV on a
file whose path contains the substring.
"""

from __future__ import annotations

import importlib
import os
import signal
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from aria_tda._optional import require
from aria_tda.features.per_file import configure_jit_cache, extract_task

__all__ = ["Lost", "run_dask"]

#: modules whose worker preparation ran in this (worker) process
_READY: set[str] = set()


@dataclass(frozen=True)
class Lost:
    """The result of a file whose task Dask gave up on (:class:`~distributed.KilledWorker`)."""

    label: str
    reason: str


def _setup(module: str, params: dict[str, Any]) -> None:
    """Once per worker process: numba's cache at ARIA's directory, the extractor's hook."""
    if module in _READY:
        return
    configure_jit_cache()
    try:
        mod = importlib.import_module(module)
    except ImportError:  # the task records the import error as the file's error
        return
    prepare = getattr(mod, "prepare_workers", None)
    if callable(prepare):
        prepare(params)
    _READY.add(module)


def _run_task(task: tuple[Any, ...], hooks: tuple[str | None, float]) -> tuple[Any, ...]:
    """Worker: extract one file (:func:`aria_tda.features.per_file.extract_task`)."""
    _setup(task[5], task[3])
    crash, delay = hooks
    if delay:
        time.sleep(delay)
    if crash and crash in task[1]:
        os.kill(os.getpid(), signal.SIGSEGV)
    return extract_task(task)


def _repair(module: str, params: dict[str, Any]) -> None:
    """Worker: re-run the extractor's ``prepare_workers(params, force=True)``."""
    prepare = getattr(importlib.import_module(module), "prepare_workers", None)
    if callable(prepare):
        prepare(params, force=True)


def _hooks() -> tuple[str | None, float]:
    crash = os.environ.get("ARIA_TEST_WORKER_CRASH") or None
    return crash, float(os.environ.get("ARIA_TEST_WORKER_DELAY") or 0)


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:500]


def run_dask(
    client: Any,
    tasks: Sequence[tuple[str, tuple[Any, ...]]],
    *,
    on_death: Callable[[Lost], None] | None = None,
    window: int | None = None,
) -> Iterator[Any]:
    """Run the engine's per-file tasks on ``client``'s cluster; yield the results in task order.

    Parameters
    ----------
    client : dask.distributed.Client
        The cluster (:func:`aria_tda._dask.open_client`).
    tasks : sequence of (str, tuple)
        ``(label, task)`` pairs: the file's path and the engine's task tuple
        ``(modality, path, track_id, kwargs, segments, module)``.
    on_death : callable, optional
        Called with the :class:`Lost` record of a file Dask gave up on.
    window : int, optional
        Tasks in flight beyond the first unwritten one (default: ``max(64, 4 × threads)``).

    Yields
    ------
    tuple or Lost
        The engine's result tuple (``("ok", ...)`` / ``("error", path, tid, message)``) per
        file, or a :class:`Lost` record.
    """
    distributed = require("dask.distributed", "scale", purpose="extraction on a Dask cluster")
    n = len(tasks)
    if n == 0:
        return
    if window is None:
        threads = sum(client.nthreads().values())
        window = max(64, 4 * threads)
    hooks = _hooks()
    run = uuid.uuid4().hex[:8]
    pending = distributed.as_completed()
    index: dict[Any, int] = {}
    live: dict[int, Any] = {}
    done: dict[int, Any] = {}
    state = {"submitted": 0, "out": 0, "repaired": False}

    def feed() -> None:
        while state["submitted"] < n and state["submitted"] - state["out"] < window:
            i = state["submitted"]
            fut = client.submit(
                _run_task, tasks[i][1], hooks, key=f"aria-extract-{run}-{i:07d}", pure=False
            )
            index[fut.key] = i
            live[i] = fut
            pending.add(fut)
            state["submitted"] += 1

    try:
        feed()
        for fut in pending:
            i = index.pop(fut.key)
            label, task = tasks[i]
            if fut.status == "error":
                exc = fut.exception()
                if isinstance(exc, distributed.KilledWorker):
                    res: Any = Lost(label, "KilledWorker")
                    if on_death is not None:
                        on_death(res)
                    if not state["repaired"]:
                        state["repaired"] = True
                        _repair_on_cluster(client, task)
                else:
                    res = ("error", task[1], task[2], _error_text(exc))
            else:
                res = fut.result()  # a cancelled task (the cluster went away) raises here
            fut.release()
            del live[i]
            done[i] = res
            while state["out"] in done:
                yield done.pop(state["out"])
                state["out"] += 1
            feed()
    finally:
        if live:
            client.cancel(list(live.values()))


def _repair_on_cluster(client: Any, task: tuple[Any, ...]) -> None:
    """After the first lost file: rebuild the extractor's shared state on one worker."""
    try:
        client.submit(_repair, task[5], task[3], pure=False).result()
    except Exception:  # a failed repair must never stop the run; the files say what happened
        pass
