r"""The feature store: one per corpus, Parquet by default, filled by extraction, read by analysis.

Layout
------
A store is a directory (the default, resumable)::

    STORE/
      aria-manifest.json   kind "aria-feature-store", format, modality, params, versions,
                           features {name: {"kind": "vector", "dim": d} | {"kind": "sequence"}},
                           n_tracks, n_errors,
                           parts [{"file", "rows", "digest"}] (the committed parts)
      part-00000.parquet   one row per track: track_id, one column per feature, metadata columns
      part-00001.parquet   ... (each append writes a new part)
      errors.parquet       path, track_id, error — files that could not be extracted
      .aria-lock           the writer lock (:func:`aria_tda._lock.writer_lock`)

or a single ``.parquet`` file (written at once by :func:`write_store`) whose manifest — with the
errors table and the file's ``digest`` — lies beside it in ``FILE.parquet.manifest.json``.

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
- ``digest`` is the content checksum of a part
  (:func:`aria_tda._fingerprint.content_digest`, cached by the file's stat key so a reopen
  costs a ``stat``): a part whose bytes differ from the ones committed — even with the same
  rows — is a :class:`~aria_tda.errors.FileFormatError` naming it. Stores written before
  parts carried a digest open without that check.
- One writer at a time: :class:`StoreWriter` holds the store's writer lock; part numbers are
  taken under it. A folder that is not a feature store is never written into or replaced.
- A malformed manifest (not an object, a field missing or of the wrong type) is one
  :class:`~aria_tda.errors.FileFormatError` naming it.
"""

from __future__ import annotations

