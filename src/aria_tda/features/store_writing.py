"""The feature store's writing side: encoding to Arrow, writing parts, the writers' checks.

What :class:`aria_tda.features.store.StoreWriter` and the extraction engine
(:mod:`aria_tda.features.extract`) build and check before and while they write; the format's
constants and its readers are in :mod:`aria_tda.features.store_format`.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda._io import atomic_path, is_temporary, json_default
from aria_tda._lock import LOCK_NAME
from aria_tda.errors import DataError, FileFormatError, ParameterError, expected
from aria_tda.features.store_format import META_PREFIX, STORE_KIND, arrow, parquet, read_manifest
from aria_tda.manifest import DIR_NAME, package_version

__all__ = [
    "PID_TEMPORARY", "build_table", "check_may_write", "check_track_ids", "errors_table",
    "is_null", "library_versions", "merge_specs", "names_a_store", "now_iso", "plain_params",
    "plain_value", "write_parquet",
]


def library_versions(extra: Mapping[str, str] | None) -> dict[str, str]:
    """The versions a store's manifest records: ARIA, NumPy, pyarrow and the extractor's.

    Parameters
    ----------
    extra : mapping of str to str, optional
        More versions (the extractor's libraries); they win over the defaults.

    Returns
    -------
    dict
    """
    import pyarrow

    out = {"aria": package_version(), "numpy": np.__version__, "pyarrow": pyarrow.__version__}
    out.update(dict(extra or {}))
    return out


# --------------------------------------------------------------------------- encoding


def check_track_ids(track_ids: Any) -> list[str]:
    """Track ids as strings: unique and non-empty.

    Parameters
    ----------
    track_ids : sequence
        The ids (each converted with ``str``); one string is refused.

    Returns
    -------
    list of str

    Raises
    ------
    ParameterError
        ``track_ids`` is a string.
    DataError
        A duplicate or an empty id.
    """
    if isinstance(track_ids, (str, bytes)):
        raise ParameterError(expected("track_ids", "a sequence of strings", track_ids))
    ids = [str(t) for t in track_ids]
    if len(set(ids)) != len(ids):
        dup = next(t for t in ids if ids.count(t) > 1)
        raise DataError(expected("track_ids", "unique track ids", f"duplicate {dup!r}"))
    if any(not t for t in ids):
        raise DataError(expected("track_ids", "non-empty track ids", "an empty string"))
    return ids


def _encode_feature(
    name: str, values: Any, n: int, kind: str | None = None
) -> tuple[dict[str, Any], Any]:
    """(spec, pyarrow array) of one feature; vectors (n, d) or sequences (n ragged).

    ``kind`` (from the registry for known feature names) overrides the inference.
    """
    pa = arrow()
    if kind == "sequence":
        items = list(values)
        if len(items) != n:
            raise DataError(
                expected(f"features[{name!r}]", f"{n} entries (one per track)", len(items))
            )
        seq = [
            None if v is None else np.asarray(v).astype(np.int64).reshape(-1).tolist()
            for v in items
        ]
        return {"kind": "sequence"}, pa.array(seq, type=pa.list_(pa.int32()))
    if isinstance(values, np.ndarray) and values.dtype != object:
        x = np.asarray(values, dtype=np.float64)
        if x.ndim == 1:
            x = x[:, None]
        if x.ndim != 2 or x.shape[0] != n:
            raise DataError(
                expected(
                    f"features[{name!r}]", f"an array of shape ({n}, dim)", f"shape {values.shape}"
                )
            )
        missing = np.all(np.isnan(x), axis=1) if x.shape[1] else np.zeros(n, bool)
        flat = pa.array(x.reshape(-1), type=pa.float64())
        offsets = pa.array((np.arange(n + 1, dtype=np.int64) * x.shape[1]).astype(np.int32))
        arr = pa.ListArray.from_arrays(offsets, flat, mask=pa.array(missing))
        return {"kind": "vector", "dim": int(x.shape[1])}, arr
    items = list(values)
    if len(items) != n:
        raise DataError(expected(f"features[{name!r}]", f"{n} entries (one per track)", len(items)))
    present = [np.asarray(v) for v in items if v is not None]
    integer = bool(present) and all(
        v.ndim == 1 and (v.dtype.kind in "iub" or v.size == 0) for v in present
    )
    if integer:
        seq = [None if v is None else np.asarray(v, dtype=np.int64).tolist() for v in items]
        return {"kind": "sequence"}, pa.array(seq, type=pa.list_(pa.int32()))
    dims = {v.size for v in present}
    if len(dims) > 1:
        raise DataError(
            expected(
                f"features[{name!r}]",
                "vectors of one width or integer sequences",
                f"widths {sorted(dims)}",
            )
        )
    dim = dims.pop() if dims else 0
    rows = [
        None
        if v is None or np.all(np.isnan(np.asarray(v, dtype=np.float64)))
        else np.asarray(v, dtype=np.float64).reshape(-1).tolist()
        for v in items
    ]
    return {"kind": "vector", "dim": int(dim)}, pa.array(rows, type=pa.list_(pa.float64()))


def _metadata_columns(metadata: Any, ids: list[str]) -> dict[str, list[Any]]:
    n = len(ids)
    if metadata is None:
        return {}
    if hasattr(metadata, "columns") and hasattr(metadata, "reindex"):  # DataFrame
        df = metadata
        if df.index.name == "track_id" or (
            len(df) == n and set(map(str, df.index)) == set(ids) and "track_id" not in df.columns
        ):
            df = df.copy()
            df.index = df.index.map(str)
            df = df.reindex(ids)
        elif "track_id" in df.columns:
            df = df.assign(track_id=df["track_id"].astype(str)).set_index("track_id").reindex(ids)
        elif len(df) != n:
            raise DataError(
                expected("metadata", f"{n} rows or a track_id index/column", f"{len(df)} rows")
            )
        return {str(c): [None if is_null(v) else v for v in df[c].tolist()] for c in df.columns}
    if isinstance(metadata, Mapping):
        out = {}
        for k, v in metadata.items():
            col = list(v)
            if len(col) != n:
                raise DataError(expected(f"metadata[{k!r}]", f"{n} values", len(col)))
            out[str(k)] = [None if is_null(x) else plain_value(x) for x in col]
        return out
    rows = list(metadata)
    if len(rows) != n or not all(isinstance(r, Mapping) for r in rows):
        raise DataError(
            expected(
                "metadata",
                f"a DataFrame, a mapping of columns or {n} dicts",
                type(metadata).__name__,
            )
        )
    keys: dict[str, None] = {}
    for r in rows:
        keys.update(dict.fromkeys(map(str, r)))
    return {k: [None if is_null(r.get(k)) else plain_value(r.get(k)) for r in rows] for k in keys}


def is_null(v: Any) -> bool:
    """True for ``None`` and a float NaN (a missing metadata value).

    Parameters
    ----------
    v : Any
        A value.

    Returns
    -------
    bool
    """
    return v is None or (isinstance(v, float) and np.isnan(v))


def plain_value(v: Any) -> Any:
    """A metadata value as Arrow takes it: NumPy scalars as Python ones, paths as text.

    Parameters
    ----------
    v : Any
        A value.

    Returns
    -------
    Any
    """
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, Path):
        return str(v)
    return v


def build_table(
    ids: list[str], features: Mapping[str, Any], metadata: Any, modality: str
) -> tuple[Any, dict[str, dict[str, Any]]]:
    """The Arrow table of one part and the specs of its features.

    Parameters
    ----------
    ids : list of str
        The tracks, in row order (checked by :func:`check_track_ids`).
    features : mapping
        Feature name to values: an ``(n, d)`` array or ``n`` vectors (``vector``), ``n``
        integer sequences (``sequence``); a name the registry knows takes its kind from it.
    metadata : DataFrame, mapping of columns, sequence of dicts or None
        Per-track metadata, stored as ``meta:<column>`` columns.
    modality : str
        The store's modality.

    Returns
    -------
    tuple of (pyarrow.Table, dict)
        The table and ``{feature: {"kind": ..., "dim": ...}}``.

    Raises
    ------
    ParameterError
        A feature name that is empty, ``track_id`` or ``meta:*``.
    DataError
        Values that do not fit ``n`` tracks or one kind.
    """
    from aria_tda.features.registry import MODALITIES
    from aria_tda.features.registry import features as registry_features

    # features of a registry modality take their kind from it; others (embeddings) are inferred
    kinds = (
        {spec.name: spec.kind for spec in registry_features(modality)}
        if modality in MODALITIES
        else {}
    )
    pa = arrow()
    n = len(ids)
    cols: dict[str, Any] = {"track_id": pa.array(ids, type=pa.string())}
    specs: dict[str, dict[str, Any]] = {}
    for name, values in features.items():
        if (
            not isinstance(name, str)
            or not name
            or name == "track_id"
            or name.startswith(META_PREFIX)
        ):
            raise ParameterError(
                expected("features", "feature names (non-empty, not 'track_id' or 'meta:*')", name)
            )
        spec, arr = _encode_feature(name, values, n, kinds.get(name))
        specs[name] = spec
        cols[name] = arr
    for key, col in _metadata_columns(metadata, ids).items():
        try:
            cols[META_PREFIX + key] = pa.array(col)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            cols[META_PREFIX + key] = pa.array(
                [None if v is None else str(v) for v in col], type=pa.string()
            )
    return pa.table(cols), specs


def merge_specs(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """The store's feature specs with a new part's added.

    Parameters
    ----------
    old : mapping
        The specs the manifest holds.
    new : mapping
        The specs of the part being written.

    Returns
    -------
    dict

    Raises
    ------
    DataError
        A feature whose kind or width differs from the stored one.
    """
    out = dict(old)
    for name, spec in new.items():
        have = out.get(name)
        if have is None:
            out[name] = spec
        elif have.get("kind") != spec.get("kind") or (
            spec.get("kind") == "vector" and have.get("dim") != spec.get("dim")
        ):
            raise DataError(expected(f"features[{name!r}]", f"{have} as stored", spec))
    return out


def errors_table(errors: Any) -> Any:
    """The Arrow table of :data:`ERRORS_FILE`: ``path``, ``track_id``, ``error``, ``time``.

    Parameters
    ----------
    errors : DataFrame, sequence of dicts or of (path, error) pairs, or None
        The files that failed; a missing time is now.

    Returns
    -------
    pyarrow.Table
    """
    pa = arrow()
    rows = []
    if errors is not None:
        if hasattr(errors, "to_dict") and hasattr(errors, "columns"):
            errors = errors.to_dict("records")
        for e in errors:
            if isinstance(e, Mapping):
                rows.append(
                    {
                        "path": str(e.get("path", "")),
                        "track_id": str(e.get("track_id", "") or ""),
                        "error": str(e.get("error", "")),
                        "time": str(e.get("time", "") or now_iso()),
                    }
                )
            else:
                path, err = e
                rows.append(
                    {"path": str(path), "track_id": "", "error": str(err), "time": now_iso()}
                )
    return pa.table(
        {
            k: pa.array([r[k] for r in rows], type=pa.string())
            for k in ("path", "track_id", "error", "time")
        }
    )


def now_iso() -> str:
    """The current UTC time, ISO 8601 to the second."""
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def write_parquet(table: Any, path: Path) -> None:
    """Write ``table`` to ``path`` (zstd) atomically: a temporary, then a rename.

    Parameters
    ----------
    table : pyarrow.Table
        The table.
    path : pathlib.Path
        The file.
    """
    with atomic_path(path) as tmp:
        parquet().write_table(table, tmp, compression="zstd")
        # test hook: hold the finished temporary before its rename (a kill -9 lands mid-write)
        stall = os.environ.get("ARIA_TEST_STORE_STALL")
        if stall:
            time.sleep(float(stall))


# --------------------------------------------------------------------------- writers' checks


def plain_params(params: Mapping[str, Any] | None) -> dict[str, Any]:
    """``params`` as the manifest will hold them (JSON round trip); refused before any write.

    Parameters
    ----------
    params : mapping, optional
        The extraction parameters.

    Returns
    -------
    dict

    Raises
    ------
    ParameterError
        Parameters JSON cannot hold.
    """
    try:
        return dict(json.loads(json.dumps(dict(params or {}), default=json_default)))
    except (TypeError, ValueError) as exc:
        raise ParameterError(expected("params", "JSON-able extraction parameters", exc)) from None


def names_a_store(mpath: Path) -> bool:
    """True when ``mpath`` is a JSON object of kind ``aria-feature-store`` (damaged or not).

    Parameters
    ----------
    mpath : pathlib.Path
        A manifest file.

    Returns
    -------
    bool
    """
    try:
        raw = json.loads(mpath.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(raw, dict) and raw.get("kind") == STORE_KIND


#: A temporary named by :func:`aria_tda._io.temp_name` (carrying its process id).
PID_TEMPORARY = re.compile(r"\.(?:tmp|old)-\d+-[0-9a-f]{8}$|^\.staging-\d+-[0-9a-f]{8}$")


def _foreign(folder: Path) -> list[str]:
    """Entries of ``folder`` other than the writer lock and temporaries."""
    return sorted(e.name for e in os.scandir(folder)
                  if e.name != LOCK_NAME and not is_temporary(e.name))


def check_may_write(path: Path, *, replace: bool) -> None:
    """Refuse, before anything is created, to write into a folder ARIA did not write as a store.

    ``path`` may be absent, an empty folder or a feature store; with ``replace`` a store whose
    manifest is damaged (but names itself a feature store) may be replaced too.

    Parameters
    ----------
    path : pathlib.Path
        Where the store goes.
    replace : bool
        The store will be replaced (``overwrite``).

    Raises
    ------
    FileFormatError
        ``path`` is a file, or a folder that is neither empty nor a feature store.
    """
    if not path.exists():
        return
    if not path.is_dir():
        raise FileFormatError(f"out: {str(path)!r} exists and is not a feature-store directory")
    mpath = path / DIR_NAME
    if mpath.is_file():
        if not (replace and names_a_store(mpath)):
            read_manifest(mpath)  # raises for another kind or a damaged manifest
        return
    if _foreign(path):
        raise FileFormatError(
            f"out: {str(path)!r} is a non-empty directory without a feature-store manifest; "
            "ARIA writes over nothing it did not write (choose another output or empty it)"
        )
