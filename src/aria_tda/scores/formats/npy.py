r"""``.npy`` files (and TRAK's ``scores/<experiment>.mmap``), read with positional reads.

An ``.npy`` file is a small header (magic, version, a Python-literal dict with ``descr``,
``fortran_order`` and ``shape``) followed by the raw array. :class:`RawFileSource` reads any
raw C- (or Fortran-) ordered array at a byte offset of a file; :class:`NpySource` parses the
header first. The same raw reader serves uncompressed ``.npz`` members
(:mod:`aria_tda.scores.formats.npz`) and safetensors tensors
(:mod:`aria_tda.scores.formats.safetensors`).

TRAK's ``TRAKer.finalize_scores`` writes ``<save_dir>/scores/<exp_name>.mmap`` with
``numpy.lib.format.open_memmap``: an ``.npy`` file under another suffix, float16 by default,
``(n_train, n_targets)`` — ARIA's orientation. ``.mmap`` is read as ``.npy``. TRAK creates the
file zero-filled when scoring starts and records ``scores_finalized`` per experiment in
``<save_dir>/experiments.json``; a file whose experiment is recorded unfinalized holds zeros (or
a partial sum) and is refused (:func:`check_trak_finalized`).

The header is checked against the file before anything is read
(:mod:`aria_tda.scores.formats.header`): dimensions are non-negative integers (NumPy's parser
lets ``-3`` and ``True`` through), and shape x itemsize is exactly the bytes after the header —
a file shorter than its header promises, or longer (a header describing fewer rows than the file
holds), is a :class:`~aria_tda.errors.FileFormatError` when opened, never zeros or a silently
cut matrix. Side arrays (row ids, bergson's candidates) are read with :func:`read_small_npy`,
their header checked before anything is allocated. No file is held open between reads
(:mod:`aria_tda.scores.formats.files`).
"""

from __future__ import annotations

import json
import os
import tokenize
from pathlib import Path
from typing import Any, Literal

import numpy as np

from aria_tda.errors import DataError, FileFormatError, library_message
from aria_tda.scores.formats.files import mapped, open_for_read, pread_exact
from aria_tda.scores.formats.header import header_dims, header_error, span_bytes
from aria_tda.scores.source import ScoreSource

__all__ = [
    "NpySource",
    "RawFileSource",
    "check_trak_finalized",
    "read_npy_header",
    "read_small_npy",
]

#: numpy dtype of the raw storage of ``"bfloat16"`` (converted to float32 when read).
BF16_STORAGE = np.dtype("<u2")


def read_npy_header(fh: Any, where: str) -> tuple[tuple[int, ...], bool, np.dtype[Any]]:
    """Parse an ``.npy`` header at the current position of ``fh``.

    NumPy's parser accepts a negative or ``True`` dimension; they are refused here.

    Parameters
    ----------
    fh : binary file object
        Positioned at the magic string; left at the first data byte.
    where : str
        How messages name the file.

    Returns
    -------
    shape : tuple of int
        Non-negative dimensions.
    fortran_order : bool
    dtype : numpy.dtype
    """
    fmt = np.lib.format
    try:
        version = fmt.read_magic(fh)
        if version == (1, 0):
            shape, fortran, dtype = fmt.read_array_header_1_0(fh)
        elif version in {(2, 0), (3, 0)}:
            shape, fortran, dtype = fmt.read_array_header_2_0(fh)
        else:
            raise ValueError(f"unsupported .npy version {version}")
    except tokenize.TokenError:  # numpy tokenizes the header's dict literal
        raise FileFormatError(f"{where}: not a readable .npy array (garbled header)") from None
    except (ValueError, OSError, SyntaxError, TypeError, RecursionError, MemoryError) as exc:
        raise FileFormatError(
            f"{where}: not a readable .npy array ({library_message(exc)})"
        ) from None
    if dtype.hasobject:
        raise FileFormatError(f"{where}: holds Python objects; expected a numeric matrix")
    header_dims(where, "shape", list(shape))
    if dtype.itemsize == 0:
        raise header_error(where, "descr", dtype.str, "a dtype of at least one byte")
    return tuple(shape), bool(fortran), dtype


