r"""Architectures of the offline encoders (small torch modules, sized for two CPU cores).

- :class:`ConvEncoder` — a 2-D conv net over a time-frequency image (CQT or log-mel), GeM
  pooling over time and frequency (CLEWS pools with GeM too), a linear projection and L2
  normalisation: one vector per clip. The audio tower of clews-style (on the CQT) and
  clap-style (on log-mel).
- :class:`EnsembleEncoder` — several independently trained encoders (clews-style's
  ``n_models``): their L2-normalised outputs concatenated and scaled by :math:`1/\sqrt{n}`, so
  the cosine of two ensemble embeddings is the mean of the members' cosines.
- :class:`MaskedFrameModel` — HuBERT/MERT's shape at toy size: a conv stem that brings 50 Hz
  log-mel frames to the token rate (stride ``stem_stride``), a learned mask embedding that
  replaces masked frames, sinusoidal positions, a transformer encoder, and a linear head that
  predicts the semantic token of every frame. Hidden states ``0..n_layers`` (0 = stem output
  with positions) are the embedding layers.
- :class:`TextTower` — CLAP's text tower at toy size: a mean of word embeddings
  (``EmbeddingBag``), a linear projection, L2 normalisation.

Every input image is standardised per clip (zero mean, unit variance over all its values), so
the level of a rendering does not move its embedding.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

from aria_tda.errors import ParameterError, expected

__all__ = ["ConvEncoder", "EnsembleEncoder", "MaskedFrameModel", "TextTower", "standardise"]


def standardise(x: torch.Tensor, dims: Sequence[int]) -> torch.Tensor:
    """Zero mean, unit variance over ``dims`` of each example.

    Parameters
    ----------
    x : torch.Tensor
        A batch of inputs.
    dims : sequence of int
        The dimensions standardised together (not the batch dimension).
    """
    mean = x.mean(dim=tuple(dims), keepdim=True)
    std = x.std(dim=tuple(dims), keepdim=True)
    return (x - mean) / (std + 1e-5)


class ConvEncoder(nn.Module):
    """Time-frequency image ``(B, n_bins, T)`` → L2-normalised embedding ``(B, dim)``.

    Parameters
    ----------
    n_bins : int
        Frequency bins of the input.
    channels : sequence of int
        Channels of the conv blocks (each: 3×3 conv, batch norm, ReLU, 2×2 max-pool).
    dim : int
        Output dimension.
    gem_p : float
        Initial exponent of the (learned) GeM pooling.
    bin_norm : {"none", "mean", "std"}
        Per-bin normalisation of the input over time, before the per-clip standardisation:
        subtract each bin's mean over the frames (``"mean"``), and divide by its standard
        deviation too (``"std"``).
    """

    def __init__(self, n_bins: int, channels: Sequence[int], dim: int, gem_p: float = 3.0,
                 bin_norm: str = "none"):
        super().__init__()
        if bin_norm not in ("none", "mean", "std"):
            raise ParameterError(expected("bin_norm", "'none', 'mean' or 'std'", bin_norm))
        self.bin_norm = bin_norm
        layers: list[nn.Module] = []
        c_in = 1
        for c in channels:
            layers += [nn.Conv2d(c_in, c, 3, padding=1, bias=False), nn.BatchNorm2d(c),
                       nn.ReLU(inplace=True), nn.MaxPool2d(2, ceil_mode=True)]
            c_in = c
        self.body = nn.Sequential(*layers)
        self.gem_p = nn.Parameter(torch.tensor(float(gem_p)))
        self.proj = nn.Sequential(nn.Linear(c_in, c_in), nn.ReLU(inplace=True),
                                  nn.Linear(c_in, dim))
        self.n_bins = n_bins
        self.dim = dim

    def pooled(self, x: torch.Tensor) -> torch.Tensor:
        """GeM-pooled conv features before the projection, ``(B, channels[-1])``.

        Parameters
        ----------
        x : torch.Tensor [shape=(B, n_bins, T)]
            Input images (standardised here).
        """
        if self.bin_norm == "std":
            x = standardise(x, (2,))
        elif self.bin_norm == "mean":
            x = x - x.mean(dim=2, keepdim=True)
        h = self.body(standardise(x, (1, 2)).unsqueeze(1))
        p = self.gem_p.clamp(min=1.0)
        return h.clamp(min=1e-6).pow(p).mean(dim=(2, 3)).pow(1.0 / p)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """L2-normalised embeddings ``(B, dim)``.

        Parameters
        ----------
        x : torch.Tensor [shape=(B, n_bins, T)]
            Input images.
        """
        return nn.functional.normalize(self.proj(self.pooled(x)), dim=-1)


class EnsembleEncoder(nn.Module):
    """Members ``(B, n_bins, T)`` → ``(B, dim)`` each, concatenated: ``(B, n·dim)``, unit norm.

    Parameters
    ----------
    members : sequence of torch.nn.Module
        Encoders with L2-normalised outputs of one size (e.g. :class:`ConvEncoder`).
    """

    def __init__(self, members: Sequence[nn.Module]):
        super().__init__()
        self.members = nn.ModuleList(members)
        self.dim = sum(int(getattr(m, "dim", 0)) for m in self.members)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The members' embeddings concatenated and divided by :math:`\\sqrt{n}`.

        Parameters
        ----------
        x : torch.Tensor [shape=(B, n_bins, T)]
            Input images.
        """
        return torch.cat([m(x) for m in self.members], dim=-1) / math.sqrt(len(self.members))


