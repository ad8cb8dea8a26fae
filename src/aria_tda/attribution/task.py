r"""What a model must provide to be attributed, and the per-sample functions built from it.

The interface
-------------
Any PyTorch model goes through the same adapters if it is

- an :class:`torch.nn.Module` mapping int64 tokens ``(B, L)`` to next-token logits
  ``(B, L, V)`` (``logits[:, t]`` predicts token ``t + 1``), batch first, causal;
- written in plain tensor code that :func:`torch.func.functional_call`, ``vmap`` and ``grad``
  can trace (no in-place ops on inputs, no data-dependent Python control flow, dropout off
  in ``eval()``);
- for LoGra / FactGraSS only: its learned projections are :class:`torch.nn.Linear` layers
  (those are the only layers dattri 0.3.0 hooks).

Data are *windows*: an int64 array ``(N, L)`` of token ids per training segment / query. The
model sees the window and is scored on its own next tokens.

Which tokens are attributed (``loss`` / ``target``)
---------------------------------------------------
Two per-sample losses are defined in :mod:`aria_tda.attribution.losses` and used everywhere
(training, LDS ground truth, attribution), so that the quantity attributed is the quantity the
ground truth measures:

- ``"sequence"``: mean next-token cross-entropy over the window,
  :math:`\ell_{seq}(x) = \frac{1}{L-1}\sum_{t=1}^{L-1} -\log p_\theta(x_t\mid x_{<t})`
  (the training objective);
- ``"last_token"``: :math:`\ell_{last}(x) = -\log p_\theta(x_{L-1}\mid x_{<L-1})` (dattri's
  MAESTRO benchmark target).

``loss`` is the per-sample loss of a *training* window (its gradient stands for "training on
this segment"); ``target`` is the per-sample loss of a *query* (the model output whose change
is attributed; the LDS ground truth is :math:`-\ell_{target}`, the query's log-probability).
A callable ``f(model, tokens) -> (B,)`` returning per-sample losses may be given instead of a
name. TRAK replaces a loss :math:`\ell` by the margin
:math:`f = \log\frac{p}{1-p}` with :math:`p = e^{-\ell}` (its "correct probability"), i.e.
:math:`f = -\ell - \log(1 - e^{-\ell})`, as dattri's MAESTRO experiment does for the last token.

Sign convention
---------------
Every attributor returns scores ``(n_train, n_test)`` where **higher = more influential =
training on the segment lowers the query's loss** (raises its log-probability). TracIn,
GradDot, GradCos: :math:`+\nabla\ell(s)\cdot\nabla\ell(q)`; TRAK: gradients of the margin
(which rises as the loss falls); LoGra / FactGraSS:
:math:`+\nabla\ell(q)^\top H^{-1}\nabla\ell(s)`.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda._optional import require
from aria_tda.attribution.losses import LOSS_KINDS, loss_fn
from aria_tda.errors import DataError, ParameterError, expected

torch = require("torch", "attribution", purpose="gradient-based attribution")
require("dattri", "attribution", purpose="gradient-based attribution")

from dattri.func.utils import _unflatten_params  # noqa: E402
from dattri.task import AttributionTask  # noqa: E402
from torch import nn  # noqa: E402
from torch.func import functional_call, grad, vmap  # noqa: E402

__all__ = [
    "LOSS_KINDS",
    "FastAttributionTask",
    "as_windows",
    "build_task",
    "check_loss",
    "import_dattri",
    "load_checkpoint",
    "make_loader",
    "per_sample_loss",
    "query_log_probs",
    "resolve_loss",
]

LossLike = str | Callable[..., Any]
Checkpoint = Mapping[str, Any] | str | os.PathLike[str]


def import_dattri(module: str) -> Any:
    """Import a dattri module, silencing the DeprecationWarning torch raises at import time.

    dattri 0.3.0 applies ``@torch.compile`` at import time (``dattri.algorithm`` pulls in
    torch's inductor; the first import takes several seconds).

    Parameters
    ----------
    module : str
        Dotted module name, e.g. ``"dattri.algorithm.trak"``.
    """
    import importlib
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return importlib.import_module(module)


# ------------------------------------------------------------------------------------------
# Losses
# ------------------------------------------------------------------------------------------


def resolve_loss(loss: LossLike, *, name: str = "loss") -> Callable[..., Any]:
    """Return the per-sample loss function ``f(model, tokens) -> (B,)`` for ``loss``.

    Parameters
    ----------
    loss : {"sequence", "last_token"} or callable
        A name from :data:`LOSS_KINDS` (the functions of :mod:`aria_tda.attribution.losses`) or a
        callable ``f(model, tokens)`` returning one loss per window, shape ``(B,)``.
    name : str
        How to name ``loss`` in an error message.
    """
    checked = check_loss(name, loss)
    return checked if callable(checked) else loss_fn(checked)


def check_loss(name: str, loss: Any) -> LossLike:
    """Return ``loss`` if it is a name from :data:`LOSS_KINDS` or a callable.

    Parameters
    ----------
    name : str
        How to name ``loss`` in an error message (``"loss"``, ``"target"``).
    loss : Any
        The value to check.
    """
    if callable(loss):
        return loss
    if not isinstance(loss, str) or loss not in LOSS_KINDS:
        raise ParameterError(expected(name, f"one of {LOSS_KINDS} or a callable", loss))
    return loss


def loss_name(loss: LossLike) -> str:
    """A JSON-able name of ``loss`` for manifests.

    Parameters
    ----------
    loss : str or callable
        A loss name or a per-sample loss function.
    """
    if isinstance(loss, str):
        return loss
    return getattr(loss, "__qualname__", None) or type(loss).__name__


def per_sample_loss(model: Callable[..., Any], tokens: Any, loss: LossLike) -> Any:
    """Per-window loss ``(B,)`` of ``model`` on ``tokens`` ``(B, L)`` (see module docstring).

    Parameters
    ----------
    model : nn.Module or callable
        Maps tokens ``(B, L)`` to logits ``(B, L, V)``.
    tokens : torch.Tensor [shape=(B, L)], int64
        The windows.
    loss : {"sequence", "last_token"} or callable
        The per-sample loss.
    """
    return resolve_loss(loss)(model, tokens)


def _margin_from_loss(value: Any) -> Any:
    r"""TRAK's margin :math:`\log\frac{p}{1-p}` with :math:`p = e^{-\ell}`.

    :math:`-\ell - \log(1 - e^{-\ell})`, written with ``expm1`` so it stays finite for small
    :math:`\ell` (it is ``+inf`` only at :math:`\ell = 0`, where dattri's formula is too).
    """
    return -value - torch.log(-torch.expm1(-value))


def single_sample_functions(model: nn.Module, loss: LossLike) -> dict[str, Callable[..., Any]]:
    r"""``torch.func``-style functions of ``(params, data)`` for ONE window (dattri's convention).

    ``params`` is a ``{name: tensor}`` dict and ``data`` the per-sample slice of a batch from
    :func:`make_loader` (a 1-tuple holding one window ``(L,)``); the batch axis is added inside.

    Parameters
    ----------
    model : nn.Module
        The module ``functional_call`` runs with ``params``.
    loss : {"sequence", "last_token"} or callable
        The per-sample loss.

    Returns
    -------
    dict
        ``"loss"`` (:math:`\ell`), ``"margin"`` (TRAK's :math:`\log\frac{p}{1-p}`) and
        ``"prob"`` (:math:`p = e^{-\ell}`).
    """
    fn = resolve_loss(loss)

    def _loss(params: dict[str, Any], data: Any) -> Any:
        tokens = data[0] if isinstance(data, (tuple, list)) else data
        call = lambda t: functional_call(model, params, (t,))  # noqa: E731
        return fn(call, tokens.unsqueeze(0)).squeeze(0)

    def _margin(params: dict[str, Any], data: Any) -> Any:
        return _margin_from_loss(_loss(params, data))

    def _prob(params: dict[str, Any], data: Any) -> Any:
        return torch.exp(-_loss(params, data))

    return {"loss": _loss, "margin": _margin, "prob": _prob}


# ------------------------------------------------------------------------------------------
# Data
# ------------------------------------------------------------------------------------------


def as_windows(windows: Any, *, name: str = "windows") -> Any:
    """Return ``windows`` as a contiguous int64 CPU tensor ``(N, L)``, ``N >= 1``, ``L >= 2``.

    Parameters
    ----------
    windows : array or torch.Tensor [shape=(N, L)], integer
        Token ids.
    name : str
        How to name ``windows`` in an error message.
    """
    if isinstance(windows, torch.Tensor):
        out = windows.detach().cpu()
    else:
        try:
            arr = np.asarray(windows)
        except Exception:
            got = type(windows).__name__
            raise ParameterError(expected(name, "an int64 array (N, L)", got)) from None
        if arr.dtype.kind not in "iu":
            raise ParameterError(expected(name, "integer token ids", arr.dtype))
        out = torch.from_numpy(np.ascontiguousarray(arr, dtype=np.int64))
    if out.dtype not in (torch.int64, torch.int32, torch.int16, torch.uint8):
        raise ParameterError(expected(name, "integer token ids", out.dtype))
    if out.ndim != 2 or out.shape[0] < 1 or out.shape[1] < 2:
        what = "a 2-D array (N >= 1 windows, L >= 2 tokens)"
        raise DataError(expected(name, what, tuple(out.shape)))
    if int(out.min()) < 0:
        raise DataError(expected(name, "non-negative token ids", int(out.min())))
    return out.to(torch.int64).contiguous()


def make_loader(windows: Any, *, batch_size: int, as_dict: bool = False) -> Any:
    """An unshuffled :class:`~torch.utils.data.DataLoader` over ``windows``.

    Batches are 1-tuples ``(tokens (B, L),)`` (what dattri's TRAK/TracIn vmaps over) or, with
    ``as_dict``, ``{"tokens": (B, L)}`` (what LoGra/FactGraSS pass as ``model(**batch)``).

    Parameters
    ----------
    windows : array [shape=(N, L)], integer
        Token ids (see :func:`as_windows`).
    batch_size : int
        Windows per batch.
    as_dict : bool
        Dict batches instead of 1-tuples.
    """
    from torch.utils.data import DataLoader, Dataset, TensorDataset

    data = as_windows(windows)
    if as_dict:

        class _Dict(Dataset):
            def __len__(self) -> int:
                return int(data.shape[0])

            def __getitem__(self, i: int) -> dict[str, Any]:
                return {"tokens": data[i]}

        return DataLoader(_Dict(), batch_size=batch_size, shuffle=False)
    return DataLoader(TensorDataset(data), batch_size=batch_size, shuffle=False)


# ------------------------------------------------------------------------------------------
# Checkpoints
# ------------------------------------------------------------------------------------------


def load_checkpoint(checkpoint: Checkpoint, *, name: str = "checkpoint") -> dict[str, Any]:
    """Return a state dict from a mapping or a ``torch.save``-d file (weights only).

    A file may hold the state dict itself or a dict with a ``"state_dict"`` / ``"model"`` key.

    Parameters
    ----------
    checkpoint : mapping or path
        A state dict, or the path of a file holding one.
    name : str
        How to name ``checkpoint`` in an error message.
    """
    if isinstance(checkpoint, Mapping):
        return dict(checkpoint)
    if isinstance(checkpoint, (str, os.PathLike)):
        path = Path(checkpoint)
        if not path.is_file():
            raise DataError(f"{name}: no such checkpoint file: {str(path)!r}")
        obj = torch.load(path, map_location="cpu", weights_only=True)
        if isinstance(obj, Mapping):
            for key in ("state_dict", "model"):
                if key in obj and isinstance(obj[key], Mapping):
                    return dict(obj[key])
            return dict(obj)
        raise DataError(f"{name}: {str(path)!r} does not hold a state dict")
    got = type(checkpoint).__name__
    raise ParameterError(expected(name, "a state dict or a checkpoint path", got))


def load_checkpoints(
    checkpoints: Any, *, name: str = "checkpoints", min_count: int = 1
) -> list[dict[str, Any]]:
    """Normalise one checkpoint or a list of them to a list of state dicts.

    Parameters
    ----------
    checkpoints : checkpoint or sequence of checkpoints
        State dicts or paths (see :func:`load_checkpoint`).
    name : str
        How to name ``checkpoints`` in an error message.
    min_count : int
        Fewest checkpoints accepted.
    """
    if isinstance(checkpoints, (Mapping, str, os.PathLike)):
        checkpoints = [checkpoints]
    if not isinstance(checkpoints, Sequence) or len(checkpoints) < min_count:
        what = f"a list of at least {min_count} checkpoint(s)"
        raise ParameterError(expected(name, what, checkpoints))
    return [load_checkpoint(c, name=f"{name}[{i}]") for i, c in enumerate(checkpoints)]


def _check_model(model: Any) -> nn.Module:
    if not isinstance(model, nn.Module):
        raise ParameterError(expected("model", "a torch.nn.Module", type(model).__name__))
    if not any(p.requires_grad for p in model.parameters()):
        raise ParameterError(expected("model", "a module with trainable parameters", "none"))
    return model


# ------------------------------------------------------------------------------------------
# dattri task with per-tensor per-sample gradients
# ------------------------------------------------------------------------------------------


class FastAttributionTask(AttributionTask):
    """:class:`dattri.task.AttributionTask` computing per-sample gradients per tensor.

    dattri differentiates the loss with respect to ONE flat parameter vector that is sliced
    back into tensors inside the loss; the backward pass of those slices costs ~5x the
    gradient itself on CPU. This subclass differentiates with respect to the ``{name: tensor}``
    dict (``vmap(grad(f))`` over the original, unflattened loss) and concatenates the
    per-tensor gradients in ``named_parameters`` order, giving the same ``(B, n_params)``
    matrix (tested equal to the plain task). Only the whole-model case (``layer_name=None``)
    is accelerated; anything else falls back to dattri.
    """

    def _fast_grad(self, fn: Callable[..., Any], in_dims: Any) -> Callable[..., Any]:
        per_sample = vmap(grad(fn), in_dims=in_dims, randomness="different")
        model = self.model

        def flat_grad(flat_params: Any, data: Any) -> Any:
            params = _unflatten_params(flat_params, model)
            grads = per_sample(params, data)
            return torch.cat([g.reshape(g.shape[0], -1) for g in grads.values()], dim=1)

        return flat_grad

    def get_grad_loss_func(
        self, in_dims: Any = (None, 1), layer_name: Any = None, ckpt_idx: Any = None
    ) -> Any:
        """Per-sample gradients of the training loss, ``f(flat_params, batch) -> (B, p)``.

        Parameters
        ----------
        in_dims : tuple
            ``vmap`` input dimensions of ``(params, data)``.
        layer_name : str or list, optional
            dattri's layer selection; anything but ``None`` runs dattri's own function.
        ckpt_idx : int, optional
            Passed to dattri when ``layer_name`` is given.
        """
        if layer_name is not None:
            return super().get_grad_loss_func(
                in_dims=in_dims, layer_name=layer_name, ckpt_idx=ckpt_idx
            )
        return self._fast_grad(self.original_loss_func, in_dims)

    def get_grad_target_func(
        self, in_dims: Any = (None, 1), layer_name: Any = None, ckpt_idx: Any = None
    ) -> Any:
        """Per-sample gradients of the query target, ``f(flat_params, batch) -> (B, p)``.

        Parameters
        ----------
        in_dims : tuple
            ``vmap`` input dimensions of ``(params, data)``.
        layer_name : str or list, optional
            dattri's layer selection; anything but ``None`` runs dattri's own function.
        ckpt_idx : int, optional
            Passed to dattri when ``layer_name`` is given.
        """
        if layer_name is not None:
            return super().get_grad_target_func(
                in_dims=in_dims, layer_name=layer_name, ckpt_idx=ckpt_idx
            )
        return self._fast_grad(self.original_target_func, in_dims)


def build_task(
    model: nn.Module,
    checkpoints: Any,
    *,
    loss: LossLike,
    target: LossLike,
    objective: str = "loss",
    fast: bool = True,
    device: str = "cpu",
) -> Any:
    """A dattri task over a private, eval-mode copy of ``model`` (the caller's is never touched).

    The single-sample functions are bound to that copy, so ``functional_call`` takes buffers and
    the train/eval mode from the loaded checkpoint's module, not from the caller's.

    Parameters
    ----------
    model : nn.Module
        The architecture; its weights are replaced by each checkpoint in turn.
    checkpoints : list of state dicts
        The checkpoints of the task (dattri's ``checkpoints``).
    loss, target : {"sequence", "last_token"} or callable
        Per-sample loss of training windows (dattri's ``loss_func``) and of queries
        (``target_func``).
    objective : {"loss", "margin"}
        Differentiate the losses themselves (TracIn family) or TRAK's margins.
    fast : bool
        :class:`FastAttributionTask` (per-tensor gradients) or plain dattri.
    device : str
        Where the copy lives (and so where gradients are computed); batches are moved there
        by :func:`aria_tda.attribution.gradient_projection.iter_projected_gradients`.

    See Also
    --------
    single_sample_functions : ``single_sample_functions(task.get_model(), loss)["prob"]`` is
        TRAK's correct-probability function for the same copy.
    """
    if objective not in ("loss", "margin"):
        raise ParameterError(expected("objective", "'loss' or 'margin'", objective))
    work = copy.deepcopy(_check_model(model)).to(device).eval()
    loss_f = single_sample_functions(work, loss)[objective]
    target_f = single_sample_functions(work, target)[objective]
    cls = FastAttributionTask if fast else AttributionTask
    return cls(loss_func=loss_f, model=work, checkpoints=list(checkpoints), target_func=target_f)


# ------------------------------------------------------------------------------------------
# Model outputs for the LDS ground truth
# ------------------------------------------------------------------------------------------


def query_log_probs(
    model: nn.Module,
    queries: Any,
    *,
    target: LossLike = "last_token",
    batch_size: int = 64,
    checkpoint: Checkpoint | None = None,
) -> np.ndarray:
    r"""The model output the attribution explains: :math:`-\ell_{target}(q)` per query.

    Parameters
    ----------
    model : nn.Module
        A trained model (or the architecture, with ``checkpoint``).
    queries : array [shape=(T, L)], int64
        Query windows.
    target : {"sequence", "last_token"} or callable
        The query loss :math:`\ell_{target}`.
    batch_size : int
        Queries per forward pass.
    checkpoint : state dict or path, optional
        Weights to load into a copy of ``model`` first.

    Returns
    -------
    np.ndarray [shape=(T,)], float64
        The query log-probabilities (higher = the model finds the query more likely).
    """
    fn = resolve_loss(target, name="target")
    data = as_windows(queries, name="queries")
    net = _check_model(model)
    if checkpoint is not None:
        net = copy.deepcopy(net)
        net.load_state_dict(load_checkpoint(checkpoint))
    was_training = net.training
    net.eval()
    out = []
    try:
        with torch.no_grad():
            for start in range(0, data.shape[0], batch_size):
                out.append(-fn(net, data[start : start + batch_size]).double())
    finally:
        net.train(was_training)
    return torch.cat(out).numpy()
