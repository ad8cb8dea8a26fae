"""What every attribution method shares: its result, its common arguments, input checks.

Each method family (:mod:`~aria_tda.attribution.trak_ensemble`,
:mod:`~aria_tda.attribution.gradient_similarity`, :mod:`~aria_tda.attribution.block_projected`)
declares its options ONCE, as the fields of one frozen arguments dataclass built on
:class:`MethodArgs` (type, default, range and help of each; checked on construction). Every
method function takes that dataclass as its one ``args`` keyword (kronfluence's
``score_args`` convention)::

    trak(model, ensemble, train, queries, args=TrakArgs(proj_dim=512, lam=0.01))

and the registry (:func:`~aria_tda.attribution.run_methods`), the demos and the docs build it
from a mapping with :meth:`aria_tda._options.Options.from_mapping` (an option the method does
not take is an error). The result is an :class:`AttributionResult` whose ``parameters`` record
those arguments (:meth:`MethodArgs.to_dict`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import numpy as np

from aria_tda._options import Options, option
from aria_tda._progress import progress
from aria_tda.attribution.device import check_device
from aria_tda.attribution.gradient_projection import DEFAULT_MAX_PROJECTION_BYTES
from aria_tda.attribution.task import LossLike, as_windows, check_loss, import_dattri, loss_name, nn
from aria_tda.errors import DataError, ParameterError, expected

__all__ = [
    "ENGINES",
    "PROJ_TYPES",
    "AttributionResult",
    "MethodArgs",
    "ProjectionArgs",
    "Stopwatch",
    "dattri_progress",
    "prepare_inputs",
    "resolve_args",
    "scores_to_numpy",
    "single_checkpoint",
]

ArgsT = TypeVar("ArgsT", bound="MethodArgs")

#: ``engine="aria"`` (dattri's numbers, faster) or ``"dattri"`` (dattri's own classes).
ENGINES = ("aria", "dattri")
#: Dense random projections of TRAK / TracIn / GradDot / GradCos.
PROJ_TYPES = ("normal", "rademacher")


@dataclass(frozen=True)
class AttributionResult:
    """Scores of one method plus what produced them.

    Attributes
    ----------
    scores : np.ndarray [shape=(n_train, n_test)], float32
        Higher = more influential.
    method : str
        The method's name (a key of :data:`aria_tda.attribution.METHODS`).
    parameters : dict
        The method's arguments (:meth:`MethodArgs.to_dict`) and what the run derived from its
        inputs (number of models, weights, ...); JSON-able.
    seed : int
        Projection seed.
    seconds : float
        Wall time of the computation.
    sanity : dict or None
        The sanity checks of the scores (:func:`aria_tda.attribution.sanity_checks`; JSON-able,
        written to the manifest under ``"sanity"``), or ``None`` when none were run.
    """

    scores: np.ndarray
    method: str
    parameters: dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    seconds: float = 0.0
    sanity: dict[str, Any] | None = None

    @property
    def shape(self) -> tuple[int, int]:
        return (int(self.scores.shape[0]), int(self.scores.shape[1]))

    def save(self, path: Any, *, row_ids: Any = None) -> Path:
        """Write the scores and their manifest (:func:`aria_tda.attribution.save_attribution`),
        with :attr:`sanity` under the manifest's ``"sanity"`` key when it is set.

        Parameters
        ----------
        path : path
            ``.npy`` or ``.zarr``.
        row_ids : array of str, optional
            Training-segment ids of the rows.
        """
        from aria_tda.attribution.storage import save_attribution

        return save_attribution(
            self.scores, path, method=self.method, parameters=self.parameters, seed=self.seed,
            row_ids=row_ids, extra={"seconds": round(self.seconds, 3)}, sanity=self.sanity,
        )


# ------------------------------------------------------------------------------------------
# arguments
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MethodArgs(Options):
    """The arguments every attribution method takes (one frozen dataclass per family).

    Build one with keywords or with :meth:`~aria_tda._options.Options.from_mapping`, which rejects
    options the method does not take, and pass it as the method's ``args``. ``tuned`` names the
    hyper-parameters whose defaults were chosen for the benchmark model
    (``aria_tda.attribution.DEFAULTS`` shows them).

    Attributes
    ----------
    loss : {"sequence", "last_token"} or callable
        Per-sample loss of training windows, or ``f(model, tokens) -> (B,)``
        (default ``"sequence"``).
    target : {"sequence", "last_token"} or callable
        Per-sample loss of queries (the attributed output), as ``loss``
        (default ``"last_token"``).
    batch_size : int, >= 1
        Windows per per-sample-gradient batch (default 32).
    seed : int, >= 0
        Projection seed, dattri's ``proj_seed`` (default 0).
    num_threads : int or None
        torch intra-op threads while computing (default 1; ``None``: leave torch's setting).
    device : str
        Where gradients are computed: ``"cpu"`` (default) or an accelerator such as
        ``"cuda"``. TRAK and the TracIn family draw their projections on the CPU generator
        either way, so an accelerator gives the CPU's scores up to rounding (engine
        ``"dattri"`` draws them with dattri's generator on the device); LoGra / FactGraSS
        draw their compressors on the device.
    progress : bool or None
        Progress bars on/off (default ``None``: ARIA's default).
    """

    tuned: ClassVar[tuple[str, ...]] = ()

    loss: LossLike = option(
        "sequence", check=check_loss,
        help="per-sample loss of training windows: 'sequence', 'last_token' or a callable "
             "f(model, tokens) -> (B,)")
    target: LossLike = option(
        "last_token", check=check_loss,
        help="per-sample loss of queries (the attributed output), as loss")
    batch_size: int = option(32, min_value=1, help="windows per per-sample-gradient batch")
    seed: int = option(0, min_value=0, help="projection seed (dattri's proj_seed)")
    num_threads: int | None = option(1, kind="int", min_value=1,
                                     help="torch intra-op threads while computing "
                                          "(None: leave torch's setting)")
    device: str = option("cpu", check=check_device,
                         help="where gradients are computed: 'cpu' or an accelerator such as "
                              "'cuda' (TRAK and the TracIn family: the CPU's projections, "
                              "scores equal up to rounding; LoGra/FactGraSS: dattri draws "
                              "their compressors on the device)")
    progress: bool | None = option(None, help="progress bars on/off (None: ARIA's default)")

    def to_dict(self) -> dict[str, Any]:
        """The arguments as a JSON-able dict (losses by name), as manifests record them."""
        out = super().to_dict()
        out["loss"] = loss_name(self.loss)
        out["target"] = loss_name(self.target)
        return out



@dataclass(frozen=True)
class ProjectionArgs(MethodArgs):
    """:class:`MethodArgs` plus the dense-projection settings of TRAK and the TracIn family.

    Attributes
    ----------
    proj_type : {"normal", "rademacher"}
        Distribution of the random projection matrix (default ``"normal"``).
    engine : {"aria", "dattri"}
        ``"aria"`` (default: dattri's numbers, faster) or ``"dattri"`` (dattri's own
        attributor classes).
    max_projection_bytes : int, >= 0
        Largest projection matrix kept between batches (engine ``"aria"``; bytes).
    """

    proj_type: str = option("normal", choices=PROJ_TYPES, help="random projection distribution")
    engine: str = option("aria", choices=ENGINES,
                         help="'aria' (dattri's numbers, faster) or 'dattri' (its own classes)")
    max_projection_bytes: int = option(DEFAULT_MAX_PROJECTION_BYTES, min_value=0,
                                       help="largest projection matrix kept between batches "
                                            "(engine 'aria'; bytes)")


# ------------------------------------------------------------------------------------------
# helpers shared by the families
# ------------------------------------------------------------------------------------------


def resolve_args(cls: type[ArgsT], args: ArgsT | None, method: str) -> ArgsT:
    """The arguments a method function was given: ``cls()`` for ``None``, else ``args`` checked.

    Parameters
    ----------
    cls : type
        The method's arguments dataclass (a :class:`MethodArgs` subclass).
    args : MethodArgs or None
        What the caller passed as ``args``.
    method : str
        The method's name (for the error message).

    Raises
    ------
    ParameterError
        if ``args`` is not an instance of ``cls`` (a mapping of options: build the dataclass
        with ``cls.from_mapping(...)``; keywords: ``cls(proj_dim=..., ...)``).
    """
    if args is None:
        return cls()
    if not isinstance(args, cls):
        what = f"a {cls.__name__} for {method} (or None for its defaults)"
        raise ParameterError(expected("args", what, type(args).__name__))
    return args


def prepare_inputs(model: Any, train: Any, queries: Any) -> tuple[nn.Module, Any, Any]:
    """Check the model and turn the windows into int64 tensors ``(N, L)``.

    Parameters
    ----------
    model : nn.Module
        The architecture.
    train : array [shape=(n_train, L)], integer
        Training windows.
    queries : array [shape=(n_test, L)], integer
        Query windows.

    Returns
    -------
    tuple
        ``(model, train_tensor, query_tensor)``.
    """
    if not isinstance(model, nn.Module):
        raise ParameterError(expected("model", "a torch.nn.Module", type(model).__name__))
    train_t = as_windows(train, name="train")
    query_t = as_windows(queries, name="queries")
    return model, train_t, query_t


def scores_to_numpy(scores: Any, n_train: int, n_test: int, method: str) -> np.ndarray:
    """A finite float32 ``(n_train, n_test)`` array from a torch score matrix.

    Parameters
    ----------
    scores : torch.Tensor [shape=(n_train, n_test)]
        The scores a method computed.
    n_train, n_test : int
        The expected shape.
    method : str
        How to name the method in an error message.
    """
    out = scores.detach().cpu().numpy().astype(np.float32, copy=False)
    if out.shape != (n_train, n_test):  # pragma: no cover - would be a dattri contract break
        raise DataError(f"{method}: expected scores of shape {(n_train, n_test)}, "
                        f"got {out.shape}")
    if not np.isfinite(out).all():
        bad = int((~np.isfinite(out)).sum())
        raise DataError(
            f"{method}: {bad} non-finite score(s); lower the learning rates of the checkpoints, "
            "raise lam/damping, or use a smaller proj_dim"
        )
    return out


def single_checkpoint(checkpoint: Any) -> list[Any]:
    """A single checkpoint as a one-element list (a list of several is an error).

    Parameters
    ----------
    checkpoint : Any
        One checkpoint, or a list or tuple holding exactly one.

    Returns
    -------
    list

    Raises
    ------
    ParameterError
        A list or tuple of several checkpoints (or none).
    """
    if isinstance(checkpoint, (list, tuple)):
        if len(checkpoint) != 1:
            got = f"{len(checkpoint)} checkpoints"
            raise ParameterError(expected("checkpoint", "one checkpoint", got))
        return list(checkpoint)
    return [checkpoint]


@contextlib.contextmanager
def dattri_progress(enabled: bool | None) -> Iterator[None]:
    """Route dattri's internal tqdm bars through ARIA's progress setting while it runs.

    A context manager: inside it, the progress bars of dattri's TRAK, TracIn and block-projected
    influence modules are ARIA's (:func:`aria_tda._progress.progress`).

    Parameters
    ----------
    enabled : bool or None
        Draw them (``None``: ARIA's default setting).
    """
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


class Stopwatch:
    """Wall-clock seconds of a ``with`` block, in :attr:`seconds` once the block has ended.

    Attributes
    ----------
    seconds : float
        The block's duration (set on exit).
    """

    def __enter__(self) -> Stopwatch:
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.seconds = time.perf_counter() - self.t0
