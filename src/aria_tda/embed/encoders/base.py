"""What every encoder of ``aria-tda embed`` provides: :class:`Encoder` and :class:`EncoderSpec`.

An encoder maps a mono float32 signal at its own ``sample_rate`` to a sequence of frame (or
window) embeddings, ``(n_frames, dim)``; the embedding of a track or segment is their mean over
time (paper, appendix "Embedding baselines": "the output embedding is averaged across the
temporal axis"). Windowing *inside* the signal — CLAP's 10 s windows, CLEWS's 20 s segments — is
the encoder's business (:meth:`Encoder.embed_frames` returns one row per window then); resampling
to ``sample_rate`` and cutting tracks into ``--segment-seconds`` segments is the pipeline's
(:mod:`aria_tda.embed`).

:meth:`Encoder.info` is what a store's manifest records about the encoder: its registry name,
the checkpoint path and SHA-256, the layer, rate and window, and the versions of the packages
that computed it — enough to tell two embedding stores apart and to refuse mixing them.
"""

from __future__ import annotations

import abc
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda.errors import ParameterError, expected

__all__ = ["Encoder", "EncoderSpec", "file_sha256"]


@dataclass(frozen=True)
class EncoderSpec:
    """A registry entry: how to build one encoder and what it needs.

    Attributes
    ----------
    name : str
        Registry name (``aria-tda embed --encoder NAME``).
    loader : str
        ``"module:function"``; the function is called as ``fn(weights=..., layer=...,
        device=..., **options)`` and returns an :class:`Encoder`.
    label : str
        Human-readable name used in tables (honest about what it is).
    sample_rate : int
        Input rate in Hz.
    needs_weights : bool
        Whether ``weights`` is required (published encoders; the demo-trained ones too).
    weights_hint : str
        Which file(s) to obtain and where to put them (shown when ``weights`` is missing).
    """

    name: str
    loader: str
    label: str
    sample_rate: int
    needs_weights: bool = True
    weights_hint: str = ""


class Encoder(abc.ABC):
    """An audio encoder: a signal at :attr:`sample_rate` → frame embeddings ``(n, dim)``."""

    #: registry name
    name: str
    #: input sample rate (Hz)
    sample_rate: int
    #: embedding dimension
    dim: int

    @abc.abstractmethod
    def embed_frames(self, y: np.ndarray) -> np.ndarray:
        """Frame (or window) embeddings of one mono signal.

        Parameters
        ----------
        y : numpy.ndarray
            Mono float32 audio at :attr:`sample_rate`, shape ``(n_samples,)``.

        Returns
        -------
        numpy.ndarray
            ``(n_frames, dim)`` float32, ``n_frames >= 1``.
        """

    def embed(self, y: np.ndarray) -> np.ndarray:
        """The time-averaged embedding of one signal, ``(dim,)`` float64.

        Parameters
        ----------
        y : numpy.ndarray
            Mono float32 audio at :attr:`sample_rate`.
        """
        frames = np.asarray(self.embed_frames(y), dtype=np.float64)
        if frames.ndim != 2 or frames.shape[0] < 1 or frames.shape[1] != self.dim:
            raise RuntimeError(
                f"{self.name}: embed_frames returned shape {frames.shape}, expected (n >= 1, "
                f"{self.dim})"
            )
        return frames.mean(axis=0)

    @abc.abstractmethod
    def info(self) -> dict[str, Any]:
        """What a manifest records: ``encoder``, ``weights``, ``weights_sha256``, ``layer``,
        ``sample_rate``, ``window_seconds``, ``dim``, ``versions`` (JSON-serialisable)."""


def file_sha256(path: str | os.PathLike[str], *, chunk: int = 1 << 20) -> str:
    """SHA-256 of a file, or of every file in a folder (sorted relative names and contents).

    Parameters
    ----------
    path : path
        A checkpoint file or folder.
    chunk : int
        Bytes read at a time.
    """
    p = Path(path)
    h = hashlib.sha256()
    if p.is_dir():
        files = sorted(f for f in p.rglob("*") if f.is_file())
    elif p.is_file():
        files = [p]
    else:
        raise ParameterError(expected("weights", "an existing file or folder", str(p)))
    for f in files:
        if p.is_dir():
            h.update(str(f.relative_to(p)).encode() + b"\0")
        with open(f, "rb") as fh:
            while block := fh.read(chunk):
                h.update(block)
    return h.hexdigest()
