"""The audio analysis: shared spectral intermediates, beats, chords, the 7 features.

The features and backends are described in :mod:`aria_tda.features.audio`; parameters and input
checks live in :mod:`aria_tda.features.audio.params`.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from aria_tda._optional import require
from aria_tda.errors import DataError
from aria_tda.features.audio.chords import ChordSegment, cqt_chroma, decode_chords, root_motions
from aria_tda.features.audio.jit import in_process
from aria_tda.features.audio.params import (
    FEATURE_NAMES,
    FMIN,
    AudioFeatureParams,
    checked_audio,
    load_audio,
    resolve_params,
)
from aria_tda.features.audio.rhythm import estimate_downbeats, interval_histogram

__all__ = [
    "AudioAnalysis",
    "analyze_audio",
    "extract_audio",
    "extract_file",
    "extract_file_record",
]

# --------------------------------------------------------------------------------------
# Analysis
# --------------------------------------------------------------------------------------

_CHORD_FLOOR_DB = 60.0  # frames this far below the loudest frame are no-chord (template backend)
_BASS_HZ = 150.0  # mel bands below this feed the downbeat bass cue
_C2, _C3, _C4 = 2 * FMIN, 4 * FMIN, 8 * FMIN

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
        """Log-power mel spectrogram, shape (n_mels, T), as in librosa's onset_strength/mfcc."""
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
        """Onset envelope for beat tracking: median over mel bands (``beat_track``'s own)."""
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
        """CQT magnitude (cqt_bins, T): input of the timbre feature and the template chords."""
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
        from aria_tda.features.audio.madmom import beats_madmom

        return beats_madmom(im.y, p.sr, beats_per_bar=p.meters)
    if p.beat_backend == "beatnet":
        from aria_tda.features.audio.beatnet import beats_beatnet

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
        from aria_tda.features.audio import madmom as amm
        from aria_tda.features.audio.madmom import label_root

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
    with in_process():  # this process's first analysis compiles under the JIT cache's lock
        return _analyze_now(y, p, timings)


def _analyze_now(
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
    p = resolve_params(params)
    return _analyze(checked_audio(y, sr, p), p, timings)


def extract_audio(
    y: Any, sr: int, *, timings: dict[str, float] | None = None, **params: Any
) -> dict[str, Any]:
    """The 7 audio features of one clip.

    Parameters
    ----------
    y : np.ndarray [shape=(n,) or (channels, n)]
        Audio samples (float in [-1, 1] or integer PCM).
    sr : int
        Sample rate of ``y``; resampled to ``params.sr`` if different.
    timings : dict, optional
        Filled with exclusive seconds per stage.
    **params
        :class:`AudioFeatureParams` fields, or ``params=AudioFeatureParams(...)``.

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

    Parameters
    ----------
    path : path
        The audio file.
    **params
        :class:`AudioFeatureParams` fields (or ``params=AudioFeatureParams(...)``); ``timings=`` as
        for :func:`extract_audio`.
    """
    return _analyze_file(path, params).features


def extract_file_record(
    path: str | os.PathLike[str], **params: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    """:func:`extract_file` plus per-track metadata for the feature store.

    Parameters
    ----------
    path : path
        The audio file.
    **params
        :class:`AudioFeatureParams` fields (or ``params=AudioFeatureParams(...)``); ``timings=`` as
        for :func:`extract_audio`.

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
    p = resolve_params(params)
    t0 = time.perf_counter()
    y = load_audio(path, sr=p.sr)
    if timings is not None:
        timings["load"] = timings.get("load", 0.0) + time.perf_counter() - t0
    return _analyze(checked_audio(y, p.sr, p), p, timings)
