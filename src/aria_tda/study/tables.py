"""The study's results folder: every table from the per-setting results, published at once.

:func:`write_tables` turns the per-setting results of :func:`aria_tda.study.setting.run_setting`
into the tables of :mod:`aria_tda.results` (verdicts, the ranking that excludes collapsed
settings, the confound breakdown, the track and query labels) in a staging folder;
:func:`publish` moves them into the results folder in one step and removes this runner's
tables that an earlier run wrote and this one did not.
"""

from __future__ import annotations

import os
import platform
import time
from pathlib import Path
from typing import Any

from aria_tda._io import is_temporary, remove_path
from aria_tda.diagnostics.dependence import largest_excess
from aria_tda.errors import DataError, expected
from aria_tda.manifest import sanity_columns
from aria_tda.results import RUN_TABLES  # tables this runner writes (others are left alone)
from aria_tda.study.aspects import ASPECT_TABLES
from aria_tda.study.config import StudySpec, jsonable
from aria_tda.verdict import Verdict, classify, concentration_signal, rank_settings

__all__ = ["RUN_TABLES", "publish", "write_tables"]


_VERSIONED = ("aria-tda", "numpy", "scipy", "pandas", "pyarrow", "zarr", "numba", "torch",
              "dattri", "librosa", "music21")


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version()}
    for pkg in _VERSIONED:
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            continue
    return out


def publish(staging: Path, out: Path, *, delay: float = 0.0) -> None:
    """Move the finished tables into ``out``; drop this runner's stale tables.

    Parameters
    ----------
    staging : Path
        The folder :func:`write_tables` wrote into (inside ``out``, so moves are renames).
    out : Path
        The results folder.
    delay : float
        Seconds to wait after the first table (a test hook: a run killed while publishing).
    """
    from aria_tda.results import TABLES

    made = {f.name for f in staging.iterdir()}
    for i, name in enumerate(sorted(made)):
        os.replace(staging / name, out / name)
        if i == 0 and delay > 0:
            time.sleep(delay)
    for name in RUN_TABLES:
        filename = TABLES[name].filename
        if filename not in made and (out / filename).exists():
            remove_path(out / filename)


def _confound_rows(query_z: Any, queries: Any, columns: tuple[str, ...],
                   k: int) -> list[dict[str, Any]]:
    from aria_tda.confound import stratify

    rows: list[dict[str, Any]] = []
    if queries is None or not columns:
        return rows
    sub = query_z[query_z["K"] == k]
    for column in columns:
        if column not in queries.columns:
            raise DataError(
                expected("confound", f"columns of the queries file {list(queries.columns)}",
                         column)
            )
        for channel, grp in sub.groupby("channel", sort=False):
            z = grp.sort_values("query")
            labels = queries[column].reindex(z["query"].to_numpy()).tolist()
            strata, sd = stratify(z["z"].to_numpy(), labels)
            rows += [
                {"channel": channel, "column": column, "stratum": s.stratum, "n": s.n,
                 "mean_z": s.mean_z, "pos": s.pos, "sig": s.sig, "sd_across": sd,
                 "small": s.small}
                for s in strata
            ]
    return rows


