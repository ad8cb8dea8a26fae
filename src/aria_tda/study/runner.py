""":func:`run_study`: check the inputs, run every setting, publish the results folder, report.

A failed run leaves nothing half-made: inputs are checked before any folder is created, a
setting that fails removes its cache step, and the folders the run created are removed again
when they are left empty (finished settings of an interrupted run stay cached, so a rerun
resumes).
"""

from __future__ import annotations

import dataclasses
import os
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aria_tda._dask import check_scheduler
from aria_tda._io import remove_path
from aria_tda._steps import file_fingerprint
from aria_tda.errors import ParameterError, expected
from aria_tda.study.config import StudySpec, load_study
from aria_tda.study.inputs import check_inputs, embedding_scores
from aria_tda.study.setting import run_setting, slug
from aria_tda.study.tables import publish, write_tables

__all__ = ["CACHE", "run_study"]

#: Folder of the per-setting cache steps inside the results folder.
CACHE = ".cache"
#: Folder (inside :data:`CACHE`) of the cosine matrices of embedding settings; a setting's
#: step folder never starts with "_" (:func:`aria_tda.study.setting.slug`).
EMBEDDING_SCORES = "_embedding_scores"


def _logger(command: str, quiet: bool) -> Callable[[str], None]:
    def log(msg: str) -> None:
        if not quiet:
            print(f"[{command}] {msg}", flush=True)

    return log


def _absent_dirs(path: Path) -> list[Path]:
    """``path`` and its ancestors that do not exist yet, innermost first."""
    out = []
    p = path.absolute()
    while not p.exists() and p != p.parent:
        out.append(p)
        p = p.parent
    return out


def _remove_empty(dirs: list[Path]) -> None:
    for d in dirs:  # innermost first; a folder that holds anything stays
        try:
            d.rmdir()
        except OSError:
            pass


def _check_scheduler(scheduler: Any) -> Any:
    """A scheduler string checked (``None``: no cluster), or a Dask client as it is."""
    if scheduler is None or isinstance(scheduler, str):
        return check_scheduler(scheduler, name="scheduler")
    if hasattr(scheduler, "submit") and hasattr(scheduler, "gather"):
        return scheduler
    raise ParameterError(expected("scheduler", "'local:N', an address or a dask Client",
                                  scheduler))


def run_study(
    study: StudySpec | str | os.PathLike[str],
    *,
    output: str | os.PathLike[str] | None = None,
    report: bool | None = None,
    progress: bool | None = None,
    quiet: bool = False,
    extra_meta: dict[str, Any] | None = None,
    command: str = "aria-tda run",
    scheduler: Any = None,
) -> Path:
    """Run every analysis of a study and write its results folder.

    Parameters
    ----------
    study : StudySpec or path-like
        The study, or the path of a study TOML file (see :mod:`aria_tda.study.config`).
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
    command : str
        The name log lines are shown under (``[aria-tda run] ...``).
    scheduler : str or dask.distributed.Client, optional
        Run the settings that are not cached as tasks of a Dask cluster, in parallel, each
        null computed once (:mod:`aria_tda.study.cluster`): ``"local:N"``, a scheduler address
        ``"tcp://HOST:PORT"`` or a client (default: the study's ``scheduler``; ``""``: none).
        The results equal the single-machine run's.

    Returns
    -------
    pathlib.Path
        The results folder.
    """
    from aria_tda.features.store import FeatureStore

    spec = study if isinstance(study, StudySpec) else load_study(study)
    out = Path(output) if output is not None else spec.output
    if out.exists() and not out.is_dir():
        raise ParameterError(f"output: expected a results folder, got a file: {str(out)!r}")
    log = _logger(command, quiet)
    scheduler = _check_scheduler(spec.scheduler if scheduler is None else scheduler)
    t_start = time.perf_counter()

    store = FeatureStore.open(spec.feature_store)
    store.check_modality(spec.modality)
    queries = check_inputs(spec, store)

    created = _absent_dirs(out)
    out.mkdir(parents=True, exist_ok=True)
    try:
        _run(spec, out, store, queries, t_start, report=report, progress=progress,
             extra_meta=extra_meta, log=log, scheduler=scheduler)
    except BaseException:
        _remove_empty([out / CACHE, *created])
        raise
    return out


def _run(spec: StudySpec, out: Path, store: Any, queries: Any, t_start: float, *,
         report: bool | None, progress: bool | None, extra_meta: dict[str, Any] | None,
         log: Callable[[str], None], scheduler: Any = None) -> None:
    from aria_tda.results import write_results_meta

    # embedding settings: their cosine matrix, computed into the cache (or reused) first
    spec = dataclasses.replace(spec, settings=tuple(
        embedding_scores(s, out / CACHE / EMBEDDING_SCORES / f"{slug(s.name)}.npy",
                         progress=progress, log=log)
        for s in spec.settings
    ))
    store_fp = file_fingerprint(spec.feature_store)
    if scheduler is not None:
        from aria_tda.study.cluster import run_on_cluster

        results, execution = run_on_cluster(scheduler, spec, out / CACHE, store, store_fp,
                                             log=log)
    else:
        nulls: dict[str, Any] = {}
        prepared_cache: dict[bytes, Any] = {}
        results = {}
        for setting in spec.settings:
            results[setting.name] = run_setting(setting, spec, store, store_fp, out / CACHE,
                                                nulls, prepared_cache, progress=progress,
                                                log=log)
        execution = {"scheduler": None, "workers": None,
                     "settings_computed": sum("nulls_computed" in r for r in results.values()),
                     "nulls_computed": len(nulls)}

    staging = out / f".staging-{uuid.uuid4().hex[:8]}"
    staging.mkdir()
    try:
        meta = write_tables(staging, spec, store, results, queries, t_start)
        publish(staging, out)
    finally:
        remove_path(staging)
    write_results_meta(out, {**meta, "execution": execution, **(extra_meta or {})})
    want_report = spec.report if report is None else report
    if want_report:
        from aria_tda.report import write_report

        written = write_report(out)
        log(f"report: {written.html}")
    log(f"results: {out}")
