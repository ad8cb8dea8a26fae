"""The exact loop reference of the symbolic features (slow; for tests).

:func:`symbolic_features_reference` is the reference twin of
:func:`aria_tda.features.symbolic.symbolic_features` (same signature); :func:`reference_features`
(its documented older name) also takes ``owned``, the notes that belong to the segment, to
check the segmented batch path (:func:`~aria_tda.features.symbolic.segment_notes`) window by
window. Neither is in ``__all__``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from aria_tda.features.symbolic.batch import tick_bounds
from aria_tda.features.symbolic.params import (
    EPS_TICK,
    FEATURE_NAMES,
    RHYTHM_LOWER,
    RHYTHMIC_VALUES,
    SymbolicParams,
    as_notes,
    has_ticks,
    window_tick_bounds,
)
from aria_tda.features.symbolic.segments import default_duration

__all__: list[str] = []


def symbolic_features_reference(
    notes: Any, *, start: float = 0.0, duration: float | None = None, **params: Any
) -> dict[str, np.ndarray]:
    """Exact loop reference of :func:`~aria_tda.features.symbolic.symbolic_features` (slow).

    Parameters
    ----------
    notes : notes
        Anything :func:`~aria_tda.features.symbolic.as_notes` accepts; all belong to the segment.
    start : float
        Window start in seconds.
    duration : float, optional
        Window length in seconds; default: the notes' source length or last note end.
    **params
        :class:`~aria_tda.features.symbolic.SymbolicParams` fields.

    Returns
    -------
    dict of str to np.ndarray [shape=(dim,), float64]
    """
    return reference_features(notes, start=start, duration=duration, **params)


def reference_features(
    notes: Any,
    *,
    start: float = 0.0,
    duration: float | None = None,
    owned: Any = None,
    **params: Any,
) -> dict[str, np.ndarray]:
    """Exact loop reference of one segment (slow; for tests): every rule written out plainly.

    Grid features are computed frame by frame (tick by tick in the 2.2 form).

    Parameters
    ----------
    notes : notes
        Anything :func:`~aria_tda.features.symbolic.as_notes` accepts.
    start : float
        Window start in seconds.
    duration : float, optional
        Window length in seconds; default: the notes' source length or last note end.
    owned : array of bool, optional
        Per note: does it belong to the segment (default all True)? The others only sound in
        it (``boundary="clip"``).
    **params
        :class:`~aria_tda.features.symbolic.SymbolicParams` fields.

    Returns
    -------
    dict of str to np.ndarray [shape=(dim,), float64]
    """
    p = SymbolicParams.from_kwargs(params)
    nt = as_notes(notes)
    n = len(nt)
    dur = default_duration(nt, start) if duration is None else float(duration)
    own = [True] * n if owned is None else [bool(x) for x in np.asarray(owned).reshape(-1)]
    paper = p.form == "paper"
    if has_ticks(nt):
        st, et, tpq = nt.start_tick, nt.end_tick, int(nt.ticks_per_quarter)  # type: ignore[arg-type]
        window = window_tick_bounds(nt, np.array([start]), np.array([start + dur]))
        w0, w1 = (int(x) for x in window[0])
    else:  # seconds only: ticks at the tpq/qpm parameters
        rate = p.tpq * p.qpm / 60.0
        st = np.array([math.floor(float(x) * rate + 0.5) for x in nt.start], dtype=np.int64)
        et = np.array([math.floor(float(x) * rate + 0.5) for x in nt.end], dtype=np.int64)
        tpq = p.tpq
        w0, w1 = math.ceil(start * rate - EPS_TICK), math.ceil((start + dur) * rate - EPS_TICK)
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
            d = (
                float(dq[i])
                if dq is not None
                else (float(nt.end[i]) - float(nt.start[i])) * p.qpm / 60.0
            )
            bounds: list[float] = [float(x) for x in RHYTHM_LOWER[:10]]
        else:
            d = int(et[i]) - int(st[i])  # type: ignore[index]
            bounds = [int(x) for x in tick_bounds(tpq)]
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
        out["velocity_std"] = np.array(
            [math.sqrt(sum((x - m) ** 2 for x in louds) / (len(louds) - 1))]
        )
    else:
        out["velocity_std"] = np.array([0.0])
    out["dynamic_range"] = np.array([max(louds) - min(louds) if louds else 0.0])
    if counts:
        m = sum(counts) / len(counts)
        sd = (
            math.sqrt(sum((c - m) ** 2 for c in counts) / (len(counts) - 1))
            if len(counts) > 1
            else 0.0
        )
    else:
        m, sd = 0.0, 0.0
    out["mean_polyphony"] = np.array([m])
    out["polyphony_std"] = np.array([sd])
    ps_ = [int(nt.pitch[i]) for i in pitched]
    out["pitch_range"] = np.array([float(max(ps_) - min(ps_)) if ps_ else 0.0])
    out.update(_pattern_loop([(onset_time[i], int(nt.pitch[i])) for i in pitched]))
    return {name: out[name] for name in FEATURE_NAMES}


def _interval_class(step: int) -> int:
    """Class 0..6 of a top-voice interval: down >= 5, 3-4, 1-2, unison, up 1-2, 3-4, >= 5."""
    if step <= -5:
        return 0
    if step <= -3:
        return 1
    if step <= -1:
        return 2
    if step == 0:
        return 3
    if step <= 2:
        return 4
    if step <= 4:
        return 5
    return 6


def _pattern_loop(onsets: list[tuple[Any, int]]) -> dict[str, np.ndarray]:
    """The three pattern features of one segment from its (onset, pitch) pairs."""
    groups: dict[Any, set[int]] = {}
    for when, pitch in onsets:
        groups.setdefault(when, set()).add(pitch)
    times = sorted(groups)
    tops = [max(groups[t]) for t in times]
    sizes = [min(len(groups[t]), 4) for t in times]

    classes = [_interval_class(tops[j + 1] - tops[j]) for j in range(len(tops) - 1)]
    it = [0.0] * 49
    for j in range(len(classes) - 1):
        it[7 * classes[j] + classes[j + 1]] += 1
    vt = [0.0] * 16
    for j in range(len(sizes) - 1):
        vt[4 * (sizes[j] - 1) + (sizes[j + 1] - 1)] += 1

    periodicity = [0.0] * 8
    if sizes:
        mean = sum(sizes) / len(sizes)
        x = [v - mean for v in sizes]
        energy = sum(v * v for v in x)
        if energy > 0:
            for lag in range(1, 9):
                if lag < len(x):
                    total = sum(x[t] * x[t + lag] for t in range(len(x) - lag))
                    periodicity[lag - 1] = total / energy

    def normalise(h: list[float]) -> np.ndarray:
        tot = sum(h)
        return np.array([v / tot if tot > 0 else 0.0 for v in h])

    return {
        "interval_transitions": normalise(it),
        "voice_transitions": normalise(vt),
        "voice_periodicity": np.array(periodicity),
    }
