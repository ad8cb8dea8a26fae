r"""bergson's score stores (``bergson score`` → ``scores.bin`` + ``info.json``), read in place.

The format (EleutherAI's bergson, ``bergson/score/score_writer.py``, ``MemmapSequenceScoreWriter``):

- ``scores.bin`` is a NumPy memory map of ``num_rows`` records of a *structured* dtype with
  interleaved fields ``score_0, written_0, score_1, written_1, ...`` — one ``(score_j,
  written_j)`` pair per query ``j``. Each pair sits at offset ``j * pair`` where ``pair`` is the
  pair's size rounded up to a power of two (8 bytes for float32 scores, 4 for float16/bfloat16)
  and the record size is rounded up to a multiple of 8 bytes. Older writers used other
  offsets; ARIA takes them from ``info.json``, never assumes them.
- ``info.json`` holds ``num_items``, ``num_rows`` (older files: ``num_items`` only),
  ``num_scores`` (queries), ``attribute_tokens`` and the dtype as ``{"names", "formats",
  "offsets", "itemsize"}`` (formats ``"float32"``, ``"float16"``, ``"bfloat16"`` — bergson
  registers bfloat16 through ``ml_dtypes``; ARIA converts its bit patterns exactly — and
  ``"bool"`` for the flags).
- Rows are index (training) items, columns queries: **training x queries**, ARIA's orientation.
  With a candidate subset, row ``i`` is training item ``candidates[i]`` (``candidates.npy``
  beside the store or in the run folder): ARIA uses those indices as the row ids. Higher
  scores are more influential (bergson's default ``higher_is_better``).
- The file is created zero-filled (``np.memmap(mode="w+")``) and a flag ``written_j`` is set
  when query ``j``'s score of a row is stored. A run that stops early leaves zeros with
  ``written_j`` false — whole later query columns when queries are scored in batches — in
  ``RUN.part/`` (bergson renames the folder to ``RUN`` when a run finishes).

Every field of ``info.json`` is checked against ``scores.bin`` before anything is read (see
:class:`BergsonSource`): ``num_rows`` x ``itemsize`` must be the file's size exactly — an
``info.json`` claiming fewer rows than the file holds is refused, not read as a cut matrix — and
``num_scores``, the names, formats and offsets of the fields must describe one record without
overlap; numbers must be JSON integers (not text, floats or ``true``). An absurd ``num_scores``
is refused before any loop over it.

ARIA reads the records with positional reads, one row block at a time (never the whole file),
builds each block's ``(rows, T)`` float matrix from the score fields, and refuses a block holding
a cell never written (:class:`~aria_tda.errors.DataError` naming the first such row and query:
the run looks interrupted). Before any pass it checks what is cheap: the ``.part`` folder name,
the file's size, and the flags of the first and last rows. Per-token stores
(``attribute_tokens``: rows are tokens) are refused.

Where it is: ``RUN/scores.bin`` (bergson's ``score`` command writes into the run folder;
:func:`find_bergson` also accepts ``RUN/scores/scores.bin``, where MAGIC and other pipelines
put it) — :func:`aria_tda.scores.readers.open_scores` accepts the ``scores.bin`` file or either
folder.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda.errors import DataError, FileFormatError
from aria_tda.scores.formats.files import open_for_read, pread_exact
from aria_tda.scores.formats.header import (
    header_error,
    header_int,
    json_object,
    read_json_header,
)
from aria_tda.scores.formats.npy import BF16_STORAGE, bf16_to_float32, read_small_npy
from aria_tda.scores.source import ScoreSource

__all__ = ["BIN_NAME", "INFO_NAME", "BergsonSource", "find_bergson", "is_bergson_bin"]

#: The score file and its description, as bergson names them.
BIN_NAME = "scores.bin"
INFO_NAME = "info.json"
#: The candidate subset (row i is training item candidates[i]).
CANDIDATES_NAME = "candidates.npy"
#: Suffix of the folder an unfinished bergson run writes into.
PART_SUFFIX = ".part"


def is_bergson_bin(path: Path) -> bool:
    """Whether ``path`` is a ``.bin`` file with bergson's ``info.json`` beside it.

    Parameters
    ----------
    path : pathlib.Path
        A file.
    """
    return path.suffix.lower() == ".bin" and (path.parent / INFO_NAME).is_file()


def find_bergson(folder: Path) -> Path | None:
    """The ``scores.bin`` of a bergson run folder (``RUN/`` or ``RUN/scores/``), or None.

    Parameters
    ----------
    folder : pathlib.Path
        A directory.
    """
    for where in (folder, folder / "scores"):
        if (where / BIN_NAME).is_file() and (where / INFO_NAME).is_file():
            return where / BIN_NAME
    return None


def _read_info(path: Path) -> dict[str, Any]:
    info_path = path.parent / INFO_NAME
    info = read_json_header(info_path, str(info_path), what="bergson info.json")
    return json_object(info, str(info_path), "bergson info.json")


#: How info.json may name a score field's format (checked before NumPy parses it).
_FORMAT_TEXT = re.compile(r"[<>|=]?[A-Za-z][A-Za-z0-9]{0,15}")


def _field_format(where: str, field: str, fmt: Any, *, flag: bool) -> np.dtype[Any]:
    """The storage dtype of a score field (bfloat16: its uint16 bit patterns), or of a flag."""
    what = "bool" if flag else "float16, bfloat16, float32 or float64"
    if not flag and fmt == "bfloat16":
        return BF16_STORAGE
    dt = None
    if isinstance(fmt, str) and _FORMAT_TEXT.fullmatch(fmt):
        with contextlib.suppress(TypeError, ValueError):
            dt = np.dtype(fmt)
    ok = dt is not None and (
        dt == np.bool_ if flag else dt.kind == "f" and dt.itemsize in (2, 4, 8)
    )
    if not ok or dt is None:
        raise header_error(where, field, fmt, what)
    return dt


def _fields(
    where: str, spec: dict[str, Any], n_scores: int
) -> tuple[np.dtype[Any], bool, np.ndarray, np.ndarray]:
    """``(score storage, bf16, score offsets, flag offsets)`` of the dtype, every field checked.

    ``dtype.names`` must be exactly ``score_j, written_j`` for ``j < num_scores`` (checked
    before any loop over ``num_scores``), the formats one float type and ``bool``, the offsets
    integers inside the record, no two fields overlapping.
    """
    names, formats, offsets = spec["names"], spec["formats"], spec["offsets"]
    itemsize = spec["itemsize"]
    for field, value in (("dtype.formats", formats), ("dtype.offsets", offsets)):
        if len(value) != len(names):
            raise FileFormatError(
                f"{where}: {field} holds {len(value)} entries: expected one per name of "
                f"dtype.names ({len(names)})"
            )
    if len(names) != 2 * n_scores:
        raise header_error(where, "num_scores", n_scores,
                           "half the number of fields (a score_j and a written_j per query)",
                           f"{len(names)} fields (dtype.names)")
    index: dict[tuple[str, int], int] = {}
    for k, name in enumerate(names):
        m = re.fullmatch(r"(score|written)_(0|[1-9][0-9]{0,17})", name) if isinstance(
            name, str) else None
        if m is None or int(m.group(2)) >= n_scores:
            raise header_error(where, f"dtype.names[{k}]", name,
                               f"score_j or written_j with j < num_scores ({n_scores})")
        cell = (m.group(1), int(m.group(2)))
        if cell in index:
            raise header_error(where, f"dtype.names[{k}]", name, "each field named once")
        index[cell] = k
    fmts = [
        _field_format(where, f"dtype.formats[{index[('score', j)]}]",
                      formats[index[("score", j)]], flag=False)
        for j in range(n_scores)
    ]
    for j in range(n_scores):
        k = index[("written", j)]
        _field_format(where, f"dtype.formats[{k}]", formats[k], flag=True)
    storage = fmts[0] if fmts else np.dtype("<f4")
    odd = next((j for j, f in enumerate(fmts) if f != storage), None)
    if odd is not None:
        k = index[("score", odd)]
        raise header_error(where, f"dtype.formats[{k}]", formats[k],
                           f"the format of score_0, {formats[index[('score', 0)]]!r}")
    bf16 = n_scores > 0 and formats[index[("score", 0)]] == "bfloat16"
    spans = []
    for k, off in enumerate(offsets):
        width = storage.itemsize if names[k].startswith("score") else 1
        header_int(where, f"dtype.offsets[{k}]", off, max_value=itemsize - width,
                   holds=f"records of {itemsize} bytes (dtype.itemsize) for a {width}-byte field")
        spans.append((off, off + width, k))
    spans.sort()
    for (a0, a1, ka), (b0, _, kb) in itertools.pairwise(spans):
        if b0 < a1:
            raise header_error(where, f"dtype.offsets[{kb}]", b0,
                               f"a field that does not overlap {names[ka]} (bytes {a0} to {a1})")
    score = np.array([offsets[index[("score", j)]] for j in range(n_scores)], dtype=np.int64)
    written = np.array([offsets[index[("written", j)]] for j in range(n_scores)], dtype=np.int64)
    return storage, bf16, score, written


class BergsonSource(ScoreSource):
    """A bergson ``scores.bin`` (training x queries), streamed in row blocks.

    Every field of ``info.json`` is checked against ``scores.bin`` before anything is read
    (:mod:`aria_tda.scores.formats.header`): ``num_rows`` (or ``num_items``) x ``itemsize`` is
    the file's size exactly; ``num_scores`` is half the fields; each field is named once, of a
    float format (the same for every query) or ``bool``, at an offset inside the record, no two
    overlapping. No file is held open between reads.

    Parameters
    ----------
    path : path-like
        The ``scores.bin`` file (``info.json`` beside it).
    manifest : dict, optional
        An artefact manifest to carry (bergson writes none).
    """

    def __init__(self, path: str | os.PathLike[str], *, manifest: dict[str, Any] | None = None):
        self.path = self.bin_path = Path(path)
        info = _read_info(self.bin_path)
        where = str(self.bin_path.parent / INFO_NAME)
        tokens = info.get("attribute_tokens")
        if tokens is not None and not isinstance(tokens, bool):
            raise header_error(where, "attribute_tokens", tokens, "true or false")
        if tokens:
            raise FileFormatError(
                f"{where}: a per-token bergson store (attribute_tokens: one row per token, "
                "offsets.npy maps them to documents); ARIA reads one row per training item: "
                "score without attribute_tokens"
            )
        spec = info.get("dtype")
        if not isinstance(spec, dict):
            raise header_error(where, "dtype", spec,
                               "a structured dtype {names, formats, offsets, itemsize}")
        for field in ("names", "formats", "offsets"):
            if not isinstance(spec.get(field), list):
                raise header_error(where, f"dtype.{field}", spec.get(field), "a list")
        with open_for_read(self.bin_path, str(self.bin_path)) as (_, identity):
            self._identity = identity
        size = identity[2]
        self.itemsize = header_int(where, "dtype.itemsize", spec.get("itemsize"), min_value=1)
        n_scores = header_int(where, "num_scores", info.get("num_scores"))
        self.storage, self.bf16, self.score_offsets, self.written_offsets = _fields(
            where, spec, n_scores)
        rows_field = "num_items" if "num_rows" not in info and "num_items" in info else (
            "num_rows")
        n_rows = header_int(where, rows_field, info.get(rows_field))
        if rows_field == "num_rows" and "num_items" in info:
            header_int(where, "num_items", info["num_items"])
        need = n_rows * self.itemsize
        if size < need:
            raise FileFormatError(
                f"{self.path}: truncated: info.json promises {n_rows} records of {self.itemsize} "
                f"bytes ({need} bytes, {rows_field} x dtype.itemsize), the file holds {size}"
            )
        if size > need:
            over = size % self.itemsize
            raise header_error(
                where, rows_field, n_rows,
                f"the number of {self.itemsize}-byte records (dtype.itemsize) {BIN_NAME} holds",
                f"{size} bytes: {size // self.itemsize} records"
                + (f" and {over} bytes" if over else ""),
            )
        self.stride = self._regular_stride()
        super().__init__((n_rows, n_scores), "bfloat16" if self.bf16 else self.storage,
                         row_ids=self._candidates(n_rows), manifest=manifest)
        self.format = "bergson"
        self._check_finished()

    # -- layout -----------------------------------------------------------------------
    def _regular_stride(self) -> int | None:
        """The byte step between consecutive queries' fields when it is constant, else None."""
        n = self.score_offsets.size
        if n == 1:
            return self.itemsize
        steps = np.diff(self.score_offsets)
        wsteps = np.diff(self.written_offsets)
        step = int(steps[0])
        if step > 0 and (steps == step).all() and (wsteps == step).all():
            return step
        return None

    def _candidates(self, n_rows: int) -> np.ndarray | None:
        for folder in (self.bin_path.parent, self.bin_path.parent.parent):
            side = folder / CANDIDATES_NAME
            if not side.is_file():
                continue
            cand = read_small_npy(side, str(side), n=n_rows, kinds="iu",
                                  what=f"integer training indices (rows of {self.bin_path.name})")
            if cand.size and int(cand.min()) < 0:
                k = int(np.argmin(cand))
                raise header_error(side, f"[{k}]", int(cand[k]), "a training index >= 0")
            self.notes = (
                f"rows are the training items listed in {side} (row ids = their indices)",
            )
            return np.asarray([str(int(c)) for c in cand.tolist()])
        return None

    def _views(self, raw: np.ndarray, n: int, cols: slice) -> tuple[np.ndarray, np.ndarray]:
        """Score and flag matrices ``(n, k)`` of ``n`` raw records, columns ``cols``."""
        j0, j1, _ = cols.indices(self.n_cols)
        k = j1 - j0
        if self.stride is not None:
            sc = np.ndarray((n, k), dtype=self.storage, buffer=raw,
                            offset=int(self.score_offsets[j0]) if k else 0,
                            strides=(self.itemsize, self.stride))
            wr = np.ndarray((n, k), dtype=np.bool_, buffer=raw,
                            offset=int(self.written_offsets[j0]) if k else 0,
                            strides=(self.itemsize, self.stride))
            return sc, wr
        rec = raw.reshape(n, self.itemsize)
        sc = np.empty((n, k), dtype=self.storage)
        wr = np.empty((n, k), dtype=np.bool_)
        width = self.storage.itemsize
        for c, j in enumerate(range(j0, j1)):
            o = int(self.score_offsets[j])
            sc[:, c] = np.ascontiguousarray(rec[:, o : o + width]).view(self.storage)[:, 0]
            wr[:, c] = rec[:, int(self.written_offsets[j])] != 0
        return sc, wr

    def _refuse_unwritten(self, written: np.ndarray, row0: int, col0: int) -> None:
        if written.all():
            return
        r, q = (int(x) for x in np.argwhere(~written)[0])
        n_bad = int((~written).sum())
        raise DataError(
            f"{self.path}: the score of training row {row0 + r} for query {col0 + q} was never "
            f"written (written_{col0 + q} is false; {n_bad} unwritten cells in rows "
            f"{row0}:{row0 + written.shape[0]}): the bergson run looks interrupted; finish it "
            "(rerun the same 'bergson score' command, which resumes) and read the finished run"
        )

    def _check_finished(self) -> None:
        """The cheap checks before any pass: the ``.part`` folder, the first and last rows."""
        for folder in (self.bin_path.parent, self.bin_path.parent.parent):
            if folder.name.endswith(PART_SUFFIX):
                raise DataError(
                    f"{self.path}: lies in {folder.name!r}, the folder an unfinished bergson "
                    f"run writes into (bergson renames it to {folder.name[:-5]!r} when the run "
                    "finishes): the run looks interrupted; finish it (rerun the same "
                    "'bergson score' command, which resumes)"
                )
        for row in sorted({0, self.n_rows - 1}):
            raw = self._read_raw(row, row + 1)
            self._refuse_unwritten(self._views(raw, 1, slice(None))[1], row, 0)

    # -- reading ----------------------------------------------------------------------
    def _read_raw(self, start: int, stop: int) -> np.ndarray:
        raw = np.empty((stop - start) * self.itemsize, dtype=np.uint8)
        with open_for_read(self.bin_path, str(self.path), self._identity) as (fh, _):
            pread_exact(fh, raw.data.cast("B"), start * self.itemsize, str(self.path))
        return raw

    def _convert(self, scores: np.ndarray) -> np.ndarray:
        return bf16_to_float32(scores) if self.bf16 else scores

    def _read_into(self, start: int, stop: int, out: np.ndarray) -> np.ndarray:
        raw = self._read_raw(start, stop)
        scores, written = self._views(raw, stop - start, slice(None))
        self._refuse_unwritten(written, start, 0)
        np.copyto(out, self._convert(scores), casting="unsafe")
        return out

    def _raw_rows(self, start: int, stop: int) -> np.ndarray:
        return self._read_into(start, stop, self._new_block(stop - start))

    def _raw_columns(self, start: int, stop: int) -> np.ndarray:
        out = np.empty((self.n_rows, stop - start), dtype=self.block_dtype)
        step = max(1, (64 * 2**20) // max(1, self.itemsize))
        for r0 in range(0, self.n_rows, step):
            r1 = min(self.n_rows, r0 + step)
            scores, written = self._views(self._read_raw(r0, r1), r1 - r0, slice(start, stop))
            self._refuse_unwritten(written, r0, start)
            out[r0:r1] = self._convert(scores)
        return out

    def close(self) -> None:
        """Nothing to release: no file is held open between reads."""
