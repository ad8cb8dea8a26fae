r"""The segment → track map: which track each row of a segment-level score matrix belongs to.

``segments`` may be

- ``None``: the identity (each row is its own track; the symbolic case, where
  :math:`S^{\mathrm{track}} = S^{\mathrm{seg}}` up to normalisation);
- an array-like of ``M`` track ids, one per row, in row order;
- a CSV (``.csv``, ``.tsv``) or Parquet (``.parquet``/``.pq``) table, or a ``.npy`` array /
  ``.txt`` file (one id per line, no header) of track ids in row order. A table needs a
  ``track_id`` column (or exactly one column). Rows are matched by a
  ``row`` column (0-based row index) if present, else by a ``segment_id``/``segment`` column
  against the score matrix's ``row_ids`` if it has them (an integer ``segment`` column is read
  as row indices when it has none; other segment ids then go by position), else by position
  (the table must have ``M`` rows).

Tracks appear in ``S_track`` in the order of ``tracks=`` when given (every segment's track must
be among them, and each of them must have a segment), else in order of first appearance.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda._checks import check_existing_path
from aria_tda.errors import DataError, FileFormatError, expected
from aria_tda.scores.source import check_orientation, expected_text

__all__ = ["describe_segments", "read_segment_table", "segment_codes", "table_rows"]

TABLE_SUFFIXES = {".csv", ".tsv", ".txt", ".parquet", ".pq", ".npy"}
TRACK_COLUMNS = ("track_id", "track")
SEGMENT_COLUMNS = ("segment_id", "segment")
ROW_COLUMNS = ("row",)


def read_segment_table(path: str | os.PathLike[str]) -> Any:
    """Read a segment → track table (pandas DataFrame, all columns as strings except ``row``).

    Parameters
    ----------
    path : path-like
        ``.csv``/``.tsv``, ``.parquet``/``.pq``, ``.npy`` or ``.txt`` (see the module docstring).
    """
    import pandas as pd

    p = check_existing_path("segments", path, kind="file")
    suffix = p.suffix.lower()
    try:
        if suffix in {".parquet", ".pq"}:
            df = pd.read_parquet(p)
        elif suffix == ".npy":
            df = pd.DataFrame({"track_id": np.load(p, allow_pickle=False)})
        elif suffix in {".csv", ".tsv"}:
            df = pd.read_csv(
                p, sep="," if suffix == ".csv" else "\t", dtype=str, keep_default_na=False
            )
        elif suffix == ".txt":
            lines = [ln.strip() for ln in p.read_text(encoding="utf-8").splitlines()]
            df = pd.DataFrame({"track_id": [ln for ln in lines if ln]})
        else:
            raise FileFormatError(
                f"segments: unsupported map format {suffix!r}; "
                f"expected one of {sorted(TABLE_SUFFIXES)}"
            )
    except (ValueError, OSError, ImportError) as exc:
        if isinstance(exc, FileFormatError):
            raise
        raise FileFormatError(
            f"segments: cannot read {str(p)!r} ({type(exc).__name__}: {exc})"
        ) from None
    if len(df.columns) == 0:
        raise FileFormatError(f"segments: {str(p)!r} has no columns")
    return df


def _pick(df: Any, names: tuple[str, ...]) -> str | None:
    lower = {str(c).lower(): c for c in df.columns}
    for n in names:
        if n in lower:
            return lower[n]
    return None


def _ids(values: Any, what: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise DataError(expected_text(what, "a 1-D sequence of ids", f"shape {arr.shape}"))
    if arr.dtype.kind == "f":
        if not np.isfinite(arr).all():
            i = int(np.flatnonzero(~np.isfinite(arr))[0])
            raise DataError(f"{what}: missing track id at row {i}")
        if np.all(arr == np.round(arr)):
            arr = arr.astype(np.int64)
    out = arr.astype(str)
    empty = np.flatnonzero((out == "") | (out == "nan") | (out == "None"))
    if empty.size:
        raise DataError(f"{what}: missing track id at row {int(empty[0])}")
    return out


def segment_codes(
    segments: Any,
    *,
    n_rows: int,
    row_ids: Any = None,
    tracks: Any = None,
    n_cols: int | None = None,
    transpose: bool | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Resolve a segment → track map to per-row track codes.

    Parameters
    ----------
    segments : None, array-like of track ids [shape=(M,)], pandas DataFrame/Series or path
        See the module docstring.
    n_rows : int
        ``M``, the number of rows of the score matrix.
    row_ids : array-like of str [shape=(M,)], optional
        The score matrix's row (segment) ids, to match a ``segment_id`` column.
    tracks : array-like of str, optional
        The known tracks, in output order.
    n_cols : int, optional
        ``T``, the number of columns of the score matrix: when the map fits the columns
        rather than the rows, the error says the matrix looks transposed.
    transpose : bool, optional
        Whether the matrix was read with ``transpose=True`` (``--transpose``), so that the
        "looks transposed" advice says to drop it rather than to pass it (``None``: unknown).

    Returns
    -------
    codes : numpy.ndarray [shape=(M,)] of int64
        Row ``i`` of ``S`` belongs to track ``track_ids[codes[i]]``.
    track_ids : numpy.ndarray [shape=(N,)] of str

    Raises
    ------
    DataError
        wrong length (a matrix that looks transposed: "looks transposed (T × M); pass
        --transpose"), missing ids, segments not matching ``row_ids``, tracks not among
        ``tracks``, or tracks in ``tracks`` without segments.
    """
    import pandas as pd

    row_ids = None if row_ids is None else np.asarray(row_ids).astype(str)
    if segments is None:
        per_row = row_ids if row_ids is not None else np.arange(n_rows).astype(str)
    else:
        if isinstance(segments, (str, os.PathLike)):
            segments = read_segment_table(segments)
        if isinstance(segments, pd.Series):
            segments = segments.to_numpy()
        if isinstance(segments, pd.DataFrame):
            per_row = _rows_from_table(
                segments, n_rows=n_rows, row_ids=row_ids, n_cols=n_cols, transpose=transpose
            )
        else:
            per_row = _ids(segments, "segments")
    if n_cols is not None:
        check_orientation(
            (n_rows, n_cols), per_row.shape[0], what="the segment map", transpose=transpose
        )
    if per_row.shape[0] != n_rows:
        raise DataError(
            expected_text(
                "segments", f"one track id per score row ({n_rows})", f"{per_row.shape[0]} ids"
            )
        )
    if tracks is None:
        track_ids, first, codes = np.unique(per_row, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")  # order of first appearance
        remap = np.empty_like(order)
        remap[order] = np.arange(order.size)
        return remap[codes].astype(np.int64), track_ids[order]
    known = _ids(tracks, "tracks")
    if segments is None and n_cols is not None:
        check_orientation((n_rows, n_cols), known.size, what="tracks", transpose=transpose)
    uniq, inv_known = np.unique(known, return_index=True)
    if uniq.size != known.size:
        raise DataError("tracks: expected unique track ids, got duplicates")
    pos = np.searchsorted(uniq, per_row)
    pos = np.minimum(pos, uniq.size - 1)
    unknown = uniq[pos] != per_row
    if unknown.any():
        i = int(np.flatnonzero(unknown)[0])
        raise DataError(
            f"segments: track {str(per_row[i])!r} (row {i}) is not among the {known.size} "
            "known tracks "
            f"({int(unknown.sum())} rows have unknown tracks)"
        )
    codes = inv_known[pos].astype(np.int64)
    counts = np.bincount(codes, minlength=known.size)
    if (counts == 0).any():
        j = int(np.flatnonzero(counts == 0)[0])
        raise DataError(
            f"tracks: track {str(known[j])!r} has no segments in the score matrix "
            f"({int((counts == 0).sum())} tracks without segments)"
        )
    return codes, known


def _rows_from_table(
    df: Any, *, n_rows: int, row_ids: np.ndarray | None, n_cols: int | None = None,
    transpose: bool | None = None,
) -> np.ndarray:
    track_col = _pick(df, TRACK_COLUMNS)
    if track_col is None:
        if len(df.columns) != 1:
            raise DataError(
                expected(
                    "segments",
                    "a 'track_id' column (or a single column)",
                    list(map(str, df.columns)),
                )
            )
        track_col = df.columns[0]
    tracks = _ids(df[track_col].to_numpy(), "segments")
    rows = table_rows(df, row_ids=row_ids)
    if rows is None:
        return tracks
    if n_cols is not None:
        check_orientation(
            (n_rows, n_cols), rows.size, what="the segment map", transpose=transpose
        )
    if rows.size != n_rows:
        raise DataError(
            expected_text("segments", f"one entry per score row ({n_rows})", f"{rows.size} entries")
        )
    if rows.min() < 0 or rows.max() >= n_rows or np.unique(rows).size != n_rows:
        raise DataError(
            expected_text(
                "segments", f"each row 0..{n_rows - 1} exactly once", "missing or repeated rows"
            )
        )
    per_row = np.empty(n_rows, dtype=tracks.dtype)
    per_row[rows] = tracks
    return per_row


def table_rows(df: Any, *, row_ids: Any = None) -> np.ndarray | None:
    """The score row of each row of a segment table, or ``None`` when rows go by position.

    The rules of the module docstring: a ``row`` column; else a ``segment_id``/``segment``
    column matched against the score matrix's ``row_ids`` (integer values are row indices
    when it has none, other ids go by position); else the table's own order (``None``).

    Parameters
    ----------
    df : pandas.DataFrame
        The table (:func:`read_segment_table`).
    row_ids : array-like of str, optional
        The score matrix's row (segment) ids.

    Returns
    -------
    numpy.ndarray [shape=(len(df),)] of int64 or None

    Raises
    ------
    DataError
        Non-integer rows, or segment ids that are not row ids.
    """
    row_ids = None if row_ids is None else np.asarray(row_ids).astype(str)
    row_col = _pick(df, ROW_COLUMNS)
    seg_col = _pick(df, SEGMENT_COLUMNS)
    if row_col is not None:
        try:
            return np.asarray(df[row_col].to_numpy(), dtype=np.int64)
        except (TypeError, ValueError):
            raise DataError(
                expected(
                    "segments", "integer row indices in column 'row'", df[row_col].iloc[:3].tolist()
                )
            ) from None
    if seg_col is not None and row_ids is None:
        # no row ids to match against: integer segment values are row indices; other ids
        # (names) say nothing about rows, which then go by the table's own order
        try:
            return np.asarray(df[seg_col].to_numpy(), dtype=np.int64)
        except (TypeError, ValueError):
            return None
    if seg_col is not None and row_ids is not None:
        seg = _ids(df[seg_col].to_numpy(), "segments.segment_id")
        order = np.argsort(row_ids, kind="stable")
        srt = row_ids[order]
        pos = np.minimum(np.searchsorted(srt, seg), srt.size - 1)
        bad = srt[pos] != seg
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise DataError(
                f"segments: segment {str(seg[i])!r} (table row {i}) is not a row id of the "
                "score matrix"
            )
        return np.asarray(order[pos], dtype=np.int64)
    return None


def describe_segments(segments: Any) -> str:
    """How ``S_track``'s manifest names the segment map (``"identity"``, its path, or a count).

    Parameters
    ----------
    segments : None, path or array-like
        The ``segments`` given to :func:`aggregate`.
    """
    if segments is None:
        return "identity"
    if isinstance(segments, (str, os.PathLike)):
        return str(Path(segments))
    return f"array of {len(segments)} ids"
