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
the ones missing. The grid's sizes are checked as header fields (integers >= 1 in
``score_arguments.json``, integers written as text in the metadata) and against the files
present in time bounded by the files, never by the grid; two files of one partition, a
partition that is a link to or a byte copy of another, a module's tensor in two module
partitions, and data partitions whose sizes are not Kronfluence's near-equal split are refused.
Thousands of partition files are read one at a time (no file is held open between reads).
"""

from __future__ import annotations

import filecmp
import hashlib
import itertools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda.errors import FileFormatError
from aria_tda.scores.formats.files import open_for_read
from aria_tda.scores.formats.header import (
    header_error,
    header_int,
    json_object,
    read_json_header,
)
from aria_tda.scores.formats.safetensors import (
    ALL_MODULES,
    SafetensorsHeader,
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
#: The most digits a partition index of a file name may have.
MAX_INDEX_DIGITS = 9
#: The largest ``score_arguments.json`` read (Kronfluence's is under 1 kB).
MAX_ARGUMENTS_BYTES = 2**20
#: Bytes of each end of a partition file compared to find copies (equal ones are then compared
#: whole).
SAMPLE_BYTES = 2**16


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

    Raises
    ------
    FileFormatError
        Two files name the same partition (``partition1`` and ``partition01``), or an index
        runs over :data:`MAX_INDEX_DIGITS` digits.
    """
    out: dict[tuple[int, int], Path] = {}
    for p in folder.iterdir():
        m = PARTITION_RE.match(p.name)
        if m is None or not p.is_file():
            continue
        if max(len(m.group(1)), len(m.group(2))) > MAX_INDEX_DIGITS:
            raise header_error(folder / p.name, "partition index", p.name,
                               f"indices of at most {MAX_INDEX_DIGITS} digits")
        cell = (int(m.group(1)), int(m.group(2)))
        if cell in out:
            a, b = sorted((out[cell].name, p.name))
            raise FileFormatError(
                f"{folder}: {a} and {b} are both data partition {cell[0]}, module partition "
                f"{cell[1]}: expected one file per partition; remove the one that is not "
                "Kronfluence's"
            )
        out[cell] = p
    return out


def _count(where: str, field: str, value: Any, *, text: bool) -> int:
    """A partition count (>= 1): an int in JSON, digits in safetensors metadata (strings)."""
    if text:
        if not isinstance(value, str) or re.fullmatch(r"[0-9]{1,18}", value) is None:
            raise header_error(where, field, value, "a positive integer written as text")
        value = int(value)
    return header_int(where, field, value, min_value=1)


def _flag(where: str, field: str, value: Any, *, text: bool) -> bool:
    """``aggregate_train_gradients``: a JSON bool, or ``"True"``/``"False"`` in metadata."""
    if value is None:
        return False
    if text and isinstance(value, str) and value in {"True", "False"}:
        return bool(value == "True")
    if not text and isinstance(value, bool):
        return value
    raise header_error(where, field, value, '"True" or "False"' if text else "true or false")


def _grid(
    folder: Path, files: dict[tuple[int, int], Path]
) -> tuple[int, int, bool, str]:
    """``(D, P, aggregate_train_gradients, where the grid was read)``, its fields checked."""
    args_path = folder / ARGUMENTS_NAME
    found: tuple[dict[str, Any], str, str, bool] | None = None
    if args_path.is_file():
        loaded = read_json_header(args_path, str(args_path), max_bytes=MAX_ARGUMENTS_BYTES,
                                  what="Kronfluence score_arguments.json")
        loaded = json_object(loaded, str(args_path), "Kronfluence's score arguments")
        if "data_partitions" in loaded or "module_partitions" in loaded:
            found = (loaded, str(args_path), ARGUMENTS_NAME, False)
    if found is None:
        for p in sorted(files.values()):
            meta = read_safetensors_header(p).metadata
            if "data_partitions" in meta and "module_partitions" in meta:
                found = (meta, f"{p}[__metadata__]", f"the metadata of {p.name}", True)
                break
    if found is None:
        d = 1 + max(i for i, _ in files)
        m = 1 + max(j for _, j in files)
        return d, m, False, "the files present (no score_arguments.json or metadata)"
    args, at, where, text = found
    d = _count(at, "data_partitions", args.get("data_partitions"), text=text)
    m = _count(at, "module_partitions", args.get("module_partitions"), text=text)
    agg = _flag(at, "aggregate_train_gradients", args.get("aggregate_train_gradients"),
                text=text)
    return d, m, agg, where


