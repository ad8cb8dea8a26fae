"""The feature store's file format: constants, encoding to Arrow, reading and checking parts.

Private to :mod:`aria_tda.features.store` (which documents the layout) and the extraction engine.
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

from aria_tda._io import _json_default, atomic_path, is_temporary, read_json
from aria_tda._lock import LOCK_NAME
from aria_tda.errors import (
    DataError,
    FileFormatError,
    ManifestMismatchError,
    ParameterError,
    expected,
)
from aria_tda.manifest import DIR_NAME, package_version

STORE_KIND = "aria-feature-store"
FORMAT_VERSION = 1
META_PREFIX = "meta:"
ERRORS_FILE = "errors.parquet"
#: A part's name: numbered in the order written, the number taken under the store's writer lock
#: (:func:`aria_tda._lock.writer_lock`), so two writers never pick the same name.
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
        # test hook: hold the finished temporary before its rename (a kill -9 lands mid-write)
        stall = os.environ.get("ARIA_TEST_STORE_STALL")
        if stall:
            time.sleep(float(stall))


def _digest(path: Path) -> str:
    """The content checksum of a part, as its manifest records it (cached by stat key)."""
    from aria_tda._fingerprint import content_digest

    return content_digest(path)


def _read_manifest(mpath: Path) -> dict[str, Any]:
    """Read and check a store manifest: every field a reader touches has the right type.

    A manifest of another kind of artefact is a :class:`ManifestMismatchError`; anything
    malformed (not JSON, not an object, missing or mistyped fields) a one-line
    :class:`FileFormatError` naming the manifest.
    """
    try:
        man = read_json(mpath)
    except (OSError, ValueError) as exc:
        reason = " ".join(str(exc).split())
        raise FileFormatError(f"store: unreadable manifest {str(mpath)!r}: {reason}") from None
    if not isinstance(man, dict) or not isinstance(man.get("kind"), str):
        what = "a JSON object with a 'kind'"
        raise _malformed(mpath, what, man if not isinstance(man, dict) else man.get("kind"))
    if man["kind"] != STORE_KIND:
        raise ManifestMismatchError(
            f"store: {str(mpath.parent)!r} is not an ARIA feature store "
            f"(manifest kind {man['kind']!r})"
        )
    _check_manifest(man, mpath)
    return man


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _malformed(mpath: Path, what: str, got: Any) -> FileFormatError:
    return FileFormatError(
        f"store: malformed manifest {str(mpath)!r}: expected {what}, got {_show(got)}"
    )


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _check_manifest(man: Mapping[str, Any], mpath: Path) -> None:
    """Raise a :class:`FileFormatError` naming ``mpath`` for the first malformed field."""
    if man.get("modality") not in _MODALITIES:
        raise _malformed(mpath, f"'modality' {_MODALITY_TEXT}", man.get("modality"))
    for key in ("params", "versions"):
        if key in man and not isinstance(man[key], dict):
            raise _malformed(mpath, f"{key!r} to be an object", man[key])
    feats = man.get("features", {})
    if not isinstance(feats, dict):
        raise _malformed(mpath, "'features' to be an object of feature specs", feats)
    for name, spec in feats.items():
        kind = spec.get("kind") if isinstance(spec, dict) else None
        if kind not in ("vector", "sequence") or (
            kind == "vector" and not _count(spec.get("dim"))
        ):
            raise _malformed(
                mpath,
                f"features[{name!r}] to be {{'kind': 'vector', 'dim': d}} or "
                "{'kind': 'sequence'}",
                spec,
            )
    for key in ("n_tracks", "n_errors"):
        if man.get(key) is not None and not _count(man[key]):
            raise _malformed(mpath, f"{key!r} to be a count (an integer >= 0)", man[key])
    parts = man.get("parts")
    if parts is not None:
        if not isinstance(parts, list):
            raise _malformed(mpath, "'parts' to be a list", parts)
        seen: set[str] = set()
        for i, q in enumerate(parts):
            name = q.get("file") if isinstance(q, dict) else None
            if (
                not isinstance(name, str)
                or not _PART.match(name)
                or name in seen
                or (q.get("rows") is not None and not _count(q["rows"]))
                or (q.get("digest") is not None and not isinstance(q["digest"], str))
            ):
                raise _malformed(
                    mpath,
                    f"parts[{i}] to be {{'file': 'part-NNNNN.parquet' (each once), "
                    "'rows': n, 'digest': checksum}",
                    q,
                )
            seen.add(name)
    errors = man.get("errors")
    if errors is not None and not (
        isinstance(errors, list) and all(isinstance(e, dict) for e in errors)
    ):
        raise _malformed(mpath, "'errors' to be a list of objects", errors)
    if man.get("digest") is not None and not isinstance(man["digest"], str):
        raise _malformed(mpath, "'digest' to be a checksum (a string)", man["digest"])


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


def _part_entry(man: Mapping[str, Any], f: Path) -> Mapping[str, Any]:
    return {str(q["file"]): q for q in man.get("parts") or ()}.get(f.name, {})


def _read_ids(path: Path, man: Mapping[str, Any]) -> list[str]:
    """Track ids of the committed parts, each part checked as :func:`_read_part` does."""
    pa = _pa()
    ids: list[str] = []
    for f in _listed_parts(path, man):
        try:
            table = _pq().read_table(f, columns=["track_id"]) if f.is_file() else None
        except (OSError, pa.ArrowInvalid, KeyError) as exc:
            raise _unreadable(path, f, exc) from None
        _check_part(path, f, man, table)
        assert table is not None  # _check_part raised for a missing part
        ids.extend(table.column("track_id").to_pylist())
    return ids


def _unreadable(path: Path, f: Path, exc: BaseException) -> FileFormatError:
    reason = " ".join(str(exc).split())
    return FileFormatError(f"store: unreadable Parquet part {f.name} in {str(path)!r}: {reason}")


def _read_errors(path: Path) -> list[dict[str, Any]]:
    f = path / ERRORS_FILE
    if not f.is_file():
        return []
    pa = _pa()
    try:
        rows = _pq().read_table(f).to_pylist()
    except (OSError, pa.ArrowInvalid) as exc:
        reason = " ".join(str(exc).split())
        raise FileFormatError(f"store: unreadable errors table {str(f)!r}: {reason}") from None
    if rows and not {"path", "error"} <= set(rows[0]):
        raise FileFormatError(
            expected(f"store: errors table {str(f)!r}", "columns path, track_id, error, time",
                     sorted(rows[0]))
        )
    return rows


def _read_part(path: Path, f: Path, man: Mapping[str, Any]) -> Any:
    """Read one committed part; a listed part that is missing, holds other rows or other bytes
    than its manifest recorded is an error."""
    pa = _pa()
    try:
        table = _pq().read_table(f) if f.is_file() else None
    except (OSError, pa.ArrowInvalid) as exc:
        raise _unreadable(path, f, exc) from None
    _check_part(path, f, man, table)
    return table


def _check_part(path: Path, f: Path, man: Mapping[str, Any], table: Any) -> None:
    if table is None:
        raise FileFormatError(
            f"store: {str(path)!r} is incomplete: {f.name} (listed in its manifest) is missing"
        )
    entry = _part_entry(man, f)
    want = entry.get("rows")
    if want is not None and int(want) != table.num_rows:
        raise FileFormatError(
            f"store: {str(path)!r} disagrees with its manifest: {f.name} holds "
            f"{table.num_rows} rows, the manifest says {int(want)}"
        )
    digest = entry.get("digest")
    if digest is not None and _digest(f) != digest:
        raise FileFormatError(
            f"store: {str(path)!r}: {f.name} was altered after it was written (its content "
            "checksum differs from the one its manifest recorded); restore it or rewrite the "
            "store (--overwrite)"
        )


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


# --------------------------------------------------------------------------- writers' checks


def _plain_params(params: Mapping[str, Any] | None) -> dict[str, Any]:
    """``params`` as the manifest will hold them (JSON round trip); refused before any write."""
    try:
        return dict(json.loads(json.dumps(dict(params or {}), default=_json_default)))
    except (TypeError, ValueError) as exc:
        raise ParameterError(expected("params", "JSON-able extraction parameters", exc)) from None


def _names_a_store(mpath: Path) -> bool:
    """True when ``mpath`` is a JSON object of kind ``aria-feature-store`` (damaged or not)."""
    try:
        raw = json.loads(mpath.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(raw, dict) and raw.get("kind") == STORE_KIND


#: a temporary named by :func:`aria_tda._io.temp_name` (carrying its process id)
_PID_TEMP = re.compile(r"\.(?:tmp|old)-\d+-[0-9a-f]{8}$|^\.staging-\d+-[0-9a-f]{8}$")


def _foreign(folder: Path) -> list[str]:
    """Entries of ``folder`` other than the writer lock and temporaries."""
    return sorted(e.name for e in os.scandir(folder)
                  if e.name != LOCK_NAME and not is_temporary(e.name))


def _check_may_write(path: Path, *, replace: bool) -> None:
    """Refuse, before anything is created, to write into a folder ARIA did not write as a store.

    ``path`` may be absent, an empty folder or a feature store; with ``replace`` a store whose
    manifest is damaged (but names itself a feature store) may be replaced too.
    """
    if not path.exists():
        return
    if not path.is_dir():
        raise FileFormatError(f"out: {str(path)!r} exists and is not a feature-store directory")
    mpath = path / DIR_NAME
    if mpath.is_file():
        if not (replace and _names_a_store(mpath)):
            _read_manifest(mpath)  # raises for another kind or a damaged manifest
        return
    if _foreign(path):
        raise FileFormatError(
            f"out: {str(path)!r} is a non-empty directory without a feature-store manifest; "
            "ARIA writes over nothing it did not write (choose another output or empty it)"
        )
