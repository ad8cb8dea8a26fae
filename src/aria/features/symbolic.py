r"""The symbolic evidence channels: 12 features from notes, vectorised over segments.

The paper (§3.3, appendix table "Feature extraction parameters for the five symbolic evidence
channels") describes a symbolic track by 12 jSymbolic-2.2 features in five channels
(:mod:`aria.features.registry`, modality ``"symbolic"``). This module computes them from MIDI
files, from in-memory notes (e.g. a model's decoded segments) and from a batch of segments at
once, in two *forms*:

``form="paper"`` (the channel default)
    the paper's dimensions: melodic intervals in 25 signed bins, rhythmic values in 11 bins,
    vertical intervals and polyphony sampled on a 50 Hz grid.
``form="jsymbolic"``
    jSymbolic 2.2's own forms of the same features: M-1 with 128 unsigned bins, R-13 with 12
    bins snapped on integer ticks, vertical intervals (C-2) and polyphony (C-6, C-7) weighted
    per MIDI tick, D-4 divided the way 2.2 divides it. The whole-file jSymbolic-2.2-compatible
    mode, keyed by feature codes, is :func:`aria.features.jsymbolic.jsymbolic_features`.

Conventions
-----------
Notes are a :class:`~aria.features.midi.NoteArray` (anything :func:`as_notes` accepts). A note
*sounds* on ``[start, end)``. Drums (``is_drum``, MIDI channel 10) are left out of every
pitch-based feature (melodic interval, pitch class, vertical interval, polyphony, pitch range)
and kept in the others (note density, rhythmic values, dynamics), as in jSymbolic 2.2. A
*voice* is a (track, channel) pair. Histograms are divided by their sum (all zeros when
empty); standard deviations are sample ones (:math:`n-1`, 0 below two values); a feature of a
segment without the notes it needs is 0.

===================== ====== ====== =============================================================
feature (channel)     paper  2.2    definition (per segment)
===================== ====== ====== =============================================================
melodic_interval (M)  25     128    consecutive onsets of one voice (drums out), in onset order
                                    (ties: input/file order): interval = pitch − previous pitch.
                                    A note on the *same onset* as the previous note of its voice
                                    adds no interval but becomes the previous pitch. Paper: signed
                                    bins −12..+12, larger leaps counted in the ±12 bins
                                    (``interval_overflow="clip"``) or dropped (``"drop"``).
                                    2.2 (M-1): bin = \|interval\| in 0..127.
pitch_class (H)       12     12     P-2: onsets per pitch class, normalised, then *rotated* so
                                    bin 0 is the most common pitch class (first wins a tie;
                                    ``rotate_pitch_class=False`` keeps C at bin 0).
vertical_interval (H) 12     12     C-2: at every grid unit, for each pair of distinct sounding
                                    pitches p < q add :math:`S_p + S_q` to bin (q − p) mod 12,
                                    and :math:`S_p` to bin 0 where ≥ 2 notes share pitch p
                                    (:math:`S_p` = summed velocity of the notes sounding at p).
                                    Unit: a 50 Hz frame (paper) or a MIDI tick (2.2).
note_density (R)      1      1      RT-5: onsets (drums included) / segment length in seconds;
                                    0 when the segment is shorter than 1 s.
mean_rhythmic_value   1      1      R-25: mean snapped rhythmic value in quarter notes.
rhythmic_value (R)    11     12     R-13: durations in quarter notes snapped to the nearest of
                                    1/8, 1/4, 1/2, 3/4, 1, 3/2, 2, 3, 4, 6, 8 (, 12) — lower bin
                                    bounds .1875, .375, .625, .875, 1.25, 1.75, 2.5, 3.5, 5, 7
                                    (, 10). Paper: 11 bins, 32nd to double whole (≥ 7 quarters
                                    → double whole). 2.2: 12 bins, bounds on integer ticks as
                                    2.2 computes them (``tpq // 8`` …).
velocity_change (D)   1      1      D-4: mean \|Δ loudness\| between successive onsets on one MIDI
                                    channel. Paper: in onset order, divided by the number of
                                    changes (``d4_divisor="changes"``). 2.2: in file order,
                                    divided by the number of notes on channels with ≥ 2 notes
                                    (``"notes"``), which is what 2.2 computes.
velocity_std (D)      1      1      D-2: sample SD of loudness over all onsets.
dynamic_range (D)     1      1      D-1: max − min loudness.
mean_polyphony (T)    1      1      C-6: mean number of distinct sounding pitches over the
                                    grid units where at least one pitch sounds.
polyphony_std (T)     1      1      C-7: sample SD of the same per-unit counts.
pitch_range (T)       1      1      P-8: highest − lowest onset pitch.
===================== ====== ====== =============================================================

Loudness is velocity scaled by channel volume (CC7) for notes read from MIDI, else velocity.
Rhythmic values come from ticks (``(end_tick − start_tick) / tpq``) when the notes have them;
otherwise from seconds at ``qpm`` quarter notes per minute (default 120, the MIDI default
tempo — MAESTRO's files are written at 120 bpm). In the 2.2 form, notes without ticks get
``round(seconds · tpq · qpm / 60)``.

Grid (paper form). A window ``[t0, t0 + d)`` has ``ceil(d · fps)`` frames; a note occupies
frames ``[round((start − t0)·fps), round((end − t0)·fps))`` (round half up), at least one
frame if ``end > start``, none if ``end == start``, clipped to the window. The 2.2 form uses
ticks ``[start_tick, end_tick)`` clipped to the window's ticks.

Segments and boundaries
-----------------------
:func:`segment_notes` cuts a piece into fixed windows: ``seconds`` (with ``hop``), ``n_notes``
(blocks of consecutive notes in onset order — token blocks of a note-level tokenisation) or
explicit ``bounds``. Every note *belongs* to the window(s) holding its onset: only those notes
count for onset-based features (melodic and pitch-class histograms, density, rhythmic values,
dynamics, range), with their full duration for the rhythmic value even when they ring past
the window's end; the first note of a window has no melodic predecessor. A note crossing a
boundary is handled by ``boundary``:

- ``"clip"`` (default): its clipped sounding part also counts in the later window's grid
  features (vertical intervals, polyphony) — what is heard in the window;
- ``"onset"``: only the window holding its onset sees it (clipped at that window's end).

The last ``seconds`` window is shorter when the piece ends inside it; its own length is used.
:func:`segment_corpus` does the same for many pieces in one batch; :func:`make_batch` takes
ready-made segments (e.g. decoded token blocks: every note belongs to its segment). A batch may
mix sources: each segment keeps its own tick resolution and tempo map.

The grid SD (C-7) is a sample SD over grid units, so it depends slightly on the grid's
resolution (factor :math:`\sqrt{n/(n-1)}` for n sounding units), as jSymbolic's does on
ticks per quarter.

Every feature has an exact loop reference, :func:`reference_features`, against which the
vectorised batch path (:func:`batch_features`) is tested.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

import numpy as np

from aria._checks import check_choice, check_float, check_int
from aria.errors import DataError, ParameterError, expected
from aria.features.midi import (
    DEFAULT_TEMPO,
    DRUM_CHANNEL,
    MidiScore,
    NoteArray,
    notes_from_mapping,
    read_midi,
)
from aria.features.registry import features as registry_features

__all__ = [
    "FEATURE_NAMES",
    "FORMS",
    "RHYTHMIC_VALUES",
    "NoteBatch",
    "SymbolicParams",
    "as_notes",
    "batch_features",
    "extract_file",
    "extract_file_record",
    "extract_file_segments",
    "feature_dims",
    "make_batch",
    "reference_features",
    "segment_corpus",
    "segment_notes",
    "symbolic_features",
    "symbolic_features_batch",
]

FORMS = ("paper", "jsymbolic")
FEATURE_NAMES: tuple[str, ...] = tuple(s.name for s in registry_features("symbolic"))
#: rhythmic values in quarter notes: 32nd, 16th, 8th, dotted 8th, quarter, dotted quarter, half,
#: dotted half, whole, dotted whole, double whole, dotted double whole
RHYTHMIC_VALUES = np.array([1 / 8, 1 / 4, 1 / 2, 3 / 4, 1, 3 / 2, 2, 3, 4, 6, 8, 12], dtype=np.float64)
_RHYTHM_LOWER = (RHYTHMIC_VALUES[:-1] + RHYTHMIC_VALUES[1:]) / 2  # .1875 .375 ... 7 10
_EPS_TICK = 1e-6


@dataclass(frozen=True)
class SymbolicParams:
    """Extraction parameters (all keyword arguments of the extractors).

    Parameters
    ----------
    form : {"paper", "jsymbolic"}
        Paper dimensions (default) or jSymbolic 2.2's forms (see module docstring).
    fps : float
        Grid rate of the paper form's vertical intervals and polyphony, frames per second.
    qpm : float
        Quarter notes per minute used to express seconds in quarter notes for notes without
        ticks (rhythmic values; 2.2-form ticks).
    tpq : int
        Ticks per quarter assumed in the 2.2 form for notes without ticks.
    interval_overflow : {"clip", "drop"}
        Paper form: melodic leaps beyond an octave go to the ±12 bins or are dropped.
    rotate_pitch_class : bool
        Rotate the pitch-class histogram so bin 0 is its most common pitch class (P-2).
    d4_divisor : {"changes", "notes"} or None
        Divisor of the mean velocity change; ``None`` = the form's default ("changes" for the
        paper form, "notes" — jSymbolic 2.2's — for the 2.2 form).
    boundary : {"clip", "onset"}
        How a note crossing a segment boundary counts in grid features (module docstring).
    """

    form: Literal["paper", "jsymbolic"] = "paper"
    fps: float = 50.0
    qpm: float = 120.0
    tpq: int = 480
    interval_overflow: Literal["clip", "drop"] = "clip"
    rotate_pitch_class: bool = True
    d4_divisor: Literal["changes", "notes"] | None = None
    boundary: Literal["clip", "onset"] = "clip"

    def __post_init__(self) -> None:
        check_choice("form", self.form, FORMS)
        check_float("fps", self.fps, min_value=0.0, min_inclusive=False)
        check_float("qpm", self.qpm, min_value=0.0, min_inclusive=False)
        check_int("tpq", self.tpq, min_value=1)
        check_choice("interval_overflow", self.interval_overflow, ("clip", "drop"))
        if not isinstance(self.rotate_pitch_class, bool):
            raise ParameterError(expected("rotate_pitch_class", "True or False", self.rotate_pitch_class))
        if self.d4_divisor is not None:
            check_choice("d4_divisor", self.d4_divisor, ("changes", "notes"))
        check_choice("boundary", self.boundary, ("clip", "onset"))

    @property
    def divisor(self) -> str:
        """The D-4 divisor in effect."""
        if self.d4_divisor is not None:
            return self.d4_divisor
        return "changes" if self.form == "paper" else "notes"

    @classmethod
    def from_kwargs(cls, params: Mapping[str, Any]) -> SymbolicParams:
        """Build from keyword arguments; unknown names raise :class:`ParameterError`."""
        if isinstance(params, SymbolicParams):
            return params
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(params) - known)
        if unknown:
            raise ParameterError(expected("params", "keywords among " + ", ".join(sorted(known)), unknown))
        return cls(**dict(params))

    def to_dict(self) -> dict[str, Any]:
        """JSON-able parameters (recorded in the feature store)."""
        out = asdict(self)
        out["d4_divisor"] = self.divisor
        return out


def feature_dims(form: str = "paper") -> dict[str, int]:
    """Width of each feature in ``form`` (the registry's dims are the paper form's)."""
    check_choice("form", form, FORMS)
    dims = {s.name: int(s.dim or 1) for s in registry_features("symbolic")}
    if form == "jsymbolic":
        dims["melodic_interval"] = 128
        dims["rhythmic_value"] = 12
    return dims


# --------------------------------------------------------------------------- notes input


def as_notes(notes: Any) -> NoteArray:
    """Coerce ``notes`` to a :class:`~aria.features.midi.NoteArray`.

    Accepted: a ``NoteArray``; a :class:`~aria.features.midi.MidiScore`; a path to a MIDI file;
    a mapping or pandas DataFrame with columns ``start``, ``end``, ``pitch`` (seconds) and
    optionally ``velocity``, ``loudness``, ``channel``, ``track``, ``is_drum``, ``start_tick``,
    ``end_tick``; a NumPy structured array with such fields; a 2-D array ``(n, 3|4)`` with
    columns ``start, end, pitch[, velocity]``; a sequence of objects with attributes ``start``,
    ``end``, ``pitch``, ``velocity`` (e.g. ``pretty_midi.Note``); an empty sequence.
    """
    if isinstance(notes, NoteArray):
        return notes
    if isinstance(notes, MidiScore):
        return notes.notes()
    if isinstance(notes, (str, os.PathLike)):
        return read_midi(notes).notes()
    if isinstance(notes, Mapping):
        return notes_from_mapping(notes)
    if hasattr(notes, "columns") and hasattr(notes, "to_numpy"):  # pandas DataFrame
        return notes_from_mapping({str(c): notes[c].to_numpy() for c in notes.columns})
    if isinstance(notes, np.ndarray):
        if notes.dtype.names:
            return notes_from_mapping({k: notes[k] for k in notes.dtype.names})
        if notes.ndim == 2 and notes.shape[1] in (3, 4):
            cols = dict(zip(("start", "end", "pitch", "velocity"), notes.T, strict=False))
            return notes_from_mapping(cols)
        if notes.size == 0:
            return notes_from_mapping({"start": [], "end": [], "pitch": []})
        raise ParameterError(expected("notes", "an (n, 3|4) array of start, end, pitch[, velocity]", f"shape {notes.shape}"))
    if isinstance(notes, Sequence):
        if len(notes) == 0:
            return notes_from_mapping({"start": [], "end": [], "pitch": []})
        try:
            return NoteArray.from_arrays(
                start=[n.start for n in notes],
                end=[n.end for n in notes],
                pitch=[n.pitch for n in notes],
                velocity=[getattr(n, "velocity", 64) for n in notes],
            )
        except AttributeError:
            raise ParameterError(expected("notes", "objects with start, end, pitch attributes", type(notes[0]).__name__)) from None
    raise ParameterError(expected("notes", "a NoteArray, mapping, DataFrame, array or list of notes", type(notes).__name__))


def _seconds_to_ticks(notes: NoteArray, seconds: np.ndarray) -> np.ndarray:
    """Real-valued ticks of ``seconds`` in the tick space of ``notes`` (which must have ticks).

    Uses the notes' tempo map (MIDI files); notes with ticks but no tempo map are taken at the
    MIDI default tempo (120 bpm).
    """
    tpq = float(notes.ticks_per_quarter or 1)
    if notes.tempo_ticks is not None and notes.tempo_mpq is not None:
        tt = notes.tempo_ticks.astype(np.float64)
        mpq = notes.tempo_mpq.astype(np.float64)
    else:
        tt, mpq = np.zeros(1), np.full(1, float(DEFAULT_TEMPO))
    ts = np.concatenate([[0.0], np.cumsum(np.diff(tt) * mpq[:-1])]) / (1e6 * tpq)
    sec = np.asarray(seconds, dtype=np.float64)
    j = np.clip(np.searchsorted(ts, sec, side="right") - 1, 0, None)
    return tt[j] + (sec - ts[j]) * 1e6 * tpq / mpq[j]


def _has_ticks(notes: NoteArray) -> bool:
    return notes.start_tick is not None and notes.end_tick is not None and bool(notes.ticks_per_quarter)


def _window_ticks(notes: NoteArray, t0: np.ndarray, t1: np.ndarray) -> np.ndarray:
    """Integer tick bounds ``[w0, w1)`` of second windows: the ticks whose time lies inside."""
    w0 = np.ceil(_seconds_to_ticks(notes, t0) - _EPS_TICK)
    w1 = np.ceil(_seconds_to_ticks(notes, t1) - _EPS_TICK)
    return np.stack([w0, w1], axis=-1).astype(np.int64).reshape(-1, 2)


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
        if _has_ticks(nt):
            seg_tpq[segs] = int(nt.ticks_per_quarter)  # type: ignore[arg-type]
            win_ticks[segs] = _window_ticks(nt, starts[segs], ends[segs])
    for _src, idx, own, _t0, _t1 in windows:
        nt = sources[_src]
        for k in _FIELDS:
            cols[k].append(getattr(nt, k)[idx])
        if _has_ticks(nt):
            cols["quarters"].append((nt.end_tick[idx] - nt.start_tick[idx]) / float(nt.ticks_per_quarter))  # type: ignore[index, arg-type]
            cols["ticks"].append(np.stack([nt.start_tick[idx], nt.end_tick[idx]], axis=1))  # type: ignore[index]
        else:
            cols["quarters"].append(np.full(idx.size, np.nan))
            cols["ticks"].append(np.zeros((idx.size, 2), dtype=np.int64))
        onset.append(own)
        srcidx.append(idx)
        sizes.append(idx.size)

    def cat(k: str, dtype: Any, shape: tuple[int, ...] = ()) -> np.ndarray:
        return np.concatenate(cols[k]).astype(dtype, copy=False) if cols[k] else np.zeros((0, *shape), dtype=dtype)

    notes = NoteArray(
        start=cat("start", np.float64), end=cat("end", np.float64), pitch=cat("pitch", np.int64),
        velocity=cat("velocity", np.int64), loudness=cat("loudness", np.int64), channel=cat("channel", np.int64),
        track=cat("track", np.int64), is_drum=cat("is_drum", bool),
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
    plain = n > 0 and all(isinstance(x, np.ndarray) and x.dtype.names is None and x.ndim == 2 and x.shape[1] in (3, 4) for x in segments)
    if plain and len({x.shape[1] for x in segments}) == 1:
        # fast path for decoded segments given as (n, 3|4) arrays: validate once
        whole = as_notes(np.concatenate(segments))
        sizes = np.array([x.shape[0] for x in segments], dtype=np.int64)
        bounds = np.concatenate([[0], np.cumsum(sizes)])
        if durations is None:
            last = np.array([whole.end[a:b].max() if b > a else 0.0 for a, b in itertools.pairwise(bounds)])
            dur = np.maximum(last - start, 0.0)
        windows = [(0, np.arange(bounds[i], bounds[i + 1]), np.ones(int(sizes[i]), bool), float(start[i]), float(start[i] + dur[i])) for i in range(n)]
        batch = _assemble([whole], windows)
        return replace(batch, source_index=batch.source_index - np.repeat(bounds[:-1], sizes))
    notes = [as_notes(x) for x in segments]
    if durations is None:
        dur = np.array([_default_duration(x, s) for x, s in zip(notes, start, strict=True)], dtype=np.float64)
    windows = [(i, np.arange(len(x)), np.ones(len(x), bool), float(start[i]), float(start[i] + dur[i])) for i, x in enumerate(notes)]
    return _assemble(notes, windows)


def _default_duration(notes: NoteArray, start: float) -> float:
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
    boundary : {"clip", "onset"}
        How notes crossing a window boundary are seen (module docstring).

    Returns
    -------
    NoteBatch
    """
    notes = as_notes(notes)
    windows = _windows(notes, 0, seconds=seconds, hop=hop, n_notes=n_notes, bounds=bounds, boundary=boundary)
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

    Returns
    -------
    batch : NoteBatch
    piece : np.ndarray [shape=(n_segments,), int64]
        Index of the piece each segment comes from.
    """
    notes = [as_notes(x) for x in pieces]
    windows: list[tuple[int, np.ndarray, np.ndarray, float, float]] = []
    for k, nt in enumerate(notes):
        windows.extend(_windows(nt, k, seconds=seconds, hop=hop, n_notes=n_notes, bounds=None, boundary=boundary))
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
        raise ParameterError(expected("seconds/n_notes/bounds", "exactly one of them", f"{sum(given)} given"))
    length = _default_duration(notes, 0.0)
    order = np.lexsort((np.arange(len(notes)), notes.start))
    blocks: list[np.ndarray] | None = None
    if seconds is not None:
        seconds = check_float("seconds", seconds, min_value=0.0, min_inclusive=False)
        hop = seconds if hop is None else check_float("hop", hop, min_value=0.0, min_inclusive=False)
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
            [starts_sorted[f + n_notes] if f + n_notes < n else max(length, t0[i]) for i, f in enumerate(firsts)],
            dtype=np.float64,
        )
    else:
        b = np.asarray(bounds, dtype=np.float64)
        if b.ndim != 2 or b.shape[1] != 2 or b.shape[0] == 0 or not np.all(np.isfinite(b)) or np.any(b[:, 1] < b[:, 0]):
            raise ParameterError(expected("bounds", "an (n, 2) array of [start, end) windows with end >= start", f"shape {b.shape}"))
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


# --------------------------------------------------------------------------- grid kernel

_SWEEP: Callable[..., Any] | None = None


def _sweep_py(offsets: np.ndarray, a: np.ndarray, b: np.ndarray, pitch: np.ndarray, strength: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sweep line over note boundaries, per segment (compiled with numba).

    Between consecutive boundaries the set of sounding notes is constant, so each elementary
    interval of ``L`` units adds ``L`` times its per-unit contribution. Returns the 128-bin
    vertical-interval histogram (unwrapped; bin 0 = unisons) and the polyphony moments
    ``(n sounding units, sum k, sum k^2)`` of every segment, in exact integers.
    """
    n_seg = offsets.shape[0] - 1
    hist = np.zeros((n_seg, 128), dtype=np.int64)
    mom = np.zeros((n_seg, 3), dtype=np.int64)
    count = np.zeros(128, dtype=np.int64)
    stren = np.zeros(128, dtype=np.int64)
    active = np.zeros(128, dtype=np.int64)
    for s in range(n_seg):
        lo = offsets[s]
        m = offsets[s + 1] - lo
        if m == 0:
            continue
        times = np.empty(2 * m, dtype=np.int64)
        for i in range(m):
            times[2 * i] = a[lo + i]
            times[2 * i + 1] = b[lo + i]
        order = np.argsort(times, kind="mergesort")
        k = 0
        prev = times[order[0]]
        while k < 2 * m:
            t = times[order[k]]
            length = t - prev
            if length > 0:
                nact = 0
                for p in range(128):
                    if count[p] > 0:
                        active[nact] = p
                        nact += 1
                if nact > 0:
                    mom[s, 0] += length
                    mom[s, 1] += length * nact
                    mom[s, 2] += length * nact * nact
                    for i in range(nact):
                        p = active[i]
                        sp = stren[p]
                        if count[p] >= 2:
                            hist[s, 0] += length * sp
                        for j in range(i + 1, nact):
                            q = active[j]
                            hist[s, q - p] += length * (sp + stren[q])
            while k < 2 * m and times[order[k]] == t:
                e = order[k]
                note = lo + e // 2
                if e % 2 == 0:
                    count[pitch[note]] += 1
                    stren[pitch[note]] += strength[note]
                else:
                    count[pitch[note]] -= 1
                    stren[pitch[note]] -= strength[note]
                k += 1
            prev = t
    return hist, mom


