"""Score files opened for reading: a bounded number at a time, and checked to be the file opened.

Conventions
-----------
A source that reads a file in place (an ``.npy`` file, a safetensors tensor, an uncompressed
``.npz`` member, bergson's ``scores.bin``) holds no file open between reads: each read opens
the file, reads (``os.preadv``, or a memory map for strided column slices, copied out before
the map is closed) and closes it. So a Kronfluence file of 1,500 per-module tensors, or a
folder of thousands of partition files, is summed one tensor at a time without ever holding
more than :data:`MAX_OPEN_FILES` files open — all the sources of the process together, each
read taking one of that many slots for as long as its file is open (and never a second one).

A source records the file's identity (device, inode, size) when it checks the header; a read
that finds another file at the path (replaced or cut short since) is refused in one line,
never read as if it were the one checked.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from aria_tda.errors import FileFormatError

__all__ = ["MAX_OPEN_FILES", "FileIdentity", "mapped", "open_for_read", "pread_exact"]

#: The most score files the in-place readers of this process hold open at once (a read waits
#: for a free slot). Small: a read needs one file, and the prefetch thread, the main thread and
#: a few Dask threads read at once.
MAX_OPEN_FILES = 16

#: ``(st_dev, st_ino, st_size)`` of a file as its header was checked.
FileIdentity = tuple[int, int, int]

_SLOTS = threading.BoundedSemaphore(MAX_OPEN_FILES)


def _identity(fh: BinaryIO) -> FileIdentity:
    st = os.fstat(fh.fileno())
    return (st.st_dev, st.st_ino, st.st_size)


@contextlib.contextmanager
def open_for_read(
    path: Path, where: str, identity: FileIdentity | None = None
) -> Iterator[tuple[BinaryIO, FileIdentity]]:
    """``(file, identity)``: ``path`` opened for reading, in one of :data:`MAX_OPEN_FILES` slots.

    Parameters
    ----------
    path : pathlib.Path
        The file.
    where : str
        How messages name it.
    identity : FileIdentity, optional
        The identity recorded when the header was checked; another file found at ``path`` is
        refused.

    Raises
    ------
    FileFormatError
        The file cannot be opened, or is not the one checked.
    """
    with _SLOTS:
        try:
            fh = open(path, "rb")
        except OSError as exc:
            raise FileFormatError(f"{where}: cannot open ({exc.strerror})") from None
        with fh:
            now = _identity(fh)
            if identity is not None and now != identity:
                raise FileFormatError(
                    f"{where}: the file changed since its header was checked (size "
                    f"{identity[2]} bytes, now {now[2]}" + (", another file" if now[:2] !=
                                                           identity[:2] else "")
                    + "); open it again"
                )
            yield fh, now


def pread_exact(fh: BinaryIO, view: memoryview, offset: int, where: str) -> None:
    """Fill ``view`` with the bytes of ``fh`` from ``offset`` (positional reads, no seek).

    Parameters
    ----------
    fh : binary file
        An open file.
    view : memoryview
        A writable byte view (``array.data.cast("B")``).
    offset : int
        Where in the file.
    where : str
        How messages name the file.

    Raises
    ------
    FileFormatError
        The file ends before the view is full.
    """
    fd = fh.fileno()
    done = 0
    total = view.nbytes
    while done < total:
        n = os.preadv(fd, [view[done:]], offset + done)
        if n <= 0:
            raise FileFormatError(f"{where}: unexpected end of file at byte {offset + done}")
        done += n


@contextlib.contextmanager
def mapped(path: Path, where: str, identity: FileIdentity) -> Iterator[mmap.mmap]:
    """A read-only memory map of the whole file for the body; closed (and its slot freed) after.

    Arrays built on the map must be copied out (and dropped) inside the body.

    Parameters
    ----------
    path : pathlib.Path
        The file.
    where : str
        How messages name it.
    identity : FileIdentity
        The identity recorded when the header was checked.
    """
    with open_for_read(path, where, identity) as (fh, _):
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            yield mm
        finally:
            with contextlib.suppress(BufferError):  # an array still on it: closed when dropped
                mm.close()
