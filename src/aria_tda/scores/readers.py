r"""Opening score matrices: :func:`open_scores` (files) and :func:`as_source` (anything).

Conventions
-----------
ARIA reads ``S`` as ``(M, T)`` = ``(n_train_segments, n_queries)`` (dattri / TRAK
orientation). Every format and the orientation its files are stored in are listed in
:mod:`aria_tda.scores.formats`; formats stored queries x training (Kronfluence's safetensors) are
transposed on read, and ``transpose=True`` flips whatever a format assumes — for captum's
``TracInCP`` and LogIX outputs (test x training) saved as ``.pt``.

The interface every source implements is :mod:`aria_tda.scores.source`; the formats live in
:mod:`aria_tda.scores.formats`. This module keeps their public names importable from here.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda.errors import DataError, FileFormatError, ParameterError, expected
from aria_tda.scores.formats import FORMATS, is_partition, resolve_scores_path
from aria_tda.scores.formats.bergson import BergsonSource
from aria_tda.scores.formats.kronfluence import open_partitions
from aria_tda.scores.formats.npy import (
    NpySource,
    RawFileSource,
    check_trak_finalized,
    read_small_npy,
)
from aria_tda.scores.formats.npz import ROW_IDS_KEY, open_npz
from aria_tda.scores.formats.safetensors import open_safetensors
from aria_tda.scores.formats.torch import TorchSource, load_torch
from aria_tda.scores.formats.zarr import ZarrSource, open_zarr
from aria_tda.scores.source import (  # noqa: F401 - private helpers kept importable from here
    TARGET_BLOCK_BYTES,
    ArraySource,
    ScoreSource,
    TransposedSource,
    as_row_ids,
    block_dtype_for,
    check_matrix_shape,
    check_orientation,
    default_chunk_rows,
    expected_text,
    resolve_chunk_rows,
    transpose_source,
)

__all__ = [
    "ROW_IDS_KEY",
    "ROW_IDS_SUFFIX",
    "ArraySource",
    "BergsonSource",
    "NpySource",
    "RawFileSource",
    "ScoreSource",
    "TorchSource",
    "TransposedSource",
    "ZarrSource",
    "as_source",
    "block_dtype_for",
    "check_matrix_shape",
    "check_orientation",
    "default_chunk_rows",
    "expected_text",
    "open_scores",
    "transpose_source",
]

ROW_IDS_SUFFIX = ".row_ids.npy"


def _sidecar_row_ids(path: Path, n_rows: int) -> np.ndarray | None:
    """The ``.row_ids.npy`` beside ``path``: ``n_rows`` ids, its header checked before reading."""
    side = path.with_name(path.name + ROW_IDS_SUFFIX)
    if not side.is_file():
        return None
    return read_small_npy(side, str(side), n=n_rows, kinds="USiu", what="row ids")


def _check_transpose(transpose: Any) -> bool:
    if not isinstance(transpose, bool | np.bool_):
        raise ParameterError(expected("transpose", "True or False", transpose))
    return bool(transpose)


def open_scores(
    path: str | os.PathLike[str], *, key: str | None = None, transpose: bool = False
) -> ScoreSource:
    """Open a score matrix stored on disk without loading it.

    Parameters
    ----------
    path : str or path-like
        ``.npy`` (and TRAK's ``.mmap``, an ``.npy`` file), ``.npz`` (uncompressed members
        read in place, compressed ones decompressed as a stream), torch ``.pt``/``.pth`` (a
        tensor, or a dict holding one; memory-mapped), ``.safetensors`` (Kronfluence; a
        partition file or a folder of them is read whole or refused), bergson's
        ``scores.bin`` (with ``info.json`` beside it), or a zarr store (an array, or a group
        holding ``scores`` and optionally ``row_ids``). Any other folder is looked into for
        the one score matrix a tool wrote there (a TRAK save folder, a Kronfluence analysis
        folder, a bergson run). See :mod:`aria_tda.scores.formats` for each format's stored
        orientation.
    key : str, optional
        Which array of an ``.npz``, torch dict, safetensors file or zarr group to read;
        default: the only one (``scores`` in a zarr group, ``all_modules`` in a safetensors
        file — or the sum of the per-module tensors, named in the source's ``summed_keys``
        and ``notes``).
    transpose : bool
        The file is stored the other way round from what its format assumes (e.g. a ``.pt``
        of captum's TracInCP or LogIX, test x training): read its transpose.

    Returns
    -------
    ScoreSource
        ``(M, T)`` = training segments x queries.

    Raises
    ------
    FileFormatError
        missing path, unknown format, truncated or unreadable file, missing zarr chunks,
        a Kronfluence partition without the rest of its grid, a folder holding no score
        matrix or several, ambiguous or unknown key.
    DataError
        the array is not a non-empty 2-D real matrix; a bergson store with cells never
        written (an interrupted run); a TRAK experiment never finalized.
    """
    from aria_tda._paths import input_path
    from aria_tda.manifest import read_manifest

    if key is not None and not isinstance(key, str):
        raise ParameterError(expected("key", "a string", key))
    transpose = _check_transpose(transpose)
    given = input_path(path, "scores")  # a FIFO or a device is refused before any open()
    p, fmt = resolve_scores_path(given)
    if p != given:
        input_path(p, "scores")  # what was found inside a folder, looked at the same way
    manifest = read_manifest(p)
    src: ScoreSource
    if fmt in {"npy", "bergson"} and key is not None:
        raise FileFormatError(f"{p}: a {fmt} file holds one matrix; drop key={key!r}")
    if fmt == "npy":
        check_trak_finalized(p)
        src = NpySource(p, manifest=manifest)
        ids = _sidecar_row_ids(p, src.n_rows)
        if ids is not None:
            src.row_ids = as_row_ids(ids, src.n_rows)
    elif fmt == "npz":
        src = open_npz(p, key, manifest)
    elif fmt == "torch":
        src = load_torch(p, key, manifest)
    elif fmt == "safetensors" and is_partition(p):
        src = open_partitions(p, key, manifest)
    elif fmt == "safetensors":
        src = open_safetensors(p, key, manifest)
    elif fmt == "bergson":
        src = BergsonSource(p, manifest=manifest)
    else:
        src = open_zarr(p, key, manifest)
    src.format = fmt
    src.transpose_requested = transpose
    if manifest is not None and "shape" in manifest and list(manifest["shape"]) != list(src.shape):
        src.close()
        raise FileFormatError(
            f"{p}: the manifest says shape {tuple(manifest['shape'])}, the data has {src.shape}"
        )
    if transpose != FORMATS[fmt].queries_first:
        src = transpose_source(src)
    return src


def as_source(
    obj: Any, *, key: str | None = None, row_ids: Any = None, transpose: bool = False
) -> ScoreSource:
    """Wrap ``obj`` as a :class:`ScoreSource`.

    Parameters
    ----------
    obj : ScoreSource, numpy.ndarray, torch.Tensor, zarr.Array, str or path-like
        A source is returned as is; arrays and tensors are wrapped without copying; paths
        are opened with :func:`open_scores`.
    key : str, optional
        Passed to :func:`open_scores` for paths.
    row_ids : array-like of str, optional
        Row ids for in-memory matrices (rows after any transposition).
    transpose : bool
        ``obj`` is queries x training segments: wrap its transpose (for paths: as
        :func:`open_scores`).

    Raises
    ------
    ParameterError
        an object that is not a matrix.
    DataError
        a sparse matrix or tensor, or a shape that is not a non-empty 2-D matrix.
    """
    transpose = _check_transpose(transpose)
    if isinstance(obj, ScoreSource):
        return transpose_source(obj) if transpose else obj
    if isinstance(obj, str | os.PathLike):
        return open_scores(obj, key=key, transpose=transpose)
    mod = type(obj).__module__
    src: ScoreSource
    if mod.startswith("torch"):
        src = TorchSource(obj)
    elif mod.startswith("scipy.sparse") or hasattr(obj, "tocsr"):
        raise DataError(
            expected_text(
                "scores", "a dense matrix (call .toarray() first)", f"a {type(obj).__name__}"
            )
        )
    elif mod.startswith("zarr"):
        src = ZarrSource(obj)
    elif isinstance(obj, np.ndarray | list | tuple) or hasattr(obj, "__array__"):
        src = ArraySource(obj)
    else:
        raise ParameterError(
            expected(
                "scores", "an array, a torch tensor, a ScoreSource or a path", type(obj).__name__
            )
        )
    src.transpose_requested = transpose
    if transpose:
        src = transpose_source(src)
    if row_ids is not None:
        src.row_ids = as_row_ids(row_ids, src.n_rows)
    return src
