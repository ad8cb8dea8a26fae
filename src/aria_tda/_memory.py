"""How much memory this process may use, and an allocation that did not fit as one line.

Conventions
-----------
- **The limit** is the tighter of the process's address-space limit (``RLIMIT_AS``: ``ulimit
  -v``, ``prlimit --as``) and its data limit (``RLIMIT_DATA``), each less what the process
  maps already (``VmSize``, ``VmData`` of ``/proc/self/status``): :func:`headroom`. It counts
  address space, not resident memory: a thread's stack, a BLAS library's per-thread buffers and
  a memory-mapped input count in full. ``None`` means no such limit.
- **The default budget** of a memory-bounded computation (:func:`default_budget`) is half the
  physical memory, or half the control group's limit (``memory.max``; a container's
  ``--memory``) when that is lower, or a share of :func:`headroom` under a limit.
- **An allocation that does not fit** is :class:`~aria_tda.errors.MemoryLimitError`, one line
  saying what needed how much, what the process may use and what to do instead
  (:func:`memory_error`): never a ``MemoryError`` traceback.
- **Libraries that cannot start under a limit.** OpenBLAS allocates a buffer per thread when it
  is loaded and retries for ever when the allocation fails (the process hangs), and llvmlite
  fails to load with a message about a missing file. Under a tight limit, libraries load with
  one thread, one ``malloc`` arena and Arrow on ``malloc`` (:func:`adapt_to_limit`, which the
  command line calls first thing), and a command checks the headroom for the libraries it
  needs before it imports them (:func:`load_libraries`); what the limit still refuses is one
  line (:func:`out_of_memory`, :func:`limit_failure`).
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import os
import resource
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from aria_tda.errors import AriaError, MemoryLimitError

__all__ = [
    "LIBRARIES_BYTES",
    "LIMIT_ADVICE",
    "STUDY_LIBRARIES_BYTES",
    "adapt_to_limit",
    "address_space",
    "check_headroom",
    "default_budget",
    "flag_size",
    "headroom",
    "limit_error",
    "limit_failure",
    "load_libraries",
    "memory_error",
    "out_of_memory",
    "size_text",
    "threads_that_fit",
    "tight_headroom",
]

#: How a user raises the limit, for messages.
LIMIT_ADVICE = "ulimit -v / prlimit --as"
#: Share of the headroom a memory-bounded computation takes by default under a limit: the rest
#: is for what the budget does not count (thread stacks, the interpreter, libraries' buffers).
HEADROOM_SHARE = 0.5
#: Address space the diagnostics' libraries map when they load, NumPy's BLAS aside (it loads
#: with the command line): SciPy's BLAS on one thread and LAPACK, numba and llvmlite, and the
#: first products' buffers (measured: 380 MB on Linux x86-64, Python 3.11), with a margin.
LIBRARIES_BYTES = 448 * 2**20
#: The same for a study (``aria-tda run``): Arrow and pandas, SciPy, numba and the analyses
#: (measured: 600 MB), with a margin.
STUDY_LIBRARIES_BYTES = 704 * 2**20
#: Address space an OpenBLAS thread maps when its library loads (its buffer and stack,
#: measured 40 MB), rounded up.
BLAS_THREAD_BYTES = 64 * 2**20
#: ``mallopt`` parameter of glibc's arena count.
_M_ARENA_MAX = -8
#: The environment variables that set the thread count of BLAS libraries loaded after them.
_BLAS_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def size_text(nbytes: float) -> str:
    """``"1.5 GB"`` or ``"64 MB"`` (binary units, as ``--memory`` reads them).

    Parameters
    ----------
    nbytes : float
        A size in bytes.
    """
    if nbytes >= 2**30:
        return f"{nbytes / 2**30:.1f} GB"
    return f"{max(0.0, nbytes) / 2**20:.0f} MB"


def _status() -> dict[str, int]:
    """``VmSize`` and ``VmData`` of ``/proc/self/status`` in bytes (empty where unknown)."""
    out: dict[str, int] = {}
    try:
        text = Path("/proc/self/status").read_text()
    except OSError:
        return out
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key in ("VmSize", "VmData"):
            with contextlib.suppress(ValueError, IndexError):
                out[key] = int(value.split()[0]) * 1024
    return out


def address_space() -> tuple[int | None, int]:
    """``(limit, in use)`` in bytes of the tighter of the address-space and data limits.

    Returns
    -------
    tuple
        ``(None, in use)`` when neither limit is set.
    """
    status = _status()
    best: tuple[int | None, int] = (None, status.get("VmSize", 0))
    spare: int | None = None
    for which, key in ((resource.RLIMIT_AS, "VmSize"), (resource.RLIMIT_DATA, "VmData")):
        try:
            soft, _hard = resource.getrlimit(which)
        except (OSError, ValueError):  # pragma: no cover - not POSIX
            continue
        if soft == resource.RLIM_INFINITY or soft <= 0:
            continue
        used = status.get(key, 0)
        if spare is None or soft - used < spare:
            spare, best = soft - used, (int(soft), used)
    return best


def headroom() -> int | None:
    """Bytes this process may still map under its limit; ``None`` without a limit."""
    limit, used = address_space()
    return None if limit is None else max(0, limit - used)


def threads_that_fit(n_threads: int, *, per_thread: int = BLAS_THREAD_BYTES) -> int:
    """How many of ``n_threads`` worker threads that call BLAS the limit leaves room for.

    A thread that first calls OpenBLAS maps a buffer (and its stack) then; when the limit
    refuses it, OpenBLAS gives up with ``exit(1)`` from C, past every Python handler. So a pool
    starts only as many threads as :data:`HEADROOM_SHARE` of the headroom holds at
    ``per_thread`` each, at least one (the caller's thread runs the work when it is one: its
    buffers are mapped already, :func:`load_libraries`). Without a limit: ``n_threads``.

    Parameters
    ----------
    n_threads : int
        Threads wanted.
    per_thread : int
        Address space one thread maps (default :data:`BLAS_THREAD_BYTES`).
    """
    room = headroom()
    if room is None:
        return n_threads
    return max(1, min(n_threads, int(room * HEADROOM_SHARE) // per_thread))


def _physical() -> int:
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return 16 * 2**30


def _cgroup_limit() -> int | None:
    """The memory limit of this process's control group (v2 ``memory.max``, v1), if any."""
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(path).read_text().strip()
        except OSError:
            continue
        if text.isdigit() and 0 < int(text) < 2**60:
            return int(text)
    return None


