r"""The study runner behind ``aria run STUDY.toml``: every analysis of the paper, for every setting.

For each setting (one segment-level score matrix :math:`S^{\mathrm{seg}}`) the runner computes

1. the reliability diagnostics :math:`\kappa, r_1, r_{2:5}, p` (one streaming pass) and the
   collapse verdict (:mod:`aria.verdict`);
2. :math:`S^{\mathrm{track}}` — per-query normalisation and the mean over each track's
   segments (Eq. track-agg) — and the same on the rank-1 residual
   :math:`S - \sigma_1 u_1 v_1^\top` (§4.4);
3. within-group homogeneity for every ``K`` (one pass, nested groups), original and residual,
   against a null computed once per track pool and reused across settings;
4. the alignment of :math:`u_1` of :math:`S^{\mathrm{track}}` with each channel (Eq. alpha);
5. the confound breakdown of :math:`z_c` by each requested query metadata column;

then ranks the settings per channel, excluding collapsed ones, and writes a results folder
(:mod:`aria.results`) and, unless disabled, the HTML report.

Resuming
--------
Per-setting work is cached under ``OUTPUT/.cache/<setting>/`` with the parameters and input
fingerprints (size + mtime of the score matrix, segment map and feature store) it was computed
from; a rerun with the same inputs and parameters reuses it, anything else recomputes it.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import re
import time
import uuid
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from aria._io import read_json, remove_path, write_json
from aria._stages import Stage, file_fingerprint
from aria.errors import AriaWarning, DataError, FileFormatError, ParameterError, expected
from aria.study_config import SettingSpec, StudySpec, load_study
from aria.verdict import Verdict, classify, rank_settings

__all__ = ["run_study"]

CACHE = ".cache"
N_PAIRS = 10


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "setting"


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version()}
    for pkg in ("aria-tda", "numpy", "scipy", "pandas", "pyarrow", "zarr", "numba", "torch", "dattri",
                "librosa", "music21"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            continue
    return out


def _log(msg: str, *, quiet: bool) -> None:
    if not quiet:
        print(f"[aria run] {msg}", flush=True)


# --------------------------------------------------------------------------------------
# inputs
# --------------------------------------------------------------------------------------


def _read_queries(path: Path | None, n_queries: int) -> Any:
    """Per-query metadata as a DataFrame indexed 0..T-1 (column ``query``), or ``None``."""
    import pandas as pd

    if path is None:
        return None
    if not path.is_file():
        raise FileFormatError(f"queries: no such file: {str(path)!r}")
    try:
        df = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    except Exception as exc:
        raise FileFormatError(f"queries: cannot read {str(path)!r}: {exc}") from None
    if "query" not in df.columns:
        df = df.reset_index(drop=True)
        df.insert(0, "query", np.arange(len(df)))
    q = pd.to_numeric(df["query"], errors="coerce")
    if q.isna().any() or (q < 0).any() or (q >= n_queries).any():
        raise DataError(expected("queries.query", f"query indices in [0, {n_queries})", "other values"))
    return df.assign(query=q.astype(int)).drop_duplicates("query").set_index("query", drop=False).sort_index()


def _align_tracks(track_ids: np.ndarray, store: Any, *, max_missing: float, setting: str) -> tuple[np.ndarray, np.ndarray]:
    """Store rows for each S_track row (-1 = no features) and the mask of rows that have them."""
    index = {t: i for i, t in enumerate(store.track_ids.tolist())}
    rows = np.array([index.get(str(t), -1) for t in track_ids], dtype=np.int64)
    present = rows >= 0
    n_missing = int((~present).sum())
    if n_missing:
        frac = n_missing / rows.size
        example = str(track_ids[np.flatnonzero(~present)[0]])
        if frac > max_missing:
            raise DataError(
                f"setting {setting!r}: {n_missing} of {rows.size} tracks ({frac:.0%}) have no features in the "
                f"store (e.g. {example!r}); more than max_missing_fraction={max_missing}: do the score matrix, "
                "segment map and feature store use the same track ids?"
            )
        warnings.warn(
            f"setting {setting!r}: {n_missing} of {rows.size} tracks have no features in the store "
            f"(e.g. {example!r}); they are left out of the attributed groups",
            AriaWarning,
            stacklevel=3,
        )
    return rows, present


def _track_ids_of(src: Any, store: Any, setting: str) -> np.ndarray:
    if src.row_ids is not None:
        return np.asarray(src.row_ids).astype(str)
    if src.shape[0] == len(store):
        return np.asarray(store.track_ids).astype(str)
    raise DataError(
        f"setting {setting!r}: S_track has {src.shape[0]} rows without track ids and the feature store has "
        f"{len(store)} tracks; give a segment map (segments = ...) or a store with one track per row"
    )


# --------------------------------------------------------------------------------------
# one setting
# --------------------------------------------------------------------------------------


def _s_track(setting: SettingSpec, store: Any, *, normalize: str, residual: bool, out: Path,
             chunk_rows: int | None, progress: bool | None) -> Any:
    """S_track (original or residual) written under ``out``; returns its ScoreSource.

    ``normalize`` is the method actually applied (``auto`` is resolved once on the original and
    the same method is used for the residual, so the two differ only by the rank-1 part).
    Without a segment map, a score matrix that carries no row ids is matched to the feature
    store by position (it must have one row per store track).
    """
    from aria.scores import aggregate, open_scores, save_scores
    from aria.scores import residual as residual_source

    src = open_scores(setting.scores, key=setting.key)
    segments: Any = setting.segments
    if segments is None and src.row_ids is None:
        if src.shape[0] != len(store):
            raise DataError(
                f"setting {setting.name!r}: the score matrix has {src.shape[0]} rows and no row ids, and no "
                f"segment map was given; the feature store has {len(store)} tracks. Give segments = a "
                "segment -> track map, or save the scores with row ids"
            )
        segments = np.asarray(store.track_ids).astype(str)
    if normalize == "none":
        if setting.segments is not None:
            raise ParameterError(
                f"setting {setting.name!r}: normalize='none' needs one segment per track (no segment map); "
                "choose zscore, rank or auto"
            )
        if not residual:
            return src
        res = residual_source(src, chunk_rows=chunk_rows)
        save_scores(res, out, method=setting.method, stage=setting.stage,
                    parameters={"variant": "residual", "normalize": "none"}, row_ids=src.row_ids)
        return open_scores(out)
    return aggregate(src, segments=segments, normalize=normalize, residual=residual, out=out,
                     chunk_rows=chunk_rows, progress=progress)


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


def _null_for(nulls: dict[str, Any], prepared: dict[str, list[Any]], pool: np.ndarray, rows: np.ndarray,
              spec: StudySpec, progress: bool | None) -> Any:
    """The null of this track pool and feature order, computed once per study run."""
    import hashlib

    from aria.homogeneity import null_distribution

    key = hashlib.sha256(np.packbits(pool).tobytes() + np.ascontiguousarray(rows).tobytes()).hexdigest()
    if key not in nulls:
        nulls[key] = null_distribution(prepared, ks=list(spec.K), pool=pool, B=spec.B, seed=spec.seed,
                                       progress=progress)
    return nulls[key]


def _variant_tables(
    s_track: Any,
    prepared: dict[str, list[Any]],
    null: Any,
    pool: np.ndarray,
    track_ids: np.ndarray,
    spec: StudySpec,
    progress: bool | None,
) -> dict[str, Any]:
    from aria.homogeneity import homogeneity, top_k_groups

    groups, scores = top_k_groups(s_track, max(spec.K), pool=pool, chunk_rows=spec.chunk_rows,
                                  return_scores=True, progress=progress)
    res = homogeneity(groups, prepared, null, ks=list(spec.K), evidence_k=spec.K_report,
                      n_pairs=N_PAIRS, progress=progress)
    summary = res.summary(n_boot=spec.n_bootstrap, seed=spec.seed)
    return {
        "homogeneity": summary,
        "query_z": res.query_frame(),
        "pairs": res.pairs_frame(track_ids=track_ids),
        "topk": _topk_frame(groups, scores, track_ids, spec.K_report),
    }


def _confound_rows(query_z: Any, queries: Any, columns: tuple[str, ...], k: int) -> list[dict[str, Any]]:
    from aria.confound import stratify

    rows: list[dict[str, Any]] = []
    if queries is None or not columns:
        return rows
    sub = query_z[query_z["K"] == k]
    for column in columns:
        if column not in queries.columns:
            raise DataError(expected("confound", f"columns of the queries file {list(queries.columns)}", column))
        for channel, grp in sub.groupby("channel", sort=False):
            z = grp.sort_values("query")
            labels = queries[column].reindex(z["query"].to_numpy()).tolist()
            strata, sd = stratify(z["z"].to_numpy(), labels)
            rows += [
                {"channel": channel, "column": column, "stratum": s.stratum, "n": s.n, "mean_z": s.mean_z,
                 "pos": s.pos, "sig": s.sig, "sd_across": sd, "small": s.small}
                for s in strata
            ]
    return rows


def _alignment_rows(s_track: Any, store: Any, rows: np.ndarray, present: np.ndarray, channels: list[str],
                    chunk_rows: int | None) -> list[dict[str, Any]]:
    from aria.alignment import channel_alignment, sequence_histogram
    from aria.features.registry import channels as registry_channels
    from aria.scores import rank1

    u1 = rank1(s_track, chunk_rows=chunk_rows).u1[present]
    store_rows = rows[present]
    by_channel: dict[str, dict[str, np.ndarray]] = {}
    for channel, specs in registry_channels(store.modality).items():
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
                    np.asarray(seqs[i] if seqs[i] is not None else [], dtype=np.int64) for i in store_rows
                ])
        if groups:
            by_channel[channel] = groups
    out = []
    for channel, res in channel_alignment(u1, by_channel).items():
        out.append({"channel": channel, **{k: v for k, v in res.to_dict().items()}})
    return out


def _run_setting(
    setting: SettingSpec,
    spec: StudySpec,
    store: Any,
    store_fp: dict[str, Any],
    cache_root: Path,
    nulls: dict[str, Any],
    prepared_cache: dict[bytes, Any],
    *,
    progress: bool | None,
    quiet: bool,
) -> dict[str, Any]:
    """All tables of one setting, from the cache when inputs and parameters are unchanged."""
    import pandas as pd

    from aria.diagnostics import diagnose
    from aria.similarity import prepare_channels

    if not Path(setting.scores).exists():
        raise FileFormatError(f"setting {setting.name!r}: scores: no such file: {str(setting.scores)!r}")
    if setting.segments is not None and not Path(setting.segments).exists():
        raise FileFormatError(f"setting {setting.name!r}: segments: no such file: {str(setting.segments)!r}")
    params = {
        "setting": dataclasses.asdict(setting) | {"scores": file_fingerprint(setting.scores),
                                                  "segments": None if setting.segments is None
                                                  else file_fingerprint(setting.segments)},
        "store": store_fp,
        "study": {k: v for k, v in spec.params().items() if k not in {"name", "confound", "queries"}},
        "n_pairs": N_PAIRS,
    }
    stage = Stage(cache_root, _slug(setting.name), params)
    if stage.is_complete():
        _log(f"{setting.name}: reusing cached results ({stage.path})", quiet=quiet)
        out = {"diagnostics": read_json(stage.path / "diagnostics.json"),
               "alignment": read_json(stage.path / "alignment.json"), "timings": stage.summary().get("timings", {})}
        for name in ("homogeneity", "query_z", "pairs", "topk", "null"):
            out[name] = pd.read_parquet(stage.path / f"{name}.parquet")
        return out
    reason = stage.stale_reason()
    if reason:
        _log(f"{setting.name}: recomputing ({reason})", quiet=quiet)
    work = stage.begin()
    timings: dict[str, float] = {}

    t0 = time.perf_counter()
    _log(f"{setting.name}: reliability diagnostics", quiet=quiet)
    diag = diagnose(setting.scores, key=setting.key, chunk_rows=spec.chunk_rows, progress=progress)
    d = diag.to_dict() if hasattr(diag, "to_dict") else dataclasses.asdict(diag)
    d = {k: v for k, v in d.items() if k not in {"v1", "u1", "constant_indices"}}
    d["v1_constancy"] = float(diag.v1_constancy)
    timings["diagnostics"] = time.perf_counter() - t0

    tables: dict[str, list[Any]] = {"homogeneity": [], "query_z": [], "pairs": [], "topk": [], "null": []}
    alignment: list[dict[str, Any]] = []
    variants = ("original", "residual") if spec.residual else ("original",)
    normalize_used = setting.normalize
    d["normalize_used"] = normalize_used
    try:
        channels = list(spec.channels) if spec.channels else None
        for variant in variants:
            t0 = time.perf_counter()
            _log(f"{setting.name}: S_track ({variant})", quiet=quiet)
            src = _s_track(setting, store, normalize=normalize_used, residual=variant == "residual",
                           out=work / f"s_track_{variant}.npy", chunk_rows=spec.chunk_rows, progress=progress)
            if variant == "original" and normalize_used == "auto":
                normalize_used = str(((src.manifest or {}).get("parameters") or {}).get("normalize", "auto"))
                d["normalize_used"] = normalize_used
            track_ids = _track_ids_of(src, store, setting.name)
            rows, present = _align_tracks(track_ids, store, max_missing=spec.max_missing_fraction, setting=setting.name)
            key = np.where(present, rows, -1).tobytes()
            if key not in prepared_cache:  # features re-indexed to these rows, prepared once per run
                prepared_cache[key] = prepare_channels(store, rows=np.where(present, rows, 0), channels=channels)
            prepared = prepared_cache[key]
            from aria.homogeneity import feature_pool

            pool = feature_pool(prepared, max_missing_fraction=spec.max_missing_fraction) & present
            timings[f"s_track_{variant}"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            _log(f"{setting.name}: homogeneity ({variant}, K = {list(spec.K)}, B = {spec.B})", quiet=quiet)
            null = _null_for(nulls, prepared, pool, rows, spec, progress)
            vt = _variant_tables(src, prepared, null, pool, track_ids, spec, progress)
            for name, df in vt.items():
                df.insert(0, "variant", variant)
                df.insert(0, "setting", setting.name)
                tables[name].append(df)
            nf = null.to_frame()
            nf.insert(0, "variant", variant)
            nf.insert(0, "setting", setting.name)
            tables["null"].append(nf)
            timings[f"homogeneity_{variant}"] = time.perf_counter() - t0
            if variant == "original":
                t0 = time.perf_counter()
                alignment = _alignment_rows(src, store, rows, present, list(prepared), spec.chunk_rows)
                timings["alignment"] = time.perf_counter() - t0

        result: dict[str, Any] = {"diagnostics": d, "alignment": alignment, "timings": timings}
        write_json(work / "diagnostics.json", d)
        write_json(work / "alignment.json", alignment)
        for name, parts in tables.items():
            df = pd.concat(parts, ignore_index=True)
            df.to_parquet(work / f"{name}.parquet", index=False)
            result[name] = df
    finally:  # S_track files are N x T float64: never leave them behind
        for f in work.glob("s_track_*"):
            remove_path(f)
    stage.complete(timings=timings)
    return result


# --------------------------------------------------------------------------------------
# the study
# --------------------------------------------------------------------------------------


def run_study(
    study: StudySpec | str | os.PathLike[str],
    *,
    output: str | os.PathLike[str] | None = None,
    report: bool | None = None,
    progress: bool | None = None,
    quiet: bool = False,
    extra_meta: dict[str, Any] | None = None,
) -> Path:
    """Run every analysis of a study and write its results folder.

    Parameters
    ----------
    study : StudySpec or path to a study TOML file (see :mod:`aria.study_config`)
    output : path-like, optional
        Results folder (default: the study's ``output``).
    report : bool, optional
        Write ``report.html`` into the folder (default: the study's ``report``, true).
    progress : bool, optional
        Progress bars (default: on a terminal).
    quiet : bool
        No log lines on stdout.
    extra_meta : dict, optional
        Merged into ``results.json`` (e.g. the demo's sizes and timings).

    Returns
    -------
    pathlib.Path
        The results folder.
    """

    from aria.features.store import FeatureStore
    from aria.results import write_results_meta

    spec = study if isinstance(study, StudySpec) else load_study(study)
    out = Path(output) if output is not None else spec.output
    out.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()

    store = FeatureStore.open(spec.feature_store)
    if store.modality != spec.modality:
        raise DataError(expected("feature_store", f"a {spec.modality} feature store", f"a {store.modality} store"))
    store_fp = file_fingerprint(spec.feature_store)

    queries = _check_inputs(spec, store)

    nulls: dict[str, Any] = {}
    prepared_cache: dict[bytes, Any] = {}
    results: dict[str, dict[str, Any]] = {}
    for setting in spec.settings:
        res = _run_setting(setting, spec, store, store_fp, out / CACHE, nulls, prepared_cache,
                           progress=progress, quiet=quiet)
        results[setting.name] = res

    staging = out / f".staging-{uuid.uuid4().hex[:8]}"
    staging.mkdir()
    try:
        meta = _write_tables(staging, spec, store, results, queries, t_start)
        _publish(staging, out)
    finally:
        remove_path(staging)
    write_results_meta(out, {**meta, **(extra_meta or {})})
    want_report = spec.report if report is None else report
    if want_report:
        from aria.report import write_report

        written = write_report(out)
        _log(f"report: {written.html}", quiet=quiet)
    _log(f"results: {out}", quiet=quiet)
    return out


def _check_inputs(spec: StudySpec, store: Any) -> Any:
    """Everything that can be checked before hours of work: files, shapes, K, queries, confounds."""
    from aria.scores import open_scores

    n_queries = {}
    for setting in spec.settings:
        if not Path(setting.scores).exists():
            raise FileFormatError(f"setting {setting.name!r}: scores: no such file: {str(setting.scores)!r}")
        if setting.segments is not None and not Path(setting.segments).exists():
            raise FileFormatError(f"setting {setting.name!r}: segments: no such file: {str(setting.segments)!r}")
        n_queries[setting.name] = int(open_scores(setting.scores, key=setting.key).shape[1])
    if max(spec.K) > len(store):
        raise ParameterError(expected("K", f"group sizes up to the {len(store)} tracks of the feature store", max(spec.K)))
    if spec.confound and spec.queries is None:
        raise ParameterError("confound: needs a queries file (queries = ...) holding those columns")
    if spec.queries is None:
        return None
    if len(set(n_queries.values())) > 1:
        raise DataError(f"queries: one queries file needs settings with the same number of queries, got {n_queries}")
    queries = _read_queries(spec.queries, next(iter(n_queries.values())))
    missing = [c for c in spec.confound if c not in queries.columns]
    if missing:
        raise DataError(expected("confound", f"columns of the queries file {list(queries.columns)}", missing))
    return queries


#: Tables this runner writes (others, e.g. lds/agreement/sensitivity from the demo or a sweep, are left alone).
RUN_TABLES = ("reliability", "homogeneity", "query_z", "pairs", "topk", "ranking", "alignment", "null",
              "queries", "confound", "tracks")


def _publish(staging: Path, out: Path) -> None:
    """Move the finished tables into ``out``; drop this runner's tables an earlier run left and this one did not make."""
    from aria.results import TABLES

    made = {f.name for f in staging.iterdir()}
    for name in sorted(made):
        os.replace(staging / name, out / name)
    for name in RUN_TABLES:
        filename = TABLES[name].filename
        if filename not in made and (out / filename).exists():
            remove_path(out / filename)


def _write_tables(out: Path, spec: StudySpec, store: Any, results: dict[str, dict[str, Any]], queries: Any,
                  t_start: float) -> dict[str, Any]:
    """Write every table of the results folder into ``out``; return the results.json content."""
    import pandas as pd

    from aria.results import write_table

    # ---- tables -----------------------------------------------------------------------
    verdicts: dict[str, Verdict] = {}
    rel_rows = []
    for setting in spec.settings:
        d = results[setting.name]["diagnostics"]
        v = classify(kappa=d["kappa"], r1=d["r1"], r2_5=d["r2_5"], p=d["p"], v1_constancy=d.get("v1_constancy"))
        verdicts[setting.name] = v
        row = {"setting": setting.name, "method": setting.method, "stage": setting.stage,
               "n_train": d["n_train"], "n_queries": d["n_queries"], "kappa": d["kappa"], "r1": d["r1"],
               "r2_5": d["r2_5"], "p": d["p"], "v1_constancy": d.get("v1_constancy"),
               "constant_columns": d.get("constant_columns", 0), "verdict": v.label, "verdict_reason": v.reason,
               "normalize": setting.normalize,
               "normalize_used": d.get("normalize_used", setting.normalize)}
        for i, r in enumerate(d.get("energy_ratios", [])[:10]):
            row[f"energy_{i + 1}"] = r
        rel_rows.append(row)
    write_table(out, "reliability", pd.DataFrame(rel_rows))

    for name in ("homogeneity", "query_z", "pairs", "topk"):
        write_table(out, name, pd.concat([results[s.name][name] for s in spec.settings], ignore_index=True))

    hom = pd.concat([results[s.name]["homogeneity"] for s in spec.settings], ignore_index=True)
    rank_rows = []
    for (variant, k, channel), grp in hom.groupby(["variant", "K", "channel"], sort=False):
        zbar = dict(zip(grp["setting"], grp["zbar"], strict=True))
        for r in rank_settings(zbar, verdicts):
            rank_rows.append({"variant": variant, "K": k, "channel": channel, **r})
    ranking = pd.DataFrame(rank_rows)
    ranking["rank"] = ranking["rank"].astype("Int64")
    write_table(out, "ranking", ranking)

    align_rows = [{"setting": s.name, **row} for s in spec.settings for row in results[s.name]["alignment"]]
    if align_rows:
        write_table(out, "alignment", pd.DataFrame(align_rows))

    null_df = pd.concat([results[s.name]["null"] for s in spec.settings], ignore_index=True).drop_duplicates()
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
                    conf_rows.append({"setting": s.name, "variant": variant, "K": spec.K_report, **r})
        if conf_rows:
            write_table(out, "confound", pd.DataFrame(conf_rows))

    meta_df = store.metadata
    if meta_df is not None and len(meta_df):
        tracks = meta_df.reset_index()
        if "track_id" not in tracks.columns:
            tracks = tracks.rename(columns={tracks.columns[0]: "track_id"})
        if "label" not in tracks.columns:
            for cand in ("title", "name", "work", "work_id"):
                if cand in tracks.columns:
                    tracks["label"] = tracks[cand].astype(str)
                    break
            else:
                tracks["label"] = tracks["track_id"].astype(str)
        write_table(out, "tracks", tracks)

    timings = {s.name: results[s.name]["timings"] for s in spec.settings}
    return {
        "study": spec.params(),
        "settings": [
            {"name": s.name, "method": s.method, "stage": s.stage, "normalize": s.normalize,
             "normalize_used": results[s.name]["diagnostics"].get("normalize_used", s.normalize),
             "scores": str(s.scores), "segments": None if s.segments is None else str(s.segments),
             "verdict": verdicts[s.name].label}
            for s in spec.settings
        ],
        "channels": {c: [f.name for f in fs] for c, fs in _channels(store, spec).items()},
        "versions": _versions(),
        "timings": {"settings": timings, "total": round(time.perf_counter() - t_start, 3)},
        "notes": [],
    }


def _channels(store: Any, spec: StudySpec) -> dict[str, list[Any]]:
    from aria.features.registry import channels as registry_channels

    have = set(store.feature_names)
    chans = registry_channels(store.modality)
    wanted = spec.channels or tuple(chans)
    return {c: [f for f in chans[c] if f.name in have] for c in wanted if any(f.name in have for f in chans[c])}
