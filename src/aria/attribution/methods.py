r"""The six attribution methods of the paper through dattri 0.3.0, for any token model.

Each function takes the model architecture, its checkpoint(s), the training windows and the
query windows, and returns an :class:`AttributionResult` whose ``scores`` are
``(n_train, n_test)`` float32, **higher = more influential** (see :mod:`aria.attribution.task`).

============  ==========================================  ===================================
method        formula (paper appendix)                    dattri class / checkpoints
============  ==========================================  ===================================
TRAK          Eq. trak: mean over E models of             ``TRAKAttributor``; E independently
              :math:`\phi(q)^\top(\Phi^\top\Phi+\lambda     trained models (ensemble)
              I)^{-1}\phi(s)`, times mean :math:`1-p(s)`
TracIn        Eq. tracin: :math:`\sum_c \eta_c\,           ``TracInAttributor``; C checkpoints
              \phi_c(q)^\top\phi_c(s)`                     of one run, weights = learning rates
GradDot       Eq. graddot: :math:`\phi(q)^\top\phi(s)`    ``TracInAttributor``, 1 checkpoint,
                                                          weight 1, ``normalized_grad=False``
GradCos       Eq. gradcos: cosine of the two              ``TracInAttributor``, 1 checkpoint,
                                                          ``normalized_grad=True``
LoGra         Eq. logra: KFAC-projected gradients,        ``LoGraAttributor`` (nn.Linear layers)
              per-layer eFIM, damping :math:`c\bar\lambda`
FactGraSS     Eq. factgrass: random-mask then dense       ``FactGraSSAttributor``
              projection, eFIM, damping
============  ==========================================  ===================================

What dattri computes for TRAK, precisely: with :math:`g(x)` the per-sample gradient of the
margin :math:`f = \log\frac{p}{1-p}`, :math:`\tilde g = g/\sqrt{n_{params}}`,
:math:`\phi = P^\top\tilde g/\sqrt{k}` (``P`` dense Gaussian, ``k = proj_dim``, one ``P`` per
ensemble member), :math:`\Phi` the ``(n_train, k)`` matrix of training features,

.. math::

    \tau(s, q) = \Big[\frac{1}{E}\sum_{e=1}^{E} \phi_e(q)^\top(\Phi_e^\top\Phi_e + \lambda I)^{-1}
                 \phi_e(s)\Big]\cdot\frac{1}{E}\sum_{e=1}^{E}\big(1 - p_e(s)\big).

With ``proj_dim=None`` no projection is applied (:math:`\phi = \tilde g`).

Engines
-------
``engine="aria"`` (default) reproduces dattri's computation with three speed fixes that keep
the numbers: per-tensor ``torch.func`` gradients (:class:`~aria.attribution.task.FastAttributionTask`),
the projection matrix drawn once per model instead of once per batch
(:class:`~aria.attribution._features.Projector`), and the query gradients of TracIn / GradDot /
GradCos computed once per checkpoint instead of once per training batch. ``engine="dattri"``
runs dattri's own attributor classes on a plain ``AttributionTask`` (the reference the tests
compare against). LoGra and FactGraSS always run dattri's classes.
"""

from __future__ import annotations

import contextlib
import copy
import math
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from aria._checks import check_choice, check_float, check_int
from aria._progress import progress
from aria.attribution._features import (
    DEFAULT_MAX_PROJECTION_BYTES,
    Projector,
    iter_projected_gradients,
    projected_gradients,
    sqrt_n_params,
    train_correct_probs,
)
from aria.attribution.task import (
    LossLike,
    as_windows,
    build_task,
    import_dattri,
    load_checkpoints,
    loss_name,
    make_loader,
    nn,
    resolve_loss,
    single_sample_functions,
    torch,
)
from aria.errors import DataError, ParameterError, expected

__all__ = [
    "DEFAULTS",
    "METHODS",
    "AttributionResult",
    "factgrass",
    "grad_similarities",
    "gradcos",
    "graddot",
    "logra",
    "run_method",
    "run_methods",
    "tracin",
    "trak",
]

ENGINES = ("aria", "dattri")
PROJ_TYPES = ("normal", "rademacher")

#: Default hyper-parameters per method, chosen for the benchmark's model (~159k parameters,
#: 64-token windows) on a 2-core CPU (timings: ``benchmarks/bench_attribution.py``; see
#: ``src/aria/attribution/README.md``).
#: TracIn / GradDot / GradCos default to exact gradient inner products (``proj_dim=None``):
#: a dense projection costs 2·n_params·k flops per sample, more than the per-sample gradient
#: itself at k = 512, while the exact product costs 2·n_params·T per training window. The
#: paper's dattri runs projected to 512 (dattri's default) — pass ``proj_dim=512`` for that.
DEFAULTS: dict[str, dict[str, Any]] = {
    "TRAK": {"proj_dim": 512, "lam": 0.01},
    "TracIn": {"proj_dim": None},
    "GradDot": {"proj_dim": None},
    "GradCos": {"proj_dim": None},
    "LoGra": {"proj_dim": 256, "damping": 0.1},
    "FactGraSS": {"proj_dim": 256, "blowup": 4, "damping": 0.01},
}