def _names(cells: list[tuple[int, int]], total: int | None = None) -> str:
    total = len(cells) if total is None else total
    shown = [f"data{i}/module{j}" for i, j in cells[:10]]
    more = f" and {total - len(shown)} more" if total > len(shown) else ""
    return ", ".join(shown) + more


def _missing(n_data: int, n_module: int, files: dict[tuple[int, int], Path]) -> Iterator[
        tuple[int, int]]:
    """The cells of the grid without a file, in order (lazily: the grid may be huge)."""
    for i in range(n_data):
        for j in range(n_module):
            if (i, j) not in files:
                yield (i, j)


def _check_grid(
    path: Path, folder: Path, files: dict[tuple[int, int], Path], n_data: int, n_module: int,
    where: str,
) -> None:
    """Refuse a grid the files do not fill exactly, in time bounded by the files present."""
    inside = sum(1 for i, j in files if i < n_data and j < n_module)
    n_missing = n_data * n_module - inside
    extra = sorted(c for c in files if c[0] >= n_data or c[1] >= n_module)
    if not n_missing and not extra:
        return
    # at most `inside` cells are present, so the first 10 missing ones come within inside + 10
    first = list(itertools.islice(_missing(n_data, n_module, files), 10))
    given = f"{path.name}: a Kronfluence partition file" if path.is_file() else str(path)
    raise FileFormatError(
        f"{given}, not a whole matrix: the {n_data} data x {n_module} module partition grid "
        f"(data_partitions = {n_data}, module_partitions = {n_module} from {where}) lacks "
        f"{_names(first, n_missing) or 'none'}"
        + (f" and has unexpected {_names(extra)}" if extra else "")
        + f"; {folder} holds {len(files)}: {_names(sorted(files))}. Compute the missing "
        "partitions (Analyzer.compute_pairwise_scores with the same ScoreArguments), which "
        f"also writes the whole {AGGREGATED_NAME}"
    )


def _sample(path: Path) -> tuple[int, str]:
    """The file's size and a digest of its first and last :data:`SAMPLE_BYTES`."""
    with open_for_read(path, str(path)) as (fh, identity):
        size = identity[2]
        digest = hashlib.sha256(fh.read(SAMPLE_BYTES))
        if size > SAMPLE_BYTES:
            fh.seek(max(SAMPLE_BYTES, size - SAMPLE_BYTES))
            digest.update(fh.read(SAMPLE_BYTES))
    return size, digest.hexdigest()


def _refuse_copies(folder: Path, files: dict[tuple[int, int], Path]) -> None:
    """Refuse two partitions that are one file (a link) or byte-identical (a copy)."""
    inodes: dict[tuple[int, int], tuple[int, int]] = {}
    samples: dict[tuple[int, str], list[tuple[int, int]]] = {}
    for cell, p in sorted(files.items()):
        st = p.stat()
        same = inodes.setdefault((st.st_dev, st.st_ino), cell)
        twin = same if same != cell else None
        if twin is None:
            bucket = samples.setdefault(_sample(p), [])
            twin = next((c for c in bucket if filecmp.cmp(files[c], p, shallow=False)), None)
            bucket.append(cell)
        if twin is not None:
            raise FileFormatError(
                f"{folder}: {p.name} holds the same bytes as {files[twin].name} (data partition "
                f"{cell[0]}, module partition {cell[1]} a copy of data partition {twin[0]}, "
                f"module partition {twin[1]}): expected each partition's own scores; compute "
                "it again (Analyzer.compute_pairwise_scores)"
            )


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
) -> tuple[ScoreSource, list[set[str]]]:
    """One data partition: its module partitions summed (as stored, queries x training), and
    the tensors each module partition contributes (per-module tensors summed on read)."""
    parts: list[ScoreSource] = []
    keys: list[set[str]] = []
    for p in cells:
        header: SafetensorsHeader = read_safetensors_header(p)
        if key is not None and key != ALL_MODULES and key not in header.tensors:
            keys.append(set())  # a per-module tensor lives in one module partition
            continue
        part = open_safetensors(p, key, manifest, header=header)
        if part.summed_keys:
            keys.append(set(part.summed_keys))
        elif key is None and part.key != ALL_MODULES and part.key is not None:
            keys.append({part.key})  # one module's tensor, summed with other module partitions'
        else:
            keys.append(set())
        parts.append(part)
    if not parts:
        raise FileFormatError(f"{where}: no partition file holds a tensor named {key!r}")
    for (j1, a), (j2, b) in itertools.combinations(enumerate(keys), 2):
        both = sorted(a & b)
        if both:
            raise FileFormatError(
                f"{where}: tensor {both[0]!r} is in module partitions {j1} and {j2}: expected "
                "each module's scores in one module partition (Kronfluence splits the modules "
                "between them); one of the files is not of this run"
            )
    shapes = {p.shape for p in parts}
    if len(shapes) > 1:
        raise FileFormatError(
            f"{where}: module partitions of one data partition differ in shape {sorted(shapes)}"
        )
    if len(parts) == 1:
        return parts[0], keys
    return SumSource(parts, key=key or ALL_MODULES), keys


