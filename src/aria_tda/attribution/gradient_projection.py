r"""Projected per-sample gradients, computed the way dattri 0.3.0 computes them, only faster.

dattri's TRAK and TracIn loops do, per batch: per-sample gradients → ``nan_to_num`` →
(TRAK: divide by :math:`\sqrt{n_{params}}`) → dense random projection
:math:`\phi = P^\top g / \sqrt{k}` with :math:`P \in \mathbb{R}^{n_{params}\times k}` drawn
from seeds ``proj_seed + 1000·block + 100000·ensemble_id`` in blocks of 100 columns.
On CPU dattri re-draws :math:`P` for every batch (the dominant cost: ~3 s per batch at
1M parameters and k=512). :class:`Projector` draws it once per ensemble member with dattri's
own generator code and keeps it while it fits ``max_bytes``; above that it calls dattri's
projector per batch, exactly as dattri does. Either way the numbers are dattri's.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from aria_tda._progress import progress
from aria_tda.attribution.device import device_of
from aria_tda.attribution.task import torch
from aria_tda.errors import ParameterError, expected

__all__ = [
    "DEFAULT_MAX_PROJECTION_BYTES",
    "Projector",
    "iter_projected_gradients",
    "n_params",
    "projected_gradients",
    "sqrt_n_params",
    "train_correct_probs",
]

#: Largest dense projection matrix kept in memory (bytes): 1 GiB.
DEFAULT_MAX_PROJECTION_BYTES = 1 << 30

_CACHEABLE = ("normal", "rademacher")


class Projector:
    r"""dattri's dense random projection with the matrix drawn once per ensemble member.

    Parameters
    ----------
    proj_dim : int or None
        Output dimension :math:`k`; ``None`` = no projection (the raw gradient).
    seed : int
        dattri's ``proj_seed``.
    proj_type : {"normal", "rademacher", "random_mask"}
    max_bytes : int
        Keep the matrix (``n_params × k`` float32) only when it is at most this large.
    proj_max_batch_size : int
        Passed through to dattri's ``random_project`` (only used on CUDA there).
    device : str
        Where the projected features are wanted. The matrix is always drawn on the CPU
        generator (dattri's CPU numbers) and moved there, so a GPU projects exactly as a CPU
        does; ``kwargs`` names this device for dattri's own attributors.
    """

    def __init__(
        self,
        *,
        proj_dim: int | None,
        seed: int = 0,
        proj_type: str = "normal",
        max_bytes: int = DEFAULT_MAX_PROJECTION_BYTES,
        proj_max_batch_size: int = 32,
        device: str = "cpu",
    ) -> None:
        if proj_type not in (*_CACHEABLE, "random_mask"):
            what = "'normal', 'rademacher' or 'random_mask'"
            raise ParameterError(expected("proj_type", what, proj_type))
        self.proj_dim = proj_dim
        self.seed = seed
        self.proj_type = proj_type
        self.max_bytes = max_bytes
        self.proj_max_batch_size = proj_max_batch_size
        self.device = device
        self._key: tuple[int, int, Any] | None = None
        self._matrix: Any = None

    @property
    def kwargs(self) -> dict[str, Any]:
        """The ``projector_kwargs`` dattri's attributors would get for the same projection."""
        if self.proj_dim is None:
            return {"proj_dim": 1, "proj_type": "identity", "proj_seed": self.seed,
                    "proj_max_batch_size": self.proj_max_batch_size, "device": self.device}
        return {"proj_dim": self.proj_dim, "proj_type": self.proj_type, "proj_seed": self.seed,
                "proj_max_batch_size": self.proj_max_batch_size, "device": self.device}

    def output_dim(self, feature_dim: int) -> int:
        """The projected width: ``proj_dim``, or ``feature_dim`` when there is none.

        Parameters
        ----------
        feature_dim : int
            The gradients' width (the number of parameters).

        Returns
        -------
        int
        """
        return feature_dim if self.proj_dim is None else int(self.proj_dim)

    def _dense(self, feature_dim: int, ensemble_id: int, dtype: Any) -> Any:
        key = (feature_dim, ensemble_id, dtype)
        if self._key == key:
            return self._matrix
        from dattri.func.projection import BasicProjector, ProjectionType

        self._matrix = None  # free the previous member's matrix before drawing the next
        k = int(self.proj_dim)  # type: ignore[arg-type]
        basic = BasicProjector(
            feature_dim=feature_dim,
            proj_dim=k,
            seed=self.seed,
            proj_type=ProjectionType(self.proj_type),
            device=torch.device("cpu"),
            dtype=dtype,
            ensemble_id=ensemble_id,
        )
        if basic.num_blocks == 1:
            matrix = basic.proj_matrix
        else:
            matrix = torch.empty(feature_dim, k, dtype=dtype)
            for ind in range(basic.num_blocks):
                basic._gen_randomness_dense(basic.generator_states[ind])
                st = ind * basic.block_size
                ed = min((ind + 1) * basic.block_size, k)
                matrix[:, st:ed] = basic.proj_matrix[:, : ed - st]
            basic.free_memory()
        self._key, self._matrix = key, matrix.to(self.device)
        return self._matrix

    def __call__(self, features: Any, ensemble_id: int) -> Any:
        """Project ``features`` ``(B, n_params)`` → ``(B, k)`` as dattri's projector would."""
        if self.proj_dim is None:
            return features
        batch, feature_dim = features.shape
        k = int(self.proj_dim)
        size = feature_dim * k * features.element_size()
        if self.proj_type in _CACHEABLE and size <= self.max_bytes:
            matrix = self._dense(feature_dim, ensemble_id, features.dtype)
            sketch = features @ matrix
            sketch /= k**0.5
            return sketch
        from dattri.func.projection import random_project

        on = features.device
        features = features.cpu()  # dattri's CPU draw, as in the kept-matrix path
        project = random_project(
            features,
            batch,
            proj_dim=k,
            proj_max_batch_size=self.proj_max_batch_size,
            proj_seed=self.seed,
            proj_type=self.proj_type,
            device="cpu",
        )
        return project(features, ensemble_id=ensemble_id).to(on)

    def release(self) -> None:
        """Drop the kept matrix."""
        self._key, self._matrix = None, None


def _to(batch: Any, device: Any) -> Any:
    """A loader's batch (a tuple of tensors, or one tensor) on ``device``."""
    if isinstance(batch, (tuple, list)):
        return tuple(t.to(device) for t in batch)
    return batch.to(device)


def n_params(task: Any) -> int:
    """Number of trainable parameters of the task's model.

    Parameters
    ----------
    task : dattri AttributionTask
        The task.

    Returns
    -------
    int
    """
    return sum(p.numel() for p in task.get_model().parameters() if p.requires_grad)


def iter_projected_gradients(
    task: Any,
    loader: Any,
    *,
    ckpt_idx: int,
    which: str,
    projector: Projector | list[Projector],
    scale: float = 1.0,
    desc: str | None = None,
    progress_bar: bool | None = None,
) -> Iterator[Any]:
    r"""Projected per-sample gradients of each batch of ``loader`` at one checkpoint (a generator).

    Parameters
    ----------
    task : dattri AttributionTask
    loader : DataLoader
        Unshuffled batches from :func:`aria_tda.attribution.task.make_loader`.
    ckpt_idx : int
        Checkpoint index; also dattri's projection ``ensemble_id``.
    which : {"loss", "target"}
        Differentiate the task's loss function (training side) or its target function (query
        side), as dattri's attributors do.
    projector : Projector or list of Projector
        A list projects each gradient batch with every projector (one gradient pass for
        several projection dimensions).
    scale : float
        Divide gradients by this before projecting (TRAK: :math:`\sqrt{n_{params}}`).
    desc : str, optional
        The progress bar's label.
    progress_bar : bool, optional
        Draw a progress bar over the batches.

    Yields
    ------
    torch.Tensor [shape=(B, k)], float32, or a list of them (one per projector)
    """
    params, _ = task.get_param(ckpt_idx=ckpt_idx)
    if which == "loss":
        grad_fn = task.get_grad_loss_func(in_dims=(None, 0))
    elif which == "target":
        grad_fn = task.get_grad_target_func(in_dims=(None, 0))
    else:  # pragma: no cover - internal
        raise ParameterError(expected("which", "'loss' or 'target'", which))
    projectors = projector if isinstance(projector, list) else [projector]
    dev = device_of(task.get_model())
    with torch.no_grad():
        for batch in progress(loader, total=len(loader), desc=desc, unit="batch",
                              enabled=progress_bar, leave=False):
            data = _to(batch, dev)
            g = torch.nan_to_num(grad_fn(params, data))
            if scale != 1.0:
                g /= scale
            out = [proj(g, ckpt_idx).clone().detach() for proj in projectors]
            del g
            yield out if isinstance(projector, list) else out[0]


def projected_gradients(
    task: Any,
    loader: Any,
    *,
    ckpt_idx: int,
    which: str,
    projector: Projector | list[Projector],
    scale: float = 1.0,
    desc: str | None = None,
    progress_bar: bool | None = None,
) -> Any:
    """All of :func:`iter_projected_gradients` concatenated: ``(N, k)`` (or a list of them).

    Parameters
    ----------
    task : dattri AttributionTask
        The task.
    loader : DataLoader
        Unshuffled batches.
    ckpt_idx : int
        Checkpoint index (dattri's projection ``ensemble_id``).
    which : {"loss", "target"}
        Differentiate the loss (training side) or the target function (query side).
    projector : Projector or list of Projector
        The projection(s).
    scale : float
        Divide gradients by this before projecting.
    desc : str, optional
        The progress bar's label.
    progress_bar : bool, optional
        Draw a progress bar over the batches.

    Returns
    -------
    torch.Tensor or list of torch.Tensor
    """
    batches = list(iter_projected_gradients(task, loader, ckpt_idx=ckpt_idx, which=which,
                                            projector=projector, scale=scale, desc=desc,
                                            progress_bar=progress_bar))
    if isinstance(projector, list):
        return [torch.cat([b[i] for b in batches], dim=0) for i in range(len(projector))]
    return torch.cat(batches, dim=0)


def train_correct_probs(task: Any, loader: Any, *, ckpt_idx: int, prob_fn: Any) -> Any:
    r"""TRAK's :math:`p(s)` per training window at one checkpoint (vmapped, as in dattri).

    Parameters
    ----------
    task : dattri AttributionTask
        The task.
    loader : DataLoader
        Unshuffled training batches.
    ckpt_idx : int
        Checkpoint index.
    prob_fn : callable
        ``prob_fn(params, batch)``: the probability of the correct output of each example.

    Returns
    -------
    torch.Tensor [shape=(N,)]
    """
    from dattri.func.utils import _unflatten_params
    from torch.func import vmap

    full, _ = task.get_param(ckpt_idx=ckpt_idx)
    params = _unflatten_params(full, task.get_model())
    fn = vmap(prob_fn, in_dims=(None, 0), randomness="different")
    out = []
    dev = device_of(task.get_model())
    with torch.no_grad():
        for batch in loader:
            data = _to(batch, dev)
            out.append(fn(params, data).flatten().clone().detach())
    return torch.cat(out)


def sqrt_n_params(task: Any) -> float:
    r"""dattri TRAK's ``norm_scaler``: :math:`\sqrt{n_{params}}`.

    Parameters
    ----------
    task : dattri AttributionTask
        The task.

    Returns
    -------
    float
    """
    return math.sqrt(n_params(task))