@dataclass(frozen=True)
class AttributionResult:
    """Scores of one method plus what produced them.

    Attributes
    ----------
    scores : np.ndarray [shape=(n_train, n_test)], float32
        Higher = more influential.
    method : str
    parameters : dict
        Every hyper-parameter that changes the numbers (JSON-able).
    seed : int
        Projection seed.
    seconds : float
        Wall time of the computation.
    """

    scores: np.ndarray
    method: str
    parameters: dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    seconds: float = 0.0

    @property
    def shape(self) -> tuple[int, int]:
        return (int(self.scores.shape[0]), int(self.scores.shape[1]))

    def save(self, path: Any, *, row_ids: Any = None) -> Path:
        """Write the scores and their manifest (see :func:`aria.attribution.storage.save_attribution`)."""
        from aria.attribution.storage import save_attribution

        return save_attribution(
            self.scores, path, method=self.method, parameters=self.parameters, seed=self.seed,
            row_ids=row_ids, extra={"seconds": round(self.seconds, 3)},
        )


# ------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------


def _one(checkpoint: Any) -> list[Any]:
    """A single checkpoint as a one-element list (a list of several is an error)."""
    if isinstance(checkpoint, (list, tuple)):
        if len(checkpoint) != 1:
            raise ParameterError(expected("checkpoint", "one checkpoint", f"{len(checkpoint)} checkpoints"))
        return list(checkpoint)
    return [checkpoint]


def _check_proj_dim(value: Any, *, name: str = "proj_dim") -> int | None:
    if value is None:
        return None
    return check_int(name, value, min_value=1)


def _prepare(model: Any, train: Any, queries: Any) -> tuple[Any, Any, Any]:
    if not isinstance(model, nn.Module):
        raise ParameterError(expected("model", "a torch.nn.Module", type(model).__name__))
    train_t = as_windows(train, name="train")
    query_t = as_windows(queries, name="queries")
    return model, train_t, query_t


def _to_numpy(scores: Any, n_train: int, n_test: int, method: str) -> np.ndarray:
    out = scores.detach().cpu().numpy().astype(np.float32, copy=False)
    if out.shape != (n_train, n_test):  # pragma: no cover - would be a dattri contract break
        raise DataError(f"{method}: expected scores of shape {(n_train, n_test)}, got {out.shape}")
    if not np.isfinite(out).all():
        bad = int((~np.isfinite(out)).sum())
        raise DataError(
            f"{method}: {bad} non-finite score(s); lower the learning rates of the checkpoints, "
            "raise lam/damping, or use a smaller proj_dim"
        )
    return out


@contextlib.contextmanager
def _dattri_progress(enabled: bool | None) -> Iterator[None]:
    """Route dattri's internal tqdm bars through ARIA's progress setting while it runs."""
    names = (
        "dattri.algorithm.trak",
        "dattri.algorithm.tracin",
        "dattri.algorithm.block_projected_if.block_projected_if",
    )
    saved = []

    def _bar(iterable: Any = None, *args: Any, **kwargs: Any) -> Any:
        kwargs.pop("leave", None)
        return progress(iterable, desc=kwargs.pop("desc", None), total=kwargs.pop("total", None),
                        enabled=enabled, leave=False)

    for name in names:
        mod = import_dattri(name)
        saved.append((mod, mod.tqdm))
        mod.tqdm = _bar
    try:
        yield
    finally:
        for mod, orig in saved:
            mod.tqdm = orig


@contextlib.contextmanager
def _threads(n: int | None) -> Iterator[None]:
    """Pin torch's intra-op threads (``None`` = leave as is). One thread is the default: on a
    shared CPU, two threads contending with other processes made per-sample gradients 4-9x
    slower than one (measured here)."""
    if n is None:
        yield
        return
    from aria.bench.train import torch_threads

    with torch_threads(check_int("num_threads", n, min_value=1)):
        yield


class _Timer:
    def __enter__(self) -> _Timer:
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.seconds = time.perf_counter() - self.t0


# ------------------------------------------------------------------------------------------
# TRAK
# ------------------------------------------------------------------------------------------


class TrakAccumulator:
    r"""dattri TRAK's ensemble average, for several :math:`\lambda` at once.

    ``add(phi, psi, q)`` takes one ensemble member's training features ``phi`` ``(n, k)``,
    query features ``psi`` ``(T, k)`` and :math:`1-p(s)` ``q`` ``(n,)``; :meth:`scores` returns
    ``(n, T)``. The running averages are updated in dattri's order, so the result equals
    ``TRAKAttributor.cache(train); attribute(test)``.
    """

    def __init__(self, lams: Sequence[float]) -> None:
        self.lams = [float(v) for v in lams]
        self.count = 0
        self.running: dict[float, Any] = dict.fromkeys(self.lams, 0)
        self.q: Any = 0

    def add(self, phi: Any, psi: Any, q: Any) -> None:
        gram = phi.T @ phi
        for lam in self.lams:
            kernel = gram.clone()
            kernel.diagonal().add_(lam)
            inv_xtx_xt = torch.linalg.solve(kernel, phi.T)
            self.running[lam] = self.running[lam] * self.count + psi @ inv_xtx_xt
        self.q = self.q * self.count + q
        self.count += 1
        for lam in self.lams:
            self.running[lam] /= self.count
        self.q /= self.count

    def scores(self, lam: float) -> Any:
        return (self.running[float(lam)] * self.q.unsqueeze(0)).T


