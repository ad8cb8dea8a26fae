"""The per-setting cache: where a setting's step lives, which files it holds, how a finished
step is keyed, computed into and read back (:mod:`aria_tda.study.setting` computes the tables).

A step (:class:`aria_tda._steps.Step`) is a folder ``OUTPUT/.cache/<slot>/`` (:func:`slot_name`)
holding :data:`STEP_FILES` and a record with the digest of each. :func:`load_cached` returns a
complete step's tables when every file is the one the step wrote, and ``None`` — with one
:class:`~aria_tda.errors.AriaWarning` naming the file — when one is missing, altered, unreadable
or of another schema, so the setting is computed again instead of failing with a traceback.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aria_tda._fingerprint import content_digest
from aria_tda._io import read_json, remove_path
from aria_tda._steps import Step, file_fingerprint
from aria_tda.errors import AriaWarning
from aria_tda.study.config import N_PAIRS, SettingSpec, StudySpec

__all__ = ["STEP_FILES", "TABLES", "DamagedCache", "compute_into", "file_digests", "load_cached",
           "read_cached", "setting_step", "slot_name", "slug"]

#: The per-setting tables (Parquet files of the cached step): the homogeneity analysis and the
#: distinctive reading (:mod:`aria_tda.study.aspects`).
TABLES = ("homogeneity", "query_z", "pairs", "topk", "null", "aspects", "query_aspects",
          "set_aspects", "item_alignment")


def slug(name: str) -> str:
    """A file-system-safe folder name for a setting name.

    Parameters
    ----------
    name : str
        The setting's name.
    """
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "setting"


def slot_name(name: str) -> str:
    """The cache folder of a setting: its readable :func:`slug` and a hash of the exact name.

    Two names that slug alike (``TRAK/fine``, ``TRAK_fine``) get distinct slots, so they never
    evict each other's cached results: ``TRAK_fine-1c0e3a5b``.

    Parameters
    ----------
    name : str
        The setting's name.
    """
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{slug(name)[:80]}-{digest}"


#: Files of a complete step besides its record.
STEP_FILES = ("diagnostics.json", "alignment.json", *(f"{name}.parquet" for name in TABLES))
#: Keys every cached ``diagnostics.json`` holds (what the tables are built from).
_DIAGNOSTICS_KEYS = ("kappa", "r1", "r2_5", "p", "n_train", "n_queries")


class DamagedCache(Exception):
    """A cached step that cannot be used as it is (its message says which file and why)."""


def file_digests(work: Path) -> dict[str, str]:
    """The digest of every file of a step folder (its record keeps them).

    Parameters
    ----------
    work : Path
        The step's folder.
    """
    return {name: content_digest(work / name) for name in STEP_FILES}


def read_cached(step: Step) -> dict[str, Any]:
    """The tables of a complete step, as :func:`aria_tda.study.setting.run_setting` returns them.

    Every file is checked against the digest its record holds and read with its expected
    shape (the tables' required columns, the setting's name).

    Parameters
    ----------
    step : Step
        A complete step (:meth:`~aria_tda._steps.Step.is_complete`).

    Raises
    ------
    DamagedCache
        A file is missing, altered since the step finished, unreadable or of another shape.
    """
    import pandas as pd

    from aria_tda.results import TABLES as SCHEMA

    summary = step.summary()
    recorded = summary.get("files")
    if not isinstance(recorded, dict):
        raise DamagedCache(f"{step.record_path} lists none of its files")
    for name in STEP_FILES:
        f = step.path / name
        if not f.is_file():
            raise DamagedCache(f"{f} is missing")
        if content_digest(f) != recorded.get(name):
            raise DamagedCache(f"{f} differs from what the finished step wrote")
    try:
        diagnostics = read_json(step.path / "diagnostics.json")
        alignment = read_json(step.path / "alignment.json")
    except (OSError, ValueError) as exc:
        raise DamagedCache(f"{step.path}: a JSON file is unreadable ({exc})") from None
    if not isinstance(diagnostics, dict) or any(k not in diagnostics for k in _DIAGNOSTICS_KEYS):
        raise DamagedCache(f"{step.path / 'diagnostics.json'} is not a diagnostics record")
    if not isinstance(alignment, list):
        raise DamagedCache(f"{step.path / 'alignment.json'} is not a list of alignment rows")
    timings = summary.get("timings")
    passes = summary.get("passes")
    out = {"diagnostics": diagnostics, "alignment": alignment,
           "timings": timings if isinstance(timings, dict) else {},
           "passes": passes if isinstance(passes, list) else []}
    setting = (step.params.get("setting") or {}).get("name")
    for name in TABLES:
        f = step.path / f"{name}.parquet"
        try:
            df = pd.read_parquet(f)
        except Exception as exc:  # pyarrow raises many types for a damaged file
            raise DamagedCache(f"{f} is unreadable ({type(exc).__name__})") from None
        lacking = [c for c in ("setting", "variant", *SCHEMA[name].columns)
                   if c not in df.columns]
        if lacking:
            raise DamagedCache(f"{f} lacks column(s) {lacking}")
        if setting is not None and len(df) and not (df["setting"] == setting).all():
            raise DamagedCache(f"{f} holds another setting's rows")
        out[name] = df
    return out


def load_cached(step: Step, setting: str, log: Callable[[str], None]) -> dict[str, Any] | None:
    """The cached tables of ``step`` when they can be reused, else ``None`` (to recompute).

    Logs why a stale step is recomputed; a damaged one (unreadable record, a file missing,
    altered, truncated or of another schema) gives one
    :class:`~aria_tda.errors.AriaWarning` naming the file.

    Parameters
    ----------
    step : Step
        The setting's step (:func:`setting_step`).
    setting : str
        The setting's name, for the messages.
    log : callable
        Called with each log line.
    """
    damage = step.damage()
    if damage is None and step.is_complete():
        try:
            result = read_cached(step)
        except DamagedCache as exc:
            damage = str(exc)
        else:
            log(f"{setting}: reusing cached results ({step.path})")
            return result
    if damage is not None:
        warnings.warn(
            f"setting {setting!r}: damaged cache entry, recomputed: {damage}",
            AriaWarning,
            stacklevel=3,
        )
        return None
    reason = step.stale_reason()
    if reason:
        log(f"{setting}: recomputing ({reason})")
    return None


def setting_step(setting: SettingSpec, spec: StudySpec, store_fp: dict[str, Any],
                 cache_root: Path) -> Step:
    """The cache step of a setting: its folder and the parameters it must have been made with.

    The parameters are the setting, the content fingerprints of its files
    (:func:`aria_tda._steps.file_fingerprint`: a rewritten file is never taken for the old one,
    whatever its mtime) and of the feature store, and the study's recorded parameters; where
    the study runs (``scheduler``) is not one of them, so a setting computed on one machine is
    reused on a cluster and the other way round. The folder is :func:`slot_name`.

    Parameters
    ----------
    setting : SettingSpec
        The setting.
    spec : StudySpec
        The study.
    store_fp : dict
        Fingerprint of the feature store.
    cache_root : Path
        ``OUTPUT/.cache``.
    """
    from aria_tda.study.aspects import aspects_key
    from aria_tda.study.inputs import check_setting_files

    check_setting_files(setting)
    params = {
        "setting": dataclasses.asdict(setting) | {
            "scores": file_fingerprint(str(setting.scores)),
            "segments": None if setting.segments is None else file_fingerprint(setting.segments),
        },
        "store": store_fp,
        "study": {k: v for k, v in spec.params().items()
                  if k not in {"name", "confound", "queries"}},
        "n_pairs": N_PAIRS,
        "concentration": 1,  # steps cached before the top-K concentration are recomputed
        "aspects": aspects_key(spec),  # the distinctive reading's inputs
        # 3: the segment-matched null and the distinctive reading (older steps are recomputed)
        "cache": 3,
    }
    return Step(cache_root, slot_name(setting.name), params)


def compute_into(step: Step, compute: Callable[[Path], dict[str, Any]]) -> dict[str, Any]:
    """Compute a setting into its (cleared) step and mark it complete.

    A failure (Ctrl-C and a full disk included) removes the step (never left "running",
    :meth:`~aria_tda._steps.Step.running`); the ``S_track`` files (``N x T`` float64) are
    removed either way. The record keeps the ``timings``, the ``passes`` and the digest of every
    file written (checked by :func:`read_cached`).

    Parameters
    ----------
    step : Step
        From :func:`setting_step`.
    compute : callable
        ``compute(folder)`` writes :data:`STEP_FILES` into the folder and returns the setting's
        result (with ``timings`` and ``passes``).
    """
    with step.running() as work:  # a failed step is not left "running": the next run redoes it
        try:
            result = compute(work)
        finally:  # S_track files are N x T float64: never leave them behind
            for f in work.glob("s_track_*"):
                remove_path(f)
            for f in work.glob(".s_track_*"):  # their temporaries
                remove_path(f)
        step.complete(timings=result["timings"], passes=result.get("passes", []),
                      files=file_digests(work))
    return result