def _sinusoids(n: int, d: int) -> torch.Tensor:
    pos = torch.arange(n, dtype=torch.float32)[:, None]
    div = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-math.log(10_000.0) / d))
    pe = torch.zeros(n, d)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)[:, : d // 2]
    return pe


class MaskedFrameModel(nn.Module):
    """Log-mel frames ``(B, T·stride, n_mels)`` → hidden states and token logits at ``T``.

    Parameters
    ----------
    n_mels : int
        Input bands.
    stem_stride : int
        Input frames per output frame.
    d_model : int
        Width.
    n_layers : int
        Transformer layers.
    n_heads : int
        Attention heads.
    d_ff : int
        Feed-forward width.
    vocab : int
        Token vocabulary of the prediction head.
    """

    def __init__(self, n_mels: int, stem_stride: int, d_model: int, n_layers: int,
                 n_heads: int, d_ff: int, vocab: int):
        super().__init__()
        self.stride = stem_stride
        self.stem = nn.Sequential(
            nn.Conv1d(n_mels, d_model, 3, padding=1), nn.GELU(),
            nn.Conv1d(d_model, d_model, stem_stride, stride=stem_stride), nn.GELU(),
        )
        self.norm_in = nn.LayerNorm(d_model)
        self.mask_emb = nn.Parameter(torch.zeros(d_model).uniform_(-0.1, 0.1))
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(d_model, n_heads, d_ff, dropout=0.0, batch_first=True,
                                       norm_first=True)
            for _ in range(n_layers)
        )
        self.norm_out = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab)
        self.d_model = d_model

    def hidden_states(self, mel: torch.Tensor, mask: torch.Tensor | None = None
                      ) -> list[torch.Tensor]:
        """Hidden states ``0..n_layers``, each ``(B, T, d_model)`` (the last one normed).

        Parameters
        ----------
        mel : torch.Tensor [shape=(B, T·stride, n_mels)]
            Log-mel frames (standardised here per clip).
        mask : torch.Tensor [shape=(B, T)], optional
            True where the frame is masked (replaced by the mask embedding).
        """
        h = self.stem(standardise(mel, (1, 2)).transpose(1, 2)).transpose(1, 2)
        h = self.norm_in(h)
        if mask is not None:
            h = torch.where(mask[..., None], self.mask_emb.to(h.dtype), h)
        h = h + _sinusoids(h.shape[1], self.d_model).to(h.dtype)
        states = [h]
        for layer in self.layers:
            h = layer(h)
            states.append(h)
        states[-1] = self.norm_out(states[-1])
        return states

    def forward(self, mel: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Token logits ``(B, T, vocab)``.

        Parameters
        ----------
        mel : torch.Tensor
            As :meth:`hidden_states`.
        mask : torch.Tensor, optional
            As :meth:`hidden_states`.
        """
        return self.head(self.hidden_states(mel, mask)[-1])


class TextTower(nn.Module):
    """Word ids of captions → L2-normalised embeddings ``(B, dim)`` (mean of word vectors).

    Parameters
    ----------
    vocab : int
        Vocabulary size (id 0 is the unknown word).
    width : int
        Word-vector width.
    dim : int
        Output dimension.
    """

    def __init__(self, vocab: int, width: int, dim: int):
        super().__init__()
        self.bag = nn.EmbeddingBag(vocab, width, mode="mean")
        self.proj = nn.Sequential(nn.Linear(width, width), nn.ReLU(inplace=True),
                                  nn.Linear(width, dim))

    def forward(self, ids: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        """Embeddings of the captions.

        Parameters
        ----------
        ids : torch.Tensor [shape=(n_words,)]
            Word ids of all captions, concatenated.
        offsets : torch.Tensor [shape=(B,)]
            Start of each caption in ``ids``.
        """
        return nn.functional.normalize(self.proj(self.bag(ids, offsets)), dim=-1)
