""":func:`run_study`: check the inputs, run every setting, publish the results folder, report.

A failed run leaves nothing half-made: inputs are checked before any folder is created, a
setting that fails removes its cache step, and the folders the run created are removed again
when they are left empty (finished settings of an interrupted run stay cached, so a rerun
resumes).

One writer per results folder: the run holds its writer lock
(:func:`aria_tda._lock.writer_lock`) from the first byte to the report, so a second run into
the same folder is refused in one line naming the first; under the lock it first removes what
killed runs left (their staging folders and temporaries, cache steps they left unfinished).
Inputs are read-only: a results folder that is, or lies inside, an input, or whose files the
run writes would replace an input, or a folder ARIA did not make that holds files of those
names, is refused before any work (:func:`check_output`); so is a ``.cache`` that is not the
runner's (pip's, a model hub's: :func:`foreign_cache_entries`), a link at a name the run
writes, and an output folder given as a link to a folder ARIA did not write. The old
``report.html`` and ``results.json`` are removed before new tables are published, so neither is
ever left beside tables it was not built from; without a report (``--no-report``) a note says
the old one was removed.
"""

from __future__ import annotations

import dataclasses
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aria_tda._dask import check_scheduler
from aria_tda._io import as_disk_full, is_temporary, remove_path, sweep_leftovers, temp_name
from aria_tda._lock import LOCK_NAME, writer_lock
from aria_tda._outputs import REPORT_PAGE, RESULTS_CACHE, check_lock_file, page_kind, refusal
from aria_tda._steps import RECORD, Step, file_fingerprint
from aria_tda.errors import ParameterError, expected
from aria_tda.results import (
    REPORT_FILE,
    RESULTS_FILE,
    RUN_TABLES,
    TABLES,
    is_aria_report,
    is_results_dir,
)
from aria_tda.study.cache import STEP_FILES, slot_name
from aria_tda.study.config import StudySpec
from aria_tda.study.inputs import check_inputs, embedding_scores
from aria_tda.study.memory_inputs import save_in_memory_inputs
from aria_tda.study.setting import run_setting
from aria_tda.study.studyfile import load_study
from aria_tda.study.tables import publish, write_tables

__all__ = ["CACHE", "PUBLISH_DELAY_ENV", "check_output", "foreign_cache_entries", "run_study"]

#: Folder of the per-setting cache steps inside the results folder.
CACHE = RESULTS_CACHE
#: Folder (inside :data:`CACHE`) of the cosine matrices of embedding settings; a setting's
#: step folder never starts with "_" (:func:`aria_tda.study.cache.slot_name`).
EMBEDDING_SCORES = "_embedding_scores"
#: Test hook: seconds the run waits after publishing its first table (to kill it there).
PUBLISH_DELAY_ENV = "ARIA_TEST_PUBLISH_DELAY"


def _logger(command: str, quiet: bool) -> Callable[[str], None]:
    def log(msg: str) -> None:
        if not quiet:
            print(f"[{command}] {msg}", flush=True)

    return log


#: How each command names the K option in the "K sweep" line.
_K_OPTION = {"aria-tda homogeneity": "-K"}


def _note_k_sweep(spec: StudySpec, pool: int, command: str, quiet: bool) -> None:
    """One stderr line saying which default K sweep the pool got (nothing when K was named)."""
    if quiet or not spec.k_is_default:
        return
    import sys

    option = _K_OPTION.get(command, "K in the study file")
    print(f"K sweep: {', '.join(map(str, spec.K))} (default for a pool of {pool} tracks; set "
          f"{option} to choose)", file=sys.stderr, flush=True)


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


def _inputs(spec: StudySpec) -> list[tuple[str, Path]]:
    """Every input of the study, as ``(key, path)``."""
    found: list[tuple[str, Path]] = [("feature_store", Path(spec.feature_store))]
    if spec.queries is not None:
        found.append(("queries", Path(spec.queries)))
    if spec.query_features is not None:
        found.append(("query_features", Path(spec.query_features)))
    if spec.path is not None:
        found.append(("study file", Path(spec.path)))
    for s in spec.settings:
        for key in ("scores", "segments", "train_embeddings", "query_embeddings"):
            value = getattr(s, key)
            if value is not None and not (key == "scores" and s.scores_from_embeddings):
                found.append((f"setting {s.name!r}: {key}", Path(value)))
    return found


