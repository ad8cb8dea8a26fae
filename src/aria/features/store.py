r"""The feature store: one per corpus, Parquet by default, filled by extraction, read by analysis.

Layout
------
A store is a directory (the default, resumable)::

    STORE/
      aria-manifest.json   kind "aria-feature-store", format, modality, params, versions,
                           features {name: {"kind": "vector", "dim": d} | {"kind": "sequence"}},
                           n_tracks, n_errors
      part-00000.parquet   one row per track: track_id, one column per feature, metadata columns
      part-00001.parquet   ... (each append writes a new part)
      errors.parquet       path, track_id, error — files that could not be extracted

or a single ``.parquet`` file (written at once by :func:`write_store`) whose manifest — with the
errors table — lies beside it in ``FILE.parquet.manifest.json``.

Conventions
-----------
- Column ``track_id`` (string) keys the rows; row order is the order tracks were first written.
  A track written again in a later part replaces its earlier row.
- A vector feature is a ``list<double>`` column of fixed width ``dim`` (null = the track lacks
  it, read back as a NaN row); a sequence feature is a ``list<int32>`` column (null = missing,
  read back as ``None``; an empty list is an empty sequence).
- Metadata columns (genre, duration, source, ...) are stored as ``meta:<name>``; read back
  without the prefix in :attr:`FeatureStore.metadata`, indexed by ``track_id``.
- ``params`` are the extraction parameters; a resumed extraction with other parameters is
  refused (:class:`~aria.errors.ManifestMismatchError`) rather than mixing them silently.
- Every file is written atomically (temporary name, then rename): an interrupted run leaves
  complete parts only, and a rerun appends what is missing (:class:`StoreWriter`).
"""

from __future__ import annotations

import datetime as _dt
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from aria._io import atomic_path, read_json, write_json
from aria.errors import DataError, FileFormatError, ManifestMismatchError, ParameterError, expected
from aria.manifest import DIR_NAME, diff_manifest, make_manifest, manifest_path, package_version

__all__ = ["STORE_KIND", "FeatureStore", "StoreWriter", "write_store"]

if TYPE_CHECKING:  # re-exported lazily from aria.features.extract (see __getattr__)
    pass

_ENGINE = ("SUFFIXES", "collect_inputs", "extract_to_store")


