r"""safetensors files — Kronfluence's ``pairwise_scores.safetensors`` — read in place.

The format (huggingface/safetensors): an 8-byte little-endian header length ``N``, ``N``
bytes of JSON mapping each tensor name to ``{"dtype", "shape", "data_offsets": [begin,
end]}`` (offsets relative to the end of the header; an optional ``"__metadata__"`` entry),
then the raw little-endian C-ordered data. ARIA parses it itself (no extra dependency) and
reads tensors with positional reads like ``.npy`` files; F16/BF16/F32/F64 and integer
tensors are accepted, BF16 converted to float32 exactly.

The header is checked whole against the file before any tensor is read
(:func:`read_safetensors_header`), by the rules the ``safetensors`` library applies to the
files it writes: the header length fits the file; each tensor is named once, with a known dtype
code, a shape of non-negative integers and ``data_offsets`` whose span is shape x itemsize; the
tensors lie end to end from the first data byte to the file's end (no overlap, no gap, nothing
after). A file of many tensors (Kronfluence's per-module scores) is summed one tensor at a time;
no file is held open between reads (:mod:`aria_tda.scores.formats.files`).

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

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda.errors import FileFormatError
from aria_tda.scores.formats.files import open_for_read
from aria_tda.scores.formats.header import (
    header_dims,
    header_error,
    json_object,
    read_json_header,
)
from aria_tda.scores.formats.npy import RawFileSource
from aria_tda.scores.source import ScoreSource

__all__ = [
    "ALL_MODULES",
    "SafetensorsHeader",
    "SumSource",
    "TensorEntry",
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
    "U64": np.dtype("<u8"),
    "U32": np.dtype("<u4"),
    "U16": np.dtype("<u2"),
    "U8": np.dtype("u1"),
}

#: Bits per element of every safetensors dtype code (to check a tensor's byte span, whether
#: ARIA reads that dtype or not).
DTYPE_BITS: dict[str, int] = {
    "BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8, "I16": 16,
    "U16": 16, "F16": 16, "BF16": 16, "I32": 32, "U32": 32, "F32": 32, "I64": 64, "U64": 64,
    "F64": 64, "C64": 64, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6,
}

#: Refuse headers larger than this (the format's own limit is 100 MB).
MAX_HEADER_BYTES = 100_000_000


@dataclass(frozen=True)
class TensorEntry:
    """One tensor of a safetensors header, checked against the file.

    Attributes
    ----------
    dtype : str
        The safetensors dtype code (a key of :data:`DTYPE_BITS`).
    shape : tuple of int
        Non-negative dimensions.
    begin, end : int
        Its bytes, relative to the start of the data (after the header).
    """

    dtype: str
    shape: tuple[int, ...]
    begin: int
    end: int


@dataclass(frozen=True)
class SafetensorsHeader:
    """The checked header of a safetensors file.

    Attributes
    ----------
    path : pathlib.Path
        The file.
    data_start : int
        Byte offset where the tensor data begins (8 + the header's length).
    size : int
        The file's size (bytes) when the header was checked.
    tensors : dict
        Name -> :class:`TensorEntry`, in the header's order.
    metadata : dict
        The ``__metadata__`` entry (strings to strings), empty when absent.
    """

    path: Path
    data_start: int
    size: int
    tensors: dict[str, TensorEntry]
    metadata: dict[str, str]


def _entry(where: str, name: str, info: Any, data_bytes: int) -> TensorEntry:
    """One tensor's entry, its fields checked (the layout as a whole is checked by the caller)."""
    at = f"{where}[{name!r}]"
    if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
        keys = sorted(info) if isinstance(info, dict) else info
        raise header_error(at, "entry", keys,
                           "an object with exactly dtype, shape and data_offsets")
    code = info["dtype"]
    if not isinstance(code, str) or code not in DTYPE_BITS:
        raise header_error(at, "dtype", code, f"a safetensors dtype code ({', '.join(DTYPE_BITS)})")
    shape = header_dims(at, "shape", info["shape"])
    begin, end = header_dims(at, "data_offsets", info["data_offsets"], ndim=2)
    if begin > end:
        raise header_error(at, "data_offsets", [begin, end], "begin <= end")
    if end > data_bytes:
        raise FileFormatError(
            f"{at}: truncated: data_offsets = {[begin, end]}: the tensor ends at byte {end} of "
            f"the data, the file holds {data_bytes} bytes of data"
        )
    bits = math.prod(shape) * DTYPE_BITS[code]
    if (end - begin) * 8 != bits:
        raise header_error(
            at, "data_offsets", [begin, end],
            f"a span of shape x itemsize, {bits / 8:g} bytes of {code} for shape {list(shape)}",
            f"{end - begin} bytes between them",
        )
    return TensorEntry(code, shape, begin, end)


def read_safetensors_header(path: Path) -> SafetensorsHeader:
    """Parse the header of a safetensors file and check it against the file.

    What holds in a file the ``safetensors`` library writes, and is checked here: the header
    length fits the file; the JSON is an object naming each tensor once, with a known dtype
    code, a shape of non-negative integers and ``data_offsets`` ``[begin, end]`` whose span is
    shape x itemsize; the tensors lie end to end from the first data byte to the last (no
    overlap, no gap, nothing after); ``__metadata__`` maps strings to strings.

    Parameters
    ----------
    path : pathlib.Path
        The file.

    Returns
    -------
    SafetensorsHeader
        The checked header.

    Raises
    ------
    FileFormatError
        One line naming the field, its value and what the file holds.
    """
    where = str(path)
    bad = f"{where}: not a readable safetensors file"
    with open_for_read(path, where) as (fh, identity):
        size = identity[2]
        head = fh.read(8)
        if len(head) != 8:
            raise FileFormatError(f"{bad} (shorter than the 8-byte header length)")
        n = int.from_bytes(head, "little")
        limit = min(MAX_HEADER_BYTES, size - 8)
        if limit < 2:
            raise FileFormatError(f"{bad} ({size} bytes: no room for a header)")
        if not 2 <= n <= limit:
            raise header_error(bad, "header length", n, f"2 to {limit} bytes",
                               f"{size} bytes in all")
        raw = fh.read(n)
    if len(raw) != n:
        raise FileFormatError(f"{bad} (header cut short: {len(raw)} of {n} bytes)")
    header = read_json_header(path, where, raw=raw, what="safetensors file")
    header = json_object(header, bad, "a header mapping tensor names to their entries")
    metadata = header.pop("__metadata__", None)
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict) or not all(
        isinstance(v, str) for v in metadata.values()
    ):
        raise header_error(where, "__metadata__", metadata, "an object of strings")
    data_bytes = size - 8 - n
    tensors = {name: _entry(where, name, info, data_bytes) for name, info in header.items()}
    at, last = 0, None
    for name, t in sorted(tensors.items(), key=lambda kv: (kv[1].begin, kv[1].end)):
        if t.begin != at:
            what = "overlapping it" if t.begin < at else "leaving bytes no tensor claims"
            raise header_error(
                f"{where}[{name!r}]", "data_offsets", [t.begin, t.end],
                f"to begin where the tensor before it ends (byte {at}), not {what}",
            )
        at, last = t.end, name
    if at != data_bytes:
        extra = f"{data_bytes} bytes of data, {data_bytes - at} after the last tensor"
        if last is None:
            raise header_error(where, "tensors", [], "no data after a header of no tensor",
                               extra)
        end = tensors[last]
        raise header_error(f"{where}[{last!r}]", "data_offsets", [end.begin, end.end],
                           "the last tensor to end where the file ends", extra)
    return SafetensorsHeader(path, 8 + n, size, tensors, metadata)