def _sweep(offsets: np.ndarray, a: np.ndarray, b: np.ndarray, pitch: np.ndarray, strength: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    global _SWEEP
    if _SWEEP is None:
        try:
            import numba

            _SWEEP = numba.njit(cache=True, nogil=True)(_sweep_py)
        except Exception:  # pragma: no cover - numba is a core dependency
            _SWEEP = _sweep_py
    args = [np.ascontiguousarray(x, dtype=np.int64) for x in (offsets, a, b, pitch, strength)]
    return _SWEEP(*args)


# --------------------------------------------------------------------------- batch features


def _grid_units(batch: NoteBatch, p: SymbolicParams, seg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-note sounding range ``[a, b)`` in grid units relative to the window (0 ≤ a ≤ b ≤ n)."""
    notes = batch.notes
    if p.form == "paper":
        t0 = batch.start[seg]
        n_units = np.ceil(batch.duration * p.fps - 1e-9).astype(np.int64)[seg]
        a = np.floor((notes.start - t0) * p.fps + 0.5).astype(np.int64)
        b = np.floor((notes.end - t0) * p.fps + 0.5).astype(np.int64)
        b = np.where(notes.end > notes.start, np.maximum(b, a + 1), a)
        lo, hi = 0, n_units
        return np.clip(a, lo, hi), np.clip(b, lo, hi)
    st, et, w0, w1, _tpq = _batch_ticks(batch, p, seg)
    return np.clip(st, w0, w1) - w0, np.clip(et, w0, w1) - w0


def _batch_ticks(batch: NoteBatch, p: SymbolicParams, seg: np.ndarray) -> tuple[np.ndarray, ...]:
    """2.2 form: per-note (start tick, end tick, window start, window end, tpq).

    Segments from sources without ticks get ``round(seconds · tpq · qpm / 60)`` with the
    ``tpq``/``qpm`` parameters; their window is ``ceil`` of its bounds on the same scale.
    """
    notes = batch.notes
    rate = p.tpq * p.qpm / 60.0
    has = batch.seg_tpq[seg] > 0
    st = np.where(has, batch.ticks[:, 0], np.floor(notes.start * rate + 0.5).astype(np.int64))
    et = np.where(has, batch.ticks[:, 1], np.floor(notes.end * rate + 0.5).astype(np.int64))
    synth = np.ceil(np.stack([batch.start, batch.start + batch.duration], axis=1) * rate - _EPS_TICK).astype(np.int64)
    win = np.where((batch.seg_tpq > 0)[:, None], batch.window_ticks, synth)
    tpq = np.where(batch.seg_tpq > 0, batch.seg_tpq, p.tpq)
    return st, et, win[seg, 0], win[seg, 1], tpq[seg]


def _normalise_rows(h: np.ndarray) -> np.ndarray:
    h = h.astype(np.float64)
    tot = h.sum(axis=1, keepdims=True)
    return np.divide(h, tot, out=np.zeros_like(h), where=tot > 0)


def _rhythm_bins(batch: NoteBatch, p: SymbolicParams, idx: np.ndarray, seg: np.ndarray) -> np.ndarray:
    """Rhythmic-value bin (0..10 paper, 0..11 2.2) of notes ``idx``."""
    notes = batch.notes
    if p.form == "paper":
        q = batch.quarters[idx]
        dur = np.where(np.isnan(q), (notes.end[idx] - notes.start[idx]) * p.qpm / 60.0, q)
        return np.searchsorted(_RHYTHM_LOWER[:10], dur, side="right")
    st, et, _w0, _w1, tpq = _batch_ticks(batch, p, seg)
    d, tq = (et - st)[idx], tpq[idx]
    out = np.zeros(idx.size, dtype=np.int64)
    for t in np.unique(tq):
        sel = tq == t
        out[sel] = np.searchsorted(_tick_bounds(int(t)), d[sel], side="right")
    return out


def _tick_bounds(tpq: int) -> np.ndarray:
    """jSymbolic 2.2's lower bounds (bins 1..11) in integer ticks: c[i-1] + (c[i] - c[i-1]) // 2."""
    c = np.array([tpq // 8, tpq // 4, tpq // 2, tpq * 3 // 4, tpq, tpq * 3 // 2, tpq * 2, tpq * 3, tpq * 4, tpq * 6, tpq * 8, tpq * 12], dtype=np.int64)
    return c[:-1] + (c[1:] - c[:-1]) // 2


def batch_features(batch: NoteBatch, **params: Any) -> dict[str, np.ndarray]:
    r"""The 12 features of every segment of ``batch`` (the fast, vectorised path).

    Parameters
    ----------
    batch : NoteBatch
        From :func:`segment_notes` or :func:`make_batch`.
    **params
        :class:`SymbolicParams` fields (``form``, ``fps``, ``qpm``, ``tpq``, ...).

    Returns
    -------
    dict of str to np.ndarray [shape=(n_segments, dim), float64]
        Keyed by the registry's feature names, dims from :func:`feature_dims`.
    """
    p = SymbolicParams.from_kwargs(params)
    notes = batch.notes
    n_seg = batch.n_segments
    seg = batch.segment_ids()
    paper = p.form == "paper"
    idx_all = np.arange(len(notes))
    own = batch.onset
    pitched = ~notes.is_drum
    out: dict[str, np.ndarray] = {}

    # ---- melody: melodic intervals between consecutive onsets of one voice
    oi = idx_all[own & pitched]
    onset_key = notes.start if paper else _batch_ticks(batch, p, seg)[0]
    srt = oi[np.lexsort((oi, onset_key[oi], notes.channel[oi], notes.track[oi], seg[oi]))]
    okey = onset_key[srt]
    same_voice = (seg[srt][1:] == seg[srt][:-1]) & (notes.track[srt][1:] == notes.track[srt][:-1]) & (notes.channel[srt][1:] == notes.channel[srt][:-1])
    counted = same_voice & (okey[1:] != okey[:-1])
    interval = (notes.pitch[srt][1:] - notes.pitch[srt][:-1])[counted]
    iseg = seg[srt][1:][counted]
    if paper:
        if p.interval_overflow == "drop":
            keep = np.abs(interval) <= 12
            interval, iseg = interval[keep], iseg[keep]
        ibin = np.clip(interval, -12, 12) + 12
        width = 25
    else:
        ibin, width = np.abs(interval), 128
    out["melodic_interval"] = _normalise_rows(np.bincount(iseg * width + ibin, minlength=n_seg * width).reshape(n_seg, width))

    # ---- harmony: pitch classes (rotated), vertical intervals on the grid
    pc = np.bincount(seg[oi] * 12 + notes.pitch[oi] % 12, minlength=n_seg * 12).reshape(n_seg, 12)
    pch = _normalise_rows(pc)
    if p.rotate_pitch_class:
        first = np.argmax(pch, axis=1)
        pch = np.take_along_axis(pch, (first[:, None] + np.arange(12)) % 12, axis=1)
    out["pitch_class"] = pch

    a, b = _grid_units(batch, p, seg)
    gi = idx_all[pitched & (b > a) & (own | (p.boundary == "clip"))]
    g_off = np.concatenate([[0], np.cumsum(np.bincount(seg[gi], minlength=n_seg))])
    hist, mom = _sweep(g_off, a[gi], b[gi], notes.pitch[gi], notes.velocity[gi])
    wrapped = hist[:, :12].copy()
    for k in range(12, 128, 12):
        wrapped[:, : min(12, 128 - k)] += hist[:, k : k + 12]
    out["vertical_interval"] = _normalise_rows(wrapped)

    # ---- rhythm
    ri = idx_all[own]
    n_on = np.bincount(seg[ri], minlength=n_seg).astype(np.float64)
    dur = batch.duration
    out["note_density"] = np.divide(n_on, dur, out=np.zeros(n_seg), where=dur >= 1.0)[:, None]
    width = 11 if paper else 12
    rbin = _rhythm_bins(batch, p, ri, seg)
    rh = np.bincount(seg[ri] * width + rbin, minlength=n_seg * width).reshape(n_seg, width)
    total = rh.sum(axis=1)
    mean_rv = (rh * RHYTHMIC_VALUES[:width]).sum(axis=1)
    out["mean_rhythmic_value"] = np.divide(mean_rv, total, out=np.zeros(n_seg), where=total > 0)[:, None]
    out["rhythmic_value"] = _normalise_rows(rh)

    # ---- dynamics (loudness, drums included)
    loud = notes.loudness[ri].astype(np.float64)
    rs = seg[ri]
    if paper:
        dsrt = ri[np.lexsort((ri, notes.start[ri], notes.channel[ri], seg[ri]))]
    else:
        dsrt = ri[np.lexsort((ri, notes.channel[ri], seg[ri]))]
    same_ch = (seg[dsrt][1:] == seg[dsrt][:-1]) & (notes.channel[dsrt][1:] == notes.channel[dsrt][:-1])
    change = np.abs(np.diff(notes.loudness[dsrt]))[same_ch].astype(np.float64)
    cseg = seg[dsrt][1:][same_ch]
    sum_change = np.bincount(cseg, weights=change, minlength=n_seg)
    if p.divisor == "changes":
        denom = np.bincount(cseg, minlength=n_seg).astype(np.float64)
    else:
        chan_n = np.bincount(seg[ri] * 16 + notes.channel[ri], minlength=n_seg * 16).reshape(n_seg, 16)
        denom = np.where(chan_n > 1, chan_n, 0).sum(axis=1).astype(np.float64)
    out["velocity_change"] = np.divide(sum_change, denom, out=np.zeros(n_seg), where=denom > 0)[:, None]
    s1 = np.bincount(rs, weights=loud, minlength=n_seg)
    mean_l = np.divide(s1, n_on, out=np.zeros(n_seg), where=n_on > 0)
    ss = np.bincount(rs, weights=(loud - mean_l[rs]) ** 2, minlength=n_seg)
    out["velocity_std"] = np.sqrt(np.divide(ss, n_on - 1, out=np.zeros(n_seg), where=n_on > 1))[:, None]
    out["dynamic_range"] = (_group_extreme(rs, loud, n_seg, np.maximum) - _group_extreme(rs, loud, n_seg, np.minimum))[:, None]

    # ---- texture
    n_units, sum_k = mom[:, 0].astype(np.float64), mom[:, 1].astype(np.float64)
    out["mean_polyphony"] = np.divide(sum_k, n_units, out=np.zeros(n_seg), where=n_units > 0)[:, None]
    if mom.size and int(mom[:, [0, 1, 2]].max()) < 2**31:
        num = (mom[:, 0] * mom[:, 2] - mom[:, 1] * mom[:, 1]).astype(np.float64)  # exact in int64
    else:  # huge tick counts: exact Python integers
        num = np.array([float(int(r[0]) * int(r[2]) - int(r[1]) ** 2) for r in mom], dtype=np.float64)
    var = np.divide(num, n_units * (n_units - 1), out=np.zeros(n_seg), where=n_units > 1)
    out["polyphony_std"] = np.sqrt(np.maximum(var, 0.0))[:, None]
    pp = notes.pitch[oi].astype(np.float64)
    out["pitch_range"] = (_group_extreme(seg[oi], pp, n_seg, np.maximum) - _group_extreme(seg[oi], pp, n_seg, np.minimum))[:, None]
    return {name: out[name] for name in FEATURE_NAMES}


def _group_extreme(group: np.ndarray, values: np.ndarray, n: int, ufunc: np.ufunc) -> np.ndarray:
    """Per-group max/min of ``values`` (0 for empty groups)."""
    out = np.zeros(n)
    if values.size == 0:
        return out
    init = -np.inf if ufunc is np.maximum else np.inf
    acc = np.full(n, init)
    ufunc.at(acc, group, values)
    has = np.isfinite(acc)
    out[has] = acc[has]
    return out


# --------------------------------------------------------------------------- public wrappers


def symbolic_features(
    notes: Any, *, start: float = 0.0, duration: float | None = None, **params: Any
) -> dict[str, np.ndarray]:
    """The 12 features of one segment ``[start, start + duration)``.

    Parameters
    ----------
    notes : notes
        Anything :func:`as_notes` accepts, e.g. a decoded model segment as an ``(n, 4)``
        array of ``start, end, pitch, velocity`` (seconds). All notes belong to the segment.
    start : float
        Window start in seconds (default 0).
    duration : float, optional
        Window length in seconds; default: the notes' source length or last note end.
    **params
        :class:`SymbolicParams` fields.

    Returns
    -------
    dict of str to np.ndarray [shape=(dim,), float64]
    """
    batch = make_batch([notes], starts=[start], durations=None if duration is None else [duration])
    return {k: v[0] for k, v in batch_features(batch, **params).items()}


def symbolic_features_batch(
    segments: Sequence[Any], *, starts: Any = None, durations: Any = None, **params: Any
) -> dict[str, np.ndarray]:
    """The 12 features of many segments at once, ``dict[name] -> (n_segments, dim)``.

    ``segments`` is a sequence of note collections (see :func:`make_batch`); this is the path
    to use for a model's decoded segments (thousands per second).
    """
    return batch_features(make_batch(segments, starts=starts, durations=durations), **params)


def extract_file_record(path: str | os.PathLike[str], **params: Any) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Whole-file features plus metadata (``duration`` s, ``n_notes``, ``ticks_per_quarter``, ...).

    Raises
    ------
    FileFormatError
        unreadable MIDI; :class:`DataError` if the file holds no notes.
    """
    p = SymbolicParams.from_kwargs(params)
    score = read_midi(path)
    if score.n_notes == 0:
        raise DataError(f"{str(path)!r}: the MIDI file holds no notes (silent)")
    notes = score.notes()
    feats = symbolic_features(notes, start=0.0, duration=notes.length, **asdict(p))
    meta = {
        "duration": float(notes.length or 0.0),
        "n_notes": len(notes),
        "n_pitched_notes": int((~notes.is_drum).sum()),
        "ticks_per_quarter": score.ticks_per_quarter,
        "n_tracks": score.n_tracks,
    }
    return feats, meta


def extract_file(path: str | os.PathLike[str], **params: Any) -> dict[str, np.ndarray]:
    """Whole-file features of a MIDI file, ``dict[name] -> (dim,)`` (used by ``aria features``)."""
    return extract_file_record(path, **params)[0]


def extract_file_segments(
    path: str | os.PathLike[str],
    *,
    seconds: float | None = None,
    hop: float | None = None,
    n_notes: int | None = None,
    **params: Any,
) -> tuple[dict[str, np.ndarray], list[dict[str, Any]]]:
    """Features of the fixed windows of a MIDI file: ``(dict[name] -> (n_seg, dim), metadata)``.

    ``metadata[i]`` has ``segment``, ``start``, ``end`` (s) and ``n_notes`` of window ``i``.
    """
    p = SymbolicParams.from_kwargs(params)
    score = read_midi(path)
    if score.n_notes == 0:
        raise DataError(f"{str(path)!r}: the MIDI file holds no notes (silent)")
    batch = segment_notes(score.notes(), seconds=seconds, hop=hop, n_notes=n_notes, boundary=p.boundary)
    feats = batch_features(batch, **asdict(p))
    counts = np.bincount(batch.segment_ids()[batch.onset], minlength=batch.n_segments)
    meta = [
        {"segment": i, "start": float(batch.start[i]), "end": float(batch.start[i] + batch.duration[i]), "n_notes": int(counts[i])}
        for i in range(batch.n_segments)
    ]
    return feats, meta


# --------------------------------------------------------------------------- exact reference


def reference_features(
    notes: Any, *, start: float = 0.0, duration: float | None = None, owned: Any = None, **params: Any
) -> dict[str, np.ndarray]:
    """Exact loop reference of one segment (slow; for tests): every rule written out plainly.

    ``owned`` (bool per note, default all True) marks the notes that belong to the segment;
    the others only sound in it (``boundary="clip"``). Grid features are computed frame by
    frame (tick by tick in the 2.2 form).
    """
    p = SymbolicParams.from_kwargs(params)
    nt = as_notes(notes)
    n = len(nt)
    dur = _default_duration(nt, start) if duration is None else float(duration)
    own = [True] * n if owned is None else [bool(x) for x in np.asarray(owned).reshape(-1)]
    paper = p.form == "paper"
    if _has_ticks(nt):
        st, et, tpq = nt.start_tick, nt.end_tick, int(nt.ticks_per_quarter)  # type: ignore[arg-type]
        w0, w1 = (int(x) for x in _window_ticks(nt, np.array([start]), np.array([start + dur]))[0])
    else:  # seconds only: ticks at the tpq/qpm parameters
        rate = p.tpq * p.qpm / 60.0
        st = np.array([math.floor(float(x) * rate + 0.5) for x in nt.start], dtype=np.int64)
        et = np.array([math.floor(float(x) * rate + 0.5) for x in nt.end], dtype=np.int64)
        tpq = p.tpq
        w0, w1 = math.ceil(start * rate - _EPS_TICK), math.ceil((start + dur) * rate - _EPS_TICK)
    onset_time = [float(nt.start[i]) if paper else int(st[i]) for i in range(n)]  # type: ignore[index]
    mine = [i for i in range(n) if own[i]]
    pitched = [i for i in mine if not nt.is_drum[i]]
    out: dict[str, np.ndarray] = {}

    def normalise(h: list[float]) -> np.ndarray:
        tot = sum(h)
        return np.array([x / tot if tot > 0 else 0.0 for x in h])

    # melodic intervals: per voice, onsets in order (ties: input order)
    width = 25 if paper else 128
    mh = [0.0] * width
    voices: dict[tuple[int, int], list[int]] = {}
    for i in sorted(pitched, key=lambda i: (onset_time[i], i)):
        voices.setdefault((int(nt.track[i]), int(nt.channel[i])), []).append(i)
    for seq in voices.values():
        prev = None
        for i in seq:
            if prev is not None and onset_time[i] != onset_time[prev]:
                step = int(nt.pitch[i]) - int(nt.pitch[prev])
                if paper:
                    if abs(step) > 12 and p.interval_overflow == "drop":
                        pass
                    else:
                        mh[max(-12, min(12, step)) + 12] += 1
                else:
                    mh[abs(step)] += 1
            prev = i
    out["melodic_interval"] = normalise(mh)

    pc = [0.0] * 12
    for i in pitched:
        pc[int(nt.pitch[i]) % 12] += 1
    pcn = normalise(pc)
    if p.rotate_pitch_class:
        top = max(range(12), key=lambda k: (pcn[k], -k))
        pcn = np.array([pcn[(top + k) % 12] for k in range(12)])
    out["pitch_class"] = pcn

    # grid: list the sounding notes unit by unit
    if paper:
        n_units = math.ceil(dur * p.fps - 1e-9)
        spans = []
        for i in range(n):
            a = math.floor((float(nt.start[i]) - start) * p.fps + 0.5)
            b = math.floor((float(nt.end[i]) - start) * p.fps + 0.5)
            b = max(b, a + 1) if nt.end[i] > nt.start[i] else a
            spans.append((min(max(a, 0), n_units), min(max(b, 0), n_units)))
        lo_unit = 0
    else:
        spans = [(min(max(int(st[i]), w0), w1), min(max(int(et[i]), w0), w1)) for i in range(n)]  # type: ignore[index]
        lo_unit, n_units = w0, w1 - w0
    grid_notes = [i for i in range(n) if not nt.is_drum[i] and (own[i] or p.boundary == "clip")]
    vh = [0.0] * 12
    counts: list[int] = []
    for u in range(lo_unit, lo_unit + n_units):
        strength: dict[int, int] = {}
        number: dict[int, int] = {}
        for i in grid_notes:
            a, b = spans[i]
            if a <= u < b:
                q = int(nt.pitch[i])
                strength[q] = strength.get(q, 0) + int(nt.velocity[i])
                number[q] = number.get(q, 0) + 1
        ps = sorted(strength)
        if ps:
            counts.append(len(ps))
        for x, q1 in enumerate(ps):
            if number[q1] >= 2:
                vh[0] += strength[q1]
            for q2 in ps[x + 1 :]:
                vh[(q2 - q1) % 12] += strength[q1] + strength[q2]
    out["vertical_interval"] = normalise(vh)

    out["note_density"] = np.array([len(mine) / dur if dur >= 1.0 else 0.0])
    width = 11 if paper else 12
    rh = [0.0] * width
    values = []
    for i in mine:
        if paper:
            dq = nt.duration_quarters
            d = float(dq[i]) if dq is not None else (float(nt.end[i]) - float(nt.start[i])) * p.qpm / 60.0
            bounds: list[float] = [float(x) for x in _RHYTHM_LOWER[:10]]
        else:
            d = int(et[i]) - int(st[i])  # type: ignore[index]
            bounds = [int(x) for x in _tick_bounds(tpq)]
        k = 0
        while k < len(bounds) and d >= bounds[k]:
            k += 1
        rh[k] += 1
        values.append(float(RHYTHMIC_VALUES[k]))
    out["mean_rhythmic_value"] = np.array([sum(values) / len(values) if values else 0.0])
    out["rhythmic_value"] = normalise(rh)

    by_channel: dict[int, list[int]] = {}
    key = (lambda i: (float(nt.start[i]), i)) if paper else (lambda i: i)
    for i in sorted(mine, key=key):
        by_channel.setdefault(int(nt.channel[i]), []).append(int(nt.loudness[i]))
    changes = [abs(v[j] - v[j - 1]) for v in by_channel.values() for j in range(1, len(v))]
    if p.divisor == "changes":
        denom = len(changes)
    else:
        denom = sum(len(v) for v in by_channel.values() if len(v) > 1)
    out["velocity_change"] = np.array([sum(changes) / denom if denom else 0.0])
    louds = [float(nt.loudness[i]) for i in mine]
    if len(louds) > 1:
        m = sum(louds) / len(louds)
        out["velocity_std"] = np.array([math.sqrt(sum((x - m) ** 2 for x in louds) / (len(louds) - 1))])
    else:
        out["velocity_std"] = np.array([0.0])
    out["dynamic_range"] = np.array([max(louds) - min(louds) if louds else 0.0])
    if counts:
        m = sum(counts) / len(counts)
        sd = math.sqrt(sum((c - m) ** 2 for c in counts) / (len(counts) - 1)) if len(counts) > 1 else 0.0
    else:
        m, sd = 0.0, 0.0
    out["mean_polyphony"] = np.array([m])
    out["polyphony_std"] = np.array([sd])
    ps_ = [int(nt.pitch[i]) for i in pitched]
    out["pitch_range"] = np.array([float(max(ps_) - min(ps_)) if ps_ else 0.0])
    return {name: out[name] for name in FEATURE_NAMES}


_ = DRUM_CHANNEL  # re-exported convention: channel 10 (index 9) is drums
