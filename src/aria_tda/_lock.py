"""One writer per store and results folder: an advisory lock that a crash releases.

:func:`writer_lock` takes an exclusive ``flock`` on ``FOLDER/.aria-lock`` for as long as a
command writes into ``FOLDER`` (a feature store, an embedding store, a results folder, a demo
folder). The kernel drops the lock when its process ends, however it ends (``kill -9``
included), so a dead process's lock is simply taken over. The file names its holder and is
removed on release (a killed holder's file stays until the next writer takes it over); a folder
that the lock itself created and that the body left empty is removed too, so a refused command
leaves nothing. A second writer is refused at once in one line that names the holder
(:class:`~aria_tda.errors.LockedError`) instead of both writing and each overwriting the other.

The lock is re-entrant within one process (a command that writes a store and then a results
folder inside it takes it once). Readers never hold it: :func:`active_writer` tells whether
another process writes a folder now (it takes a shared lock for an instant and releases it; a
writer that meets such a reader retries for a moment instead of being refused), so that a
reader can wait for a publication to end (:func:`aria_tda.report.load.load_results`).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import fcntl
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from aria_tda.errors import LockedError

__all__ = ["LOCK_NAME", "active_writer", "output_lock", "writer_lock"]

#: The lock file inside a locked folder.
LOCK_NAME = ".aria-lock"

_held: dict[str, tuple[int, int]] = {}  # resolved folder -> (fd, depth)
_guard = threading.Lock()


def _holder_text(fd: int) -> str | None:
    """The holder's name as written in the lock file; None while the file names nobody."""
    try:
        raw = os.pread(fd, 4096, 0).decode("utf-8", "replace")
        info = json.loads(raw) if raw.strip() else {}
    except (OSError, ValueError):
        info = {}
    if not isinstance(info, dict) or not info:
        return None
    parts = [f"pid {info.get('pid', '?')}"]
    if info.get("host"):
        parts[0] += f" on {info['host']}"
    if info.get("command"):
        parts.append(repr(str(info["command"])[:120]))
    if info.get("since"):
        parts.append(f"since {info['since']}")
    return "process " + ", ".join(parts)


@contextlib.contextmanager
def writer_lock(folder: str | os.PathLike[str], what: str = "folder", *,
                lock_name: str = LOCK_NAME, subject: str | os.PathLike[str] | None = None,
                ) -> Iterator[Path]:
    """Hold the writer lock of ``folder`` (created if needed) for the body.

    Parameters
    ----------
    folder : path-like
        The store or results folder about to be written.
    what : str
        What the folder is, for the message (``"feature store"``, ``"results folder"``).
    lock_name : str
        The lock file inside ``folder`` (:func:`output_lock` locks one file of a folder).
    subject : path-like, optional
        What the message names as locked (default ``folder``).

    Yields
    ------
    pathlib.Path
        ``folder``.

    Raises
    ------
    LockedError
        Another live process holds the lock: ``FOLDER: this feature store is being written by
        process pid 123 on HOST, 'aria-tda features ...', since 2026-11-27T13:40:02Z; wait for
        it to finish or stop it``.
    """
    d = Path(folder)
    created = not d.exists()
    d.mkdir(parents=True, exist_ok=True)
    key = str(d.resolve() / lock_name)
    with _guard:
        if key in _held:
            fd, depth = _held[key]
            _held[key] = (fd, depth + 1)
            reentered = True
        else:
            reentered = False
    if reentered:
        try:
            yield d
        finally:
            with _guard:
                fd, depth = _held[key]
                _held[key] = (fd, depth - 1)
        return
    fd = _acquire(d, lock_name, what, Path(subject) if subject is not None else d)
    try:
        info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]) if sys.argv else "",
            "since": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        }
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.pwrite(fd, (json.dumps(info) + "\n").encode(), 0)
        with _guard:
            _held[key] = (fd, 1)
        try:
            yield d
        finally:
            with _guard:
                _held.pop(key, None)
            # unlinked while still held: a process that opened this file meanwhile finds it
            # gone after its flock and retries on a fresh one (see _acquire)
            with contextlib.suppress(OSError):
                os.unlink(d / lock_name)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
    if created:
        with contextlib.suppress(OSError):
            d.rmdir()  # only a folder the lock made and nothing filled


def output_lock(path: str | os.PathLike[str], what: str = "output") -> Any:
    """The writer lock of one output file (``.NAME.aria-lock`` beside it), as a context manager.

    Two processes writing the same matrix (``aria-tda aggregate … --out S.npy`` twice) would
    each rename a complete file into place, but one's matrix could end up beside the other's
    manifest; the second is refused instead. Other files of the folder stay free to write.

    Parameters
    ----------
    path : path-like
        The output file (or zarr folder) about to be written.
    what : str
        What it is, for the message.
    """
    p = Path(path)
    return writer_lock(p.parent, what, lock_name=f".{p.name}.aria-lock", subject=p)


#: How long a refused writer waits for a holder that has just taken the lock to write its name
#: (between its ``flock`` and its ``pwrite``), retrying the lock meanwhile.
_NAME_WAIT_S = 2.0


def active_writer(folder: str | os.PathLike[str], *, lock_name: str = LOCK_NAME) -> str | None:
    """Who writes ``folder`` now, when another process holds its writer lock; else ``None``.

    The lock of this process (a run writing its own report) does not count. Nothing is
    created: a folder without a lock file has no writer.

    Parameters
    ----------
    folder : path-like
        A store or results folder.
    lock_name : str
        The lock file inside it.

    Returns
    -------
    str or None
        ``"process pid 123 on HOST, 'aria-tda run ...', since ..."`` (``"another process"``
        while the holder has not written its name yet), or ``None``.
    """
    d = Path(folder)
    try:
        key = str(d.resolve() / lock_name)
    except OSError:
        return None
    with _guard:
        if key in _held:
            return None
    try:
        fd = os.open(d / lock_name, os.O_RDONLY)
    except OSError:
        return None  # no lock file: no writer (or one that cannot be read: none to wait for)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                return None
            return _holder_text(fd) or "another process"
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _shared_only(fd: int) -> bool:
    """Whether the lock on ``fd``'s file is held shared (a reader's instant), not by a writer."""
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return False
    fcntl.flock(fd, fcntl.LOCK_UN)
    return True


def _acquire(d: Path, lock_name: str, what: str, subject: Path) -> int:
    """Open and flock ``d/lock_name``; retry when the file was unlinked under us.

    A holder writes its name into the file just after its ``flock``; a writer refused in that
    instant would name "another process". It retries the lock for up to ``_NAME_WAIT_S``
    instead, until the holder's name is there (or the holder is gone and the lock is free);
    so it does while the lock is held shared (a reader's look, :func:`active_writer`).
    """
    path = d / lock_name
    deadline = time.monotonic() + _NAME_WAIT_S
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            text = _holder_text(fd)
            reader = _shared_only(fd)  # active_writer's instant look, not a writer
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            if (text is None or reader) and time.monotonic() < deadline:
                time.sleep(0.01)
                continue
            raise LockedError(
                f"{subject}: this {what} is being written by {text or 'another process'}; wait "
                "for it to finish or stop it (a lock of a process that has ended is taken over "
                "by itself)"
            ) from None
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return fd
        os.close(fd)  # released and removed by its holder between our open and flock