def __getattr__(name: str) -> Any:
    """Old home of the extraction engine: ``collect_inputs``, ``extract_to_store``, ``SUFFIXES``."""
    if name in _ENGINE:
        from aria.features import extract

        return getattr(extract, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


STORE_KIND = "aria-feature-store"
FORMAT_VERSION = 1
META_PREFIX = "meta:"
ERRORS_FILE = "errors.parquet"
_PART = re.compile(r"^part-(\d{5,})\.parquet$")
_MODALITIES = ("symbolic", "audio")


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
    from aria.features.registry import features as registry_features

    kinds = {spec.name: spec.kind for spec in registry_features(modality)}
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


# --------------------------------------------------------------------------- writing


def write_store(
    path: str | os.PathLike[str],
    *,
    modality: str,
    track_ids: Sequence[str],
    features: Mapping[str, Any],
    metadata: Any = None,
    params: Mapping[str, Any] | None = None,
    errors: Any = None,
    versions: Mapping[str, str] | None = None,
) -> Path:
    """Write a whole feature store at once (replacing any store at ``path``, atomically).

    Parameters
    ----------
    path : path
        A directory (default layout) or a ``.parquet`` file.
    modality : {"symbolic", "audio"}
    track_ids : sequence of str [shape=(n,)]
        Unique, non-empty.
    features : dict of str to array (n, dim) | sequence of n vectors | sequence of n int sequences
        NaN rows / ``None`` entries mark a track without that feature.
    metadata : DataFrame | mapping of columns | sequence of n dicts, optional
        A DataFrame may be indexed by (or hold a column) ``track_id``.
    params : mapping, optional
        Extraction parameters (JSON-able).
    errors : DataFrame | iterable of dicts | iterable of (path, error), optional
        Failed files: dicts with ``path``, ``error`` (and ``track_id``).
    versions : mapping, optional
        Package versions used (aria, numpy and pyarrow are added).

    Returns
    -------
    Path
    """
    if modality not in _MODALITIES:
        raise ParameterError(expected("modality", "'symbolic' or 'audio'", modality))
    ids = _check_ids(track_ids)
    table, specs = _build_table(ids, features, metadata, modality)
    err = _errors_table(errors)
    target = Path(path)
    man = make_manifest(
        STORE_KIND,
        format=FORMAT_VERSION,
        modality=modality,
        params=dict(params or {}),
        versions=_versions(versions),
        features=specs,
        n_tracks=len(ids),
        n_errors=err.num_rows,
    )
    if target.suffix == ".parquet":
        man["errors"] = err.to_pylist()
        _write_parquet(table, target)
        write_json(manifest_path(target), man)
        return target
    man["parts"] = [{"file": "part-00000.parquet", "rows": table.num_rows}]
    with atomic_path(target) as tmp:
        tmp.mkdir()
        _pq().write_table(table, tmp / "part-00000.parquet", compression="zstd")
        _pq().write_table(err, tmp / ERRORS_FILE, compression="zstd")
        write_json(tmp / DIR_NAME, man)
    return target


class StoreWriter:
    """Resumable, append-only writer of a directory store (what ``aria features`` uses).

    Opening an existing store checks its modality and parameters (refusing a mismatch unless
    ``overwrite``); :attr:`done` lists the tracks already in it so a rerun skips them. Each
    :meth:`append` writes one new part atomically and updates the manifest; :meth:`set_errors`
    records failed files (replacing earlier records of the same paths).

    Parameters
    ----------
    path : path
        The store directory (created if missing).
    modality : {"symbolic", "audio"}
    params : mapping
        Extraction parameters; must equal the stored ones when resuming.
    versions : mapping, optional
    overwrite : bool
        Start afresh, deleting an existing store at ``path``.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        modality: str,
        params: Mapping[str, Any] | None = None,
        versions: Mapping[str, str] | None = None,
        overwrite: bool = False,
    ) -> None:
        if modality not in _MODALITIES:
            raise ParameterError(expected("modality", "'symbolic' or 'audio'", modality))
        self.path = Path(path)
        self.modality = modality
        self.params = dict(params or {})
        if self.path.exists() and not self.path.is_dir():
            raise FileFormatError(
                f"out: {str(self.path)!r} exists and is not a feature-store directory"
            )
        if overwrite and self.path.exists():
            from aria._io import remove_path

            remove_path(self.path)
        self.path.mkdir(parents=True, exist_ok=True)
        if not os.access(self.path, os.W_OK):
            raise FileFormatError(f"out: directory is not writable: {str(self.path)!r}")
        mpath = self.path / DIR_NAME
        if mpath.is_file():
            man = _read_manifest(mpath)
            # both directions: a changed, added or removed parameter is a mismatch
            lines = diff_manifest(man, {"modality": modality, "params": self.params})
            lines += (
                [f"params: stored {man.get('params', {})!r}, asked {self.params!r}"]
                if diff_manifest({"params": self.params}, {"params": man.get("params", {})})
                and not lines
                else []
            )
            if lines:
                raise ManifestMismatchError(
                    f"{str(self.path)!r} holds features extracted with other settings; "
                    "refusing to mix them "
                    "(use a new output or overwrite):\n  " + "\n  ".join(dict.fromkeys(lines))
                )
            self._manifest = man
            self._manifest["versions"] = _versions(versions)
            self._manifest["parts"] = self._committed_parts(man)
        elif any(self.path.iterdir()):
            raise FileFormatError(
                f"out: {str(self.path)!r} is a non-empty directory without a feature-store manifest"
            )
        else:
            self._manifest = make_manifest(
                STORE_KIND,
                format=FORMAT_VERSION,
                modality=modality,
                params=self.params,
                versions=_versions(versions),
                features={},
                n_tracks=0,
                n_errors=0,
                parts=[],
            )
            write_json(mpath, self._manifest)
        self._done = set(_read_ids(self.path, self._manifest))
        self._errors = {r["path"]: r for r in _read_errors(self.path)}

    def _committed_parts(self, man: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The parts the manifest lists; part files it does not list (a write interrupted
        before its manifest update) and temporary files are deleted."""
        from aria._io import remove_path

        listed = man.get("parts")
        if listed is None:  # a store written before manifests listed their parts
            listed = [
                {"file": f.name, "rows": _pq().read_metadata(f).num_rows}
                for f in _part_files(self.path)
            ]
        names = {str(p["file"]) for p in listed}
        for f in self.path.iterdir():
            if (_PART.match(f.name) and f.name not in names) or (
                f.name.startswith(".") and ".tmp-" in f.name
            ):
                remove_path(f)
        return [dict(p) for p in listed]

    @property
    def done(self) -> set[str]:
        """Track ids already stored."""
        return set(self._done)

    @property
    def error_paths(self) -> set[str]:
        """Paths recorded as failed."""
        return set(self._errors)

    def append(
        self, track_ids: Sequence[str], features: Mapping[str, Any], metadata: Any = None
    ) -> None:
        """Write one part with these tracks (atomic), then update the manifest.

        Parameters
        ----------
        track_ids : sequence of str
            New tracks (unique, non-empty).
        features : dict
            As :func:`write_store`'s ``features``.
        metadata : DataFrame | mapping | sequence of dicts, optional
            As :func:`write_store`'s ``metadata``.
        """
        ids = _check_ids(track_ids)
        if not ids:
            return
        table, specs = _build_table(ids, features, metadata, self.modality)
        self._manifest["features"] = _merge_specs(self._manifest.get("features", {}), specs)
        nums = [int(m.group(1)) for f in self.path.iterdir() if (m := _PART.match(f.name))]
        name = f"part-{(max(nums) + 1 if nums else 0):05d}.parquet"
        _write_parquet(table, self.path / name)
        # the manifest is the commit point: a part it does not list does not exist for readers
        self._manifest.setdefault("parts", []).append({"file": name, "rows": table.num_rows})
        self._done.update(ids)
        stored = set(ids)
        recovered = [p for p, r in self._errors.items() if r.get("track_id") in stored]
        if recovered:  # a track now stored is no longer an error
            self.set_errors([], clear=recovered)
        else:
            self._flush_manifest()

    def set_errors(self, errors: Iterable[Mapping[str, Any]], *, clear: Iterable[str] = ()) -> None:
        """Record failures (dicts: ``path``, ``error``, optional ``track_id``); drop ``clear``.

        Parameters
        ----------
        errors : iterable of dict
            Failures: ``path``, ``error``, optional ``track_id``.
        clear : iterable of str
            Paths whose earlier failure records are dropped.
        """
        for p in clear:
            self._errors.pop(str(p), None)
        for e in errors:
            self._errors[str(e["path"])] = {
                "path": str(e["path"]),
                "track_id": str(e.get("track_id", "") or ""),
                "error": str(e["error"]),
                "time": _now(),
            }
        _write_parquet(_errors_table(list(self._errors.values())), self.path / ERRORS_FILE)
        self._flush_manifest()

    def _flush_manifest(self) -> None:
        self._manifest["n_tracks"] = len(self._done)
        self._manifest["n_errors"] = len(self._errors)
        self._manifest["updated"] = _now()
        write_json(self.path / DIR_NAME, self._manifest)


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
        key=lambda f: int(_PART.match(f.name).group(1)),
    )  # type: ignore[union-attr]


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


