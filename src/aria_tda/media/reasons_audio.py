r"""Musical reasons in audio: tempo, meter, key, chords and timbre an expert can cite.

:func:`audio_facts` reads one excerpt; :func:`shared_audio_material` says what two share (the
longest common chord progression in Roman numerals, the tempo relation, timbre closeness), each
with a plain sentence and a flag on evidence that cannot discriminate.

Conventions
-----------
- Times are seconds in the *file*: ``file_offset`` (where sample 0 lies in its file) plus the
  position in ``samples``; ``window`` is clip time, as :attr:`~aria_tda.media.clips.Clip.window`.
  Only the window is analysed, resampled to :data:`SR` (22,050 Hz). A window whose peak is
  below :data:`SILENCE_DBFS` or shorter than :data:`MIN_SECONDS` gives empty facts (no tempo,
  meter ``"?"``, key ``None``) whose :meth:`AudioFacts.describe` says why; nothing is raised.
- Beats: ``librosa.beat.beat_track`` (Ellis 2007) on the median mel onset strength, hop 256
  (11.6 ms). Beats are numbered by rounding their distance from the first to a multiple of the
  median inter-beat interval (IBI; a skipped beat keeps its number); period = least-squares
  slope of beat time on beat number, tempo = 60 / period BPM; none with fewer than 4 beats.
  ``tempo_confidence`` = (fraction of IBIs within 8 % of one or two periods) x (autocorrelation
  of the onset strength at the period lag, normalised, clipped to [0, 1]); below
  :data:`MIN_TEMPO_CONFIDENCE` the beat is "unclear". ``beat_jitter`` = residual std / period;
  below :data:`STEADY_JITTER` (1.5 %) the beat is machine-steady (a click, a sequencer).
- Meter: accent :math:`a_i` = largest onset strength within 23 ms of beat :math:`i`;
  :math:`r(L)` its autocorrelation at lags 2, 3, 4 (:func:`lag_autocorrelation`). ``"4/4"``
  when :math:`r(4) \ge 0.3` and :math:`r(4) \ge r(3) + 0.3`; ``"3/4"`` when :math:`r(3) \ge 0.3`
  and :math:`r(3) \ge \max(r(2), r(4)) + 0.3`; else ``"?"``, as with fewer than 9 beats or
  accents varying by under 10 % of their mean (an unaccented click shows no meter). Bars start
  on the beat phase of largest mean accent.
- Chords: treble (C3 up) and bass (C2-B3) CQT chroma (hop 512,
  :func:`~aria_tda.features.audio.chords.cqt_chroma`) averaged between consecutive beats
  (:func:`beat_sync`; edge segments under half a beat join their neighbour; a 0.5 s grid
  without beats), so a chord never changes within a beat. The 25 maj/min/N states are scored by
  :func:`~aria_tda.features.audio.chords.chord_log_emissions` at inverse temperature
  :data:`CHORD_BETA` per segment, decoded by Viterbi with stay probability :data:`CHORD_STAY`
  per beat (a one-beat chord between two equal ones needs a strong match), runs merged. A
  segment 60 dB below the loudest frame is N. Confidence = duration-weighted mean over the
  span of the template posterior :math:`e^{\beta s_k} / \sum_j e^{\beta s_j}` of the decoded
  state: near 1 when one template clearly wins, 0.4 or less when relatives (C, Am, Em) or
  nothing match.
- Key: Krumhansl-Kessler (:func:`~aria_tda.media.theory.estimate_key`) on the mean chroma (C2
  up) of the non-silent frames (duration-weighted); ``None`` when r < :data:`MIN_KEY_R` or the
  chords' mean confidence is below :data:`MIN_CHORD_CONFIDENCE` (noise, a lone pitch).
- Timbre, energy-weighted over frames (n_fft 2048): ``centroid_hz``, ``rolloff_hz`` (85 %),
  ``flatness`` (0 pure tone, ~0.5 white noise), ``zcr`` (crossings per sample),
  ``percussive_ratio`` (energy share of the percussive part of librosa's HPSS),
  ``attack_db_per_10ms`` (median over onsets of the steepest RMS rise, floored 60 dB below the
  peak, in the 60 ms before the onset), ``mfcc_1`` .. ``mfcc_13`` (means). Words
  (:data:`TIMBRE_THRESHOLDS`): "dark" centroid < 800 Hz, "bright" >= 2000 Hz, else
  "mid-range"; "noisy" flatness >= 0.2, "tonal" < 0.02; "percussive" ratio >= 0.6 (steady
  noise splits evenly, so it is not percussive), "sustained" < 0.15.

:func:`shared_audio_material` returns, flagged ``informative=False`` when noted:

- ``"progression"``: longest runs of equal Roman numerals, each clip read in its own key
  (repeats merged, N dropped; :func:`~aria_tda.media.theory.longest_shared_run`), so a
  transposition still matches. Flagged with fewer than 3 distinct numerals (``I - V - I`` is
  everywhere) or mean confidence below :data:`MIN_CHORD_CONFIDENCE`. A clip that holds one
  chord gives a ``"chord"`` entry, always flagged; a clip without key or chords, none.
- ``"tempo"``: related when the ratio is within 3 % of 1, 2 or 1/2. Flagged when unrelated,
  unclear, or both machine-steady and equal within 0.5 % (a shared click tempo is common).
- ``"timbre"``: centroid distance (octaves) and cosine of the MFCC means 2-13; alike within 0.5
  octave and cosine >= 0.9. Flagged unless alike, and always with the caveat that shared
  instrumentation is common.
- ``"silence"``: a clip is silent; the only entry, flagged.
"""

