"""Random-weight CLAP checkpoints in the published file's own format (for tests and benchmarks).

:func:`save_random_checkpoint` builds the audio tower (HTSAT-base, or the small test shape)
with seeded random weights and writes what LAION-CLAP's training loop writes: ``epoch``,
``name``, a ``state_dict`` whose keys start with ``module.``, and an optimizer state whose
learning rate is a ``numpy.float64`` (as CLAP's cosine schedule leaves it). Beside the audio
tower and projection it holds the tensors a real checkpoint has and ARIA ignores — the
sound-event head, the geometry buffers, a few stand-in text-tower tensors, ``audio_transform``
and the logit scales — so a test exercises the real loading path end to end.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch

from aria_tda._io import atomic_path
from aria_tda.embed.encoders.clap.config import BASE, SMALL
from aria_tda.embed.encoders.clap.htsat import ClapAudio, derived_buffers

__all__ = ["random_model", "save_random_checkpoint"]

#: AudioSet classes of the sound-event head CLAP keeps in its tower
_CLASSES = 527


def random_model(*, seed: int = 0, small: bool = False) -> ClapAudio:
    """The tower and projection with seeded random weights (front-end kernels exact).

    Parameters
    ----------
    seed : int
        Seed of the weights.
    small : bool
        The narrow test shape (:data:`aria_tda.embed.encoders.clap.config.SMALL`) instead of
        HTSAT-base.
    """
    cfg = SMALL if small else BASE
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = ClapAudio(cfg)
        g = torch.Generator().manual_seed(seed + 1)
        with torch.no_grad():
            for name, p in model.named_parameters():
                if name.endswith("relative_position_bias_table") or name.endswith(".bias"):
                    p.copy_(0.02 * torch.randn(p.shape, generator=g))
                elif p.ndim == 1:  # LayerNorm / BatchNorm scales
                    p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=g))
            bn = model.audio_branch.bn0
            n = cfg.mel_bins
            bn.running_mean = -40.0 + 5.0 * torch.randn(n, generator=g)
            bn.running_var = 100.0 + 50.0 * torch.rand(n, generator=g)
            bn.num_batches_tracked = torch.tensor(1000)
    return model.eval()


def save_random_checkpoint(
    path: str | os.PathLike[str], *, seed: int = 0, small: bool = False
) -> Path:
    """Write a random-weight checkpoint in LAION-CLAP's format; return its path.

    Parameters
    ----------
    path : path
        Output ``.pt`` file (written atomically).
    seed : int
        Seed of the weights.
    small : bool
        The narrow test shape instead of HTSAT-base (~0.25 GB written for base).
    """
    model = random_model(seed=seed, small=small)
    cfg = model.cfg
    g = torch.Generator().manual_seed(seed + 2)
    sd: dict[str, torch.Tensor] = {}
    for key, value in model.audio_branch.state_dict().items():
        sd[f"audio_branch.{key}"] = value
    for key, value in derived_buffers(model).items():
        sd[f"audio_branch.{key}"] = value
    sf = cfg.spec_size // 2 ** (len(cfg.depths) - 1) // cfg.patch_size // cfg.freq_ratio
    sd["audio_branch.tscam_conv.weight"] = 0.02 * torch.randn(
        _CLASSES, cfg.num_features, sf, 3, generator=g
    )
    sd["audio_branch.tscam_conv.bias"] = torch.zeros(_CLASSES)
    sd["audio_branch.head.weight"] = 0.02 * torch.randn(_CLASSES, _CLASSES, generator=g)
    sd["audio_branch.head.bias"] = torch.zeros(_CLASSES)
    for key, value in model.audio_projection.state_dict().items():
        sd[f"audio_projection.{key}"] = value
    j = cfg.joint_dim
    # stand-ins for the text tower ARIA never builds (RoBERTa in the real file), and the rest
    sd["text_branch.embeddings.word_embeddings.weight"] = torch.randn(16, 8, generator=g)
    sd["text_branch.embeddings.position_ids"] = torch.arange(8)[None]
    sd["text_branch.encoder.layer.0.attention.self.query.weight"] = torch.randn(8, 8, generator=g)
    sd["text_projection.0.weight"] = torch.randn(j, 8, generator=g)
    sd["text_projection.0.bias"] = torch.zeros(j)
    for mlp in ("text_transform", "audio_transform"):
        for i in (0, 3):
            sd[f"{mlp}.sequential.{i}.weight"] = torch.randn(j, j, generator=g)
            sd[f"{mlp}.sequential.{i}.bias"] = torch.zeros(j)
    sd["logit_scale_a"] = torch.tensor(float(np.log(1 / 0.07)))
    sd["logit_scale_t"] = torch.tensor(float(np.log(1 / 0.07)))
    checkpoint = {
        "epoch": 15,
        "name": f"aria-random-htsat-{'small' if small else 'base'}-seed{seed}",
        "state_dict": {f"module.{k}": v.clone() for k, v in sd.items()},
        "optimizer": {
            "state": {},
            "param_groups": [{"lr": np.float64(1e-4) * np.cos(0.3), "betas": (0.9, 0.99),
                              "eps": 1e-9, "weight_decay": 0.0, "params": [0, 1]}],
        },
    }
    with atomic_path(path) as tmp:
        torch.save(checkpoint, tmp)
    return Path(path)
