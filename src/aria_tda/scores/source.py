r"""Score-matrix sources: the one interface every reader implements (row blocks, prefetch).

Conventions
-----------
- A score matrix ``S`` has shape ``(M, T)`` = ``(n_train_segments, n_queries)``; higher scores
  mean more influential (dattri / TRAK orientation). A matrix stored the other way round
  (queries x training segments: Kronfluence, captum's TracInCP, LogIX) is read through
  :func:`transpose_source` (``transpose=True`` of :func:`~aria_tda.scores.readers.open_scores`).
- Storage dtypes float16, bfloat16 (torch, safetensors), float32, float64 and integers are
  accepted. Blocks handed out are float32 (for 16/32-bit floats) or float64 (float64,
  integers): the *block dtype*. Statistics built on top accumulate in float64.
- Nothing here loads a whole matrix unless asked to (:meth:`ScoreSource.to_numpy`).
- A source may carry ``row_ids`` (segment or track ids, ``str``) and the artefact's JSON
  manifest (see :mod:`aria_tda.manifest`).

:meth:`ScoreSource.iter_chunks` hands out a new array per block (or a read-only view of an
in-memory array); the streaming passes ask for ``reuse_buffers=True`` (:data:`PREFETCH_BUFFERS`
buffers taking turns, each block valid until the next step) so memory stays flat.

The file formats live in :mod:`aria_tda.scores.formats`; :func:`aria_tda.scores.readers.open_scores`
and :func:`~aria_tda.scores.readers.as_source` pick one.
"""

from __future__ import annotations

import abc
import contextlib
import queue
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda._checks import check_int
from aria_tda._progress import progress as _progress
from aria_tda.errors import DataError, expected

__all__ = [
    "ArraySource",
    "ScoreSource",
    "TransposedSource",
    "block_dtype_for",
    "check_matrix_shape",
    "check_orientation",
    "default_chunk_rows",
    "transpose_advice",
    "transpose_source",
]

#: Largest target size of one streamed block (bytes). Big enough that BLAS runs near its peak on
#: the block's Gram, small enough that the buffers plus the T x T accumulator stay well under 1 GB.
TARGET_BLOCK_BYTES = 64 * 2**20
#: Blocks a pass has at least (of >= ``T/2`` rows): a smaller matrix is read in smaller blocks.
MIN_BLOCKS = 16
PREFETCH_BUFFERS = 2  #: buffers of a prefetched pass (``reuse_buffers=True``): caller, reader


# ----------------------------------------------------------------------------------------
# validation helpers
# ----------------------------------------------------------------------------------------
def expected_text(name: str, what: str, got: str) -> str:
    """Like :func:`aria_tda.errors.expected`, for a ``got`` that is already descriptive text.

    Parameters
    ----------
    name : str
        The parameter or input the message is about.
    what : str
        What was expected.
    got : str
        What was received, already formatted.
    """
    return f"{name}: expected {what}, got {got}"


def block_dtype_for(dtype: Any) -> np.dtype[Any]:
    """The dtype blocks are handed out in: float32 for <= 32-bit floats, float64 otherwise.

    Parameters
    ----------
    dtype : numpy dtype, torch dtype or str
        The storage dtype (``"bfloat16"`` for bfloat16).

    Raises
    ------
    DataError
        for dtypes that are not real numbers (complex, bool, strings, objects).
    """
    name = str(dtype)
    if name in {"bfloat16", "torch.bfloat16", "torch.float16", "torch.float32"}:
        return np.dtype(np.float32)
    if name in {"torch.float64"}:
        return np.dtype(np.float64)
    if name.startswith("torch.int") or name.startswith("torch.uint"):
        return np.dtype(np.float64)
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise DataError(
            expected("scores", "a real floating-point or integer dtype", name)
        ) from None
    if dt.kind == "f" and dt.itemsize <= 4:
        return np.dtype(np.float32)
    if dt.kind == "f" and dt.itemsize == 8:
        return np.dtype(np.float64)
    if dt.kind in "iu":
        return np.dtype(np.float64)
    raise DataError(expected("scores", "a real floating-point or integer dtype", str(dt)))