def _reliability(spec: StudySpec, results: dict[str, dict[str, Any]],
                 labels: dict[str, str] | None = None) -> tuple[Any, dict]:
    import pandas as pd

    verdicts: dict[str, Verdict] = {}
    rel_rows = []
    for setting in spec.settings:
        d = results[setting.name]["diagnostics"]
        # the paper's collapse is about tracks: the verdict reads the track-level top-K
        # (the homogeneity groups), else the segment level of the diagnostics pass
        conc = d.get("concentration_track") or d.get("concentration")
        if conc and labels and d.get("concentration_track"):  # hubs named by their tracks
            conc = _labelled_hubs(conc, labels)
        v = classify(kappa=d["kappa"], r1=d["r1"], r2_5=d["r2_5"], p=d["p"],
                     v1_constancy=d.get("v1_constancy"), concentration=conc)
        verdicts[setting.name] = v
        row = {"setting": setting.name, "method": setting.method, "stage": setting.stage,
               "n_train": d["n_train"], "n_queries": d["n_queries"], "kappa": d["kappa"],
               "r1": d["r1"], "r2_5": d["r2_5"], "p": d["p"],
               "v1_constancy": d.get("v1_constancy"),
               "constant_columns": d.get("constant_columns", 0), "verdict": v.label,
               "verdict_reason": v.reason, "verdict_findings": " | ".join(v.findings),
               "normalize": setting.normalize,
               "normalize_used": d.get("normalize_used", setting.normalize)}
        for i, r in enumerate(d.get("energy_ratios", [])[:10]):
            row[f"energy_{i + 1}"] = r
        if conc:
            row.update(_concentration_row(conc, spec.K_report))
        # the attribution sanity checks, where ARIA computed the scores and ran them
        row.update(sanity_columns(None if setting.scores_from_embeddings else setting.scores))
        rel_rows.append(row)
    return pd.DataFrame(rel_rows), verdicts


def _labelled_hubs(conc: dict[str, Any], labels: dict[str, str]) -> dict[str, Any]:
    """The track-level concentration with each hub's ``label`` (the tracks table's), so a
    verdict names the track a reader can find, not only its id."""
    dep = dict(conc.get("dependence") or {})
    hubs = []
    for h in dep.get("hubs") or []:
        lab = labels.get(str(h.get("row")))
        hubs.append({**h, "label": lab} if lab and lab != str(h.get("row")) else dict(h))
    return {**conc, "dependence": {**dep, "hubs": hubs}}


def _concentration_row(conc: dict[str, Any], k_report: int) -> dict[str, Any]:
    """The reliability table's top-K columns (:data:`aria_tda.results.CONCENTRATION_COLUMNS`)
    from a concentration's ``to_dict()``: the overlap and distinct ratio at ``K_report``
    (clipped to the rows ranked)."""
    per_k = {int(a["K"]): a for a in conc.get("per_k", [])}
    k = min(int(k_report), int(conc["n_rows"]))
    at = per_k.get(k, {})
    sig = concentration_signal(conc)
    row = {"top1_share": conc.get("top1_share"), "topk_overlap": at.get("mean_overlap"),
           "topk_distinct": at.get("distinct_ratio"),
           "topk_excess": None if sig is None else sig[0], "topk_K": k,
           "topk_level": conc.get("level"), "topk_rows": int(conc["n_rows"])}
    dep = conc.get("dependence")
    if dep:
        best = largest_excess(dep) if dep.get("ks") else None
        row.update({
            "n_hubs": dep.get("n_hubs"),
            "hubs": ";".join(f"{h['row']}:{h['share']:.4g}:{h['times_chance']:.4g}"
                             for h in dep.get("hubs", [])),
            "unlike_overlap": None if best is None else best[2],
            "alike_overlap": None if best is None else best[3],
            "unlike_excess": None if best is None else best[0],
            "follows_similarity": dep.get("follows_similarity"),
            "kappa_signed": dep.get("kappa_signed"), "offset_rho": dep.get("offset_rho"),
        })
        if best is not None:
            row["topk_K"] = best[1]
    return row


def _tracks(store: Any) -> Any:
    tracks = store.metadata.reset_index()
    if "track_id" not in tracks.columns:
        tracks = tracks.rename(columns={tracks.columns[0]: "track_id"})
    if "label" not in tracks.columns:
        for cand in ("title", "name", "work", "work_id"):
            if cand in tracks.columns:
                tracks["label"] = tracks[cand].astype(str)
                break
        else:
            tracks["label"] = tracks["track_id"].astype(str)
    return tracks


