"""The score-matrix file formats ARIA reads, one module each, and how a file's format is told.

===============  =================================  =====================  ==================
format           files                              written by             stored orientation
===============  =================================  =====================  ==================
``npy``          ``.npy``, ``.mmap`` (TRAK)         NumPy, TRAK, ARIA      training x queries
``npz``          ``.npz`` (stored or compressed)    NumPy                  training x queries
``torch``        ``.pt``, ``.pth``                  dattri, captum,        training x queries
                                                    quanda, LogIX          [1]
``safetensors``  ``.safetensors``                   Kronfluence            queries x training
``bergson``      ``scores.bin`` + ``info.json``     bergson                training x queries
``zarr``         ``.zarr`` directory (v2/v3)        ARIA, zarr             training x queries
===============  =================================  =====================  ==================

[1] dattri's scores are training x test; captum's ``TracInCP``, quanda's explanations and LogIX
are test x training: read those with ``transpose=True`` (``--transpose``).

Formats not told by the suffix are sniffed from the first bytes (``.npy`` magic, zip magic).
A folder that is not a zarr store is looked into for the one score matrix a tool wrote there
(:mod:`aria_tda.scores.formats.folders`: a bergson run, a Kronfluence analysis, a TRAK save
folder); Kronfluence's partition files are read whole or refused
(:mod:`aria_tda.scores.formats.kronfluence`).

Every reader distrusts its header: sizes, offsets, shapes, dtypes and grids are checked against
the file before any allocation, seek or loop they size, and refused in one line naming the
field, its value and what the file holds (:mod:`aria_tda.scores.formats.header`). The in-place
readers hold no file open between reads, and at most
:data:`~aria_tda.scores.formats.files.MAX_OPEN_FILES` at once
(:mod:`aria_tda.scores.formats.files`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from aria_tda.errors import FileFormatError
from aria_tda.scores.formats.bergson import INFO_NAME, is_bergson_bin
from aria_tda.scores.formats.folders import find_score_path, is_zarr_dir
from aria_tda.scores.formats.kronfluence import (
    AGGREGATED_NAME,
    is_partition_file,
    partition_files,
)

__all__ = ["FORMATS", "ScoreFormat", "is_partition", "resolve_scores_path", "sniff_format"]


@dataclass(frozen=True)
class ScoreFormat:
    """One file format: its suffixes and the orientation its files are stored in."""

    name: str
    suffixes: tuple[str, ...]
    #: True when the format stores queries x training (transposed on read).
    queries_first: bool = False


FORMATS: dict[str, ScoreFormat] = {
    f.name: f
    for f in (
        ScoreFormat("npy", (".npy", ".mmap")),
        ScoreFormat("npz", (".npz",)),
        ScoreFormat("torch", (".pt", ".pth")),
        ScoreFormat("safetensors", (".safetensors",), queries_first=True),
        ScoreFormat("bergson", (".bin",)),
        ScoreFormat("zarr", (".zarr",)),
    )
}


def _suffix_list() -> str:
    out = [s for f in FORMATS.values() for s in f.suffixes if f.name not in {"zarr", "bergson"}]
    return ", ".join(out) + ", bergson's scores.bin or a .zarr store"


def _file_suffixes() -> tuple[str, ...]:
    return tuple(s for f in FORMATS.values() for s in f.suffixes if f.name != "zarr")


def resolve_scores_path(path: Path) -> tuple[Path, str]:
    """What to read for ``path`` and its format: ``(target, format name)``.

    A file is its own target. A zarr store is read as zarr; a folder of Kronfluence partition
    files (without the whole ``pairwise_scores.safetensors``) is read as ``safetensors`` (its
    partitions assembled); any other folder is looked into for its one score matrix
    (:func:`aria_tda.scores.formats.folders.find_score_path`).

    Parameters
    ----------
    path : pathlib.Path
        An existing file or directory.

    Raises
    ------
    FileFormatError
        A folder holding no score matrix or several, or a file of no known format.
    """
    if path.is_dir():
        if is_zarr_dir(path):
            return path, "zarr"
        if partition_files(path) and not (path / AGGREGATED_NAME).is_file():
            return path, "safetensors"
        target = find_score_path(path, _file_suffixes())
        if target.is_dir():
            return target, "zarr" if is_zarr_dir(target) else "safetensors"
        return target, _file_format(target)
    return path, _file_format(path)


def _file_format(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix == ".bin":
        if is_bergson_bin(path):
            return "bergson"
        raise FileFormatError(
            f"{path}: a .bin file without {INFO_NAME} beside it; expected bergson's scores.bin "
            f"and its {INFO_NAME} (or another format: {_suffix_list()})"
        )
    for fmt in FORMATS.values():
        if fmt.name != "zarr" and suffix in fmt.suffixes:
            return fmt.name
    with open(path, "rb") as fh:
        head = fh.read(6)
    if head == b"\x93NUMPY":
        return "npy"
    if head[:4] == b"PK\x03\x04":
        return "npz"
    raise FileFormatError(
        f"{path}: unsupported score-matrix format {suffix or '(no suffix)'!r}; "
        f"expected {_suffix_list()}"
    )


def sniff_format(path: Path) -> str:
    """The format name of ``path`` (a key of :data:`FORMATS`).

    Parameters
    ----------
    path : pathlib.Path
        An existing file or directory (see :func:`resolve_scores_path` for folders).

    Raises
    ------
    FileFormatError
        A folder holding no score matrix or several, or a file of no known format.
    """
    return resolve_scores_path(path)[1]


def is_partition(path: Path) -> bool:
    """Whether ``path`` is Kronfluence's partition file or a folder of them (read whole).

    Parameters
    ----------
    path : pathlib.Path
        A resolved score path (:func:`resolve_scores_path`).
    """
    return path.is_dir() or is_partition_file(path)
