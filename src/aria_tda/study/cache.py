"""The per-setting cache: where a setting's step lives, which files it holds, how a finished
step is checked and read back (:mod:`aria_tda.study.setting` computes and keys the steps).

A step (:class:`aria_tda._steps.Step`) is a folder ``OUTPUT/.cache/<slot>/`` (:func:`slot_name`)
holding :data:`STEP_FILES` and a record with the digest of each. :func:`load_cached` returns a
complete step's tables when every file is the one the step wrote, and ``None`` — with one
:class:`~aria_tda.errors.AriaWarning` naming the file — when one is missing, altered, unreadable
or of another schema, so the setting is computed again instead of failing with a traceback.
"""

from __future__ import annotations

import hashlib
import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aria_tda._fingerprint import content_digest
from aria_tda._io import read_json
from aria_tda._steps import Step
from aria_tda.errors import AriaWarning

__all__ = ["STEP_FILES", "TABLES", "DamagedCache", "file_digests", "load_cached", "read_cached",
           "slot_name", "slug"]

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
    out = {"diagnostics": diagnostics, "alignment": alignment,
           "timings": timings if isinstance(timings, dict) else {}}
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
        The setting's step (:func:`aria_tda.study.setting.setting_step`).
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
