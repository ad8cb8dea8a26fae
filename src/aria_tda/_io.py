"""Atomic writes: nothing half-written is ever left under the final name.

Every writer in ARIA goes through :func:`atomic_path` (or the helpers built on it): the
output is produced under a temporary name in the same directory and renamed into place only
when complete; on error the temporary is removed and an existing file is left untouched.

Temporary names carry the writing process's id (``.NAME.tmp-PID-XXXXXXXX``,
``.staging-PID-XXXXXXXX``, :func:`temp_name`), so two processes never pick the same name and
the leftovers of a killed run are told from a live writer's: :func:`sweep_leftovers` removes
those whose process is gone, and nothing else. Space for a file that will be memory-mapped is
reserved before its first byte is mapped (:func:`reserve_space`): a full disk is a one-line
:class:`~aria_tda.errors.DiskFullError`, never a ``SIGBUS``.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import shutil
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda.errors import DiskFullError, ParameterError, expected

__all__ = [
    "as_disk_full",
    "atomic_path",
    "check_space",
    "disk_full_message",
    "free_bytes",
    "is_temporary",
    "pid_alive",
    "read_json",
    "remove_path",
    "reserve_space",
    "sweep_leftovers",
    "temp_name",
    "write_json",
    "write_text",
]

#: Names of temporaries: ``.NAME.tmp-PID-HEX``, ``.NAME.old-PID-HEX``, ``.staging-PID-HEX``.
_LEFTOVER = re.compile(r"^\..*\.(?:tmp|old)-(\d+)-[0-9a-f]{8}$|^\.staging-(\d+)-[0-9a-f]{8}$")


#: Four hex digits naming this machine: the first half of a temporary's ``HEX``, so that a
#: sweep on a folder shared between machines (NFS home) never judges another host's process.
_HOST = hashlib.sha256(socket.gethostname().encode()).hexdigest()[:4]


def temp_name(base: str, tag: str = "tmp") -> str:
    """A hidden name unique to this process and call: ``.BASE.TAG-PID-HEX``.

    ``HEX`` is four hex digits of the host name and four random ones.

    ``tag="staging"`` gives ``.staging-PID-HEX`` (``base`` is then ignored).

    Parameters
    ----------
    base : str
        The final file name the temporary stands for.
    tag : str
        ``"tmp"``, ``"old"`` or ``"staging"``.
    """
    token = f"{os.getpid()}-{_HOST}{uuid.uuid4().hex[:4]}"
    if tag == "staging":
        return f".staging-{token}"
    return f".{base}.{tag}-{token}"


def is_temporary(name: str) -> bool:
    """True for the name of a temporary (:func:`temp_name`'s, also ones without a pid)."""
    return name.startswith(".") and (".tmp-" in name or ".old-" in name
                                     or name.startswith(".staging-"))


def pid_alive(pid: int) -> bool:
    """True when a process with id ``pid`` exists (on this machine)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    return True


def sweep_leftovers(folder: str | os.PathLike[str]) -> list[Path]:
    """Remove the temporaries that dead processes left in ``folder``; return what was removed.

    Only names made by :func:`temp_name` whose process id no longer exists are touched: a
    live writer's temporaries (this process's included) and every other file stay.

    Parameters
    ----------
    folder : path-like
        A folder ARIA writes into (a results folder, a feature store, an output's parent).
    """
    d = Path(folder)
    removed: list[Path] = []
    try:
        entries = list(os.scandir(d))
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return removed
    for entry in entries:
        m = _LEFTOVER.match(entry.name)
        if m is None:
            continue
        pid = int(m.group(1) or m.group(2))
        if entry.name.rsplit("-", 1)[-1][:4] != _HOST:
            continue  # another machine's temporary: its process cannot be judged from here
        if pid == os.getpid() or pid_alive(pid):
            continue
        with contextlib.suppress(OSError):
            remove_path(entry.path)
            removed.append(Path(entry.path))
    return removed


def _mount_of(path: Path) -> tuple[str, str]:
    """``(device, mount point)`` of the file system holding ``path``."""
    p = path.absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    mount = p
    while not os.path.ismount(mount) and mount != mount.parent:
        mount = mount.parent
    device = str(mount)
    with contextlib.suppress(OSError):
        with open("/proc/self/mounts", encoding="utf-8") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) >= 2 and parts[1] == str(mount):
                    device = parts[0]  # the last mount at this point wins
    return device, str(mount)


def _bytes(n: float) -> str:
    for unit, size in (("GB", 2**30), ("MB", 2**20), ("kB", 2**10)):
        if abs(n) >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def free_bytes(path: str | os.PathLike[str]) -> int:
    """Bytes an unprivileged writer may still use on the file system holding ``path``."""
    p = Path(path).absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    st = os.statvfs(p)
    return int(st.f_bavail * st.f_frsize)


def disk_full_message(path: str | os.PathLike[str], need: int | None = None,
                      have: int | None = None) -> str:
    """``No space left on DEVICE (mounted at M): need N, have F, for PATH`` as one line.

    Parameters
    ----------
    path : path-like
        What was being written.
    need, have : int, optional
        Bytes needed and bytes free (``have`` is measured when not given).
    """
    p = Path(path)
    device, mount = _mount_of(p)
    if have is None:
        with contextlib.suppress(OSError):
            have = free_bytes(p)
    where = device if device == mount else f"{device} (mounted at {mount})"
    sizes = []
    if need is not None:
        sizes.append(f"need {_bytes(need)}")
    if have is not None:
        sizes.append(f"have {_bytes(have)}")
    tail = (": " + ", ".join(sizes)) if sizes else ""
    return f"No space left on {where}{tail}, writing {p}"


def as_disk_full(exc: BaseException, path: str | os.PathLike[str],
                 need: int | None = None) -> BaseException:
    """``exc`` as a one-line :class:`DiskFullError` when it says the disk is full, else ``exc``.

    A full disk is an ``OSError`` with ``ENOSPC``/``EDQUOT`` (or, from pyarrow, no errno and
    "No space left" in its text).

    Parameters
    ----------
    exc : BaseException
        What a writer raised.
    path : path-like
        What was being written (named in the message).
    need : int, optional
        Bytes it needed, when known.
    """
    if isinstance(exc, DiskFullError) or not isinstance(exc, OSError):
        return exc
    if exc.errno in (errno.ENOSPC, errno.EDQUOT) or "No space left" in str(exc):
        return DiskFullError(disk_full_message(path, need))
    return exc


def check_space(path: str | os.PathLike[str], need: int, *, margin: int = 0) -> None:
    """Raise :class:`DiskFullError` unless ``need + margin`` bytes are free where ``path`` goes.

    Parameters
    ----------
    path : path-like
        The file (or folder) about to be written.
    need : int
        Bytes it will take.
    margin : int
        Further bytes to leave free (manifests, sidecars).
    """
    have = free_bytes(path)
    if need + margin > have:
        raise DiskFullError(disk_full_message(path, need + margin, have))


def reserve_space(fd: int, size: int, *, path: str | os.PathLike[str]) -> None:
    """Allocate ``size`` bytes of the open file ``fd`` on disk before it is memory-mapped.

    A memory map of a sparse file dies with ``SIGBUS`` when a page cannot be backed; after
    ``posix_fallocate`` every page can. Where the file system cannot allocate (``EOPNOTSUPP``,
    ``EINVAL``), the free space is checked instead.

    Parameters
    ----------
    fd : int
        An open, writable file descriptor.
    size : int
        The file's full size in bytes.
    path : path-like
        The file's name, for the message.

    Raises
    ------
    DiskFullError
        The file system has fewer than ``size`` bytes free (the file is left as it was).
    """
    if size <= 0:
        return
    try:
        os.posix_fallocate(fd, 0, size)
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            have = None
            with contextlib.suppress(OSError):
                have = free_bytes(path)
            raise DiskFullError(disk_full_message(path, size, have)) from None
        if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
            raise
        check_space(path, max(0, size - os.fstat(fd).st_blocks * 512))
        os.ftruncate(fd, size)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary sibling of ``path``; on success rename it to ``path``.

    Works for files and for directories (e.g. zarr stores): whatever the body creates under
    the yielded path replaces ``path`` as a whole. On an exception the temporary is deleted
    and ``path`` keeps its previous content.
    """
    final = Path(path)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.with_name(temp_name(final.name))
    try:
        yield tmp
        if not tmp.exists():
            raise FileNotFoundError(f"atomic write produced nothing at {tmp}")
        if final.exists() and final.is_dir() != tmp.is_dir():
            # never replace a folder with a file or a file with a folder: that would delete
            # whatever the user kept there
            kind, other = ("folder", "file") if tmp.is_dir() else ("file", "folder")
            raise ParameterError(
                expected(str(final), f"a path for a {kind}", f"an existing {other} (left as it is)")
            )
        if tmp.is_dir() and final.exists():
            old = final.with_name(temp_name(final.name, "old"))
            os.replace(final, old)
            os.replace(tmp, final)
            remove_path(old)
        else:
            os.replace(tmp, final)
    except OSError as exc:
        remove_path(tmp)
        full = as_disk_full(exc, final)
        if full is not exc:
            raise full from None
        raise
    except BaseException:
        remove_path(tmp)
        raise


def remove_path(path: str | os.PathLike[str]) -> None:
    """Remove a file or a directory tree if it exists."""
    p = Path(path)
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            p.unlink()


def json_default(obj: Any) -> Any:
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "__dataclass_fields__"):
        import dataclasses

        return dataclasses.asdict(obj)
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


def write_json(path: str | os.PathLike[str], obj: Any, *, indent: int = 2) -> Path:
    """Write ``obj`` as JSON atomically (numpy scalars/arrays, Paths and dataclasses allowed)."""
    text = json.dumps(obj, indent=indent, default=json_default, allow_nan=True)
    return write_text(path, text + "\n")


def write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8) atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


def read_json(path: str | os.PathLike[str]) -> Any:
    """Read a JSON file."""
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)
