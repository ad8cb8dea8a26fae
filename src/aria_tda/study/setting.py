r"""One setting of a study: diagnostics, S_track, homogeneity, alignment — cached as a step.

:func:`run_setting` computes every table of one setting (original and, unless disabled, the
rank-1 residual) into ``OUTPUT/.cache/<slot>/`` (a :class:`aria_tda._steps.Step`; the slot is
:func:`slot_name`, unique per setting name), or reads them back when the score matrix, segment
map, feature store (their content digests) and study parameters are those it was computed
from. A setting that fails leaves no step behind (neither half-written tables nor a record
marked "running"): the next run computes it from scratch.

The step's record holds the digest of every file it wrote; a cached entry whose files are
missing, damaged or of another shape, or whose record is not readable, is recomputed with one
:class:`~aria_tda.errors.AriaWarning` naming it (:func:`aria_tda.study.cache.load_cached`),
never a traceback. The step's key (:func:`setting_step`) names what the tables depend on; how a
step is found, checked and read back is :mod:`aria_tda.study.cache`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda._io import atomic_path, write_json
from aria_tda._steps import Step
from aria_tda.study.aspects import (
    aspect_tables,
    item_table,
    query_feature_values,
    query_sets,
)
from aria_tda.study.cache import TABLES, compute_into, load_cached, setting_step
from aria_tda.study.config import N_PAIRS, SettingSpec, StudySpec
from aria_tda.study.inputs import (
    align_tracks,
    open_setting_scores,
    read_queries,
    track_ids_of,
)
from aria_tda.study.pool import anchor_cache, null_for, prepared_for
from aria_tda.study.stage_read import read_stage

__all__ = ["compute_step", "compute_tables", "run_setting"]



def _topk_frame(groups: np.ndarray, scores: np.ndarray, track_ids: np.ndarray, k: int) -> Any:
    import pandas as pd

    t = groups.shape[0]
    k = min(k, groups.shape[1])
    return pd.DataFrame({
        "query": np.repeat(np.arange(t), k),
        "rank": np.tile(np.arange(1, k + 1), t),
        "track_id": track_ids[groups[:, :k].reshape(-1)],
        "score": scores[:, :k].reshape(-1),
    })


def _variant_tables(
    s_track: Any,
    prepared: dict[str, list[Any]],
    null: Any,
    pool: np.ndarray,
    track_ids: np.ndarray,
    spec: StudySpec,
    progress: bool | None,
    constant: np.ndarray,
    client: Any = None,
) -> dict[str, Any]:
    from aria_tda.diagnostics.concentration import concentration_from_groups
    from aria_tda.homogeneity import homogeneity, top_k_groups

    groups, scores = top_k_groups(s_track, max(spec.K), pool=pool, chunk_rows=spec.chunk_rows,
                                  return_scores=True, progress=progress, client=client)
    # the track-level top-K concentration from the same groups (the pool's tracks are ranked)
    conc = concentration_from_groups(groups, (1, *spec.K), n_rows=int(np.count_nonzero(pool)),
                                     level="track", scores=s_track, pool=pool, ids=track_ids)
    res = homogeneity(groups, prepared, null, ks=list(spec.K), evidence_k=spec.K_report,
                      n_pairs=N_PAIRS, progress=progress, constant=constant, client=client)
    summary = res.summary(n_boot=spec.n_bootstrap, seed=spec.seed)
    return {
        "homogeneity": summary,
        "query_z": res.query_frame(),
        "pairs": res.pairs_frame(track_ids=track_ids),
        "topk": _topk_frame(groups, scores, track_ids, spec.K_report),
        "concentration": conc,
        "groups": groups,
    }


def _alignment_rows(s_track: Any, store: Any, rows: np.ndarray, present: np.ndarray,
                    channels: list[str], chunk_rows: int | None,
                    feature_set: str, r1: Any = None) -> list[dict[str, Any]]:
    """The alignment of S_track's :math:`u_1` with each channel (``r1``: its leading triple
    when the stage read summed its Gram, else two passes over S_track find it)."""
    from aria_tda.alignment import channel_alignment, sequence_histogram
    from aria_tda.features.registry import channels as registry_channels
    from aria_tda.scores import rank1

    if r1 is None:
        r1 = rank1(s_track, chunk_rows=chunk_rows)
    u1 = r1.u1[present]
    store_rows = rows[present]
    by_channel: dict[str, dict[str, np.ndarray]] = {}
    for channel, specs in registry_channels(store.modality, feature_set=feature_set).items():
        if channel not in channels:
            continue
        groups = {}
        for s in specs:
            if s.name not in store.feature_names:
                continue
            if s.kind == "vector":
                groups[s.name] = store.vectors(s.name)[store_rows]
            else:
                seqs = store.sequences(s.name)
                groups[s.name] = sequence_histogram([
                    np.asarray(seqs[i] if seqs[i] is not None else [], dtype=np.int64)
                    for i in store_rows
                ])
        if groups:
            by_channel[channel] = groups
    out = []
    for channel, res in channel_alignment(u1, by_channel).items():
        out.append({"channel": channel, **res.to_dict()})
    return out


def run_setting(
    setting: SettingSpec,
    spec: StudySpec,
    store: Any,
    store_fp: dict[str, Any],
    cache_root: Path,
    nulls: dict[str, Any],
    prepared_cache: dict[bytes, Any],
    *,
    progress: bool | None,
    log: Callable[[str], None],
) -> dict[str, Any]:
    """All tables of one setting, from the cache when inputs and parameters are unchanged.

    Parameters
    ----------
    setting : SettingSpec
        The setting to analyse.
    spec : StudySpec
        The study (K, B, seed, bootstrap, residual, channels, chunk size).
    store : FeatureStore
        The study's feature store.
    store_fp : dict
        Fingerprint of the feature store (part of the cache key).
    cache_root : Path
        ``OUTPUT/.cache``; the setting's step is a folder in it.
    nulls : dict
        Nulls computed so far in this run, by track pool (filled in here).
    prepared_cache : dict
        Prepared features computed so far in this run, by row order (filled in here).
    progress : bool or None
        Progress bars.
    log : callable
        Called with each log line.

    Returns
    -------
    dict
        ``diagnostics`` and ``alignment`` (JSON-able), ``timings`` and one DataFrame per name
        in :data:`TABLES`.
    """
    step = setting_step(setting, spec, store_fp, cache_root)
    cached = load_cached(step, setting.name, log)
    if cached is not None:
        return cached
    return compute_step(step, setting, spec, store, nulls, prepared_cache, progress=progress,
                        log=log)


def compute_step(
    step: Step,
    setting: SettingSpec,
    spec: StudySpec,
    store: Any,
    nulls: dict[str, Any],
    prepared_cache: dict[bytes, Any],
    *,
    progress: bool | None,
    log: Callable[[str], None],
    client: Any = None,
) -> dict[str, Any]:
    """Compute a setting into its (cleared) step and mark it complete; see :func:`run_setting`.

    The step protocol (a failure removes the step, the S_track files never stay, the record
    keeps every file's digest) is :func:`aria_tda.study.cache.compute_into`; the work is
    :func:`compute_tables`.

    Parameters
    ----------
    step : Step
        From :func:`aria_tda.study.cache.setting_step`.
    setting, spec, store, nulls, prepared_cache, progress, log
        As for :func:`run_setting`.
    client : dask.distributed.Client, optional
        Run the setting's passes (diagnostics, S_track, null, top-K, homogeneity) as Dask
        tasks over row ranges / query blocks (:mod:`aria_tda.study.cluster` does this for a study
        with a single setting to compute); the tables are the same.
    """
    return compute_into(step, lambda work: compute_tables(
        setting, spec, store, work, nulls, prepared_cache, progress=progress, log=log,
        client=client))


def compute_tables(
    setting: SettingSpec,
    spec: StudySpec,
    store: Any,
    work: Path,
    nulls: dict[str, Any],
    prepared_cache: dict[bytes, Any],
    *,
    progress: bool | None,
    log: Callable[[str], None],
    client: Any = None,
) -> dict[str, Any]:
    """Every table of a setting, computed and written into ``work``, top to bottom.

    1. one read of the scores (:func:`aria_tda.study.stage_read.read_stage`): the diagnostics,
       the segment-level top-K concentration and both ``S_track``;
    2. per variant (original, residual): the pool and its null, the top-K groups, the
       homogeneity tables and the distinctive reading;
    3. the alignment of the original ``S_track``'s :math:`u_1`;
    4. the tables and the diagnostics written (Parquet, JSON).

    Parameters
    ----------
    setting, spec, store, nulls, prepared_cache, progress, log, client
        As for :func:`compute_step`.
    work : Path
        The step's folder.
    """
    import pandas as pd

    from aria_tda.homogeneity import constant_queries

    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    log(f"{setting.name}: reading the scores (diagnostics, top-K, S_track"
        f"{' and its rank-1 residual' if spec.residual else ''})")
    scores = open_setting_scores(setting)
    # the study's K list (and the top-1) measured in the same pass
    stage = read_stage(setting, store, work=work, topk=(1, *spec.K), residual=spec.residual,
                       chunk_rows=spec.chunk_rows, progress=progress, client=client)
    diag = stage.diagnostics
    d = diag.to_dict() if hasattr(diag, "to_dict") else dataclasses.asdict(diag)
    # the study gives its own verdict (track level, reliability.csv), not the segment level one
    d = {k: v for k, v in d.items() if k not in {"v1", "u1", "constant_indices", "verdict"}}
    d["v1_constancy"] = float(diag.v1_constancy)
    timings["read_scores"] = time.perf_counter() - t0
    for rec in stage.passes:
        log(f"{setting.name}:   {rec['pass']}: {rec['seconds']:.1f} s, "
            f"peak {rec['peak_rss_mb']:.0f} MB")

    tables: dict[str, list[Any]] = {name: [] for name in TABLES}
    alignment: list[dict[str, Any]] = []
    # what the distinctive reading reads beside the scores: the queries' own features (its
    # anchor, when the study names them) and the sets of queries sharing a confound value
    queries = read_queries(spec.queries, int(scores.shape[1]))
    # read once per process: the anchor's scores are then computed once for every setting
    # and variant over the same features and pool (AnchorCache keys on these objects)
    qv_key = b"aspects:query-values:%d" % int(scores.shape[1])
    if qv_key not in prepared_cache:
        prepared_cache[qv_key] = query_feature_values(spec, int(scores.shape[1]), queries)
    query_values = prepared_cache[qv_key]
    anchors = prepared_cache.setdefault(b"aspects:anchor-cache", anchor_cache())
    sets = query_sets(spec, queries)
    variants = ("original", "residual") if spec.residual else ("original",)
    normalize_used: str = stage.normalize
    d["normalize_used"] = normalize_used
    n_nulls = len(nulls)
    degenerate: np.ndarray | None = None
    for variant in variants:
        t0 = time.perf_counter()
        src = stage.original if variant == "original" else stage.residual
        track_ids = track_ids_of(src, store, setting.name)
        rows, present = align_tracks(track_ids, store, max_missing=spec.max_missing_fraction,
                                     setting=setting.name)
        prepared, pool = prepared_for(prepared_cache, store, rows, present, spec)
        timings[f"pool_{variant}"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        log(f"{setting.name}: homogeneity ({variant}, K = {list(spec.K)}, B = {spec.B})")
        counts = stage.segment_counts  # the segments per S_track row (None: not aggregated)
        null = null_for(nulls, prepared, pool, rows, spec, progress, int(src.shape[1]),
                         client=client, segment_counts=counts, normalize=normalize_used)
        # a query that is degenerate on the original matrix stays excluded on its residual
        # (the residual of a constant column is not constant, but it ranks nothing real)
        constant = constant_queries(src, pool=pool, chunk_rows=spec.chunk_rows)
        if degenerate is not None and degenerate.shape == constant.shape:
            constant = constant | degenerate
        degenerate = constant
        vt = _variant_tables(src, prepared, null, pool, track_ids, spec, progress, constant,
                             client=client)
        conc = vt.pop("concentration")
        groups = vt.pop("groups")
        if variant == "original":
            d["concentration_track"] = conc.to_dict()
        vt["null"] = null.to_frame()
        for name, df in vt.items():
            df.insert(0, "variant", variant)
            df.insert(0, "setting", setting.name)
            tables[name].append(df)
        timings[f"homogeneity_{variant}"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        log(f"{setting.name}: distinctive reading ({variant}, K = {spec.K_aspects}, "
            f"anchored on the {'query and ' if query_values is not None else ''}group)")
        for name, df in aspect_tables(src, prepared, null, pool, spec, constant,
                                      query_values=query_values, sets=sets,
                                      segment_counts=counts, normalize=normalize_used,
                                      progress=progress, client=client,
                                      anchor_cache=anchors).items():
            df.insert(0, "variant", variant)
            df.insert(0, "setting", setting.name)
            tables[name].append(df)
        items = item_table(groups, prepared, pool, query_values, track_ids, constant,
                           anchor_cache=anchors)
        items.insert(0, "variant", variant)
        items.insert(0, "setting", setting.name)
        tables["item_alignment"].append(items)
        timings[f"aspects_{variant}"] = time.perf_counter() - t0
        if variant == "original":
            t0 = time.perf_counter()
            alignment = _alignment_rows(src, store, rows, present, list(prepared),
                                        spec.chunk_rows, spec.feature_set,
                                        stage.original_rank1)
            timings["alignment"] = time.perf_counter() - t0

    result: dict[str, Any] = {"diagnostics": d, "alignment": alignment, "timings": timings,
                              "passes": list(stage.passes),
                              "nulls_computed": len(nulls) - n_nulls}
    write_json(work / "diagnostics.json", d)
    write_json(work / "alignment.json", alignment)
    for name, parts in tables.items():
        df = pd.concat(parts, ignore_index=True)
        with atomic_path(work / f"{name}.parquet") as tmp:
            df.to_parquet(tmp, index=False)
        result[name] = df
    return result