def read_small_npy(
    path: Path, where: str, *, n: int, kinds: str, what: str, max_end: int | None = None,
    base_offset: int = 0,
) -> np.ndarray:
    """A 1-D side array (row ids, candidate indices) of ``n`` entries, its header checked first.

    The shape, dtype and byte count are checked against the file before anything is allocated
    (``np.load`` allocates what the header claims, then reads).

    Parameters
    ----------
    path : pathlib.Path
        The ``.npy`` file (or the ``.npz`` archive holding it, with ``base_offset``).
    where : str
        How messages name it.
    n : int
        The number of entries expected (the score matrix's rows).
    kinds : str
        The allowed dtype kinds (``"iu"`` integers, ``"US"`` strings).
    what : str
        What the entries are, for messages (``"integer training indices"``).
    max_end : int, optional
        The byte the array's data must end at (default: the file's end).
    base_offset : int
        Where the ``.npy`` data starts in the file.

    Raises
    ------
    FileFormatError
        Another shape or dtype, or a byte count other than the header's.
    """
    with open_for_read(path, where) as (fh, ident):
        fh.seek(base_offset)
        shape, _, dtype = read_npy_header(fh, where)
        start = fh.tell()
        end = ident[2] if max_end is None else max_end
        if len(shape) != 1 or shape[0] != n or dtype.kind not in kinds:
            raise FileFormatError(
                f"{where}: expected {n} {what} (one per score row), got {dtype} of shape {shape}"
            )
        need = span_bytes(shape, dtype.itemsize)
        if start + need != end:
            raise header_error(where, "shape", shape, f"{need} bytes of {dtype.str} data",
                               f"{end - start} bytes after the header")
        raw = np.empty(need, dtype=np.uint8)
        if need:
            pread_exact(fh, raw.data.cast("B"), start, where)
    return raw.view(dtype).reshape(shape)


def check_trak_finalized(path: Path) -> None:
    """Refuse TRAK's ``scores/<exp>.mmap`` when ``experiments.json`` says it was never finalized.

    Parameters
    ----------
    path : pathlib.Path
        A score file; only ``<save_dir>/scores/<exp>.mmap`` beside a readable
        ``<save_dir>/experiments.json`` that lists ``<exp>`` is checked.

    Raises
    ------
    DataError
        The experiment's ``scores_finalized`` is 0.
    """
    if path.suffix.lower() != ".mmap" or path.parent.name != "scores":
        return
    record = path.parent.parent / "experiments.json"
    try:
        experiments = json.loads(record.read_text(encoding="utf-8"))
        entry = experiments.get(path.stem)
        finalized = int(entry.get("scores_finalized", 1))
    except (OSError, ValueError, AttributeError, TypeError):
        return  # no record (or not TRAK's): nothing to check
    if finalized == 0:
        raise DataError(
            f"{path}: TRAK never finalized experiment {path.stem!r} ({record} says "
            "scores_finalized 0): the file holds zeros or a partial sum; run "
            f"traker.finalize_scores(exp_name={path.stem!r}) first"
        )


def bf16_to_float32(raw: np.ndarray) -> np.ndarray:
    """bfloat16 bit patterns (``uint16``) to float32 values (exact).

    Parameters
    ----------
    raw : numpy.ndarray of uint16
        The stored bits.
    """
    return (np.asarray(raw, dtype=np.uint32) << 16).view(np.float32)