def check_matrix_shape(shape: Sequence[int], *, name: str = "scores") -> tuple[int, int]:
    """Check a score-matrix shape: 2-D ``(M, T)`` with ``M, T >= 1``.

    Parameters
    ----------
    shape : sequence of int
        The shape to check.
    name : str
        What the message calls the matrix.
    """
    shape = tuple(int(s) for s in shape)
    if len(shape) != 2:
        raise DataError(
            expected_text(name, "a 2-D matrix (n_train_segments, n_queries)", f"shape {shape}")
        )
    if shape[0] == 0 or shape[1] == 0:
        raise DataError(expected_text(name, "a non-empty matrix", f"shape {shape}"))
    return (shape[0], shape[1])


def default_chunk_rows(shape: Sequence[int], dtype: Any) -> int:
    r"""Rows per streamed block: ``TARGET_BLOCK_BYTES`` (:data:`MIN_BLOCKS`), >= ``T/2`` rows.

    At least ``T/2`` rows keeps the per-block float64 accumulation of the ``T x T`` Gram a few
    percent of the block's :math:`2 R T^2` flops.

    Parameters
    ----------
    shape : sequence of int
        ``(M, T)``.
    dtype : dtype-like
        Storage dtype (sets the block dtype's item size).
    """
    m, t = int(shape[0]), int(shape[1])
    itemsize = block_dtype_for(dtype).itemsize
    row_bytes = max(1, t * itemsize)
    rows = max(min(TARGET_BLOCK_BYTES, m * row_bytes // MIN_BLOCKS) // row_bytes, (t + 1) // 2, 256)
    return int(min(m, rows))


def resolve_chunk_rows(chunk_rows: Any, shape: Sequence[int], dtype: Any) -> int:
    if chunk_rows is None:
        return default_chunk_rows(shape, dtype)
    return min(check_int("chunk_rows", chunk_rows, min_value=1), int(shape[0]))


def as_row_ids(row_ids: Any, n_rows: int, *, name: str = "row_ids") -> np.ndarray | None:
    if row_ids is None:
        return None
    arr = np.asarray(row_ids)
    if arr.ndim != 1 or arr.shape[0] != n_rows:
        raise DataError(expected_text(name, f"{n_rows} ids (one per row)", f"shape {arr.shape}"))
    if arr.dtype.kind not in "US":  # e.g. NumPy's variable-width StringDType (zarr 3)
        return np.asarray([str(x) for x in arr.tolist()], dtype=str)
    return arr.astype(str)


def transpose_advice(transpose: bool | None, fmt: str | None = None) -> str:
    """What to do about a matrix that looks transposed, given how it was read.

    Never tells someone who passed ``--transpose`` to pass it: with ``transpose=True`` the fix
    is to drop it (for a format stored queries x training — Kronfluence's ``.safetensors`` —
    ARIA already transposes on read).

    Parameters
    ----------
    transpose : bool or None
        Whether ``--transpose`` (``transpose=True``, study key ``transpose = true``) was given;
        ``None`` when unknown.
    fmt : str, optional
        The file's format (a key of :data:`aria_tda.scores.formats.FORMATS`).
    """
    if transpose is None:
        return "pass --transpose (transpose=True), or drop it if it was given"
    if transpose:
        why = (
            "; ARIA already reads Kronfluence's .safetensors (stored queries x training) "
            "transposed"
            if fmt == "safetensors"
            else ""
        )
        return f"drop --transpose (transpose=False, study key transpose = false){why}"
    return "pass --transpose (transpose=True, study key transpose = true)"


def check_orientation(
    shape: Any, n_rows: int, *, what: str, transpose: bool | None = None
) -> None:
    """Refuse a matrix whose rows do not match ``n_rows`` but whose columns do.

    Parameters
    ----------
    shape : sequence of int or ScoreSource
        ``(rows, cols)`` of the score matrix as read, or the source itself (then how it was
        read — :attr:`ScoreSource.transpose_requested`, its format — shapes the advice).
    n_rows : int
        How many rows the caller's metadata (segment map, track ids) says ``S`` has.
    what : str
        What gave ``n_rows`` (for the message), e.g. ``"the segment map"``.
    transpose : bool, optional
        Whether ``--transpose`` was given (default: the source's, else unknown); see
        :func:`transpose_advice`.

    Raises
    ------
    DataError
        ``rows != n_rows`` and ``cols == n_rows``: "looks transposed (T × M); pass
        --transpose" (or "drop --transpose" when it was given).
    """
    fmt = None
    if isinstance(shape, ScoreSource):
        if transpose is None:
            transpose = shape.transpose_requested
        fmt = shape.format
        shape = shape.shape
    rows, cols = int(shape[0]), int(shape[1])
    if rows != n_rows and cols == n_rows:
        raise DataError(
            f"scores: looks transposed ({rows} × {cols}); {transpose_advice(transpose, fmt)}: "
            f"{what} has {n_rows} entries, the matrix's column count, not its row count "
            "(ARIA reads training segments x queries)"
        )


# ----------------------------------------------------------------------------------------
# the interface
# ----------------------------------------------------------------------------------------
class ScoreSource(abc.ABC):
    r"""A score matrix ``S`` of shape ``(M, T)`` that can be read in row blocks.

    Subclasses implement :meth:`_raw_rows` (rows in the stored dtype) and may override
    :meth:`_read_into` (fill a preallocated buffer without a temporary).

    Attributes
    ----------
    shape : tuple of int
        ``(M, T)`` = ``(n_train_segments, n_queries)``.
    dtype : numpy.dtype or str
        Storage dtype (``"bfloat16"`` for bfloat16 tensors).
    block_dtype : numpy.dtype
        dtype of the blocks handed out (float32 or float64).
    row_ids : numpy.ndarray [shape=(M,)] of str or None
        Ids of the rows; ``None`` means ``0..M-1``.
    manifest : dict or None
        The artefact's JSON manifest, when it has one.
    path : pathlib.Path or None
        Where the matrix lives, for file-backed sources (used to re-open it in Dask workers).
    transposed : bool
        True when the rows of this source are the stored matrix's columns (a file read with
        ``transpose=True``, or a format stored queries x training segments); used to re-open
        the file the same way in Dask workers.
    transpose_requested : bool or None
        Whether the caller asked for ``transpose=True`` (``--transpose``) when opening it;
        ``None`` when unknown. Orientation hints use it (:func:`transpose_advice`).
    format : str or None
        The file format it was read from (a key of :data:`aria_tda.scores.formats.FORMATS`).
    summed_keys : tuple of str or None
        The stored tensors this matrix is the sum of, when the file held no single score
        matrix but several summed on read (Kronfluence per-module scores without
        ``all_modules``); ``None`` otherwise.
    notes : tuple of str
        One line each on how the file was read where that is not just "as stored" (summed
        per-module tensors, assembled partitions, row ids from a side file): for the output
        of a command and the manifests of what it writes (:meth:`provenance`).

    Parameters
    ----------
    shape : sequence of int
        ``(M, T)``.
    dtype : dtype-like or str
        Storage dtype.
    row_ids : array-like of str [shape=(M,)], optional
        Ids of the rows.
    manifest : dict, optional
        The artefact's JSON manifest.
    """

    path: Path | None = None
    key: str | None = None
    transposed: bool = False
    transpose_requested: bool | None = None
    format: str | None = None
    summed_keys: tuple[str, ...] | None = None
    notes: tuple[str, ...] = ()
    #: True when blocks can be handed out as views without copying (in-memory, right dtype).
    zero_copy: bool = False
    #: True when reads involve I/O, so a prefetch thread helps.
    io_bound: bool = True

    def __init__(
        self,
        shape: Sequence[int],
        dtype: Any,
        *,
        row_ids: Any = None,
        manifest: dict[str, Any] | None = None,
    ) -> None:
        self.shape: tuple[int, int] = check_matrix_shape(shape)
        self.dtype = dtype
        self.block_dtype: np.dtype[Any] = block_dtype_for(dtype)
        self.row_ids = as_row_ids(row_ids, self.shape[0])
        self.manifest = manifest

    # -- to implement ----------------------------------------------------------------
    @abc.abstractmethod
    def _raw_rows(self, start: int, stop: int) -> Any:
        """Rows ``start:stop`` as an array in (or convertible from) the stored dtype."""

    def _read_into(self, start: int, stop: int, out: np.ndarray) -> np.ndarray:
        """Fill ``out`` (shape ``(stop-start, T)``, block dtype) with rows ``start:stop``."""
        np.copyto(out, np.asarray(self._raw_rows(start, stop)), casting="unsafe")
        return out

    def _raw_columns(self, start: int, stop: int) -> Any:
        """Columns ``start:stop`` ``(M, stop-start)`` (what :class:`TransposedSource` reads).

        The default streams every row block; formats with random access override it.
        """
        return self.read_columns(slice(start, stop))

    def _transposed(self) -> ScoreSource:
        """This matrix transposed (the hook behind :func:`transpose_source`)."""
        return TransposedSource(self)

    # -- public API ------------------------------------------------------------------
    @property
    def n_rows(self) -> int:
        """``M``, the number of training segments (rows)."""
        return self.shape[0]

    @property
    def n_cols(self) -> int:
        """``T``, the number of queries (columns)."""
        return self.shape[1]

    def chunk_rows(self, chunk_rows: int | None = None) -> int:
        """The validated rows per block.

        Parameters
        ----------
        chunk_rows : int, optional
            Rows per block asked for; ``None``: :func:`default_chunk_rows`.
        """
        return resolve_chunk_rows(chunk_rows, self.shape, self.dtype)

    def _check_range(self, start: int, stop: int) -> tuple[int, int]:
        start = check_int("start", start, min_value=0, max_value=self.n_rows)
        stop = check_int("stop", stop, min_value=start, max_value=self.n_rows)
        return start, stop

    def read_rows(self, start: int, stop: int) -> np.ndarray:
        """Rows ``start:stop`` as a new C-contiguous array ``(stop-start, T)`` of block dtype.

        Parameters
        ----------
        start, stop : int
            Row range, ``0 <= start <= stop <= M``.
        """
        start, stop = self._check_range(start, stop)
        out = np.empty((stop - start, self.n_cols), dtype=self.block_dtype)
        return self._read_into(start, stop, out)

    def read_columns(self, cols: Any, *, chunk_rows: int | None = None) -> np.ndarray:
        """Columns ``cols`` (indices or a slice) as an array ``(M, k)`` of block dtype.

        Streams row blocks; memory is ``M * k`` values plus one block.

        Parameters
        ----------
        cols : int, sequence of int or slice
            Which columns.
        chunk_rows : int, optional
            Rows per streamed block.
        """
        idx = np.arange(self.n_cols)[cols]
        idx = np.atleast_1d(idx)
        out = np.empty((self.n_rows, idx.size), dtype=self.block_dtype)
        for start, block in self.iter_chunks(chunk_rows, reuse_buffers=True):
            out[start : start + block.shape[0]] = block[:, idx]
        return out

    def to_numpy(self) -> np.ndarray:
        """The whole matrix in memory ``(M, T)``, block dtype."""
        return self.read_rows(0, self.n_rows)

    def iter_chunks(
        self,
        chunk_rows: int | None = None,
        *,
        start: int = 0,
        stop: int | None = None,
        prefetch: bool = True,
        reuse_buffers: bool = False,
        progress: bool | None = False,
        desc: str | None = None,
    ) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(row_start, block)`` over rows ``start:stop`` in blocks of ``chunk_rows``.

        Parameters
        ----------
        chunk_rows : int, optional
            Rows per block; default :func:`default_chunk_rows` (about 64 MB).
        start, stop : int
            Row range (default: all rows).
        prefetch : bool
            Read the next block in a background thread while the caller works on this one
            (a one-deep prefetch; used when the source does I/O).
        reuse_buffers : bool
            Read into a few reused buffers instead of a new array per block (no allocation,
            steady memory). Then each block is read-only and valid only until the next step
            of the iteration — for consumers that are done with a block when they ask for
            the next (the streaming passes).
        progress : bool or None
            Draw a progress bar (``None``: decided by the environment, see
            :mod:`aria_tda._progress`).
        desc : str, optional
            Label of the progress bar.

        Yields
        ------
        start : int
        block : numpy.ndarray [shape=(rows, T)], block dtype. In-memory sources of the
            block dtype hand out read-only views of their array.
        """
        rows = self.chunk_rows(chunk_rows)
        stop = self.n_rows if stop is None else stop
        start, stop = self._check_range(start, stop)
        ranges = [(s, min(s + rows, stop)) for s in range(start, stop, rows)]
        bar = _progress(total=stop - start, desc=desc or "rows", unit="row", enabled=progress)
        try:
            if self.zero_copy:
                for s, e in ranges:
                    yield s, self._raw_rows(s, e)
                    bar.update(e - s)
            elif prefetch and self.io_bound and len(ranges) > 1:
                for s, block in _prefetched(self, ranges, rows, reuse=reuse_buffers):
                    yield s, block
                    bar.update(block.shape[0])
            elif reuse_buffers:
                buf = np.empty((min(rows, stop - start), self.n_cols), dtype=self.block_dtype)
                for s, e in ranges:
                    block = self._read_into(s, e, buf[: e - s])
                    block.flags.writeable = False
                    yield s, block
                    block.flags.writeable = True
                    bar.update(e - s)
            else:
                for s, e in ranges:
                    yield s, self._read_into(s, e, self._new_block(e - s))
                    bar.update(e - s)
        finally:
            bar.close()

    def _new_block(self, rows: int) -> np.ndarray:
        return np.empty((rows, self.n_cols), dtype=self.block_dtype)

    def close(self) -> None:  # noqa: B027 - optional hook, most sources hold no handle
        """Release file handles (sources also close when garbage-collected)."""

    def __enter__(self) -> ScoreSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def describe(self) -> str:
        """A one-line description for messages and manifests."""
        where = str(self.path) if self.path is not None else "in memory"
        return f"{type(self).__name__}({where}, shape={self.shape}, dtype={self.dtype})"

    def provenance(self) -> dict[str, Any]:
        """How this matrix was read, as a JSON-able mapping (for outputs and manifests).

        Returns
        -------
        dict
            ``path`` (str or None), ``format``, ``key``, ``transposed`` (rows are the stored
            matrix's columns), ``summed_keys`` (list or None) and ``notes`` (list of str).
        """
        return {
            "path": None if self.path is None else str(self.path),
            "format": self.format,
            "key": self.key,
            "transposed": bool(self.transposed),
            "summed_keys": None if self.summed_keys is None else list(self.summed_keys),
            "notes": list(self.notes),
        }

    def __repr__(self) -> str:
        return self.describe()


_STOP = object()  # the reader's last item


def _prefetched(
    src: ScoreSource, ranges: list[tuple[int, int]], rows: int, *, reuse: bool
) -> Iterator[tuple[int, np.ndarray]]:
    """Read ``ranges`` one block ahead in a thread (one-deep queue).

    With ``reuse``, :data:`PREFETCH_BUFFERS` buffers take turns (the consumer puts its block back
    in ``free`` when it asks for the next) and are read-only; else each block is a new array.
    """
    free: queue.Queue[np.ndarray] = queue.Queue()
    for _ in range(PREFETCH_BUFFERS if reuse else 0):
        free.put(np.empty((rows, src.n_cols), dtype=src.block_dtype))
    q: queue.Queue[Any] = queue.Queue(maxsize=1)
    stop_event = threading.Event()

    def hand_over(item: Any) -> bool:  # False: the consumer left
        while not stop_event.is_set():
            with contextlib.suppress(queue.Full):
                q.put(item, timeout=0.1)
                return True
        return False

    def reader() -> None:
        try:
            for s, e in ranges:
                buf = None
                while reuse and buf is None and not stop_event.is_set():
                    with contextlib.suppress(queue.Empty):
                        buf = free.get(timeout=0.1)
                if stop_event.is_set():
                    return
                target = src._new_block(e - s) if buf is None else buf[: e - s]
                if not hand_over((s, src._read_into(s, e, target), buf)):
                    return
            hand_over(_STOP)
        except BaseException as exc:  # handed to the consumer
            hand_over(exc)

    thread = threading.Thread(target=reader, name="aria-prefetch", daemon=True)
    thread.start()
    try:
        while True:
            try:
                item = q.get(timeout=0.5)
            except queue.Empty:
                if thread.is_alive():
                    continue
                try:  # it may have handed something over just before it ended
                    item = q.get_nowait()
                except queue.Empty:
                    raise RuntimeError(
                        f"the reader thread of {src.describe()} ended without handing over "
                        "its blocks or its error (out of memory?)"
                    ) from None
            if item is _STOP:
                return
            if isinstance(item, BaseException):
                raise item
            s, block, buf = item
            if reuse:
                block.flags.writeable = False
            yield s, block
            if buf is not None:
                block.flags.writeable = True
                free.put(buf)  # the reader may fill it now
    finally:
        stop_event.set()
        with contextlib.suppress(queue.Empty):
            while True:
                q.get_nowait()
        thread.join()


# ----------------------------------------------------------------------------------------
# in-memory arrays
# ----------------------------------------------------------------------------------------
class ArraySource(ScoreSource):
    """A matrix already in memory (a NumPy array, or anything ``np.asarray`` accepts).

    Parameters
    ----------
    array : array-like [shape=(M, T)]
        The matrix (wrapped without a copy when possible).
    row_ids : array-like of str [shape=(M,)], optional
        Ids of the rows.
    manifest : dict, optional
        A manifest to carry along.
    """

    io_bound = False

    def __init__(
        self, array: Any, *, row_ids: Any = None, manifest: dict[str, Any] | None = None
    ) -> None:
        arr = np.asarray(array)
        if arr.ndim != 2:
            check_matrix_shape(arr.shape)
        super().__init__(arr.shape, arr.dtype, row_ids=row_ids, manifest=manifest)
        self.array = arr
        self.zero_copy = arr.dtype == self.block_dtype and arr.flags.c_contiguous

    def _raw_rows(self, start: int, stop: int) -> np.ndarray:
        view = self.array[start:stop]
        if self.zero_copy:
            view = view.view()
            view.flags.writeable = False
        return view

    def _raw_columns(self, start: int, stop: int) -> np.ndarray:
        return self.array[:, start:stop]

    def _transposed(self) -> ScoreSource:
        out = ArraySource(self.array.T, manifest=self.manifest)
        out.transposed = not self.transposed
        return out

    def read_columns(self, cols: Any, *, chunk_rows: int | None = None) -> np.ndarray:
        """Columns ``cols`` as an array ``(M, k)`` of block dtype (taken from memory).

        Parameters
        ----------
        cols : int, sequence of int or slice
            Which columns.
        chunk_rows : int, optional
            Ignored (the matrix is in memory).
        """
        idx = np.atleast_1d(np.arange(self.n_cols)[cols])
        return np.asarray(self.array[:, idx], dtype=self.block_dtype)

    def to_numpy(self) -> np.ndarray:
        """A copy of the whole matrix ``(M, T)`` in block dtype."""
        return np.array(self.array, dtype=self.block_dtype, order="C", copy=True)


# ----------------------------------------------------------------------------------------
# orientation
# ----------------------------------------------------------------------------------------
class TransposedSource(ScoreSource):
    """The transpose of another source: row ``i`` here is column ``i`` of ``base``.

    Each row block is a column slice of ``base`` (a strided read for ``.npy``/safetensors
    memory maps, chunk reads for zarr). Row ids are dropped (``base``'s ids name its rows).

    Parameters
    ----------
    base : ScoreSource
        The stored matrix, ``(T, M)``.
    """

    def __init__(self, base: ScoreSource) -> None:
        super().__init__((base.n_cols, base.n_rows), base.dtype, manifest=base.manifest)
        self.base = base
        self.path = base.path
        self.key = base.key
        self.io_bound = base.io_bound
        self.transposed = not base.transposed
        self.transpose_requested = base.transpose_requested
        self.format = base.format
        self.summed_keys = base.summed_keys
        self.notes = base.notes

    def _raw_rows(self, start: int, stop: int) -> np.ndarray:
        return np.asarray(self.base._raw_columns(start, stop)).T

    def _raw_columns(self, start: int, stop: int) -> Any:
        return self.base._raw_rows(start, stop).T

    def _transposed(self) -> ScoreSource:
        return self.base

    def close(self) -> None:
        """Close the underlying source."""
        self.base.close()

    def describe(self) -> str:
        """A one-line description for messages and manifests."""
        return f"transpose of {self.base.describe()}"


def transpose_source(src: ScoreSource) -> ScoreSource:
    """``src`` transposed: ``(T, M)`` stored as queries x training segments becomes ``(M, T)``.

    In-memory arrays and torch tensors become transposed views; files are read as column
    slices (:class:`TransposedSource`); transposing twice gives the original back.

    Parameters
    ----------
    src : ScoreSource
        The matrix as stored.
    """
    out = src._transposed()
    for name in ("transpose_requested", "format", "summed_keys", "notes"):
        setattr(out, name, getattr(src, name))  # how it was read travels with it
    return out
