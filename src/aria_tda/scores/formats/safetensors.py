r"""safetensors files — Kronfluence's ``pairwise_scores.safetensors`` — read in place.

The format (huggingface/safetensors): an 8-byte little-endian header length ``N``, ``N``
bytes of JSON mapping each tensor name to ``{"dtype", "shape", "data_offsets": [begin,
end]}`` (offsets relative to the end of the header; an optional ``"__metadata__"`` entry),
then the raw little-endian C-ordered data. ARIA parses it itself (no extra dependency) and
reads tensors with positional reads like ``.npy`` files; F16/BF16/F32/F64 and integer
tensors are accepted, BF16 converted to float32 exactly.

Kronfluence (``Analyzer.compute_pairwise_scores``) saves a dict of score matrices of shape
``(n_queries, n_train)`` — **queries x training examples**, float32 by default
(``score_dtype``):

- by default one tensor ``"all_modules"``, the scores summed over the tracked modules;
- with ``ScoreArguments(per_module_score=True)``, one tensor per module (named after the
  module) instead of the sum.

ARIA reads ``key="all_modules"`` by default; when a file has no ``all_modules`` tensor but
several 2-D tensors of one shape (per-module scores), ``all_modules`` is their sum — what
Kronfluence itself would have stored. ``key=NAME`` reads one module. A file with a single
2-D tensor needs no key. Per-token scores (3-D) are refused. A summed matrix says so: its
source's ``summed_keys`` names the tensors and ``notes`` holds a line for the output and the
manifests (:meth:`~aria_tda.scores.source.ScoreSource.provenance`).

Partitioned runs (``pairwise_scores_data_partition{i}_module_partition{j}.safetensors``) are
read whole or not at all: :mod:`aria_tda.scores.formats.kronfluence`.

Orientation: :func:`aria_tda.scores.readers.open_scores` transposes safetensors matrices on read
(``(n_queries, n_train)`` → ``(n_train, n_queries)``); ``transpose=True`` reads the tensor as
stored instead (for a safetensors file that is already training x queries).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda.errors import FileFormatError, library_message
from aria_tda.scores.formats.npy import RawFileSource
from aria_tda.scores.source import ScoreSource

__all__ = [
    "ALL_MODULES",
    "SumSource",
    "open_safetensors",
    "read_safetensors_header",
    "summed_note",
]

#: Kronfluence's key for the scores summed over modules.
ALL_MODULES = "all_modules"

#: safetensors dtype codes ARIA reads, as NumPy dtypes (``"bfloat16"``: converted to float32).
DTYPES: dict[str, Any] = {
    "F64": np.dtype("<f8"),
    "F32": np.dtype("<f4"),
    "F16": np.dtype("<f2"),
    "BF16": "bfloat16",
    "I64": np.dtype("<i8"),
    "I32": np.dtype("<i4"),
    "I16": np.dtype("<i2"),
    "I8": np.dtype("i1"),
    "U8": np.dtype("u1"),
}

#: Refuse headers larger than this (the format's own limit is 100 MB).
MAX_HEADER_BYTES = 100_000_000


def read_safetensors_header(path: Path) -> tuple[int, dict[str, Any]]:
    """Parse the header of a safetensors file.

    Parameters
    ----------
    path : pathlib.Path
        The file.

    Returns
    -------
    data_start : int
        Byte offset where the tensor data begins.
    tensors : dict
        ``name -> {"dtype", "shape", "data_offsets"}`` (``__metadata__`` removed).
    """
    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
            if len(head) != 8:
                raise ValueError("shorter than the 8-byte header length")
            n = int.from_bytes(head, "little")
            if n <= 1 or n > MAX_HEADER_BYTES:
                raise ValueError(f"implausible header length {n}")
            raw = fh.read(n)
            if len(raw) != n:
                raise ValueError(f"header cut short ({len(raw)} of {n} bytes)")
        header = json.loads(raw.decode("utf-8"))
        if not isinstance(header, dict):
            raise ValueError("the header is not a JSON object")
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise FileFormatError(
            f"{path}: not a readable safetensors file ({library_message(exc)})"
        ) from None
    header.pop("__metadata__", None)
    for name, info in header.items():
        ok = (
            isinstance(info, dict)
            and isinstance(info.get("shape"), list)
            and isinstance(info.get("data_offsets"), list)
            and len(info["data_offsets"]) == 2
        )
        if not ok:
            raise FileFormatError(f"{path}: malformed safetensors entry for tensor {name!r}")
    return 8 + n, header


def _tensor_source(
    path: Path, data_start: int, name: str, info: dict[str, Any], manifest: Any
) -> RawFileSource:
    code = str(info.get("dtype"))
    if code not in DTYPES:
        raise FileFormatError(
            f"{path}[{name!r}]: unsupported safetensors dtype {code!r}; "
            f"expected one of {sorted(DTYPES)}"
        )
    dtype = DTYPES[code]
    shape = tuple(int(s) for s in info["shape"])
    begin, end = (int(x) for x in info["data_offsets"])
    itemsize = 2 if dtype == "bfloat16" else np.dtype(dtype).itemsize
    if end - begin != int(np.prod(shape)) * itemsize:
        raise FileFormatError(
            f"{path}[{name!r}]: data_offsets span {end - begin} bytes, shape {shape} {code} "
            f"needs {int(np.prod(shape)) * itemsize}"
        )
    return RawFileSource(path, data_start + begin, shape, dtype, key=name, manifest=manifest)


class SumSource(ScoreSource):
    """The element-wise sum of sources of one shape (Kronfluence's per-module scores).

    Parameters
    ----------
    parts : sequence of ScoreSource
        Matrices of one shape; summed and handed out in float64 (the sum of float32 parts is
        not a float32 matrix: rounding it would move the diagnostics at float64 precision).
    key : str
        Name of the sum (for messages and re-opening).
    """

    def __init__(self, parts: list[ScoreSource], *, key: str) -> None:
        super().__init__(parts[0].shape, np.dtype(np.float64), manifest=parts[0].manifest)
        self.parts = parts
        self.path = parts[0].path
        self.key = key

    def _raw_rows(self, start: int, stop: int) -> np.ndarray:
        out = np.zeros((stop - start, self.n_cols))
        for p in self.parts:
            out += p._raw_rows(start, stop)
        return out

    def _raw_columns(self, start: int, stop: int) -> np.ndarray:
        out = np.zeros((self.n_rows, stop - start))
        for p in self.parts:
            out += p._raw_columns(start, stop)
        return out

    def close(self) -> None:
        """Close every part."""
        for p in self.parts:
            p.close()


def summed_note(keys: list[str]) -> str:
    """The line that says a matrix is the sum of Kronfluence's per-module tensors ``keys``.

    Parameters
    ----------
    keys : list of str
        The tensors summed.
    """
    shown = ", ".join(keys[:10]) + (f" and {len(keys) - 10} more" if len(keys) > 10 else "")
    return (
        f"no '{ALL_MODULES}' tensor: the scores are the sum of the {len(keys)} per-module "
        f"tensors {shown} (Kronfluence per-module scores; --key NAME reads one module)"
    )


def open_safetensors(path: Path, key: str | None, manifest: Any) -> ScoreSource:
    """Open a score matrix of a safetensors file, as stored (queries x training for Kronfluence).

    Parameters
    ----------
    path : pathlib.Path
        The file.
    key : str, optional
        Tensor to read; default ``"all_modules"`` (see the module docstring), else the only
        2-D tensor.
    manifest : dict, optional
        The artefact's manifest, carried by the source.
    """
    data_start, header = read_safetensors_header(path)
    size = os.stat(path).st_size
    for name, info in header.items():
        if data_start + int(info["data_offsets"][1]) > size:
            raise FileFormatError(
                f"{path}[{name!r}]: truncated: the header places the tensor's end at byte "
                f"{data_start + int(info['data_offsets'][1])}, the file has {size}"
            )
    two_d = sorted(n for n, info in header.items() if len(info["shape"]) == 2)
    if key is None:
        if ALL_MODULES in header or len(two_d) != 1:
            key = ALL_MODULES
        else:
            key = two_d[0]
    if key in header:
        return _tensor_source(path, data_start, key, header[key], manifest)
    if key == ALL_MODULES and len(two_d) > 1:
        shapes = {tuple(header[n]["shape"]) for n in two_d}
        if len(shapes) == 1:  # Kronfluence per_module_score=True: all_modules is the sum
            parts: list[ScoreSource] = [
                _tensor_source(path, data_start, n, header[n], manifest) for n in two_d
            ]
            out = SumSource(parts, key=ALL_MODULES)
            out.summed_keys = tuple(two_d)
            out.notes = (summed_note(two_d),)
            return out
        raise FileFormatError(
            f"{path}: 2-D tensors {two_d} differ in shape ({sorted(shapes)}); pass key= (--key)"
        )
    raise FileFormatError(
        f"{path}: no tensor named {key!r}; it holds {sorted(header)}"
        + ("" if two_d else " (none of them 2-D)")
    )
