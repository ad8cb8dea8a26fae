r"""The audio of the demo's generated queries: decoded acoustic tokens, inverted to waveforms.

The embedding baselines of ``aria-tda demo audio`` (paper §4.3, Table 3) score a query by the
cosine similarity of encoder embeddings of the *generated output's audio* and of each training
track. The demo's stage models generate tokens, not audio, and the demo has no neural codec
decoder (the paper's EnCodec); what its acoustic tokens *are* is an 8-level residual VQ of
log-mel frames (:mod:`aria_tda_experiments.audio.tokenizers`). So a query's "generated audio" here
is:

1. **log-mel of the generated tokens** (:func:`query_log_mel`): the coarse stage generates
   acoustic levels 1..3 over its window (4 s: ``n_coarse`` frames); the fine stage generates
   levels 4..8 over the first ``n_fine`` frames of it (2 s). Frames ``[0, n_fine)`` decode
   all levels, frames ``[n_fine, n_coarse)`` the coarse levels only
   (:meth:`~aria_tda_experiments.audio.tokenizers.Tokenizers.decode_acoustic`: the RVQ sum,
   un-z-scored, in dB). The semantic stage's tokens have no decoder and are not heard.
2. **a waveform** (:func:`invert_log_mel`): each dB frame is turned into a non-negative
   power spectrum whose mel projection matches it (least squares under ``S >= 0``, by
   Lee–Seung multiplicative updates from the filterbank's transpose), the log-magnitudes are
   interpolated linearly to ``oversample`` analysis frames per token frame and given phase by
   fast
   Griffin–Lim (Perraudin, Balazs & Søndergaard 2013, momentum 0.99; :func:`griffin_lim`) with
   the tokenizer's own window: frame ``j`` is centred at ``(j + ½)·hop / oversample``, so the
   output has ``n_frames · hop`` samples on the tokenizer's frame grid.

It is an honest but crude rendering: a mel inversion of generated RVQ codes, phase-less and
band-limited to the tokenizer's 64 mel bands (smeared within a band), nothing like EnCodec's
decoder. The encoders compare it with *rendered* training audio, so part of any similarity
gap is this domain gap. Everything is numpy (no librosa kernels, nothing JIT-compiled), float64
and seeded (query ``j``'s initial phase from ``SeedSequence([seed, j])``): equal tokens and seed
give equal waveforms.

On disk (:func:`write_query_audio`): ``<out>/<j>-<query id>.wav`` (``j`` the query row;
float32 WAV at the tokenizer's rate, peak-normalised to 0.99 only where the inversion
exceeds it) and ``<out>/queries.csv`` (``track_id, path, n_frames, n_fine_frames, seconds,
peak_scale``), the tracks listing :func:`aria_tda.embed.embed_to_store` reads. Each file is
written atomically; a 4 s query takes well under a second, so the demo reruns the whole
stage rather than resuming it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda._checks import check_float, check_int
from aria_tda._io import atomic_path, write_text
from aria_tda.errors import DataError, ParameterError, expected
from aria_tda_experiments.audio.vq import one_blas_thread

__all__ = ["griffin_lim", "invert_log_mel", "query_log_mel", "write_query_audio"]

_AMIN = 1e-10


def query_log_mel(tokenizers: Any, queries: Any) -> np.ndarray:
    """The decoded log-mel frames (dB) of every generated query, ``(T, n_coarse, n_mels)``.

    Parameters
    ----------
    tokenizers : aria_tda_experiments.audio.tokenizers.Tokenizers
        The tokenizers the stage models were trained on.
    queries : aria_tda_experiments.audio.generate.StageQueries
        Generated queries (:func:`~aria_tda_experiments.audio.generate.generate_queries`).

    Returns
    -------
    np.ndarray [shape=(T, n_coarse, n_mels)], float64
        Frames ``[0, n_fine)`` from all acoustic levels, the rest from the coarse levels.
    """
    from aria_tda_experiments.audio.stages import stage_layout

    spec = queries.spec
    lay = stage_layout("coarse", spec)
    lc, n_crs = spec.coarse_levels, spec.frames("coarse")
    t = len(queries.query_ids)
    coarse = (queries.tokens["coarse"][:, lay.target_start:].reshape(t, n_crs, lc)
              - lay.offset("acoustic1") - spec.rvq_codebook * np.arange(lc))
    full = np.asarray(queries.acoustic)
    n_fin = full.shape[1]
    if not np.array_equal(full[:, :, :lc], coarse[:, :n_fin]):
        raise DataError("queries: the fine queries' coarse levels differ from the coarse "
                        "queries' (not one generation run)")
    if coarse.min() < 0 or coarse.max() >= spec.rvq_codebook:
        raise DataError(expected("queries", f"acoustic codes in [0, {spec.rvq_codebook})",
                                 (int(coarse.min()), int(coarse.max()))))
    out = np.empty((t, n_crs, tokenizers.config.n_mels))
    for j in range(t):
        out[j, :n_fin] = tokenizers.decode_acoustic(full[j])
        out[j, n_fin:] = tokenizers.decode_acoustic(coarse[j, n_fin:])
    return out


def _nnls_power(mel_power: np.ndarray, mel_fb: np.ndarray, n_iter: int) -> np.ndarray:
    """Non-negative ``S`` (n, F) with ``S @ mel_fb.T ≈ mel_power`` (Lee–Seung updates)."""
    target = mel_power @ mel_fb  # (n, F)
    s = target / np.maximum(mel_fb.sum(axis=0), _AMIN)
    for _ in range(n_iter):
        s *= target / np.maximum((s @ mel_fb.T) @ mel_fb, _AMIN)
    return s


def _centres(n: int, hop: int, oversample: int) -> tuple[np.ndarray, np.ndarray]:
    """Analysis-frame centres (samples) and their positions on the token-frame grid."""
    step = hop / oversample
    c = (np.arange(n * oversample) + 0.5) * step
    return np.round(c).astype(np.int64), c / hop - 0.5


def _stft(y: np.ndarray, window: np.ndarray, centres: np.ndarray) -> np.ndarray:
    n_fft = len(window)
    pad = n_fft
    yp = np.pad(y, (pad, pad))
    idx = (centres - n_fft // 2 + pad)[:, None] + np.arange(n_fft)
    return np.fft.rfft(yp[idx] * window, axis=1)


def _ola_index(window: np.ndarray, centres: np.ndarray) -> np.ndarray:
    n_fft = len(window)
    return ((centres - n_fft // 2 + n_fft)[:, None] + np.arange(n_fft)).reshape(-1)


def _istft(x: np.ndarray, window: np.ndarray, centres: np.ndarray, length: int,
           idx: np.ndarray | None = None, den: np.ndarray | None = None) -> np.ndarray:
    """Windowed overlap-add / summed squared window (``idx``, ``den`` precomputed or not)."""
    n_fft = len(window)
    pad = n_fft
    size = length + 2 * pad
    if idx is None:
        idx = _ola_index(window, centres)
    if den is None:
        den = np.maximum(np.bincount(idx, weights=np.tile(window * window, len(centres)),
                                     minlength=size), 1e-8)
    frames = np.fft.irfft(x, n=n_fft, axis=1) * window
    num = np.bincount(idx, weights=frames.reshape(-1), minlength=size)
    return (num / den)[pad : pad + length]


def griffin_lim(
    magnitude: np.ndarray,
    *,
    window: np.ndarray,
    centres: np.ndarray,
    length: int,
    n_iter: int = 32,
    momentum: float = 0.99,
    seed: int = 0,
) -> np.ndarray:
    r"""Fast Griffin–Lim: a waveform whose STFT magnitude approximates ``magnitude``.

    With :math:`X_0 = |X| e^{i\phi_0}` (``phi_0`` uniform, seeded) and
    :math:`P(X) = \mathrm{STFT}(\mathrm{ISTFT}(X))`, each iteration sets
    :math:`T_k = P(|X| e^{i\phi_k})`,
    :math:`e^{i\phi_{k+1}} = \angle\,(T_k - \tfrac{m}{1 + m} T_{k-1})` (librosa's form of
    Perraudin et al. 2013); the result is ``ISTFT(|X| e^{i phi_n})``. The STFT frame ``j`` is
    ``rfft(window · y[c_j - n_fft/2 : c_j + n_fft/2])`` (zeros outside ``y``); the ISTFT is the
    windowed overlap-add divided by the summed squared window.

    Parameters
    ----------
    magnitude : np.ndarray [shape=(n_frames, n_fft // 2 + 1)]
        Target STFT magnitudes (non-negative).
    window : np.ndarray [shape=(n_fft,)]
        Analysis/synthesis window.
    centres : np.ndarray [shape=(n_frames,)], int
        Centre sample of each frame.
    length : int
        Output samples.
    n_iter : int
        Iterations.
    momentum : float, in [0, 1)
        Fast Griffin–Lim momentum (0: the original algorithm).
    seed : int
        Seeds the initial phase.

    Returns
    -------
    np.ndarray [shape=(length,)], float64
    """
    mag, win, cen, n_iter, length = _gl_checks(magnitude, window, centres, n_iter, length)
    momentum = check_float("momentum", momentum, min_value=0.0, max_value=1.0,
                           max_inclusive=False)
    rng = np.random.default_rng(check_int("seed", seed, min_value=0))
    angles = np.exp(2j * np.pi * rng.random(mag.shape))
    idx = _ola_index(win, cen)
    den = np.maximum(np.bincount(idx, weights=np.tile(win * win, len(cen)),
                                 minlength=length + 2 * len(win)), 1e-8)
    rebuilt = np.zeros_like(angles)
    for _ in range(n_iter):
        prev = rebuilt
        rebuilt = _stft(_istft(mag * angles, win, cen, length, idx, den), win, cen)
        angles = rebuilt - (momentum / (1.0 + momentum)) * prev
        angles /= np.abs(angles) + 1e-16
    return _istft(mag * angles, win, cen, length, idx, den)


def griffin_lim_reference(
    magnitude: np.ndarray,
    *,
    window: np.ndarray,
    centres: np.ndarray,
    length: int,
    n_iter: int = 32,
    momentum: float = 0.99,
    seed: int = 0,
) -> np.ndarray:
    """:func:`griffin_lim` with one frame at a time (explicit loops, no index tricks).

    Parameters
    ----------
    magnitude, window, centres, length, n_iter, momentum, seed
        As :func:`griffin_lim`.
    """
    mag, win, cen, n_iter, length = _gl_checks(magnitude, window, centres, n_iter, length)
    n_fft = len(win)

    def stft(y: np.ndarray) -> np.ndarray:
        out = np.empty(mag.shape, dtype=complex)
        for j, c in enumerate(cen):
            frame = np.zeros(n_fft)
            for k in range(n_fft):
                i = int(c) - n_fft // 2 + k
                if 0 <= i < length:
                    frame[k] = y[i]
            out[j] = np.fft.rfft(frame * win)
        return out

    def istft(x: np.ndarray) -> np.ndarray:
        num, den = np.zeros(length), np.zeros(length)
        for j, c in enumerate(cen):
            frame = np.fft.irfft(x[j], n=n_fft) * win
            for k in range(n_fft):
                i = int(c) - n_fft // 2 + k
                if 0 <= i < length:
                    num[i] += frame[k]
                    den[i] += win[k] ** 2
        return num / np.maximum(den, 1e-8)

    rng = np.random.default_rng(seed)
    angles = np.exp(2j * np.pi * rng.random(mag.shape))
    rebuilt = np.zeros_like(angles)
    for _ in range(n_iter):
        prev = rebuilt
        rebuilt = stft(istft(mag * angles))
        angles = rebuilt - (momentum / (1.0 + momentum)) * prev
        angles /= np.abs(angles) + 1e-16
    return istft(mag * angles)


def _gl_checks(magnitude: Any, window: Any, centres: Any, n_iter: int,
               length: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int]:
    win = np.asarray(window, dtype=np.float64)
    mag = np.asarray(magnitude, dtype=np.float64)
    cen = np.asarray(centres, dtype=np.int64)
    if win.ndim != 1 or len(win) < 2:
        raise ParameterError(expected("window", "a 1-d window of >= 2 samples", win.shape))
    if mag.ndim != 2 or mag.shape[1] != len(win) // 2 + 1 or (mag < 0).any():
        raise ParameterError(expected("magnitude", f"non-negative (n_frames, {len(win) // 2 + 1})",
                                      mag.shape))
    if cen.shape != (mag.shape[0],):
        raise ParameterError(expected("centres", f"one centre per frame ({mag.shape[0]},)",
                                      cen.shape))
    return (mag, win, cen, check_int("n_iter", n_iter, min_value=0),
            check_int("length", length, min_value=1))


def invert_log_mel(
    log_mel: np.ndarray,
    tokenizers: Any,
    *,
    oversample: int = 4,
    n_iter: int = 32,
    nnls_iter: int = 50,
    seed: int = 0,
) -> np.ndarray:
    """A waveform whose tokenizer log-mel frames approximate ``log_mel`` (see the module).

    Parameters
    ----------
    log_mel : np.ndarray [shape=(n_frames, n_mels)]
        Log-mel frames in dB on the tokenizer's frame grid (``decode_acoustic`` output).
    tokenizers : aria_tda_experiments.audio.tokenizers.Tokenizers
        Supplies the rate, hop, window and mel filterbank.
    oversample : int
        Griffin–Lim analysis frames per token frame (hop / oversample must be whole).
    n_iter : int
        Griffin–Lim iterations.
    nnls_iter : int
        Multiplicative-update iterations of the mel → linear power step.
    seed : int
        Seeds the initial phase.

    Returns
    -------
    np.ndarray [shape=(n_frames * hop,)], float64
    """
    a = tokenizers.arrays
    hop = tokenizers.hop
    oversample = check_int("oversample", oversample, min_value=1)
    if hop % oversample:
        raise ParameterError(expected("oversample", f"a divisor of the hop ({hop} samples)",
                                      oversample))
    lm = np.asarray(log_mel, dtype=np.float64)
    mel_fb = np.asarray(a["mel_fb"], dtype=np.float64)
    if lm.ndim != 2 or lm.shape[1] != mel_fb.shape[0] or lm.shape[0] < 1:
        raise ParameterError(expected("log_mel", f"(n_frames >= 1, {mel_fb.shape[0]}) dB frames",
                                      lm.shape))
    if not np.isfinite(lm).all():
        raise DataError(expected("log_mel", "finite values", "NaN or inf"))
    n = lm.shape[0]
    centres, pos = _centres(n, hop, oversample)
    with one_blas_thread():  # thread-count-independent numbers; faster on a busy machine
        power = _nnls_power(10.0 ** (lm / 10.0), mel_fb, check_int("nnls_iter", nnls_iter,
                                                                    min_value=0))
    # log-magnitude interpolated linearly between the token frames' centres (held at the ends)
    log_mag = 0.5 * np.log(np.maximum(power, _AMIN))
    lo = np.clip(np.floor(pos).astype(np.int64), 0, n - 1)
    hi = np.minimum(lo + 1, n - 1)
    w = np.clip(pos - lo, 0.0, 1.0)[:, None]
    mag = np.exp((1.0 - w) * log_mag[lo] + w * log_mag[hi])
    return griffin_lim(mag, window=a["window"], centres=centres, length=n * hop,
                       n_iter=n_iter, seed=seed)


def write_query_audio(
    tokenizers: Any,
    queries: Any,
    out_dir: str | os.PathLike[str],
    *,
    oversample: int = 4,
    n_iter: int = 32,
    seed: int = 0,
    progress_bar: bool | None = None,
) -> Path:
    """Write one WAV per generated query and the listing ``queries.csv``; return the listing.

    Parameters
    ----------
    tokenizers : aria_tda_experiments.audio.tokenizers.Tokenizers
        The tokenizers the stage models were trained on.
    queries : aria_tda_experiments.audio.generate.StageQueries
        The generated queries.
    out_dir : path
        Folder of the WAVs (created; existing files of the same queries are replaced).
    oversample, n_iter : int
        See :func:`invert_log_mel`.
    seed : int
        Query ``j``'s phase is seeded by ``[seed, j]``.
    progress_bar : bool, optional
        Force the progress bar on/off.
    """
    import pandas as pd
    import soundfile

    from aria_tda._progress import progress

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    seed = check_int("seed", seed, min_value=0)
    mels = query_log_mel(tokenizers, queries)
    sr, hop = tokenizers.config.sr, tokenizers.hop
    n_fin = int(np.asarray(queries.acoustic).shape[1])
    rows = []
    for j in progress(range(len(mels)), desc="query audio", unit="query", enabled=progress_bar):
        qid = str(queries.query_ids[j])
        path = out / f"{j:04d}-{re.sub(r'[^A-Za-z0-9_.~-]+', '_', qid)}.wav"
        sub = int(np.random.SeedSequence([seed, j]).generate_state(1)[0])
        y = invert_log_mel(mels[j], tokenizers, oversample=oversample, n_iter=n_iter, seed=sub)
        peak = float(np.max(np.abs(y)))
        scale = 0.99 / peak if peak > 0.99 else 1.0
        with atomic_path(path) as tmp:
            soundfile.write(tmp, (y * scale).astype(np.float32), sr, subtype="FLOAT",
                            format="WAV")
        rows.append({"track_id": qid, "path": str(path.resolve()), "n_frames": len(mels[j]),
                     "n_fine_frames": n_fin, "seconds": len(mels[j]) * hop / sr,
                     "peak_scale": scale})
    listing = out / "queries.csv"
    write_text(listing, pd.DataFrame(rows).to_csv(index=False))
    return listing