def check_trak_lam(lam: float, proj_dim: int | None, n_train: int, n_params: int) -> None:
    """``lam=0`` needs an invertible :math:`\\Phi^\\top\\Phi`: ``k < n_train``."""
    k = n_params if proj_dim is None else proj_dim
    if lam == 0.0 and k >= n_train:
        raise ParameterError(
            f"lam: expected lam > 0 when proj_dim ({k}) >= n_train ({n_train}) "
            "(Phi^T Phi is then singular), got 0.0"
        )


def trak_features(
    task: Any,
    train_loader: Any,
    query_loader: Any,
    *,
    ckpt_idx: int,
    projector: Projector | list[Projector],
    prob_fn: Callable[..., Any],
    progress_bar: bool | None = None,
) -> tuple[Any, Any, Any]:
    r"""One ensemble member's TRAK features: :math:`\Phi` ``(n, k)``, :math:`\Psi` ``(T, k)``, :math:`1-p` ``(n,)``.

    With a list of projectors, :math:`\Phi` and :math:`\Psi` are lists (one per projector)
    computed from the same gradients.
    """
    scale = sqrt_n_params(task)
    phi = projected_gradients(task, train_loader, ckpt_idx=ckpt_idx, which="loss", projector=projector,
                              scale=scale, desc=f"TRAK model {ckpt_idx}: train", progress_bar=progress_bar)
    q = 1.0 - train_correct_probs(task, train_loader, ckpt_idx=ckpt_idx, prob_fn=prob_fn)
    psi = projected_gradients(task, query_loader, ckpt_idx=ckpt_idx, which="target", projector=projector,
                              scale=scale, desc=f"TRAK model {ckpt_idx}: queries", progress_bar=progress_bar)
    return phi, psi, q


def trak(
    model: nn.Module,
    checkpoints: Any,
    train: Any,
    queries: Any,
    *,
    proj_dim: int | None = DEFAULTS["TRAK"]["proj_dim"],
    lam: float = DEFAULTS["TRAK"]["lam"],
    loss: LossLike = "sequence",
    target: LossLike = "last_token",
    proj_type: str = "normal",
    batch_size: int = 32,
    seed: int = 0,
    engine: str = "aria",
    max_projection_bytes: int = DEFAULT_MAX_PROJECTION_BYTES,
    num_threads: int | None = 1,
    progress: bool | None = None,
) -> AttributionResult:
    r"""TRAK (paper Eq. trak) over an ensemble of independently trained models.

    Parameters
    ----------
    model : nn.Module
        The architecture (tokens ``(B, L)`` → logits ``(B, L, V)``); not modified.
    checkpoints : list of state dicts or paths [length E]
        The final weights of E independently trained models (the paper: E = 10).
    train : array [shape=(n_train, L)], int64
        Training windows (rows of the score matrix).
    queries : array [shape=(n_test, L)], int64
        Query windows (columns).
    proj_dim : int or None
        Projection dimension :math:`k`; ``None`` = no projection.
    lam : float, >= 0
        Regularisation :math:`\lambda` added to :math:`\Phi^\top\Phi`.
    loss, target : {"sequence", "last_token"} or callable
        Per-sample loss of training windows / of queries; TRAK uses their margins
        :math:`\log\frac{p}{1-p}`, :math:`p = e^{-\ell}`.
    proj_type : {"normal", "rademacher"}
    batch_size : int
        Windows per per-sample-gradient batch.
    seed : int
        Projection seed (dattri's ``proj_seed``).
    engine : {"aria", "dattri"}
    max_projection_bytes : int
        Largest projection matrix kept between batches (``engine="aria"``).
    num_threads : int or None
        torch intra-op threads while computing (``None``: leave torch's setting).
    progress : bool, optional

    Returns
    -------
    AttributionResult
        ``scores`` ``(n_train, n_test)``.
    """
    model, train_t, query_t = _prepare(model, train, queries)
    proj_dim = _check_proj_dim(proj_dim)
    lam = check_float("lam", lam, min_value=0.0)
    check_choice("proj_type", proj_type, PROJ_TYPES)
    check_choice("engine", engine, ENGINES)
    batch_size = check_int("batch_size", batch_size, min_value=1)
    seed = check_int("seed", seed, min_value=0)
    ckpts = load_checkpoints(checkpoints)
    n_par = sum(p.numel() for p in model.parameters() if p.requires_grad)
    check_trak_lam(lam, proj_dim, int(train_t.shape[0]), n_par)
    projector = Projector(proj_dim=proj_dim, seed=seed, proj_type=proj_type, max_bytes=max_projection_bytes)
    train_loader = make_loader(train_t, batch_size=batch_size)
    query_loader = make_loader(query_t, batch_size=batch_size)
    task = build_task(model, ckpts, loss=loss, target=target, objective="margin", fast=engine == "aria")
    prob_fn = single_sample_functions(task.get_model(), loss)["prob"]
    with _threads(num_threads), _Timer() as timer:
        if engine == "dattri":
            TRAKAttributor = import_dattri("dattri.algorithm.trak").TRAKAttributor

            attributor = TRAKAttributor(task, correct_probability_func=prob_fn,
                                        projector_kwargs=None, device="cpu", regularization=lam)
            attributor.projector_kwargs = dict(projector.kwargs)  # never mutate dattri's defaults
            with _dattri_progress(progress), torch.no_grad():
                attributor.cache(train_loader)
                scores = attributor.attribute(query_loader)
        else:
            acc = TrakAccumulator([lam])
            for c in range(len(ckpts)):
                phi, psi, q = trak_features(task, train_loader, query_loader, ckpt_idx=c,
                                            projector=projector, prob_fn=prob_fn,
                                            progress_bar=progress)
                acc.add(phi, psi, q)
                del phi, psi
            projector.release()
            scores = acc.scores(lam)
    params = {
        "proj_dim": proj_dim, "lam": lam, "n_models": len(ckpts), "loss": loss_name(loss),
        "target": loss_name(target), "proj_type": proj_type, "engine": engine,
    }
    out = _to_numpy(scores, int(train_t.shape[0]), int(query_t.shape[0]), "TRAK")
    return AttributionResult(out, "TRAK", params, seed, timer.seconds)


