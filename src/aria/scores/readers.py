r"""Score-matrix sources: one interface over ``.npy``, ``.npz``, torch ``.pt`` and zarr stores.

Conventions
-----------
- A score matrix ``S`` has shape ``(M, T)`` = ``(n_train_segments, n_queries)``; higher scores
  mean more influential (dattri / TRAK orientation).
- Storage dtypes float16, bfloat16 (torch only), float32, float64 and integers are accepted.
  Blocks handed out are float32 (for 16/32-bit floats) or float64 (float64, integers): the
  *block dtype*. Statistics built on top accumulate in float64.
- Nothing here loads a whole matrix unless asked to (:meth:`ScoreSource.to_numpy`): ``.npy``
  and uncompressed ``.npz`` members are read with positional reads into reused buffers,
  zarr chunk by chunk, torch files memory-mapped (``torch.load(mmap=True)``).
- A source may carry ``row_ids`` (segment or track ids, ``str``) and the artefact's JSON
  manifest (see :mod:`aria.manifest`).

:meth:`ScoreSource.iter_chunks` hands out a new array per block (or a read-only view of an
in-memory array); the streaming passes ask for ``reuse_buffers=True`` (three rotating buffers,
each block valid until the next step) so memory stays flat.
"""

from __future__ import annotations

import abc
import contextlib
import os
import queue
import threading
import warnings
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from aria._checks import check_int
from aria._progress import progress as _progress
from aria.errors import DataError, FileFormatError, ParameterError, expected

__all__ = [
    "ArraySource",
    "NpySource",
    "ScoreSource",
    "TorchSource",
    "ZarrSource",
    "as_source",
    "block_dtype_for",
    "default_chunk_rows",
    "open_scores",
]

#: Target size of one streamed block (bytes). Big enough that BLAS runs near its peak on the
#: block's Gram, small enough that three buffers plus the T x T accumulator stay well under 1 GB.
TARGET_BLOCK_BYTES = 64 * 2**20

NPY_SUFFIXES = {".npy"}
NPZ_SUFFIXES = {".npz"}
TORCH_SUFFIXES = {".pt", ".pth"}
ZARR_SUFFIXES = {".zarr"}
ROW_IDS_KEY = "row_ids"
ROW_IDS_SUFFIX = ".row_ids.npy"


# ----------------------------------------------------------------------------------------
# validation helpers
# ----------------------------------------------------------------------------------------
def expected_text(name: str, what: str, got: str) -> str:
    """Like :func:`aria.errors.expected`, for a ``got`` that is already descriptive text."""
    return f"{name}: expected {what}, got {got}"


