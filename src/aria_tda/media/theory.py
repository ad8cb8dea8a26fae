r"""Music-theory building blocks of the listening room: keys, chords, Roman numerals, shared runs
and bar:beat positions.

Shared by the symbolic (:mod:`aria_tda.media.reasons_symbolic`) and the audio
(:mod:`aria_tda.media.reasons_audio`) reasons. numpy only.

Conventions
-----------
- **Pitch classes** are integers 0-11, C = 0; they are spelled with :data:`PITCH_NAMES` (sharps
  for C#, F#; flats for Eb, Ab, Bb), whatever the key.
- **Keys** (:func:`estimate_key`): the Krumhansl-Kessler probe-tone profiles (Krumhansl 1990,
  *Cognitive Foundations of Musical Pitch*, table 2.1; :data:`KK_MAJOR`, :data:`KK_MINOR`)
  rotated to each of the 12 tonics give 24 key profiles; the key is the one whose profile has
  the largest Pearson correlation :math:`r` with the pitch-class profile (Krumhansl-Schmuckler
  key finding). ``confidence`` is that :math:`r`, ``margin`` is :math:`r` minus the second
  largest (a small margin means two keys, usually relatives or neighbours, fit about equally).
  Ties go to the first key in the order C major .. B major, C minor .. B minor.
- **Chord qualities** (:data:`QUALITIES`, intervals above the root in semitones): ``"maj"``
  (0 4 7), ``"min"`` (0 3 7), ``"dim"`` (0 3 6), ``"aug"`` (0 4 8), ``"dom7"`` (0 4 7 10),
  ``"maj7"`` (0 4 7 11), ``"min7"`` (0 3 7 10), ``"hdim7"`` (0 3 6 10), ``"dim7"`` (0 3 6 9).
- **Roman numerals** (:func:`roman`): the degree of the chord's root in the key, upper case for
  major-third chords (maj, aug, dom7, maj7), lower case for minor-third chords; suffixes ``o``
  (dim), ``+`` (aug), ``7`` (dom7, min7), ``maj7``, ``ø7`` (hdim7), ``o7`` (dim7). A root off the
  scale gets a ``b`` or ``#`` prefix. Major keys use the major scale (``bII bIII #IV bVI
  bVII`` off it). Minor keys use the natural-minor degrees (``III`` = Eb in C minor, ``VI`` =
  Ab, ``VII`` = Bb), with the raised leading tone recognised: a diminished chord (dim, hdim7,
  dim7) on B in C minor is ``viio`` (``viio7``, ``viiø7``), a major chord on G is ``V`` (its
  case says the leading tone is raised); other chords on B are ``#VII``/``#vii``, and a
  diminished chord on the natural seventh (Bb in C minor, rare) is written ``bviio`` so that it
  never reads like the leading-tone chord. Off-scale roots in minor: ``bII #III #IV #VI``.
- **Chord matching** (:func:`match_chord`): cosine similarity between a pitch-class profile and
  each 0/1 chord template; ties (within 1e-9) go to a root equal to the given bass, then to
  the order of :data:`QUALITIES`, then to the lower root.
- **Shared runs** (:func:`longest_shared_run`): the longest common contiguous runs (substrings)
  of two token sequences, by the dynamic programme :math:`L_{ij} = L_{i-1,j-1} + 1` if
  :math:`a_i = b_j` else 0, :math:`O(|a||b|)` time, one row at a time; all runs of the maximal
  length are listed, at most :data:`MAX_RUNS`, ordered by their start in ``a`` then in ``b``.
- **Tempo from onsets** (:func:`tempo_from_onsets`): the slowest grid every onset lies on (the
  tatum), halved into the 85-170 BPM band (steps in its docstring).
- **Beat grids** (:class:`BeatGrid`): beat and bar-start times in seconds; a bar counts the
  beats of the grid (in 6/8 the grid's beats are the six eighths). Positions between beats are
  interpolated linearly, and beyond the first or last beat extrapolated with the nearest
  beat period; before the first downbeat bars are counted back from ``first_bar`` with the
  meter's beats per bar (an anacrusis is in bar ``first_bar - 1``).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from aria_tda.errors import DataError, ParameterError, expected

__all__ = [
    "KK_MAJOR", "KK_MINOR", "MAX_RUNS", "PITCH_NAMES", "QUALITIES", "BeatGrid", "Key",
    "chord_name", "chord_template", "estimate_key", "longest_shared_run", "match_chord", "roman",
    "tempo_from_onsets",
]  # fmt: skip

#: Spelling of the 12 pitch classes, C = 0.
PITCH_NAMES: tuple[str, ...] = ("C", "C#", "D", "Eb", "E", "F", "F#", "G", "Ab", "A", "Bb", "B")
#: Krumhansl-Kessler major-key probe-tone profile, tonic first.
KK_MAJOR: tuple[float, ...] = (6.35, 2.23, 3.48, 2.33, 4.38, 4.09, 2.52, 5.19, 2.39, 3.66, 2.29,
                               2.88)
#: Krumhansl-Kessler minor-key probe-tone profile, tonic first.
KK_MINOR: tuple[float, ...] = (6.33, 2.68, 3.52, 5.38, 2.60, 3.53, 2.54, 4.75, 3.98, 2.69, 3.34,
                               3.17)
#: Chord qualities: intervals above the root (semitones), in tie-break order.
QUALITIES: dict[str, tuple[int, ...]] = {
    "maj": (0, 4, 7), "min": (0, 3, 7), "dom7": (0, 4, 7, 10), "min7": (0, 3, 7, 10),
    "maj7": (0, 4, 7, 11), "dim": (0, 3, 6), "hdim7": (0, 3, 6, 10), "dim7": (0, 3, 6, 9),
    "aug": (0, 4, 8),
}  # fmt: skip
#: Most runs :func:`longest_shared_run` lists.
MAX_RUNS = 20
_MODES = ("major", "minor")
_UPPER = frozenset({"maj", "aug", "dom7", "maj7"})
_DIMINISHED = frozenset({"dim", "hdim7", "dim7"})
_NUMERAL_SUFFIX = {"maj": "", "min": "", "dim": "o", "aug": "+", "dom7": "7", "maj7": "maj7",
                   "min7": "7", "hdim7": "ø7", "dim7": "o7"}
_NAME_SUFFIX = {"maj": "", "min": "m", "dim": "dim", "aug": "aug", "dom7": "7", "maj7": "maj7",
                "min7": "m7", "hdim7": "m7b5", "dim7": "dim7"}
_ROMAN = ("I", "II", "III", "IV", "V", "VI", "VII")
# semitones above the tonic -> (accidental, scale degree 0-6)
_MAJOR_DEGREES = (("", 0), ("b", 1), ("", 1), ("b", 2), ("", 2), ("", 3), ("#", 3), ("", 4),
                  ("b", 5), ("", 5), ("b", 6), ("", 6))
_MINOR_DEGREES = (("", 0), ("b", 1), ("", 1), ("", 2), ("#", 2), ("", 3), ("#", 3), ("", 4),
                  ("", 5), ("#", 5), ("", 6), ("#", 6))
_TIE = 1e-9
_BPM_RANGE = (40.0, 960.0)  # tatum candidates
_BEAT_BAND = (85.0, 170.0)  # where a halved tatum stops
_MAX_HALVINGS = 3


# --------------------------------------------------------------------------- keys


@dataclass(frozen=True)
class Key:
    """A key found by :func:`estimate_key`.

    Attributes
    ----------
    tonic : int
        Pitch class of the tonic, 0-11 (C = 0).
    mode : str
        ``"major"`` or ``"minor"``.
    confidence : float
        Pearson :math:`r` of the best key profile with the pitch-class profile, in [-1, 1].
    margin : float
        :math:`r` (best) minus :math:`r` (second best), >= 0: small means ambiguous.
    """

    tonic: int
    mode: str
    confidence: float
    margin: float

    def __post_init__(self) -> None:
        if isinstance(self.tonic, bool) or not isinstance(self.tonic, (int, np.integer)) \
                or not 0 <= int(self.tonic) <= 11:
            raise ParameterError(expected("tonic", "a pitch class 0..11", self.tonic))
        if self.mode not in _MODES:
            raise ParameterError(expected("mode", "'major' or 'minor'", self.mode))
        object.__setattr__(self, "tonic", int(self.tonic))

    @property
    def name(self) -> str:
        """The key's name, e.g. ``"D minor"``, ``"Bb major"``."""
        return f"{PITCH_NAMES[self.tonic]} {self.mode}"


