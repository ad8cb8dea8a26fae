r"""Chord recognition on chroma (template matching + HMM/Viterbi) and root-motion sequences.

The default chord backend of :mod:`aria_tda.features.audio` (``chord_backend="template"``): it
reuses the constant-Q transform already computed for the timbre channel, so it costs a few
tens of milliseconds per clip, needs no trained model and runs anywhere.

Conventions
-----------
- Vocabulary (MIREX "majmin"): 25 states, index 0 = ``"N"`` (no chord), 1-12 = ``"C:maj"`` …
  ``"B:maj"``, 13-24 = ``"C:min"`` … ``"B:min"`` (:data:`CHORD_LABELS`). Pitch class 0 = C.
- Input: two chromas folded from a CQT magnitude (:func:`cqt_chroma`): the *treble* chroma
  of the bins from C3 (130.8 Hz) up and the *bass* chroma of C2-B3 (65.4-246.9 Hz), each
  max-normalised per frame and median-filtered over ``smoothing`` seconds (drum hits and
  other transients are shorter than that). The lowest CQT octave is left out of the treble
  chroma: its filters are ~0.5 s long and smear chord boundaries.
- Templates: binary triads ``{r, r+4, r+7}`` (major) and ``{r, r+3, r+7}`` (minor).
- Frame score (:func:`chord_scores`): Pearson correlation of the treble chroma with the
  template plus ``bass_weight`` times the bass chroma at the chord's root; N scores 0.
  Emission (log domain, up to a per-frame constant): :math:`\log b_k(t) = \beta\, s_k(t)`.
  Frames marked silent (energy floor) get :math:`\log b_N = 0` and :math:`-\infty` elsewhere.
- Transitions: stay with probability :math:`p = \exp(-\Delta t / d)` (``d`` = mean chord
  duration in seconds, :math:`\Delta t` = frame period), switch to each of the 24 other states
  with :math:`(1-p)/24`; uniform start.
- Decoding: exact max-product Viterbi (:func:`viterbi`, checked against the exhaustive
  :func:`viterbi_reference`).
- Known limits: a triad vocabulary reads seventh chords as their strongest triad (Dm7 may come
  out as F); a walking bass pulls roots towards the bass notes (``bass_weight=0`` removes the
  bass cue). On rendered test progressions (piano, strings, organ, guitar, with drums, melody,
  inversions) the recognised roots match on >= 97% of the duration.

Root motion (the ``chord_progression`` feature, paper appendix "Chord progression
similarity"): :func:`root_motions` maps chord segments to the sequence of root intervals
:math:`(r_{i+1} - r_i) \bmod 12`. No-chord (N) segments are dropped first (a gap is not a
chord), then consecutive segments with the same root are merged (``C:maj → C:min`` is no root
motion; this also removes recogniser flicker), so every motion is in 1..11. A clip with fewer
than two distinct consecutive roots has the empty sequence.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from aria_tda._checks import check_float
from aria_tda.errors import DataError, ParameterError, expected

__all__ = [
    "CHORD_LABELS",
    "ChordSegment",
    "chord_log_emissions",
    "chord_scores",
    "chord_templates",
    "coverage",
    "cqt_chroma",
    "decode_chords",
    "root_motions",
    "segments_from_path",
    "transition_matrix",
    "viterbi",
]

_NAMES = ("C", "C#", "D", "D#", "E", "F", "F#", "G", "G#", "A", "A#", "B")
CHORD_LABELS: tuple[str, ...] = ("N", *(f"{n}:maj" for n in _NAMES), *(f"{n}:min" for n in _NAMES))
N_STATES = len(CHORD_LABELS)


@dataclass(frozen=True)
class ChordSegment:
    """A chord segment: ``[start, end)`` seconds, ``root`` pitch class (-1 for N), ``label``."""

    start: float
    end: float
    root: int
    label: str

    @property
    def duration(self) -> float:
        return self.end - self.start


def state_root(k: int) -> int:
    """Root pitch class of vocabulary state ``k`` (-1 for N)."""
    return -1 if k == 0 else (k - 1) % 12


def chord_templates() -> np.ndarray:
    """Binary templates of the 25 states.

    Returns
    -------
    np.ndarray [shape=(25, 12)]
        Row 0 (N) is all ones; rows 1-12 major, 13-24 minor triads, roots C..B.
    """
    t = np.zeros((N_STATES, 12))
    t[0] = 1.0
    for r in range(12):
        t[1 + r, [r, (r + 4) % 12, (r + 7) % 12]] = 1.0
        t[13 + r, [r, (r + 3) % 12, (r + 7) % 12]] = 1.0
    return t


def cqt_chroma(
    cqt_mag: np.ndarray,
    *,
    bins_per_octave: int,
    fmin: float,
    lo_hz: float,
    hi_hz: float | None = None,
) -> np.ndarray:
    r"""Fold the CQT bins with centre frequency in ``[lo_hz, hi_hz)`` into a max-normalised chroma.

    Parameters
    ----------
    cqt_mag : np.ndarray [shape=(n_bins, T)]
        CQT magnitudes, bin ``i`` at ``fmin * 2**(i / bins_per_octave)``
    bins_per_octave, fmin : the CQT's geometry
    lo_hz, hi_hz : frequency band kept (``hi_hz=None``: up to the top bin)

    Returns
    -------
    np.ndarray [shape=(12, T)], each frame divided by its maximum (all-zero frames stay zero)
    """
    import librosa

    c = np.asarray(cqt_mag, dtype=float)
    freqs = fmin * 2.0 ** (np.arange(c.shape[0]) / bins_per_octave)
    keep = np.flatnonzero((freqs >= lo_hz * (1 - 1e-6)) & (freqs < (hi_hz or np.inf) * (1 - 1e-6)))
    if keep.size < bins_per_octave:
        raise DataError(
            expected(
                "cqt_mag",
                f"at least one octave of bins in [{lo_hz:g}, {hi_hz or np.inf:g}) Hz",
                keep.size,
            )
        )
    fold = librosa.filters.cq_to_chroma(
        keep.size, bins_per_octave=bins_per_octave, fmin=float(freqs[keep[0]]), n_chroma=12
    )
    ch = fold @ c[keep[0] : keep[-1] + 1]
    peak = ch.max(axis=0, keepdims=True)
    return ch / np.where(peak > 0, peak, 1.0)


def chord_scores(
    treble: np.ndarray, bass: np.ndarray | None = None, *, bass_weight: float = 0.5
) -> np.ndarray:
    r"""Per-frame match :math:`s_k(t)` of the 25 states.

    .. math::

        s_k(t) = \rho(x_t, \tau_k) + \lambda\, b_t[r_k], \qquad s_N(t) = 0

    :math:`\rho` is Pearson's correlation over the 12 pitch classes between the treble chroma
    frame and the binary triad template (invariant to gain and to a constant offset, unlike the
    cosine, so broadband noise does not look like every chord), :math:`b_t` the max-normalised
    bass chroma, :math:`r_k` the root of state :math:`k` and :math:`\lambda` = ``bass_weight``.
    A frame whose treble chroma is flat scores 0 everywhere, and N wins the tie.

    Parameters
    ----------
    treble : np.ndarray [shape=(12, T)], non-negative
    bass : np.ndarray [shape=(12, T)], optional
    bass_weight : float >= 0

    Returns
    -------
    np.ndarray [shape=(25, T)]
    """
    x = _chroma_arg("treble", treble)
    tmpl = chord_templates()[1:]
    tmpl = tmpl - tmpl.mean(axis=1, keepdims=True)
    tmpl /= np.linalg.norm(tmpl, axis=1, keepdims=True)
    xc = x - x.mean(axis=0, keepdims=True)
    norms = np.linalg.norm(xc, axis=0)
    xc /= np.where(norms > 1e-12, norms, 1.0)
    out = np.zeros((N_STATES, x.shape[1]))
    out[1:] = tmpl @ xc
    if bass is not None and bass_weight > 0:
        b = _chroma_arg("bass", bass)
        if b.shape != x.shape:
            raise DataError(expected("bass", f"shape {x.shape}", b.shape))
        roots = np.array([state_root(k) for k in range(1, N_STATES)])
        out[1:] += bass_weight * b[roots]
    return out


def _chroma_arg(name: str, chroma: np.ndarray) -> np.ndarray:
    x = np.asarray(chroma, dtype=float)
    if x.ndim != 2 or x.shape[0] != 12:
        raise DataError(expected(name, "an array of shape (12, n_frames)", x.shape))
    if not np.all(np.isfinite(x)):
        raise DataError(f"{name}: expected finite values, got NaN or inf")
    return x


def chord_log_emissions(
    treble: np.ndarray,
    bass: np.ndarray | None = None,
    *,
    beta: float = 3.0,
    bass_weight: float = 0.5,
    silent: np.ndarray | None = None,
) -> np.ndarray:
    r"""Log emission scores :math:`\beta\, s_k(t)` (:func:`chord_scores`); silent frames are N.

    Parameters
    ----------
    treble, bass : np.ndarray [shape=(12, T)]
    beta : float > 0
        Inverse temperature: larger trusts single frames more.
    bass_weight : float >= 0
    silent : np.ndarray [shape=(T,), bool], optional
        Frames forced to N (:math:`\log b_N = 0`, :math:`-\infty` elsewhere).

    Returns
    -------
    np.ndarray [shape=(25, T)]
    """
    out = beta * chord_scores(treble, bass, bass_weight=bass_weight)
    if silent is not None:
        silent = np.asarray(silent, dtype=bool)
        if silent.shape != (out.shape[1],):
            raise DataError(
                expected("silent", f"a boolean array of shape ({out.shape[1]},)", silent.shape)
            )
        out[:, silent] = -np.inf
        out[0, silent] = 0.0
    return out


def transition_matrix(self_prob: float, n_states: int = N_STATES) -> np.ndarray:
    """Log transition matrix: stay with ``self_prob``, switch uniformly otherwise. Shape (K, K).

    Parameters
    ----------
    self_prob : float
        Probability of staying in the same state.
    n_states : int
        Number of states (default: the 25 maj/min/N chords).
    """
    p = check_float("self_prob", self_prob, min_value=0.0, max_value=1.0, max_inclusive=False)
    a = np.full((n_states, n_states), (1.0 - p) / (n_states - 1))
    np.fill_diagonal(a, p)
    with np.errstate(divide="ignore"):
        return np.log(a)


def viterbi(
    log_emit: np.ndarray, log_trans: np.ndarray, log_init: np.ndarray | None = None
) -> np.ndarray:
    r"""Most likely state path (max-product Viterbi, log domain).

    .. math:: \delta_t(j) = \log b_j(t) + \max_i [\delta_{t-1}(i) + \log a_{ij}]

    Parameters
    ----------
    log_emit : np.ndarray [shape=(K, T)]
    log_trans : np.ndarray [shape=(K, K)], ``log_trans[i, j]`` = log P(j | i)
    log_init : np.ndarray [shape=(K,)], optional (uniform)

    Returns
    -------
    np.ndarray [shape=(T,), int64]
        Ties go to the lower state index.
    """
    e = np.asarray(log_emit, dtype=float)
    k, t = e.shape
    a = np.asarray(log_trans, dtype=float)
    if a.shape != (k, k):
        raise ParameterError(expected("log_trans", f"shape ({k}, {k})", a.shape))
    init = np.full(k, -np.log(k)) if log_init is None else np.asarray(log_init, dtype=float)
    if t == 0:
        return np.zeros(0, dtype=np.int64)
    back = np.empty((t, k), dtype=np.int64)
    delta = init + e[:, 0]
    for i in range(1, t):
        cand = delta[:, None] + a  # (from, to)
        back[i] = np.argmax(cand, axis=0)
        delta = cand[back[i], np.arange(k)] + e[:, i]
    path = np.empty(t, dtype=np.int64)
    path[-1] = int(np.argmax(delta))
    for i in range(t - 1, 0, -1):
        path[i - 1] = back[i, path[i]]
    return path


def viterbi_reference(
    log_emit: np.ndarray, log_trans: np.ndarray, log_init: np.ndarray | None = None
) -> np.ndarray:
    """Exhaustive search over all K**T paths (tests only; tiny inputs; not in ``__all__``).

    Parameters
    ----------
    log_emit : np.ndarray [shape=(K, T)]
        Log emission scores.
    log_trans : np.ndarray [shape=(K, K)]
        ``log_trans[i, j]`` = log P(j | i).
    log_init : np.ndarray [shape=(K,)], optional
        Log initial probabilities (uniform).
    """
    e = np.asarray(log_emit, dtype=float)
    k, t = e.shape
    init = np.full(k, -np.log(k)) if log_init is None else np.asarray(log_init, dtype=float)
    best, best_path = -np.inf, None
    for path in itertools.product(range(k), repeat=t):
        s = init[path[0]] + e[path[0], 0]
        for i in range(1, t):
            s += log_trans[path[i - 1], path[i]] + e[path[i], i]
        if s > best:
            best, best_path = s, path
    return np.asarray(best_path, dtype=np.int64)


def segments_from_path(
    path: np.ndarray, frame_times: np.ndarray, end_time: float
) -> list[ChordSegment]:
    """Merge runs of equal states into :class:`ChordSegment` s (frame i covers [t_i, t_{i+1})).

    Parameters
    ----------
    path : np.ndarray [shape=(T,), int]
        State per frame (Viterbi path).
    frame_times : np.ndarray [shape=(T,)]
        Start time of each frame in seconds.
    end_time : float
        End of the last frame in seconds.
    """
    path = np.asarray(path)
    if path.size == 0:
        return []
    change = np.flatnonzero(np.diff(path)) + 1
    starts = np.concatenate([[0], change])
    ends = np.concatenate([change, [path.size]])
    out = []
    for s, e in zip(starts, ends, strict=True):
        k = int(path[s])
        t1 = float(frame_times[e]) if e < path.size else float(end_time)
        out.append(ChordSegment(float(frame_times[s]), t1, state_root(k), CHORD_LABELS[k]))
    return out


def decode_chords(
    treble: np.ndarray,
    bass: np.ndarray | None = None,
    *,
    frame_period: float,
    mean_duration: float = 1.0,
    beta: float = 3.0,
    bass_weight: float = 0.5,
    smoothing: float = 0.25,
    silent: np.ndarray | None = None,
    start_time: float = 0.0,
) -> list[ChordSegment]:
    r"""Recognise maj/min/N chords from chroma (template matching + Viterbi).

    Steps: median filter of both chromas over ``smoothing`` seconds (removes percussive
    transients), :func:`chord_log_emissions`, :func:`viterbi` with stay probability
    :math:`p = \exp(-\Delta t / d)`, runs merged into segments.

    Parameters
    ----------
    treble : np.ndarray [shape=(12, T)]
    bass : np.ndarray [shape=(12, T)], optional
    frame_period : float
        Seconds between frames (``hop_length / sr``); frame ``i`` starts at
        ``start_time + i * frame_period``.
    mean_duration : float
        Expected chord duration :math:`d` in seconds.
    beta, bass_weight : see :func:`chord_log_emissions`
    smoothing : float
        Median-filter length in seconds (0 = none).
    silent : np.ndarray [shape=(T,), bool], optional
        Frames forced to N (e.g. below an energy floor).
    start_time : float
        Time of frame 0 in seconds.

    Returns
    -------
    list of ChordSegment, in time order, covering ``[start_time, start_time + T * frame_period)``.
    """
    from scipy.ndimage import median_filter

    dt = check_float("frame_period", frame_period, min_value=0.0, min_inclusive=False)
    d = check_float("mean_duration", mean_duration, min_value=0.0, min_inclusive=False)
    beta = check_float("beta", beta, min_value=0.0, min_inclusive=False)
    bass_weight = check_float("bass_weight", bass_weight, min_value=0.0)
    smoothing = check_float("smoothing", smoothing, min_value=0.0)
    treble = _chroma_arg("treble", treble)
    width = 2 * round(smoothing / dt / 2) + 1
    if width > 1:
        treble = median_filter(treble, size=(1, width), mode="nearest")
        if bass is not None:
            bass = median_filter(_chroma_arg("bass", bass), size=(1, width), mode="nearest")
    log_emit = chord_log_emissions(treble, bass, beta=beta, bass_weight=bass_weight, silent=silent)
    path = viterbi(log_emit, transition_matrix(float(np.exp(-dt / d))))
    times = start_time + dt * np.arange(path.size)
    return segments_from_path(path, times, start_time + dt * path.size)


def root_motions(chords: Iterable[ChordSegment | int]) -> list[int]:
    r"""Root-motion intervals :math:`(r_{i+1} - r_i) \bmod 12` of a chord sequence.

    Parameters
    ----------
    chords : iterable of ChordSegment or int
        Segments in time order, or their root pitch classes (-1 = N).

    Returns
    -------
    list of int in 1..11
        N removed, repeated consecutive roots merged (see the module docstring).

    Examples
    --------
    >>> root_motions([0, 0, 9, -1, 5, 7, 7, 0])   # C C Am N F G G C
    [9, 8, 2, 5]
    """
    roots: list[int] = []
    for c in chords:
        r = c.root if isinstance(c, ChordSegment) else int(c)
        if r < 0:
            continue
        if r > 11:
            raise DataError(expected("chords", "roots in -1..11", r))
        if not roots or roots[-1] != r:
            roots.append(r)
    return [(b - a) % 12 for a, b in itertools.pairwise(roots)]


def coverage(segments: Sequence[ChordSegment], truth: Sequence[tuple[float, float, int]]) -> float:
    """Fraction of the truth's duration where the recognised root equals the true root.

    ``truth``: ``(start, end, root)`` triples (root -1 = N). Used to verify recognisers.

    Parameters
    ----------
    segments : sequence of ChordSegment
        Recognised chords.
    truth : sequence of (start, end, root)
        Reference chords (seconds, root pitch class).
    """
    total = sum(e - s for s, e, _ in truth)
    if total <= 0:
        raise DataError("truth: expected a positive total duration")
    hit = 0.0
    for ts, te, tr in truth:
        for seg in segments:
            lo, hi = max(ts, seg.start), min(te, seg.end)
            if hi > lo and seg.root == tr:
                hit += hi - lo
    return hit / total