def block_dtype_for(dtype: Any) -> np.dtype[Any]:
    """The dtype blocks are handed out in: float32 for <= 32-bit floats, float64 otherwise.

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
    """Check a score-matrix shape: 2-D ``(M, T)`` with ``M, T >= 1``."""
    shape = tuple(int(s) for s in shape)
    if len(shape) != 2:
        raise DataError(
            expected_text(name, "a 2-D matrix (n_train_segments, n_queries)", f"shape {shape}")
        )
    if shape[0] == 0 or shape[1] == 0:
        raise DataError(expected_text(name, "a non-empty matrix", f"shape {shape}"))
    return (shape[0], shape[1])


def default_chunk_rows(shape: Sequence[int], dtype: Any) -> int:
    r"""Rows per streamed block: about ``TARGET_BLOCK_BYTES`` and at least ``T/2`` rows.

    At least ``T/2`` rows keeps the per-block float64 accumulation of the ``T x T`` Gram a few
    percent of the block's :math:`2 R T^2` flops.
    """
    m, t = int(shape[0]), int(shape[1])
    itemsize = block_dtype_for(dtype).itemsize
    rows = max(TARGET_BLOCK_BYTES // max(1, t * itemsize), (t + 1) // 2, 256)
    return int(min(m, rows))


def _resolve_chunk_rows(chunk_rows: Any, shape: Sequence[int], dtype: Any) -> int:
    if chunk_rows is None:
        return default_chunk_rows(shape, dtype)
    return min(check_int("chunk_rows", chunk_rows, min_value=1), int(shape[0]))


def _as_row_ids(row_ids: Any, n_rows: int, *, name: str = "row_ids") -> np.ndarray | None:
    if row_ids is None:
        return None
    arr = np.asarray(row_ids)
    if arr.ndim != 1 or arr.shape[0] != n_rows:
        raise DataError(expected_text(name, f"{n_rows} ids (one per row)", f"shape {arr.shape}"))
    if arr.dtype.kind not in "US":  # e.g. NumPy's variable-width StringDType (zarr 3)
        return np.asarray([str(x) for x in arr.tolist()], dtype=str)
    return arr.astype(str)


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
        Storage dtype (``"bfloat16"`` for torch bfloat16 tensors).
    block_dtype : numpy.dtype
        dtype of the blocks handed out (float32 or float64).
    row_ids : numpy.ndarray [shape=(M,)] of str or None
        Ids of the rows; ``None`` means ``0..M-1``.
    manifest : dict or None
        The artefact's JSON manifest, when it has one.
    path : pathlib.Path or None
        Where the matrix lives, for file-backed sources (used to re-open it in Dask workers).
    """

    path: Path | None = None
    key: str | None = None
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
        self.row_ids = _as_row_ids(row_ids, self.shape[0])
        self.manifest = manifest

    # -- to implement ----------------------------------------------------------------
    @abc.abstractmethod
    def _raw_rows(self, start: int, stop: int) -> Any:
        """Rows ``start:stop`` as an array in (or convertible from) the stored dtype."""

    def _read_into(self, start: int, stop: int, out: np.ndarray) -> np.ndarray:
        """Fill ``out`` (shape ``(stop-start, T)``, block dtype) with rows ``start:stop``."""
        np.copyto(out, np.asarray(self._raw_rows(start, stop)), casting="unsafe")
        return out

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
        """The validated rows per block (``None``: :func:`default_chunk_rows`)."""
        return _resolve_chunk_rows(chunk_rows, self.shape, self.dtype)

    def _check_range(self, start: int, stop: int) -> tuple[int, int]:
        start = check_int("start", start, min_value=0, max_value=self.n_rows)
        stop = check_int("stop", stop, min_value=start, max_value=self.n_rows)
        return start, stop

    def read_rows(self, start: int, stop: int) -> np.ndarray:
        """Rows ``start:stop`` as a new C-contiguous array ``(stop-start, T)`` of block dtype."""
        start, stop = self._check_range(start, stop)
        out = np.empty((stop - start, self.n_cols), dtype=self.block_dtype)
        return self._read_into(start, stop, out)

    def read_columns(self, cols: Any, *, chunk_rows: int | None = None) -> np.ndarray:
        """Columns ``cols`` (indices or a slice) as an array ``(M, k)`` of block dtype.

        Streams row blocks; memory is ``M * k`` values plus one block.
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
            :mod:`aria._progress`).

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

    def __repr__(self) -> str:
        return self.describe()


class _Stop(Exception):
    pass


def _prefetched(
    src: ScoreSource, ranges: list[tuple[int, int]], rows: int, *, reuse: bool
) -> Iterator[tuple[int, np.ndarray]]:
    """Read ``ranges`` one block ahead in a thread (one-deep queue).

    With ``reuse``, three buffers rotate (the consumer holds one, the queue one, the reader
    fills one) and blocks are read-only; otherwise each block is a new array.
    """
    n_buf = 3
    bufs = (
        [np.empty((rows, src.n_cols), dtype=src.block_dtype) for _ in range(n_buf)] if reuse else []
    )
    q: queue.Queue[Any] = queue.Queue(maxsize=1)
    stop_event = threading.Event()

    def reader() -> None:
        try:
            for i, (s, e) in enumerate(ranges):
                if stop_event.is_set():
                    return
                target = bufs[i % n_buf][: e - s] if reuse else src._new_block(e - s)
                block = src._read_into(s, e, target)
                while not stop_event.is_set():
                    try:
                        q.put((s, block), timeout=0.1)
                        break
                    except queue.Full:
                        continue
            q.put(_Stop())
        except BaseException as exc:  # handed to the consumer
            with contextlib.suppress(queue.Full):
                while not stop_event.is_set():
                    try:
                        q.put(exc, timeout=0.1)
                        break
                    except queue.Full:
                        continue

    thread = threading.Thread(target=reader, name="aria-prefetch", daemon=True)
    thread.start()
    try:
        while True:
            item = q.get()
            if isinstance(item, _Stop):
                return
            if isinstance(item, BaseException):
                raise item
            s, block = item
            if reuse:
                block.flags.writeable = False
            yield s, block
            if reuse:
                block.flags.writeable = True
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
    """A matrix already in memory (a NumPy array, or anything ``np.asarray`` accepts)."""

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

    def read_columns(self, cols: Any, *, chunk_rows: int | None = None) -> np.ndarray:
        idx = np.atleast_1d(np.arange(self.n_cols)[cols])
        return np.asarray(self.array[:, idx], dtype=self.block_dtype)

    def to_numpy(self) -> np.ndarray:
        return np.array(self.array, dtype=self.block_dtype, order="C", copy=True)


# ----------------------------------------------------------------------------------------
# .npy files and uncompressed .npz members: positional reads
# ----------------------------------------------------------------------------------------
def _read_npy_header(fh: Any, where: str) -> tuple[tuple[int, ...], bool, np.dtype[Any]]:
    fmt = np.lib.format
    try:
        version = fmt.read_magic(fh)
        if version == (1, 0):
            shape, fortran, dtype = fmt.read_array_header_1_0(fh)
        elif version in {(2, 0), (3, 0)}:
            shape, fortran, dtype = fmt.read_array_header_2_0(fh)
        else:
            raise ValueError(f"unsupported .npy version {version}")
    except (ValueError, OSError, SyntaxError, TypeError) as exc:
        raise FileFormatError(f"{where}: not a readable .npy array ({exc})") from None
    if dtype.hasobject:
        raise FileFormatError(f"{where}: holds Python objects; expected a numeric matrix")
    return tuple(shape), bool(fortran), dtype


class NpySource(ScoreSource):
    """A ``.npy`` file (or an uncompressed ``.npz`` member) read with ``os.pread``.

    Streaming reads go straight into reused buffers (no page-cache mapping grows the resident
    set); :attr:`array` is a memory map for random access.
    """

    def __init__(
        self,
        path: Path,
        *,
        base_offset: int = 0,
        key: str | None = None,
        row_ids: Any = None,
        manifest: dict[str, Any] | None = None,
    ) -> None:
        self.path = Path(path)
        self.key = key
        where = f"{self.path}" + (f"[{key!r}]" if key else "")
        try:
            self._fh = open(self.path, "rb")
        except OSError as exc:
            raise FileFormatError(f"{where}: cannot open ({exc.strerror})") from None
        self._fh.seek(base_offset)
        shape, self.fortran, dtype = _read_npy_header(self._fh, where)
        self.data_offset = self._fh.tell()
        super().__init__(shape, dtype, row_ids=row_ids, manifest=manifest)
        need = self.data_offset + int(np.prod(shape)) * dtype.itemsize
        size = os.fstat(self._fh.fileno()).st_size
        if size < need:
            self.close()
            raise FileFormatError(
                f"{where}: truncated: the header promises shape {self.shape} {dtype} "
                f"({need} bytes), the file has {size}"
            )
        self.row_bytes = self.n_cols * dtype.itemsize
        self._mmap: np.ndarray | None = None

    @property
    def array(self) -> np.ndarray:
        """A read-only memory map of the whole matrix (stored dtype and order)."""
        if self._mmap is None:
            self._mmap = np.memmap(
                str(self.path),
                dtype=self.dtype,
                mode="r",
                offset=self.data_offset,
                shape=self.shape,
                order="F" if self.fortran else "C",
            )
        return self._mmap

    def _raw_rows(self, start: int, stop: int) -> np.ndarray:
        return self.array[start:stop]

    def _pread(self, offset: int, view: memoryview) -> None:
        fd = self._fh.fileno()
        done = 0
        total = view.nbytes
        while done < total:
            n = os.preadv(fd, [view[done:]], offset + done)
            if n <= 0:
                raise FileFormatError(
                    f"{self.path}: unexpected end of file at byte {offset + done}"
                )
            done += n

    def _read_into(self, start: int, stop: int, out: np.ndarray) -> np.ndarray:
        if self.fortran:
            return super()._read_into(start, stop, out)
        offset = self.data_offset + start * self.row_bytes
        if self.dtype == out.dtype and self.dtype.isnative:
            self._pread(offset, out.data.cast("B"))
            return out
        raw = np.empty((stop - start, self.n_cols), dtype=self.dtype)
        self._pread(offset, raw.data.cast("B"))
        np.copyto(out, raw, casting="unsafe")
        return out

    def close(self) -> None:
        self._mmap = None
        fh = getattr(self, "_fh", None)
        if fh is not None and not fh.closed:
            fh.close()


class _ZipStreamSource(ScoreSource):
    """A compressed ``.npz`` member, decompressed sequentially (random access re-seeks)."""

    def __init__(self, path: Path, member: str, key: str, *, row_ids: Any, manifest: Any) -> None:
        self.path = Path(path)
        self.key = key
        self._zip = zipfile.ZipFile(self.path)
        self._member = member
        self._lock = threading.Lock()
        self._fh = self._zip.open(member)
        shape, self.fortran, dtype = _read_npy_header(self._fh, f"{path}[{key!r}]")
        if self.fortran:
            self.close()
            raise FileFormatError(
                f"{path}[{key!r}]: a compressed Fortran-order array cannot be streamed; "
                "save it C-ordered or uncompressed (np.savez)"
            )
        self._data_start = self._fh.tell()
        super().__init__(shape, dtype, row_ids=row_ids, manifest=manifest)
        self.row_bytes = self.n_cols * np.dtype(dtype).itemsize

    def _raw_rows(self, start: int, stop: int) -> np.ndarray:
        n = (stop - start) * self.row_bytes
        with self._lock:
            self._fh.seek(self._data_start + start * self.row_bytes)
            data = self._fh.read(n)
        if len(data) != n:
            raise FileFormatError(f"{self.path}[{self.key!r}]: truncated member {self._member!r}")
        return np.frombuffer(data, dtype=self.dtype).reshape(stop - start, self.n_cols)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._fh.close()
            self._zip.close()


def _open_npz(path: Path, key: str | None, manifest: Any) -> ScoreSource:
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise FileFormatError(f"{path}: not a readable .npz archive ({exc})") from None
    with zf:
        members = {i.filename[:-4]: i for i in zf.infolist() if i.filename.endswith(".npy")}
        names = sorted(members)
        if key is None:
            candidates = [n for n in names if n != ROW_IDS_KEY]
            if len(candidates) != 1:
                raise FileFormatError(
                    f"{path}: holds {len(candidates)} arrays {candidates}; pass key= (--key) "
                    "to pick the score matrix"
                )
            key = candidates[0]
        if key not in members:
            raise FileFormatError(f"{path}: no array named {key!r}; it holds {names}")
        info = members[key]
        row_ids = None
        if ROW_IDS_KEY in members and key != ROW_IDS_KEY:
            with zf.open(members[ROW_IDS_KEY]) as fh:
                try:
                    row_ids = np.lib.format.read_array(fh, allow_pickle=False)
                except ValueError as exc:
                    raise FileFormatError(f"{path}[{ROW_IDS_KEY!r}]: unreadable ({exc})") from None
        if info.compress_type == zipfile.ZIP_STORED:
            with open(path, "rb") as raw:
                raw.seek(info.header_offset)
                local = raw.read(30)
                if len(local) != 30 or local[:4] != b"PK\x03\x04":
                    raise FileFormatError(f"{path}: corrupt zip entry {info.filename!r}")
                name_len = int.from_bytes(local[26:28], "little")
                extra_len = int.from_bytes(local[28:30], "little")
            offset = info.header_offset + 30 + name_len + extra_len
            npy = NpySource(path, base_offset=offset, key=key, row_ids=row_ids, manifest=manifest)
            if npy.data_offset + npy.n_rows * npy.row_bytes > offset + info.file_size:
                npy.close()
                raise FileFormatError(f"{path}[{key!r}]: member is shorter than its header says")
            return npy
    return _ZipStreamSource(path, info.filename, key, row_ids=row_ids, manifest=manifest)


# ----------------------------------------------------------------------------------------
# torch tensors and .pt/.pth files
# ----------------------------------------------------------------------------------------
class TorchSource(ScoreSource):
    """A 2-D torch tensor (CPU, memory-mapped from a file, or on a GPU)."""

    io_bound = False

    def __init__(
        self,
        tensor: Any,
        *,
        path: Path | None = None,
        key: str | None = None,
        row_ids: Any = None,
        manifest: dict[str, Any] | None = None,
    ) -> None:
        import torch

        if tensor.dim() != 2:
            check_matrix_shape(tuple(tensor.shape))
        if tensor.is_complex() or tensor.dtype == torch.bool:
            raise DataError(
                expected("scores", "a real floating-point or integer dtype", str(tensor.dtype))
            )
        dtype: Any = "bfloat16" if tensor.dtype == torch.bfloat16 else str(tensor.dtype)
        if dtype != "bfloat16":
            dtype = np.dtype(str(tensor.dtype).removeprefix("torch."))
        super().__init__(tuple(tensor.shape), dtype, row_ids=row_ids, manifest=manifest)
        self.tensor = tensor
        self.path = path
        self.key = key
        self.io_bound = path is not None or tensor.device.type != "cpu"

    def torch_rows(self, start: int, stop: int) -> Any:
        """Rows as a torch tensor on the tensor's own device (no copy when possible)."""
        return self.tensor[start:stop]

    def _raw_rows(self, start: int, stop: int) -> np.ndarray:
        import torch

        rows = self.tensor[start:stop].detach()
        if rows.device.type != "cpu":
            rows = rows.cpu()
        want = torch.float32 if self.block_dtype == np.float32 else torch.float64
        if rows.dtype != want:
            rows = rows.to(want)
        return rows.contiguous().numpy()