from __future__ import annotations

import itertools
import math
import warnings
from dataclasses import dataclass, field

import numpy as np

import aria_tda.features.audio.chords as ch
from aria_tda._checks import check_float, check_int
from aria_tda.errors import DataError, ParameterError, expected
from aria_tda.features.audio.jit import in_process
from aria_tda.media.reasons_symbolic import SharedMaterial
from aria_tda.media.theory import BeatGrid, Key, chord_name, estimate_key, longest_shared_run, roman

__all__ = [
    "CHORD_BETA", "CHORD_STAY", "MIN_CHORD_CONFIDENCE", "MIN_KEY_R", "MIN_SECONDS",
    "MIN_TEMPO_CONFIDENCE", "SILENCE_DBFS", "SR", "STEADY_JITTER", "TIMBRE_THRESHOLDS",
    "AudioFacts", "ChordSpan", "audio_facts", "beat_sync", "lag_autocorrelation",
    "shared_audio_material", "timbre_words",
]  # fmt: skip

SR = 22050  #: Analysis sample rate (Hz).
SILENCE_DBFS = -80.0  #: Windows whose peak is below this level (dBFS) are silent.
MIN_SECONDS = 0.5  #: Windows shorter than this (seconds) are not analysed.
CHORD_BETA = 8.0  #: Inverse temperature of the per-segment chord emissions.
CHORD_STAY = 0.5  #: Viterbi stay probability per beat segment.
MIN_CHORD_CONFIDENCE = 0.5  #: Below this mean chord confidence a shared progression is flagged.
MIN_KEY_R = 0.5  #: Below this Krumhansl-Kessler correlation the key is reported as ``None``.
MIN_TEMPO_CONFIDENCE = 0.3  #: Below this tempo confidence the beat is called unclear.
STEADY_JITTER = 0.015  #: Beat-time residual std / period below which beats are machine-steady.
#: Thresholds of the timbre words (see the module docstring).
TIMBRE_THRESHOLDS: dict[str, float] = {
    "dark_below_hz": 800.0, "bright_from_hz": 2000.0, "noisy_from_flatness": 0.2,
    "tonal_below_flatness": 0.02, "percussive_from_ratio": 0.6, "sustained_below_ratio": 0.15,
}  # fmt: skip

_BEAT_HOP, _HOP, _N_FFT = 256, 512, 2048
_FMIN = 32.70319566257483  # C1
_FLOOR_DB = 60.0


@dataclass(frozen=True)
class ChordSpan:
    """One recognised chord, ``[start, end)`` seconds (file time): ``root`` pitch class (0 = C;
    -1 = no chord, whose ``quality`` and ``label`` are ``"N"``), ``quality`` ``"maj"`` or
    ``"min"``, ``label`` e.g. ``"Dm"``, ``confidence`` the mean template posterior, in [0, 1].
    """

    start: float
    end: float
    root: int
    quality: str
    label: str
    confidence: float


