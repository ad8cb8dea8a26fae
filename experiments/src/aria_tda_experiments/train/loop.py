"""Deterministic training of the benchmark model, and per-window losses of a trained one."""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from aria_tda._checks import check_int
from aria_tda._progress import progress
from aria_tda.attribution.device import check_device
from aria_tda.attribution.threads import torch_threads
from aria_tda.errors import DataError, ParameterError, expected
from aria_tda_experiments.model import ModelConfig, build_model, loss_fn
from aria_tda_experiments.train.checkpoints import save_trained
from aria_tda_experiments.train.config import (
    Checkpoint,
    TrainConfig,
    TrainedModel,
    as_indices,
    as_segments,
    checkpoint_steps,
    derive_seed,
    lr_at,
)

__all__ = ["evaluate_losses", "train_model"]


def _param_groups(model: nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    decay: list[nn.Parameter] = []
    no_decay: list[nn.Parameter] = []
    for module in model.modules():
        for name, p in module.named_parameters(recurse=False):
            (decay if isinstance(module, nn.Linear) and name == "weight" else no_decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay},
            {"params": no_decay, "weight_decay": 0.0}]


def train_model(
    segments: np.ndarray | torch.Tensor,
    *,
    indices: Sequence[int] | np.ndarray | None = None,
    model_config: ModelConfig | None = None,
    train_config: TrainConfig | None = None,
    seed: int = 0,
    out_dir: str | os.PathLike[str] | None = None,
    progress_bar: bool | None = None,
    desc: str = "train",
    device: str = "cpu",
) -> TrainedModel:
    """Train a :class:`MusicTransformer` on ``segments[indices]`` deterministically.

    Parameters
    ----------
    segments : array [shape=(N, L)], integer
        All training windows; ``L <= model_config.max_len``.
    indices : array [shape=(n,)], optional
        Rows to train on (distinct; any order — they are sorted). Default: all ``N`` rows.
    model_config, train_config : optional
        Default :class:`ModelConfig` with ``max_len = L`` / default :class:`TrainConfig`.
    seed : int
        Seeds initialisation (:func:`~aria_tda_experiments.model.build_model`) and data order.
    out_dir : path, optional
        Where to save the model directory (see module docstring); written atomically.
    progress_bar : bool, optional
        Force the progress bar on/off (default: ``aria_tda._progress`` rules).
    desc : str
        The progress bar's label.
    device : str
        Where to train (``"cpu"``, ``"cuda"``, ...). The model is initialised and the data
        order drawn on the CPU either way; on an accelerator AdamW and gradient clipping use
        their fused (CUDA) / multi-tensor kernels and a step's loss is read back only at checkpoints
        and at the end (no synchronisation per step), so results agree with a CPU run up to
        floating-point rounding, not bitwise. The returned model and checkpoints are on the
        CPU.

    Returns
    -------
    TrainedModel
    """
    seg = as_segments(segments)
    idx = as_indices(indices, seg.shape[0])
    model_config = model_config or ModelConfig(max_len=int(seg.shape[1]))
    train_config = train_config or TrainConfig()
    seed = check_int("seed", seed, min_value=0)
    dev = torch.device(check_device("device", device))
    on_cpu = dev.type == "cpu"
    if seg.shape[1] > model_config.max_len:
        raise ParameterError(
            expected("segments", f"windows of <= max_len={model_config.max_len} tokens",
                     seg.shape[1])
        )
    if int(seg.max()) >= model_config.vocab_size or int(seg.min()) < 0:
        raise DataError(expected("segments", f"token ids in [0, {model_config.vocab_size})",
                                 f"[{int(seg.min())}, {int(seg.max())}]"))

    t0 = time.perf_counter()
    cfg = train_config
    n = idx.size
    steps_per_epoch = math.ceil(n / cfg.batch_size)
    total = cfg.total_steps(n)
    ckpt_at = set(checkpoint_steps(total, cfg.n_checkpoints))
    train_loss = cfg.loss()
    if cfg.target_start is not None and cfg.target_start >= seg.shape[1]:
        raise ParameterError(expected("train_config.target_start",
                                      f"an index < the window length {seg.shape[1]}",
                                      cfg.target_start))
    data = seg[torch.from_numpy(idx)].to(dev)
    order_gen = torch.Generator().manual_seed(derive_seed(seed, 1))
    # per-step losses stay on the device; they are read (and checked) at checkpoints and at
    # the end, so an accelerator never waits for the host inside the loop
    # (float32, as the loss itself: the values equal float(loss) exactly)
    loss_buf = torch.empty(total, dtype=torch.float32, device=dev)
    checkpoints: list[Checkpoint] = []
    checked = 0

    def _check_finite(upto: int) -> None:
        nonlocal checked
        seen = loss_buf[checked:upto].cpu().numpy()
        bad = np.flatnonzero(~np.isfinite(seen))
        if bad.size:
            bar.close()
            at = checked + int(bad[0])
            raise DataError(f"training diverged at step {at + 1} (loss {float(seen[bad[0]])}); "
                            "lower train_config.lr")
        checked = upto

    with torch_threads(cfg.num_threads):
        model = build_model(model_config, seed=seed).to(dev)
        model.train()
        # CPU: the single-tensor kernels (bitwise-stable results); CUDA: fused AdamW; other
        # accelerators: torch's choice
        fast: dict[str, Any] = ({"foreach": False} if on_cpu
                                else {"fused": True} if dev.type == "cuda" else {})
        opt = torch.optim.AdamW(_param_groups(model, cfg.weight_decay), lr=cfg.lr,
                                betas=(0.9, 0.98), eps=1e-8, **fast)
        step = 0
        bar = progress(total=total, desc=desc, unit="step", enabled=progress_bar, leave=False)
        for _epoch in range(cfg.epochs):
            perm = torch.randperm(n, generator=order_gen).to(dev)
            for b in range(steps_per_epoch):
                step += 1
                lr = lr_at(step, total, cfg)
                for group in opt.param_groups:
                    group["lr"] = lr
                batch = data[perm[b * cfg.batch_size : (b + 1) * cfg.batch_size]]
                loss = train_loss(model, batch, reduction="mean")
                opt.zero_grad(set_to_none=True)
                loss.backward()
                if cfg.grad_clip > 0:
                    nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip,
                                             foreach=False if on_cpu else None)
                opt.step()
                loss_buf[step - 1] = loss.detach()
                if on_cpu:  # cheap here: stop at the first bad step
                    _check_finite(step)
                if step in ckpt_at:
                    _check_finite(step)
                    state = {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}
                    checkpoints.append(Checkpoint(step=step, lr=lr, state_dict=state))
                bar.update(1)
        _check_finite(step)
        bar.close()
    losses = loss_buf.cpu().numpy().astype(np.float64)
    model.to("cpu")
    model.eval()
    result = TrainedModel(
        model=model, model_config=model_config, train_config=cfg, seed=seed, indices=idx,
        checkpoints=checkpoints, losses=losses, seconds=time.perf_counter() - t0,
    )
    if out_dir is not None:
        save_trained(result, out_dir)
    return result


