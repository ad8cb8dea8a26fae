r"""Numerical kernels of the listening room's evidence views, each with an exact loop twin.

These compute what :func:`aria_tda.media.aspects.aspect_evidence` draws: the top voice's
melodic intervals, the sounding-pitch grid and its polyphony, duration-weighted pitch-class
profiles and the longest common subsequence of two chord root-motion sequences.

Conventions
-----------
- Notes are parallel arrays ``pitch`` (MIDI 0-127), ``start``, ``end`` in seconds; a note sounds
  on ``[start, end)``. Callers leave drums out of these pitch-based kernels.
- Grid (as the symbolic features' paper form, :mod:`aria_tda.features.symbolic`): a time range
  ``[t0, t1)`` has ``ceil((t1 - t0) * fps)`` frames; a note occupies frames
  ``[floor((start - t0) * fps + 1/2), floor((end - t0) * fps + 1/2))`` (round half up), at least
  one frame when ``end > start``, none when ``end == start``, clipped to the range.
- Top voice ("skyline"): at every distinct onset time the highest pitch starting there.
  Melodic interval :math:`i_k = p_{k+1} - p_k` between successive top-voice pitches, in
  semitones (signed; 0 = a repeated pitch).
- Root motion: :func:`aria_tda.features.audio.chords.root_motions` (intervals mod 12 between
  successive distinct chord roots). The longest common subsequence (LCS) of two motion
  sequences is found by the classic dynamic programme
  :math:`L_{i,j} = L_{i-1,j-1} + 1` if :math:`a_i = b_j`, else
  :math:`\max(L_{i-1,j}, L_{i,j-1})`, evaluated one row at a time as
  :math:`L_{i,\cdot} = \max(L_{i-1,\cdot},\ \mathrm{cummax}_j(L_{i-1,j-1} + [a_i = b_j]))`.
  Traceback from :math:`(n, m)`: a match is taken whenever :math:`a_i = b_j`; otherwise the
  step goes up (:math:`i - 1`) when :math:`L_{i-1,j} \ge L_{i,j-1}`, else left.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from aria_tda.errors import DataError, ParameterError, expected

__all__ = [
    "grid_frames",
    "lcs_root_motion",
    "melodic_interval_histogram",
    "pitch_class_profile",
    "pitch_grid",
    "polyphony_curve",
    "rms_db_curve",
]


def _notes(pitch: np.ndarray, start: np.ndarray, end: np.ndarray | None = None) -> tuple:
    p = np.asarray(pitch).ravel()
    s = np.asarray(start, dtype=float).ravel()
    if p.shape != s.shape or (end is not None and np.shape(end) != p.shape):
        raise DataError(expected("pitch/start/end", "arrays of one length", (p.shape, s.shape)))
    if p.size and (not np.issubdtype(p.dtype, np.number) or p.min() < 0 or p.max() > 127):
        raise DataError(expected("pitch", "MIDI pitches in 0..127", p[:5]))
    if not np.all(np.isfinite(s)):
        raise DataError("start: expected finite onset times, got NaN or inf")
    p = p.astype(np.int64)
    if end is None:
        return p, s
    e = np.asarray(end, dtype=float).ravel()
    if not np.all(np.isfinite(e)) or np.any(e < s):
        raise DataError("end: expected finite note ends no earlier than their starts")
    return p, s, e


def _range(t_range: tuple[float, float], fps: float) -> tuple[float, float, float]:
    try:
        t0, t1 = (float(v) for v in t_range)
    except (TypeError, ValueError):
        raise ParameterError(expected("t_range", "a pair (t0, t1) of seconds", t_range)) from None
    if not (math.isfinite(t0) and math.isfinite(t1)) or t1 <= t0:
        raise ParameterError(expected("t_range", "finite seconds with t0 < t1", t_range))
    if not (isinstance(fps, int | float) and math.isfinite(fps) and fps > 0):
        raise ParameterError(expected("fps", "a positive number of frames per second", fps))
    return t0, t1, float(fps)


def grid_frames(t_range: tuple[float, float], fps: float = 50.0) -> int:
    """Number of frames of the grid over ``t_range`` (see the module docstring).

    Parameters
    ----------
    t_range : (float, float)
        ``(t0, t1)`` seconds, ``t0 < t1``.
    fps : float
        Frames per second.

    Returns
    -------
    int
        ``ceil((t1 - t0) * fps)`` (products within 1e-9 of an integer count as that integer).
    """
    t0, t1, fps = _range(t_range, fps)
    x = (t1 - t0) * fps
    return max(math.ceil(x - 1e-9), 1)


def _frames_of(s: float, e: float, t0: float, fps: float, n: int) -> tuple[int, int]:
    """Scalar frame span of one note (the rule both the grid and its twin use)."""
    f0 = math.floor((s - t0) * fps + 0.5)
    f1 = math.floor((e - t0) * fps + 0.5)
    if e > s and f1 <= f0:
        f1 = f0 + 1
    return min(max(f0, 0), n), min(max(f1, 0), n)


def pitch_grid(
    pitch: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    *,
    t_range: tuple[float, float],
    fps: float = 50.0,
) -> np.ndarray:
    """Which pitches sound in each frame.

    Parameters
    ----------
    pitch : np.ndarray [shape=(n,), int]
        MIDI pitches.
    start, end : np.ndarray [shape=(n,)]
        Note start and end in seconds.
    t_range : (float, float)
        The time range ``[t0, t1)`` in seconds.
    fps : float
        Frames per second (50: the symbolic features' grid).

    Returns
    -------
    np.ndarray [shape=(T, 128), bool]
        ``T = grid_frames(t_range, fps)``; entry ``(f, p)`` is True when a note of pitch ``p``
        occupies frame ``f``.
    """
    p, s, e = _notes(pitch, start, end)
    t0, _, fps = _range(t_range, fps)
    n = grid_frames(t_range, fps)
    f0 = np.floor((s - t0) * fps + 0.5).astype(np.int64)
    f1 = np.floor((e - t0) * fps + 0.5).astype(np.int64)
    f1 = np.where((e > s) & (f1 <= f0), f0 + 1, f1)
    f0, f1 = np.clip(f0, 0, n), np.clip(f1, 0, n)
    keep = f1 > f0
    diff = np.zeros((n + 1, 128), dtype=np.int64)
    np.add.at(diff, (f0[keep], p[keep]), 1)
    np.add.at(diff, (f1[keep], p[keep]), -1)
    return np.cumsum(diff[:n], axis=0) > 0


def pitch_grid_reference(
    pitch: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    *,
    t_range: tuple[float, float],
    fps: float = 50.0,
) -> np.ndarray:
    """Loop version of :func:`pitch_grid` (tests; not in ``__all__``).

    Parameters
    ----------
    pitch, start, end : np.ndarray [shape=(n,)]
        Notes (MIDI pitch, seconds).
    t_range : (float, float)
        The time range in seconds.
    fps : float
        Frames per second.
    """
    t0, _, fps = _range(t_range, fps)
    n = grid_frames(t_range, fps)
    out = np.zeros((n, 128), dtype=bool)
    for p, s, e in zip(pitch, start, end, strict=True):
        a, b = _frames_of(float(s), float(e), t0, fps, n)
        for f in range(a, b):
            out[f, int(p)] = True
    return out


def polyphony_curve(
    pitch: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    *,
    t_range: tuple[float, float],
    fps: float = 50.0,
) -> np.ndarray:
    """Number of distinct sounding pitches in each frame (the texture channel's polyphony).

    Parameters
    ----------
    pitch : np.ndarray [shape=(n,), int]
        MIDI pitches (drums left out by the caller).
    start, end : np.ndarray [shape=(n,)]
        Note start and end in seconds.
    t_range : (float, float)
        The time range ``[t0, t1)`` in seconds.
    fps : float
        Frames per second.

    Returns
    -------
    np.ndarray [shape=(T,), int64]
        Frame ``f`` covers ``[t0 + f / fps, t0 + (f + 1) / fps)``.
    """
    return pitch_grid(pitch, start, end, t_range=t_range, fps=fps).sum(axis=1).astype(np.int64)


def polyphony_curve_reference(
    pitch: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    *,
    t_range: tuple[float, float],
    fps: float = 50.0,
) -> np.ndarray:
    """Loop version of :func:`polyphony_curve` (tests; not in ``__all__``).

    Parameters
    ----------
    pitch, start, end : np.ndarray [shape=(n,)]
        Notes (MIDI pitch, seconds).
    t_range : (float, float)
        The time range in seconds.
    fps : float
        Frames per second.
    """
    t0, _, fps = _range(t_range, fps)
    n = grid_frames(t_range, fps)
    sounding: list[set[int]] = [set() for _ in range(n)]
    for p, s, e in zip(pitch, start, end, strict=True):
        a, b = _frames_of(float(s), float(e), t0, fps, n)
        for f in range(a, b):
            sounding[f].add(int(p))
    return np.array([len(x) for x in sounding], dtype=np.int64)


def melodic_interval_histogram(
    pitch: np.ndarray, start: np.ndarray, *, max_interval: int = 12
) -> np.ndarray:
    """Normalised histogram of the top voice's signed melodic intervals.

    Parameters
    ----------
    pitch : np.ndarray [shape=(n,), int]
        MIDI pitches (drums left out by the caller).
    start : np.ndarray [shape=(n,)]
        Onset times in seconds (any order); notes with equal onsets form one chord, of which
        the top voice keeps the highest pitch.
    max_interval : int
        Bins ``-max_interval .. +max_interval`` semitones; larger leaps count in the end bins.

    Returns
    -------
    np.ndarray [shape=(2 * max_interval + 1,), float64]
        Bin ``k`` counts intervals of ``k - max_interval`` semitones; sums to 1, or all zeros
        with fewer than two distinct onsets.
    """
    m = _max_interval(max_interval)
    p, s = _notes(pitch, start)
    h = np.zeros(2 * m + 1)
    if p.size < 2:
        return h
    order = np.lexsort((p, s))
    p, s = p[order], s[order]
    last = np.append(s[1:] != s[:-1], True)  # last of each onset group = its highest pitch
    top = p[last]
    iv = np.clip(np.diff(top), -m, m)
    np.add.at(h, iv + m, 1.0)
    return h / h.sum() if h.sum() > 0 else h


def melodic_interval_histogram_reference(
    pitch: np.ndarray, start: np.ndarray, *, max_interval: int = 12
) -> np.ndarray:
    """Loop version of :func:`melodic_interval_histogram` (tests; not in ``__all__``).

    Parameters
    ----------
    pitch : np.ndarray [shape=(n,)]
        MIDI pitches.
    start : np.ndarray [shape=(n,)]
        Onset times in seconds.
    max_interval : int
        Largest interval with a bin of its own.
    """
    m = _max_interval(max_interval)
    highest: dict[float, int] = {}
    for p, s in zip(pitch, start, strict=True):
        s = float(s)
        highest[s] = max(highest.get(s, -1), int(p))
    top = [highest[s] for s in sorted(highest)]
    h = [0.0] * (2 * m + 1)
    for a, b in itertools.pairwise(top):
        h[min(max(b - a, -m), m) + m] += 1.0
    total = sum(h)
    return np.array([x / total for x in h]) if total > 0 else np.zeros(2 * m + 1)


def _max_interval(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or not 1 <= value <= 127:
        raise ParameterError(expected("max_interval", "an integer in 1..127", value))
    return int(value)


def pitch_class_profile(
    pitch: np.ndarray, start: np.ndarray, end: np.ndarray, *, t_range: tuple[float, float]
) -> np.ndarray:
    """Duration-weighted pitch-class profile of the notes inside ``t_range``.

    Parameters
    ----------
    pitch : np.ndarray [shape=(n,), int]
        MIDI pitches (drums left out by the caller).
    start, end : np.ndarray [shape=(n,)]
        Note start and end in seconds.
    t_range : (float, float)
        Only the part of each note inside ``[t0, t1)`` counts.

    Returns
    -------
    np.ndarray [shape=(12,), float64]
        Seconds sounded per pitch class (C = 0), divided by their sum (all zeros when no note
        sounds in the range).
    """
    p, s, e = _notes(pitch, start, end)
    t0, t1, _ = _range(t_range, 1.0)
    dur = np.clip(np.minimum(e, t1) - np.maximum(s, t0), 0.0, None)
    h = np.bincount(p % 12, weights=dur, minlength=12)
    total = h.sum()
    return h / total if total > 0 else h


def pitch_class_profile_reference(
    pitch: np.ndarray, start: np.ndarray, end: np.ndarray, *, t_range: tuple[float, float]
) -> np.ndarray:
    """Loop version of :func:`pitch_class_profile` (tests; not in ``__all__``).

    Parameters
    ----------
    pitch, start, end : np.ndarray [shape=(n,)]
        Notes (MIDI pitch, seconds).
    t_range : (float, float)
        The time range in seconds.
    """
    t0, t1, _ = _range(t_range, 1.0)
    h = [0.0] * 12
    for p, s, e in zip(pitch, start, end, strict=True):
        d = min(float(e), t1) - max(float(s), t0)
        if d > 0:
            h[int(p) % 12] += d
    total = sum(h)
    return np.array([x / total for x in h]) if total > 0 else np.zeros(12)


def _motions(name: str, seq: Sequence[int] | np.ndarray) -> np.ndarray:
    a = np.asarray(seq)
    if a.ndim != 1 or (a.size and not np.issubdtype(a.dtype, np.integer)):
        raise DataError(expected(name, "a 1-D sequence of integer root motions", a.shape))
    return a.astype(np.int64)


def lcs_root_motion(a: Sequence[int] | np.ndarray, b: Sequence[int] | np.ndarray) -> np.ndarray:
    """Longest common subsequence of two root-motion sequences, as matched index pairs.

    Parameters
    ----------
    a, b : sequence of int
        Root motions (:func:`~aria_tda.features.audio.chords.root_motions`), any integers.

    Returns
    -------
    np.ndarray [shape=(k, 2), int64]
        ``(i, j)`` with ``a[i] == b[j]``, increasing in both columns; ``k`` is the LCS length.
        Ties are broken by the traceback rule of the module docstring.
    """
    x, y = _motions("a", a), _motions("b", b)
    n, m = x.size, y.size
    table = np.zeros((n + 1, m + 1), dtype=np.int64)
    for i in range(1, n + 1):
        prev = table[i - 1]
        diag = prev[:-1] + (y == x[i - 1])
        table[i, 1:] = np.maximum(prev[1:], np.maximum.accumulate(diag))
    return _traceback(table, x, y)


def lcs_root_motion_reference(
    a: Sequence[int] | np.ndarray, b: Sequence[int] | np.ndarray
) -> np.ndarray:
    """Loop version of :func:`lcs_root_motion` (tests; not in ``__all__``).

    Parameters
    ----------
    a, b : sequence of int
        Root-motion sequences.
    """
    x, y = [int(v) for v in a], [int(v) for v in b]
    n, m = len(x), len(y)
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            if x[i - 1] == y[j - 1]:
                table[i][j] = table[i - 1][j - 1] + 1
            else:
                table[i][j] = max(table[i - 1][j], table[i][j - 1])
    pairs: list[tuple[int, int]] = []
    i, j = n, m
    while i > 0 and j > 0:
        if x[i - 1] == y[j - 1]:
            pairs.insert(0, (i - 1, j - 1))
            i, j = i - 1, j - 1
        elif table[i - 1][j] >= table[i][j - 1]:
            i -= 1
        else:
            j -= 1
    return np.array(pairs, dtype=np.int64).reshape(-1, 2)


def _traceback(table: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    i, j = x.size, y.size
    pairs: list[tuple[int, int]] = []
    while i > 0 and j > 0:
        if x[i - 1] == y[j - 1]:
            pairs.append((i - 1, j - 1))
            i, j = i - 1, j - 1
        elif table[i - 1, j] >= table[i, j - 1]:
            i -= 1
        else:
            j -= 1
    return np.array(pairs[::-1], dtype=np.int64).reshape(-1, 2)


def rms_db_curve(
    samples: np.ndarray, *, frame_length: int = 2048, hop_length: int = 512
) -> np.ndarray:
    r"""Frame loudness in dBFS: :math:`20 \log_{10} \max(\mathrm{rms}_f, 10^{-5})`.

    Parameters
    ----------
    samples : np.ndarray [shape=(n,)]
        Mono audio in [-1, 1].
    frame_length, hop_length : int
        Frame ``f`` covers samples ``[f * hop, f * hop + frame_length)`` (no padding; a clip
        shorter than one frame is one frame of what there is).

    Returns
    -------
    np.ndarray [shape=(F,), float64]
        ``F = 1 + (n - frame_length) // hop`` (at least 1); -100 dBFS for silence.
    """
    y = np.asarray(samples, dtype=np.float64).ravel()
    fl, hop = _positive("frame_length", frame_length), _positive("hop_length", hop_length)
    if y.size == 0:
        raise DataError(expected("samples", "at least one sample", 0))
    if y.size < fl:
        frames = y[None, :]
    else:
        frames = np.lib.stride_tricks.sliding_window_view(y, fl)[::hop]
    rms = np.sqrt(np.mean(frames * frames, axis=1))
    return 20.0 * np.log10(np.maximum(rms, 1e-5))


def rms_db_curve_reference(
    samples: np.ndarray, *, frame_length: int = 2048, hop_length: int = 512
) -> np.ndarray:
    """Loop version of :func:`rms_db_curve` (tests; not in ``__all__``).

    Parameters
    ----------
    samples : np.ndarray [shape=(n,)]
        Mono audio.
    frame_length, hop_length : int
        Frame geometry in samples.
    """
    y = [float(v) for v in np.asarray(samples).ravel()]
    n = len(y)
    count = 1 if n < frame_length else 1 + (n - frame_length) // hop_length
    out = []
    for f in range(count):
        seg = y[f * hop_length : f * hop_length + frame_length]
        rms = math.sqrt(sum(v * v for v in seg) / len(seg))
        out.append(20.0 * math.log10(max(rms, 1e-5)))
    return np.array(out)


def _positive(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ParameterError(expected(name, "a positive integer", value))
    return int(value)
