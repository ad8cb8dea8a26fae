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

What an output may replace
--------------------------
ARIA writes over nothing it did not make for the same purpose (:func:`check_output_path`,
before any work): an output that is one of the command's inputs (the same path, or the same
file through a link) is refused; so is an existing file or store that has no ARIA manifest of
the same ``kind`` beside it: a file without an ARIA manifest (a user's ``results.npy``) always,
an ARIA output of another kind or purpose (a segment-level matrix where a track matrix goes)
unless ``overwrite=True`` (``--overwrite``). An earlier output of the same kind is replaced
atomically.

Full disks and killed runs
--------------------------
The file is given its full size on disk (``posix_fallocate``,
:func:`aria_tda._io.reserve_space`) before anything is memory-mapped, so a full file system is
a one-line :class:`~aria_tda.errors.DiskFullError` and never a ``SIGBUS``; a zarr output, which
holds a staging copy and its chunks at once, checks for both before it starts. Temporaries are
named per process (:func:`aria_tda._io.temp_name`) and those of dead runs are removed when the
next writer starts in the same folder (:func:`aria_tda._io.sweep_leftovers`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda._checks import check_writable_path
from aria_tda._io import (
    atomic_path,
    check_space,
    remove_path,
    reserve_space,
    sweep_leftovers,
    temp_name,
    write_json,
)
from aria_tda._lock import output_lock
from aria_tda.errors import FileFormatError, ParameterError, expected
from aria_tda.manifest import make_manifest, manifest_path, read_manifest
from aria_tda.scores.formats.npz import ROW_IDS_KEY
from aria_tda.scores.readers import ROW_IDS_SUFFIX, as_source
from aria_tda.scores.source import as_row_ids, check_matrix_shape

__all__ = [
    "ScoreWriter",
    "check_not_input",
    "check_output_path",
    "check_output_space",
    "save_scores",
]

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


#: Sidecar files beside an ``.npy`` output (and ``aria-tda retrieve``'s queries table).
_SIDECARS = (".manifest.json", ".row_ids.npy", ".queries.csv")
#: Room for headers, manifests and file-system blocks beside the matrix's bytes.
_HEADER_ROOM = 256 * 2**10


def _zarr_chunk_rows(shape: tuple[int, int], dtype: Any) -> int:
    """Rows of one stored zarr chunk (about :data:`ZARR_CHUNK_BYTES`)."""
    row_bytes = max(1, int(shape[1]) * np.dtype(dtype).itemsize)
    return int(max(1, min(int(shape[0]), ZARR_CHUNK_BYTES // row_bytes)))


def _is_zarr_store(path: Path) -> bool:
    return any((path / n).is_file() for n in ("zarr.json", ".zgroup", ".zarray"))


def _same_file(a: Path, b: Path) -> bool:
    """``a`` and ``b`` name one file or folder (the same path, or one reached through a link)."""
    with contextlib.suppress(OSError):
        if os.path.samefile(a, b):
            return True
    return a.absolute().resolve() == b.absolute().resolve()


def _inside(inner: Path, outer: Path) -> bool:
    """``inner`` lies inside the folder ``outer`` (after resolving links)."""
    return outer.resolve() in inner.absolute().resolve().parents


def check_not_input(
    name: str,
    path: str | os.PathLike[str],
    inputs: Mapping[str, Any],
    *,
    sidecars: bool = True,
) -> None:
    """Refuse an output that is (or would replace) one of the command's inputs.

    ``path`` is refused when it is an input (the same path, or the same file through a
    symbolic or hard link), when it is a folder that holds an input (replacing the folder would
    delete it), or when one of its sidecars (``PATH.manifest.json``, ``PATH.row_ids.npy``,
    ``PATH.queries.csv``) is an input.

    Parameters
    ----------
    name : str
        The output parameter (or flag), for the message.
    path : path-like
        The output.
    inputs : mapping of str to path-like or None
        The inputs by the parameter (or flag) that named them; ``None`` values and values that
        are not paths (arrays) are skipped.
    sidecars : bool
        Also check the output's sidecar files.

    Raises
    ------
    ParameterError
        ``out: expected a path other than the command's inputs, got the scores input 'x.npy'
        (refusing to overwrite an input)``.
    """
    out = Path(path)
    targets = [out]
    if sidecars:
        targets += [out.with_name(out.name + s) for s in _SIDECARS]
    for what, value in inputs.items():
        if not isinstance(value, str | os.PathLike) or not str(value):
            continue
        src = Path(value)
        for target in targets:
            hit = _same_file(target, src)
            if not hit and target is out and src.exists():
                hit = _inside(src, out)
            if hit:
                how = "" if target is out else f" (its sidecar {target.name!r})"
                raise ParameterError(
                    f"{name}: expected a path other than the command's inputs, got the {what} "
                    f"input {str(src)!r}{how} (refusing to overwrite an input)"
                )


def _foreign_reason(
    path: Path, kind: str, purpose: Callable[[dict[str, Any]], bool] | None
) -> tuple[str, bool] | None:
    """Why the existing ``path`` is not an earlier ARIA output of ``kind`` (None: it is one),
    and whether ARIA wrote it at all (an ARIA output of another kind or purpose)."""
    try:
        man = read_manifest(path)
    except FileFormatError:
        return f"its manifest {str(manifest_path(path))!r} is unreadable", False
    if man is None:
        return f"there is no ARIA manifest ({manifest_path(path).name}) for it", False
    if man.get("kind") != kind:
        return f"its manifest says kind {man.get('kind')!r}", True
    if purpose is not None and not purpose(man):
        return f"its manifest describes another {kind} (method {man.get('method')!r})", True
    return None


def check_output_path(
    name: str,
    path: str | os.PathLike[str],
    *,
    kind: str | None = None,
    overwrite: bool = False,
    inputs: Mapping[str, Any] | None = None,
    purpose: Callable[[dict[str, Any]], bool] | None = None,
) -> Path:
    """Check an output path for a score matrix before any work is done.

    Parameters
    ----------
    name : str
        The parameter (or flag) the path came from, for messages.
    path : path-like
        Ends in ``.npy`` (a file) or ``.zarr`` (a store directory).
    kind : str, optional
        The manifest ``kind`` the output will have. An existing output is replaced only when
        ARIA wrote it as this kind (its manifest says so, and ``purpose`` accepts it), or
        when ``overwrite`` is true. Without ``kind``, existing matrices are not checked.
    overwrite : bool
        Replace an existing file or zarr store that ARIA wrote as another kind or for another
        purpose (a file ARIA did not write is never replaced).
    inputs : mapping of str to path-like, optional
        The command's inputs (:func:`check_not_input`): never written over.
    purpose : callable, optional
        Tells from an existing output's manifest whether it was made for the same purpose.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    ParameterError
        another suffix, an input as output, or an existing file ARIA did not write as
        ``kind`` (without ``overwrite``).
    FileFormatError
        an existing directory where a ``.npy`` file is to go, an existing file where a zarr
        store is to go, or an existing directory that is not a zarr store (never replaced).
    """
    if not isinstance(path, str | os.PathLike):
        raise ParameterError(expected(name, "a path", path))
    if not isinstance(overwrite, bool):
        raise ParameterError(expected("overwrite", "True or False", overwrite))
    p = Path(path)
    fmt = _output_format(p, name)
    if inputs:
        check_not_input(name, p, inputs)
    if fmt == "npy" and p.is_dir():
        raise FileFormatError(
            f"{name}: {str(p)!r} is an existing directory; expected a path for a .npy file"
        )
    existing = p.is_file() if fmt == "npy" else False
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
        existing = _is_zarr_store(p)
    if existing and kind is not None:
        found = _foreign_reason(p, kind, purpose)
        if found is not None and not found[1]:  # not ARIA's at all: never written over
            raise ParameterError(
                f"{name}: {str(p)!r} already exists and ARIA did not write it as {kind} "
                f"({found[0]}); choose another path (or remove it yourself)"
            )
        if found is not None and not overwrite:
            raise ParameterError(
                f"{name}: {str(p)!r} already exists and ARIA did not write it as {kind} "
                f"({found[0]}); choose another path, or pass overwrite=True (--overwrite) to "
                "replace this earlier ARIA output"
            )
    return check_writable_path(name, p)


def output_bytes(
    path: str | os.PathLike[str], shape: tuple[int, int], dtype: Any, *,
    row_ids: bool = False, staged: bool = False,
) -> int:
    """Bytes on disk a score matrix written to ``path`` takes at its peak.

    Parameters
    ----------
    path : path-like
        ``.npy`` or ``.zarr`` (:class:`ScoreWriter`).
    shape : (int, int)
        The matrix's shape.
    dtype : numpy dtype
        Its dtype.
    row_ids : bool
        Row ids are stored too (counted generously, 256 bytes a row).
    staged : bool
        A zarr output is filled through :attr:`ScoreWriter.array`: its staging copy and its
        chunks exist at once.
    """
    n, t = (int(x) for x in shape)
    data = n * t * np.dtype(dtype).itemsize
    ids = 256 * n if row_ids else 0
    if _output_format(Path(path)) == "npy":
        return data + ids + _HEADER_ROOM
    chunks = -(-n // _zarr_chunk_rows(shape, dtype))
    return data * (2 if staged else 1) + ids + 8192 * chunks + _HEADER_ROOM


def check_output_space(
    path: str | os.PathLike[str], shape: tuple[int, int], dtype: Any, *,
    row_ids: bool = False, staged: bool = False,
) -> None:
    """Refuse to start when the file system of ``path`` cannot hold the output.

    Temporaries of dead runs in the output's folder are removed first
    (:func:`aria_tda._io.sweep_leftovers`).

    Parameters
    ----------
    path : path-like
        The output.
    shape, dtype, row_ids, staged
        As :func:`output_bytes`.

    Raises
    ------
    DiskFullError
        ``No space left on DEVICE (mounted at M): need N, have F, writing PATH``.
    """
    p = Path(path)
    sweep_leftovers(p.absolute().parent)
    check_space(p, output_bytes(p, shape, dtype, row_ids=row_ids, staged=staged))


class ScoreWriter:
    r"""Write an ``(n_rows, n_cols)`` matrix to ``.npy``/``.zarr`` atomically.

    Use as a context manager. Rows can be written in any order with :meth:`write_rows`;
    :attr:`array` gives a writable memory map for column slabs and in-place accumulation
    (for zarr output it is a staging ``.npy`` copied into the store on close). The file
    appears under its final name only when the ``with`` block ends without an error; its
    space is reserved on disk before anything is mapped (a full disk is a
    :class:`~aria_tda.errors.DiskFullError`, and nothing is left behind).

    Parameters
    ----------
    path : path-like
        Ends in ``.npy`` or ``.zarr``.
    shape : (int, int)
    dtype : numpy dtype
    kind : str
        Manifest ``kind`` (``"scores"``, ``"track_scores"``, ``"normalized_scores"``).
    row_ids : array-like of str, optional
    overwrite : bool
        Replace an existing file that ARIA did not write as ``kind``
        (:func:`check_output_path`).
    purpose : callable, optional
        Tells an earlier output made for the same purpose by its manifest
        (:func:`check_output_path`).
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
        overwrite: bool = False,
        purpose: Callable[[dict[str, Any]], bool] | None = None,
        **fields: Any,
    ) -> None:
        self.path = check_output_path("out", path, kind=kind, overwrite=overwrite,
                                      purpose=purpose)
        self.format = _output_format(self.path)
        self.shape = check_matrix_shape(shape, name="out")
        self.dtype = np.dtype(dtype)
        if self.dtype.kind != "f":
            raise ParameterError(expected("dtype", "a floating-point dtype", str(self.dtype)))
        self.row_ids = as_row_ids(row_ids, self.shape[0])
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
        # one writer per output file: a second process writing the same matrix is refused;
        # held apart from the stack, until the manifest and row ids are renamed too
        self._lock = output_lock(self.path, "score matrix")
        self._lock.__enter__()
        try:
            # leftovers of killed runs go first: their bytes may be what the disk now lacks
            check_output_space(self.path, self.shape, self.dtype,
                               row_ids=self.row_ids is not None)
            self._tmp = self._stack.enter_context(atomic_path(self.path))
            if self.format == "npy":
                self._open_npy(self._tmp)
            else:
                self._open_zarr(self._tmp)
        except BaseException:
            self._release()
            try:
                self._stack.__exit__(*_exc_info())
            finally:
                self._lock.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool | None:
        try:
            return self._exit(exc_type, exc, tb)
        finally:
            self._lock.__exit__(None, None, None)

    def _exit(self, exc_type: Any, exc: Any, tb: Any) -> bool | None:
        if exc_type is not None:
            self._release()
            return self._stack.__exit__(exc_type, exc, tb)
        try:
            self._finish()
            self._release()
            if self.format == "zarr":
                return self._stack.__exit__(None, None, None)
            self._commit_npy()
        except BaseException:
            self._release()
            self._stack.__exit__(*_exc_info())
            raise
        return None

    def _open_npy(self, tmp: Path) -> None:
        header = {
            "descr": np.lib.format.dtype_to_descr(self.dtype),
            "fortran_order": False,
            "shape": self.shape,
        }
        with open(tmp, "wb") as fh:
            np.lib.format.write_array_header_2_0(fh, header)
            self._offset = fh.tell()
        self._fd = os.open(tmp, os.O_RDWR)
        # every page of the file is backed before anything maps it: no SIGBUS on a full disk
        size = self._offset + self.shape[0] * self.shape[1] * self.dtype.itemsize
        reserve_space(self._fd, size, path=self.path)

    def _open_zarr(self, tmp: Path) -> None:
        import zarr

        group = zarr.open_group(str(tmp), mode="w")
        self._zarr = group.create_array(
            "scores",
            shape=self.shape,
            chunks=(_zarr_chunk_rows(self.shape, self.dtype), self.shape[1]),
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
                nbytes = self.shape[0] * self.shape[1] * self.dtype.itemsize
                # the staging copy and the store's chunks exist at once
                check_space(self.path, output_bytes(self.path, self.shape, self.dtype,
                                                    row_ids=False, staged=True))
                self._staging = self._tmp / temp_name("staging.npy")
                fd = os.open(self._staging, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
                try:
                    reserve_space(fd, nbytes, path=self.path)
                finally:
                    os.close(fd)
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
            self._staging = None
        if self._fd is not None:
            os.fsync(self._fd)
        if self.format == "zarr":
            assert self._tmp is not None
            write_json(manifest_path(self._tmp), self._manifest())

    def _release(self) -> None:
        self._mmap = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._staging is not None:
            remove_path(self._staging)
            self._staging = None

    def _commit_npy(self) -> None:
        """Sidecars written under temporary names first, then everything renamed into place.

        A full disk stops before the matrix moves; the matrix, then its row ids, then its
        manifest are renamed (an earlier output's manifest is replaced, never removed first, so
        a kill between two renames leaves an output a rerun may replace).
        """
        side = self.path.with_name(self.path.name + ROW_IDS_SUFFIX)
        with contextlib.ExitStack() as commit:
            man_tmp = commit.enter_context(atomic_path(manifest_path(self.path)))
            write_json(man_tmp, self._manifest())
            if self.row_ids is not None:
                side_tmp = commit.enter_context(atomic_path(side))
                with open(side_tmp, "wb") as fh:
                    np.save(fh, self.row_ids, allow_pickle=False)
            self._stack.__exit__(None, None, None)  # the matrix, under its final name
            if self.row_ids is None:
                remove_path(side)
        # leaving ``commit`` renamed the row ids, then the manifest

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
    overwrite: bool = False,
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
    overwrite : bool
        Replace an existing file at ``path`` that ARIA did not write as a score matrix (by
        default it is refused; an earlier ``save_scores`` output is always replaced). The
        matrix being read is never written over.

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    if isinstance(scores, str | os.PathLike):
        check_not_input("out", path, {"scores": scores})
    check_output_path("out", path, kind="scores", overwrite=overwrite)
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
    if src.path is not None:
        check_not_input("out", path, {"scores": src.path})
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
        overwrite=overwrite,
    ) as writer:
        for start, block in src.iter_chunks(
            chunk_rows, progress=progress, desc="save", reuse_buffers=True
        ):
            writer.write_rows(start, block)
    return Path(path)
