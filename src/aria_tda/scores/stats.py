r"""The one streaming kernel: column moments and the Gram matrix of row blocks.

Every statistic ARIA needs from a score matrix ``S`` (``M x T``) comes from sums over rows,
so one pass over row blocks suffices and memory depends on the block size and ``T^2``,
never on ``M``. The same kernel, :func:`block_stats`, runs

- on a single machine, streamed over row blocks with a one-deep prefetch thread
  (:func:`stream_stats`);
- on a Dask cluster, over row ranges, the partial results merged in float64
  (:mod:`aria_tda.scores.distributed`);
- on a GPU through torch (``device="cuda"``) when one is available.

The sums themselves, and the shifted-sum formulas that make them exact, are
:class:`~aria_tda.scores.blockstats.BlockStats` (:mod:`aria_tda.scores.blockstats`). Per block the
product :math:`Y^\top Y` runs in the block's dtype (float32 for float32 input: the BLAS
symmetric product on one buffer) and is added into a float64 accumulator; sums are float64.
``compute_dtype="float64"`` forces float64 products.

Scale
-----
Influence scores are often tiny (1e-20: learning-rate-scaled, Hessian-inverse products) or
huge; float32 squares of values below about 1e-19 underflow and above 1e19 overflow. The first
block fixes, per column, a power of two that brings its centred values near 1
(:func:`~aria_tda.scores.blockstats.column_scale`; columns already within :math:`2^{\pm 40}`
keep 1, at no cost); the products run on the scaled block and the sums are returned to the
units of ``S`` in float64 (:meth:`~aria_tda.scores.blockstats.BlockStats.rescaled`). Scaling
by powers of two is exact, so the results equal the unscaled computation's up to rounding, at
any scale from 1e-30 to 1e30 and for columns whose magnitudes differ by 1e20. A later block far
larger than the first (squares overflowing float32 even so) is redone in float64.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from aria_tda._checks import check_choice, check_int
from aria_tda.errors import DataError, ParameterError
from aria_tda.scores.blockstats import BlockStats, column_scale, representable_shift
from aria_tda.scores.formats.torch import TorchSource
from aria_tda.scores.readers import as_source
from aria_tda.scores.source import ScoreSource, expected_text

__all__ = [
    "BlockStats",
    "blas_threads",
    "block_stats",
    "center_scaled",
    "free_cpus",
    "locate_nonfinite",
    "representable_shift",
    "stream_matvec",
    "stream_stats",
]

COMPUTE_DTYPES = (None, "float32", "float64")


# ----------------------------------------------------------------------------------------
# the kernel
# ----------------------------------------------------------------------------------------
def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch")


def _np_compute_dtype(block_dtype: np.dtype[Any], compute_dtype: str | None) -> np.dtype[Any]:
    if compute_dtype is None:
        return np.dtype(np.float32) if block_dtype.itemsize <= 4 else np.dtype(np.float64)
    return np.dtype(compute_dtype)


def _work_buffer(rows: int, t: int, dtype: Any, *, gram: bool) -> np.ndarray:
    """Scratch rows for ``y = x - c``; with ``gram``, one extra column of ones (see below)."""
    if not gram:
        return np.empty((rows, t), dtype=dtype)
    work = np.empty((rows, t + 1), dtype=dtype)
    work[:, t] = 1.0
    return work


def start_scaled(
    block: np.ndarray, shift: np.ndarray, *, gram: bool, moments: int, cdt: np.dtype[Any]
) -> tuple[BlockStats, np.ndarray]:
    """Empty sums of the column-scaled matrix and the scale, from the first block.

    The shift is rounded to float32 values first (:func:`representable_shift`), then scaled by
    powers of two (exact), so ``rescaled(1 / scale)`` gives back exactly that shift.
    """
    c = representable_shift(shift)
    amax = np.zeros(c.shape[0])
    if block.shape[0]:  # max |x - c| per column from the column extremes: no block-sized copy
        with np.errstate(all="ignore"):
            hi = np.abs(block.max(axis=0).astype(np.float64) - c)
            lo = np.abs(block.min(axis=0).astype(np.float64) - c)
        amax = np.maximum(hi, lo)
    max_exp = 120 if cdt.itemsize <= 4 else 1000
    scale = column_scale(amax[None, :], c, max_exp=max_exp)
    acc = BlockStats.zeros(c, gram=gram, moments=moments)
    acc.shift = c * scale
    return acc, scale


def finish_scaled(acc: BlockStats, scale: np.ndarray) -> BlockStats:
    """Sums of the scaled matrix back in the units of ``S``."""
    with np.errstate(all="ignore"):
        return acc.rescaled(1.0 / scale)


def checked_sums(stats: BlockStats) -> BlockStats:
    """``stats``, or the error that its sums overflow float64 once back in the units of ``S``."""
    if not (np.isfinite(stats.s2).all() and (stats.gram is None or np.isfinite(stats.gram).all())):
        raise DataError(
            "scores: values too large: sums of squares overflow float64 (entries above about "
            "1e150); rescale the matrix"
        )
    return stats


def center_scaled(
    block: np.ndarray, shift: np.ndarray, scale: np.ndarray, *, out: np.ndarray
) -> None:
    """``out[...] = (block - shift) * scale`` in ``out``'s dtype, exact for powers of two.

    Columns with scale 1 cost no multiply; float64 scores going to float32 products are scaled
    before the cast (so values below float32's range survive).

    Parameters
    ----------
    block : numpy.ndarray [shape=(rows, T)]
        Score rows.
    shift, scale : numpy.ndarray [shape=(T,)]
        The shift ``c`` and the column scales (:func:`column_scale`).
    out : numpy.ndarray [shape=(rows, T)]
        Where the result goes (float32 or float64).
    """
    unit = bool(np.all(scale == 1.0))
    if block.dtype.itemsize > out.dtype.itemsize and not unit:
        out[...] = (block - shift) * scale
    else:
        np.subtract(block, shift.astype(out.dtype), out=out, casting="unsafe")
        if not unit:
            np.multiply(out, scale.astype(out.dtype), out=out)


def _accumulate_numpy(
    acc: BlockStats,
    block: np.ndarray,
    work: np.ndarray | None,
    compute_dtype: str | None,
    scale: np.ndarray,
) -> None:
    """Add one block to ``acc``: the sums of ``(block - c) * scale`` (``acc.shift = c * scale``)."""
    n, t = block.shape
    cdt = _np_compute_dtype(block.dtype, compute_dtype)
    gram = acc.gram is not None
    width = t + 1 if gram else t
    if work is None or work.dtype != cdt or work.shape[1] != width or work.shape[0] < n:
        work = _work_buffer(n, t, cdt, gram=gram)
    ya = work[:n]
    y = ya[:, :t]
    c = acc.shift / scale
    center_scaled(block, c, scale, out=y)
    if acc.gram is not None:
        # [Y 1]^T [Y 1] on one buffer: NumPy calls the BLAS symmetric rank-k product, and the
        # ones column makes its last row the column sums, so no separate pass over Y is needed
        g = ya.T @ ya
        if np.isfinite(np.diagonal(g)).all() or cdt == np.float64:
            acc.s1 += g[t, :t]
            np.add(acc.gram, g[:t, :t], out=acc.gram)
            acc.s2 += np.diagonal(g)[:t]
        else:  # a later block far larger than the first: redo this block in float64
            y = (block.astype(np.float64) - c) * scale
            g = y.T @ y
            acc.s1 += np.add.reduce(y, axis=0)
            np.add(acc.gram, g, out=acc.gram)
            acc.s2 += np.diagonal(g)
    else:
        acc.s1 += np.add.reduce(y, axis=0, dtype=np.float64)
        acc.s2 += np.einsum("ij,ij->j", y, y, dtype=np.float64)
    if acc.s3 is not None and acc.s4 is not None:
        y64 = y.astype(np.float64)
        y2 = y64 * y64
        acc.s3 += np.einsum("ij,ij->j", y2, y64)
        acc.s4 += np.einsum("ij,ij->j", y2, y2)
    acc.n += n
    acc.meta["eps"] = max(acc.eps, float(np.finfo(y.dtype).eps))


def _accumulate_torch(acc_t: dict[str, Any], block: Any, compute_dtype: str | None) -> None:
    """Add one block to the torch sums of ``(block - c) * scale`` (as :func:`_accumulate_numpy`)."""
    import torch

    f64 = torch.float64
    if compute_dtype is None:
        cdt = f64 if block.dtype == f64 else torch.float32
    else:
        cdt = f64 if compute_dtype == "float64" else torch.float32
    if block.dtype == f64 and cdt != f64:  # float64 scores, float32 products: scale first
        y = ((block - acc_t["shift"]) * acc_t["scale"]).to(cdt)
    else:
        y = (block.to(cdt) - acc_t["shift"].to(cdt)) * acc_t["scale"].to(cdt)
    acc_t["s1"] += y.sum(dim=0, dtype=f64)
    if acc_t["gram"] is not None:
        g = y.T @ y
        d = torch.diagonal(g)
        if not bool(torch.isfinite(d).all()) and cdt != f64:
            y = (block.to(f64) - acc_t["shift"]) * acc_t["scale"]
            g = y.T @ y
            d = torch.diagonal(g)
        acc_t["gram"] += g
        acc_t["s2"] += d.to(f64)
    else:
        acc_t["s2"] += (y * y).sum(dim=0, dtype=f64)
    if acc_t["s3"] is not None:
        y64 = y.to(f64)
        y2 = y64 * y64
        acc_t["s3"] += (y2 * y64).sum(dim=0)
        acc_t["s4"] += (y2 * y2).sum(dim=0)
    acc_t["n"] += int(block.shape[0])
    acc_t["eps"] = max(acc_t.get("eps", 0.0), float(torch.finfo(y.dtype).eps))


def block_stats(
    block: Any,
    *,
    shift: Any = None,
    gram: bool = True,
    moments: int = 2,
    compute_dtype: str | None = None,
) -> BlockStats:
    r"""Sums of one row block: :math:`n, s_1, s_2, G_y` (and :math:`s_3, s_4`) about ``shift``.

    Parameters
    ----------
    block : numpy.ndarray or torch.Tensor [shape=(rows, T)]
        Rows of the score matrix (finite; float16/32/64).
    shift : array-like [shape=(T,)], optional
        The shift ``c``; default: the block's own column means.
    gram : bool
        Also compute :math:`G_y = Y^\top Y` ``(T, T)``.
    moments : {2, 4}
        Also compute third and fourth power sums when 4.
    compute_dtype : {None, "float32", "float64"}
        dtype of the products; ``None``: float32 for <= 32-bit input, float64 otherwise
        (:func:`stream_stats` without the Gram: float64). Sums are always accumulated in
        float64.

    Returns
    -------
    BlockStats
        float64 NumPy arrays (torch input is computed on its device, then copied back).
    """
    check_choice("moments", moments, (2, 4))
    check_choice("compute_dtype", compute_dtype, COMPUTE_DTYPES)
    if _is_torch(block):
        if block.dim() != 2:
            raise DataError(expected_text("block", "a 2-D block", f"shape {tuple(block.shape)}"))
        c = (
            block.double().mean(dim=0).cpu().numpy()
            if shift is None
            else np.asarray(shift, dtype=np.float64)
        )
        acc_t = _torch_acc(
            c, block.device, gram=gram, moments=moments, first=block, compute_dtype=compute_dtype
        )
        _accumulate_torch(acc_t, block, compute_dtype)
        return _torch_to_stats(acc_t)
    arr = np.asarray(block)
    if arr.ndim != 2:
        raise DataError(expected_text("block", "a 2-D block", f"shape {arr.shape}"))
    if arr.dtype.kind != "f":
        arr = arr.astype(np.float64)
    c = arr.mean(axis=0, dtype=np.float64) if shift is None else np.asarray(shift, dtype=np.float64)
    if c.shape != (arr.shape[1],):
        raise ParameterError(expected_text("shift", f"shape ({arr.shape[1]},)", f"shape {c.shape}"))
    cdt = _np_compute_dtype(arr.dtype, compute_dtype)
    acc, scale = start_scaled(arr, c, gram=gram, moments=moments, cdt=cdt)
    with np.errstate(under="ignore"):
        _accumulate_numpy(acc, arr, None, compute_dtype, scale)
    return finish_scaled(acc, scale)


def _torch_acc(
    shift: np.ndarray, device: Any, *, gram: bool, moments: int, first: Any = None,
    compute_dtype: str | None = None,
) -> dict[str, Any]:
    """Empty torch sums about ``shift``, scaled by :func:`column_scale` of the ``first`` block."""
    import torch

    t = shift.shape[0]
    kw: dict[str, Any] = {"dtype": torch.float64, "device": device}
    c = representable_shift(shift)
    c_t = torch.as_tensor(c, **kw)
    if first is not None and first.shape[0]:
        amax = torch.amax(torch.abs(first.to(torch.float64) - c_t), dim=0).cpu().numpy()
    else:
        amax = np.zeros(t)
    f64_products = compute_dtype == "float64" or (
        compute_dtype is None and first is not None and first.dtype == torch.float64
    )
    scale = column_scale(amax[None, :], c, max_exp=1000 if f64_products else 120)
    return {
        "n": 0,
        "shift": c_t,
        "scale": torch.as_tensor(scale, **kw),
        "s1": torch.zeros(t, **kw),
        "s2": torch.zeros(t, **kw),
        "gram": torch.zeros((t, t), **kw) if gram else None,
        "s3": torch.zeros(t, **kw) if moments >= 4 else None,
        "s4": torch.zeros(t, **kw) if moments >= 4 else None,
    }


def _torch_to_stats(acc_t: dict[str, Any]) -> BlockStats:
    """The torch sums as :class:`BlockStats` in the units of ``S`` (float64 NumPy)."""

    def np_(x: Any) -> np.ndarray | None:
        return None if x is None else x.detach().cpu().numpy().astype(np.float64)

    scale = np_(acc_t["scale"])
    assert scale is not None
    scaled = BlockStats(
        n=int(acc_t["n"]),
        shift=np_(acc_t["shift"]) * scale,
        s1=np_(acc_t["s1"]),  # type: ignore[arg-type]
        s2=np_(acc_t["s2"]),  # type: ignore[arg-type]
        gram=np_(acc_t["gram"]),
        s3=np_(acc_t["s3"]),
        s4=np_(acc_t["s4"]),
        meta={"eps": float(acc_t.get("eps", np.finfo(np.float64).eps))},
    )
    return finish_scaled(scaled, scale)


# ----------------------------------------------------------------------------------------
# finiteness
# ----------------------------------------------------------------------------------------
def locate_nonfinite(block: Any, row_offset: int = 0, *, name: str = "scores") -> DataError:
    """A :class:`DataError` naming the first NaN/inf of ``block`` (row-major order).

    Parameters
    ----------
    block : numpy.ndarray or torch.Tensor
        Rows of ``S``.
    row_offset : int
        Row of ``S`` where ``block`` starts.
    name : str
        What the message calls the matrix.
    """
    arr = block.detach().cpu().numpy() if _is_torch(block) else np.asarray(block)
    bad = ~np.isfinite(arr)
    if not bad.any():
        return DataError(
            f"{name}: values too large: sums of squares overflow float64 in rows "
            f"{row_offset}:{row_offset + arr.shape[0]}; rescale the matrix"
        )
    i, j = np.argwhere(bad)[0]
    return DataError(
        f"{name}: expected finite scores, got {arr[i, j]} at row {row_offset + int(i)}, "
        f"column {int(j)} (the first non-finite value)"
    )


# ----------------------------------------------------------------------------------------
# streaming driver
# ----------------------------------------------------------------------------------------
def free_cpus() -> int:
    """CPUs this process may use (affinity-aware)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


@contextlib.contextmanager
def blas_threads(n_threads: int | None) -> Iterator[None]:
    """Limit the BLAS thread pool to ``n_threads`` inside the block (``None``: leave it).

    Parameters
    ----------
    n_threads : int, optional
        Threads to allow.
    """
    if n_threads is None:
        yield
        return
    n_threads = check_int("n_threads", n_threads, min_value=1)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=n_threads, user_api="blas"):
        yield


