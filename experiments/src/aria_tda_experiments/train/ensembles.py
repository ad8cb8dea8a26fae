"""Many models at once: subset retraining (LDS ground truth) and seeded ensembles (TRAK).

Models train sequentially or in spawned worker processes (``n_jobs``), bitwise equal either way;
a model directory already holding the same settings and rows is reused (resumable).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from aria_tda._checks import check_choice, check_int
from aria_tda._io import atomic_path
from aria_tda._progress import progress
from aria_tda.attribution.device import check_device
from aria_tda.attribution.subsets import sample_subsets
from aria_tda.errors import ParameterError, expected
from aria_tda_experiments.model import ModelConfig
from aria_tda_experiments.train.checkpoints import load_trained, reusable
from aria_tda_experiments.train.config import (
    Checkpoint,
    TrainConfig,
    TrainedModel,
    as_indices,
    as_segments,
    indices_digest,
)
from aria_tda_experiments.train.loop import train_model

__all__ = ["SubsetRetrains", "retrain_subsets", "train_ensemble", "train_many"]


def _train_or_reuse(
    seg: torch.Tensor, idx: np.ndarray, *, model_config: ModelConfig, train_config: TrainConfig,
    seed: int, out_dir: Path | None, desc: str, progress_bar: bool | None, device: str = "cpu",
) -> TrainedModel:
    if out_dir is not None and reusable(out_dir, {
        "model_config": model_config.to_dict(), "train_config": train_config.to_dict(),
        "seed": seed, "indices_digest": indices_digest(idx),
    }):
        return load_trained(out_dir)
    return train_model(seg, indices=idx, model_config=model_config, train_config=train_config,
                       seed=seed, out_dir=out_dir, progress_bar=progress_bar, desc=desc,
                       device=device)


_WORKER_SEGMENTS: torch.Tensor | None = None


def _init_worker(segments: np.ndarray) -> None:
    global _WORKER_SEGMENTS
    _WORKER_SEGMENTS = torch.from_numpy(segments)


def _train_job(job: tuple[np.ndarray, dict[str, Any], dict[str, Any], int, str, str]) -> str:
    """Worker side of :func:`train_many`: train one model and save it to ``out_dir``."""
    idx, model_cfg, train_cfg, seed, out_dir, device = job
    if _WORKER_SEGMENTS is None:  # pragma: no cover - initializer always ran
        raise RuntimeError("worker started without segments")
    train_model(_WORKER_SEGMENTS, indices=idx, model_config=ModelConfig(**model_cfg),
                train_config=TrainConfig(**train_cfg), seed=seed, out_dir=out_dir,
                progress_bar=False, device=device)
    return out_dir


def train_many(
    seg: torch.Tensor, jobs: list[tuple[np.ndarray, int, Path | None, str]], *,
    model_config: ModelConfig, train_config: TrainConfig, n_jobs: int,
    progress_bar: bool | None, desc: str, device: str = "cpu",
) -> list[TrainedModel]:
    """Train (or reuse) one model per ``(indices, seed, out_dir, desc)`` job, ``n_jobs`` at a time.

    With ``n_jobs > 1`` each model trains in its own spawned process with the same pinned
    thread count, so results equal sequential training bitwise. On a GPU (``device``) the
    processes share it: small models are launch-bound, so several at once keep it busy.
    A model's settings and rows decide whether a saved model is reused, not the device it was
    trained on (a stage trained on a GPU can be finished on a CPU).

    Parameters
    ----------
    seg : torch.Tensor
        The training windows ``(N, L)``.
    jobs : list of (numpy.ndarray, int, pathlib.Path or None, str)
        One ``(rows, seed, folder, label)`` per model (no folder: not saved).
    model_config : ModelConfig
        The architecture.
    train_config : TrainConfig
        The optimisation.
    n_jobs : int
        Models trained at once.
    progress_bar : bool or None
        Draw progress bars.
    desc : str
        The progress bar's label.
    device : str
        Where to train.

    Returns
    -------
    list of TrainedModel
        In job order.
    """
    n_jobs = check_int("n_jobs", n_jobs, min_value=1)
    device = check_device("device", device)
    if n_jobs == 1 or len(jobs) <= 1:
        return [
            _train_or_reuse(seg, idx, model_config=model_config, train_config=train_config, seed=sd,
                            out_dir=od, desc=d, progress_bar=progress_bar, device=device)
            for idx, sd, od, d in progress(jobs, desc=desc, unit="model", enabled=progress_bar)
        ]
    import multiprocessing as mp
    import tempfile
    from concurrent.futures import ProcessPoolExecutor, as_completed

    want = {"model_config": model_config.to_dict(), "train_config": train_config.to_dict()}
    out: list[TrainedModel | None] = [None] * len(jobs)
    bar = progress(total=len(jobs), desc=desc, unit="model", enabled=progress_bar)
    with tempfile.TemporaryDirectory(prefix="aria-train-") as scratch:
        todo = {}
        for j, (idx, sd, od, _) in enumerate(jobs):
            same = {**want, "seed": sd, "indices_digest": indices_digest(idx)}
            if od is not None and reusable(od, same):
                out[j] = load_trained(od)
                bar.update(1)
            else:
                todo[j] = str(od) if od is not None else str(Path(scratch) / f"model-{j}")
        ctx = mp.get_context("spawn")  # no fork after torch has started its thread pools
        with ProcessPoolExecutor(min(n_jobs, max(len(todo), 1)), mp_context=ctx,
                                 initializer=_init_worker, initargs=(seg.numpy(),)) as pool:
            futures = {
                pool.submit(_train_job, (jobs[j][0], want["model_config"], want["train_config"],
                                         jobs[j][1], path, device)): j
                for j, path in todo.items()
            }
            for fut in as_completed(futures):
                j = futures[fut]
                res = load_trained(fut.result())
                if jobs[j][2] is None:  # trained in scratch space: keep it in memory only
                    res.path = None
                    res.checkpoints = [Checkpoint(c.step, c.lr, c.state_dict)
                                       for c in res.checkpoints]
                out[j] = res
                bar.update(1)
    bar.close()
    return [m for m in out if m is not None]


@dataclass
class SubsetRetrains:
    """Models retrained on random subsets (LDS ground truth).

    Attributes
    ----------
    indices : np.ndarray [shape=(n_subsets, subset_size)], int64
        ``indices[j]`` = training rows of model ``j`` (dattri's ``lds`` ``indices`` argument).
    paths : list[Path | None]
        Model directory of each subset (``None`` when trained without ``out_dir``).
    models : list[TrainedModel]
    seeds : list[int]
        Training seed of each subset model.
    """

    indices: np.ndarray
    models: list[TrainedModel]
    seeds: list[int]

    @property
    def paths(self) -> list[Path | None]:
        return [m.path for m in self.models]


def retrain_subsets(
    segments: np.ndarray | torch.Tensor,
    *,
    n_subsets: int = 32,
    fraction: float = 0.5,
    seed: int = 0,
    init: str = "shared",
    subsets: np.ndarray | None = None,
    model_config: ModelConfig | None = None,
    train_config: TrainConfig | None = None,
    out_dir: str | os.PathLike[str] | None = None,
    n_jobs: int = 1,
    progress_bar: bool | None = None,
    device: str = "cpu",
) -> SubsetRetrains:
    """Retrain one model per random ``fraction`` subset of the training rows (for LDS).

    Parameters
    ----------
    segments : array [shape=(N, L)]
    n_subsets : int
        Number of subsets (>= 32 recommended for LDS).
    fraction : float
        Subset size as a fraction of ``N`` (0.5 = the usual LDS setting).
    seed : int
        Draws the subsets (:func:`sample_subsets`) and seeds the models.
    init : {"shared", "per_subset"}
        ``"shared"``: every subset model is trained with ``seed`` (same initialisation; the
        data order still differs because the data differ) — removes seed noise from the LDS
        targets. ``"per_subset"``: model ``j`` uses ``seed + 1 + j``.
    subsets : array [shape=(n_subsets, size)], optional
        Explicit subsets instead of drawing them (``n_subsets``/``fraction`` then ignored).
    model_config, train_config : optional
        As in :func:`~aria_tda_experiments.train.train_model`.
    out_dir : path, optional
        Saves model ``j`` in ``out_dir/subset-{j:03d}`` plus ``out_dir/subsets.npy``; a model
        directory already there with the same settings and rows is reused (resumable).
    n_jobs : int
        Models trained in parallel processes (each with ``train_config.num_threads`` threads);
        the results equal ``n_jobs=1`` bitwise.
    progress_bar : bool, optional
        Force the progress bar on/off.
    device : str
        Where the models train (:func:`~aria_tda_experiments.train.train_model`).
    """
    seg = as_segments(segments)
    init = check_choice("init", init, ("shared", "per_subset"))
    seed = check_int("seed", seed, min_value=0)
    if subsets is None:
        subsets = sample_subsets(seg.shape[0], n_subsets=n_subsets, fraction=fraction, seed=seed)
    else:
        subsets = np.asarray(subsets)
        if subsets.ndim != 2:
            what = "a 2-D array (n_subsets, size)"
            raise ParameterError(expected("subsets", what, subsets.shape))
        subsets = np.stack([as_indices(row, seg.shape[0]) for row in subsets])
    model_config = model_config or ModelConfig(max_len=int(seg.shape[1]))
    train_config = train_config or TrainConfig()
    root = Path(out_dir) if out_dir is not None else None
    if root is not None:
        root.mkdir(parents=True, exist_ok=True)
        with atomic_path(root / "subsets.npy") as tmp, open(tmp, "wb") as fh:
            np.save(fh, subsets)
    seeds = [seed if init == "shared" else seed + 1 + j for j in range(len(subsets))]
    jobs = [(subsets[j], seeds[j], None if root is None else root / f"subset-{j:03d}",
             f"subset {j}") for j in range(len(subsets))]
    models = train_many(seg, jobs, model_config=model_config, train_config=train_config,
                        n_jobs=n_jobs, progress_bar=progress_bar, desc="LDS retrains",
                        device=device)
    return SubsetRetrains(indices=subsets, models=models, seeds=seeds)


def train_ensemble(
    segments: np.ndarray | torch.Tensor,
    *,
    n_models: int = 10,
    seed: int = 0,
    indices: Sequence[int] | np.ndarray | None = None,
    model_config: ModelConfig | None = None,
    train_config: TrainConfig | None = None,
    out_dir: str | os.PathLike[str] | None = None,
    n_jobs: int = 1,
    progress_bar: bool | None = None,
    device: str = "cpu",
) -> list[TrainedModel]:
    """Train ``n_models`` independently seeded models on the same data (TRAK ensemble).

    Member ``i`` is ``train_model(..., seed=seed + i)``: member 0 is the model trained with
    ``seed`` itself, so an existing main model can serve as member 0. With ``out_dir``, member
    ``i`` lives in ``out_dir/member-{i:02d}`` and finished members are reused.

    Parameters
    ----------
    segments : array [shape=(N, L)]
        All training windows.
    n_models : int
        Ensemble members.
    seed : int
        Seed of member 0 (member ``i`` uses ``seed + i``).
    indices : array, optional
        Rows to train on (default all).
    model_config, train_config : optional
        As in :func:`~aria_tda_experiments.train.train_model`.
    out_dir : path, optional
        Saves member ``i`` in ``out_dir/member-{i:02d}`` (reused when finished).
    n_jobs : int
        As in :func:`retrain_subsets`.
    progress_bar : bool, optional
        Force the progress bar on/off.
    device : str
        Where the models train (:func:`~aria_tda_experiments.train.train_model`).
    """
    seg = as_segments(segments)
    n_models = check_int("n_models", n_models, min_value=1)
    seed = check_int("seed", seed, min_value=0)
    idx = as_indices(indices, seg.shape[0])
    model_config = model_config or ModelConfig(max_len=int(seg.shape[1]))
    train_config = train_config or TrainConfig()
    root = Path(out_dir) if out_dir is not None else None
    jobs = [(idx, seed + i, None if root is None else root / f"member-{i:02d}", f"member {i}")
            for i in range(n_models)]
    return train_many(seg, jobs, model_config=model_config, train_config=train_config,
                      n_jobs=n_jobs, progress_bar=progress_bar, desc="ensemble",
                      device=device)
