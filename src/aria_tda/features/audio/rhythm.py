r"""Rhythm channel: interval histograms, librosa beat tracking and a downbeat estimate.

Conventions
-----------
- Times in seconds. Beat positions follow madmom/BeatNet: 1 = downbeat, 2..m = the other beats
  of an m-beat bar.
- Interval histogram (beat-interval and onset-interval features): the successive differences
  :math:`\Delta_i = t_{i+1} - t_i` of the sorted event times, counted in ``bins`` equal-width
  bins over the closed range ``[lo, hi]`` (intervals outside it are dropped) and divided by the
  number counted, so the histogram sums to 1; it is all zeros when no interval falls in the
  range (fewer than two events, or none in range: "no rhythmic evidence").

Downbeat estimate of the ``"librosa"`` beat backend
---------------------------------------------------
``librosa.beat.beat_track`` (Ellis 2007 dynamic programming) gives beats only. Bars are then
found with two classic downbeat cues (Goto 2001; Davies & Plumbley 2006): harmony tends to
change at bar lines, and the bass/kick accents them. For every beat :math:`i`:

.. math::

    h_i = 1 - \cos(\bar c_{i-1}, \bar c_i), \qquad
    b_i = \max_{f \in [f_i - 1, f_i + 2]} o^{\mathrm{low}}(f), \qquad
    s_i = z(h)_i + z(b)_i

with :math:`\bar c_i` the mean chroma between beat :math:`i` and the next, :math:`o^{\mathrm{low}}`
the onset strength of the mel bands below 150 Hz and :math:`z` standardisation over the clip.
Each meter :math:`m` of ``beats_per_bar`` and phase :math:`\varphi < m` scores
:math:`\mathrm{mean}_{i \equiv \varphi \ (m)} s_i - \mathrm{mean}_{i \not\equiv \varphi \ (m)} s_i`;
the best (first on ties) fixes the bar positions. With fewer than :math:`2m` beats for every
meter, the first beat is taken as a downbeat of the largest meter.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from aria_tda.errors import DataError, expected

__all__ = [
    "estimate_downbeats",
    "interval_histogram",
]


def interval_histogram(times: np.ndarray, *, bins: int, range: tuple[float, float]) -> np.ndarray:
    """Normalised histogram of successive intervals of event ``times`` (see module docstring).

    Parameters
    ----------
    times : np.ndarray [shape=(n,)] seconds (any order)
    bins : int
    range : (lo, hi) seconds

    Returns
    -------
    np.ndarray [shape=(bins,), float64], sums to 1 or is all zeros
    """
    t = np.sort(np.asarray(times, dtype=float).ravel())
    if not np.all(np.isfinite(t)):
        raise DataError("times: expected finite event times, got NaN or inf")
    lo, hi = range
    iv = np.diff(t)
    iv = iv[(iv >= lo) & (iv <= hi)]
    h = np.histogram(iv, bins=bins, range=(lo, hi))[0].astype(float)
    total = h.sum()
    return h / total if total > 0 else h


def interval_histogram_reference(
    times: Sequence[float], *, bins: int, range: tuple[float, float]
) -> np.ndarray:
    """Loop version of :func:`interval_histogram` (tests; not in ``__all__``).

    Parameters
    ----------
    times : sequence of float
        Event times in seconds (any order).
    bins : int
        Number of histogram bins.
    range : (float, float)
        Interval range (lo, hi) in seconds.
    """
    t = sorted(float(x) for x in times)
    lo, hi = range
    width = (hi - lo) / bins
    h = [0.0] * bins
    for a, b in itertools.pairwise(t):
        d = b - a
        if lo <= d <= hi:
            h[min(int((d - lo) / width), bins - 1)] += 1
    s = sum(h)
    return np.array([x / s for x in h]) if s > 0 else np.zeros(bins)


def _z(x: np.ndarray) -> np.ndarray:
    sd = x.std()
    return (x - x.mean()) / sd if sd > 1e-12 else np.zeros_like(x)


def estimate_downbeats(
    beat_frames: np.ndarray,
    *,
    chroma: np.ndarray,
    bass_onset: np.ndarray,
    beats_per_bar: Sequence[int] = (3, 4),
) -> np.ndarray:
    """Bar positions (1 = downbeat) of tracked beats from harmonic change and bass accents.

    Parameters
    ----------
    beat_frames : np.ndarray [shape=(n,), int] increasing frame indices
    chroma : np.ndarray [shape=(12, T)]
    bass_onset : np.ndarray [shape=(T',)] low-band onset strength on the same frame grid
    beats_per_bar : meters to consider

    Returns
    -------
    np.ndarray [shape=(n,), int64] values in 1..m
    """
    f = np.asarray(beat_frames, dtype=np.int64)
    n = f.size
    meters = [int(m) for m in beats_per_bar]
    if not meters or min(meters) < 1:
        raise DataError(expected("beats_per_bar", "positive meters", beats_per_bar))
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    usable = [m for m in meters if n >= 2 * m]
    if not usable:
        return (np.arange(n) % max(meters) + 1).astype(np.int64)
    t_max = chroma.shape[1]
    bounds = np.append(np.clip(f, 0, t_max - 1), t_max)
    cbar = np.stack(
        [chroma[:, a : max(b, a + 1)].mean(axis=1) for a, b in itertools.pairwise(bounds)]
    )
    norms = np.linalg.norm(cbar, axis=1)
    norms[norms <= 1e-12] = 1.0
    cn = cbar / norms[:, None]
    h = np.empty(n)
    h[1:] = 1.0 - np.sum(cn[1:] * cn[:-1], axis=1)
    h[0] = h[1:].mean() if n > 1 else 0.0
    lo_f = np.clip(f - 1, 0, bass_onset.size)
    hi_f = np.clip(f + 3, 0, bass_onset.size)
    b = np.array([bass_onset[a:c].max() if c > a else 0.0 for a, c in zip(lo_f, hi_f, strict=True)])
    s = _z(h) + _z(b)
    best, best_m, best_phi = -np.inf, usable[-1], 0
    for m in usable:
        for phi in range(m):
            on = np.zeros(n, dtype=bool)
            on[phi::m] = True
            score = s[on].mean() - s[~on].mean()
            if score > best + 1e-12:
                best, best_m, best_phi = score, m, phi
    return ((np.arange(n) - best_phi) % best_m + 1).astype(np.int64)
