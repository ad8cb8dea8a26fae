"""The registry of attribution methods, and running several of them on the same data.

Each :class:`MethodSpec` says what a method needs: its function, its arguments dataclass
(options it does not take are an error naming the option and the method) and which
checkpoints it reads:

=========  ==============================================  ===================================
kind       checkpoints                                      methods
=========  ==============================================  ===================================
ensemble   final weights of E independently trained models  TRAK
trajectory checkpoints of ONE run + the learning rate of     TracIn
           each
final      the final model                                  GradDot, GradCos, LoGra, FactGraSS
=========  ==============================================  ===================================

A new method is one :class:`MethodSpec` in :data:`REGISTRY`; :func:`run_method` and
:func:`run_methods` need no change.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, cast

from aria_tda._checks import check_choice
from aria_tda.attribution.base import AttributionResult, MethodArgs
from aria_tda.attribution.block_projected import FactGraSSArgs, LoGraArgs, factgrass, logra
from aria_tda.attribution.gradient_similarity import (
    GradientArgs,
    grad_similarities,
    gradcos,
    graddot,
    tracin,
)
from aria_tda.attribution.task import nn
from aria_tda.attribution.trak_ensemble import TrakArgs, trak
from aria_tda.errors import ParameterError, expected

__all__ = [
    "DEFAULTS",
    "METHODS",
    "REGISTRY",
    "Checkpoints",
    "MethodSpec",
    "build_method_args",
    "run_method",
    "run_methods",
]

#: Which checkpoints a method reads (see the module docstring).
CheckpointKind = Literal["ensemble", "trajectory", "final"]


@dataclass(frozen=True)
class Checkpoints:
    """The checkpoints a caller has; each method takes the kind it needs.

    Attributes
    ----------
    ensemble : list of checkpoints, optional
        Independently trained models (TRAK).
    trajectory : list of checkpoints, optional
        Checkpoints of one run (TracIn), with ``learning_rates``, one per checkpoint.
    learning_rates : list of float, optional
        The learning rate in force at each checkpoint of ``trajectory``.
    final : checkpoint, optional
        The final model (GradDot, GradCos, LoGra, FactGraSS).
    """

    ensemble: Sequence[Any] | None = None
    trajectory: Sequence[Any] | None = None
    learning_rates: Sequence[float] | None = None
    final: Any = None

    def select(self, method: str, kind: CheckpointKind) -> tuple[Any, dict[str, Any]]:
        """``(checkpoint argument, extra keyword arguments)`` of ``method``, which reads ``kind``.

        Parameters
        ----------
        method : str
            The method's name (for error messages).
        kind : {"ensemble", "trajectory", "final"}
            Which checkpoints the method reads.
        """
        return _SELECT[kind](self, method)


def _ensemble(c: Checkpoints, method: str) -> tuple[Any, dict[str, Any]]:
    if not c.ensemble:
        what = f"a non-empty list of checkpoints for {method}"
        raise ParameterError(expected("ensemble", what, c.ensemble))
    return list(c.ensemble), {}


def _trajectory(c: Checkpoints, method: str) -> tuple[Any, dict[str, Any]]:
    if not c.trajectory or c.learning_rates is None:
        what = f"checkpoints and learning_rates for {method}"
        raise ParameterError(expected("trajectory", what, c.trajectory))
    return list(c.trajectory), {"learning_rates": list(c.learning_rates)}


def _final(c: Checkpoints, method: str) -> tuple[Any, dict[str, Any]]:
    if c.final is None:
        raise ParameterError(expected("final", f"the final checkpoint for {method}", None))
    return c.final, {}


_SELECT: dict[str, Callable[[Checkpoints, str], tuple[Any, dict[str, Any]]]] = {
    "ensemble": _ensemble,
    "trajectory": _trajectory,
    "final": _final,
}


@dataclass(frozen=True)
class MethodSpec:
    """One attribution method: its function, its arguments and the checkpoints it reads.

    Attributes
    ----------
    name : str
        The method's name (as in the paper).
    function : callable
        ``function(model, checkpoints, train, queries, *, args)`` (TracIn also takes
        ``learning_rates``), ``args`` an instance of :attr:`args`.
    args : type
        The frozen arguments dataclass (a :class:`~aria_tda.attribution.base.MethodArgs`).
    checkpoints : {"ensemble", "trajectory", "final"}
        Which checkpoints it reads (see the module docstring).
    """

    name: str
    function: Callable[..., AttributionResult]
    args: type[MethodArgs]
    checkpoints: CheckpointKind

    def build_args(self, options: Mapping[str, Any]) -> MethodArgs:
        """The method's arguments from a mapping; an option it does not take is an error.

        Parameters
        ----------
        options : mapping
            Option name -> value.
        """
        return self.args.from_mapping(options, what=f"options for {self.name}")

    def run(
        self, model: Any, train: Any, queries: Any, checkpoints: Checkpoints, args: MethodArgs
    ) -> AttributionResult:
        """Run the method with the checkpoints it needs.

        Parameters
        ----------
        model : nn.Module
            The architecture.
        train, queries : array [shape=(N, L)], int64
            Training and query windows.
        checkpoints : Checkpoints
            What the caller has; the method takes its kind.
        args : MethodArgs
            From :meth:`build_args`.
        """
        ckpt, extra = checkpoints.select(self.name, self.checkpoints)
        return self.function(model, ckpt, train, queries, **extra, args=args)


#: Method name -> :class:`MethodSpec`, in the paper's order.
REGISTRY: Mapping[str, MethodSpec] = MappingProxyType({
    spec.name: spec
    for spec in (
        MethodSpec("TRAK", trak, TrakArgs, "ensemble"),
        MethodSpec("TracIn", tracin, GradientArgs, "trajectory"),
        MethodSpec("GradDot", graddot, GradientArgs, "final"),
        MethodSpec("GradCos", gradcos, GradientArgs, "final"),
        MethodSpec("LoGra", logra, LoGraArgs, "final"),
        MethodSpec("FactGraSS", factgrass, FactGraSSArgs, "final"),
    )
})

#: Method name -> function (TRAK takes ``checkpoints`` (ensemble), TracIn ``checkpoints`` +
#: ``learning_rates`` (one run), the others one ``checkpoint``).
METHODS: dict[str, Callable[..., AttributionResult]] = {n: s.function for n, s in REGISTRY.items()}

#: The tuned hyper-parameter defaults of each method (derived from its arguments dataclass),
#: chosen for the benchmark's model (~159k parameters, 64-token windows) on a 2-core CPU
#: (``benchmarks/bench_attribution.py``; ``src/aria/attribution/README.md``).
DEFAULTS: dict[str, dict[str, Any]] = {
    n: {k: getattr(s.args(), k) for k in s.args.tuned} for n, s in REGISTRY.items()
}


def _record_provenance(result: AttributionResult, spec: MethodSpec, model: Any, ckpts: Checkpoints,
                       train: Any, queries: Any) -> None:
    """Record what produced ``result`` in its parameters (``"provenance"``, written to the
    manifest): :func:`aria_tda.attribution.provenance.provenance`."""
    from aria_tda.attribution.provenance import provenance

    ckpt, _ = ckpts.select(spec.name, spec.checkpoints)
    result.parameters["provenance"] = provenance(model, ckpt, train, queries)


def _spec(method: str, name: str = "method") -> MethodSpec:
    return REGISTRY[check_choice(name, method, tuple(REGISTRY))]


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
        A key of :data:`REGISTRY`.
    model : nn.Module
        The architecture.
    train, queries : array [shape=(N, L)], int64
        Training windows (rows) and query windows (columns).
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
    **options : Any
        The method's arguments (``proj_dim``, ``lam``, ``batch_size``, ...; its arguments
        dataclass lists them); one it does not take is a :class:`~aria_tda.errors.ParameterError`.
    """
    spec = _spec(method)
    args = spec.build_args(options)
    ckpts = Checkpoints(ensemble, trajectory, learning_rates, final)
    result = spec.run(model, train, queries, ckpts, args)
    _record_provenance(result, spec, model, ckpts, train, queries)
    if out is not None:
        result.save(out, row_ids=row_ids)
    return result


