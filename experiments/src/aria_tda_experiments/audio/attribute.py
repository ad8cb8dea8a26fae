r"""Attribution per stage, LDS per stage, and planted-influence recall.

Each stage is attributed independently over its own segment set (paper §4.2): rows = the
stage's training segments (``StageData.segment_ids``), columns = its queries. Loss (training
side) and target (query side) are both the stage's continuation loss,
:class:`~aria_tda.attribution.losses.ContinuationLoss` ``(target_start)``: the mean next-token NLL
over the stage's own predicted part, the quantity the stage model is trained on.

Hyper-parameters (paper table "Attribution method hyperparameters", scaled)
----------------------------------------------------------------------------
The paper uses projection dimension 4096 for every method on a 24-layer, d=1024 model. The
stage models here have ~0.15-0.25 M parameters (2 layers, d=64), so :data:`STAGE_OPTIONS`
keeps the dattri defaults the symbolic benchmark was tuned with: TRAK and GradCos project to
``k = 512`` (dense Gaussian), LoGra and FactGraSS to ``k = 256 = 16^2`` *per nn.Linear layer*
(13 layers: 3328 dimensions in all). The regularisers are the paper's: TRAK
:math:`\lambda = 0.01` (absolute ridge on :math:`\Phi^\top\Phi`, dattri's definition, as the
paper), LoGra damping :math:`0.1\,\bar\lambda`, FactGraSS damping :math:`10^{-2}\,\bar\lambda`
with blow-up 4. :mod:`aria_tda.attribution`'s LoGra/FactGraSS ``damping`` is already *relative*
(:math:`c` in :math:`F + c\,\bar\lambda I`, :math:`\bar\lambda` the mean eigenvalue of the
layer's eFIM), so the paper's values map one to one (``damping=0.1`` / ``0.01``). Every value
used is recorded in the score manifest (``parameters``).

Scores are saved with :func:`aria_tda.scores.save_scores` at ``<out_dir>/<stage>/<method>.npy``
(``method`` and ``stage`` in the manifest, ``row_ids`` = segment ids, the query ids in
``parameters["query_ids"]``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda._checks import check_choice, check_int, check_int_list
from aria_tda.attribution import LDSResult, lds, model_outputs, run_methods
from aria_tda.attribution.base import AttributionResult
from aria_tda.attribution.losses import ContinuationLoss
from aria_tda.errors import DataError, ParameterError, expected
from aria_tda_experiments.audio.stages import StageData
from aria_tda_experiments.audio.training import stage_train_configs
from aria_tda_experiments.model import ModelConfig, MusicTransformer
from aria_tda_experiments.train import TrainConfig, TrainedModel, load_model, retrain_subsets

__all__ = [
    "AUDIO_METHODS",
    "STAGE_OPTIONS",
    "StageLDS",
    "attribute_stage",
    "planted_ranks",
    "planted_recall",
    "scores_path",
    "stage_lds",
]

#: The audio experiment's attribution methods (paper §4.2).
AUDIO_METHODS = ("TRAK", "FactGraSS", "GradCos", "LoGra")

#: Per-method hyper-parameters for the stage models (see the module docstring).
STAGE_OPTIONS: dict[str, dict[str, Any]] = {
    "TRAK": {"proj_dim": 512, "lam": 0.01},
    "GradCos": {"proj_dim": 512},
    "LoGra": {"proj_dim": 256, "damping": 0.1},
    "FactGraSS": {"proj_dim": 256, "blowup": 4, "damping": 0.01},
}

_ENGINE_METHODS = ("TRAK", "TracIn", "GradDot", "GradCos")


def scores_path(out_dir: str | os.PathLike[str], stage: str, method: str) -> Path:
    """Where :func:`attribute_stage` saves the ``(stage, method)`` score matrix.

    Parameters
    ----------
    out_dir : path
        The scores root.
    stage, method : str
        The setting.
    """
    return Path(out_dir) / stage / f"{method}.npy"


def _checkpoints(models: Sequence[Any]) -> tuple[MusicTransformer, list[dict[str, Any]]]:
    """Architecture (from member 0) and final state dicts of TrainedModels / model dirs."""
    if isinstance(models, (str, os.PathLike, TrainedModel)) or not len(models):
        what = "a non-empty list of TrainedModel or model directories"
        raise ParameterError(expected("models", what, models))
    arch: MusicTransformer | None = None
    states = []
    for m in models:
        net = m.model if isinstance(m, TrainedModel) else load_model(m)
        arch = arch or net
        states.append({k: v.detach().clone() for k, v in net.state_dict().items()})
    assert arch is not None
    return arch, states


def attribute_stage(
    data: StageData,
    queries: np.ndarray,
    *,
    models: Sequence[TrainedModel | str | os.PathLike[str]],
    query_ids: Sequence[str] | None = None,
    methods: Sequence[str] = AUDIO_METHODS,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    batch_size: int = 16,
    seed: int = 0,
    num_threads: int | None = 1,
    engine: str = "aria",
    out_dir: str | os.PathLike[str] | None = None,
    progress_bar: bool | None = None,
    query_start: int | None = None,
) -> dict[str, AttributionResult]:
    """Score every training segment of a stage against its queries, for several methods.

    Parameters
    ----------
    data : StageData
        The stage's training sequences (rows) and segment ids.
    queries : int array [shape=(T, L)]
        The stage's query sequences (:attr:`StageQueries.tokens[stage]
        <aria_tda_experiments.audio.generate.StageQueries>`).
    models : list of TrainedModel or model directories
        Member 0 is the stage model (GradCos, LoGra, FactGraSS read it); all of them are the
        TRAK ensemble (:func:`~aria_tda_experiments.audio.stages.train_stage` with ``n_models``).
    query_ids : sequence of str, optional
        Column ids recorded in the manifests (default ``q0000 ..``).
    methods : sequence of str
        Among :data:`aria_tda.attribution.REGISTRY` (TracIn is not supported: no trajectory).
    options : mapping, optional
        Per-method overrides of :data:`STAGE_OPTIONS`.
    batch_size : int
        Sequences per per-sample-gradient batch.
    seed : int
        Projection seed.
    num_threads : int, optional
        torch intra-op threads.
    engine : {"aria", "dattri"}
        For TRAK / GradCos: ARIA's faster path or dattri's own classes (same numbers).
    out_dir : path, optional
        Save each matrix at :func:`scores_path` ``(out_dir, stage, method)``.
    progress_bar : bool, optional
        Force the progress bars on/off.
    query_start : int, optional
        Position where the queries' target starts (default ``target_start``): for semantic
        queries whose first frames are the real prompt, the first generated position, so the
        target is the model's own continuation only (the training side keeps
        ``target_start``).

    Returns
    -------
    dict
        Method -> :class:`~aria_tda.attribution.AttributionResult` (scores ``(M, T)``).
    """
    q = np.asarray(queries)
    if q.ndim != 2 or q.shape[1] != data.layout.length:
        what = f"an int array (T, {data.layout.length}) of {data.name} sequences"
        raise ParameterError(expected("queries", what, q.shape))
    if "TracIn" in methods:
        raise ParameterError(expected("methods", "methods without TracIn", list(methods)))
    qids = ([f"q{j:04d}" for j in range(q.shape[0])] if query_ids is None
            else [str(x) for x in query_ids])
    if len(qids) != q.shape[0]:
        raise ParameterError(expected("query_ids", f"{q.shape[0]} ids", len(qids)))
    engine = check_choice("engine", engine, ("aria", "dattri"))
    arch, states = _checkpoints(models)
    loss = ContinuationLoss(data.target_start)
    target = _query_target(data, query_start)
    per_method: dict[str, dict[str, Any]] = {}
    for m in methods:
        per_method[m] = {**STAGE_OPTIONS.get(m, {}), **dict((options or {}).get(m, {}))}
        if m in _ENGINE_METHODS:
            per_method[m].setdefault("engine", engine)
    results = run_methods(
        list(methods), arch, data.tokens, q, ensemble=states, final=states[0],
        options=per_method,
        common={"loss": loss, "target": target, "batch_size": batch_size, "seed": seed,
                "num_threads": num_threads, "progress": progress_bar},
    )
    if out_dir is not None:
        from aria_tda.scores import save_scores

        for m, res in results.items():
            params = {**res.parameters, "n_models": len(states) if m == "TRAK" else 1,
                      "query_ids": qids, "run": {"seconds": round(res.seconds, 3)}}
            save_scores(res.scores, scores_path(out_dir, data.name, m), method=m,
                        stage=data.name, parameters=params, seed=res.seed,
                        row_ids=data.segment_ids)
    return results


@dataclass(frozen=True)
class StageLDS:
    """LDS of one stage.

    Attributes
    ----------
    subsets : np.ndarray [shape=(S, m)], int64
        Training rows of each retrained model.
    outputs : np.ndarray [shape=(S, T)], float64
        :math:`-\\ell_{cont}(q)` of every query under every retrained model.
    results : dict
        Method -> :class:`~aria_tda.attribution.LDSResult`.
    """

    subsets: np.ndarray
    outputs: np.ndarray
    results: dict[str, LDSResult]


def stage_lds(
    data: StageData,
    queries: np.ndarray,
    scores: Mapping[str, Any],
    *,
    model_config: ModelConfig | None = None,
    train_config: TrainConfig | None = None,
    n_subsets: int = 32,
    fraction: float = 0.5,
    seed: int = 0,
    out_dir: str | os.PathLike[str] | None = None,
    n_jobs: int = 1,
    progress_bar: bool | None = None,
    query_start: int | None = None,
) -> StageLDS:
    """LDS of a stage: retrain on random subsets with the stage loss, correlate (paper §4.1).

    Each subset model is trained like the stage model (same ``model_config``,
    ``train_config`` with ``target_start`` set, seed ``seed``: shared initialisation); its
    output for query ``q`` is :math:`-\\ell_{cont}(q)` with the stage's continuation target,
    the quantity attributed.

    Parameters
    ----------
    data : StageData
        The stage's training sequences.
    queries : int array [shape=(T, L)]
        The stage's queries.
    scores : mapping
        Method -> ``(M, T)`` scores (arrays or :class:`~aria_tda.attribution.AttributionResult`).
    model_config, train_config : optional
        As the stage model was trained (:func:`~aria_tda_experiments.audio.stages.train_stage`).
    n_subsets : int
        Retrained models (>= 32 recommended).
    fraction : float
        Subset size as a fraction of the segments.
    seed : int
        Draws the subsets and seeds the models.
    out_dir : path, optional
        Keep the retrained models there (resumable).
    n_jobs : int
        Models trained in parallel processes.
    progress_bar : bool, optional
        Force the progress bar on/off.
    query_start : int, optional
        Position where the queries' target starts (default ``target_start``): for semantic
        queries whose first frames are the real prompt, the first generated position, so the
        target is the model's own continuation only (the training side keeps
        ``target_start``).
    """
    cfg, tcfg = stage_train_configs(data, model_config, train_config)
    retrains = retrain_subsets(data.tokens, n_subsets=n_subsets, fraction=fraction, seed=seed,
                               model_config=cfg, train_config=tcfg, out_dir=out_dir,
                               n_jobs=n_jobs, progress_bar=progress_bar)
    outputs = model_outputs(retrains.models, queries, target=_query_target(data, query_start))
    results = {m: lds(np.asarray(getattr(s, "scores", s)), retrains.indices, outputs)
               for m, s in scores.items()}
    return StageLDS(subsets=retrains.indices, outputs=outputs, results=results)


def _query_target(data: StageData, query_start: int | None) -> ContinuationLoss:
    """The queries' target: the stage's continuation from ``query_start`` (default: its own
    ``target_start``; later when the start of the target is a real prompt, not generated)."""
    if query_start is None:
        return ContinuationLoss(data.target_start)
    start = check_int("query_start", query_start, min_value=data.target_start,
                      max_value=data.layout.length - 1)
    return ContinuationLoss(start)


def _track_scores(scores: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean segment score per track ``(n_tracks, T)`` and the tracks, in first-seen order."""
    tracks, first, inverse = np.unique(rows, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    remap = np.empty_like(order)
    remap[order] = np.arange(order.size)
    codes = remap[inverse]
    sums = np.zeros((tracks.size, scores.shape[1]))
    np.add.at(sums, codes, scores)
    return sums / np.bincount(codes)[:, None], tracks[order]


def planted_ranks(
    scores: Any,
    segment_track_ids: Sequence[str],
    query_source_work: Sequence[str | None],
    track_work: Mapping[str, str],
    *,
    level: str = "segment",
) -> np.ndarray:
    """Rank of the best-scored item of each planted query's source work (1 = top).

    ``level="segment"`` ranks the ``M`` segments; ``"track"`` first averages each track's
    segment scores (the ranking of ARIA's ``S_track`` under per-query z-scoring) and ranks
    tracks. The rank of a source item with score ``s`` is the number of items scoring ``>= s``
    (ties count against the method; a constant column ranks last).

    Parameters
    ----------
    scores : array [shape=(M, T)]
        Higher = more influential.
    segment_track_ids : sequence of str [shape=(M,)]
        Track of each row (``StageData.track_ids``).
    query_source_work : sequence [shape=(T,)]
        Work a planted query was rendered from; ``None`` or ``""`` for other queries (left
        out).
    track_work : mapping
        Training track id -> work id (every row's track must be there).
    level : {"segment", "track"}
        Rank segments or tracks.

    Returns
    -------
    np.ndarray [shape=(n_planted,)], int64
        In query order, planted queries only.
    """
    s = np.asarray(scores, dtype=np.float64)
    rows = np.asarray(segment_track_ids, dtype=str)
    src = list(query_source_work)
    if s.ndim != 2 or s.shape != (rows.size, len(src)):
        what = f"(M, T) = ({rows.size}, {len(src)}) from segment_track_ids / query_source_work"
        raise ParameterError(expected("scores", what, s.shape))
    level = check_choice("level", level, ("segment", "track"))
    if level == "track":
        s, rows = _track_scores(s, rows)
    missing = sorted({t for t in rows.tolist() if t not in track_work})
    if missing:
        raise DataError(expected("track_work", "a work for every training track", missing[:5]))
    works = np.asarray([track_work[t] for t in rows.tolist()], dtype=str)
    ranks = []
    for j, w in enumerate(src):
        if w is None or w == "":
            continue
        mask = works == str(w)
        if not mask.any():
            raise DataError(f"planted query {j}: its source work {w!r} has no training segment")
        best = s[mask, j].max()
        ranks.append(int(np.count_nonzero(s[:, j] >= best)))
    return np.asarray(ranks, dtype=np.int64)


def planted_recall(
    scores: Any,
    segment_track_ids: Sequence[str],
    query_source_work: Sequence[str | None],
    track_work: Mapping[str, str],
    ks: Sequence[int] = (1, 5, 10, 50),
    *,
    level: str = "segment",
) -> dict[int, float]:
    """Planted-influence recall@K: how often the source work is among the top-K items.

    A planted query is a generation from a held-out *version* of a training work (the
    corpus's ``planted`` split); its source work's other versions are in training. For each
    planted query, recall@K is 1 if at least one segment (``level="track"``: track) of one of
    the source work's training tracks is among the K highest-scored rows, else 0
    (:func:`planted_ranks` ``<= K``, ties counted against the method); the result is the mean
    over planted queries. Chance level at the segment level is about
    ``1 - C(M - m, K) / C(M, K)`` for ``m`` source-work segments.

    Parameters
    ----------
    scores : array [shape=(M, T)]
        Higher = more influential.
    segment_track_ids : sequence of str [shape=(M,)]
        Track of each row.
    query_source_work : sequence [shape=(T,)]
        Source work of each planted query; ``None``/``""`` for others (left out).
    track_work : mapping
        Training track id -> work id.
    ks : sequence of int
        The K values (>= 1).
    level : {"segment", "track"}
        Rank segments or track means (see :func:`planted_ranks`).

    Returns
    -------
    dict
        K -> recall in [0, 1] (NaN when there is no planted query).
    """
    ks = check_int_list("ks", list(ks), min_value=1)
    ranks = planted_ranks(scores, segment_track_ids, query_source_work, track_work, level=level)
    if ranks.size == 0:
        return {k: float("nan") for k in ks}
    return {k: float(np.mean(ranks <= k)) for k in ks}
