r"""The results folder: what ``aria-tda run`` / ``aria-tda demo`` write and ``aria-tda report``
reads.

Conventions
-----------
A results folder holds ``results.json`` (run metadata) and one file per table. Small tables
are CSV; per-query tables are Parquet. Every table is *long* format: one row per
(setting, variant, K, channel, ...) combination, so that adding a setting, a K or a channel
adds rows, never columns.

Vocabulary used in the columns:

- ``setting``  — one score matrix, e.g. ``"TRAK"`` or ``"TRAK/fine"`` (method × stage);
- ``method``, ``stage`` — its parts (stage is ``"-"`` when there is none);
- ``variant``  — ``"original"`` (the score matrix as given) or ``"residual"`` (rank-1 residual
  :math:`S - \sigma_1 u_1 v_1^\top`);
- ``K``        — group size; ``channel`` — an evidence channel name from
  :mod:`aria_tda.features.registry`; ``query`` — 0-based query (column) index;
- ``track_id`` — the track identifier used by the feature store.

``results.json`` keys: ``kind`` (``"aria-results"``), ``aria_version``, ``created``,
``study`` (parameters: ``modality``, ``K`` list, ``K_report``, ``B``, ``seed``,
``n_bootstrap``, ``feature_store``, …), ``settings`` (list of objects with at least ``name``,
``method``, ``stage``, ``normalize``, ``scores``), ``channels`` (channel → feature names),
``versions`` (package → version), ``timings`` (stage → seconds), ``notes`` (list of strings),
``execution`` (where the study ran: ``scheduler`` — ``null`` on one machine —, ``workers``,
``settings_computed``, ``nulls_computed``, and on a cluster ``split``: ``"settings"`` or
``"passes"``), ``tables`` (written by the study runner: file name → content digest of each of
its tables, :data:`RUN_TABLES`, when it wrote ``results.json``; :func:`table_mismatches` tells
a table changed since, or left by another run, from the ones this ``results.json`` describes),
``media`` (written by the study runner: each query's and listed track's media file with its
size, mtime and content digest, so that a report refuses media changed since the run:
:mod:`aria_tda.media.recorded`).

The tables' schema (:data:`TABLES`, :class:`TableSpec`, the column groups) lives in
:mod:`aria_tda._result_tables` and is imported from here. Installed packages add their own
tables through the entry-point group ``aria_tda.tables`` (:data:`TABLES` finds them when first
asked; see :mod:`aria_tda._result_tables`).

The schema below is the contract between the writers (:mod:`aria_tda.study`, and packages
that register tables) and the reader (:mod:`aria_tda.report`). Writers must provide the
required columns and may add more; readers must tolerate extra columns and missing optional tables.
"""

from __future__ import annotations

import numbers
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from aria_tda._fingerprint import content_digest
from aria_tda._io import atomic_path, read_json, write_json
from aria_tda._paths import input_path
from aria_tda._result_tables import (
    ALIGNMENT_MEASURES,
    CONCENTRATION_COLUMNS,
    CORE_TABLES,
    DEPENDENCE_COLUMNS,
    HOMOGENEITY_SUMMARY,
    RELIABILITY_DIAGNOSTICS,
    RUN_TABLES,
    TABLES,
    TableSpec,
)
from aria_tda.errors import DataError, FileFormatError, ParameterError, expected
from aria_tda.manifest import make_manifest

__all__ = [
    "ALIGNMENT_MEASURES",
    "CONCENTRATION_COLUMNS",
    "CORE_TABLES",
    "DEFAULT_KS",
    "DEPENDENCE_COLUMNS",
    "HOMOGENEITY_SUMMARY",
    "PREFERRED_K_REPORT",
    "RELIABILITY_DIAGNOSTICS",
    "REPORT_FILE",
    "RESULTS_FILE",
    "RUN_TABLES",
    "TABLES",
    "TableSpec",
    "default_k_report",
    "default_ks",
    "is_aria_report",
    "is_results_dir",
    "read_results_meta",
    "read_table",
    "table_digests",
    "table_mismatches",
    "write_results_meta",
    "write_table",
]

#: The paper's K sweep: group sizes of the homogeneity analysis when a study names none.
DEFAULT_KS: tuple[int, ...] = (20, 50, 100, 200, 300, 400, 500)
#: The K of the report's tables when the study does not name one and it is swept.
PREFERRED_K_REPORT = 300
#: A default group size is at most the pool size divided by this (:func:`default_ks`).
POOL_FRACTION = 4
#: Fewest of the paper's group sizes a default sweep keeps before it falls back to the
#: 1-2-5 series (:func:`default_ks`).
MIN_DEFAULT_KS = 3