# ------------------------------------------------------------------------------------------
# TracIn / GradDot / GradCos
# ------------------------------------------------------------------------------------------


def _tracin_family(
    variants: dict[str, bool],
    model: nn.Module,
    checkpoints: Any,
    weights: Sequence[float],
    train: Any,
    queries: Any,
    *,
    proj_dim: int | None,
    loss: LossLike,
    target: LossLike,
    proj_type: str,
    batch_size: int,
    seed: int,
    engine: str,
    max_projection_bytes: int,
    num_threads: int | None,
    progress_bar: bool | None,
) -> dict[str, AttributionResult]:
    """TracIn-style scores for several variants (method → ``normalized_grad``) from ONE pass
    over the per-checkpoint gradients (engine "aria"); the dattri engine runs each variant."""
    model, train_t, query_t = _prepare(model, train, queries)
    proj_dim = _check_proj_dim(proj_dim)
    check_choice("proj_type", proj_type, PROJ_TYPES)
    check_choice("engine", engine, ENGINES)
    batch_size = check_int("batch_size", batch_size, min_value=1)
    seed = check_int("seed", seed, min_value=0)
    ckpts = load_checkpoints(checkpoints)
    if len(weights) != len(ckpts):
        raise ParameterError(expected("learning_rates", f"{len(ckpts)} value(s), one per checkpoint", len(weights)))
    w = [check_float(f"learning_rates[{i}]", v) for i, v in enumerate(weights)]
    projector = Projector(proj_dim=proj_dim, seed=seed, proj_type=proj_type, max_bytes=max_projection_bytes)
    train_loader = make_loader(train_t, batch_size=batch_size)
    query_loader = make_loader(query_t, batch_size=batch_size)
    task = build_task(model, ckpts, loss=loss, target=target, objective="loss", fast=engine == "aria")
    normalize = torch.nn.functional.normalize
    name = "/".join(variants)
    scores: dict[str, Any] = {}
    with _threads(num_threads), _Timer() as timer:
        if engine == "dattri":
            TracInAttributor = import_dattri("dattri.algorithm.tracin").TracInAttributor

            for method, normalized in variants.items():
                attributor = TracInAttributor(task, weight_list=torch.tensor(w), normalized_grad=normalized,
                                              projector_kwargs=None, device="cpu")
                attributor.projector_kwargs = None if proj_dim is None else dict(projector.kwargs)
                with _dattri_progress(progress_bar), torch.no_grad():
                    scores[method] = attributor.attribute(train_loader, query_loader)
        else:
            for method in variants:
                scores[method] = torch.zeros(int(train_t.shape[0]), int(query_t.shape[0]))
            for c, weight in enumerate(w):
                # the query side once per checkpoint (dattri recomputes it for every train batch)
                psi = projected_gradients(task, query_loader, ckpt_idx=c, which="target", projector=projector,
                                          desc=f"{name} ckpt {c}: queries", progress_bar=progress_bar)
                psi_n = normalize(psi)
                row = 0
                for phi in iter_projected_gradients(task, train_loader, ckpt_idx=c, which="loss",
                                                    projector=projector, desc=f"{name} ckpt {c}: train",
                                                    progress_bar=progress_bar):
                    rows = slice(row, row + phi.shape[0])
                    for method, normalized in variants.items():
                        if normalized:
                            scores[method][rows] += normalize(phi) @ psi_n.T * weight
                        else:
                            scores[method][rows] += phi @ psi.T * weight
                    row += phi.shape[0]
                del psi, psi_n
            projector.release()
    out = {}
    for method, normalized in variants.items():
        params = {
            "proj_dim": proj_dim, "n_checkpoints": len(ckpts), "weights": w, "normalized_grad": normalized,
            "loss": loss_name(loss), "target": loss_name(target), "proj_type": proj_type, "engine": engine,
        }
        arr = _to_numpy(scores[method], int(train_t.shape[0]), int(query_t.shape[0]), method)
        out[method] = AttributionResult(arr, method, params, seed, timer.seconds)
    return out


