"""Writing score matrices to ``.npy`` or zarr, atomically, with a JSON manifest.

Layout on disk
--------------
- ``x.npy``: the matrix; ``x.npy.row_ids.npy``: row ids (unicode) when there are any;
  ``x.npy.manifest.json``: the manifest.
- ``x.zarr/``: a zarr (v3) group with the array ``scores`` (row chunks, no compression: score
  matrices barely compress and decompression would take the CPU that BLAS needs), the array
  ``row_ids`` when there are any, and ``aria-manifest.json``.

The manifest holds ``kind``, ``shape``, ``dtype``, ``orientation``, ``method``, ``stage``,
``parameters``, ``seed``, ``row_ids`` (where they are stored, or ``null``) and the ARIA
version. Everything is written under a temporary name and renamed into place when complete,
so an error or an interrupt never leaves a half-written matrix under the final name.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda._checks import check_writable_path
from aria_tda._io import atomic_path, remove_path
from aria_tda.errors import FileFormatError, ParameterError, expected
from aria_tda.manifest import make_manifest, manifest_path, write_manifest
from aria_tda.scores.formats.npz import ROW_IDS_KEY
from aria_tda.scores.readers import ROW_IDS_SUFFIX, as_source
from aria_tda.scores.source import _as_row_ids, check_matrix_shape

__all__ = ["ScoreWriter", "check_output_path", "save_scores"]

#: Target bytes of one stored zarr chunk.
ZARR_CHUNK_BYTES = 16 * 2**20

ORIENTATION = {
    "scores": "rows = training segments, columns = queries",
    "track_scores": "rows = training tracks, columns = queries",
    "normalized_scores": "rows = training segments, columns = queries (normalised per query)",
}


def _output_format(path: Path, name: str = "out") -> str:
    suffix = path.suffix.lower()
    if suffix == ".npy":
        return "npy"
    if suffix == ".zarr":
        return "zarr"
    raise ParameterError(expected(name, "a path ending in .npy or .zarr", str(path)))


def _is_zarr_store(path: Path) -> bool:
    return any((path / n).is_file() for n in ("zarr.json", ".zgroup", ".zarray"))


def check_output_path(name: str, path: str | os.PathLike[str]) -> Path:
    """Check an output path for a score matrix before any work is done.

    Parameters
    ----------
    name : str
        The parameter (or flag) the path came from, for messages.
    path : path-like
        Ends in ``.npy`` (a file) or ``.zarr`` (a store directory). An existing matrix of
        the same kind is replaced when the new one is complete.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    ParameterError
        another suffix.
    FileFormatError
        an existing directory where a ``.npy`` file is to go, an existing file where a zarr
        store is to go, or an existing directory that is not a zarr store (never replaced).
    """
    if not isinstance(path, str | os.PathLike):
        raise ParameterError(expected(name, "a path", path))
    p = Path(path)
    fmt = _output_format(p, name)
    if fmt == "npy" and p.is_dir():
        raise FileFormatError(
            f"{name}: {str(p)!r} is an existing directory; expected a path for a .npy file"
        )
    if fmt == "zarr" and p.exists():
        if not p.is_dir():
            raise FileFormatError(
                f"{name}: {str(p)!r} is an existing file; expected a path for a zarr store "
                "(a directory)"
            )
        if not _is_zarr_store(p) and any(p.iterdir()):
            raise FileFormatError(
                f"{name}: {str(p)!r} is an existing directory that is not a zarr store; "
                "refusing to replace it"
            )
    return check_writable_path(name, p)


class ScoreWriter:
    r"""Write an ``(n_rows, n_cols)`` matrix to ``.npy``/``.zarr`` atomically.

    Use as a context manager. Rows can be written in any order with :meth:`write_rows`;
    :attr:`array` gives a writable memory map for column slabs and in-place accumulation
    (for zarr output it is a staging ``.npy`` copied into the store on close). The file
    appears under its final name only when the ``with`` block ends without an error.

    Parameters
    ----------
    path : path-like
        Ends in ``.npy`` or ``.zarr``.
    shape : (int, int)
    dtype : numpy dtype
    kind : str
        Manifest ``kind`` (``"scores"``, ``"track_scores"``, ``"normalized_scores"``).
    row_ids : array-like of str, optional
    **fields
        Extra manifest fields (``method``, ``stage``, ``parameters``, ``seed``, ...).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        shape: tuple[int, int],
        dtype: Any,
        kind: str = "scores",
        row_ids: Any = None,
        **fields: Any,
    ) -> None:
        self.path = check_output_path("out", path)
        self.format = _output_format(self.path)
        self.shape = check_matrix_shape(shape, name="out")
        self.dtype = np.dtype(dtype)
        if self.dtype.kind != "f":
            raise ParameterError(expected("dtype", "a floating-point dtype", str(self.dtype)))
        self.row_ids = _as_row_ids(row_ids, self.shape[0])
        self.kind = kind
        self.fields = fields
        self._stack = contextlib.ExitStack()
        self._tmp: Path | None = None
        self._fd: int | None = None
        self._mmap: np.memmap[Any, Any] | None = None
        self._zarr: Any = None
        self._staging: Path | None = None
        self._offset = 0
        self._rows_written = False

    # -- lifecycle -------------------------------------------------------------------
    def __enter__(self) -> ScoreWriter:
        self._tmp = self._stack.enter_context(atomic_path(self.path))
        try:
            if self.format == "npy":
                self._open_npy(self._tmp)
            else:
                self._open_zarr(self._tmp)
        except BaseException:
            self._stack.__exit__(*_exc_info())
            raise
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool | None:
        try:
            if exc_type is None:
                self._finish()
        except BaseException:
            self._release()
            self._stack.__exit__(*_exc_info())
            raise
        self._release()
        if exc_type is None and self.format == "npy":
            # drop a stale manifest/sidecar before the new matrix lands under the final name
            remove_path(manifest_path(self.path))
        result = self._stack.__exit__(exc_type, exc, tb)
        if exc_type is None and self.format == "npy":
            self._write_npy_sidecars()
        return result

    def _open_npy(self, tmp: Path) -> None:
        header = {
            "descr": np.lib.format.dtype_to_descr(self.dtype),
            "fortran_order": False,
            "shape": self.shape,
        }
        with open(tmp, "wb") as fh:
            np.lib.format.write_array_header_2_0(fh, header)
            self._offset = fh.tell()
            fh.truncate(self._offset + self.shape[0] * self.shape[1] * self.dtype.itemsize)
        self._fd = os.open(tmp, os.O_RDWR)

    def _open_zarr(self, tmp: Path) -> None:
        import zarr

        group = zarr.open_group(str(tmp), mode="w")
        row_bytes = self.shape[1] * self.dtype.itemsize
        rows = int(max(1, min(self.shape[0], ZARR_CHUNK_BYTES // row_bytes)))
        self._zarr = group.create_array(
            "scores",
            shape=self.shape,
            chunks=(rows, self.shape[1]),
            dtype=self.dtype,
            compressors=None,
            fill_value=0.0,
            # every chunk is stored, all-zero ones too: readers treat a missing chunk as an
            # incomplete store (aria_tda.scores.formats.zarr)
            config={"write_empty_chunks": True},
        )
        if self.row_ids is not None:
            ids = group.create_array(
                ROW_IDS_KEY, shape=(self.shape[0],), chunks=(min(self.shape[0], 2**18),), dtype=str
            )
            ids[:] = self.row_ids
        self._group = group

    @property
    def array(self) -> np.ndarray:
        """A writable memory map of the output (zarr: a staging file copied in on close)."""
        if self._mmap is None:
            if self._tmp is None:
                raise RuntimeError("ScoreWriter.array used outside its with-block")
            if self.format == "npy":
                target, offset = self._tmp, self._offset
            else:
                self._staging = self._tmp / ".staging.npy"
                with open(self._staging, "wb") as fh:
                    fh.truncate(self.shape[0] * self.shape[1] * self.dtype.itemsize)
                target, offset = self._staging, 0
            self._mmap = np.memmap(
                target, dtype=self.dtype, mode="r+", offset=offset, shape=self.shape
            )
            if self.format == "zarr" and self._rows_written:
                stored = int(self._zarr.chunks[0])
                for s in range(0, self.shape[0], stored):
                    self._mmap[s : s + stored] = self._zarr[s : s + stored]
        return self._mmap

    def write_rows(self, start: int, block: np.ndarray) -> None:
        """Write ``block`` ``(rows, n_cols)`` at rows ``start:start+rows``.

        Parameters
        ----------
        start : int
            First row.
        block : numpy.ndarray [shape=(rows, n_cols)]
            The rows.
        """
        block = np.ascontiguousarray(block, dtype=self.dtype)
        stop = start + block.shape[0]
        if block.ndim != 2 or block.shape[1] != self.shape[1] or stop > self.shape[0]:
            raise ValueError(
                f"block of shape {block.shape} does not fit rows {start}:{stop} of {self.shape}"
            )
        if self._mmap is not None:
            self._mmap[start:stop] = block
        elif self.format == "npy":
            assert self._fd is not None
            view = block.data.cast("B")
            offset = self._offset + start * self.shape[1] * self.dtype.itemsize
            done = 0
            while done < view.nbytes:
                done += os.pwrite(self._fd, view[done:], offset + done)
        else:
            self._zarr[start:stop] = block
            self._rows_written = True

    def _finish(self) -> None:
        if self._mmap is not None:
            self._mmap.flush()
            if self.format == "zarr":
                stored = int(self._zarr.chunks[0])
                chunk_bytes = stored * self.shape[1] * self.dtype.itemsize
                rows = stored * max(1, (64 * 2**20) // chunk_bytes)
                for s in range(0, self.shape[0], rows):
                    self._zarr[s : s + rows] = np.asarray(self._mmap[s : s + rows])
        self._mmap = None
        if self._staging is not None:
            remove_path(self._staging)
        if self._fd is not None:
            os.fsync(self._fd)
        if self.format == "zarr":
            assert self._tmp is not None
            write_manifest(self._tmp, self._manifest())

    def _release(self) -> None:
        self._mmap = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _write_npy_sidecars(self) -> None:
        side = self.path.with_name(self.path.name + ROW_IDS_SUFFIX)
        if self.row_ids is not None:
            with atomic_path(side) as tmp, open(tmp, "wb") as fh:
                np.save(fh, self.row_ids, allow_pickle=False)
        else:
            remove_path(side)
        write_manifest(self.path, self._manifest())

    def _manifest(self) -> dict[str, Any]:
        where = None
        if self.row_ids is not None:
            where = ROW_IDS_KEY if self.format == "zarr" else self.path.name + ROW_IDS_SUFFIX
        fields = {
            "shape": list(self.shape),
            "dtype": str(self.dtype),
            "orientation": ORIENTATION.get(self.kind, ORIENTATION["scores"]),
            "format": self.format,
            "row_ids": where,
        }
        fields.update(self.fields)
        return make_manifest(self.kind, **fields)


def _exc_info() -> tuple[Any, Any, Any]:
    import sys

    return sys.exc_info()


def save_scores(
    scores: Any,
    path: str | os.PathLike[str],
    *,
    method: str | None = None,
    stage: str | None = None,
    parameters: dict[str, Any] | None = None,
    seed: int | None = None,
    row_ids: Any = None,
    key: str | None = None,
    chunk_rows: int | None = None,
    progress: bool | None = None,
) -> Path:
    r"""Write a score matrix ``(M, T)`` to ``.npy`` or ``.zarr`` (by suffix) with a manifest.

    The matrix is streamed in row blocks, so a source larger than memory can be converted
    (e.g. a torch ``.pt`` to a zarr store). float16/32/64 keep their dtype; bfloat16 becomes
    float32 and integers float64.

    Parameters
    ----------
    scores : array-like, torch.Tensor, ScoreSource or path
    path : path-like
        Output, ending in ``.npy`` or ``.zarr``.
    method, stage : str, optional
        Recorded in the manifest (default: taken from the source's manifest, if any).
    parameters : dict, optional
        Settings that produced the matrix (JSON-able), recorded in the manifest.
    seed : int, optional
    row_ids : array-like of str [shape=(M,)], optional
        Segment ids (default: the source's ``row_ids``).
    key : str, optional
        Array to read when ``scores`` is a path to an ``.npz``/torch dict/zarr group.
    chunk_rows : int, optional
        Rows per streamed block.
    progress : bool, optional
        Draw a progress bar.

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    src = as_source(scores, key=key)
    old = src.manifest or {}
    dtype = (
        src.dtype
        if (isinstance(src.dtype, np.dtype) and src.dtype.kind == "f")
        else src.block_dtype
    )
    ids = row_ids if row_ids is not None else src.row_ids
    if method is not None and not isinstance(method, str):
        raise ParameterError(expected("method", "a string", method))
    if stage is not None and not isinstance(stage, str):
        raise ParameterError(expected("stage", "a string", stage))
    if parameters is not None and not isinstance(parameters, dict):
        raise ParameterError(expected("parameters", "a dict", type(parameters).__name__))
    if src.path is not None and Path(src.path).resolve() == Path(path).resolve():
        raise FileFormatError(f"out: refusing to overwrite the matrix being read: {str(path)!r}")
    with ScoreWriter(
        path,
        shape=src.shape,
        dtype=dtype,
        kind="scores",
        row_ids=ids,
        method=method if method is not None else old.get("method"),
        stage=stage if stage is not None else old.get("stage"),
        parameters=parameters if parameters is not None else old.get("parameters", {}),
        seed=seed if seed is not None else old.get("seed"),
    ) as writer:
        for start, block in src.iter_chunks(
            chunk_rows, progress=progress, desc="save", reuse_buffers=True
        ):
            writer.write_rows(start, block)
    return Path(path)
