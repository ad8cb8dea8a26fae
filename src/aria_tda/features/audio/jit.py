"""librosa's numba JIT cache: where it lives, warming it once, recovering from corruption.

librosa compiles its numba kernels on first use (about 25 s on one core) and caches the
machine code. By default numba writes that cache next to librosa's sources, inside the
virtual environment; two processes compiling the same kernels at once can leave those files
corrupt, and every later process then crashes (segfault) when it loads them. ARIA therefore:

1. points ``NUMBA_CACHE_DIR`` at its own per-user, per-version directory
   (:func:`numba_cache_dir`: ``$ARIA_CACHE_DIR/numba/<aria>-<numba>-py<X.Y>``, default
   ``~/.cache/aria/...``) *before* numba is imported (:func:`configure_numba_cache`, run when
   :mod:`aria_tda.features.audio` is imported; worker processes inherit the variable). A
   ``NUMBA_CACHE_DIR`` the user set themselves is respected;
2. compiles (warms) the kernels once, in a separate probe process and under a file lock, before
   any extraction worker starts (:func:`prepare_workers`), so that concurrent ARIA processes
   never compile at the same time and workers only ever read the cache;
3. treats a probe that crashes or raises as a corrupt cache: the directory is wiped and the
   kernels recompiled (once), with a warning, instead of a crash that never goes away. A cache
   directory that cannot be written (a read-only or full file system, where numba would raise
   at a kernel's first call) is not corrupt: the kernels of the run go to a private temporary
   directory instead, with one warning per process (:func:`configure_numba_cache`);
4. runs the first use of the kernels *in* a process (the listening room's pictures and
   evidence, an extraction on one core, a worker's first file) under the same lock, after the
   same probe (:func:`in_process`): a kernel the probe did not compile (another dtype's) is
   then compiled by one process at a time. Two processes compiling different signatures of
   one kernel at once can each write their machine code under the other's index entry; a
   process that loads such an entry crashes.

A stamp file in the cache directory (``aria-warm.json``) records the cache files after a
successful warm-up; while they are unchanged later runs skip the probe (no cost), and any
change (a new kernel written, a damaged file) triggers a fresh probe.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from aria_tda.errors import AriaWarning

__all__ = [
    "PROBE_NOT_APPLICABLE", "configure_numba_cache", "in_process", "numba_cache_dir",
    "prepare_workers",
]

#: environment variable remembering the NUMBA_CACHE_DIR that ARIA (not the user) set
_MARK = "_ARIA_NUMBA_CACHE_DIR"
_STAMP = "aria-warm.json"
#: The probe's exit status when librosa is not installed (nothing to warm).
PROBE_NOT_APPLICABLE = 3
#: set in the probe's environment: its parent holds the lock (in_process must not wait on it)
_PROBE = "_ARIA_NUMBA_PROBE"
_PROBE_TIMEOUT = 900.0


def numba_cache_dir() -> Path:
    """ARIA's numba cache directory for this user, ARIA, numba and Python version.

    ``$ARIA_CACHE_DIR`` (default ``~/.cache/aria``) ``/numba/<aria>-<numba>-py<major.minor>``.
    """
    from importlib.metadata import PackageNotFoundError, version

    from aria_tda._fingerprint import cache_dir
    from aria_tda._version import __version__

    try:
        nb = version("numba")
    except PackageNotFoundError:
        nb = "none"
    base = cache_dir()
    py = f"py{sys.version_info.major}.{sys.version_info.minor}"
    return base / "numba" / f"{__version__}-{nb}-{py}"


def configure_numba_cache() -> Path:
    """Point ``NUMBA_CACHE_DIR`` at :func:`numba_cache_dir` (unless the user set it); return it.

    Safe to call repeatedly. If numba is already imported its configuration is updated too
    (kernels compiled afterwards cache there). A cache folder that cannot be written (a
    read-only or full file system: numba would fail at a kernel's first call) is replaced by a
    private temporary folder for this process and its workers, removed when the process ends,
    with one warning (:func:`aria_tda._fingerprint.cache_unwritable`); it is never called
    corrupt.
    """
    current = os.environ.get("NUMBA_CACHE_DIR")
    if current and current != os.environ.get(_MARK):
        return Path(current)  # the user's own choice
    if current and os.environ.get(_ASIDE) == current:
        return Path(current)  # moved aside already, by this process or its parent
    path = numba_cache_dir()
    if str(path) not in _WRITABLE:
        _WRITABLE[str(path)] = _write_problem(path) is None
    if not _WRITABLE[str(path)]:
        path = _aside(path)
    _point_numba_at(path)
    return path


#: Whether each cache folder could be written, as found once in this process.
_WRITABLE: dict[str, bool] = {}
#: Environment variable naming the private folder the cache was moved to (inherited by workers).
_ASIDE = "_ARIA_NUMBA_CACHE_ASIDE"


def _point_numba_at(path: Path) -> None:
    os.environ["NUMBA_CACHE_DIR"] = str(path)
    os.environ[_MARK] = str(path)
    cfg = sys.modules.get("numba.core.config")
    if cfg is not None:
        cfg.CACHE_DIR = str(path)  # type: ignore[attr-defined]


def _write_problem(path: Path) -> OSError | None:
    """Why the cache folder ``path`` cannot be written (``None``: it can)."""
    from aria_tda._fingerprint import write_error

    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return exc
    return write_error(path)


def _aside(path: Path) -> Path:
    """A private temporary folder for the kernels of this run, said once; ``path`` if none."""
    import atexit
    import tempfile

    from aria_tda._fingerprint import cache_unwritable

    problem = _write_problem(path) or OSError(0, "not writable")
    try:
        aside = Path(tempfile.mkdtemp(prefix="aria-numba-"))
    except OSError:
        cache_unwritable("numba JIT cache", path, problem,
                         "librosa's kernels are compiled in each process")
        return path
    atexit.register(_remove_aside, aside)
    os.environ[_ASIDE] = str(aside)
    cache_unwritable("numba JIT cache", path, problem,
                     f"librosa's kernels are compiled into {aside} for this run only")
    return aside


def _remove_aside(aside: Path) -> None:
    """Remove the private cache folder and its lock file (at the end of the process)."""
    shutil.rmtree(aside, ignore_errors=True)
    with contextlib.suppress(OSError):
        aside.with_name(aside.name + ".lock").unlink()


#: What a probe that failed because the cache could not be written says (not corruption).
_UNWRITABLE_SIGNS = ("No space left", "Read-only file system", "Permission denied",
                     "Disk quota exceeded", "[Errno 28]", "[Errno 30]", "[Errno 13]")


def _listing(path: Path) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    if not path.is_dir():
        return out
    for f in sorted(path.rglob("*")):
        if f.is_file() and f.name != _STAMP:
            st = f.stat()
            out[f.relative_to(path).as_posix()] = [st.st_size, st.st_mtime_ns]
    return out


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on ``<path>.lock`` (blocking; no-op where ``fcntl`` is missing)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    with open(path.with_name(path.name + ".lock"), "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _probe(path: Path) -> tuple[int, str]:
    """Warm the kernels in a child process; ``(exit status, last line of its stderr)``."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(path), **{_MARK: str(path), _PROBE: "1"})
    try:
        proc = subprocess.run(
            [sys.executable, "-c", "from aria_tda.features.audio._jit_probe import warm; warm()"],
            env=env,
            capture_output=True,
            text=True,
            timeout=_PROBE_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return -int(signal.SIGKILL), f"timed out after {_PROBE_TIMEOUT:g} s"
    lines = [ln for ln in (proc.stderr or "").splitlines() if ln.strip()]
    return proc.returncode, (lines[-1] if lines else "")


def _describe(rc: int, detail: str) -> str:
    if rc < 0:
        try:
            return f"died ({signal.Signals(-rc).name})"
        except ValueError:
            return f"died (signal {-rc})"
    return f"failed (exit {rc}: {detail or 'no message'})"


def _wipe(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True, exist_ok=True)


def prepare_workers(params: Mapping[str, Any] | None = None, *, force: bool = False) -> bool:
    """Make sure librosa's JIT cache is compiled and loadable before extraction workers start.

    Under a file lock (so concurrent ARIA processes wait for one another), a probe process
    imports librosa and extracts the features of a short synthetic clip with the default
    backends, compiling every kernel the extraction uses into the cache. A probe that dies
    (e.g. SIGSEGV) or raises marks the cache corrupt: it is wiped and the probe rerun once.

    Parameters
    ----------
    params : mapping, optional
        The extraction parameters (accepted for the extraction engine's hook; kernels depend
        on dtypes, not on parameter values, so the default parameters are warmed).
    force : bool
        Probe even when the stamp says the cache is warm (after a worker died).

    Returns
    -------
    bool
        True when the cache is warm.

    Raises
    ------
    MissingDependencyError
        A package the extraction needs is not installed (checked before anything is done).
    """
    from aria_tda.features.audio.params import check_dependencies

    check_dependencies(params)  # one error up front, not one per file
    del params
    path = configure_numba_cache()
    with _locked(path):
        stamp = path / _STAMP
        if not force and stamp.is_file():
            try:
                if json.loads(stamp.read_text())["files"] == _listing(path):
                    return True
            except (OSError, ValueError, KeyError, TypeError):
                pass
        path.mkdir(parents=True, exist_ok=True)
        rc, detail = _probe(path)
        if rc == PROBE_NOT_APPLICABLE:
            return True
        if (rc != 0 and os.environ.get(_ASIDE) != str(path)
                and any(sign in detail for sign in _UNWRITABLE_SIGNS)):
            # filled up (or made read-only) since it was checked: moved aside, not wiped
            _WRITABLE[str(path)] = False
            return prepare_workers(force=force)
        if rc != 0:
            warnings.warn(
                f"numba JIT cache {str(path)!r}: a probe {_describe(rc, detail)} loading it; "
                "treating it as corrupt: wiped and recompiled",
                AriaWarning,
                stacklevel=2,
            )
            _wipe(path)
            rc, detail = _probe(path)
            if rc == PROBE_NOT_APPLICABLE:
                return True
            if rc != 0:
                warnings.warn(
                    f"audio features: warming librosa's kernels {_describe(rc, detail)} even "
                    "with a fresh JIT cache; extracting anyway",
                    AriaWarning,
                    stacklevel=2,
                )
                return False
        with contextlib.suppress(OSError):  # a full disk: the next run probes again
            stamp.write_text(json.dumps({"files": _listing(path)}))
        return True


_here = threading.RLock()  # this process's first use: one thread at a time
_state = {"ready": False, "depth": 0}


@contextlib.contextmanager
def in_process() -> Iterator[None]:
    """Around a use of librosa's kernels in this process: the first use runs under the lock.

    The first time in a process, the cache is made warm and loadable (:func:`prepare_workers`:
    free while its stamp holds, else a probe that also recovers a corrupt cache) and the body
    runs holding the cache's lock, so that whatever it compiles beyond the probe is compiled
    by one process at a time. Once a body has finished, later uses run freely. Re-entrant; a
    no-op in the probe itself.

    Yields
    ------
    None
    """
    if _state["ready"] or os.environ.get(_PROBE):
        yield
        return
    with _here:
        if _state["ready"] or _state["depth"]:  # ready meanwhile, or nested in the first use
            yield
            return
        prepare_workers()
        _state["depth"] += 1
        try:
            with _locked(configure_numba_cache()):
                yield
        finally:
            _state["depth"] -= 1
        _state["ready"] = True
