"""The score-matrix file formats ARIA reads, one module each, and how a file's format is told.

===============  ===============================  =====================  ====================
format           files                            written by             stored orientation
===============  ===============================  =====================  ====================
``npy``          ``.npy``, ``.mmap`` (TRAK)       NumPy, TRAK, ARIA      training x queries
``npz``          ``.npz`` (stored or compressed)  NumPy                  training x queries
``torch``        ``.pt``, ``.pth``                dattri, captum, LogIX  training x queries [1]
``safetensors``  ``.safetensors``                 Kronfluence            queries x training
``zarr``         ``.zarr`` directory (v2/v3)      ARIA, zarr             training x queries
===============  ===============================  =====================  ====================

[1] dattri's scores are training x test; captum's ``TracInCP`` and LogIX return test x
training: read those with ``transpose=True`` (``--transpose``).

Formats not told by the suffix are sniffed from the first bytes (``.npy`` magic, zip magic).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from aria_tda.errors import FileFormatError

__all__ = ["FORMATS", "ScoreFormat", "sniff_format"]


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
        ScoreFormat("zarr", (".zarr",)),
    )
}


def _suffix_list() -> str:
    out = [s for f in FORMATS.values() for s in f.suffixes if f.name != "zarr"]
    return ", ".join(out) + " or a .zarr store"


def sniff_format(path: Path) -> str:
    """The format name of ``path`` (a key of :data:`FORMATS`).

    Parameters
    ----------
    path : pathlib.Path
        An existing file or directory.

    Raises
    ------
    FileFormatError
        A directory that is not a zarr store, or a file of no known format.
    """
    suffix = path.suffix.lower()
    if path.is_dir():
        if suffix == ".zarr" or (path / "zarr.json").is_file() or (path / ".zarray").is_file():
            return "zarr"
        if (path / ".zgroup").is_file():
            return "zarr"
        raise FileFormatError(f"{path}: a directory that is not a zarr store (no zarr.json)")
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