class RawFileSource(ScoreSource):
    """A raw array of known shape and dtype at ``offset`` in a file, read with ``os.preadv``.

    The shape is checked against the bytes the file holds (exactly: a file longer than its
    header's shape is refused like a shorter one) before anything is read. No file is held open
    between reads (:mod:`aria_tda.scores.formats.files`): row blocks are read positionally into
    the caller's buffer; column slices (and Fortran-ordered rows) through a memory map that
    lives for the read only.

    Parameters
    ----------
    path : path-like
        The file.
    offset : int
        Byte offset of the first element.
    shape : tuple of int
        ``(M, T)`` as stored.
    dtype : numpy.dtype or "bfloat16"
        Storage dtype (``"bfloat16"`` is stored as ``uint16`` bit patterns).
    fortran : bool
        Column-major storage.
    key : str, optional
        Name of the array inside its container (messages, Dask re-opening).
    row_ids : array-like of str, optional
        Row ids.
    manifest : dict, optional
        The artefact's manifest.
    data_end : int, optional
        The byte where the array's data must end (a member's or tensor's end inside its
        container); default: the end of the file.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        offset: int,
        shape: tuple[int, ...],
        dtype: Any,
        *,
        fortran: bool = False,
        key: str | None = None,
        row_ids: Any = None,
        manifest: dict[str, Any] | None = None,
        data_end: int | None = None,
    ) -> None:
        self.path = self.file = Path(path)
        self.key = key
        self.fortran = fortran
        self.data_offset = int(offset)
        self.storage: np.dtype[Any] = BF16_STORAGE if dtype == "bfloat16" else np.dtype(dtype)
        shape = header_dims(self.where, "shape", list(shape))
        super().__init__(shape, dtype, row_ids=row_ids, manifest=manifest)
        self.row_bytes = self.n_cols * self.storage.itemsize
        with open_for_read(self.file, self.where) as (_, identity):
            self._identity = identity
        size = identity[2]
        end = size if data_end is None else int(data_end)
        need = self.n_rows * self.row_bytes
        if end > size or self.data_offset + need > end:
            raise FileFormatError(
                f"{self.where}: truncated: the header promises shape {self.shape} {dtype} "
                f"({need} bytes from byte {self.data_offset}), the file holds {size} bytes"
                + ("" if end == size else f" (this array's data must end at byte {end})")
            )
        if self.data_offset + need < end:
            raise header_error(
                self.where, "shape", self.shape,
                f"shape x itemsize = {need} bytes of {dtype} data from byte {self.data_offset}",
                f"{end - self.data_offset} (the header describes less than the file holds)",
            )

    @property
    def where(self) -> str:
        """The file (and key) as messages name it."""
        return f"{self.path}" + (f"[{self.key!r}]" if self.key else "")

    @property
    def array(self) -> np.ndarray:
        """A new read-only memory map of the whole matrix (storage dtype and order).

        Each access maps the file anew; the map (and the file handle it holds) lives as long
        as the caller keeps it. The source's own reads do not use it.
        """
        return np.memmap(
            str(self.file),
            dtype=self.storage,
            mode="r",
            offset=self.data_offset,
            shape=self.shape,
            order="F" if self.fortran else "C",
        )

    def _convert(self, raw: np.ndarray) -> np.ndarray:
        return bf16_to_float32(raw) if self.dtype == "bfloat16" else raw

    def _from_map(
        self, rows: slice, cols: slice, order: Literal["C", "F"] = "C"
    ) -> np.ndarray:
        """A copy of ``array[rows, cols]`` (storage dtype, ``order``), the file mapped for this
        read only."""
        with mapped(self.file, self.where, self._identity) as mm:
            whole = np.ndarray(self.shape, dtype=self.storage, buffer=mm,
                               offset=self.data_offset, order="F" if self.fortran else "C")
            out = np.array(whole[rows, cols], order=order)
            del whole
        return out

    def _raw_rows(self, start: int, stop: int) -> np.ndarray:
        if self.fortran:
            return self._convert(self._from_map(slice(start, stop), slice(None)))
        out = np.empty((stop - start, self.n_cols), dtype=self.storage)
        self._pread_rows(start, out)
        return self._convert(out)

    def _raw_columns(self, start: int, stop: int) -> np.ndarray:
        # Fortran order: its transpose (what a transposed source hands out) is C-contiguous
        return self._convert(self._from_map(slice(None), slice(start, stop), "F"))

    def _pread_rows(self, start: int, out: np.ndarray) -> None:
        with open_for_read(self.file, self.where, self._identity) as (fh, _):
            pread_exact(fh, out.data.cast("B"), self.data_offset + start * self.row_bytes,
                        self.where)

    def _read_into(self, start: int, stop: int, out: np.ndarray) -> np.ndarray:
        if self.fortran:
            return super()._read_into(start, stop, out)
        if self.storage == out.dtype and self.storage.isnative:
            self._pread_rows(start, out)
            return out
        raw = np.empty((stop - start, self.n_cols), dtype=self.storage)
        self._pread_rows(start, raw)
        np.copyto(out, self._convert(raw), casting="unsafe")
        return out

    def close(self) -> None:
        """Nothing to release: no file is held open between reads."""


class NpySource(RawFileSource):
    """A ``.npy`` file (or an uncompressed ``.npz`` member at ``base_offset``).

    Parameters
    ----------
    path : path-like
        The file.
    base_offset : int
        Where the ``.npy`` data (its magic string) starts inside the file.
    key : str, optional
        Member name inside an ``.npz``.
    row_ids : array-like of str, optional
        Row ids.
    manifest : dict, optional
        The artefact's manifest.
    data_end : int, optional
        Where the member ends inside its archive (default: the end of the file).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        base_offset: int = 0,
        key: str | None = None,
        row_ids: Any = None,
        manifest: dict[str, Any] | None = None,
        data_end: int | None = None,
    ) -> None:
        self.path = self.file = Path(path)
        self.key = key
        with open_for_read(self.file, self.where) as (fh, _):
            fh.seek(base_offset)
            shape, fortran, dtype = read_npy_header(fh, self.where)
            offset = fh.tell()
        super().__init__(
            path,
            offset,
            shape,
            dtype,
            fortran=fortran,
            key=key,
            row_ids=row_ids,
            manifest=manifest,
            data_end=data_end,
        )
