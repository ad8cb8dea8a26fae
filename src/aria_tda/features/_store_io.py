"""The feature store's file format: constants, encoding to Arrow, reading and checking parts.

Private to :mod:`aria_tda.features.store` (which documents the layout) and the extraction engine.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda._io import atomic_path, read_json
from aria_tda.errors import (
    DataError,
    FileFormatError,
    ManifestMismatchError,
    ParameterError,
    expected,
)
from aria_tda.manifest import package_version

STORE_KIND = "aria-feature-store"
FORMAT_VERSION = 1
META_PREFIX = "meta:"
ERRORS_FILE = "errors.parquet"
_PART = re.compile(r"^part-(\d{5,})\.parquet$")
#: store modalities: the two evidence-channel extractors' and ``aria-tda embed``'s encoder
# embeddings
_MODALITIES = ("symbolic", "audio", "embedding")
_MODALITY_TEXT = "'symbolic', 'audio' or 'embedding'"


def _pa() -> Any:
    import pyarrow as pa

    return pa


def _pq() -> Any:
    import pyarrow.parquet as pq

    return pq


def _versions(extra: Mapping[str, str] | None) -> dict[str, str]:
    import pyarrow

    out = {"aria": package_version(), "numpy": np.__version__, "pyarrow": pyarrow.__version__}
    out.update(dict(extra or {}))
    return out


# --------------------------------------------------------------------------- encoding


def _check_ids(track_ids: Any) -> list[str]:
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
    pa = _pa()
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
        return {str(c): [None if _isnull(v) else v for v in df[c].tolist()] for c in df.columns}
    if isinstance(metadata, Mapping):
        out = {}
        for k, v in metadata.items():
            col = list(v)
            if len(col) != n:
                raise DataError(expected(f"metadata[{k!r}]", f"{n} values", len(col)))
            out[str(k)] = [None if _isnull(x) else _plain(x) for x in col]
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
    return {k: [None if _isnull(r.get(k)) else _plain(r.get(k)) for r in rows] for k in keys}


def _isnull(v: Any) -> bool:
    return v is None or (isinstance(v, float) and np.isnan(v))


def _plain(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, Path):
        return str(v)
    return v


def _build_table(
    ids: list[str], features: Mapping[str, Any], metadata: Any, modality: str
) -> tuple[Any, dict[str, dict[str, Any]]]:
    from aria_tda.features.registry import MODALITIES
    from aria_tda.features.registry import features as registry_features

    # features of a registry modality take their kind from it; others (embeddings) are inferred
    kinds = (
        {spec.name: spec.kind for spec in registry_features(modality)}
        if modality in MODALITIES
        else {}
    )
    pa = _pa()
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


def _merge_specs(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
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


def _errors_table(errors: Any) -> Any:
    pa = _pa()
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
                        "time": str(e.get("time", "") or _now()),
                    }
                )
            else:
                path, err = e
                rows.append({"path": str(path), "track_id": "", "error": str(err), "time": _now()})
    return pa.table(
        {
            k: pa.array([r[k] for r in rows], type=pa.string())
            for k in ("path", "track_id", "error", "time")
        }
    )


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def _write_parquet(table: Any, path: Path) -> None:
    with atomic_path(path) as tmp:
        _pq().write_table(table, tmp, compression="zstd")


def _read_manifest(mpath: Path) -> dict[str, Any]:
    try:
        man = read_json(mpath)
    except (OSError, ValueError) as exc:
        raise FileFormatError(f"store: unreadable manifest {str(mpath)!r}: {exc}") from None
    if not isinstance(man, dict) or man.get("kind") != STORE_KIND:
        kind = man.get("kind") if isinstance(man, dict) else None
        raise ManifestMismatchError(
            f"store: {str(mpath.parent)!r} is not an ARIA feature store (manifest kind {kind!r})"
        )
    return man


def _part_files(path: Path) -> list[Path]:
    return sorted(
        (f for f in path.iterdir() if _PART.match(f.name)),
        key=lambda f: int(_PART.match(f.name).group(1)),  # type: ignore[union-attr]
    )


def _listed_parts(path: Path, man: Mapping[str, Any]) -> list[Path]:
    """The committed part files of a directory store (all part files for an old manifest)."""
    listed = man.get("parts")
    if listed is None:
        return _part_files(path)
    return [path / str(p["file"]) for p in listed]


def _read_ids(path: Path, man: Mapping[str, Any]) -> list[str]:
    ids: list[str] = []
    for f in _listed_parts(path, man):
        ids.extend(_pq().read_table(f, columns=["track_id"]).column("track_id").to_pylist())
    return ids


def _read_errors(path: Path) -> list[dict[str, Any]]:
    f = path / ERRORS_FILE
    return _pq().read_table(f).to_pylist() if f.is_file() else []


def _read_part(path: Path, f: Path, man: Mapping[str, Any]) -> Any:
    """Read one committed part; a listed part that is missing or holds other rows is an error."""
    if not f.is_file():
        raise FileFormatError(
            f"store: {str(path)!r} is incomplete: {f.name} (listed in its manifest) is missing"
        )
    table = _pq().read_table(f)
    want = {str(q["file"]): q.get("rows") for q in man.get("parts") or ()}.get(f.name)
    if want is not None and int(want) != table.num_rows:
        raise FileFormatError(
            f"store: {str(path)!r} disagrees with its manifest: {f.name} holds "
            f"{table.num_rows} rows, the manifest says {int(want)}"
        )
    return table


def _check_against_manifest(
    path: Path, man: Mapping[str, Any], tables: list[Any], table: Any
) -> None:
    """The Parquet data must match the manifest: track count, columns (FileFormatError)."""
    features = set(man.get("features", {}))
    for t in tables:
        cols = set(t.column_names)
        if "track_id" not in cols:
            raise FileFormatError(f"store: {str(path)!r} has a Parquet part without 'track_id'")
        odd = sorted(c for c in cols - features - {"track_id"} if not c.startswith(META_PREFIX))
        if odd:
            raise FileFormatError(
                f"store: {str(path)!r} disagrees with its manifest: column(s) "
                f"{', '.join(map(repr, odd))} are not among its features"
            )
    n = man.get("n_tracks")
    if n is not None and int(n) != table.num_rows:
        raise FileFormatError(
            f"store: {str(path)!r} disagrees with its manifest: the Parquet data hold "
            f"{table.num_rows} tracks, the manifest says {int(n)}"
        )


def _dedupe(tables: list[Any]) -> Any:
    """Concatenate parts; a track written again replaces its row, first-write order kept."""
    pa = _pa()
    if not tables:
        return pa.table({"track_id": pa.array([], type=pa.string())})
    table = pa.concat_tables(tables, promote_options="default") if len(tables) > 1 else tables[0]
    ids = table.column("track_id").to_pylist()
    last = {t: i for i, t in enumerate(ids)}
    if len(last) == len(ids):
        return table
    first_order = list(dict.fromkeys(ids))
    return table.take(pa.array([last[t] for t in first_order], type=pa.int64()))
