r"""Audio tokenizers of the audio experiment: semantic k-means, acoustic RVQ, conditioning RVQ.

The three token streams of a MusicLM-style pipeline (paper §4.2, appendix "Audio Experimental
Details"), scaled to a 2-core demo and fitted on the TRAINING tracks only (the caller passes
only those to :func:`fit_tokenizers`).

Frame grid
----------
Audio is mono float32 at ``sr`` (24 kHz). One token frame per ``hop = sr / frame_hz`` samples
(960 at 25 Hz); a track of ``n`` samples has ``n_frames = floor(n / hop)`` frames and frame
``i`` describes samples ``[i·hop, (i+1)·hop)``: its analysis windows are centred at
``(i + ½)·hop`` (zeros outside the signal), so a trailing partial hop is dropped. Semantic and
acoustic tokens share this grid.

Frame features
--------------
One power spectrum per frame (Hann window of ``n_fft`` = 2048 samples, numpy FFT) feeds

- ``log_mel`` (``n_mels`` bands, librosa's Slaney mel filterbank, ``10·log10(max(P, 1e-5))``
  dB: a fixed floor, not per-track ``top_db``, so the level of one track does not move the
  scale of another) — the input of the acoustic RVQ;
- the *semantic* features, ``n_mfcc + 13`` values: MFCCs 1..``n_mfcc`` of the log-mel frame
  (DCT-II, ortho; c0, the overall level, is dropped so loudness differences between renderings
  do not become "content"), a 12-bin chroma (librosa's chroma filterbank at A440 on the same
  spectrum, frame max-normalised) and an onset strength (mean positive log-mel flux over four
  sub-frames of ``hop / 4`` samples, 512-sample windows, 32 mel bands; the frame's maximum).
  Timbre, harmony and rhythm are what HuBERT/MERT units are found to encode; these are their
  cheapest hand-made stand-ins, and a 30 s track costs about 0.05 s.

Only librosa's *filterbanks* are used (the mel filterbank as is; the chroma filterbank ported to
numpy, since librosa's own call JIT-compiles numba kernels: ~20 s on a cold cache), never its
numba-compiled kernels: tokenizing compiles nothing (no JIT warm-up, no JIT cache to corrupt),
so process pools are safe, and a fitted tokenizer, which stores its filterbanks, reproduces its
tokens without librosa.

Tokens
------
- semantic: features z-scored per dimension over the training frames, then weighted so the
  three groups carry 0.4 (MFCC) : 0.4 (chroma) : 0.2 (onset) of the total variance (plain
  z-scores would give the 20 MFCCs 61 % and the onset 3 %); k-means with ``semantic_k``
  centroids (:func:`kmeans`: k-means++ init, Lloyd iterations, empty clusters moved to the
  worst-fitted points) on a seeded subsample of ``fit_frames`` training frames.
- acoustic: ``log_mel`` z-scored per band; residual VQ with ``rvq_levels`` levels of
  ``rvq_codebook`` codewords (:func:`rvq_fit`: level ``l`` is a k-means codebook of the
  residual left by levels ``< l``) on the same subsample. Level 1 is the coarsest.
- conditioning: the track embedding (mean ‖ std over frames of the raw semantic features),
  z-scored over the training tracks and weighted like the frames, quantised by an RVQ of
  ``cond_codebooks`` levels of ``cond_codebook`` codewords — one token per codebook (the role
  of MuLan/CLAP-RVQ). With fewer distinct training tracks than codewords the spare codewords
  duplicate others (ties go to the lowest index).

Determinism: every random choice comes from ``numpy.random.default_rng([seed, stream])``;
distances are float64 and BLAS runs on one thread inside these kernels (faster for these
shapes on a busy 2-core machine, and results that do not depend on the thread count); equal
inputs and config give equal tokens, with or without worker processes.

Storage: ``<dir>/tokenizers.npz`` with its manifest ``tokenizers.npz.manifest.json`` (config,
training digest, fit statistics), both written atomically; :func:`fit_tokenizers` with
``out_dir`` reuses a stored fit whose config and training digest match.

Speed (2-core machine, default config): tokenizing a 30 s track takes about 0.08 s; fitting on
100 tracks of 30 s (75 000 frames, codebooks fitted on 20 000) about 20 s, a third of it the
frame features.

The k-means / RVQ kernels live in :mod:`aria_tda_experiments.audio.vq` (re-exported here); this
module holds the frame features, the fit and the storage — one pipeline with one manifest, a little
over 600 lines mostly through numpydoc sections.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda._checks import check_int
from aria_tda._io import atomic_path
from aria_tda._options import Options, option
from aria_tda._progress import progress
from aria_tda.errors import DataError, FileFormatError, ParameterError, expected
from aria_tda.manifest import make_manifest, read_manifest, write_manifest
from aria_tda_experiments.audio.vq import (  # noqa: F401 - re-exported
    as_points,
    assign,
    assign_reference,
    kmeans,
    rvq_decode,
    rvq_encode,
    rvq_fit,
)

__all__ = [
    "SR",
    "FrameFeatures",
    "TokenizerConfig",
    "Tokenizers",
    "TrackTokens",
    "assign",
    "fit_tokenizers",
    "frame_features",
    "kmeans",
    "load_tokenizers",
    "load_track_tokens",
    "rvq_decode",
    "rvq_encode",
    "rvq_fit",
    "save_track_tokens",
]

SR = 24_000
_SUB = 4  # onset sub-frames per frame
_ONSET_FFT, _ONSET_MELS = 512, 32
_AMIN = 1e-5
_SHARES = (0.4, 0.4, 0.2)  # variance shares of MFCC, chroma, onset in the semantic space
_KIND, _TOKENS_KIND, _FILE = "audio-tokenizers", "audio-track-tokens", "tokenizers.npz"
_ARRAYS = ("window", "mel_fb", "chroma_fb", "onset_window", "onset_fb", "sem_mean", "sem_std",
           "sem_weights", "sem_centroids", "mel_mean", "mel_std", "rvq_codebooks", "cond_mean",
           "cond_std", "cond_weights", "cond_codebooks")


@dataclass(frozen=True)
class TokenizerConfig(Options):
    """Tokenizer sizes (the paper: 1024 semantic units at 50 Hz, EnCodec 8 × 1024 at 75 Hz,
    CLAP-RVQ 12 × 1024)."""

    sr: int = option(SR, help="sample rate of the audio in Hz", min_value=1000)
    frame_hz: float = option(25.0, help="token frames per second (hop = sr / frame_hz samples)",
                             min_value=0.0, min_inclusive=False)
    n_fft: int = option(2048, help="FFT window of the frame spectra in samples", min_value=64)
    n_mels: int = option(64, help="log-mel bands (the acoustic frame)", min_value=8,
                         max_value=256)
    n_mfcc: int = option(20, help="MFCCs 1..n_mfcc in the semantic features", min_value=1)
    semantic_k: int = option(128, help="semantic k-means centroids", min_value=2)
    rvq_levels: int = option(8, help="acoustic RVQ levels", min_value=1, max_value=32)
    rvq_codebook: int = option(64, help="codewords per acoustic RVQ level", min_value=2)
    cond_codebooks: int = option(4, help="conditioning RVQ levels (tokens per track)",
                                 min_value=1)
    cond_codebook: int = option(32, help="codewords per conditioning level", min_value=2)
    kmeans_iters: int = option(25, help="Lloyd iterations of every k-means", min_value=1)
    fit_frames: int = option(20_000, help="training frames subsampled to fit the codebooks",
                             min_value=16)
    seed: int = option(0, help="seed of every random choice of the fit", min_value=0)

    def __post_init__(self) -> None:
        super().__post_init__()
        hop = self.sr / self.frame_hz
        if abs(hop - round(hop)) > 1e-9 or round(hop) % _SUB or hop < 4 * _SUB:
            raise ParameterError(expected(
                "frame_hz", f"a rate with a whole hop divisible by {_SUB} at sr={self.sr} "
                "(e.g. 25.0 -> 960 samples)", self.frame_hz))
        if self.n_mfcc >= self.n_mels:
            raise ParameterError(expected("n_mfcc", f"fewer than n_mels={self.n_mels}",
                                          self.n_mfcc))

    @property
    def hop(self) -> int:
        """Samples per token frame."""
        return round(self.sr / self.frame_hz)


@dataclass(frozen=True, eq=False)
class FrameFeatures:
    """Per-frame features of one track: ``semantic`` (n, n_mfcc + 13) raw, ``log_mel`` (n, n_mels)
    in dB."""

    semantic: np.ndarray
    log_mel: np.ndarray


@dataclass(frozen=True, eq=False)
class TrackTokens:
    """The tokens of one track: ``semantic`` (n,), ``acoustic`` (n, rvq_levels), ``cond`` (C,);
    all int64."""

    semantic: np.ndarray
    acoustic: np.ndarray
    cond: np.ndarray

    @property
    def n_frames(self) -> int:
        """Frames on the token grid."""
        return int(self.semantic.shape[0])


# ------------------------------------------------------------------------------------------
# Frame features
# ------------------------------------------------------------------------------------------


@lru_cache(maxsize=8)
def _filters(sr: int, n_fft: int, n_mels: int) -> dict[str, np.ndarray]:
    from aria_tda.features.audio.jit import configure_numba_cache

    configure_numba_cache()  # librosa imports numba: keep its cache out of the venv
    from aria_tda._optional import require

    filters = require("librosa.filters", "audio", purpose="audio tokenizers")
    out = {
        "window": _periodic_hann(n_fft),
        "mel_fb": filters.mel(sr=sr, n_fft=n_fft, n_mels=n_mels).astype(np.float64),
        "chroma_fb": _chroma_fb(sr, n_fft),
        "onset_window": _periodic_hann(_ONSET_FFT),
        "onset_fb": filters.mel(sr=sr, n_fft=_ONSET_FFT, n_mels=_ONSET_MELS).astype(np.float64),
    }
    for a in out.values():
        a.setflags(write=False)
    return out


def _chroma_fb(sr: int, n_fft: int) -> np.ndarray:
    """``librosa.filters.chroma(sr=sr, n_fft=n_fft, tuning=0.0)`` (its defaults: L2-normalised
    Gaussian bumps, octave weight centred at C5 ± 2 octaves, C first), ported to numpy: librosa's
    own call JIT-compiles numba kernels (~20 s on a cold cache) for its column normalisation."""
    freqs = np.linspace(0, sr, n_fft, endpoint=False)[1:]
    bins = 12.0 * np.log2(freqs / (440.0 / 16.0))
    bins = np.concatenate(([bins[0] - 18.0], bins))
    width = np.concatenate((np.maximum(bins[1:] - bins[:-1], 1.0), [1.0]))
    d = np.subtract.outer(bins, np.arange(12, dtype=np.float64)).T
    d = np.remainder(d + 6.0 + 120.0, 12.0) - 6.0
    wts = np.exp(-0.5 * (2.0 * d / width) ** 2)
    wts /= np.sqrt(np.sum(wts**2, axis=0, keepdims=True))
    wts *= np.exp(-0.5 * ((bins / 12.0 - 5.0) / 2.0) ** 2)
    wts = np.roll(wts, -3, axis=0)
    return np.ascontiguousarray(wts[:, : n_fft // 2 + 1], dtype=np.float64)


def _periodic_hann(n: int) -> np.ndarray:
    """``scipy.signal.get_window("hann", n)`` (periodic), as librosa's STFT uses."""
    return (0.5 - 0.5 * np.cos(2.0 * np.pi * np.arange(n) / n)).astype(np.float32)


