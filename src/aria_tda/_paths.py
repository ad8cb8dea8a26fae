"""What a path given to ARIA is, told before anything opens it; OS errors as one line.

Conventions
-----------
- :func:`input_path` is the one check every input path goes through (score matrices, tables,
  studies, stores: :func:`aria_tda._checks.check_existing_path` calls it). It looks with
  ``os.stat`` (which follows symlinks) and never opens the path: opening a FIFO for reading
  blocks until a writer comes, and a character device such as ``/dev/zero`` never ends, so
  special files are refused before any ``open()``.
- Each refusal is one line ``NAME: expected WHAT, got WHAT-IT-IS: 'PATH'`` (or ``NAME: no such
  file or directory: 'PATH'``), raised as :class:`~aria_tda.errors.FileFormatError`.
- :func:`os_error_message` reads an ``OSError`` the way :func:`input_path` reads a path: a full
  disk as :func:`aria_tda._io.disk_full_message`, a symlink loop as such, "File exists" or "Is a
  directory" as what was expected and what was there.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Any

from aria_tda.errors import FileFormatError, ParameterError, expected

__all__ = ["describe_mode", "input_path", "os_error_message", "special_file"]

#: What each ``kind`` of :func:`input_path` expects, as the message says it.
_WANTED = {"file": "a file", "dir": "a directory", "any": "a file or a directory"}

#: Special file types: ``stat`` test, how the message names it.
_SPECIAL = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def describe_mode(mode: int) -> str:
    """What a ``st_mode`` is, in the words of a message ("a file", "a FIFO (named pipe)", ...).

    Parameters
    ----------
    mode : int
        ``os.stat(path).st_mode``.
    """
    if stat.S_ISREG(mode):
        return "a file"
    if stat.S_ISDIR(mode):
        return "a directory"
    for test, text in _SPECIAL:
        if test(mode):
            return text
    return "a special file"


def special_file(path: str | os.PathLike[str]) -> str | None:
    """What ``path`` is when it is a special file (FIFO, device, socket); None otherwise.

    None also when nothing is at ``path``. Symlinks are followed; nothing is opened. For
    output paths: opening a FIFO to write blocks until a reader comes.

    Parameters
    ----------
    path : str or path-like
        The path to look at.
    """
    found = _found(Path(path))
    return None if found in (None, "a file", "a directory") else found


def input_path(path: Any, name: str, *, kind: str = "any", missing: str | None = None) -> Path:
    """``path`` as a :class:`~pathlib.Path` to an existing, readable file or directory.

    Nothing is opened: the path is looked at with ``os.stat`` (symlinks followed).

    Parameters
    ----------
    path : str or path-like
        What the user gave.
    name : str
        The parameter (or flag, or study key) the message names.
    kind : {"any", "file", "dir"}
        What is expected: a regular file, a directory, or either. Special files (FIFOs,
        character and block devices, sockets) are refused whatever ``kind`` is.
    missing : str, optional
        What to call an absent path (default ``"no such file or directory"``), e.g. ``"no such
        feature store"``; a broken link or a link loop is still named as such.

    Returns
    -------
    pathlib.Path
        ``Path(path)``, unresolved.

    Raises
    ------
    ParameterError
        ``path`` is not a string or path-like, or is empty; ``kind`` is unknown.
    FileFormatError
        missing, a broken symlink (its target named), a symlink loop, a special file, a
        directory where a file is expected (or the other way round), not readable.
    """
    if kind not in _WANTED:
        raise ParameterError(expected("kind", "one of 'any', 'file', 'dir'", kind))
    if not isinstance(path, str | os.PathLike) or not os.fspath(path):
        raise ParameterError(expected(name, "a path", path))
    p = Path(path)
    shown = repr(str(p))
    try:
        st = os.stat(p)
    except OSError as exc:
        reason = _stat_failure(p, exc)
        if missing is not None and reason == _MISSING:
            reason = missing
        raise FileFormatError(f"{name}: {reason}: {shown}") from None
    what = describe_mode(st.st_mode)
    wanted = _WANTED[kind]
    if what not in ("a file", "a directory") or (kind != "any" and what != wanted):
        raise FileFormatError(f"{name}: expected {wanted}, got {what}: {shown}")
    access = os.R_OK | (os.X_OK if what == "a directory" else 0)
    if not os.access(p, access):
        raise FileFormatError(f"{name}: permission denied (cannot read {what}): {shown}")
    return p


#: What :func:`input_path` calls an absent path by default.
_MISSING = "no such file or directory"


def _stat_failure(p: Path, exc: OSError) -> str:
    """Why ``os.stat(p)`` failed, as the middle of a message."""
    if exc.errno == errno.ELOOP:
        return "a symlink loop (a link that leads back to itself)"
    if exc.errno == errno.ENOENT:
        broken = _broken_link(p)
        if broken is not None:
            return broken
        return _MISSING
    if exc.errno == errno.ENOTDIR:
        blocker = _file_in_the_way(p)
        if blocker is not None:
            return f"no such file or directory ({str(blocker)!r} is a file, not a directory)"
        return "no such file or directory"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    return (exc.strerror or str(exc)).rstrip(".")


def _broken_link(p: Path) -> str | None:
    """``"a symlink to a missing target 'T'"`` for a dangling link at or above ``p``, else None."""
    for q in (p, *p.parents):
        try:
            if q.is_symlink() and not q.exists():
                return f"a symlink to a missing target {os.readlink(q)!r}" + (
                    "" if q == p else f" ({str(q)!r})"
                )
        except OSError:
            return None
    return None


def _file_in_the_way(p: Path) -> Path | None:
    """The first ancestor of ``p`` that exists and is not a directory, if any."""
    for q in reversed(p.absolute().parents):
        try:
            st = os.stat(q)
        except OSError:
            return None
        if not stat.S_ISDIR(st.st_mode):
            return q
    return None


def os_error_message(exc: OSError, *, name: str | None = None) -> str:
    """An ``OSError`` as one line that says what was expected and what was found.

    Parameters
    ----------
    exc : OSError
        The error (``filename`` and ``errno`` are used where set).
    name : str, optional
        The flag or parameter the file came from; the message starts with it.

    Returns
    -------
    str
        For instance ``--spill-dir: expected a directory, got a file: 'x'`` (``EEXIST``,
        ``ENOTDIR``), ``'x': a symlink loop (...)`` (``ELOOP``), ``No space left on DEV ...,
        writing x`` (``ENOSPC``, ``EDQUOT``); otherwise ``STRERROR: 'FILENAME'``.
    """
    filename = getattr(exc, "filename", None)
    code = getattr(exc, "errno", None)
    strerror = exc.strerror or str(exc)
    lead = f"{name}: " if name else ""
    if code in (errno.ENOSPC, getattr(errno, "EDQUOT", -1)):
        if filename is None:
            return f"{lead}{strerror}"
        from aria_tda._io import disk_full_message

        text = disk_full_message(os.fsdecode(filename))
        if code != errno.ENOSPC:
            text = text.replace("No space left on", "Disk quota exceeded on", 1)
        return f"{lead}{text}"
    if filename is None:
        return f"{lead}{strerror}"
    p = Path(os.fsdecode(filename))
    shown = repr(str(p))
    if code == errno.ELOOP:
        return f"{lead}a symlink loop (a link that leads back to itself): {shown}"
    found = _found(p)
    if code == errno.EEXIST and found is not None and found != "a directory":
        return f"{lead}expected a directory, got {found}: {shown}"
    if code == errno.EISDIR:
        return f"{lead}expected a file, got a directory: {shown}"
    if code == errno.ENOTDIR:
        blocker = _file_in_the_way(p) if found is None or found == "a directory" else p
        if blocker is not None:
            got = _found(blocker) or "a file"
            at = "" if blocker == p.absolute() or blocker == p else f" at {str(blocker)!r}"
            return f"{lead}expected a directory{at}, got {got}: {shown}"
    if code == errno.ENOENT:
        broken = _broken_link(p)
        if broken is not None:
            return f"{lead}{broken}: {shown}"
    return f"{lead}{strerror}: {shown}"


def _found(p: Path) -> str | None:
    """What is at ``p`` (:func:`describe_mode`), or None when nothing is."""
    try:
        return describe_mode(os.stat(p).st_mode)
    except OSError:
        return None
