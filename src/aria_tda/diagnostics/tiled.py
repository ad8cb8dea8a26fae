r"""The exact Gram pass under a memory budget: column panels, spilled to disk.

For ``T`` queries the in-memory pass (:func:`aria_tda.scores.stats.stream_stats`) holds the
``T x T`` float64 Gram and the diagnostics make two more ``T x T`` copies — 60 GB at
``T = 50,000``. :func:`tiled_gram` instead computes the upper block row
:math:`G_y[I, I_0{:}]` of one column panel :math:`I = I_0{:}I_1` per streaming pass (panel
widths chosen so the float64 panel, its float32 product tile and the row blocks fit
``memory`` bytes), using the same shifted sums as :class:`~aria_tda.scores.blockstats.BlockStats`
(:math:`y = x - c`, ``c`` the first block's column means), and

- finishes each panel's share of :math:`\sum_{j \ne j'} |C_{jj'}|` (κ) at once from the
  per-column sums of the first pass (:func:`aria_tda.diagnostics.kappa.abs_corr_block`), then
- writes the panel to a spill file (float64, one panel after another; the upper triangle
  only, about :math:`4 T^2` bytes) in a temporary folder, removed by :meth:`TiledGram.close`.
  The file's full size is reserved on disk before the first pass (a full disk is a one-line
  :class:`~aria_tda.errors.DiskFullError` at once, not after hours of passes); the folder's
  name is unique to the process (:func:`aria_tda._io.temp_name`), and the spill folders of
  killed runs are removed when the next tiled pass starts in the same place.

:meth:`TiledGram.matmat` multiplies the raw Gram :math:`S^\top S = G_y + s_1 c^\top +
c s_1^\top + n c c^\top` by a block of vectors with one sequential read of the spill file
(a reused buffer, so resident memory stays within the budget); the block Krylov solver
(:mod:`aria_tda.diagnostics.krylov`) takes the top eigenpairs from it. Per pass the arithmetic
is that of the in-memory kernel (products in the block dtype, float64 accumulation), so the
results agree with it to rounding.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda._io import (
    as_disk_full,
    check_space,
    reserve_space,
    sweep_leftovers,
    temp_name,
)
from aria_tda.diagnostics.kappa import abs_corr_block
from aria_tda.errors import DataError, ParameterError
from aria_tda.scores.blockstats import BlockStats
from aria_tda.scores.readers import as_source
from aria_tda.scores.source import PREFETCH_BUFFERS, ScoreSource, expected_text
from aria_tda.scores.stats import (
    blas_threads,
    center_scaled,
    checked_sums,
    finish_scaled,
    locate_nonfinite,
    start_scaled,
)

__all__ = [
    "TiledGram",
    "check_spill_dir",
    "default_spill_dir",
    "gram_bytes",
    "gram_read_bytes",
    "parse_memory",
    "pass_rows",
    "tiled_gram",
]

#: Columns per product tile inside a panel (bounds the float32 temporary).
TILE_COLS = 4096
_UNITS = {"": 1, "B": 1, "K": 2**10, "KB": 2**10, "M": 2**20, "MB": 2**20, "G": 2**30,
          "GB": 2**30, "T": 2**40, "TB": 2**40, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30}


def parse_memory(memory: Any, *, name: str = "memory") -> int:
    """A memory budget in bytes from ``8GB``, ``512MB``, ``2.5G`` or a number of bytes.

    Parameters
    ----------
    memory : str or int or float
        The budget (binary units: 1 GB = 2**30 bytes).
    name : str
        What error messages call it.
    """
    if isinstance(memory, int | float) and not isinstance(memory, bool):
        value = float(memory)
    else:
        text = str(memory).strip().upper().replace(" ", "")
        num = text.rstrip("KMGTBI")
        unit = text[len(num):]
        try:
            value = float(num) * _UNITS[unit]
        except (ValueError, KeyError):
            raise ParameterError(
                expected_text(name, "a size such as 8GB, 512MB or a number of bytes", repr(memory))
            ) from None
    if not value > 0:
        raise ParameterError(expected_text(name, "a positive size", repr(memory)))
    return int(value)


def gram_bytes(t: int) -> int:
    """Peak bytes of the in-memory finish for ``T`` columns (three ``T x T`` float64 arrays).

    Parameters
    ----------
    t : int
        ``T``.
    """
    return 3 * 8 * t * t


def default_spill_dir() -> Path:
    """``$ARIA_CACHE_DIR/tiles`` (default ``~/.cache/aria/tiles``): where tiles are spilled."""
    from aria_tda._fingerprint import cache_dir  # here: it loads sqlite3

    return cache_dir() / "tiles"


def check_spill_dir(spill_dir: Any, *, name: str = "spill_dir") -> Path:
    """The spill folder as a Path; refused at once when it is not (and cannot be) a folder.

    Parameters
    ----------
    spill_dir : path-like or None
        The folder (``None``: :func:`default_spill_dir`). It need not exist yet.
    name : str
        What error messages call it (``"--spill-dir"`` on the command line).

    Raises
    ------
    ParameterError
        ``--spill-dir: expected a folder, got a file: 'x'`` (or a path under a file).
    """
    if spill_dir is None:
        base = default_spill_dir()
    elif isinstance(spill_dir, str | os.PathLike) and str(spill_dir):
        base = Path(spill_dir)
    else:
        raise ParameterError(expected_text(name, "a folder", repr(spill_dir)))
    p = base.absolute()
    while not p.exists() and p != p.parent:
        p = p.parent  # the nearest part that exists must be a folder
    if not p.is_dir():
        got = f"a file: {str(p)!r}" if p == base.absolute() else f"a path under the file {str(p)!r}"
        raise ParameterError(expected_text(name, "a folder", got))
    return base


@dataclass
class TiledGram:
    r"""Per-column sums, κ's correlation sum and the spilled Gram of one tiled pass.

    Attributes
    ----------
    stats : BlockStats
        ``n``, shift, :math:`s_1`, :math:`s_2` of every column (no Gram), in the units of ``S``.
    scale : numpy.ndarray [shape=(T,)]
        Powers of two the columns were scaled by before the products
        (:func:`~aria_tda.scores.blockstats.column_scale`); the spilled panels hold the Gram
        of the scaled matrix.
    abs_corr_sum : float
        :math:`\sum_{j \ne j'} |C_{jj'}|` over the non-constant columns (each term capped at 1).
    constant : numpy.ndarray [shape=(T,)] of bool
        Constant columns (:meth:`BlockStats.constant_mask`).
    panels : list of (int, int, int)
        ``(start, stop, byte offset)`` of each panel in the spill file.
    passes : int
        Streaming passes made.
    """

    stats: BlockStats
    scale: np.ndarray
    abs_corr_sum: float
    constant: np.ndarray
    panels: list[tuple[int, int, int]]
    passes: int
    folder: Path
    path: Path
    read_bytes: int
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def n_cols(self) -> int:
        return self.stats.n_cols

    def matmat(self, v: np.ndarray) -> np.ndarray:
        r"""The raw Gram times ``v``: :math:`S^\top S\, V` ``(T, b)`` in float64, one read.

        Parameters
        ----------
        v : numpy.ndarray [shape=(T, b)]
            The block of vectors.
        """
        t = self.n_cols
        # the spilled panels hold the Gram of the column-scaled matrix S D: D^-1 (D S^T S D) D^-1
        v = np.asarray(v, dtype=np.float64).reshape(t, -1) / self.scale[:, None]
        out = np.zeros_like(v)
        buf = np.empty(max(1, self.read_bytes // 8))
        with open(self.path, "rb", buffering=0) as fh:
            for i0, i1, off in self.panels:
                width = t - i0
                rows = max(1, min(i1 - i0, buf.size // width))
                for a in range(i0, i1, rows):
                    b = min(a + rows, i1)
                    u = buf[: (b - a) * width].reshape(b - a, width)
                    fh.seek(off + (a - i0) * width * 8)
                    got = fh.readinto(memoryview(u).cast("B"))  # type: ignore[arg-type]
                    if got != u.nbytes:
                        raise DataError(f"{self.path}: spill file truncated")
                    out[a:b] += u @ v[i0:]
                    out[i1:] += u[:, i1 - i0 :].T @ v[a:b]
        st = self.stats.rescaled(self.scale)
        c, s1 = st.shift, st.s1
        out += np.outer(s1, c @ v) + np.outer(c, s1 @ v) + st.n * np.outer(c, c @ v)
        return out / self.scale[:, None]

    def close(self) -> None:
        """Remove the spill folder."""
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> TiledGram:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _compute_dtype(src: ScoreSource, compute_dtype: str | None) -> np.dtype[Any]:
    """The dtype of the block products (float32 for float32-or-narrower input by default)."""
    if compute_dtype is None:
        return np.dtype(np.float32) if src.block_dtype.itemsize <= 4 else np.dtype(np.float64)
    return np.dtype(compute_dtype)


def _pass_row_bytes(src: ScoreSource, cdt: np.dtype[Any]) -> int:
    """Bytes per block row of a pass: the prefetch buffers and the work rows."""
    return src.n_cols * (PREFETCH_BUFFERS * src.block_dtype.itemsize + cdt.itemsize)


def _fixed_bytes(t: int, budget: int) -> int:
    """The per-column sums (eight float64 vectors) and a slack for the interpreter's own."""
    return 8 * 8 * t + min(2**20, budget // 16)


def pass_rows(
    scores: Any, memory: Any, *, compute_dtype: str | None = None, chunk_rows: int | None = None
) -> int:
    """Rows per block of :func:`tiled_gram`'s passes within ``memory`` bytes.

    An eighth of the budget (at least 16 rows, at most the engine's block), or ``chunk_rows``
    when given.

    Parameters
    ----------
    scores : array-like, ScoreSource or path
        ``(M, T)``.
    memory : str or int
        The budget (as :func:`tiled_gram`).
    compute_dtype : {None, "float32", "float64"}
        Precision of the block products.
    chunk_rows : int, optional
        Rows asked for.
    """
    src: ScoreSource = as_source(scores)
    if chunk_rows is not None:
        return int(src.chunk_rows(chunk_rows))
    per_row = _pass_row_bytes(src, _compute_dtype(src, compute_dtype))
    return int(min(src.chunk_rows(None), max(16, parse_memory(memory) // 8 // per_row)))


def gram_read_bytes(t: int, memory: Any) -> int:
    """Bytes of the buffer :meth:`TiledGram.matmat` reads the spilled Gram into.

    An eighth of what ``memory`` leaves beside the per-column sums, at least one row.

    Parameters
    ----------
    t : int
        Columns.
    memory : str or int
        The budget of the tiled pass.
    """
    budget = parse_memory(memory)
    return max(8 * t, (budget - _fixed_bytes(t, budget)) // 8)


def _plan(t: int, budget: int, csize: int, total: int) -> list[tuple[int, int]]:
    """Column panels ``(start, stop)``: a float64 panel plus its product tile within ``budget``."""
    panels = []
    i0 = 0
    while i0 < t:
        width = t - i0
        per_row = 8 * width + csize * min(TILE_COLS, width)
        w = int(budget // per_row)
        if w < 1:
            raise ParameterError(
                expected_text(
                    "memory",
                    f"at least {(total - budget + per_row) / 2**20:.2f} MB for the tiled pass "
                    f"of {t} columns",
                    f"{total / 2**20:.2f} MB",
                )
            )
        panels.append((i0, min(t, i0 + w)))
        i0 = min(t, i0 + w)
    return panels


def tiled_gram(
    scores: Any,
    *,
    memory: Any,
    spill_dir: Any = None,
    chunk_rows: int | None = None,
    compute_dtype: str | None = None,
    n_threads: int | None = None,
    progress: bool | None = None,
    ulps: float = 64.0,
) -> TiledGram:
    r"""The exact Gram pass in column panels within ``memory`` bytes, spilled to disk.

    Parameters
    ----------
    scores : array-like, ScoreSource or path
        ``(M, T)``.
    memory : str or int
        Budget for the row blocks and one panel (``"8GB"``); more budget, fewer passes.
    spill_dir : path, optional
        Folder for the spill file (default :func:`default_spill_dir`); a temporary
        sub-folder is made there and removed by :meth:`TiledGram.close`. A file is refused
        (:func:`check_spill_dir`), and so is a disk without room for the whole spill file
        (:class:`~aria_tda.errors.DiskFullError`, before the first pass).
    chunk_rows : int, optional
        Rows per block (default: what fits an eighth of the budget, at most the engine's).
    compute_dtype : {None, "float32", "float64"}
        Precision of the block products (as :func:`~aria_tda.scores.stats.block_stats`).
    n_threads : int, optional
        BLAS threads during the passes.
    progress : bool, optional
        Draw progress bars.
    ulps : float
        Constant-column tolerance (as :meth:`BlockStats.constant_mask`).

    Returns
    -------
    TiledGram
        Close it (or use it as a context manager) to remove the spill file.
    """
    base = check_spill_dir(spill_dir)
    src: ScoreSource = as_source(scores)
    budget = parse_memory(memory)
    t = src.n_cols
    cdt = _compute_dtype(src, compute_dtype)
    per_row = _pass_row_bytes(src, cdt)
    rows = pass_rows(src, budget, compute_dtype=compute_dtype, chunk_rows=chunk_rows)
    fixed = rows * per_row + _fixed_bytes(t, budget)
    panels = _plan(t, budget - fixed, cdt.itemsize, budget)
    need = sum(8 * (b - a) * (t - a) for a, b in panels)
    sweep_leftovers(base)  # spill folders of killed runs (their processes are gone)
    folder = base / temp_name("aria-gram")
    path = folder / "gram.f64"
    check_space(path, need)
    try:
        folder.mkdir(parents=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            reserve_space(fd, need, path=path)  # the whole spill file, before the first pass
        finally:
            os.close(fd)
        return _passes(src, panels, rows, cdt, budget, folder, path, n_threads, progress, ulps)
    except OSError as exc:
        shutil.rmtree(folder, ignore_errors=True)
        full = as_disk_full(exc, path, need)
        if full is not exc:
            raise full from None
        raise
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def _passes(
    src: ScoreSource,
    panels: list[tuple[int, int]],
    rows: int,
    cdt: np.dtype[Any],
    budget: int,
    folder: Path,
    path: Path,
    n_threads: int | None,
    progress: bool | None,
    ulps: float,
) -> TiledGram:
    m, t = src.shape
    stats: BlockStats | None = None
    scale = shift = np.ones(t)
    sd = np.zeros(t)
    keep = np.ones(t, dtype=bool)
    corr_sum = 0.0
    done: list[tuple[int, int, int]] = []
    offset = 0
    work = np.empty((rows, t), dtype=cdt)
    with open(path, "r+b") as fh, blas_threads(n_threads):  # reserved at its full size
        for p, (i0, i1) in enumerate(panels):
            acc = np.zeros((i1 - i0, t - i0))
            first = p == 0
            desc = f"Gram panel {p + 1}/{len(panels)}"
            for s, block in src.iter_chunks(
                rows, reuse_buffers=True, progress=progress, desc=desc
            ):
                n = block.shape[0]
                if stats is None:
                    with np.errstate(all="ignore"):
                        c = block.mean(axis=0, dtype=np.float64)
                    if not np.isfinite(c).all():
                        raise locate_nonfinite(block, s)
                    # sums of the column-scaled matrix (exact powers of two, see column_scale)
                    stats, scale = start_scaled(block, c, gram=False, moments=2, cdt=cdt)
                    stats.meta["eps"] = float(np.finfo(cdt).eps)
                    shift = stats.shift / scale
                y = work[:n, i0:]
                with np.errstate(under="ignore", over="ignore"):
                    center_scaled(block[:, i0:], shift[i0:], scale[i0:], out=y)
                if first:
                    with np.errstate(all="ignore"):
                        stats.s1 += np.add.reduce(y, axis=0, dtype=np.float64)
                        stats.s2 += np.einsum("ij,ij->j", y, y, dtype=np.float64)
                    stats.n += n
                    if not (np.isfinite(stats.s1).all() and np.isfinite(stats.s2).all()):
                        raise locate_nonfinite(block, s)
                yi = y[:, : i1 - i0]
                for j0 in range(0, t - i0, TILE_COLS):
                    j1 = min(t - i0, j0 + TILE_COLS)
                    np.add(acc[:, j0:j1], yi.T @ y[:, j0:j1], out=acc[:, j0:j1])
            assert stats is not None
            if first:
                if stats.n != m:
                    raise DataError(expected_text("scores", f"{m} rows", f"{stats.n}"))
                keep = ~stats.constant_mask(ulps=ulps)
                sd = np.sqrt(stats.centered_ss)
            corr_sum += _panel_corr_sum(acc, stats, sd, keep, i0, i1, cdt.itemsize)
            acc.tofile(fh)  # C-contiguous float64, row after row
            done.append((i0, i1, offset))
            offset += acc.nbytes
            del acc
    assert stats is not None
    return TiledGram(
        stats=checked_sums(finish_scaled(stats, scale)),
        scale=scale,
        abs_corr_sum=corr_sum,
        constant=~keep,
        panels=done,
        passes=len(panels),
        folder=folder,
        path=path,
        read_bytes=gram_read_bytes(t, budget),
        meta={"chunk_rows": rows, "spill_bytes": offset},
    )


def _panel_corr_sum(
    acc: np.ndarray, st: BlockStats, sd: np.ndarray, keep: np.ndarray, i0: int, i1: int,
    csize: int,
) -> float:
    r""":math:`\sum |C_{jj'}|` over the panel's pairs ``j < j'`` (both kept), doubled.

    Works in row slices whose two float64 temporaries fit the product tile's allowance.
    """
    total = 0.0
    s1, n = st.s1, st.n
    w, width = acc.shape
    step = max(1, (w * min(TILE_COLS, width) * csize) // (16 * width))
    kc = keep[i0:]
    sc = np.where(kc, sd[i0:], 1.0)
    for a in range(0, w, step):
        b = min(w, a + step)
        c = np.multiply.outer(s1[i0 + a : i0 + b] / n, s1[i0:])
        np.subtract(acc[a:b], c, out=c)
        abs_corr_block(c, sc[a:b], sc)
        c *= kc[a:b, None]
        c *= kc[None, :]
        for r in range(b - a):  # the diagonal block: only j < j'
            c[r, : a + r + 1] = 0.0
        total += float(c.sum())
        del c
    return 2.0 * total
