"""Audio for the encoders: read a file, mix to mono, resample to the encoder's rate, cut segments.

Conventions
-----------
- Reading: :mod:`soundfile` (libsndfile: WAV, FLAC, OGG/Vorbis/Opus, MP3, AIFF, AU), as
  float32; channels are mixed to mono by their mean (what MERT's, CLAP's and CLEWS's own
  loaders do).
- Resampling: :func:`scipy.signal.resample_poly` with the exact ratio ``rate / sr`` reduced
  by their gcd (a Kaiser-windowed polyphase FIR, scipy's default ``("kaiser", 5.0)``). It is
  deterministic, has no run-time JIT (librosa's default resampler ``soxr`` would be fine too,
  but librosa's own code paths compile numba kernels in every fresh worker) and scipy is a core
  dependency, so a store's numbers do not depend on which optional packages are installed.
  :data:`RESAMPLER` names it in each store's manifest.
- Segments (``segment_seconds=S``): consecutive windows ``[kS, (k+1)S)`` from the start; a
  final remainder shorter than ``S/2`` is dropped, a track shorter than ``S`` is one segment.
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

from aria_tda.errors import DataError

__all__ = ["RESAMPLER", "load_mono", "resample", "segment_bounds"]

#: recorded in the manifest of every embedding store
RESAMPLER = "scipy.signal.resample_poly (kaiser 5.0), channels mixed by mean"


def resample(y: np.ndarray, sr: int, rate: int) -> np.ndarray:
    """Resample a mono signal from ``sr`` to ``rate`` Hz (polyphase, exact ratio).

    Parameters
    ----------
    y : numpy.ndarray [shape=(n,)]
        Mono signal.
    sr : int
        Its sample rate (Hz).
    rate : int
        The wanted rate (Hz).
    """
    if int(sr) == int(rate):
        return np.asarray(y, dtype=np.float32)
    from scipy.signal import resample_poly

    g = math.gcd(int(sr), int(rate))
    out = resample_poly(np.asarray(y, dtype=np.float64), int(rate) // g, int(sr) // g)
    return np.asarray(out, dtype=np.float32)


def load_mono(path: str | os.PathLike[str], rate: int) -> np.ndarray:
    """Read an audio file as mono float32 at ``rate`` Hz.

    Parameters
    ----------
    path : path
        The audio file.
    rate : int
        The encoder's sample rate.

    Raises
    ------
    DataError
        a file without samples or with non-finite samples (unreadable files raise
        soundfile's own error; the extraction engine records either).
    """
    from aria_tda._optional import require

    sf: Any = require("soundfile", "embed", purpose="reading audio for aria-tda embed")
    data, sr = sf.read(str(path), dtype="float32", always_2d=True)
    if data.size == 0:
        raise DataError(f"audio: {str(path)!r} holds no samples")
    y = data.mean(axis=1)
    if not np.all(np.isfinite(y)):
        raise DataError(f"audio: {str(path)!r} holds NaN or infinite samples")
    return resample(y, int(sr), int(rate))


def segment_bounds(n_samples: int, rate: int, seconds: float) -> list[tuple[int, int]]:
    """Sample ranges ``(start, stop)`` of the ``seconds``-long segments of a signal.

    Parameters
    ----------
    n_samples : int
        Signal length.
    rate : int
        Sample rate (Hz).
    seconds : float
        Segment length (s); see the module docstring for the remainder rule.
    """
    size = max(1, round(seconds * rate))
    bounds = [(s, min(s + size, n_samples)) for s in range(0, n_samples, size)]
    if len(bounds) > 1 and bounds[-1][1] - bounds[-1][0] < size / 2:
        bounds.pop()
    return bounds
