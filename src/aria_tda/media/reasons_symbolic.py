r"""Musical reasons in MIDI: what two excerpts share, in words an expert can cite.

:func:`piece_facts` reads one excerpt (key, meter, tempo, instruments, its bars and beats);
:func:`shared_material` finds the longest melodic, rhythmic and harmonic runs two excerpts share,
each placed at bar:beat in both, with a plain sentence and a flag on evidence that cannot
discriminate.

Conventions
-----------
- **Notes** are the listening room's notes table (:attr:`aria_tda.media.clips.Clip.notes`):
  ``pitch, start, end`` (seconds, clip time), ``velocity``, and ``program``, ``is_drum``
  (optional). ``file_offset`` is where clip time 0 lies in the file; every time a
  :class:`PieceFacts` or :class:`SharedMaterial` holds, and its
  :class:`~aria_tda.media.theory.BeatGrid`, is **file time** = clip time + ``file_offset``
  (clip time when the offset is 0).
  With a ``window`` (clip time) only the notes starting in it (melody, rhythm) or the parts of
  notes sounding in it (key, chords) count. Drums are left out of key, melody and harmony.
- **Bars and beats.** With ``midi_path`` the grid is the file's: its tempo map (via
  :func:`aria_tda.features.midi.read_midi`) and its ``time_signature`` events (4/4 before the
  first); a beat is the signature's denominator (an eighth in 6/8), bar 1 starts at tick 0 and a
  new signature starts a new bar. ``tempo_bpm`` is quarter notes per minute, duration-weighted
  over the window (120 without Set Tempo events). Without a path the tempo comes from the
  onsets (:func:`~aria_tda.media.theory.tempo_from_onsets`), the meter is assumed ``"4/4?"``
  and bar 1 starts at the last beat before the first onset (or up to a quarter beat after
  it): bar numbers then count bars of the excerpt, not of the file.
- **Key**: :func:`~aria_tda.media.theory.estimate_key` on the duration-weighted pitch-class
  profile; ``None`` when :math:`r <` :data:`MIN_KEY_R` or fewer than 3 pitch classes sound.
- **Melody** (``"melody"``): the top voice (at each onset, onsets within :data:`ONSET_TOLERANCE`
  merged, the highest pitch starting there); tokens are its successive intervals in semitones,
  so a transposed tune matches. ``length`` counts notes (intervals + 1).
- **Rhythm** (``"rhythm"``): the onsets of all notes (drums too, merged as above); tokens are the
  inter-onset intervals in quarter notes read on the beat grid (so tempo does not matter),
  snapped to the nearest multiple of 1/4 or 1/3 of a quarter (gaps over 8 quarters: one ``gap``
  token). ``length`` counts onsets.
- **Harmony** (``"harmony"``): one segment per beat; each labelled with
  :func:`~aria_tda.media.theory.match_chord` on its pitch-class profile (bass = lowest pitch),
  or no chord when fewer than 2 pitch classes hold 10 % of the segment's largest weight or the
  fit is below :data:`MIN_CHORD_FIT`; no-chord segments dropped, repeats merged, then Roman
  numerals in each excerpt's *own* key (a transposed progression matches). ``length`` counts
  chords. The segments follow each excerpt's own beat: an eighth-note beat (3/8, 6/8) cuts
  twice as finely as a quarter-note one, so the same music in two meters may merge differently.
- Runs are compared with :func:`~aria_tda.media.theory.longest_shared_run`; of the longest
  shared runs, up to :data:`RUNS_PER_CHANNEL` with different content are reported per channel
  (each where it first occurs in the query; the sentence says how many equally long runs
  there are). A channel with nothing shared gives one entry of length 0
  (``informative=False``), so its absence is said.

**When shared material counts as evidence** (``informative=True``), all must hold:

1. each excerpt has at least :data:`MIN_TOKENS` tokens in the channel;
2. the run holds at least :data:`MIN_DISTINCT` different tokens (a repeated note, an even pulse,
   ``I - V - I`` are everywhere); a melodic run also needs :data:`MIN_LEAPS` intervals larger
   than a whole tone (a run of steps is a scale fragment, common to all tonal music);
3. it is longer than chance: of :data:`N_SHUFFLES` pairs of order-shuffled copies of the two
   token sequences (a generator seeded with ``seed``), the share ``p = (1 + #{shuffled pair
   shares a run at least as long}) / (1 + N_SHUFFLES)`` is below :data:`ALPHA`. Shuffling keeps
   how often each token occurs and destroys their order, so a run a random order also produces
   says nothing about borrowed material.

Otherwise ``caveat`` says which rule failed, in words.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from aria_tda.errors import ParameterError, expected
from aria_tda.media.draw import check_notes
from aria_tda.media.kernels import pitch_class_profile
from aria_tda.media.theory import (
    BeatGrid,
    Key,
    chord_name,
    estimate_key,
    longest_shared_run,
    match_chord,
    roman,
    tempo_from_onsets,
)

__all__ = [
    "ALPHA", "CHANNELS", "GM_PROGRAMS", "MIN_CHORD_FIT", "MIN_DISTINCT", "MIN_KEY_R", "MIN_LEAPS",
    "MIN_TOKENS", "N_SHUFFLES", "ONSET_TOLERANCE", "RUNS_PER_CHANNEL", "PieceFacts",
    "SharedMaterial", "piece_facts", "shared_material",
]  # fmt: skip

CHANNELS = ("melody", "rhythm", "harmony")  #: The channels :func:`shared_material` compares.
MIN_KEY_R = 0.5  #: Below this Krumhansl-Kessler correlation the key is reported as ``None``.
MIN_CHORD_FIT = 0.75  #: Below this template cosine a beat holds no chord.
MIN_TOKENS = 4  #: Fewest tokens an excerpt needs in a channel for its runs to count.
MIN_DISTINCT = 3  #: Fewest different tokens a run needs to count.
MIN_LEAPS = 2  #: Fewest intervals above a whole tone a melodic run needs to count.
N_SHUFFLES = 49  #: Shuffled pairs behind the chance test.
ALPHA = 0.05  #: A run counts when shuffled pairs share one as long less often than this.
ONSET_TOLERANCE = 0.03  #: Onsets closer than this (seconds) are one onset.
RUNS_PER_CHANNEL = 3  #: Most runs reported per channel.
_MAX_QUARTERS = 8

#: General MIDI program names, program 0-127.
GM_PROGRAMS: tuple[str, ...] = tuple(
    "Acoustic Grand Piano|Bright Acoustic Piano|Electric Grand Piano|Honky-tonk Piano|"
    "Electric Piano 1|Electric Piano 2|Harpsichord|Clavinet|Celesta|Glockenspiel|Music Box|"
    "Vibraphone|Marimba|Xylophone|Tubular Bells|Dulcimer|Drawbar Organ|Percussive Organ|"
    "Rock Organ|Church Organ|Reed Organ|Accordion|Harmonica|Tango Accordion|"
    "Acoustic Guitar (nylon)|Acoustic Guitar (steel)|Electric Guitar (jazz)|"
    "Electric Guitar (clean)|Electric Guitar (muted)|Overdriven Guitar|Distortion Guitar|"
    "Guitar Harmonics|Acoustic Bass|Electric Bass (finger)|Electric Bass (pick)|Fretless Bass|"
    "Slap Bass 1|Slap Bass 2|Synth Bass 1|Synth Bass 2|Violin|Viola|Cello|Contrabass|"
    "Tremolo Strings|Pizzicato Strings|Orchestral Harp|Timpani|String Ensemble 1|"
    "String Ensemble 2|Synth Strings 1|Synth Strings 2|Choir Aahs|Voice Oohs|Synth Voice|"
    "Orchestra Hit|Trumpet|Trombone|Tuba|Muted Trumpet|French Horn|Brass Section|"
    "Synth Brass 1|Synth Brass 2|Soprano Sax|Alto Sax|Tenor Sax|Baritone Sax|Oboe|English Horn|"
    "Bassoon|Clarinet|Piccolo|Flute|Recorder|Pan Flute|Blown Bottle|Shakuhachi|Whistle|Ocarina|"
    "Lead 1 (square)|Lead 2 (sawtooth)|Lead 3 (calliope)|Lead 4 (chiff)|Lead 5 (charang)|"
    "Lead 6 (voice)|Lead 7 (fifths)|Lead 8 (bass + lead)|Pad 1 (new age)|Pad 2 (warm)|"
    "Pad 3 (polysynth)|Pad 4 (choir)|Pad 5 (bowed)|Pad 6 (metallic)|Pad 7 (halo)|Pad 8 (sweep)|"
    "FX 1 (rain)|FX 2 (soundtrack)|FX 3 (crystal)|FX 4 (atmosphere)|FX 5 (brightness)|"
    "FX 6 (goblins)|FX 7 (echoes)|FX 8 (sci-fi)|Sitar|Banjo|Shamisen|Koto|Kalimba|Bagpipe|"
    "Fiddle|Shanai|Tinkle Bell|Agogo|Steel Drums|Woodblock|Taiko Drum|Melodic Tom|Synth Drum|"
    "Reverse Cymbal|Guitar Fret Noise|Breath Noise|Seashore|Bird Tweet|Telephone Ring|"
    "Helicopter|Applause|Gunshot".split("|")
)
_VALUE_NAMES = {Fraction(4): "w", Fraction(3): "h.", Fraction(2): "h", Fraction(3, 2): "q.",
                Fraction(1): "q", Fraction(3, 4): "e.", Fraction(1, 2): "e", Fraction(1, 4): "s",
                Fraction(1, 3): "t", Fraction(2, 3): "tq"}  # fmt: skip
_LEGEND = {"w": "whole", "h.": "dotted half", "h": "half", "q.": "dotted quarter",
           "q": "quarter", "e.": "dotted eighth", "e": "eighth", "s": "sixteenth",
           "t": "triplet eighth", "tq": "triplet quarter", "gap": "a gap of over two bars"}
_GRID = sorted({Fraction(k, 4) for k in range(1, 4 * _MAX_QUARTERS + 1)}
               | {Fraction(k, 3) for k in range(1, 3 * _MAX_QUARTERS + 1)})


@dataclass(frozen=True)
class SharedMaterial:
    """One piece of material two excerpts share (see the module docstring).

    Attributes
    ----------
    kind : str
        ``"melody"``, ``"rhythm"`` or ``"harmony"`` (the audio reasons add their own kinds).
    length : int
        Notes, onsets or chords in the shared run (0: nothing shared).
    query_at, item_at : str
        Position of the run's start in each piece (``"bar 3, beat 1"``).
    query_time, item_time : float
        The run's start in each piece, seconds (file time).
    content : str
        The run itself: ``"+2 +2 -4 +5 -1 (semitones)"``, ``"q q e e q (q = quarter, e =
        eighth)"``, ``"I - IV - V - I"``.
    sentence : str
        One plain sentence an expert can quote.
    informative : bool
        False when the run cannot discriminate.
    caveat : str
        Why not informative; ``""`` otherwise.
    query_end, item_end : float or None
        Where the run ends in each piece (the end of its last note or chord), seconds.
    p_value : float or None
        Share of order-shuffled pairs that share a run at least as long (rule 3).
    """

    kind: str
    length: int
    query_at: str
    item_at: str
    query_time: float
    item_time: float
    content: str
    sentence: str
    informative: bool
    caveat: str
    query_end: float | None = None
    item_end: float | None = None
    p_value: float | None = None


@dataclass(frozen=True)
class PieceFacts:
    """What one MIDI excerpt is, in music words.

    Attributes
    ----------
    key : Key or None
        Estimated key (``None``: fewer than 3 pitch classes, or :math:`r <` :data:`MIN_KEY_R`).
    meter : str
        ``"4/4"``, ``"3/4"``, ``"6/8"`` ... from the file; ``"4/4?"`` when assumed.
    tempo_bpm : float or None
        Quarter notes per minute (``None``: too few onsets to tell, without a file).
    instruments : tuple of str
        General MIDI names (``"Drums"`` for the drum channel), most notes first.
    grid : BeatGrid
        Beats and bars, file time.
    n_notes : int
        Notes in the window.
    file_offset : float
        Where clip time 0 lies in the file (s).
    window : (float, float) or None
        The analysed window, clip time (s); ``None``: all notes.
    """

    key: Key | None
    meter: str
    tempo_bpm: float | None
    instruments: tuple[str, ...]
    grid: BeatGrid
    n_notes: int
    file_offset: float = 0.0
    window: tuple[float, float] | None = None

    def describe(self) -> str:
        """``"D minor (r = 0.82), 4/4, 96 BPM; Acoustic Grand Piano, Violin"``."""
        key = "no clear key" if self.key is None else (
            f"{self.key.name} (r = {self.key.confidence:.2f})")
        meter = f"{self.meter[:-1]} (assumed)" if self.meter.endswith("?") and \
            self.meter != "?" else ("meter unknown" if self.meter == "?" else self.meter)
        tempo = "tempo unknown" if self.tempo_bpm is None else f"{self.tempo_bpm:.0f} BPM"
        text = f"{key}, {meter}, {tempo}"
        return text + ("; " + ", ".join(self.instruments) if self.instruments else "; no notes")


# --------------------------------------------------------------------------- one excerpt


def _window(window: Any) -> tuple[float, float] | None:
    if window is None:
        return None
    try:
        a, b = (float(v) for v in window)
    except (TypeError, ValueError):
        raise ParameterError(expected("window", "(start, end) in seconds", window)) from None
    if not (math.isfinite(a) and math.isfinite(b)) or b <= a:
        raise ParameterError(expected("window", "finite (start, end) with start < end", window))
    return a, b


def _table(name: str, notes: Any, window: tuple[float, float] | None) -> pd.DataFrame:
    """Checked notes (with ``program``), those sounding in the window, sorted by onset."""
    out = check_notes(name, notes)
    prog = notes["program"] if "program" in notes.columns else 0
    out["program"] = pd.Series(prog, index=out.index).fillna(0).astype(np.int64).clip(0, 127)
    if window is not None:
        out = out[(out["end"] > window[0]) & (out["start"] < window[1])]
    return out.sort_values(["start", "pitch"], kind="stable").reset_index(drop=True)


def piece_facts(
    notes: pd.DataFrame,
    *,
    midi_path: str | os.PathLike[str] | None = None,
    window: tuple[float, float] | None = None,
    file_offset: float = 0.0,
) -> PieceFacts:
    """Key, meter, tempo, instruments and beat grid of one MIDI excerpt.

    Parameters
    ----------
    notes : pandas.DataFrame
        The excerpt's notes (module docstring), clip time.
    midi_path : path, optional
        The MIDI file the notes come from: its tempo map and time signatures give the bars.
    window : (float, float), optional
        The attributed window, clip time (s); default all notes.
    file_offset : float, default 0
        Where clip time 0 lies in the file (s).

    Returns
    -------
    PieceFacts
    """
    win = _window(window)
    if isinstance(file_offset, bool) or not isinstance(file_offset, (int, float, np.floating)) \
            or not math.isfinite(float(file_offset)):
        raise ParameterError(expected("file_offset", "a finite number of seconds", file_offset))
    off = float(file_offset)
    table = _table("notes", notes, win)
    t0 = win[0] if win is not None else (float(table["start"].min()) if len(table) else 0.0)
    t1 = win[1] if win is not None else (float(table["end"].max()) if len(table) else 0.0)
    pitched = table[~table["is_drum"]]
    key: Key | None = None
    if len(pitched) and t1 > t0:
        pcp = pitch_class_profile(pitched["pitch"].to_numpy(), pitched["start"].to_numpy(),
                                  pitched["end"].to_numpy(), t_range=(t0, t1))
        key = estimate_key(pcp) if np.count_nonzero(pcp) >= 3 else None
        key = key if key is not None and key.confidence >= MIN_KEY_R else None
    tempo: float | None
    if midi_path is not None:
        grid, tempo = _file_grid(midi_path, off + t0, off + max(t1, t0 + 1e-3))
    else:
        grid, tempo = _onset_grid(_onsets(table["start"].to_numpy()) + off, off + t0, off + t1)
    counts: dict[str, int] = {}
    for drum, prog in zip(table["is_drum"], table["program"], strict=True):
        name = "Drums" if drum else GM_PROGRAMS[int(prog)]
        counts[name] = counts.get(name, 0) + 1
    names = tuple(sorted(counts, key=lambda k: -counts[k]))
    return PieceFacts(key, grid.meter, tempo, names, grid, len(table), off, win)


def _file_grid(path: str | os.PathLike[str], a: float, b: float) -> tuple[BeatGrid, float]:
    """The file's beat grid over [a, b] (file seconds, two bars' margin) and mean tempo there."""
    import mido

    from aria_tda.features.midi import read_midi

    try:
        mid = mido.MidiFile(os.fspath(path))
    except (OSError, EOFError, ValueError, KeyError, IndexError, TypeError) as exc:
        raise ParameterError(expected("midi_path", "a readable MIDI file", str(exc))) from None
    score = read_midi(mid)
    tpq = int(mid.ticks_per_beat)
    sigs: dict[int, tuple[int, int]] = {}
    for track in mid.tracks:
        tick = 0
        for msg in track:
            tick += int(msg.time)
            if msg.type == "time_signature":
                sigs[tick] = (int(msg.numerator), int(msg.denominator))
    changes = sorted(sigs.items()) if 0 in sigs else [(0, (4, 4)), *sorted(sigs.items())]
    end_tick = max(int(score.length_ticks), 1)
    for _ in range(64):
        if float(score.seconds(np.asarray([end_tick]))[0]) >= b:
            break
        end_tick *= 2
    beats: list[int] = []
    down: list[int] = []
    meters: list[tuple[int, str]] = []
    for k, (tick, (num, den)) in enumerate(changes):
        step = max(1, round(tpq * 4 / den))
        stop = changes[k + 1][0] if k + 1 < len(changes) else end_tick + 4 * tpq * 4
        meters.append((tick, f"{num}/{den}"))
        for n, t in enumerate(range(tick, stop, step)):
            beats.append(t)
            if n % num == 0:
                down.append(t)
    secs = score.seconds(np.asarray(beats, dtype=np.int64))
    dsecs = score.seconds(np.asarray(down, dtype=np.int64))
    at_a = beats[max(int(np.searchsorted(secs, a, side="right")) - 1, 0)]
    meter = next(m for t, m in reversed(meters) if t <= at_a)
    lo = int(np.searchsorted(dsecs, a, side="right")) - 3
    lo = max(lo, 0)
    hi = int(np.searchsorted(dsecs, b, side="left")) + 2
    keep = (secs >= dsecs[lo]) & (secs <= dsecs[min(hi, len(dsecs) - 1)])
    grid = BeatGrid(secs[keep], dsecs[lo:hi + 1], meter, first_bar=lo + 1)
    # mean quarter-note tempo over [a, b]: quarters elapsed / minutes elapsed
    ticks = np.arange(0, end_tick + 1, max(1, tpq // 8))
    at = score.seconds(ticks)
    q = np.interp([a, b], at, ticks / tpq)
    tempo = float(60.0 * (q[1] - q[0]) / (b - a)) if b > a else 60e6 / 500000.0
    return grid, tempo


def _onsets(starts: np.ndarray) -> np.ndarray:
    """Distinct onsets: sorted, those within :data:`ONSET_TOLERANCE` of the previous kept one
    merged."""
    out: list[float] = []
    for t in np.sort(np.asarray(starts, dtype=float)):
        if not out or t - out[-1] > ONSET_TOLERANCE:
            out.append(float(t))
    return np.asarray(out)


def _onset_grid(onsets: np.ndarray, a: float, b: float) -> tuple[BeatGrid, float | None]:
    """An assumed 4/4 grid from the onsets' tempo; bar 1 at the first onset's beat."""
    fit = tempo_from_onsets(onsets)
    if fit is None:
        return BeatGrid(np.zeros(0), np.zeros(0), "?"), None
    bpm, phase = fit
    p = 60.0 / bpm
    first = phase + math.floor((float(onsets[0]) - phase) / p + 0.25) * p
    n_back = math.ceil(max(first - a, 0.0) / p) + 8
    n_fwd = math.ceil(max(b - first, 0.0) / p) + 8
    beats = first + p * np.arange(-n_back, n_fwd + 1)
    k0 = n_back % 4
    return BeatGrid(beats, beats[k0::4], "4/4?", first_bar=1 - n_back // 4), bpm


# --------------------------------------------------------------------------- token sequences


@dataclass(frozen=True)
class _Seq:
    """Tokens and the events they cover: token k spans events k .. k + span - 1."""

    tokens: list[Any]
    starts: np.ndarray
    ends: np.ndarray
    span: int
    extra: list[Any]  # per event: pitch (melody), chord label (harmony), None (rhythm)
    why: str = ""  # why there are no tokens, when it is not for want of notes

    def events(self, start: int, length: int) -> tuple[int, int]:
        return start, start + length + self.span - 2


def _melody(t: pd.DataFrame, off: float) -> _Seq:
    p = t[~t["is_drum"]].sort_values(["start", "pitch"], ascending=[True, False], kind="stable")
    tops: list[tuple[float, float, int]] = []
    for s, e, pitch in zip(p["start"], p["end"], p["pitch"], strict=True):
        if tops and s - tops[-1][0] <= ONSET_TOLERANCE:
            if pitch > tops[-1][2]:
                tops[-1] = (tops[-1][0], float(e), int(pitch))
            continue
        tops.append((float(s), float(e), int(pitch)))
    pitches = [x[2] for x in tops]
    tokens = [b - a for a, b in _pairs(pitches)]
    return _Seq(tokens, np.asarray([x[0] for x in tops]) + off,
                np.asarray([x[1] for x in tops]) + off, 2, pitches)


def _pairs(x: Sequence[Any]) -> list[tuple[Any, Any]]:
    """Successive pairs of ``x``."""
    return list(itertools.pairwise(x))


def _quantise(q: float) -> Any:
    if q > _MAX_QUARTERS + 1.0 / 8:
        return "gap"
    return min(_GRID, key=lambda g: (abs(float(g) - q), g.denominator != 4))


def _rhythm(t: pd.DataFrame, f: PieceFacts, window: tuple[float, float] | None) -> _Seq:
    starts = t["start"].to_numpy()
    if window is not None:
        starts = starts[(starts >= window[0]) & (starts < window[1])]
    on = _onsets(starts) + f.file_offset
    if f.grid.beats.size < 2 or on.size < 2:
        return _Seq([], on, on, 2, [None] * on.size)
    per_quarter = 4.0 / _denominator(f.meter)
    fb = np.asarray([f.grid.beat_index(x) for x in on])
    tokens = [_quantise(float(d) * per_quarter) for d in np.diff(fb)]
    return _Seq(tokens, on, on, 2, [None] * on.size)


def _denominator(meter: str) -> int:
    tail = meter.rstrip("?").split("/")[-1]
    return int(tail) if tail.isdigit() and int(tail) > 0 else 4


def _harmony(t: pd.DataFrame, f: PieceFacts, a: float, b: float) -> _Seq:
    p = t[~t["is_drum"]]
    if f.key is None or not len(p) or f.grid.beats.size < 2:
        why = "no clear key, so its chords have no Roman numerals" if f.key is None and len(p) \
            else ""
        return _Seq([], np.zeros(0), np.zeros(0), 1, [], why)
    off = f.file_offset
    bounds = np.unique(np.clip(np.concatenate([[a], f.grid.beats - off, [b]]), a, b))
    pitch, s, e = (p[c].to_numpy() for c in ("pitch", "start", "end"))
    chords: list[tuple[float, float, int, str]] = []
    for lo, hi in _pairs(list(bounds)):
        if hi - lo <= 1e-6:
            continue
        pcp = pitch_class_profile(pitch, s, e, t_range=(lo, hi))
        if pcp.max() <= 0 or np.count_nonzero(pcp >= 0.1 * pcp.max()) < 2:
            continue
        over = np.minimum(e, hi) - np.maximum(s, lo)
        lowest = int(pitch[over >= 0.25 * (hi - lo)].min()) if np.any(over >= 0.25 * (hi - lo)) \
            else int(pitch[over > 0].min())
        fit = match_chord(pcp, bass=lowest % 12)
        if fit is None or fit[2] < MIN_CHORD_FIT:
            continue
        if chords and chords[-1][2:] == (fit[0], fit[1]):
            chords[-1] = (chords[-1][0], hi, fit[0], fit[1])
        else:
            chords.append((lo, hi, fit[0], fit[1]))
    key = f.key
    tokens = [roman(r, q, key) for _, _, r, q in chords]
    return _Seq(tokens, np.asarray([c[0] for c in chords]) + off,
                np.asarray([c[1] for c in chords]) + off, 1,
                [chord_name(r, q) for _, _, r, q in chords])


# --------------------------------------------------------------------------- two excerpts


def shared_material(
    query_notes: pd.DataFrame,
    item_notes: pd.DataFrame,
    query: PieceFacts,
    item: PieceFacts,
    *,
    channels: Sequence[str] = CHANNELS,
    seed: int = 0,
) -> list[SharedMaterial]:
    """The longest melodic, rhythmic and harmonic runs two MIDI excerpts share.

    Parameters
    ----------
    query_notes, item_notes : pandas.DataFrame
        The notes of each excerpt (the tables given to :func:`piece_facts`).
    query, item : PieceFacts
        Their facts (:func:`piece_facts`); their windows and offsets apply.
    channels : sequence of str, default ("melody", "rhythm", "harmony")
        Which to compare.
    seed : int, default 0
        Seed of the shuffles behind the chance test (rule 3 of the module docstring).

    Returns
    -------
    list of SharedMaterial
        Per channel, in the order asked: its longest shared runs (at most
        :data:`RUNS_PER_CHANNEL`), or one entry of length 0 when nothing is shared.
    """
    for name, fct in (("query", query), ("item", item)):
        if not isinstance(fct, PieceFacts):
            raise ParameterError(expected(name, "PieceFacts (from piece_facts)",
                                          type(fct).__name__))
    if isinstance(channels, str) or any(c not in CHANNELS for c in channels):
        raise ParameterError(expected("channels", "a sequence of " + ", ".join(CHANNELS),
                                      channels))
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ParameterError(expected("seed", "an integer", seed))
    qt = _table("query_notes", query_notes, query.window)
    it = _table("item_notes", item_notes, item.window)
    out: list[SharedMaterial] = []
    for ch in channels:
        sq, si = (_sequence(ch, t, f) for t, f in ((qt, query), (it, item)))
        out.extend(_compare(ch, sq, si, query, item, np.random.default_rng(int(seed))))
    return out


def _sequence(channel: str, t: pd.DataFrame, f: PieceFacts) -> _Seq:
    if channel == "melody":
        w = f.window
        keep = t if w is None else t[(t["start"] >= w[0]) & (t["start"] < w[1])]
        return _melody(keep, f.file_offset)
    if channel == "rhythm":
        return _rhythm(t, f, f.window)
    a = f.window[0] if f.window is not None else (float(t["start"].min()) if len(t) else 0.0)
    b = f.window[1] if f.window is not None else (float(t["end"].max()) if len(t) else 0.0)
    return _harmony(t, f, a, b)


def _chance(a: list[Any], b: list[Any], length: int, rng: np.random.Generator) -> float:
    """Share of shuffled pairs sharing a run of ``length`` or more (with the +1 correction)."""
    hits = 0
    for _ in range(N_SHUFFLES):
        pa = [a[k] for k in rng.permutation(len(a))]
        pb = [b[k] for k in rng.permutation(len(b))]
        runs = longest_shared_run(pa, pb, min_length=1)
        hits += bool(runs) and runs[0][2] >= length
    return (1 + hits) / (1 + N_SHUFFLES)


_UNITS = {"melody": "melodic intervals", "rhythm": "inter-onset intervals", "harmony": "chords"}


def _content(channel: str, run: list[Any]) -> str:
    if channel == "melody":
        return " ".join(f"{x:+d}" for x in run) + " (semitones)"
    if channel == "harmony":
        return " - ".join(run)
    names = [_VALUE_NAMES.get(x, str(x)) if x != "gap" else "gap" for x in run]
    legend = ", ".join(f"{n} = {_LEGEND[n]}" for n in dict.fromkeys(names) if n in _LEGEND)
    return " ".join(names) + (f" ({legend})" if legend else " (quarter notes)")


def _compare(channel: str, sq: _Seq, si: _Seq, qf: PieceFacts, itf: PieceFacts,
             rng: np.random.Generator) -> list[SharedMaterial]:
    runs = longest_shared_run(sq.tokens, si.tokens, min_length=1)
    if not runs:
        few = _few(channel, sq, si)
        what = {"melody": "melodic pattern", "rhythm": "rhythm", "harmony": "chord"}[channel]
        text = f"No {what} is shared by the two excerpts" + (f" ({few})." if few else ".")
        t_q, t_i = _start(qf), _start(itf)
        return [SharedMaterial(channel, 0, "whole excerpt", "whole excerpt", t_q, t_i, "",
                               text, False, few or "nothing shared")]
    length = runs[0][2]
    p = _chance(sq.tokens, si.tokens, length, rng)
    out: list[SharedMaterial] = []
    seen: set[tuple[Any, ...]] = set()
    for a, b, n in runs:
        run = sq.tokens[a:a + n]
        if tuple(run) in seen or len(out) == RUNS_PER_CHANNEL:
            continue
        seen.add(tuple(run))
        caveat = _caveat(channel, sq, si, run, p)
        qa, qb = sq.events(a, n)
        ia, ib = si.events(b, n)
        q_at, i_at = qf.grid.position(sq.starts[qa]), itf.grid.position(si.starts[ia])
        events = qb - qa + 1
        content = _content(channel, run)
        sentence = _sentence(channel, content, events, q_at, i_at, sq, si, qa, ia, qf, itf,
                             len(runs), p)
        out.append(SharedMaterial(
            channel, events, q_at, i_at, float(sq.starts[qa]), float(si.starts[ia]), content,
            sentence, not caveat, caveat, float(sq.ends[qb]), float(si.ends[ib]), p))
    return out


def _start(f: PieceFacts) -> float:
    return f.file_offset + (f.window[0] if f.window is not None else 0.0)


def _few(channel: str, sq: _Seq, si: _Seq) -> str:
    for who, s in (("query", sq), ("item", si)):
        if s.why:
            return f"the {who} has {s.why}"
        if len(s.tokens) < MIN_TOKENS:
            n = len(s.tokens)
            return f"the {who} has {'only ' + str(n) if n else 'no'} {_UNITS[channel]} in the " \
                "window"
    return ""


def _caveat(channel: str, sq: _Seq, si: _Seq, run: list[Any], p: float) -> str:
    few = _few(channel, sq, si)
    if few:
        return few + f" (fewer than {MIN_TOKENS}): too little to tell"
    distinct = len(set(run))
    if distinct == 1 and channel == "melody":
        return "the shared run repeats one note" if run[0] == 0 else \
            f"the shared run repeats one interval ({run[0]:+d})"
    if distinct == 1 and channel == "rhythm":
        name = _VALUE_NAMES.get(run[0], "gap" if run[0] == "gap" else f"{run[0]} quarter")
        return (f"the onsets of the shared run are evenly spaced (every {_LEGEND.get(name, name)})"
                " in both: an even pulse says nothing")
    if distinct == 1:
        return "the shared run is one chord"
    if distinct < MIN_DISTINCT:
        return (f"the shared run uses only {distinct} different {_UNITS[channel]} "
                f"(fewer than {MIN_DISTINCT}): such material is everywhere")
    if channel == "melody" and sum(abs(x) > 2 for x in run) < MIN_LEAPS:
        return ("the shared run moves almost only by steps (a scale fragment, fewer than "
                f"{MIN_LEAPS} leaps larger than a whole tone): such lines are everywhere")
    if p >= ALPHA:
        return (f"shuffled copies of the two excerpts share a run as long in {p:.0%} of "
                f"{N_SHUFFLES} tries: it is as likely by chance")
    return ""


def _sentence(channel: str, content: str, events: int, q_at: str, i_at: str, sq: _Seq,
              si: _Seq, qa: int, ia: int, qf: PieceFacts, itf: PieceFacts, ties: int,
              p: float) -> str:
    where = f"the query from {q_at}, the item from {i_at}"
    if channel == "melody":
        shift = int(si.extra[ia]) - int(sq.extra[qa])
        how = "at the same pitch" if shift == 0 else (
            f"transposed {'up' if shift > 0 else 'down'} {abs(shift)} semitone"
            f"{'s' if abs(shift) != 1 else ''} in the item")
        text = (f"The top voices share a melodic line of {events} notes with the same intervals "
                f"({content}), {how}: {where}")
    elif channel == "rhythm":
        text = f"Both excerpts share a rhythm of {events} onsets ({content}): {where}"
    else:
        qk = qf.key.name if qf.key is not None else "?"
        ik = itf.key.name if itf.key is not None else "?"
        qc = " - ".join(sq.extra[qa:qa + events])
        ic = " - ".join(si.extra[ia:ia + events])
        text = (f"Both excerpts move through the progression {content}: the query in {qk} "
                f"({qc}) from {q_at}, the item in {ik} ({ic}) from {i_at}")
    if ties > 1:
        text += f" (one of {ties} equally long shared runs)"
    return text + f"; shuffled copies share a run as long in {p:.0%} of {N_SHUFFLES} tries."