import contextlib
import os
import weakref
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda._io import atomic_path, is_temporary, remove_path, sweep_leftovers, write_json
from aria_tda._lock import LOCK_NAME, writer_lock
from aria_tda._paths import input_path
from aria_tda.errors import (
    DataError,
    FileFormatError,
    LockedError,
    ManifestMismatchError,
    ParameterError,
    expected,
)
from aria_tda.features.store_format import (
    ERRORS_FILE,
    FORMAT_VERSION,
    META_PREFIX,
    PART_NAME,
    STORE_KIND,
    STORE_MODALITIES,
    STORE_MODALITY_TEXT,
    arrow,
    check_against_manifest,
    dedupe_parts,
    listed_parts,
    parquet,
    part_digest,
    part_files,
    read_errors,
    read_ids,
    read_manifest,
    read_part,
    unreadable_part,
)
from aria_tda.features.store_writing import (
    PID_TEMPORARY,
    build_table,
    check_may_write,
    check_track_ids,
    errors_table,
    library_versions,
    merge_specs,
    names_a_store,
    now_iso,
    plain_params,
    write_parquet,
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

    Only a feature store (or an empty folder) is replaced; a folder or file ARIA did not write
    as a store is refused before anything is written. A directory store is written under its
    writer lock.

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
    from aria_tda._fingerprint import hash_bytes

    if modality not in STORE_MODALITIES:
        raise ParameterError(expected("modality", STORE_MODALITY_TEXT, modality))
    plain = plain_params(params)
    ids = check_track_ids(track_ids)
    table, specs = build_table(ids, features, metadata, modality)
    err = errors_table(errors)
    target = Path(path)
    man = make_manifest(
        STORE_KIND,
        format=FORMAT_VERSION,
        modality=modality,
        params=plain,
        versions=library_versions(versions),
        features=specs,
        n_tracks=len(ids),
        n_errors=err.num_rows,
    )
    if target.suffix == ".parquet":
        if target.exists() and not target.is_dir() and not names_a_store(manifest_path(target)):
            raise FileFormatError(
                f"out: {str(target)!r} exists and has no feature-store manifest beside it; "
                "ARIA writes over nothing it did not write (choose another output)"
            )
        man["errors"] = err.to_pylist()
        write_parquet(table, target)
        man["digest"] = part_digest(target)
        write_json(manifest_path(target), man)
        return target
    check_may_write(target, replace=True)
    created = not target.exists()
    try:
        with writer_lock(target, "feature store"), atomic_path(target) as tmp:
            tmp.mkdir()
            part = tmp / "part-00000.parquet"
            parquet().write_table(table, part, compression="zstd")
            man["parts"] = [{"file": part.name, "rows": table.num_rows,
                             "digest": hash_bytes(part)}]
            parquet().write_table(err, tmp / ERRORS_FILE, compression="zstd")
            write_json(tmp / DIR_NAME, man)
    except BaseException:
        if created:
            remove_path(target)
        raise
    return target


#: the open writers of this process, by resolved store path (one at a time per store)
_OPEN: dict[str, weakref.ref[StoreWriter]] = {}


class StoreWriter:
    """Resumable, append-only writer of a directory store (what ``aria-tda features`` uses).

    The writer holds the store's writer lock (:func:`aria_tda._lock.writer_lock`) from its
    creation until :meth:`close` (or the end of its ``with`` block, or of the process, however
    it ends): a second writer of the same store in another process is refused with a
    :class:`~aria_tda.errors.LockedError` naming the holder. Under the lock, the temporaries
    and uncommitted parts of dead writers are removed first.

    Opening an existing store checks its modality and parameters (refusing a mismatch unless
    ``overwrite``) and the content checksums of its parts; :attr:`done` lists the tracks already
    in it so a rerun skips them. Each :meth:`append` writes one new part atomically and then
    commits it to the manifest (with its row count and content checksum); :meth:`set_errors`
    records failed files (replacing earlier records of the same paths). A folder that is not a
    feature store is never written into (nor removed by ``overwrite``); a store this writer
    created and left without a single committed part or error is removed when it closes on an
    error.

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
        self._stack = contextlib.ExitStack()
        self._closed = True
        if modality not in STORE_MODALITIES:
            raise ParameterError(expected("modality", STORE_MODALITY_TEXT, modality))
        self.path = Path(path)
        self.modality = modality
        self.params = plain_params(params)
        check_may_write(self.path, replace=overwrite)  # before anything is created
        what = "embedding store" if modality == "embedding" else "feature store"
        self._key = str(self.path.resolve())
        ref = _OPEN.get(self._key)
        other = ref() if ref is not None else None
        if other is not None and not other._closed:
            # the lock is re-entrant within a process; two writers of one store are not
            raise LockedError(
                f"{self.path}: this {what} is already being written by another StoreWriter of "
                f"this process (pid {os.getpid()}); close that one first"
            )
        self._created = not self.path.exists()
        self._committed = False
        self._stack.enter_context(writer_lock(self.path, what))
        self._closed = False
        _OPEN[self._key] = weakref.ref(self)
        try:
            self._open(versions, overwrite)
        except BaseException:
            self._abandon()
            raise

    def _open(self, versions: Mapping[str, str] | None, overwrite: bool) -> None:
        """Under the lock: sweep dead writers' leftovers, then resume or start the store."""
        sweep_leftovers(self.path)
        mpath = self.path / DIR_NAME
        if overwrite and mpath.is_file():
            for entry in os.scandir(self.path):
                if entry.name != LOCK_NAME:
                    remove_path(entry.path)
        if not os.access(self.path, os.W_OK):
            raise FileFormatError(f"out: directory is not writable: {str(self.path)!r}")
        if mpath.is_file():
            man = read_manifest(mpath)
            # both directions: a changed, added or removed parameter is a mismatch
            lines = diff_manifest(man, {"modality": self.modality, "params": self.params})
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
            self._manifest["versions"] = library_versions(versions)
            self._manifest["parts"] = self._committed_parts(man)
        else:
            check_may_write(self.path, replace=False)  # filled since the first look
            self._manifest = make_manifest(
                STORE_KIND,
                format=FORMAT_VERSION,
                modality=self.modality,
                params=self.params,
                versions=library_versions(versions),
                features={},
                n_tracks=0,
                n_errors=0,
                parts=[],
            )
            write_json(mpath, self._manifest)
        self._done = set(read_ids(self.path, self._manifest))
        self._errors = {str(r["path"]): r for r in read_errors(self.path)}

    def _committed_parts(self, man: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The parts the manifest lists; part files it does not list (a write interrupted
        before its manifest update) and temporaries of older ARIA versions are deleted."""
        listed = man.get("parts")
        if listed is None:  # a store written before manifests listed their parts
            listed = []
            for f in part_files(self.path):
                try:
                    listed.append({"file": f.name, "rows": parquet().read_metadata(f).num_rows})
                except (OSError, arrow().ArrowInvalid) as exc:
                    raise unreadable_part(self.path, f, exc) from None
        names = {str(p["file"]) for p in listed}
        for f in self.path.iterdir():
            # temporaries named with a process id are sweep_leftovers' (dead writers' only)
            if (PART_NAME.match(f.name) and f.name not in names) or (
                is_temporary(f.name) and not PID_TEMPORARY.search(f.name)
            ):
                remove_path(f)
        return [dict(p) for p in listed]

    # ----------------------------------------------------------------- lifetime

    def close(self) -> None:
        """Release the store's writer lock (the store stays as committed)."""
        if not self._closed:
            self._closed = True
            ref = _OPEN.get(self._key)
            if ref is not None and ref() in (self, None):
                del _OPEN[self._key]
        self._stack.close()

    def _abandon(self) -> None:
        """Close after an error; a store this writer created and never committed to goes."""
        try:
            if self._created and not self._committed:
                remove_path(self.path)
        finally:
            self.close()

    def __enter__(self) -> StoreWriter:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.close()
        else:
            self._abandon()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise ParameterError(
                f"StoreWriter: the writer of {str(self.path)!r} is closed (its lock released); "
                "open a new one to write again"
            )

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
        """Write one part with these tracks (atomic), then commit it to the manifest.

        Parameters
        ----------
        track_ids : sequence of str
            New tracks (unique, non-empty).
        features : dict
            As :func:`write_store`'s ``features``.
        metadata : DataFrame | mapping | sequence of dicts, optional
            As :func:`write_store`'s ``metadata``.
        """
        ids = check_track_ids(track_ids)
        if not ids:
            return
        self._check_open()
        table, specs = build_table(ids, features, metadata, self.modality)
        merged = merge_specs(self._manifest.get("features", {}), specs)
        listed = [int(m.group(1)) for q in self._manifest["parts"]
                  if (m := PART_NAME.match(str(q["file"])))]
        nums = listed + [
            int(m.group(1)) for f in self.path.iterdir() if (m := PART_NAME.match(f.name))
        ]
        name = f"part-{(max(nums) + 1 if nums else 0):05d}.parquet"
        part = self.path / name
        write_parquet(table, part)
        before = (self._manifest.get("features"), list(self._manifest["parts"]),
                  set(self._done), dict(self._errors))
        try:
            entry = {"file": name, "rows": table.num_rows, "digest": part_digest(part)}
            # the manifest is the commit point: a part it does not list does not exist for readers
            self._manifest["features"] = merged
            self._manifest["parts"].append(entry)
            self._done.update(ids)
            stored = set(ids)
            recovered = [p for p, r in self._errors.items() if r.get("track_id") in stored]
            if recovered:  # a track now stored is no longer an error
                self.set_errors([], clear=recovered)
            else:
                self._flush_manifest()
        except BaseException:
            (self._manifest["features"], self._manifest["parts"], self._done,
             self._errors) = before
            remove_path(part)
            raise
        self._committed = True

    def set_errors(self, errors: Iterable[Mapping[str, Any]], *, clear: Iterable[str] = ()) -> None:
        """Record failures (dicts: ``path``, ``error``, optional ``track_id``); drop ``clear``.

        Parameters
        ----------
        errors : iterable of dict
            Failures: ``path``, ``error``, optional ``track_id``.
        clear : iterable of str
            Paths whose earlier failure records are dropped.
        """
        self._check_open()
        errors, clear = list(errors), [str(p) for p in clear]
        if not errors and not any(p in self._errors for p in clear):
            return  # nothing changes: the table is not rewritten
        before = dict(self._errors)
        try:
            for p in clear:
                self._errors.pop(str(p), None)
            for e in errors:
                self._errors[str(e["path"])] = {
                    "path": str(e["path"]),
                    "track_id": str(e.get("track_id", "") or ""),
                    "error": str(e["error"]),
                    "time": now_iso(),
                }
            write_parquet(errors_table(list(self._errors.values())), self.path / ERRORS_FILE)
            self._flush_manifest()
        except BaseException:
            self._errors = before
            raise
        self._committed = True

    def _flush_manifest(self) -> None:
        self._manifest["n_tracks"] = len(self._done)
        self._manifest["n_errors"] = len(self._errors)
        self._manifest["updated"] = now_iso()
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
        input_path(p, "store", missing="no such feature store")  # a FIFO: refused, never opened
        mpath = manifest_path(p)
        if not mpath.is_file():
            raise FileFormatError(
                f"store: {str(p)!r} has no manifest ({mpath.name}); not an ARIA feature store"
            )
        man = read_manifest(mpath)
        pa = arrow()
        try:
            if p.is_dir():
                tables = [read_part(p, f, man) for f in listed_parts(p, man)]
                errors = read_errors(p)
            else:
                tables = [parquet().read_table(p)]
                errors = list(man.get("errors", []))
        except (OSError, pa.ArrowInvalid) as exc:
            reason = " ".join(str(exc).split())
            raise FileFormatError(f"store: unreadable Parquet in {str(p)!r}: {reason}") from None
        table = dedupe_parts(tables)
        check_against_manifest(p, man, tables, table)
        if not p.is_dir() and man.get("digest") is not None and part_digest(p) != man["digest"]:
            raise FileFormatError(
                f"store: {str(p)!r} was altered after it was written (its content checksum "
                f"differs from the one {mpath.name} recorded); restore it or rewrite the store"
            )
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
