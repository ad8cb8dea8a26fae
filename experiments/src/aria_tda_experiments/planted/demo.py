r"""``aria-tda demo planted``: planted ground truth per musical aspect, both modalities.

For each modality (:mod:`.symbolic`, :mod:`.audio`) the experiment's stages run resumably in
``OUT/<modality>-*``; then one ARIA study per modality (``OUT/results/<modality>``: every
setting's reliability, homogeneity K-sweep on the raw matrix and its residual, the confound
breakdown by plant) and the planted scoring (:mod:`.analysis`) whose tables go into the same
folder, so its ``report.html`` shows them with the K-sweeps of the plant queries. Beside the
methods the study holds the ``oracle`` setting (:func:`write_oracle`), whose top-k of each
plant query is exactly the marked set: ARIA's reading of it says which channels the plant
itself moves, so a wrong reading of a method can be told apart from a plant no channel sees.
``OUT/results`` itself holds the tables of both modalities together (``planted_aspects.csv``
and the other ``planted_*.csv``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from aria_tda._checks import check_choice, check_int
from aria_tda._io import write_text
from aria_tda.errors import ParameterError

__all__ = ["MODALITIES", "ORACLE", "combined_tables", "run_planted_demo", "write_oracle"]

MODALITIES = ("symbolic", "audio")
#: The setting whose scores rank each plant query's marked set first (ARIA's reading of the
#: plant itself, beside each method's).
ORACLE = "oracle"


def _log(msg: str, quiet: bool) -> None:
    if not quiet:
        print(f"[aria-tda demo planted] {msg}", flush=True)


def _study(data: Any, results: Path, root: Path, *, B: int, n_boot: int, seed: int,
           progress: bool | None, quiet: bool) -> Path:
    from aria_tda.study import run_study
    from aria_tda.study.config import SettingSpec, StudySpec, validate_study
    from aria_tda.study.studyfile import study_to_toml
    from aria_tda_experiments.planted.analysis import study_ks

    k = int(max(len(r) for r in data.marked.values()))
    oracle = root / f"{data.modality}-oracle.npy"
    write_oracle(data, oracle, seed=seed)
    q = data.queries.reset_index(drop=True).copy()
    q.insert(0, "query", np.arange(len(q)))
    queries_csv = root / f"{data.modality}-queries.csv"
    if "media" in q.columns:  # the queries file names them relative to its folder
        from aria_tda_experiments.demo_media import query_media

        q["media"] = query_media(q["media"], queries_csv)
    write_text(queries_csv, q.to_csv(index=False))
    spec = validate_study(StudySpec(
        path=None, name=f"ARIA planted aspects: {data.modality}", modality=data.modality,
        feature_store=data.feature_store, output=results,
        settings=(*(_setting(data, s, path, SettingSpec) for s, path in data.scores.items()),
                  SettingSpec(name=ORACLE, method=ORACLE, stage="-", scores=oracle,
                              normalize="none")),
        K=tuple(study_ks(len(data.track_ids), k)), K_report=k, B=B, seed=seed,
        n_bootstrap=n_boot, residual=True, queries=queries_csv, confound=("plant",),
        query_features=data.query_features,
    ), source="aria-tda demo planted")
    write_text(root / f"{data.modality}-study.toml",
               study_to_toml(spec, header="Written by `aria-tda demo planted`; `aria-tda run` "
                             "on this file reanalyses the same score matrices."))
    run_study(spec, report=False, progress=progress, quiet=quiet,
              command="aria-tda demo planted")
    return oracle


def _setting(data: Any, name: str, path: Path, spec: Any) -> Any:
    """A method's setting: its raw segment matrix with the segment map where it has one (the
    study z-scores and averages it to the same track matrix ``path`` holds, and diagnoses the
    raw scores), else its track matrix as it is."""
    seg = data.segment_scores.get(name)
    if seg is not None and data.segment_map is not None:
        return spec(name=name, method=data.methods.get(name, name), stage="-", scores=seg,
                    segments=data.segment_map, normalize="zscore")
    return spec(name=name, method=data.methods.get(name, name), stage="-", scores=path,
                normalize="none")


def write_oracle(data: Any, path: Path, *, seed: int) -> Path:
    """The oracle's score matrix: each plant query ranks its marked set first.

    Column ``j`` of a plant query is 1 on its plant's marked rows plus uniform noise below
    0.001 (so its top-k is exactly the marked set and the rest follow in random order); a
    control query's column is uniform noise. ARIA's reading of this setting is what the plant
    itself does to each channel: the homogeneity of the marked set against random groups.

    Parameters
    ----------
    data : PlantedData
        The modality's experiment.
    path : Path
        Where to write the ``.npy`` (with its row ids).
    seed : int
        Seeds the noise.
    """
    from aria_tda.scores import save_scores

    rng = np.random.default_rng([seed, 29])
    n, t = len(data.track_ids), len(data.queries)
    s = rng.uniform(0.0, 1e-3, size=(n, t))
    for j, plant in enumerate(data.queries["plant"].astype(str)):
        if plant in data.marked:
            s[data.marked[plant], j] += 1.0
    return Path(save_scores(s.astype(np.float32), path, row_ids=np.asarray(data.track_ids),
                            overwrite=True))


def combined_tables(top: Path, fresh: dict[str, dict[str, pd.DataFrame]]
                    ) -> dict[str, pd.DataFrame]:
    """The tables of ``top`` (``OUT/results``): each planted table over every modality.

    Parameters
    ----------
    top : Path
        The demo's results folder, holding one study folder per modality.
    fresh : dict
        Table name -> modality -> this run's table.

    Returns
    -------
    dict
        Table name -> the rows of every modality, symbolic first: this run's, and those a
        run of another modality left in ``top/<modality>`` (``--modality audio`` after a
        run of both keeps the symbolic rows). An unreadable earlier table is left out.
    """
    from aria_tda.errors import AriaError
    from aria_tda.results import read_table

    out = {}
    for t, by_run in fresh.items():
        by_mod = dict(by_run)
        for mod in MODALITIES:
            if mod not in by_run and (top / mod).is_dir():
                with contextlib.suppress(AriaError, OSError, ValueError):
                    earlier = read_table(top / mod, t)
                    if earlier is not None:
                        by_mod[mod] = earlier
        kept = [by_mod[m] for m in MODALITIES if m in by_mod and len(by_mod[m])]
        if kept:
            out[t] = pd.concat(kept, ignore_index=True)
    return out


def _summary(df: pd.DataFrame) -> str:
    lines = [f"{'modality':<9}{'setting':<11}{'aspect':<9}{'recall@k':>9} {'[95% CI]':<16}"
             f"{'chance':>7}{'AP':>7}{'learned':>8}{'cf effect':>10}  leading channel (z̄)"
             "       distinctive"]
    for _, r in df.iterrows():
        lead = f"{r.top_channel} ({r.top_channel_z:+.2f})" if r.top_channel else "-"
        mark = "" if r.aspect == "control" else (" ✓" if r.right else " ✗")
        learned = "" if r.learned is None or pd.isna(r.learned) else ("yes" if r.learned else "no")
        named = r.get("named_channel")
        dist = "" if named is None or pd.isna(named) else str(named)
        if dist and r.aspect != "control":
            dist += " ✓" if dist == r.aspect else " ✗"
        lines.append(
            f"{r.modality:<9}{r.setting:<11}{r.aspect:<9}{r.recall_at_k:>9.2f} "
            f"[{r.ci_low:.2f}, {r.ci_high:.2f}]{'':<3}{r.chance:>7.3f}{r.average_precision:>7.2f}"
            f"{learned:>8}{r.counterfactual_effect:>+10.3f}  {lead + mark:<22}{dist}")
    return "\n".join(lines)


def run_planted_demo(
    out: str | os.PathLike[str] | None = None,
    *,
    modality: str = "both",
    quick: bool = False,
    sizes: str | None = None,
    seed: int = 0,
    threads: int | None = None,
    report: bool = True,
    progress: bool | None = None,
    quiet: bool = False,
    plants: str = "A",
) -> Path:
    """Run the planted-aspect experiment and return ``OUT/results``.

    Parameters
    ----------
    out : path, optional
        Working folder (relative paths are taken from the current folder; default
        ``aria-demo-planted``, ``aria-demo-planted-B`` for ``plants="B"``).
    modality : {"both", "symbolic", "audio"}
        Which experiments.
    quick : bool
        Smaller sizes (≤ 8 minutes for both modalities on 2 cores).
    sizes : {"default", "quick", "tiny"}, optional
        Explicit sizes (overrides ``quick``; ``tiny`` is for tests).
    seed : int
        Seeds every stage.
    threads : int, optional
        Worker processes / torch threads (default: cores, at most 2).
    report : bool
        Write each modality's ``report.html``.
    progress : bool, optional
        Force progress bars on/off.
    quiet : bool
        No log lines.
    plants : {"A", "B"}
        The plant family (:data:`~.plants.FAMILIES`): ``A`` (default) or ``B``, a second
        family of plant patterns, never used to choose the experiment's settings.
    """
    from aria_tda_experiments.planted.plants import PLANT_FAMILIES

    plants = check_choice("plants", plants, PLANT_FAMILIES)
    if out is None:
        out = "aria-demo-planted" if plants == "A" else f"aria-demo-planted-{plants}"
    modality = check_choice("modality", modality, ("both", *MODALITIES))
    which = MODALITIES if modality == "both" else (modality,)
    seed = check_int("seed", seed, min_value=0)
    n_threads = check_int("threads", threads if threads is not None
                          else min(2, os.cpu_count() or 1), min_value=1)
    if sizes is not None:
        check_choice("sizes", sizes, ("default", "quick", "tiny"))
    name = sizes or ("quick" if quick else "default")
    root = Path(out).absolute()
    if root.exists() and not root.is_dir():
        raise ParameterError(f"out: expected a working folder, got a file: {str(root)!r}")
    from aria_tda._lock import writer_lock

    # one run per working folder: a second is refused naming the first
    with writer_lock(root, "planted-demo working folder"):
        return _run(root, which, name, seed, n_threads, report=report, progress=progress,
                    quiet=quiet, plants=plants)


def _run(root: Path, which: tuple[str, ...], name: str, seed: int, n_threads: int, *,
         report: bool, progress: bool | None, quiet: bool, plants: str = "A") -> Path:
    """The demo's body, under the working folder's writer lock."""
    from aria_tda.results import read_results_meta, write_results_meta, write_table
    from aria_tda_experiments.planted.analysis import PLANTED_TABLES, score_planted
    from aria_tda_experiments.stage_runner import StageRunner

    runner = StageRunner(root, quiet, name="aria-tda demo planted")
    B, n_boot = (200, 1000) if name == "default" else ((100, 500) if name == "quick" else (20, 50))
    t0 = time.perf_counter()
    _log(f"sizes {name!r}, seed {seed}, {n_threads} thread(s), modalities {', '.join(which)}, "
         f"folder {root}", quiet)
    combined: dict[str, dict[str, pd.DataFrame]] = {t: {} for t in PLANTED_TABLES}
    for mod in which:
        kw: dict[str, Any] = {"quick": name == "quick", "seed": seed, "threads": n_threads,
                              "progress": progress, "quiet": quiet, "plants": plants}
        if mod == "symbolic":
            from aria_tda_experiments.planted.symbolic import run_symbolic_planted

            data = run_symbolic_planted(root, runner, sizes=name, **kw)
        else:
            from aria_tda_experiments.planted.audio import run_audio_planted

            if name == "tiny":
                kw["preset"] = "tiny"
            data = run_audio_planted(root, runner, **kw)
        for _, r in data.learned[data.learned.aspect != "control"].iterrows():
            if int(r.seed) == 0 and not bool(r.learned):
                _log(f"{mod}: the {r.aspect} plant was NOT learned on seed 0 (effect "
                     f"{r.effect:+.3f} [{r.ci_low:+.3f}, {r.ci_high:+.3f}] nats/token): its rows "
                     "test nothing", quiet)
        results = root / "results" / mod
        t1 = time.perf_counter()
        oracle = _study(data, results, root, B=B, n_boot=n_boot, seed=seed,
                        progress=progress, quiet=quiet)
        scored = dataclasses.replace(data, scores={**data.scores, ORACLE: oracle},
                                     methods={**data.methods, ORACLE: ORACLE})
        tables = score_planted(scored, results, n_boot=n_boot, seed=seed)
        for t, df in tables.items():
            write_table(results, t, df)
            combined[t][mod] = df
        runner.timings[f"{mod}-aria"] = round(time.perf_counter() - t1, 2)
        meta = read_results_meta(results)
        meta = {k: v for k, v in meta.items() if k not in {"kind", "aria_version", "created"}}
        meta["demo"] = {"experiment": "planted", "modality": mod, "sizes": name, "seed": seed,
                        "plants": plants, "info": data.info, "aspects": list(data.aspects),
                        "n_marked": {a: len(r) for a, r in data.marked.items()},
                        "stage_seconds": {k: v for k, v in runner.timings.items()
                                          if k.startswith(mod)},
                        "machine": {"cpus": os.cpu_count(),
                                    "python": platform.python_version()}}
        meta.setdefault("notes", []).append(
            f"Planted ground truth ({mod}): {len(data.aspects)} marked sets of "
            f"{max(len(r) for r in data.marked.values())} training items, one planted aspect "
            "each; recall@k of the marked set (k = its size) among the plant queries' top-k "
            "against chance k/N; ARIA's leading channel at K = k over each plant's queries.")
        write_results_meta(results, meta)
        if report:
            from aria_tda.report import write_report

            written = write_report(results, quiet=quiet, log=lambda m: _log(m, quiet))
            _log(f"{mod} report: {written.html}", quiet)
    top = root / "results"
    for t, df in combined_tables(top, combined).items():
        write_table(top, t, df)
    runner.timings["total"] = round(time.perf_counter() - t0, 2)
    write_text(top / "stage_seconds.csv",
               pd.DataFrame([{"stage": k, "seconds": v} for k, v in runner.timings.items()]
                            ).to_csv(index=False))
    if not quiet:
        print("\nPlanted ground truth per aspect (k = marked-set size; ✓/✗: the reading names / "
              "does not name the planted aspect; leading channel: the paper's reading; "
              "distinctive: the reading beyond what the method shows for every query):")
        print(_summary(pd.concat(combined["planted_aspects"].values(), ignore_index=True)))
        print("\nStage wall times (s): " + ", ".join(f"{k} {v:.1f}"
                                                     for k, v in runner.timings.items()))
        print(f"Results: {top}")
    return top