def _torch_device(device: Any) -> Any:
    import torch

    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ParameterError(
            expected_text(
                "device", "an available torch device", f"{device!r} (CUDA is not available)"
            )
        )
    return dev


def stream_stats(
    scores: Any,
    *,
    chunk_rows: int | None = None,
    gram: bool = True,
    moments: int = 2,
    shift: Any = None,
    start: int = 0,
    stop: int | None = None,
    compute_dtype: str | None = None,
    device: Any = None,
    n_threads: int | None = None,
    prefetch: bool = True,
    progress: bool | None = None,
    desc: str = "Gram pass",
    observers: Sequence[Any] = (),
) -> BlockStats:
    r"""One streaming pass of :func:`block_stats` over row blocks of ``scores``.

    Parameters
    ----------
    scores : array-like, torch.Tensor, ScoreSource or path
    chunk_rows : int, optional
        Rows per block (default: about 64 MB per block). Memory is three blocks, one work
        block and the ``T x T`` float64 accumulator, independent of ``M``.
    gram, moments, compute_dtype
        As in :func:`block_stats`.
    shift : array-like [shape=(T,)], optional
        Shift ``c``; default: column means of the first block.
    start, stop : int
        Row range (default: all rows) — used by the Dask path.
    device : str or torch.device, optional
        Run the kernel with torch on this device (``"cuda"``, ``"cpu"``); default NumPy
        (or the tensor's own device for a CUDA tensor).
    n_threads : int, optional
        Limit BLAS threads during the pass (default: the BLAS library's own setting, i.e.
        all CPUs; on a quiet 2-core machine two threads ran the pass at 0.80 of the in-memory
        ``b.T @ b`` ceiling, one thread at half that). Lower it on a shared, busy machine.
    prefetch : bool
        Read the next block in a background thread.
    progress : bool, optional
        Draw a progress bar.
    desc : str
        Label of the progress bar.
    observers : sequence, optional
        Objects with a method ``update(block, row0)`` that see every row block of the same
        pass (as read: NumPy on the CPU path, a torch tensor on ``device``), after it was
        checked finite, so that other per-row statistics (the top-K sets of
        :mod:`aria_tda.diagnostics.concentration`) cost no second read. A block buffer is
        reused: copy what you keep.

    Returns
    -------
    BlockStats

    Raises
    ------
    DataError
        a NaN or inf (naming its row and column), or values whose squares overflow.
    """
    src = as_source(scores)
    check_choice("moments", moments, (2, 4))
    check_choice("compute_dtype", compute_dtype, COMPUTE_DTYPES)
    if not gram and compute_dtype is None:
        compute_dtype = "float64"  # moments only: memory-bound, so full precision is free
    if device is None and isinstance(src, TorchSource) and src.tensor.device.type != "cpu":
        device = src.tensor.device
    if device is not None:
        return _stream_stats_torch(
            src,
            _torch_device(device),
            chunk_rows=chunk_rows,
            gram=gram,
            moments=moments,
            shift=shift,
            start=start,
            stop=stop,
            compute_dtype=compute_dtype,
            progress=progress,
            desc=desc,
            observers=observers,
        )
    rows = src.chunk_rows(chunk_rows)
    acc: BlockStats | None = None
    scale = np.ones(src.n_cols)
    given: np.ndarray | None = None
    if shift is not None:
        given = np.asarray(shift, dtype=np.float64)
        if given.shape != (src.n_cols,):
            raise ParameterError(
                expected_text("shift", f"shape ({src.n_cols},)", f"shape {given.shape}")
            )
    cdt = _np_compute_dtype(src.block_dtype, compute_dtype)
    work = _work_buffer(rows, src.n_cols, cdt, gram=gram)
    with blas_threads(n_threads):
        for s, block in src.iter_chunks(
            rows,
            start=start,
            stop=stop,
            prefetch=prefetch,
            reuse_buffers=True,
            progress=progress,
            desc=desc,
        ):
            if acc is None:
                with np.errstate(all="ignore"):
                    c = block.mean(axis=0, dtype=np.float64) if given is None else given
                if not np.isfinite(c).all():
                    raise locate_nonfinite(block, s)
                acc, scale = start_scaled(block, c, gram=gram, moments=moments, cdt=cdt)
            with np.errstate(all="ignore"):
                _accumulate_numpy(acc, block, work, compute_dtype, scale)
            if not (np.isfinite(acc.s1).all() and np.isfinite(acc.s2).all()):
                raise locate_nonfinite(block, s)
            for obs in observers:
                obs.update(block, s)
    if acc is None:  # empty row range
        raise DataError(expected_text("scores", "at least one row", f"rows {start}:{stop}"))
    return checked_sums(finish_scaled(acc, scale))