def _written_names(report: bool) -> set[str]:
    """Names the run writes (or replaces, or removes) at the top of a results folder."""
    names = {RESULTS_FILE, CACHE, REPORT_FILE, *(TABLES[t].filename for t in RUN_TABLES)}
    return names if report else names - {REPORT_FILE}


#: A setting's step folder in the cache (:func:`aria_tda.study.cache.slot_name`).
_SLOT = re.compile(r"[A-Za-z0-9_.-]{1,80}-[0-9a-f]{8}")
#: Files of the embedding settings' cosine matrices (and their sidecars, output locks).
_SCORE_FILE = re.compile(r"[^/]+\.npy(?:\.manifest\.json|\.row_ids\.npy|\.digest\.json|"
                         r"\.queries\.csv)?|\..+\.aria-lock")


def _entry_names(folder: Path) -> list[os.DirEntry[str]]:
    """The entries of ``folder`` other than the temporaries of ARIA's writers, by name."""
    with os.scandir(folder) as it:
        return sorted((e for e in it if not is_temporary(e.name)), key=lambda e: e.name)


def _step_shaped(entry: os.DirEntry[str]) -> bool:
    """A setting's step folder: a slot name, and a step record or only step files in it."""
    if not _SLOT.fullmatch(entry.name) or not entry.is_dir(follow_symlinks=False):
        return False
    inner = _entry_names(Path(entry.path))
    names = {e.name for e in inner if e.is_file(follow_symlinks=False)}
    return len(names) == len(inner) and (RECORD in names or names <= set(STEP_FILES))


def foreign_cache_entries(cache: Path) -> list[str]:
    """What the folder ``cache`` holds that is not the study runner's (empty: all of it is).

    The runner's cache holds its step folders (:func:`aria_tda.study.cache.slot_name`, each
    with a step record or only step files), the cosine matrices of embedding settings in
    ``_embedding_scores/``, its writer lock and its writers' temporaries. Anything else — pip's
    or a model hub's cache, a link — is another program's, and the run neither writes into
    nor sweeps such a folder.

    Parameters
    ----------
    cache : Path
        An existing folder (``OUTPUT/.cache``).

    Returns
    -------
    list of str
        Names of the entries that are not the runner's (``_embedding_scores/x`` for one inside
        that folder).
    """
    foreign: list[str] = []
    for entry in _entry_names(cache):
        if entry.name == LOCK_NAME and entry.is_file(follow_symlinks=False):
            continue
        if entry.name == EMBEDDING_SCORES and entry.is_dir(follow_symlinks=False):
            foreign += [f"{entry.name}/{e.name}" for e in _entry_names(Path(entry.path))
                        if not (e.is_file(follow_symlinks=False)
                                and _SCORE_FILE.fullmatch(e.name))]
            continue
        if not _step_shaped(entry):
            foreign.append(entry.name)
    return foreign


#: What a refusal of the results folder asks to change.
_FLAG = "output folder (--out)"


def _refuse(path: Path, what: str, *, removable: bool = True) -> ParameterError:
    return refusal("output", path, what, flag=_FLAG, removable=removable)


def _check_link(out: Path) -> None:
    """An output folder given as a symbolic link leads to ARIA's results folder or an empty one."""
    if not out.is_symlink():
        return
    if not out.exists():
        raise _refuse(out, "is a symbolic link to nothing")
    if not out.is_dir():
        raise _refuse(out, "is a symbolic link to a file")
    if is_results_dir(out) or not _entry_names(out):
        return
    raise _refuse(out, f"is a symbolic link to {str(out.resolve())!r}, a folder ARIA did not "
                  f"write (no {RESULTS_FILE}); ARIA follows no link into another's folder")


