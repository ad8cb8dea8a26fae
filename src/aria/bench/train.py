r"""Deterministic training of the benchmark model, subset retraining (LDS) and ensembles (TRAK).

Conventions
-----------
- Training data: an int64 array ``segments`` ``(N, L)`` of token windows; row ``i`` is training
  example ``i`` everywhere in ARIA (score-matrix row ``i``).
- Objective: :func:`aria.bench.model.sequence_loss` (mean next-token CE over the window),
  averaged over the batch. AdamW, linear warm-up then cosine decay to ``min_lr_frac * lr``,
  gradient-norm clipping. Weight decay only on ``nn.Linear`` weights.
- An *epoch* visits every selected example once in an order drawn from the seed; the last
  batch of an epoch may be smaller. ``steps = epochs * ceil(n / batch_size)``, so a model
  retrained on a 50 % subset takes half the steps of the full model (same epochs, as in
  dattri's retraining).
- Determinism: the same ``(segments, indices, configs, seed, num_threads)`` give bitwise-equal
  weights. Initialisation and data order use private generators derived from ``seed`` (the
  global RNG is untouched); torch's intra-op thread count is pinned to ``num_threads`` during
  training and restored afterwards.
- Checkpoints: ``n_checkpoints`` evenly spaced steps, the last one the final model; each stores
  the learning rate of the optimisation step that produced it (TracIn's :math:`\eta_i`).

On-disk layout of a trained model (``out_dir``, written atomically)::

    out_dir/
      aria-manifest.json   kind "aria.bench.model": configs, seed, n_train, indices digest,
                           checkpoints [{step, lr, file}], final loss, seconds
      model.pt             final weights (state_dict)
      ckpt-000123.pt       one state_dict per checkpoint (the last equals model.pt)
      indices.npy          training rows used (int64, sorted)
      losses.npy           training loss per step (float64)
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from aria._checks import check_choice, check_float, check_int
from aria._io import atomic_path
from aria._progress import progress
from aria.bench.model import ModelConfig, MusicTransformer, build_model, loss_fn
from aria.errors import DataError, FileFormatError, ParameterError, expected
from aria.manifest import make_manifest, read_manifest, write_manifest

__all__ = [
    "Checkpoint",
    "SubsetRetrains",
    "TrainConfig",
    "TrainedModel",
    "checkpoint_steps",
    "evaluate_losses",
    "load_model",
    "load_trained",
    "lr_at",
    "retrain_subsets",
    "sample_subsets",
    "torch_threads",
    "train_ensemble",
    "train_model",
]

MODEL_KIND = "aria.bench.model"
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

    def __post_init__(self) -> None:
        check_int("epochs", self.epochs, min_value=1)
        check_int("batch_size", self.batch_size, min_value=1)
        check_float("lr", self.lr, min_value=0.0, min_inclusive=False)
        check_float("weight_decay", self.weight_decay, min_value=0.0)
        check_float("warmup_frac", self.warmup_frac, min_value=0.0, max_value=1.0, max_inclusive=False)
        check_choice("schedule", self.schedule, SCHEDULES)
        check_float("min_lr_frac", self.min_lr_frac, min_value=0.0, max_value=1.0)
        check_float("grad_clip", self.grad_clip, min_value=0.0)
        check_int("n_checkpoints", self.n_checkpoints, min_value=1)
        check_int("num_threads", self.num_threads, min_value=1)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def total_steps(self, n_examples: int) -> int:
        """``epochs * ceil(n_examples / batch_size)``."""
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
        """A fresh model holding the weights of checkpoint ``i`` (eval mode)."""
        model = MusicTransformer(self.model_config)
        model.load_state_dict(self.checkpoints[i].state_dict)
        return model.eval()


@contextlib.contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Pin ``torch.set_num_threads(n)`` inside the block and restore the old value after."""
    old = torch.get_num_threads()
    torch.set_num_threads(check_int("num_threads", n, min_value=1))
    try:
        yield
    finally:
        torch.set_num_threads(old)


