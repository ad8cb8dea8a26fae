r"""TRAK (paper Eq. trak) over an ensemble of independently trained models, through dattri 0.3.0.

What dattri computes for TRAK, precisely: with :math:`g(x)` the per-sample gradient of the
margin :math:`f = \log\frac{p}{1-p}`, :math:`\tilde g = g/\sqrt{n_{params}}`,
:math:`\phi = P^\top\tilde g/\sqrt{k}` (``P`` dense Gaussian, ``k = proj_dim``, one ``P`` per
ensemble member), :math:`\Phi` the ``(n_train, k)`` matrix of training features,

.. math::

    \tau(s, q) = \Big[\frac{1}{E}\sum_{e=1}^{E} \phi_e(q)^\top(\Phi_e^\top\Phi_e + \lambda I)^{-1}
                 \phi_e(s)\Big]\cdot\frac{1}{E}\sum_{e=1}^{E}\big(1 - p_e(s)\big).

With ``proj_dim=None`` no projection is applied (:math:`\phi = \tilde g`). Checkpoints: the
final weights of E independently trained models (the paper: E = 10).

``engine="aria"`` (default) reproduces dattri's numbers with per-tensor ``torch.func``
gradients and the projection matrix drawn once per model; ``engine="dattri"`` runs dattri's
``TRAKAttributor`` on a plain ``AttributionTask`` (the reference the tests compare against).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from aria_tda._options import option
from aria_tda.attribution.base import (
    AttributionResult,
    ProjectionArgs,
    Stopwatch,
    dattri_progress,
    prepare_inputs,
    resolve_args,
    scores_to_numpy,
)
from aria_tda.attribution.gradient_projection import (
    Projector,
    projected_gradients,
    sqrt_n_params,
    train_correct_probs,
)
from aria_tda.attribution.task import (
    build_task,
    import_dattri,
    load_checkpoints,
    make_loader,
    nn,
    single_sample_functions,
    torch,
)
from aria_tda.attribution.threads import pinned_threads
from aria_tda.errors import ParameterError

__all__ = [
    "TrakAccumulator",
    "TrakArgs",
    "check_trak_lam",
    "trak",
    "trak_features",
]


@dataclass(frozen=True)
class TrakArgs(ProjectionArgs):
    r"""Arguments of :func:`trak` (checked on construction, recorded in the manifest).

    The fields of :class:`~aria_tda.attribution.base.ProjectionArgs` (``loss``, ``target``,
    ``batch_size``, ``seed``, ``num_threads``, ``device``, ``progress``, ``proj_type``,
    ``engine``, ``max_projection_bytes``) plus the two below. TRAK attributes the margins
    :math:`\log\frac{p}{1-p}`, :math:`p = e^{-\ell}`, of ``loss`` (training windows) and
    ``target`` (queries).

    Attributes
    ----------
    proj_dim : int or None
        Projection dimension :math:`k` (default 512); ``None`` = no projection.
    lam : float, >= 0
        Regularisation :math:`\lambda` added to :math:`\Phi^\top\Phi` (default 0.01).
    """

    tuned: ClassVar[tuple[str, ...]] = ("proj_dim", "lam")

    proj_dim: int | None = option(512, kind="int", min_value=1,
                                  help="projection dimension k (None: no projection)")
    lam: float = option(0.01, min_value=0.0, help="ridge term lambda added to Phi^T Phi")



class TrakAccumulator:
    r"""dattri TRAK's ensemble average, for several :math:`\lambda` at once.

    ``add(phi, psi, q)`` takes one ensemble member's training features ``phi`` ``(n, k)``,
    query features ``psi`` ``(T, k)`` and :math:`1-p(s)` ``q`` ``(n,)``; :meth:`scores` returns
    ``(n, T)``. The running averages are updated in dattri's order, so the result equals
    ``TRAKAttributor.cache(train); attribute(test)``.

    Parameters
    ----------
    lams : sequence of float
        The :math:`\lambda` values kept.
    """

    def __init__(self, lams: Sequence[float]) -> None:
        self.lams = [float(v) for v in lams]
        self.count = 0
        self.running: dict[float, Any] = dict.fromkeys(self.lams, 0)
        self.q: Any = 0

    def add(self, phi: Any, psi: Any, q: Any) -> None:
        r"""Add one ensemble member.

        Parameters
        ----------
        phi : torch.Tensor [shape=(n, k)]
            Training features :math:`\Phi`.
        psi : torch.Tensor [shape=(T, k)]
            Query features.
        q : torch.Tensor [shape=(n,)]
            :math:`1 - p(s)` of every training window.
        """
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
        r"""The ensemble's scores ``(n, T)`` at one :math:`\lambda`.

        Parameters
        ----------
        lam : float
            One of the :math:`\lambda` values given at construction.
        """
        return (self.running[float(lam)] * self.q.unsqueeze(0)).T


def check_trak_lam(lam: float, proj_dim: int | None, n_train: int, n_params: int) -> None:
    r"""``lam=0`` needs an invertible :math:`\Phi^\top\Phi`: ``k < n_train``.

    Parameters
    ----------
    lam : float
        The ridge term.
    proj_dim : int or None
        The projection dimension (``None``: the number of parameters).
    n_train : int
        Training windows.
    n_params : int
        Trainable parameters of the model.
    """
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
    r"""One ensemble member's TRAK features: :math:`\Phi`, :math:`\Psi` and :math:`1-p`.

    Shapes ``(n, k)``, ``(T, k)`` and ``(n,)``. With a list of projectors, :math:`\Phi` and
    :math:`\Psi` are lists (one per projector) computed from the same gradients.

    Parameters
    ----------
    task : dattri AttributionTask
        From :func:`aria_tda.attribution.task.build_task` with ``objective="margin"``.
    train_loader, query_loader : DataLoader
        From :func:`aria_tda.attribution.task.make_loader`.
    ckpt_idx : int
        The ensemble member (checkpoint index of ``task``).
    projector : Projector or list of Projector
        The projection(s).
    prob_fn : callable
        The correct-probability function :math:`p` of one window.
    progress_bar : bool, optional
        Force progress bars on/off.
    """
    scale = sqrt_n_params(task)
    phi = projected_gradients(task, train_loader, ckpt_idx=ckpt_idx, which="loss",
                              projector=projector, scale=scale,
                              desc=f"TRAK model {ckpt_idx}: train", progress_bar=progress_bar)
    q = 1.0 - train_correct_probs(task, train_loader, ckpt_idx=ckpt_idx, prob_fn=prob_fn)
    psi = projected_gradients(task, query_loader, ckpt_idx=ckpt_idx, which="target",
                              projector=projector, scale=scale,
                              desc=f"TRAK model {ckpt_idx}: queries", progress_bar=progress_bar)
    return phi, psi, q


def trak(
    model: nn.Module,
    checkpoints: Any,
    train: Any,
    queries: Any,
    *,
    args: TrakArgs | None = None,
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
    args : TrakArgs, optional
        The options (:class:`TrakArgs` lists them: ``proj_dim``, ``lam``, ``loss``, ``target``,
        ``engine``, ``device``, ...); default ``TrakArgs()``.

    Returns
    -------
    AttributionResult
        ``scores`` ``(n_train, n_test)``; ``parameters`` = :meth:`TrakArgs.to_dict` plus
        ``n_models``.
    """
    return _trak(model, checkpoints, train, queries, resolve_args(TrakArgs, args, "TRAK"))


