r"""LAION-CLAP's log-mel front end: a power STFT as a strided convolution, a mel matrix, dB.

LAION-CLAP computes its input features with torchlibrosa's ``Spectrogram`` and
``LogmelFilterBank`` (``htsat.py: HTSAT_Swin_Transformer.__init__``), with ``window="hann"``,
``center=True``, ``pad_mode="reflect"``, power 2, ``ref=1.0``, ``amin=1e-10``, ``top_db=None``:

.. math::

    S[t, k] = \Big|\sum_{n=0}^{N-1} w[n]\, x[tH + n]\, e^{-2\pi i nk/N}\Big|^2,\qquad
    L[t, m] = 10 \log_{10} \max\!\big(10^{-10}, \textstyle\sum_k S[t, k]\, M[k, m]\big)

with ``x`` reflect-padded by ``N/2`` on both sides, ``N = 1024``, ``H = 480``, ``w`` the periodic
Hann window and ``M`` librosa's Slaney-normalised mel matrix (``librosa.filters.mel``, 64 bands,
50 Hz – 14 kHz, ``htk=False``). torchlibrosa stores the DFT kernels
(``spectrogram_extractor.stft.conv_real.weight`` / ``conv_imag.weight``, shape ``(N/2+1, 1, N)``)
and ``M`` (``logmel_extractor.melW``, ``(N/2+1, 64)``) as frozen parameters, so they are part of
every CLAP checkpoint; ARIA loads them from the checkpoint exactly as CLAP does and computes them
(:func:`stft_kernels`, :func:`mel_filterbank`) only to write new checkpoints. A 480,000-sample
window gives ``1 + 480000 // 480 = 1001`` frames.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["LogMel", "Spectrogram", "hann_window", "mel_filterbank", "stft_kernels"]


def hann_window(n: int) -> np.ndarray:
    """The periodic ("fftbins") Hann window of length ``n``, float64.

    Parameters
    ----------
    n : int
        Window length.
    """
    return 0.5 - 0.5 * np.cos(2.0 * np.pi * np.arange(n) / n)


def stft_kernels(n_fft: int) -> tuple[np.ndarray, np.ndarray]:
    """Windowed DFT kernels as torchlibrosa's ``STFT`` builds them, each ``(n_fft//2+1, 1, n_fft)``.

    Parameters
    ----------
    n_fft : int
        FFT length (= window length).

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        Real and imaginary parts, float32: ``w[n] cos(2πnk/N)`` and ``-w[n] sin(2πnk/N)``.
    """
    k = np.arange(n_fft // 2 + 1)[:, None]
    n = np.arange(n_fft)[None, :]
    phase = 2.0 * np.pi * ((k * n) % n_fft) / n_fft
    w = hann_window(n_fft)[None, :]
    real = (w * np.cos(phase)).astype(np.float32)[:, None, :]
    imag = (-w * np.sin(phase)).astype(np.float32)[:, None, :]
    return real, imag


def _hz_to_mel(f: np.ndarray) -> np.ndarray:
    # Slaney's scale: linear below 1 kHz (200/3 Hz per mel), logarithmic above
    f = np.asarray(f, dtype=np.float64)
    lin = f / (200.0 / 3.0)
    logstep = np.log(6.4) / 27.0
    return np.where(f >= 1000.0, 15.0 + np.log(np.maximum(f, 1e-12) / 1000.0) / logstep, lin)


def _mel_to_hz(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, dtype=np.float64)
    logstep = np.log(6.4) / 27.0
    return np.where(m >= 15.0, 1000.0 * np.exp(logstep * (m - 15.0)), m * (200.0 / 3.0))


def mel_filterbank(
    sample_rate: int, n_fft: int, n_mels: int, fmin: float, fmax: float
) -> np.ndarray:
    """Slaney-normalised triangular mel filters, ``(n_fft//2+1, n_mels)`` float32 (= ``melW``).

    The same matrix as ``librosa.filters.mel(sr=..., n_fft=..., n_mels=..., fmin=..., fmax=...).T``
    (librosa's defaults ``htk=False``, ``norm="slaney"``).

    Parameters
    ----------
    sample_rate : int
        Sample rate in Hz.
    n_fft : int
        FFT length.
    n_mels : int
        Number of bands.
    fmin, fmax : float
        Lowest and highest band edge in Hz.
    """
    fft_freqs = np.linspace(0.0, sample_rate / 2.0, 1 + n_fft // 2)
    lo, hi = _hz_to_mel(np.array(fmin)), _hz_to_mel(np.array(fmax))
    edges = _mel_to_hz(np.linspace(lo, hi, n_mels + 2))
    widths = np.diff(edges)
    ramps = edges[:, None] - fft_freqs[None, :]
    lower = -ramps[:-2] / widths[:-1, None]
    upper = ramps[2:] / widths[1:, None]
    weights = np.maximum(0.0, np.minimum(lower, upper))
    weights *= (2.0 / (edges[2:] - edges[:-2]))[:, None]
    return weights.T.astype(np.float32)


class _Kernel(nn.Module):
    """One frozen convolution kernel as ``weight`` (torchlibrosa's ``conv_real``/``conv_imag``)."""

    weight: torch.Tensor

    def __init__(self, weight: np.ndarray) -> None:
        super().__init__()
        self.register_buffer("weight", torch.from_numpy(np.ascontiguousarray(weight)))


class _STFT(nn.Module):
    def __init__(self, n_fft: int) -> None:
        super().__init__()
        real, imag = stft_kernels(n_fft)
        self.conv_real = _Kernel(real)
        self.conv_imag = _Kernel(imag)


class Spectrogram(nn.Module):
    """Power spectrogram ``(batch, 1, frames, n_fft//2+1)`` of ``(batch, samples)`` audio.

    Parameters
    ----------
    n_fft : int
        FFT and window length.
    hop : int
        Hop in samples.
    """

    def __init__(self, n_fft: int, hop: int) -> None:
        super().__init__()
        self.n_fft, self.hop = n_fft, hop
        self.stft = _STFT(n_fft)

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        """Reflect-pad by ``n_fft // 2``, convolve with both kernels, add the squares.

        Parameters
        ----------
        y : torch.Tensor
            Waveforms ``(batch, samples)``.
        """
        x = F.pad(y[:, None, :], (self.n_fft // 2, self.n_fft // 2), mode="reflect")
        bins = self.stft.conv_real.weight.shape[0]
        kernel = torch.cat([self.stft.conv_real.weight, self.stft.conv_imag.weight], dim=0)
        z = F.conv1d(x, kernel, stride=self.hop)  # (batch, 2 * bins, frames)
        power = z[:, :bins] ** 2 + z[:, bins:] ** 2
        return power.transpose(1, 2)[:, None]


class LogMel(nn.Module):
    """Mel projection and dB: ``10 log10(max(1e-10, S @ melW))`` (``ref=1``, no ``top_db``).

    Parameters
    ----------
    sample_rate : int
        Sample rate in Hz.
    n_fft : int
        FFT length.
    n_mels : int
        Number of mel bands.
    fmin, fmax : float
        Band range in Hz.
    """

    amin = 1e-10
    melW: torch.Tensor

    def __init__(self, sample_rate: int, n_fft: int, n_mels: int, fmin: float, fmax: float) -> None:
        super().__init__()
        self.register_buffer(
            "melW", torch.from_numpy(mel_filterbank(sample_rate, n_fft, n_mels, fmin, fmax))
        )

    def forward(self, power: torch.Tensor) -> torch.Tensor:
        """``(..., n_fft//2+1)`` power → ``(..., n_mels)`` dB.

        Parameters
        ----------
        power : torch.Tensor
            Power spectrogram, frequency last.
        """
        mel = torch.matmul(power, self.melW)
        return 10.0 * torch.log10(torch.clamp(mel, min=self.amin))
