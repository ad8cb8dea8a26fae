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
  refused (:class:`~aria_tda.errors.ManifestMismatchError`) rather than mixing them silently.
- Every file is written atomically (temporary name, then rename): an interrupted run leaves
  complete parts only, and a rerun appends what is missing (:class:`StoreWriter`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda._io import atomic_path, write_json
from aria_tda.errors import (
    DataError,
    FileFormatError,
    ManifestMismatchError,
    ParameterError,
    expected,
)
from aria_tda.features._store_io import (
    _MODALITIES,
    _MODALITY_TEXT,
    _PART,
    ERRORS_FILE,
    FORMAT_VERSION,
    META_PREFIX,
    STORE_KIND,
    _build_table,
    _check_against_manifest,
    _check_ids,
    _dedupe,
    _errors_table,
    _listed_parts,
    _merge_specs,
    _now,
    _pa,
    _part_files,
    _pq,
    _read_errors,
    _read_ids,
    _read_manifest,
    _read_part,
    _versions,
    _write_parquet,
)
from aria_tda.manifest import DIR_NAME, diff_manifest, make_manifest, manifest_path

__all__ = ["STORE_KIND", "FeatureStore", "StoreWriter", "write_store"]

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
    modality : {"symbolic", "audio", "embedding"}
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
        raise ParameterError(expected("modality", _MODALITY_TEXT, modality))
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
    """Resumable, append-only writer of a directory store (what ``aria-tda features`` uses).

    Opening an existing store checks its modality and parameters (refusing a mismatch unless
    ``overwrite``); :attr:`done` lists the tracks already in it so a rerun skips them. Each
    :meth:`append` writes one new part atomically and updates the manifest; :meth:`set_errors`
    records failed files (replacing earlier records of the same paths).

    Parameters
    ----------
    path : path
        The store directory (created if missing).
    modality : {"symbolic", "audio", "embedding"}
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
            raise ParameterError(expected("modality", _MODALITY_TEXT, modality))
        self.path = Path(path)
        self.modality = modality
        self.params = dict(params or {})
        if self.path.exists() and not self.path.is_dir():
            raise FileFormatError(
                f"out: {str(self.path)!r} exists and is not a feature-store directory"
            )
        if overwrite and self.path.exists():
            from aria_tda._io import remove_path

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
        from aria_tda._io import remove_path

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

    def check_modality(self, modality: str, *, name: str = "feature_store") -> None:
        """Raise :class:`~aria_tda.errors.DataError` unless this is a ``modality`` store.

        The message names both modalities with the right article ("an audio store").

        Parameters
        ----------
        modality : {"symbolic", "audio"}
            The modality wanted.
        name : str
            How the store is named in the message (a parameter or study key).
        """
        from aria_tda.features.registry import modality_phrase

        if self.modality != modality:
            raise DataError(
                f"{name}: expected {modality_phrase(modality, 'feature store')}, got "
                f"{modality_phrase(self.modality, 'store')} ({str(self.path)!r})"
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
