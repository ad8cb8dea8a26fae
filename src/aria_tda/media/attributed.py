r"""Which segment of an attributed track was attributed: the window to play and to draw.

A setting whose score matrix has one row per *segment* (a window of a training track, the
segment map of the study) is read by the study at the track level (:math:`S^{\mathrm{track}}`,
:mod:`aria_tda.scores.aggregation`), so the top-N list names tracks. To hear and see the music
behind a query's attribution, the listening room plays, of each listed track, **the segment
that scored highest for that query** — the exact window cut from the training file — rather
than the whole track.

:class:`SegmentPicker` reads a setting's score matrix once for the query columns asked for (one
streaming pass however many queries and tracks) and its segment map (:func:`aria_tda.scores.
segment_map.read_segment_table`; rows matched to score rows as the study does,
:func:`aria_tda.scores.segment_map.table_rows`), and gives, for a (query, track), the winning
segment's map row with its window columns (``start``/``end``, ``unit`` or
``start_tick``/``end_tick``, read by :meth:`aria_tda.media.MediaIndex.train_window`).

The raw segment scores decide: the study's per-column normalisations (z-score, rank) are
monotone within a query's column, so the winner is the same. A setting without a segment map
(one row per track) has nothing to pick; a matrix or map that cannot be read leaves the whole
track (:attr:`SegmentPicker.problem` says why) — the listening room never fails on it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda.errors import AriaError, one_line

__all__ = ["SegmentPick", "SegmentPicker", "segment_pickers", "segment_refs"]


@dataclass(frozen=True)
class SegmentPick:
    """The best-scoring segment of one track for one query.

    Attributes
    ----------
    track_id : str
        The track.
    segment_id : str
        The segment (the map's ``segment_id``/``segment`` value, else ``TRACK@row R``).
    row : dict
        The segment map's row (its window columns among them).
    score : float
        The segment's raw attribution score for the query.
    n_segments : int
        How many segments of the track the map lists.
    """

    track_id: str
    segment_id: str
    row: dict[str, Any]
    score: float
    n_segments: int


class SegmentPicker:
    """The best segment per (query, track) of one setting (see the module docstring).

    Parameters
    ----------
    setting : mapping
        The setting's record in ``results.json`` (``scores``, ``segments``, ``transpose``,
        ``key``).
    base : path
        Folder that relative paths of the record are resolved against (the results folder).
    """

    def __init__(self, setting: Mapping[str, Any], base: str | os.PathLike[str]) -> None:
        self.name = str(setting.get("name"))
        self._base = Path(base)
        self._scores = self._path(setting.get("scores"))
        self._segments = self._path(setting.get("segments"))
        self._key = setting.get("key") or None
        self._transpose = bool(setting.get("transpose") or False)
        self._columns: dict[int, np.ndarray] = {}
        self._map: Any = None
        self._rows: np.ndarray | None = None
        self.problem: str | None = None
        if self._segments is None:
            self.problem = f"setting {self.name!r} has no segment map (one row per track)"
        elif self._scores is None:
            self.problem = f"setting {self.name!r} names no score matrix"

    def _path(self, value: Any) -> Path | None:
        if value is None or str(value).strip() == "":
            return None
        p = Path(str(value)).expanduser()
        return p if p.is_absolute() else Path(os.path.normpath(self._base / p))

    @property
    def active(self) -> bool:
        """Whether segments can be picked (a segment map and a readable matrix)."""
        return self.problem is None

    def load(self, queries: Sequence[int]) -> None:
        """Read the score columns of ``queries`` (0-based) in one pass, and the segment map.

        Parameters
        ----------
        queries : sequence of int
            Query columns that :meth:`pick` will be asked about.
        """
        want = sorted({int(q) for q in queries} - set(self._columns))
        if not self.active or not want:
            return
        # active: __init__ found a segment map (``problem`` is never reset to None)
        assert self._segments is not None
        from aria_tda.scores.readers import as_source
        from aria_tda.scores.segment_map import read_segment_table, table_rows

        try:
            src = as_source(str(self._scores), key=self._key, transpose=self._transpose)
            m, t = src.shape
            if max(want) >= t:
                raise AriaError(f"query column {max(want)} is beyond the {t} columns of "
                                f"{self._scores}")
            if self._map is None:
                df = read_segment_table(self._segments)
                rows = table_rows(df, row_ids=src.row_ids)
                self._rows = np.arange(len(df)) if rows is None else rows
                if self._rows.size and (self._rows.min() < 0 or self._rows.max() >= m):
                    raise AriaError(f"the segment map {self._segments} names rows beyond the "
                                    f"{m} rows of {self._scores}")
                self._map = df
            cols = np.empty((m, len(want)))
            for s, block in src.iter_chunks(progress=False):
                cols[s : s + block.shape[0]] = np.asarray(block)[:, want]
        except (AriaError, OSError, ValueError, KeyError, IndexError) as exc:
            self.problem = (f"the segments of setting {self.name!r} could not be read "
                            f"({one_line(exc)}); whole tracks are played")
            return
        for j, q in enumerate(want):
            self._columns[q] = cols[:, j]

    def pick(self, query: int, track_id: str) -> SegmentPick | None:
        """The best segment of ``track_id`` for ``query`` (``None``: nothing to pick).

        Parameters
        ----------
        query : int
            The query's 0-based column.
        track_id : str
            A track of the top-N list.
        """
        self.load([query])
        col = self._columns.get(int(query))
        if col is None or self._map is None or self._rows is None:
            return None
        df = self._map
        track_col = next((c for c in df.columns if str(c).lower() in ("track_id", "track")),
                         None)
        if track_col is None:
            return None
        sel = np.flatnonzero(df[track_col].astype(str).to_numpy() == str(track_id))
        if sel.size == 0:
            return None
        vals = col[self._rows[sel]]
        if not np.isfinite(vals).any():
            return None
        best = int(sel[int(np.nanargmax(np.where(np.isfinite(vals), vals, -np.inf)))])
        row = {str(k): v for k, v in df.iloc[best].to_dict().items()}
        seg_col = next((c for c in ("segment_id", "segment") if c in row), None)
        seg = str(row[seg_col]) if seg_col else f"{track_id}@row {int(self._rows[best])}"
        return SegmentPick(str(track_id), seg, row, float(col[self._rows[best]]), int(sel.size))


def segment_refs(
    index: Any, pickers: Mapping[str, Any], query: Any, items: Sequence[tuple[str, str]],
) -> dict[str, Any]:
    """The best segment of each listed track for ``query``, as media refs to play.

    Parameters
    ----------
    index : aria_tda.media.MediaIndex
        Where each track's file is.
    pickers : mapping
        Setting name -> :class:`SegmentPicker`.
    query : int or str
        The query (its 0-based column; a value that is not an integer picks nothing).
    items : sequence of (track id, setting)
        The tracks and the setting whose scores pick their segment.

    Returns
    -------
    dict
        Track id -> :class:`aria_tda.media.MediaRef` (tracks without a segment map are left
        out: they play whole).
    """
    try:
        col = int(str(query))
    except ValueError:
        return {}
    out: dict[str, Any] = {}
    for tid, setting in items:
        picker = pickers.get(setting)
        if picker is None or not picker.active:
            continue
        pick = picker.pick(col, tid)
        if pick is not None:
            out[tid] = index.train_window(tid, pick.row, segment_id=pick.segment_id)
    return out


def segment_pickers(
    data: Any, query_ids: Sequence[Any], *, settings: Sequence[str] | None = None
) -> dict[str, Any]:
    """Setting name -> a loaded :class:`SegmentPicker`, for the settings with a segment map.

    Parameters
    ----------
    data : aria_tda.report.load.ResultsData
        The results folder.
    query_ids : sequence
        The queries (0-based columns) whose scores are read, in one pass per setting.
    settings : sequence of str, optional
        Only these settings (default: all).
    """
    cols = []
    for q in query_ids:
        try:
            cols.append(int(str(q)))
        except ValueError:
            continue
    out: dict[str, Any] = {}
    for rec in data.meta.get("settings") or []:
        if not isinstance(rec, Mapping) or not rec.get("segments"):
            continue
        if settings is None or str(rec.get("name")) in settings:
            picker = SegmentPicker(rec, data.path)
            picker.load(cols)
            out[str(rec.get("name"))] = picker
    return out