def tracin(
    model: nn.Module,
    checkpoints: Any,
    train: Any,
    queries: Any,
    *,
    learning_rates: Sequence[float],
    proj_dim: int | None = DEFAULTS["TracIn"]["proj_dim"],
    loss: LossLike = "sequence",
    target: LossLike = "last_token",
    proj_type: str = "normal",
    batch_size: int = 32,
    seed: int = 0,
    engine: str = "aria",
    max_projection_bytes: int = DEFAULT_MAX_PROJECTION_BYTES,
    num_threads: int | None = 1,
    progress: bool | None = None,
) -> AttributionResult:
    r"""TracIn (paper Eq. tracin): :math:`\sum_c \eta_c\,\phi_c(q)^\top\phi_c(s)`.

    Parameters
    ----------
    checkpoints : list of state dicts or paths [length C]
        Checkpoints saved along ONE training run.
    learning_rates : sequence of float [length C]
        :math:`\eta_c`, the learning rate in force at each checkpoint.
    proj_dim : int or None
        Projection dimension (one projection per checkpoint, dattri's ``ensemble_id``);
        ``None`` = raw gradients.

    Other parameters are as in :func:`trak`.
    """
    return _tracin_family({"TracIn": False}, model, checkpoints, list(learning_rates), train, queries,
                          proj_dim=proj_dim, loss=loss, target=target,
                          proj_type=proj_type, batch_size=batch_size, seed=seed, engine=engine,
                          max_projection_bytes=max_projection_bytes, num_threads=num_threads,
                          progress_bar=progress)["TracIn"]


def graddot(
    model: nn.Module,
    checkpoint: Any,
    train: Any,
    queries: Any,
    *,
    proj_dim: int | None = DEFAULTS["GradDot"]["proj_dim"],
    loss: LossLike = "sequence",
    target: LossLike = "last_token",
    proj_type: str = "normal",
    batch_size: int = 32,
    seed: int = 0,
    engine: str = "aria",
    max_projection_bytes: int = DEFAULT_MAX_PROJECTION_BYTES,
    num_threads: int | None = 1,
    progress: bool | None = None,
) -> AttributionResult:
    r"""GradDot (paper Eq. graddot): :math:`\phi(q)^\top\phi(s)` at one checkpoint.

    ``checkpoint`` is one state dict or path (the final model). Other parameters as in :func:`trak`.
    """
    return _tracin_family({"GradDot": False}, model, _one(checkpoint), [1.0], train, queries,
                          proj_dim=proj_dim, loss=loss,
                          target=target, proj_type=proj_type, batch_size=batch_size, seed=seed,
                          engine=engine, max_projection_bytes=max_projection_bytes, num_threads=num_threads,
                          progress_bar=progress)["GradDot"]


def gradcos(
    model: nn.Module,
    checkpoint: Any,
    train: Any,
    queries: Any,
    *,
    proj_dim: int | None = DEFAULTS["GradCos"]["proj_dim"],
    loss: LossLike = "sequence",
    target: LossLike = "last_token",
    proj_type: str = "normal",
    batch_size: int = 32,
    seed: int = 0,
    engine: str = "aria",
    max_projection_bytes: int = DEFAULT_MAX_PROJECTION_BYTES,
    num_threads: int | None = 1,
    progress: bool | None = None,
) -> AttributionResult:
    r"""GradCos (paper Eq. gradcos): :math:`\frac{\phi(q)^\top\phi(s)}{\lVert\phi(q)\rVert\lVert\phi(s)\rVert}`.

    Scores lie in [-1, 1]. ``checkpoint`` is one state dict or path. Other parameters as in :func:`trak`.
    """
    return _tracin_family({"GradCos": True}, model, _one(checkpoint), [1.0], train, queries,
                          proj_dim=proj_dim, loss=loss,
                          target=target, proj_type=proj_type, batch_size=batch_size, seed=seed,
                          engine=engine, max_projection_bytes=max_projection_bytes, num_threads=num_threads,
                          progress_bar=progress)["GradCos"]


def grad_similarities(
    model: nn.Module,
    checkpoint: Any,
    train: Any,
    queries: Any,
    *,
    proj_dim: int | None = DEFAULTS["GradDot"]["proj_dim"],
    loss: LossLike = "sequence",
    target: LossLike = "last_token",
    proj_type: str = "normal",
    batch_size: int = 32,
    seed: int = 0,
    engine: str = "aria",
    max_projection_bytes: int = DEFAULT_MAX_PROJECTION_BYTES,
    num_threads: int | None = 1,
    progress: bool | None = None,
) -> dict[str, AttributionResult]:
    """GradDot and GradCos from one pass over the gradients (they share them exactly).

    Returns ``{"GradDot": ..., "GradCos": ...}``, each equal to :func:`graddot` /
    :func:`gradcos` with the same arguments; both record the shared wall time.
    """
    return _tracin_family({"GradDot": False, "GradCos": True}, model, _one(checkpoint), [1.0], train,
                          queries, proj_dim=proj_dim, loss=loss, target=target, proj_type=proj_type,
                          batch_size=batch_size, seed=seed, engine=engine,
                          max_projection_bytes=max_projection_bytes, num_threads=num_threads,
                          progress_bar=progress)


