r"""LoGra and FactGraSS (paper Eqs. logra, factgrass): dattri 0.3.0's block-projected IF.

Both hook every :class:`torch.nn.Linear` layer, compress its per-sample gradient
:math:`\delta x^\top` with a per-layer projection, invert the per-layer empirical Fisher
(eFIM) of the compressed training gradients with relative damping :math:`c\,\bar\lambda`, and
score :math:`\tau = \phi(q)^\top (F + c\bar\lambda I)^{-1}\phi(s)` summed over layers. They
differ in the compressor:

- LoGra: :math:`(P_o\delta)(P_i x)^\top` with Gaussian :math:`P_o, P_i` of :math:`\sqrt{k}`
  rows (``k = proj_dim`` per layer, a perfect square);
- FactGraSS: random-mask sparsification of both Kronecker factors to :math:`\sqrt{k b}`
  entries (``b = blowup``), their outer product, then a dense projection to ``k``.

Checkpoint: the final model. dattri's ``BlockProjectedIFAttributor`` always runs (there is no
ARIA engine), with the 0.3.0 workarounds described at :func:`_block_projected`.
"""

from __future__ import annotations

import copy
import math
import tempfile
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from aria_tda._options import option
from aria_tda.attribution.base import (
    AttributionResult,
    MethodArgs,
    Stopwatch,
    dattri_progress,
    prepare_inputs,
    resolve_args,
    scores_to_numpy,
)
from aria_tda.attribution.task import (
    LossLike,
    import_dattri,
    load_checkpoints,
    make_loader,
    nn,
    resolve_loss,
    torch,
)
from aria_tda.attribution.threads import pinned_threads
from aria_tda.errors import ParameterError, expected

__all__ = ["FactGraSSArgs", "LoGraArgs", "TargetLossModel", "factgrass", "logra"]


def _check_square(name: str, value: int) -> int:
    root = math.isqrt(value)
    if root * root != value:
        what = "a perfect square (the projection is a Kronecker product of two equal factors)"
        raise ParameterError(expected(name, what, value))
    return root


def _layer_names(name: str, value: Any) -> Sequence[str] | None:
    if value is None:
        return None
    if isinstance(value, str) or not all(isinstance(v, str) for v in value):
        raise ParameterError(expected(name, "a list of layer names", value))
    return tuple(value)


@dataclass(frozen=True)
class LoGraArgs(MethodArgs):
    r"""Arguments of :func:`logra` (checked on construction, recorded in the manifest).

    The fields of :class:`~aria_tda.attribution.base.MethodArgs` (``loss``, ``target``,
    ``batch_size``, ``seed``, ``num_threads``, ``device``, ``progress``) plus:

    Attributes
    ----------
    proj_dim : int
        Per-layer projected dimension :math:`k`, a perfect square (default 256 = 16 x 16).
    damping : float, > 0
        Relative damping :math:`c` of the eFIM, times its mean eigenvalue (paper: 0.1).
    layer_names : sequence of str or None
        ``nn.Linear`` layers to use (names inside the wrapper: ``"inner." + name``);
        default ``None``: all of them.
    """

    tuned: ClassVar[tuple[str, ...]] = ("proj_dim", "damping")

    proj_dim: int = option(256, min_value=1,
                           help="per-layer projected dimension k (a perfect square)")
    damping: float = option(0.1, min_value=0.0, min_inclusive=False,
                            help="relative damping c of the eFIM (paper: 0.1)")
    layer_names: Sequence[str] | None = option(
        None, check=_layer_names,
        help="nn.Linear layers to use ('inner.' + name); None: all of them")

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_square("proj_dim", self.proj_dim)


