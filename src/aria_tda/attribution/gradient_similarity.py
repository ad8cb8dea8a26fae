r"""TracIn, GradDot and GradCos (paper Eqs. tracin, graddot, gradcos) through dattri 0.3.0.

All three are inner products of per-sample loss gradients :math:`\phi` (projected or not):

- TracIn: :math:`\sum_c \eta_c\,\phi_c(q)^\top\phi_c(s)` over C checkpoints of ONE training
  run, weighted by the learning rate in force at each (dattri's ``TracInAttributor``);
- GradDot: :math:`\phi(q)^\top\phi(s)` at the final checkpoint (weight 1);
- GradCos: their cosine, :math:`\frac{\phi(q)^\top\phi(s)}{\lVert\phi(q)\rVert\lVert\phi(s)\rVert}`.

They default to exact inner products (``proj_dim=None``): a dense projection costs
:math:`2\,n_{params}\,k` flops per sample, more than the per-sample gradient itself at
``k = 512`` for the benchmark model; pass ``proj_dim=512`` for dattri's default.

``engine="aria"`` computes the query gradients once per checkpoint (dattri recomputes them for
every training batch) and GradDot + GradCos from one pass (:func:`grad_similarities`);
``engine="dattri"`` runs ``TracInAttributor`` itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from aria_tda._checks import check_float
from aria_tda._options import option
from aria_tda.attribution.base import (
    AttributionResult,
    ProjectionArgs,
    Stopwatch,
    dattri_progress,
    prepare_inputs,
    resolve_args,
    scores_to_numpy,
    single_checkpoint,
)
from aria_tda.attribution.gradient_projection import (
    Projector,
    iter_projected_gradients,
    projected_gradients,
)
from aria_tda.attribution.task import (
    build_task,
    import_dattri,
    load_checkpoints,
    make_loader,
    nn,
    torch,
)
from aria_tda.attribution.threads import pinned_threads
from aria_tda.errors import ParameterError, expected

__all__ = ["GradientArgs", "grad_similarities", "gradcos", "graddot", "tracin"]


@dataclass(frozen=True)
class GradientArgs(ProjectionArgs):
    """Arguments of :func:`tracin`, :func:`graddot`, :func:`gradcos`, :func:`grad_similarities`.

    The fields of :class:`~aria_tda.attribution.base.ProjectionArgs` (``loss``, ``target``,
    ``batch_size``, ``seed``, ``num_threads``, ``device``, ``progress``, ``proj_type``,
    ``engine``, ``max_projection_bytes``) plus the one below.

    Attributes
    ----------
    proj_dim : int or None
        Projection dimension (one projection per checkpoint, dattri's ``ensemble_id``);
        default ``None``: exact gradient inner products.
    """

    tuned: ClassVar[tuple[str, ...]] = ("proj_dim",)

    proj_dim: int | None = option(None, kind="int", min_value=1,
                                  help="projection dimension k (None: exact gradient products; "
                                       "one projection per checkpoint)")



def _gradient_scores(
    variants: dict[str, bool],
    model: Any,
    checkpoints: Any,
    weights: Sequence[float],
    train: Any,
    queries: Any,
    a: GradientArgs,
) -> dict[str, AttributionResult]:
    """TracIn-style scores for several variants (method → ``normalized_grad``) from ONE pass
    over the per-checkpoint gradients (engine "aria"); the dattri engine runs each variant."""
    model, train_t, query_t = prepare_inputs(model, train, queries)
    ckpts = load_checkpoints(checkpoints)
    if len(weights) != len(ckpts):
        what = f"{len(ckpts)} value(s), one per checkpoint"
        raise ParameterError(expected("learning_rates", what, len(weights)))
    w = [check_float(f"learning_rates[{i}]", v) for i, v in enumerate(weights)]
    projector = Projector(proj_dim=a.proj_dim, seed=a.seed, proj_type=a.proj_type,
                          max_bytes=a.max_projection_bytes, device=a.device)
    train_loader = make_loader(train_t, batch_size=a.batch_size)
    query_loader = make_loader(query_t, batch_size=a.batch_size)
    task = build_task(model, ckpts, loss=a.loss, target=a.target, objective="loss",
                      fast=a.engine == "aria", device=a.device)
    normalize = torch.nn.functional.normalize
    name = "/".join(variants)
    n_train, n_test = int(train_t.shape[0]), int(query_t.shape[0])
    scores: dict[str, Any] = {}
    with pinned_threads(a.num_threads), Stopwatch() as timer:
        if a.engine == "dattri":
            TracInAttributor = import_dattri("dattri.algorithm.tracin").TracInAttributor

            for method, normalized in variants.items():
                attributor = TracInAttributor(task, weight_list=torch.tensor(w),
                                              normalized_grad=normalized, projector_kwargs=None,
                                              device=a.device)
                attributor.projector_kwargs = (
                    None if a.proj_dim is None else dict(projector.kwargs)
                )
                with dattri_progress(a.progress), torch.no_grad():
                    scores[method] = attributor.attribute(train_loader, query_loader)
        else:
            for method in variants:
                scores[method] = torch.zeros(n_train, n_test, device=a.device)
            for c, weight in enumerate(w):
                # the query side once per checkpoint (dattri recomputes it for every train batch)
                psi = projected_gradients(task, query_loader, ckpt_idx=c, which="target",
                                          projector=projector, desc=f"{name} ckpt {c}: queries",
                                          progress_bar=a.progress)
                psi_n = normalize(psi)
                row = 0
                for phi in iter_projected_gradients(task, train_loader, ckpt_idx=c, which="loss",
                                                    projector=projector,
                                                    desc=f"{name} ckpt {c}: train",
                                                    progress_bar=a.progress):
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
        params = {**a.to_dict(), "n_checkpoints": len(ckpts), "weights": w,
                  "normalized_grad": normalized}
        arr = scores_to_numpy(scores[method], n_train, n_test, method)
        out[method] = AttributionResult(arr, method, params, a.seed, timer.seconds)
    return out


def tracin(
    model: nn.Module,
    checkpoints: Any,
    train: Any,
    queries: Any,
    *,
    learning_rates: Sequence[float],
    args: GradientArgs | None = None,
) -> AttributionResult:
    r"""TracIn (paper Eq. tracin): :math:`\sum_c \eta_c\,\phi_c(q)^\top\phi_c(s)`.

    Parameters
    ----------
    model : nn.Module
        The architecture; not modified.
    checkpoints : list of state dicts or paths [length C]
        Checkpoints saved along ONE training run.
    train : array [shape=(n_train, L)], int64
        Training windows (rows of the score matrix).
    queries : array [shape=(n_test, L)], int64
        Query windows (columns).
    learning_rates : sequence of float [length C]
        :math:`\eta_c`, the learning rate in force at each checkpoint.
    args : GradientArgs, optional
        The options (:class:`GradientArgs` lists them: ``proj_dim``, ``loss``, ``target``,
        ``engine``, ``device``, ...); default ``GradientArgs()``.
    """
    a = resolve_args(GradientArgs, args, "TracIn")
    return _gradient_scores({"TracIn": False}, model, checkpoints, list(learning_rates), train,
                            queries, a)["TracIn"]


def graddot(
    model: nn.Module,
    checkpoint: Any,
    train: Any,
    queries: Any,
    *,
    args: GradientArgs | None = None,
) -> AttributionResult:
    r"""GradDot (paper Eq. graddot): :math:`\phi(q)^\top\phi(s)` at one checkpoint.

    Parameters
    ----------
    model : nn.Module
        The architecture; not modified.
    checkpoint : state dict or path
        One checkpoint (the final model).
    train, queries : array [shape=(N, L)], int64
        Training windows (rows) and query windows (columns).
    args : GradientArgs, optional
        The options (:class:`GradientArgs` lists them: ``proj_dim``, ``loss``, ``target``,
        ``engine``, ``device``, ...); default ``GradientArgs()``.
    """
    a = resolve_args(GradientArgs, args, "GradDot")
    return _gradient_scores({"GradDot": False}, model, single_checkpoint(checkpoint), [1.0],
                            train, queries, a)["GradDot"]


def gradcos(
    model: nn.Module,
    checkpoint: Any,
    train: Any,
    queries: Any,
    *,
    args: GradientArgs | None = None,
) -> AttributionResult:
    r"""GradCos (paper Eq. gradcos): the cosine of the two gradients, in [-1, 1].

    Parameters
    ----------
    model : nn.Module
        The architecture; not modified.
    checkpoint : state dict or path
        One checkpoint (the final model).
    train, queries : array [shape=(N, L)], int64
        Training windows (rows) and query windows (columns).
    args : GradientArgs, optional
        The options (:class:`GradientArgs` lists them: ``proj_dim``, ``loss``, ``target``,
        ``engine``, ``device``, ...); default ``GradientArgs()``.
    """
    a = resolve_args(GradientArgs, args, "GradCos")
    return _gradient_scores({"GradCos": True}, model, single_checkpoint(checkpoint), [1.0],
                            train, queries, a)["GradCos"]


def grad_similarities(
    model: nn.Module,
    checkpoint: Any,
    train: Any,
    queries: Any,
    *,
    args: GradientArgs | None = None,
) -> dict[str, AttributionResult]:
    """GradDot and GradCos from one pass over the gradients (they share them exactly).

    Returns ``{"GradDot": ..., "GradCos": ...}``, each equal to :func:`graddot` /
    :func:`gradcos` with the same arguments; both record the shared wall time.

    Parameters
    ----------
    model : nn.Module
        The architecture; not modified.
    checkpoint : state dict or path
        One checkpoint (the final model).
    train, queries : array [shape=(N, L)], int64
        Training windows (rows) and query windows (columns).
    args : GradientArgs, optional
        The options (:class:`GradientArgs` lists them: ``proj_dim``, ``loss``, ``target``,
        ``engine``, ``device``, ...); default ``GradientArgs()``.
    """
    a = resolve_args(GradientArgs, args, "GradDot/GradCos")
    return _gradient_scores({"GradDot": False, "GradCos": True}, model,
                            single_checkpoint(checkpoint), [1.0], train, queries, a)