def _load_torch(path: Path, key: str | None, manifest: Any) -> TorchSource:
    import torch

    try:
        try:
            obj = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        except RuntimeError as exc:  # legacy (non-zip) files cannot be memory-mapped
            if "mmap" not in str(exc) and "zip" not in str(exc):
                raise
            obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many types for bad files
        raise FileFormatError(
            f"{path}: not a readable torch file ({type(exc).__name__}: {exc})"
        ) from None
    row_ids = None
    if isinstance(obj, dict):
        tensors = {str(k): v for k, v in obj.items() if isinstance(v, torch.Tensor)}
        if ROW_IDS_KEY in obj and not isinstance(obj[ROW_IDS_KEY], torch.Tensor):
            row_ids = list(obj[ROW_IDS_KEY])
        if key is None:
            two_d = [k for k, v in tensors.items() if v.dim() == 2]
            if len(two_d) != 1:
                raise FileFormatError(
                    f"{path}: holds {len(two_d)} 2-D tensors {sorted(two_d)}; pass key= (--key) "
                    "to pick the score matrix"
                )
            key = two_d[0]
        if key not in tensors:
            raise FileFormatError(f"{path}: no tensor named {key!r}; it holds {sorted(tensors)}")
        tensor = tensors[key]
    elif isinstance(obj, torch.Tensor):
        if key is not None:
            raise FileFormatError(f"{path}: holds a single tensor, not a dict; drop key={key!r}")
        tensor = obj
    else:
        raise FileFormatError(
            f"{path}: expected a tensor or a dict holding one, got {type(obj).__name__}"
        )
    return TorchSource(tensor, path=path, key=key, row_ids=row_ids, manifest=manifest)


