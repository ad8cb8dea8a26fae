"""Training settings, the learning-rate schedule and the result of a training run.

See :mod:`aria_tda_experiments.train` for the conventions (objective, epochs, determinism,
checkpoints).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from aria_tda._checks import check_choice, check_float, check_int
from aria_tda.attribution.losses import ContinuationLoss, loss_fn
from aria_tda.errors import ParameterError, expected
from aria_tda_experiments.model import ModelConfig, MusicTransformer

__all__ = [
    "SCHEDULES",
    "Checkpoint",
    "TrainConfig",
    "TrainedModel",
    "as_indices",
    "as_segments",
    "checkpoint_steps",
    "derive_seed",
    "indices_digest",
    "lr_at",
]

SCHEDULES = ("cosine", "linear", "constant")


@dataclass(frozen=True)
class TrainConfig:
    r"""Optimisation settings (see the module docstring for the conventions).

    Parameters
    ----------
    epochs : int
        Passes over the selected training rows.
    batch_size : int
    lr : float
        Peak learning rate :math:`\eta_{max}`.
    weight_decay : float
        AdamW decoupled weight decay on ``nn.Linear`` weights.
    warmup_frac : float
        Fraction of all steps with linear warm-up from ``lr / warmup_steps`` to ``lr``.
    schedule : {"cosine", "linear", "constant"}
        Decay after warm-up, down to ``min_lr_frac * lr`` at the last step.
    min_lr_frac : float
    grad_clip : float
        Max global gradient L2 norm (0 = no clipping).
    n_checkpoints : int
        Saved checkpoints, evenly spaced; the last is the final model.
    num_threads : int
        torch intra-op threads during training (part of the determinism contract).
    target_start : int, optional
        Train on :class:`~aria_tda.attribution.losses.ContinuationLoss` ``(target_start)`` (the mean
        next-token CE over tokens ``target_start ..`` only; a conditioning prefix is context)
        instead of the default sequence loss (``None``). Left out of :meth:`to_dict` when
        ``None``, so manifests of sequence-loss models are unchanged.
    """

    epochs: int = 3
    batch_size: int = 16
    lr: float = 6e-3
    weight_decay: float = 0.01
    warmup_frac: float = 0.05
    schedule: str = "cosine"
    min_lr_frac: float = 0.1
    grad_clip: float = 1.0
    n_checkpoints: int = 4
    num_threads: int = 1
    target_start: int | None = None

    def __post_init__(self) -> None:
        check_int("epochs", self.epochs, min_value=1)
        check_int("batch_size", self.batch_size, min_value=1)
        check_float("lr", self.lr, min_value=0.0, min_inclusive=False)
        check_float("weight_decay", self.weight_decay, min_value=0.0)
        check_float("warmup_frac", self.warmup_frac, min_value=0.0, max_value=1.0,
                    max_inclusive=False)
        check_choice("schedule", self.schedule, SCHEDULES)
        check_float("min_lr_frac", self.min_lr_frac, min_value=0.0, max_value=1.0)
        check_float("grad_clip", self.grad_clip, min_value=0.0)
        check_int("n_checkpoints", self.n_checkpoints, min_value=1)
        check_int("num_threads", self.num_threads, min_value=1)
        if self.target_start is not None:
            check_int("target_start", self.target_start, min_value=1)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        if out["target_start"] is None:  # the default: manifests as before the option existed
            del out["target_start"]
        return out

    def loss(self) -> Any:
        """The per-window training loss ``f(model, tokens, *, reduction)`` these settings use."""
        if self.target_start is None:
            return loss_fn("sequence")
        return ContinuationLoss(self.target_start)

    def total_steps(self, n_examples: int) -> int:
        """``epochs * ceil(n_examples / batch_size)``.

        Parameters
        ----------
        n_examples : int
            Training rows.
        """
        return self.epochs * math.ceil(n_examples / self.batch_size)


@dataclass(frozen=True)
class Checkpoint:
    """One saved checkpoint: optimisation ``step`` (1-based), its learning rate, its weights."""

    step: int
    lr: float
    state_dict: dict[str, torch.Tensor] = field(repr=False)
    path: Path | None = None


@dataclass
class TrainedModel:
    """Result of :func:`train_model` (also what :func:`load_trained` returns).

    Attributes
    ----------
    model : MusicTransformer
        Final weights, in eval mode.
    checkpoints : list[Checkpoint]
        Ascending steps; ``checkpoints[-1]`` holds the final weights.
    indices : np.ndarray [shape=(n,)], int64
        Training rows used (sorted).
    losses : np.ndarray [shape=(steps,)]
        Mean training loss of each optimisation step.
    """

    model: MusicTransformer
    model_config: ModelConfig
    train_config: TrainConfig
    seed: int
    indices: np.ndarray
    checkpoints: list[Checkpoint]
    losses: np.ndarray
    seconds: float
    path: Path | None = None

    @property
    def checkpoint_lrs(self) -> list[float]:
        """Learning rate of each checkpoint (TracIn weights), aligned with :attr:`checkpoints`."""
        return [c.lr for c in self.checkpoints]

    def checkpoint_model(self, i: int) -> MusicTransformer:
        """A fresh model holding the weights of checkpoint ``i`` (eval mode).

        Parameters
        ----------
        i : int
            Checkpoint index (``-1`` = the final model).
        """
        model = MusicTransformer(self.model_config)
        model.load_state_dict(self.checkpoints[i].state_dict)
        return model.eval()


def lr_at(step: int, total_steps: int, config: TrainConfig) -> float:
    r"""Learning rate of optimisation step ``step`` (1-based) out of ``total_steps``.

    Warm-up :math:`\eta_s = \eta_{max} s / w` for :math:`s \le w`
    (:math:`w = \lceil \text{warmup\_frac} \cdot S \rceil`); then with
    :math:`u = (s - w) / \max(S - w, 1)` and :math:`\eta_{min} = \text{min\_lr\_frac}\,\eta_{max}`:
    cosine :math:`\eta_{min} + (\eta_{max} - \eta_{min})(1 + \cos \pi u)/2`, linear
    :math:`\eta_{max} - (\eta_{max} - \eta_{min}) u`, constant :math:`\eta_{max}`.

    Parameters
    ----------
    step : int
        Optimisation step, 1-based.
    total_steps : int
        All steps of the run.
    config : TrainConfig
        Peak rate, warm-up and schedule.
    """
    warm = math.ceil(config.warmup_frac * total_steps)
    if step <= warm:
        return config.lr * step / warm
    u = (step - warm) / max(total_steps - warm, 1)
    lo = config.min_lr_frac * config.lr
    if config.schedule == "cosine":
        return lo + (config.lr - lo) * 0.5 * (1.0 + math.cos(math.pi * u))
    if config.schedule == "linear":
        return config.lr - (config.lr - lo) * u
    return config.lr


def checkpoint_steps(total_steps: int, n_checkpoints: int) -> list[int]:
    """Evenly spaced checkpoint steps ``round(S * (i + 1) / n)``, unique, ending at ``S``.

    Parameters
    ----------
    total_steps : int
        All steps of the run (``S``).
    n_checkpoints : int
        Checkpoints wanted (``n``; fewer when ``S < n``).
    """
    n = min(n_checkpoints, total_steps)
    return sorted({max(1, round(total_steps * (i + 1) / n)) for i in range(n)})


def as_segments(segments: Any) -> torch.Tensor:
    """Training windows as an int64 tensor ``(N, L)``.

    Parameters
    ----------
    segments : numpy.ndarray or torch.Tensor
        Integer token windows, at least one of at least 2 tokens.

    Returns
    -------
    torch.Tensor

    Raises
    ------
    ParameterError
        Not 2-D, not integers, or too small.
    """
    if isinstance(segments, np.ndarray):
        segments = torch.from_numpy(np.ascontiguousarray(segments))
    if not isinstance(segments, torch.Tensor) or segments.ndim != 2:
        got = getattr(segments, "shape", type(segments).__name__)
        raise ParameterError(expected("segments", "an integer array of shape (N, L)", got))
    if segments.dtype.is_floating_point or segments.dtype == torch.bool:
        raise ParameterError(expected("segments", "an integer dtype", segments.dtype))
    if segments.shape[0] < 1 or segments.shape[1] < 2:
        raise ParameterError(expected("segments", "shape (N >= 1, L >= 2)", tuple(segments.shape)))
    return segments.to(torch.int64)


def as_indices(indices: Any, n: int) -> np.ndarray:
    """Training rows, checked and sorted: distinct integers in ``[0, n)``.

    Parameters
    ----------
    indices : array_like or None
        The rows (``None``: all ``n``).
    n : int
        The number of windows.

    Returns
    -------
    numpy.ndarray
        int64, ascending.

    Raises
    ------
    ParameterError
        Empty, not 1-D integers, out of range, or with duplicates.
    """
    if indices is None:
        return np.arange(n, dtype=np.int64)
    arr = np.asarray(indices)
    if arr.ndim != 1 or arr.size == 0 or not np.issubdtype(arr.dtype, np.integer):
        got = getattr(arr, "shape", arr)
        raise ParameterError(expected("indices", "a non-empty 1-D integer array", got))
    if arr.min() < 0 or arr.max() >= n:
        got = f"[{arr.min()}, {arr.max()}]"
        raise ParameterError(expected("indices", f"rows in [0, {n})", got))
    out = np.unique(arr.astype(np.int64))
    if out.size != arr.size:
        got = f"{arr.size - out.size} duplicates"
        raise ParameterError(expected("indices", "distinct rows", got))
    return out


def derive_seed(seed: int, stream: int) -> int:
    """An independent 63-bit seed for ``stream`` (0 = init, 1 = data order) from ``seed``.

    Parameters
    ----------
    seed : int
        The model's seed.
    stream : int
        What the seed is for.

    Returns
    -------
    int
    """
    return int(np.random.SeedSequence([seed, stream]).generate_state(2, np.uint64)[0] >> 1)


def indices_digest(indices: np.ndarray) -> str:
    """A short fingerprint of training rows (recorded with a saved model).

    Parameters
    ----------
    indices : numpy.ndarray
        The rows.

    Returns
    -------
    str
        16 hex digits of their SHA-256.
    """
    return hashlib.sha256(np.ascontiguousarray(indices, dtype=np.int64).tobytes()).hexdigest()[:16]