# ------------------------------------------------------------------------------------------
# LoGra / FactGraSS (dattri's hook-based block-projected influence functions)
# ------------------------------------------------------------------------------------------


class _LossOutput:
    """What the wrapped model returns: dattri uses ``outputs.loss`` for the query gradient."""

    __slots__ = ("loss",)

    def __init__(self, loss: Any) -> None:
        self.loss = loss


class TargetLossModel(nn.Module):
    r"""Wraps a token model so that ``model(tokens=...)`` returns an object with ``.loss``.

    dattri 0.3.0's LoGra / FactGraSS compute the query gradient from ``model(**batch).loss``
    (or, for tuple batches, a hard-coded cross-entropy on ``model(x)``). The wrapper returns
    the *batch mean* of the per-query target loss: dattri's compressors multiply the captured
    layer gradients by the batch size, so a batch mean yields exact per-sample gradients.
    """

    def __init__(self, inner: nn.Module, target: Callable[..., Any]) -> None:
        super().__init__()
        self.inner = inner
        self._target = target

    def forward(self, tokens: Any) -> _LossOutput:
        return _LossOutput(self._target(self.inner, tokens).mean())


def _block_projected(
    method: str,
    model: nn.Module,
    checkpoint: Any,
    train: Any,
    queries: Any,
    *,
    sparsifier_kwargs: dict[str, Any],
    projector_kwargs: dict[str, Any],
    hessian: str,
    damping: float | None,
    loss: LossLike,
    target: LossLike,
    batch_size: int,
    layer_names: list[str] | None,
    num_threads: int | None,
    progress_bar: bool | None,
) -> tuple[Any, float]:
    """Run dattri's BlockProjectedIFAttributor with the 0.3.0 workarounds; return (scores, seconds)."""
    from dattri.task import AttributionTask

    block_if = import_dattri("dattri.algorithm.block_projected_if.block_projected_if")

    ckpts = load_checkpoints(checkpoint)
    if len(ckpts) != 1:
        raise ParameterError(expected("checkpoint", "exactly one checkpoint", len(ckpts)))
    train_fn = resolve_loss(loss)
    target_fn = resolve_loss(target, name="target")
    inner = copy.deepcopy(model).cpu()  # dattri's hooks monkey-patch the layers they touch
    inner.load_state_dict(ckpts[0])
    wrapped = TargetLossModel(inner, target_fn).eval()
    names = layer_names or [f"inner.{n}" for n, m in inner.named_modules() if isinstance(m, nn.Linear)]
    if not names:
        raise ParameterError(expected("model", f"at least one nn.Linear layer ({method} hooks only those)", "none"))

    def train_loss(model_: nn.Module, batch: dict[str, Any], device: str) -> Any:
        return train_fn(model_.inner, batch["tokens"].to(device)).mean()

    task = AttributionTask(loss_func=train_loss, model=wrapped,
                           checkpoints=[{k: v.clone() for k, v in wrapped.state_dict().items()}])
    train_loader = make_loader(train, batch_size=batch_size, as_dict=True)
    query_loader = make_loader(queries, batch_size=batch_size, as_dict=True)
    with tempfile.TemporaryDirectory(prefix="aria-blockif-") as cache_dir, _threads(num_threads), \
            _Timer() as timer:
        attributor = block_if.BlockProjectedIFAttributor(
            task, layer_names=names, hessian=hessian, damping=damping, device="cpu",
            sparsifier_kwargs=dict(sparsifier_kwargs), projector_kwargs=dict(projector_kwargs),
            offload="cpu", cache_dir=cache_dir,
        )
        # Build the compressors from a real batch (dict batches call model(**batch), which
        # sidesteps 0.3.0's `sample_inputs[0]` un-batching of tuple batches).
        attributor._setup_compressors(train_loader)
        with _dattri_progress(progress_bar), torch._dynamo.config.patch(disable=True), \
                warnings.catch_warnings():
            # torch.compile of dattri's compressor is disabled (TORCHDYNAMO_DISABLE=1 in effect);
            # dattri asks for pinned memory, which has no meaning without an accelerator.
            warnings.filterwarnings("ignore", message=".*pin_memory.*")
            attributor.cache(train_loader)
            scores = attributor.attribute(train_loader, query_loader)
    return scores, timer.seconds


def _check_square(name: str, value: int) -> int:
    root = math.isqrt(value)
    if root * root != value:
        raise ParameterError(expected(name, "a perfect square (the projection is a Kronecker product of two equal factors)", value))
    return root


