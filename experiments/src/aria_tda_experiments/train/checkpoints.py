"""Saving and loading trained benchmark models (the model directory of
:mod:`aria_tda_experiments.train`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import torch

from aria_tda._checks import check_int
from aria_tda._io import atomic_path
from aria_tda.errors import FileFormatError
from aria_tda.manifest import make_manifest, read_manifest, write_manifest
from aria_tda_experiments.model import ModelConfig, MusicTransformer
from aria_tda_experiments.train.config import Checkpoint, TrainConfig, TrainedModel, indices_digest

__all__ = ["MODEL_KIND", "load_model", "load_trained", "reusable", "save_trained"]

MODEL_KIND = "aria_tda_experiments.model"


def save_trained(result: TrainedModel, out_dir: str | os.PathLike[str]) -> Path:
    """Write ``result`` to ``out_dir`` (atomically, replacing it); return the directory.

    Parameters
    ----------
    result : TrainedModel
        A trained model; its ``path`` and checkpoint paths are set to the written files.
    out_dir : path
        The model directory (see :mod:`aria_tda_experiments.train`).
    """
    final = Path(out_dir)
    ckpts: list[dict[str, Any]] = []
    with atomic_path(final) as tmp:
        tmp.mkdir(parents=True)
        torch.save(result.model.state_dict(), tmp / "model.pt")
        for c in result.checkpoints:
            name = f"ckpt-{c.step:06d}.pt"
            torch.save(c.state_dict, tmp / name)
            ckpts.append({"step": c.step, "lr": c.lr, "file": name})
        np.save(tmp / "indices.npy", result.indices)
        np.save(tmp / "losses.npy", result.losses)
        write_manifest(tmp, make_manifest(
            MODEL_KIND,
            model_config=result.model_config.to_dict(),
            train_config=result.train_config.to_dict(),
            seed=result.seed,
            n_train=int(result.indices.size),
            indices_digest=indices_digest(result.indices),
            checkpoints=ckpts,
            final_loss=float(result.losses[-1]) if result.losses.size else None,
            seconds=round(result.seconds, 3),
            torch_version=torch.__version__,
        ))
    result.path = final
    result.checkpoints = [
        Checkpoint(step=c.step, lr=c.lr, state_dict=c.state_dict, path=final / f["file"])
        for c, f in zip(result.checkpoints, ckpts, strict=True)
    ]
    return final


def _read_model_manifest(path: Path) -> dict[str, Any]:
    if not path.is_dir():
        raise FileFormatError(f"model: no such model directory: {str(path)!r}")
    man = read_manifest(path)
    if man is None or man.get("kind") != MODEL_KIND:
        raise FileFormatError(f"model: {str(path)!r} is not a saved benchmark model "
                              f"(no aria-manifest.json of kind {MODEL_KIND!r})")
    return man


def load_trained(path: str | os.PathLike[str]) -> TrainedModel:
    """Load a model directory written by :func:`train_model` (all checkpoints included).

    Parameters
    ----------
    path : path
        The model directory.
    """
    p = Path(path)
    man = _read_model_manifest(p)
    model_config = ModelConfig(**man["model_config"])
    model = MusicTransformer(model_config)
    model.load_state_dict(torch.load(p / "model.pt", weights_only=True))
    ckpts = [
        Checkpoint(step=int(c["step"]), lr=float(c["lr"]),
                   state_dict=torch.load(p / c["file"], weights_only=True), path=p / c["file"])
        for c in man["checkpoints"]
    ]
    return TrainedModel(
        model=model.eval(), model_config=model_config,
        train_config=TrainConfig(**man["train_config"]),
        seed=int(man["seed"]), indices=np.load(p / "indices.npy"), checkpoints=ckpts,
        losses=np.load(p / "losses.npy"), seconds=float(man.get("seconds") or 0.0), path=p,
    )


def load_model(
    path: str | os.PathLike[str], *, checkpoint: int | None = None
) -> MusicTransformer:
    """Load the final model (or checkpoint ``checkpoint``, 0-based) from a model directory.

    Parameters
    ----------
    path : path
        A model directory written by :func:`~aria_tda_experiments.train.train_model`.
    checkpoint : int, optional
        Which checkpoint (0-based); ``None`` = the final model.
    """
    p = Path(path)
    man = _read_model_manifest(p)
    model = MusicTransformer(ModelConfig(**man["model_config"]))
    if checkpoint is None:
        file = "model.pt"
    else:
        ck = man["checkpoints"]
        check_int("checkpoint", checkpoint, min_value=0, max_value=len(ck) - 1)
        file = ck[checkpoint]["file"]
    model.load_state_dict(torch.load(p / file, weights_only=True))
    return model.eval()


def reusable(path: Path, want: dict[str, Any]) -> bool:
    """True if ``path`` holds a saved model made with exactly the settings in ``want``.

    Parameters
    ----------
    path : pathlib.Path
        A model folder.
    want : dict
        Manifest fields and their values (configs, seed, indices digest).

    Returns
    -------
    bool
        ``False`` also for a missing model or an unreadable manifest.
    """
    if not (path / "model.pt").is_file():
        return False
    try:
        man = _read_model_manifest(path)
    except FileFormatError:
        return False
    return all(man.get(k) == v for k, v in want.items())