def lr_at(step: int, total_steps: int, config: TrainConfig) -> float:
    r"""Learning rate of optimisation step ``step`` (1-based) out of ``total_steps``.

    Warm-up :math:`\eta_s = \eta_{max} s / w` for :math:`s \le w`
    (:math:`w = \lceil \text{warmup\_frac} \cdot S \rceil`); then with
    :math:`u = (s - w) / \max(S - w, 1)` and :math:`\eta_{min} = \text{min\_lr\_frac}\,\eta_{max}`:
    cosine :math:`\eta_{min} + (\eta_{max} - \eta_{min})(1 + \cos \pi u)/2`, linear
    :math:`\eta_{max} - (\eta_{max} - \eta_{min}) u`, constant :math:`\eta_{max}`.
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
    """Evenly spaced checkpoint steps ``round(S * (i + 1) / n)``, unique, ending at ``S``."""
    n = min(n_checkpoints, total_steps)
    return sorted({max(1, round(total_steps * (i + 1) / n)) for i in range(n)})


def _as_segments(segments: Any) -> torch.Tensor:
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


def _as_indices(indices: Any, n: int) -> np.ndarray:
    if indices is None:
        return np.arange(n, dtype=np.int64)
    arr = np.asarray(indices)
    if arr.ndim != 1 or arr.size == 0 or not np.issubdtype(arr.dtype, np.integer):
        raise ParameterError(expected("indices", "a non-empty 1-D integer array", getattr(arr, "shape", arr)))
    if arr.min() < 0 or arr.max() >= n:
        raise ParameterError(expected("indices", f"rows in [0, {n})", f"[{arr.min()}, {arr.max()}]"))
    out = np.unique(arr.astype(np.int64))
    if out.size != arr.size:
        raise ParameterError(expected("indices", "distinct rows", f"{arr.size - out.size} duplicates"))
    return out


def _derive(seed: int, stream: int) -> int:
    """An independent 63-bit seed for ``stream`` (0 = init, 1 = data order) from ``seed``."""
    return int(np.random.SeedSequence([seed, stream]).generate_state(2, np.uint64)[0] >> 1)


def _indices_digest(indices: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(indices, dtype=np.int64).tobytes()).hexdigest()[:16]


def _param_groups(model: nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    decay: list[nn.Parameter] = []
    no_decay: list[nn.Parameter] = []
    for module in model.modules():
        for name, p in module.named_parameters(recurse=False):
            (decay if isinstance(module, nn.Linear) and name == "weight" else no_decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


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
        Seeds initialisation (:func:`~aria.bench.model.build_model`) and data order.
    out_dir : path, optional
        Where to save the model directory (see module docstring); written atomically.
    progress_bar : bool, optional
        Force the progress bar on/off (default: ``aria._progress`` rules).

    Returns
    -------
    TrainedModel
    """
    seg = _as_segments(segments)
    idx = _as_indices(indices, seg.shape[0])
    model_config = model_config or ModelConfig(max_len=int(seg.shape[1]))
    train_config = train_config or TrainConfig()
    seed = check_int("seed", seed, min_value=0)
    if seg.shape[1] > model_config.max_len:
        raise ParameterError(
            expected("segments", f"windows of <= max_len={model_config.max_len} tokens", seg.shape[1])
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
    data = seg[torch.from_numpy(idx)]
    order_gen = torch.Generator().manual_seed(_derive(seed, 1))
    losses = np.empty(total, dtype=np.float64)
    checkpoints: list[Checkpoint] = []

    with torch_threads(cfg.num_threads):
        model = build_model(model_config, seed=seed)
        model.train()
        opt = torch.optim.AdamW(_param_groups(model, cfg.weight_decay), lr=cfg.lr,
                                betas=(0.9, 0.98), eps=1e-8, foreach=False)
        step = 0
        bar = progress(total=total, desc=desc, unit="step", enabled=progress_bar, leave=False)
        for _epoch in range(cfg.epochs):
            perm = torch.randperm(n, generator=order_gen)
            for b in range(steps_per_epoch):
                step += 1
                lr = lr_at(step, total, cfg)
                for group in opt.param_groups:
                    group["lr"] = lr
                batch = data[perm[b * cfg.batch_size : (b + 1) * cfg.batch_size]]
                loss = loss_fn("sequence")(model, batch, reduction="mean")
                opt.zero_grad(set_to_none=True)
                loss.backward()
                if cfg.grad_clip > 0:
                    nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip, foreach=False)
                opt.step()
                losses[step - 1] = float(loss.detach())
                if not math.isfinite(losses[step - 1]):
                    bar.close()
                    raise DataError(f"training diverged at step {step} (loss {losses[step - 1]}); "
                                    "lower train_config.lr")
                if step in ckpt_at:
                    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
                    checkpoints.append(Checkpoint(step=step, lr=lr, state_dict=state))
                bar.update(1)
        bar.close()
    model.eval()
    result = TrainedModel(
        model=model, model_config=model_config, train_config=cfg, seed=seed, indices=idx,
        checkpoints=checkpoints, losses=losses, seconds=time.perf_counter() - t0,
    )
    if out_dir is not None:
        save_trained(result, out_dir)
    return result