def _trak(model: Any, checkpoints: Any, train: Any, queries: Any, a: TrakArgs) -> AttributionResult:
    model, train_t, query_t = prepare_inputs(model, train, queries)
    ckpts = load_checkpoints(checkpoints)
    n_par = sum(p.numel() for p in model.parameters() if p.requires_grad)
    check_trak_lam(a.lam, a.proj_dim, int(train_t.shape[0]), n_par)
    projector = Projector(proj_dim=a.proj_dim, seed=a.seed, proj_type=a.proj_type,
                          max_bytes=a.max_projection_bytes, device=a.device)
    train_loader = make_loader(train_t, batch_size=a.batch_size)
    query_loader = make_loader(query_t, batch_size=a.batch_size)
    task = build_task(model, ckpts, loss=a.loss, target=a.target, objective="margin",
                      fast=a.engine == "aria", device=a.device)
    prob_fn = single_sample_functions(task.get_model(), a.loss)["prob"]
    with pinned_threads(a.num_threads), Stopwatch() as timer:
        if a.engine == "dattri":
            TRAKAttributor = import_dattri("dattri.algorithm.trak").TRAKAttributor

            attributor = TRAKAttributor(task, correct_probability_func=prob_fn,
                                        projector_kwargs=None, device=a.device,
                                        regularization=a.lam)
            # never mutate dattri's defaults: a fresh dict on the instance
            attributor.projector_kwargs = dict(projector.kwargs)
            with dattri_progress(a.progress), torch.no_grad():
                attributor.cache(train_loader)
                scores = attributor.attribute(query_loader)
        else:
            acc = TrakAccumulator([a.lam])
            for c in range(len(ckpts)):
                phi, psi, q = trak_features(task, train_loader, query_loader, ckpt_idx=c,
                                            projector=projector, prob_fn=prob_fn,
                                            progress_bar=a.progress)
                acc.add(phi, psi, q)
                del phi, psi
            projector.release()
            scores = acc.scores(a.lam)
    params = {**a.to_dict(), "n_models": len(ckpts)}
    out = scores_to_numpy(scores, int(train_t.shape[0]), int(query_t.shape[0]), "TRAK")
    return AttributionResult(out, "TRAK", params, a.seed, timer.seconds)
