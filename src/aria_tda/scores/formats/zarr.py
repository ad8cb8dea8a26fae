"""zarr stores (v2 or v3): an array, or a group holding ``scores`` (and ``row_ids``).

Reads are chunk-aligned. zarr reads a chunk that is absent from the store as its fill value
(zeros), so an incomplete store — a chunk file lost in a copy, a write that died half-way —
would silently shift every statistic. ARIA refuses it: when a source is opened, the array's
folder is walked once and its chunk files compared with the grid that the metadata's shape and
chunks imply (:func:`check_zarr_layout`, in time bounded by the files, never by the grid): a
missing chunk is a :class:`~aria_tda.errors.FileFormatError` naming it, and so is a chunk
outside the shape (a shape claiming fewer rows than the store holds) and a chunk shape that is
not positive integers or far larger than the array. ARIA's own writer stores every chunk,
including all-zero ones (``write_empty_chunks``). The first chunk is decoded when the source
is opened (a dtype the data belies); a chunk file that is present but cut short fails when
read, also as a ``FileFormatError``. A group's ``row_ids`` must have one entry per row before
it is read.
"""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda.errors import DataError, FileFormatError, expected, library_message
from aria_tda.scores.formats.header import header_dims, header_error, span_bytes
from aria_tda.scores.source import ScoreSource, default_chunk_rows

__all__ = ["MAX_CHUNK_BYTES", "ZarrSource", "check_zarr_layout", "open_zarr"]

ROW_IDS_KEY = "row_ids"
#: The largest chunk (bytes, decoded) accepted in an array smaller than it: a chunk is decoded
#: whole, so a chunk shape far beyond the array's is refused before zarr allocates it.
MAX_CHUNK_BYTES = 2**30


def _key_layout(array: Any) -> tuple[str, str] | None:
    """``(prefix, separator)`` of the array's chunk keys (``c/1/2``, ``1.2``, ``1/2``, ...), or
    None when this zarr does not say."""
    try:
        probe = str(array.metadata.encode_chunk_key((11, 22)))
        prefix = probe[: probe.index("11")]
    except (AttributeError, TypeError, ValueError):  # pragma: no cover - other zarr versions
        return None
    return prefix, probe[len(prefix) + 2 : -2]


def _stored_cells(
    array: Any, grid: tuple[int, int]
) -> tuple[set[tuple[int, int]], list[str]] | None:
    """The chunk (shard) files of a local store: cells inside ``grid``, keys outside; None when
    the store is not a local folder. One walk of the array's folder: time bounded by the files
    there, never by the grid the metadata claims."""
    root = getattr(array.store, "root", None)
    layout = _key_layout(array)
    if root is None or layout is None:
        return None
    base = Path(root) / array.path if array.path else Path(root)
    prefix, sep = layout
    inside: set[tuple[int, int]] = set()
    outside: list[str] = []
    for folder, _, names in os.walk(base):
        rel = Path(folder).relative_to(base).as_posix()
        for name in names:
            key = name if rel == "." else f"{rel}/{name}"
            if not key.startswith(prefix):
                continue
            parts = key[len(prefix):].split(sep)
            if len(parts) != 2 or not all(_INDEX.fullmatch(x) for x in parts):
                continue
            cell = (int(parts[0]), int(parts[1]))
            if cell[0] < grid[0] and cell[1] < grid[1]:
                inside.add(cell)
            else:
                outside.append(key)
    return inside, sorted(outside)


_INDEX = re.compile(r"[0-9]{1,18}")