def build_method_args(
    methods: Sequence[str],
    options: Mapping[str, Mapping[str, Any]] | None = None,
    common: Mapping[str, Any] | None = None,
) -> dict[str, MethodArgs]:
    """Each method's arguments, as :func:`run_methods` builds them from its ``options``/``common``.

    Parameters
    ----------
    methods : sequence of str
        Method names (keys of :data:`REGISTRY`), distinct.
    options : mapping, optional
        Per-method arguments, e.g. ``{"TRAK": {"proj_dim": 512}}``; a key that is not a method
        is an error.
    common : mapping, optional
        Arguments for every method; per-method options win.

    Returns
    -------
    dict
        Method name -> its arguments dataclass, in the order of ``methods``.
    """
    names = [check_choice("methods[]", m, tuple(REGISTRY)) for m in methods]
    if len(set(names)) != len(names):
        raise ParameterError(expected("methods", "distinct method names", list(methods)))
    opts = dict(options or {})
    unknown = set(opts) - set(REGISTRY)
    if unknown:
        what = f"keys among {tuple(REGISTRY)}"
        raise ParameterError(expected("options", what, sorted(unknown)))
    shared = dict(common or {})
    return {m: REGISTRY[m].build_args({**shared, **opts.get(m, {})}) for m in names}


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

    Every method's arguments are built (and checked) before any work starts. GradDot and
    GradCos are computed from one pass over the same gradients when both are asked for with
    the same arguments (:func:`~aria_tda.attribution.grad_similarities`).

    Parameters
    ----------
    methods : sequence of str
        Method names (keys of :data:`REGISTRY`), distinct.
    model : nn.Module
        The architecture.
    train, queries : array [shape=(N, L)], int64
        Training windows (rows) and query windows (columns).
    ensemble, trajectory, learning_rates, final : checkpoints
        As in :func:`run_method`.
    options : dict, optional
        Per-method arguments, e.g. ``{"TRAK": {"proj_dim": 512, "lam": 0.01}}``.
    common : dict, optional
        Arguments for every method (``loss``, ``target``, ``batch_size``, ``seed``,
        ``num_threads``, ``progress``); per-method options win. Each must be one that every
        method asked for takes (``engine`` given with LoGra in ``methods`` is an error).
    out_dir : path, optional
        Write ``<out_dir>/<method>.npy`` with its manifest.
    row_ids : array of str, optional
        Training-segment ids stored with each matrix.

    Returns
    -------
    dict
        Method name → :class:`~aria_tda.attribution.AttributionResult`, in the order asked.
    """
    args = build_method_args(methods, options, common)
    names = list(args)
    ckpts = Checkpoints(ensemble, trajectory, learning_rates, final)

    results: dict[str, AttributionResult] = {}
    if "GradDot" in names and "GradCos" in names and args["GradDot"] == args["GradCos"]:
        if final is None:
            what = "the final checkpoint for GradDot/GradCos"
            raise ParameterError(expected("final", what, None))
        shared = cast(GradientArgs, args["GradDot"])  # REGISTRY["GradDot"].args
        results.update(grad_similarities(model, final, train, queries, args=shared))
    for m in names:
        if m not in results:
            results[m] = REGISTRY[m].run(model, train, queries, ckpts, args[m])
    for m in names:
        _record_provenance(results[m], REGISTRY[m], model, ckpts, train, queries)
    if out_dir is not None:
        for m in names:
            results[m].save(Path(out_dir) / f"{m}.npy", row_ids=row_ids)
    return {m: results[m] for m in names}
