r"""Front ends of the offline encoders: a constant-Q transform and a log-mel spectrogram (numpy).

Both put frame ``i`` at the centre of samples ``[i·hop, (i+1)·hop)`` (window centred at
``(i + ½)·hop``, zeros outside the signal), so a signal of ``n`` samples has
``n_frames = n // hop`` frames — the frame grid of the audio demo's tokenizers
(:mod:`aria_tda_experiments.audio.tokenizers`), which lets the mert-style encoder predict their
tokens frame by frame. Neither uses librosa or numba: nothing is compiled, nothing is downloaded.

Constant-Q transform (:func:`cqt`)
----------------------------------
Bin ``k`` (``0 <= k < n_bins``) has centre frequency :math:`f_k = f_{min}\,2^{k/B}` with
``B = bins_per_octave`` and quality :math:`Q = 1/(2^{1/B} - 1)`; its kernel is a Hann-windowed
complex exponential of :math:`N_k = \lceil Q\,sr / f_k \rceil` samples, normalised by
:math:`N_k` (Brown 1991; the time-domain CQT that nnAudio's ``CQT1992v2`` computes, which is
CLEWS's front end):

.. math:: X[i, k] = \Bigl|\frac{1}{N_k}\sum_{n=0}^{N_k-1} w_{N_k}[n]\,
          y[c_i - \lfloor N_k/2 \rfloor + n]\, e^{-2\pi i f_k n / sr}\Bigr|,
          \qquad c_i = i\cdot hop + \lfloor hop/2 \rfloor.

The fast path zero-pads every kernel to the longest one (centred) and multiplies a chunk of
frames by the real and imaginary kernel matrices at once; :func:`cqt_reference` sums each
kernel over its own support, one frame and one bin at a time.

Log-mel spectrogram (:func:`log_mel`)
-------------------------------------
Power spectrum of a periodic-Hann window of ``n_fft`` samples, an HTK-scale triangular mel
filterbank of ``n_mels`` bands between 0 and ``sr / 2`` (:func:`mel_filterbank`, area one per
band is *not* applied: peak one), then ``10·log10(max(P, 1e-10))`` dB.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from aria_tda._checks import check_int
from aria_tda.errors import DataError, ParameterError, expected

__all__ = ["cqt", "cqt_kernels", "log_mel", "mel_filterbank"]

_POWER_FLOOR = 1e-10


def _check_signal(y: object, hop: int) -> np.ndarray:
    a = np.asarray(y)
    if a.ndim != 1 or not np.issubdtype(a.dtype, np.number):
        raise ParameterError(expected("y", "a mono signal, shape (n_samples,)",
                                      f"shape {a.shape}, dtype {a.dtype}"))
    if a.size < hop:
        raise DataError(expected("y", f"at least one hop ({hop} samples)", f"{a.size} samples"))
    if not np.all(np.isfinite(a)):
        raise DataError(expected("y", "finite samples", "NaN or infinity"))
    return a.astype(np.float64)


def _centred_frames(x: np.ndarray, hop: int, size: int, n_frames: int) -> np.ndarray:
    """Read-only view ``(n_frames, size)``: frame i starts at ``i·hop + hop//2 - size//2``
    (zeros outside the signal)."""
    left = size // 2 - hop // 2  # zeros before sample 0 (frame 0 starts at -left)
    lead = max(left, 0)
    pad = np.zeros(lead + max((n_frames - 1) * hop + size - left, x.size) + size)
    pad[lead:lead + x.size] = x
    first = lead - left
    return np.lib.stride_tricks.sliding_window_view(pad[first:], size)[::hop][:n_frames]


def _periodic_hann(n: int) -> np.ndarray:
    return 0.5 - 0.5 * np.cos(2.0 * np.pi * np.arange(n) / n)


@lru_cache(maxsize=8)
def cqt_kernels(
    sr: int, fmin: float, n_bins: int, bins_per_octave: int
) -> tuple[np.ndarray, np.ndarray]:
    """The CQT kernels, zero-padded to the longest and centred: ``(L, n_bins)`` real and imag.

    Parameters
    ----------
    sr : int
        Sample rate (Hz).
    fmin : float
        Centre frequency of bin 0 (Hz).
    n_bins : int
        Number of bins.
    bins_per_octave : int
        Bins per octave ``B``.
    """
    freqs = fmin * 2.0 ** (np.arange(n_bins) / bins_per_octave)
    if freqs[-1] >= sr / 2:
        raise ParameterError(expected("n_bins", f"bins below the Nyquist frequency {sr / 2} Hz",
                                      f"a top bin at {freqs[-1]:.1f} Hz"))
    q = 1.0 / (2.0 ** (1.0 / bins_per_octave) - 1.0)
    lengths = np.ceil(q * sr / freqs).astype(int)
    size = int(lengths.max())
    re = np.zeros((size, n_bins))
    im = np.zeros((size, n_bins))
    for k, (f, n) in enumerate(zip(freqs, lengths, strict=True)):
        start = size // 2 - n // 2
        t = np.arange(n)
        w = _periodic_hann(n) / n
        re[start:start + n, k] = w * np.cos(2 * np.pi * f * t / sr)
        im[start:start + n, k] = -w * np.sin(2 * np.pi * f * t / sr)
    re.setflags(write=False)
    im.setflags(write=False)
    return re, im


def cqt(
    y: np.ndarray, *, sr: int, hop: int, fmin: float = 32.70319566257483, n_bins: int = 84,
    bins_per_octave: int = 12, chunk_frames: int = 256,
) -> np.ndarray:
    r"""Constant-Q magnitudes of a mono signal, ``(n // hop, n_bins)`` float64.

    Parameters
    ----------
    y : numpy.ndarray [shape=(n,)]
        Mono signal at ``sr`` (at least ``hop`` samples).
    sr : int
        Sample rate (Hz).
    hop : int
        Samples per frame.
    fmin : float
        Centre of bin 0 (default C1, 32.70 Hz, as CLEWS).
    n_bins : int
        Bins (default 84: 7 octaves).
    bins_per_octave : int
        Bins per octave (default 12: semitones).
    chunk_frames : int
        Frames multiplied at once (memory ``chunk_frames × L`` floats; no effect on the result).

    Returns
    -------
    numpy.ndarray [shape=(n // hop, n_bins)]
        :math:`X[i, k]` of the module docstring.
    """
    hop = check_int("hop", hop, min_value=1)
    chunk_frames = check_int("chunk_frames", chunk_frames, min_value=1)
    x = _check_signal(y, hop)
    re, im = cqt_kernels(int(sr), float(fmin), int(n_bins), int(bins_per_octave))
    size = re.shape[0]
    n_frames = x.size // hop
    windows = _centred_frames(x, hop, size, n_frames)
    out = np.empty((n_frames, re.shape[1]))
    for a in range(0, n_frames, chunk_frames):
        w = windows[a:a + chunk_frames]
        out[a:a + chunk_frames] = np.hypot(w @ re, w @ im)
    return out


def cqt_reference(
    y: np.ndarray, *, sr: int, hop: int, fmin: float = 32.70319566257483, n_bins: int = 84,
    bins_per_octave: int = 12, chunk_frames: int = 256,
) -> np.ndarray:
    """Exact twin of :func:`cqt`: each kernel over its own support, frame by frame, bin by bin.

    Parameters
    ----------
    y, sr, hop, fmin, n_bins, bins_per_octave, chunk_frames
        As :func:`cqt` (``chunk_frames`` unused).
    """
    x = _check_signal(y, hop)
    q = 1.0 / (2.0 ** (1.0 / bins_per_octave) - 1.0)
    out = np.zeros((x.size // hop, n_bins))
    for k in range(n_bins):
        f = fmin * 2.0 ** (k / bins_per_octave)
        n = math.ceil(q * sr / f)
        t = np.arange(n)
        kern = _periodic_hann(n) / n * np.exp(-2j * np.pi * f * t / sr)
        for i in range(out.shape[0]):
            start = i * hop + hop // 2 - n // 2
            seg = np.zeros(n)
            lo, hi = max(start, 0), min(start + n, x.size)
            if hi > lo:
                seg[lo - start:hi - start] = x[lo:hi]
            out[i, k] = abs(np.sum(seg * kern))
    return out


@lru_cache(maxsize=8)
def mel_filterbank(sr: int, n_fft: int, n_mels: int) -> np.ndarray:
    """HTK-scale triangular mel filters (peak one), ``(n_fft // 2 + 1, n_mels)``.

    Parameters
    ----------
    sr : int
        Sample rate (Hz).
    n_fft : int
        FFT size.
    n_mels : int
        Bands between 0 Hz and ``sr / 2``.
    """
    def hz_to_mel(f: np.ndarray) -> np.ndarray:
        return 2595.0 * np.log10(1.0 + f / 700.0)

    edges_mel = np.linspace(0.0, float(hz_to_mel(np.array(sr / 2.0))), n_mels + 2)
    edges = 700.0 * (10.0 ** (edges_mel / 2595.0) - 1.0)
    freqs = np.arange(n_fft // 2 + 1) * sr / n_fft
    lo, mid, hi = edges[:-2], edges[1:-1], edges[2:]
    up = (freqs[:, None] - lo) / (mid - lo)
    down = (hi - freqs[:, None]) / (hi - mid)
    fb = np.maximum(0.0, np.minimum(up, down))
    fb.setflags(write=False)
    return fb


def log_mel(
    y: np.ndarray, *, sr: int, hop: int, n_fft: int = 1024, n_mels: int = 64,
    chunk_frames: int = 512,
) -> np.ndarray:
    r"""Log-mel spectrogram in dB, ``(n // hop, n_mels)`` float64.

    Parameters
    ----------
    y : numpy.ndarray [shape=(n,)]
        Mono signal at ``sr`` (at least ``hop`` samples).
    sr : int
        Sample rate (Hz).
    hop : int
        Samples per frame.
    n_fft : int
        Window and FFT size.
    n_mels : int
        Mel bands.
    chunk_frames : int
        Frames transformed at once (no effect on the result).

    Returns
    -------
    numpy.ndarray [shape=(n // hop, n_mels)]
        ``10·log10(max(P @ M, 1e-10))`` with ``P`` the power spectrum of each centred frame.
    """
    hop = check_int("hop", hop, min_value=1)
    n_fft = check_int("n_fft", n_fft, min_value=2)
    chunk_frames = check_int("chunk_frames", chunk_frames, min_value=1)
    x = _check_signal(y, hop)
    fb = mel_filterbank(int(sr), n_fft, int(n_mels))
    win = _periodic_hann(n_fft)
    n_frames = x.size // hop
    frames = _centred_frames(x, hop, n_fft, n_frames)
    out = np.empty((n_frames, fb.shape[1]))
    for a in range(0, n_frames, chunk_frames):
        spec = np.fft.rfft(frames[a:a + chunk_frames] * win, axis=1)
        power = spec.real ** 2 + spec.imag ** 2
        out[a:a + chunk_frames] = 10.0 * np.log10(np.maximum(power @ fb, _POWER_FLOOR))
    return out


def log_mel_reference(
    y: np.ndarray, *, sr: int, hop: int, n_fft: int = 1024, n_mels: int = 64,
    chunk_frames: int = 512,
) -> np.ndarray:
    """Exact twin of :func:`log_mel`: an explicit DFT of each centred frame, one at a time.

    Parameters
    ----------
    y, sr, hop, n_fft, n_mels, chunk_frames
        As :func:`log_mel` (``chunk_frames`` unused).
    """
    x = _check_signal(y, hop)
    fb = mel_filterbank(int(sr), n_fft, int(n_mels))
    win = _periodic_hann(n_fft)
    k = np.arange(n_fft // 2 + 1)[:, None]
    dft = np.exp(-2j * np.pi * k * np.arange(n_fft)[None, :] / n_fft)
    out = np.zeros((x.size // hop, fb.shape[1]))
    for i in range(out.shape[0]):
        start = i * hop + hop // 2 - n_fft // 2
        seg = np.zeros(n_fft)
        lo, hi = max(start, 0), min(start + n_fft, x.size)
        if hi > lo:
            seg[lo - start:hi - start] = x[lo:hi]
        power = np.abs(dft @ (seg * win)) ** 2
        out[i] = 10.0 * np.log10(np.maximum(power @ fb, _POWER_FLOOR))
    return out
