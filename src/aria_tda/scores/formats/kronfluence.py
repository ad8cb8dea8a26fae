r"""Kronfluence's partitioned pairwise scores: whole matrices only.

With ``ScoreArguments(data_partitions=D, module_partitions=P)`` Kronfluence 1.0.1
(``Analyzer.compute_pairwise_scores``) writes one file per partition into the scores folder
``<output_dir>/<analysis>/scores_<name>/``::

    pairwise_scores_data_partition{i}_module_partition{j}.safetensors

each a dict of ``(n_queries, n_train_i)`` tensors (queries x training, like the whole file):

- a **data partition** ``i`` covers a contiguous slice of the *training* examples (the
  training set split into ``D`` near-equal bins, ``np.array_split``), so data partitions are
  concatenated along the training axis (stored dim 1) in order ``0..D-1``;
- a **module partition** ``j`` covers a group of the model's modules, so module partitions are
  *summed* (``all_modules`` of the whole = the sum of the partitions' ``all_modules``; with
  per-module scores each module's tensor lives in one module partition);
- with ``aggregate_train_gradients=True`` the training axis is already summed, and data
  partitions are summed too.

When every partition exists Kronfluence itself aggregates them into
``pairwise_scores.safetensors`` (``Analyzer.aggregate_pairwise_scores``); an interrupted or
partly-run analysis leaves only some. The grid ``D x P`` is read from ``score_arguments.json``
in the scores folder, else from a partition file's ``__metadata__`` (Kronfluence stores its
``ScoreArguments`` there), else inferred from the files present.

ARIA never reads one partition as if it were the whole matrix: :func:`open_partitions` assembles
the whole matrix when every partition of the grid is present (streamed, nothing loaded whole)
and otherwise raises :class:`~aria_tda.errors.FileFormatError` naming the partitions present and
the ones missing.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda.errors import FileFormatError
from aria_tda.scores.formats.safetensors import (
    ALL_MODULES,
    SumSource,
    open_safetensors,
    read_safetensors_header,
    summed_note,
)
from aria_tda.scores.source import ScoreSource

__all__ = [
    "AGGREGATED_NAME",
    "ConcatColumnsSource",
    "is_partition_file",
    "open_partitions",
    "partition_files",
]

#: The aggregated file Kronfluence writes once every partition is done.
AGGREGATED_NAME = "pairwise_scores.safetensors"
#: Kronfluence's saved score arguments in the scores folder.
ARGUMENTS_NAME = "score_arguments.json"
PARTITION_RE = re.compile(
    r"^pairwise_scores_data_partition(\d+)_module_partition(\d+)\.safetensors$"
)


def is_partition_file(path: Path) -> bool:
    """Whether ``path`` is named like one of Kronfluence's pairwise-score partition files.

    Parameters
    ----------
    path : pathlib.Path
        A file path.
    """
    return PARTITION_RE.match(path.name) is not None


def partition_files(folder: Path) -> dict[tuple[int, int], Path]:
    """The partition files of ``folder``: ``(data partition, module partition) -> path``.

    Parameters
    ----------
    folder : pathlib.Path
        A Kronfluence scores folder.
    """
    out: dict[tuple[int, int], Path] = {}
    for p in folder.iterdir():
        m = PARTITION_RE.match(p.name)
        if m is not None and p.is_file():
            out[(int(m.group(1)), int(m.group(2)))] = p
    return out


def _grid(folder: Path, files: dict[tuple[int, int], Path]) -> tuple[int, int, bool, str]:
    """``(D, P, aggregate_train_gradients, where the grid was read)``."""
    args_path = folder / ARGUMENTS_NAME
    args: dict[str, Any] | None = None
    where = ""
    if args_path.is_file():
        try:
            loaded = json.loads(args_path.read_text(encoding="utf-8"))
            if isinstance(loaded, dict):
                args, where = loaded, ARGUMENTS_NAME
        except (OSError, ValueError, UnicodeDecodeError):
            args = None
    if args is None:
        for p in sorted(files.values()):
            meta = _metadata(p)
            if "data_partitions" in meta and "module_partitions" in meta:
                args, where = meta, f"the metadata of {p.name}"
                break
    if args is not None:
        try:
            d, m = int(args["data_partitions"]), int(args["module_partitions"])
            agg = str(args.get("aggregate_train_gradients", False)).lower() == "true"
            if d >= 1 and m >= 1:
                return d, m, agg, where
        except (KeyError, TypeError, ValueError):
            pass
    d = 1 + max(i for i, _ in files)
    m = 1 + max(j for _, j in files)
    return d, m, False, "the files present (no score_arguments.json or metadata)"


def _metadata(path: Path) -> dict[str, Any]:
    """The ``__metadata__`` of a safetensors file (empty when absent or unreadable)."""
    try:
        with open(path, "rb") as fh:
            n = int.from_bytes(fh.read(8), "little")
            if not 1 < n <= 100_000_000:
                return {}
            header = json.loads(fh.read(n).decode("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return {}
    meta = header.get("__metadata__") if isinstance(header, dict) else None
    return meta if isinstance(meta, dict) else {}


def _names(cells: list[tuple[int, int]]) -> str:
    shown = [f"data{i}/module{j}" for i, j in cells[:10]]
    more = f" and {len(cells) - 10} more" if len(cells) > 10 else ""
    return ", ".join(shown) + more


class ConcatColumnsSource(ScoreSource):
    """Sources of one row count side by side: the columns of ``parts[0]``, then ``parts[1]``, ...

    Parameters
    ----------
    parts : list of ScoreSource
        Matrices ``(R, C_k)``; the result is ``(R, sum C_k)``.
    """

    def __init__(self, parts: list[ScoreSource]) -> None:
        dtype = np.result_type(*[p.block_dtype for p in parts])
        super().__init__((parts[0].n_rows, sum(p.n_cols for p in parts)), dtype)
        self.parts = parts
        self.bounds = np.cumsum([0] + [p.n_cols for p in parts])

    def _raw_rows(self, start: int, stop: int) -> np.ndarray:
        out = np.empty((stop - start, self.n_cols), dtype=self.block_dtype)
        for p, c0, c1 in zip(self.parts, self.bounds[:-1], self.bounds[1:], strict=True):
            out[:, c0:c1] = p._raw_rows(start, stop)
        return out

    def _raw_columns(self, start: int, stop: int) -> np.ndarray:
        out = np.empty((self.n_rows, stop - start), dtype=self.block_dtype)
        for p, c0, c1 in zip(self.parts, self.bounds[:-1], self.bounds[1:], strict=True):
            lo, hi = max(start, int(c0)), min(stop, int(c1))
            if lo < hi:
                out[:, lo - start : hi - start] = p._raw_columns(lo - int(c0), hi - int(c0))
        return out

    def close(self) -> None:
        """Close every part."""
        for p in self.parts:
            p.close()


def _module_sum(
    cells: list[Path], key: str | None, manifest: Any, where: str
) -> tuple[ScoreSource, set[str]]:
    """One data partition: its module partitions summed (as stored, queries x training), and
    the per-module tensors summed on read (files without ``all_modules``)."""
    parts: list[ScoreSource] = []
    summed: set[str] = set()
    for p in cells:
        if key is not None and key != ALL_MODULES:
            _, header = read_safetensors_header(p)
            if key not in header:  # a per-module tensor lives in one module partition
                continue
        part = open_safetensors(p, key, manifest)
        if part.summed_keys:
            summed.update(part.summed_keys)
        elif key is None and part.key != ALL_MODULES and part.key is not None:
            summed.add(part.key)  # one module's tensor, summed with other module partitions'
        parts.append(part)
    if not parts:
        raise FileFormatError(f"{where}: no partition file holds a tensor named {key!r}")
    shapes = {p.shape for p in parts}
    if len(shapes) > 1:
        raise FileFormatError(
            f"{where}: module partitions of one data partition differ in shape {sorted(shapes)}"
        )
    if len(parts) == 1:
        return parts[0], summed
    return SumSource(parts, key=key or ALL_MODULES), summed


def open_partitions(path: Path, key: str | None, manifest: Any) -> ScoreSource:
    """The whole pairwise-score matrix of a folder of partitions (as stored: queries x training).

    Parameters
    ----------
    path : pathlib.Path
        A partition file, or the scores folder holding them.
    key : str, optional
        Tensor to read (default ``all_modules``, or the sum of the per-module tensors).
    manifest : dict, optional
        The artefact's manifest, carried by the source.

    Raises
    ------
    FileFormatError
        A partition of the grid is missing (the message lists those present and missing), or
        partitions disagree in shape.
    """
    folder = path if path.is_dir() else path.parent
    files = partition_files(folder)
    if not files:
        raise FileFormatError(f"{path}: no Kronfluence partition files in {folder}")
    n_data, n_module, summed_train, where = _grid(folder, files)
    want = [(i, j) for i in range(n_data) for j in range(n_module)]
    missing = [c for c in want if c not in files]
    extra = sorted(c for c in files if c not in set(want))
    if missing or extra:
        given = f"{path.name}: a Kronfluence partition file" if path.is_file() else str(path)
        raise FileFormatError(
            f"{given}, not a whole matrix: the {n_data} data x {n_module} module partition "
            f"grid (from {where}) lacks {_names(missing) or 'none'}"
            + (f" and has unexpected {_names(extra)}" if extra else "")
            + f"; {folder} holds {_names(sorted(files))}. Compute the missing partitions "
            "(Analyzer.compute_pairwise_scores with the same ScoreArguments), which also "
            f"writes the whole {AGGREGATED_NAME}"
        )
    rows: list[ScoreSource] = []
    summed: set[str] = set()
    for i in range(n_data):
        cells = [files[(i, j)] for j in range(n_module)]
        row, keys = _module_sum(cells, key, manifest, f"{folder} (data partition {i})")
        rows.append(row)
        summed |= keys
    n_queries = {r.n_rows for r in rows}
    if len(n_queries) > 1:
        raise FileFormatError(
            f"{folder}: data partitions differ in their number of queries {sorted(n_queries)}"
        )
    if summed_train:
        src: ScoreSource = SumSource(rows, key=key or ALL_MODULES) if len(rows) > 1 else rows[0]
        how = "data partitions summed (aggregate_train_gradients)"
    else:
        src = ConcatColumnsSource(rows) if len(rows) > 1 else rows[0]
        how = "data partitions concatenated along the training axis"
    if len(summed) < 2:  # one module's tensor is not a sum
        summed = set()
    src.summed_keys = tuple(sorted(summed)) if summed else None
    src.notes = (
        f"assembled from the {n_data * n_module} Kronfluence partition files of {folder} "
        f"({n_data} data x {n_module} module partitions: {how}, module partitions summed)",
    )
    if summed:
        src.notes += (summed_note(sorted(summed)),)
    src.path = folder
    src.key = key
    src.manifest = manifest
    return src
