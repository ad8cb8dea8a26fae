"""The ``clap`` encoder: LAION-CLAP's audio embedding of consecutive 10 s windows.

What CLAP itself does with one clip (``hook.py: CLAP_Module.get_audio_embedding_from_data``,
non-fusion): quantise the float signal to int16 and back (``np.clip(x, -1, 1) * 32767`` cast to
``int16``, then ``/ 32767``); clips longer than 10 s are *randomly* cropped to 10 s
(``data_truncating="rand_trunc"``), shorter ones are filled by ``"repeatpad"`` (the clip tiled
``floor(480000 / n)`` times, then zero-padded to 480,000 samples; ``training/data.py:
get_audio_features``); the tower and projection run in eval mode and the 512-d result is
L2-normalised (``model.py: get_audio_embedding``).

ARIA keeps all of that except the random crop: a track is cut into consecutive 10 s windows
(deterministic, the whole track is seen), each is embedded as CLAP embeds a 10 s clip, and
:meth:`Encoder.embed` averages the unit vectors. The last, partial window follows ``tail``:
``"repeatpad"`` (default) fills it as CLAP fills a short clip; ``"drop"`` leaves it out when the
track has at least one full window (a track shorter than 10 s is always repeat-padded, as CLAP
does). The paper's 30 s excerpts are exactly three windows either way.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from aria_tda._options import Options, option
from aria_tda.embed.encoders.base import Encoder, file_sha256
from aria_tda.embed.encoders.clap.checkpoint import (
    load_audio_weights,
    read_checkpoint,
    split_state_dict,
)
from aria_tda.embed.encoders.clap.config import HTSATConfig, config_from_state_dict
from aria_tda.embed.encoders.clap.htsat import ClapAudio, derived_buffers
from aria_tda.errors import DataError, ParameterError, expected

__all__ = ["ClapEncoder", "ClapOptions", "clap_windows", "load_clap", "quantize_int16"]


@dataclass(frozen=True)
class ClapOptions(Options):
    """Options of the ``clap`` encoder (``load_encoder("clap", weights=..., **options)``)."""

    tail: str = option(
        "repeatpad",
        help="last partial 10 s window: 'repeatpad' (tile + zero-pad, as CLAP fills short "
        "clips) or 'drop' (left out when the track has a full window)",
        choices=("repeatpad", "drop"),
    )
    quantize: bool = option(
        True, help="round the signal to int16 and back first, as CLAP's inference does"
    )
    batch_size: int = option(4, help="windows per forward pass (memory, not results)", min_value=1)


def quantize_int16(y: np.ndarray) -> np.ndarray:
    """CLAP's ``int16_to_float32(float32_to_int16(y))``: clip to [-1, 1], ×32767, truncate, ÷32767.

    Parameters
    ----------
    y : numpy.ndarray
        Float audio.
    """
    q = (np.clip(y, -1.0, 1.0) * 32767.0).astype(np.int16)
    return (q / 32767.0).astype(np.float32)


def _repeatpad(y: np.ndarray, n: int) -> np.ndarray:
    reps = n // len(y)
    out = np.zeros(n, dtype=np.float32)
    out[: reps * len(y)] = np.tile(y, reps)
    return out


def clap_windows(
    y: np.ndarray, *, clip_samples: int = 480_000, tail: str = "repeatpad"
) -> np.ndarray:
    """Consecutive ``clip_samples`` windows of a signal, ``(n_windows, clip_samples)`` float32.

    Parameters
    ----------
    y : numpy.ndarray
        Mono audio, ``(n_samples,)``, ``n_samples >= 1``.
    clip_samples : int
        Window length (480,000 = 10 s at 48 kHz).
    tail : {"repeatpad", "drop"}
        What becomes of a last, partial window (see the module docstring).
    """
    n_full, rest = divmod(len(y), clip_samples)
    wins = [y[i * clip_samples:(i + 1) * clip_samples] for i in range(n_full)]
    if rest and (tail == "repeatpad" or n_full == 0):
        wins.append(_repeatpad(y[n_full * clip_samples:], clip_samples))
    return np.stack(wins).astype(np.float32, copy=False)


class ClapEncoder(Encoder):
    """LAION-CLAP audio embeddings (HTSAT-base, non-fusion) of 10 s windows, 48 kHz.

    Parameters
    ----------
    model : ClapAudio
        The loaded tower and projection.
    weights : path
        The checkpoint it came from.
    options : ClapOptions
        Windowing and quantisation.
    device : str
        Torch device.
    """

    name = "clap"

    def __init__(self, model: ClapAudio, weights: Path, options: ClapOptions, device: str) -> None:
        self.model = model.eval()
        self.cfg: HTSATConfig = model.cfg
        self.sample_rate = self.cfg.sample_rate
        self.dim = self.cfg.joint_dim
        self.weights = weights
        self.options = options
        self.device = device
        self._sha256: str | None = None

    def embed_frames(self, y: np.ndarray) -> np.ndarray:
        """One L2-normalised embedding per 10 s window, ``(n_windows, dim)`` float32.

        Parameters
        ----------
        y : numpy.ndarray
            Mono float audio at 48 kHz, ``(n_samples,)``.
        """
        y = np.asarray(y, dtype=np.float32)
        if y.ndim != 1 or y.size == 0:
            raise DataError(
                expected("y", "a non-empty mono signal (n_samples,)", f"shape {y.shape}")
            )
        if not np.isfinite(y).all():
            raise DataError(expected("y", "finite samples", "NaN or inf"))
        if self.options.quantize:
            y = quantize_int16(y)
        wins = clap_windows(y, clip_samples=self.cfg.clip_samples, tail=self.options.tail)
        out = []
        bs = self.options.batch_size
        with torch.inference_mode():
            for i in range(0, len(wins), bs):
                batch = torch.from_numpy(np.ascontiguousarray(wins[i:i + bs])).to(self.device)
                out.append(self.model(batch).float().cpu().numpy())
        return np.concatenate(out).astype(np.float32, copy=False)

    def info(self) -> dict[str, Any]:
        """Manifest fields (see :meth:`Encoder.info`), plus ``options`` and ``architecture``."""
        if self._sha256 is None:
            self._sha256 = file_sha256(self.weights)
        return {
            "encoder": self.name,
            "weights": str(self.weights),
            "weights_sha256": self._sha256,
            "layer": None,
            "sample_rate": self.sample_rate,
            "window_seconds": self.cfg.window_seconds,
            "dim": self.dim,
            "versions": {"torch": torch.__version__, "numpy": np.__version__},
            "options": {"tail": self.options.tail, "quantize": self.options.quantize},
            "architecture": self.cfg.to_dict(),
        }


def load_clap(
    *,
    weights: str | os.PathLike[str] | None,
    layer: int | None = None,
    device: str = "cpu",
    **options: Any,
) -> ClapEncoder:
    """Build the ``clap`` encoder from a local LAION-CLAP checkpoint (nothing is downloaded).

    Parameters
    ----------
    weights : path
        ``music_speech_audioset_epoch_15_esc_89.98.pt`` (or any non-fusion HTSAT CLAP
        checkpoint in the same format); read with a restricted unpickler
        (:mod:`aria_tda.embed.encoders.clap.checkpoint`), its text tower ignored.
    layer : None
        CLAP has one output (the projected embedding); any other value is refused.
    device : str
        Torch device.
    **options : Any
        :class:`ClapOptions` fields: ``tail``, ``quantize``, ``batch_size``.

    Returns
    -------
    ClapEncoder
    """
    opts = ClapOptions.from_mapping(options, what="clap options")
    if weights is None:
        from aria_tda.embed.encoders.registry import ENCODERS

        raise ParameterError(
            "weights: the clap encoder needs its checkpoint and ARIA never downloads one; obtain "
            + ENCODERS["clap"].weights_hint
        )
    if layer is not None:
        raise ParameterError(
            expected("layer", "None (CLAP's embedding is its projected output)", layer)
        )
    try:
        torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ParameterError(expected("device", "a torch device such as 'cpu'", device)) from exc
    path = Path(weights)
    tower, projection = split_state_dict(read_checkpoint(path))
    model = ClapAudio(config_from_state_dict(tower, projection))
    load_audio_weights(model, tower, projection, derived_buffers(model))
    return ClapEncoder(model.to(device).eval(), path, opts, device)