def save_trained(result: TrainedModel, out_dir: str | os.PathLike[str]) -> Path:
    """Write ``result`` to ``out_dir`` (atomically, replacing it); return the directory."""
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
            indices_digest=_indices_digest(result.indices),
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
    """Load a model directory written by :func:`train_model` (all checkpoints included)."""
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
        model=model.eval(), model_config=model_config, train_config=TrainConfig(**man["train_config"]),
        seed=int(man["seed"]), indices=np.load(p / "indices.npy"), checkpoints=ckpts,
        losses=np.load(p / "losses.npy"), seconds=float(man.get("seconds") or 0.0), path=p,
    )


def load_model(path: str | os.PathLike[str], *, checkpoint: int | None = None) -> MusicTransformer:
    """Load the final model (or checkpoint number ``checkpoint``, 0-based) from a model directory."""
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


def _reusable(path: Path, want: dict[str, Any]) -> bool:
    """True if ``path`` holds a saved model made with exactly the settings in ``want``."""
    if not (path / "model.pt").is_file():
        return False
    try:
        man = _read_model_manifest(path)
    except FileFormatError:
        return False
    return all(man.get(k) == v for k, v in want.items())


def _train_or_reuse(
    seg: torch.Tensor, idx: np.ndarray, *, model_config: ModelConfig, train_config: TrainConfig,
    seed: int, out_dir: Path | None, desc: str, progress_bar: bool | None,
) -> TrainedModel:
    if out_dir is not None and _reusable(out_dir, {
        "model_config": model_config.to_dict(), "train_config": train_config.to_dict(),
        "seed": seed, "indices_digest": _indices_digest(idx),
    }):
        return load_trained(out_dir)
    return train_model(seg, indices=idx, model_config=model_config, train_config=train_config,
                       seed=seed, out_dir=out_dir, progress_bar=progress_bar, desc=desc)


_WORKER_SEGMENTS: torch.Tensor | None = None


def _init_worker(segments: np.ndarray) -> None:
    global _WORKER_SEGMENTS
    _WORKER_SEGMENTS = torch.from_numpy(segments)


def _train_job(job: tuple[np.ndarray, dict[str, Any], dict[str, Any], int, str]) -> str:
    """Worker side of :func:`_train_many`: train one model and save it to ``out_dir``."""
    idx, model_cfg, train_cfg, seed, out_dir = job
    if _WORKER_SEGMENTS is None:  # pragma: no cover - initializer always ran
        raise RuntimeError("worker started without segments")
    train_model(_WORKER_SEGMENTS, indices=idx, model_config=ModelConfig(**model_cfg),
                train_config=TrainConfig(**train_cfg), seed=seed, out_dir=out_dir, progress_bar=False)
    return out_dir