def _check_entries(out: Path, written: set[str]) -> list[str]:
    """Refuse a link, or a thing of another type, at a name the run writes; return those there.

    ``.cache`` must be the runner's own (:func:`foreign_cache_entries`); an empty one is not
    counted as there.
    """
    present = []
    for name in sorted(written | {LOCK_NAME, REPORT_FILE}):  # an old report.html is removed
        p = out / name
        if p.is_symlink():
            raise _refuse(p, "is a symbolic link (ARIA writes through no link)")
        if not p.exists() or name not in written | {LOCK_NAME}:
            continue
        if name == CACHE:
            if not p.is_dir():
                raise _refuse(p, "is a file where the run keeps its cache folder")
            foreign = foreign_cache_entries(p)
            if foreign:
                shown = ", ".join(foreign[:4]) + (f" and {len(foreign) - 4} more"
                                                  if len(foreign) > 4 else "")
                raise _refuse(p, f"holds files ARIA did not write ({shown}), not the run's "
                              "cache")
            if not _entry_names(p):
                continue
        elif name == LOCK_NAME:
            check_lock_file("output", out, flag=_FLAG)
            continue
        elif not p.is_file():
            raise _refuse(p, f"is {'a folder' if p.is_dir() else 'a special file'} where the "
                          "run writes a file")
        present.append(name)
    return present


def check_output(spec: StudySpec, out: Path, *, report: bool) -> None:
    """Refuse, before any work, a results folder whose writing would touch a file not ARIA's.

    Inputs are read-only: the folder must not be an input or lie inside one (a feature store,
    an embedding store, a zarr score folder), and none of the names the run writes (its tables,
    ``results.json``, ``report.html``, ``.cache``) may be or hold an input. No name the run
    writes may be a symbolic link, and ``.cache`` must hold only the runner's steps
    (:func:`foreign_cache_entries`: never pip's or a model hub's cache). A folder that ARIA
    did not make (no ``results.json`` of ARIA, no cache of the runner, no writer lock) must not
    hold files of those names; an output folder given as a link must lead to a results folder
    ARIA wrote or an empty folder; a ``report.html`` about to be written over must be ARIA's
    own report page.

    Parameters
    ----------
    spec : StudySpec
        The study (its inputs).
    out : Path
        The results folder.
    report : bool
        Whether the run writes ``report.html``.

    Raises
    ------
    ParameterError
        Naming the folder, the input or the files, and the output folder to change.
    """
    target = out.absolute().resolve()
    written = _written_names(report)
    for key, path in _inputs(spec):
        real = path.absolute().resolve()
        if real == target or real in target.parents:
            raise ParameterError(
                f"output: expected a results folder apart from the study's inputs, got "
                f"{str(out)!r}, which is {'' if real == target else 'inside '}the {key} "
                f"{str(path)!r}; choose another {_FLAG}"
            )
        if target in real.parents and real.relative_to(target).parts[0] in written:
            name = real.relative_to(target).parts[0]
            raise ParameterError(
                f"output: expected a results folder whose files are not inputs, got "
                f"{str(out)!r}, where the run writes {name!r} over the {key} {str(path)!r}; "
                f"choose another {_FLAG}"
            )
    for d in (target, *target.parents):
        if d.name == CACHE and is_results_dir(d.parent):
            raise _refuse(out, f"{'is' if d == target else 'lies inside'} the cache of the "
                          f"results folder {str(d.parent)!r}", removable=False)
    _check_link(out)
    if not out.is_dir():
        return
    present = _check_entries(out, written)
    cache = out / CACHE
    ours = (is_results_dir(out) or (out / LOCK_NAME).is_file()
            or (cache.is_dir() and bool(_entry_names(cache))))
    if not ours and present:
        raise _refuse(out, f"holds files ARIA did not write ({', '.join(present)}), which the "
                      "run would replace")
    page = out / REPORT_FILE
    kind = page_kind(page)
    if page.exists() and kind != REPORT_PAGE and (report or kind is not None):
        # written over by the report, or (another ARIA page) removed as the old report
        raise refusal("output", page, "is a page ARIA did not write as a report",
                      flag=f"{_FLAG} or run with --no-report (report = false)"
                      if kind is None else _FLAG)


