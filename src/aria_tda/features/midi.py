r"""MIDI files → note arrays, with exact channel handling (mido).

This module turns a Standard MIDI File into flat NumPy arrays that the symbolic evidence
channels (:mod:`aria_tda.features.symbolic`) and the jSymbolic-2.2-compatible mode
(:mod:`aria_tda.features.jsymbolic`) compute on.

Conventions
-----------
- **Events.** Tracks are read with ``mido`` in file order; absolute ticks are the running sum
  of delta times. The *processing order* of an event is ``(track index, index in track)`` —
  the order in which jSymbolic 2.2 walks a ``javax.sound.midi.Sequence``.
- **Notes.** A note starts at a Note On with velocity > 0. It ends at the first later Note Off
  (``0x80``, any velocity) or Note On with velocity 0 *in the same track, on the same channel,
  with the same pitch* — jSymbolic 2.2's pairing rule ("close-all": one Note Off ends every
  open note of that key, so two overlapping Note Ons of one key both end at the first Note
  Off). A note never switched off ends at its track's last tick and is flagged
  ``closed == False``.
- **Drums.** MIDI channel 10 (``channel == 9`` zero-based) is unpitched percussion.
- **Loudness.** ``loudness = int(velocity * (cc7 / 127))`` where ``cc7`` is the channel volume
  (controller 7) in force at the note's onset tick (127 when none was sent). "In force" follows
  jSymbolic 2.2: each CC7 message sets the volume of its channel from its tick to the end of
  the piece, messages applied in processing order, so the value at tick ``t`` comes from the
  *last-processed* CC7 message of that channel with tick ``<= t`` (a CC7 on the onset tick
  counts, whichever comes first in the file).
- **Time.** Seconds use the merged tempo map of all tracks (Set Tempo meta messages sorted by
  tick, ties in processing order; 500,000 µs per quarter — 120 bpm — until the first one).
  Quarter notes are ``ticks / ticks_per_quarter`` (tempo-independent).
- **Length.** The sequence length is the largest track end tick (the End of Track message);
  :attr:`MidiScore.length_seconds` is that tick in seconds.

SMPTE time division is not supported (:class:`~aria_tda.errors.FileFormatError`).

Examples
--------
>>> score = read_midi("bwv66.6.mid")            # doctest: +SKIP
>>> notes = score.notes()                       # doctest: +SKIP
>>> notes.pitch[:4], notes.start[:4]            # doctest: +SKIP
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda._paths import input_path
from aria_tda.errors import DataError, FileFormatError, ParameterError, expected

__all__ = [
    "DEFAULT_TEMPO",
    "DRUM_CHANNEL",
    "MidiScore",
    "NoteArray",
    "notes_from_mapping",
    "read_midi",
]

DRUM_CHANNEL = 9  # MIDI channel 10, zero-based
DEFAULT_TEMPO = 500_000  # µs per quarter note (120 bpm), the MIDI default


@dataclass(frozen=True)
class NoteArray:
    r"""Notes as parallel arrays (one entry per note), in a fixed *order*.

    The order of the arrays is meaningful: notes sharing an onset are processed in this
    order (file order for notes read from MIDI). All arrays have shape ``(n,)``.

    Attributes
    ----------
    start, end : np.ndarray [shape=(n,), float64]
        Onset and offset in seconds, ``end >= start``.
    pitch : np.ndarray [shape=(n,), int64]
        MIDI pitch 0..127.
    velocity : np.ndarray [shape=(n,), int64]
        Note On velocity 1..127.
    loudness : np.ndarray [shape=(n,), int64]
        Velocity scaled by the channel volume (CC7) at the onset, ``int(v * cc7 / 127)``;
        equals ``velocity`` when no CC7 is known. The dynamic features use this.
    channel : np.ndarray [shape=(n,), int64]
        MIDI channel 0..15 (0 when unknown).
    track : np.ndarray [shape=(n,), int64]
        Track index (0 when unknown). A *voice* is a (track, channel) pair.
    is_drum : np.ndarray [shape=(n,), bool]
        Unpitched percussion (channel 10); excluded from pitch-based features.
    start_tick, end_tick : np.ndarray [shape=(n,), int64] or None
        MIDI ticks when the notes come from a file.
    ticks_per_quarter : int or None
        Resolution of the ticks.
    length : float or None
        Length of the source in seconds (e.g. the MIDI file's length), if known.
    tempo_ticks, tempo_mpq : np.ndarray or None
        Tempo map of the source (change ticks from 0, µs per quarter from each), if known;
        used to place second-based windows on the tick grid.
    """

    start: np.ndarray
    end: np.ndarray
    pitch: np.ndarray
    velocity: np.ndarray
    loudness: np.ndarray
    channel: np.ndarray
    track: np.ndarray
    is_drum: np.ndarray
    start_tick: np.ndarray | None = None
    end_tick: np.ndarray | None = None
    ticks_per_quarter: int | None = None
    length: float | None = None
    tempo_ticks: np.ndarray | None = None
    tempo_mpq: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.pitch.shape[0])

    @property
    def duration_quarters(self) -> np.ndarray | None:
        """Note durations in quarter notes from the ticks, or ``None`` without ticks."""
        if self.start_tick is None or self.end_tick is None or not self.ticks_per_quarter:
            return None
        return (self.end_tick - self.start_tick) / float(self.ticks_per_quarter)

    def take(self, index: np.ndarray) -> NoteArray:
        """A new :class:`NoteArray` with the notes ``index`` (boolean mask or integer indices).

        Parameters
        ----------
        index : array-like of int or bool
            Which notes to keep, in that order.
        """
        return NoteArray(
            start=self.start[index],
            end=self.end[index],
            pitch=self.pitch[index],
            velocity=self.velocity[index],
            loudness=self.loudness[index],
            channel=self.channel[index],
            track=self.track[index],
            is_drum=self.is_drum[index],
            start_tick=None if self.start_tick is None else self.start_tick[index],
            end_tick=None if self.end_tick is None else self.end_tick[index],
            ticks_per_quarter=self.ticks_per_quarter,
            length=self.length,
            tempo_ticks=self.tempo_ticks,
            tempo_mpq=self.tempo_mpq,
        )

    @classmethod
    def from_arrays(
        cls,
        *,
        start: Any,
        end: Any,
        pitch: Any,
        velocity: Any = None,
        loudness: Any = None,
        channel: Any = None,
        track: Any = None,
        is_drum: Any = None,
        start_tick: Any = None,
        end_tick: Any = None,
        ticks_per_quarter: int | None = None,
        length: float | None = None,
    ) -> NoteArray:
        """Build and validate a :class:`NoteArray` from array-likes.

        ``velocity`` defaults to 64; ``loudness`` to ``velocity``; ``channel`` and ``track``
        to 0; ``is_drum`` to ``channel == 9``.

        Parameters
        ----------
        start, end : array-like of float
            Onset and offset times in seconds.
        pitch : array-like of int
            MIDI pitches 0..127.
        velocity : array-like of int, optional
            Note-on velocities (default 64).
        loudness : array-like of int, optional
            Velocity scaled by channel volume (default: velocity).
        channel, track : array-like of int, optional
            MIDI channel (0-based) and track (default 0).
        is_drum : array-like of bool, optional
            Percussion notes (default: channel 9).
        start_tick, end_tick : array-like of int, optional
            Onset and offset in ticks.
        ticks_per_quarter : int, optional
            Tick resolution of ``start_tick``/``end_tick``.
        length : float, optional
            Length of the source in seconds.

        Raises
        ------
        DataError
            on mismatched lengths, non-finite times, ``end < start``, pitches outside 0..127
            or velocities outside 0..127.
        """
        s = np.asarray(start, dtype=np.float64).reshape(-1)
        n = s.shape[0]

        def col(name: str, value: Any, default: Any, dtype: Any) -> np.ndarray:
            if value is None:
                return np.full(n, default, dtype=dtype)
            arr = np.asarray(value)
            if arr.shape != (n,):
                raise DataError(
                    expected(name, f"an array of shape ({n},) like 'start'", f"shape {arr.shape}")
                )
            if dtype is not np.float64 and arr.dtype.kind == "f":
                if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
                    raise DataError(expected(name, "integer values", "non-integer values"))
            return arr.astype(dtype, copy=False)

        e = col("end", end, 0.0, np.float64)
        p = col("pitch", pitch, 0, np.int64)
        v = col("velocity", velocity, 64, np.int64)
        loud = col("loudness", loudness, 0, np.int64) if loudness is not None else v.copy()
        ch = col("channel", channel, 0, np.int64)
        tr = col("track", track, 0, np.int64)
        drum = col("is_drum", is_drum, False, bool) if is_drum is not None else ch == DRUM_CHANNEL
        st = None if start_tick is None else col("start_tick", start_tick, 0, np.int64)
        et = None if end_tick is None else col("end_tick", end_tick, 0, np.int64)
        if (st is None) != (et is None):
            raise ParameterError("start_tick and end_tick: expected both or neither")
        if not (np.all(np.isfinite(s)) and np.all(np.isfinite(e))):
            raise DataError(expected("start/end", "finite times in seconds", "NaN or inf"))
        if np.any(e < s):
            i = int(np.flatnonzero(e < s)[0])
            raise DataError(
                expected(
                    "end", "end >= start for every note", f"note {i}: start {s[i]}, end {e[i]}"
                )
            )
        if n and (p.min() < 0 or p.max() > 127):
            raise DataError(
                expected("pitch", "MIDI pitches in 0..127", f"range {p.min()}..{p.max()}")
            )
        if n and (v.min() < 0 or v.max() > 127):
            raise DataError(
                expected("velocity", "velocities in 0..127", f"range {v.min()}..{v.max()}")
            )
        if n and (ch.min() < 0 or ch.max() > 15):
            raise DataError(
                expected("channel", "MIDI channels in 0..15", f"range {ch.min()}..{ch.max()}")
            )
        return cls(s, e, p, v, loud, ch, tr, drum, st, et, ticks_per_quarter, length)


@dataclass(frozen=True)
class MidiScore:
    r"""A parsed MIDI file: notes plus the tempo and volume events that jSymbolic reads.

    Arrays of notes are in *processing order* (ordered by ``(track, index of the Note On in
    its track)``). Create with :func:`read_midi`.

    Attributes
    ----------
    ticks_per_quarter : int
    n_tracks : int
    track_end : np.ndarray [shape=(n_tracks,), int64]
        Tick of each track's last event (its End of Track).
    note_track, note_channel, note_pitch, note_velocity : np.ndarray [shape=(n,), int64]
    note_on, note_off : np.ndarray [shape=(n,), int64]
        Onset and offset ticks (``note_off`` = the track's end tick when never switched off).
    note_closed : np.ndarray [shape=(n,), bool]
        Whether a matching Note Off was found.
    note_event : np.ndarray [shape=(n,), int64]
        Index of the Note On inside its track.
    tempo_tick, tempo_track, tempo_event, tempo_mpq : np.ndarray [shape=(k,), int64]
        Set Tempo messages (µs per quarter) in processing order.
    cc7_tick, cc7_track, cc7_event, cc7_channel, cc7_value : np.ndarray [shape=(c,), int64]
        Channel-volume (controller 7) messages in processing order.
    source : str
        Where it was read from.
    """

    ticks_per_quarter: int
    n_tracks: int
    track_end: np.ndarray
    note_track: np.ndarray
    note_channel: np.ndarray
    note_pitch: np.ndarray
    note_velocity: np.ndarray
    note_on: np.ndarray
    note_off: np.ndarray
    note_closed: np.ndarray
    note_event: np.ndarray
    tempo_tick: np.ndarray
    tempo_track: np.ndarray
    tempo_event: np.ndarray
    tempo_mpq: np.ndarray
    cc7_tick: np.ndarray
    cc7_track: np.ndarray
    cc7_event: np.ndarray
    cc7_channel: np.ndarray
    cc7_value: np.ndarray
    source: str = ""
    _cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def n_notes(self) -> int:
        return int(self.note_pitch.shape[0])

    @property
    def length_ticks(self) -> int:
        """Sequence length in ticks: the largest track end tick (0 for a file without tracks)."""
        return int(self.track_end.max()) if self.track_end.size else 0

    @property
    def length_seconds(self) -> float:
        """Sequence length in seconds (merged tempo map)."""
        return float(self.seconds(np.array([self.length_ticks]))[0])

    def _tempo_map(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(change ticks, µs per quarter from there, seconds at each change tick)."""
        if "tempo" not in self._cache:
            order = np.lexsort((self.tempo_event, self.tempo_track, self.tempo_tick))
            ticks = np.concatenate([[0], self.tempo_tick[order]]).astype(np.int64)
            mpq = np.concatenate([[DEFAULT_TEMPO], self.tempo_mpq[order]]).astype(np.float64)
            # several changes on one tick: the last (in processing order) wins
            keep = np.append(ticks[1:] != ticks[:-1], True)
            ticks, mpq = ticks[keep], mpq[keep]
            secs = np.concatenate([[0.0], np.cumsum(np.diff(ticks) * mpq[:-1])]) / (
                1e6 * self.ticks_per_quarter
            )
            self._cache["tempo"] = (ticks, mpq, secs)
        return self._cache["tempo"]

    def seconds(self, ticks: np.ndarray) -> np.ndarray:
        r"""Convert absolute ticks to seconds with the merged tempo map.

        :math:`t(\tau) = t_j + (\tau - \tau_j)\,\mu_j / (10^6 \cdot \mathrm{tpq})` for the last
        tempo change :math:`\tau_j \le \tau` (µs per quarter :math:`\mu_j`).

        Parameters
        ----------
        ticks : array-like of int
            Absolute ticks.
        """
        change, mpq, secs = self._tempo_map()
        ticks = np.asarray(ticks, dtype=np.int64)
        j = np.searchsorted(change, ticks, side="right") - 1
        return secs[j] + (ticks - change[j]) * mpq[j] / (1e6 * self.ticks_per_quarter)

    def note_volume(self) -> np.ndarray:
        """Channel volume (CC7 value 0..127) in force at each note's onset (see module docs)."""
        out = np.full(self.n_notes, 127, dtype=np.int64)
        if not self.cc7_tick.size or not self.n_notes:
            return out
        for ch in np.unique(self.cc7_channel):
            sel = np.flatnonzero(self.cc7_channel == ch)  # processing order
            by_tick = sel[np.argsort(self.cc7_tick[sel], kind="stable")]
            ticks = self.cc7_tick[by_tick]
            # processing rank of each message; running max over tick order = last-processed
            rank = np.searchsorted(sel, by_tick)
            best = np.maximum.accumulate(rank)
            notes = np.flatnonzero(self.note_channel == ch)
            k = np.searchsorted(ticks, self.note_on[notes], side="right") - 1
            has = k >= 0
            out[notes[has]] = self.cc7_value[sel[best[k[has]]]]
        return out

    def loudness(self) -> np.ndarray:
        """``int(velocity * (cc7 / 127))`` per note, computed in float64 as jSymbolic does."""
        vol = self.note_volume().astype(np.float64) / 127.0
        return (self.note_velocity.astype(np.float64) * vol).astype(np.int64)

    def notes(self) -> NoteArray:
        """All notes as a :class:`NoteArray` (processing order), times from the tempo map."""
        change, mpq, _secs = self._tempo_map()
        return NoteArray(
            start=self.seconds(self.note_on),
            end=self.seconds(self.note_off),
            pitch=self.note_pitch.copy(),
            velocity=self.note_velocity.copy(),
            loudness=self.loudness(),
            channel=self.note_channel.copy(),
            track=self.note_track.copy(),
            is_drum=self.note_channel == DRUM_CHANNEL,
            start_tick=self.note_on.copy(),
            end_tick=self.note_off.copy(),
            ticks_per_quarter=self.ticks_per_quarter,
            length=self.length_seconds,
            tempo_ticks=change.copy(),
            tempo_mpq=mpq.copy(),
        )


def _load_mido(source: Any) -> Any:
    import mido

    if isinstance(source, mido.MidiFile):
        return source
    if not isinstance(source, (str, os.PathLike)):
        raise ParameterError(
            expected("source", "a path to a MIDI file or a mido.MidiFile", type(source).__name__)
        )
    path = Path(source)
    input_path(path, "source", kind="file", missing="no such MIDI file")
    if path.stat().st_size == 0:
        raise FileFormatError(f"source: empty file: {str(path)!r}")
    try:
        return mido.MidiFile(path)
    except (OSError, EOFError, ValueError, KeyError, IndexError, TypeError) as exc:
        raise FileFormatError(
            f"source: not a readable MIDI file: {str(path)!r} ({type(exc).__name__}: {exc})"
        ) from None


def read_midi(source: str | os.PathLike[str] | Any) -> MidiScore:
    """Parse a MIDI file (path or ``mido.MidiFile``) into a :class:`MidiScore`.

    Note pairing, drums, loudness and time follow the module conventions (jSymbolic 2.2's
    rules where it has one).

    Parameters
    ----------
    source : path | mido.MidiFile | bytes
        The MIDI file.

    Raises
    ------
    FileFormatError
        if the file is missing, empty, not MIDI, truncated, or uses SMPTE time division.
    """
    mid = _load_mido(source)
    tpq = int(mid.ticks_per_beat)
    if tpq <= 0 or tpq >= 0x8000:
        raise FileFormatError(expected("ticks_per_quarter", "PPQ time division (1..32767)", tpq))
    notes: dict[str, list[int]] = {
        k: [] for k in ("track", "channel", "pitch", "velocity", "on", "off", "closed", "event")
    }
    tempos: list[tuple[int, int, int, int]] = []
    cc7: list[tuple[int, int, int, int, int]] = []
    track_end: list[int] = []
    for ti, track in enumerate(mid.tracks):
        tick = 0
        open_notes: dict[tuple[int, int], list[int]] = {}
        for ei, msg in enumerate(track):
            tick += int(msg.time)
            kind = msg.type
            if kind == "note_on" and msg.velocity > 0:
                open_notes.setdefault((msg.channel, msg.note), []).append(len(notes["pitch"]))
                notes["track"].append(ti)
                notes["channel"].append(msg.channel)
                notes["pitch"].append(msg.note)
                notes["velocity"].append(msg.velocity)
                notes["on"].append(tick)
                notes["off"].append(-1)
                notes["closed"].append(0)
                notes["event"].append(ei)
            elif kind == "note_off" or kind == "note_on":  # note_on here has velocity 0
                for k in open_notes.pop((msg.channel, msg.note), ()):
                    notes["off"][k] = tick
                    notes["closed"][k] = 1
            elif kind == "control_change" and msg.control == 7:
                cc7.append((tick, ti, ei, msg.channel, msg.value))
            elif kind == "set_tempo":
                tempos.append((tick, ti, ei, int(msg.tempo)))
        for idxs in open_notes.values():
            for k in idxs:
                notes["off"][k] = tick  # never switched off: ends at the track's end
        track_end.append(tick)

    def arr(values: list[int]) -> np.ndarray:
        return np.asarray(values, dtype=np.int64)

    t_arr = np.asarray(tempos, dtype=np.int64).reshape(-1, 4)
    c_arr = np.asarray(cc7, dtype=np.int64).reshape(-1, 5)
    return MidiScore(
        ticks_per_quarter=tpq,
        n_tracks=len(mid.tracks),
        track_end=arr(track_end),
        note_track=arr(notes["track"]),
        note_channel=arr(notes["channel"]),
        note_pitch=arr(notes["pitch"]),
        note_velocity=arr(notes["velocity"]),
        note_on=arr(notes["on"]),
        note_off=arr(notes["off"]),
        note_closed=np.asarray(notes["closed"], dtype=bool),
        note_event=arr(notes["event"]),
        tempo_tick=t_arr[:, 0].copy(),
        tempo_track=t_arr[:, 1].copy(),
        tempo_event=t_arr[:, 2].copy(),
        tempo_mpq=t_arr[:, 3].copy(),
        cc7_tick=c_arr[:, 0].copy(),
        cc7_track=c_arr[:, 1].copy(),
        cc7_event=c_arr[:, 2].copy(),
        cc7_channel=c_arr[:, 3].copy(),
        cc7_value=c_arr[:, 4].copy(),
        source=str(source)
        if isinstance(source, (str, os.PathLike))
        else getattr(source, "filename", "") or "",
    )


def notes_from_mapping(data: Mapping[str, Any]) -> NoteArray:
    """Build a :class:`NoteArray` from a mapping of columns (``start``, ``end``, ``pitch``, ...).

    Parameters
    ----------
    data : mapping or DataFrame
        Columns ``start``, ``end``, ``pitch`` and optional ones (see :meth:`NoteArray.from_arrays`).
    """
    allowed = {
        "start",
        "end",
        "pitch",
        "velocity",
        "loudness",
        "channel",
        "track",
        "is_drum",
        "start_tick",
        "end_tick",
        "ticks_per_quarter",
        "length",
    }
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ParameterError(
            expected("notes", "columns among " + ", ".join(sorted(allowed)), unknown)
        )
    for key in ("start", "end", "pitch"):
        if key not in data:
            raise ParameterError(expected("notes", f"a {key!r} column", sorted(data)))
    return NoteArray.from_arrays(**{k: data[k] for k in data})
