r"""A small MusicTransformer: causal decoder with relative self-attention.

Conventions
-----------
- Input: int64 token ids ``(B, L)``, batch first, ``L <= config.max_len``.
- Output: logits ``(B, L, V)``; ``logits[:, t]`` predicts token ``t + 1`` (next-token model).
- Every learned projection is an :class:`torch.nn.Linear` (q, k, v, output, both feed-forward
  layers, the output head), so layer-hooking attributors (LoGra, FactGraSS) see them; the
  only other parameters are the token embedding, the LayerNorms and the per-head relative
  position embeddings ``E_r``.
- Pure tensor code, no in-place ops on inputs and no data-dependent Python control flow, so
  ``torch.func.functional_call`` + ``vmap`` + ``grad`` give per-sample gradients.

Relative attention (Huang et al. 2019, "Music Transformer", §3.4). For head ``h`` with
queries ``Q``, keys ``K`` ``(L, d_h)`` and relative embeddings ``E_r`` ``(L, d_h)``
(row ``m`` holds relative distance ``m - (L - 1)``, i.e. ``-(L-1) .. 0``):

.. math::

    \mathrm{RelAttn} = \mathrm{softmax}\Big(\frac{Q K^\top + S^{rel}}{\sqrt{d_h}} + M\Big) V,
    \qquad S^{rel}_{ik} = q_i \cdot E_r[k - i + L - 1]\ (k \le i),

with the causal mask :math:`M_{ik} = -\infty` for ``k > i``. :func:`skew` computes
:math:`S^{rel}` from :math:`Q E_r^\top` in :math:`O(L d_h)` memory (pad, reshape, slice);
:func:`relative_logits` wraps it (causal part, zeros above the diagonal) and
:func:`relative_logits_reference` is the naive per-entry definition it is tested against.

The two per-sample losses (``sequence_loss``, ``last_token_loss``, ``token_nll``, ``loss_fn``,
``functional_loss``, ``LOSS_KINDS``) live in :mod:`aria_tda.attribution.losses`; they are
re-exported here from their old path.

References
----------
Huang, C.-Z. A. et al. (2019). Music Transformer: Generating music with long-term
structure. ICLR.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from aria_tda._checks import check_float, check_int
from aria_tda.attribution.losses import (
    LOSS_KINDS,
    ContinuationLoss,
    continuation_loss,
    functional_loss,
    last_token_loss,
    loss_fn,
    sequence_loss,
    token_nll,
)
from aria_tda.errors import ParameterError, expected

__all__ = [
    "LOSS_KINDS",
    "ContinuationLoss",
    "ModelConfig",
    "MusicTransformer",
    "build_model",
    "continuation_loss",
    "functional_loss",
    "last_token_loss",
    "loss_fn",
    "relative_logits",
    "sequence_loss",
    "skew",
    "token_nll",
]


@dataclass(frozen=True)
class ModelConfig:
    """Architecture of :class:`MusicTransformer` (all sizes in tokens / units).

    Parameters
    ----------
    vocab_size : int
        Number of token ids (``aria_tda_experiments.tokenizer.VOCAB_SIZE`` = 390 for the event
        vocabulary).
    d_model : int
        Width of the residual stream; must be divisible by ``n_heads``.
    n_layers, n_heads : int
        Decoder blocks and attention heads per block.
    d_ff : int
        Hidden width of the feed-forward layers.
    max_len : int
        Longest sequence the relative embeddings cover (the training window).
    dropout : float
        Dropout on attention weights and residual branches during training (0 = off; keep
        0 for attribution so train and eval gradients agree).
    """

    vocab_size: int = 390
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    d_ff: int = 256
    max_len: int = 64
    dropout: float = 0.0

    def __post_init__(self) -> None:
        check_int("vocab_size", self.vocab_size, min_value=2)
        check_int("d_model", self.d_model, min_value=1)
        check_int("n_layers", self.n_layers, min_value=1)
        check_int("n_heads", self.n_heads, min_value=1)
        check_int("d_ff", self.d_ff, min_value=1)
        check_int("max_len", self.max_len, min_value=2)
        check_float("dropout", self.dropout, min_value=0.0, max_value=1.0, max_inclusive=False)
        if self.d_model % self.n_heads:
            raise ParameterError(
                expected("d_model", f"a multiple of n_heads={self.n_heads}", self.d_model)
            )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def skew(rel: torch.Tensor) -> torch.Tensor:
    r"""Huang et al.'s memory-efficient "skewing" of relative logits.

    Parameters
    ----------
    rel : torch.Tensor [shape=(..., L, L)]
        :math:`Q E_r^\top`: ``rel[..., i, m] = q_i · E_r[m]`` with ``E_r[m]`` the embedding of
        relative distance ``m - (L - 1)``.

    Returns
    -------
    torch.Tensor [shape=(..., L, L)]
        :math:`S^{rel}` with ``out[..., i, k] = rel[..., i, k - i + L - 1]`` for ``k <= i``;
        entries above the diagonal are meaningless and must be masked by the caller.
    """
    *lead, n, m = rel.shape
    padded = F.pad(rel, (1, 0))  # (..., L, L+1): a zero column on the left
    reshaped = padded.reshape(*lead, m + 1, n)  # (..., L+1, L)
    return reshaped[..., 1:, :]


def relative_logits(q: torch.Tensor, e_r: torch.Tensor) -> torch.Tensor:
    r"""Relative logits :math:`S^{rel}` by the skewing trick (:func:`skew`), causal part only.

    The attention layer computes the same ``skew(q @ e_r^T)`` inline and masks the entries
    above the diagonal with :math:`-\infty`; here they are set to 0, as in the definition.

    Parameters
    ----------
    q : torch.Tensor [shape=(..., L, d_h)]
        Queries of one head (or several: leading axes broadcast against ``e_r``'s).
    e_r : torch.Tensor [shape=(..., L, d_h)]
        Relative embeddings for distances ``-(L-1) .. 0`` (row ``m`` = distance ``m - (L-1)``).

    Returns
    -------
    torch.Tensor [shape=(..., L, L)]
        ``out[..., i, k] = q_i · e_r[k - i + L - 1]`` for ``k <= i`` and 0 above the diagonal.
    """
    length = q.shape[-2]
    rel = skew(torch.matmul(q, e_r.transpose(-1, -2)))
    lower = torch.ones(length, length, dtype=torch.bool, device=rel.device).tril()
    return rel.masked_fill(~lower, 0.0)


def relative_logits_reference(q: torch.Tensor, e_r: torch.Tensor) -> torch.Tensor:
    r"""Naive :math:`S^{rel}` by its definition (slow; the exact reference of
    :func:`relative_logits`, hence of :func:`skew`).

    Parameters
    ----------
    q : torch.Tensor [shape=(..., L, d_h)]
        Queries of one head (or several: leading axes broadcast against ``e_r``'s).
    e_r : torch.Tensor [shape=(..., L, d_h)]
        Relative embeddings for distances ``-(L-1) .. 0``.

    Returns
    -------
    torch.Tensor [shape=(..., L, L)]
        ``out[..., i, k] = q_i · e_r[k - i + L - 1]`` for ``k <= i`` and 0 above the diagonal.
    """
    length = q.shape[-2]
    lead = torch.broadcast_shapes(q.shape[:-2], e_r.shape[:-2])
    out = torch.zeros(*lead, length, length, dtype=q.dtype)
    for i in range(length):
        for k in range(i + 1):
            out[..., i, k] = (q[..., i, :] * e_r[..., k - i + length - 1, :]).sum(-1)
    return out


class RelativeSelfAttention(nn.Module):
    """Causal multi-head self-attention with per-head relative position logits."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.n_heads = config.n_heads
        self.d_head = config.d_model // config.n_heads
        self.max_len = config.max_len
        self.dropout = config.dropout
        self.q = nn.Linear(config.d_model, config.d_model)
        self.k = nn.Linear(config.d_model, config.d_model)
        self.v = nn.Linear(config.d_model, config.d_model)
        self.out = nn.Linear(config.d_model, config.d_model)
        # rel_emb[h, m] embeds relative distance m - (max_len - 1), i.e. -(max_len-1) .. 0.
        self.rel_emb = nn.Parameter(torch.zeros(config.n_heads, config.max_len, self.d_head))

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        b, length, _ = x.shape
        return x.reshape(b, length, self.n_heads, self.d_head).transpose(1, 2)  # (B, H, L, dh)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, length, d = x.shape
        q, k, v = self._split(self.q(x)), self._split(self.k(x)), self._split(self.v(x))
        e_r = self.rel_emb[:, self.max_len - length :, :]  # (H, L, dh): distances -(L-1)..0
        rel = torch.matmul(q, e_r.unsqueeze(0).transpose(-1, -2))  # (B, H, L, L)
        logits = (torch.matmul(q, k.transpose(-1, -2)) + skew(rel)) / math.sqrt(self.d_head)
        causal = torch.ones(length, length, dtype=torch.bool, device=x.device).triu(1)
        logits = logits.masked_fill(causal, float("-inf"))
        weights = torch.softmax(logits, dim=-1)
        if self.dropout > 0.0:
            weights = F.dropout(weights, p=self.dropout, training=self.training)
        ctx = torch.matmul(weights, v).transpose(1, 2).reshape(b, length, d)
        return self.out(ctx)


class DecoderBlock(nn.Module):
    """Pre-LayerNorm block: ``x + attn(LN(x))`` then ``x + FF(LN(x))``."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(config.d_model)
        self.attn = RelativeSelfAttention(config)
        self.ln2 = nn.LayerNorm(config.d_model)
        self.ff1 = nn.Linear(config.d_model, config.d_ff)
        self.ff2 = nn.Linear(config.d_ff, config.d_model)
        self.dropout = config.dropout

    def _drop(self, x: torch.Tensor) -> torch.Tensor:
        if self.dropout > 0.0:
            return F.dropout(x, p=self.dropout, training=self.training)
        return x

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self._drop(self.attn(self.ln1(x)))
        return x + self._drop(self.ff2(F.gelu(self.ff1(self.ln2(x)))))


class MusicTransformer(nn.Module):
    """Causal MusicTransformer-style decoder: tokens ``(B, L)`` → next-token logits ``(B, L, V)``.

    Build it with :func:`build_model` (seeded initialisation). ``model.config`` holds the
    :class:`ModelConfig`.
    """

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        self.embed = nn.Embedding(config.vocab_size, config.d_model)
        self.blocks = nn.ModuleList(DecoderBlock(config) for _ in range(config.n_layers))
        self.ln_f = nn.LayerNorm(config.d_model)
        self.head = nn.Linear(config.d_model, config.vocab_size)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Return logits ``(B, L, V)`` for int64 ``tokens`` ``(B, L)``.

        Parameters
        ----------
        tokens : torch.Tensor [shape=(B, L)], int64
            Token ids, ``L <= config.max_len``.
        """
        x = self.embed(tokens) * math.sqrt(self.config.d_model)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))

    def check_tokens(self, tokens: torch.Tensor) -> None:
        """Raise :class:`ParameterError` unless ``tokens`` is a valid ``(B, L)`` id tensor.

        Parameters
        ----------
        tokens : torch.Tensor
            What to check: int64, 2-D, ``L <= max_len``, ids in ``[0, vocab_size)``.
        """
        if not isinstance(tokens, torch.Tensor) or tokens.ndim != 2:
            got = getattr(tokens, "shape", type(tokens).__name__)
            raise ParameterError(expected("tokens", "an int64 tensor of shape (B, L)", got))
        if tokens.dtype != torch.int64:
            raise ParameterError(expected("tokens", "dtype int64", tokens.dtype))
        if tokens.shape[1] > self.config.max_len:
            raise ParameterError(
                expected("tokens", f"length <= max_len={self.config.max_len}", tokens.shape[1])
            )
        vocab = self.config.vocab_size
        if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= vocab):
            raise ParameterError(
                expected("tokens", f"ids in [0, {self.config.vocab_size})",
                         f"[{int(tokens.min())}, {int(tokens.max())}]")
            )


