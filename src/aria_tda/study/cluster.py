r"""A study's settings on a Dask cluster: independent settings in parallel, each null once.

:func:`run_on_cluster` is what :func:`aria_tda.study.run_study` does when given a ``scheduler``
(``aria-tda run --scheduler``, ``scheduler = "..."`` in the study file; values as in
:mod:`aria_tda._dask`):

1. a setting whose cache step is complete is read back on the client, exactly as on one
   machine (the scheduler is not part of the cache key: either path reuses the other's);
2. the others are planned on the client: the store rows of each setting's S_track come from
   its segment map alone (:func:`~aria_tda.study.pool.planned_rows`). Settings with the same
   rows share their prepared features and their null, so each distinct null is one task
   (:func:`~aria_tda.study.pool.shared_null`), computed once for the whole run;
3. one task per setting runs the single-machine code of
   :func:`~aria_tda.study.setting.run_setting` (:func:`~aria_tda.study.setting.compute_step`) into
   the setting's step folder, which workers reach through the shared file system, given the
   future of its null (the null and features move between workers, never recomputed);
4. the client logs each setting as it finishes; the first setting that fails cancels the
   others, and its error is raised on the client as the single-machine run raises it (its
   step removed by the task, as on one machine).

A study with a single setting to compute (one large matrix, say) gains nothing from step 3:
that setting runs on the client instead, with its passes spread over the workers — the
diagnostics' Gram pass per row range (when its ``T x T`` Gram fits in 2 GB), S_track per row
range, the null's random groups and the per-query homogeneity per block, top-K per query
block (:mod:`aria_tda.scores.distributed`, :mod:`aria_tda.homogeneity.distributed`).
``execution.split`` in ``results.json`` says which (``"settings"`` or ``"passes"``).

The tables equal the single-machine run's (same code, same seeds, same null; floating-point
sums may differ in the last bits where a worker's BLAS uses other threads). A worker that dies
mid-task costs only its tasks: Dask reruns them on another worker (and recomputes a null that
was held only there); the rerun clears the step the dead task left "running". A cancelled
setting may still finish on a worker after the client has raised; a setting cut off by the
end of a ``local:N`` cluster is left "running" and recomputed by the next run.
"""

from __future__ import annotations

import os
import time
import uuid
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aria_tda._dask import open_client
from aria_tda._steps import Step
from aria_tda.study.cache import load_cached, setting_step, slot_name
from aria_tda.study.config import SettingSpec, StudySpec, validate_study
from aria_tda.study.pool import planned_rows, rows_key, shared_null
from aria_tda.study.setting import compute_step

__all__ = ["TASK_DELAY_ENV", "run_on_cluster"]

#: Test hook: seconds each setting task sleeps before it starts (read on the client).
TASK_DELAY_ENV = "ARIA_TEST_TASK_DELAY"


def _quiet(msg: str) -> None:
    """Log lines inside a task are dropped: the client logs each setting as it finishes."""


def _plan(pending: list[tuple[SettingSpec, Step]], spec: StudySpec,
          store: Any) -> tuple[dict[str, bytes | None], dict[bytes, tuple[Any, Any, int]]]:
    """Setting name → its rows key, and rows key → (rows, present, n_queries) of its null.

    A setting that cannot be planned (its inputs are wrong) gets ``None``: its task computes
    what it needs itself and raises the error the single-machine run raises. The query count
    is the first planned setting's, as the single-machine run computes a shared null for the
    first setting that needs it. Warnings are left to the tasks (forwarded once from there).
    """
    groups: dict[bytes, tuple[Any, Any, int]] = {}
    keys: dict[str, bytes | None] = {}
    for setting, _ in pending:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                rows, present, n_queries = planned_rows(setting, spec, store)
        except Exception:
            keys[setting.name] = None
            continue
        key = rows_key(rows, present)
        keys[setting.name] = key
        groups.setdefault(key, (rows, present, n_queries))
    return keys, groups


def _null_task(spec: StudySpec, rows: Any, present: Any,
               n_queries: int) -> tuple[dict[bytes, Any], dict[str, Any]]:
    """Worker side: the prepared features and null of one track pool."""
    from aria_tda.features.store import FeatureStore

    store = FeatureStore.open(spec.feature_store)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the settings' tasks give the same warnings
        return shared_null(store, rows, present, spec, n_queries)


def _setting_task(step: Step, setting: SettingSpec, spec: StudySpec, shared: Any,
                  delay: float) -> dict[str, Any]:
    """Worker side: one setting computed into its step, with the shared null when planned."""
    from aria_tda.features.store import FeatureStore

    if delay > 0:
        time.sleep(delay)
    store = FeatureStore.open(spec.feature_store)
    prepared_cache: dict[bytes, Any] = {}
    nulls: dict[str, Any] = {}
    if shared is not None:
        prepared_cache.update(shared[0])
        nulls.update(shared[1])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = compute_step(step, setting, spec, store, nulls, prepared_cache,
                              progress=False, log=_quiet)
    result["warnings"] = [(w.category, str(w.message)) for w in caught]
    return result