def default_ks(n_tracks: int | None = None) -> tuple[int, ...]:
    """The K sweep used when none is given, fitted to a pool of ``n_tracks`` tracks.

    The rule:

    1. ``cap = n_tracks // 4`` (:data:`POOL_FRACTION`): a group holds at most a quarter of the
       pool, so that top-K groups and the random reference groups of the null are not most of
       the pool;
    2. the paper's sweep :data:`DEFAULT_KS` (20, 50, 100, 200, 300, 400, 500) cut to the values
       ``<= cap``, when at least three (:data:`MIN_DEFAULT_KS`) are left — on a pool of 2000
       tracks or more this is the paper's whole sweep, unchanged;
    3. otherwise the 1-2-5 series 5, 10, 20, 50, 100, 200, 500, ... up to ``cap`` (a pool
       of 120 tracks: 5, 10, 20; of 300: 5, 10, 20, 50);
    4. when that is empty too (fewer than 20 tracks), the single K ``max(2, cap)``.

    Without a pool size (``None``) the paper's sweep is returned.

    Parameters
    ----------
    n_tracks : int, optional
        The pool: the tracks that have both features and scores (>= 2).

    Returns
    -------
    tuple of int
        Increasing group sizes, each ``<= n_tracks``.

    Raises
    ------
    ParameterError
        if ``n_tracks`` is below 2 (no group of two tracks can be drawn).
    """
    if n_tracks is None:
        return DEFAULT_KS
    if isinstance(n_tracks, bool) or not isinstance(n_tracks, numbers.Integral) or n_tracks < 2:
        raise ParameterError(expected("n_tracks", "a pool of at least 2 tracks", n_tracks))
    cap = int(n_tracks) // POOL_FRACTION
    kept = tuple(k for k in DEFAULT_KS if k <= cap)
    if len(kept) >= MIN_DEFAULT_KS:
        return kept
    series: list[int] = []
    base = 1
    while 5 * base <= cap:
        series += [m * base for m in (5, 10, 20) if m * base <= cap]
        base *= 10
    return tuple(series) if series else (max(2, cap),)


def default_k_report(ks: Sequence[int]) -> int:
    """The K of the report's tables when none is given: 300 when it is swept, else the largest.

    One rule for the study runner (``K_report``), the per-query evidence (``evidence_k``),
    the report's default table K and the demos.

    Parameters
    ----------
    ks : sequence of int
        The swept group sizes (non-empty).
    """
    ordered = sorted(int(k) for k in ks)
    if not ordered:
        raise ParameterError(expected("ks", "at least one group size", list(ks)))
    return PREFERRED_K_REPORT if PREFERRED_K_REPORT in ordered else ordered[-1]


RESULTS_FILE = "results.json"
RESULTS_KIND = "aria-results"
#: The report page of a results folder (``aria-tda report``, ``aria-tda run``).
REPORT_FILE = "report.html"
#: What the report page's head says about who wrote it.
_REPORT_MARK = b'<meta name="generator" content="aria-tda'


def _spec(name: str) -> TableSpec:
    if name not in TABLES:
        raise ParameterError(expected("table", "one of " + ", ".join(TABLES), name))
    return TABLES[name]


def write_table(results_dir: str | os.PathLike[str], name: str, df: Any) -> Path:
    """Write table ``name`` (a pandas DataFrame) into ``results_dir`` atomically.

    Parameters
    ----------
    results_dir : str or path-like
        The results folder (it must exist).
    name : str
        Schema name, one of :data:`TABLES`; it fixes the file name and format (CSV with
        ``%.6g`` floats, or Parquet).
    df : pandas.DataFrame
        Long-format rows holding at least the table's required columns; extra columns are
        written too. The index is not written.

    Returns
    -------
    pathlib.Path
        The file written.

    Raises
    ------
    ParameterError
        if ``name`` is not a table of the schema.
    DataError
        if a required column is missing.
    """
    spec = _spec(name)
    missing = [c for c in spec.columns if c not in df.columns]
    if missing:
        raise DataError(
            f"table {name!r}: missing required column(s) {missing}; has {list(df.columns)}"
        )
    path = Path(results_dir) / spec.filename
    with atomic_path(path) as tmp:
        if spec.format == "parquet":
            df.to_parquet(tmp, index=False)
        else:
            df.to_csv(tmp, index=False, float_format="%.6g")
    return path


def read_table(
    results_dir: str | os.PathLike[str],
    name: str,
    *,
    columns: list[str] | None = None,
    filters: list[tuple[str, str, Any]] | None = None,
) -> Any | None:
    """Read table ``name`` as a pandas DataFrame, or ``None`` when the folder does not have it.

    Parameters
    ----------
    results_dir : str or path-like
        The results folder.
    name : str
        Schema name, one of :data:`TABLES`.
    columns : list of str, optional
        Read only these columns.
    filters : list of (column, op, value), optional
        Row filters combined with AND, ``op`` one of ``==, !=, <, <=, >, >=, in``
        (pushed down into Parquet reads, so large per-query tables are never read whole).

    Returns
    -------
    pandas.DataFrame or None
        The table (index reset); ``None`` when its file is absent.

    Raises
    ------
    ParameterError
        if ``name`` is not a table of the schema.
    FileFormatError
        if the file exists but cannot be read.
    """
    import pandas as pd

    spec = _spec(name)
    path = Path(results_dir) / spec.filename
    if not path.is_file():
        return None
    try:
        if spec.format == "parquet":
            return pd.read_parquet(path, columns=columns, filters=filters or None)
        df = pd.read_csv(path, usecols=columns)
        for col, op, value in filters or []:
            df = df[_OPS[op](df[col], value)]
        return df.reset_index(drop=True)
    except Exception as exc:  # pyarrow / pandas raise many types for corrupt files
        raise FileFormatError(f"table {name!r} at {str(path)!r} is unreadable: {exc}") from None


