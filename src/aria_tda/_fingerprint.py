"""Content fingerprints of input files: what a cache or a resumable step is keyed on.

A size + mtime key serves stale results for a file rewritten with its mtime kept (``cp -p``,
``rsync -a``, ``tar``); :func:`content_digest` hashes the bytes instead. The file is read once,
sequentially, while two threads hash the blocks of :data:`BLOCK` bytes already read (reading
and ``hashlib`` both release the GIL, so the disk and the hashing overlap), and the digest of
each file is itself cached in ``$ARIA_CACHE_DIR/fingerprints.sqlite`` under its
``(path, device, inode, size, mtime, ctime)``: ``ctime`` cannot be set back by a user, so any
rewrite, even one that restores the mtime, is hashed again, while a rerun on unchanged inputs
costs one ``stat`` per file.

A folder (a feature store, a zarr store) is fingerprinted over its files' relative paths and
digests, hidden temporaries and the writer lock left out. A damaged digest cache (not a
database, malformed) is removed and rebuilt with one warning; one that cannot be written (a
read-only or full file system) is used read-only, or not at all, with one warning per process
(:func:`cache_unwritable`, which ARIA's other caches under :func:`cache_dir` share), and is never
called damaged.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import stat as _stat
import warnings
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from aria_tda._io import is_temporary
from aria_tda.errors import AriaWarning

__all__ = ["BLOCK", "cache_dir", "cache_unwritable", "content_digest", "hash_bytes",
           "write_error"]

#: Bytes hashed per block (the digest is a hash of the blocks' SHA-256 digests).
BLOCK = 32 * 2**20
#: The digest cache inside :func:`cache_dir`.
CACHE_FILE = "fingerprints.sqlite"
#: Version of the digest scheme (part of every digest).
SCHEME = b"aria-content-1"


def cache_dir() -> Path:
    """``$ARIA_CACHE_DIR`` (default ``~/.cache/aria``)."""
    return Path(os.environ.get("ARIA_CACHE_DIR") or Path.home() / ".cache" / "aria")


def _read_into(fh: Any, buf: bytearray, n: int) -> memoryview:
    """Read ``n`` bytes into the reused buffer ``buf`` (fewer at the end of the file)."""
    view = memoryview(buf)[:n]
    got = 0
    while got < n:
        k = fh.readinto(view[got:])
        if not k:
            break
        got += k
    return view[:got]


def _sha(data: memoryview) -> bytes:
    return hashlib.sha256(data).digest()


def hash_bytes(path: str | os.PathLike[str], *, workers: int = 2,
               progress: Callable[[int], None] | None = None) -> str:
    """The content digest of one file, computed without the cache (hex, 32 characters).

    The file is read once, sequentially, by the calling thread into ``workers + 1`` reused
    buffers while ``workers`` threads hash the blocks already read (``readinto`` and
    ``hashlib`` both release the GIL), so reading from the disk and hashing overlap.

    Parameters
    ----------
    path : path-like
        A regular file.
    workers : int
        Blocks hashed at once.
    progress : callable, optional
        Called with the bytes of each block read.
    """
    with open(path, "rb", buffering=0) as fh:
        size = os.fstat(fh.fileno()).st_size
        top = hashlib.sha256(SCHEME + size.to_bytes(8, "little"))
        workers = max(1, min(workers, -(-size // BLOCK)))
        buffers = [bytearray(min(BLOCK, size)) for _ in range(workers + 1 if workers > 1 else 1)]
        pending: deque[Future[bytes]] = deque()
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for i, off in enumerate(range(0, size, BLOCK)):
                # the buffer's previous block is hashed: at most ``workers`` are pending
                block = _read_into(fh, buffers[i % len(buffers)], min(BLOCK, size - off))
                if workers == 1:
                    top.update(_sha(block))
                else:
                    pending.append(pool.submit(_sha, block))
                    while len(pending) >= len(buffers) - 1:
                        top.update(pending.popleft().result())
                if progress is not None:
                    progress(len(block))
            while pending:
                top.update(pending.popleft().result())
    return top.hexdigest()[:32]


class _Cache:
    """The ``fingerprints.sqlite`` table; every failure degrades to "not cached".

    A cache that cannot be written (a read-only or full file system, no permission) is used
    read-only, or not at all when it cannot be opened, with one warning per process
    (:func:`cache_unwritable`); only a file that is not a database (or a malformed one) is
    called damaged, removed and rebuilt.
    """

    def __init__(self) -> None:
        self.conn: sqlite3.Connection | None = None
        self.writable = True
        base = cache_dir()
        path = base / CACHE_FILE
        try:
            base.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            cache_unwritable("fingerprint cache", base, exc, "inputs are hashed without it")
            return
        for attempt in range(2):
            try:
                self.conn = sqlite3.connect(path, timeout=30)
                self.conn.execute("CREATE TABLE IF NOT EXISTS digest "
                                  "(key TEXT PRIMARY KEY, value TEXT NOT NULL)")
                self.conn.execute("SELECT count(*) FROM digest").fetchone()
                return
            except sqlite3.OperationalError as exc:  # busy, unwritable, full: not damage
                self.close()
                if "locked" not in str(exc):
                    if path.is_file() and path.stat().st_size > 0:
                        self._open_read_only(path)
                    self._unwritable(path, exc)
                return
            except sqlite3.DatabaseError as exc:  # not a database, malformed: damaged
                self.close()
                if attempt or not path.is_file():
                    return
                warnings.warn(
                    f"{path}: the fingerprint cache is damaged ({exc}); it is rebuilt (inputs "
                    "are hashed again once)", AriaWarning, stacklevel=4)
                with contextlib.suppress(OSError):
                    path.unlink()
            except (sqlite3.Error, OSError):
                self.close()
                return

    def _open_read_only(self, path: Path) -> None:
        """Use an existing cache that cannot be written for look-ups only."""
        with contextlib.suppress(sqlite3.Error):
            self.conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=30)
            self.conn.execute("SELECT count(*) FROM digest").fetchone()
            self.writable = False
            return
        self.close()

    def _unwritable(self, path: Path, exc: BaseException) -> None:
        self.writable = False
        cache_unwritable("fingerprint cache", path, exc,
                         "it is used read-only, and inputs it lacks are hashed each time"
                         if self.conn is not None else "inputs are hashed without it")

    def get(self, key: str) -> str | None:
        if self.conn is None:
            return None
        try:
            row = self.conn.execute("SELECT value FROM digest WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error:
            return None
        return None if row is None else str(row[0])

    def put(self, key: str, value: str) -> None:
        if self.conn is None or not self.writable:
            return
        try:
            with self.conn:
                self.conn.execute("INSERT OR REPLACE INTO digest VALUES (?, ?)", (key, value))
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc):
                self._unwritable(Path(cache_dir()) / CACHE_FILE, exc)
        except sqlite3.Error:
            pass

    def close(self) -> None:
        if self.conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self.conn.close()
        self.conn = None


#: The caches already said to be unwritable in this process (one warning each).
_UNWRITABLE: set[str] = set()


def cache_unwritable(what: str, path: str | os.PathLike[str], exc: BaseException,
                     consequence: str) -> None:
    """Warn, once per process and cache, that a cache under :func:`cache_dir` cannot be written.

    Parameters
    ----------
    what : str
        The cache (``"fingerprint cache"``, ``"media cache"``).
    path : path-like
        Its file or folder.
    exc : BaseException
        Why it cannot be written (an ``OSError``, or SQLite's error).
    consequence : str
        What is done instead (``"inputs are hashed without it"``).
    """
    if what in _UNWRITABLE:
        return
    _UNWRITABLE.add(what)
    if not (isinstance(exc, OSError) and exc.errno):  # SQLite's words: ask the file system
        exc = write_error(Path(path).parent if Path(path).suffix else Path(path)) or exc
    reason = (os.strerror(exc.errno) if isinstance(exc, OSError) and exc.errno
              else " ".join(str(exc).split())[:120] or type(exc).__name__)
    warnings.warn(
        f"{path}: the {what} cannot be written ({reason}); {consequence} (set ARIA_CACHE_DIR "
        "to a writable folder with free space)", AriaWarning, stacklevel=3)


def write_error(folder: Path) -> OSError | None:
    """Why a small file (64 KiB) cannot be written in ``folder`` (``None``: it can).

    Parameters
    ----------
    folder : Path
        An existing folder.
    """
    probe = folder / f".aria-write-test-{os.getpid()}"
    try:
        with open(probe, "wb") as fh:
            fh.write(b"\0" * 65536)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        return exc
    finally:
        with contextlib.suppress(OSError):
            probe.unlink()
    return None


def _stat_key(path: Path, st: os.stat_result) -> str:
    return (f"{path}|{st.st_dev}|{st.st_ino}|{st.st_size}|{st.st_mtime_ns}|{st.st_ctime_ns}")


def _skipped(name: str) -> bool:
    """Temporaries and writer locks are not part of a folder's content."""
    return is_temporary(name) or name.endswith(".aria-lock")


def _file_digest(path: Path, cache: _Cache) -> str:
    st = path.stat()
    key = _stat_key(path, st)
    hit = cache.get(key)
    if hit is not None:
        return hit
    digest = hash_bytes(path)
    if path.stat().st_ctime_ns == st.st_ctime_ns:  # not rewritten while hashed
        cache.put(key, digest)
    return digest


def content_digest(path: str | os.PathLike[str]) -> str:
    """The content fingerprint of a file or a folder (hex, 32 characters).

    Parameters
    ----------
    path : path-like
        A regular file, or a folder (its regular files, recursively, by relative path).

    Returns
    -------
    str
        Equal for equal bytes wherever they are; different when any byte differs.
    """
    p = Path(path).resolve()
    cache = _Cache()
    try:
        st = p.stat()
        if _stat.S_ISDIR(st.st_mode):
            top = hashlib.sha256(SCHEME + b"/dir")
            for root, dirs, files in os.walk(p):
                dirs[:] = sorted(d for d in dirs if not _skipped(d))
                for name in sorted(files):
                    if _skipped(name):
                        continue
                    f = Path(root) / name
                    if not f.is_file():
                        continue
                    rel = f.relative_to(p).as_posix()
                    top.update(rel.encode() + b"\0" + _file_digest(f, cache).encode() + b"\n")
            return top.hexdigest()[:32]
        return _file_digest(p, cache)
    finally:
        cache.close()