@torch.no_grad()
def evaluate_losses(
    model: nn.Module,
    tokens: np.ndarray | torch.Tensor,
    *,
    loss: Any = "sequence",
    batch_size: int = 256,
    num_threads: int | None = None,
) -> np.ndarray:
    """Per-sequence loss of ``model`` on ``tokens`` ``(n, L)`` → ``(n,)`` float64.

    The model is put in eval mode.

    Parameters
    ----------
    model : nn.Module
        The model.
    tokens : array [shape=(n, L)], integer
        Windows.
    loss : {"sequence", "last_token"} or callable
        :func:`~aria_tda.attribution.losses.sequence_loss`,
        :func:`~aria_tda.attribution.losses.last_token_loss`, or a per-window loss
        ``f(model, tokens, *, reduction)`` such as
        :class:`~aria_tda.attribution.losses.ContinuationLoss`.
    batch_size : int
        Windows per forward pass.
    num_threads : int, optional
        torch intra-op threads (``None``: leave torch's setting).
    """
    fn = loss if callable(loss) else loss_fn(loss)
    seg = as_segments(tokens)
    batch_size = check_int("batch_size", batch_size, min_value=1)
    model.eval()
    ctx = torch_threads(num_threads) if num_threads is not None else contextlib.nullcontext()
    out = []
    with ctx:
        for start in range(0, seg.shape[0], batch_size):
            out.append(fn(model, seg[start : start + batch_size], reduction="none").double())
    return torch.cat(out).numpy()