_OPS = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "in": lambda a, b: a.isin(list(b)),
}


def table_digests(results_dir: str | os.PathLike[str],
                  names: Sequence[str] = RUN_TABLES) -> dict[str, str]:
    """File name → content digest of the tables ``names`` present in ``results_dir``.

    Parameters
    ----------
    results_dir : str or path-like
        The results folder.
    names : sequence of str
        Schema names (default: the study runner's tables, :data:`RUN_TABLES`).
    """
    d = Path(results_dir)
    files = [_spec(name).filename for name in names]
    return {f: content_digest(d / f) for f in files if (d / f).is_file()}


def table_mismatches(results_dir: str | os.PathLike[str],
                     meta: Mapping[str, Any] | None = None) -> list[str]:
    """Tables that are not those ``results.json`` was written with, one note each.

    A table whose bytes differ from the digest ``results.json`` recorded, one it recorded that
    is gone, and one of the study runner's tables that it does not list (left by another run)
    are named. A ``results.json`` that records no digests (older folders) gives no notes.

    Parameters
    ----------
    results_dir : str or path-like
        The results folder.
    meta : mapping, optional
        Its ``results.json`` (read when not given).
    """
    meta = read_results_meta(results_dir) if meta is None else meta
    recorded = meta.get("tables")
    if not isinstance(recorded, Mapping):
        return []
    d = Path(results_dir)
    notes = []
    for spec in TABLES.values():
        path = d / spec.filename
        want = recorded.get(spec.filename)
        if want is None:
            if spec.name in RUN_TABLES and path.is_file():
                notes.append(f"{spec.filename}: not listed in {RESULTS_FILE} (left by another "
                             "run?)")
            continue
        if not path.is_file():
            notes.append(f"{spec.filename}: listed in {RESULTS_FILE} but not in the folder")
        elif content_digest(path) != want:
            notes.append(f"{spec.filename}: differs from the table {RESULTS_FILE} was written "
                         "with (changed since, or written by another run)")
    return notes


def is_aria_report(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is a report page written by ARIA (its head names aria-tda).

    Parameters
    ----------
    path : str or path-like
        Any path; a missing or unreadable file gives ``False``.
    """
    try:
        with open(path, "rb") as fh:
            return _REPORT_MARK in fh.read(8192)
    except OSError:
        return False


def write_results_meta(results_dir: str | os.PathLike[str], meta: Mapping[str, Any], *,
                       record_tables: bool = False) -> Path:
    """Write ``results.json`` (adds ``kind``, ``aria_version`` and ``created``).

    With ``record_tables`` (the study runner, right after publishing its tables) ``tables``
    records the content digest of each of :data:`RUN_TABLES` in the folder now
    (:func:`table_digests`), so a reader can tell tables changed later
    (:func:`table_mismatches`); without it a ``tables`` key of ``meta`` is kept as given (a
    demo that adds its own tables rewrites ``results.json`` with the runner's record).

    Parameters
    ----------
    results_dir : str or path-like
        The results folder (it must exist).
    meta : Mapping[str, Any]
        Run metadata under the keys listed in the module docstring (``study``, ``settings``,
        ``channels``, ``versions``, ``timings``, ``notes``, ...); JSON-able values.
    record_tables : bool
        Record the digests of the runner's tables now in the folder.

    Returns
    -------
    pathlib.Path
        The ``results.json`` written.
    """
    fields = dict(meta)
    if record_tables:
        fields["tables"] = table_digests(results_dir)
    out = make_manifest(RESULTS_KIND, **fields)
    return write_json(Path(results_dir) / RESULTS_FILE, out)


def is_results_dir(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is a directory holding an ARIA ``results.json``.

    Parameters
    ----------
    path : str or path-like
        Any path; a missing, unreadable or foreign ``results.json`` gives ``False``.

    Returns
    -------
    bool
    """
    f = Path(path) / RESULTS_FILE
    if not f.is_file():
        return False
    try:
        return read_json(f).get("kind") == RESULTS_KIND
    except Exception:
        return False


def read_results_meta(results_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """Read ``results.json``.

    Parameters
    ----------
    results_dir : str or path-like
        The results folder.

    Returns
    -------
    dict
        The run metadata (see the module docstring for its keys).

    Raises
    ------
    FileFormatError
        if ``results_dir`` is not an ARIA results folder.
    """
    p = Path(results_dir)
    input_path(p, "results_dir", kind="dir", missing="no such directory")
    if not is_results_dir(p):
        raise FileFormatError(
            f"results_dir: {str(p)!r} is not an ARIA results folder (no valid {RESULTS_FILE}); "
            "make one with 'aria-tda run STUDY.toml' or 'aria-tda demo'"
        )
    data: dict[str, Any] = read_json(p / RESULTS_FILE)
    return data
