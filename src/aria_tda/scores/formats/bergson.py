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

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda.errors import DataError, FileFormatError
from aria_tda.scores.formats.npy import BF16_STORAGE, bf16_to_float32
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
    try:
        info = json.loads(info_path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise FileFormatError(
            f"{info_path}: not a readable bergson info.json ({type(exc).__name__})"
        ) from None
    spec = info.get("dtype") if isinstance(info, dict) else None
    ok = isinstance(spec, dict) and all(
        isinstance(spec.get(k), list) for k in ("names", "formats", "offsets")
    ) and isinstance(spec.get("itemsize"), int)
    if not ok:
        raise FileFormatError(
            f"{info_path}: expected bergson's info.json with a structured 'dtype' "
            "{names, formats, offsets, itemsize}"
        )
    return info


def _storage(fmt: Any, where: str) -> np.dtype[Any]:
    """The storage dtype of a score field (bfloat16: its uint16 bit patterns)."""
    if fmt == "bfloat16":
        return BF16_STORAGE
    try:
        dt = np.dtype(fmt)
    except TypeError:
        dt = np.dtype(object)
    if dt.kind != "f":
        raise FileFormatError(
            f"{where}: expected float16, bfloat16, float32 or float64 scores, got {fmt!r}"
        )
    return dt


class BergsonSource(ScoreSource):
    """A bergson ``scores.bin`` (training x queries), streamed in row blocks.

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
        if info.get("attribute_tokens"):
            raise FileFormatError(
                f"{where}: a per-token bergson store (attribute_tokens: one row per token, "
                "offsets.npy maps them to documents); ARIA reads one row per training item: "
                "score without attribute_tokens"
            )
        spec = info["dtype"]
        fields = {
            str(n): (f, int(o))
            for n, f, o in zip(spec["names"], spec["formats"], spec["offsets"], strict=False)
        }
        n_rows = int(info.get("num_rows", info.get("num_items", -1)))
        n_scores = int(info.get("num_scores", -1))
        missing = [
            name
            for j in range(max(n_scores, 0))
            for name in (f"score_{j}", f"written_{j}")
            if name not in fields
        ]
        if n_rows < 0 or n_scores < 0 or missing:
            raise FileFormatError(
                f"{where}: expected num_rows (or num_items), num_scores and fields score_j, "
                f"written_j for every query j; "
                + (f"missing {missing[:4]}" if missing else "num_rows/num_scores absent")
            )
        storages = {_storage(fields[f"score_{j}"][0], where).str for j in range(n_scores)}
        if len(storages) > 1:
            raise FileFormatError(f"{where}: score fields of several dtypes {sorted(storages)}")
        self.bf16 = n_scores > 0 and fields["score_0"][0] == "bfloat16"
        self.storage = _storage(fields["score_0"][0], where) if n_scores else np.dtype("<f4")
        self.itemsize = int(spec["itemsize"])
        self.score_offsets = np.array([fields[f"score_{j}"][1] for j in range(n_scores)])
        self.written_offsets = np.array([fields[f"written_{j}"][1] for j in range(n_scores)])
        top = max(
            [*(self.score_offsets + self.storage.itemsize), *(self.written_offsets + 1), 0]
        )
        if top > self.itemsize:
            raise FileFormatError(
                f"{where}: fields reach byte {top} of records of itemsize {self.itemsize}"
            )
        self.stride = self._regular_stride()
        super().__init__((n_rows, n_scores), "bfloat16" if self.bf16 else self.storage,
                         row_ids=self._candidates(n_rows), manifest=manifest)
        self.format = "bergson"
        self._fh = open(self.path, "rb")  # held for positional reads; closed by close()
        need = n_rows * self.itemsize
        size = os.fstat(self._fh.fileno()).st_size
        if size < need:
            self.close()
            raise FileFormatError(
                f"{self.path}: truncated: info.json promises {n_rows} records of {self.itemsize} "
                f"bytes ({need} bytes), the file has {size}"
            )
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
            try:
                cand = np.load(side, allow_pickle=False)
            except (ValueError, OSError) as exc:
                raise FileFormatError(f"{side}: unreadable ({type(exc).__name__})") from None
            if cand.ndim != 1 or cand.shape[0] != n_rows or cand.dtype.kind not in "iu":
                raise FileFormatError(
                    f"{side}: expected {n_rows} integer training indices (one per row of "
                    f"{self.bin_path.name}), got {cand.dtype} of shape {cand.shape}"
                )
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
                self.close()
                raise DataError(
                    f"{self.path}: lies in {folder.name!r}, the folder an unfinished bergson "
                    f"run writes into (bergson renames it to {folder.name[:-5]!r} when the run "
                    "finishes): the run looks interrupted; finish it (rerun the same "
                    "'bergson score' command, which resumes)"
                )
        for row in sorted({0, self.n_rows - 1}):
            raw = self._read_raw(row, row + 1)
            try:
                self._refuse_unwritten(self._views(raw, 1, slice(None))[1], row, 0)
            except DataError:
                self.close()
                raise

    # -- reading ----------------------------------------------------------------------
    def _read_raw(self, start: int, stop: int) -> np.ndarray:
        raw = np.empty((stop - start) * self.itemsize, dtype=np.uint8)
        view = raw.data.cast("B")
        offset = start * self.itemsize
        done = 0
        while done < raw.nbytes:
            n = os.preadv(self._fh.fileno(), [view[done:]], offset + done)
            if n <= 0:
                raise FileFormatError(
                    f"{self.path}: unexpected end of file at byte {offset + done}"
                )
            done += n
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
        """Release the file handle."""
        fh = getattr(self, "_fh", None)
        if fh is not None and not fh.closed:
            fh.close()
