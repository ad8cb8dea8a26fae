"""``.npz`` archives: uncompressed members read in place, compressed ones as a stream.

An ``.npz`` is a zip of ``.npy`` members. A stored (uncompressed, ``np.savez``) member is an
``.npy`` file at a byte offset of the archive and is read like one
(:class:`~aria_tda.scores.formats.npy.NpySource`). A compressed member (``np.savez_compressed``)
is decompressed sequentially; random access re-seeks. A member named ``row_ids`` holds the
row ids (its header checked against the member's size before it is read). A member shorter or
longer than its header says, a stored member whose compressed size is not its size, or a
compressed stream that breaks off, is a :class:`~aria_tda.errors.FileFormatError` naming the
archive and the member.
"""

from __future__ import annotations

import contextlib
import threading
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda.errors import DataError, FileFormatError, library_message
from aria_tda.scores.formats.header import header_error, span_bytes
from aria_tda.scores.formats.npy import NpySource, read_npy_header, read_small_npy
from aria_tda.scores.source import ScoreSource

__all__ = ["ROW_IDS_KEY", "open_npz"]

ROW_IDS_KEY = "row_ids"

#: What a broken archive or compressed member raises while it is read (RuntimeError: an
#: "encrypted" flag; NotImplementedError: an unknown compression method).
_ZIP_ERRORS = (zlib.error, zipfile.BadZipFile, EOFError, OSError, ValueError, RuntimeError)


class _ZipStreamSource(ScoreSource):
    """A compressed ``.npz`` member, decompressed sequentially (random access re-seeks)."""

    def __init__(
        self, path: Path, info: zipfile.ZipInfo, key: str, *, row_ids: Any, manifest: Any
    ) -> None:
        self.path = Path(path)
        self.key = key
        self._member = info.filename
        self._lock = threading.Lock()
        where = f"{path}[{key!r}]"
        try:
            self._zip = zipfile.ZipFile(self.path)
            self._fh = self._zip.open(info)
            shape, self.fortran, dtype = read_npy_header(self._fh, where)
        except _ZIP_ERRORS as exc:  # a broken stream before the header ends
            self.close()
            raise FileFormatError(
                f"{where}: truncated or corrupt member {self._member!r} ({library_message(exc)})"
            ) from None
        except FileFormatError:
            self.close()
            raise
        if self.fortran:
            self.close()
            raise FileFormatError(
                f"{where}: a compressed Fortran-order array cannot be streamed; "
                "save it C-ordered or uncompressed (np.savez)"
            )
        self._data_start = self._fh.tell()
        try:
            super().__init__(shape, dtype, row_ids=row_ids, manifest=manifest)
        except DataError:
            self.close()
            raise
        self.row_bytes = self.n_cols * np.dtype(dtype).itemsize
        need = self._data_start + self.n_rows * self.row_bytes
        if need != info.file_size:
            self.close()
            if need < info.file_size:
                raise header_error(
                    where, "shape", self.shape,
                    f"shape x itemsize = {need - self._data_start} bytes of {dtype} data",
                    f"{info.file_size - self._data_start} in member {self._member!r} (the "
                    "header describes less than the member holds)",
                )
            raise FileFormatError(
                f"{where}: truncated member {self._member!r}: the header promises shape "
                f"{self.shape} ({need} bytes), the member holds {info.file_size}"
            )

    def _raw_rows(self, start: int, stop: int) -> np.ndarray:
        n = (stop - start) * self.row_bytes
        try:
            with self._lock:
                self._fh.seek(self._data_start + start * self.row_bytes)
                data = self._fh.read(n)
        except _ZIP_ERRORS as exc:
            raise FileFormatError(
                f"{self.path}[{self.key!r}]: truncated or corrupt member {self._member!r} "
                f"({library_message(exc)})"
            ) from None
        if len(data) != n:
            raise FileFormatError(f"{self.path}[{self.key!r}]: truncated member {self._member!r}")
        return np.frombuffer(data, dtype=self.dtype).reshape(stop - start, self.n_cols)

    def _transposed(self) -> ScoreSource:
        # column slices of a compressed stream would decompress it once per block
        from aria_tda.scores.source import ArraySource

        out = ArraySource(self.to_numpy().T, manifest=self.manifest)
        out.transposed = True
        out.path, out.key = self.path, self.key
        self.close()
        return out

    def close(self) -> None:
        """Close the member and the archive."""
        for handle in (getattr(self, "_fh", None), getattr(self, "_zip", None)):
            with contextlib.suppress(Exception):
                if handle is not None:
                    handle.close()


