"""The feature store's file format: its constants, and reading and checking what is on disk.

The layout is documented in :mod:`aria_tda.features.store`, whose reader and writer are built on
these pieces (the writing side: :mod:`aria_tda.features.store_writing`); the extraction engine
(:mod:`aria_tda.features.extract`) and the embedding store (:mod:`aria_tda.embed.store`) use them
too. Every reader raises a one-line :class:`~aria_tda.errors.FileFormatError` naming the store
for a malformed file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aria_tda._io import read_json
from aria_tda.errors import FileFormatError, ManifestMismatchError, expected

__all__ = [
    "ERRORS_FILE", "FORMAT_VERSION", "META_PREFIX", "PART_NAME", "STORE_KIND", "STORE_MODALITIES",
    "STORE_MODALITY_TEXT", "arrow", "check_against_manifest", "dedupe_parts", "listed_parts",
    "parquet", "part_digest", "part_files", "read_errors", "read_ids", "read_manifest",
    "read_part", "unreadable_part",
]

#: The ``kind`` of a feature store's manifest.
STORE_KIND = "aria-feature-store"
#: The store format's version (the manifest's ``format_version``).
FORMAT_VERSION = 1
#: The column prefix of per-track metadata in the Parquet parts.
META_PREFIX = "meta:"
#: The table of files that failed, beside the parts.
ERRORS_FILE = "errors.parquet"
#: A part's name: numbered in the order written, the number taken under the store's writer lock
#: (:func:`aria_tda._lock.writer_lock`), so two writers never pick the same name.
PART_NAME = re.compile(r"^part-(\d{5,})\.parquet$")
#: Store modalities: the two evidence-channel extractors' and ``aria-tda embed``'s encoder
#: embeddings.
STORE_MODALITIES = ("symbolic", "audio", "embedding")
#: :data:`STORE_MODALITIES` as an error message names them.
STORE_MODALITY_TEXT = "'symbolic', 'audio' or 'embedding'"


def arrow() -> Any:
    """:mod:`pyarrow`, imported on first use (reading a store needs it, importing ARIA not)."""
    import pyarrow as pa

    return pa


def parquet() -> Any:
    """:mod:`pyarrow.parquet`, imported on first use."""
    import pyarrow.parquet as pq

    return pq


# --------------------------------------------------------------------------- reading


def part_digest(path: Path) -> str:
    """The content checksum of a part, as its manifest records it (cached by stat key).

    Parameters
    ----------
    path : pathlib.Path
        The part file.

    Returns
    -------
    str
    """
    from aria_tda._fingerprint import content_digest

    return content_digest(path)


def read_manifest(mpath: Path) -> dict[str, Any]:
    """Read and check a store manifest: every field a reader touches has the right type.

    A manifest of another kind of artefact is a :class:`ManifestMismatchError`; anything
    malformed (not JSON, not an object, missing or mistyped fields) a one-line
    :class:`FileFormatError` naming the manifest.

    Parameters
    ----------
    mpath : pathlib.Path
        The manifest file.

    Returns
    -------
    dict
        The manifest.
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
    if man.get("modality") not in STORE_MODALITIES:
        raise _malformed(mpath, f"'modality' {STORE_MODALITY_TEXT}", man.get("modality"))
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
                or not PART_NAME.match(name)
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


def part_files(path: Path) -> list[Path]:
    """Every part file in a store folder, in the order written (listed or not).

    Parameters
    ----------
    path : pathlib.Path
        The store folder.

    Returns
    -------
    list of pathlib.Path
    """
    return sorted(
        (f for f in path.iterdir() if PART_NAME.match(f.name)),
        key=lambda f: int(PART_NAME.match(f.name).group(1)),  # type: ignore[union-attr]
    )


def listed_parts(path: Path, man: Mapping[str, Any]) -> list[Path]:
    """The committed part files of a directory store (all part files for an old manifest).

    Parameters
    ----------
    path : pathlib.Path
        The store folder.
    man : mapping
        Its manifest (:func:`read_manifest`).

    Returns
    -------
    list of pathlib.Path
    """
    listed = man.get("parts")
    if listed is None:
        return part_files(path)
    return [path / str(p["file"]) for p in listed]


def _part_entry(man: Mapping[str, Any], f: Path) -> Mapping[str, Any]:
    return {str(q["file"]): q for q in man.get("parts") or ()}.get(f.name, {})


