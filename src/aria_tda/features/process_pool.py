"""A small process pool for per-file extraction that survives dying workers and dying parents.

:class:`concurrent.futures.ProcessPoolExecutor` turns one crashed worker into a
``BrokenProcessPool`` for every pending file, and its workers can outlive a killed parent.
This pool gives each worker one file at a time over its own pipe, so the parent always knows
which file a worker was on:

- a worker that dies (a segfault in a compiled kernel, the OOM killer) is reported as a
  :class:`Died` result for that file, with the signal, and replaced by a fresh worker; the
  other files go on;
- a worker exits by itself within about a second when its parent dies, even in the middle of
  a file: a watchdog thread polls ``os.getppid()``, and on Linux ``PR_SET_PDEATHSIG`` asks the
  kernel to kill it as well;
- workers ignore SIGINT (the parent handles Ctrl-C and stops them);
- results come back in task order (a small reorder buffer), so a parallel run writes the same
  store as a serial one.

Test hooks (environment, read in workers only): ``ARIA_TEST_WORKER_CRASH=<substring>`` makes a
worker kill itself with SIGSEGV on a task whose label contains the substring;
``ARIA_TEST_WORKER_DELAY=<seconds>`` sleeps that long before each task.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Died", "run_pool", "signal_name"]

_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class Died:
    """The result of a task whose worker died: exit code (negative = killed by a signal)."""

    label: str
    exitcode: int | None

    @property
    def reason(self) -> str:
        """``"SIGSEGV"``, ``"exit 1"``, … — how the worker ended."""
        return signal_name(self.exitcode)


def signal_name(exitcode: int | None) -> str:
    """Name how a process ended from its exit code (``-11`` → ``"SIGSEGV"``).

    Parameters
    ----------
    exitcode : int or None
        ``multiprocessing.Process.exitcode`` (negative: killed by that signal).
    """
    if exitcode is None:
        return "unknown"
    if exitcode < 0:
        try:
            return signal.Signals(-exitcode).name
        except ValueError:
            return f"signal {-exitcode}"
    return f"exit {exitcode}"


def _watch_parent(ppid: int) -> None:
    """Exit this worker as soon as its parent is gone."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):  # pragma: no cover - no prctl
            pass
    if os.getppid() != ppid:  # the parent died before the prctl took effect
        os._exit(1)

    def poll() -> None:
        while True:
            time.sleep(0.5)
            if os.getppid() != ppid:
                os._exit(1)

    threading.Thread(target=poll, name="aria-parent-watchdog", daemon=True).start()


def _worker(conn: Any, func: Callable[[Any], Any], ppid: int) -> None:  # pragma: no cover
    """Worker loop: receive ``(index, label, task)``, send back ``(index, func(task))``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _watch_parent(ppid)
    crash = os.environ.get("ARIA_TEST_WORKER_CRASH")
    delay = float(os.environ.get("ARIA_TEST_WORKER_DELAY") or 0)
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            os._exit(0)
        if msg is None:
            break
        index, label, task = msg
        if delay:
            time.sleep(delay)
        if crash and crash in label:
            os.kill(os.getpid(), signal.SIGSEGV)
        result = func(task)
        try:
            conn.send((index, result))
        except (BrokenPipeError, OSError):
            os._exit(0)
    conn.close()


class _Slot:
    def __init__(self, ctx: Any, func: Callable[[Any], Any]) -> None:
        parent, child = ctx.Pipe(duplex=True)
        self.conn = parent
        self.proc = ctx.Process(
            target=_worker, args=(child, func, os.getpid()), name="aria-feature-worker", daemon=True
        )
        self.proc.start()
        child.close()
        self.task: tuple[int, str] | None = None

    def send(self, index: int, label: str, task: Any) -> None:
        self.task = (index, label)
        self.conn.send((index, label, task))

    def stop(self, timeout: float = 5.0) -> None:
        try:
            self.conn.send(None)
        except (BrokenPipeError, OSError):
            pass
        self.proc.join(timeout)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(1.0)
        self.conn.close()


def run_pool(
    func: Callable[[Any], Any],
    tasks: Sequence[tuple[str, Any]],
    *,
    workers: int,
    on_death: Callable[[Died], None] | None = None,
) -> Iterator[Any]:
    """Run ``func(task)`` for ``(label, task)`` pairs in ``workers`` spawned processes.

    Yields the results in task order; a task whose worker died yields a :class:`Died`.

    Parameters
    ----------
    func : callable
        A module-level (picklable) function of one task; it should not raise.
    tasks : sequence of (str, object)
        ``(label, task)`` pairs; the label (e.g. the file path) names the task in messages.
    workers : int
        Number of worker processes (at most ``len(tasks)``).
    on_death : callable, optional
        Called with the :class:`Died` record as soon as a worker dies (before the fresh worker
        starts), e.g. to report it or to repair a shared cache.
    """
    import multiprocessing
    from multiprocessing.connection import wait

    ctx = multiprocessing.get_context("spawn")
    pending = deque(enumerate(tasks))
    done: dict[int, Any] = {}
    next_out = 0
    slots: list[_Slot] = []

    def feed(slot: _Slot) -> None:
        if pending:
            index, (label, task) = pending.popleft()
            slot.send(index, label, task)
        else:
            slot.task = None

    try:
        for _ in range(min(workers, len(tasks))):
            slot = _Slot(ctx, func)
            slots.append(slot)
            feed(slot)
        while next_out < len(tasks):
            busy = [s for s in slots if s.task is not None]
            if not busy:  # pragma: no cover - defensive; every task is assigned or done
                break
            waitables: list[Any] = [s.conn for s in busy] + [s.proc.sentinel for s in busy]
            ready = set(wait(waitables))
            for slot in busy:
                result: Any = None
                got = False
                if slot.conn in ready:
                    try:
                        _index, result = slot.conn.recv()
                        got = True
                    except (EOFError, OSError):
                        got = False
                if got:
                    assert slot.task is not None
                    done[slot.task[0]] = result
                    feed(slot)
                elif slot.proc.sentinel in ready or not slot.proc.is_alive():
                    slot.proc.join(1.0)
                    assert slot.task is not None
                    index, label = slot.task
                    died = Died(label, slot.proc.exitcode)
                    done[index] = died
                    slot.conn.close()
                    if on_death is not None:
                        on_death(died)
                    if pending:  # a fresh worker takes the dead one's place
                        fresh = _Slot(ctx, func)
                        slots[slots.index(slot)] = fresh
                        feed(fresh)
                    else:
                        slots.remove(slot)
            while next_out in done:
                yield done.pop(next_out)
                next_out += 1
    finally:
        for slot in slots:
            slot.stop()