def _train_many(
    seg: torch.Tensor, jobs: list[tuple[np.ndarray, int, Path | None, str]], *,
    model_config: ModelConfig, train_config: TrainConfig, n_jobs: int,
    progress_bar: bool | None, desc: str,
) -> list[TrainedModel]:
    """Train (or reuse) one model per ``(indices, seed, out_dir, desc)`` job, ``n_jobs`` at a time.

    With ``n_jobs > 1`` each model trains in its own spawned process with the same pinned
    thread count, so results equal sequential training bitwise.
    """
    n_jobs = check_int("n_jobs", n_jobs, min_value=1)
    if n_jobs == 1 or len(jobs) <= 1:
        return [
            _train_or_reuse(seg, idx, model_config=model_config, train_config=train_config, seed=sd,
                            out_dir=od, desc=d, progress_bar=progress_bar)
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
            if od is not None and _reusable(od, {**want, "seed": sd, "indices_digest": _indices_digest(idx)}):
                out[j] = load_trained(od)
                bar.update(1)
            else:
                todo[j] = str(od) if od is not None else str(Path(scratch) / f"model-{j}")
        ctx = mp.get_context("spawn")  # no fork after torch has started its thread pools
        with ProcessPoolExecutor(min(n_jobs, max(len(todo), 1)), mp_context=ctx,
                                 initializer=_init_worker, initargs=(seg.numpy(),)) as pool:
            futures = {pool.submit(_train_job, (jobs[j][0], want["model_config"], want["train_config"],
                                                jobs[j][1], path)): j for j, path in todo.items()}
            for fut in as_completed(futures):
                j = futures[fut]
                res = load_trained(fut.result())
                if jobs[j][2] is None:  # trained in scratch space: keep it in memory only
                    res.path = None
                    res.checkpoints = [Checkpoint(c.step, c.lr, c.state_dict) for c in res.checkpoints]
                out[j] = res
                bar.update(1)
    bar.close()
    return [m for m in out if m is not None]


def sample_subsets(n_train: int, *, n_subsets: int = 32, fraction: float = 0.5, seed: int = 0) -> np.ndarray:
    """Random training subsets for LDS: ``(n_subsets, round(fraction * n_train))`` sorted rows.

    Row ``j`` is drawn without replacement by ``numpy.random.default_rng([seed, j])``, so a
    subset does not change when ``n_subsets`` grows.
    """
    n_train = check_int("n_train", n_train, min_value=2)
    n_subsets = check_int("n_subsets", n_subsets, min_value=1)
    fraction = check_float("fraction", fraction, min_value=0.0, max_value=1.0,
                           min_inclusive=False, max_inclusive=False)
    size = max(1, min(n_train - 1, round(fraction * n_train)))
    out = np.empty((n_subsets, size), dtype=np.int64)
    for j in range(n_subsets):
        out[j] = np.sort(np.random.default_rng([check_int("seed", seed, min_value=0), j])
                         .choice(n_train, size=size, replace=False))
    return out


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
    out_dir : path, optional
        Saves model ``j`` in ``out_dir/subset-{j:03d}`` plus ``out_dir/subsets.npy``; a model
        directory already there with the same settings and rows is reused (resumable).
    n_jobs : int
        Models trained in parallel processes (each with ``train_config.num_threads`` threads);
        the results equal ``n_jobs=1`` bitwise.
    """
    seg = _as_segments(segments)
    init = check_choice("init", init, ("shared", "per_subset"))
    seed = check_int("seed", seed, min_value=0)
    if subsets is None:
        subsets = sample_subsets(seg.shape[0], n_subsets=n_subsets, fraction=fraction, seed=seed)
    else:
        subsets = np.asarray(subsets)
        if subsets.ndim != 2:
            raise ParameterError(expected("subsets", "a 2-D array (n_subsets, size)", subsets.shape))
        subsets = np.stack([_as_indices(row, seg.shape[0]) for row in subsets])
    model_config = model_config or ModelConfig(max_len=int(seg.shape[1]))
    train_config = train_config or TrainConfig()
    root = Path(out_dir) if out_dir is not None else None
    if root is not None:
        root.mkdir(parents=True, exist_ok=True)
        with atomic_path(root / "subsets.npy") as tmp, open(tmp, "wb") as fh:
            np.save(fh, subsets)
    seeds = [seed if init == "shared" else seed + 1 + j for j in range(len(subsets))]
    jobs = [(subsets[j], seeds[j], None if root is None else root / f"subset-{j:03d}", f"subset {j}")
            for j in range(len(subsets))]
    models = _train_many(seg, jobs, model_config=model_config, train_config=train_config,
                         n_jobs=n_jobs, progress_bar=progress_bar, desc="LDS retrains")
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
) -> list[TrainedModel]:
    """Train ``n_models`` independently seeded models on the same data (TRAK ensemble).

    Member ``i`` is ``train_model(..., seed=seed + i)``: member 0 is the model trained with
    ``seed`` itself, so an existing main model can serve as member 0. With ``out_dir``, member
    ``i`` lives in ``out_dir/member-{i:02d}`` and finished members are reused. ``n_jobs`` as in
    :func:`retrain_subsets`.
    """
    seg = _as_segments(segments)
    n_models = check_int("n_models", n_models, min_value=1)
    seed = check_int("seed", seed, min_value=0)
    idx = _as_indices(indices, seg.shape[0])
    model_config = model_config or ModelConfig(max_len=int(seg.shape[1]))
    train_config = train_config or TrainConfig()
    root = Path(out_dir) if out_dir is not None else None
    jobs = [(idx, seed + i, None if root is None else root / f"member-{i:02d}", f"member {i}")
            for i in range(n_models)]
    return _train_many(seg, jobs, model_config=model_config, train_config=train_config,
                       n_jobs=n_jobs, progress_bar=progress_bar, desc="ensemble")


@torch.no_grad()
def evaluate_losses(
    model: nn.Module,
    tokens: np.ndarray | torch.Tensor,
    *,
    loss: str = "sequence",
    batch_size: int = 256,
    num_threads: int | None = None,
) -> np.ndarray:
    """Per-sequence loss of ``model`` on ``tokens`` ``(n, L)`` → ``(n,)`` float64.

    ``loss`` is ``"sequence"`` (:func:`~aria.bench.model.sequence_loss`) or ``"last_token"``
    (:func:`~aria.bench.model.last_token_loss`). The model is put in eval mode.
    """
    fn = loss_fn(loss)
    seg = _as_segments(tokens)
    batch_size = check_int("batch_size", batch_size, min_value=1)
    model.eval()
    ctx = torch_threads(num_threads) if num_threads is not None else contextlib.nullcontext()
    out = []
    with ctx:
        for start in range(0, seg.shape[0], batch_size):
            out.append(fn(model, seg[start : start + batch_size], reduction="none").double())
    return torch.cat(out).numpy()