def _iter_torch_blocks(
    src: ScoreSource, device: Any, rows: int, start: int, stop: int | None, progress: Any, desc: str
) -> Iterator[tuple[int, Any]]:
    import torch

    if isinstance(src, TorchSource):
        stop = src.n_rows if stop is None else stop
        from aria_tda._progress import progress as bar_

        bar = bar_(total=stop - start, desc=desc, unit="row", enabled=progress)
        try:
            for s in range(start, stop, rows):
                e = min(s + rows, stop)
                t = src.torch_rows(s, e)
                if t.dtype not in (torch.float32, torch.float64):
                    t = t.to(torch.float32 if src.block_dtype == np.float32 else torch.float64)
                yield s, t.to(device)
                bar.update(e - s)
        finally:
            bar.close()
        return
    for s, block in src.iter_chunks(
        rows, start=start, stop=stop, reuse_buffers=True, progress=progress, desc=desc
    ):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # read-only buffer: we never write it
            yield s, torch.from_numpy(block).to(device)


def _stream_stats_torch(
    src: ScoreSource,
    device: Any,
    *,
    chunk_rows: int | None,
    gram: bool,
    moments: int,
    shift: Any,
    start: int,
    stop: int | None,
    compute_dtype: str | None,
    progress: bool | None,
    desc: str,
    observers: Sequence[Any] = (),
) -> BlockStats:
    import torch

    rows = src.chunk_rows(chunk_rows)
    acc_t: dict[str, Any] | None = None
    for s, block in _iter_torch_blocks(src, device, rows, start, stop, progress, desc):
        if acc_t is None:
            c = block.double().mean(dim=0) if shift is None else None
            if c is not None and not bool(torch.isfinite(c).all()):
                raise locate_nonfinite(block, s)
            c_np = np.asarray(shift, dtype=np.float64) if c is None else c.cpu().numpy()
            acc_t = _torch_acc(
                c_np, device, gram=gram, moments=moments, first=block,
                compute_dtype=compute_dtype,
            )
        _accumulate_torch(acc_t, block, compute_dtype)
        if not (
            bool(torch.isfinite(acc_t["s1"]).all()) and bool(torch.isfinite(acc_t["s2"]).all())
        ):
            raise locate_nonfinite(block, s)
        for obs in observers:
            obs.update(block, s)
    if acc_t is None:
        raise DataError(expected_text("scores", "at least one row", f"rows {start}:{stop}"))
    return checked_sums(_torch_to_stats(acc_t))