def _power(y: np.ndarray, window: np.ndarray, step: int, first: int, n: int) -> np.ndarray:
    """|rfft|² (float64) of ``n`` windows centred at ``first + i·step`` (zeros outside ``y``)."""
    n_fft = len(window)
    start = first - n_fft // 2
    last = start + (n - 1) * step + n_fft
    pad_lo, pad_hi = max(0, -start), max(0, last - len(y))
    yp = np.pad(y, (pad_lo, pad_hi))
    frames = np.lib.stride_tricks.sliding_window_view(yp, n_fft)[start + pad_lo :: step][:n]
    spec = np.fft.rfft(frames * window, axis=1)
    return (spec.real.astype(np.float64) ** 2) + (spec.imag.astype(np.float64) ** 2)


def _features(y: np.ndarray, cfg: TokenizerConfig, f: Mapping[str, np.ndarray]) -> FrameFeatures:
    import scipy.fft

    hop, sub = cfg.hop, cfg.hop // _SUB
    n = len(y) // hop
    p = _power(y, f["window"], hop, hop // 2, n)
    log_mel = 10.0 * np.log10(np.maximum(p @ f["mel_fb"].T, _AMIN))
    mfcc = scipy.fft.dct(log_mel, type=2, norm="ortho", axis=1)[:, 1 : cfg.n_mfcc + 1]
    chroma = p @ f["chroma_fb"].T
    chroma /= np.maximum(chroma.max(axis=1, keepdims=True), 1e-10)
    q = _power(y, f["onset_window"], sub, sub // 2 - sub, _SUB * n + 1)
    fine = 10.0 * np.log10(np.maximum(q @ f["onset_fb"].T, _AMIN))
    flux = np.maximum(np.diff(fine, axis=0), 0.0).mean(axis=1)
    onset = flux.reshape(n, _SUB).max(axis=1, keepdims=True)
    return FrameFeatures(semantic=np.hstack([mfcc, chroma, onset]), log_mel=log_mel)


def _check_audio(y: Any, cfg: TokenizerConfig, sr: int | None, name: str = "y") -> np.ndarray:
    if sr is not None and sr != cfg.sr:
        raise ParameterError(expected("sr", f"{cfg.sr} Hz, the tokenizer's rate (resample first)",
                                      sr))
    a = np.asarray(y)
    if a.ndim != 1:
        raise DataError(expected(name, "mono audio of shape (n_samples,) (mix channels down "
                                       "first)", f"shape {a.shape}"))
    if a.dtype.kind != "f":
        raise DataError(expected(name, "floating-point audio in [-1, 1]", f"dtype {a.dtype}"))
    if len(a) < cfg.hop:
        raise DataError(expected(name, f"at least one frame ({cfg.hop} samples at {cfg.sr} Hz)",
                                 f"{len(a)} samples"))
    a = a.astype(np.float32, copy=False)
    if not np.isfinite(a).all():
        raise DataError(expected(name, "finite samples", "NaN or inf"))
    return a


def _read_audio(path: str | os.PathLike[str], cfg: TokenizerConfig) -> np.ndarray:
    import soundfile

    try:
        data, sr = soundfile.read(os.fspath(path), dtype="float32", always_2d=True)
    except Exception as exc:  # soundfile raises LibsndfileError / RuntimeError / OSError
        raise FileFormatError(f"{os.fspath(path)!r}: unreadable audio ({exc})") from None
    if sr != cfg.sr:
        raise DataError(expected(f"{os.fspath(path)!r}", f"audio at {cfg.sr} Hz (resample "
                                 "first)", f"{sr} Hz"))
    return _check_audio(data.mean(axis=1), cfg, None, name=os.fspath(path))


def frame_features(
    y: np.ndarray, *, config: TokenizerConfig | None = None, sr: int | None = None
) -> FrameFeatures:
    """The frame features of ``y`` on the token grid (see the module docstring).

    Parameters
    ----------
    y : ndarray of float, shape (n_samples,)
        Mono audio at ``config.sr``.
    config : TokenizerConfig, optional
        Frame rate, FFT and band sizes (default ``TokenizerConfig()``).
    sr : int, optional
        The rate of ``y``, checked against ``config.sr`` when given.
    """
    cfg = config or TokenizerConfig()
    return _features(_check_audio(y, cfg, sr), cfg, _filters(cfg.sr, cfg.n_fft, cfg.n_mels))


# ------------------------------------------------------------------------------------------
# Fitted tokenizers
# ------------------------------------------------------------------------------------------


def _group_weights(n_mfcc: int) -> np.ndarray:
    sizes = (n_mfcc, 12, 1)
    return np.concatenate([np.full(d, np.sqrt(s / d)) for d, s in zip(sizes, _SHARES,
                                                                          strict=True)])


def _zscore_stats(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    std = x.std(axis=0)
    return x.mean(axis=0), np.where(std > 1e-8, std, 1.0)


def _embedding(semantic: np.ndarray) -> np.ndarray:
    return np.concatenate([semantic.mean(axis=0), semantic.std(axis=0)])


@dataclass(frozen=True, eq=False)
class Tokenizers:
    """Fitted tokenizers (see the module docstring); build with :func:`fit_tokenizers`."""

    config: TokenizerConfig
    arrays: Mapping[str, np.ndarray]
    info: Mapping[str, Any] = field(default_factory=dict)

    @property
    def hop(self) -> int:
        """Samples per token frame."""
        return self.config.hop

    def features(self, y: np.ndarray, *, sr: int | None = None) -> FrameFeatures:
        """The frame features of ``y`` (with this tokenizer's stored filterbanks).

        Parameters
        ----------
        y : ndarray of float, shape (n_samples,)
            Mono audio at ``config.sr`` (at least one hop).
        sr : int, optional
            The rate of ``y``, checked against ``config.sr`` when given.
        """
        return _features(_check_audio(y, self.config, sr), self.config, self.arrays)

    def tokens_of(self, feats: FrameFeatures) -> TrackTokens:
        """Tokens of precomputed frame features.

        Parameters
        ----------
        feats : FrameFeatures
            From :meth:`features` or :func:`frame_features` with this config.
        """
        a = self.arrays
        z = (feats.semantic - a["sem_mean"]) / a["sem_std"] * a["sem_weights"]
        semantic, _ = assign(z, a["sem_centroids"])
        acoustic = rvq_encode((feats.log_mel - a["mel_mean"]) / a["mel_std"], a["rvq_codebooks"])
        e = (_embedding(feats.semantic) - a["cond_mean"]) / a["cond_std"] * a["cond_weights"]
        cond = rvq_encode(e[None, :], a["cond_codebooks"])[0]
        return TrackTokens(semantic=semantic, acoustic=acoustic, cond=cond)

    def tokenize(self, y: np.ndarray, *, sr: int | None = None) -> TrackTokens:
        """Semantic, acoustic and conditioning tokens of one track.

        Parameters
        ----------
        y : ndarray of float, shape (n_samples,)
            Mono audio at ``config.sr`` (at least one hop); ``n_frames = n_samples // hop``.
        sr : int, optional
            The rate of ``y``, checked against ``config.sr`` when given.
        """
        return self.tokens_of(self.features(y, sr=sr))

    def tokenize_file(self, path: str | os.PathLike[str]) -> TrackTokens:
        """Tokens of an audio file at ``config.sr`` (channels are averaged).

        Parameters
        ----------
        path : str or path-like
            A file soundfile reads (WAV, FLAC, ...); another sample rate is an error.
        """
        return self.tokenize(_read_audio(path, self.config))

    def tokenize_files(
        self, paths: Sequence[str | os.PathLike[str]], *, n_jobs: int = 1,
        progress_bar: bool | None = None,
    ) -> list[TrackTokens]:
        """:meth:`tokenize_file` of many files, in order, optionally in worker processes.

        Parameters
        ----------
        paths : sequence of str or path-like
            Audio files.
        n_jobs : int
            Worker processes (1: in this process). Workers compile nothing (no numba kernels
            are used), so the pool is safe; results do not depend on ``n_jobs``.
        progress_bar : bool, optional
            Draw a progress bar (default: on a terminal, see :mod:`aria_tda._progress`).
        """
        return [self.tokens_of(f) for f in _map_features(paths, self.config, self.arrays,
                                                         n_jobs, progress_bar, "tokenize")]

    def decode_acoustic(self, codes: np.ndarray) -> np.ndarray:
        """The RVQ reconstruction of acoustic codes as log-mel frames in dB, (n, n_mels).

        Parameters
        ----------
        codes : ndarray of int, shape (n, L)
            Acoustic tokens of the first ``L <= rvq_levels`` levels.
        """
        a = self.arrays
        return rvq_decode(codes, a["rvq_codebooks"]) * a["mel_std"] + a["mel_mean"]

    def rvq_errors(self, frames: np.ndarray) -> np.ndarray:
        """Mean squared error of the acoustic RVQ after each level, (rvq_levels,).

        Measured on z-scored log-mel values (per-band training mean/std), so 1.0 is about the
        error of predicting every frame by the training mean.

        Parameters
        ----------
        frames : ndarray, shape (n, n_mels)
            Log-mel frames in dB (``features(y).log_mel``).
        """
        a = self.arrays
        z = (as_points("frames", frames) - a["mel_mean"]) / a["mel_std"]
        codes = rvq_encode(z, a["rvq_codebooks"])
        recon = np.cumsum(a["rvq_codebooks"][np.arange(codes.shape[1]), codes], axis=1)
        return np.square(z[:, None, :] - recon).mean(axis=(0, 2))

    def save(self, out_dir: str | os.PathLike[str]) -> Path:
        """Write ``<out_dir>/tokenizers.npz`` and its manifest atomically; return the npz path.

        Parameters
        ----------
        out_dir : str or path-like
            Folder (created if needed).
        """
        path = Path(out_dir) / _FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp, open(tmp, "wb") as fh:
            stored: dict[str, Any] = {k: np.asarray(self.arrays[k]) for k in _ARRAYS}
            np.savez(fh, **stored)
        shapes = {k: list(np.shape(self.arrays[k])) for k in _ARRAYS}
        write_manifest(path, make_manifest(_KIND, parameters=self.config.to_dict(),
                                           hop=self.hop, arrays=shapes, **dict(self.info)))
        return path


def load_tokenizers(out_dir: str | os.PathLike[str]) -> Tokenizers:
    """Load tokenizers saved by :meth:`Tokenizers.save` / :func:`fit_tokenizers`.

    Parameters
    ----------
    out_dir : str or path-like
        The folder holding ``tokenizers.npz`` and its manifest.
    """
    path = Path(out_dir) / _FILE
    man = read_manifest(path) if path.is_file() else None
    if man is None or man.get("kind") != _KIND:
        raise FileFormatError(f"{str(path)!r}: no saved audio tokenizers (npz + manifest)")
    cfg = TokenizerConfig.from_mapping(man["parameters"])
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in _ARRAYS}
    except (OSError, KeyError, ValueError) as exc:
        raise FileFormatError(f"{str(path)!r}: unreadable tokenizers ({exc})") from None
    for k, a in arrays.items():
        if list(a.shape) != list(man["arrays"][k]):
            raise FileFormatError(f"{str(path)!r}: {k} has shape {a.shape}, manifest says "
                                  f"{man['arrays'][k]}")
    info = {k: v for k, v in man.items() if k in ("training", "fit_seconds", "rvq_train_errors")}
    return Tokenizers(config=cfg, arrays=arrays, info=info)


def _features_task(task: tuple[TokenizerConfig, Mapping[str, np.ndarray], str]) -> Any:
    cfg, filters, path = task
    try:
        return _features(_read_audio(path, cfg), cfg, filters)
    except Exception as exc:  # re-raised in the parent (a raising worker would just die)
        return exc


def _map_features(
    tracks: Sequence[Any], cfg: TokenizerConfig, filters: Mapping[str, np.ndarray],
    n_jobs: int, progress_bar: bool | None, desc: str,
) -> Iterator[FrameFeatures]:
    """Frame features of arrays and files, in order; files in ``n_jobs`` workers if > 1."""
    n_jobs = check_int("n_jobs", n_jobs, min_value=1)
    files = [os.fspath(t) for t in tracks if not isinstance(t, np.ndarray)]
    pooled: Any = None
    if n_jobs > 1 and len(files) > 1:
        from aria_tda.features.process_pool import run_pool

        flt = {k: np.asarray(filters[k]) for k in _ARRAYS[:5]}
        pooled = run_pool(_features_task, [(f, (cfg, flt, f)) for f in files], workers=n_jobs)
    try:
        bar = progress(tracks, total=len(tracks), desc=desc, unit="track", enabled=progress_bar)
        for i, t in enumerate(bar):
            if isinstance(t, np.ndarray):
                yield _features(_check_audio(t, cfg, None, name=f"tracks[{i}]"), cfg, filters)
            elif pooled is None:
                yield _features(_read_audio(t, cfg), cfg, filters)
            else:
                r = next(pooled)
                if isinstance(r, Exception):
                    raise r
                # not FrameFeatures: a worker died (aria_tda.features.process_pool.Died)
                if not isinstance(r, FrameFeatures):
                    raise DataError(f"{os.fspath(t)!r}: the worker died ({r.reason})")
                yield r
    finally:
        if pooled is not None:
            pooled.close()


def _digest(tracks: Sequence[Any]) -> str:
    h = hashlib.sha256()
    for t in tracks:
        if isinstance(t, np.ndarray):
            h.update(f"{t.shape}".encode() + np.ascontiguousarray(t, dtype=np.float32).tobytes())
        else:
            h.update(Path(t).read_bytes())
        h.update(b"|")
    return h.hexdigest()


def fit_tokenizers(
    tracks: Sequence[str | os.PathLike[str] | np.ndarray], *,
    config: TokenizerConfig | None = None, out_dir: str | os.PathLike[str] | None = None,
    n_jobs: int = 1, progress_bar: bool | None = None,
) -> Tokenizers:
    """Fit the semantic, acoustic and conditioning tokenizers on the given (training) tracks.

    Parameters
    ----------
    tracks : sequence of path-like or ndarray
        The TRAINING tracks only: audio files at ``config.sr`` or mono float arrays at it.
    config : TokenizerConfig, optional
        Sizes and seed (default ``TokenizerConfig()``).
    out_dir : str or path-like, optional
        Save there (:meth:`Tokenizers.save`); a stored fit with the same config and training
        digest (sha256 of the audio) is loaded instead of refitted.
    n_jobs : int
        Worker processes for the feature extraction of files (results do not depend on it).
    progress_bar : bool, optional
        Draw a progress bar (default: on a terminal).
    """
    cfg = config or TokenizerConfig()
    if not isinstance(cfg, TokenizerConfig):
        raise ParameterError(expected("config", "a TokenizerConfig", type(cfg).__name__))
    tracks = list(tracks)
    if not tracks:
        raise DataError(expected("tracks", "at least one training track", "none"))
    digest = _digest(tracks)
    if out_dir is not None:
        man = read_manifest(Path(out_dir) / _FILE) if (Path(out_dir) / _FILE).is_file() else None
        if (man and man.get("kind") == _KIND and man.get("parameters") == cfg.to_dict()
                and man.get("training", {}).get("digest") == digest):
            return load_tokenizers(out_dir)
    t0 = time.perf_counter()
    filters = _filters(cfg.sr, cfg.n_fft, cfg.n_mels)
    feats = list(_map_features(tracks, cfg, filters, n_jobs, progress_bar, "tokenizer features"))
    sem = np.concatenate([f.semantic for f in feats])
    mel = np.concatenate([f.log_mel for f in feats])
    rng = np.random.default_rng([cfg.seed, 0])
    pick = np.sort(rng.choice(len(sem), size=min(cfg.fit_frames, len(sem)), replace=False))
    sem_mean, sem_std = _zscore_stats(sem)
    weights = _group_weights(cfg.n_mfcc)
    z = (sem[pick] - sem_mean) / sem_std * weights
    centroids = kmeans(z, cfg.semantic_k, n_iter=cfg.kmeans_iters, seed=[cfg.seed, 1])
    mel_mean, mel_std = _zscore_stats(mel)
    books = rvq_fit((mel[pick] - mel_mean) / mel_std, cfg.rvq_levels, cfg.rvq_codebook,
                    n_iter=cfg.kmeans_iters, seed=[cfg.seed, 2])
    emb = np.stack([_embedding(f.semantic) for f in feats])
    cond_mean, cond_std = _zscore_stats(emb)
    cond_w = np.concatenate([weights, weights]) / np.sqrt(2.0)
    cond_books = rvq_fit((emb - cond_mean) / cond_std * cond_w, cfg.cond_codebooks,
                         cfg.cond_codebook, n_iter=cfg.kmeans_iters, seed=[cfg.seed, 3])
    arrays = dict(filters, sem_mean=sem_mean, sem_std=sem_std, sem_weights=weights,
                  sem_centroids=centroids, mel_mean=mel_mean, mel_std=mel_std,
                  rvq_codebooks=books, cond_mean=cond_mean, cond_std=cond_std,
                  cond_weights=cond_w, cond_codebooks=cond_books)
    tok = Tokenizers(config=cfg, arrays=arrays)
    errors = tok.rvq_errors(mel[pick])
    info = {"training": {"n_tracks": len(tracks), "n_frames": len(sem), "n_fit_frames":
                         len(pick), "digest": digest},
            "fit_seconds": round(time.perf_counter() - t0, 3),
            "rvq_train_errors": [round(float(e), 6) for e in errors]}
    tok = Tokenizers(config=cfg, arrays=arrays, info=info)
    if out_dir is not None:
        tok.save(out_dir)
    return tok


# ------------------------------------------------------------------------------------------
# Token files
# ------------------------------------------------------------------------------------------


def save_track_tokens(
    path: str | os.PathLike[str], tokens: Mapping[str, TrackTokens], *,
    config: TokenizerConfig | None = None,
) -> Path:
    """Write the tokens of many tracks to one ``.npz`` (with a manifest), atomically.

    Parameters
    ----------
    path : str or path-like
        The ``.npz`` file.
    tokens : mapping of str to TrackTokens
        Track id -> tokens.
    config : TokenizerConfig, optional
        Recorded in the manifest.
    """
    ids = list(tokens)
    lens = np.array([tokens[i].n_frames for i in ids], dtype=np.int64)
    arrays: dict[str, Any] = {
        "ids": np.array(ids, dtype=str),
        "offsets": np.concatenate([[0], np.cumsum(lens)]).astype(np.int64),
        "semantic": np.concatenate([tokens[i].semantic for i in ids] or [np.zeros(0, np.int64)]),
        "acoustic": np.concatenate([tokens[i].acoustic for i in ids]) if ids else np.zeros((0, 0)),
        "cond": np.stack([tokens[i].cond for i in ids]) if ids else np.zeros((0, 0)),
    }
    path = Path(path)
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        np.savez(fh, **arrays)
    write_manifest(path, make_manifest(_TOKENS_KIND, n_tracks=len(ids),
                                       parameters=config.to_dict() if config else None))
    return path


def load_track_tokens(path: str | os.PathLike[str]) -> dict[str, TrackTokens]:
    """Read a file written by :func:`save_track_tokens`.

    Parameters
    ----------
    path : str or path-like
        The ``.npz`` file.
    """
    man = read_manifest(path) if Path(path).is_file() else None
    if man is None or man.get("kind") != _TOKENS_KIND:
        raise FileFormatError(f"{os.fspath(path)!r}: no saved track tokens (npz + manifest)")
    with np.load(path, allow_pickle=False) as z:
        ids, off = z["ids"].tolist(), z["offsets"]
        sem, ac, cond = z["semantic"], z["acoustic"], z["cond"]
    return {tid: TrackTokens(semantic=sem[off[i]:off[i + 1]], acoustic=ac[off[i]:off[i + 1]],
                             cond=cond[i]) for i, tid in enumerate(ids)}
