r"""Read a results folder into one in-memory model, noting what is missing.

Conventions
-----------
The report reads a results folder *only* through :mod:`aria_tda.results` (``read_results_meta``,
``read_table``, ``TABLES``). Nothing here fails on a partial folder: a table that is absent,
unreadable, lacks a required column, holds no rows, or has values of the wrong type is dropped
and described in :attr:`ResultsData.missing`, so the report shows what exists and says what
does not. Tables of installed packages (registered through the entry-point group
``aria_tda.tables``, :mod:`aria_tda._result_tables`) are read like ARIA's own; CSV or Parquet
files that no installed package claims are named in one note ("tables of a package that is not
installed"). A table that is not the one ``results.json`` was written with (changed since, or left
by another run: :func:`aria_tda.results.table_mismatches`) is shown and named there too. Only a
folder that is not a results folder at all raises (:class:`~aria_tda.errors.FileFormatError`, from
:func:`aria_tda.results.read_results_meta`).

A folder that ``aria-tda run`` is publishing into is read whole or not at all, never half old and
half new: a run removes ``results.json`` before it moves its new tables in and writes it again
after, so a read during which ``results.json`` changed (or went) is read again, and while it is
absent and the run (holding the folder's writer lock, :func:`aria_tda._lock.active_writer`)
publishes, the reader waits for it, at most ``wait`` seconds (then one line naming the run:
:class:`~aria_tda.errors.LockedError`). While a run computes, before it publishes, the folder
holds its last complete publication, which is read.

Ordering used everywhere in the report:

- settings — the order of ``results.json`` ``settings``, then any further setting in the order
  it first appears in ``reliability``, ``homogeneity``, ... ;
- channels — the order of ``results.json`` ``channels``, then the channel registry of the
  study's modality, then order of appearance;
- variants — ``original``, ``residual``, then any other value in order of appearance.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from aria_tda._checks import check_float, check_int
from aria_tda._lock import active_writer
from aria_tda.errors import FileFormatError, LockedError, ParameterError, expected
from aria_tda.results import (
    RESULTS_FILE,
    TABLES,
    default_k_report,
    read_results_meta,
    read_table,
    table_mismatches,
)

__all__ = ["EXPECTED_TABLES", "READ_WAIT_S", "ResultsData", "choose_k", "load_results"]

#: Tables a full ``aria-tda run`` writes; their absence is reported as a missing piece.
#: (``lds``, ``agreement``, ``queries``, ``tracks`` and the tables of installed packages are
#: shown when present.)
EXPECTED_TABLES = (
    "reliability",
    "homogeneity",
    "query_z",
    "topk",
    "pairs",
    "null",
    "alignment",
    "ranking",
)

VARIANT_ORDER = ("original", "residual")

# Column types the report relies on (others are kept as read).
_INT_COLUMNS = {
    "K",
    "query",
    "rank",
    "n_queries",
    "n_train",
    "constant_columns",
    "n",
    "B",
    "n_subsets",
    "n_methods",
    "proj_dim",
    "n_train_works",
}
_FLOAT_COLUMNS = {
    "kappa",
    "r1",
    "r2_5",
    "p",
    "v1_constancy",
    "zbar",
    "zbar_lo",
    "zbar_hi",
    "pos",
    "sig",
    "z",
    "mu",
    "sigma",
    "score",
    "similarity",
    "contribution",
    "alpha_max",
    "alpha_reg",
    "mean_z",
    "sd_across",
    "lds",
    "lds_sd",
    "spearman",
    "kendall",
    "lam",
    "lds_se",
    "recall",
    "chance",
}
_STR_COLUMNS = {
    "setting",
    "method",
    "stage",
    "variant",
    "channel",
    "feature",
    "track_id",
    "track_a",
    "track_b",
    "verdict",
    "verdict_reason",
    "verdict_findings",
    "hubs",
    "sanity",
    "alpha_max_feature",
    "alpha_reg_group",
    "column",
    "stratum",
    "reason",
    "diagnostic",
    "label",
    "level",
    "base_method",
    "quantity",
    "setting_a",
    "setting_b",
}
# Integer-valued columns that may legitimately hold blanks (kept as float).
_NULLABLE_INT = {"rank", "n_train_works"}

_DESCRIPTIONS = {
    "reliability": "reliability diagnostics and collapse verdicts",
    "homogeneity": "per-channel homogeneity summaries (z-bar, Pos, Sig, K-sweep)",
    "query_z": "per-query z-scores",
    "topk": "per-query top-K attributed tracks",
    "pairs": "per-query contributing track pairs",
    "null": "null distribution parameters",
    "alignment": "axis-channel alignment",
    "ranking": "method ranking",
    "confound": "metadata confound breakdown",
}


@dataclass
class ResultsData:
    """Everything the report shows, read from one results folder.

    Attributes
    ----------
    path : Path
        The results folder.
    meta : dict
        ``results.json``.
    tables : dict[str, pandas.DataFrame]
        Usable tables by schema name (absent or unusable tables are not keys).
    missing : list[str]
        Human-readable notes about missing or unusable pieces.
    settings, channels, variants : list[str]
        Display orders (see the module docstring).
    ks : list[int]
        Group sizes with homogeneity (else per-query) results, increasing.
    """

    path: Path
    meta: dict[str, Any]
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    settings: list[str] = field(default_factory=list)
    channels: list[str] = field(default_factory=list)
    variants: list[str] = field(default_factory=list)
    ks: list[int] = field(default_factory=list)

    def table(self, name: str) -> pd.DataFrame | None:
        """The table ``name`` or ``None`` when it is absent or unusable.

        Parameters
        ----------
        name : str
            Schema name, one of :data:`aria_tda.results.TABLES` (``"homogeneity"``, ...).

        Returns
        -------
        pandas.DataFrame or None
            The table with the report's column types (see :func:`load_results`).
        """
        return self.tables.get(name)

    def in_study_order(self, df: pd.DataFrame, by: list[str],
                       ascending: list[bool] | None = None) -> pd.DataFrame:
        """``df`` sorted (stably) by the columns ``by``: ``setting``, ``variant`` and ``channel``
        in the study's order (values it does not know last), any other column by value.

        Parameters
        ----------
        df : pandas.DataFrame
            A table of the folder.
        by : list of str
            The sort columns, first first.
        ascending : list of bool, optional
            Per column of ``by`` (default: all ascending).

        Returns
        -------
        pandas.DataFrame
            Re-indexed from 0.
        """
        orders = {"setting": self.settings, "variant": self.variants, "channel": self.channels}
        keys = {}
        for col in by:
            if col in orders:
                rank = {v: i for i, v in enumerate(orders[col])}
                keys[f"_order_{col}"] = df[col].map(rank).fillna(len(rank))
        cols = [f"_order_{c}" if c in orders else c for c in by]
        return (df.assign(**keys).sort_values(cols, ascending=ascending or True, kind="stable")
                .drop(columns=list(keys)).reset_index(drop=True))

    @property
    def study(self) -> dict[str, Any]:
        s = self.meta.get("study")
        return dict(s) if isinstance(s, Mapping) else {}

    @property
    def title(self) -> str:
        name = self.study.get("name") or self.meta.get("name")
        return str(name) if name else f"ARIA report — {self.path.name}"

    def setting_info(self, setting: str) -> dict[str, Any]:
        """Method, stage, verdict and reason of ``setting`` (``None`` where unknown).

        The ``reliability`` table wins over ``results.json``; without either the method is
        the part of the name before ``/`` and the stage ``"-"``.

        Parameters
        ----------
        setting : str
            A setting name, e.g. ``"TRAK/fine"``.

        Returns
        -------
        dict
            Keys ``setting``, ``method``, ``stage``, ``verdict`` (lower-case, or ``None``)
            and ``reason`` (the verdict's reason, or ``None``).
        """
        info: dict[str, Any] = {
            "setting": setting,
            "method": None,
            "stage": None,
            "verdict": None,
            "reason": None,
        }
        for s in self.meta.get("settings") or []:
            if isinstance(s, Mapping) and str(s.get("name")) == setting:
                info["method"] = s.get("method")
                info["stage"] = s.get("stage")
        rel = self.table("reliability")
        if rel is not None:
            rows = rel[rel["setting"] == setting]
            if len(rows):
                row = rows.iloc[-1]
                info["method"] = row["method"]
                info["stage"] = row["stage"]
                info["verdict"] = _clean_verdict(row["verdict"])
                info["reason"] = (
                    None if _isnull(row["verdict_reason"]) else str(row["verdict_reason"])
                )
                found = row.get("verdict_findings")
                info["findings"] = ([] if _isnull(found) or not str(found)
                                    else str(found).split(" | "))
        if info["method"] is None:
            info["method"] = setting.split("/")[0]
        if info["stage"] is None or _isnull(info["stage"]):
            info["stage"] = "-"
        return info

    def verdict(self, setting: str) -> str | None:
        """The collapse verdict of ``setting``.

        Parameters
        ----------
        setting : str
            A setting name.

        Returns
        -------
        str or None
            ``'collapsed'``, ``'suspect'``, ``'ok'`` (or another label, lower-case);
            ``None`` when the reliability table has no verdict for it.
        """
        v = self.setting_info(setting)["verdict"]
        return None if v is None else str(v)


def _isnull(x: Any) -> bool:
    if x is None:
        return True
    try:
        return bool(pd.isna(x))
    except (TypeError, ValueError):
        return False


def _clean_verdict(v: Any) -> str | None:
    if _isnull(v):
        return None
    return str(v).strip().lower() or None


def _coerce(name: str, df: pd.DataFrame) -> pd.DataFrame:
    """Give the columns the report uses their types (in place).

    Raises ValueError/TypeError when that is impossible.

    Label columns stay as they are when they already hold text (object, string or categorical
    dtype; categories are turned into text); numeric labels (e.g. integer track ids) become text.
    """
    for col in df.columns:
        if col in _INT_COLUMNS:
            if col in _NULLABLE_INT and df[col].isna().any():
                df[col] = pd.to_numeric(df[col], errors="raise").astype("float64")
                continue
            if pd.api.types.is_integer_dtype(df[col].dtype):
                df[col] = df[col].astype("int64")
                continue
            vals = pd.to_numeric(df[col], errors="raise")
            if vals.isna().any():
                raise ValueError(f"column {col!r} has blank values")
            if not np.all(np.isclose(vals, np.round(vals))):
                raise ValueError(f"column {col!r} holds non-integers")
            df[col] = np.round(vals).astype("int64")
        elif col in _FLOAT_COLUMNS:
            df[col] = pd.to_numeric(df[col], errors="raise").astype("float64")
        elif col in _STR_COLUMNS:
            s = df[col]
            if isinstance(s.dtype, pd.CategoricalDtype):
                if not all(isinstance(c, str) for c in s.cat.categories):
                    df[col] = s.cat.rename_categories([str(c) for c in s.cat.categories])
            elif pd.api.types.is_numeric_dtype(s.dtype) or pd.api.types.is_bool_dtype(s.dtype):
                df[col] = s.astype(object).where(s.isna(), s.astype(str))
    if "excluded" in df.columns:
        df["excluded"] = df["excluded"].map(_truthy)
    return df


def _truthy(v: Any) -> bool:
    if _isnull(v):
        return False
    if isinstance(v, str):
        return v.strip().lower() in {"true", "1", "yes", "y", "t"}
    return bool(v)


def _ordered(*seqs: Iterable[Any]) -> list[str]:
    """Distinct non-null values as strings, in order of first appearance across ``seqs``."""
    out: list[str] = []
    seen: set[str] = set()
    for seq in seqs:
        if isinstance(seq, pd.Series):  # distinct values first (tables have millions of rows)
            seq = list(pd.unique(seq.dropna()))
        for x in seq:
            if _isnull(x):
                continue
            s = str(x)
            if s not in seen:
                seen.add(s)
                out.append(s)
    return out


def _registry_channels(modality: Any) -> list[str]:
    if not isinstance(modality, str):
        return []
    try:
        from aria_tda.features.registry import channel_names

        return list(channel_names(modality))
    except Exception:
        return []


#: How long a reader waits, by default, for a run publishing into the folder (seconds).
READ_WAIT_S = 120.0
#: How often a waiting reader looks again (seconds).
_POLL_S = 0.1
#: How long a reader looks for signs of a publication before it says there is none (seconds).
_GRACE_S = 2.0


def load_results(results_dir: str | os.PathLike[str], *, top_n: int | None = None,
                 wait: float = READ_WAIT_S) -> ResultsData:
    """Read ``results_dir`` (a results folder written by ``aria-tda run`` / ``aria-tda demo``).

    Parameters
    ----------
    results_dir : path
        Folder holding ``results.json`` and the tables of :data:`aria_tda.results.TABLES`.
    top_n : int, optional
        Read only ranks ``<= top_n`` of the per-query ``topk`` table (the filter is pushed
        down into the Parquet read, so paper-scale folders are never read whole).
    wait : float
        Longest wait, in seconds, for a run that is publishing into the folder (module
        docstring); ``0``: do not wait.

    Returns
    -------
    ResultsData

    Raises
    ------
    FileFormatError
        if ``results_dir`` is not an ARIA results folder.
    LockedError
        if a run is publishing into it and has not finished within ``wait`` seconds, or
        another process writes it and has published no results there yet.
    """
    wait = check_float("wait", wait, min_value=0.0)
    deadline = time.monotonic() + wait
    while True:
        before = _stamp(results_dir)
        if before is None:
            _await_publication(results_dir, deadline, wait)
            before = _stamp(results_dir)
        data = _load_once(results_dir, top_n)
        if _stamp(results_dir) == before:
            return data
        # results.json went or changed while the tables were read: a run published meanwhile
        if time.monotonic() >= deadline:
            data.missing.append(f"{RESULTS_FILE} changed while the folder was read (another "
                                "process keeps writing it); tables may be of two runs")
            return data


def _stamp(results_dir: str | os.PathLike[str]) -> tuple[int, int, int, int] | None:
    """What tells one ``results.json`` from the next (inode, size, times); ``None``: absent."""
    try:
        st = os.stat(Path(results_dir) / RESULTS_FILE)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _await_publication(results_dir: str | os.PathLike[str], deadline: float,
                       wait: float) -> None:
    """Wait while a run publishes into a folder that has no ``results.json`` (module docstring).

    Returns at once when no other process writes the folder (the read then says what it is).
    """
    d = Path(results_dir)
    seen = False  # the run's staging folder seen: it publishes (it removes the folder before
    # it writes results.json, so the folder's absence later says nothing)
    grace = time.monotonic() + min(wait, _GRACE_S)
    while _stamp(d) is None:
        holder = active_writer(d)
        if holder is None:
            return
        seen = seen or any(p.name.startswith(".staging-") for p in _entries(d))
        if not seen and time.monotonic() >= grace:
            raise LockedError(
                f"{d}: no results are published there yet: this results folder is being written "
                f"by {holder}; read it when that run has finished"
            )
        if time.monotonic() >= deadline:
            raise LockedError(
                f"{d}: this results folder is being published by {holder}; waited {wait:g} s "
                "for it to finish; read it again when it has"
            )
        time.sleep(_POLL_S)


def _entries(d: Path) -> list[Path]:
    try:
        return list(d.iterdir())
    except OSError:
        return []


def _foreign_tables(d: Path, meta: Mapping[str, Any]) -> list[str]:
    """CSV and Parquet files of the folder that are no known table's (nor named in
    ``results.json``, e.g. a segment map), sorted."""
    known = {spec.filename for spec in TABLES.values()}
    named = {Path(str(v)).name for s in meta.get("settings") or [] if isinstance(s, Mapping)
             for v in s.values() if isinstance(v, str)}
    return sorted(p.name for p in _entries(d)
                  if p.suffix in (".csv", ".parquet") and p.is_file()
                  and p.name not in known and p.name not in named)


def _load_once(results_dir: str | os.PathLike[str], top_n: int | None) -> ResultsData:
    """:func:`load_results` of one ``results.json`` and the tables beside it."""
    meta = read_results_meta(results_dir)
    data = ResultsData(path=Path(results_dir), meta=meta)
    data.missing.extend(table_mismatches(results_dir, meta))
    for name, spec in TABLES.items():
        try:
            filters = (
                [("rank", "<=", int(top_n))] if (name == "topk" and top_n is not None) else None
            )
            df = read_table(results_dir, name, filters=filters)
        except FileFormatError as exc:
            data.missing.append(f"{spec.filename}: unreadable, left out ({exc})")
            continue
        if df is None:
            if name in EXPECTED_TABLES or (name == "confound" and data.study.get("confound")):
                data.missing.append(
                    f"{spec.filename} ({_DESCRIPTIONS.get(name, spec.description)}): not in this "
                    "results folder"
                )
            continue
        lacking = [c for c in spec.columns if c not in df.columns]
        if lacking:
            data.missing.append(f"{spec.filename}: lacks required column(s) {lacking}; left out")
            continue
        if df.empty:  # a header alone: verdicts would read "unknown" with no word why
            what = _DESCRIPTIONS.get(name, spec.description)
            data.missing.append(f"{spec.filename} ({what}): holds no rows; left out")
            continue
        try:
            df = _coerce(name, df)
        except (ValueError, TypeError) as exc:
            data.missing.append(f"{spec.filename}: values of the wrong type ({exc}); left out")
            continue
        data.tables[name] = df
    foreign = _foreign_tables(data.path, meta)
    if foreign:
        data.missing.append(
            "tables of a package that is not installed: " + ", ".join(foreign)
            + " (install the package that wrote them to see them in this report)")

    meta_settings = [s.get("name") for s in meta.get("settings") or [] if isinstance(s, Mapping)]
    setting_sources = [
        data.tables[n]["setting"]
        for n in (
            "reliability",
            "homogeneity",
            "query_z",
            "topk",
            "pairs",
            "alignment",
            "confound",
            "ranking",
        )
        if n in data.tables
    ]
    data.settings = _ordered(meta_settings, *setting_sources)

    meta_channels = meta.get("channels")
    meta_channels = list(meta_channels) if isinstance(meta_channels, (Mapping, list, tuple)) else []
    channel_sources = [
        data.tables[n]["channel"]
        for n in ("homogeneity", "query_z", "pairs", "alignment", "confound")
        if n in data.tables
    ]
    present = set(_ordered(*channel_sources)) if channel_sources else None
    registry = _registry_channels(data.study.get("modality"))
    channels = _ordered(
        meta_channels, [c for c in registry if present is None or c in present], *channel_sources
    )
    data.channels = channels

    variant_sources = [
        data.tables[n]["variant"]
        for n in ("homogeneity", "query_z", "topk", "pairs")
        if n in data.tables
    ]
    found = _ordered(*variant_sources)
    data.variants = [v for v in VARIANT_ORDER if v in found] + [
        v for v in found if v not in VARIANT_ORDER
    ]

    for name in ("homogeneity", "query_z"):
        if name in data.tables and len(data.tables[name]):
            data.ks = sorted({int(k) for k in data.tables[name]["K"]})
            break
    return data


def choose_k(data: ResultsData, k: int | None = None) -> int | None:
    """The group size of the report's tables.

    ``k`` when given (it must be one of ``data.ks``); otherwise the study's ``K_report`` when
    results exist for it, else 300 when present, else the largest K. ``None`` when the folder
    has no K at all.

    Parameters
    ----------
    data : ResultsData
        The results folder, as read by :func:`load_results`.
    k : int, optional
        The group size asked for (``>= 1``).

    Returns
    -------
    int or None

    Raises
    ------
    ParameterError
        if ``k`` is not a positive integer, or not one of the group sizes in the results.
    """
    if k is not None:
        k = check_int("k", k, min_value=1)
        if data.ks and k not in data.ks:
            raise ParameterError(
                expected("k", "one of the group sizes in the results " + str(data.ks), k)
            )
        return k if data.ks else None
    if not data.ks:
        return None
    k_report = data.study.get("K_report")
    if (
        isinstance(k_report, (int, float))
        and not isinstance(k_report, bool)
        and math.isfinite(k_report)
    ):
        if int(k_report) in data.ks:
            return int(k_report)
    return default_k_report(data.ks)
