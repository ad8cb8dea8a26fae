r"""Sanity checks of the attribution ARIA computes: model randomisation and gradient-norm bias.

Two checks the training-data-attribution (TDA) field expects of a method, run with the
method's own code (:data:`~aria_tda.attribution.registry.REGISTRY`) on the windows, queries and
checkpoints it was given. Both rules were fixed before any method was measured.

Model randomisation (Adebayo et al. 2018 for saliency maps; Hanawa et al. 2021 and quanda's
``ModelRandomizationMetric`` for training-data attribution)

The method's scores with the trained checkpoints, :math:`\tau`, and with checkpoints of the
same architecture whose weights are re-initialised (:func:`reinitialized_state`),
:math:`\tilde\tau`, on the same training windows and queries. Per query :math:`q`

.. math:: \rho_q = \rho_{\mathrm{Spearman}}\big(\tau(\cdot, q),\ \tilde\tau(\cdot, q)\big)

over the training windows; reported: the mean over queries and its percentile bootstrap
interval over queries (:func:`~aria_tda.attribution.sanity_stats.bootstrap_mean`). An
attribution that explains what the model *learned* must change when what it learned is
destroyed.

**Rule: flagged when the interval's lower end is** :math:`\ge 0.5`
(:data:`~aria_tda.attribution.sanity_stats.RANDOMIZATION_THRESHOLD`). :math:`\rho = 0.5`
is a large correlation (Cohen 1988); a lower end above it says, with confidence, that the
ranking agrees at least that much with what the method returns for a model that has
learned nothing, so a large part of it comes from the inputs and the architecture, not from
training. The lower end (not the mean) is used so that a few queries, whose interval is
wide, do not raise a flag by chance. A negative correlation is not flagged.

Gradient-norm bias (Barshan et al. 2020, RelatIF; Hammoudeh & Lowd 2022, renormalised
influence; Hanawa et al. 2021)

Per query, the Spearman correlation between its score column and the training windows'
loss-gradient norms :math:`\lVert\nabla_\theta\ell(s)\rVert` (:func:`training_gradient_norms`)
— a per-item term that does not depend on the query. GradDot scores
:math:`\lVert g_s\rVert\,\lVert g_q\rVert\cos(g_s, g_q)`, so for a fixed query its ranking
tends to follow the norm and the same high-norm (atypical, badly fitted) windows head every
query's list; GradCos divides the norm out. Reported: the median over queries and the share
of queries with :math:`\rho_q \ge 0.5`.

**Rule: flagged when the median is** :math:`\ge 0.5`
(:data:`~aria_tda.attribution.sanity_stats.BIAS_THRESHOLD`): for at least half the queries
a query-independent term alone has a large rank correlation (Cohen 1988) with the query's
ranking — at least a quarter of its rank variance (:math:`\rho^2 \ge 0.25`) is fixed before
the query is seen, so the method largely returns one global list.

Conventions
-----------
- Scores ``(n_train, n_test)``, higher = more influential (:mod:`aria_tda.attribution`).
- Re-initialisation: checkpoint ``i`` of a list (``ensemble``, ``trajectory``) gets seed
  ``seed + i``, ``final`` gets ``seed`` (see :func:`reinitialized_state` for the init).
- Gradient norms are taken at one model for every method, so the methods are compared on the
  same norms: ``final`` when given, else the last checkpoint of ``trajectory``, else the first
  of ``ensemble``; with the method's ``loss`` (the training-window loss), unprojected.
- A query whose column (or norm vector) is constant has no correlation: NaN, left out of the
  summaries and counted in ``n_undefined``.
- :func:`model_randomization` and :func:`gradient_norm_bias` run one check for one method
  (their statistics, from score matrices alone, are in
  :mod:`~aria_tda.attribution.sanity_stats`); :func:`sanity_checks` runs both for several
  methods and writes them into each score file's manifest under ``"sanity"``;
  :func:`read_sanity` reads them back.

References
----------
Adebayo, J., Gilmer, J., Muelly, M., Goodfellow, I., Hardt, M., Kim, B. (2018). Sanity checks
for saliency maps. NeurIPS. Barshan, E., Brunet, M.-E., Dziugaite, G. K. (2020). RelatIF:
identifying explanatory training samples via relative influence. AISTATS. Hanawa, K., Yokoi,
S., Hara, S., Inui, K. (2021). Evaluation of similarity-based explanations. ICLR. Hammoudeh, Z.,
Lowd, D. (2022). Identifying a training-set attack's target using renormalized influence
estimation. CCS. Cohen, J. (1988). Statistical power analysis for the behavioral sciences.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import os
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda._checks import check_choice, check_existing_path
from aria_tda.attribution.base import (
    AttributionResult,
    MethodArgs,
    prepare_inputs,
    resolve_args,
    single_checkpoint,
)
from aria_tda.attribution.gradient_projection import Projector, iter_projected_gradients
from aria_tda.attribution.registry import (
    REGISTRY,
    Checkpoints,
    build_method_args,
    run_methods,
)
from aria_tda.attribution.sanity_stats import (
    BiasResult,
    RandomizationResult,
    SanityArgs,
    check_matrix,
    summarize_norm_bias,
    summarize_randomization,
)
from aria_tda.attribution.storage import SANITY_KEY
from aria_tda.attribution.task import (
    build_task,
    load_checkpoint,
    load_checkpoints,
    loss_name,
    make_loader,
    nn,
    torch,
)
from aria_tda.attribution.threads import pinned_threads
from aria_tda.errors import FileFormatError, ParameterError, expected

__all__ = [
    "SANITY_VERSION",
    "gradient_norm_bias",
    "model_randomization",
    "randomized_checkpoints",
    "read_sanity",
    "reinitialized_state",
    "sanity_checks",
    "sanity_report",
    "training_gradient_norms",
]

#: Version of the ``"sanity"`` manifest entry (:func:`read_sanity` reads this version).
SANITY_VERSION = 1


# ------------------------------------------------------------------------------------------
# re-initialised checkpoints and gradient norms
# ------------------------------------------------------------------------------------------


def reinitialized_state(model: nn.Module, checkpoint: Any, *, seed: int = 0) -> dict[str, Any]:
    r"""The state dict of ``model``'s architecture with its weights re-initialised.

    A copy of ``model`` gets ``checkpoint`` (so buffers and non-learned state are the
    checkpoint's), then, under ``torch.manual_seed(seed)`` in a forked RNG (the caller's random
    state is untouched), every module that defines ``reset_parameters()`` calls it (PyTorch's
    default init of ``nn.Linear``, ``nn.Embedding``, ``nn.LayerNorm``, ...). A parameter no such
    module owns directly (e.g. a free ``nn.Parameter`` holding a positional table) is drawn
    i.i.d. :math:`N(0, \sigma^2)`, :math:`\sigma` the trained tensor's standard deviation: its
    scale is kept, its learned structure is not; a tensor with one entry or constant entries
    is kept as it is.

    Parameters
    ----------
    model : nn.Module
        The architecture; not modified.
    checkpoint : state dict or path
        The trained weights being replaced.
    seed : int, >= 0
        Seed of the draw.

    Returns
    -------
    dict
        Parameter/buffer name -> CPU tensor (a state dict for ``model``).
    """
    if not isinstance(model, nn.Module):
        raise ParameterError(expected("model", "a torch.nn.Module", type(model).__name__))
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ParameterError(expected("seed", "an integer >= 0", seed))
    net = copy.deepcopy(model).cpu()
    net.load_state_dict(load_checkpoint(checkpoint))
    owned: set[int] = set()
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(seed)
        for module in net.modules():
            reset = getattr(module, "reset_parameters", None)
            if callable(reset):
                reset()
                owned.update(id(p) for p in module.parameters(recurse=False))
        gen = torch.Generator().manual_seed(seed)
        for p in net.parameters():
            if id(p) in owned or p.numel() < 2:
                continue
            sd = float(p.detach().double().std())
            if math.isfinite(sd) and sd > 0:
                p.copy_(torch.randn(p.shape, generator=gen, dtype=p.dtype) * sd)
    return {k: v.detach().clone() for k, v in net.state_dict().items()}


def randomized_checkpoints(
    model: nn.Module,
    checkpoints: Checkpoints,
    *,
    seed: int = 0,
    kinds: Collection[str] = ("ensemble", "trajectory", "final"),
) -> Checkpoints:
    """``checkpoints`` with every checkpoint of the asked kinds re-initialised.

    Checkpoint ``i`` of ``ensemble`` / ``trajectory`` gets :func:`reinitialized_state` with
    seed ``seed + i``; ``final`` gets ``seed``; the learning rates are kept.

    Parameters
    ----------
    model : nn.Module
        The architecture.
    checkpoints : Checkpoints
        What the caller has (:class:`~aria_tda.attribution.registry.Checkpoints`).
    seed : int, >= 0
        Seed of the first draw.
    kinds : collection of {"ensemble", "trajectory", "final"}
        Which kinds to re-initialise (the others, and kinds not given, are kept).
    """

    def _list(items: Sequence[Any] | None) -> Sequence[Any] | None:
        if not items:
            return items
        return [reinitialized_state(model, c, seed=seed + i) for i, c in enumerate(items)]

    c = checkpoints
    return Checkpoints(
        ensemble=_list(c.ensemble) if "ensemble" in kinds else c.ensemble,
        trajectory=_list(c.trajectory) if "trajectory" in kinds else c.trajectory,
        learning_rates=c.learning_rates,
        final=(reinitialized_state(model, c.final, seed=seed)
               if "final" in kinds and c.final is not None else c.final),
    )


def _norm_checkpoint(c: Checkpoints) -> tuple[str, Any]:
    """Where the gradient norms are taken (module docstring): ``(label, checkpoint)``."""
    if c.final is not None:
        return "final", c.final
    if c.trajectory:
        return "trajectory[-1]", c.trajectory[-1]
    if c.ensemble:
        return "ensemble[0]", c.ensemble[0]
    raise ParameterError(expected("final", "a checkpoint (or a trajectory or an ensemble) to "
                                  "take the gradient norms at", None))


def training_gradient_norms(
    model: nn.Module, checkpoint: Any, train: Any, *, args: MethodArgs | None = None
) -> np.ndarray:
    r""":math:`\lVert\nabla_\theta\ell(s)\rVert_2` of every training window at one checkpoint.

    The exact (unprojected) per-sample gradients GradDot and TracIn take
    (:class:`~aria_tda.attribution.task.FastAttributionTask`), of ``args.loss``.

    Parameters
    ----------
    model : nn.Module
        The architecture; not modified.
    checkpoint : state dict or path
        One checkpoint.
    train : array [shape=(n_train, L)], int64
        Training windows.
    args : MethodArgs, optional
        Any method's arguments: ``loss``, ``batch_size``, ``device``, ``num_threads`` and
        ``progress`` are used (default: :class:`~aria_tda.attribution.GradientArgs`'s).

    Returns
    -------
    np.ndarray [shape=(n_train,)], float64
    """
    from aria_tda.attribution.gradient_similarity import GradientArgs

    a = GradientArgs() if args is None else resolve_args(MethodArgs, args, "gradient norms")
    model, train_t, _ = prepare_inputs(model, train, train)
    ckpts = load_checkpoints(single_checkpoint(checkpoint))
    task = build_task(model, ckpts, loss=a.loss, target=a.loss, objective="loss",
                      device=a.device)
    loader = make_loader(train_t, batch_size=a.batch_size)
    out = []
    with pinned_threads(a.num_threads):
        for g in iter_projected_gradients(task, loader, ckpt_idx=0, which="loss",
                                          projector=Projector(proj_dim=None),
                                          desc="gradient norms", progress_bar=a.progress):
            out.append(g.double().norm(dim=1).cpu())
    return torch.cat(out).numpy()


# ------------------------------------------------------------------------------------------
# the checks, run with the methods' own code
# ------------------------------------------------------------------------------------------


def _sanity_args(args: Any) -> SanityArgs:
    if args is None:
        return SanityArgs()
    if not isinstance(args, SanityArgs):
        what = "a SanityArgs (or None for its defaults)"
        raise ParameterError(expected("args", what, type(args).__name__))
    return args


def _method_args(method: str, options: Mapping[str, Any]) -> MethodArgs:
    name = check_choice("method", method, tuple(REGISTRY))
    return build_method_args([name], {name: dict(options)})[name]


def model_randomization(
    method: str,
    model: nn.Module,
    train: Any,
    queries: Any,
    *,
    ensemble: Sequence[Any] | None = None,
    trajectory: Sequence[Any] | None = None,
    learning_rates: Sequence[float] | None = None,
    final: Any = None,
    scores: Any = None,
    args: SanityArgs | None = None,
    **options: Any,
) -> RandomizationResult:
    """The model-randomisation test of one method (module docstring: what and the rule).

    Runs ``method`` as :func:`~aria_tda.attribution.run_method` does, once with the trained
    checkpoints (unless ``scores`` holds that result) and once with the checkpoints it reads
    re-initialised (:func:`randomized_checkpoints`), then :func:`summarize_randomization`.

    Parameters
    ----------
    method : {"TRAK", "TracIn", "GradDot", "GradCos", "LoGra", "FactGraSS"}
        A key of :data:`~aria_tda.attribution.REGISTRY`.
    model : nn.Module
        The architecture.
    train, queries : array [shape=(N, L)], int64
        Training windows (rows) and query windows (columns).
    ensemble, trajectory, learning_rates, final : checkpoints
        As in :func:`~aria_tda.attribution.run_method`.
    scores : array [shape=(n_train, n_test)], optional
        The method's scores with the trained checkpoints and these options, if already
        computed.
    args : SanityArgs, optional
        Seed, bootstrap replicates and level (default ``SanityArgs()``).
    **options : Any
        The method's arguments, as :func:`~aria_tda.attribution.run_method` takes them.

    Returns
    -------
    RandomizationResult
    """
    a = _sanity_args(args)
    margs = _method_args(method, options)
    model, train_t, query_t = prepare_inputs(model, train, queries)
    spec = REGISTRY[method]
    ckpts = Checkpoints(ensemble, trajectory, learning_rates, final)
    shape = (int(train_t.shape[0]), int(query_t.shape[0]))
    trained = (spec.run(model, train_t, query_t, ckpts, margs).scores if scores is None
               else check_matrix("scores", scores, shape))
    random = randomized_checkpoints(model, ckpts, seed=a.seed, kinds=(spec.checkpoints,))
    randomized = spec.run(model, train_t, query_t, random, margs).scores
    return summarize_randomization(trained, randomized, method=method, n_boot=a.n_boot,
                                   level=a.level, seed=a.seed)


def gradient_norm_bias(
    method: str,
    model: nn.Module,
    train: Any,
    queries: Any,
    *,
    ensemble: Sequence[Any] | None = None,
    trajectory: Sequence[Any] | None = None,
    learning_rates: Sequence[float] | None = None,
    final: Any = None,
    scores: Any = None,
    norms: Any = None,
    **options: Any,
) -> BiasResult:
    """The gradient-norm bias of one method (module docstring: what and the rule).

    Runs ``method`` as :func:`~aria_tda.attribution.run_method` does (unless ``scores``
    holds that result), takes the training windows' gradient norms with the method's ``loss``
    (:func:`training_gradient_norms`, at ``final``, else ``trajectory[-1]``, else
    ``ensemble[0]``; unless ``norms`` holds them), then :func:`summarize_norm_bias`.

    Parameters
    ----------
    method : {"TRAK", "TracIn", "GradDot", "GradCos", "LoGra", "FactGraSS"}
        A key of :data:`~aria_tda.attribution.REGISTRY`.
    model : nn.Module
        The architecture.
    train, queries : array [shape=(N, L)], int64
        Training windows (rows) and query windows (columns).
    ensemble, trajectory, learning_rates, final : checkpoints
        As in :func:`~aria_tda.attribution.run_method`.
    scores : array [shape=(n_train, n_test)], optional
        The method's scores with these checkpoints and options, if already computed.
    norms : array [shape=(n_train,)], optional
        The training gradient norms, if already computed.
    **options : Any
        The method's arguments, as :func:`~aria_tda.attribution.run_method` takes them.

    Returns
    -------
    BiasResult
    """
    margs = _method_args(method, options)
    model, train_t, query_t = prepare_inputs(model, train, queries)
    spec = REGISTRY[method]
    ckpts = Checkpoints(ensemble, trajectory, learning_rates, final)
    shape = (int(train_t.shape[0]), int(query_t.shape[0]))
    s = (spec.run(model, train_t, query_t, ckpts, margs).scores if scores is None
         else check_matrix("scores", scores, shape))
    where = "given"
    if norms is None:
        where, at = _norm_checkpoint(ckpts)
        norms = training_gradient_norms(model, at, train_t, args=margs)
    return summarize_norm_bias(s, norms, method=method, checkpoint=where,
                               loss=loss_name(margs.loss))


def sanity_report(randomization: RandomizationResult, bias: BiasResult) -> dict[str, Any]:
    """The ``"sanity"`` manifest entry of one score matrix (what :func:`read_sanity` returns).

    Parameters
    ----------
    randomization : RandomizationResult
        The method's randomisation test.
    bias : BiasResult
        The method's gradient-norm bias.

    Returns
    -------
    dict
        ``{"version": SANITY_VERSION, "randomization": {...}, "bias": {...}}``.
    """
    return {"version": SANITY_VERSION, "randomization": randomization.to_dict(),
            "bias": bias.to_dict()}


#: Method arguments that do not change the numbers (ignored when ``results`` are compared).
_RUN_ONLY = ("progress", "num_threads")


def _check_results(
    results: Any, margs: Mapping[str, MethodArgs], shape: tuple[int, int]
) -> dict[str, AttributionResult]:
    from aria_tda.manifest import diff_manifest

    if not isinstance(results, Mapping):
        raise ParameterError(expected("results", "a dict method -> AttributionResult "
                                      "(what run_methods returns)", type(results).__name__))
    out = {}
    for m, a in margs.items():
        r = results.get(m)
        if not isinstance(r, AttributionResult) or r.method != m:
            got = f"method {r.method!r}" if isinstance(r, AttributionResult) else r
            raise ParameterError(expected(f"results[{m!r}]", f"the AttributionResult of {m}",
                                          got))
        check_matrix(f"results[{m!r}].scores", r.scores, shape)
        wanted = {k: v for k, v in a.to_dict().items() if k not in _RUN_ONLY}
        lines = diff_manifest(r.parameters, wanted)
        if lines:
            raise ParameterError(
                f"results[{m!r}]: expected scores computed with the options asked for, got "
                "other settings: " + "; ".join(lines)
            )
        out[m] = r
    return out


def sanity_checks(
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
    results: Mapping[str, AttributionResult] | None = None,
    args: SanityArgs | None = None,
    out_dir: Any = None,
    row_ids: Any = None,
) -> dict[str, AttributionResult]:
    """Run several methods with their sanity checks, and save each matrix with them.

    Takes what :func:`~aria_tda.attribution.run_methods` takes. Computes the scores (unless
    ``results`` holds them), runs every method again on re-initialised checkpoints (one
    :func:`~aria_tda.attribution.run_methods` call: GradDot and GradCos still share a pass),
    takes the training gradient norms once per training loss, and returns each method's
    :class:`~aria_tda.attribution.AttributionResult` with :attr:`sanity` set to
    :func:`sanity_report` (the module docstring gives both checks and their rules).

    Parameters
    ----------
    methods : sequence of str
        Method names (keys of :data:`~aria_tda.attribution.REGISTRY`), distinct.
    model : nn.Module
        The architecture.
    train, queries : array [shape=(N, L)], int64
        Training windows (rows) and query windows (columns).
    ensemble, trajectory, learning_rates, final : checkpoints
        As in :func:`~aria_tda.attribution.run_methods`.
    options, common : dict, optional
        Per-method and shared arguments, as in :func:`~aria_tda.attribution.run_methods`.
    results : dict, optional
        What :func:`~aria_tda.attribution.run_methods` returned for the same methods, data,
        checkpoints and options (checked against the options; not recomputed).
    args : SanityArgs, optional
        Seed, bootstrap replicates and level (default ``SanityArgs()``).
    out_dir : path, optional
        Write ``<out_dir>/<method>.npy`` with its manifest, the checks under ``"sanity"``
        (:func:`read_sanity` reads them back); an earlier matrix of the same name is replaced.
    row_ids : array of str, optional
        Training-segment ids stored with each matrix.

    Returns
    -------
    dict
        Method name -> :class:`~aria_tda.attribution.AttributionResult` with ``sanity`` set,
        in the order asked.
    """
    a = _sanity_args(args)
    margs = build_method_args(methods, options, common)
    names = list(margs)
    model, train_t, query_t = prepare_inputs(model, train, queries)
    shape = (int(train_t.shape[0]), int(query_t.shape[0]))
    ckpts = Checkpoints(ensemble, trajectory, learning_rates, final)
    where, at = _norm_checkpoint(ckpts)
    if results is None:
        results = run_methods(names, model, train_t, query_t, ensemble=ensemble,
                              trajectory=trajectory, learning_rates=learning_rates, final=final,
                              options=options, common=common)
    trained = _check_results(results, margs, shape)
    random = randomized_checkpoints(model, ckpts, seed=a.seed,
                                    kinds={REGISTRY[m].checkpoints for m in names})
    randomized = run_methods(names, model, train_t, query_t, ensemble=random.ensemble,
                             trajectory=random.trajectory, learning_rates=learning_rates,
                             final=random.final, options=options, common=common)
    norms: dict[Any, np.ndarray] = {}
    out = {}
    for m in names:
        loss = margs[m].loss
        key = loss if isinstance(loss, str) else id(loss)
        if key not in norms:
            norms[key] = training_gradient_norms(model, at, train_t, args=margs[m])
        rnd = summarize_randomization(trained[m].scores, randomized[m].scores, method=m,
                                      n_boot=a.n_boot, level=a.level, seed=a.seed)
        bias = summarize_norm_bias(trained[m].scores, norms[key], method=m, checkpoint=where,
                                   loss=loss_name(loss))
        out[m] = dataclasses.replace(trained[m], sanity=sanity_report(rnd, bias))
    if out_dir is not None:
        for m in names:
            out[m].save(Path(out_dir) / f"{m}.npy", row_ids=row_ids)
    return out


# ------------------------------------------------------------------------------------------
# reading the checks back
# ------------------------------------------------------------------------------------------

_NUMBER = (lambda v: v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)),
           "a number or null")
_COUNT = (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
          "a non-negative integer")
_FLAG = (lambda v: isinstance(v, bool), "true or false")
#: Entry -> field -> (test, what the message says was expected).
_SCHEMA: dict[str, dict[str, tuple[Any, str]]] = {
    "randomization": {"mean": _NUMBER, "lo": _NUMBER, "hi": _NUMBER, "level": _NUMBER,
                      "n_queries": _COUNT, "n_undefined": _COUNT, "threshold": _NUMBER,
                      "flagged": _FLAG},
    "bias": {"median": _NUMBER, "share_above": _NUMBER, "median_magnitude": _NUMBER,
             "n_queries": _COUNT,
             "n_undefined": _COUNT, "threshold": _NUMBER, "flagged": _FLAG},
}


def _validate_sanity(data: Any, where: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise FileFormatError(f"{where}: {SANITY_KEY}: expected a JSON object, got "
                              f"{type(data).__name__}")
    if data.get("version") != SANITY_VERSION:
        raise FileFormatError(f"{where}: {SANITY_KEY}.version: expected {SANITY_VERSION}, got "
                              f"{data.get('version')!r}")
    for entry, fields in _SCHEMA.items():
        block = data.get(entry)
        if not isinstance(block, dict):
            raise FileFormatError(f"{where}: {SANITY_KEY}.{entry}: expected a JSON object, got "
                                  f"{type(block).__name__}")
        for name, (test, what) in fields.items():
            if name not in block or not test(block[name]):
                got = block.get(name, "<missing>")
                raise FileFormatError(f"{where}: {SANITY_KEY}.{entry}.{name}: expected {what}, "
                                      f"got {got!r}")
    return data


def read_sanity(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The sanity checks stored with a score file, or ``None`` when it has none.

    Parameters
    ----------
    path : path
        A score matrix (``.npy`` / ``.zarr``), e.g. one :func:`sanity_checks` wrote.

    Returns
    -------
    dict or None
        ``{"version", "randomization": {...}, "bias": {...}}`` (:func:`sanity_report`'s
        entry; each check's ``flagged``, its statistic, ``threshold`` and ``rule``); ``None``
        when the file has no ARIA manifest (not written by ARIA) or its manifest holds no
        checks.

    Raises
    ------
    FileFormatError
        if the path does not exist, or the stored entry is malformed (the message names the
        field).
    """
    from aria_tda.manifest import manifest_path, read_manifest

    p = check_existing_path("path", path)
    manifest = read_manifest(p)
    if manifest is None or SANITY_KEY not in manifest:
        return None
    return _validate_sanity(manifest[SANITY_KEY], f"manifest {str(manifest_path(p))!r}")