def _check_split(folder: Path, sizes: list[int]) -> None:
    """Data partitions hold Kronfluence's near-equal bins of the training examples, in order."""
    total, n = sum(sizes), len(sizes)
    want = [total // n + (1 if i < total % n else 0) for i in range(n)]
    if sizes != want:
        bad = next(i for i in range(n) if sizes[i] != want[i])
        shown = f"{sizes[:10]}"[:-1] + (", ...]" if n > 10 else "]")
        fit = f"{want[:10]}"[:-1] + (", ...]" if n > 10 else "]")
        raise FileFormatError(
            f"{folder}: data partitions hold {shown} training examples: expected {fit}, "
            f"Kronfluence's split of their {total} examples into {n} near-equal bins "
            f"(np.array_split); data partition {bad} or another is not of this run"
        )


def open_partitions(path: Path, key: str | None, manifest: Any) -> ScoreSource:
    """The whole pairwise-score matrix of a folder of partitions (as stored: queries x training).

    Every header is checked before any data is read (:mod:`aria_tda.scores.formats.header`):
    the grid's sizes (``score_arguments.json``, else a file's metadata) against the files
    present, one file per partition, no partition a link to or a copy of another, each module's
    tensor in one module partition, data partitions of Kronfluence's near-equal sizes. Files
    are read one tensor at a time (no file is held open between reads).

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
        duplicated, or partitions disagree in shape or split.
    """
    folder = path if path.is_dir() else path.parent
    files = partition_files(folder)
    if not files:
        raise FileFormatError(f"{path}: no Kronfluence partition files in {folder}")
    n_data, n_module, summed_train, where = _grid(folder, files)
    _check_grid(path, folder, files, n_data, n_module, where)
    _refuse_copies(folder, files)
    rows: list[ScoreSource] = []
    summed: set[str] = set()
    first_keys: list[set[str]] | None = None
    for i in range(n_data):
        cells = [files[(i, j)] for j in range(n_module)]
        row, keys = _module_sum(cells, key, manifest, f"{folder} (data partition {i})")
        if first_keys is None:
            first_keys = keys
        elif keys != first_keys:
            j = next(j for j in range(n_module) if keys[j] != first_keys[j])
            raise FileFormatError(
                f"{folder}: module partition {j} holds tensors {sorted(keys[j])[:5]} in data "
                f"partition {i} but {sorted(first_keys[j])[:5]} in data partition 0: expected "
                "the same modules in every data partition"
            )
        rows.append(row)
        summed = summed.union(*keys)
    n_queries = {r.n_rows for r in rows}
    if len(n_queries) > 1:
        raise FileFormatError(
            f"{folder}: data partitions differ in their number of queries {sorted(n_queries)}"
        )
    if summed_train:
        sizes = {r.n_cols for r in rows}
        if len(sizes) > 1:
            raise FileFormatError(
                f"{folder}: data partitions summed over training examples "
                f"(aggregate_train_gradients) differ in shape {sorted(sizes)}"
            )
        src: ScoreSource = SumSource(rows, key=key or ALL_MODULES) if len(rows) > 1 else rows[0]
        how = "data partitions summed (aggregate_train_gradients)"
    else:
        _check_split(folder, [r.n_cols for r in rows])
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
