r"""The per-sample losses attribution explains, shared by training, LDS and every attributor.

Two conventions, one function each, so that the quantity attributed is the quantity the LDS
ground truth measures and the quantity the benchmark model is trained on:

- ``"sequence"``: mean next-token cross-entropy over the window (the training objective),
  :math:`\ell_{seq}(x) = \frac{1}{L-1}\sum_{t=1}^{L-1} -\log p_\theta(x_t\mid x_{<t})`;
- ``"last_token"``: cross-entropy of the last token given all previous ones (dattri's MAESTRO
  target), :math:`\ell_{last}(x) = -\log p_\theta(x_{L-1}\mid x_{<L-1})`.

A third, parametrised loss, :class:`ContinuationLoss` (``start`` = :math:`s`), is the mean
next-token cross-entropy over the tokens from position :math:`s` on only,
:math:`\ell_{cont}(x) = \frac{1}{L-s}\sum_{t=s}^{L-1} -\log p_\theta(x_t\mid x_{<t})`: the
objective of a model whose window holds a conditioning prefix it does not predict (the audio
benchmark's stages, :mod:`aria_tda_experiments.audio`). It is a callable ``f(model, tokens) ->
(B,)``, so it goes wherever a loss name goes (``loss=``/``target=`` of the attributors, LDS
outputs).

``model`` is any callable mapping int64 tokens ``(B, L)`` to next-token logits ``(B, L, V)``
(``logits[:, t]`` predicts token ``t + 1``). :mod:`aria_tda_experiments.model` re-exports these
names from their old home.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from aria_tda.errors import ParameterError, expected

__all__ = [
    "LOSS_KINDS",
    "ContinuationLoss",
    "continuation_loss",
    "functional_loss",
    "last_token_loss",
    "loss_fn",
    "sequence_loss",
    "token_nll",
]

#: The names of the two per-sample losses.
LOSS_KINDS = ("sequence", "last_token")

TokenModel = Callable[[torch.Tensor], torch.Tensor]


def token_nll(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    r"""Per-position next-token negative log-likelihood.

    Parameters
    ----------
    logits : torch.Tensor [shape=(B, L, V)]
        Model output for ``tokens``.
    tokens : torch.Tensor [shape=(B, L)], int64
        The token ids the logits were computed from.

    Returns
    -------
    torch.Tensor [shape=(B, L-1)]
        ``nll[b, t] = -log softmax(logits[b, t])[tokens[b, t+1]]``.
    """
    logp = torch.log_softmax(logits[:, :-1, :], dim=-1)
    return -torch.gather(logp, -1, tokens[:, 1:].unsqueeze(-1)).squeeze(-1)


def sequence_loss(
    model: TokenModel, tokens: torch.Tensor, *, reduction: str = "none"
) -> torch.Tensor:
    r"""Mean next-token cross-entropy over a whole window (the training objective).

    .. math:: \ell_{seq}(x) = \frac{1}{L-1}\sum_{t=1}^{L-1} -\log p_\theta(x_t \mid x_{<t})

    Parameters
    ----------
    model : nn.Module or callable
        Maps int64 ``(B, L)`` to logits ``(B, L, V)``.
    tokens : torch.Tensor [shape=(B, L)], int64, ``L >= 2``
        The windows.
    reduction : {"none", "mean", "sum"}
        ``"none"`` returns one loss per sequence ``(B,)``.
    """
    per_seq = token_nll(model(tokens), tokens).mean(dim=-1)
    return _reduce(per_seq, reduction)


def last_token_loss(
    model: TokenModel, tokens: torch.Tensor, *, reduction: str = "none"
) -> torch.Tensor:
    r"""Cross-entropy of the last token given all previous ones (dattri's MAESTRO target).

    .. math:: \ell_{last}(x) = -\log p_\theta(x_{L-1} \mid x_{<L-1})

    Equal to ``cross_entropy(model(tokens[:, :-1])[:, -1], tokens[:, -1])``: the model is
    causal, so the logits at position ``L-2`` do not depend on the last token.

    Parameters
    ----------
    model : nn.Module or callable
        Maps int64 ``(B, L)`` to logits ``(B, L, V)``.
    tokens : torch.Tensor [shape=(B, L)], int64, ``L >= 2``
        The windows.
    reduction : {"none", "mean", "sum"}
        ``"none"`` returns one loss per sequence ``(B,)``.
    """
    logits = model(tokens[:, :-1])[:, -1, :]  # (B, V)
    per_seq = F.cross_entropy(logits, tokens[:, -1], reduction="none")
    return _reduce(per_seq, reduction)


def continuation_loss(
    model: TokenModel, tokens: torch.Tensor, *, start: int, reduction: str = "none"
) -> torch.Tensor:
    r"""Mean next-token cross-entropy over the tokens from position ``start`` on.

    .. math:: \ell_{cont}(x) = \frac{1}{L-s}\sum_{t=s}^{L-1} -\log p_\theta(x_t \mid x_{<t})

    Tokens ``0 .. start-1`` are context only (a conditioning prefix); ``start=1`` is
    :func:`sequence_loss`.

    Parameters
    ----------
    model : nn.Module or callable
        Maps int64 ``(B, L)`` to logits ``(B, L, V)``.
    tokens : torch.Tensor [shape=(B, L)], int64, ``L > start``
        The windows.
    start : int, ``1 <= start < L``
        Index of the first predicted (target) token :math:`s`.
    reduction : {"none", "mean", "sum"}
        ``"none"`` returns one loss per sequence ``(B,)``.
    """
    length = int(tokens.shape[-1])
    if isinstance(start, bool) or not isinstance(start, int) or not 1 <= start < length:
        raise ParameterError(expected("start", f"an int in [1, {length - 1}] (L = {length})",
                                      start))
    # token_nll[:, t - 1] is the loss of token t
    per_seq = token_nll(model(tokens), tokens)[:, start - 1 :].mean(dim=-1)
    return _reduce(per_seq, reduction)


@dataclass(frozen=True)
class ContinuationLoss:
    r""":func:`continuation_loss` with ``start`` bound: a per-sample loss ``f(model, tokens)``.

    Frozen (hashable, comparable, picklable), so it can be an attributor's ``loss``/``target``
    and travel to worker processes; manifests name it ``"continuation(start=s)"``.

    Parameters
    ----------
    start : int, >= 1
        Index of the first target token (see :func:`continuation_loss`).
    """

    start: int

    def __post_init__(self) -> None:
        if isinstance(self.start, bool) or not isinstance(self.start, int) or self.start < 1:
            raise ParameterError(expected("start", "an int >= 1", self.start))
        # the name aria_tda.attribution.task.loss_name records in manifests
        object.__setattr__(self, "__qualname__", f"continuation(start={self.start})")

    def __call__(
        self, model: TokenModel, tokens: torch.Tensor, *, reduction: str = "none"
    ) -> torch.Tensor:
        """Per-sequence continuation loss (see :func:`continuation_loss`).

        Parameters
        ----------
        model : nn.Module or callable
            Maps int64 ``(B, L)`` to logits ``(B, L, V)``.
        tokens : torch.Tensor [shape=(B, L)], int64
            The windows.
        reduction : {"none", "mean", "sum"}
            ``"none"`` returns one loss per sequence ``(B,)``.
        """
        return continuation_loss(model, tokens, start=self.start, reduction=reduction)


def loss_fn(kind: str) -> Any:
    """Return :func:`sequence_loss` or :func:`last_token_loss` by name.

    Parameters
    ----------
    kind : {"sequence", "last_token"}
        The loss convention (see the module docstring).
    """
    if kind == "sequence":
        return sequence_loss
    if kind == "last_token":
        return last_token_loss
    raise ParameterError(expected("loss", f"one of {LOSS_KINDS}", kind))


def functional_loss(model: nn.Module, kind: str = "sequence") -> Any:
    r"""A ``torch.func``-ready loss ``f(params, tokens_1d) -> scalar`` for one sample.

    ``params`` is a ``{name: tensor}`` dict (e.g. ``dict(model.named_parameters())``) and
    ``tokens_1d`` a single int64 sequence ``(L,)``; the batch dimension is added inside, as
    dattri's TRAK/TracIn loss convention requires. Per-sample gradients of a batch ``X (B, L)``::

        f = functional_loss(model)
        g = torch.func.vmap(torch.func.grad(f), in_dims=(None, 0))(params, X)

    Parameters
    ----------
    model : nn.Module
        The architecture whose parameters ``params`` replace.
    kind : {"sequence", "last_token"}
        The loss convention.
    """
    fn = loss_fn(kind)

    def f(params: dict[str, torch.Tensor], tokens_1d: torch.Tensor) -> torch.Tensor:
        call = lambda t: torch.func.functional_call(model, params, (t,))  # noqa: E731
        return fn(call, tokens_1d.unsqueeze(0), reduction="sum")

    return f


def _reduce(x: torch.Tensor, reduction: str) -> torch.Tensor:
    if reduction == "none":
        return x
    if reduction == "mean":
        return x.mean()
    if reduction == "sum":
        return x.sum()
    raise ParameterError(expected("reduction", "one of 'none', 'mean', 'sum'", reduction))