def _profile(pc_profile: ArrayLike, name: str = "pc_profile") -> np.ndarray:
    try:
        x = np.asarray(pc_profile, dtype=float)
    except (TypeError, ValueError):
        raise ParameterError(expected(name, "12 numbers", type(pc_profile).__name__)) from None
    if x.shape != (12,):
        raise ParameterError(expected(name, "shape (12,)", x.shape))
    if not np.all(np.isfinite(x)):
        raise ParameterError(expected(name, "finite values", "NaN or inf"))
    return x


def _key_profiles() -> np.ndarray:
    """The 24 key profiles, shape (24, 12): C..B major, then C..B minor."""
    rows = [np.roll(np.asarray(p), t) for p in (KK_MAJOR, KK_MINOR) for t in range(12)]
    return np.asarray(rows)


def estimate_key(pc_profile: ArrayLike) -> Key | None:
    r"""The key whose Krumhansl-Kessler profile best correlates with a pitch-class profile.

    Parameters
    ----------
    pc_profile : array-like [shape=(12,)]
        Weight of each pitch class (C = 0), e.g. total sounding duration or mean chroma.

    Returns
    -------
    Key or None
        ``None`` when the profile is constant (all zero: nothing sounds; all equal: no pitch
        class stands out), where no correlation is defined.

    Notes
    -----
    :math:`r_k = \mathrm{corr}(x, P_k)` for the 24 rotated profiles :math:`P_k`; the key is
    :math:`\arg\max_k r_k`, ``confidence`` :math:`= \max_k r_k`, ``margin`` the gap to the
    runner-up.
    """
    x = _profile(pc_profile)
    xc = x - x.mean()
    nx = float(np.sqrt(xc @ xc))
    if nx <= 1e-12 * max(1.0, float(np.abs(x).max())):
        return None
    p = _key_profiles()
    pc = p - p.mean(axis=1, keepdims=True)
    r = (pc @ xc) / (np.sqrt((pc * pc).sum(axis=1)) * nx)
    best = int(np.argmax(r))
    second = float(np.max(np.delete(r, best)))
    return Key(best % 12, _MODES[best // 12], float(r[best]), float(r[best]) - second)


def estimate_key_reference(pc_profile: ArrayLike) -> Key | None:
    """Plain-loop twin of :func:`estimate_key` (same result)."""
    x = [float(v) for v in _profile(pc_profile)]
    mx = sum(x) / 12.0
    sxx = sum((v - mx) ** 2 for v in x)
    if math.sqrt(sxx) <= 1e-12 * max(1.0, max(abs(v) for v in x)):
        return None
    scores: list[tuple[float, int, str]] = []
    for mode, prof in (("major", KK_MAJOR), ("minor", KK_MINOR)):
        for tonic in range(12):
            q = [prof[(pc - tonic) % 12] for pc in range(12)]
            mq = sum(q) / 12.0
            sqq = sum((v - mq) ** 2 for v in q)
            sxq = sum((x[i] - mx) * (q[i] - mq) for i in range(12))
            scores.append((sxq / math.sqrt(sxx * sqq), tonic, mode))
    best = 0
    for k in range(1, 24):
        if scores[k][0] > scores[best][0]:
            best = k
    second = max(s[0] for k, s in enumerate(scores) if k != best)
    r, tonic, mode = scores[best]
    return Key(tonic, mode, r, r - second)


# --------------------------------------------------------------------------- chords


def _check_chord(root: Any, quality: Any) -> int:
    if isinstance(root, bool) or not isinstance(root, (int, np.integer)) or not 0 <= root <= 11:
        raise ParameterError(expected("root", "a pitch class 0..11", root))
    if quality not in QUALITIES:
        raise ParameterError(expected("quality", "one of " + ", ".join(QUALITIES), quality))
    return int(root)


def chord_name(root: int, quality: str) -> str:
    """A chord symbol: ``"C"``, ``"Dm"``, ``"G7"``, ``"F#dim"``, ``"Bbmaj7"``, ``"Bm7b5"``.

    Parameters
    ----------
    root : int
        Pitch class of the root, 0-11.
    quality : str
        One of :data:`QUALITIES`.
    """
    r = _check_chord(root, quality)
    return PITCH_NAMES[r] + _NAME_SUFFIX[quality]


def roman(root: int, quality: str, key: Key) -> str:
    """The Roman numeral of a chord in a key (conventions in the module docstring).

    Parameters
    ----------
    root : int
        Pitch class of the chord's root, 0-11.
    quality : str
        One of :data:`QUALITIES`.
    key : Key
        The key the numeral is relative to.

    Returns
    -------
    str
        E.g. ``"I"``, ``"ii"``, ``"V7"``, ``"viio"``, ``"bVII"``, ``"iv"``.

    Examples
    --------
    >>> roman(7, "dom7", Key(0, "major", 0.9, 0.1))
    'V7'
    >>> roman(11, "dim", Key(9, "minor", 0.9, 0.1))
    'viio'
    """
    r = _check_chord(root, quality)
    if not isinstance(key, Key):
        raise ParameterError(expected("key", "a Key", type(key).__name__))
    step = (r - key.tonic) % 12
    accidental, degree = (_MAJOR_DEGREES if key.mode == "major" else _MINOR_DEGREES)[step]
    if key.mode == "minor" and quality in _DIMINISHED:
        if step == 11:
            accidental = ""  # the raised leading tone's chord: viio
        elif step == 10:
            accidental = "b"
    numeral = _ROMAN[degree] if quality in _UPPER else _ROMAN[degree].lower()
    return accidental + numeral + _NUMERAL_SUFFIX[quality]


def chord_template(root: int, quality: str) -> np.ndarray:
    """The 0/1 pitch-class template of a chord, shape (12,).

    Parameters
    ----------
    root : int
        Pitch class of the root, 0-11.
    quality : str
        One of :data:`QUALITIES`.
    """
    r = _check_chord(root, quality)
    t = np.zeros(12)
    t[[(r + i) % 12 for i in QUALITIES[quality]]] = 1.0
    return t


def _templates() -> tuple[np.ndarray, list[tuple[int, str]]]:
    labels = [(root, q) for q in QUALITIES for root in range(12)]
    return np.asarray([chord_template(r, q) for r, q in labels]), labels


def match_chord(pc_profile: ArrayLike, *, bass: int | None = None) -> tuple[int, str, float] | None:
    """The chord whose template best matches a pitch-class profile (cosine similarity).

    Parameters
    ----------
    pc_profile : array-like [shape=(12,)], non-negative
        Weight of each pitch class in the segment (e.g. sounding duration).
    bass : int, optional
        Pitch class of the lowest note; breaks ties in favour of a root position reading.

    Returns
    -------
    (root, quality, score) or None
        ``score`` is the cosine in [0, 1]; ``None`` for an all-zero profile (silence).
    """
    x = _profile(pc_profile)
    if np.any(x < 0):
        raise ParameterError(expected("pc_profile", "non-negative weights", float(x.min())))
    if bass is not None:
        bass = _check_chord(bass, "maj")
    nx = float(np.sqrt(x @ x))
    if nx == 0.0:
        return None
    t, labels = _templates()
    cos = (t @ x) / (np.sqrt((t * t).sum(axis=1)) * nx)
    top = float(cos.max())
    near = np.flatnonzero(cos >= top - _TIE)
    pick = int(near[0])
    if bass is not None:
        rooted = [k for k in near if labels[k][0] == bass]
        pick = int(rooted[0]) if rooted else pick
    root, quality = labels[pick]
    return root, quality, float(cos[pick])


def match_chord_reference(
    pc_profile: ArrayLike, *, bass: int | None = None
) -> tuple[int, str, float] | None:
    """Plain-loop twin of :func:`match_chord` (same result)."""
    x = [float(v) for v in _profile(pc_profile)]
    if min(x) < 0:
        raise ParameterError(expected("pc_profile", "non-negative weights", min(x)))
    nx = math.sqrt(sum(v * v for v in x))
    if nx == 0.0:
        return None
    scored: list[tuple[float, int, str]] = []
    for quality, steps in QUALITIES.items():
        for root in range(12):
            pcs = {(root + s) % 12 for s in steps}
            scored.append((sum(x[p] for p in pcs) / (math.sqrt(len(pcs)) * nx), root, quality))
    top = max(s[0] for s in scored)
    near = [s for s in scored if s[0] >= top - _TIE]
    pick = near[0]
    if bass is not None:
        for s in near:
            if s[1] == bass:
                pick = s
                break
    return pick[1], pick[2], pick[0]


# --------------------------------------------------------------------------- shared runs


def _codes(a: Sequence[Hashable], b: Sequence[Hashable]) -> tuple[np.ndarray, np.ndarray]:
    table: dict[Hashable, int] = {}
    for name, seq in (("a", a), ("b", b)):
        if isinstance(seq, (str, bytes)) or not hasattr(seq, "__len__"):
            raise ParameterError(expected(name, "a sequence of hashable tokens",
                                          type(seq).__name__))
    try:
        ca = np.asarray([table.setdefault(x, len(table)) for x in a], dtype=np.int64)
        cb = np.asarray([table.setdefault(x, len(table)) for x in b], dtype=np.int64)
    except TypeError as exc:
        raise ParameterError(expected("a, b", "hashable tokens", str(exc))) from None
    return ca, cb


def _min_length(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ParameterError(expected("min_length", "an integer >= 1", value))
    return int(value)


def longest_shared_run(
    a: Sequence[Hashable], b: Sequence[Hashable], *, min_length: int = 2
) -> list[tuple[int, int, int]]:
    r"""The longest runs of consecutive tokens that two sequences share.

    Parameters
    ----------
    a, b : sequence of hashable
        Token sequences (intervals, durations, numerals ...). Tokens compare with ``==``.
    min_length : int, default 2
        Shortest run worth reporting.

    Returns
    -------
    list of (start_a, start_b, length)
        Every run of the maximal shared length (``a[start_a:start_a+length] ==
        b[start_b:start_b+length]``), ordered by ``start_a`` then ``start_b``, at most
        :data:`MAX_RUNS`; empty when no run of ``min_length`` tokens is shared.

    Notes
    -----
    :math:`L_{ij} = L_{i-1,j-1} + 1` when :math:`a_i = b_j`, else 0; the runs end where
    :math:`L_{ij} = \max L`. Time :math:`O(|a||b|)`, memory :math:`O(|b|)`.
    """
    ca, cb = _codes(a, b)
    k = _min_length(min_length)
    best, ends = 0, list[tuple[int, int]]()
    prev = np.zeros(cb.shape[0] + 1, dtype=np.int64)
    for i in range(ca.shape[0]):
        row = np.zeros_like(prev)
        row[1:] = np.where(cb == ca[i], prev[:-1] + 1, 0)
        top = int(row.max())
        if top > best:
            best, ends = top, []
        if top == best and top > 0:
            ends.extend((i, int(j) - 1) for j in np.flatnonzero(row == top))
        prev = row
    if best < k:
        return []
    runs = sorted((i - best + 1, j - best + 1, best) for i, j in ends)
    return runs[:MAX_RUNS]


def longest_shared_run_reference(
    a: Sequence[Hashable], b: Sequence[Hashable], *, min_length: int = 2
) -> list[tuple[int, int, int]]:
    """Plain-loop twin of :func:`longest_shared_run` (same result)."""
    ca, cb = _codes(a, b)
    k = _min_length(min_length)
    x, y = ca.tolist(), cb.tolist()
    found: list[tuple[int, int, int]] = []
    best = 0
    for i in range(len(x)):
        for j in range(len(y)):
            n = 0
            while i + n < len(x) and j + n < len(y) and x[i + n] == y[j + n]:
                n += 1
            if n > best:
                best, found = n, []
            if n == best and n > 0:
                found.append((i, j, n))
    if best < k:
        return []
    return sorted(found)[:MAX_RUNS]


# --------------------------------------------------------------------------- tempo


def _octaves(b0: float) -> int:
    """How many times the tatum tempo is halved to bring it below the beat band's top."""
    return next(j for j in range(_MAX_HALVINGS + 1) if b0 / 2**j < _BEAT_BAND[1] or
                j == _MAX_HALVINGS)


def tempo_from_onsets(onsets: ArrayLike) -> tuple[float, float] | None:
    r"""Beat tempo and phase of a set of onsets (for excerpts without a tempo map).

    1. For each candidate tempo :math:`b` from 40 to 960 BPM (step 0.5, period
       :math:`P = 60 / b`), the phase coherence of the onsets
       :math:`R(b) = |\frac1n \sum_k e^{2\pi i (t_k - t_0) / P}|` (1 when every onset lies on
       the grid of period :math:`P`).
    2. The *tatum* :math:`b_0`: the slowest tempo with :math:`R \ge 0.9 \max R`, moved up to
       the top of its peak (every onset lies on its grid; slower grids miss some).
    3. The beat: the tatum halved (at most 3 times) until it is below 170 BPM, so the beat lies
       in [85, 170) BPM when the tatum allows (duple subdivision assumed, as with an assumed
       4/4).
    4. Phase: of the :math:`2^j` tatum-grid phases of the beat, the one on which the onsets
       weighted by their inter-onset interval (longer notes mark beats) fall most (within a
       quarter tatum); ties to the earliest.

    Parameters
    ----------
    onsets : array-like [shape=(n,)]
        Onset times in seconds.

    Returns
    -------
    (bpm, phase) or None
        The beat tempo and the time of a beat, in ``[0, 60 / bpm)``; ``None`` with fewer than 3
        onsets or all onsets at one time.
    """
    t = np.sort(_times("onsets", onsets, increasing=False))
    if t.size < 3 or t[-1] - t[0] <= 0:
        return None
    x = t - t[0]
    bpm = _bpm_candidates()
    z = np.exp(2j * np.pi * x[None, :] * (bpm[:, None] / 60.0)).mean(axis=1)
    r = np.abs(z)
    k = int(np.flatnonzero(r >= 0.9 * r.max())[0])
    while k + 1 < r.size and r[k + 1] > r[k]:
        k += 1
    j = _octaves(float(bpm[k]))
    p0 = 60.0 / float(bpm[k])
    phase0 = (float(np.angle(z[k])) / (2 * np.pi)) % 1.0 * p0
    period = p0 * 2**j
    ioi = np.diff(x)
    w = np.append(ioi, np.median(ioi))
    best, best_m = -1.0, 0
    for m in range(2**j):
        d = (x - phase0 - m * p0) % period
        dist = np.minimum(d, period - d)
        score = float(w[dist <= p0 / 4].sum())
        if score > best + 1e-12:
            best, best_m = score, m
    return float(bpm[k]) / 2**j, float((t[0] + phase0 + best_m * p0) % period)


def tempo_from_onsets_reference(onsets: ArrayLike) -> tuple[float, float] | None:
    """Plain-loop twin of :func:`tempo_from_onsets` (same result)."""
    t = sorted(float(v) for v in _times("onsets", onsets, increasing=False))
    if len(t) < 3 or t[-1] - t[0] <= 0:
        return None
    x = [v - t[0] for v in t]
    cands = [float(b) for b in _bpm_candidates()]
    rs, angles = [], []
    for b in cands:
        re = sum(math.cos(2 * math.pi * v * (b / 60.0)) for v in x) / len(x)
        im = sum(math.sin(2 * math.pi * v * (b / 60.0)) for v in x) / len(x)
        rs.append(math.hypot(re, im))
        angles.append(math.atan2(im, re))
    top = max(rs)
    k = next(i for i, v in enumerate(rs) if v >= 0.9 * top)
    while k + 1 < len(rs) and rs[k + 1] > rs[k]:
        k += 1
    j = _octaves(cands[k])
    p0 = 60.0 / cands[k]
    phase0 = (angles[k] / (2 * math.pi)) % 1.0 * p0
    period = p0 * 2**j
    iois = [x[i + 1] - x[i] for i in range(len(x) - 1)]
    w = [*iois, float(np.median(iois))]
    best, best_m = -1.0, 0
    for m in range(2**j):
        score = 0.0
        for v, wk in zip(x, w, strict=True):
            d = (v - phase0 - m * p0) % period
            if min(d, period - d) <= p0 / 4:
                score += wk
        if score > best + 1e-12:
            best, best_m = score, m
    return cands[k] / 2**j, (t[0] + phase0 + best_m * p0) % period


def _bpm_candidates() -> np.ndarray:
    return np.arange(_BPM_RANGE[0], _BPM_RANGE[1] + 0.25, 0.5)


# --------------------------------------------------------------------------- beat grids


def _times(name: str, value: Any, *, increasing: bool = True) -> np.ndarray:
    try:
        x = np.asarray(value, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise ParameterError(expected(name, "a sequence of times (s)",
                                      type(value).__name__)) from None
    if not np.all(np.isfinite(x)):
        raise ParameterError(expected(name, "finite times", "NaN or inf"))
    if increasing and x.size > 1 and np.any(np.diff(x) <= 0):
        raise ParameterError(expected(name, "strictly increasing times", "a time not after the "
                                      "one before"))
    x.setflags(write=False)
    return x


def _beats_per_bar(meter: str) -> int | None:
    head = meter.rstrip("?").split("/")[0]
    return int(head) if head.isdigit() and int(head) > 0 else None


@dataclass(frozen=True, eq=False)
class BeatGrid:
    """Beats and bars of an excerpt, to name positions as "bar 3, beat 2".

    Attributes
    ----------
    beats : np.ndarray [shape=(n,)]
        Beat times in seconds (clip or file time, as given), strictly increasing; the units
        the meter counts (quarters in 4/4, eighths in 6/8).
    downbeats : np.ndarray [shape=(m,)]
        Bar starts in seconds, a subset of ``beats`` (empty when bars are unknown).
    meter : str
        ``"4/4"``, ``"3/4"``, ``"6/8"`` ..., with a trailing ``"?"`` when assumed, or ``"?"``
        when unknown.
    first_bar : int
        Number of the bar that starts at ``downbeats[0]`` (1-based).
    """

    beats: np.ndarray
    downbeats: np.ndarray
    meter: str = "?"
    first_bar: int = 1

    def __post_init__(self) -> None:
        beats = _times("beats", self.beats)
        down = _times("downbeats", self.downbeats)
        if not isinstance(self.meter, str) or not self.meter:
            raise ParameterError(expected("meter", "a meter such as '4/4' or '?'", self.meter))
        if isinstance(self.first_bar, bool) or not isinstance(self.first_bar, (int, np.integer)):
            raise ParameterError(expected("first_bar", "an integer", self.first_bar))
        index = np.zeros(0, dtype=np.int64)
        if down.size and not beats.size:
            raise ParameterError(expected("downbeats", "a subset of beats", "no beats"))
        if down.size:
            index = np.abs(down[:, None] - beats[None, :]).argmin(axis=1)
            period = float(np.median(np.diff(beats))) if beats.size > 1 else 1.0
            if np.any(np.abs(beats[index] - down) > 0.01 * period + 1e-9):
                raise ParameterError(expected("downbeats", "a subset of beats",
                                              "a downbeat between beats"))
        object.__setattr__(self, "beats", beats)
        object.__setattr__(self, "downbeats", down)
        object.__setattr__(self, "first_bar", int(self.first_bar))
        object.__setattr__(self, "_down_index", index)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BeatGrid):
            return NotImplemented
        return (self.meter == other.meter and self.first_bar == other.first_bar
                and np.array_equal(self.beats, other.beats)
                and np.array_equal(self.downbeats, other.downbeats))

    def __hash__(self) -> int:
        return hash((self.meter, self.first_bar, self.beats.tobytes(), self.downbeats.tobytes()))

    def beat_index(self, t: float) -> float:
        """Fractional index of time ``t`` among the beats (0 = first beat), extrapolated.

        Parameters
        ----------
        t : float
            A time in seconds, in the grid's time base.
        """
        b = self.beats
        if b.size < 2:
            raise DataError(expected("beats", "at least 2 beats to place a time on", b.size))
        t = float(t)
        if t <= b[0]:
            return (t - b[0]) / (b[1] - b[0])
        if t >= b[-1]:
            return b.size - 1 + (t - b[-1]) / (b[-1] - b[-2])
        j = int(np.searchsorted(b, t, side="right")) - 1
        return j + (t - b[j]) / (b[j + 1] - b[j])

    def _locate(self, fb: float) -> tuple[int, float]:
        idx: np.ndarray = self._down_index  # type: ignore[attr-defined]
        if idx.size == 0:
            return 0, fb + 1.0
        meter = _beats_per_bar(self.meter)
        first = meter or (int(idx[1] - idx[0]) if idx.size > 1 else 4)
        last = meter or (int(idx[-1] - idx[-2]) if idx.size > 1 else 4)
        if fb < idx[0]:
            back = math.ceil((idx[0] - fb) / first - 1e-9)
            return self.first_bar - back, fb - (idx[0] - back * first) + 1.0
        k = int(np.searchsorted(idx, fb + 1e-9, side="right")) - 1
        if k == idx.size - 1:
            more = math.floor((fb - idx[k]) / last + 1e-9)
            return self.first_bar + k + more, fb - idx[k] - more * last + 1.0
        return self.first_bar + k, fb - idx[k] + 1.0

    def bar_beat(self, t: float) -> tuple[int, float]:
        """(bar, beat) of time ``t``: bar 1-based from ``first_bar``, beat 1-based, fractional.

        Without downbeats the bar is 0 and the beat counts from the first beat (beat 1).

        Parameters
        ----------
        t : float
            A time in seconds, in the grid's time base.

        Raises
        ------
        DataError
            if the grid has fewer than 2 beats.
        """
        bar, beat = self._locate(self.beat_index(t))
        return int(bar), float(beat)

    def position(self, t: float) -> str:
        """``"bar 3, beat 2"`` (beat rounded to the nearest half: ``"beat 2.5"``).

        ``"beat 17"`` when bars are unknown and ``"12.3 s"`` when the grid has fewer than 2
        beats.

        Parameters
        ----------
        t : float
            A time in seconds, in the grid's time base.
        """
        if self.beats.size < 2:
            return f"{float(t):.1f} s"
        fb = round(self.beat_index(t) * 2.0) / 2.0
        bar, beat = self._locate(fb)
        text = f"{beat:.1f}".removesuffix(".0")
        return f"bar {bar}, beat {text}" if self.downbeats.size else f"beat {text}"