def _tensor_source(header: SafetensorsHeader, name: str, manifest: Any) -> RawFileSource:
    t = header.tensors[name]
    if t.dtype not in DTYPES:
        raise FileFormatError(
            f"{header.path}[{name!r}]: unsupported safetensors dtype {t.dtype!r}; "
            f"expected one of {sorted(DTYPES)}"
        )
    return RawFileSource(header.path, header.data_start + t.begin, t.shape, DTYPES[t.dtype],
                         key=name, manifest=manifest, data_end=header.data_start + t.end)


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


def open_safetensors(
    path: Path, key: str | None, manifest: Any, *, header: SafetensorsHeader | None = None
) -> ScoreSource:
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
    header : SafetensorsHeader, optional
        The file's header, when already read with :func:`read_safetensors_header`.
    """
    if header is None:
        header = read_safetensors_header(path)
    tensors = header.tensors
    two_d = sorted(n for n, t in tensors.items() if len(t.shape) == 2)
    if key is None:
        if ALL_MODULES in tensors or len(two_d) != 1:
            key = ALL_MODULES
        else:
            key = two_d[0]
    if key in tensors:
        return _tensor_source(header, key, manifest)
    if key == ALL_MODULES and len(two_d) > 1:
        shapes = {tensors[n].shape for n in two_d}
        if len(shapes) == 1:  # Kronfluence per_module_score=True: all_modules is the sum
            parts: list[ScoreSource] = [_tensor_source(header, n, manifest) for n in two_d]
            out = SumSource(parts, key=ALL_MODULES)
            out.summed_keys = tuple(two_d)
            out.notes = (summed_note(two_d),)
            return out
        raise FileFormatError(
            f"{path}: 2-D tensors {two_d} differ in shape ({sorted(shapes)}); pass key= (--key)"
        )
    raise FileFormatError(
        f"{path}: no tensor named {key!r}; it holds {sorted(tensors)}"
        + ("" if two_d else " (none of them 2-D)")
    )