def _local_data_offset(path: Path, info: zipfile.ZipInfo) -> int:
    with open(path, "rb") as raw:
        raw.seek(info.header_offset)
        local = raw.read(30)
    if len(local) != 30 or local[:4] != b"PK\x03\x04":
        raise FileFormatError(f"{path}: corrupt zip entry {info.filename!r}")
    name_len = int.from_bytes(local[26:28], "little")
    extra_len = int.from_bytes(local[28:30], "little")
    return info.header_offset + 30 + name_len + extra_len


def _read_row_ids(zf: zipfile.ZipFile, path: Path, info: zipfile.ZipInfo, n: int) -> Any:
    """The ``row_ids`` member: ``n`` strings (or integers), its header checked before reading."""
    where = f"{path}[{ROW_IDS_KEY!r}]"
    if info.compress_type == zipfile.ZIP_STORED:
        offset = _local_data_offset(path, info)
        return read_small_npy(path, where, n=n, kinds="USiu", what="row ids",
                              base_offset=offset, max_end=offset + info.file_size)
    try:
        with zf.open(info) as fh:
            shape, _, dtype = read_npy_header(fh, where)
            if len(shape) != 1 or shape[0] != n or dtype.kind not in "USiu":
                raise FileFormatError(
                    f"{where}: expected {n} row ids (one per score row), got {dtype} of shape "
                    f"{shape}"
                )
            need = span_bytes(shape, dtype.itemsize)
            if fh.tell() + need != info.file_size:
                raise header_error(where, "shape", shape, f"{need} bytes of {dtype.str} data",
                                   f"{info.file_size - fh.tell()} in the member")
            data = fh.read(need)
    except _ZIP_ERRORS as exc:
        raise FileFormatError(f"{where}: unreadable ({library_message(exc)})") from None
    if len(data) != need:
        raise FileFormatError(f"{where}: truncated member {info.filename!r}")
    return np.frombuffer(data, dtype=dtype)


def open_npz(path: Path, key: str | None, manifest: Any) -> ScoreSource:
    """Open the score matrix of an ``.npz`` archive.

    Parameters
    ----------
    path : pathlib.Path
        The archive.
    key : str, optional
        Member to read; default: the only member other than ``row_ids``.
    manifest : dict, optional
        The artefact's manifest, carried by the source.
    """
    try:
        zf = zipfile.ZipFile(path)
    except _ZIP_ERRORS as exc:
        raise FileFormatError(
            f"{path}: not a readable .npz archive ({library_message(exc)})"
        ) from None
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
        src: ScoreSource
        if info.compress_type == zipfile.ZIP_STORED:
            if info.compress_size != info.file_size:
                raise header_error(
                    f"{path}[{key!r}]", "compressed size", info.compress_size,
                    f"the member's size, {info.file_size}, for a stored (uncompressed) member",
                )
            offset = _local_data_offset(path, info)
            src = NpySource(path, base_offset=offset, key=key, manifest=manifest,
                            data_end=offset + info.file_size)
        else:
            src = _ZipStreamSource(path, info, key, row_ids=None, manifest=manifest)
        if ROW_IDS_KEY in members and key != ROW_IDS_KEY:
            try:
                ids = _read_row_ids(zf, path, members[ROW_IDS_KEY], src.n_rows)
            except FileFormatError:
                src.close()
                raise
            src.row_ids = ids.astype(str)
        return src