def check_zarr_layout(array: Any, where: str) -> None:
    """Check the array's chunk grid against the files of its store, before anything is read.

    The chunk (and shard) shape must be positive integers, a chunk no larger than
    :data:`MAX_CHUNK_BYTES` unless the array itself is larger; every chunk the shape implies
    must be stored (zarr would read a missing one as its fill value), and no chunk may lie
    outside the shape (a shape claiming fewer rows than the store holds).

    Parameters
    ----------
    array : zarr.Array
        The array to check.
    where : str
        How messages name the store.

    Raises
    ------
    FileFormatError
        A chunk shape that is not positive integers or absurdly large, a chunk missing, or a
        chunk outside the shape.
    """
    shape = tuple(int(d) for d in array.shape)
    chunks = header_dims(where, "chunks", list(array.chunks), ndim=len(shape))
    shards = getattr(array, "shards", None)
    step = header_dims(where, "shards", list(shards), ndim=len(shape)) if shards else chunks
    for field, dims in (("chunks", chunks), ("shards", step)):
        if not all(d >= 1 for d in dims):
            raise header_error(where, field, list(dims), "positive integers")
    itemsize = np.dtype(array.dtype).itemsize
    chunk_bytes = span_bytes(chunks, itemsize)
    if chunk_bytes > max(MAX_CHUNK_BYTES, span_bytes(shape, itemsize)):
        raise header_error(where, "chunks", list(chunks),
                           f"chunks of at most {MAX_CHUNK_BYTES} bytes (or the array's size)",
                           f"an array of shape {list(shape)}", holder="the store")
    grid = (-(-shape[0] // step[0]), -(-shape[1] // step[1]))
    stored = _stored_cells(array, grid)
    if stored is None:  # not a local folder: zarr's own count
        _check_counted(array, where)
        return
    inside, outside = stored
    if outside:
        first = outside[0]
        raise header_error(
            where, "shape", list(shape),
            "a shape covering every chunk the store holds",
            f"chunk {first!r} outside it ({len(outside)} such; the shape describes fewer rows "
            "or columns than the store holds)",
            holder="the store",
        )
    n_chunks = grid[0] * grid[1]
    if len(inside) == n_chunks:
        return
    # fewer than len(inside) + 1 cells are visited before the first missing one
    missing = next(
        (i, j) for i in range(grid[0]) for j in range(grid[1]) if (i, j) not in inside
    )
    key = str(array.metadata.encode_chunk_key(missing))
    raise FileFormatError(
        f"{where}: incomplete zarr store: {n_chunks - len(inside)} of {n_chunks} chunks are "
        f"missing (first missing: chunk {key!r}, rows from {missing[0] * step[0]}; shape = "
        f"{list(shape)}, chunks = {list(step)}); zarr would "
        f"read them as {array.fill_value!r}. Rewrite the store (stored chunks of {chunks[0]} "
        "rows)"
    )


def _missing_chunk(array: Any) -> str | None:
    """The key of the first chunk (shard) absent from the store, or None if unknown."""
    try:
        keys = list(array._iter_shard_keys())  # zarr >= 3.1 (private but stable)
        store, prefix = array.store, array.path
    except AttributeError:  # pragma: no cover - other zarr versions
        return None
    root = getattr(store, "root", None)
    if root is None:  # not a local store: name what we can
        return None
    base = Path(root) / prefix if prefix else Path(root)
    for k in keys:
        if not (base / k).is_file():
            return str(k)
    return None


def _check_counted(array: Any, where: str) -> None:
    """The completeness check of a store that is not a local folder (zarr lists it)."""
    try:
        n_stored = int(array.nchunks_initialized)
        n_chunks = int(array.nchunks)
    except Exception:  # pragma: no cover - stores that cannot be listed
        return
    if n_stored >= n_chunks:
        return
    key = _missing_chunk(array)
    chunk_rows = int(array.chunks[0])
    which = ""
    if key is not None:
        which = f" (first missing: chunk {key!r}"
        first = key.replace("c/", "", 1).replace(".", "/").split("/")[0]
        if first.isdigit():
            step = (getattr(array, "shards", None) or array.chunks)[0]
            r0 = int(first) * int(step)
            which += f", rows from {r0}"
        which += ")"
    raise FileFormatError(
        f"{where}: incomplete zarr store: {n_chunks - n_stored} of {n_chunks} chunks are "
        f"missing{which}; zarr would read them as {array.fill_value!r}. Rewrite the store "
        f"(stored chunks of {chunk_rows} rows)"
    )


class ZarrSource(ScoreSource):
    """A 2-D zarr array (or the score array of a zarr group), read chunk-aligned.

    Parameters
    ----------
    array : zarr.Array [shape=(M, T)]
        The array; checked for missing chunks.
    path : pathlib.Path, optional
        The store it was opened from.
    key : str, optional
        Its name inside the group.
    row_ids : array-like of str, optional
        Row ids.
    manifest : dict, optional
        The artefact's manifest.
    """

    def __init__(
        self,
        array: Any,
        *,
        path: Path | None = None,
        key: str | None = None,
        row_ids: Any = None,
        manifest: dict[str, Any] | None = None,
    ) -> None:
        try:
            dtype = np.dtype(array.dtype)
        except TypeError:
            raise DataError(
                expected("scores", "a real floating-point or integer dtype", str(array.dtype))
            ) from None
        super().__init__(array.shape, dtype, row_ids=row_ids, manifest=manifest)
        self.array = array
        self.path = path
        self.key = key
        where = str(path or "zarr array") + (f"[{key!r}]" if key else "")
        check_zarr_layout(array, where)
        self._read((slice(0, 1), slice(0, 1)), "its first chunk")  # a dtype the data belies

    def chunk_rows(self, chunk_rows: int | None = None) -> int:
        """Rows per block; by default a multiple of the stored chunk rows.

        Parameters
        ----------
        chunk_rows : int, optional
            Rows per block asked for.
        """
        if chunk_rows is not None:
            return super().chunk_rows(chunk_rows)
        rows = default_chunk_rows(self.shape, self.dtype)
        stored = int(self.array.chunks[0])
        return int(min(self.n_rows, max(stored, (rows // stored) * stored)))

    def _read(self, selection: Any, what: str) -> np.ndarray:
        try:
            return np.asarray(self.array[selection])
        except Exception as exc:
            raise FileFormatError(
                f"{self.path or 'zarr array'}: cannot read {what} ({library_message(exc)})"
            ) from None

    def _raw_rows(self, start: int, stop: int) -> np.ndarray:
        return self._read(slice(start, stop), f"rows {start}:{stop}")

    def _raw_columns(self, start: int, stop: int) -> np.ndarray:
        return self._read((slice(None), slice(start, stop)), f"columns {start}:{stop}")

    def read_columns(self, cols: Any, *, chunk_rows: int | None = None) -> np.ndarray:
        """Columns ``cols`` as ``(M, k)`` (an orthogonal selection of the store).

        Parameters
        ----------
        cols : int, sequence of int or slice
            Which columns.
        chunk_rows : int, optional
            Ignored (zarr reads the chunks it needs).
        """
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


def open_zarr(path: Path, key: str | None, manifest: Any) -> ZarrSource:
    """Open the score array of a zarr store.

    Parameters
    ----------
    path : pathlib.Path
        The store (a directory).
    key : str, optional
        Array of a group; default ``scores``, else the only array other than ``row_ids``.
    manifest : dict, optional
        The artefact's manifest, carried by the source.
    """
    import zarr

    try:
        node = zarr.open(str(path), mode="r")
    except Exception as exc:
        raise FileFormatError(
            f"{path}: not a readable zarr store ({library_message(exc)})"
        ) from None
    row_ids = None
    if isinstance(node, zarr.Group):
        # direct look-ups first: listing a group makes zarr warn about our manifest file
        array: Any = _zarr_child(node, key or "scores")
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
            array = _zarr_child(node, key)
        key = key or "scores"
        ids_array = _zarr_child(node, ROW_IDS_KEY) if key != ROW_IDS_KEY else None
        if ids_array is not None:
            n_rows = int(array.shape[0]) if len(array.shape) else 0
            if tuple(ids_array.shape) != (n_rows,):
                raise header_error(f"{path}[{ROW_IDS_KEY!r}]", "shape", list(ids_array.shape),
                                   f"[{n_rows}], one id per row of {key!r}")
            try:
                row_ids = np.asarray(ids_array[:])
            except Exception as exc:
                raise FileFormatError(
                    f"{path}[{ROW_IDS_KEY!r}]: unreadable row ids ({library_message(exc)})"
                ) from None
    else:
        if key is not None:
            raise FileFormatError(f"{path}: is a single zarr array, not a group; drop key={key!r}")
        array = node
    return ZarrSource(array, path=path, key=key, row_ids=row_ids, manifest=manifest)
