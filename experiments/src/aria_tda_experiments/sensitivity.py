r"""TRAK hyper-parameter sensitivity: projection dimension × :math:`\lambda` (paper appendix).

An experiment (it evaluates every cell with ARIA's homogeneity and reads the benchmark's model,
corpus and query folders), so it lives beside the demo; ``aria_tda_experiments.sensitivity``
re-exports it from its old path.

For every ``(proj_dim, lam)`` cell the TRAK score matrix is computed and handed to ONE
evaluation call — by default ARIA's within-group homogeneity :math:`\bar z_c` at ``K`` per
evidence channel (:func:`zbar_evaluator`, built on :func:`aria_tda.homogeneity.run_homogeneity`)
— and the rows are collected into the results ``sensitivity`` table
(``proj_dim, lam, K, channel, zbar``; :mod:`aria_tda.results`).

Cost: each ensemble member's per-sample gradients are computed ONCE and projected to every
``proj_dim`` of the grid (the projection matrices are kept together, see
``max_projection_bytes``); every :math:`\lambda` reuses the same features (one
``k × k`` solve per member and :math:`\lambda`). The grid therefore costs about one TRAK run
plus the evaluations. Each cell equals :func:`aria_tda.attribution.trak` with the same
arguments.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda._checks import check_float, check_int
from aria_tda.attribution.base import (
    AttributionResult,
    prepare_inputs,
    scores_to_numpy,
)
from aria_tda.attribution.gradient_projection import DEFAULT_MAX_PROJECTION_BYTES, Projector
from aria_tda.attribution.task import (
    LossLike,
    build_task,
    load_checkpoints,
    loss_name,
    make_loader,
    nn,
    single_sample_functions,
)
from aria_tda.attribution.threads import pinned_threads
from aria_tda.attribution.trak_ensemble import (
    TrakAccumulator,
    TrakArgs,
    check_trak_lam,
    trak_features,
)
from aria_tda.errors import DataError, ParameterError, expected

__all__ = [
    "DEFAULT_LAMS",
    "DEFAULT_PROJ_DIMS",
    "SweepResult",
    "run_sensitivity",
    "trak_sensitivity",
    "zbar_evaluator",
]

#: Default grid (the paper's is 2048/4096 × {0, 1e-2, 1e-1, 1, 30, 100} at 200k-1M segments;
#: scaled to the benchmark's ~1-2k training windows so that lam = 0 stays invertible).
DEFAULT_PROJ_DIMS: tuple[int, ...] = (128, 256, 512)
DEFAULT_LAMS: tuple[float, ...] = (0.0, 0.01, 0.1, 1.0)

Evaluator = Callable[[np.ndarray], Any]


@dataclass(frozen=True)
class SweepResult:
    """Outcome of :func:`trak_sensitivity`.

    Attributes
    ----------
    table : pandas.DataFrame
        The ``sensitivity`` table: ``proj_dim, lam, K, channel, zbar`` (+ ``lds`` when a
        ground truth was given), one row per cell × K × channel.
    results : dict[(proj_dim, lam), AttributionResult]
        The score matrix of every cell.
    seconds : dict[str, float]
        ``"features"`` (gradients + projections + solves) and ``"evaluate"``.
    """

    table: Any
    results: dict[tuple[int, float], AttributionResult] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)


def zbar_evaluator(
    prepared: Any,
    *,
    ks: Sequence[int] = (300,),
    B: int = 200,
    seed: int = 0,
    n_jobs: int | None = None,
    progress: bool | None = None,
) -> Evaluator:
    r"""The ARIA step of the sweep: scores ``(n_train, T)`` → :math:`\bar z_c` per K and channel.

    Training windows are the tracks (:math:`S^{track} = S^{seg}`, no per-query normalisation,
    as in the paper's symbolic experiment). The null distribution is computed on the first
    call and reused for every later cell.

    Parameters
    ----------
    prepared : dict[channel, list[PreparedFeature]]
        Features indexed by the score matrix's rows (:func:`aria_tda.similarity.prepare_channels`).
    ks : sequence of int
        Group sizes (the paper's table: K = 300).
    B : int
        Random groups per K for the null.
    seed : int
        Seeds the null's random groups.
    n_jobs : int, optional
        Worker processes of :func:`aria_tda.homogeneity.run_homogeneity`.
    progress : bool, optional
        Force progress bars on/off.

    Returns
    -------
    callable
        ``evaluate(scores) -> DataFrame[K, channel, zbar]``.
    """
    from aria_tda.homogeneity import run_homogeneity

    state: dict[str, Any] = {"null": None}
    ks = [check_int(f"ks[{i}]", k, min_value=2) for i, k in enumerate(ks)]

    def evaluate(scores: np.ndarray) -> Any:
        res, null, _ = run_homogeneity(scores, prepared, ks=ks, B=B, seed=seed, null=state["null"],
                                       n_jobs=n_jobs, progress=progress)
        state["null"] = null
        return res.summary(n_boot=0)[["K", "channel", "zbar"]]

    return evaluate


def _check_grid(proj_dims: Sequence[Any], lams: Sequence[Any]) -> tuple[list[int], list[float]]:
    dims = [check_int(f"proj_dims[{i}]", k, min_value=1) for i, k in enumerate(proj_dims)]
    lam_list = [check_float(f"lams[{i}]", v, min_value=0.0) for i, v in enumerate(lams)]
    if not dims or len(set(dims)) != len(dims):
        what = "a non-empty list of distinct integers"
        raise ParameterError(expected("proj_dims", what, list(proj_dims)))
    if not lam_list or len(set(lam_list)) != len(lam_list):
        what = "a non-empty list of distinct numbers"
        raise ParameterError(expected("lams", what, list(lams)))
    return dims, lam_list


def trak_sensitivity(
    model: nn.Module,
    ensemble: Any,
    train: Any,
    queries: Any,
    *,
    evaluate: Evaluator | None,
    proj_dims: Sequence[int] = DEFAULT_PROJ_DIMS,
    lams: Sequence[float] = DEFAULT_LAMS,
    lds_truth: tuple[Any, Any] | None = None,
    loss: LossLike = "sequence",
    target: LossLike = "last_token",
    proj_type: str = "normal",
    batch_size: int = 32,
    seed: int = 0,
    max_projection_bytes: int = 2 * DEFAULT_MAX_PROJECTION_BYTES,
    num_threads: int | None = 1,
    out_dir: Any = None,
    row_ids: Any = None,
    progress: bool | None = None,
) -> SweepResult:
    r"""TRAK over the grid ``proj_dims × lams``, each cell evaluated by ``evaluate``.

    Parameters
    ----------
    model, ensemble, train, queries : see :func:`aria_tda.attribution.trak`
        As in :func:`aria_tda.attribution.trak` (``ensemble`` = its ``checkpoints``).
    evaluate : callable or None
        ``evaluate(scores (n_train, T)) -> DataFrame`` with columns ``K, channel, zbar``
        (:func:`zbar_evaluator`); ``None`` computes the score matrices only (one row per
        cell with ``K = -1``, ``channel = "-"``, ``zbar = NaN``, plus ``lds`` if given).
    proj_dims : sequence of int
        Projection dimensions of the grid (distinct).
    lams : sequence of float, >= 0
        ``lam = 0`` needs ``proj_dim < n_train``; the grid is checked before any work.
    lds_truth : (subsets, outputs), optional
        Adds the column ``lds`` (mean LDS of the cell, :func:`aria_tda.attribution.lds`).
    loss, target, proj_type, batch_size, seed, num_threads, progress : see trak
        As in :func:`aria_tda.attribution.trak`.
    max_projection_bytes : int
        Memory for the projection matrices of all ``proj_dims`` together; above it the
        largest are re-drawn per batch (slow but exact).
    out_dir : path, optional
        Save every cell's matrix as ``TRAK_k{proj_dim}_lam{lam}.npy`` with its manifest.
    row_ids : array of str, optional
        Training-segment ids stored with each saved matrix.

    Returns
    -------
    SweepResult
    """
    import pandas as pd

    model, train_t, query_t = prepare_inputs(model, train, queries)
    dims, lam_list = _check_grid(proj_dims, lams)
    args = TrakArgs(proj_dim=dims[0], lam=lam_list[0], loss=loss, target=target,
                    proj_type=proj_type, batch_size=batch_size, seed=seed, engine="aria",
                    max_projection_bytes=max_projection_bytes, num_threads=num_threads,
                    progress=progress)
    seed = args.seed
    n_train, n_test = int(train_t.shape[0]), int(query_t.shape[0])
    n_par = sum(p.numel() for p in model.parameters() if p.requires_grad)
    for k in dims:
        for lam in lam_list:
            check_trak_lam(lam, k, n_train, n_par)
    ckpts = load_checkpoints(ensemble, name="ensemble")
    # Keep the smaller matrices in memory first; the rest fall back to per-batch draws.
    budget, projectors = int(max_projection_bytes), []
    for k in dims:
        size = n_par * k * 4
        keep = size <= budget
        budget -= size if keep else 0
        projectors.append(Projector(proj_dim=k, seed=seed, proj_type=proj_type,
                                    max_bytes=size if keep else 0))
    task = build_task(model, ckpts, loss=loss, target=target, objective="margin", fast=True)
    prob_fn = single_sample_functions(task.get_model(), loss)["prob"]
    train_loader = make_loader(train_t, batch_size=args.batch_size)
    query_loader = make_loader(query_t, batch_size=args.batch_size)
    accs = [TrakAccumulator(lam_list) for _ in dims]
    t0 = time.perf_counter()
    with pinned_threads(num_threads):
        for c in range(len(ckpts)):
            phis, psis, q = trak_features(task, train_loader, query_loader, ckpt_idx=c,
                                          projector=projectors, prob_fn=prob_fn,
                                          progress_bar=progress)
            for acc, phi, psi in zip(accs, phis, psis, strict=True):
                acc.add(phi, psi, q)
            del phis, psis
    for proj in projectors:
        proj.release()
    t_features = time.perf_counter() - t0
    results: dict[tuple[int, float], AttributionResult] = {}
    rows = []
    t1 = time.perf_counter()
    for k, acc in zip(dims, accs, strict=True):
        for lam in lam_list:
            scores = scores_to_numpy(acc.scores(lam), n_train, n_test,
                                     f"TRAK(proj_dim={k}, lam={lam})")
            params = {**args.replace(proj_dim=k, lam=lam).to_dict(), "n_models": len(ckpts)}
            res = AttributionResult(scores, "TRAK", params, seed,
                                    t_features / (len(dims) * len(lam_list)))
            results[(k, lam)] = res
            if out_dir is not None:
                res.save(Path(out_dir) / f"TRAK_k{k}_lam{lam:g}.npy", row_ids=row_ids)
            cell = _evaluate_cell(evaluate, scores)
            if lds_truth is not None:
                from aria_tda.attribution.lds import lds

                cell["lds"] = lds(scores, *lds_truth).mean
            cell.insert(0, "lam", lam)
            cell.insert(0, "proj_dim", k)
            rows.append(cell)
    table = pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(
        columns=["proj_dim", "lam", "K", "channel", "zbar"])
    seconds = {"features": t_features, "evaluate": time.perf_counter() - t1}
    return SweepResult(table, results, seconds)


def _evaluate_cell(evaluate: Evaluator | None, scores: np.ndarray) -> Any:
    import pandas as pd

    if evaluate is None:
        return pd.DataFrame({"K": [-1], "channel": ["-"], "zbar": [np.nan]})
    out = evaluate(scores)
    df = pd.DataFrame(out)
    missing = [c for c in ("K", "channel", "zbar") if c not in df.columns]
    if missing:
        raise DataError(f"evaluate: returned a table without column(s) {missing}; "
                        f"has {list(df.columns)}")
    return df.reset_index(drop=True)


# ------------------------------------------------------------------------------------------
# file-level entry point (``aria-tda sensitivity``)
# ------------------------------------------------------------------------------------------


def _model_dirs(paths: Sequence[Any]) -> list[Path]:
    """Benchmark model directories from a list of them or from folders holding them."""
    from aria_tda.manifest import read_manifest

    def is_model(p: Path) -> bool:
        man = read_manifest(p) if p.is_dir() else None
        return man is not None and man.get("kind") == "aria_tda_experiments.model"

    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if is_model(p):
            out.append(p)
            continue
        inner = sorted(c for c in p.iterdir() if is_model(c)) if p.is_dir() else []
        if not inner:
            raise DataError(f"ensemble: {str(p)!r} is neither a benchmark model directory "
                            "nor a folder of them")
        out.extend(inner)
    return out


def _windows(path: Any, what: str) -> tuple[np.ndarray, np.ndarray | None]:
    """Windows (and their ids when known) from an ``.npy`` or a benchmark corpus/queries folder."""
    from aria_tda.errors import FileFormatError

    p = Path(path)
    if p.is_file() and p.suffix == ".npy":
        return np.load(p), None
    if p.is_dir() and what == "train":
        from aria_tda_experiments.corpus import load_corpus

        corpus = load_corpus(p)
        return corpus.train_tokens, corpus.train_meta["segment_id"].to_numpy(dtype=str)
    if p.is_dir() and what == "queries":
        from aria_tda_experiments.generate import load_queries

        return load_queries(p).tokens, None
    raise FileFormatError(f"{what}: expected an (N, L) .npy file or a benchmark {what} "
                          f"directory, got {str(p)!r}")


def run_sensitivity(
    *,
    ensemble: Sequence[Any],
    train: Any,
    queries: Any,
    features: Any,
    out: Any,
    proj_dims: Sequence[int] = DEFAULT_PROJ_DIMS,
    lams: Sequence[float] = DEFAULT_LAMS,
    ks: Sequence[int] = (300,),
    B: int = 200,
    loss: LossLike = "sequence",
    target: LossLike = "last_token",
    batch_size: int = 32,
    seed: int = 0,
    num_threads: int | None = 1,
    save_scores: bool = False,
    progress: bool | None = None,
) -> dict[str, Any]:
    """What ``aria-tda sensitivity`` does: load benchmark artefacts, sweep, write ``sensitivity``.

    Runs :func:`trak_sensitivity` with :func:`zbar_evaluator` and writes the results
    ``sensitivity`` table into ``out``.

    Parameters
    ----------
    ensemble : sequence of paths
        Benchmark model directories (:mod:`aria_tda_experiments.train`), or folders holding them.
    train : path
        Training windows: an ``(N, L)`` integer ``.npy`` or a benchmark corpus directory.
    queries : path
        Query windows: a ``(T, L)`` integer ``.npy`` or a benchmark queries directory.
    features : path
        A feature store whose rows are the training windows: matched by id when ``train`` is
        a corpus folder (its ``segment_id``), else taken in store order.
    out : path
        The results folder to write ``sensitivity.csv`` into.
    proj_dims, lams : sequences
        The grid (see :func:`trak_sensitivity`).
    ks : sequence of int
        Group sizes for z-bar.
    B : int
        Random groups per K for the null.
    loss, target, batch_size, seed, num_threads : see trak
        As in :func:`aria_tda.attribution.trak` (``seed`` also seeds the null).
    save_scores : bool
        Also write every cell's score matrix to ``out/sensitivity/``.
    progress : bool, optional
        Force progress bars on/off.

    Returns
    -------
    dict
        ``n_train, n_queries, n_models, seconds`` and ``zbar``: ``{channel: {"k/lam": value}}``
        at the first ``K``.
    """
    from aria_tda.attribution.task import load_checkpoint
    from aria_tda.features.store import FeatureStore
    from aria_tda.results import is_results_dir, write_results_meta, write_table
    from aria_tda.similarity import prepare_channels
    from aria_tda_experiments.train import load_trained

    out_p = Path(out)
    if out_p.exists() and not out_p.is_dir():  # refused before hours of gradients
        raise ParameterError(f"out: expected a results folder, got a file: {str(out_p)!r}")
    dirs = _model_dirs(ensemble)
    members = [load_trained(d) for d in dirs]
    model = members[0].model
    ckpts = [load_checkpoint(m.model.state_dict()) for m in members]
    train_w, train_ids = _windows(train, "train")
    query_w, _ = _windows(queries, "queries")
    store = FeatureStore.open(features)
    store_ids = np.asarray(store.track_ids, dtype=str)
    if train_ids is not None:
        pos = {t: i for i, t in enumerate(store_ids)}
        missing = [t for t in train_ids if t not in pos]
        if missing:
            raise DataError(f"features: {len(missing)} training segment(s) missing from the "
                            f"store, e.g. {missing[0]!r}")
        rows = np.array([pos[t] for t in train_ids], dtype=np.int64)
    elif store_ids.size == train_w.shape[0]:
        rows = None
    else:
        what = f"a store with one row per training window ({train_w.shape[0]})"
        raise DataError(expected("features", what, store_ids.size))
    prepared = prepare_channels(store, rows=rows)
    evaluate = zbar_evaluator(prepared, ks=ks, B=B, seed=seed, progress=progress)
    t0 = time.perf_counter()
    res = trak_sensitivity(
        model,
        ckpts,
        train_w,
        query_w,
        evaluate=evaluate,
        proj_dims=proj_dims,
        lams=lams,
        loss=loss,
        target=target,
        batch_size=batch_size,
        seed=seed,
        num_threads=num_threads,
        out_dir=Path(out) / "sensitivity" if save_scores else None,
        row_ids=train_ids,
        progress=progress,
    )
    seconds = time.perf_counter() - t0
    out_p.mkdir(parents=True, exist_ok=True)
    write_table(out_p, "sensitivity", res.table)
    if not is_results_dir(out_p):
        write_results_meta(
            out_p,
            {
                "study": {
                    "kind": "trak-sensitivity",
                    "K": list(ks),
                    "B": B,
                    "seed": seed,
                    "proj_dims": list(proj_dims),
                    "lams": list(lams),
                    "loss": loss_name(loss),
                    "target": loss_name(target),
                    "ensemble": [str(d) for d in dirs],
                },
                "settings": [],
                "channels": {c: [f.spec.name for f in v] for c, v in prepared.items()},
                "timings": {"sensitivity": seconds},
                "notes": ["written by 'aria-tda sensitivity'"],
            },
        )
    first = res.table[res.table.K == res.table.K.iloc[0]]
    zbar = {
        c: {f"{int(r.proj_dim)}/{r.lam:g}": round(float(r.zbar), 4) for r in g.itertuples()}
        for c, g in first.groupby("channel", sort=False)
    }
    return {
        "n_train": int(train_w.shape[0]),
        "n_queries": int(query_w.shape[0]),
        "n_models": len(ckpts),
        "K": int(first.K.iloc[0]),
        "zbar": zbar,
        "seconds": round(seconds, 2),
    }