def read_ids(path: Path, man: Mapping[str, Any]) -> list[str]:
    """Track ids of the committed parts, each part checked as :func:`read_part` does.

    Parameters
    ----------
    path : pathlib.Path
        The store folder.
    man : mapping
        Its manifest.

    Returns
    -------
    list of str
        In part order (a track written again appears again).
    """
    pa = arrow()
    ids: list[str] = []
    for f in listed_parts(path, man):
        try:
            table = parquet().read_table(f, columns=["track_id"]) if f.is_file() else None
        except (OSError, pa.ArrowInvalid, KeyError) as exc:
            raise unreadable_part(path, f, exc) from None
        _check_part(path, f, man, table)
        assert table is not None  # _check_part raised for a missing part
        ids.extend(table.column("track_id").to_pylist())
    return ids


def unreadable_part(path: Path, f: Path, exc: BaseException) -> FileFormatError:
    """The error for a part Parquet cannot read.

    Parameters
    ----------
    path : pathlib.Path
        The store folder.
    f : pathlib.Path
        The part.
    exc : BaseException
        What reading it raised (its message, on one line, is the reason).

    Returns
    -------
    FileFormatError
    """
    reason = " ".join(str(exc).split())
    return FileFormatError(f"store: unreadable Parquet part {f.name} in {str(path)!r}: {reason}")


def read_errors(path: Path) -> list[dict[str, Any]]:
    """The rows of a store's :data:`ERRORS_FILE` (none when it has none).

    Parameters
    ----------
    path : pathlib.Path
        The store folder.

    Returns
    -------
    list of dict
    """
    f = path / ERRORS_FILE
    if not f.is_file():
        return []
    pa = arrow()
    try:
        rows = parquet().read_table(f).to_pylist()
    except (OSError, pa.ArrowInvalid) as exc:
        reason = " ".join(str(exc).split())
        raise FileFormatError(f"store: unreadable errors table {str(f)!r}: {reason}") from None
    if rows and not {"path", "error"} <= set(rows[0]):
        raise FileFormatError(
            expected(f"store: errors table {str(f)!r}", "columns path, track_id, error, time",
                     sorted(rows[0]))
        )
    return rows


def read_part(path: Path, f: Path, man: Mapping[str, Any]) -> Any:
    """Read one committed part; a listed part that is missing, holds other rows or other bytes
    than its manifest recorded is an error.

    Parameters
    ----------
    path : pathlib.Path
        The store folder.
    f : pathlib.Path
        The part.
    man : mapping
        The manifest.

    Returns
    -------
    pyarrow.Table
    """
    pa = arrow()
    try:
        table = parquet().read_table(f) if f.is_file() else None
    except (OSError, pa.ArrowInvalid) as exc:
        raise unreadable_part(path, f, exc) from None
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
    if digest is not None and part_digest(f) != digest:
        raise FileFormatError(
            f"store: {str(path)!r}: {f.name} was altered after it was written (its content "
            "checksum differs from the one its manifest recorded); restore it or rewrite the "
            "store (--overwrite)"
        )


def check_against_manifest(
    path: Path, man: Mapping[str, Any], tables: list[Any], table: Any
) -> None:
    """The Parquet data must match the manifest: track count, columns (FileFormatError).

    Parameters
    ----------
    path : pathlib.Path
        The store folder.
    man : mapping
        The manifest.
    tables : list of pyarrow.Table
        The parts (each must have ``track_id`` and only the manifest's features and metadata).
    table : pyarrow.Table
        The parts combined (:func:`dedupe_parts`); as many rows as ``n_tracks``.
    """
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


def dedupe_parts(tables: list[Any]) -> Any:
    """Concatenate parts; a track written again replaces its row, first-write order kept.

    Parameters
    ----------
    tables : list of pyarrow.Table
        The parts, in the order written.

    Returns
    -------
    pyarrow.Table
    """
    pa = arrow()
    if not tables:
        return pa.table({"track_id": pa.array([], type=pa.string())})
    table = pa.concat_tables(tables, promote_options="default") if len(tables) > 1 else tables[0]
    ids = table.column("track_id").to_pylist()
    last = {t: i for i, t in enumerate(ids)}
    if len(last) == len(ids):
        return table
    first_order = list(dict.fromkeys(ids))
    return table.take(pa.array([last[t] for t in first_order], type=pa.int64()))
