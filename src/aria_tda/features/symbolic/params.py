"""Symbolic feature parameters and note input (:mod:`aria_tda.features.symbolic`)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

from aria_tda._checks import check_choice, check_float, check_int
from aria_tda.errors import ParameterError, expected
from aria_tda.features.midi import (
    DEFAULT_TEMPO,
    MidiScore,
    NoteArray,
    notes_from_mapping,
    read_midi,
)
from aria_tda.features.registry import features as registry_features

FORMS = ("paper", "jsymbolic")
#: every symbolic feature the extractors compute: the registry's "extended" set (the paper's 12,
#: then the pattern features); ``registry.features("symbolic", feature_set="paper")`` has the 12
FEATURE_NAMES: tuple[str, ...] = tuple(
    s.name for s in registry_features("symbolic", feature_set="extended")
)
#: rhythmic values in quarter notes: 32nd, 16th, 8th, dotted 8th, quarter, dotted quarter, half,
#: dotted half, whole, dotted whole, double whole, dotted double whole
RHYTHMIC_VALUES = np.array(
    [1 / 8, 1 / 4, 1 / 2, 3 / 4, 1, 3 / 2, 2, 3, 4, 6, 8, 12], dtype=np.float64
)
#: lower bounds of the rhythmic-value bins 1..11 (midpoints of consecutive values, quarter notes):
#: .1875 .375 ... 7 10
RHYTHM_LOWER = (RHYTHMIC_VALUES[:-1] + RHYTHMIC_VALUES[1:]) / 2
#: slack (ticks) when a time in seconds is converted to a tick bound, against rounding
EPS_TICK = 1e-6


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
            raise ParameterError(
                expected("rotate_pitch_class", "True or False", self.rotate_pitch_class)
            )
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
        """Build from keyword arguments; unknown names raise :class:`ParameterError`.

        Parameters
        ----------
        params : mapping
            Field values (or a SymbolicParams, returned as is).
        """
        if isinstance(params, SymbolicParams):
            return params
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(params) - known)
        if unknown:
            raise ParameterError(
                expected("params", "keywords among " + ", ".join(sorted(known)), unknown)
            )
        return cls(**dict(params))

    def to_dict(self) -> dict[str, Any]:
        """JSON-able parameters (recorded in the feature store)."""
        out = asdict(self)
        out["d4_divisor"] = self.divisor
        return out


def feature_dims(form: str = "paper") -> dict[str, int]:
    """Width of each extracted feature (:data:`FEATURE_NAMES`) in ``form``.

    The registry's dims are the paper form's; the 2.2 form widens ``melodic_interval`` (128)
    and ``rhythmic_value`` (12). The pattern features have the same width in both forms.

    Parameters
    ----------
    form : {"paper", "jsymbolic"}
        Which form's widths.
    """
    check_choice("form", form, FORMS)
    dims = {s.name: int(s.dim or 1) for s in registry_features("symbolic", feature_set="extended")}
    if form == "jsymbolic":
        dims["melodic_interval"] = 128
        dims["rhythmic_value"] = 12
    return dims


# --------------------------------------------------------------------------- notes input


def as_notes(notes: Any) -> NoteArray:
    """Coerce ``notes`` to a :class:`~aria_tda.features.midi.NoteArray`.

    Accepted: a ``NoteArray``; a :class:`~aria_tda.features.midi.MidiScore`; a path to a MIDI file;
    a mapping or pandas DataFrame with columns ``start``, ``end``, ``pitch`` (seconds) and
    optionally ``velocity``, ``loudness``, ``channel``, ``track``, ``is_drum``, ``start_tick``,
    ``end_tick``; a NumPy structured array with such fields; a 2-D array ``(n, 3|4)`` with
    columns ``start, end, pitch[, velocity]``; a sequence of objects with attributes ``start``,
    ``end``, ``pitch``, ``velocity`` (e.g. ``pretty_midi.Note``); an empty sequence.

    Parameters
    ----------
    notes : notes
        Any of the accepted forms above.
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
        raise ParameterError(
            expected(
                "notes",
                "an (n, 3|4) array of start, end, pitch[, velocity]",
                f"shape {notes.shape}",
            )
        )
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
            raise ParameterError(
                expected(
                    "notes", "objects with start, end, pitch attributes", type(notes[0]).__name__
                )
            ) from None
    raise ParameterError(
        expected(
            "notes", "a NoteArray, mapping, DataFrame, array or list of notes", type(notes).__name__
        )
    )


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


def has_ticks(notes: NoteArray) -> bool:
    """True when ``notes`` carry MIDI ticks (start and end ticks and a tick resolution).

    Parameters
    ----------
    notes : NoteArray
        The notes.

    Returns
    -------
    bool
    """
    return (
        notes.start_tick is not None
        and notes.end_tick is not None
        and bool(notes.ticks_per_quarter)
    )


def window_tick_bounds(notes: NoteArray, t0: np.ndarray, t1: np.ndarray) -> np.ndarray:
    """Integer tick bounds ``[w0, w1)`` of second windows: the ticks whose time lies inside.

    Parameters
    ----------
    notes : NoteArray
        Notes with ticks (:func:`has_ticks`); their tempo map converts seconds to ticks.
    t0, t1 : numpy.ndarray
        Window starts and ends, in seconds.

    Returns
    -------
    numpy.ndarray
        Shape ``(n, 2)``, int64.
    """
    w0 = np.ceil(_seconds_to_ticks(notes, t0) - EPS_TICK)
    w1 = np.ceil(_seconds_to_ticks(notes, t1) - EPS_TICK)
    return np.stack([w0, w1], axis=-1).astype(np.int64).reshape(-1, 2)