@dataclass(frozen=True)
class AudioFacts:
    """What one audio excerpt holds, in words an expert can cite (see the module docstring).

    Attributes
    ----------
    tempo_bpm : float or None
        Beats per minute; ``None`` with fewer than 4 beats.
    tempo_confidence : float in [0, 1]
    meter : {"4/4", "3/4", "?"}
    key : Key or None
    chords : tuple of ChordSpan, in time order (N spans included)
    grid : BeatGrid, beats and downbeats in file time (bar:beat positions)
    timbre : dict of str to float, the descriptors (empty when silent)
    timbre_words : tuple of str
    start, end : float, the analysed window in file time (s)
    beat_jitter : float, residual std of the beat times / period (NaN without tempo)
    note : str, why the facts are empty (silence, too short); ``""`` otherwise
    """

    tempo_bpm: float | None
    tempo_confidence: float
    meter: str
    key: Key | None
    chords: tuple[ChordSpan, ...]
    grid: BeatGrid
    timbre: dict[str, float] = field(default_factory=dict)
    timbre_words: tuple[str, ...] = ()
    start: float = 0.0
    end: float = 0.0
    beat_jitter: float = float("nan")
    note: str = ""

    @property
    def silent(self) -> bool:
        """True when the window was not analysed (silent or too short)."""
        return bool(self.note)

    def describe(self) -> str:
        """One sentence: ``"about 120 BPM in 4/4, A minor (r = 0.71); bright, percussive"``."""
        if self.note:
            return self.note
        if self.tempo_bpm is None or self.tempo_confidence < MIN_TEMPO_CONFIDENCE:
            beat = "no clear beat"
        else:
            meter = "meter unclear" if self.meter == "?" else f"in {self.meter}"
            beat = f"about {self.tempo_bpm:.0f} BPM {meter}"
        key = "no clear key" if self.key is None else (
            f"{self.key.name} (r = {self.key.confidence:.2f})")
        text = f"{beat}, {key}"
        if self.timbre_words:
            text += "; " + ", ".join(self.timbre_words)
        return text


# --------------------------------------------------------------------------- kernels


