r"""The constant-Q front end of CLEWS: nnAudio's ``CQT1992v2`` re-implemented exactly.

CLEWS (Serrà et al. 2025) computes its input with ``nnAudio.features.CQT1992v2`` (nnAudio 0.3.3,
MIT): time-domain complex kernels, one per bin, convolved with the reflect-padded signal at a
fixed hop, magnitude taken, each bin scaled by :math:`\sqrt{N_k}` ("librosa" normalisation).
Because the kernels are registered as *buffers*, they are part of every CLEWS state dict
(``cqt.0.cqt_kernels_real``, ``cqt.0.cqt_kernels_imag``, ``cqt.0.lenghts`` — nnAudio's
spelling); :class:`ConstantQ` keeps the same three buffers so a published checkpoint loads into
it strictly and its stored kernels are the ones used.

Conventions
-----------
Kernels (:func:`cqt_kernels`, as nnAudio's ``create_cqt_kernels``): bin :math:`k` has centre
frequency :math:`f_k = f_{\min} 2^{k/b}` (:math:`b` bins per octave), quality
:math:`Q = s / (2^{1/b} - 1)` (filter scale :math:`s`), length
:math:`N_k = \lceil Q f_s / f_k \rceil` samples and

.. math:: K_k[n] = \frac{w_{N_k}[n]\, e^{2\pi i f_k n / f_s}}{N_k}
          \Big/ \Big\lVert \cdot \Big\rVert_1, \qquad n = -\lceil N_k/2\rceil, \dots,

(``w`` the periodic Hann window), centred in a buffer of :math:`L = 2^{\lceil\log_2 \max N_k
\rceil}` samples (16,384 for CLEWS: 16 kHz, :math:`f_{\min}` = 32.70 Hz). The transform of a
signal :math:`x` reflect-padded by :math:`L/2` on both sides is

.. math:: C_k[t] = \sqrt{N_k}\,\Big|\sum_{n=0}^{L-1} x_{\text{pad}}[tH + n]\, K_k[n]\Big|,
          \qquad t = 0, \dots, \lfloor (T_{\text{pad}} - L)/H \rfloor

(:math:`H` the hop; nnAudio negates the imaginary part, which the magnitude ignores). Shapes:
``(n_bins, n_frames)``.

Speed: each kernel is zero outside its :math:`N_k` central samples, so :func:`cqt_magnitude`
convolves groups of neighbouring bins with their kernels cropped to the group's non-zero span
(read from the kernels themselves, so any stored kernels are handled) — the same sums without
the zeros, about 10× fewer multiplications than nnAudio's full-length convolution for CLEWS.
:func:`cqt_magnitude_reference` is the direct sum above in float64.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from aria_tda.errors import DataError, ParameterError, expected

__all__ = ["ConstantQ", "cqt_kernels", "cqt_magnitude"]

#: nnAudio's default lowest frequency (C1, Hz); CLEWS does not change it
FMIN = 32.70


def cqt_kernels(
    sample_rate: int,
    *,
    fmin: float = FMIN,
    n_bins: int = 84,
    bins_per_octave: int = 12,
    filter_scale: float = 1.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Time-domain CQT kernels exactly as nnAudio 0.3.3's ``create_cqt_kernels`` makes them.

    Hann window, L1 normalisation (nnAudio's defaults, which CLEWS keeps).

    Parameters
    ----------
    sample_rate : int
        Signal rate :math:`f_s` in Hz.
    fmin : float
        Centre frequency of bin 0 in Hz (nnAudio's default 32.70).
    n_bins : int
        Number of bins.
    bins_per_octave : int
        Bins per octave :math:`b`.
    filter_scale : float
        Filter scale :math:`s` (:math:`Q = s / (2^{1/b} - 1)`).

    Returns
    -------
    kernels : numpy.ndarray [shape=(n_bins, L)], complex64
        Centred kernels in an ``L``-sample buffer (``L`` a power of two).
    lengths : numpy.ndarray [shape=(n_bins,)], float32
        :math:`N_k`, the kernel lengths in samples.
    freqs : numpy.ndarray [shape=(n_bins,)], float64
        Centre frequencies :math:`f_k` in Hz.
    """
    from scipy.signal import get_window

    if n_bins < 1 or bins_per_octave < 1:
        raise ParameterError(expected("n_bins", "positive bin counts", (n_bins, bins_per_octave)))
    q = float(filter_scale) / (2 ** (1 / bins_per_octave) - 1)
    freqs = fmin * 2.0 ** (np.r_[0:n_bins] / np.double(bins_per_octave))
    if np.max(freqs) > sample_rate / 2:
        raise ParameterError(
            expected("n_bins", f"a top bin below Nyquist ({sample_rate / 2} Hz)", np.max(freqs))
        )
    lengths = np.ceil(q * sample_rate / freqs)
    width = int(2 ** np.ceil(np.log2(int(lengths.max()))))
    kernels = np.zeros((n_bins, width), dtype=np.complex64)
    for k in range(n_bins):
        n = lengths[k]
        start = int(np.ceil(width / 2.0 - n / 2.0)) - (1 if n % 2 == 1 else 0)
        win = get_window("hann", int(n), fftbins=True)
        sig = win * np.exp(np.r_[-n // 2 : n // 2] * 1j * 2 * np.pi * freqs[k] / sample_rate) / n
        kernels[k, start : start + int(n)] = sig / np.linalg.norm(sig, 1)
    return kernels, lengths.astype(np.float32), freqs


def _spans(real: torch.Tensor, imag: torch.Tensor) -> list[tuple[int, int, int, int]]:
    """Groups of neighbouring bins and their common non-zero span: ``(b0, b1, lo, hi)``.

    A group starts at bin ``b0`` and takes the following bins while their own span is more than
    half of ``b0``'s (about an octave of bins for CQT kernels, whose spans nest).
    """
    nonzero = ((real != 0) | (imag != 0)).reshape(real.shape[0], -1).cpu().numpy()
    width = nonzero.shape[1]
    has = nonzero.any(axis=1)
    first = np.where(has, nonzero.argmax(axis=1), 0)
    last = np.where(has, width - 1 - nonzero[:, ::-1].argmax(axis=1), 0)
    span = last - first + 1
    groups: list[tuple[int, int, int, int]] = []
    b0, n_bins = 0, real.shape[0]
    while b0 < n_bins:
        b1 = b0 + 1
        while b1 < n_bins and 2 * span[b1] > span[b0]:
            b1 += 1
        groups.append((b0, b1, int(first[b0:b1].min()), int(last[b0:b1].max())))
        b0 = b1
    return groups


def _cqt_torch(
    x: torch.Tensor, real: torch.Tensor, imag: torch.Tensor, lengths: torch.Tensor, hop_length: int
) -> torch.Tensor:
    """Batched CQT magnitude: x ``(B, T)`` float32 → ``(B, n_bins, n_frames)``."""
    from torch.nn.functional import conv1d, pad

    width = real.shape[-1]
    xp = pad(x[:, None, :], (width // 2, width // 2), mode="reflect")
    n_frames = (xp.shape[-1] - width) // hop_length + 1
    out = []
    for b0, b1, lo, hi in _spans(real, imag):
        w = torch.cat([real[b0:b1, :, lo : hi + 1], imag[b0:b1, :, lo : hi + 1]], dim=0)
        y = conv1d(xp[..., lo:], w, stride=hop_length)[..., :n_frames]
        re, im = y[:, : b1 - b0], y[:, b1 - b0 :]
        out.append(torch.sqrt(re * re + im * im))
    return torch.cat(out, dim=1) * torch.sqrt(lengths.view(1, -1, 1))


def cqt_magnitude(
    y: np.ndarray,
    kernels_real: np.ndarray,
    kernels_imag: np.ndarray,
    lengths: np.ndarray,
    *,
    hop_length: int,
) -> np.ndarray:
    r"""CQT magnitude of one signal with the given kernels (nnAudio ``CQT1992v2``, centred).

    Parameters
    ----------
    y : numpy.ndarray [shape=(T,)]
        Mono signal; ``T`` must exceed half the kernel width (reflect padding).
    kernels_real, kernels_imag : numpy.ndarray [shape=(n_bins, L) or (n_bins, 1, L)]
        Real and imaginary parts of the kernels (:func:`cqt_kernels`).
    lengths : numpy.ndarray [shape=(n_bins,)]
        Kernel lengths :math:`N_k` (the :math:`\sqrt{N_k}` scaling).
    hop_length : int
        Hop :math:`H` in samples.

    Returns
    -------
    numpy.ndarray [shape=(n_bins, n_frames)], float32
        :math:`C_k[t]`, ``n_frames = T // H + 1``.
    """
    real = torch.as_tensor(np.asarray(kernels_real, dtype=np.float32))
    imag = torch.as_tensor(np.asarray(kernels_imag, dtype=np.float32))
    real = real.reshape(real.shape[0], 1, real.shape[-1])
    imag = imag.reshape(imag.shape[0], 1, imag.shape[-1])
    x = torch.as_tensor(_check_signal(y, real.shape[-1]))[None]
    lens = torch.as_tensor(np.asarray(lengths, dtype=np.float32))
    with torch.inference_mode():
        out = _cqt_torch(x, real, imag, lens, hop_length)
    return out[0].numpy()


def cqt_magnitude_reference(
    y: np.ndarray,
    kernels_real: np.ndarray,
    kernels_imag: np.ndarray,
    lengths: np.ndarray,
    *,
    hop_length: int,
) -> np.ndarray:
    """Exact twin of :func:`cqt_magnitude`: the direct windowed sum in float64.

    Parameters
    ----------
    y : numpy.ndarray [shape=(T,)]
        Mono signal.
    kernels_real, kernels_imag : numpy.ndarray [shape=(n_bins, L) or (n_bins, 1, L)]
        Kernel parts.
    lengths : numpy.ndarray [shape=(n_bins,)]
        Kernel lengths.
    hop_length : int
        Hop in samples.
    """
    kr = np.asarray(kernels_real, dtype=np.float64)
    ki = np.asarray(kernels_imag, dtype=np.float64)
    kr, ki = kr.reshape(kr.shape[0], -1), ki.reshape(ki.shape[0], -1)
    width = kr.shape[1]
    x = np.pad(_check_signal(y, width).astype(np.float64), width // 2, mode="reflect")
    n_frames = (len(x) - width) // hop_length + 1
    out = np.empty((kr.shape[0], n_frames))
    for t in range(n_frames):
        seg = x[t * hop_length : t * hop_length + width]
        out[:, t] = np.hypot(kr @ seg, ki @ seg)
    return (out * np.sqrt(np.asarray(lengths, dtype=np.float64))[:, None]).astype(np.float32)


def _check_signal(y: np.ndarray, width: int) -> np.ndarray:
    x = np.asarray(y, dtype=np.float32)
    if x.ndim != 1:
        raise DataError(expected("y", "a mono signal of shape (n_samples,)", x.shape))
    if len(x) <= width // 2:
        raise DataError(expected("y", f"more than {width // 2} samples (reflect padding)", len(x)))
    return x


class ConstantQ(torch.nn.Module):
    """``nnAudio.features.CQT1992v2`` as a torch module with nnAudio's buffer names.

    Buffers ``lenghts`` (sic), ``cqt_kernels_real``, ``cqt_kernels_imag`` ``(n_bins, 1, L)`` —
    the keys a CLEWS state dict holds under ``cqt.0.``. Input ``(B, T)``, output
    ``(B, n_bins, T // hop + 1)``.

    Parameters
    ----------
    sample_rate : int
        Signal rate in Hz.
    hop_length : int
        Hop in samples.
    n_bins : int
        Number of bins.
    bins_per_octave : int
        Bins per octave.
    filter_scale : float
        Filter scale.
    """

    lenghts: torch.Tensor
    cqt_kernels_real: torch.Tensor
    cqt_kernels_imag: torch.Tensor

    def __init__(
        self,
        sample_rate: int,
        hop_length: int,
        n_bins: int = 84,
        bins_per_octave: int = 12,
        filter_scale: float = 1.0,
    ) -> None:
        super().__init__()
        kernels, lengths, freqs = cqt_kernels(
            sample_rate, n_bins=n_bins, bins_per_octave=bins_per_octave, filter_scale=filter_scale
        )
        self.hop_length = int(hop_length)
        self.frequencies = freqs
        self.register_buffer("lenghts", torch.tensor(lengths))
        self.register_buffer("cqt_kernels_real", torch.tensor(kernels.real).unsqueeze(1))
        self.register_buffer("cqt_kernels_imag", torch.tensor(kernels.imag).unsqueeze(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """CQT magnitude of a batch.

        Parameters
        ----------
        x : torch.Tensor [shape=(B, T)]
            Signals.
        """
        return _cqt_torch(
            x, self.cqt_kernels_real, self.cqt_kernels_imag, self.lenghts, self.hop_length
        )


def n_frames(n_samples: int, hop_length: int) -> int:
    """Frames of a centred CQT of ``n_samples`` samples (``n_samples // hop + 1``).

    Parameters
    ----------
    n_samples : int
        Signal length.
    hop_length : int
        Hop in samples.
    """
    return math.floor(n_samples / hop_length) + 1