def _sweep(out: Path, slots: set[str]) -> None:
    """Remove what killed runs left: temporaries, staging folders, unfinished cache steps.

    Only leftovers of processes that no longer exist are touched
    (:func:`aria_tda._io.sweep_leftovers`); a cache step whose record is not "complete" is
    removed when no setting of this study uses its slot (a setting of this study recomputes its
    own).
    """
    sweep_leftovers(out)
    cache = out / CACHE
    if not cache.is_dir():
        return
    sweep_leftovers(cache)
    for entry in sorted(cache.iterdir()):
        if not entry.is_dir() or entry.is_symlink():
            continue
        sweep_leftovers(entry)
        if entry.name.startswith("_") or entry.name in slots:
            continue
        rec = Step(cache, entry.name).record()
        if rec is None or rec.get("status") != "complete":
            remove_path(entry)


def run_study(
    study: StudySpec | str | os.PathLike[str],
    *,
    output: str | os.PathLike[str] | None = None,
    report: bool | None = None,
    media: bool | None = None,
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
    media : bool, optional
        Render the report's listening room (audio clips, notation) (default: the study's
        ``media``, true); ``False`` writes the report without it.
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
    spec = save_in_memory_inputs(spec)  # arrays, tensors, DataFrames: read as files from here
    out = Path(output) if output is not None else spec.output
    if out.exists() and not out.is_dir():
        raise ParameterError(f"output: expected a results folder, got a file: {str(out)!r}")
    log = _logger(command, quiet)
    scheduler = _check_scheduler(spec.scheduler if scheduler is None else scheduler)
    t_start = time.perf_counter()

    store = FeatureStore.open(spec.feature_store)
    store.check_modality(spec.modality)
    spec, queries, pool = check_inputs(spec, store)
    _note_k_sweep(spec, pool, command, quiet)
    want_report = spec.report if report is None else bool(report)
    if media is not None:
        spec = dataclasses.replace(spec, media=bool(media))
    check_output(spec, out, report=want_report)

    created = _absent_dirs(out)
    out.mkdir(parents=True, exist_ok=True)
    try:
        with writer_lock(out, "results folder"):
            try:
                try:
                    _sweep(out, {slot_name(s.name) for s in spec.settings})
                    _run(spec, out, store, queries, t_start, report=want_report,
                         progress=progress, extra_meta=extra_meta, log=log, scheduler=scheduler)
                except OSError as exc:  # e.g. pyarrow's: one line naming the device
                    full = as_disk_full(exc, out)
                    if full is not exc:
                        raise full from None
                    raise
            except BaseException:
                _remove_empty([out / CACHE])  # the lock file goes when the lock is released
                raise
    except BaseException:
        _remove_empty(created)  # folders this run made (another run's are not touched)
        raise
    return out


def _run(spec: StudySpec, out: Path, store: Any, queries: Any, t_start: float, *,
         report: bool, progress: bool | None, extra_meta: dict[str, Any] | None,
         log: Callable[[str], None], scheduler: Any = None) -> None:
    from aria_tda.results import write_results_meta

    # embedding settings: their cosine matrix, computed into the cache (or reused) first
    spec = dataclasses.replace(spec, settings=tuple(
        embedding_scores(s, out / CACHE / EMBEDDING_SCORES / f"{slot_name(s.name)}.npy",
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

    staging = out / temp_name("", "staging")
    staging.mkdir()
    try:
        meta = write_tables(staging, spec, store, results, queries, t_start)
        # the old report and results.json describe the old tables: gone before new ones land
        page = out / REPORT_FILE
        had_report = page.is_file() and is_aria_report(page)
        if had_report:
            page.unlink()
        remove_path(out / RESULTS_FILE)
        publish(staging, out, delay=_publish_delay())
    finally:
        remove_path(staging)
    write_results_meta(out, {**meta, "execution": execution, **(extra_meta or {})},
                       record_tables=True)
    if report:
        from aria_tda.report import write_report

        written = write_report(out, progress=progress, log=log, media=spec.media)
        log(f"report: {written.html}")
    elif had_report:
        log(f"removed the old {REPORT_FILE}: it was built from the earlier tables (make one "
            f"of these with 'aria-tda report {out}')")
    log(f"results: {out}")


def _publish_delay() -> float:
    try:
        return max(0.0, float(os.environ.get(PUBLISH_DELAY_ENV, "0") or 0))
    except ValueError:
        return 0.0
