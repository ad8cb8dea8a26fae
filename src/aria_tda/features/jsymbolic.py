r"""jSymbolic-2.2-compatible features of a whole MIDI file, keyed by 2.2 feature codes.

``aria-tda features jsymbolic FILE.mid --json`` prints :func:`jsymbolic_features`. The values
follow jSymbolic 2.2's own definitions (McKay, Cumming & Fujinaga 2018; release of
2018-06-25) — not the paper's segment forms, which :mod:`aria_tda.features.symbolic` computes.

Conventions
-----------
Events are walked as jSymbolic walks a ``javax.sound.midi.Sequence``: track by track, event by
event (file order; :mod:`aria_tda.features.midi`). Channel 10 (index 9) is unpitched percussion.
A Note On with velocity 0 is a Note Off. Histograms are divided by their sum (all zeros when
empty); standard deviations are sample ones (:math:`n-1`; 0 below two values).

==== ======================================== ==== =================================================
code name                                     size definition
==== ======================================== ==== =================================================
M-1  Melodic Interval Histogram               128  \|pitch − prev. pitch\| between successive Note
                                                   Ons of one (track, channel), drums out; a Note On
                                                   on the previous one's tick adds no interval but
                                                   becomes the previous pitch.
P-2  Pitch Class Histogram                    12   Note Ons per pitch (drums out), normalised,
                                                   folded to pitch classes, rotated so bin 0 holds
                                                   the most common class (first wins a tie).
C-1  Vertical Interval Histogram              128  every tick, each pair of distinct sounding
                                                   pitches p < q adds :math:`S_p+S_q` to bin q − p;
                                                   bin 0 gets :math:`S_p` where ≥ 2 notes share
                                                   pitch p (:math:`S_p` = summed velocity at p).
                                                   Notes sound on [on, off); only notes whose Note
                                                   Off is found take part; drums out.
C-2  Wrapped Vertical Interval Histogram      12   C-1 bin i folded into i mod 12.
RT-5 Note Density                             1    all Note Ons (drums in) / sequence length in s;
                                                   0 when the length is under 1 s.
R-13 Rhythmic Value Histogram                 12   (off − on) ticks snapped on 2.2's integer bounds
                                                   ``c[i-1] + (c[i] − c[i-1]) // 2`` of the values
                                                   ``tpq//8, tpq//4, …, 12·tpq``; a note never
                                                   switched off lasts to its track's end; drums in.
R-25 Mean Rhythmic Value                      1    mean snapped value in quarter notes.
D-1  Dynamic Range                            1    max − min loudness, loudness =
                                                   ``int(velocity · cc7/127)`` (all channels).
D-2  Variation of Dynamics                    1    sample SD of loudness over all notes.
D-4  Average Note to Note Change in Dynamics   1    \|Δ loudness\| of successive Note Ons of one
                                                   channel (tracks concatenated in order).
C-6  Average Number of Simultaneous Pitches   1    mean over sounding ticks of the number of
                                                   distinct sounding pitches (as C-1's notes).
C-7  Variability of Number of Simultaneous    1    sample SD of the same per-tick counts.
     Pitches
P-8  Range                                    1    highest − lowest Note On pitch, drums out.
==== ======================================== ==== =================================================

Sequence length (RT-5) is computed like ``Sequence.getMicrosecondLength()``: tempo changes of
the *first track only* (a default 120 bpm before the first one), each tempo block's
microseconds truncated to an integer.

C-7 is a sample SD over *ticks*: the same music written at another resolution gives the same
population SD but a sample SD scaled by :math:`\sqrt{(n'-1)/n' \cdot n/(n-1)}` (n sounding
ticks) — a property of 2.2's definition, reproduced as is.

D-4 divisor — the decision. jSymbolic 2.2 sums the \|Δ\| of each channel with at least two
notes and divides by the *number of notes* on those channels, not by the number of changes
(a channel of n notes has n − 1 changes), so its value is the true mean times
:math:`\sum (n_c - 1) / \sum n_c`. ``d4_divisor="notes"`` (the default here) reproduces 2.2's
numbers, which is what a "2.2-compatible" mode is for; ``d4_divisor="changes"`` gives the mean
the feature's description states (and which the paper form of ``velocity_change`` uses).

The parser's limits: pairing, ordering and volume rules are 2.2's wherever a Standard MIDI
File determines them (the parse is exact event by event through ``mido``); Java's own MIDI
reader quirks (e.g. its 16-bit ``short`` velocity sums overflowing above ~258 stacked notes on
one pitch) are not reproduced. :func:`jsymbolic_features_reference` is a literal tick-by-tick
implementation used to test the fast path.
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

from aria_tda._checks import check_choice
from aria_tda.features.midi import DEFAULT_TEMPO, DRUM_CHANNEL, MidiScore, read_midi
from aria_tda.features.symbolic.batch import note_sweep, tick_bounds
from aria_tda.features.symbolic.params import RHYTHMIC_VALUES

__all__ = ["CODES", "NAMES", "java_microsecond_length", "jsymbolic_features"]

CODES = (
    "M-1",
    "P-2",
    "C-1",
    "C-2",
    "RT-5",
    "R-13",
    "R-25",
    "D-1",
    "D-2",
    "D-4",
    "C-6",
    "C-7",
    "P-8",
)
NAMES = {
    "M-1": "Melodic Interval Histogram",
    "P-2": "Pitch Class Histogram",
    "C-1": "Vertical Interval Histogram",
    "C-2": "Wrapped Vertical Interval Histogram",
    "RT-5": "Note Density",
    "R-13": "Rhythmic Value Histogram",
    "R-25": "Mean Rhythmic Value",
    "D-1": "Dynamic Range",
    "D-2": "Variation of Dynamics",
    "D-4": "Average Note to Note Change in Dynamics",
    "C-6": "Average Number of Simultaneous Pitches",
    "C-7": "Variability of Number of Simultaneous Pitches",
    "P-8": "Range",
}


def java_microsecond_length(score: MidiScore) -> int:
    """Sequence length in µs as Java computes it (first-track tempo map, truncated blocks).

    Parameters
    ----------
    score : MidiScore
        The parsed MIDI file.
    """
    sel = score.tempo_track == 0
    ticks = [int(t) for t in score.tempo_tick[sel]]
    tempos = [int(m) for m in score.tempo_mpq[sel]]
    if not ticks or ticks[0] != 0:
        ticks.insert(0, 0)
        tempos.insert(0, DEFAULT_TEMPO)
    end = score.length_ticks
    res = score.ticks_per_quarter
    us = 0
    i = 0
    while i + 1 < len(ticks) and ticks[i + 1] <= end:
        us += int((ticks[i + 1] - ticks[i]) * float(tempos[i]) / res)
        i += 1
    return us + int((end - ticks[i]) * float(tempos[i]) / res)


def _normalise(h: np.ndarray) -> np.ndarray:
    h = np.asarray(h, dtype=np.float64)
    tot = float(h.sum())
    return h / tot if tot > 0 else np.zeros_like(h)


def _fold(h: np.ndarray, width: int) -> np.ndarray:
    """bin i → i mod width, added in ascending i (as 2.2 does)."""
    return np.bincount(np.arange(h.size) % width, weights=h, minlength=width)


def _sample_std(values: np.ndarray) -> float:
    if values.size < 2:
        return 0.0
    return float(math.sqrt(float(((values - values.mean()) ** 2).sum()) / (values.size - 1)))


def jsymbolic_features(source: Any, *, d4_divisor: str = "notes") -> dict[str, Any]:
    """jSymbolic 2.2 features of a whole MIDI file (fast path).

    Parameters
    ----------
    source : path, ``mido.MidiFile`` or MidiScore
    d4_divisor : {"notes", "changes"}
        D-4's divisor (module docstring; "notes" = jSymbolic 2.2's).

    Returns
    -------
    dict
        Keyed by :data:`CODES` in that order; histograms as lists of floats, others floats.
    """
    check_choice("d4_divisor", d4_divisor, ("notes", "changes"))
    score = source if isinstance(source, MidiScore) else read_midi(source)
    n = score.n_notes
    order = np.arange(n)
    pitched = score.note_channel != DRUM_CHANNEL
    out: dict[str, Any] = {}

    # M-1: successive Note Ons per (track, channel), processing order
    pi = order[pitched]
    srt = pi[np.lexsort((pi, score.note_channel[pi], score.note_track[pi]))]
    same = (score.note_track[srt][1:] == score.note_track[srt][:-1]) & (
        score.note_channel[srt][1:] == score.note_channel[srt][:-1]
    )
    counted = same & (score.note_on[srt][1:] != score.note_on[srt][:-1])
    intervals = np.abs(np.diff(score.note_pitch[srt]))[counted]
    out["M-1"] = _normalise(np.bincount(intervals, minlength=128))

    # P-2 via the normalised 128-bin pitch histogram
    basic = _normalise(np.bincount(score.note_pitch[pitched], minlength=128))
    pc = _fold(basic, 12)
    top = int(np.argmax(pc))
    out["P-2"] = np.roll(pc, -top)

    # C-1, C-2, C-6, C-7: tick-weighted chart of closed pitched notes
    ci = order[pitched & score.note_closed]
    hist, mom = note_sweep(
        np.array([0, ci.size]),
        score.note_on[ci],
        score.note_off[ci],
        score.note_pitch[ci],
        score.note_velocity[ci],
    )
    c1 = _normalise(hist[0])
    out["C-1"] = c1
    out["C-2"] = _fold(c1, 12)

    # RT-5
    us = java_microsecond_length(score)
    out["RT-5"] = 0.0 if us // 1_000_000 == 0 else n / (us / 1_000_000.0)

    #
    bins = np.searchsorted(
        tick_bounds(score.ticks_per_quarter), score.note_off - score.note_on, side="right"
    )
    counts = np.bincount(bins, minlength=12)
    out["R-13"] = _normalise(counts)
    vals = np.repeat(RHYTHMIC_VALUES, counts)  # grouped by value, as 2.2 lists them
    out["R-25"] = float(vals.sum() / vals.size) if vals.size else 0.0

    # D-1, D-2, D-4 on loudness, per channel in processing order
    loud = score.loudness()
    by_ch = np.lexsort((order, score.note_channel))
    louds = loud[by_ch].astype(np.float64)
    out["D-1"] = float(louds.max() - louds.min()) if n else 0.0
    out["D-2"] = _sample_std(louds)
    ch = score.note_channel[by_ch]
    same_ch = ch[1:] == ch[:-1]
    total_change = float(np.abs(np.diff(louds))[same_ch].sum())
    per_ch = np.bincount(score.note_channel, minlength=16)
    denom = (
        int(per_ch[per_ch > 1].sum())
        if d4_divisor == "notes"
        else int((per_ch[per_ch > 1] - 1).sum())
    )
    out["D-4"] = total_change / denom if denom else 0.0

    n_ticks, sum_k, sum_k2 = (int(x) for x in mom[0])
    out["C-6"] = sum_k / n_ticks if n_ticks else 0.0
    out["C-7"] = (
        math.sqrt((n_ticks * sum_k2 - sum_k * sum_k) / (n_ticks * (n_ticks - 1)))
        if n_ticks > 1
        else 0.0
    )

    pp = score.note_pitch[pitched]
    out["P-8"] = float(pp.max() - pp.min()) if pp.size else 0.0
    return {code: _jsonable(out[code]) for code in CODES}


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return [float(x) for x in value]
    return float(value)


# --------------------------------------------------------------------------- literal reference


def jsymbolic_features_reference(
    source: str | os.PathLike[str] | Any, *, d4_divisor: str = "notes"
) -> dict[str, Any]:
    """Literal, tick-by-tick implementation of the 13 features straight from the MIDI events.

    Slow (memory and time proportional to ticks × 128): for tests on small files only. It walks
    the raw ``mido`` events itself — forward search for each Note On's Note Off, per-tick pitch
    strength and note-count charts, per-tick channel-volume map — sharing no code with
    :func:`jsymbolic_features`.
    """
    import mido

    mid = source if isinstance(source, mido.MidiFile) else mido.MidiFile(source)
    tpq = mid.ticks_per_beat
    tracks = []
    for tr in mid.tracks:
        tick, events = 0, []
        for msg in tr:
            tick += msg.time
            events.append((tick, msg))
        tracks.append(events)
    track_ends = [ev[-1][0] if ev else 0 for ev in tracks]
    length = max(track_ends) if track_ends else 0

    def is_on(m: Any) -> bool:
        return m.type == "note_on" and m.velocity > 0

    def is_off(m: Any) -> bool:
        return m.type == "note_off" or (m.type == "note_on" and m.velocity == 0)

    def find_off(events: list[Any], k: int, m: Any) -> int | None:
        for t, m2 in events[k + 1 :]:
            if is_off(m2) and m2.channel == m.channel and m2.note == m.note:
                return int(t)
        return None

    # channel volume, tick by tick (each CC7 overwrites its channel from its tick on)
    volume = [[1.0] * 16 for _ in range(length + 1)]
    for events in tracks:
        for t, m in events:
            if m.type == "control_change" and m.control == 7:
                for x in range(t, length + 1):
                    volume[x][m.channel] = m.value / 127.0

    # M-1
    m1 = [0.0] * 128
    for events in tracks:
        prev_pitch = [-1] * 16
        prev_tick = [-1] * 16
        for t, m in events:
            if is_on(m) and m.channel != DRUM_CHANNEL:
                if prev_pitch[m.channel] != -1 and t != prev_tick[m.channel]:
                    m1[abs(m.note - prev_pitch[m.channel])] += 1
                prev_pitch[m.channel] = m.note
                prev_tick[m.channel] = t

    # P-2, P-8
    basic = [0.0] * 128
    for events in tracks:
        for _t, m in events:
            if is_on(m) and m.channel != DRUM_CHANNEL:
                basic[m.note] += 1
    tot = sum(basic)
    basic = [b / tot if tot else 0.0 for b in basic]
    pc = [0.0] * 12
    for i in range(128):
        pc[i % 12] += basic[i]
    top = max(range(12), key=lambda i: (pc[i], -i))
    p2 = [pc[(top + i) % 12] for i in range(12)]
    present = [i for i in range(128) if basic[i] > 0]
    p8 = float(present[-1] - present[0]) if present else 0.0

    # charts: summed velocity and note count per tick and pitch
    strength = [[0] * 128 for _ in range(length + 1)]
    number = [[0] * 128 for _ in range(length + 1)]
    for events in tracks:
        for k, (t, m) in enumerate(events):
            if is_on(m) and m.channel != DRUM_CHANNEL:
                off = find_off(events, k, m)
                if off is None:
                    continue
                for x in range(t, off):
                    strength[x][m.note] += m.velocity
                    number[x][m.note] += 1
    c1 = [0.0] * 128
    per_tick: list[int] = []
    for x in range(length + 1):
        sounding = [q for q in range(128) if strength[x][q] > 0]
        if sounding:
            per_tick.append(len(sounding))
        for i, q1 in enumerate(sounding):
            if number[x][q1] >= 2:
                c1[0] += strength[x][q1]
            for q2 in sounding[i + 1 :]:
                c1[q2 - q1] += strength[x][q1] + strength[x][q2]
    tot = sum(c1)
    c1 = [v / tot if tot else 0.0 for v in c1]
    c2 = [0.0] * 12
    for i in range(128):
        c2[i % 12] += c1[i]
    c6 = sum(per_tick) / len(per_tick) if per_tick else 0.0
    c7 = (
        math.sqrt(sum((v - c6) ** 2 for v in per_tick) / (len(per_tick) - 1))
        if len(per_tick) > 1
        else 0.0
    )

    # RT-5 from the first track's tempo map
    tempo_events = [(t, m.tempo) for t, m in (tracks[0] if tracks else []) if m.type == "set_tempo"]
    if not tempo_events or tempo_events[0][0] != 0:
        tempo_events.insert(0, (0, DEFAULT_TEMPO))
    us = 0
    j = 0
    while j + 1 < len(tempo_events) and tempo_events[j + 1][0] <= length:
        us += int((tempo_events[j + 1][0] - tempo_events[j][0]) * float(tempo_events[j][1]) / tpq)
        j += 1
    us += int((length - tempo_events[j][0]) * float(tempo_events[j][1]) / tpq)
    n_on = sum(1 for events in tracks for _t, m in events if is_on(m))
    rt5 = 0.0 if us // 1_000_000 == 0 else n_on / (us / 1_000_000.0)

    #
    central = [
        tpq // 8,
        tpq // 4,
        tpq // 2,
        tpq * 3 // 4,
        tpq,
        tpq * 3 // 2,
        tpq * 2,
        tpq * 3,
        tpq * 4,
        tpq * 6,
        tpq * 8,
        tpq * 12,
    ]
    lower = [0] + [central[i - 1] + (central[i] - central[i - 1]) // 2 for i in range(1, 12)]
    r_counts = [0] * 12
    for ti, events in enumerate(tracks):
        for k, (t, m) in enumerate(events):
            if is_on(m):
                off = find_off(events, k, m)
                d = (track_ends[ti] if off is None else off) - t
                b = 11
                for i in range(11):
                    if d < lower[i + 1]:
                        b = i
                        break
                r_counts[b] += 1
    n_r = sum(r_counts)
    r13 = [c / n_r if n_r else 0.0 for c in r_counts]
    values = [float(RHYTHMIC_VALUES[b]) for b in range(12) for _ in range(r_counts[b])]
    r25 = sum(values) / len(values) if values else 0.0

    # D-1, D-2, D-4
    loud_by_ch: list[list[int]] = [[] for _ in range(16)]
    for events in tracks:
        for t, m in events:
            if is_on(m):
                loud_by_ch[m.channel].append(int(m.velocity * volume[t][m.channel]))
    every = [v for lst in loud_by_ch for v in lst]
    d1 = float(max(every) - min(every)) if every else 0.0
    if len(every) > 1:
        mean = sum(every) / len(every)
        d2 = math.sqrt(sum((v - mean) ** 2 for v in every) / (len(every) - 1))
    else:
        d2 = 0.0
    changes = [
        abs(lst[i] - lst[i - 1]) for lst in loud_by_ch if len(lst) > 1 for i in range(1, len(lst))
    ]
    if d4_divisor == "notes":
        denom = sum(len(lst) for lst in loud_by_ch if len(lst) > 1)
    else:
        denom = sum(len(lst) - 1 for lst in loud_by_ch if len(lst) > 1)
    d4 = sum(changes) / denom if denom else 0.0

    tot = sum(m1)
    return {
        "M-1": [v / tot if tot else 0.0 for v in m1],
        "P-2": p2,
        "C-1": c1,
        "C-2": c2,
        "RT-5": rt5,
        "R-13": r13,
        "R-25": r25,
        "D-1": d1,
        "D-2": d2,
        "D-4": d4,
        "C-6": c6,
        "C-7": c7,
        "P-8": p8,
    }
