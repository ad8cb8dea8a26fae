"""zarr stores (v2 or v3): an array, or a group holding ``scores`` (and ``row_ids``).

Reads are chunk-aligned. zarr reads a chunk that is absent from the store as its fill value
(zeros), so an incomplete store — a chunk file lost in a copy, a write that died half-way —
would silently shift every statistic. ARIA refuses it: when a source is opened, the store is
listed once (``nchunks_initialized``) and compared with the number of chunks the array's
shape implies; a missing chunk is a :class:`~aria_tda.errors.FileFormatError` naming it. ARIA's
own writer stores every chunk, including all-zero ones (``write_empty_chunks``). A chunk
file that is present but cut short fails when read, also as a ``FileFormatError``.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda.errors import FileFormatError, library_message
from aria_tda.scores.source import ScoreSource, default_chunk_rows

__all__ = ["ZarrSource", "check_zarr_complete", "open_zarr"]

ROW_IDS_KEY = "row_ids"


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


def check_zarr_complete(array: Any, where: str) -> None:
    """Raise if the store lacks any chunk of ``array`` (one listing of the store).

    Parameters
    ----------
    array : zarr.Array
        The array to check.
    where : str
        How messages name the store.

    Raises
    ------
    FileFormatError
        A chunk is missing (zarr would read it as the fill value).
    """
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
        super().__init__(
            array.shape, np.dtype(str(array.dtype)), row_ids=row_ids, manifest=manifest
        )
        self.array = array
        self.path = path
        self.key = key
        where = str(path or "zarr array") + (f"[{key!r}]" if key else "")
        check_zarr_complete(array, where)

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