def _task_delay() -> float:
    try:
        return max(0.0, float(os.environ.get(TASK_DELAY_ENV, "0") or 0))
    except ValueError:
        return 0.0


def _label(scheduler: Any, client: Any) -> str:
    if isinstance(scheduler, str):
        return scheduler.strip()
    return str(getattr(getattr(client, "scheduler", None), "address", "client"))


def run_on_cluster(
    scheduler: Any,
    spec: StudySpec,
    cache_root: Path,
    store: Any,
    store_fp: dict[str, Any],
    *,
    log: Callable[[str], None],
) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Every setting of ``spec``, the uncached ones as Dask tasks; also how the run went.

    Parameters
    ----------
    scheduler : str or dask.distributed.Client
        ``"local:N"``, a scheduler address or a client (:func:`aria_tda._dask.open_client`); a
        local cluster is started only when some setting is not cached.
    spec : StudySpec
        The study (embedding settings' score matrices already made).
    cache_root : Path
        ``OUTPUT/.cache``.
    store : FeatureStore
        The study's feature store (opened on the client; tasks open it again).
    store_fp : dict
        Its fingerprint (part of each setting's cache key).
    log : callable
        Called with each log line.

    Returns
    -------
    tuple
        Setting name → the result of :func:`~aria_tda.study.setting.run_setting`, and the
        ``execution`` record of ``results.json`` (scheduler, workers, settings computed on
        the cluster, nulls computed).
    """
    results: dict[str, dict[str, Any]] = {}
    pending: list[tuple[SettingSpec, Step]] = []
    for setting in spec.settings:
        step = setting_step(setting, spec, store_fp, cache_root)
        cached = load_cached(step, setting.name, log)
        if cached is not None:
            results[setting.name] = cached
            continue
        pending.append((setting, step))
    execution: dict[str, Any] = {
        "scheduler": scheduler if isinstance(scheduler, str) else None,
        "workers": None, "settings_computed": len(pending), "nulls_computed": 0,
    }
    if not pending:
        return results, execution

    keys, groups = _plan(pending, spec, store)
    remote = validate_study(spec)  # absolute paths: workers need not share the client's cwd
    remote_settings = {s.name: r for s, r in zip(spec.settings, remote.settings, strict=True)}
    delay = _task_delay()
    token = uuid.uuid4().hex[:8]
    with open_client(scheduler) as client:
        label = _label(scheduler, client)
        n_workers = len(client.nthreads())
        execution.update(scheduler=label, workers=n_workers)
        if len(pending) == 1:  # nothing to run side by side: spread the setting's passes
            setting, step = pending[0]
            log(f"{setting.name}: its passes as tasks on {label} ({n_workers} workers)")
            result = compute_step(step, setting, spec, store, {}, {}, progress=None,
                                  log=log, client=client)
            results[setting.name] = result
            execution.update(nulls_computed=int(result.get("nulls_computed", 0)),
                             split="passes")
            return results, execution
        execution["split"] = "settings"
        null_futures = {
            key: client.submit(_null_task, remote, rows, present, n_queries, pure=False,
                               key=f"aria-null-{i}-{token}")
            for i, (key, (rows, present, n_queries)) in enumerate(groups.items())
        }
        futures: dict[Any, str] = {}
        for setting, step in pending:
            key = keys[setting.name]
            task_step = Step(Path(step.root).absolute(), step.name, step.params)
            fut = client.submit(
                _setting_task, task_step, remote_settings[setting.name], remote,
                null_futures.get(key) if key is not None else None, delay, pure=False,
                key=f"aria-setting-{slot_name(setting.name)}-{token}",
            )
            futures[fut] = setting.name
        log(f"{len(pending)} setting(s) on {label} ({n_workers} workers; "
            f"{len(null_futures)} null(s), each computed once)")
        results.update(_gather(client, futures, list(null_futures.values()), log=log))
    execution["nulls_computed"] = len(null_futures) + sum(
        int(r.get("nulls_computed", 0)) for r in results.values())
    return results, execution


def _gather(client: Any, futures: dict[Any, str], others: list[Any], *,
            log: Callable[[str], None]) -> dict[str, dict[str, Any]]:
    """Results as the settings finish; the first failure cancels the rest and is raised."""
    from dask.distributed import as_completed

    out: dict[str, dict[str, Any]] = {}
    try:
        for fut in as_completed(list(futures)):
            result = fut.result()  # a failed setting raises its own error here
            for category, message in result.pop("warnings", []):
                warnings.warn(message, category, stacklevel=2)
            out[futures[fut]] = result
            log(f"{futures[fut]}: done ({len(out)}/{len(futures)})")
    finally:
        client.cancel([*futures, *others])
    return out
