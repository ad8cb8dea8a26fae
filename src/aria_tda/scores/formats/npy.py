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

A file shorter than its header promises is a :class:`~aria_tda.errors.FileFormatError` when
opened, never zeros.
"""

from __future__ import annotations

import json
import os
import tokenize
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda.errors import DataError, FileFormatError, library_message
from aria_tda.scores.source import ScoreSource

__all__ = ["NpySource", "RawFileSource", "check_trak_finalized", "read_npy_header"]

#: numpy dtype of the raw storage of ``"bfloat16"`` (converted to float32 when read).
BF16_STORAGE = np.dtype("<u2")


def read_npy_header(fh: Any, where: str) -> tuple[tuple[int, ...], bool, np.dtype[Any]]:
    """Parse an ``.npy`` header at the current position of ``fh``.

    Parameters
    ----------
    fh : binary file object
        Positioned at the magic string; left at the first data byte.
    where : str
        How messages name the file.

    Returns
    -------
    shape : tuple of int
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
    except (ValueError, OSError, SyntaxError, TypeError) as exc:
        raise FileFormatError(
            f"{where}: not a readable .npy array ({library_message(exc)})"
        ) from None
    if dtype.hasobject:
        raise FileFormatError(f"{where}: holds Python objects; expected a numeric matrix")
    return tuple(shape), bool(fortran), dtype


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
    """A raw array of known shape and dtype at ``offset`` in a file, read with ``os.pread``.

    Streaming reads go straight into reused buffers (no page-cache mapping grows the resident
    set); :attr:`array` is a memory map for random access (and column slices).

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
    ) -> None:
        self.path = Path(path)
        self.key = key
        self.fortran = fortran
        self.data_offset = int(offset)
        self.storage: np.dtype[Any] = BF16_STORAGE if dtype == "bfloat16" else np.dtype(dtype)
        super().__init__(shape, dtype, row_ids=row_ids, manifest=manifest)
        if not hasattr(self, "_fh"):
            self._fh = self._open()
        self.row_bytes = self.n_cols * self.storage.itemsize
        self._mmap: np.ndarray | None = None
        need = self.data_offset + self.n_rows * self.row_bytes
        size = os.fstat(self._fh.fileno()).st_size
        if size < need:
            self.close()
            raise FileFormatError(
                f"{self.where}: truncated: the header promises shape {self.shape} {dtype} "
                f"({need} bytes), the file has {size}"
            )

    @property
    def where(self) -> str:
        """The file (and key) as messages name it."""
        return f"{self.path}" + (f"[{self.key!r}]" if self.key else "")

    def _open(self) -> Any:
        assert self.path is not None
        try:
            return open(self.path, "rb")
        except OSError as exc:
            raise FileFormatError(f"{self.where}: cannot open ({exc.strerror})") from None

    @property
    def array(self) -> np.ndarray:
        """A read-only memory map of the whole matrix (storage dtype and order)."""
        if self._mmap is None:
            self._mmap = np.memmap(
                str(self.path),
                dtype=self.storage,
                mode="r",
                offset=self.data_offset,
                shape=self.shape,
                order="F" if self.fortran else "C",
            )
        return self._mmap

    def _convert(self, raw: np.ndarray) -> np.ndarray:
        return bf16_to_float32(raw) if self.dtype == "bfloat16" else raw

    def _raw_rows(self, start: int, stop: int) -> np.ndarray:
        return self._convert(self.array[start:stop])

    def _raw_columns(self, start: int, stop: int) -> np.ndarray:
        return self._convert(self.array[:, start:stop])

    def _pread(self, offset: int, view: memoryview) -> None:
        fd = self._fh.fileno()
        done = 0
        total = view.nbytes
        while done < total:
            n = os.preadv(fd, [view[done:]], offset + done)
            if n <= 0:
                raise FileFormatError(
                    f"{self.where}: unexpected end of file at byte {offset + done}"
                )
            done += n

    def _read_into(self, start: int, stop: int, out: np.ndarray) -> np.ndarray:
        if self.fortran:
            return super()._read_into(start, stop, out)
        offset = self.data_offset + start * self.row_bytes
        if self.storage == out.dtype and self.storage.isnative:
            self._pread(offset, out.data.cast("B"))
            return out
        raw = np.empty((stop - start, self.n_cols), dtype=self.storage)
        self._pread(offset, raw.data.cast("B"))
        np.copyto(out, self._convert(raw), casting="unsafe")
        return out

    def close(self) -> None:
        """Release the file handle and the memory map."""
        self._mmap = None
        fh = getattr(self, "_fh", None)
        if fh is not None and not fh.closed:
            fh.close()


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
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        base_offset: int = 0,
        key: str | None = None,
        row_ids: Any = None,
        manifest: dict[str, Any] | None = None,
    ) -> None:
        self.path = Path(path)
        self.key = key
        self._fh = self._open()
        self._fh.seek(base_offset)
        try:
            shape, fortran, dtype = read_npy_header(self._fh, self.where)
        except FileFormatError:
            self._fh.close()
            raise
        super().__init__(
            path,
            self._fh.tell(),
            shape,
            dtype,
            fortran=fortran,
            key=key,
            row_ids=row_ids,
            manifest=manifest,
        )