def stream_matvec(
    scores: Any,
    v: Any,
    *,
    chunk_rows: int | None = None,
    start: int = 0,
    stop: int | None = None,
    device: Any = None,
    progress: bool | None = None,
    desc: str = "S v pass",
) -> np.ndarray:
    r"""The product :math:`S v` ``(stop-start,)`` in float64, one streaming pass.

    Parameters
    ----------
    scores : array-like, torch.Tensor, ScoreSource or path
        ``(M, T)``.
    v : array-like [shape=(T,)]
        The vector.
    chunk_rows : int, optional
        Rows per block.
    start, stop : int
        Row range (default: all rows).
    device : str or torch.device, optional
        Run the products with torch on this device.
    progress : bool, optional
        Draw a progress bar.
    desc : str
        Label of the progress bar.
    """
    src = as_source(scores)
    vec = np.asarray(v, dtype=np.float64)
    if vec.shape != (src.n_cols,):
        raise ParameterError(expected_text("v", f"shape ({src.n_cols},)", f"shape {vec.shape}"))
    stop = src.n_rows if stop is None else stop
    out = np.empty(stop - start)
    rows = src.chunk_rows(chunk_rows)
    if device is None and isinstance(src, TorchSource) and src.tensor.device.type != "cpu":
        device = src.tensor.device
    if device is not None:
        import torch

        dev = _torch_device(device)
        vt = torch.as_tensor(vec, dtype=torch.float64, device=dev)
        for s, block in _iter_torch_blocks(src, dev, rows, start, stop, progress, desc):
            out[s - start : s - start + block.shape[0]] = (block.double() @ vt).cpu().numpy()
    else:
        for s, block in src.iter_chunks(
            rows, start=start, stop=stop, reuse_buffers=True, progress=progress, desc=desc
        ):
            out[s - start : s - start + block.shape[0]] = block @ vec
    if not np.isfinite(out).all():
        i = int(np.flatnonzero(~np.isfinite(out))[0])
        raise locate_nonfinite(src.read_rows(start + i, start + i + 1), start + i)
    return out