def write_tables(out: Path, spec: StudySpec, store: Any, results: dict[str, dict[str, Any]],
                 queries: Any, t_start: float) -> dict[str, Any]:
    """Write every table of the results folder into ``out``; return the results.json content.

    Parameters
    ----------
    out : Path
        The (staging) folder to write into.
    spec : StudySpec
        The study.
    store : FeatureStore
        Its feature store (track metadata and channels).
    results : dict
        Setting name -> the result of :func:`aria_tda.study.setting.run_setting`.
    queries : pandas.DataFrame or None
        Per-query metadata (:func:`aria_tda.study.inputs.read_queries`).
    t_start : float
        ``time.perf_counter()`` at the start of the run (for the total time).

    The returned content records, under ``media``, the media files of the queries and of the
    tracks of the ``topk`` table as the run found them (:mod:`aria_tda.media.recorded`).
    """
    import pandas as pd

    from aria_tda.results import write_table

    has_meta = store.metadata is not None and len(store.metadata)
    tracks = _tracks(store) if has_meta else None
    labels = {} if tracks is None else dict(zip(
        tracks["track_id"].astype(str), tracks["label"].astype(str), strict=True))
    reliability, verdicts = _reliability(spec, results, labels)
    write_table(out, "reliability", reliability)

    for name in ("homogeneity", "query_z", "pairs", "topk"):
        write_table(out, name, pd.concat([results[s.name][name] for s in spec.settings],
                                         ignore_index=True))
    for name in (*ASPECT_TABLES, "item_alignment"):  # the distinctive reading and the items'
        # likeness to their query (every setting computes them; empty without query features)
        parts = [results[s.name][name] for s in spec.settings if name in results[s.name]]
        if parts and any(len(p) for p in parts):
            write_table(out, name, pd.concat(parts, ignore_index=True))

    hom = pd.concat([results[s.name]["homogeneity"] for s in spec.settings], ignore_index=True)
    rank_rows = []
    for (variant, k, channel), grp in hom.groupby(["variant", "K", "channel"], sort=False):
        zbar = dict(zip(grp["setting"], grp["zbar"], strict=True))
        for r in rank_settings(zbar, verdicts):
            rank_rows.append({"variant": variant, "K": k, "channel": channel, **r})
    ranking = pd.DataFrame(rank_rows)
    ranking["rank"] = ranking["rank"].astype("Int64")
    write_table(out, "ranking", ranking)
    paired = _paired_zbar(spec, results)
    if len(paired):
        write_table(out, "paired", paired)

    align_rows = [{"setting": s.name, **row}
                  for s in spec.settings for row in results[s.name]["alignment"]]
    if align_rows:
        write_table(out, "alignment", pd.DataFrame(align_rows))

    null_df = pd.concat([results[s.name]["null"] for s in spec.settings],
                        ignore_index=True).drop_duplicates()
    if len(null_df):
        write_table(out, "null", null_df)

    if queries is not None:
        qt = queries.reset_index(drop=True).copy()
        if "label" not in qt.columns:
            qt["label"] = qt["query"].astype(str)
        write_table(out, "queries", qt)
        conf_rows = []
        for s in spec.settings:
            qz = results[s.name]["query_z"]
            for variant, grp in qz.groupby("variant", sort=False):
                for r in _confound_rows(grp, queries, spec.confound, spec.K_report):
                    conf_rows.append({"setting": s.name, "variant": variant,
                                      "K": spec.K_report, **r})
        if conf_rows:
            write_table(out, "confound", pd.DataFrame(conf_rows))

    if tracks is not None:
        write_table(out, "tracks", tracks)

    timings = {s.name: results[s.name]["timings"] for s in spec.settings}
    passes = {s.name: results[s.name].get("passes", []) for s in spec.settings}
    here = Path(spec.output).absolute()
    meta: dict[str, Any] = {
        "study": {k: _recorded(getattr(spec, k), here) for k in spec.params()},
        "settings": [
            {"name": s.name, "method": s.method, "stage": s.stage,
             "kind": "embedding" if s.is_embedding else "scores", "normalize": s.normalize,
             "normalize_used": results[s.name]["diagnostics"].get("normalize_used", s.normalize),
             "scores": _recorded(s.scores, here),
             "segments": None if s.segments is None else _recorded(s.segments, here),
             "transpose": s.transpose, "verdict": verdicts[s.name].label,
             "concentration": {
                 level: results[s.name]["diagnostics"].get(key)
                 for level, key in (("segment", "concentration"), ("track", "concentration_track"))
                 if results[s.name]["diagnostics"].get(key)},
             "aspects": _aspect_summary(results[s.name]),
             **({"train_embeddings": _recorded(s.train_embeddings, here),
                 "query_embeddings": _recorded(s.query_embeddings, here)}
                if s.is_embedding else {})}
            for s in spec.settings
        ],
        "channels": {c: [f.name for f in fs] for c, fs in _channels(store, spec).items()},
        "versions": _versions(),
        "timings": {"settings": timings, "passes": passes,
                    "total": round(time.perf_counter() - t_start, 3)},
        "notes": [],
    }
    _record_media(meta, out, queries, results)
    return meta