@dataclass(frozen=True)
class FactGraSSArgs(MethodArgs):
    r"""Arguments of :func:`factgrass` (checked on construction, recorded in the manifest).

    The fields of :class:`~aria_tda.attribution.base.MethodArgs` (``loss``, ``target``,
    ``batch_size``, ``seed``, ``num_threads``, ``device``, ``progress``) plus:

    Attributes
    ----------
    proj_dim : int
        Per-layer output dimension :math:`k` (default 256).
    blowup : int
        Blow-up factor :math:`b` (default 4); ``proj_dim * blowup`` must be a perfect square.
    damping : float, > 0
        Relative damping :math:`c` of the eFIM (paper: 0.01).
    layer_names : sequence of str or None
        ``nn.Linear`` layers to use (names inside the wrapper: ``"inner." + name``);
        default ``None``: all of them.
    """

    tuned: ClassVar[tuple[str, ...]] = ("proj_dim", "blowup", "damping")

    proj_dim: int = option(256, min_value=1, help="per-layer output dimension k")
    blowup: int = option(4, min_value=1,
                         help="blow-up factor b; proj_dim * blowup must be a perfect square")
    damping: float = option(0.01, min_value=0.0, min_inclusive=False,
                            help="relative damping c of the eFIM (paper: 0.01)")
    layer_names: Sequence[str] | None = option(
        None, check=_layer_names,
        help="nn.Linear layers to use ('inner.' + name); None: all of them")

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_square("proj_dim * blowup", self.proj_dim * self.blowup)



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

    Parameters
    ----------
    inner : nn.Module
        The token model.
    target : callable
        Per-sample query loss ``f(model, tokens) -> (B,)``.
    """

    def __init__(self, inner: nn.Module, target: Callable[..., Any]) -> None:
        super().__init__()
        self.inner = inner
        self._target = target

    def forward(self, tokens: Any) -> _LossOutput:
        """The batch-mean target loss, as ``.loss``.

        Parameters
        ----------
        tokens : torch.Tensor [shape=(B, L)], int64
            Query windows.
        """
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
    device: str = "cpu",
) -> tuple[Any, float]:
    """Run dattri's BlockProjectedIFAttributor with the 0.3.0 workarounds -> (scores, seconds).

    The query gradient comes from :class:`TargetLossModel` (dict batches, ``model(**batch)``),
    the compressors are built from a real batch, and dattri's ``torch.compile`` and pinned
    memory are switched off.
    """
    from dattri.task import AttributionTask

    block_if = import_dattri("dattri.algorithm.block_projected_if.block_projected_if")

    ckpts = load_checkpoints(checkpoint)
    if len(ckpts) != 1:
        raise ParameterError(expected("checkpoint", "exactly one checkpoint", len(ckpts)))
    train_fn = resolve_loss(loss)
    target_fn = resolve_loss(target, name="target")
    inner = copy.deepcopy(model).cpu()  # dattri's hooks monkey-patch the layers they touch
    inner.load_state_dict(ckpts[0])
    inner.to(device)
    wrapped = TargetLossModel(inner, target_fn).eval()
    names = layer_names or [f"inner.{n}" for n, m in inner.named_modules()
                            if isinstance(m, nn.Linear)]
    if not names:
        what = f"at least one nn.Linear layer ({method} hooks only those)"
        raise ParameterError(expected("model", what, "none"))

    def train_loss(model_: nn.Module, batch: dict[str, Any], device: str) -> Any:
        return train_fn(model_.inner, batch["tokens"].to(device)).mean()

    task = AttributionTask(loss_func=train_loss, model=wrapped,
                           checkpoints=[{k: v.clone() for k, v in wrapped.state_dict().items()}])
    train_loader = make_loader(train, batch_size=batch_size, as_dict=True)
    query_loader = make_loader(queries, batch_size=batch_size, as_dict=True)
    with tempfile.TemporaryDirectory(prefix="aria-blockif-") as cache_dir, \
            pinned_threads(num_threads), Stopwatch() as timer:
        attributor = block_if.BlockProjectedIFAttributor(
            task, layer_names=names, hessian=hessian, damping=damping, device=device,
            sparsifier_kwargs=dict(sparsifier_kwargs), projector_kwargs=dict(projector_kwargs),
            offload="cpu", cache_dir=cache_dir,
        )
        # Build the compressors from a real batch (dict batches call model(**batch), which
        # sidesteps 0.3.0's `sample_inputs[0]` un-batching of tuple batches).
        attributor._setup_compressors(train_loader)
        with dattri_progress(progress_bar), torch._dynamo.config.patch(disable=True), \
                warnings.catch_warnings():
            # torch.compile of dattri's compressor is disabled (TORCHDYNAMO_DISABLE=1 in
            # effect); dattri asks for pinned memory, which has no meaning without an
            # accelerator.
            warnings.filterwarnings("ignore", message=".*pin_memory.*")
            attributor.cache(train_loader)
            scores = attributor.attribute(train_loader, query_loader)
    return scores, timer.seconds


def _compressor(proj_dim: int, proj_type: str, seed: int, device: str = "cpu") -> dict[str, Any]:
    return {"device": device, "proj_dim": proj_dim, "proj_max_batch_size": 64,
            "proj_type": proj_type, "proj_seed": seed}


def _run(
    method: str, model: Any, checkpoint: Any, train: Any, queries: Any,
    a: LoGraArgs | FactGraSSArgs, sparsifier: dict[str, Any], projector: dict[str, Any],
) -> AttributionResult:
    model, train_t, query_t = prepare_inputs(model, train, queries)
    layers = None if a.layer_names is None else list(a.layer_names)
    scores, seconds = _block_projected(
        method, model, checkpoint, train_t, query_t, sparsifier_kwargs=sparsifier,
        projector_kwargs=projector, hessian="eFIM", damping=a.damping, loss=a.loss,
        target=a.target, batch_size=a.batch_size, layer_names=layers,
        num_threads=a.num_threads, progress_bar=a.progress, device=a.device,
    )
    params = {**a.to_dict(), "hessian": "eFIM",
              "layers": "all nn.Linear" if layers is None else layers}
    out = scores_to_numpy(scores, int(train_t.shape[0]), int(query_t.shape[0]), method)
    return AttributionResult(out, method, params, a.seed, seconds)


def logra(
    model: nn.Module,
    checkpoint: Any,
    train: Any,
    queries: Any,
    *,
    args: LoGraArgs | None = None,
) -> AttributionResult:
    r"""LoGra (paper Eq. logra) through dattri's ``LoGraAttributor`` configuration.

    Each ``nn.Linear`` layer's gradient :math:`\delta x^\top` is projected as
    :math:`(P_o\delta)(P_i x)^\top` with Gaussian :math:`P_o, P_i` of :math:`\sqrt{k}` rows
    (``k = proj_dim`` per layer), the per-layer empirical Fisher of the projected training
    gradients is inverted with damping :math:`c\,\bar\lambda` (``damping`` = c, relative to the
    mean eigenvalue), and :math:`\tau = \phi(q)^\top (F + c\bar\lambda I)^{-1}\phi(s)` summed
    over layers.

    Parameters
    ----------
    model : nn.Module
        The architecture; not modified.
    checkpoint : state dict or path
        One checkpoint (the final model).
    train, queries : array [shape=(N, L)], int64
        Training windows (rows) and query windows (columns).
    args : LoGraArgs, optional
        The options (:class:`LoGraArgs` lists them: ``proj_dim``, ``damping``,
        ``layer_names``, ``loss``, ``target``, ``device``, ...); default ``LoGraArgs()``.
    """
    a = resolve_args(LoGraArgs, args, "LoGra")
    root = math.isqrt(a.proj_dim)
    return _run("LoGra", model, checkpoint, train, queries, a,
                sparsifier=_compressor(root, "normal", a.seed, a.device),
                projector=_compressor(-1, "identity", a.seed, a.device))


def factgrass(
    model: nn.Module,
    checkpoint: Any,
    train: Any,
    queries: Any,
    *,
    args: FactGraSSArgs | None = None,
) -> AttributionResult:
    r"""FactGraSS (paper Eq. factgrass) through dattri's ``FactGraSSAttributor`` configuration.

    Per ``nn.Linear`` layer: random-mask sparsification of both Kronecker factors to
    :math:`\sqrt{k b}` entries each (``b = blowup``), their outer product, then a dense
    projection to ``k = proj_dim`` (SJLT on CUDA; dattri uses a Gaussian on CPU); eFIM with
    relative damping, as LoGra.

    Parameters
    ----------
    model : nn.Module
        The architecture; not modified.
    checkpoint : state dict or path
        One checkpoint (the final model).
    train, queries : array [shape=(N, L)], int64
        Training windows (rows) and query windows (columns).
    args : FactGraSSArgs, optional
        The options (:class:`FactGraSSArgs` lists them: ``proj_dim``, ``blowup``,
        ``damping``, ``layer_names``, ``loss``, ``target``, ``device``, ...); default
        ``FactGraSSArgs()``.
    """
    a = resolve_args(FactGraSSArgs, args, "FactGraSS")
    root = math.isqrt(a.proj_dim * a.blowup)
    return _run("FactGraSS", model, checkpoint, train, queries, a,
                sparsifier=_compressor(root, "random_mask", a.seed, a.device),
                projector=_compressor(a.proj_dim, "normal", a.seed, a.device))