# ----------------------------------------------------------------------------------------
# zarr
# ----------------------------------------------------------------------------------------
class ZarrSource(ScoreSource):
    """A 2-D zarr array (or the score array of a zarr group), read chunk-aligned."""

    def __init__(
        self,
        array: Any,
        *,
        path: Path | None = None,
        key: str | None = None,
        row_ids: Any = None,
        manifest: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(
            array.shape, np.dtype(str(array.dtype)), row_ids=row_ids, manifest=manifest
        )
        self.array = array
        self.path = path
        self.key = key

    def chunk_rows(self, chunk_rows: int | None = None) -> int:
        if chunk_rows is not None:
            return super().chunk_rows(chunk_rows)
        rows = default_chunk_rows(self.shape, self.dtype)
        stored = int(self.array.chunks[0])
        return int(min(self.n_rows, max(stored, (rows // stored) * stored)))

    def _raw_rows(self, start: int, stop: int) -> np.ndarray:
        try:
            return np.asarray(self.array[start:stop])
        except Exception as exc:
            raise FileFormatError(
                f"{self.path or 'zarr array'}: cannot read rows {start}:{stop} "
                f"({type(exc).__name__}: {exc})"
            ) from None

    def read_columns(self, cols: Any, *, chunk_rows: int | None = None) -> np.ndarray:
        idx = np.atleast_1d(np.arange(self.n_cols)[cols])
        out = self.array.get_orthogonal_selection((slice(None), idx))
        return np.asarray(out, dtype=self.block_dtype)


def _zarr_child(group: Any, name: str) -> Any | None:
    """The array ``name`` of a zarr group, or None."""
    import zarr

    try:
        node = group[name]
    except KeyError:
        return None
    return node if isinstance(node, zarr.Array) else None


def _zarr_array_names(group: Any) -> list[str]:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*not recognized as a component")
        return sorted(group.array_keys())


def _open_zarr(path: Path, key: str | None, manifest: Any) -> ZarrSource:
    import zarr

    try:
        node = zarr.open(str(path), mode="r")
    except Exception as exc:
        raise FileFormatError(
            f"{path}: not a readable zarr store ({type(exc).__name__}: {exc})"
        ) from None
    row_ids = None
    if isinstance(node, zarr.Group):
        # direct look-ups first: listing a group makes zarr warn about our manifest file
        array = _zarr_child(node, key or "scores")
        if array is None:
            names = _zarr_array_names(node)
            candidates = [n for n in names if n != ROW_IDS_KEY]
            if key is not None:
                raise FileFormatError(f"{path}: zarr group has no array {key!r}; it holds {names}")
            if len(candidates) != 1:
                raise FileFormatError(
                    f"{path}: zarr group holds arrays {candidates}; pass key= (--key) to pick one"
                )
            key = candidates[0]
            array = node[key]
        key = key or "scores"
        ids_array = _zarr_child(node, ROW_IDS_KEY) if key != ROW_IDS_KEY else None
        if ids_array is not None:
            row_ids = np.asarray(ids_array[:])
    else:
        if key is not None:
            raise FileFormatError(f"{path}: is a single zarr array, not a group; drop key={key!r}")
        array = node
    return ZarrSource(array, path=path, key=key, row_ids=row_ids, manifest=manifest)


# ----------------------------------------------------------------------------------------
# entry points
# ----------------------------------------------------------------------------------------
def _sniff_format(path: Path) -> str:
    suffix = path.suffix.lower()
    if path.is_dir():
        if (
            suffix in ZARR_SUFFIXES
            or (path / "zarr.json").is_file()
            or (path / ".zarray").is_file()
        ):
            return "zarr"
        raise FileFormatError(f"{path}: a directory that is not a zarr store (no zarr.json)")
    if suffix in NPY_SUFFIXES:
        return "npy"
    if suffix in NPZ_SUFFIXES:
        return "npz"
    if suffix in TORCH_SUFFIXES:
        return "torch"
    with open(path, "rb") as fh:
        head = fh.read(6)
    if head == b"\x93NUMPY":
        return "npy"
    if head[:4] == b"PK\x03\x04":
        return "npz"
    raise FileFormatError(
        f"{path}: unsupported score-matrix format {suffix or '(no suffix)'!r}; "
        "expected .npy, .npz, .pt/.pth or a .zarr store"
    )


def _sidecar_row_ids(path: Path, manifest: dict[str, Any] | None) -> np.ndarray | None:
    side = path.with_name(path.name + ROW_IDS_SUFFIX)
    if not side.is_file():
        return None
    try:
        return np.load(side, allow_pickle=False)
    except (ValueError, OSError) as exc:
        raise FileFormatError(f"{side}: unreadable row ids ({exc})") from None


def open_scores(path: str | os.PathLike[str], *, key: str | None = None) -> ScoreSource:
    """Open a score matrix stored on disk without loading it.

    Parameters
    ----------
    path : str or path-like
        ``.npy`` (read with positional reads / memory map), ``.npz`` (uncompressed members
        read in place, compressed ones decompressed as a stream), torch ``.pt``/``.pth``
        (a tensor, or a dict holding one; memory-mapped), or a zarr store (an array, or a
        group holding ``scores`` and optionally ``row_ids``).
    key : str, optional
        Which array of an ``.npz``, torch dict or zarr group to read; default: the only one
        (or ``scores`` in a zarr group).

    Returns
    -------
    ScoreSource

    Raises
    ------
    FileFormatError
        missing path, unknown format, truncated or unreadable file, ambiguous or unknown key.
    DataError
        the array is not a non-empty 2-D real matrix.
    """
    from aria._checks import check_existing_path
    from aria.manifest import read_manifest

    if key is not None and not isinstance(key, str):
        raise ParameterError(expected("key", "a string", key))
    p = check_existing_path("scores", path)
    fmt = _sniff_format(p)
    manifest = read_manifest(p)
    src: ScoreSource
    if fmt == "npy":
        if key is not None:
            raise FileFormatError(f"{p}: a .npy file holds one array; drop key={key!r}")
        src = NpySource(p, row_ids=_sidecar_row_ids(p, manifest), manifest=manifest)
    elif fmt == "npz":
        src = _open_npz(p, key, manifest)
    elif fmt == "torch":
        src = _load_torch(p, key, manifest)
    else:
        src = _open_zarr(p, key, manifest)
    if manifest is not None and "shape" in manifest and list(manifest["shape"]) != list(src.shape):
        src.close()
        raise FileFormatError(
            f"{p}: the manifest says shape {tuple(manifest['shape'])}, the data has {src.shape}"
        )
    return src


def as_source(obj: Any, *, key: str | None = None, row_ids: Any = None) -> ScoreSource:
    """Wrap ``obj`` as a :class:`ScoreSource`.

    Parameters
    ----------
    obj : ScoreSource, numpy.ndarray, torch.Tensor, zarr.Array, str or path-like
        A source is returned as is; arrays and tensors are wrapped without copying; paths
        are opened with :func:`open_scores`.
    key : str, optional
        Passed to :func:`open_scores` for paths.
    row_ids : array-like of str, optional
        Row ids for in-memory matrices.
    """
    if isinstance(obj, ScoreSource):
        return obj
    if isinstance(obj, (str, os.PathLike)):
        return open_scores(obj, key=key)
    mod = type(obj).__module__
    if mod.startswith("torch"):
        return TorchSource(obj, row_ids=row_ids)
    if mod.startswith("zarr"):
        return ZarrSource(obj, row_ids=row_ids)
    if isinstance(obj, (np.ndarray, list, tuple)) or hasattr(obj, "__array__"):
        return ArraySource(obj, row_ids=row_ids)
    raise ParameterError(
        expected("scores", "an array, a torch tensor, a ScoreSource or a path", type(obj).__name__)
    )