def _recorded(value: Any, results: Path) -> Any:
    """A study parameter as ``results.json`` records it: a path relative to the results folder
    (so a report or dossier finds the inputs from any working folder, and a project moved or
    copied whole keeps pointing at its own files); anything else as JSON."""
    if isinstance(value, Path):
        return os.path.relpath(value.absolute(), results)
    return jsonable(value)


def _record_media(meta: dict[str, Any], out: Path, queries: Any,
                  results: dict[str, dict[str, Any]]) -> None:
    """Add to ``meta`` the media files of the queries and of the top-K tracks as they are now,
    so that a report made later can tell one changed or gone since
    (:mod:`aria_tda.media.recorded`)."""
    from types import SimpleNamespace

    from aria_tda.media.recorded import MEDIA_KEY, record_media
    from aria_tda.media.sources import resolve_media

    root = out.parent if is_temporary(out.name) else out  # the staging folder's results folder
    index = resolve_media(SimpleNamespace(meta=meta, path=root))  # what resolve_media reads
    qids = [] if queries is None or "query" not in queries.columns else list(queries["query"])
    tracks = [t for r in results.values() for t in r["topk"]["track_id"]]
    meta[MEDIA_KEY] = record_media(index, queries=qids, tracks=tracks)


def _aspect_summary(result: dict[str, Any]) -> dict[str, Any]:
    """results.json's summary of a setting's distinctive reading, per variant: the anchor, K,
    the method's own aspect and how many queries each answer got."""
    asp, qa = result.get("aspects"), result.get("query_aspects")
    if asp is None or qa is None or not len(asp):
        return {}
    out: dict[str, Any] = {}
    for variant, grp in asp.groupby("variant", sort=False):
        first = grp.iloc[0]
        answers = qa[qa["variant"] == variant].drop_duplicates("query")["named"]
        out[str(variant)] = {
            "anchor": str(first["anchor"]), "K": int(first["K"]),
            "alpha": float(first["alpha"]), "threshold": float(first["threshold"]),
            "method_aspect": str(first["method_aspect"]),
            "baseline": {str(r.channel): float(r.baseline) for r in grp.itertuples()},
            "answers": {str(k): int(v) for k, v in answers.value_counts().items()},
        }
    return out


def _paired_zbar(spec: StudySpec, results: dict[str, dict[str, Any]]) -> Any:
    """Paired z-bar differences between settings that share a null (aria_tda.paired.tables)."""
    import pandas as pd

    from aria_tda.paired import zbar_paired_table

    qz = pd.concat([results[s.name]["query_z"] for s in spec.settings], ignore_index=True)
    groups = {}
    for s in spec.settings:
        null = results[s.name]["null"]
        cols = [c for c in ("K", "channel", "feature", "mu", "sigma") if c in null.columns]
        groups[s.name] = pd.util.hash_pandas_object(
            null[cols].drop_duplicates().reset_index(drop=True), index=False).sum()
    return zbar_paired_table(qz, n_boot=spec.n_bootstrap, seed=spec.seed, null_groups=groups)


def _channels(store: Any, spec: StudySpec) -> dict[str, list[Any]]:
    from aria_tda.features.registry import channels as registry_channels

    have = set(store.feature_names)
    chans = registry_channels(store.modality, feature_set=spec.feature_set)
    wanted = spec.channels or tuple(chans)
    return {c: [f for f in chans[c] if f.name in have]
            for c in wanted if any(f.name in have for f in chans[c])}
