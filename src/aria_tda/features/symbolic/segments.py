"""Segments: cutting pieces into windows and batching them (:mod:`aria_tda.features.symbolic`).

See the package docstring, "Segments and boundaries", for the rules."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from aria_tda._checks import check_choice, check_float, check_int
from aria_tda.errors import ParameterError, expected
from aria_tda.features.midi import (
    NoteArray,
)
from aria_tda.features.symbolic.params import as_notes, has_ticks, window_tick_bounds

# --------------------------------------------------------------------------- segments


@dataclass(frozen=True)
class NoteBatch:
    """A batch of segments as one ragged array (what :func:`batch_features` computes on).

    Segments may come from different sources (files with other resolutions and tempo maps):
    each segment keeps its own tick space.

    Attributes
    ----------
    notes : NoteArray
        Notes of all segments, concatenated segment after segment (a note crossing a
        boundary appears in every segment that sees it); times in seconds.
    offsets : np.ndarray [shape=(n_segments + 1,), int64]
        Segment ``i`` holds ``notes[offsets[i]:offsets[i+1]]``.
    start, duration : np.ndarray [shape=(n_segments,), float64]
        Window of each segment, ``[start, start + duration)`` seconds.
    onset : np.ndarray [shape=(n_notes,), bool]
        Whether the note belongs to the segment (counts for onset-based features) or only
        sounds in it (grid features, ``boundary="clip"``).
    source_index : np.ndarray [shape=(n_notes,), int64]
        Index of each note in its source piece (for tracing).
    quarters : np.ndarray [shape=(n_notes,), float64]
        Duration in quarter notes from ticks; NaN where the source has no ticks.
    ticks : np.ndarray [shape=(n_notes, 2), int64]
        Start and end tick in the segment's tick space (meaningless where ``seg_tpq == 0``).
    seg_tpq : np.ndarray [shape=(n_segments,), int64]
        Ticks per quarter of each segment's source, 0 when it has no ticks.
    window_ticks : np.ndarray [shape=(n_segments, 2), int64]
        The window ``[w0, w1)`` in ticks (ticks whose time lies in the window).
    """

    notes: NoteArray
    offsets: np.ndarray
    start: np.ndarray
    duration: np.ndarray
    onset: np.ndarray
    source_index: np.ndarray
    quarters: np.ndarray
    ticks: np.ndarray
    seg_tpq: np.ndarray
    window_ticks: np.ndarray

    @property
    def n_segments(self) -> int:
        return int(self.offsets.shape[0] - 1)

    def segment_ids(self) -> np.ndarray:
        """Segment index of every note, shape ``(n_notes,)``."""
        return np.repeat(np.arange(self.n_segments, dtype=np.int64), np.diff(self.offsets))


_FIELDS = ("start", "end", "pitch", "velocity", "loudness", "channel", "track", "is_drum")


def _assemble(
    sources: Sequence[NoteArray],
    windows: Sequence[tuple[int, np.ndarray, np.ndarray, float, float]],
) -> NoteBatch:
    """Build a batch from ``windows`` = (source number, note indices, owned flags, t0, t1)."""
    cols: dict[str, list[np.ndarray]] = {k: [] for k in (*_FIELDS, "quarters", "ticks")}
    onset, srcidx, sizes = [], [], []
    n_seg = len(windows)
    seg_tpq = np.zeros(n_seg, dtype=np.int64)
    win_ticks = np.zeros((n_seg, 2), dtype=np.int64)
    starts = np.array([w[3] for w in windows], dtype=np.float64)
    ends = np.array([w[4] for w in windows], dtype=np.float64)
    by_source: dict[int, list[int]] = {}
    for i, w in enumerate(windows):
        by_source.setdefault(w[0], []).append(i)
    for src, segs in by_source.items():
        nt = sources[src]
        if has_ticks(nt):
            seg_tpq[segs] = int(nt.ticks_per_quarter)  # type: ignore[arg-type]
            win_ticks[segs] = window_tick_bounds(nt, starts[segs], ends[segs])
    for _src, idx, own, _t0, _t1 in windows:
        nt = sources[_src]
        for k in _FIELDS:
            cols[k].append(getattr(nt, k)[idx])
        if has_ticks(nt):
            tpq = float(nt.ticks_per_quarter)  # type: ignore[arg-type]
            cols["quarters"].append((nt.end_tick[idx] - nt.start_tick[idx]) / tpq)  # type: ignore[index]
            cols["ticks"].append(np.stack([nt.start_tick[idx], nt.end_tick[idx]], axis=1))  # type: ignore[index]
        else:
            cols["quarters"].append(np.full(idx.size, np.nan))
            cols["ticks"].append(np.zeros((idx.size, 2), dtype=np.int64))
        onset.append(own)
        srcidx.append(idx)
        sizes.append(idx.size)

    def cat(k: str, dtype: Any, shape: tuple[int, ...] = ()) -> np.ndarray:
        return (
            np.concatenate(cols[k]).astype(dtype, copy=False)
            if cols[k]
            else np.zeros((0, *shape), dtype=dtype)
        )

    notes = NoteArray(
        start=cat("start", np.float64),
        end=cat("end", np.float64),
        pitch=cat("pitch", np.int64),
        velocity=cat("velocity", np.int64),
        loudness=cat("loudness", np.int64),
        channel=cat("channel", np.int64),
        track=cat("track", np.int64),
        is_drum=cat("is_drum", bool),
    )
    return NoteBatch(
        notes=notes,
        offsets=np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).astype(np.int64),
        start=starts,
        duration=ends - starts,
        onset=np.concatenate(onset) if onset else np.zeros(0, bool),
        source_index=np.concatenate(srcidx).astype(np.int64) if srcidx else np.zeros(0, np.int64),
        quarters=cat("quarters", np.float64),
        ticks=cat("ticks", np.int64, (2,)),
        seg_tpq=seg_tpq,
        window_ticks=win_ticks,
    )


def make_batch(
    segments: Sequence[Any],
    *,
    starts: Any = None,
    durations: Any = None,
) -> NoteBatch:
    """A :class:`NoteBatch` from separate segments (e.g. a model's decoded token blocks).

    Parameters
    ----------
    segments : sequence of notes
        Each anything :func:`as_notes` accepts; all its notes belong to the segment.
    starts : array-like [shape=(n,)], optional
        Window start of each segment in seconds (default 0).
    durations : array-like [shape=(n,)], optional
        Window length of each segment (default: its last note end − start, or the
        ``NoteArray.length`` when known).
    """
    n = len(segments)
    start = np.zeros(n) if starts is None else np.asarray(starts, dtype=np.float64).reshape(-1)
    if start.shape != (n,):
        raise ParameterError(expected("starts", f"{n} window starts", f"shape {start.shape}"))
    if durations is not None:
        dur = np.asarray(durations, dtype=np.float64).reshape(-1)
        if dur.shape != (n,):
            raise ParameterError(expected("durations", f"{n} window lengths", f"shape {dur.shape}"))
        if not (np.all(np.isfinite(start)) and np.all(np.isfinite(dur)) and np.all(dur >= 0)):
            raise ParameterError(expected("durations", "finite, non-negative window lengths", dur))
    plain = n > 0 and all(
        isinstance(x, np.ndarray) and x.dtype.names is None and x.ndim == 2 and x.shape[1] in (3, 4)
        for x in segments
    )
    if plain and len({x.shape[1] for x in segments}) == 1:
        # fast path for decoded segments given as (n, 3|4) arrays: validate once
        whole = as_notes(np.concatenate(segments))
        sizes = np.array([x.shape[0] for x in segments], dtype=np.int64)
        bounds = np.concatenate([[0], np.cumsum(sizes)])
        if durations is None:
            last = np.array(
                [whole.end[a:b].max() if b > a else 0.0 for a, b in itertools.pairwise(bounds)]
            )
            dur = np.maximum(last - start, 0.0)
        windows = [
            (
                0,
                np.arange(bounds[i], bounds[i + 1]),
                np.ones(int(sizes[i]), bool),
                float(start[i]),
                float(start[i] + dur[i]),
            )
            for i in range(n)
        ]
        batch = _assemble([whole], windows)
        return replace(batch, source_index=batch.source_index - np.repeat(bounds[:-1], sizes))
    notes = [as_notes(x) for x in segments]
    if durations is None:
        dur = np.array(
            [default_duration(x, s) for x, s in zip(notes, start, strict=True)], dtype=np.float64
        )
    windows = [
        (i, np.arange(len(x)), np.ones(len(x), bool), float(start[i]), float(start[i] + dur[i]))
        for i, x in enumerate(notes)
    ]
    return _assemble(notes, windows)


def default_duration(notes: NoteArray, start: float) -> float:
    """How long a window from ``start`` to the end of the piece lasts (seconds, at least 0).

    Parameters
    ----------
    notes : NoteArray
        The piece (its ``length`` when known, else its last note's end).
    start : float
        The window's start (seconds).

    Returns
    -------
    float
    """
    if notes.length is not None:
        return max(0.0, float(notes.length) - start)
    return max(0.0, float(notes.end.max()) - start) if len(notes) else 0.0


def segment_notes(
    notes: Any,
    *,
    seconds: float | None = None,
    hop: float | None = None,
    n_notes: int | None = None,
    bounds: Any = None,
    boundary: Literal["clip", "onset"] = "clip",
) -> NoteBatch:
    """Cut a piece into fixed windows (exactly one of ``seconds``, ``n_notes``, ``bounds``).

    Parameters
    ----------
    notes : notes
        The piece (anything :func:`as_notes` accepts); its length is ``NoteArray.length``
        (MIDI files) or the last note end.
    seconds : float, optional
        Window length in seconds; windows start every ``hop`` seconds (default ``seconds``)
        from 0 while the start lies before the end of the piece (at least one window). The
        last window is cut at the end of the piece.
    n_notes : int, optional
        Blocks of ``n_notes`` consecutive notes in onset order (ties: input order), a new
        block every ``hop`` notes (default ``n_notes``); a block's window runs from its first
        onset to the first onset after the block (the piece's end for the last block).
    bounds : array-like [shape=(n, 2)], optional
        Explicit windows ``[start, end)`` in seconds (the last end also takes onsets equal
        to it).
    hop : float or int, optional
        Window hop: seconds with ``seconds``, notes with ``n_notes`` (default: the window).
    boundary : {"clip", "onset"}
        How notes crossing a window boundary are seen (module docstring).

    Returns
    -------
    NoteBatch
    """
    notes = as_notes(notes)
    windows = _windows(
        notes, 0, seconds=seconds, hop=hop, n_notes=n_notes, bounds=bounds, boundary=boundary
    )
    return _assemble([notes], windows)


def segment_corpus(
    pieces: Sequence[Any],
    *,
    seconds: float | None = None,
    hop: float | None = None,
    n_notes: int | None = None,
    boundary: Literal["clip", "onset"] = "clip",
) -> tuple[NoteBatch, np.ndarray]:
    """Cut many pieces into windows in one batch (:func:`segment_notes` per piece).

    Parameters
    ----------
    pieces : sequence of notes
        The pieces (anything :func:`as_notes` accepts).
    seconds : float, optional
        Window length in seconds (as :func:`segment_notes`).
    hop : float or int, optional
        Window hop (as :func:`segment_notes`).
    n_notes : int, optional
        Blocks of consecutive notes (as :func:`segment_notes`).
    boundary : {"clip", "onset"}
        How notes crossing a window boundary are seen.

    Returns
    -------
    batch : NoteBatch
    piece : np.ndarray [shape=(n_segments,), int64]
        Index of the piece each segment comes from.
    """
    notes = [as_notes(x) for x in pieces]
    windows: list[tuple[int, np.ndarray, np.ndarray, float, float]] = []
    for k, nt in enumerate(notes):
        windows.extend(
            _windows(
                nt, k, seconds=seconds, hop=hop, n_notes=n_notes, bounds=None, boundary=boundary
            )
        )
    return _assemble(notes, windows), np.array([w[0] for w in windows], dtype=np.int64)


def _windows(
    notes: NoteArray,
    source: int,
    *,
    seconds: float | None,
    hop: float | None,
    n_notes: int | None,
    bounds: Any,
    boundary: str,
) -> list[tuple[int, np.ndarray, np.ndarray, float, float]]:
    check_choice("boundary", boundary, ("clip", "onset"))
    given = [x is not None for x in (seconds, n_notes, bounds)]
    if sum(given) != 1:
        raise ParameterError(
            expected("seconds/n_notes/bounds", "exactly one of them", f"{sum(given)} given")
        )
    length = default_duration(notes, 0.0)
    order = np.lexsort((np.arange(len(notes)), notes.start))
    blocks: list[np.ndarray] | None = None
    if seconds is not None:
        seconds = check_float("seconds", seconds, min_value=0.0, min_inclusive=False)
        hop = (
            seconds if hop is None else check_float("hop", hop, min_value=0.0, min_inclusive=False)
        )
        n_win = max(1, math.ceil(length / hop - 1e-12)) if length > 0 else 1
        t0 = np.arange(n_win, dtype=np.float64) * hop
        t1 = np.maximum(np.minimum(t0 + seconds, length), t0)
    elif n_notes is not None:
        n_notes = check_int("n_notes", n_notes, min_value=1)
        hop_n = n_notes if hop is None else check_int("hop", hop, min_value=1)
        n = len(notes)
        firsts = np.arange(0, max(n, 1), hop_n)
        blocks = [order[f : f + n_notes] for f in firsts]
        starts_sorted = notes.start[order]
        t0 = np.array([starts_sorted[f] if n else 0.0 for f in firsts], dtype=np.float64)
        t1 = np.array(
            [
                starts_sorted[f + n_notes] if f + n_notes < n else max(length, t0[i])
                for i, f in enumerate(firsts)
            ],
            dtype=np.float64,
        )
    else:
        b = np.asarray(bounds, dtype=np.float64)
        if (
            b.ndim != 2
            or b.shape[1] != 2
            or b.shape[0] == 0
            or not np.all(np.isfinite(b))
            or np.any(b[:, 1] < b[:, 0])
        ):
            raise ParameterError(
                expected(
                    "bounds",
                    "an (n, 2) array of [start, end) windows with end >= start",
                    f"shape {b.shape}",
                )
            )
        t0, t1 = b[:, 0].copy(), b[:, 1].copy()

    windows = []
    last = len(t0) - 1
    start, end = notes.start, notes.end
    for i in range(len(t0)):
        if blocks is not None:
            own_mask = np.zeros(len(notes), dtype=bool)
            own_mask[blocks[i]] = True
        else:
            own_mask = (start >= t0[i]) & ((start < t1[i]) | ((i == last) & (start == t1[i])))
        if boundary == "clip":
            idx = np.flatnonzero(own_mask | ((end > t0[i]) & (start < t1[i])))
            flag = own_mask[idx]
        else:
            idx = np.flatnonzero(own_mask)
            flag = np.ones(idx.size, bool)
        windows.append((source, idx.astype(np.int64), flag, float(t0[i]), float(t1[i])))
    return windows
