"""A folder given where a score matrix is expected: find the one score file inside.

Attribution tools write their scores into folders of their own; the user should be able to
point ARIA at the folder they know:

=====================  ==================================================================
tool                   what ARIA looks for inside the folder
=====================  ==================================================================
bergson                ``scores.bin`` + ``info.json`` in the run folder or ``RUN/scores/``
Kronfluence            ``pairwise_scores.safetensors`` (or its partition files) in the
                       folder, in its ``scores_<name>/`` folders (an analysis folder), or
                       in ``<analysis>/scores_<name>/`` (an output folder)
TRAK                   ``scores/<experiment>.mmap`` (a save folder), or ``<exp>.mmap`` in a
                       ``scores`` folder
any                    the folder's own files of a score format, and zarr stores in it
=====================  ==================================================================

The first rows that match decide; exactly one candidate is read, several are an error that
lists them (relative to the folder, at most :data:`MAX_LISTED`) so the user can name one; none
is an error naming what was looked for. A zarr store is not looked into (it *is* the matrix).
"""

from __future__ import annotations

from pathlib import Path

from aria_tda.errors import FileFormatError
from aria_tda.scores.formats.bergson import find_bergson, is_bergson_bin
from aria_tda.scores.formats.kronfluence import AGGREGATED_NAME, partition_files

__all__ = ["MAX_LISTED", "find_score_path", "is_zarr_dir"]

#: The most candidates an error lists.
MAX_LISTED = 10
#: ARIA's and TRAK's side files that are never score matrices.
_SIDE_SUFFIXES = (".row_ids.npy", ".manifest.json")
_SIDE_NAMES = {"candidates.npy", "offsets.npy"}


def is_zarr_dir(path: Path) -> bool:
    """Whether the directory ``path`` is a zarr store (v2 or v3, array or group).

    Parameters
    ----------
    path : pathlib.Path
        A directory.
    """
    return (
        path.suffix.lower() == ".zarr"
        or (path / "zarr.json").is_file()
        or (path / ".zarray").is_file()
        or (path / ".zgroup").is_file()
    )


def _kronfluence_scores(folder: Path) -> Path | None:
    """The pairwise scores of a Kronfluence scores folder: the whole file, else the folder."""
    if (folder / AGGREGATED_NAME).is_file():
        return folder / AGGREGATED_NAME
    if partition_files(folder):
        return folder
    return None


def _subdirs(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if p.is_dir())
    except OSError:
        return []


def _native(folder: Path) -> list[Path]:
    """Candidates laid out the way bergson, Kronfluence or TRAK write them."""
    bergson = find_bergson(folder)
    if bergson is not None:
        return [bergson]
    own = _kronfluence_scores(folder)
    if own is not None:
        return [own]
    found: list[Path] = []
    for sub in _subdirs(folder):  # an analysis folder, or an output folder of analyses
        levels = [sub] if sub.name.startswith("scores_") else [
            s for s in _subdirs(sub) if s.name.startswith("scores_")
        ]
        for scores_dir in levels:
            hit = _kronfluence_scores(scores_dir)
            if hit is not None:
                found.append(hit)
    trak_dir = folder if folder.name == "scores" else folder / "scores"
    if trak_dir.is_dir():
        found += sorted(p for p in trak_dir.glob("*.mmap") if p.is_file())
    return found


def _generic(folder: Path, suffixes: tuple[str, ...]) -> list[Path]:
    """The folder's own files of a score format, and the zarr stores in it."""
    out: list[Path] = []
    try:
        entries = sorted(folder.iterdir())
    except OSError as exc:
        raise FileFormatError(f"{folder}: cannot list the folder ({exc.strerror})") from None
    for p in entries:
        name = p.name.lower()
        if p.is_dir():
            if is_zarr_dir(p):
                out.append(p)
        elif name.endswith(_SIDE_SUFFIXES) or name in _SIDE_NAMES:
            continue
        elif p.suffix.lower() in suffixes or is_bergson_bin(p):
            out.append(p)
    return out


def _listing(folder: Path, paths: list[Path]) -> str:
    shown = []
    for p in paths[:MAX_LISTED]:
        rel = p.relative_to(folder).as_posix()
        shown.append(rel + ("/" if p.is_dir() else ""))
    more = f" and {len(paths) - MAX_LISTED} more" if len(paths) > MAX_LISTED else ""
    return ", ".join(shown) + more


def find_score_path(folder: Path, suffixes: tuple[str, ...]) -> Path:
    """The one score matrix inside ``folder`` (a file, a zarr store or a partitions folder).

    Parameters
    ----------
    folder : pathlib.Path
        A directory that is not itself a zarr store.
    suffixes : tuple of str
        The file suffixes of the score formats (lower case, with the dot).

    Raises
    ------
    FileFormatError
        No candidate (the message says what was looked for), or several (the message lists
        them, relative to ``folder``).
    """
    found = _native(folder) or _generic(folder, suffixes)
    if len(found) == 1:
        return found[0]
    if not found:
        raise FileFormatError(
            f"{folder}: a folder that is not a zarr store and holds no score matrix; expected "
            "bergson's scores.bin + info.json, Kronfluence's scores_<name>/"
            f"{AGGREGATED_NAME}, TRAK's scores/<experiment>.mmap, or one file of "
            f"{', '.join(suffixes)} (or pass the file itself)"
        )
    raise FileFormatError(
        f"{folder}: holds {len(found)} score matrices ({_listing(folder, found)}); pass the one "
        "to read"
    )