def logra(
    model: nn.Module,
    checkpoint: Any,
    train: Any,
    queries: Any,
    *,
    proj_dim: int = DEFAULTS["LoGra"]["proj_dim"],
    damping: float = DEFAULTS["LoGra"]["damping"],
    loss: LossLike = "sequence",
    target: LossLike = "last_token",
    batch_size: int = 32,
    seed: int = 0,
    layer_names: list[str] | None = None,
    num_threads: int | None = 1,
    progress: bool | None = None,
) -> AttributionResult:
    r"""LoGra (paper Eq. logra) through dattri's ``LoGraAttributor`` configuration.

    Each ``nn.Linear`` layer's gradient :math:`\delta x^\top` is projected as
    :math:`(P_o\delta)(P_i x)^\top` with Gaussian :math:`P_o, P_i` of :math:`\sqrt{k}` rows
    (``k = proj_dim`` per layer), the per-layer empirical Fisher of the projected training
    gradients is inverted with damping :math:`c\,\bar\lambda` (``damping`` = c, relative to the
    mean eigenvalue), and :math:`\tau = \phi(q)^\top (F + c\bar\lambda I)^{-1}\phi(s)` summed over
    layers.

    Parameters
    ----------
    proj_dim : int
        Per-layer projected dimension; a perfect square.
    damping : float, > 0
        Relative damping c (paper: 0.1).
    layer_names : list of str, optional
        Linear layers to use (names inside the wrapper: ``"inner." + name``); default all.

    Other parameters as in :func:`trak`.
    """
    model, train_t, query_t = _prepare(model, train, queries)
    proj_dim = check_int("proj_dim", proj_dim, min_value=1)
    root = _check_square("proj_dim", proj_dim)
    damping = check_float("damping", damping, min_value=0.0, min_inclusive=False)
    batch_size = check_int("batch_size", batch_size, min_value=1)
    seed = check_int("seed", seed, min_value=0)
    sparsifier = {"device": "cpu", "proj_dim": root, "proj_max_batch_size": 64, "proj_type": "normal", "proj_seed": seed}
    projector = {"device": "cpu", "proj_dim": -1, "proj_max_batch_size": 64, "proj_type": "identity", "proj_seed": seed}
    scores, seconds = _block_projected(
        "LoGra", model, checkpoint, train_t, query_t, sparsifier_kwargs=sparsifier, projector_kwargs=projector,
        hessian="eFIM", damping=damping, loss=loss, target=target, batch_size=batch_size,
        layer_names=layer_names, num_threads=num_threads, progress_bar=progress,
    )
    params = {"proj_dim": proj_dim, "damping": damping, "hessian": "eFIM", "loss": loss_name(loss),
              "target": loss_name(target), "layers": "all nn.Linear" if layer_names is None else layer_names}
    out = _to_numpy(scores, int(train_t.shape[0]), int(query_t.shape[0]), "LoGra")
    return AttributionResult(out, "LoGra", params, seed, seconds)


def factgrass(
    model: nn.Module,
    checkpoint: Any,
    train: Any,
    queries: Any,
    *,
    proj_dim: int = DEFAULTS["FactGraSS"]["proj_dim"],
    blowup: int = DEFAULTS["FactGraSS"]["blowup"],
    damping: float = DEFAULTS["FactGraSS"]["damping"],
    loss: LossLike = "sequence",
    target: LossLike = "last_token",
    batch_size: int = 32,
    seed: int = 0,
    layer_names: list[str] | None = None,
    num_threads: int | None = 1,
    progress: bool | None = None,
) -> AttributionResult:
    r"""FactGraSS (paper Eq. factgrass) through dattri's ``FactGraSSAttributor`` configuration.

    Per ``nn.Linear`` layer: random-mask sparsification of both Kronecker factors to
    :math:`\sqrt{k b}` entries each (``b = blowup``), their outer product, then a dense
    projection to ``k = proj_dim`` (SJLT on CUDA; dattri uses a Gaussian on CPU); eFIM with
    relative damping, as LoGra.

    Parameters
    ----------
    proj_dim : int
        Per-layer output dimension k.
    blowup : int
        Blow-up factor b; ``proj_dim * blowup`` must be a perfect square.
    damping : float, > 0
        Relative damping (paper: 0.01).

    Other parameters as in :func:`logra`.
    """
    model, train_t, query_t = _prepare(model, train, queries)
    proj_dim = check_int("proj_dim", proj_dim, min_value=1)
    blowup = check_int("blowup", blowup, min_value=1)
    root = _check_square("proj_dim * blowup", proj_dim * blowup)
    damping = check_float("damping", damping, min_value=0.0, min_inclusive=False)
    batch_size = check_int("batch_size", batch_size, min_value=1)
    seed = check_int("seed", seed, min_value=0)
    sparsifier = {"device": "cpu", "proj_dim": root, "proj_max_batch_size": 64, "proj_type": "random_mask", "proj_seed": seed}
    projector = {"device": "cpu", "proj_dim": proj_dim, "proj_max_batch_size": 64, "proj_type": "normal", "proj_seed": seed}
    scores, seconds = _block_projected(
        "FactGraSS", model, checkpoint, train_t, query_t, sparsifier_kwargs=sparsifier, projector_kwargs=projector,
        hessian="eFIM", damping=damping, loss=loss, target=target, batch_size=batch_size,
        layer_names=layer_names, num_threads=num_threads, progress_bar=progress,
    )
    params = {"proj_dim": proj_dim, "blowup": blowup, "damping": damping, "hessian": "eFIM",
              "loss": loss_name(loss), "target": loss_name(target),
              "layers": "all nn.Linear" if layer_names is None else layer_names}
    out = _to_numpy(scores, int(train_t.shape[0]), int(query_t.shape[0]), "FactGraSS")
    return AttributionResult(out, "FactGraSS", params, seed, seconds)


# ------------------------------------------------------------------------------------------
# registry
# ------------------------------------------------------------------------------------------