def build_model(config: ModelConfig | None = None, *, seed: int = 0) -> MusicTransformer:
    """Build a :class:`MusicTransformer` with a seeded initialisation.

    Linear and embedding weights ~ N(0, 0.02²) (the output projections scaled by
    ``1/sqrt(2 n_layers)``), biases 0, LayerNorms identity, relative embeddings ~ N(0, 0.02²).
    Uses a private :class:`torch.Generator`, so the global RNG is neither read nor changed.

    Parameters
    ----------
    config : ModelConfig, optional
        Architecture; the default is the benchmark's small model.
    seed : int
        Initialisation seed; equal seeds give bitwise-equal weights.
    """
    config = config or ModelConfig()
    if not isinstance(config, ModelConfig):
        raise ParameterError(expected("config", "a ModelConfig", type(config).__name__))
    seed = check_int("seed", seed, min_value=0)
    gen = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng(devices=[]):  # module constructors draw from the global RNG
        model = MusicTransformer(config)
    out_scale = 1.0 / math.sqrt(2 * config.n_layers)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.endswith("bias"):
                param.zero_()
            elif ".ln" in name or name.startswith("ln_"):
                param.fill_(1.0)
            else:
                scaled = name.endswith(("attn.out.weight", "ff2.weight"))
                std = 0.02 * (out_scale if scaled else 1.0)
                param.copy_(torch.randn(param.shape, generator=gen) * std)
    return model