def default_budget() -> int:
    """The default budget of a memory-bounded computation, in bytes (module docstring)."""
    budget = _physical() // 2
    group = _cgroup_limit()
    if group is not None:
        budget = min(budget, group // 2)
    room = headroom()
    if room is not None:
        budget = min(budget, int(room * HEADROOM_SHARE))
    return max(budget, 2**20)


def _limit_text() -> str:
    limit, used = address_space()
    if limit is None:
        return ("no address-space limit is set: the machine's memory (or its control group's "
                f"share) is used up, {size_text(used)} of address space mapped by this process")
    return (f"this process may use {size_text(limit)} of address space ({LIMIT_ADVICE}) and "
            f"{size_text(used)} of it is in use")


def check_headroom(need: int, *, what: str, advice: str) -> None:
    """Refuse at once when ``need`` bytes do not fit under this process's limit.

    Parameters
    ----------
    need : int
        Bytes about to be mapped.
    what : str
        What needs them (``"loading NumPy, SciPy and numba"``).
    advice : str
        What to do instead (a flag that needs less), or ``""``.

    Raises
    ------
    MemoryLimitError
        ``WHAT needs about N MB and this process may use L of address space (...) and U of
        it is in use; ADVICE``.
    """
    room = headroom()
    if room is None or room >= need:
        return
    raise limit_error(need, what=what, advice=advice)


def limit_error(need: int, *, what: str, advice: str) -> MemoryLimitError:
    """The one-line error of ``what``, which needs ``need`` bytes that the limit does not leave.

    Parameters
    ----------
    need : int
        Bytes needed.
    what : str
        What needs them.
    advice : str
        What to do instead, or ``""``.
    """
    return MemoryLimitError(f"{what} needs about {size_text(need)} and {_limit_text()}"
                            + (f"; {advice}" if advice else ""))


def memory_error(exc: BaseException, *, what: str, advice: str) -> MemoryLimitError:
    """The one-line error of an allocation (or a library load) that did not fit.

    Parameters
    ----------
    exc : BaseException
        The ``MemoryError`` (NumPy's says how much it asked for), or the error a library
        raised when it could not load under the limit.
    what : str
        What was running (``"the exact pass"``).
    advice : str
        What to do instead (a flag or mode that needs less), or ``""``.

    Returns
    -------
    MemoryLimitError
        To raise ``from None``.
    """
    asked = getattr(exc, "_total_size", None)
    detail = f"an allocation of {size_text(asked)} did not fit" if isinstance(asked, int) else (
        "an allocation did not fit" if isinstance(exc, MemoryError)
        else f"{type(exc).__name__}: {' '.join(str(exc).split())[:160]}")
    return MemoryLimitError(f"{what} ran out of memory ({detail}): {_limit_text()}"
                            + (f"; {advice}" if advice else ""))


@contextlib.contextmanager
def out_of_memory(what: str, advice: str) -> Iterator[None]:
    """Turn the body's failures for want of memory into :class:`MemoryLimitError` (one line).

    A ``MemoryError``, an ``OSError`` ``ENOMEM`` (a memory map that does not fit) and, under a
    limit, a thread that cannot start (its stack does not fit), a module that fails to load
    (numba loads some when a kernel is first used) and a ``SystemError`` (an extension's failed
    allocation) are read as such (:func:`memory_error`); ARIA's own errors pass as they are.

    Parameters
    ----------
    what : str
        What the body does, for the message.
    advice : str
        What to do instead (a flag or mode that needs less), or ``""``.
    """
    try:
        yield
    except AriaError:
        raise
    except MemoryError as exc:
        raise memory_error(exc, what=what, advice=advice) from None
    except OSError as exc:
        if exc.errno != errno.ENOMEM:
            raise
        raise memory_error(exc, what=what, advice=advice) from None
    except (RuntimeError, SystemError, ImportError) as exc:
        # under a limit: a thread whose stack does not fit, a module (numba's, loaded when a
        # kernel is first used) that fails to load or an extension's failed allocation
        if headroom() is None or (type(exc) is RuntimeError
                                  and "can't start new thread" not in str(exc)):
            raise
        raise memory_error(exc, what=what, advice=advice) from None


#: What a library says when it could not load, or a thread could not start, for want of
#: address space (the dynamic loader's, llvmlite's, CPython's words).
_LOAD_SIGNS = ("failed to map segment", "cannot allocate memory", "could not find/load shared "
               "object", "can't start new thread", "failed to launch worker thread",
               "error return without exception set")


def limit_failure(exc: BaseException, *, what: str, advice: str) -> MemoryLimitError | None:
    """``exc`` as the memory limit it ran into, or ``None`` when it is something else.

    Any ``MemoryError`` and an ``OSError`` ``ENOMEM`` are; under a limit, so is a library that
    failed to load or a thread that failed to start, whatever it raised, with the words they
    use for it (the dynamic loader's "failed to map segment", llvmlite's "could not find/load
    shared object", Arrow's "failed to launch worker thread").

    Parameters
    ----------
    exc : BaseException
        What a command raised.
    what : str
        What was running, for the message.
    advice : str
        What to do instead, or ``""``.
    """
    if isinstance(exc, MemoryLimitError):
        return exc
    if isinstance(exc, MemoryError) or (isinstance(exc, OSError) and exc.errno == errno.ENOMEM):
        return memory_error(exc, what=what, advice=advice)
    if headroom() is None:
        return None
    text = str(exc).lower()
    if any(sign in text for sign in _LOAD_SIGNS):
        return memory_error(exc, what=what, advice=advice)
    return None


def flag_size(nbytes: float) -> str:
    """A size as a ``--memory`` value: ``"120MB"`` (at least 1 MB, rounded down).

    Parameters
    ----------
    nbytes : float
        A size in bytes.
    """
    if nbytes >= 2**30:
        return f"{nbytes / 2**30:.1f}GB"
    return f"{max(1, int(nbytes // 2**20))}MB"


def load_libraries(modules: Sequence[str], *, what: str, need: int = LIBRARIES_BYTES) -> None:
    """Import ``modules`` so that a limit too tight for them is one line, not a hang.

    Under a limit: libraries loaded now spend less address space (:func:`adapt_to_limit`),
    the headroom is checked against :data:`LIBRARIES_BYTES` (and BLAS threads) first, a
    library that fails to load is reported as the limit it ran into, and the BLAS buffers of
    this thread are mapped at once (while there is room) by two small products.

    Parameters
    ----------
    modules : sequence of str
        Modules to import.
    what : str
        How the message names them (``"NumPy, SciPy and numba"``).
    need : int
        Address space they map when they load, BLAS threads aside (measured, with a margin:
        :data:`LIBRARIES_BYTES` for the diagnostics', :data:`STUDY_LIBRARIES_BYTES` for a
        study's).

    Raises
    ------
    MemoryLimitError
        The limit leaves too little for them.
    """
    limited = headroom() is not None
    if limited:
        adapt_to_limit()
        one_thread = os.environ.get("OPENBLAS_NUM_THREADS") == "1"
        threads = 1 if one_thread else (os.cpu_count() or 1)
        check_headroom(need + BLAS_THREAD_BYTES * (threads - 1),
                       what=f"loading {what}", advice="raise the limit")
    try:
        for name in modules:
            importlib.import_module(name)
        if limited:
            _warm_blas()
    except (ImportError, OSError, SystemError, RuntimeError, MemoryError) as exc:
        if not limited or isinstance(exc, AriaError):
            raise
        raise memory_error(exc, what=f"loading {what}", advice="raise the limit") from None


def _warm_blas() -> None:
    """Map the BLAS buffers of this thread (NumPy's and SciPy's libraries) by using them."""
    import numpy as np

    a = np.ones((256, 256))
    a @ a
    a.astype(np.float32) @ a.astype(np.float32)
    if "scipy.linalg" in sys.modules:
        import scipy.linalg

        scipy.linalg.eigh(a[:64, :64] + np.eye(64))


def tight_headroom() -> int:
    """Below this headroom a limit is tight (:func:`adapt_to_limit`): 4 GB and 256 MB a CPU."""
    return 4 * 2**30 + 256 * 2**20 * (os.cpu_count() or 1)


def adapt_to_limit() -> list[str]:
    """Under a tight limit, spend less address space per thread; return the variables set.

    Libraries reserve address space per thread far beyond what they use, and a limit counts
    it all (``prlimit --as``); so under a limit below :func:`tight_headroom`:

    - BLAS libraries loaded from now on start with one thread: OpenBLAS maps a buffer for each
      of its threads when it is loaded (tens of MB each, for every CPU) and spins for ever
      when that fails; with one thread it maps one, when first used;
    - Arrow allocates with ``malloc`` (``ARROW_DEFAULT_MEMORY_POOL=system``) instead of its
      jemalloc, which reserves more than a GB of address space for a small table;
    - threads share the main ``malloc`` arena (glibc's ``M_ARENA_MAX``): a thread's own arena
      reserves 64 MB up front, or not, depending on what is left at that moment, so an
      allocation's fate would depend on when a thread started.

    Variables the user set are left as they are; a generous limit changes nothing. Call it
    before the libraries load (the command line does, first thing).
    """
    room = headroom()
    if room is None or room >= tight_headroom():
        return []
    wanted = {**dict.fromkeys(_BLAS_THREAD_VARS, "1"), "ARROW_DEFAULT_MEMORY_POOL": "system"}
    set_here = [v for v in wanted if v not in os.environ]
    for var in set_here:
        os.environ[var] = wanted[var]
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to do
        import ctypes

        libc = ctypes.CDLL(None)
        libc.mallopt(_M_ARENA_MAX, 1)
    return set_here