#: Method name → function. TRAK takes ``checkpoints`` (ensemble), TracIn ``checkpoints`` +
#: ``learning_rates`` (one run), the others one ``checkpoint``.
METHODS: dict[str, Callable[..., AttributionResult]] = {
    "TRAK": trak,
    "TracIn": tracin,
    "GradDot": graddot,
    "GradCos": gradcos,
    "LoGra": logra,
    "FactGraSS": factgrass,
}


def run_method(
    method: str,
    model: nn.Module,
    train: Any,
    queries: Any,
    *,
    ensemble: Sequence[Any] | None = None,
    trajectory: Sequence[Any] | None = None,
    learning_rates: Sequence[float] | None = None,
    final: Any = None,
    out: Any = None,
    row_ids: Any = None,
    **options: Any,
) -> AttributionResult:
    """Run ``method`` with the checkpoints it needs, optionally saving the score matrix.

    Parameters
    ----------
    method : {"TRAK", "TracIn", "GradDot", "GradCos", "LoGra", "FactGraSS"}
    ensemble : list of checkpoints
        Independently trained models (TRAK).
    trajectory, learning_rates : list of checkpoints, list of float
        Checkpoints of one run and the learning rate at each (TracIn).
    final : checkpoint
        The final model (GradDot, GradCos, LoGra, FactGraSS).
    out : path, optional
        Save the scores there (``.npy`` / ``.zarr``) with a manifest.
    row_ids : array of str, optional
        Training-segment ids recorded with the saved matrix.
    **options
        Keyword options of the method's function (``proj_dim``, ``lam``, ``batch_size``, ...).
    """
    check_choice("method", method, tuple(METHODS))
    fn = METHODS[method]
    if method == "TRAK":
        if not ensemble:
            raise ParameterError(expected("ensemble", "a non-empty list of checkpoints for TRAK", ensemble))
        result = fn(model, list(ensemble), train, queries, **options)
    elif method == "TracIn":
        if not trajectory or learning_rates is None:
            raise ParameterError(expected("trajectory", "checkpoints and learning_rates for TracIn", trajectory))
        result = fn(model, list(trajectory), train, queries, learning_rates=list(learning_rates), **options)
    else:
        if final is None:
            raise ParameterError(expected("final", f"the final checkpoint for {method}", None))
        result = fn(model, final, train, queries, **options)
    if out is not None:
        result.save(out, row_ids=row_ids)
    return result


def run_methods(
    methods: Sequence[str],
    model: nn.Module,
    train: Any,
    queries: Any,
    *,
    ensemble: Sequence[Any] | None = None,
    trajectory: Sequence[Any] | None = None,
    learning_rates: Sequence[float] | None = None,
    final: Any = None,
    options: dict[str, dict[str, Any]] | None = None,
    common: dict[str, Any] | None = None,
    out_dir: Any = None,
    row_ids: Any = None,
) -> dict[str, AttributionResult]:
    """Run several methods, sharing work where the numbers allow, and save each matrix.

    GradDot and GradCos are computed from one pass over the same gradients when both are
    asked for with the same options (:func:`grad_similarities`).

    Parameters
    ----------
    methods : sequence of method names (see :data:`METHODS`)
    ensemble, trajectory, learning_rates, final :
        Checkpoints, as in :func:`run_method`.
    options : dict, optional
        Per-method keyword options, e.g. ``{"TRAK": {"proj_dim": 512, "lam": 0.01}}``.
    common : dict, optional
        Options for every method (``loss``, ``target``, ``batch_size``, ``seed``,
        ``num_threads``, ``progress``); per-method options win.
    out_dir : path, optional
        Write ``<out_dir>/<method>.npy`` with its manifest.
    row_ids : array of str, optional
        Training-segment ids stored with each matrix.

    Returns
    -------
    dict
        Method name → :class:`AttributionResult`, in the order asked.
    """
    names = [check_choice("methods[]", m, tuple(METHODS)) for m in methods]
    if len(set(names)) != len(names):
        raise ParameterError(expected("methods", "distinct method names", list(methods)))
    options = dict(options or {})
    unknown = set(options) - set(METHODS)
    if unknown:
        raise ParameterError(expected("options", f"keys among {tuple(METHODS)}", sorted(unknown)))
    common = dict(common or {})

    def opts(m: str) -> dict[str, Any]:
        out = dict(common)
        out.update(options.get(m, {}))
        if m in ("LoGra", "FactGraSS"):
            for key in ("engine", "proj_type", "max_projection_bytes"):
                out.pop(key, None)
        return out

    results: dict[str, AttributionResult] = {}
    if "GradDot" in names and "GradCos" in names and opts("GradDot") == opts("GradCos"):
        if final is None:
            raise ParameterError(expected("final", "the final checkpoint for GradDot/GradCos", None))
        results.update(grad_similarities(model, final, train, queries, **opts("GradDot")))
    for m in names:
        if m not in results:
            results[m] = run_method(m, model, train, queries, ensemble=ensemble, trajectory=trajectory,
                                    learning_rates=learning_rates, final=final, **opts(m))
    if out_dir is not None:
        for m in names:
            results[m].save(Path(out_dir) / f"{m}.npy", row_ids=row_ids)
    return {m: results[m] for m in names}

