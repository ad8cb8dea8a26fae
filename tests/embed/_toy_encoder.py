"""A small, real, deterministic encoder for the tests of ``aria-tda embed``: log-mel band energies.

Frames of 1024 samples (hop 512) at 16 kHz → power spectrum → 24 triangular mel bands → log →
a linear projection read from the "checkpoint" (a ``.npy`` matrix ``(dim, 24)``), so the
checkpoint's digest and contents matter exactly as for a real encoder. Pure numpy: worker
processes import it by module name (this folder is on ``sys.path`` under pytest, and spawned
workers inherit ``sys.path``).

:data:`SPEC` is the registry entry tests add to :data:`aria_tda.embed.encoders.ENCODERS`
(monkeypatched).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda.embed.encoders.base import Encoder, EncoderSpec, file_sha256

RATE = 16_000
N_FFT = 1024
HOP = 512
N_MELS = 24

SPEC = EncoderSpec(
    "toy", "_toy_encoder:load_toy", "toy log-mel (tests)", RATE,
    weights_hint="a toy projection written by _toy_encoder.save_checkpoint",
)


def _mel_filters() -> np.ndarray:
    def mel(f: np.ndarray) -> np.ndarray:
        return 2595.0 * np.log10(1.0 + f / 700.0)

    def hz(m: np.ndarray) -> np.ndarray:
        return 700.0 * (10 ** (m / 2595.0) - 1.0)

    freqs = np.linspace(0, RATE / 2, N_FFT // 2 + 1)
    edges = hz(np.linspace(mel(np.array(30.0)), mel(np.array(RATE / 2)), N_MELS + 2))
    fb = np.zeros((N_MELS, freqs.size))
    for i in range(N_MELS):
        lo, mid, hi = edges[i], edges[i + 1], edges[i + 2]
        up = (freqs - lo) / (mid - lo)
        down = (hi - freqs) / (hi - mid)
        fb[i] = np.maximum(0.0, np.minimum(up, down))
    return fb


class ToyEncoder(Encoder):
    """Log-mel frames projected by the checkpoint's matrix."""

    name = "toy"
    sample_rate = RATE

    def __init__(self, weights: Path, layer: int | None) -> None:
        self.weights = Path(weights)
        self.proj = np.load(self.weights)
        self.dim = int(self.proj.shape[0])
        self.layer = layer
        self.fb = _mel_filters()

    def embed_frames(self, y: np.ndarray) -> np.ndarray:
        y = np.asarray(y, dtype=np.float64)
        if y.size < N_FFT:
            y = np.pad(y, (0, N_FFT - y.size))
        n = 1 + (y.size - N_FFT) // HOP
        idx = np.arange(N_FFT)[None, :] + HOP * np.arange(n)[:, None]
        spec = np.abs(np.fft.rfft(y[idx] * np.hanning(N_FFT), axis=1)) ** 2
        logmel = np.log(1e-3 + spec @ self.fb.T)
        return (logmel @ self.proj.T).astype(np.float32)

    def info(self) -> dict[str, Any]:
        return {
            "encoder": self.name, "weights": str(self.weights),
            "weights_sha256": file_sha256(self.weights), "layer": self.layer,
            "sample_rate": RATE, "window_seconds": N_FFT / RATE, "dim": self.dim,
            "versions": {"numpy": np.__version__},
        }


def load_toy(weights: str | os.PathLike[str], layer: int | None = None, device: str = "cpu",
             **options: Any) -> ToyEncoder:
    """The registry loader of the toy encoder."""
    if options:
        raise TypeError(f"unexpected options {sorted(options)}")
    return ToyEncoder(Path(weights), layer)


def save_checkpoint(path: Path, *, dim: int = 8, seed: int = 0) -> Path:
    """Write a random projection ``(dim, 24)`` as the toy checkpoint."""
    rng = np.random.default_rng(seed)
    np.save(path, rng.standard_normal((dim, N_MELS)))
    return path


def write_tone(path: Path, freqs: tuple[float, ...], *, seconds: float = 1.6,
               sr: int = 44_100, channels: int = 2, seed: int = 0) -> Path:
    """A real WAV: a sum of sines (plus a little noise), ``channels`` channels at ``sr``."""
    import soundfile as sf

    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * sr)) / sr
    y = sum(np.sin(2 * np.pi * f * t) for f in freqs) / len(freqs)
    cols = [y * (1.0 - 0.3 * c) + 0.01 * rng.standard_normal(t.size) for c in range(channels)]
    sf.write(path, np.stack(cols, axis=1).astype(np.float32), sr)
    return path


def make_corpus(root: Path, n: int = 4, *, bad: bool = True) -> Path:
    """``n`` tone tracks (stereo 44.1 kHz and mono 16 kHz mixed) and one corrupt ``bad.wav``."""
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        stereo = i % 2 == 0
        write_tone(root / f"t{i}.wav", (220.0 * (i + 1), 330.0 + 50 * i),
                   sr=44_100 if stereo else RATE, channels=2 if stereo else 1, seed=i)
    if bad:
        (root / "bad.wav").write_bytes(b"RIFF\x00\x00\x00\x00WAVEjunk")
    return root