# --------------------------------------------------------------------------- reading


class FeatureStore:
    """Read access to a feature store (see the module docstring for the layout).

    Create with :meth:`open`. Attributes: ``path``, ``manifest``, :attr:`modality`,
    :attr:`track_ids`, :attr:`feature_names`, :attr:`params`, :attr:`versions`,
    :attr:`errors`, :attr:`metadata`; methods :meth:`vectors`, :meth:`sequences`.
    """

    def __init__(
        self, path: Path, manifest: dict[str, Any], table: Any, errors: list[dict[str, Any]]
    ) -> None:
        self.path = path
        self.manifest = manifest
        self._table = table
        self._errors = errors
        self._ids = (
            np.asarray(table.column("track_id").to_pylist(), dtype=object).astype(str)
            if table.num_rows
            else np.zeros(0, dtype=str)
        )
        self._row = {t: i for i, t in enumerate(self._ids)}

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> FeatureStore:
        """Open a store directory or ``.parquet`` file.

        Parameters
        ----------
        path : path
            A store directory or a ``.parquet`` file.

        Raises
        ------
        FileFormatError
            missing path, no manifest, unreadable Parquet.
        ManifestMismatchError
            the manifest is not a feature store's.
        """
        p = Path(path)
        if not p.exists():
            raise FileFormatError(f"store: no such feature store: {str(p)!r}")
        mpath = manifest_path(p)
        if not mpath.is_file():
            raise FileFormatError(
                f"store: {str(p)!r} has no manifest ({mpath.name}); not an ARIA feature store"
            )
        man = _read_manifest(mpath)
        pa = _pa()
        try:
            if p.is_dir():
                tables = [_read_part(p, f, man) for f in _listed_parts(p, man)]
                errors = _read_errors(p)
            else:
                tables = [_pq().read_table(p)]
                errors = list(man.get("errors", []))
        except (OSError, pa.ArrowInvalid) as exc:
            raise FileFormatError(f"store: unreadable Parquet in {str(p)!r}: {exc}") from None
        table = _dedupe(tables)
        _check_against_manifest(p, man, tables, table)
        return cls(p, man, table, errors)

    def __len__(self) -> int:
        return int(self._ids.shape[0])

    def __contains__(self, track_id: object) -> bool:
        return track_id in self._row

    def __repr__(self) -> str:
        return (
            f"FeatureStore({str(self.path)!r}, modality={self.modality!r}, "
            f"n_tracks={len(self)}, features={self.feature_names})"
        )

    @property
    def modality(self) -> str:
        return str(self.manifest["modality"])

    @property
    def track_ids(self) -> np.ndarray:
        """Track ids in row order, ``np.ndarray[str]`` of shape ``(n_tracks,)``."""
        return self._ids.copy()

    @property
    def feature_names(self) -> list[str]:
        return list(self.manifest.get("features", {}))

    @property
    def feature_specs(self) -> dict[str, dict[str, Any]]:
        """``{name: {"kind": "vector", "dim": d} | {"kind": "sequence"}}``."""
        return {k: dict(v) for k, v in self.manifest.get("features", {}).items()}

    @property
    def params(self) -> dict[str, Any]:
        return dict(self.manifest.get("params", {}))

    @property
    def versions(self) -> dict[str, str]:
        return dict(self.manifest.get("versions", {}))

    @property
    def errors(self) -> Any:
        """Failed files: DataFrame with columns ``path``, ``track_id``, ``error``, ``time``."""
        import pandas as pd

        return pd.DataFrame(self._errors, columns=["path", "track_id", "error", "time"])

    @property
    def metadata(self) -> Any:
        """Metadata columns (genre, duration, source, ...): a DataFrame indexed by ``track_id``."""
        import pandas as pd

        cols = [c for c in self._table.column_names if c.startswith(META_PREFIX)]
        data = {c[len(META_PREFIX) :]: self._table.column(c).to_pylist() for c in cols}
        return pd.DataFrame(data, index=pd.Index(self._ids, name="track_id"))

    def _column(self, name: str, kind: str) -> Any:
        spec = self.manifest.get("features", {}).get(name)
        if spec is None:
            raise ParameterError(
                expected("name", "one of " + ", ".join(map(repr, self.feature_names)), name)
            )
        if spec["kind"] != kind:
            raise ParameterError(
                expected("name", f"a {kind} feature", f"{name!r} ({spec['kind']})")
            )
        return spec, (self._table.column(name) if name in self._table.column_names else None)

    def vectors(self, name: str) -> np.ndarray:
        """Vector feature ``name`` as ``(n_tracks, dim)`` float64; NaN rows where it is missing.

        Parameters
        ----------
        name : str
            A vector feature of the store.
        """
        spec, col = self._column(name, "vector")
        dim = int(spec["dim"])
        out = np.full((len(self), dim), np.nan)
        if col is None or len(self) == 0:
            return out
        arr = col.combine_chunks() if hasattr(col, "combine_chunks") else col
        valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        offsets = np.asarray(arr.offsets.to_numpy(), dtype=np.int64)
        values = np.asarray(arr.values.to_numpy(zero_copy_only=False), dtype=np.float64)
        lengths = np.diff(offsets)
        bad = valid & (lengths != dim)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise DataError(expected(f"store[{name!r}] row {i}", f"{dim} values", int(lengths[i])))
        rows = np.flatnonzero(valid)
        if dim and rows.size:
            out[rows] = values[offsets[rows][:, None] + np.arange(dim)]
        return out

    def sequences(self, name: str) -> list[np.ndarray | None]:
        """Sequence feature ``name``: one int64 array per track (``None`` where missing).

        Parameters
        ----------
        name : str
            A sequence feature of the store.
        """
        _spec, col = self._column(name, "sequence")
        if col is None:
            return [None] * len(self)
        return [None if v is None else np.asarray(v, dtype=np.int64) for v in col.to_pylist()]


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
