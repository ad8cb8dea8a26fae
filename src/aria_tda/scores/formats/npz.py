"""``.npz`` archives: uncompressed members read in place, compressed ones as a stream.

An ``.npz`` is a zip of ``.npy`` members. A stored (uncompressed, ``np.savez``) member is an
``.npy`` file at a byte offset of the archive and is read like one
(:class:`~aria_tda.scores.formats.npy.NpySource`). A compressed member (``np.savez_compressed``)
is decompressed sequentially; random access re-seeks. A member named ``row_ids`` holds the
row ids. A member shorter than its header says, or whose compressed stream breaks off, is a
:class:`~aria_tda.errors.FileFormatError` naming the archive and the member.
"""

from __future__ import annotations

import contextlib
import threading
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda.errors import FileFormatError, library_message
from aria_tda.scores.formats.npy import NpySource, read_npy_header
from aria_tda.scores.source import ScoreSource

__all__ = ["ROW_IDS_KEY", "open_npz"]

ROW_IDS_KEY = "row_ids"

#: What a broken compressed member raises while it is read.
_ZIP_ERRORS = (zlib.error, zipfile.BadZipFile, EOFError, OSError, ValueError)


class _ZipStreamSource(ScoreSource):
    """A compressed ``.npz`` member, decompressed sequentially (random access re-seeks)."""

    def __init__(
        self, path: Path, info: zipfile.ZipInfo, key: str, *, row_ids: Any, manifest: Any
    ) -> None:
        self.path = Path(path)
        self.key = key
        self._zip = zipfile.ZipFile(self.path)
        self._member = info.filename
        self._lock = threading.Lock()
        self._fh = self._zip.open(info)
        where = f"{path}[{key!r}]"
        try:
            shape, self.fortran, dtype = read_npy_header(self._fh, where)
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
        super().__init__(shape, dtype, row_ids=row_ids, manifest=manifest)
        self.row_bytes = self.n_cols * np.dtype(dtype).itemsize
        need = self._data_start + self.n_rows * self.row_bytes
        if need > info.file_size:
            self.close()
            raise FileFormatError(
                f"{where}: truncated member {self._member!r}: the header promises shape "
                f"{self.shape} ({need} bytes), the member has {info.file_size}"
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
        with contextlib.suppress(Exception):
            self._fh.close()
            self._zip.close()


def _local_data_offset(path: Path, info: zipfile.ZipInfo) -> int:
    with open(path, "rb") as raw:
        raw.seek(info.header_offset)
        local = raw.read(30)
    if len(local) != 30 or local[:4] != b"PK\x03\x04":
        raise FileFormatError(f"{path}: corrupt zip entry {info.filename!r}")
    name_len = int.from_bytes(local[26:28], "little")
    extra_len = int.from_bytes(local[28:30], "little")
    return info.header_offset + 30 + name_len + extra_len


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
    except (zipfile.BadZipFile, OSError) as exc:
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
        row_ids = None
        if ROW_IDS_KEY in members and key != ROW_IDS_KEY:
            try:
                with zf.open(members[ROW_IDS_KEY]) as fh:
                    row_ids = np.lib.format.read_array(fh, allow_pickle=False)
            except _ZIP_ERRORS as exc:
                raise FileFormatError(
                    f"{path}[{ROW_IDS_KEY!r}]: unreadable ({library_message(exc)})"
                ) from None
        if info.compress_type == zipfile.ZIP_STORED:
            offset = _local_data_offset(path, info)
            npy = NpySource(path, base_offset=offset, key=key, row_ids=row_ids, manifest=manifest)
            if npy.data_offset + npy.n_rows * npy.row_bytes > offset + info.file_size:
                npy.close()
                raise FileFormatError(f"{path}[{key!r}]: member is shorter than its header says")
            return npy
    return _ZipStreamSource(path, info, key, row_ids=row_ids, manifest=manifest)