def beat_sync(x: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    r"""Mean of the frames of each segment: ``out[:, j] = x[:, bounds[j]:bounds[j+1]].mean(1)``.

    Parameters
    ----------
    x : np.ndarray [shape=(d, T)]
    bounds : np.ndarray [shape=(n + 1,), int]
        Strictly increasing frame indices in ``[0, T]``.

    Returns
    -------
    np.ndarray [shape=(d, n)]
    """
    x, b = _sync_args(x, bounds)
    sums = np.add.reduceat(x, b[:-1], axis=1) if b.size > 1 else np.zeros((x.shape[0], 0))
    return sums / np.diff(b)[None, :]


def beat_sync_reference(x: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Loop version of :func:`beat_sync` (tests; not in ``__all__``).

    Parameters
    ----------
    x : np.ndarray [shape=(d, T)], frames
    bounds : np.ndarray [shape=(n + 1,), int], segment boundaries
    """
    x, b = _sync_args(x, bounds)
    out = np.zeros((x.shape[0], b.size - 1))
    for j, r in itertools.product(range(b.size - 1), range(x.shape[0])):
        frames = [float(x[r, f]) for f in range(int(b[j]), int(b[j + 1]))]
        out[r, j] = sum(frames) / len(frames)
    return out


def _sync_args(x: np.ndarray, bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(x, dtype=float)
    if a.ndim != 2:
        raise DataError(expected("x", "an array of shape (d, n_frames)", a.shape))
    b = np.asarray(bounds, dtype=np.int64).ravel()
    if b.size < 1 or b[0] < 0 or b[-1] > a.shape[1] or np.any(np.diff(b) <= 0):
        raise DataError(expected("bounds", f"increasing frame indices in [0, {a.shape[1]}]", b))
    return a, b


def lag_autocorrelation(x: np.ndarray, lags: tuple[int, ...] = (2, 3, 4)) -> np.ndarray:
    r"""Normalised autocorrelation :math:`r(L)` of a sequence at the given lags.

    :math:`r(L) = \frac{1}{n-L}\sum_{i<n-L} x_i x_{i+L} \big/ \frac{1}{n}\sum_i x_i^2` with
    :math:`x` the deviations from the mean; 0 for a constant sequence or :math:`L \ge n`.

    Parameters
    ----------
    x : np.ndarray [shape=(n,)]
    lags : tuple of int >= 1

    Returns
    -------
    np.ndarray [shape=(len(lags),)]
    """
    v = np.asarray(x, dtype=float).ravel()
    v = v - v.mean() if v.size else v
    power = float(np.mean(v * v)) if v.size else 0.0
    out = np.zeros(len(lags))
    for j, lag in enumerate(lags):
        lag = check_int("lags", lag, min_value=1)
        if power > 1e-24 and lag < v.size:
            out[j] = float(np.mean(v[:-lag] * v[lag:])) / power
    return out


def lag_autocorrelation_reference(x: np.ndarray, lags: tuple[int, ...] = (2, 3, 4)) -> np.ndarray:
    """Loop version of :func:`lag_autocorrelation` (tests; not in ``__all__``).

    Parameters
    ----------
    x : np.ndarray [shape=(n,)], the sequence
    lags : tuple of int, lags to evaluate
    """
    seq = [float(v) for v in np.asarray(x, dtype=float).ravel()]
    n = len(seq)
    dev = [v - sum(seq) / n for v in seq]
    power = sum(d * d for d in dev) / n if n else 0.0
    out = [0.0] * len(lags)
    for j, lag in enumerate(lags):
        if power > 1e-24 and lag < n:
            out[j] = sum(dev[i] * dev[i + lag] for i in range(n - lag)) / (n - lag) / power
    return np.asarray(out)


# --------------------------------------------------------------------------- one excerpt


def audio_facts(
    samples: np.ndarray, sr: int, *, window: tuple[float, float] | None = None,
    file_offset: float = 0.0,
) -> AudioFacts:  # fmt: skip
    """Tempo, meter, key, chords and timbre of one excerpt (see the module docstring).

    Parameters
    ----------
    samples : np.ndarray [shape=(n,) or (channels, n)]
        Audio in [-1, 1] (float) or integer PCM; channels are averaged.
    sr : int
        Sample rate of ``samples`` in Hz.
    window : (float, float), optional
        ``(start, end)`` seconds from the start of ``samples``; the whole of it by default. An
        end past the last sample is cut to it.
    file_offset : float
        Where sample 0 lies in its file (seconds); added to every time reported.

    Returns
    -------
    AudioFacts
        Empty facts with a ``note`` for a silent or too-short window (never raises for them).

    Raises
    ------
    DataError
        ``samples`` not a finite real-valued array of shape (n,) or (channels, n).
    ParameterError
        ``sr``, ``window`` or ``file_offset`` out of range.
    """
    y, t0, t1 = _prepared(samples, sr, window, file_offset)
    peak = float(np.max(np.abs(y))) if y.size else 0.0
    peak_db = 20.0 * math.log10(peak) if peak > 0 else -math.inf
    if t1 - t0 < MIN_SECONDS:
        return _empty(t0, t1, f"too short to analyse: {t1 - t0:.2f} s < {MIN_SECONDS:g} s")
    if peak_db < SILENCE_DBFS:
        level = "no signal" if peak == 0 else f"peak {peak_db:.0f} dBFS"
        return _empty(t0, t1, f"silent from {t0:.2f} to {t1:.2f} s ({level}, below "
                      f"{SILENCE_DBFS:g} dBFS): no tempo, key, chords or timbre to report")
    import librosa

    with in_process(), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        env = librosa.onset.onset_strength(y=y, sr=SR, hop_length=_BEAT_HOP, aggregate=np.median)
        _, frames = librosa.beat.beat_track(onset_envelope=env, sr=SR, hop_length=_BEAT_HOP)
        beats = np.asarray(frames, dtype=np.int64) * _BEAT_HOP / SR
        tempo, confidence, period, jitter = _tempo(beats, env)
        meter, phase = _meter(beats, env)
        cqt = np.abs(librosa.cqt(y, sr=SR, hop_length=_HOP, fmin=_FMIN, n_bins=84))
        rms = librosa.feature.rms(y=y, frame_length=_N_FFT, hop_length=_HOP)[0]
        chords = _chords(cqt, rms, beats, period, t0, t1)
        key = _key(cqt, rms, chords)
        timbre = _timbre(y, env)
    downbeats = beats[phase :: int(meter[0])] if meter != "?" else beats[:0]
    grid = _grid(beats + t0, downbeats + t0, meter)
    return AudioFacts(
        tempo_bpm=tempo, tempo_confidence=confidence, meter=meter, key=key, chords=chords,
        grid=grid, timbre=timbre, timbre_words=timbre_words(timbre), start=t0, end=t1,
        beat_jitter=jitter,
    )  # fmt: skip


def _prepared(
    samples: np.ndarray, sr: int, window: tuple[float, float] | None, file_offset: float
) -> tuple[np.ndarray, float, float]:
    rate = check_int("sr", sr, min_value=1000, max_value=384000)
    offset = check_float("file_offset", file_offset)
    arr = np.asarray(samples)
    if arr.dtype.kind not in "fiu" or arr.ndim not in (1, 2) or (arr.ndim == 2 and len(arr) > 16):
        raise DataError(expected("samples", "real audio of shape (n,) or (channels <= 16, n)",
                                 f"dtype {arr.dtype}, shape {arr.shape}"))
    scale = float(np.iinfo(arr.dtype).max) if arr.dtype.kind in "iu" else 1.0
    x = np.asarray(arr, dtype=np.float64) / scale
    x = x.mean(axis=0) if x.ndim == 2 else x
    if not np.all(np.isfinite(x)):
        raise DataError("samples: expected finite values, got NaN or inf")
    a, b = (0.0, x.size / rate) if window is None else _window(window, x.size / rate)
    y = x[round(a * rate) : round(b * rate)]
    if rate != SR and y.size:
        import librosa

        y = librosa.resample(y, orig_sr=rate, target_sr=SR)
    return y, offset + a, offset + b


def _window(window: tuple[float, float], duration: float) -> tuple[float, float]:
    if not isinstance(window, tuple | list) or len(window) != 2:
        raise ParameterError(expected("window", "a (start, end) pair of seconds", window))
    a = check_float("window[0]", window[0], min_value=0.0)
    b = check_float("window[1]", window[1], min_value=0.0)
    if not a < b or a >= duration:
        raise ParameterError(expected("window", f"start < end, start < {duration:.3f} s", window))
    return a, min(b, duration)


def _empty(t0: float, t1: float, note: str) -> AudioFacts:
    grid = _grid(np.zeros(0), np.zeros(0), "?")
    return AudioFacts(None, 0.0, "?", None, (), grid, start=t0, end=t1, note=note)


def _grid(beats: np.ndarray, downbeats: np.ndarray, meter: str) -> BeatGrid:
    return BeatGrid(beats=np.asarray(beats, float), downbeats=np.asarray(downbeats, float),
                    meter=meter, first_bar=1)  # fmt: skip


def _tempo(beats: np.ndarray, env: np.ndarray) -> tuple[float | None, float, float, float]:
    """(tempo BPM or None, confidence, period s or NaN, jitter) from the tracked beats."""
    if beats.size < 4:
        return None, 0.0, math.nan, math.nan
    ibi = np.diff(beats)
    rough = float(np.median(ibi))
    index = np.round((beats - beats[0]) / rough)
    slope, intercept = np.polyfit(index, beats, 1)
    period = float(slope)
    resid = beats - (slope * index + intercept)
    jitter = float(np.std(resid) / period)
    steps = ibi / period
    regular = float(np.mean((np.abs(steps - np.round(steps)) < 0.08) & (np.round(steps) <= 2)))
    lag = period * SR / _BEAT_HOP
    x = env - env.mean()
    power = float(np.dot(x, x))
    clarity = 0.0
    if power > 0:
        for cand in (math.floor(lag), math.ceil(lag), round(lag)):
            if 0 < cand < x.size:
                r = float(np.dot(x[:-cand], x[cand:])) / power * x.size / (x.size - cand)
                clarity = max(clarity, r)
    conf = float(np.clip(regular * clarity, 0.0, 1.0))
    return 60.0 / period, conf, period, jitter


def _meter(beats: np.ndarray, env: np.ndarray) -> tuple[str, int]:
    """Meter ("4/4", "3/4" or "?") and the index of the first downbeat among the beats."""
    if beats.size < 9:
        return "?", 0
    f = np.round(beats * SR / _BEAT_HOP).astype(np.int64)
    reach = max(1, round(0.023 * SR / _BEAT_HOP))
    accent = np.array(
        [env[max(0, i - reach) : min(env.size, i + reach + 1)].max(initial=0.0) for i in f]
    )
    mean = float(accent.mean())
    if mean <= 0 or float(accent.std()) < 0.1 * mean:
        return "?", 0
    r2, r3, r4 = lag_autocorrelation(accent, (2, 3, 4))
    if r4 >= 0.3 and r4 >= r3 + 0.3:
        m, meter = 4, "4/4"
    elif r3 >= 0.3 and r3 >= max(r2, r4) + 0.3:
        m, meter = 3, "3/4"
    else:
        return "?", 0
    phase = int(np.argmax([accent[p::m].mean() for p in range(m)]))
    return meter, phase


def _segments(n_frames: int, beats: np.ndarray, period: float) -> np.ndarray:
    """Segment bounds (CQT frames): beats, partial edge segments merged when under half a beat."""
    step = period if math.isfinite(period) else 0.5
    if beats.size:
        inner = np.round(beats * SR / _HOP).astype(np.int64)
    else:
        inner = np.round(np.arange(step, n_frames * _HOP / SR, step) * SR / _HOP).astype(np.int64)
    edges = np.unique(np.concatenate([[0], inner[(inner > 0) & (inner < n_frames)], [n_frames]]))
    shortest = max(1, round(0.5 * step * SR / _HOP))
    if edges.size > 2 and edges[1] - edges[0] < shortest:
        edges = np.delete(edges, 1)
    if edges.size > 2 and edges[-1] - edges[-2] < shortest:
        edges = np.delete(edges, -2)
    return edges


def _chords(
    cqt: np.ndarray, rms: np.ndarray, beats: np.ndarray, period: float, t0: float, t1: float
) -> tuple[ChordSpan, ...]:
    n = cqt.shape[1]
    treble = ch.cqt_chroma(cqt, bins_per_octave=12, fmin=_FMIN, lo_hz=4 * _FMIN)
    bass = ch.cqt_chroma(cqt, bins_per_octave=12, fmin=_FMIN, lo_hz=2 * _FMIN, hi_hz=8 * _FMIN)
    from scipy.special import logsumexp

    edges = _segments(n, beats, period)
    power = _power(rms, n)
    silent = beat_sync(power[None, :], edges)[0] < power.max() * 10.0 ** (-_FLOOR_DB / 10.0)
    emit = ch.chord_log_emissions(
        beat_sync(treble, edges), beat_sync(bass, edges), beta=CHORD_BETA, silent=silent
    )

    path = ch.viterbi(emit, ch.transition_matrix(CHORD_STAY))
    post = np.exp(emit - logsumexp(emit, axis=0, keepdims=True))
    times = np.minimum(t0 + edges * _HOP / SR, t1)
    times[-1] = t1
    weight = np.diff(edges).astype(float)
    out: list[ChordSpan] = []
    start = 0
    for j in range(1, path.size + 1):
        if j < path.size and path[j] == path[start]:
            continue
        k = int(path[start])
        w = weight[start:j]
        conf = float(np.dot(post[k, start:j], w) / w.sum())
        root = ch.state_root(k)
        quality = "N" if k == 0 else ch.CHORD_LABELS[k].split(":")[1]
        label = "N" if k == 0 else chord_name(root, quality)
        out.append(ChordSpan(float(times[start]), float(times[j]), root, quality, label, conf))
        start = j
    return tuple(out)


def _key(cqt: np.ndarray, rms: np.ndarray, chords: tuple[ChordSpan, ...]) -> Key | None:
    sounding = [(c.end - c.start, c.confidence) for c in chords if c.root >= 0]
    total = sum(d for d, _ in sounding)
    if total <= 0 or sum(d * c for d, c in sounding) / total < MIN_CHORD_CONFIDENCE:
        return None
    chroma = ch.cqt_chroma(cqt, bins_per_octave=12, fmin=_FMIN, lo_hz=2 * _FMIN)
    power = _power(rms, chroma.shape[1])
    key = estimate_key(chroma[:, power >= power.max() * 10.0 ** (-_FLOOR_DB / 10.0)].mean(axis=1))
    return key if key is not None and key.confidence >= MIN_KEY_R else None


def _power(rms: np.ndarray, n: int) -> np.ndarray:
    """Frame power on the CQT grid (``n`` frames; missing frames 0)."""
    out = np.zeros(n)
    out[: min(n, rms.size)] = rms[:n] ** 2
    return out


def _timbre(y: np.ndarray, env: np.ndarray) -> dict[str, float]:
    import librosa

    feat = librosa.feature
    spec = np.abs(librosa.stft(y, n_fft=_N_FFT, hop_length=_HOP))
    energy = np.sum(spec**2, axis=0)
    w = energy / max(float(energy.sum()), 1e-30)
    out = {name: float(np.dot(v[0][: w.size], w[: v.shape[1]])) for name, v in (
        ("centroid_hz", feat.spectral_centroid(S=spec, sr=SR)),
        ("rolloff_hz", feat.spectral_rolloff(S=spec, sr=SR, roll_percent=0.85)),
        ("flatness", feat.spectral_flatness(S=spec)),
        ("zcr", feat.zero_crossing_rate(y, frame_length=_N_FFT, hop_length=_HOP)),
    )}  # fmt: skip
    harm, perc = librosa.decompose.hpss(spec)
    hp = float(np.sum(harm**2) + np.sum(perc**2))
    out["percussive_ratio"] = float(np.sum(perc**2)) / hp if hp > 0 else 0.0
    out["attack_db_per_10ms"] = _attack(y, env)
    mel = librosa.power_to_db(librosa.feature.melspectrogram(S=spec**2, sr=SR), top_db=80.0)
    mfcc = librosa.feature.mfcc(S=mel, n_mfcc=13).mean(axis=1)
    out.update({f"mfcc_{i + 1}": float(v) for i, v in enumerate(mfcc)})
    return out


def _attack(y: np.ndarray, env: np.ndarray) -> float:
    """Median over onsets of the steepest RMS rise (dB per 10 ms) in the 60 ms up to each."""
    import librosa

    onsets = librosa.onset.onset_detect(onset_envelope=env, sr=SR, hop_length=_BEAT_HOP)
    if len(onsets) == 0:
        return 0.0
    rms = librosa.feature.rms(y=y, frame_length=512, hop_length=_BEAT_HOP)[0]
    db = 20.0 * np.log10(np.maximum(rms, 1e-3 * float(rms.max()) + 1e-12))
    rise = np.diff(db, prepend=db[0]) * (0.010 * SR / _BEAT_HOP)
    reach = max(1, round(0.060 * SR / _BEAT_HOP))
    best = [float(rise[max(0, f - reach) : f + 2].max(initial=0.0)) for f in onsets]
    return max(0.0, float(np.median(best)))


def timbre_words(timbre: dict[str, float]) -> tuple[str, ...]:
    """Plain words (``("bright", "noisy", "percussive")``) from :data:`TIMBRE_THRESHOLDS`.

    Parameters
    ----------
    timbre : dict of str to float
        At least ``centroid_hz``, ``flatness``, ``percussive_ratio``; empty gives ``()``.
    """
    if not timbre:
        return ()
    th = TIMBRE_THRESHOLDS
    c, f, p = timbre["centroid_hz"], timbre["flatness"], timbre["percussive_ratio"]
    words = ["dark" if c < th["dark_below_hz"] else "bright" if c >= th["bright_from_hz"] else
             "mid-range"]
    if f >= th["noisy_from_flatness"]:
        words.append("noisy")
    elif f < th["tonal_below_flatness"]:
        words.append("tonal")
    if p >= th["percussive_from_ratio"]:
        words.append("percussive")
    elif p < th["sustained_below_ratio"]:
        words.append("sustained")
    return tuple(words)


# --------------------------------------------------------------------------- two excerpts


def shared_audio_material(query: AudioFacts, item: AudioFacts) -> list[SharedMaterial]:
    """What two excerpts share: chord progression, tempo relation, timbre closeness.

    Parameters
    ----------
    query, item : AudioFacts
        From :func:`audio_facts`.

    Returns
    -------
    list of SharedMaterial
        The longest shared progressions (``kind="progression"``, or ``"chord"`` for a clip that
        holds one chord), then ``"tempo"`` and ``"timbre"``; a single ``"silence"`` entry when
        either clip is silent. Flags and caveats as in the module docstring.
    """
    for name, f in (("query", query), ("item", item)):
        if not isinstance(f, AudioFacts):
            raise ParameterError(expected(name, "AudioFacts (from audio_facts)", type(f).__name__))
    silent = [f"the {n} ({f.note})" for n, f in (("query", query), ("item", item)) if f.silent]
    if silent:
        text = "Nothing to compare: " + " and ".join(silent) + "."
        return [_material("silence", 0, query, item, "", text, False, "silence shares nothing")]
    out = _progressions(query, item)
    tempo = _tempo_relation(query, item)
    return [*out, *([tempo] if tempo else []), _timbre_closeness(query, item)]


def _material(
    kind: str, length: int, q: AudioFacts, i: AudioFacts, content: str, sentence: str,
    informative: bool, caveat: str, q_time: tuple[float, float] | None = None,
    i_time: tuple[float, float] | None = None,
) -> SharedMaterial:  # fmt: skip
    qt = q_time or (q.start, q.end)
    it = i_time or (i.start, i.end)
    return SharedMaterial(
        kind=kind, length=length,
        query_at=q.grid.position(qt[0]) if q_time else "whole excerpt",
        item_at=i.grid.position(it[0]) if i_time else "whole excerpt",
        query_time=qt[0], item_time=it[0], content=content, sentence=sentence,
        informative=informative, caveat=caveat, query_end=qt[1], item_end=it[1],
    )  # fmt: skip


def _numerals(f: AudioFacts) -> list[tuple[str, str, float, float, float]]:
    """(numeral, chord label, start, end, confidence) runs: N dropped, equal numerals merged."""
    runs: list[tuple[str, str, float, float, float]] = []
    for c in f.chords if f.key is not None else ():
        num = roman(c.root, c.quality, key) if c.root >= 0 and (key := f.key) else ""
        if num and runs and runs[-1][0] == num:
            n, lab, s, e, conf = runs[-1]
            w0, w1 = e - s, c.end - c.start
            runs[-1] = (n, lab, s, c.end, (conf * w0 + c.confidence * w1) / max(w0 + w1, 1e-12))
        elif num:
            runs.append((num, c.label, c.start, c.end, c.confidence))
    return runs


def _span(f: AudioFacts, run: list[tuple[str, str, float, float, float]]) -> str:
    key = f.key.name if f.key is not None else "no key"
    return (f"{' - '.join(r[1] for r in run)} in {key} at {run[0][2]:.2f}-{run[-1][3]:.2f} s "
            f"({f.grid.position(run[0][2])})")  # fmt: skip


def _progressions(q: AudioFacts, i: AudioFacts) -> list[SharedMaterial]:
    rq, ri = _numerals(q), _numerals(i)
    if not rq or not ri or q.key is None or i.key is None:
        return []
    shift = (i.key.tonic - q.key.tonic) % 12
    moved = f" (transposed by {shift} semitones)" if shift else " (at the same pitch)"
    if len(rq) == 1 or len(ri) == 1:
        pairs = [(a, b, 1) for a, x in enumerate(rq) for b, y in enumerate(ri) if x[0] == y[0]]
        who = " and ".join(n for n, r in (("the query", rq), ("the item", ri)) if len(r) == 1)
        caveat = f"{who} holds one chord throughout: one chord is not a progression and cannot " \
            "tell recordings apart"  # fmt: skip
        pairs = pairs[:1]
    else:
        pairs = longest_shared_run([r[0] for r in rq], [r[0] for r in ri], min_length=2)[:3]
    out: list[SharedMaterial] = []
    for a, b, n in pairs:
        sq, si = rq[a : a + n], ri[b : b + n]
        content = " - ".join(r[0] for r in sq)
        conf = float(np.mean([r[4] for r in sq + si]))
        distinct = len({r[0] for r in sq})
        caveats = [caveat] if n == 1 else []
        if n > 1 and distinct < 3:
            caveats.append(f"only {distinct} different chords: a run found in most tonal music")
        if conf < MIN_CHORD_CONFIDENCE:
            caveats.append(f"chords recognised with low confidence (mean {conf:.2f} < "
                           f"{MIN_CHORD_CONFIDENCE:g})")  # fmt: skip
        text = (f"Both play {'the chord' if n == 1 else 'the progression'} {content}{moved}: the "
                f"query as {_span(q, sq)}, the item as {_span(i, si)}; mean chord confidence "
                f"{conf:.2f}.")  # fmt: skip
        out.append(_material("chord" if n == 1 else "progression", n, q, i, content, text,
                             not caveats, "; ".join(caveats), (sq[0][2], sq[-1][3]),
                             (si[0][2], si[-1][3])))  # fmt: skip
    return out


def _tempo_relation(q: AudioFacts, i: AudioFacts) -> SharedMaterial | None:
    if q.tempo_bpm is None or i.tempo_bpm is None:
        return None
    ratio = i.tempo_bpm / q.tempo_bpm
    named = ((1.0, "the same tempo"), (2.0, "double time"), (0.5, "half time"))
    relation = next((w for f, w in named if abs(ratio / f - 1) <= 0.03), "unrelated tempi")
    text = (f"The query moves at about {q.tempo_bpm:.1f} BPM (meter {q.meter}), the item at about "
            f"{i.tempo_bpm:.1f} BPM (meter {i.meter}): {relation} (item/query ratio {ratio:.3f}).")
    steady = max(q.beat_jitter, i.beat_jitter) < STEADY_JITTER
    caveat = ""
    if relation == "unrelated tempi":
        caveat = "the tempi differ"
    elif min(q.tempo_confidence, i.tempo_confidence) < MIN_TEMPO_CONFIDENCE:
        caveat = f"the beat of a clip is unclear (tempo confidence < {MIN_TEMPO_CONFIDENCE:g})"
    elif steady and abs(ratio - 1) < 0.005:
        caveat = ("both follow a machine-steady beat at the same tempo; a shared click or "
                  "sequencer tempo is common and does not point to one recording")
    meters = f", both {q.meter}" if q.meter == i.meter != "?" else ""
    content = f"{q.tempo_bpm:.1f} / {i.tempo_bpm:.1f} BPM{meters}"
    return _material("tempo", 1, q, i, content, text, not caveat, caveat)


def _timbre_closeness(q: AudioFacts, i: AudioFacts) -> SharedMaterial:
    tq, ti = q.timbre, i.timbre
    octaves = abs(math.log2(max(tq["centroid_hz"], 1.0) / max(ti["centroid_hz"], 1.0)))
    mq, mi = (np.array([t[f"mfcc_{k}"] for k in range(2, 14)]) for t in (tq, ti))
    norm = float(np.linalg.norm(mq) * np.linalg.norm(mi))
    cos = float(np.dot(mq, mi) / norm) if norm > 0 else 0.0
    alike = octaves <= 0.5 and cos >= 0.9
    text = (f"Timbre: the query is {', '.join(q.timbre_words)} (spectral centroid "
            f"{tq['centroid_hz']:,.0f} Hz), the item {', '.join(i.timbre_words)} (centroid "
            f"{ti['centroid_hz']:,.0f} Hz); centroids {octaves:.2f} octave apart, MFCC profiles "
            f"cosine {cos:.2f}: {'alike' if alike else 'different'}.")
    caveat = ("a similar sound is common to recordings with the same instruments; it supports, "
              "but does not establish, shared material") if alike else "the timbres differ"
    content = f"{octaves:.2f} octave; cosine {cos:.2f}"
    return _material("timbre", 1, q, i, content, text, alike, caveat)
