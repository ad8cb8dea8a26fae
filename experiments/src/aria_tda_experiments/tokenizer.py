"""MusicTransformer event vocabulary (Oore et al. 2018; Huang et al. 2019) and MIDI I/O.

Conventions
-----------
- A note is :class:`Note` ``(pitch, start, end, velocity)``: MIDI pitch 0-127, onset and
  offset in seconds, MIDI velocity 1-127.
- Token ids (``VOCAB_SIZE = 390``, as dattri's MAESTRO MusicTransformer):

  ======================  ===========  ==========================================
  event                   ids          meaning
  ======================  ===========  ==========================================
  ``NOTE_ON p``           0-127        start pitch ``p`` at the current time
  ``NOTE_OFF p``          128-255      end pitch ``p`` at the current time
  ``TIME_SHIFT k``        256-355      advance time by ``k`` × 10 ms, k = 1..100
  ``SET_VELOCITY b``      356-387      velocity bin ``b`` (32 bins of 4) for later NOTE_ONs
  ``PAD``                 388          padding (ignored by :func:`decode`)
  ``BOS``                 389          start of a piece (ignored by :func:`decode`)
  ======================  ===========  ==========================================

- Times are quantised to 10 ms steps (``round(t * 100)``), velocities to bins ``v // 4``
  (decoded as ``4 b + 2``). :func:`normalize_notes` applies exactly the quantisation the
  encoding implies, plus the single-channel MIDI rule that a pitch sounds at most once at a
  time (an overlapping note of the same pitch ends the earlier one; of two same-pitch notes
  with the same onset the longer is kept; notes shorter than one step last one step). Hence
  ``decode(encode(notes)) == normalize_notes(notes)`` exactly.
- Event order within one time step: all NOTE_OFFs (by pitch), then NOTE_ONs (by pitch), each
  NOTE_ON preceded by SET_VELOCITY only when the bin changes.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterable, Sequence
from typing import NamedTuple

import numpy as np

from aria_tda.errors import DataError, FileFormatError, ParameterError, expected

__all__ = [
    "BOS",
    "DEFAULT_VELOCITY",
    "NOTE_OFF",
    "NOTE_ON",
    "PAD",
    "SET_VELOCITY",
    "STEPS_PER_SECOND",
    "TIME_SHIFT",
    "VOCAB_SIZE",
    "Note",
    "decode",
    "describe",
    "encode",
    "normalize_notes",
    "read_midi",
    "write_midi",
]

NOTE_ON = 0
NOTE_OFF = 128
TIME_SHIFT = 256
MAX_SHIFT = 100
SET_VELOCITY = 356
N_VELOCITY_BINS = 32
PAD = 388
BOS = 389
VOCAB_SIZE = 390
STEPS_PER_SECOND = 100
DEFAULT_VELOCITY = 66  # bin 16, used by decode() before the first SET_VELOCITY


class Note(NamedTuple):
    """One note: MIDI ``pitch``, ``start``/``end`` in seconds, MIDI ``velocity``."""

    pitch: int
    start: float
    end: float
    velocity: int


def _velocity_bin(v: int) -> int:
    return min(max(int(v), 0) // 4, N_VELOCITY_BINS - 1)


def _bin_velocity(b: int) -> int:
    return 4 * b + 2


def _seconds(step: int) -> float:
    return step / STEPS_PER_SECOND


def _steps(
    notes: Iterable[Note | Sequence[float]], *, rate: int = STEPS_PER_SECOND, bins: bool = True
) -> list[tuple[int, int, int, int]]:
    """Quantise (``rate`` steps per second) and clean notes to ``(start, pitch, end, velocity)``.

    ``velocity`` is the bin when ``bins`` else the MIDI velocity clipped to 1-127.
    """
    raw = []
    for i, n in enumerate(notes):
        try:
            pitch, start, end, vel = int(n[0]), float(n[1]), float(n[2]), int(n[3])
        except (TypeError, ValueError, IndexError):
            what = "(pitch, start, end, velocity)"
            raise ParameterError(expected(f"notes[{i}]", what, n)) from None
        if not 0 <= pitch <= 127:
            raise ParameterError(expected(f"notes[{i}].pitch", "an integer in [0, 127]", pitch))
        if not (np.isfinite(start) and np.isfinite(end)) or start < 0 or end < start:
            what = "0 <= start <= end (finite seconds)"
            raise ParameterError(expected(f"notes[{i}]", what, (start, end)))
        if vel <= 0:
            continue  # a velocity-0 note-on is a note-off in MIDI: nothing sounds
        s = round(start * rate)
        e = max(round(end * rate), s + 1)
        raw.append((pitch, s, -e, _velocity_bin(min(vel, 127)) if bins else min(vel, 127)))
    raw.sort()
    out: list[tuple[int, int, int, int]] = []
    for pitch, s, neg_e, vb in raw:
        e = -neg_e
        if out and out[-1][1] == pitch:
            ps, _, pe, pvb = out[-1]
            if s == ps:
                continue  # same pitch, same onset: keep the longer (sorted first)
            if s < pe:
                out[-1] = (ps, pitch, s, pvb)  # re-strike ends the sounding note
        out.append((s, pitch, e, vb))
    out.sort()
    return out


def normalize_notes(notes: Iterable[Note | Sequence[float]]) -> list[Note]:
    """The notes the encoding represents: quantised and cleaned (see module docstring).

    Parameters
    ----------
    notes : iterable of Note or (pitch, start, end, velocity)
        Times in seconds.

    Returns
    -------
    list[Note]
        Sorted by ``(start, pitch)``; times multiples of 10 ms; velocities ``4 b + 2``.
    """
    return [Note(p, _seconds(s), _seconds(e), _bin_velocity(vb)) for s, p, e, vb in _steps(notes)]


def encode(notes: Iterable[Note | Sequence[float]], *, bos: bool = False) -> np.ndarray:
    """Encode notes as event tokens.

    Parameters
    ----------
    notes : iterable of Note or (pitch, start, end, velocity)
        Seconds and MIDI units; any order; quantised by :func:`normalize_notes`' rules.
    bos : bool
        Prepend the ``BOS`` token.

    Returns
    -------
    np.ndarray [shape=(n_tokens,)], int64
    """
    events = []
    for s, p, e, vb in _steps(notes):
        events.append((s, 1, p, vb))
        events.append((e, 0, p, -1))
    events.sort()
    out: list[int] = [BOS] if bos else []
    now, cur_bin = 0, -1
    for t, kind, pitch, vb in events:
        delta = t - now
        while delta > 0:
            k = min(delta, MAX_SHIFT)
            out.append(TIME_SHIFT + k - 1)
            delta -= k
        now = t
        if kind == 1:
            if vb != cur_bin:
                out.append(SET_VELOCITY + vb)
                cur_bin = vb
            out.append(NOTE_ON + pitch)
        else:
            out.append(NOTE_OFF + pitch)
    return np.asarray(out, dtype=np.int64)


def decode(
    tokens: Iterable[int] | np.ndarray, *, initial_velocity: int = DEFAULT_VELOCITY
) -> list[Note]:
    """Decode event tokens to notes (robust to windows cut from the middle of a piece).

    A NOTE_OFF with no sounding note is ignored; a NOTE_ON of a sounding pitch ends the
    sounding note first; notes still sounding at the end end at the final time; zero-length
    notes are dropped; ``PAD``/``BOS`` are ignored; before any SET_VELOCITY the velocity is
    ``initial_velocity`` (pass a window's ``start_velocity`` from the corpus metadata to decode
    a window cut from a piece with the loudness in effect where it starts).

    Parameters
    ----------
    tokens : iterable of int
        Event token ids.
    initial_velocity : int
        Velocity before the first SET_VELOCITY.

    Returns
    -------
    list[Note]
        Sorted by ``(start, pitch)``.
    """
    arr = np.asarray(list(tokens) if not isinstance(tokens, np.ndarray) else tokens)
    if arr.ndim != 1:
        raise ParameterError(expected("tokens", "a 1-D sequence of token ids", arr.shape))
    if arr.size and (arr.min() < 0 or arr.max() >= VOCAB_SIZE):
        got = f"[{arr.min()}, {arr.max()}]"
        raise ParameterError(expected("tokens", f"ids in [0, {VOCAB_SIZE})", got))
    now, vel = 0, int(initial_velocity)
    active: dict[int, tuple[int, int]] = {}
    out: list[tuple[int, int, int, int]] = []

    def close(pitch: int) -> None:
        s, v = active.pop(pitch)
        if now > s:
            out.append((s, pitch, now, v))

    for tok in arr.tolist():
        if tok < NOTE_OFF:
            if tok in active:
                close(tok)
            active[tok] = (now, vel)
        elif tok < TIME_SHIFT:
            if tok - NOTE_OFF in active:
                close(tok - NOTE_OFF)
        elif tok < SET_VELOCITY:
            now += tok - TIME_SHIFT + 1
        elif tok < PAD:
            vel = _bin_velocity(tok - SET_VELOCITY)
    for pitch in list(active):
        close(pitch)
    out.sort()
    return [Note(p, _seconds(s), _seconds(e), v) for s, p, e, v in out]


def describe(token: int) -> str:
    """Human-readable name of one token id, e.g. ``"NOTE_ON 60"``, ``"TIME_SHIFT 250ms"``.

    Parameters
    ----------
    token : int
        A token id.
    """
    t = int(token)
    if not 0 <= t < VOCAB_SIZE:
        raise ParameterError(expected("token", f"an id in [0, {VOCAB_SIZE})", t))
    if t < NOTE_OFF:
        return f"NOTE_ON {t}"
    if t < TIME_SHIFT:
        return f"NOTE_OFF {t - NOTE_OFF}"
    if t < SET_VELOCITY:
        return f"TIME_SHIFT {(t - TIME_SHIFT + 1) * 10}ms"
    if t < PAD:
        return f"SET_VELOCITY {t - SET_VELOCITY}"
    return "PAD" if t == PAD else "BOS"


# --------------------------------------------------------------------------------------------
# MIDI I/O (mido)
# --------------------------------------------------------------------------------------------


def read_midi(source: str | os.PathLike[str] | bytes, *, include_drums: bool = False) -> list[Note]:
    """Read all notes of a MIDI file (every track and channel) with tempo changes applied.

    Parameters
    ----------
    source : path or bytes
        A Standard MIDI File.
    include_drums : bool
        Keep channel 10 (index 9) notes.

    Returns
    -------
    list[Note]
        Seconds; sorted by ``(start, pitch)``; overlapping same-pitch notes on one channel are
        paired first-in-first-out.
    """
    import mido

    try:
        if isinstance(source, bytes | bytearray):
            mid = mido.MidiFile(file=io.BytesIO(bytes(source)))
        else:
            mid = mido.MidiFile(os.fspath(source))
    except (OSError, EOFError, ValueError, KeyError, IndexError) as exc:
        name = "<bytes>" if isinstance(source, bytes | bytearray) else repr(os.fspath(source))
        raise FileFormatError(f"midi: cannot read {name}: {exc}") from None
    if mid.type == 2:
        raise FileFormatError("midi: type-2 (asynchronous) MIDI files are not supported")
    tpb = mid.ticks_per_beat
    tempo = 500_000
    seconds = 0.0
    open_notes: dict[tuple[int, int], list[tuple[float, int]]] = {}
    notes: list[Note] = []
    for msg in mido.merge_tracks(mid.tracks):
        if msg.time:
            seconds += mido.tick2second(msg.time, tpb, tempo)
        if msg.type == "set_tempo":
            tempo = msg.tempo
        elif msg.type in ("note_on", "note_off"):
            if msg.channel == 9 and not include_drums:
                continue
            key = (msg.channel, msg.note)
            if msg.type == "note_on" and msg.velocity > 0:
                open_notes.setdefault(key, []).append((seconds, msg.velocity))
            elif open_notes.get(key):
                start, vel = open_notes[key].pop(0)
                notes.append(Note(msg.note, start, seconds, vel))
    for (_, pitch), stack in open_notes.items():
        notes.extend(Note(pitch, start, seconds, vel) for start, vel in stack)
    notes.sort(key=lambda n: (n.start, n.pitch, n.end))
    return notes


def write_midi(
    notes: Iterable[Note | Sequence[float]], path: str | os.PathLike[str] | None = None
) -> bytes:
    """Write notes as a type-0 MIDI file (1 tick = 1 ms at 120 bpm); return its bytes.

    Notes are cleaned as in :func:`normalize_notes` but at millisecond resolution with the
    velocities kept. Written atomically when ``path`` is given.

    Parameters
    ----------
    notes : iterable of Note or (pitch, start, end, velocity)
        Times in seconds.
    path : path, optional
        Where to write the file.
    """
    import mido

    try:
        cleaned = _steps(notes, rate=1000, bins=False)
    except ParameterError as exc:
        raise DataError(str(exc)) from None
    events = sorted([(s, 1, p, v) for s, p, _, v in cleaned]
                    + [(e, 0, p, 0) for _, p, e, _ in cleaned])
    track = mido.MidiTrack()
    track.append(mido.MetaMessage("set_tempo", tempo=500_000, time=0))
    now = 0
    for t, kind, pitch, vel in events:
        kind_name = "note_on" if kind else "note_off"
        track.append(mido.Message(kind_name, note=pitch, velocity=vel, time=t - now))
        now = t
    track.append(mido.MetaMessage("end_of_track", time=0))
    mid = mido.MidiFile(type=0, ticks_per_beat=500)
    mid.tracks.append(track)
    buf = io.BytesIO()
    mid.save(file=buf)
    data = buf.getvalue()
    if path is not None:
        from aria_tda._io import atomic_path

        with atomic_path(path) as tmp:
            tmp.write_bytes(data)
    return data
